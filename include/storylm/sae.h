/* Sparse autoencoders (SAEs) on a hook point's activations, in SAELens's
 * layout so that its readers load them:
 *
 *   x_cent = x - b_dec                              (apply_b_dec_to_input)
 *   pre    = x_cent W_enc + b_enc                   W_enc (d_in, d_sae), b_enc (d_sae)
 *   z      = TopK: ReLU of pre's k largest, 0 elsewhere; L1: ReLU(pre);
 *            BatchTopK: ReLU of the batch's k * B largest; JumpReLU: pre where > threshold
 *   x_hat  = z W_dec + b_dec                        W_dec (d_sae, d_in), b_dec (d_in)
 *
 * The losses, each a sum over a token's numbers averaged over the batch:
 *   mse = |x_hat - x|^2
 *   TopK's AuxK (OpenAI, "Scaling and evaluating sparse autoencoders"): the
 *     residual e = x - x_hat (a constant: no gradient flows into it) made
 *     again from the k_aux largest pre-activations of the dead latents alone,
 *     e_hat = z_aux W_dec (no b_dec: the residual has it once already);
 *     aux = SAE_AUX_COEFF * min(dead / k_aux, 1) * |e_hat - e|^2
 *   L1 (SAELens's standard SAE, Anthropic's recipe): l1 = lambda sum_j z_j |W_dec_j|
 * loss = mse + aux + l1.
 *
 * Parameters live in one buffer in SAELens's order (W_enc, b_enc, W_dec,
 * b_dec), so that Adam, the gradient and the file walk the same table.
 * Every sum is in a fixed order and the products are slm_matmul's (the same
 * bits at any thread count). Never prints. */
#ifndef STORYLM_SAE_H
#define STORYLM_SAE_H

#include <stddef.h>
#include <stdint.h>

#include "storylm/error.h"

#define SAE_AUX_COEFF (1.0f / 32) /* OpenAI's alpha */
#define SAE_HOOK_MAX 96

/* BatchTopK (Bussmann et al.) trains keeping the k * B largest of a batch's
 * B rows together, and is then a JumpReLU: each latent kept where its
 * pre-activation passes threshold (the running mean of the smallest kept
 * value, as SAELens saves a BatchTopK SAE), so a token is encoded alone. */
typedef enum { SAE_TOPK = 0, SAE_L1 = 1, SAE_BATCHTOPK = 2, SAE_JUMPRELU = 3 } SaeKind;
#define SAE_THRESHOLD_LR 0.01 /* SAELens's topk_threshold_lr */

typedef struct SaeConfig {
    SaeKind kind;
    int d_in, d_sae;
    int k;     /* TopK: latents kept per token; BatchTopK: on average */
    int k_aux; /* TopK: AuxK's latents, d_in / 2 (SAELens's) */
    char hook_name[SAE_HOOK_MAX];
} SaeConfig;

typedef struct Sae {
    SaeConfig cfg;
    float *params; /* n_params: W_enc, b_enc, W_dec, b_dec (and threshold) */
    size_t n_params;
    float *W_enc, *b_enc, *W_dec, *b_dec; /* views into params */
    float *threshold; /* BatchTopK, JumpReLU: (d_sae) after b_dec (no gradient: Adam leaves it); else NULL */
} Sae;

/* The parameters for cfg (zeroed); cfg checked (sizes, k in 1..d_sae). */
int slm_sae_init(Sae *s, const SaeConfig *cfg, Error *e);
void slm_sae_free(Sae *s);
/* The views of a buffer laid out as s's parameters (a gradient's). */
void slm_sae_views(const Sae *s, float *buf, float **W_enc, float **b_enc, float **W_dec, float **b_dec);
/* Anthropic's initialisation: each decoder row a random direction of norm
 * 0.1, W_enc = W_dec^T, b_enc = 0, b_dec = 0. */
void slm_sae_randomize(Sae *s, uint64_t seed);
/* Folds a normalisation x -> x * scale into the weights (SAELens's
 * fold_activation_norm_scaling_factor): W_enc *= scale, W_dec and b_dec /= scale,
 * so that the SAE reads and makes activations at their own size. */
void slm_sae_fold_scale(Sae *s, float scale);

/* A pass's buffers for up to max_batch tokens. */
typedef struct SaePass {
    int max_batch, B;
    float *x_cent, *pre, *z, *x_hat;      /* (B, d_in), (B, d_sae), (B, d_sae), (B, d_in) */
    float *z_aux, *e_hat;                 /* AuxK: (B, d_sae), (B, d_in) */
    float *d_pre, *d_out;                 /* scratch of the backward: (B, d_sae), (B, d_in) */
    float *ones, *sums;                   /* (max_batch) of 1, (d_sae) */
    float *dec_norm;                      /* (d_sae): |W_dec_j| (L1) */
    double *row_loss;                     /* (max_batch): a loss's rows, summed in order */
    int *top, *n_top, *start;             /* TopK's choices (max_batch * k), a row's count and first (max_batch) */
    int *top_aux, *n_top_aux, *start_aux; /* AuxK's (max_batch * k_aux) */
    float kept_min;                       /* BatchTopK: the smallest value kept (0: none kept) */
    int n_dead, k_aux;                    /* AuxK: dead latents given, latents it used */
    float l1_coeff;
    double mse, aux, l1, loss; /* the batch's means */
} SaePass;

int slm_sae_pass_init(SaePass *p, const SaeConfig *cfg, int max_batch, Error *e);
void slm_sae_pass_free(SaePass *p);

/* x (B, d_in) -> z (B, d_sae) in p->z; pre-activations in p->pre.
 * BatchTopK: the batch's k * B largest, over all its rows at once. */
void slm_sae_encode(const Sae *s, SaePass *p, const float *x, int B);
/* p->z (B, d_sae) -> x_hat (B, d_in) into out. */
void slm_sae_decode(const Sae *s, SaePass *p, float *out);

/* The training pass: encode, decode and the losses for x (B, d_in), B <=
 * max_batch. dead (d_sae, may be NULL: none) marks TopK's dead latents for
 * AuxK; l1_coeff is L1's lambda (TopK: unused). Fills p's losses. */
void slm_sae_forward(const Sae *s, SaePass *p, const float *x, int B, const uint8_t *dead, float l1_coeff);
/* After slm_sae_forward on the same x: grads (n_params) += d loss / d params. */
void slm_sae_backward(const Sae *s, SaePass *p, const float *x, float *grads);
/* BatchTopK after a training pass: threshold = the running mean of the smallest value kept. */
void slm_sae_threshold_update(Sae *s, const SaePass *p);
/* BatchTopK once trained: a JumpReLU with every latent's threshold the running one. */
void slm_sae_to_jumprelu(Sae *s);

#endif
