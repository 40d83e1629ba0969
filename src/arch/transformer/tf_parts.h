/* The parts that residual-stream architectures are composed of (private to
 * src/arch): TransformerLens's components, each forward with its backward
 * beside it, over the transformer's activations (TfActivations) and views
 * (TfViews). An architecture of this family (the transformer, attn-only) is
 * its tensors' layout, its blocks' composition of these parts, and the
 * same composition as a generator's steps; the embedding, the final LN, the
 * unembedding, the checks and the loss are shared by the driver below.
 *
 * N positions, D = d_model, H heads of dh, F = d_mlp (0: the blocks have no
 * MLP), V the vocabulary, L blocks. */
#ifndef STORYLM_SRC_TF_PARTS_H
#define STORYLM_SRC_TF_PARTS_H

#include "storylm/arch.h"
#include "storylm/generator_batch.h"
#include "transformer.h"

/* ---- the family's table entries (transformer_arch.c): arch.h's
 * operations that read only the sizes ---- */
int slm_tf_layers(const ModelConfig *c);
int slm_tf_heads_per_layer(const ModelConfig *c);
int slm_tf_context_needed(const ModelConfig *c);
/* Its metadata keys as TransformerLens's config names them (act_fn and d_mlp
 * only where F > 0), and read back, checked by c->arch's config_check. */
int slm_tf_config_write(const ModelConfig *c, ConfigPut put, void *ctx, Error *e);
int slm_tf_config_read(ModelConfig *c, ConfigGet get, void *ctx, Error *e);

/* ---- parameters (transformer_params.c): each part's tensors, appended to
 * m's table in TransformerLens's names ---- */
void slm_tf_layout_embed(Model *m);       /* embed.W_E (V, D), pos_embed.W_pos (n_ctx, D) for absolute */
void slm_tf_layout_attn(Model *m, int l); /* block l's ln1.w/b (D), attn.W_Q/K/V (H, D, dh), b_Q/K/V (H, dh),
                                             W_O (H, dh, D), b_O (D) */
void slm_tf_layout_mlp(Model *m, int l); /* block l's ln2.w/b (D), mlp.W_in (D, F), b_in (F), W_out (F, D), b_out (D) */
void slm_tf_layout_scores(Model *m, int l); /* block l's scheme's scores: attn.distance (H, n_ctx), _bucket (H, 32) */
void slm_tf_layout_final(Model *m);         /* ln_final.w/b (D), unembed.W_U (D, V), b_U (V) */
/* The sizes every model of the family has (not d_mlp, not act); 0 or -1. */
int slm_tf_check_sizes(const ModelConfig *c, Error *e);

/* ---- the passes' parts (transformer.c) ---- */

/* Checks the batch and ablation, then sets a up for a pass over b (the
 * positions, targets, ablation, precision of its products); 0 or -1. */
int slm_tf_begin(const Model *m, Activations *a, const Batch *b, const Ablation *ablation, int keep_weights,
                 Precision products, Error *e);

/* tokens (N) -> layer 0's resid_pre (N, D) = W_E[x] (hook_embed) + the
 * position's row (hook_pos_embed); backward: t->d_resid (N, D) -> d W_E, d W_pos +=. */
void slm_tf_embed_forward(const Model *m, const TfViews *w, Activations *a, const Batch *b);
void slm_tf_embed_backward(const ModelConfig *c, const TfViews *g, Activations *a, const Batch *b);

/* Block l's LayerNorm + attention + residual: its resid_pre (N, D) -> ln1
 * (N, D) -> qkv -> z (N, H*dh) -> out (N, D) = resid_pre + z W_O + b_O (hooks
 * q, k, v, pattern, z); backward: t->d_resid (N, D) d out -> d resid_pre in
 * place, its LN1, W_Q/K/V, b_Q/K/V, W_O, b_O and scores' grads +=. */
void slm_tf_attn_forward(const Model *m, const TfBlockViews *w, Activations *a, int l, float *out);
void slm_tf_attn_backward(const ModelConfig *c, const TfBlockViews *w, const TfBlockViews *g, Activations *a, int l);

/* Block l's LayerNorm + MLP + residual: its resid_mid (N, D) -> ln2 (N, D)
 * -> mlp_pre, mlp_post (N, F) (hook_post) -> out (N, D) = resid_mid +
 * mlp_post W_out + b_out; backward: t->d_resid d out -> d resid_mid in place. */
void slm_tf_mlp_forward(const Model *m, const TfBlockViews *w, Activations *a, int l, float *out);
void slm_tf_mlp_backward(const ModelConfig *c, const TfBlockViews *w, const TfBlockViews *g, Activations *a, int l);

/* Block l's output (N, D): the next block's resid_pre, or resid_final after the last. */
float *slm_tf_resid_post(const Activations *a, int l);

/* ---- the driver: a composition's blocks between the shared ends ---- */

/* An architecture's blocks: forward from layer 0's resid_pre to
 * resid_final (N, D), calling each block's hooks; backward from t->d_resid
 * (N, D) d resid_final to d resid_0 in place, adding into g. */
typedef struct TfBlocks {
    void (*forward)(const Model *m, const TfViews *w, Activations *a);
    void (*backward)(const ModelConfig *c, const TfViews *w, const TfViews *g, Activations *a);
} TfBlocks;

/* model.h's passes over the blocks: embed -> blocks -> LN_final (hook_normalized)
 * -> W_U, b_U -> logits (hook_logits), loss; and back (transformer.h's contracts). */
int slm_tf_forward(const TfBlocks *s, const Model *m, Activations *a, const Batch *b, const Ablation *ab, Error *e);
void slm_tf_backward(const TfBlocks *s, const Model *m, Activations *a, const Batch *b, float *grads);
int slm_tf_loss_and_grad(const TfBlocks *s, const Model *m, Activations *a, const Batch *b, const Ablation *ab,
                         float scale, float *grads, Error *e);

/* The hook points' numbers between the activations and buf (arch.h's
 * hook_move; transformer_hooks.c). */
int slm_tf_hook_move(const Model *m, Activations *a, HookPoint p, int l, float *buf, int to_buf);

/* A run's attention (arch.h's layer_qkv, layer_attention, head_output). */
float *slm_tf_layer_qkv(const Activations *a, int l);
float *slm_tf_layer_attention(const Activations *a, int l);
float *slm_tf_head_output(const Activations *a, int l, int p, int h);

/* ---- generation's parts (transformer_generate.c): one token at a time,
 * the samples which[j], j < k, each part one pass over its weights ---- */

/* GeneratorOps' init, free, copy and set_precision of the family (an MLP's
 * products packed where F > 0). */
int slm_tf_generator_init(GeneratorBatch *g, const Model *m, const Ablation *ablation, int n, Error *e);
void slm_tf_generator_free(GeneratorBatch *g);
void slm_tf_generator_copy(GeneratorBatch *g, int from, int to);
int slm_tf_generator_set_precision(GeneratorBatch *g, Precision p, Error *e);
/* Each sample's resid (D) = W_E[token] + its position's row (+ hook_embed's steering). */
void slm_tf_gen_embed(GeneratorBatch *g, const int *which, const int32_t *tokens, int k);
/* Each sample's resid (D) += the steering at point p (resid_pre, resid_post) of block l. */
void slm_tf_gen_steer_resid(GeneratorBatch *g, HookPoint p, int l, const int *which, int k);
/* resid += attn(LN1(resid)) of block l, its keys and values cached (steered at hook_z, resid_mid). */
void slm_tf_gen_attn(GeneratorBatch *g, int l, const int *which, int k);
/* resid += MLP(LN2(resid)) of block l (steered at mlp.hook_post). */
void slm_tf_gen_mlp(GeneratorBatch *g, int l, const int *which, int k);
/* The points every generator of the family steers at (feed adds resid_pre and resid_post). */
#define SLM_TF_STEER_POINTS                                                                                            \
    (1u << HOOK_EMBED | 1u << HOOK_RESID_PRE | 1u << HOOK_Z | 1u << HOOK_RESID_POST | 1u << HOOK_LN_FINAL |            \
     1u << HOOK_LOGITS)
/* logits (V) = LN_final(resid) W_U + b_U (steered at ln_final, logits); each sample's position moves on. */
void slm_tf_gen_final(GeneratorBatch *g, const int *which, int k);

#endif
