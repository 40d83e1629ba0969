/* Fuzzes the model file readers with any bytes as a .safetensors file.
 *
 * The generic reader refuses the file with a message or describes tensors
 * that lie inside it, which are then read. The storylm loader refuses it or
 * gives a model that every command can run: a forward and backward pass,
 * incremental generation with sampling (whatever numbers the weights hold).
 * The same bytes are also tried as the optimizer state of a tiny model, the
 * one fuzz/corpus/fuzz_safetensors/tiny_attention.adam.safetensors holds. */
#include "fuzz_util.h"

#include <math.h>
#include <string.h>

#include "storylm/checkpoint.h"
#include "storylm/generate.h"
#include "storylm/head_set.h"
#include "storylm/model.h"
#include "storylm/safetensors.h"
#include "storylm/sample.h"

/* The generic reader: every tensor inside the data area, F32 ones read. */
static void read_generic(const char *path) {
    SafeTensorsFile st;
    Error e = {0};
    if (slm_safetensors_open(&st, path, &e) != 0) {
        FUZZ_ASSERT(e.message[0] != '\0');
        return;
    }
    for (int i = 0; i < st.n_tensors; i++) {
        const SafeTensorInfo *t = &st.tensors[i];
        FUZZ_ASSERT(t->begin <= t->end && t->end <= st.data_size && st.data_start + st.data_size == st.file_size);
        if (strcmp(t->dtype, "F32") != 0) continue;
        float *x = malloc((size_t)(t->end - t->begin) + 1);
        FUZZ_ASSERT(x != NULL);
        FUZZ_ASSERT(slm_safetensors_read_f32(&st, t, x, &e) == 0);
        free(x);
    }
    slm_safetensors_close(&st);
}

/* Generation as `storylm generate` runs it: [EOS], then sampled tokens. */
static void generate_some(const Model *m, int eos_id) {
    Generator g;
    Sampler s;
    Error e = {0};
    Ablation ab = {0};
    if (m->cfg.arch->heads_per_layer(&m->cfg) > 0) slm_head_set_add(&ab.heads, 0); /* the ablated path too */
    FUZZ_ASSERT(slm_generator_init(&g, m, &ab, &e) == 0);
    FUZZ_ASSERT(slm_sampler_init(&s, m->cfg.vocab_size, 0.8f, 0, 0.9f, 1, &e) == 0);
    const float *logits = slm_generator_feed(&g, eos_id);
    for (int i = 0; i < 4; i++) {
        int next = slm_sampler_sample(&s, logits);
        FUZZ_ASSERT(next >= 0 && next < m->cfg.vocab_size);
        logits = slm_generator_feed(&g, next);
    }
    slm_sampler_free(&s);
    slm_generator_free(&g);
}

/* One story of every id in turn through slm_model_forward and slm_model_backward. */
static void forward_backward(const Model *m, int eos_id) {
    enum { N = 6 };
    int32_t story[N] = {eos_id};
    for (int i = 1; i < N; i++) story[i] = (int32_t)(i % m->cfg.vocab_size);
    Batch b;
    Activations a;
    Error e = {0};
    FUZZ_ASSERT(slm_batch_init(&b, N, 1, &e) == 0 && slm_batch_add(&b, story, N, &e) == 0);
    if (slm_activations_init(&a, &m->cfg, N, &e) == 0) {
        float loss, *grads = calloc(m->n_params, sizeof(float));
        FUZZ_ASSERT(grads != NULL);
        /* finite weights can still overflow the logits (1e38 biases): the pass
         * then refuses with a message naming the position, never a NaN loss */
        if (slm_model_forward(m, &a, &b, NULL, &loss, &e) == 0) {
            FUZZ_ASSERT(isfinite(loss));
            slm_model_backward(m, &a, &b, grads);
        } else {
            FUZZ_ASSERT(strstr(e.message, "position") != NULL);
        }
        free(grads);
        slm_activations_free(&a);
    }
    slm_batch_free(&b);
}

static void load_storylm(const char *path) {
    Model m;
    char *vocab;
    Metadata meta;
    Error e = {0};
    if (slm_checkpoint_load_model(path, &m, &vocab, &meta, &e) != 0) {
        FUZZ_ASSERT(strstr(e.message, path) != NULL); /* refused, naming the file */
        return;
    }
    Tokenizer t;
    if (slm_tokenizer_from_text(&t, vocab, strlen(vocab), m.cfg.vocab_size, &e) == 0) {
        generate_some(&m, t.eos_id);
        forward_backward(&m, t.eos_id);
        slm_tokenizer_free(&t);
    }
    slm_model_free(&m);
    free(vocab);
    slm_metadata_free(&meta);
}

/* The sizes of the tiny seed models. */
static void load_as_adam(const char *path) {
    static Model tiny;
    static int made;
    if (!made) {
        ModelConfig c = {.arch = slm_arch_default(),
                         .vocab_size = 2,
                         .row_dim = 2,
                         .n_heads = 2,
                         .key_dim = 1,
                         .value_dim = 1,
                         .window = 2,
                         .hidden_dim = 2,
                         .context = 8};
        if (slm_model_init(&tiny, &c, NULL)) abort();
        made = 1;
    }
    TrainingState s;
    Error e = {0};
    if (slm_checkpoint_load_adam(path, &tiny, &s, &e) == 0) {
        FUZZ_ASSERT(s.n_params == tiny.n_params && s.adam_m && s.adam_v);
        slm_training_state_free(&s);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *path = fuzz_file(data, size);
    read_generic(path);
    load_storylm(path);
    load_as_adam(path);
    return 0;
}
