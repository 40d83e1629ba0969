/* The activation cache: one story at a time through the network, every
 * activation copied into packed tensors (layouts in probe_cache.h). */
#include <stdlib.h>
#include <string.h>

#include "storylm/probe_cache.h"
#include "storylm/probes.h"

void slm_activation_cache_free(ActivationCache *c) {
    float *all[] = {c->tokens,    c->story_starts, c->rows,   c->queries, c->keys, c->values,
                    c->attention, c->head_outputs, c->hidden, c->logits,  c->loss};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) free(all[i]);
    *c = (ActivationCache){0};
}

void slm_activation_cache_tensors(const ActivationCache *c, SafeTensorOut *t) {
    int N = c->n_positions, H = c->n_heads;
    SafeTensorOut list[CACHE_TENSORS] = {
        {"tokens", 1, {N}, c->tokens},
        {"story_starts", 1, {c->n_stories + 1}, c->story_starts},
        {"rows", 2, {N, c->row_dim}, c->rows},
        {"queries", 3, {N, H, c->key_dim}, c->queries},
        {"keys", 3, {N, H, c->key_dim}, c->keys},
        {"values", 3, {N, H, c->value_dim}, c->values},
        {"attention", 3, {H, N, c->max_distance}, c->attention},
        {"head_outputs", 3, {N, H, c->value_dim}, c->head_outputs},
        {"hidden", 2, {N, c->hidden_dim}, c->hidden},
        {"logits", 2, {N, c->vocab_size}, c->logits},
        {"loss", 1, {N}, c->loss},
    };
    memcpy(t, list, sizeof list);
}

int slm_activation_cache_write(const ActivationCache *c, const char *path, const Metadata *metadata, Error *e) {
    SafeTensorOut t[CACHE_TENSORS];
    slm_activation_cache_tensors(c, t);
    return slm_safetensors_write_f32(path, t, CACHE_TENSORS, metadata, e);
}

static int cache_alloc(ActivationCache *c, Error *e) {
    size_t N = (size_t)c->n_positions, H = (size_t)c->n_heads;
    size_t sizes[CACHE_TENSORS] = {N,
                                   (size_t)c->n_stories + 1,
                                   N * c->row_dim,
                                   N * H * c->key_dim,
                                   N * H * c->key_dim,
                                   N * H * c->value_dim,
                                   H * N * c->max_distance,
                                   N * H * c->value_dim,
                                   N * c->hidden_dim,
                                   N * c->vocab_size,
                                   N};
    float **ptrs[CACHE_TENSORS] = {&c->tokens,    &c->story_starts, &c->rows,   &c->queries, &c->keys, &c->values,
                                   &c->attention, &c->head_outputs, &c->hidden, &c->logits,  &c->loss};
    for (int i = 0; i < CACHE_TENSORS; i++)
        if (!(*ptrs[i] = xcalloc(sizes[i] ? sizes[i] : 1, sizeof(float), e))) return -1;
    return 0;
}

/* Story positions [at, at + T) of c from the run in a. */
static void cache_story(ActivationCache *c, const Activations *a, const int32_t *ids, int at) {
    int T = a->n_positions, H = c->n_heads, D = c->row_dim, kd = c->key_dim, vd = c->value_dim;
    int Z = slm_model_hidden_input_dim(&a->cfg), K = c->max_distance;
    size_t N = (size_t)c->n_positions;
    for (int p = 0; p < T; p++) {
        size_t g = (size_t)at + p;
        c->tokens[g] = (float)ids[p];
        c->loss[g] = a->target[p] >= 0 ? a->loss[p] : 0.0f;
        memcpy(c->rows + g * D, a->z + (size_t)p * Z, (size_t)D * sizeof(float));
        memcpy(c->hidden + g * c->hidden_dim, a->hidden + (size_t)p * c->hidden_dim,
               (size_t)c->hidden_dim * sizeof(float));
        memcpy(c->logits + g * c->vocab_size, a->logits + (size_t)p * c->vocab_size,
               (size_t)c->vocab_size * sizeof(float));
        for (int h = 0; h < H; h++) {
            slm_activations_qkv(a, h, p, c->queries + (g * H + h) * kd, c->keys + (g * H + h) * kd,
                                c->values + (g * H + h) * vd);
            memcpy(c->head_outputs + (g * H + h) * vd, slm_activations_head_output(a, h, p),
                   (size_t)vd * sizeof(float));
            int first, n;
            const float *w = slm_activations_attention(a, h, p, &first, &n);
            float *row = c->attention + ((size_t)h * N + g) * K;
            for (int j = 0; j < n; j++) row[p - (first + j)] = w[j];
        }
    }
}

int slm_probe_cache(const Model *m, const int32_t *ids, const int *starts, int n, const Ablation *ablation,
                    ActivationCache *out, Error *e) {
    const ModelConfig *c = &m->cfg;
    *out = (ActivationCache){0};
    if (slm_probe_need_attention(m, "cache", e)) return -1;
    int longest = 0;
    for (int i = 0; i < n; i++)
        if (starts[i + 1] - starts[i] > longest) longest = starts[i + 1] - starts[i];
    if (n < 1 || longest < 1) return FAIL(e, "give a text or stories", "nothing to run: no story has a token");
    *out = (ActivationCache){.n_stories = n,
                             .n_positions = starts[n],
                             .max_distance = longest < c->window ? longest : c->window,
                             .n_heads = c->n_heads,
                             .row_dim = c->row_dim,
                             .key_dim = c->key_dim,
                             .value_dim = c->value_dim,
                             .hidden_dim = c->hidden_dim,
                             .vocab_size = c->vocab_size};
    ProbeRunner r = {0};
    int rc = cache_alloc(out, e) || slm_probe_runner_init(&r, m, longest, e);
    for (int i = 0; !rc && i < n; i++) {
        rc = slm_probe_run(&r, ids + starts[i], starts[i + 1] - starts[i], ablation, e);
        if (!rc) cache_story(out, &r.acts, ids + starts[i], starts[i]);
    }
    for (int i = 0; !rc && i <= n; i++) out->story_starts[i] = (float)starts[i];
    slm_probe_runner_free(&r);
    if (rc) slm_activation_cache_free(out);
    return rc;
}
