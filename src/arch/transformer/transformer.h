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
 * with cfg.arch its Architecture (src/arch/transformer), and its sizes in ModelConfig's fields:
 * row_dim = d_model, n_heads, key_dim = value_dim = d_head, hidden_dim =
 * d_mlp, window = n_ctx (256), n_layers, pos, act. model.h's passes
 * (slm_model_forward, _backward, _loss_and_grad) dispatch here.
 *
 * The forward is made of parts, each a *_forward with its *_backward beside
 * it (transformer_layers.c the kernels, transformer.c the parts),
 * so that hooks can be placed between them: embed, then per block
 * attention part and MLP part, then the final LN and the unembedding.
 *
 * Internal to the transformer's family (src/arch/transformer, src/arch/attn_only)
 * and their tests, which include it as "transformer/transformer.h": the rest of
 * the code reaches a model through arch.h's interface alone. */
#ifndef STORYLM_TRANSFORMER_H
#define STORYLM_TRANSFORMER_H

#include <stdint.h>

#include "storylm/error.h"
#include "storylm/model_types.h"
#include "transformer_layers.h"
#include "transformer_params.h"

/* ---- the distance table (transformer.c) ---- */

/* table (H, n_ctx): head h's score added at distance d back in block w (the
 * scheme's: distance, alibi, t5; 0 for none, absolute, sinusoidal, rope). */
void slm_transformer_distance_table(const ModelConfig *c, const TfBlockViews *w, float *table);

/* ---- activations and passes (transformer.c) -------------------- */

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
    /* training's dropout (docs/transformer.md, "Dropout"): resid_drop the
     * mask of the residual stream's additions, number j of position p at
     * site s (0 the embedding, 1 + 2l block l's attention output, 2 + 2l its
     * MLP output) from stream s, a fixed mask's entry (s*N + p)*D + j; part
     * (N, D) a block part's output before it is dropped and added, in the
     * backward its gradient dropped alike (both only with resid_drop.p > 0) */
    DropoutMask resid_drop;
    float *part;
} TfActivations;

int slm_transformer_activations_init(Activations *a, const ModelConfig *cfg, int max_positions, Error *e);
void slm_transformer_activations_free(Activations *a);

/* The passes, as model.h's slm_model_forward, _backward and _loss_and_grad
 * describe them (they dispatch here and check the losses). Head ablation:
 * a switched-off head's z (hook_z) is 0, or its mean in ABLATE_MEAN; nothing
 * flows back through it, heads numbered over all blocks as Ablation's. Training's
 * pass (loss_and_grad with grads) runs every product at a->precision (FP32, or
 * BF16 as the attention network's, bf16.h); every other pass in FP32. The forward
 * leaves every position's logits in a->logits, the backward recomputes them
 * from a->hidden and turns them into their gradient. */
int slm_transformer_forward(const Model *m, Activations *a, const Batch *b, const Ablation *ablation, Error *e);
void slm_transformer_backward(const Model *m, Activations *a, const Batch *b, float *grads);
int slm_transformer_loss_and_grad(const Model *m, Activations *a, const Batch *b, const Ablation *ablation, float scale,
                                  float *grads, Error *e);

#endif
