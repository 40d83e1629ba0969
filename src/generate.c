/* Incremental inference: see include/storylm/generate.h. The arithmetic is
 * model_forward's for one position, so the two agree to float rounding. */
#include "storylm/generate.h"

#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

int generator_init(Generator *g, const Model *m, const Ablation *ablation, Error *e) {
    const ModelConfig *c = &m->cfg;
    *g = (Generator){.model = m};
    if (ablation) g->ablation = *ablation;
    size_t H = c->n_heads, W = c->window;
    g->keys = xcalloc(H * W * c->key_dim, sizeof(float), e);
    g->values = g->keys ? xcalloc(H * W * c->value_dim, sizeof(float), e) : NULL;
    g->recent = g->values ? xcalloc(c->context, sizeof(int32_t), e) : NULL;
    g->row = g->recent ? xcalloc(c->row_dim, sizeof(float), e) : NULL;
    g->z = g->row ? xcalloc(model_hidden_input_dim(c), sizeof(float), e) : NULL;
    g->query = g->z ? xcalloc(H * c->key_dim, sizeof(float), e) : NULL;
    g->scores = g->query ? xcalloc(W, sizeof(float), e) : NULL;
    g->hidden = g->scores ? xcalloc(c->hidden_dim, sizeof(float), e) : NULL;
    g->logits = g->hidden ? xcalloc(c->vocab_size, sizeof(float), e) : NULL;
    if (!g->logits) {
        generator_free(g);
        return -1;
    }
    return 0;
}

void generator_free(Generator *g) {
    free(g->keys);
    free(g->values);
    free(g->recent);
    free(g->row);
    free(g->z);
    free(g->query);
    free(g->scores);
    free(g->hidden);
    free(g->logits);
    *g = (Generator){0};
}

void generator_reset(Generator *g) { g->pos = 0; }

/* x (D) @ w (D, n) -> y (n): one head's query, key or value. */
static void row_times(const float *x, const float *w, int D, int n, float *y) {
    for (int j = 0; j < n; j++) y[j] = 0;
    for (int i = 0; i < D; i++) {
        float xi = x[i];
        const float *wi = w + (size_t)i * n;
        for (int j = 0; j < n; j++) y[j] += xi * wi[j];
    }
}

/* Head h at the newest position: scores over the cached keys (oldest first),
 * softmax, blend of the cached values into out (vd). */
static void head_attend(Generator *g, int h, float *out) {
    const ModelConfig *c = &g->model->cfg;
    int W = c->window, kd = c->key_dim, vd = c->value_dim;
    int t = g->pos, n = t + 1 < W ? t + 1 : W;
    const float *q = g->query + h * kd, *dist = g->model->distance + (size_t)h * W;
    float scale = 1.0f / sqrtf((float)kd), max = -INFINITY;
    for (int j = 0; j < n; j++) { /* j = distance back */
        const float *k = g->keys + ((size_t)h * W + (size_t)((t - j) % W)) * kd;
        float s = 0;
        for (int i = 0; i < kd; i++) s += q[i] * k[i];
        s = s * scale + dist[j];
        g->scores[j] = s;
        max = s > max ? s : max;
    }
    float sum = 0;
    for (int j = 0; j < n; j++) sum += g->scores[j] = expf(g->scores[j] - max);
    for (int i = 0; i < vd; i++) out[i] = 0;
    for (int j = 0; j < n; j++) {
        const float *v = g->values + ((size_t)h * W + (size_t)((t - j) % W)) * vd;
        float a = g->scores[j] / sum;
        for (int i = 0; i < vd; i++) out[i] += a * v[i];
    }
}

/* The row and the 8 heads' outputs of the newest token -> z (160). */
static void attention_z(Generator *g) {
    const Model *m = g->model;
    const ModelConfig *c = &m->cfg;
    int D = c->row_dim, kd = c->key_dim, vd = c->value_dim, W = c->window, slot = g->pos % W;
    memcpy(g->z, g->row, D * sizeof(float));
    for (int h = 0; h < c->n_heads; h++) {
        row_times(g->row, m->query + (size_t)h * D * kd, D, kd, g->query + h * kd);
        row_times(g->row, m->key + (size_t)h * D * kd, D, kd, g->keys + ((size_t)h * W + slot) * kd);
        row_times(g->row, m->value + (size_t)h * D * vd, D, vd, g->values + ((size_t)h * W + slot) * vd);
    }
    for (int h = 0; h < c->n_heads; h++) {
        float *out = g->z + D + h * vd;
        if (g->ablation.heads & (1u << h)) {
            for (int i = 0; i < vd; i++) out[i] = g->ablation.mode == ABLATE_MEAN ? g->ablation.mean[h * vd + i] : 0;
        } else {
            head_attend(g, h, out);
        }
    }
}

/* window8: the last C rows, oldest first; the story's first row before its start. */
static void window_z(Generator *g, int32_t token) {
    const ModelConfig *c = &g->model->cfg;
    int C = c->context, D = c->row_dim;
    if (g->pos == 0)
        for (int i = 0; i < C; i++) g->recent[i] = token;
    else {
        memmove(g->recent, g->recent + 1, (C - 1) * sizeof(int32_t));
        g->recent[C - 1] = token;
    }
    for (int i = 0; i < C; i++) memcpy(g->z + i * D, g->model->embedding + (size_t)g->recent[i] * D, D * sizeof(float));
}

const float *generator_feed(Generator *g, int32_t token) {
    const Model *m = g->model;
    const ModelConfig *c = &m->cfg;
    int Z = model_hidden_input_dim(c), Hd = c->hidden_dim, V = c->vocab_size;
    memcpy(g->row, m->embedding + (size_t)token * c->row_dim, c->row_dim * sizeof(float));
    if (c->arch == ARCH_ATTENTION) attention_z(g);
    else window_z(g, token);
    /* hidden = tanh(W1 z + b1), W1 (Hd, Z) */
    memcpy(g->hidden, m->hidden_b, Hd * sizeof(float));
    cblas_sgemv(CblasRowMajor, CblasNoTrans, Hd, Z, 1.0f, m->hidden_w, Z, g->z, 1, 1.0f, g->hidden, 1);
    for (int i = 0; i < Hd; i++) g->hidden[i] = tanhf(g->hidden[i]);
    /* logits = W2 hidden + b2, W2 (V, Hd) */
    memcpy(g->logits, m->output_b, V * sizeof(float));
    cblas_sgemv(CblasRowMajor, CblasNoTrans, V, Hd, 1.0f, m->output_w, Hd, g->hidden, 1, 1.0f, g->logits, 1);
    g->pos++;
    return g->logits;
}
