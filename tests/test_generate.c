/* Incremental generation agrees with the whole-story forward pass: the
 * logits generator_feed gives at each position equal model_forward's, also
 * past the 256-token window (where the ring buffer wraps), with heads
 * ablated, and for window8; and the sampler does what its settings say. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "storylm/generate.h"
#include "storylm/model.h"
#include "storylm/rng.h"
#include "storylm/sample.h"

static double max_abs(const float *x, const float *y, int n) {
    double d = 0;
    for (int i = 0; i < n; i++) d = fmax(d, fabs((double)x[i] - y[i]));
    return d;
}

/* A story of T random ids through both paths; returns the worst difference. */
static double compare(Arch arch, int T, const Ablation *ab, uint64_t seed) {
    Error e = {0};
    ModelConfig cfg = model_config_default(arch, 300);
    Model m;
    Activations a;
    Batch b;
    Generator g;
    CHECK(model_init(&m, &cfg, &e) == 0);
    model_randomize(&m, seed);
    Rng r;
    rng_seed(&r, seed + 1);
    for (int i = 0; i < cfg.n_heads * cfg.window && m.distance; i++) m.distance[i] = (float)rng_range(&r, -2, 2);
    int32_t *ids = malloc(T * sizeof *ids);
    for (int t = 0; t < T; t++) ids[t] = t == 0 ? 1 : (int32_t)rng_below(&r, 300);
    CHECK(activations_init(&a, &cfg, T, &e) == 0);
    CHECK(batch_init(&b, T, 1, &e) == 0);
    CHECK(batch_add(&b, ids, T, &e) == 0);
    float loss;
    CHECK(model_forward(&m, &a, &b, ab, &loss, &e) == 0);
    CHECK(generator_init(&g, &m, ab, &e) == 0);
    double worst = 0;
    for (int t = 0; t < T; t++) {
        const float *logits = generator_feed(&g, ids[t]);
        worst = fmax(worst, max_abs(logits, a.logits + (size_t)t * cfg.vocab_size, cfg.vocab_size));
    }
    generator_free(&g);
    batch_free(&b);
    activations_free(&a);
    model_free(&m);
    free(ids);
    return worst;
}

static void generation_matches_forward(void) {
    CHECK(compare(ARCH_ATTENTION, 40, NULL, 1) < 1e-4);
    CHECK(compare(ARCH_ATTENTION, 600, NULL, 2) < 1e-4); /* the window wraps twice */
    CHECK(compare(ARCH_WINDOW8, 50, NULL, 3) < 1e-4);
    float mean[8 * 16];
    for (int i = 0; i < 8 * 16; i++) mean[i] = 0.01f * (float)(i % 17) - 0.08f;
    Ablation zero = {.heads = (1u << 3) | (1u << 5), .mode = ABLATE_ZERO};
    Ablation avg = {.heads = 0xffu, .mode = ABLATE_MEAN, .mean = mean};
    CHECK(compare(ARCH_ATTENTION, 300, &zero, 4) < 1e-4);
    CHECK(compare(ARCH_ATTENTION, 100, &avg, 5) < 1e-4);
}

static void greedy_takes_the_largest(void) {
    Error e = {0};
    Sampler s;
    float logits[5] = {0.1f, 2.0f, 2.0f, -1.0f, 0.5f};
    CHECK(sampler_init(&s, 5, 0.0f, 0, 1.0f, 1, &e) == 0);
    CHECK(sampler_sample(&s, logits) == 1); /* ties go to the lower id */
    sampler_free(&s);
}

/* Draws n samples and counts them per token. */
static void histogram(float temperature, int top_k, float top_p, const float *logits, int V, int n, int *counts) {
    Error e = {0};
    Sampler s;
    CHECK(sampler_init(&s, V, temperature, top_k, top_p, 42, &e) == 0);
    memset(counts, 0, V * sizeof *counts);
    for (int i = 0; i < n; i++) counts[sampler_sample(&s, logits)]++;
    sampler_free(&s);
}

static void sampling_follows_its_settings(void) {
    enum { V = 6, N = 60000 };
    float logits[V] = {2.0f, 1.0f, 0.0f, -1.0f, 0.5f, 1.5f};
    float p[V];
    int counts[V];
    softmax_probs(logits, V, p);
    histogram(1.0f, 0, 1.0f, logits, V, N, counts);
    for (int i = 0; i < V; i++) CHECK_CLOSE((double)counts[i] / N, p[i], 0.05, 0.005);
    histogram(1.0f, 2, 1.0f, logits, V, N, counts); /* top-2: tokens 0 and 5 only */
    CHECK(counts[0] + counts[5] == N);
    CHECK_CLOSE((double)counts[0] / N, p[0] / (p[0] + p[5]), 0.05, 0.005);
    histogram(1.0f, 0, 0.5f, logits, V, N, counts); /* p[0] = 0.39 < 0.5: tokens 0 and 5 */
    CHECK(counts[0] + counts[5] == N && counts[5] > 0);
    histogram(0.01f, 0, 1.0f, logits, V, 1000, counts); /* a cold sampler is nearly greedy */
    CHECK(counts[0] == 1000);
    Sampler s;
    Error e = {0};
    CHECK(sampler_init(&s, V, -1.0f, 0, 1.0f, 1, &e) == -1 && strstr(e.message, "invalid"));
    CHECK(sampler_init(&s, V, 1.0f, 0, 2.0f, 1, &e) == -1);
}

static void same_seed_same_draws(void) {
    enum { V = 50 };
    float logits[V];
    for (int i = 0; i < V; i++) logits[i] = sinf((float)i);
    Error e = {0};
    Sampler a, b;
    CHECK(sampler_init(&a, V, 0.9f, 10, 0.9f, 7, &e) == 0 && sampler_init(&b, V, 0.9f, 10, 0.9f, 7, &e) == 0);
    int same = 1;
    for (int i = 0; i < 200; i++) same &= sampler_sample(&a, logits) == sampler_sample(&b, logits);
    CHECK(same);
    sampler_free(&a);
    sampler_free(&b);
}

int main(void) {
    model_threads_setup(2);
    generation_matches_forward();
    greedy_takes_the_largest();
    sampling_follows_its_settings();
    same_seed_same_draws();
    return check_report();
}
