/* A 20-step training of the attention network, window8 and the transformer under --kernels portable, for
 * tests/CMakeLists.txt's portable_march test: the same source linked with the model code built for this CPU
 * (-march=native), for x86-64-v3 (AVX2 and FMA) and for baseline x86-64, whose outputs must be equal. Prints one line
 * per architecture: its name and the FNV-1a 64 of the parameters' bytes after the steps. */
#include <stdio.h>
#include <stdlib.h>

#include "archs.h"
#include "storylm/adam.h"
#include "storylm/model.h"
#include "storylm/rng.h"

static uint64_t fnv1a(const void *p, size_t n) {
    const unsigned char *b = p;
    uint64_t h = 14695981039346656037ull;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 1099511628211ull;
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
    printf("%s %016llx loss %.9g\n", arch->name, (unsigned long long)fnv1a(m.params, m.n_params * sizeof(float)),
           a.mean_loss);
    free(grads), slm_adam_free(&opt), slm_batch_free(&b), slm_activations_free(&a), slm_model_free(&m);
    return 0;
}

int main(int argc, char **argv) {
    slm_model_threads_setup(argc > 1 ? atoi(argv[1]) : 1);
    return train(&slm_attention_arch) || train(&slm_window8_arch) || train(&slm_transformer_arch);
}
