/* The transformer's kernels (transformer_layers.c), forward and backward
 * side by side: LayerNorm, the MLP's activation, a bias on rows. Internal to
 * the transformer's family (src/arch/transformer, src/arch/attn_only) and
 * their tests; the activations' names are act_fn.h's. */
#ifndef STORYLM_TRANSFORMER_LAYERS_H
#define STORYLM_TRANSFORMER_LAYERS_H

#include "storylm/model_types.h" /* ActFn */

/* x (n, D) -> y (n, D) = (x - mean) * rstd * w + b; mean, rstd (n) kept. */
void slm_layernorm_forward(const float *x, const float *w, const float *b, int n, int D, float *y, float *mean,
                           float *rstd);
/* d_y (n, D) -> d_x (n, D) += ; d_w, d_b (D) += (positions in order). */
void slm_layernorm_backward(const float *x, const float *w, const float *mean, const float *rstd, const float *d_y,
                            int n, int D, float *d_x, float *d_w, float *d_b);
/* pre (n) -> post (n) = act(pre). */
void slm_act_forward(ActFn act, const float *pre, int n, float *post);
/* d (n): d post -> d pre, in place, act'(pre); post (n) as the forward gave it. */
void slm_act_backward(Kernels k, ActFn act, const float *pre, const float *post, int n, float *d);
/* y (n, cols) row stride ld += bias (cols) on every row. */
void slm_add_bias_rows(float *y, int n, int cols, int ld, const float *bias);

#endif
