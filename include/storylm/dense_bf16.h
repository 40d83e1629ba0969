/* Generation's dense products in BF16 (src/generate/dense_bf16.c):
 * `generate --precision bf16`. The weights are rounded to bfloat16 once and
 * packed in blocks of 16 output rows, a block's columns in pairs (one 512-bit
 * register a pair: what VDPBF16PS reads); each input is rounded to bfloat16
 * as it comes. Every output is one chain of VDPBF16PS from 0 over the column
 * pairs in order, then plus its bias: the bits of
 * slm_matmul_bf16_emulated(x, W^T) + bias, whether a sample is computed
 * alone or with others. Half the bytes of the FP32 weights, and two
 * multiply-adds a lane an instruction instead of one. Needs avx512_bf16
 * (slm_precision_check). */
#ifndef STORYLM_DENSE_BF16_H
#define STORYLM_DENSE_BF16_H

#include <stddef.h>
#include <stdint.h>

#include "storylm/bf16.h"
#include "storylm/error.h"
#include "storylm/kernels16.h"

typedef struct DenseBf16 {
    uint32_t *w; /* (ceil(rows/16), pairs, 16): lane r of pair p of block b holds
                  * (W[16b+r][2p] low, W[16b+r][2p+1] high) as bfloat16, 0 past the ends */
    int rows, cols, pairs;
} DenseBf16;

/* W (rows, cols), element (o, k) at W[o * row_stride + k * col_stride] -> d.
 * -1 with e set when out of memory. */
int slm_dense_bf16_pack(DenseBf16 *d, const float *W, size_t row_stride, size_t col_stride, int rows, int cols,
                        Error *e);
/* The same from a layer already packed for FP32 (kernels16.h): the bits of
 * packing its W. */
int slm_dense_bf16_from16(DenseBf16 *d, const Dense16 *f, Error *e);
void slm_dense_bf16_free(DenseBf16 *d);

/* x0 (n0) then x1 (n1), one vector of n0 + n1 -> its bfloat16 pairs
 * (ceil((n0 + n1) / 2)), an odd length's last padded with 0. */
void slm_dense_bf16_pairs(const float *x0, int n0, const float *x1, int n1, uint32_t *pairs);

/* For j < k: y of sample which[j] (d->rows) = W x + bias (bias NULL: none),
 * x that sample's pairs (d->pairs); x and y hold a sample's vector every
 * x_step pairs and y_step floats. Each block of weights is loaded once for 8
 * samples and stays in the first-level cache while all pass; one sample
 * alone goes through 8 blocks at once. */
void slm_dense_bf16(const DenseBf16 *d, const float *bias, const uint32_t *x, size_t x_step, const int *which, int k,
                    float *y, size_t y_step);

/* Each sample's input to the next product as pairs: a batch's scratch,
 * step pairs a sample (the widest input's), so threads taking different
 * samples never share it. */
typedef struct Bf16Inputs {
    uint32_t *pairs;
    size_t step;
} Bf16Inputs;
/* For n samples whose widest input is widest floats; -1 with e set when out of memory. */
int slm_bf16_inputs_init(Bf16Inputs *in, int n, int widest, Error *e);
void slm_bf16_inputs_free(Bf16Inputs *in);

/* A dense layer at a generator's precision, for j < k: sample which[j]'s
 * y = W x + bias (x, y every x_step, y_step floats). With b (BF16), each x
 * is rounded into its pairs in in, then slm_dense_bf16; without (NULL),
 * FP32's slm_dense16 with f. */
void slm_dense_at(const Dense16 *f, const DenseBf16 *b, const Bf16Inputs *in, const float *bias, const float *x,
                  size_t x_step, const int *which, int k, float *y, size_t y_step);

#endif
