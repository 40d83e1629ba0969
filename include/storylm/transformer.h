/* The tiny transformer (`--arch transformer`): pre-LN blocks of multi-head
 * attention and an MLP, in TransformerLens's names, shapes and conventions,
 * so that a HookedTransformer loads the file (docs/transformer.md).
 *
 * For a story of ids x_0..x_{T-1} (x_0 = [EOS]), D = d_model, H heads of
 * d_head, F = d_mlp, L layers, every position t at once:
 *   resid_0   = W_E[x_t] (+ W_pos[min(t, n_ctx-1)] for --pos absolute)
 *   block l:  resid_mid  = resid_pre + attn(LN1(resid_pre))
 *             resid_post = resid_mid + MLP(LN2(resid_mid))
 *   attn(x):  q = x W_Q[h] + b_Q[h], k, v alike              (d_head each)
 *             s_u = q.k_u / sqrt(d_head) (+ the scheme's score; rope turns q, k)
 *             causal over u = max(0, t-n_ctx+1)..t, z_h = softmax(s) v
 *             out = sum_h z_h W_O[h] + b_O
 *   MLP(x):   act(x W_in + b_in) W_out + b_out                (act: gelu, gelu_new, relu)
 *   LN(x):    (x - mean) / sqrt(var + 1e-5) * w + b           (var: the biased one)
 *   logits  = LN_final(resid_L) W_U + b_U
 *
 * The model is the project's Model (one buffer, a table of named views)
 * with cfg.arch = ARCH_TRANSFORMER, and its sizes in ModelConfig's fields:
 * row_dim = d_model, n_heads, key_dim = value_dim = d_head, hidden_dim =
 * d_mlp, window = n_ctx (256), n_layers, pos, act. model.h's passes
 * (slm_model_forward, _backward, _loss_and_grad) dispatch here.
 *
 * The forward is made of parts, each a *_forward with its *_backward beside
 * it (src/model/transformer_layers.c the kernels, transformer.c the parts),
 * so that hooks can be placed between them: embed, then per block
 * attention part and MLP part, then the final LN and the unembedding. */
#ifndef STORYLM_TRANSFORMER_H
#define STORYLM_TRANSFORMER_H

#include <stdint.h>

#include "storylm/attention.h"
#include "storylm/error.h"

typedef struct Model Model;
typedef struct ModelConfig ModelConfig;
typedef struct Activations Activations;
typedef struct Batch Batch;

#define STORYLM_MAX_TF_LAYERS 8
#define TF_LN_EPS 1e-5f
#define TF_MAX_D_MODEL 1024

/* The MLP's activation, TransformerLens's act_fn names. */
typedef enum { ACT_GELU = 0, ACT_GELU_NEW, ACT_RELU, ACT_COUNT } ActFn;
const char *slm_act_name(ActFn act);
int slm_act_parse(const char *name, ActFn *act, Error *e);

/* The transformer's default config (2 layers, d_model 64, 8 heads of 8,
 * d_mlp 256, n_ctx 256, gelu, --pos absolute): 374,480 parameters at 2,000 tokens. */
ModelConfig slm_transformer_config_default(int vocab_size);
/* Checks sizes the passes take; 0 or -1 with a message. */
int slm_transformer_check_config(const ModelConfig *c, Error *e);

/* ---- parameters (src/model/transformer_params.c) ------------------------- */

/* One block's tensors, views into a buffer laid out like params (the
 * parameters themselves, or their gradients). */
typedef struct TfBlockViews {
    float *ln1_w, *ln1_b;   /* (D) */
    float *W_Q, *W_K, *W_V; /* (H, D, dh) */
    float *b_Q, *b_K, *b_V; /* (H, dh) */
    float *W_O;             /* (H, dh, D) */
    float *b_O;             /* (D) */
    float *ln2_w, *ln2_b;   /* (D) */
    float *W_in, *b_in;     /* (D, F), (F) */
    float *W_out, *b_out;   /* (F, D), (D) */
    float *distance;        /* (H, n_ctx) --pos distance only ("blocks.l.attn.distance") */
    float *bucket;          /* (H, 32) --pos t5 only ("blocks.l.attn.distance_bucket") */
} TfBlockViews;

typedef struct TfViews {
    float *W_E;   /* (V, D) */
    float *W_pos; /* (n_ctx, D) --pos absolute only */
    TfBlockViews block[STORYLM_MAX_TF_LAYERS];
    float *ln_final_w, *ln_final_b; /* (D) */
    float *W_U;                     /* (D, V) */
    float *b_U;                     /* (V) */
} TfViews;

/* Adds the transformer's tensors to m's table (model_params.c's layout). */
void slm_transformer_layout(Model *m);
/* v = the views of base (m->params, or a gradient buffer of the same layout). */
void slm_transformer_views(const Model *m, const float *base, TfViews *v);
/* TransformerLens's default init ("gpt2"): every W_ N(0, 0.8/sqrt(d_model)),
 * biases 0, LayerNorm weights 1 and biases 0, the schemes' own scores 0. */
void slm_transformer_randomize(Model *m, uint64_t seed);

/* ---- kernels (src/model/transformer_layers.c) ---------------------------- */

/* x (n, D) -> y (n, D) = (x - mean) * rstd * w + b; mean, rstd (n) kept. */
void slm_layernorm_forward(const float *x, const float *w, const float *b, int n, int D, float *y, float *mean,
                           float *rstd);
/* d_y (n, D) -> d_x (n, D) += ; d_w, d_b (D) += (positions in order). */
void slm_layernorm_backward(const float *x, const float *w, const float *mean, const float *rstd, const float *d_y,
                            int n, int D, float *d_x, float *d_w, float *d_b);
/* pre (n) -> post (n) = act(pre). */
void slm_act_forward(ActFn act, const float *pre, int n, float *post);
/* d (n): d post -> d pre, in place, act'(pre); post (n) as the forward gave it. */
void slm_act_backward(ActFn act, const float *pre, const float *post, int n, float *d);
/* table (H, n_ctx): head h's score added at distance d back in block w (the
 * scheme's: distance, alibi, t5; 0 for none, absolute, sinusoidal, rope). */
void slm_transformer_distance_table(const ModelConfig *c, const TfBlockViews *w, float *table);
/* y (n, cols) row stride ld += bias (cols) on every row. */
void slm_add_bias_rows(float *y, int n, int cols, int ld, const float *bias);

/* ---- activations and passes (src/model/transformer.c) -------------------- */

/* One block's part of the activations, N positions. */
typedef struct TfLayerActs {
    float *resid_pre;                 /* (N, D) */
    float *ln1, *ln1_mean, *ln1_rstd; /* (N, D), (N), (N) */
    float *qkv_w;                     /* (QKV, D) W_Q, W_K, W_V packed: one sgemm for all heads */
    float *qkv;                       /* (QKV, ld) q, k, v after bias (q, k turned for rope), as Activations.qkv */
    float *att;                       /* (H, N, S) attention weights, kept by slm_model_forward */
    AttentionScratch scratch;         /* kv, dist, lse its own; the backward's scratch shared */
    float *z;                         /* (N, H*dh) every head's output, head h at column h*dh (hook_z) */
    float *resid_mid;                 /* (N, D) */
    float *ln2, *ln2_mean, *ln2_rstd; /* (N, D), (N), (N) */
    float *mlp_pre, *mlp_post;        /* (N, F) */
} TfLayerActs;

typedef struct TfActivations {
    TfLayerActs layer[STORYLM_MAX_TF_LAYERS];
    float *resid_final;         /* (N, D) the last block's resid_post */
    float *lnf_mean, *lnf_rstd; /* (N) ln_final's; its output is Activations.hidden (N, D) */
    int *story_pos;             /* (N) each position's place in its story */
    float *table, *d_table;     /* (H, n_ctx) the scheme's score per distance back, and its gradient */
    float *d_resid, *d_x;       /* (N, D) */
    float *d_z;                 /* (N, H*dh) */
    float *d_mlp;               /* (N, F) */
    float *d_qkv;               /* (QKV, ld) */
    float *d_qkv_w;             /* (QKV, D) */
} TfActivations;

int slm_transformer_activations_init(Activations *a, const ModelConfig *cfg, int max_positions, Error *e);
void slm_transformer_activations_free(Activations *a);

/* The passes, as model.h's slm_model_forward, _backward and _loss_and_grad
 * describe them (they dispatch here and check the losses). Head ablation:
 * zero mode only (a switched-off head's z, hook_z, is 0; nothing flows back
 * through it), heads numbered over all blocks as Ablation's. The forward
 * leaves every position's logits in a->logits, the backward recomputes them
 * from a->hidden and turns them into their gradient. */
typedef struct Ablation Ablation;
int slm_transformer_forward(const Model *m, Activations *a, const Batch *b, const Ablation *ablation, Error *e);
void slm_transformer_backward(const Model *m, Activations *a, const Batch *b, float *grads);
int slm_transformer_loss_and_grad(const Model *m, Activations *a, const Batch *b, const Ablation *ablation, float scale,
                                  float *grads, Error *e);

#endif
