/* Training's BF16 products: rounding to bfloat16 is to the nearest, ties to
 * even; the avx512_bf16 kernel gives bit for bit what its plain-C emulation
 * gives, for every transpose, odd lengths, edges of tiles and beta 0 or 1;
 * both are within bfloat16's error of the exact product (each operand
 * rounded to 8 bits of mantissa: at most 2^-8 of sum |a||b|, plus FP32's sums);
 * and the same call twice, or at 1 and 2 threads, gives the same bits, as
 * does a B packed once and used for product after product (the output
 * layer's chunks, packed once or each alone, give the same bits). A
 * training pass with BF16 products (one and two layers of heads) gives the
 * FP32 loss and every tensor's gradient to within a few bfloat16 roundings,
 * and a forward alone (evaluation) stays FP32 bit for bit. On a CPU without
 * avx512_bf16 the kernel's tests skip (77) after the emulation's. */
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "archs.h"
#include "check.h"
#include "storylm/bf16.h"
#include "storylm/layers.h"
#include "storylm/rng.h"
#include "storylm/shards.h"

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
    CHECK(slm_bf16_from_float(from_bits(0x3F808000u)) == 0x3F80); /* halfway, even below */
    CHECK(slm_bf16_from_float(from_bits(0x3F818000u)) == 0x3F82); /* halfway, even above */
    CHECK(slm_bf16_from_float(from_bits(0x3F808001u)) == 0x3F81); /* past halfway */
    CHECK(slm_bf16_from_float(from_bits(0x00400000u)) == 0x0000); /* denormal */
    CHECK(slm_bf16_from_float(from_bits(0x80400000u)) == 0x8000);
    CHECK(slm_bf16_from_float(from_bits(0x7F7FFFFFu)) == 0x7F80); /* rounds up to infinity */
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

typedef struct Shape {
    int ta, tb, M, N, K;
    float beta;
} Shape;

static const Shape shapes[] = {
    {0, 1, 256, 40, 160, 0}, {0, 1, 13, 2000, 128, 0}, {0, 0, 7, 128, 2000, 0}, {1, 0, 300, 128, 37, 1},
    {1, 0, 37, 160, 128, 1}, {0, 0, 6, 33, 5, 1},      {1, 1, 1, 1, 1, 0},      {0, 1, 12, 17, 3, 1},
    {1, 1, 9, 33, 45, 0}, /* a transposed B of 23 k-pairs: a block of 16 and a part, the last pair half 0 */
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

/* B packed once serves product after product (the output layer's weights,
 * chunk after chunk): each with the emulation's bits, whatever A's rows. */
static void packed_b_serves_every_product(void) {
    Rng r;
    slm_rng_seed(&r, 13);
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        const Shape *h = &shapes[s];
        int ldb = (h->tb ? h->K : h->N) + 1;
        float *B = random_floats(&r, (size_t)(h->tb ? h->N : h->K) * ldb, 0.1);
        Bf16Panels bp;
        if (!CHECK(slm_bf16_panels_pack(&bp, h->tb, h->K, h->N, B, ldb) == 0)) return;
        for (int M = h->M; M >= 1; M = M / 3) { /* a full chunk, then shorter ones */
            int lda = (h->ta ? M : h->K) + 3;
            size_t nc = (size_t)M * h->N;
            float *A = random_floats(&r, (size_t)(h->ta ? h->K : M) * lda, 1.0);
            float *want = random_floats(&r, nc, 1.0), *got = malloc(nc * sizeof(float));
            memcpy(got, want, nc * sizeof(float));
            slm_matmul_bf16_emulated(h->ta, h->tb, M, h->N, h->K, A, lda, B, ldb, h->beta, want, h->N);
            CHECK(slm_matmul_bf16_panels(h->ta, M, A, lda, &bp, h->beta, got, h->N) == 0);
            if (!CHECK(memcmp(got, want, nc * sizeof(float)) == 0))
                fprintf(stderr, "  shape %zu, %d rows: packed B and emulation differ\n", s, M);
            free(A), free(want), free(got);
        }
        slm_bf16_panels_free(&bp);
        free(B);
    }
}

/* The output layer's results for one run of the whole batch or one call a
 * chunk: loss (n), d_y (n, Hd), dW (V, Hd), d_bias (V). */
typedef struct OutputRun {
    float *loss, *lse, *d_y, *dW, *d_bias, *scratch;
    uint8_t *correct;
} OutputRun;

/* Rows [first, first + n) of the output layer at BF16 (chunks of c rows;
 * dW and d_bias accumulate) into u. */
static void output_rows(OutputRun *u, const float *W, const float *bias, const float *y, const int32_t *t, int first,
                        int n, int c, int Hd, int V) {
    OutputLoss o = {.W = W,
                    .bias = bias,
                    .y = y + (size_t)first * Hd,
                    .n = n,
                    .Hd = Hd,
                    .V = V,
                    .chunk_rows = c,
                    .target = t + first,
                    .scale = 0.1f,
                    .scratch = u->scratch,
                    .lse = u->lse + first,
                    .loss = u->loss + first,
                    .correct = u->correct + first,
                    .dW = u->dW,
                    .d_bias = u->d_bias,
                    .d_y = u->d_y + (size_t)first * Hd,
                    .precision = PRECISION_BF16};
    slm_output_loss(&o);
}

/* The output layer over rows in chunks, its weights packed once for them
 * all, gives the bits of the same chunks each in a call of its own (packed
 * for each): loss, d_y, and dW and d_bias summed chunk after chunk. */
static void output_chunks_share_packed_weights(void) {
    enum { n = 45, c = 16, Hd = 24, V = 70 };
    Rng r;
    slm_rng_seed(&r, 14);
    float *W = random_floats(&r, (size_t)V * Hd, 0.3), *bias = random_floats(&r, V, 0.1);
    float *y = random_floats(&r, (size_t)n * Hd, 1.0);
    int32_t t[n];
    for (int i = 0; i < n; i++) t[i] = i % 7 == 3 ? -1 : (int32_t)slm_rng_below(&r, V); /* some rows predict nothing */
    OutputRun u[2];
    for (int k = 0; k < 2; k++)
        u[k] = (OutputRun){.loss = calloc(n, sizeof(float)),
                           .lse = calloc(n, sizeof(float)),
                           .d_y = calloc((size_t)n * Hd, sizeof(float)),
                           .dW = calloc((size_t)V * Hd, sizeof(float)),
                           .d_bias = calloc(V, sizeof(float)),
                           .scratch = calloc((size_t)c * V, sizeof(float)),
                           .correct = calloc(n, 1)};
    output_rows(&u[0], W, bias, y, t, 0, n, c, Hd, V);
    for (int first = 0; first < n; first += c)
        output_rows(&u[1], W, bias, y, t, first, n - first < c ? n - first : c, c, Hd, V);
    CHECK(memcmp(u[0].loss, u[1].loss, n * sizeof(float)) == 0);
    CHECK(memcmp(u[0].d_y, u[1].d_y, (size_t)n * Hd * sizeof(float)) == 0);
    CHECK(memcmp(u[0].dW, u[1].dW, (size_t)V * Hd * sizeof(float)) == 0);
    CHECK(memcmp(u[0].d_bias, u[1].d_bias, V * sizeof(float)) == 0);
    for (int k = 0; k < 2; k++)
        free(u[k].loss), free(u[k].lse), free(u[k].d_y), free(u[k].dW), free(u[k].d_bias), free(u[k].scratch),
            free(u[k].correct);
    free(W), free(bias), free(y);
}

/* Sums near the bottom of FP32's range are flushed to 0, as the instruction does. */
static void tiny_sums_flush_alike(void) {
    float A[4] = {1e-20f, 1e-20f, 3e-19f, -1e-19f}, B[4] = {1e-19f, -2e-19f, 1e-19f, 1e-19f}, want[1], got[1];
    slm_matmul_bf16_emulated(0, 0, 1, 1, 4, A, 4, B, 1, 0.0f, want, 1);
    slm_matmul_bf16(0, 0, 1, 1, 4, A, 4, B, 1, 0.0f, got, 1);
    CHECK(memcmp(got, want, sizeof got) == 0);
}

/* sqrt(sum (x - y)^2) / sqrt(sum y^2) over n. */
static double relative_distance(const float *x, const float *y, size_t n) {
    double d = 0, s = 0;
    for (size_t i = 0; i < n; i++) d += ((double)x[i] - y[i]) * ((double)x[i] - y[i]), s += (double)y[i] * y[i];
    return s > 0 ? sqrt(d / s) : sqrt(d);
}

/* Loss and gradient of a few random stories through shards at precision p
 * (grads NULL: forward alone). */
static double pass_at(const Model *m, Precision p, const StoryRef *refs, int n, float *grads) {
    Error e = {0};
    Shards sh;
    double loss_sum = 0;
    long long correct = 0, positions = 0;
    for (int i = 0; i < n; i++) positions += refs[i].len - 1;
    CHECK(slm_shards_init(&sh, m, 2, 256, n, &e) == 0);
    sh.precision = p;
    if (grads) slm_model_zero_grad(m, grads);
    CHECK(slm_shards_run(&sh, refs, n, NULL, 1.0f / (float)positions, grads, &loss_sum, &correct, &e) == 0);
    slm_shards_free(&sh);
    return loss_sum / (double)positions;
}

/* A gradient goes through up to four products of the step (forward to the
 * logits, back to the tensor), each within 2^-8 of its terms' magnitude:
 * each tensor's gradient within 4 x 2^-8 of FP32's (norm of the difference
 * over the norm; measured 0.003-0.006), the loss within 2^-8. */
static void training_pass_is_close(int layers) {
    enum { V = 300, N = 6 };
    Error e = {0};
    ModelConfig cfg = slm_model_config_default(&slm_attention_arch, V);
    cfg.n_layers = layers;
    Model m;
    CHECK(slm_model_init(&m, &cfg, &e) == 0);
    slm_model_randomize(&m, 5);
    int32_t ids[N][120];
    StoryRef refs[N];
    Rng r;
    slm_rng_seed(&r, 6);
    for (int i = 0; i < N; i++) {
        int len = 30 + 15 * i;
        ids[i][0] = 1;
        for (int t = 1; t < len; t++) ids[i][t] = 2 + (int)slm_rng_below(&r, V - 2);
        refs[i] = (StoryRef){ids[i], len};
    }
    float *g32 = malloc(m.n_params * sizeof(float)), *g16 = malloc(m.n_params * sizeof(float));
    double loss32 = pass_at(&m, PRECISION_FP32, refs, N, g32), loss16 = pass_at(&m, PRECISION_BF16, refs, N, g16);
    CHECK_CLOSE(loss16, loss32, ldexp(1, -8), 0);
    CHECK(memcmp(g16, g32, m.n_params * sizeof(float)) != 0); /* the products did run in BF16 */
    for (int t = 0; t < m.n_tensors; t++) {
        const ParamTensor *p = &m.tensors[t];
        double d = relative_distance(g16 + p->offset, g32 + p->offset, p->size);
        if (!CHECK(d < ldexp(1, -6)))
            fprintf(stderr, "  %d layers, %s: gradient %.3g from FP32's\n", layers, p->name, d);
    }
    CHECK(pass_at(&m, PRECISION_BF16, refs, N, NULL) == pass_at(&m, PRECISION_FP32, refs, N, NULL));
    free(g32), free(g16);
    slm_model_free(&m);
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
    packed_b_serves_every_product();
    output_chunks_share_packed_weights();
    tiny_sums_flush_alike();
    training_pass_is_close(1);
    training_pass_is_close(2);
    return check_report();
}
