/* Causal attention of every head over packed stories (src/model/attention.c):
 * the forward and backward kernels and their working memory. model.h calls
 * them from the passes; probes read their weights through model.h's
 * slm_activations_attention. */
#ifndef STORYLM_ATTENTION_H
#define STORYLM_ATTENTION_H

#include <stdint.h>

#include "storylm/model_types.h" /* ModelConfig, AttentionScratch */

/* Causal attention of every head over packed stories.
 * qkv (QKV, ld) as in Activations (ld a multiple of 8, >= N + 8); distance
 * (H, W); first_key (N) -> att (H, N, S) and out: head h's output at position
 * p to out + p*out_ld + h*vd. Fills s->kv and s->dist for the backward pass.
 * att may be NULL: the weights are not kept (the backward computes them again). */
void slm_attention_forward(Kernels k, const ModelConfig *c, const float *qkv, int ld, const float *distance,
                           const int *first_key, int N, float *att, float *out, int out_ld, const AttentionScratch *s);
/* d_out (at d_out + p*out_ld + h*vd) -> d_qkv (QKV, ld) = (heads in skip_heads
 * get 0), d_distance (H, W) +=. s as slm_attention_forward left it; att as it
 * left it, or NULL when it kept none. */
void slm_attention_backward(Kernels k, const ModelConfig *c, const float *qkv, int ld, const float *att,
                            const int *first_key, int N, const float *d_out, int out_ld, uint32_t skip_heads,
                            float *d_qkv, float *d_distance, const AttentionScratch *s);
/* Length of one head's scratch rows for a window of W keys. */
int slm_attention_row_stride(int window);

/* The layout of qkv, which the attention network and the transformer share. */
/* Rows of the stacked query, key and value weights: H*(2*kd + vd), 256 at the real sizes. */
int slm_qkv_rows(const ModelConfig *c);
/* Row stride of qkv for N positions (Activations.qkv_ld). */
int slm_qkv_stride(int N);
/* query (H, D, kd), key (H, D, kd), value (H, D, vd) -> qkv_w (QKV, D): one
 * sgemm then makes every head's queries, keys and values in qkv's layout. */
void slm_pack_qkv(const float *query, const float *key, const float *value, int H, int D, int kd, int vd, float *qkv_w);
/* The reverse, accumulating: d_qkv_w (QKV, D) -> d_query, d_key, d_value +=. */
void slm_unpack_qkv_grads(const float *d_qkv_w, int H, int D, int kd, int vd, float *d_query, float *d_key,
                          float *d_value);

#endif
