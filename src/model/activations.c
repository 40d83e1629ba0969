/* Activations: see include/storylm/activations.h (the layouts are in
 * model_types.h). Their buffers are the architecture's (arch.h). */
#include "storylm/activations.h"

#include "storylm/arch.h"
#include "storylm/attention.h"

int slm_activations_init(Activations *a, const ModelConfig *cfg, int max_positions, Error *e) {
    return cfg->arch->activations_init(a, cfg, max_positions, e);
}

void slm_activations_free(Activations *a) {
    if (a->cfg.arch) a->cfg.arch->activations_free(a); /* a zeroed one holds nothing */
}

const float *slm_activations_attention(const Activations *a, int g, int p, int *first_key, int *n_keys) {
    int S = slm_attention_row_stride(a->cfg.window), H = a->cfg.n_heads;
    if (first_key) *first_key = a->first_key[p];
    if (n_keys) *n_keys = p - a->first_key[p] + 1;
    return a->cfg.arch->layer_attention(a, g / H) + ((size_t)(g % H) * a->n_positions + p) * S + a->first_key[p] % 8;
}

void slm_activations_qkv(const Activations *a, int g, int p, float *query, float *key, float *value) {
    const ModelConfig *c = &a->cfg;
    size_t N = (size_t)a->qkv_ld, kd = (size_t)c->key_dim, vd = (size_t)c->value_dim;
    int h = g % c->n_heads;
    const float *qkv = c->arch->layer_qkv(a, g / c->n_heads);
    const float *q = qkv + h * kd * N, *k = qkv + (c->n_heads + h) * kd * N;
    const float *v = qkv + (2 * c->n_heads * kd + h * vd) * N;
    for (size_t i = 0; i < kd; i++) {
        if (query) query[i] = q[i * N + p];
        if (key) key[i] = k[i * N + p];
    }
    for (size_t i = 0; value && i < vd; i++) value[i] = v[i * N + p];
}

const float *slm_activations_head_output(const Activations *a, int g, int p) {
    const ModelConfig *c = &a->cfg;
    return c->arch->head_output(a, g / c->n_heads, p, g % c->n_heads);
}
