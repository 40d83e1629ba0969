/* Training's BF16 products: rounding to bfloat16 is to the nearest, ties to
 * even; the avx512_bf16 kernel gives bit for bit what its plain-C emulation
 * gives, for every transpose, odd lengths, edges of tiles and beta 0 or 1;
 * both are within bfloat16's error of the exact product (each operand
 * rounded to 8 bits of mantissa: at most 2^-8 of sum |a||b|, plus FP32's sums);
 * and the same call twice, or at 1 and 2 threads, gives the same bits. On a
 * CPU without avx512_bf16 the kernel's tests skip (77) after the emulation's. */
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "storylm/bf16.h"
#include "storylm/rng.h"

static float *random_floats(Rng *r, size_t n, double scale) {
    float *x = malloc(n * sizeof(float));
    for (size_t i = 0; i < n; i++) x[i] = (float)(slm_rng_normal(r) * scale);
    return x;
}

static float from_bits(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* Rounding: exact values stay, halfway goes to even, up past halfway, denormals to 0, NaN stays NaN. */
static void rounding_is_nearest_even(void) {
    CHECK(slm_bf16_to_float(slm_bf16_from_float(1.0f)) == 1.0f);
    CHECK(slm_bf16_to_float(slm_bf16_from_float(-2.5f)) == -2.5f);
    CHECK(slm_bf16_from_float(from_bits(0x3F808000u)) == 0x3F80);  /* halfway, even below */
    CHECK(slm_bf16_from_float(from_bits(0x3F818000u)) == 0x3F82);  /* halfway, even above */
    CHECK(slm_bf16_from_float(from_bits(0x3F808001u)) == 0x3F81);  /* past halfway */
    CHECK(slm_bf16_from_float(from_bits(0x00400000u)) == 0x0000);  /* denormal */
    CHECK(slm_bf16_from_float(from_bits(0x80400000u)) == 0x8000);
    CHECK(slm_bf16_from_float(from_bits(0x7F7FFFFFu)) == 0x7F80);  /* rounds up to infinity */
    CHECK(isnan(slm_bf16_to_float(slm_bf16_from_float(NAN))));
}

/* op(X) element (i, j) of X (rows, cols) with stride ld. */
static double at(const float *X, int trans, int ld, int i, int j) {
    return trans ? X[(size_t)j * ld + i] : X[(size_t)i * ld + j];
}

/* C (M, N) against the exact product of A, B (+ C0 when beta): within
 * (2^-8 + (K+1) 2^-24) of sum |a||b| (+ |c0|), each element. */
static int close_to_exact(int ta, int tb, int M, int N, int K, const float *A, int lda, const float *B, int ldb,
                          float beta, const float *C0, const float *C) {
    int ok = 1;
    for (int m = 0; m < M; m++)
        for (int n = 0; n < N; n++) {
            double sum = beta ? C0[(size_t)m * N + n] : 0, mag = beta ? fabs(sum) : 0;
            for (int k = 0; k < K; k++) {
                double p = at(A, ta, lda, m, k) * at(B, tb, ldb, k, n);
                sum += p;
                mag += fabs(p);
            }
            ok &= fabs(C[(size_t)m * N + n] - sum) <= (ldexp(1, -8) + (K + 1) * ldexp(1, -24)) * mag + 1e-30;
        }
    return ok;
}

typedef struct Shape { int ta, tb, M, N, K; float beta; } Shape;

static const Shape shapes[] = {
    {0, 1, 256, 40, 160, 0}, {0, 1, 13, 2000, 128, 0}, {0, 0, 7, 128, 2000, 0}, {1, 0, 300, 128, 37, 1},
    {1, 0, 37, 160, 128, 1}, {0, 0, 6, 33, 5, 1},       {1, 1, 1, 1, 1, 0},      {0, 1, 12, 17, 3, 1},
};

/* The emulation against the exact product for every shape. */
static void emulation_is_within_bf16(void) {
    Rng r;
    slm_rng_seed(&r, 11);
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        const Shape *h = &shapes[s];
        int lda = (h->ta ? h->M : h->K) + 3, ldb = (h->tb ? h->K : h->N) + 1;
        float *A = random_floats(&r, (size_t)(h->ta ? h->K : h->M) * lda, 1.0);
        float *B = random_floats(&r, (size_t)(h->tb ? h->N : h->K) * ldb, 0.1);
        float *C0 = random_floats(&r, (size_t)h->M * h->N, 1.0), *C = malloc((size_t)h->M * h->N * sizeof(float));
        memcpy(C, C0, (size_t)h->M * h->N * sizeof(float));
        slm_matmul_bf16_emulated(h->ta, h->tb, h->M, h->N, h->K, A, lda, B, ldb, h->beta, C, h->N);
        if (!CHECK(close_to_exact(h->ta, h->tb, h->M, h->N, h->K, A, lda, B, ldb, h->beta, C0, C)))
            fprintf(stderr, "  shape %zu\n", s);
        free(A), free(B), free(C0), free(C);
    }
}

/* The kernel against the emulation, bit for bit, at 1 and 2 threads, twice. */
static void kernel_matches_emulation(void) {
    Rng r;
    slm_rng_seed(&r, 12);
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        const Shape *h = &shapes[s];
        int lda = (h->ta ? h->M : h->K) + 3, ldb = (h->tb ? h->K : h->N) + 1;
        size_t nc = (size_t)h->M * h->N;
        float *A = random_floats(&r, (size_t)(h->ta ? h->K : h->M) * lda, 1.0);
        float *B = random_floats(&r, (size_t)(h->tb ? h->N : h->K) * ldb, 0.1);
        float *C0 = random_floats(&r, nc, 1.0), *want = malloc(nc * sizeof(float));
        memcpy(want, C0, nc * sizeof(float));
        slm_matmul_bf16_emulated(h->ta, h->tb, h->M, h->N, h->K, A, lda, B, ldb, h->beta, want, h->N);
        for (int threads = 1; threads <= 2; threads++)
            for (int again = 0; again < 2; again++) {
                float *got = malloc(nc * sizeof(float));
                memcpy(got, C0, nc * sizeof(float));
                omp_set_num_threads(threads);
                slm_matmul_bf16(h->ta, h->tb, h->M, h->N, h->K, A, lda, B, ldb, h->beta, got, h->N);
                if (!CHECK(memcmp(got, want, nc * sizeof(float)) == 0))
                    fprintf(stderr, "  shape %zu, %d threads: kernel and emulation differ\n", s, threads);
                free(got);
            }
        free(A), free(B), free(C0), free(want);
    }
}

/* Sums near the bottom of FP32's range are flushed to 0, as the instruction does. */
static void tiny_sums_flush_alike(void) {
    float A[4] = {1e-20f, 1e-20f, 3e-19f, -1e-19f}, B[4] = {1e-19f, -2e-19f, 1e-19f, 1e-19f}, want[1], got[1];
    slm_matmul_bf16_emulated(0, 0, 1, 1, 4, A, 4, B, 1, 0.0f, want, 1);
    slm_matmul_bf16(0, 0, 1, 1, 4, A, 4, B, 1, 0.0f, got, 1);
    CHECK(memcmp(got, want, sizeof got) == 0);
}

static void precision_names(void) {
    Precision p = PRECISION_BF16;
    Error e = {0};
    CHECK(slm_precision_parse("fp32", &p, &e) == 0 && p == PRECISION_FP32);
    CHECK(slm_precision_parse("bf16", &p, &e) == 0 && p == PRECISION_BF16);
    CHECK(slm_precision_parse("fp16", &p, &e) == -1);
    CHECK(slm_precision_parse(NULL, &p, &e) == -1);
    CHECK(strcmp(slm_precision_name(PRECISION_BF16), "bf16") == 0);
    CHECK(slm_precision_check(PRECISION_FP32, &e) == 0);
}

int main(void) {
    rounding_is_nearest_even();
    emulation_is_within_bf16();
    precision_names();
    if (!slm_bf16_supported()) {
        fprintf(stderr, "this CPU has no avx512_bf16: the kernel's tests are skipped\n");
        Error e = {0};
        CHECK(slm_precision_check(PRECISION_BF16, &e) == -1);
        int failed = check_report();
        return failed ? failed : 77;
    }
    kernel_matches_emulation();
    tiny_sums_flush_alike();
    return check_report();
}
