/* Activations: see include/storylm/activations.h (the layouts are in
 * model_types.h). */
#include "storylm/activations.h"

#include <stdlib.h>
#include <string.h>

#include "storylm/attention.h"
#include "storylm/layers.h"
#include "storylm/model_params.h"
#include "storylm/score.h"
#include "storylm/transformer.h"

/* Layer l's own buffers (qkv, att, packed weights, kv, dist, lse, variant);
 * the backward's scratch of layer 0's attention is shared by every layer. */
static int layer_activations_init(Activations *a, const ModelConfig *cfg, int l, Error *e) {
    size_t QKV = (size_t)slm_qkv_rows(cfg), N = (size_t)a->max_positions;
    size_t Din = (size_t)cfg->row_dim + (l > 0 ? (size_t)cfg->n_heads * cfg->value_dim : 0);
    size_t LD = (size_t)slm_qkv_stride(a->max_positions),
           HS = (size_t)cfg->n_heads * slm_attention_row_stride(cfg->window);
    size_t KV = (size_t)cfg->n_heads * LD * (cfg->key_dim + cfg->value_dim);
    LayerActivations *la = &a->layer[l];
    AttentionScratch *s = &la->scratch;
    int ok = (la->qkv = slm_alloc_floats(QKV * LD, e)) && (la->att = slm_alloc_floats(HS * N, e)) &&
             (la->qkv_w = slm_alloc_floats(QKV * Din, e)) && (s->kv = slm_alloc_floats(KV, e)) &&
             (s->dist = slm_alloc_floats(HS, e)) && (s->lse = slm_alloc_floats((size_t)cfg->n_heads * LD, e)) &&
             (s->variant = slm_variant_scratch_new(cfg, a->max_positions, (int)LD, e));
    if (!ok) return -1;
    s->head_base = l * cfg->n_heads;
    if (l == 0)
        return (a->d_qkv = slm_alloc_floats(QKV * LD, e)) && (s->d_kv = slm_alloc_floats(KV, e)) &&
                       (s->d_dist = slm_alloc_floats(HS, e)) && (s->w = slm_alloc_floats(2 * HS, e)) &&
                       (s->ds = slm_alloc_floats(2 * HS, e)) && (s->dw = slm_alloc_floats(HS, e))
                   ? 0
                   : -1;
    const AttentionScratch *first = &a->layer[0].scratch;
    s->d_kv = first->d_kv, s->d_dist = first->d_dist, s->w = first->w, s->ds = first->ds, s->dw = first->dw;
    return 0;
}

int slm_activations_init(Activations *a, const ModelConfig *cfg, int max_positions, Error *e) {
    if (cfg->arch == ARCH_TRANSFORMER) return slm_transformer_activations_init(a, cfg, max_positions, e);
    *a = (Activations){.cfg = *cfg, .max_positions = max_positions};
    if (max_positions < 1) return FAIL(e, NULL, "activations need at least one position (got %d)", max_positions);
    if (cfg->key_dim > STORYLM_MAX_HEAD_DIM || cfg->value_dim > STORYLM_MAX_HEAD_DIM ||
        cfg->n_heads > STORYLM_MAX_HEADS)
        return FAIL(e, NULL, "heads of %d query and %d value numbers (%d heads) are more than the passes take",
                    cfg->key_dim, cfg->value_dim, cfg->n_heads);
    size_t N = (size_t)max_positions, Z = (size_t)slm_model_hidden_input_dim(cfg), Hd = (size_t)cfg->hidden_dim;
    int ok = (a->z = slm_alloc_floats(N * Z, e)) && (a->d_z = slm_alloc_floats(N * Z, e)) &&
             (a->hidden = slm_alloc_floats(N * Hd, e)) && (a->d_hidden = slm_alloc_floats(N * Hd, e)) &&
             (a->logits = slm_alloc_floats(N * cfg->vocab_size, e)) && (a->lse = slm_alloc_floats(N, e)) &&
             (a->loss = slm_alloc_floats(N, e)) && (a->target = xmalloc(N * sizeof(int32_t), e)) &&
             (a->correct = xmalloc(N, e)) && (a->first_key = xmalloc(N * sizeof(int), e)) &&
             (a->ones = slm_alloc_floats(N, e)) && (a->drop_keys = xmalloc(N * sizeof(uint64_t), e));
    int layers = slm_model_layers(cfg);
    if (ok && cfg->arch == ARCH_ATTENTION) {
        size_t Din = (size_t)cfg->row_dim + (layers > 1 ? (size_t)cfg->n_heads * cfg->value_dim : 0);
        ok = (a->d_qkv_w = slm_alloc_floats((size_t)slm_qkv_rows(cfg) * Din, e)) != NULL;
        for (int l = 0; ok && l < layers; l++) ok = layer_activations_init(a, cfg, l, e) == 0;
        if (ok && layers > 1) ok = (a->z_kept = slm_alloc_floats(N * Z, e)) != NULL;
    }
    if (!ok) {
        slm_activations_free(a);
        return -1;
    }
    for (size_t p = 0; p < N; p++) a->ones[p] = 1.0f;
    return 0;
}

void slm_activations_free(Activations *a) {
    if (a->tf) {
        slm_transformer_activations_free(a);
        return;
    }
    for (int l = 0; l < STORYLM_MAX_LAYERS; l++) {
        LayerActivations *la = &a->layer[l];
        slm_variant_scratch_free(la->scratch.variant);
        free(la->qkv);
        free(la->att);
        free(la->qkv_w);
        free(la->scratch.kv);
        free(la->scratch.dist);
        free(la->scratch.lse);
    }
    const AttentionScratch *s = &a->layer[0].scratch; /* the shared backward scratch */
    void *bufs[] = {a->z,      a->d_z,     a->hidden,    a->d_hidden,  a->logits, a->lse,     a->loss,
                    a->target, a->correct, a->first_key, a->ones,      a->d_qkv,  a->d_qkv_w, s->d_kv,
                    s->d_dist, s->w,       s->ds,        a->drop_keys, s->dw,     a->z_kept};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) free(bufs[i]);
    *a = (Activations){0};
}

/* Layer l's attention weights (H, N, S) and q, k, v (QKV, ld): the attention
 * network's layer, or the transformer's block. */
static const float *layer_att(const Activations *a, int l) { return a->tf ? a->tf->layer[l].att : a->layer[l].att; }
static const float *layer_qkv(const Activations *a, int l) { return a->tf ? a->tf->layer[l].qkv : a->layer[l].qkv; }

const float *slm_activations_attention(const Activations *a, int g, int p, int *first_key, int *n_keys) {
    int S = slm_attention_row_stride(a->cfg.window), H = a->cfg.n_heads;
    if (first_key) *first_key = a->first_key[p];
    if (n_keys) *n_keys = p - a->first_key[p] + 1;
    return layer_att(a, g / H) + ((size_t)(g % H) * a->n_positions + p) * S + a->first_key[p] % 8;
}

void slm_activations_qkv(const Activations *a, int g, int p, float *query, float *key, float *value) {
    const ModelConfig *c = &a->cfg;
    size_t N = (size_t)a->qkv_ld, kd = (size_t)c->key_dim, vd = (size_t)c->value_dim;
    int h = g % c->n_heads;
    const float *qkv = layer_qkv(a, g / c->n_heads);
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
    if (a->tf) /* the transformer's hook_z, before W_O */
        return a->tf->layer[g / c->n_heads].z + (size_t)p * c->n_heads * c->value_dim +
               (size_t)(g % c->n_heads) * c->value_dim;
    return a->z + (size_t)p * slm_model_hidden_input_dim(c) + c->row_dim + (size_t)g * c->value_dim;
}
