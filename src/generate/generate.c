/* Incremental inference: see include/storylm/generate.h. The arithmetic is
 * model_forward's for one position, so the two agree to float rounding. */
#include "storylm/generate.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Contract a*b+c into FMA instructions (ISO C mode leaves them apart). */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("fp-contract=fast")
#endif

static int qkv_width(const ModelConfig *c) { return c->n_heads * (2 * c->key_dim + c->value_dim); }

/* 16 floats, one AVX-512 register (two AVX ones, or plain loops, elsewhere). */
typedef float f16 __attribute__((vector_size(64)));
/* The helpers are static and inlined: no ABI is crossed (GCC warns without AVX-512). */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wpsabi"
#endif

/* W (rows, cols) -> blocks of 16 rows, column by column: block b holds
 * W[16b + r][k] at (b*cols + k)*16 + r (rows past the end 0). Then a
 * block's 16 outputs are one register and the whole product one pass over
 * the packed floats, with no sums across a register. */
static void pack_rows16(const float *W, int rows, int cols, float *packed) {
    for (int b = 0; b < (rows + 15) / 16; b++)
        for (int k = 0; k < cols; k++)
            for (int r = 0; r < 16; r++)
                packed[((size_t)b * cols + k) * 16 + r] = 16 * b + r < rows ? W[(size_t)(16 * b + r) * cols + k] : 0.0f;
}

/* y (rows) = packed W (rows, cols) x (cols) + bias. */
static void dense16(const float *packed, const float *bias, const float *x, int rows, int cols, float *y) {
    for (int b = 0; b < (rows + 15) / 16; b++) {
        const float *w = packed + (size_t)b * cols * 16;
        f16 acc0 = {0}, acc1 = {0}; /* two chains: an FMA waits on the one before */
        int k = 0;
        for (; k + 1 < cols; k += 2) {
            f16 w0, w1;
            memcpy(&w0, w + (size_t)k * 16, sizeof w0);
            memcpy(&w1, w + (size_t)(k + 1) * 16, sizeof w1);
            acc0 += w0 * x[k];
            acc1 += w1 * x[k + 1];
        }
        if (k < cols) {
            f16 w0;
            memcpy(&w0, w + (size_t)k * 16, sizeof w0);
            acc0 += w0 * x[k];
        }
        float out[16];
        acc0 += acc1;
        memcpy(out, &acc0, sizeof out);
        int n = rows - 16 * b < 16 ? rows - 16 * b : 16;
        for (int r = 0; r < n; r++) y[16 * b + r] = out[r] + bias[16 * b + r];
    }
}

/* query, key, value (H, D, kd|vd) -> qkv_w (D, QKV), queries times 1/sqrt(kd);
 * distance (H, W) -> distance2 (H, 2W), entry k = score of distance (W-1-k) mod W. */
static void pack_weights(Generator *g, float *table) {
    const Model *m = g->model;
    const ModelConfig *c = &m->cfg;
    int D = c->row_dim, H = c->n_heads, kd = c->key_dim, vd = c->value_dim, W = c->window, QKV = qkv_width(c);
    float scale = score_scale(c); /* --score: 1/sqrt(kd) for scaled-dot, else 1 */
    const float *distance = position_table_for(m, table); /* --pos: the scores added per distance */
    for (int r = 0; r < D; r++)
        for (int h = 0; h < H; h++) {
            float *dst = g->qkv_w + (size_t)r * QKV;
            for (int i = 0; i < kd; i++) {
                dst[h * kd + i] = m->query[((size_t)h * D + r) * kd + i] * scale;
                dst[(H + h) * kd + i] = m->key[((size_t)h * D + r) * kd + i];
            }
            for (int i = 0; i < vd; i++) dst[2 * H * kd + h * vd + i] = m->value[((size_t)h * D + r) * vd + i];
        }
    for (int h = 0; h < H; h++)
        for (int k = 0; k < 2 * W; k++) g->distance2[(size_t)h * 2 * W + k] = distance[(size_t)h * W + (2 * W - 1 - k) % W];
}

int generator_init(Generator *g, const Model *m, const Ablation *ablation, Error *e) {
    const ModelConfig *c = &m->cfg;
    *g = (Generator){.model = m};
    if (ablation) g->ablation = *ablation;
    size_t H = c->n_heads, W = c->window, QKV = c->arch == ARCH_ATTENTION ? qkv_width(c) : 0;
    size_t Z = model_hidden_input_dim(c), Hd16 = (c->hidden_dim + 15) / 16 * 16, V16 = (c->vocab_size + 15) / 16 * 16;
    int ok = (g->hidden_w = xmalloc(Hd16 * Z * sizeof(float), e)) &&
             (g->output_w = xmalloc(V16 * c->hidden_dim * sizeof(float), e)) && (g->recent = xcalloc(c->context > 0 ? c->context : 1, sizeof(int32_t), e)) &&
             (g->z = xcalloc(model_hidden_input_dim(c), sizeof(float), e)) &&
             (g->scores = xcalloc(W, sizeof(float), e)) && (g->hidden = xcalloc(c->hidden_dim, sizeof(float), e)) &&
             (g->logits = xcalloc(c->vocab_size, sizeof(float), e));
    if (ok && c->arch == ARCH_ATTENTION)
        ok = (g->keys = xcalloc(H * W * c->key_dim, sizeof(float), e)) &&
             (g->values = xcalloc(H * W * c->value_dim, sizeof(float), e)) &&
             (g->qkv_w = xmalloc((size_t)c->row_dim * QKV * sizeof(float), e)) &&
             (g->distance2 = xmalloc(H * 2 * W * sizeof(float), e)) && (g->qkv = xmalloc(QKV * sizeof(float), e));
    if (!ok) {
        generator_free(g);
        return -1;
    }
    if (c->arch == ARCH_ATTENTION) {
        float *table = xmalloc(H * W * sizeof(float), e);
        if (!table) {
            generator_free(g);
            return -1;
        }
        pack_weights(g, table);
        free(table);
    }
    pack_rows16(m->hidden_w, c->hidden_dim, (int)Z, g->hidden_w);
    pack_rows16(m->output_w, c->vocab_size, c->hidden_dim, g->output_w);
    return 0;
}

void generator_free(Generator *g) {
    void *bufs[] = {g->keys, g->values, g->qkv_w, g->distance2, g->qkv, g->hidden_w, g->output_w, g->recent, g->z,
                    g->scores, g->hidden, g->logits};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) free(bufs[i]);
    *g = (Generator){0};
}

void generator_reset(Generator *g) { g->pos = 0; }

/* row (D) -> qkv (QKV) = row @ qkv_w; the key and value go to the cache's slot. */
static void new_query_key_value(Generator *g, const float *row) {
    const ModelConfig *c = &g->model->cfg;
    int D = c->row_dim, QKV = qkv_width(c), H = c->n_heads, kd = c->key_dim, vd = c->value_dim, W = c->window;
    float *qkv = g->qkv;
    memset(qkv, 0, QKV * sizeof(float));
    for (int r = 0; r < D; r++) {
        const float *w = g->qkv_w + (size_t)r * QKV;
        float x = row[r];
#pragma omp simd
        for (int j = 0; j < QKV; j++) qkv[j] += x * w[j];
    }
    score_token_qk(g->model, g->pos, qkv); /* --pos rope, --score general|additive: turned once, cached so */
    int slot = g->pos % W;
    for (int i = 0; i < H * kd; i++) g->keys[(size_t)i * W + slot] = qkv[H * kd + i];
    for (int i = 0; i < H * vd; i++) g->values[(size_t)i * W + slot] = qkv[2 * H * kd + i];
}

/* Head h at the newest position over the cache's n slots: scores (query .
 * key / sqrt(kd) + distance score), softmax, blend of the values into out (vd). */
static void head_attend(Generator *g, int h, float *out) {
    const ModelConfig *c = &g->model->cfg;
    int W = c->window, kd = c->key_dim, vd = c->value_dim;
    int n = g->pos + 1 < W ? g->pos + 1 : W, newest = g->pos % W;
    /* slot s holds the key (newest - s) mod W back */
    const float *bias = g->distance2 + (size_t)h * 2 * W + (W - 1 - newest);
    const float *q = g->qkv + h * kd, *keys = g->keys + (size_t)h * kd * W;
    float *s = g->scores;
    memcpy(s, bias, n * sizeof(float));
    if (c->score == SCORE_ADDITIVE) /* --score additive: v . tanh(q~ + k~) */
        additive_scores_cached(model_param(g->model, "score.v") + h * kd, kd, q, keys, W, n, s);
    else
        for (int i = 0; i < kd; i++) {
            const float *k = keys + (size_t)i * W;
            float qi = q[i];
#pragma omp simd
            for (int j = 0; j < n; j++) s[j] += qi * k[j];
        }
    softmax_inplace(s, n);
    for (int ch = 0; ch < vd; ch++) {
        const float *v = g->values + ((size_t)h * vd + ch) * W;
        float acc = 0.0f;
#pragma omp simd reduction(+ : acc)
        for (int j = 0; j < n; j++) acc += s[j] * v[j];
        out[ch] = acc;
    }
}

/* The row and the heads' outputs of the newest token -> z (160). */
static void attention_z(Generator *g, const float *row) {
    const ModelConfig *c = &g->model->cfg;
    int D = c->row_dim, vd = c->value_dim;
    memcpy(g->z, row, D * sizeof(float));
    position_row_add(g->model, g->pos, g->z); /* --pos absolute|sinusoidal: the tag at this position */
    new_query_key_value(g, g->z);
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
    if (c->arch == ARCH_ATTENTION) attention_z(g, m->embedding + (size_t)token * c->row_dim);
    else window_z(g, token);
    dense16(g->hidden_w, m->hidden_b, g->z, Hd, Z, g->hidden); /* hidden = tanh(W1 z + b1), W1 (Hd, Z) */
    tanh_inplace(g->hidden, Hd);
    dense16(g->output_w, m->output_b, g->hidden, V, Hd, g->logits); /* logits = W2 hidden + b2, W2 (V, Hd) */
    g->pos++;
    return g->logits;
}
