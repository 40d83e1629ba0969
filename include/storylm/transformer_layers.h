/* The transformer's kernels (src/model/transformer_layers.c), forward and
 * backward side by side: LayerNorm, the MLP's activation, a bias on rows. */
#ifndef STORYLM_TRANSFORMER_LAYERS_H
#define STORYLM_TRANSFORMER_LAYERS_H

#include "storylm/error.h"
#include "storylm/model_types.h" /* ActFn */

/* The MLP's activations by TransformerLens's act_fn names (gelu, gelu_new, relu). */
const char *slm_act_name(ActFn act);
int slm_act_parse(const char *name, ActFn *act, Error *e);

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
/* y (n, cols) row stride ld += bias (cols) on every row. */
void slm_add_bias_rows(float *y, int n, int cols, int ld, const float *bias);

#endif
