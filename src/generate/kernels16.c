/* Generation's FP32 kernels: see include/storylm/kernels16.h. The attention
 * network's came from generate.c as they were (the same pragmas, so the same
 * instructions and bits); slm_blend_values_by_slot is the transformer's. */
#define _DEFAULT_SOURCE /* madvise */
#include "storylm/kernels16.h"
#include "storylm/layers.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* Contract a*b+c into FMA instructions (ISO C mode leaves them apart);
 * kernels_portable.c compiles this file again without (SLM_PORTABLE). */
#if defined(__GNUC__) && !defined(__clang__) && !defined(SLM_PORTABLE)
#pragma GCC optimize("fp-contract=fast")
#endif

/* Floats zeroed for the caches of keys and values: in 2 MB pages (Linux's
 * transparent huge pages) when they fill one or more. With many samples every
 * step reads each sample's cache, megabytes in all; in 4 KB pages that is
 * thousands of pages a step, each a likely miss of the core's address cache
 * (a walk of the page tables); 64 samples ran 1.19 times as fast with both
 * this and prefetch_head's reach (generate.c). A smaller cache is allocated as before: a
 * page of 2 MB for one sample's 192 KB would waste the rest. Freed by free(). */
#ifndef SLM_PORTABLE /* the portable twins share these: they compute nothing */
float *slm_cache_alloc(size_t floats, Error *e) {
    size_t huge = (size_t)2 << 20, bytes = (floats * sizeof(float) + huge - 1) / huge * huge;
    float *p = floats * sizeof(float) >= huge ? aligned_alloc(huge, bytes) : NULL;
    if (!p) return xcalloc(floats, sizeof(float), e);
#ifdef MADV_HUGEPAGE
    madvise(p, bytes, MADV_HUGEPAGE); /* a hint: without it (or refused) the pages are small, nothing else changes */
#endif
    memset(p, 0, bytes);
    return p;
}
#endif

/* 16 floats: one AVX-512 register (two AVX ones elsewhere), a block's 16 rows. */
typedef float f16v __attribute__((vector_size(64)));
/* The helpers are static and inlined: no ABI is crossed (GCC warns without AVX-512). */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wpsabi"
#endif
/* Samples a block of weights serves at once: with 32 registers (AVX-512) 8
 * samples' 16 chains and the weights fit; with 16, 2. */
/* Blocks one sample alone goes through at once: with AVX-512, 8 chains in
 * flight, so the FMAs wait on neither each other nor the cache. */
#ifdef __AVX512F__
#define DENSE_GROUP 8
#define DENSE_BLOCKS 4
#define PAIR_GROUP 6
#else
#define DENSE_GROUP 2
#define DENSE_BLOCKS 2
#define PAIR_GROUP 0 /* no pairs: 16 registers hold no more than block_for_samples' */
#endif

#ifndef SLM_PORTABLE
int slm_dense16_pack(Dense16 *d, const float *W, size_t row_stride, size_t col_stride, int rows, int cols, Error *e) {
    *d = (Dense16){.rows = rows, .cols = cols};
    d->w = xmalloc((size_t)(rows + 15) / 16 * 16 * cols * sizeof(float), e);
    if (!d->w) return -1;
    for (int b = 0; b < (rows + 15) / 16; b++)
        for (int k = 0; k < cols; k++)
            for (int r = 0, o = 16 * b; r < 16; r++, o++)
                d->w[((size_t)b * cols + k) * 16 + r] =
                    o < rows ? W[(size_t)o * row_stride + (size_t)k * col_stride] : 0.0f;
    return 0;
}

void slm_dense16_free(Dense16 *d) {
    free(d->w);
    *d = (Dense16){0};
}
#endif

/* 16 floats read from anywhere (no alignment asked). */
static inline f16v load16(const float *p) {
    f16v v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* A block's 16 sums (even and odd columns' chains) + bias -> y (n of them). */
static inline void store16(const f16v *even, const f16v *odd, const float *bias, int n, float *y) {
    f16v sum = *even + *odd; /* by pointer: no vector crosses a call's ABI, even where not inlined */
    if (n == 16) {           /* the same sums as below, a register at once */
        sum += load16(bias);
        memcpy(y, &sum, sizeof sum);
        return;
    }
    float out[16];
    memcpy(out, &sum, sizeof sum);
    for (int r = 0; r < n; r++) y[r] = out[r] + bias[r];
}

/* Every row's sum is the same two chains whichever kernel computes it: one
 * FMA a column, the even columns' in one, the odd ones' in the other (an FMA
 * waits on the one before), added at the end, then the bias. So a sample's
 * outputs have the same bits alone, in a group, or with any others. */

/* One block (16 rows, n real; w its packed weights, cols columns) for S
 * samples at once (S <= DENSE_GROUP, a constant where inlined): each weight
 * register serves all S. x[s] (cols) -> y[s] (16). */
static inline __attribute__((always_inline)) void block_for_samples(const float *w, int cols, const float *const *x,
                                                                    int S, const float *bias, int n, float *const *y) {
    f16v e[DENSE_GROUP], o[DENSE_GROUP];
#pragma GCC unroll 8
    for (int s = 0; s < S; s++) e[s] = o[s] = (f16v){0};
    int k = 0;
    for (; k + 1 < cols; k += 2) {
        f16v we = load16(w + (size_t)k * 16), wo = load16(w + (size_t)k * 16 + 16);
#pragma GCC unroll 8
        for (int s = 0; s < S; s++) {
            e[s] += we * x[s][k];
            o[s] += wo * x[s][k + 1];
        }
    }
    if (k < cols) {
        f16v we = load16(w + (size_t)k * 16);
#pragma GCC unroll 8
        for (int s = 0; s < S; s++) e[s] += we * x[s][k];
    }
#pragma GCC unroll 8
    for (int s = 0; s < S; s++) store16(&e[s], &o[s], bias, n, y[s]);
}

#if PAIR_GROUP
/* Two consecutive blocks (b's weights at w, b + 1's at w + block; n0, n1
 * rows real) for S samples at once (S <= PAIR_GROUP, a constant where
 * inlined): each sample's input loaded once for both blocks, so a step of
 * the loop is 4 weight loads and 2 S broadcasts for 4 S FMAs, where one
 * block is 2 + 2 S for 2 S (the loads, not the FMAs, bounded the product).
 * Each output's two chains and bits are block_for_samples'. */
static inline __attribute__((always_inline)) void pair_for_samples(const float *w, size_t block, int cols,
                                                                   const float *const *x, int S, const float *bias,
                                                                   int n0, int n1, float *const *y) {
    f16v e0[PAIR_GROUP], o0[PAIR_GROUP], e1[PAIR_GROUP], o1[PAIR_GROUP];
#pragma GCC unroll 8
    for (int s = 0; s < S; s++) e0[s] = o0[s] = e1[s] = o1[s] = (f16v){0};
    const float *v = w + block;
    int k = 0;
    for (; k + 1 < cols; k += 2) {
        f16v we0 = load16(w + (size_t)k * 16), wo0 = load16(w + (size_t)k * 16 + 16);
        f16v we1 = load16(v + (size_t)k * 16), wo1 = load16(v + (size_t)k * 16 + 16);
#pragma GCC unroll 8
        for (int s = 0; s < S; s++) {
            float xe = x[s][k], xo = x[s][k + 1];
            e0[s] += we0 * xe, e1[s] += we1 * xe;
            o0[s] += wo0 * xo, o1[s] += wo1 * xo;
        }
    }
    if (k < cols) {
        f16v we0 = load16(w + (size_t)k * 16), we1 = load16(v + (size_t)k * 16);
#pragma GCC unroll 8
        for (int s = 0; s < S; s++) e0[s] += we0 * x[s][k], e1[s] += we1 * x[s][k];
    }
#pragma GCC unroll 8
    for (int s = 0; s < S; s++) {
        store16(&e0[s], &o0[s], bias, n0, y[s]);
        store16(&e1[s], &o1[s], bias + 16, n1, y[s] + 16);
    }
}
#endif

/* One sample alone through B consecutive blocks at once (B <= DENSE_BLOCKS,
 * a constant where inlined), blocks of block floats apart: x (cols) -> y
 * (16 B, rows real of them). */
static inline __attribute__((always_inline)) void blocks_for_sample(const float *w, size_t block, int cols,
                                                                    const float *x, int B, const float *bias, int rows,
                                                                    float *y) {
    f16v e[DENSE_BLOCKS], o[DENSE_BLOCKS];
#pragma GCC unroll 4
    for (int b = 0; b < B; b++) e[b] = o[b] = (f16v){0};
    int k = 0;
    for (; k + 1 < cols; k += 2) {
        float xe = x[k], xo = x[k + 1];
#pragma GCC unroll 4
        for (int b = 0; b < B; b++) {
            e[b] += load16(w + b * block + (size_t)k * 16) * xe;
            o[b] += load16(w + b * block + (size_t)k * 16 + 16) * xo;
        }
    }
    if (k < cols) {
#pragma GCC unroll 4
        for (int b = 0; b < B; b++) e[b] += load16(w + b * block + (size_t)k * 16) * x[k];
    }
#pragma GCC unroll 4
    for (int b = 0; b < B; b++)
        store16(&e[b], &o[b], bias + 16 * b, rows - 16 * b < 16 ? rows - 16 * b : 16, y + 16 * b);
}

/* y = packed W (rows, cols) x + bias for one sample: DENSE_BLOCKS blocks at
 * a time, streaming the packed weights once in order. */
static void dense_one(const float *packed, const float *bias, const float *x, int rows, int cols, float *y) {
    int blocks = (rows + 15) / 16, b = 0;
    size_t block = (size_t)cols * 16;
    for (; b + DENSE_BLOCKS <= blocks; b += DENSE_BLOCKS)
        blocks_for_sample(packed + b * block, block, cols, x, DENSE_BLOCKS, bias + 16 * b, rows - 16 * b, y + 16 * b);
    for (; b < blocks; b++)
        blocks_for_sample(packed + b * block, block, cols, x, 1, bias + 16 * b, rows - 16 * b, y + 16 * b);
}

#if PAIR_GROUP
/* Blocks b and b + 1 of d for the k samples which (x, y as slm_dense16's),
 * PAIR_GROUP samples at a time, then 4, 2, 1. */
static void pair_for_group(const Dense16 *d, const float *bias, const float *x, size_t x_step, const int *which, int k,
                           float *y, size_t y_step, int b) {
    size_t block = (size_t)d->cols * 16;
    const float *w = d->w + b * block, *xs[PAIR_GROUP];
    float *ys[PAIR_GROUP];
    int n0 = d->rows - 16 * b < 16 ? d->rows - 16 * b : 16,
        n1 = d->rows - 16 * b - 16 < 16 ? d->rows - 16 * b - 16 : 16;
    for (int j = 0; j < k;) {
        int S = k - j < PAIR_GROUP ? k - j : PAIR_GROUP;
        S = S == PAIR_GROUP ? S : S >= 4 ? 4 : S >= 2 ? 2 : 1;
        for (int s = 0; s < S; s++) xs[s] = x + which[j + s] * x_step, ys[s] = y + which[j + s] * y_step + 16 * b;
        /* the group's size a constant in each call, so its chains stay in registers */
        if (S == PAIR_GROUP)
            pair_for_samples(w, block, d->cols, xs, PAIR_GROUP, bias + 16 * b, n0, n1, ys);
        else if (S == 4)
            pair_for_samples(w, block, d->cols, xs, 4, bias + 16 * b, n0, n1, ys);
        else if (S == 2)
            pair_for_samples(w, block, d->cols, xs, 2, bias + 16 * b, n0, n1, ys);
        else
            pair_for_samples(w, block, d->cols, xs, 1, bias + 16 * b, n0, n1, ys);
        j += S;
    }
}
#endif

/* A matrix product over the samples, block by block: each block of
 * weights (16 x cols) is loaded into registers once for DENSE_GROUP samples
 * and stays in the first-level cache while every sample passes, so the
 * weights stream past once a step, not once a sample. */
void slm_dense16(const Dense16 *d, const float *bias, const float *x, size_t x_step, const int *which, int k, float *y,
                 size_t y_step) {
    const float *packed = d->w;
    int rows = d->rows, cols = d->cols;
    if (k == 1) {
        dense_one(packed, bias, x + which[0] * x_step, rows, cols, y + which[0] * y_step);
        return;
    }
    int b = 0;
#if PAIR_GROUP
    for (; b + 2 <= (rows + 15) / 16; b += 2) pair_for_group(d, bias, x, x_step, which, k, y, y_step, b);
#endif
    for (; b < (rows + 15) / 16; b++) {
        const float *w = packed + (size_t)b * cols * 16, *xs[DENSE_GROUP];
        float *ys[DENSE_GROUP];
        int n = rows - 16 * b < 16 ? rows - 16 * b : 16;
        for (int j = 0; j < k;) {
            int S = k - j < DENSE_GROUP ? k - j : DENSE_GROUP;
            for (int s = 0; s < S; s++) xs[s] = x + which[j + s] * x_step, ys[s] = y + which[j + s] * y_step + 16 * b;
            /* the group's size a constant in each call, so its chains stay in registers */
            if (S == DENSE_GROUP)
                block_for_samples(w, cols, xs, DENSE_GROUP, bias + 16 * b, n, ys);
            else if (S >= 4)
                block_for_samples(w, cols, xs, S = 4, bias + 16 * b, n, ys);
            else if (S >= 2)
                block_for_samples(w, cols, xs, S = 2, bias + 16 * b, n, ys);
            else
                block_for_samples(w, cols, xs, 1, bias + 16 * b, n, ys);
            j += S;
        }
    }
}

/* Each output's sum kept in registers (4 of 16 outputs at a time) rather than in memory. */
void slm_row_times_matrix(const float *w, int Din, int m, const float *x0, int split, const float *x1, float *y) {
    int c = 0;
    for (; c + 64 <= m; c += 64) {
        f16v a0 = {0}, a1 = {0}, a2 = {0}, a3 = {0};
        for (int r = 0; r < Din; r++) {
            const float *wr = w + (size_t)r * m + c;
            float xr = r < split ? x0[r] : x1[r - split];
            a0 += load16(wr) * xr;
            a1 += load16(wr + 16) * xr;
            a2 += load16(wr + 32) * xr;
            a3 += load16(wr + 48) * xr;
        }
        memcpy(y + c, &a0, sizeof a0), memcpy(y + c + 16, &a1, sizeof a1);
        memcpy(y + c + 32, &a2, sizeof a2), memcpy(y + c + 48, &a3, sizeof a3);
    }
    for (; c + 16 <= m; c += 16) {
        f16v a = {0};
        for (int r = 0; r < Din; r++) a += load16(w + (size_t)r * m + c) * (r < split ? x0[r] : x1[r - split]);
        memcpy(y + c, &a, sizeof a);
    }
    for (; c < m; c++) {
        float a = 0.0f;
        for (int r = 0; r < Din; r++) a += w[(size_t)r * m + c] * (r < split ? x0[r] : x1[r - split]);
        y[c] = a;
    }
}

/* 16 slots in a register, stored once; the slots past n are the cache's
 * unused ones (their scores are never read). */
void slm_query_key_scores(const float *q, int kd, const float *keys, const float *bias, int n, float *sc) {
    int j = 0;
    for (; j + 64 <= n; j += 64) { /* four blocks: four chains in flight (a slot's sum as below) */
        const float *k0 = keys + (size_t)j * kd, *k1 = k0 + 16 * kd, *k2 = k1 + 16 * kd, *k3 = k2 + 16 * kd;
        f16v a0 = load16(bias + j), a1 = load16(bias + j + 16), a2 = load16(bias + j + 32), a3 = load16(bias + j + 48);
        for (int i = 0; i < kd; i++) {
            a0 += load16(k0 + 16 * i) * q[i], a1 += load16(k1 + 16 * i) * q[i];
            a2 += load16(k2 + 16 * i) * q[i], a3 += load16(k3 + 16 * i) * q[i];
        }
        memcpy(sc + j, &a0, sizeof a0), memcpy(sc + j + 16, &a1, sizeof a1);
        memcpy(sc + j + 32, &a2, sizeof a2), memcpy(sc + j + 48, &a3, sizeof a3);
    }
    for (; j + 32 <= n; j += 32) { /* two blocks: two chains in flight */
        const float *k0 = keys + (size_t)j * kd, *k1 = k0 + 16 * kd;
        f16v a0 = load16(bias + j), a1 = load16(bias + j + 16);
        for (int i = 0; i < kd; i++) a0 += load16(k0 + 16 * i) * q[i], a1 += load16(k1 + 16 * i) * q[i];
        memcpy(sc + j, &a0, sizeof a0), memcpy(sc + j + 16, &a1, sizeof a1);
    }
    for (; j + 16 <= n; j += 16) {
        const float *k = keys + (size_t)j * kd;
        f16v a = load16(bias + j);
        for (int i = 0; i < kd; i++) a += load16(k + 16 * i) * q[i];
        memcpy(sc + j, &a, sizeof a);
    }
    if (j < n) { /* the last n % 16 slots: each product rounded before it is added (no FMA), as the one-slot-at-a-time
                  * code before gave them (GCC contracts vector code here, not scalar), so the numbers stay */
        const float *k = keys + (size_t)j * kd;
        f16v a = load16(bias + j);
        for (int i = 0; i < kd; i++) {
            f16v p = load16(k + 16 * i) * q[i];
            __asm__("" : "+m"(p)); /* p through memory: rounded, not fused into the add */
            a += p;
        }
        memcpy(sc + j, &a, sizeof a);
    }
}

/* 8 floats, half a register: one slot's key of 8 components. */
typedef float f8v __attribute__((vector_size(32)));

/* Lanes picked from a (0..15) and b (16..31) within each 128-bit quarter
 * (UNPLO/UNPHI interleave, SHUF44/SHUFEE take pairs) or each 256-bit half
 * (PERM20/PERM31 take quarters): the steps of an 8 x 8 transpose, done in
 * both halves of a register at once. */
#define UNPLO(a, b) __builtin_shufflevector(a, b, 0, 16, 1, 17, 4, 20, 5, 21, 8, 24, 9, 25, 12, 28, 13, 29)
#define UNPHI(a, b) __builtin_shufflevector(a, b, 2, 18, 3, 19, 6, 22, 7, 23, 10, 26, 11, 27, 14, 30, 15, 31)
#define SHUF44(a, b) __builtin_shufflevector(a, b, 0, 1, 16, 17, 4, 5, 20, 21, 8, 9, 24, 25, 12, 13, 28, 29)
#define SHUFEE(a, b) __builtin_shufflevector(a, b, 2, 3, 18, 19, 6, 7, 22, 23, 10, 11, 26, 27, 14, 15, 30, 31)
#define PERM20(a, b) __builtin_shufflevector(a, b, 0, 1, 2, 3, 16, 17, 18, 19, 8, 9, 10, 11, 24, 25, 26, 27)
#define PERM31(a, b) __builtin_shufflevector(a, b, 4, 5, 6, 7, 20, 21, 22, 23, 12, 13, 14, 15, 28, 29, 30, 31)

/* Slot m's and slot m + 8's keys (8 floats each) -> one register, lanes 0-7 and 8-15. */
static inline f16v two_keys(const float *lo, const float *hi) {
    f8v a, b;
    memcpy(&a, lo, sizeof a), memcpy(&b, hi, sizeof b);
    return __builtin_shufflevector(a, b, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
}

/* 16 slots' keys of 8 components (slot l's at table + row[l] * 8) -> a
 * (16 lanes, a slot each) = bias + q . each key, one FMA a component in
 * order (fused 0: each product rounded, then added), as
 * slm_query_key_scores sums its block. The block is turned into the
 * cache's layout in registers, written out statement by statement so
 * that GCC keeps it there. */
static inline __attribute__((always_inline)) f16v scores_block8(const float *q, const float *table, const int32_t *row,
                                                                f16v a, int fused) {
#define KEY(m) (table + (size_t)row[m] * 8)
    f16v x0 = two_keys(KEY(0), KEY(8)), x1 = two_keys(KEY(1), KEY(9)), x2 = two_keys(KEY(2), KEY(10)),
         x3 = two_keys(KEY(3), KEY(11)), x4 = two_keys(KEY(4), KEY(12)), x5 = two_keys(KEY(5), KEY(13)),
         x6 = two_keys(KEY(6), KEY(14)), x7 = two_keys(KEY(7), KEY(15));
#undef KEY
    f16v t0 = UNPLO(x0, x1), t1 = UNPHI(x0, x1), t2 = UNPLO(x2, x3), t3 = UNPHI(x2, x3);
    f16v t4 = UNPLO(x4, x5), t5 = UNPHI(x4, x5), t6 = UNPLO(x6, x7), t7 = UNPHI(x6, x7);
    f16v u0 = SHUF44(t0, t2), u1 = SHUFEE(t0, t2), u2 = SHUF44(t1, t3), u3 = SHUFEE(t1, t3);
    f16v u4 = SHUF44(t4, t6), u5 = SHUFEE(t4, t6), u6 = SHUF44(t5, t7), u7 = SHUFEE(t5, t7);
    f16v k[8] = {PERM20(u0, u4), PERM20(u1, u5), PERM20(u2, u6), PERM20(u3, u7),
                 PERM31(u0, u4), PERM31(u1, u5), PERM31(u2, u6), PERM31(u3, u7)}; /* k[i]: component i */
    if (fused) {
        a += k[0] * q[0], a += k[1] * q[1], a += k[2] * q[2], a += k[3] * q[3];
        a += k[4] * q[4], a += k[5] * q[5], a += k[6] * q[6], a += k[7] * q[7];
        return a;
    }
#pragma GCC unroll 8
    for (int i = 0; i < 8; i++) {
        f16v p = k[i] * q[i];
        __asm__("" : "+m"(p)); /* p through memory: rounded, not fused into the add */
        a += p;
    }
    return a;
}

typedef int32_t i16v __attribute__((vector_size(64)));

/* m with each lane of a larger than m's (where live is -1) in its place: a
 * NaN lane of a never taken, as a running `a > m ? a : m` passes NaNs over. */
static inline f16v max_lanes(f16v m, f16v a, i16v live) {
    i16v take = (a > m) & live;
    return (f16v)((take & (i16v)a) | (~take & (i16v)m));
}

/* The largest of m's 16 lanes, NaNs passed over. */
static inline float max_of_lanes(f16v m) {
    float lane[16], mx = -INFINITY;
    memcpy(lane, &m, sizeof lane);
    for (int l = 0; l < 16; l++) mx = lane[l] > mx ? lane[l] : mx;
    return mx;
}

float slm_query_key_row_scores(const float *q, const float *table, const int32_t *rows, const float *bias, int n,
                               float *sc) {
    f16v m = {0};
    m -= INFINITY;
    const i16v all = {0}, every = all - 1;
    int j = 0;
    for (; j + 16 <= n; j += 16) {
        f16v a = scores_block8(q, table, rows + j, load16(bias + j), 1);
        memcpy(sc + j, &a, sizeof a);
        m = max_lanes(m, a, every);
    }
    if (j < n) { /* the last n % 16 slots (the lanes past n: slot j's key, never read) */
        int32_t row[16];
        i16v live;
        for (int l = 0; l < 16; l++) row[l] = rows[j + l < n ? j + l : j], live[l] = j + l < n ? -1 : 0;
        f16v a = scores_block8(q, table, row, load16(bias + j), 0);
        memcpy(sc + j, &a, sizeof a);
        m = max_lanes(m, a, live);
    }
    return max_of_lanes(m);
}

/* out (vd) = a (n) . the slots' values, slot j's at values + row(j) * vd
 * (row(j) = rows[j], or j with rows NULL): 16 channels a register, the
 * slots in four chains (j mod 4) added at the end; channels past the last
 * 16 one by one. Inlined into each caller, so the plain cache's loop has
 * no indirection. */
static inline __attribute__((always_inline)) void blend_rows(const float *a, int n, const float *values,
                                                             const int32_t *rows, int vd, float *out) {
#define ROW(j) (values + (size_t)(rows ? rows[j] : (j)) * vd)
    int ch = 0;
    for (; ch + 16 <= vd; ch += 16) {
        f16v s0 = {0}, s1 = {0}, s2 = {0}, s3 = {0};
        int j = 0;
        for (; j + 4 <= n; j += 4) {
            s0 += load16(ROW(j) + ch) * a[j], s1 += load16(ROW(j + 1) + ch) * a[j + 1];
            s2 += load16(ROW(j + 2) + ch) * a[j + 2], s3 += load16(ROW(j + 3) + ch) * a[j + 3];
        }
        for (; j < n; j++) s0 += load16(ROW(j) + ch) * a[j];
        f16v sum = (s0 + s1) + (s2 + s3);
        memcpy(out + ch, &sum, sizeof sum);
    }
    for (; ch < vd; ch++) {
        float t = 0.0f;
        for (int j = 0; j < n; j++) t += a[j] * ROW(j)[ch];
        out[ch] = t;
    }
#undef ROW
}

void slm_blend_values(const float *a, int n, const float *values, int vd, float *out) {
    blend_rows(a, n, values, NULL, vd, out);
}

void slm_blend_value_rows(const float *a, int n, const float *table, const int32_t *rows, int vd, float *out) {
    if (vd == 16) /* the chapter's heads: a row's address a shift, not a multiply and an add, a slot */
        blend_rows(a, n, table, rows, 16, out);
    else
        blend_rows(a, n, table, rows, vd, out);
}

void slm_blend_value_rows4(const float *const *a, int n, const float *const *tables, const int32_t *rows,
                           float *const *out) {
    f16v s[4][4] = {{{0}}}; /* s[h][c]: head h's chain c, the slots j = c mod 4 */
    int j = 0;
    for (; j + 4 <= n; j += 4)
#pragma GCC unroll 4
        for (int c = 0; c < 4; c++) {
            size_t row = (size_t)rows[j + c] * 16;
#pragma GCC unroll 4
            for (int h = 0; h < 4; h++) s[h][c] += load16(tables[h] + row) * a[h][j + c];
        }
    for (; j < n; j++) {
        size_t row = (size_t)rows[j] * 16;
#pragma GCC unroll 4
        for (int h = 0; h < 4; h++) s[h][0] += load16(tables[h] + row) * a[h][j];
    }
    for (int h = 0; h < 4; h++) {
        f16v sum = (s[h][0] + s[h][1]) + (s[h][2] + s[h][3]);
        memcpy(out[h], &sum, sizeof sum);
    }
}

/* Lanes of a and b (16 each; b's are 16..31) picked into one register:
 * __builtin_shufflevector, which GCC (12 and later) and clang both have. */
#define LO1(a, b) __builtin_shufflevector(a, b, 0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23)
#define HI1(a, b) __builtin_shufflevector(a, b, 8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30, 31)
#define LO2(a, b) __builtin_shufflevector(a, b, 0, 1, 2, 3, 8, 9, 10, 11, 16, 17, 18, 19, 24, 25, 26, 27)
#define HI2(a, b) __builtin_shufflevector(a, b, 4, 5, 6, 7, 12, 13, 14, 15, 20, 21, 22, 23, 28, 29, 30, 31)
#define LO3(a, b) __builtin_shufflevector(a, b, 0, 1, 4, 5, 8, 9, 12, 13, 16, 17, 20, 21, 24, 25, 28, 29)
#define HI3(a, b) __builtin_shufflevector(a, b, 2, 3, 6, 7, 10, 11, 14, 15, 18, 19, 22, 23, 26, 27, 30, 31)
#define EVEN(a) __builtin_shufflevector(a, a, 0, 2, 4, 6, 8, 10, 12, 14, 0, 2, 4, 6, 8, 10, 12, 14)
#define ODD(a) __builtin_shufflevector(a, a, 1, 3, 5, 7, 9, 11, 13, 15, 1, 3, 5, 7, 9, 11, 13, 15)

/* acc[c] (16 lanes each, c < 8) -> out[c] = the sum of acc[c]'s lanes, for
 * c < cn: a fixed tree, halving the lanes of each channel while merging
 * pairs of registers, so 8 channels take 7 shuffle-adds and a last one. */
static inline void sum_lanes8(const f16v *acc, int cn, float *out) {
    f16v r[4], q[2];
    for (int i = 0; i < 4; i++) /* channels 2i, 2i+1: 8 lanes each */
        r[i] = LO1(acc[2 * i], acc[2 * i + 1]) + HI1(acc[2 * i], acc[2 * i + 1]);
    for (int i = 0; i < 2; i++) /* channels 4i..4i+3: 4 lanes each */
        q[i] = LO2(r[2 * i], r[2 * i + 1]) + HI2(r[2 * i], r[2 * i + 1]);
    f16v pairs = LO3(q[0], q[1]) + HI3(q[0], q[1]); /* 8 channels, 2 lanes each */
    f16v sum = EVEN(pairs) + ODD(pairs);
    float lanes[16];
    memcpy(lanes, &sum, sizeof sum);
    memcpy(out, lanes, (size_t)cn * sizeof(float));
}

/* Channels c0..c0+cn-1 (cn <= 8, a constant where inlined) of
 * slm_blend_values_by_slot: one chain a channel, an FMA a block of 16 slots. */
static inline __attribute__((always_inline)) void blend_channels(const float *a, int n, const float *values, int vd,
                                                                 int c0, int cn, float *out) {
    f16v acc[8] = {0};
    int j = 0;
    for (; j + 16 <= n; j += 16) {
        f16v w = load16(a + j);
        const float *v = values + ((size_t)j * vd + c0 * 16);
#pragma GCC unroll 8
        for (int c = 0; c < cn; c++) acc[c] += w * load16(v + 16 * c);
    }
    if (j < n) { /* the last block's slots past n weigh 0 (the cache's, never written, hold 0) */
        float tail[16] = {0};
        memcpy(tail, a + j, (size_t)(n - j) * sizeof(float));
        f16v w = load16(tail);
        const float *v = values + ((size_t)j * vd + c0 * 16);
#pragma GCC unroll 8
        for (int c = 0; c < cn; c++) acc[c] += w * load16(v + 16 * c);
    }
    sum_lanes8(acc, cn, out + c0);
}

void slm_blend_values_by_slot(const float *a, int n, const float *values, int vd, float *out) {
    int c0 = 0;
    for (; c0 + 8 <= vd; c0 += 8) blend_channels(a, n, values, vd, c0, 8, out);
    if (c0 < vd) blend_channels(a, n, values, vd, c0, vd - c0, out);
}

void slm_additive_scores_cached(const float *v, int kd, const float *q, const float *keys, int stride, int n,
                                float *s) {
    float t[64];
    for (int j0 = 0; j0 < n; j0 += 64) {
        int len = n - j0 < 64 ? n - j0 : 64;
        for (int i = 0; i < kd; i++) {
            const float *k = keys + (size_t)i * stride + j0;
            for (int j = 0; j < len; j++) t[j] = q[i] + k[j];
            slm_tanh_inplace(t, len);
            for (int j = 0; j < len; j++) s[j0 + j] += v[i] * t[j];
        }
    }
}
