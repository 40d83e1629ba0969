/* --kernels portable (kernels.h): storylm's own products equal a plain
 * sequential sum in float bit for bit (((beta C + a_0 b_0) + a_1 b_1) + ...)
 * and a double-precision product within rounding, for every transpose, beta
 * 0 and 1, shapes that fill no panel or tile, and K = 0; the same bits at 1
 * and 2 threads; and a training pass at 1 and 2 threads gives the same
 * gradients, close to OpenBLAS's. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("fp-contract=off") /* the float reference rounds each step */
#endif
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "archs.h"
#include "check.h"
#include "storylm/layers.h"
#include "storylm/model.h"
#include "storylm/rng.h"

static const Compute PORTABLE = {PRECISION_FP32, KERNELS_PORTABLE};

/* op(X) at (i, k) for X with leading dimension ld. */
static float at(int t, const float *X, int ld, int i, int k) {
    return t ? X[(size_t)k * ld + i] : X[(size_t)i * ld + k];
}

/* One shape: C (M, N) = op(A) op(B) + beta C against the float sequential
 * sum (exact) and the double product (within K roundings of the |a b| sums). */
static void product_case(int ta, int tb, int M, int N, int K, float beta, Rng *r) {
    int lda = (ta ? M : K) + 3, ldb = (tb ? K : N) + 1, ldc = N + 2;
    size_t na = (size_t)(ta ? K : M) * lda + 1, nb = (size_t)(tb ? N : K) * ldb + 1, nc = (size_t)M * ldc;
    float *A = malloc(na * sizeof(float)), *B = malloc(nb * sizeof(float)), *C0 = malloc(nc * sizeof(float));
    float *C = malloc(nc * sizeof(float)), *C2 = malloc(nc * sizeof(float));
    for (size_t i = 0; i < na; i++) A[i] = (float)slm_rng_normal(r);
    for (size_t i = 0; i < nb; i++) B[i] = (float)slm_rng_normal(r);
    for (size_t i = 0; i < nc; i++) C0[i] = beta == 0.0f ? NAN : (float)slm_rng_normal(r); /* beta 0: never read */
    memcpy(C, C0, nc * sizeof(float));
    memcpy(C2, C0, nc * sizeof(float));
    omp_set_num_threads(1);
    slm_matmul_at(PORTABLE, ta, tb, M, N, K, A, lda, B, ldb, beta, C, ldc);
    omp_set_num_threads(2);
    slm_matmul_at(PORTABLE, ta, tb, M, N, K, A, lda, B, ldb, beta, C2, ldc);
    long inexact = 0, far = 0;
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            float c0 = C0[(size_t)i * ldc + j], seq = beta == 0.0f ? 0.0f : beta * c0;
            double ref = beta == 0.0f ? 0.0 : (double)beta * c0, mag = fabs(ref);
            for (int k = 0; k < K; k++) {
                float a = at(ta, A, lda, i, k), b = at(tb, B, ldb, k, j);
                seq = seq + a * b;
                ref += (double)a * b, mag += fabs((double)a * b);
            }
            float got = C[(size_t)i * ldc + j];
            inexact += memcmp(&got, &seq, sizeof got) != 0;
            far += fabs(got - ref) > (K + 1) * 6e-8 * mag;
        }
    if (!CHECK(inexact == 0 && far == 0))
        fprintf(stderr, "  %c%c %dx%dx%d beta %g: %ld not the sequential sum, %ld far from double\n", ta ? 'T' : 'N',
                tb ? 'T' : 'N', M, N, K, beta, inexact, far);
    CHECK(memcmp(C, C2, nc * sizeof(float)) == 0); /* 1 and 2 threads */
    free(A), free(B), free(C0), free(C), free(C2);
}

static void products_are_sequential_sums(void) {
    static const int shapes[][3] = {{1, 1, 1},     {3, 5, 7},    {4, 32, 128}, {5, 33, 129},
                                    {37, 70, 300}, {300, 9, 40}, {2, 65, 0},   {130, 2000, 24}};
    Rng r;
    slm_rng_seed(&r, 17);
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int t = 0; t < 4; t++)
            for (int b = 0; b < 2; b++)
                product_case(t & 1, t >> 1, shapes[s][0], shapes[s][1], shapes[s][2], (float)b, &r);
}

/* The real sizes, 3 stories of random ids: one training pass's gradients. */
static void pass_grads(const Architecture *arch, Kernels k, int threads, float **grads, size_t *n) {
    ModelConfig cfg = slm_model_config_default(arch, 2000);
    Model m;
    Activations a;
    Batch b;
    Error e;
    Rng r;
    slm_rng_seed(&r, 3);
    CHECK(slm_model_init(&m, &cfg, &e) == 0 && slm_batch_init(&b, 700, 4, &e) == 0);
    slm_model_randomize(&m, 11);
    int32_t ids[300];
    for (int s = 0; s < 3; s++) {
        int len = s == 0 ? 300 : 100 + 50 * s;
        for (int t = 0; t < len; t++) ids[t] = t ? (int32_t)slm_rng_below(&r, 2000) : 1;
        CHECK(slm_batch_add(&b, ids, len, &e) == 0);
    }
    CHECK(slm_activations_init(&a, &cfg, b.n_tokens, &e) == 0);
    a.kernels = k;
    slm_model_threads_setup(threads);
    *n = m.n_params;
    *grads = calloc(m.n_params, sizeof(float));
    CHECK(slm_model_loss_and_grad(&m, &a, &b, NULL, 1.0f / 600, *grads, &e) == 0);
    slm_batch_free(&b), slm_activations_free(&a), slm_model_free(&m);
}

static void passes_agree(const Architecture *arch) {
    float *one, *two, *blas;
    size_t n;
    pass_grads(arch, KERNELS_PORTABLE, 1, &one, &n);
    pass_grads(arch, KERNELS_PORTABLE, 2, &two, &n);
    pass_grads(arch, KERNELS_BLAS, 2, &blas, &n);
    CHECK(memcmp(one, two, n * sizeof(float)) == 0);
    size_t finite = 0;
    for (size_t i = 0; i < n; i++) finite += isfinite(one[i]) && isfinite(blas[i]);
    CHECK(finite == n);
    double largest = 0, diff = 0;
    size_t differ = 0;
    for (size_t i = 0; i < n; i++) {
        largest = fmax(largest, fabs(blas[i]));
        diff = fmax(diff, fabs((double)blas[i] - one[i]));
        differ += blas[i] != one[i];
    }
    printf("%s: portable against OpenBLAS, largest difference %.2e of the largest gradient (%zu of %zu differ)\n",
           arch->name, diff / largest, differ, n);
    CHECK(diff <= 1e-5 * largest);
    free(one), free(two), free(blas);
}

int main(void) {
    products_are_sequential_sums();
    passes_agree(&slm_attention_arch);
    passes_agree(&slm_window8_arch);
    return check_report();
}
