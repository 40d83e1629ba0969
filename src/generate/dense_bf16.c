/* Generation's dense products in BF16: see include/storylm/dense_bf16.h.
 * One chain of VDPBF16PS an output (k = 0, 1, ... in pairs, as
 * slm_matmul_bf16 sums), so what a sample's outputs are does not depend on
 * which kernel below computes them. */
#include "storylm/dense_bf16.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#ifdef __x86_64__ /* elsewhere (WebAssembly) the plain C below: --precision bf16 is refused there */
#define BF16_TARGET __attribute__((target("avx512f,avx512bf16")))
#include <immintrin.h>
#endif

/* Samples a block of weights serves at once (8 chains in flight), and
 * blocks one sample alone goes through at once (as many). */
#define GROUP 8
/* Many samples: QUAD_BLOCKS blocks for QUAD_GROUP samples at once, 24
 * chains, each step of the loop 4 weight loads and 6 broadcasts for 24
 * products (one block for 8 samples is 9 loads for 8: the loads, not the
 * products, bounded it). */
#define QUAD_BLOCKS 4
#define QUAD_GROUP 6

/* d's buffer for rows x cols, zeroed; -1 with e set when out of memory. */
static int dense_alloc(DenseBf16 *d, int rows, int cols, Error *e) {
    int P = (cols + 1) / 2;
    *d = (DenseBf16){.rows = rows, .cols = cols, .pairs = P};
    d->w = xcalloc((size_t)(rows + 15) / 16 * P * 16, sizeof *d->w, e);
    return d->w ? 0 : -1;
}

/* Element (o, k) = v into its lane and half of d's pairs. */
static void dense_set(DenseBf16 *d, int o, int k, float v) {
    uint32_t b = slm_bf16_from_float(v);
    d->w[((size_t)(o / 16) * d->pairs + k / 2) * 16 + o % 16] |= k % 2 ? b << 16 : b;
}

int slm_dense_bf16_pack(DenseBf16 *d, const float *W, size_t row_stride, size_t col_stride, int rows, int cols,
                        Error *e) {
    if (dense_alloc(d, rows, cols, e)) return -1;
    for (int o = 0; o < rows; o++)
        for (int k = 0; k < cols; k++) dense_set(d, o, k, W[(size_t)o * row_stride + (size_t)k * col_stride]);
    return 0;
}

int slm_dense_bf16_from16(DenseBf16 *d, const Dense16 *f, Error *e) {
    if (dense_alloc(d, f->rows, f->cols, e)) return -1;
    for (int o = 0; o < f->rows; o++) /* W[o][k] at (b * cols + k) * 16 + r, o = 16b + r */
        for (int k = 0; k < f->cols; k++) dense_set(d, o, k, f->w[((size_t)(o / 16) * f->cols + k) * 16 + o % 16]);
    return 0;
}

void slm_dense_bf16_free(DenseBf16 *d) {
    free(d->w);
    *d = (DenseBf16){0};
}

void slm_dense_bf16_pairs(const float *x0, int n0, const float *x1, int n1, uint32_t *pairs) {
    if (n0 % 2 == 0) { /* the usual case: each part's pairs are its own */
        slm_bf16_pack_row(x0, n0, pairs);
        slm_bf16_pack_row(x1, n1, pairs + n0 / 2);
        return;
    }
    for (int k = 0; k < n0 + n1; k += 2) { /* a pair across the parts: one at a time */
        float a = k < n0 ? x0[k] : x1[k - n0], b = k + 1 >= n0 + n1 ? 0.0f : k + 1 < n0 ? x0[k + 1] : x1[k + 1 - n0];
        pairs[k / 2] = (uint32_t)slm_bf16_from_float(a) | (uint32_t)slm_bf16_from_float(b) << 16;
    }
}

#ifdef __x86_64__
/* A block's 16 sums (n real) + bias (NULL: none) -> y. */
static inline __attribute__((always_inline)) BF16_TARGET void store_block(__m512 acc, const float *bias, int n,
                                                                          float *y) {
    __mmask16 m = n >= 16 ? 0xFFFF : (__mmask16)((1u << n) - 1u);
    if (bias) acc = _mm512_add_ps(acc, _mm512_maskz_loadu_ps(m, bias));
    _mm512_mask_storeu_ps(y, m, acc);
}

/* One block (w: P pairs of 16 lanes; n rows real) for S samples at once (S
 * <= GROUP, a constant where inlined): each weight register serves all S.
 * x[s] (P pairs) -> y[s] (n). */
static inline __attribute__((always_inline)) BF16_TARGET void block_for_samples(const uint32_t *w, int P,
                                                                                const uint32_t *const *x, int S,
                                                                                const float *bias, int n,
                                                                                float *const *y) {
    __m512 acc[GROUP];
#pragma GCC unroll 8
    for (int s = 0; s < S; s++) acc[s] = _mm512_setzero_ps();
    for (int p = 0; p < P; p++) {
        __m512bh wv = (__m512bh)_mm512_loadu_si512(w + (size_t)p * 16);
#pragma GCC unroll 8
        for (int s = 0; s < S; s++) acc[s] = _mm512_dpbf16_ps(acc[s], wv, (__m512bh)_mm512_set1_epi32((int)x[s][p]));
    }
#pragma GCC unroll 8
    for (int s = 0; s < S; s++) store_block(acc[s], bias, n, y[s]);
}

/* QUAD_BLOCKS consecutive blocks (block pairs apart; rows real from the
 * first) for S samples at once (S <= QUAD_GROUP, a constant where inlined):
 * x[s] (P pairs) -> y[s] (16 QUAD_BLOCKS). Each output's chain is
 * block_for_samples', its bits the same. */
static inline __attribute__((always_inline)) BF16_TARGET void quad_for_samples(const uint32_t *w, size_t block, int P,
                                                                               const uint32_t *const *x, int S,
                                                                               const float *bias, int rows,
                                                                               float *const *y) {
    __m512 acc[QUAD_GROUP][QUAD_BLOCKS];
#pragma GCC unroll 8
    for (int s = 0; s < S; s++)
#pragma GCC unroll 4
        for (int b = 0; b < QUAD_BLOCKS; b++) acc[s][b] = _mm512_setzero_ps();
    for (int p = 0; p < P; p++) {
        __m512bh wv[QUAD_BLOCKS];
#pragma GCC unroll 4
        for (int b = 0; b < QUAD_BLOCKS; b++) wv[b] = (__m512bh)_mm512_loadu_si512(w + b * block + (size_t)p * 16);
#pragma GCC unroll 8
        for (int s = 0; s < S; s++) {
            __m512bh xv = (__m512bh)_mm512_set1_epi32((int)x[s][p]);
#pragma GCC unroll 4
            for (int b = 0; b < QUAD_BLOCKS; b++) acc[s][b] = _mm512_dpbf16_ps(acc[s][b], wv[b], xv);
        }
    }
#pragma GCC unroll 8
    for (int s = 0; s < S; s++)
#pragma GCC unroll 4
        for (int b = 0; b < QUAD_BLOCKS; b++)
            store_block(acc[s][b], bias ? bias + 16 * b : NULL, rows - 16 * b < 16 ? rows - 16 * b : 16, y[s] + 16 * b);
}

/* Blocks b .. b + QUAD_BLOCKS - 1 of d for the k samples which (x, y as
 * slm_dense_bf16's), QUAD_GROUP samples at a time, then 4, 2, 1. */
static BF16_TARGET void quad_for_group(const DenseBf16 *d, const float *bias, const uint32_t *x, size_t x_step,
                                       const int *which, int k, float *y, size_t y_step, int b) {
    int P = d->pairs;
    size_t block = (size_t)P * 16;
    const uint32_t *w = d->w + b * block, *xs[QUAD_GROUP];
    const float *bb = bias ? bias + 16 * b : NULL;
    float *ys[QUAD_GROUP];
    for (int j = 0; j < k;) {
        int S = k - j < QUAD_GROUP ? k - j : QUAD_GROUP;
        S = S == QUAD_GROUP ? S : S >= 4 ? 4 : S >= 2 ? 2 : 1;
        for (int s = 0; s < S; s++) xs[s] = x + which[j + s] * x_step, ys[s] = y + which[j + s] * y_step + 16 * b;
        /* the group's size a constant in each call, so its chains stay in registers */
        if (S == QUAD_GROUP)
            quad_for_samples(w, block, P, xs, QUAD_GROUP, bb, d->rows - 16 * b, ys);
        else if (S == 4)
            quad_for_samples(w, block, P, xs, 4, bb, d->rows - 16 * b, ys);
        else if (S == 2)
            quad_for_samples(w, block, P, xs, 2, bb, d->rows - 16 * b, ys);
        else
            quad_for_samples(w, block, P, xs, 1, bb, d->rows - 16 * b, ys);
        j += S;
    }
}

/* One sample through B consecutive blocks at once (B <= GROUP, a constant
 * where inlined), block pairs apart: x (P pairs) -> y (16 B; rows real). */
static inline __attribute__((always_inline)) BF16_TARGET void blocks_for_sample(const uint32_t *w, size_t block, int P,
                                                                                const uint32_t *x, int B,
                                                                                const float *bias, int rows, float *y) {
    __m512 acc[GROUP];
#pragma GCC unroll 8
    for (int b = 0; b < B; b++) acc[b] = _mm512_setzero_ps();
    for (int p = 0; p < P; p++) {
        __m512bh xv = (__m512bh)_mm512_set1_epi32((int)x[p]);
#pragma GCC unroll 8
        for (int b = 0; b < B; b++)
            acc[b] = _mm512_dpbf16_ps(acc[b], (__m512bh)_mm512_loadu_si512(w + b * block + (size_t)p * 16), xv);
    }
#pragma GCC unroll 8
    for (int b = 0; b < B; b++)
        store_block(acc[b], bias ? bias + 16 * b : NULL, rows - 16 * b < 16 ? rows - 16 * b : 16, y + 16 * b);
}

/* One sample alone: 8 blocks at a time, then 4, 2, 1, streaming the packed
 * weights once in order. */
static BF16_TARGET void dense_one(const DenseBf16 *d, const float *bias, const uint32_t *x, float *y) {
    int blocks = (d->rows + 15) / 16, P = d->pairs;
    size_t block = (size_t)P * 16;
    for (int b = 0; b < blocks;) {
        const uint32_t *w = d->w + b * block;
        const float *bb = bias ? bias + 16 * b : NULL;
        int left = blocks - b, rows = d->rows - 16 * b;
        if (left >= 8)
            blocks_for_sample(w, block, P, x, 8, bb, rows, y + 16 * b), b += 8;
        else if (left >= 4)
            blocks_for_sample(w, block, P, x, 4, bb, rows, y + 16 * b), b += 4;
        else if (left >= 2)
            blocks_for_sample(w, block, P, x, 2, bb, rows, y + 16 * b), b += 2;
        else
            blocks_for_sample(w, block, P, x, 1, bb, rows, y + 16 * b), b += 1;
    }
}

BF16_TARGET void slm_dense_bf16(const DenseBf16 *d, const float *bias, const uint32_t *x, size_t x_step,
                                const int *which, int k, float *y, size_t y_step) {
    if (k == 1) {
        dense_one(d, bias, x + which[0] * x_step, y + which[0] * y_step);
        return;
    }
    int P = d->pairs, b = 0;
    for (; b + QUAD_BLOCKS <= (d->rows + 15) / 16; b += QUAD_BLOCKS)
        quad_for_group(d, bias, x, x_step, which, k, y, y_step, b);
    for (; b < (d->rows + 15) / 16; b++) {
        const uint32_t *w = d->w + (size_t)b * P * 16, *xs[GROUP];
        const float *bb = bias ? bias + 16 * b : NULL;
        float *ys[GROUP];
        int n = d->rows - 16 * b < 16 ? d->rows - 16 * b : 16;
        for (int j = 0; j < k;) {
            int S = k - j < GROUP ? k - j : GROUP;
            for (int s = 0; s < S; s++) xs[s] = x + which[j + s] * x_step, ys[s] = y + which[j + s] * y_step + 16 * b;
            /* the group's size a constant in each call, so its chains stay in registers */
            if (S == GROUP)
                block_for_samples(w, P, xs, GROUP, bb, n, ys);
            else if (S >= 4)
                block_for_samples(w, P, xs, S = 4, bb, n, ys);
            else if (S >= 2)
                block_for_samples(w, P, xs, S = 2, bb, n, ys);
            else
                block_for_samples(w, P, xs, 1, bb, n, ys);
            j += S;
        }
    }
}

#else
/* The bits VDPBF16PS gives (slm_matmul_bf16_emulated's order), one output at a time. */
static float pair_sum(float acc, uint32_t a, uint32_t b) {
    float a_hi = slm_bf16_to_float((uint16_t)(a >> 16)), b_hi = slm_bf16_to_float((uint16_t)(b >> 16));
    float a_lo = slm_bf16_to_float((uint16_t)a), b_lo = slm_bf16_to_float((uint16_t)b);
    acc += a_hi * b_hi;
    acc = fabsf(acc) < 1.17549435e-38f ? copysignf(0.0f, acc) : acc;
    acc += a_lo * b_lo;
    return fabsf(acc) < 1.17549435e-38f ? copysignf(0.0f, acc) : acc;
}

void slm_dense_bf16(const DenseBf16 *d, const float *bias, const uint32_t *x, size_t x_step, const int *which, int k,
                    float *y, size_t y_step) {
    for (int j = 0; j < k; j++)
        for (int o = 0; o < d->rows; o++) {
            float acc = 0.0f;
            for (int p = 0; p < d->pairs; p++)
                acc = pair_sum(acc, d->w[((size_t)(o / 16) * d->pairs + p) * 16 + o % 16], x[which[j] * x_step + p]);
            y[which[j] * y_step + o] = bias ? acc + bias[o] : acc;
        }
}
#endif

int slm_bf16_inputs_init(Bf16Inputs *in, int n, int widest, Error *e) {
    in->step = (size_t)(widest + 1) / 2;
    in->pairs = xcalloc((size_t)n * in->step, sizeof *in->pairs, e);
    return in->pairs ? 0 : -1;
}

void slm_bf16_inputs_free(Bf16Inputs *in) {
    free(in->pairs);
    *in = (Bf16Inputs){0};
}

void slm_dense_at(const Dense16 *f, const DenseBf16 *b, const Bf16Inputs *in, const float *bias, const float *x,
                  size_t x_step, const int *which, int k, float *y, size_t y_step) {
    if (!b) {
        slm_dense16(f, bias, x, x_step, which, k, y, y_step);
        return;
    }
    for (int j = 0; j < k; j++)
        slm_dense_bf16_pairs(x + which[j] * x_step, b->cols, NULL, 0, in->pairs + which[j] * in->step);
    slm_dense_bf16(b, bias, in->pairs, in->step, which, k, y, y_step);
}
