/* The batch check test_generate.c and test_generate_bf16.c share: a batch
 * of samples gives each sample the bits it gets alone. Included by one test
 * file each (static). */
#ifndef STORYLM_TEST_GENERATE_BATCH_H
#define STORYLM_TEST_GENERATE_BATCH_H

#include <string.h>

#include "check.h"
#include "storylm/generate.h"
#include "storylm/model.h"
#include "storylm/rng.h"
#include "storylm/workers.h"

/* A batch of N (at most 64) of a random model of config cfg (300 tokens),
 * fed random tokens, a random subset of the samples each step in a random
 * order, gives each sample the same logits, bit for bit, as a generator of
 * its own fed the same tokens; also past the window; the products at
 * precision p. */
static void batch_of_config_gives_each_sample_its_own_bits(ModelConfig cfg, const Ablation *ab, uint64_t seed,
                                                           int threads, int N, Precision p) {
    enum { MAX_N = 64, STEPS = 300 };
    Error e = {0};
    CHECK(N >= 3 && N <= MAX_N);
    Model m;
    CHECK(slm_model_init(&m, &cfg, &e) == 0);
    slm_model_randomize(&m, seed);
    GeneratorBatch batch;
    Generator alone[MAX_N];
    Workers w;
    CHECK(slm_generator_batch_init(&batch, &m, ab, N, &e) == 0 && slm_workers_init(&w, threads, &e) == 0);
    if (threads > 1) slm_generator_batch_use_workers(&batch, &w); /* the samples of a step shared between threads */
    CHECK(slm_generator_batch_set_precision(&batch, p, &e) == 0);
    for (int s = 0; s < N; s++)
        CHECK(slm_generator_init(&alone[s], &m, ab, &e) == 0 &&
              slm_generator_batch_set_precision(&alone[s].batch, p, &e) == 0);
    Rng r;
    slm_rng_seed(&r, seed + 7);
    int same = 1, fed = 0;
    for (int step = 0; step < STEPS; step++) {
        int which[MAX_N], k = 0;
        int32_t tokens[MAX_N];
        for (int s = 0; s < N; s++)
            if (step == 0 || slm_rng_below(&r, 4) != 0) which[k++] = s; /* now and then a sample waits */
        for (int j = k - 1; j > 0; j--) {                               /* in any order */
            int i = (int)slm_rng_below(&r, (uint64_t)j + 1), t = which[i];
            which[i] = which[j], which[j] = t;
        }
        for (int j = 0; j < k; j++) tokens[j] = (int32_t)slm_rng_below(&r, 300);
        slm_generator_batch_feed(&batch, which, tokens, k);
        for (int j = 0; j < k; j++) {
            const float *own = slm_generator_feed(&alone[which[j]], tokens[j]);
            same &= memcmp(own, slm_generator_batch_logits(&batch, which[j]), cfg.vocab_size * sizeof(float)) == 0;
            fed++;
        }
    }
    CHECK(same && fed > N * STEPS / 2);
    slm_generator_batch_copy(&batch, 2, 0); /* sample 0 goes on from sample 2's story */
    int32_t t = 17;
    int zero = 0;
    slm_generator_batch_feed(&batch, &zero, &t, 1);
    CHECK(memcmp(slm_generator_feed(&alone[2], t), slm_generator_batch_logits(&batch, 0),
                 cfg.vocab_size * sizeof(float)) == 0);
    for (int s = 0; s < N; s++) slm_generator_free(&alone[s]);
    slm_generator_batch_free(&batch);
    slm_workers_free(&w);
    slm_model_free(&m);
}

/* The same for arch's default config (window: 0 for the default's). */
static void batch_of_n_gives_each_sample_its_own_bits(const Architecture *arch, const Ablation *ab, uint64_t seed,
                                                      int threads, int N, int window, Precision p) {
    ModelConfig cfg = slm_model_config_default(arch, 300);
    if (window) cfg.window = window;
    batch_of_config_gives_each_sample_its_own_bits(cfg, ab, seed, threads, N, p);
}

#endif
