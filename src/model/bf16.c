/* BF16 products with FP32 sums: see include/storylm/bf16.h.
 *
 * Both operands are packed once per call as bfloat16 pairs along k (k even
 * in the low half, as VDPBF16PS reads them): A by rows, (M, K/2) pairs, and
 * B in panels of 16 columns, (N/16, K/2, 16) pairs, so one 512-bit load is a
 * k-pair of 16 columns. A tile of up to 6 rows by 32 columns keeps 12 sums in
 * registers; each sum runs over k in order from 0, so an element's bits do
 * not depend on the tile, the block or the thread it falls in. The
 * instruction adds the odd product, then the even one, each rounded to FP32
 * (bf16 x bf16 is exact in FP32), denormals flushed to zero: the emulation
 * below does the same. */
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "storylm/bf16.h"
#include "storylm/layers.h"

#define BF16_TARGET __attribute__((target("avx512f,avx512bf16")))
#include <immintrin.h>

const char *slm_precision_name(Precision p) { return p == PRECISION_BF16 ? "bf16" : "fp32"; }

int slm_precision_parse(const char *name, Precision *p, Error *e) {
    if (name && strcmp(name, "fp32") == 0) *p = PRECISION_FP32;
    else if (name && strcmp(name, "bf16") == 0) *p = PRECISION_BF16;
    else return FAIL(e, "give --precision fp32 (the default) or bf16", "unknown precision '%.40s'", name ? name : "");
    return 0;
}

int slm_bf16_supported(void) {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512bf16");
}

int slm_precision_check(Precision p, Error *e) {
    if (p == PRECISION_BF16 && !slm_bf16_supported())
        return FAIL(e, "train with --precision fp32 (the default) on this machine",
                    "--precision bf16 needs a CPU with avx512_bf16 (AMD Zen 4, Intel Cooper Lake or Sapphire Rapids "
                    "and later); this one has none");
    return 0;
}

uint16_t slm_bf16_from_float(float x) {
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    if ((u & 0x7F800000u) == 0) return (uint16_t)(u >> 16 & 0x8000u);          /* zero or denormal: signed 0 */
    if ((u & 0x7FFFFFFFu) > 0x7F800000u) return (uint16_t)(u >> 16 | 0x0040u); /* NaN: quiet */
    return (uint16_t)((u + 0x7FFFu + (u >> 16 & 1u)) >> 16);                    /* nearest, ties to even */
}

/* ---- packing ------------------------------------------------------------- */

/* Two bfloat16 as VDPBF16PS reads a 32-bit lane: x0 (even k) low, x1 high. */
static uint32_t bf16_pair(float x0, float x1) {
    return (uint32_t)slm_bf16_from_float(x0) | (uint32_t)slm_bf16_from_float(x1) << 16;
}

/* op(A) (M, K) -> ap (M, Kh) pairs, Kh = ceil(K/2), an odd K's last pair padded with 0. */
static void pack_rows(int trans, int M, int K, const float *A, int lda, uint32_t *ap) {
    int Kh = (K + 1) / 2;
    for (int m = 0; m < M; m++)
        for (int kp = 0; kp < Kh; kp++) {
            int k = 2 * kp;
            float x0 = trans ? A[(size_t)k * lda + m] : A[(size_t)m * lda + k];
            float x1 = k + 1 >= K ? 0.0f : trans ? A[(size_t)(k + 1) * lda + m] : A[(size_t)m * lda + k + 1];
            ap[(size_t)m * Kh + kp] = bf16_pair(x0, x1);
        }
}

/* op(B) (K, N) -> bp (ceil(N/16), Kh, 16) pairs, columns past N padded with 0. */
static void pack_panels(int trans, int K, int N, const float *B, int ldb, uint32_t *bp) {
    int Kh = (K + 1) / 2, Np = (N + 15) / 16 * 16;
    for (int n = 0; n < Np; n++)
        for (int kp = 0; kp < Kh; kp++) {
            int k = 2 * kp;
            float x0 = 0.0f, x1 = 0.0f;
            if (n < N) {
                x0 = trans ? B[(size_t)n * ldb + k] : B[(size_t)k * ldb + n];
                if (k + 1 < K) x1 = trans ? B[(size_t)n * ldb + k + 1] : B[(size_t)(k + 1) * ldb + n];
            }
            bp[((size_t)(n / 16) * Kh + kp) * 16 + n % 16] = bf16_pair(x0, x1);
        }
}

/* ---- the kernel ------------------------------------------------------------ */

/* C rows (R, up to 6) x columns n0 .. n0 + 16W (W 1 or 2, clipped at N) =
 * sums over ap's rows and the panels from bp (+ C when beta). R and W are
 * constants at each call, so the sums live in registers. */
static inline __attribute__((always_inline)) BF16_TARGET void tile(const uint32_t *ap, int Kh, const uint32_t *bp,
                                                                 int R, int W, float *C, int ldc, int n0, int N,
                                                                 int beta) {
    __m512 acc[6][2];
    for (int r = 0; r < R; r++)
        for (int w = 0; w < W; w++) acc[r][w] = _mm512_setzero_ps();
    for (int kp = 0; kp < Kh; kp++) {
        __m512bh b[2];
        for (int w = 0; w < W; w++) b[w] = (__m512bh)_mm512_loadu_si512(bp + ((size_t)w * Kh + kp) * 16);
        for (int r = 0; r < R; r++) {
            __m512bh a = (__m512bh)_mm512_set1_epi32((int)ap[(size_t)r * Kh + kp]);
            for (int w = 0; w < W; w++) acc[r][w] = _mm512_dpbf16_ps(acc[r][w], a, b[w]);
        }
    }
    for (int w = 0; w < W; w++) {
        int n = n0 + 16 * w, valid = N - n < 16 ? N - n : 16;
        __mmask16 mask = (__mmask16)((1u << valid) - 1u);
        for (int r = 0; r < R; r++) {
            float *c = C + (size_t)r * ldc + n;
            __m512 x = beta ? _mm512_add_ps(_mm512_maskz_loadu_ps(mask, c), acc[r][w]) : acc[r][w];
            _mm512_mask_storeu_ps(c, mask, x);
        }
    }
}

/* Rows m .. m+R of C, every column: tiles of 32 columns, a last one of 16. */
static BF16_TARGET void row_tiles(const uint32_t *ap, int Kh, const uint32_t *bp, int R, float *C, int ldc, int N,
                                  int beta) {
    int n = 0;
    for (; n + 16 < N; n += 32) {
        const uint32_t *panel = bp + (size_t)(n / 16) * Kh * 16;
        if (R == 6) tile(ap, Kh, panel, 6, 2, C, ldc, n, N, beta);
        else if (R == 1) tile(ap, Kh, panel, 1, 2, C, ldc, n, N, beta);
        else
            for (int r = 0; r < R; r++) tile(ap + (size_t)r * Kh, Kh, panel, 1, 2, C + (size_t)r * ldc, ldc, n, N, beta);
    }
    if (n < N) {
        const uint32_t *panel = bp + (size_t)(n / 16) * Kh * 16;
        for (int r = 0; r < R; r++) tile(ap + (size_t)r * Kh, Kh, panel, 1, 1, C + (size_t)r * ldc, ldc, n, N, beta);
    }
}

#define TILE_ROWS 6

void slm_matmul_bf16(int trans_a, int trans_b, int M, int N, int K, const float *A, int lda, const float *B, int ldb,
                     float beta, float *C, int ldc) {
    if (M <= 0 || N <= 0) return;
    int Kh = (K + 1) / 2, Np = (N + 15) / 16 * 16, tiles = (M + TILE_ROWS - 1) / TILE_ROWS;
    if (K <= 0) { /* no products: C = beta C */
        for (int m = 0; m < M; m++)
            for (int n = 0; n < N; n++) C[(size_t)m * ldc + n] = beta != 0.0f ? C[(size_t)m * ldc + n] : 0.0f;
        return;
    }
    /* packs of a few hundred KB at most in training: malloc reuses them call after call */
    uint32_t *ap = malloc((size_t)M * Kh * sizeof *ap), *bp = malloc((size_t)Np * Kh * sizeof *bp);
    if (!ap || !bp) { /* the products have no error path: the same bits, the slow way */
        free(ap);
        free(bp);
        slm_matmul_bf16_emulated(trans_a, trans_b, M, N, K, A, lda, B, ldb, beta, C, ldc);
        return;
    }
    pack_rows(trans_a, M, K, A, lda, ap);
    pack_panels(trans_b, K, N, B, ldb, bp);
    int parallel = !omp_in_parallel() && omp_get_max_threads() > 1 && tiles > 1;
#pragma omp parallel for schedule(static) if (parallel)
    for (int t = 0; t < tiles; t++) {
        int m = t * TILE_ROWS, R = M - m < TILE_ROWS ? M - m : TILE_ROWS;
        row_tiles(ap + (size_t)m * Kh, Kh, bp, R, C + (size_t)m * ldc, ldc, N, beta != 0.0f);
    }
    free(ap);
    free(bp);
}

/* ---- the same bits in plain C ------------------------------------------------ */

/* FP32 results below the normal range become signed zero, as VDPBF16PS gives them. */
static float flush(float x) { return fabsf(x) < 1.17549435e-38f ? copysignf(0.0f, x) : x; }

void slm_matmul_bf16_emulated(int trans_a, int trans_b, int M, int N, int K, const float *A, int lda,
                              const float *B, int ldb, float beta, float *C, int ldc) {
    for (int m = 0; m < M; m++)
        for (int n = 0; n < N; n++) {
            float acc = 0.0f;
            for (int k = 0; k < K; k += 2) {
                float a[2] = {0.0f, 0.0f}, b[2] = {0.0f, 0.0f};
                for (int j = 0; j < 2 && k + j < K; j++) {
                    a[j] = slm_bf16_to_float(slm_bf16_from_float(trans_a ? A[(size_t)(k + j) * lda + m]
                                                                         : A[(size_t)m * lda + k + j]));
                    b[j] = slm_bf16_to_float(slm_bf16_from_float(trans_b ? B[(size_t)n * ldb + k + j]
                                                                         : B[(size_t)(k + j) * ldb + n]));
                }
                acc = flush(acc + a[1] * b[1]); /* exact products: one rounding per add */
                acc = flush(acc + a[0] * b[0]);
            }
            float *c = &C[(size_t)m * ldc + n];
            *c = beta != 0.0f ? *c + acc : acc;
        }
}

void slm_matmul_at(Precision p, int trans_a, int trans_b, int M, int N, int K, const float *A, int lda,
                   const float *B, int ldb, float beta, float *C, int ldc) {
    if (p == PRECISION_BF16) slm_matmul_bf16(trans_a, trans_b, M, N, K, A, lda, B, ldb, beta, C, ldc);
    else slm_matmul(trans_a, trans_b, M, N, K, A, lda, B, ldb, beta, C, ldc);
}
