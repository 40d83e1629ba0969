/* The activation cache: one story at a time through the network, every
 * activation copied into packed tensors (layouts in probe_cache.h). */
#include <stdlib.h>
#include <string.h>

#include "storylm/hooks.h"
#include "storylm/probe_cache.h"
#include "storylm/probes.h"

void slm_activation_cache_free(ActivationCache *c) {
    float *all[] = {c->tokens,    c->story_starts, c->rows,   c->queries, c->keys, c->values,
                    c->attention, c->head_outputs, c->hidden, c->logits,  c->loss};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) free(all[i]);
    for (int i = 0; i < c->n_hooks; i++) free(c->hook_name[i]), free(c->hook_data[i]);
    *c = (ActivationCache){0};
}

/* A transformer's list: tokens, story_starts, the hooks, loss. */
static int hook_tensors(const ActivationCache *c, SafeTensorOut *t) {
    int n = 0;
    t[n++] = (SafeTensorOut){"tokens", 1, {c->n_positions}, c->tokens};
    t[n++] = (SafeTensorOut){"story_starts", 1, {c->n_stories + 1}, c->story_starts};
    for (int i = 0; i < c->n_hooks; i++) {
        t[n] = (SafeTensorOut){c->hook_name[i], c->hook_ndim[i], {0}, c->hook_data[i]};
        memcpy(t[n++].shape, c->hook_shape[i], sizeof c->hook_shape[i]);
    }
    t[n++] = (SafeTensorOut){"loss", 1, {c->n_positions}, c->loss};
    return n;
}

const char *slm_activation_cache_summary(const ActivationCache *c) {
    return c->n_hooks ? "tokens story_starts, every hook point under TransformerLens's hook name, loss: see storylm "
                        "cache --help and docs/transformer.md"
                      : "tokens rows queries keys values attention head_outputs hidden logits loss story_starts: see "
                        "storylm cache --help";
}

int slm_activation_cache_tensors(const ActivationCache *c, SafeTensorOut *t) {
    if (c->n_hooks) return hook_tensors(c, t);
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
    return CACHE_TENSORS;
}

int slm_activation_cache_write(const ActivationCache *c, const char *path, const Metadata *metadata, Error *e) {
    SafeTensorOut t[CACHE_MAX_TENSORS];
    int n = slm_activation_cache_tensors(c, t);
    return slm_safetensors_write_f32(path, t, n, metadata, e);
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

/* ---- any other model: every hook point, by its name ------------------------------ */

/* Where one story's hooks go: positions [at, at + T) of c. */
typedef struct HookSink {
    ActivationCache *c;
    ForwardHooks *hooks;
    int at, T;
} HookSink;

/* A point of shape (H, T, T): a query's row over the keys (the scores, the pattern, the distance scores). */
static int by_query(const char *name) {
    return strstr(name, "hook_pattern") != NULL || strstr(name, "hook_distance_score") != NULL ||
           strstr(name, "hook_attn_scores") != NULL;
}

/* Hook i of c for a point of shape (ndim) in a story of T positions: made
 * on first sight, [N, ...] with N = all positions, or [H, N, longest] for a
 * pattern; -1 when out of memory (the hooks' error set). */
static int sink_slot(HookSink *k, const char *name, int ndim, const int *shape) {
    ActivationCache *c = k->c;
    for (int i = 0; i < c->n_hooks; i++)
        if (strcmp(c->hook_name[i], name) == 0) return i;
    int i = c->n_hooks, pattern = by_query(name); /* (H, T, T) */
    if (i == CACHE_MAX_HOOKS) return FAIL(&k->hooks->error, NULL, "more hook points than the cache holds");
    size_t n = 1;
    for (int d = 0; d < ndim; d++) {
        c->hook_shape[i][d] = pattern ? (d == 1   ? c->n_positions
                                         : d == 2 ? c->longest
                                                  : shape[0])
                                      : (d == 0 ? c->n_positions : shape[d]);
        n *= (size_t)c->hook_shape[i][d];
    }
    c->hook_ndim[i] = ndim;
    c->hook_name[i] = xmalloc(strlen(name) + 1, &k->hooks->error);
    c->hook_data[i] = c->hook_name[i] ? xcalloc(n ? n : 1, sizeof(float), &k->hooks->error) : NULL;
    if (c->hook_name[i]) strcpy(c->hook_name[i], name), c->n_hooks++;
    return c->hook_data[i] ? i : -1;
}

/* HookFn: the story's numbers of one point into their place in the cache. */
static int sink_hook(void *ctx, const char *name, float *data, int ndim, const int *shape, int writable) {
    (void)writable;
    HookSink *k = ctx;
    ActivationCache *c = k->c;
    int i = sink_slot(k, name, ndim, shape);
    if (i < 0) return k->hooks->failed = 1, -1;
    float *out = c->hook_data[i];
    size_t N = (size_t)c->n_positions, L = (size_t)c->longest, row = 1;
    if (by_query(name)) { /* (H, T, T): rows of its [H, N, L] */
        for (int h = 0; h < shape[0]; h++)
            for (int t = 0; t < k->T; t++)
                memcpy(out + ((size_t)h * N + k->at + t) * L, data + ((size_t)h * k->T + t) * k->T,
                       (size_t)k->T * sizeof(float));
        return 0;
    }
    for (int d = 1; d < ndim; d++) row *= (size_t)shape[d];
    memcpy(out + (size_t)k->at * row, data, (size_t)k->T * row * sizeof(float));
    return 0;
}

/* Each story through the network with every hook point sunk into out. */
static int cache_hooks(const Model *m, const int32_t *ids, const int *starts, int n, const Ablation *ablation,
                       ActivationCache *out, Error *e) {
    ProbeRunner r = {0};
    ForwardHooks hooks = {.fn = sink_hook};
    HookSink sink = {.c = out, .hooks = &hooks};
    hooks.ctx = &sink;
    size_t N = (size_t)out->n_positions;
    out->tokens = xcalloc(N + 1, sizeof(float), e);
    out->loss = out->tokens ? xcalloc(N + 1, sizeof(float), e) : NULL;
    out->story_starts = out->loss ? xcalloc((size_t)n + 1, sizeof(float), e) : NULL;
    int rc = out->story_starts ? slm_probe_runner_init(&r, m, out->longest, e) : -1;
    for (int i = 0; !rc && i < n; i++) {
        sink.at = starts[i], sink.T = starts[i + 1] - starts[i];
        r.acts.hooks = &hooks;
        rc = slm_probe_run(&r, ids + starts[i], sink.T, ablation, e);
        for (int p = 0; !rc && p < sink.T; p++) {
            out->tokens[sink.at + p] = (float)ids[sink.at + p];
            out->loss[sink.at + p] = r.acts.target[p] >= 0 ? r.acts.loss[p] : 0.0f;
        }
    }
    for (int i = 0; !rc && i <= n; i++) out->story_starts[i] = (float)starts[i];
    slm_hooks_free(&hooks);
    slm_probe_runner_free(&r);
    return rc;
}

int slm_probe_cache(const Model *m, const int32_t *ids, const int *starts, int n, const Ablation *ablation,
                    ActivationCache *out, Error *e) {
    const ModelConfig *c = &m->cfg;
    *out = (ActivationCache){0};
    if (slm_probe_need_heads(m, "cache", e)) return -1;
    int longest = 0;
    for (int i = 0; i < n; i++)
        if (starts[i + 1] - starts[i] > longest) longest = starts[i + 1] - starts[i];
    if (n < 1 || longest < 1) return FAIL(e, "give a text or stories", "nothing to run: no story has a token");
    /* the chapter's named tensors hold one layer of heads read by the tanh readout; every other model
     * (several layers, a residual stream) writes each hook point it declares */
    if (c->arch->readout != READOUT_TANH || slm_model_layers(c) > 1) {
        *out = (ActivationCache){.n_stories = n, .n_positions = starts[n], .longest = longest};
        int rc = cache_hooks(m, ids, starts, n, ablation, out, e);
        if (rc) slm_activation_cache_free(out);
        return rc;
    }
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
