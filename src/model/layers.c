/* The layers around attention (layers.h), forward and backward side by
 * side: embedding gather and scatter, window8's concatenation, dense + tanh,
 * and the output layer with its fused softmax + cross-entropy; and the
 * kernels they share (vectorizable exp and tanh, softmax, products split over
 * threads). Heavy products go to BLAS; the loops here are parallel over rows,
 * so sums never race and results do not depend on scheduling. */

/* GCC's -O2 cost model refuses the `omp simd` reductions below (the softmax
 * sums); the dynamic model vectorizes them. And contract a*b+c into FMAs,
 * which ISO C mode leaves apart. */
#if defined(__GNUC__) && !defined(__clang__) && !defined(SLM_PORTABLE)
#pragma GCC optimize("vect-cost-model=dynamic", "fp-contract=fast")
#endif
/* layers_portable.c compiles this file again as the portable kernels
 * (portable.h): no contraction, no AVX-512 path, storylm's own products,
 * sums in a fixed order. */
#if defined(__GNUC__) && !defined(__clang__) && defined(SLM_PORTABLE)
#pragma GCC optimize("vect-cost-model=dynamic", "fp-contract=off")
#endif
#include "portable.h"
#include "storylm/layers.h"

#include <cblas.h>
#include <float.h>
#if defined(__AVX512F__) && !defined(SLM_PORTABLE)
#define SLM_AVX512 1
#include <immintrin.h>
#endif
#include <math.h>
#include <stdlib.h>
#include <omp.h>
#include <string.h>

/* exp for x <= 88 (Cephes' polynomial, about 1 ulp), written so that loops
 * over it vectorize: the softmaxes over 2,000 logits and 256 keys spend most
 * of their time here, and libm's expf is not vectorized. */
static inline float exp_approx(float x) {
    /* below -87, exp is 0 to float precision; comparisons, not fminf/fmaxf,
     * which GCC leaves as libm calls */
    x = x < -87.0f ? -87.0f : x > 88.0f ? 88.0f : x;
    /* n = round(x / ln 2) by the 1.5 * 2^23 trick: floorf does not vectorize */
    float n = (x * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
    float r = x - n * 0.693359375f - n * -2.12194440e-4f; /* ln 2 in two parts, for precision */
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r * r + r + 1.0f;
    n = n == n ? n : 0.0f; /* a NaN x: p is NaN already, and converting NaN to int is undefined */
    union {
        int32_t i;
        float f;
    } scale = {.i = ((int32_t)n + 127) << 23}; /* 2^n */
    return p * scale.f;
}

/* tanh, vectorizable like exp_approx (libm's tanhf is not), to about 1e-7
 * relative: tanh|x| = -m / (2 + m) with m = e^{-2|x|} - 1, m from its Taylor
 * series where subtracting 1 would cancel (|2x| < 1), from exp_approx elsewhere. */
static inline float tanh_approx(float x) {
    float ax = x < 0.0f ? -x : x, u = -2.0f * ax;
    float series =
        u *
        (1.0f +
         u * (1.0f / 2 +
              u * (1.0f / 6 +
                   u * (1.0f / 24 +
                        u * (1.0f / 120 +
                             u * (1.0f / 720 +
                                  u * (1.0f / 5040 +
                                       u * (1.0f / 40320 +
                                            u * (1.0f / 362880 + u * (1.0f / 3628800 + u * (1.0f / 39916800)))))))))));
    float m = u > -1.0f ? series : exp_approx(u) - 1.0f;
    float r = -m / (2.0f + m);
    return x < 0.0f ? -r : r;
}

#if defined(SLM_PORTABLE) && defined(__wasm_simd128__)
#define SLM_WASM_EXP 1
#include <wasm_simd128.h>
/* exp_approx on 4 lanes of WebAssembly SIMD128, each lane exp_approx's
 * operations in its order, so its bits (clang left the scalar form partly
 * unvectorised and clamped with NaN-exact min, a long sequence in node):
 * the clamps are pmax and pmin (a < b ? b : a, b < a ? b : a: the
 * comparisons of exp_approx), and (int32_t)n is read from the bits of
 * n + 1.5 * 2^23 (n an integer of at most 128 in size: exact) instead of a
 * saturating conversion. A NaN lane stays NaN whatever its 2^n, as in the
 * AVX-512 path, so exp_approx's NaN test (there against an undefined
 * conversion) is left out. Two vectors go together, each operation on both
 * in turn: one vector's chain of 25 dependent operations kept V8's code
 * waiting on it (0.9 times the time of one at a time in node). */
static inline void exp_approx4x2(v128_t *xa, v128_t *xb) {
    v128_t lo = wasm_f32x4_splat(-87.0f), hi = wasm_f32x4_splat(88.0f);
    v128_t a = wasm_f32x4_pmin(wasm_f32x4_pmax(*xa, lo), hi), b = wasm_f32x4_pmin(wasm_f32x4_pmax(*xb, lo), hi);
    v128_t magic = wasm_f32x4_splat(12582912.0f), log2e = wasm_f32x4_splat(1.44269504088896341f);
    v128_t na = wasm_f32x4_sub(wasm_f32x4_add(wasm_f32x4_mul(a, log2e), magic), magic);
    v128_t nb = wasm_f32x4_sub(wasm_f32x4_add(wasm_f32x4_mul(b, log2e), magic), magic);
    v128_t ln2_hi = wasm_f32x4_splat(0.693359375f), ln2_lo = wasm_f32x4_splat(-2.12194440e-4f);
    v128_t ra = wasm_f32x4_sub(wasm_f32x4_sub(a, wasm_f32x4_mul(na, ln2_hi)), wasm_f32x4_mul(na, ln2_lo));
    v128_t rb = wasm_f32x4_sub(wasm_f32x4_sub(b, wasm_f32x4_mul(nb, ln2_hi)), wasm_f32x4_mul(nb, ln2_lo));
    static const float c[] = {1.3981999507e-3f, 8.3334519073e-3f, 4.1665795894e-2f, 1.6666665459e-1f, 5.0000001201e-1f};
    v128_t pa = wasm_f32x4_splat(1.9875691500e-4f), pb = pa;
    for (int i = 0; i < 5; i++) {
        v128_t k = wasm_f32x4_splat(c[i]);
        pa = wasm_f32x4_add(wasm_f32x4_mul(pa, ra), k);
        pb = wasm_f32x4_add(wasm_f32x4_mul(pb, rb), k);
    }
    v128_t one = wasm_f32x4_splat(1.0f), bias = wasm_i32x4_splat(0x4B400000 - 127); /* n + 127 */
    pa = wasm_f32x4_add(wasm_f32x4_add(wasm_f32x4_mul(wasm_f32x4_mul(pa, ra), ra), ra), one);
    pb = wasm_f32x4_add(wasm_f32x4_add(wasm_f32x4_mul(wasm_f32x4_mul(pb, rb), rb), rb), one);
    *xa = wasm_f32x4_mul(pa, wasm_i32x4_shl(wasm_i32x4_sub(wasm_f32x4_add(na, magic), bias), 23));
    *xb = wasm_f32x4_mul(pb, wasm_i32x4_shl(wasm_i32x4_sub(wasm_f32x4_add(nb, magic), bias), 23));
}

/* The largest of x[0..n) given m (4 vectors: the largest of x[0..i) in
 * their lanes), as the plain loop m = x[i] > m ? x[i] : m from -inf finds
 * it (NaNs passed over: pmax is a < b ? b : a, that comparison): the
 * largest is one value whatever the order, but for the sign of a zero, so
 * a largest of 0 is looked for again in order (its sign the first zero's). */
static float max_finish(const v128_t m[4], const float *x, int i, int n) {
    float lanes[16], mx = -INFINITY;
    for (int j = 0; j < 4; j++) wasm_v128_store(lanes + 4 * j, m[j]);
    for (int j = 0; j < 16; j++) mx = lanes[j] > mx ? lanes[j] : mx;
    for (; i < n; i++) mx = x[i] > mx ? x[i] : mx;
    if (mx == 0.0f)
        for (i = 0, mx = -INFINITY; i < n; i++) mx = x[i] > mx ? x[i] : mx;
    return mx;
}

/* The largest of x (n), as max_finish says, on four vectors of 4 lanes
 * (clang leaves the loop scalar; with one vector each pmax waited on the last:
 * twice the time in node). */
static float max_of4(const float *x, int n) {
    v128_t m[4] = {wasm_f32x4_splat(-INFINITY), wasm_f32x4_splat(-INFINITY), wasm_f32x4_splat(-INFINITY),
                   wasm_f32x4_splat(-INFINITY)};
    int i = 0;
    for (; i + 16 <= n; i += 16)
        for (int j = 0; j < 4; j++) m[j] = wasm_f32x4_pmax(m[j], wasm_v128_load(x + i + 4 * j));
    return max_finish(m, x, i, n);
}

/* x (n) += bias (n); returns the largest, as max_of4: one pass. */
static float add_max4(float *x, const float *bias, int n) {
    v128_t m[4] = {wasm_f32x4_splat(-INFINITY), wasm_f32x4_splat(-INFINITY), wasm_f32x4_splat(-INFINITY),
                   wasm_f32x4_splat(-INFINITY)};
    int i = 0;
    for (; i + 16 <= n; i += 16)
        for (int j = 0; j < 4; j++) {
            v128_t y = wasm_f32x4_add(wasm_v128_load(x + i + 4 * j), wasm_v128_load(bias + i + 4 * j));
            wasm_v128_store(x + i + 4 * j, y);
            m[j] = wasm_f32x4_pmax(m[j], y);
        }
    for (int k = i; k < n; k++) x[k] += bias[k];
    return max_finish(m, x, i, n);
}

/* x (16) - shift -> exp_approx of each into y (16). */
static inline void exp_approx_16(const float *x, float shift, float *y) {
    v128_t s = wasm_f32x4_splat(shift);
    for (int j = 0; j < 16; j += 8) {
        v128_t a = wasm_f32x4_sub(wasm_v128_load(x + j), s), b = wasm_f32x4_sub(wasm_v128_load(x + j + 4), s);
        exp_approx4x2(&a, &b);
        wasm_v128_store(y + j, a), wasm_v128_store(y + j + 4, b);
    }
}

/* exp_lanes' whole groups of 16 of x (n), less shift, exponentiated into out
 * (or not kept, out NULL), summed into lane (16) as its loop does, lane j
 * over elements j, j + 16, ...: in four vectors of sums (clang summed the
 * lanes one by one out of each vector); returns the elements done. */
static int exp_lanes4(const float *x, float *out, int n, float shift, float lane[16]) {
    v128_t s = wasm_f32x4_splat(shift), acc[4];
    for (int j = 0; j < 4; j++) acc[j] = wasm_v128_load(lane + 4 * j);
    int i = 0;
    for (; i + 16 <= n; i += 16)
        for (int j = 0; j < 4; j += 2) {
            v128_t a = wasm_f32x4_sub(wasm_v128_load(x + i + 4 * j), s);
            v128_t b = wasm_f32x4_sub(wasm_v128_load(x + i + 4 * j + 4), s);
            exp_approx4x2(&a, &b);
            acc[j] = wasm_f32x4_add(acc[j], a), acc[j + 1] = wasm_f32x4_add(acc[j + 1], b);
            if (out) wasm_v128_store(out + i + 4 * j, a), wasm_v128_store(out + i + 4 * j + 4, b);
        }
    for (int j = 0; j < 4; j++) wasm_v128_store(lane + 4 * j, acc[j]);
    return i;
}
#endif

static float max_of(const float *x, int n) {
    float mx = -INFINITY;
#ifdef SLM_WASM_EXP
    if (n >= 16) return max_of4(x, n);
#endif
#pragma omp simd reduction(max : mx)
    for (int i = 0; i < n; i++) mx = x[i] > mx ? x[i] : mx;
    return mx;
}

#ifdef SLM_AVX512
/* exp_approx on 16 lanes, rounding as the compiled exp_approx does (the FMAs
 * that fp-contract forms in it are written out; min and max clamp, where the
 * vectorised loop spent two compares, two blends and mask logic): a third
 * fewer instructions, the same bits (equal for every float; test_fast_paths
 * holds it to slm_exp_one).
 * A NaN lane stays NaN: its 2^n is 1, as in exp_approx. */
static inline __m512 exp_approx16(__m512 x) {
    x = _mm512_min_ps(_mm512_set1_ps(88.0f), _mm512_max_ps(_mm512_set1_ps(-87.0f), x));
    __m512 magic = _mm512_set1_ps(12582912.0f);
    __m512 n = _mm512_sub_ps(_mm512_fmadd_ps(x, _mm512_set1_ps(1.44269504088896341f), magic), magic);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
    r = _mm512_fmadd_ps(n, _mm512_set1_ps(2.12194440e-4f), r);
    __m512 p = _mm512_fmadd_ps(_mm512_set1_ps(1.9875691500e-4f), r, _mm512_set1_ps(1.3981999507e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
    p = _mm512_add_ps(_mm512_fmadd_ps(_mm512_mul_ps(p, r), r, r), _mm512_set1_ps(1.0f));
    /* p times 2^n (n a whole number, -126..127: 2^n exact), rounded once, as the product with 2^n's bits is */
    return _mm512_scalef_ps(p, n);
}
#endif

#ifdef SLM_PORTABLE
/* x (n) -> exp(x - shift) into out (may be x, or NULL: not kept); returns
 * their sum in the AVX-512 path's order, written out in 16 lanes of plain C:
 * lane j sums elements j, j + 16, ... of the whole groups of 16, lane 0 then
 * the rest, and the sum is 0 + lane 0 + ... + lane 15, on every target. */
static float exp_lanes(const float *x, float *out, int n, float shift) {
    float lane[16] = {0}, sum = 0.0f;
    int i = 0;
#ifdef SLM_WASM_EXP
    i = exp_lanes4(x, out, n, shift, lane);
#else
    for (; i + 16 <= n; i += 16) {
        float y[16];
        for (int j = 0; j < 16; j++) y[j] = exp_approx(x[i + j] - shift);
        for (int j = 0; j < 16; j++) lane[j] += y[j];
        if (out) memcpy(out + i, y, sizeof y);
    }
#endif
    for (; i < n; i++) {
        float e = exp_approx(x[i] - shift);
        if (out) out[i] = e;
        lane[0] += e;
    }
    for (int j = 0; j < 16; j++) sum += lane[j];
    return sum;
}
#endif

/* x (n) -> exp(x - shift) in place; returns their sum. With AVX-512, in the
 * order GCC gives the `omp simd` reduction below at 16 lanes (the bits every
 * caller was pinned to): lane j sums elements j, j + 16, ... of the whole
 * vectors, lane 0 then the rest one by one (exponentiated in one masked
 * vector), and the sum is 0 + lane 0 + ... + lane 15. */
static float exp_shifted_inplace(float *x, int n, float shift) {
    float sum = 0.0f;
#ifdef SLM_AVX512
    float lane[16];
    int i = 0;
    __m512 acc = _mm512_setzero_ps(), s = _mm512_set1_ps(shift);
    for (; i + 16 <= n; i += 16) {
        __m512 y = exp_approx16(_mm512_sub_ps(_mm512_loadu_ps(x + i), s));
        _mm512_storeu_ps(x + i, y);
        acc = _mm512_add_ps(acc, y);
    }
    _mm512_storeu_ps(lane, acc);
    if (i < n) { /* the last n - i in one masked vector (its lanes are exp_approx's bits), added one by one */
        __mmask16 live = (__mmask16)((1u << (n - i)) - 1);
        __m512 y = exp_approx16(_mm512_sub_ps(_mm512_maskz_loadu_ps(live, x + i), s));
        _mm512_mask_storeu_ps(x + i, live, y);
        for (; i < n; i++) lane[0] += x[i];
    }
    for (int j = 0; j < 16; j++) sum += lane[j];
#elif defined(SLM_PORTABLE)
    sum = exp_lanes(x, x, n, shift);
#else
#pragma omp simd reduction(+ : sum)
    for (int i = 0; i < n; i++) {
        x[i] = exp_approx(x[i] - shift);
        sum += x[i];
    }
#endif
    return sum;
}

float slm_exp_one(float x) { return exp_approx(x); }

/* x (n) times scale, less shift, exponentiated: their sum in
 * exp_shifted_inplace's order, its bits; those at or above keep (in order,
 * with their indices) into kept and ids. One pass that stores only the few
 * kept: a sampler's 2,000 exponentials of each sample read its logits once
 * and write no scratch of the vocabulary's size. */
float slm_exp_sum_keep(const float *x, int n, float scale, float shift, float keep, float *kept, int32_t *ids, int *k) {
    float sum = 0.0f;
    int m = 0, i = 0;
#ifdef SLM_AVX512
    float lane[16];
    __m512 acc = _mm512_setzero_ps(), s = _mm512_set1_ps(shift), times = _mm512_set1_ps(scale);
    __m512 at = _mm512_set1_ps(keep);
    __m512i index = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    for (; i < n; i += 16, index = _mm512_add_epi32(index, _mm512_set1_epi32(16))) {
        __mmask16 live = n - i >= 16 ? 0xffff : (__mmask16)((1u << (n - i)) - 1);
        __m512 scaled = _mm512_mul_ps(_mm512_maskz_loadu_ps(live, x + i), times);
        __asm__("" : "+v"(scaled)); /* rounded, as stored scaled: not fused into the subtraction */
        __m512 y = exp_approx16(_mm512_sub_ps(scaled, s));
        if (live == 0xffff) {
            acc = _mm512_add_ps(acc, y);
        } else { /* the last n - i: added to lane 0 one by one, as exp_shifted_inplace adds them */
            float tail[16];
            _mm512_storeu_ps(lane, acc), _mm512_storeu_ps(tail, y);
            for (int j = 0; j < n - i; j++) lane[0] += tail[j];
            acc = _mm512_loadu_ps(lane);
        }
        __mmask16 above = _mm512_mask_cmp_ps_mask(live, y, at, _CMP_GE_OQ);
        /* compacted, stored whole, with no branch on whether any is kept: a register of the 2,000 keeps some or
         * none as the logits fall, which 64 samples' draws in turn left the branch predictor to guess (64 samples
         * 1.06 times as many tokens a CPU-second) */
        _mm512_storeu_ps(kept + m, _mm512_maskz_compress_ps(above, y));
        _mm512_storeu_si512(ids + m, _mm512_maskz_compress_epi32(above, index));
        m += __builtin_popcount(above);
    }
    _mm512_storeu_ps(lane, acc);
    for (int j = 0; j < 16; j++) sum += lane[j];
#else
    for (; i < n; i++) kept[i] = x[i] * scale; /* kept as the scratch: the same sum as the softmax's */
    sum = exp_shifted_inplace(kept, n, shift);
    for (i = 0; i < n; i++) { /* compacted in place (m <= i), without a branch */
        kept[m] = kept[i], ids[m] = i;
        m += kept[i] >= keep;
    }
#endif
    *k = m;
    return sum;
}

void slm_exp_inplace(float *x, int n, float shift) {
#ifdef SLM_AVX512
    int i = 0;
    __m512 s = _mm512_set1_ps(shift);
    for (; i + 16 <= n; i += 16) _mm512_storeu_ps(x + i, exp_approx16(_mm512_sub_ps(_mm512_loadu_ps(x + i), s)));
    if (i < n) {
        __mmask16 live = (__mmask16)((1u << (n - i)) - 1);
        _mm512_mask_storeu_ps(x + i, live, exp_approx16(_mm512_sub_ps(_mm512_maskz_loadu_ps(live, x + i), s)));
    }
#else
    int i = 0;
#ifdef SLM_WASM_EXP
    for (; i + 16 <= n; i += 16) exp_approx_16(x + i, shift, x + i);
#endif
#pragma omp simd
    for (int j = i; j < n; j++) x[j] = exp_approx(x[j] - shift);
#endif
}

#ifndef SLM_PORTABLE
void slm_exp_inplace_at(Kernels k, float *x, int n, float shift) {
    if (k == KERNELS_PORTABLE)
        slm_exp_inplace_portable(x, n, shift);
    else
        slm_exp_inplace(x, n, shift);
}

float slm_exp_sum_keep_at(Kernels k, const float *x, int n, float scale, float shift, float keep, float *kept,
                          int32_t *ids, int *m) {
    return k == KERNELS_PORTABLE ? slm_exp_sum_keep_portable(x, n, scale, shift, keep, kept, ids, m)
                                 : slm_exp_sum_keep(x, n, scale, shift, keep, kept, ids, m);
}

float slm_softmax_inplace_at(Kernels k, float *x, int n) {
    return k == KERNELS_PORTABLE ? slm_softmax_inplace_portable(x, n) : slm_softmax_inplace(x, n);
}

float slm_softmax_max_inplace_at(Kernels k, float *x, int n, float mx) {
    return k == KERNELS_PORTABLE ? slm_softmax_max_inplace_portable(x, n, mx) : slm_softmax_max_inplace(x, n, mx);
}
#endif

float slm_softmax_inplace(float *x, int n) { return slm_softmax_max_inplace(x, n, max_of(x, n)); }

float slm_exp_sum_inplace(float *x, int n, float shift) { return exp_shifted_inplace(x, n, shift); }

/* x (n, exponentials summing to sum) -> x / sum, as x times 1 / sum. */
static void normalize_sum(float *x, int n, float sum) {
    float inv = 1.0f / sum;
#pragma omp simd
    for (int i = 0; i < n; i++) x[i] *= inv;
}

float slm_softmax_max_inplace(float *x, int n, float mx) {
    float sum = exp_shifted_inplace(x, n, mx);
    normalize_sum(x, n, sum);
    return mx + logf(sum);
}

void slm_softmax_weights(float *x, int n) { slm_softmax_weights_max(x, n, max_of(x, n)); }

void slm_softmax_weights_max(float *x, int n, float mx) { normalize_sum(x, n, exp_shifted_inplace(x, n, mx)); }

void slm_tanh_inplace(float *x, int n) {
#pragma omp simd
    for (int i = 0; i < n; i++) x[i] = tanh_approx(x[i]);
}

/* ---- products -------------------------------------------------------------- */

/* Products are cut into blocks of PRODUCT_BLOCK rows (or columns) whatever
 * the thread count, and threads take whole blocks: OpenBLAS rounds an
 * element by the shape of the call it falls in (on AVX2 machines a product of
 * 7 rows differs in the last bits from one of 40), so blocks that do not
 * depend on the threads give the same bits at every thread count. 256 keeps
 * a training shard's products (about 250 positions) one call each. */
#define PRODUCT_BLOCK 256

static int n_blocks(int n) { return (n + PRODUCT_BLOCK - 1) / PRODUCT_BLOCK; }

#ifndef SLM_PORTABLE
/* Block i of C (M, N) = op(A) op(B) + beta C: rows or columns i*BLOCK... */
static void matmul_block(enum CBLAS_TRANSPOSE ta, enum CBLAS_TRANSPOSE tb, int by_rows, int i, int M, int N, int K,
                         const float *A, int lda, const float *B, int ldb, float beta, float *C, int ldc) {
    int s = i * PRODUCT_BLOCK, e = s + PRODUCT_BLOCK;
    if (e > (by_rows ? M : N)) e = by_rows ? M : N;
    if (by_rows)
        cblas_sgemm(CblasRowMajor, ta, tb, e - s, N, K, 1.0f, ta == CblasTrans ? A + s : A + (size_t)s * lda, lda, B,
                    ldb, beta, C + (size_t)s * ldc, ldc);
    else
        cblas_sgemm(CblasRowMajor, ta, tb, M, e - s, K, 1.0f, A, lda, tb == CblasTrans ? B + (size_t)s * ldb : B + s,
                    ldb, beta, C + s, ldc);
}

#endif

/* Threads for nb blocks of work: 1 inside a parallel region or a Workers
 * job, or when OpenBLAS threads each call itself. */
static int product_threads(int nb) {
    int threads = omp_get_max_threads();
    if (omp_in_parallel() || openblas_get_num_threads() > 1) threads = 1;
    return threads < nb ? threads : nb;
}

#ifdef SLM_PORTABLE
/* Threads take whole panels of C's columns; an element's sum is the same on any (portable.h). */
void slm_matmul(int trans_a, int trans_b, int M, int N, int K, const float *A, int lda, const float *B, int ldb,
                float beta, float *C, int ldc) {
    if (M <= 0 || N <= 0) return;
    int np = (N + SLM_GEMM_PANEL - 1) / SLM_GEMM_PANEL, threads = product_threads(np);
    if (threads == 1) {
        slm_gemm_portable(trans_a, trans_b, M, N, K, A, lda, B, ldb, beta, C, ldc, 0, np);
        return;
    }
#pragma omp parallel for schedule(static) num_threads(threads)
    for (int p = 0; p < np; p++) slm_gemm_portable(trans_a, trans_b, M, N, K, A, lda, B, ldb, beta, C, ldc, p, p + 1);
}

/* sums (cols) += column sums of A, row by row in order; threads take whole
 * blocks of columns. */
static void column_sums_block(const float *A, int rows, int cols, int lda, const float *ones, float *sums, int i) {
    int s = i * PRODUCT_BLOCK, e = s + PRODUCT_BLOCK < cols ? s + PRODUCT_BLOCK : cols;
    for (int r = 0; r < rows; r++)
#pragma omp simd
        for (int j = s; j < e; j++) sums[j] += A[(size_t)r * lda + j];
}
#else
void slm_matmul(int trans_a, int trans_b, int M, int N, int K, const float *A, int lda, const float *B, int ldb,
                float beta, float *C, int ldc) {
    if (M <= 0 || N <= 0) return;
    enum CBLAS_TRANSPOSE ta = trans_a ? CblasTrans : CblasNoTrans, tb = trans_b ? CblasTrans : CblasNoTrans;
    int by_rows = M >= N, nb = n_blocks(by_rows ? M : N), threads = product_threads(nb);
    if (threads == 1) {
        for (int i = 0; i < nb; i++) matmul_block(ta, tb, by_rows, i, M, N, K, A, lda, B, ldb, beta, C, ldc);
        return;
    }
#pragma omp parallel for schedule(static) num_threads(threads)
    for (int i = 0; i < nb; i++) matmul_block(ta, tb, by_rows, i, M, N, K, A, lda, B, ldb, beta, C, ldc);
}

/* Block i of slm_column_sums. */
static void column_sums_block(const float *A, int rows, int cols, int lda, const float *ones, float *sums, int i) {
    int s = i * PRODUCT_BLOCK, e = s + PRODUCT_BLOCK < cols ? s + PRODUCT_BLOCK : cols;
    cblas_sgemv(CblasRowMajor, CblasTrans, rows, e - s, 1.0f, A + s, lda, ones, 1, 1.0f, sums + s, 1);
}
#endif

void slm_column_sums(const float *A, int rows, int cols, int lda, const float *ones, float *sums) {
    int nb = n_blocks(cols), threads = product_threads(nb);
    if (threads == 1) {
        for (int i = 0; i < nb; i++) column_sums_block(A, rows, cols, lda, ones, sums, i);
        return;
    }
#pragma omp parallel for schedule(static) num_threads(threads)
    for (int i = 0; i < nb; i++) column_sums_block(A, rows, cols, lda, ones, sums, i);
}

/* slm_matmul, its portable twin or slm_matmul_bf16 (bf16.c), by p. */
void slm_matmul_at(Compute p, int trans_a, int trans_b, int M, int N, int K, const float *A, int lda, const float *B,
                   int ldb, float beta, float *C, int ldc) {
#ifndef SLM_PORTABLE
    if (p.kernels == KERNELS_PORTABLE)
        slm_matmul_portable(trans_a, trans_b, M, N, K, A, lda, B, ldb, beta, C, ldc);
    else
#endif
        if (p.precision == PRECISION_BF16)
        slm_matmul_bf16(trans_a, trans_b, M, N, K, A, lda, B, ldb, beta, C, ldc);
    else
        slm_matmul(trans_a, trans_b, M, N, K, A, lda, B, ldb, beta, C, ldc);
}

/* n floats from a 64-byte boundary: a vector register's loads and stores
 * at whole-register offsets then never straddle two cache lines. */
float *slm_alloc_floats(size_t n, Error *e) {
    size_t bytes = (n * sizeof(float) + 63) / 64 * 64;
    float *p = aligned_alloc(64, bytes ? bytes : 64);
    if (!p) FAIL(e, "free some memory or use a smaller --max-positions", "out of memory allocating %zu bytes", bytes);
    return p;
}

/* ---- embedding: token ids -> rows ---------------------------------------- */

/* tokens (n) -> rows (n, D), row stride ld */
void slm_embedding_forward(const float *embedding, const int32_t *tokens, int n, int D, float *rows, int ld) {
    for (int p = 0; p < n; p++) memcpy(rows + (size_t)p * ld, embedding + (size_t)tokens[p] * D, D * sizeof(float));
}

/* d_rows (n, D), stride ld -> d_embedding (V, D) +=, in position order (a token
 * may repeat, so this stays serial: deterministic and cheap) */
void slm_embedding_backward(float *d_embedding, const int32_t *tokens, int n, int D, const float *d_rows, int ld) {
    for (int p = 0; p < n; p++) {
        float *d = d_embedding + (size_t)tokens[p] * D;
        const float *g = d_rows + (size_t)p * ld;
        for (int i = 0; i < D; i++) d[i] += g[i];
    }
}

/* Token read by slot s (0 = oldest) of position p of the story starting at start. */
static int32_t window_token(const Batch *b, int start, int p, int C, int s) {
    int q = p - (C - 1) + s;
    return b->tokens[q < start ? start : q];
}

/* tokens -> z (n, C*D): rows of x_{p-C+1} .. x_p, the story's first row before its start */
void slm_window_forward(const float *embedding, const Batch *b, int C, int D, float *z) {
    for (int i = 0; i < b->n_stories; i++)
        for (int p = b->starts[i]; p < b->starts[i + 1]; p++)
            for (int s = 0; s < C; s++)
                memcpy(z + ((size_t)p * C + s) * D, embedding + (size_t)window_token(b, b->starts[i], p, C, s) * D,
                       D * sizeof(float));
}

/* d_z (n, C*D) -> d_embedding (V, D) += */
void slm_window_backward(float *d_embedding, const Batch *b, int C, int D, const float *d_z) {
    for (int i = 0; i < b->n_stories; i++)
        for (int p = b->starts[i]; p < b->starts[i + 1]; p++)
            for (int s = 0; s < C; s++) {
                float *d = d_embedding + (size_t)window_token(b, b->starts[i], p, C, s) * D;
                const float *g = d_z + ((size_t)p * C + s) * D;
                for (int k = 0; k < D; k++) d[k] += g[k];
            }
}

/* ---- dense + tanh: the hidden layer -------------------------------------- */

/* x (n, in) -> y (n, out) = tanh(x W^T + bias); W (out, in); products at prec */
void slm_dense_tanh_forward_at(Compute prec, const float *W, const float *bias, const float *x, int n, int in, int out,
                               float *y) {
#ifndef SLM_PORTABLE
    if (prec.kernels == KERNELS_PORTABLE) {
        slm_dense_tanh_forward_at_portable(prec, W, bias, x, n, in, out, y);
        return;
    }
#endif
    slm_matmul_at(prec, 0, 1, n, out, in, x, in, W, in, 0.0f, y, out);
#pragma omp parallel for schedule(static)
    for (int p = 0; p < n; p++) {
        float *row = y + (size_t)p * out;
#pragma omp simd
        for (int j = 0; j < out; j++) row[j] = tanh_approx(row[j] + bias[j]);
    }
}

/* d_y (n, out) -> d_pre = d_y (1 - y^2) in place; dW (out, in) += d_pre^T x;
 * d_bias (out) += column sums; d_x (n, in) = d_pre W; products at prec */
void slm_dense_tanh_backward_at(Compute prec, const float *W, const float *x, const float *y, float *d_y, int n, int in,
                                int out, float *dW, float *d_bias, float *d_x, const float *ones) {
#ifndef SLM_PORTABLE
    if (prec.kernels == KERNELS_PORTABLE) {
        slm_dense_tanh_backward_at_portable(prec, W, x, y, d_y, n, in, out, dW, d_bias, d_x, ones);
        return;
    }
#endif
    size_t total = (size_t)n * out;
#pragma omp parallel for simd schedule(static)
    for (size_t i = 0; i < total; i++) d_y[i] *= 1.0f - y[i] * y[i];
    slm_matmul_at(prec, 1, 0, out, in, n, d_y, out, x, in, 1.0f, dW, in);
    slm_column_sums(d_y, n, out, out, ones, d_bias);
    slm_matmul_at(prec, 0, 0, n, in, out, d_y, out, W, in, 0.0f, d_x, in);
}

/* ---- output layer with softmax + cross-entropy --------------------------- */

/* -log softmax(logit) = (mx - logit) + log(sum of exp(row - mx)). For logits
 * of ordinary size in float as always (the same bits as before); past that in
 * double and in this order: mx + logf(sum) - logit lost the log(sum) next to
 * a huge mx (biases of 3e38 gave loss 0), and mx - logit can overflow. */
static int ordinary_logits(float mx, float logit) { return fabsf(mx) < 1e4f && fabsf(logit) < 1e4f; }

static float xent_loss(float mx, float logit, float sum) {
    if (ordinary_logits(mx, logit)) return (mx + logf(sum)) - logit;
    double loss = ((double)mx - (double)logit) + log((double)sum);
    return loss <= FLT_MAX ? (float)loss : INFINITY; /* past float: inf (the pass names it), not an undefined cast */
}

/* Is row[target] the first largest logit (row's max is mx)? As argmax takes
 * it: a tie with an earlier token is not a correct prediction (a model with
 * every logit equal is right nowhere, not everywhere). */
static int is_first_max(const float *row, int target, float mx) {
    if (!(row[target] >= mx)) return 0;
    int earlier = 0; /* counted, not searched: a loop without an exit vectorizes (it runs in every training row) */
#pragma omp simd reduction(+ : earlier)
    for (int v = 0; v < target; v++) earlier += row[v] >= mx;
    return earlier == 0;
}

/* page: output and loss */
/* The sum of exp(row - mx) over a row of logits (V) whose largest is mx. */
static float exp_sum(const float *row, int V, float mx) {
#ifdef SLM_PORTABLE
    return exp_lanes(row, NULL, V, mx);
#else
    float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
    for (int v = 0; v < V; v++) sum += exp_approx(row[v] - mx);
    return sum;
#endif
}

/* A function of its own in WebAssembly: V8 compiles a function with its
 * optimising compiler once it runs hot, and slm_output_loss with both rows'
 * code inlined took it 0.4 to 1 s, the step on baseline code meanwhile. */
#ifdef __wasm__
#define WASM_APART __attribute__((noinline))
#else
#define WASM_APART
#endif

/* One row of logits (V): adds the bias; lse; loss and correct when target >= 0. */
WASM_APART static void xent_row(float *row, const float *bias, int V, int32_t target, float *lse, float *loss,
                                uint8_t *correct) {
#pragma omp simd
    for (int v = 0; v < V; v++) row[v] += bias[v];
    float mx = max_of(row, V);
    *correct = target >= 0 && is_first_max(row, target, mx);
    float sum = exp_sum(row, V, mx);
    *lse = mx + logf(sum);
    *loss = target >= 0 ? xent_loss(mx, row[target], sum) : 0.0f;
}

/* y (n, Hd) -> logits (n, V); W (V, Hd); per row lse, loss, correct */
void slm_output_forward(Kernels k, const float *W, const float *bias, const float *y, int n, int Hd, int V,
                        float *logits, const int32_t *target, float *lse, float *loss, uint8_t *correct) {
#ifndef SLM_PORTABLE
    if (k == KERNELS_PORTABLE) {
        slm_output_forward_portable(k, W, bias, y, n, Hd, V, logits, target, lse, loss, correct);
        return;
    }
#endif
    slm_matmul(0, 1, n, V, Hd, y, Hd, W, Hd, 0.0f, logits, V);
#pragma omp parallel for schedule(static)
    for (int p = 0; p < n; p++) xent_row(logits + (size_t)p * V, bias, V, target[p], &lse[p], &loss[p], &correct[p]);
}
/* page: end */

double slm_output_log_prob(const float *row, int V, int32_t target, float lse) {
    float mx = max_of(row, V);
    if (ordinary_logits(mx, row[target])) return (double)row[target] - (double)lse;
    return -(double)xent_loss(mx, row[target], exp_sum(row, V, mx));
}

/* One row of logits (V) -> d (scale * loss) / d logits in place, (softmax -
 * onehot) * scale, or 0 without target; lse, loss and correct as xent_row
 * gives them up to rounding. One exp per logit, the softmax from their sum.
 * 16 lanes (simdlen): one AVX-512 register, where GCC would use 8; over
 * 2,000 logits a row that halves the exps' time. */
WASM_APART static void xent_fused_row(float *row, const float *bias, int V, int32_t target, float scale, float *lse,
                                      float *loss, uint8_t *correct, float *d_bias) {
    if (target < 0) {
        xent_row(row, bias, V, target, lse, loss, correct);
        memset(row, 0, V * sizeof(float));
        return;
    }
    float mx = -INFINITY, sum = 0.0f;
#ifdef SLM_WASM_EXP
    mx = add_max4(row, bias, V);
#else
#pragma omp simd simdlen(16) reduction(max : mx)
    for (int v = 0; v < V; v++) {
        row[v] += bias[v];
        mx = row[v] > mx ? row[v] : mx;
    }
#endif
    float logit = row[target];
    *correct = is_first_max(row, target, mx);
#if defined(SLM_AVX512) || defined(SLM_PORTABLE)
    sum = exp_shifted_inplace(row, V, mx); /* the order of the loop below; portable: in fixed lanes */
#else
#pragma omp simd simdlen(16) reduction(+ : sum)
    for (int v = 0; v < V; v++) {
        row[v] = exp_approx(row[v] - mx);
        sum += row[v];
    }
#endif
    *lse = mx + logf(sum);
    *loss = xent_loss(mx, logit, sum);
    float k = scale / sum;
#pragma omp simd simdlen(16)
    for (int v = 0; v < V; v++) {
        row[v] *= k;
        d_bias[v] += row[v]; /* the bias gradient's column sums, row by row, while the row is at hand */
    }
    row[target] -= scale;
    d_bias[target] -= scale;
}

/* One product of output_loss_chunk, on the calling thread: OpenBLAS's sgemm
 * in one call (as before), or BF16 by o's precision, from op(B) packed in
 * panels when it is (the same bits). */
static void chunk_product(const OutputLoss *o, const Bf16Panels *packed, int ta, int tb, int M, int N, int K,
                          const float *A, int lda, const float *B, int ldb, float beta, float *C, int ldc) {
    if (o->precision == PRECISION_BF16 && packed && packed->pairs &&
        slm_matmul_bf16_panels(ta, M, A, lda, packed, beta, C, ldc) == 0)
        return;
    if (o->precision == PRECISION_BF16)
        slm_matmul_bf16(ta, tb, M, N, K, A, lda, B, ldb, beta, C, ldc);
    else
#ifdef SLM_PORTABLE
        slm_gemm_portable(ta, tb, M, N, K, A, lda, B, ldb, beta, C, ldc, 0, (N + SLM_GEMM_PANEL - 1) / SLM_GEMM_PANEL);
#else
        cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, M, N, K, 1.0f, A,
                    lda, B, ldb, beta, C, ldc);
#endif
}

/* One chunk of rows (n <= the scratch's rows) of slm_output_loss: logits (n, V)
 * in scratch, turned into their gradient while still in cache; w as
 * slm_output_loss packs it. */
static void output_loss_chunk(const OutputLoss *o, const Bf16Panels w[2], int first, int n) {
    int Hd = o->Hd, V = o->V;
    const float *y = o->y + (size_t)first * Hd;
    int ldw = o->W_columns ? V : Hd, tw = !o->W_columns; /* W (V, Hd), or (Hd, V): TransformerLens's W_U */
    chunk_product(o, &w[0], 0, tw, n, V, Hd, y, Hd, o->W, ldw, 0.0f, o->scratch, V);
    for (int p = 0; p < n; p++) {
        float *row = o->scratch + (size_t)p * V;
        int q = first + p;
        if (!o->dW)
            xent_row(row, o->bias, V, o->target[q], &o->lse[q], &o->loss[q], &o->correct[q]);
        else
            xent_fused_row(row, o->bias, V, o->target[q], o->scale, &o->lse[q], &o->loss[q], &o->correct[q], o->d_bias);
    }
    if (!o->dW) return;
    chunk_product(o, &w[1], 0, !tw, n, Hd, V, o->scratch, V, o->W, ldw, 0.0f, o->d_y + (size_t)first * Hd, Hd);
    if (o->W_columns) /* dW (Hd, V) += y^T dl */
        chunk_product(o, NULL, 1, 0, Hd, V, n, y, Hd, o->scratch, V, 1.0f, o->dW, V);
    else
        chunk_product(o, NULL, 1, 0, V, Hd, n, o->scratch, V, y, Hd, 1.0f, o->dW, Hd);
}

void slm_output_loss(const OutputLoss *o) {
#ifndef SLM_PORTABLE
    if (o->kernels == KERNELS_PORTABLE) {
        slm_output_loss_portable(o);
        return;
    }
#endif
    /* BF16: W packed once for every chunk, as the logits' op(B) (Hd, V) and
     * d_y's (V, Hd); left unpacked (pairs NULL) the products pack their own */
    Bf16Panels w[2] = {{0}, {0}};
    int ldw = o->W_columns ? o->V : o->Hd, tw = !o->W_columns;
    if (o->precision == PRECISION_BF16 && o->n > o->chunk_rows) {
        slm_bf16_panels_pack(&w[0], tw, o->Hd, o->V, o->W, ldw);
        if (o->dW) slm_bf16_panels_pack(&w[1], !tw, o->V, o->Hd, o->W, ldw);
    }
    for (int first = 0; first < o->n; first += o->chunk_rows)
        output_loss_chunk(o, w, first, o->n - first < o->chunk_rows ? o->n - first : o->chunk_rows);
    slm_bf16_panels_free(&w[0]);
    slm_bf16_panels_free(&w[1]);
}

/* page: backward */
/* One row of logits (V) -> (softmax - onehot) * scale in place, or 0 without target. */
static void xent_grad_row(float *row, int V, int32_t target, float lse, float scale) {
    if (target < 0) {
        memset(row, 0, V * sizeof(float));
        return;
    }
#pragma omp simd
    for (int v = 0; v < V; v++) row[v] = exp_approx(row[v] - lse) * scale;
    row[target] -= scale;
}

/* logits (n, V) -> d logits in place; dW (V, Hd) += dl^T y; d_bias (V) +=;
 * d_y (n, Hd) = dl W */
void slm_output_backward(Kernels k, const float *W, const float *y, float *logits, const int32_t *target,
                         const float *lse, float scale, int n, int Hd, int V, float *dW, float *d_bias, float *d_y,
                         const float *ones) {
#ifndef SLM_PORTABLE
    if (k == KERNELS_PORTABLE) {
        slm_output_backward_portable(k, W, y, logits, target, lse, scale, n, Hd, V, dW, d_bias, d_y, ones);
        return;
    }
#endif
#pragma omp parallel for schedule(static)
    for (int p = 0; p < n; p++) xent_grad_row(logits + (size_t)p * V, V, target[p], lse[p], scale);
    slm_matmul(1, 0, V, Hd, n, logits, V, y, Hd, 1.0f, dW, Hd);
    slm_column_sums(logits, n, V, V, ones, d_bias);
    slm_matmul(0, 0, n, Hd, V, logits, V, W, Hd, 0.0f, d_y, Hd);
}
/* page: end */
