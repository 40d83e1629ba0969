/* Generation's FP32 kernels (src/generate/kernels16.c), shared by the
 * attention network's generator (src/arch/readout_generate.c) and the transformer's
 * (src/arch/transformer/transformer_generate.c): dense layers packed in blocks of 16 output rows,
 * run over the samples fed in a step; a head's scores over a key cache laid
 * out 16 slots a register, and the blend of its values. Every output's sum
 * is in a fixed order, so a sample's outputs have the same bits alone or
 * with any others. */
#ifndef STORYLM_KERNELS16_H
#define STORYLM_KERNELS16_H

#include <stddef.h>
#include <stdint.h>

#include "storylm/error.h"

/* A dense layer's weights in blocks of 16 rows, column by column: block b
 * holds W[16b + r][k] at (b*cols + k)*16 + r (rows past the end 0). */
typedef struct Dense16 {
    float *w; /* (ceil(rows/16), cols, 16) */
    int rows, cols;
} Dense16;

/* W (rows, cols), element (o, k) at W[o * row_stride + k * col_stride] -> d.
 * -1 with e set when out of memory. */
int slm_dense16_pack(Dense16 *d, const float *W, size_t row_stride, size_t col_stride, int rows, int cols, Error *e);
void slm_dense16_free(Dense16 *d);

/* For j < k: y of sample which[j] (d->rows) = W x + bias, x that sample's
 * input (d->cols); x and y hold a sample's vector every x_step, y_step
 * floats. Each output is two chains of FMAs (the even columns' and the odd
 * ones', in order) added, then the bias: the same bits whichever samples
 * come with it. Each block of weights is loaded once for 8 samples (with
 * AVX-512) and stays in the first-level cache while every sample passes. */
void slm_dense16(const Dense16 *d, const float *bias, const float *x, size_t x_step, const int *which, int k, float *y,
                 size_t y_step);

/* y (m) = x (Din) @ w (Din, m) for one sample, x's rows 0..split-1 from x0
 * and the rest from x1: each output's sum over the rows in order, one FMA a row. */
void slm_row_times_matrix(const float *w, int Din, int m, const float *x0, int split, const float *x1, float *y);

/* Slots of a head's key cache: the window's, rounded up to blocks of 16. */
static inline int slm_key_slots(int window) { return (window + 15) / 16 * 16; }

/* Where component i of slot j sits in a head's keys (kd components): slots
 * in blocks of 16, a block's components one after the other, each 16 slots
 * (one register, one cache line) wide. A head's scores then read one
 * contiguous stretch, a block at a time. */
static inline size_t slm_key_at(int kd, int i, int j) { return ((size_t)(j / 16) * kd + i) * 16 + j % 16; }

/* sc (n rounded up to 16) = bias (as many) + q (kd) . each slot's key
 * (keys: blocks of 16 slots, slm_key_at): one FMA a component in order. */
void slm_query_key_scores(const float *q, int kd, const float *keys, const float *bias, int n, float *sc);

/* The same for keys of 8 components with slot j's at table + rows[j] * 8:
 * a row of a table shared by the samples (a token's key, when it depends
 * on the token alone), each block of 16 slots turned into the cache's
 * layout in registers, so the same sums and bits; returns the largest of
 * the n scores (NaNs passed over), so the softmax needs no pass for it. */
float slm_query_key_row_scores(const float *q, const float *table, const int32_t *rows, const float *bias, int n,
                               float *sc);

/* out (vd) = weights a (n) . the slots' values (values: n slots of vd
 * channels): the slots in four chains (j mod 4) added at the end. */
void slm_blend_values(const float *a, int n, const float *values, int vd, float *out);

/* The same with slot j's value at table + rows[j] * vd: a row of a table
 * shared by the samples (a token's value, when it depends on the token
 * alone), the same sums in the same order, so the same bits. */
void slm_blend_value_rows(const float *a, int n, const float *table, const int32_t *rows, int vd, float *out);

/* out[h] (16) = a[h] (n) . the slots' values of four heads at once (vd
 * 16), head h's slot j at tables[h] + rows[j] * 16: each head's sums in
 * slm_blend_value_rows' order (the same bits), each slot's row read once
 * for the four. */
void slm_blend_value_rows4(const float *const *a, int n, const float *const *tables, const int32_t *rows,
                           float *const *out);

/* The same with the values laid out as the keys (slm_key_at: component i
 * of slot j at slm_key_at(vd, i, j)): 16 slots a register, one chain a
 * channel, its 16 lanes added in a fixed tree at the end; a readable for n
 * rounded up to 16 (the slots past n weigh 0). For value widths below 16,
 * where slm_blend_values goes channel by channel. */
void slm_blend_values_by_slot(const float *a, int n, const float *values, int vd, float *out);

/* Floats zeroed for a key or value cache: in 2 MB pages when they fill one
 * or more. Freed by free(). NULL with e set when out of memory. */
float *slm_cache_alloc(size_t floats, Error *e);

/* --score additive: s (n) += v . tanh(q~ + key j) (v, q~: kd), key j's
 * component i at keys[i*stride + j]; the tanh is the passes' own, so that
 * generation scores as training does (the portable twin's under
 * --kernels portable). */
void slm_additive_scores_cached(const float *v, int kd, const float *q, const float *keys, int stride, int n, float *s);

#endif
