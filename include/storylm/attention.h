/* Causal attention of every head over packed stories (src/model/attention.c):
 * the forward and backward kernels and their working memory. model.h calls
 * them from the passes; probes read their weights through model.h's
 * slm_activations_attention. */
#ifndef STORYLM_ATTENTION_H
#define STORYLM_ATTENTION_H

#include <stdint.h>

#include "storylm/dropout.h"
#include "storylm/score.h"

typedef struct ModelConfig ModelConfig; /* model.h */

/* Attention's working memory, sized by slm_activations_init (S = slm_attention_row_stride(W)). */
typedef struct AttentionScratch {
    float *kv, *d_kv;        /* (H, ld/8, kd+vd, 8): each head's keys and values in blocks of 8
                              * positions (component i of the block's 8 keys at offset 8*i), and gradients */
    float *dist, *d_dist;    /* (H, S): distance scores farthest first, 8 zeros each side, and gradients */
    float *w, *ds;           /* (H, S): one position's weights and score gradients */
    float *lse;              /* (H, ld): each position's log-sum-exp of its scores, for the backward */
    DropoutMask drop;        /* training's attention dropout for this pass (p 0: none; slm_dropout_prepare) */
    float *dw;               /* (H, S): one position's weights after dropout, what the blend reads */
    VariantScratch *variant; /* --pos and --score's working memory (score.h) */
    int head_base;           /* l*H for layer l: its heads' number over all layers, attention
                              * dropout's stream (so each layer draws masks of its own) */
} AttentionScratch;

/* Causal attention of every head over packed stories.
 * qkv (QKV, ld) as in Activations (ld a multiple of 8, >= N + 8); distance
 * (H, W); first_key (N) -> att (H, N, S) and out: head h's output at position
 * p to out + p*out_ld + h*vd. Fills s->kv and s->dist for the backward pass.
 * att may be NULL: the weights are not kept (the backward computes them again). */
void slm_attention_forward(const ModelConfig *c, const float *qkv, int ld, const float *distance, const int *first_key,
                           int N, float *att, float *out, int out_ld, const AttentionScratch *s);
/* d_out (at d_out + p*out_ld + h*vd) -> d_qkv (QKV, ld) = (heads in skip_heads
 * get 0), d_distance (H, W) +=. s as slm_attention_forward left it; att as it
 * left it, or NULL when it kept none. */
void slm_attention_backward(const ModelConfig *c, const float *qkv, int ld, const float *att, const int *first_key,
                            int N, const float *d_out, int out_ld, uint32_t skip_heads, float *d_qkv, float *d_distance,
                            const AttentionScratch *s);
/* Length of one head's scratch rows for a window of W keys. */
int slm_attention_row_stride(int window);

#endif
