/* BF16 products with FP32 sums: see include/storylm/bf16.h.
 *
 * Both operands are packed once per call as bfloat16 pairs along k (k even
 * in the low half, as VDPBF16PS reads them): A by rows, (M, K/2) pairs, and
 * B in panels of 16 columns, (N/16, K/2, 16) pairs, so one 512-bit load is a
 * k-pair of 16 columns (a B packed once can serve many calls: Bf16Panels).
 * A tile of up to 6 rows by 32 columns keeps 12 sums in registers; each sum
 * runs over k in order from 0, so an element's bits do not depend on the
 * tile, the block or the thread it falls in. The instruction adds the odd
 * product, then the even one, each rounded to FP32 (bf16 x bf16 is exact in
 * FP32), denormals flushed to zero: the emulation below does the same. */
#include "storylm/bf16.h"

#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#ifdef __x86_64__ /* elsewhere (WebAssembly) no BF16 products: only the emulation below */
#define BF16_TARGET __attribute__((target("avx512f,avx512bf16")))
#include <immintrin.h>
#endif

const char *slm_precision_name(Precision p) { return p == PRECISION_BF16 ? "bf16" : "fp32"; }

int slm_precision_parse(const char *name, Precision *p, Error *e) {
    if (name && strcmp(name, "fp32") == 0)
        *p = PRECISION_FP32;
    else if (name && strcmp(name, "bf16") == 0)
        *p = PRECISION_BF16;
    else
        return FAIL(e, "give --precision fp32 (the default) or bf16", "unknown precision '%.40s' (fp32 or bf16)",
                    name ? name : "");
    return 0;
}

int slm_bf16_supported(void) {
#ifdef __x86_64__
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512bf16");
#else
    return 0;
#endif
}

int slm_precision_check(Precision p, Error *e) {
    if (p == PRECISION_BF16 && !slm_bf16_supported())
        return FAIL(e, "leave out --precision bf16 on this machine (fp32 is the default)",
                    "--precision bf16 needs a CPU with avx512_bf16 (AMD Zen 4, Intel Cooper Lake or Sapphire Rapids "
                    "and later); this one has none");
    return 0;
}

uint16_t slm_bf16_from_float(float x) {
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    if ((u & 0x7F800000u) == 0) return (uint16_t)(u >> 16 & 0x8000u);          /* zero or denormal: signed 0 */
    if ((u & 0x7FFFFFFFu) > 0x7F800000u) return (uint16_t)(u >> 16 | 0x0040u); /* NaN: quiet */
    return (uint16_t)((u + 0x7FFFu + (u >> 16 & 1u)) >> 16);                   /* nearest, ties to even */
}

/* C = beta C when K is 0: no products. */
static void scale_only(int M, int N, float beta, float *C, int ldc) {
    for (int m = 0; m < M; m++)
        for (int n = 0; n < N; n++) C[(size_t)m * ldc + n] = beta != 0.0f ? C[(size_t)m * ldc + n] : 0.0f;
}

#ifdef __x86_64__
/* ---- packing ------------------------------------------------------------- */

/* 16 floats -> 16 pairs (x0 low, x1 high) as VDPBF16PS reads its lanes,
 * each rounded by the CPU's own conversion (what slm_bf16_from_float gives). */
static inline __attribute__((always_inline)) BF16_TARGET __m512i pairs16(__m512 x0, __m512 x1) {
    __m512i lo = _mm512_cvtepu16_epi32((__m256i)_mm512_cvtneps_pbh(x0));
    __m512i hi = _mm512_cvtepu16_epi32((__m256i)_mm512_cvtneps_pbh(x1));
    return _mm512_or_si512(lo, _mm512_slli_epi32(hi, 16));
}

/* Rows to pairs, 32 floats a step: see bf16.h. */
BF16_TARGET void slm_bf16_pack_row(const float *x, int n, uint32_t *pairs) {
    for (int k = 0; k < n; k += 32) {
        int left = n - k;
        __mmask16 m0 = left >= 16 ? 0xFFFF : (__mmask16)((1u << left) - 1u);
        __mmask16 m1 = left >= 32 ? 0xFFFF : left <= 16 ? 0 : (__mmask16)((1u << (left - 16)) - 1u);
        __m512 lo = _mm512_maskz_loadu_ps(m0, x + k), hi = _mm512_maskz_loadu_ps(m1, x + k + 16);
        int out = (left + 1) / 2 < 16 ? (left + 1) / 2 : 16;
        _mm512_mask_storeu_epi32(pairs + k / 2, (__mmask16)((1u << out) - 1u), (__m512i)_mm512_cvtne2ps_pbh(hi, lo));
    }
}

/* Rows k and k+1 (row k+1 absent past K: 0) of a (K, n) matrix, stride ld
 * -> pairs (n) of (x[k][j], x[k+1][j]). */
static BF16_TARGET void pack_two_rows(const float *x, int ld, int k, int K, int n, uint32_t *pairs) {
    const float *r0 = x + (size_t)k * ld, *r1 = r0 + ld;
    for (int j = 0; j < n; j += 16) {
        __mmask16 m = n - j >= 16 ? 0xFFFF : (__mmask16)((1u << (n - j)) - 1u);
        __m512 x1 = k + 1 < K ? _mm512_maskz_loadu_ps(m, r1 + j) : _mm512_setzero_ps();
        _mm512_mask_storeu_epi32(pairs + j, m, pairs16(_mm512_maskz_loadu_ps(m, r0 + j), x1));
    }
}

/* op(A) (M, K) -> ap: pair kp of row m at ap[m * rs + kp * ks]: by rows
 * (rs Kh, ks 1) when A is stored so, else by k-pairs (rs 1, ks M), so that
 * either way the packing reads A's rows in order. */
static BF16_TARGET void pack_a(int trans, int M, int K, const float *A, int lda, uint32_t *ap, size_t *rs, size_t *ks) {
    int Kh = (K + 1) / 2;
    if (!trans) {
        for (int m = 0; m < M; m++) slm_bf16_pack_row(A + (size_t)m * lda, K, ap + (size_t)m * Kh);
        *rs = (size_t)Kh, *ks = 1;
    } else {
        for (int kp = 0; kp < Kh; kp++) pack_two_rows(A, lda, 2 * kp, K, M, ap + (size_t)kp * M);
        *rs = 1, *ks = (size_t)M;
    }
}

/* B (K, N), stored so, -> bp (ceil(N/16), Kh, 16) pairs, columns past N 0:
 * rows k and k+1 at once, 16 columns a store, straight into their panels. */
static BF16_TARGET void pack_b_rows(int K, int N, const float *B, int ldb, uint32_t *bp) {
    int Kh = (K + 1) / 2;
    for (int kp = 0; kp < Kh; kp++) {
        const float *r0 = B + (size_t)2 * kp * ldb, *r1 = r0 + ldb;
        int two = 2 * kp + 1 < K;
        for (int n = 0; n < N; n += 16) {
            __mmask16 m = N - n >= 16 ? 0xFFFF : (__mmask16)((1u << (N - n)) - 1u);
            __m512 x0 = _mm512_maskz_loadu_ps(m, r0 + n),
                   x1 = two ? _mm512_maskz_loadu_ps(m, r1 + n) : _mm512_setzero_ps();
            _mm512_storeu_si512(bp + ((size_t)(n / 16) * Kh + kp) * 16, pairs16(x0, x1));
        }
    }
}

/* r (16, 16) 32-bit lanes -> its transpose in place: pairs within 128-bit
 * lanes, then pairs of pairs, then the four 128-bit lanes across rows. */
static inline __attribute__((always_inline)) BF16_TARGET void transpose16(__m512i r[16]) {
    __m512i t[16], u[16];
    for (int i = 0; i < 16; i += 2) {
        t[i] = _mm512_unpacklo_epi32(r[i], r[i + 1]);
        t[i + 1] = _mm512_unpackhi_epi32(r[i], r[i + 1]);
    }
    for (int i = 0; i < 16; i += 4) { /* u[i + e], lane L: rows i .. i+3 of element 4L + e */
        u[i] = _mm512_unpacklo_epi64(t[i], t[i + 2]);
        u[i + 1] = _mm512_unpackhi_epi64(t[i], t[i + 2]);
        u[i + 2] = _mm512_unpacklo_epi64(t[i + 1], t[i + 3]);
        u[i + 3] = _mm512_unpackhi_epi64(t[i + 1], t[i + 3]);
    }
    for (int e = 0; e < 4; e++) {
        __m512i x0 = _mm512_shuffle_i32x4(u[e], u[4 + e], 0x44), x1 = _mm512_shuffle_i32x4(u[e], u[4 + e], 0xEE);
        __m512i y0 = _mm512_shuffle_i32x4(u[8 + e], u[12 + e], 0x44),
                y1 = _mm512_shuffle_i32x4(u[8 + e], u[12 + e], 0xEE);
        r[e] = _mm512_shuffle_i32x4(x0, y0, 0x88);
        r[4 + e] = _mm512_shuffle_i32x4(x0, y0, 0xDD);
        r[8 + e] = _mm512_shuffle_i32x4(x1, y1, 0x88);
        r[12 + e] = _mm512_shuffle_i32x4(x1, y1, 0xDD);
    }
}

/* B (N, K), op(B) its transpose (K, N), -> bp as pack_b_rows: a panel's 16
 * rows of B read in order into rows (16, Kr) of pairs (Kr: Kh rounded up to
 * 16, zeros past Kh and past N), then 16 k-pairs at a time transposed in
 * registers into the panel. */
static BF16_TARGET void pack_b_columns(int K, int N, const float *B, int ldb, uint32_t *bp, uint32_t *rows) {
    int Kh = (K + 1) / 2, Kr = (Kh + 15) / 16 * 16;
    for (int n0 = 0; n0 < N; n0 += 16) {
        for (int i = 0; i < 16; i++)
            if (n0 + i < N)
                slm_bf16_pack_row(B + (size_t)(n0 + i) * ldb, K, rows + (size_t)i * Kr);
            else
                memset(rows + (size_t)i * Kr, 0, (size_t)Kh * sizeof *rows);
        uint32_t *dst = bp + (size_t)(n0 / 16) * Kh * 16;
        for (int kp = 0; kp < Kh; kp += 16) {
            __m512i r[16];
            for (int i = 0; i < 16; i++) r[i] = _mm512_loadu_si512(rows + (size_t)i * Kr + kp);
            transpose16(r);
            for (int j = 0; j < 16 && kp + j < Kh; j++) _mm512_storeu_si512(dst + (size_t)(kp + j) * 16, r[j]);
        }
    }
}

int slm_bf16_panels_pack(Bf16Panels *p, int trans_b, int K, int N, const float *B, int ldb) {
    int Kh = (K + 1) / 2, Np = (N + 15) / 16 * 16;
    *p = (Bf16Panels){.K = K, .N = N};
    uint32_t *rows = trans_b ? calloc((size_t)16 * ((Kh + 15) / 16 * 16), sizeof *rows) : NULL;
    p->pairs = malloc(((size_t)Np * Kh + 16) * sizeof *p->pairs);
    if (!p->pairs || (trans_b && !rows)) {
        free(rows);
        slm_bf16_panels_free(p);
        return -1;
    }
    if (trans_b)
        pack_b_columns(K, N, B, ldb, p->pairs, rows);
    else
        pack_b_rows(K, N, B, ldb, p->pairs);
    free(rows);
    return 0;
}

void slm_bf16_panels_free(Bf16Panels *p) {
    free(p->pairs);
    p->pairs = NULL;
}

/* ---- the kernel ------------------------------------------------------------ */

/* C rows (R, up to 6) x columns n0 .. n0 + 16W (W 1 or 2, clipped at N) =
 * sums over ap's rows (pair kp of row r at ap[r*rs + kp*ks]) and the panels
 * from bp (+ C when beta). R and W are constants at each call, the loops
 * unrolled, so the 12 sums live in registers. */
static inline __attribute__((always_inline)) BF16_TARGET void tile(const uint32_t *ap, size_t rs, size_t ks, int Kh,
                                                                   const uint32_t *bp, int R, int W, float *C, int ldc,
                                                                   int n0, int N, int beta) {
    __m512 acc[6][2];
#pragma GCC unroll 6
    for (int r = 0; r < R; r++)
#pragma GCC unroll 2
        for (int w = 0; w < W; w++) acc[r][w] = _mm512_setzero_ps();
    for (int kp = 0; kp < Kh; kp++) {
        __m512bh b[2];
#pragma GCC unroll 2
        for (int w = 0; w < W; w++) b[w] = (__m512bh)_mm512_loadu_si512(bp + ((size_t)w * Kh + kp) * 16);
#pragma GCC unroll 6
        for (int r = 0; r < R; r++) {
            __m512bh a = (__m512bh)_mm512_set1_epi32((int)ap[r * rs + kp * ks]);
#pragma GCC unroll 2
            for (int w = 0; w < W; w++) acc[r][w] = _mm512_dpbf16_ps(acc[r][w], a, b[w]);
        }
    }
#pragma GCC unroll 2
    for (int w = 0; w < W; w++) {
        int n = n0 + 16 * w, valid = N - n < 16 ? N - n : 16;
        __mmask16 mask = (__mmask16)((1u << valid) - 1u);
#pragma GCC unroll 6
        for (int r = 0; r < R; r++) {
            float *c = C + (size_t)r * ldc + n;
            __m512 x = beta ? _mm512_add_ps(_mm512_maskz_loadu_ps(mask, c), acc[r][w]) : acc[r][w];
            _mm512_mask_storeu_ps(c, mask, x);
        }
    }
}

/* One tile of R rows, R from 1 to 6 turned into a constant. */
static inline __attribute__((always_inline)) BF16_TARGET void tile_rows(const uint32_t *ap, size_t rs, size_t ks,
                                                                        int Kh, const uint32_t *bp, int R, int W,
                                                                        float *C, int ldc, int n0, int N, int beta) {
    switch (R) {
        case 6: tile(ap, rs, ks, Kh, bp, 6, W, C, ldc, n0, N, beta); break;
        case 5: tile(ap, rs, ks, Kh, bp, 5, W, C, ldc, n0, N, beta); break;
        case 4: tile(ap, rs, ks, Kh, bp, 4, W, C, ldc, n0, N, beta); break;
        case 3: tile(ap, rs, ks, Kh, bp, 3, W, C, ldc, n0, N, beta); break;
        case 2: tile(ap, rs, ks, Kh, bp, 2, W, C, ldc, n0, N, beta); break;
        default: tile(ap, rs, ks, Kh, bp, 1, W, C, ldc, n0, N, beta); break;
    }
}

/* R rows of C (from ap's first row), every column: tiles of 32 columns, a last one of 16. */
static BF16_TARGET void row_tiles(const uint32_t *ap, size_t rs, size_t ks, int Kh, const uint32_t *bp, int R, float *C,
                                  int ldc, int N, int beta) {
    int n = 0;
    for (; n + 16 < N; n += 32) tile_rows(ap, rs, ks, Kh, bp + (size_t)(n / 16) * Kh * 16, R, 2, C, ldc, n, N, beta);
    if (n < N) tile_rows(ap, rs, ks, Kh, bp + (size_t)(n / 16) * Kh * 16, R, 1, C, ldc, n, N, beta);
}

#define TILE_ROWS 6

int slm_matmul_bf16_panels(int trans_a, int M, const float *A, int lda, const Bf16Panels *B, float beta, float *C,
                           int ldc) {
    int N = B->N, K = B->K, Kh = (K + 1) / 2, tiles = (M + TILE_ROWS - 1) / TILE_ROWS;
    if (M <= 0 || N <= 0) return 0;
    if (K <= 0) {
        scale_only(M, N, beta, C, ldc);
        return 0;
    }
    /* a pack of a few hundred KB at most in training: malloc reuses it call after call */
    uint32_t *ap = malloc(((size_t)M * Kh + 16) * sizeof *ap);
    if (!ap) return -1;
    size_t rs, ks;
    pack_a(trans_a, M, K, A, lda, ap, &rs, &ks);
    int parallel = !omp_in_parallel() && omp_get_max_threads() > 1 && tiles > 1;
#pragma omp parallel for schedule(static) if (parallel)
    for (int t = 0; t < tiles; t++) {
        int m = t * TILE_ROWS, R = M - m < TILE_ROWS ? M - m : TILE_ROWS;
        row_tiles(ap + (size_t)m * rs, rs, ks, Kh, B->pairs, R, C + (size_t)m * ldc, ldc, N, beta != 0.0f);
    }
    free(ap);
    return 0;
}

#else
/* Rows to pairs one at a time: see bf16.h. */
void slm_bf16_pack_row(const float *x, int n, uint32_t *pairs) {
    for (int k = 0; k < n; k += 2)
        pairs[k / 2] = (uint32_t)slm_bf16_from_float(x[k]) | (uint32_t)(k + 1 < n ? slm_bf16_from_float(x[k + 1]) : 0)
                                                                 << 16;
}

int slm_bf16_panels_pack(Bf16Panels *p, int trans_b, int K, int N, const float *B, int ldb) {
    *p = (Bf16Panels){.K = K, .N = N};
    return -1;
}

void slm_bf16_panels_free(Bf16Panels *p) { p->pairs = NULL; }

int slm_matmul_bf16_panels(int trans_a, int M, const float *A, int lda, const Bf16Panels *B, float beta, float *C,
                           int ldc) {
    return -1;
}
#endif

void slm_matmul_bf16(int trans_a, int trans_b, int M, int N, int K, const float *A, int lda, const float *B, int ldb,
                     float beta, float *C, int ldc) {
    if (M <= 0 || N <= 0) return;
    if (K <= 0) {
        scale_only(M, N, beta, C, ldc);
        return;
    }
    Bf16Panels bp;
    int rc = slm_bf16_panels_pack(&bp, trans_b, K, N, B, ldb);
    if (!rc) rc = slm_matmul_bf16_panels(trans_a, M, A, lda, &bp, beta, C, ldc);
    slm_bf16_panels_free(&bp);
    if (rc) /* the products have no error path: the same bits, the slow way */
        slm_matmul_bf16_emulated(trans_a, trans_b, M, N, K, A, lda, B, ldb, beta, C, ldc);
}

/* ---- the same bits in plain C ------------------------------------------------ */

/* FP32 results below the normal range become signed zero, as VDPBF16PS gives them. */
static float flush(float x) { return fabsf(x) < 1.17549435e-38f ? copysignf(0.0f, x) : x; }

void slm_matmul_bf16_emulated(int trans_a, int trans_b, int M, int N, int K, const float *A, int lda, const float *B,
                              int ldb, float beta, float *C, int ldc) {
    for (int m = 0; m < M; m++)
        for (int n = 0; n < N; n++) {
            float acc = 0.0f;
            for (int k = 0; k < K; k += 2) {
                float a[2] = {0.0f, 0.0f}, b[2] = {0.0f, 0.0f};
                for (int j = 0; j < 2 && k + j < K; j++) {
                    a[j] = slm_bf16_to_float(
                        slm_bf16_from_float(trans_a ? A[(size_t)(k + j) * lda + m] : A[(size_t)m * lda + k + j]));
                    b[j] = slm_bf16_to_float(
                        slm_bf16_from_float(trans_b ? B[(size_t)n * ldb + k + j] : B[(size_t)(k + j) * ldb + n]));
                }
                acc = flush(acc + a[1] * b[1]); /* exact products: one rounding per add */
                acc = flush(acc + a[0] * b[0]);
            }
            float *c = &C[(size_t)m * ldc + n];
            *c = beta != 0.0f ? *c + acc : acc;
        }
}
