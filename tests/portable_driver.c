/* A 20-step training of the attention network, window8 and the transformer under --kernels portable, for
 * tests/CMakeLists.txt's portable_march test: the same source linked with the model code built for this CPU
 * (-march=native), for x86-64-v3 (AVX2 and FMA) and for baseline x86-64, whose outputs must be equal. Prints one line
 * per architecture: its name, the FNV-1a 64 of the parameters' bytes after the steps, and of a generation from the
 * trained model on the portable kernels (each step's logits, tokens and log-probabilities). */
#include <stdio.h>
#include <stdlib.h>

#include "archs.h"
#include "storylm/adam.h"
#include "storylm/generate.h"
#include "storylm/model.h"
#include "storylm/rng.h"
#include "storylm/sample.h"

static uint64_t fnv1a_from(uint64_t h, const void *p, size_t n) {
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 1099511628211ull;
    return h;
}

static uint64_t fnv1a(const void *p, size_t n) { return fnv1a_from(14695981039346656037ull, p, n); }

/* 40 tokens of 2 samples fed together on the portable generator of m (2 samples: the attention network's shared
 * token table too), sample 0 drawn with top-p 0.9 (the kept exponentials' path), sample 1 from the whole softmax:
 * the FNV-1a of every step's logits (V each), drawn tokens and their log-probabilities; 0 on an error. */
static uint64_t generation_hash(const Model *m) {
    GeneratorBatch g;
    Sampler s[2];
    Error e;
    int V = m->cfg.vocab_size, which[2] = {0, 1};
    int32_t tokens[2] = {1, 1};
    uint64_t h = 14695981039346656037ull;
    if (slm_generator_batch_init_at(&g, KERNELS_PORTABLE, m, NULL, 2, &e)) return fprintf(stderr, "%s\n", e.message), 0;
    if (slm_sampler_init(&s[0], V, 1.0f, 0, 0.9f, 7, &e) || slm_sampler_init(&s[1], V, 0.8f, 0, 1.0f, 8, &e))
        return fprintf(stderr, "%s\n", e.message), 0;
    for (int t = 0; t < 40; t++) {
        slm_generator_batch_feed(&g, which, tokens, 2);
        for (int j = 0; j < 2; j++) {
            const float *logits = slm_generator_batch_logits(&g, j);
            s[j].kernels = KERNELS_PORTABLE;
            tokens[j] = slm_sampler_sample(&s[j], logits);
            int32_t top[3];
            float lp[4];
            lp[3] = slm_sampler_logprobs(&s[j], logits, tokens[j], 3, top, lp);
            h = fnv1a_from(h, logits, (size_t)V * sizeof(float));
            h = fnv1a_from(fnv1a_from(h, &tokens[j], sizeof tokens[j]), lp, sizeof lp);
        }
    }
    slm_sampler_free(&s[0]), slm_sampler_free(&s[1]), slm_generator_batch_free(&g);
    return h;
}

/* The real sizes, 3 stories of random ids (seeded), 20 steps of Adam. */
static int train(const Architecture *arch) {
    ModelConfig cfg = slm_model_config_default(arch, 2000);
    Model m;
    Activations a;
    Batch b;
    Adam opt;
    Error e;
    Rng r;
    slm_rng_seed(&r, 5);
    if (slm_model_init(&m, &cfg, &e) || slm_batch_init(&b, 1024, 4, &e)) return fprintf(stderr, "%s\n", e.message), 1;
    slm_model_randomize(&m, 3);
    int32_t ids[300];
    for (int s = 0; s < 3; s++) {
        int len = 120 + 90 * s;
        for (int t = 0; t < len; t++) ids[t] = t ? (int32_t)slm_rng_below(&r, 2000) : 1;
        if (slm_batch_add(&b, ids, len, &e)) return fprintf(stderr, "%s\n", e.message), 1;
    }
    if (slm_activations_init(&a, &cfg, b.n_tokens, &e) || slm_adam_init(&opt, m.n_params, &e))
        return fprintf(stderr, "%s\n", e.message), 1;
    a.kernels = KERNELS_PORTABLE;
    float *grads = calloc(m.n_params, sizeof(float));
    for (int step = 0; step < 20; step++) {
        slm_model_zero_grad(&m, grads);
        if (slm_model_loss_and_grad(&m, &a, &b, NULL, 1.0f / 3, grads, &e))
            return fprintf(stderr, "%s\n", e.message), 1;
        slm_adam_update(&opt, m.params, grads, 1e-3f);
    }
    uint64_t generated = generation_hash(&m);
    if (!generated) return 1;
    printf("%s %016llx loss %.9g generate %016llx\n", arch->name,
           (unsigned long long)fnv1a(m.params, m.n_params * sizeof(float)), a.mean_loss, (unsigned long long)generated);
    free(grads), slm_adam_free(&opt), slm_batch_free(&b), slm_activations_free(&a), slm_model_free(&m);
    return 0;
}

int main(int argc, char **argv) {
    slm_model_threads_setup(argc > 1 ? atoi(argv[1]) : 1);
    return train(&slm_attention_arch) || train(&slm_window8_arch) || train(&slm_transformer_arch);
}
