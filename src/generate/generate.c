/* Incremental inference: see include/storylm/generate.h. The arithmetic is
 * slm_model_forward's for one position, so the two agree to float rounding. */
#include "storylm/generate.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Contract a*b+c into FMA instructions (ISO C mode leaves them apart). */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("fp-contract=fast")
#endif

static int qkv_width(const ModelConfig *c) { return c->n_heads * (2 * c->key_dim + c->value_dim); }

/* 8 floats, one AVX register (two SSE ones, or plain loops, elsewhere). */
typedef float f8 __attribute__((vector_size(32)));
/* The helpers are static and inlined: no ABI is crossed (GCC warns without AVX). */
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

/* 8 floats read from anywhere (no alignment asked). */
static inline f8 load8(const float *p) {
    f8 v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* The 16 sums of a block (two chains of two registers each) + bias -> y. */
static inline void store_block(f8 even_lo, f8 even_hi, f8 odd_lo, f8 odd_hi, const float *bias, int n, float *y) {
    float out[16];
    f8 lo = even_lo + odd_lo, hi = even_hi + odd_hi;
    memcpy(out, &lo, sizeof lo);
    memcpy(out + 8, &hi, sizeof hi);
    for (int r = 0; r < n; r++) y[r] = out[r] + bias[r];
}

/* Block b (16 rows; n of them real) of y = packed W (rows, cols) x (cols)
 * + bias, w the block. Each row's sum is two chains (even and odd columns:
 * an FMA waits on the one before) added at the end; the 16 rows are two
 * 8-float registers (AVX). */
static void dense16_block(const float *w, const float *bias, const float *x, int cols, int n, float *y) {
    f8 e0 = {0}, e1 = {0}, o0 = {0}, o1 = {0};
    int k = 0;
    for (; k + 1 < cols; k += 2) {
        const float *wk = w + (size_t)k * 16;
        e0 += load8(wk) * x[k];
        e1 += load8(wk + 8) * x[k];
        o0 += load8(wk + 16) * x[k + 1];
        o1 += load8(wk + 24) * x[k + 1];
    }
    if (k < cols) {
        e0 += load8(w + (size_t)k * 16) * x[k];
        e1 += load8(w + (size_t)k * 16 + 8) * x[k];
    }
    store_block(e0, e1, o0, o1, bias, n, y);
}

/* dense16_block for two samples (xa -> ya, xb -> yb): eight chains in
 * flight, each weight read once for both, each sample's sums in the same
 * order as alone (so the same bits). */
static void dense16_block2(const float *w, const float *bias, const float *xa, const float *xb, int cols, int n,
                           float *ya, float *yb) {
    f8 ae0 = {0}, ae1 = {0}, ao0 = {0}, ao1 = {0}, be0 = {0}, be1 = {0}, bo0 = {0}, bo1 = {0};
    int k = 0;
    for (; k + 1 < cols; k += 2) {
        const float *wk = w + (size_t)k * 16;
        f8 w0 = load8(wk), w1 = load8(wk + 8), w2 = load8(wk + 16), w3 = load8(wk + 24);
        ae0 += w0 * xa[k];
        ae1 += w1 * xa[k];
        ao0 += w2 * xa[k + 1];
        ao1 += w3 * xa[k + 1];
        be0 += w0 * xb[k];
        be1 += w1 * xb[k];
        bo0 += w2 * xb[k + 1];
        bo1 += w3 * xb[k + 1];
    }
    if (k < cols) {
        f8 w0 = load8(w + (size_t)k * 16), w1 = load8(w + (size_t)k * 16 + 8);
        ae0 += w0 * xa[k];
        ae1 += w1 * xa[k];
        be0 += w0 * xb[k];
        be1 += w1 * xb[k];
    }
    store_block(ae0, ae1, ao0, ao1, bias, n, ya);
    store_block(be0, be1, bo0, bo1, bias, n, yb);
}

/* For j < k: y of sample which[j] (rows) = packed W (rows, cols) x of that
 * sample (cols) + bias; x and y hold a sample's vector every x_step, y_step
 * floats. Block by block, every sample's rows while the block (16 x cols)
 * sits in the first-level cache: the weights stream past once a step, not
 * once a sample; each sample's sums are the same whatever the others. */
static void dense16(const float *packed, const float *bias, const float *x, size_t x_step, const int *which, int k,
                    int rows, int cols, float *y, size_t y_step) {
    for (int b = 0; b < (rows + 15) / 16; b++) {
        const float *w = packed + (size_t)b * cols * 16;
        int j = 0, n = rows - 16 * b < 16 ? rows - 16 * b : 16;
        const float *bb = bias + 16 * b;
        for (; j + 1 < k; j += 2)
            dense16_block2(w, bb, x + which[j] * x_step, x + which[j + 1] * x_step, cols, n, y + which[j] * y_step + 16 * b,
                           y + which[j + 1] * y_step + 16 * b);
        if (j < k) dense16_block(w, bb, x + which[j] * x_step, cols, n, y + which[j] * y_step + 16 * b);
    }
}

/* Layer l's input width: the row (l = 0), or the row and layer l-1's heads. */
static int layer_input(const ModelConfig *c, int l) { return c->row_dim + (l > 0 ? c->n_heads * c->value_dim : 0); }

/* Floats of one layer's packed query, key, value weights (the widest layer's). */
static size_t qkv_w_size(const ModelConfig *c) {
    return (size_t)layer_input(c, slm_model_layers(c) > 1) * qkv_width(c);
}

/* Layer l (m its view): query, key, value (H, Din, kd|vd) -> its qkv_w block
 * (Din, QKV), queries times 1/sqrt(kd); distance (H, W) -> its distance2
 * block (H, 2W), entry k = score of distance (W-1-k) mod W. */
static void pack_weights(GeneratorBatch *g, const Model *m, int l, float *table) {
    const ModelConfig *c = &m->cfg;
    int D = c->row_dim, H = c->n_heads, kd = c->key_dim, vd = c->value_dim, W = c->window, QKV = qkv_width(c);
    float scale = slm_score_scale(c); /* --score: 1/sqrt(kd) for scaled-dot, else 1 */
    const float *distance = slm_position_table_for(m, table); /* --pos: the scores added per distance */
    float *qkv_w = g->qkv_w + (size_t)l * qkv_w_size(&g->model->cfg), *distance2 = g->distance2 + (size_t)l * H * 2 * W;
    for (int r = 0; r < D; r++)
        for (int h = 0; h < H; h++) {
            float *dst = qkv_w + (size_t)r * QKV;
            for (int i = 0; i < kd; i++) {
                dst[h * kd + i] = m->query[((size_t)h * D + r) * kd + i] * scale;
                dst[(H + h) * kd + i] = m->key[((size_t)h * D + r) * kd + i];
            }
            for (int i = 0; i < vd; i++) dst[2 * H * kd + h * vd + i] = m->value[((size_t)h * D + r) * vd + i];
        }
    for (int h = 0; h < H; h++)
        for (int k = 0; k < 2 * W; k++) distance2[(size_t)h * 2 * W + k] = distance[(size_t)h * W + (2 * W - 1 - k) % W];
}

/* Sizes of one sample's part of each per-sample buffer. */
typedef struct SampleSizes {
    size_t keys, values, recent, qkv, z, hidden, logits;
} SampleSizes;

static SampleSizes sample_sizes(const ModelConfig *c) {
    int att = c->arch == ARCH_ATTENTION;
    size_t H = c->n_heads * (size_t)slm_model_layers(c), W = c->window; /* every layer's heads */
    return (SampleSizes){.keys = att ? H * W * c->key_dim : 0, .values = att ? H * W * c->value_dim : 0,
                         .recent = c->context > 0 ? (size_t)c->context : 1, .qkv = att ? (size_t)qkv_width(c) : 0,
                         .z = slm_model_hidden_input_dim(c), .hidden = c->hidden_dim, .logits = c->vocab_size};
}

int slm_generator_batch_init(GeneratorBatch *g, const Model *m, const Ablation *ablation, int n, Error *e) {
    const ModelConfig *c = &m->cfg;
    if (c->arch == ARCH_TRANSFORMER) return slm_tf_generator_init(g, m, ablation, n, e);
    *g = (GeneratorBatch){.model = m, .n = n};
    if (ablation) g->ablation = *ablation;
    if (n < 1) return FAIL(e, "ask for 1 or more samples", "a batch of %d samples", n);
    SampleSizes sz = sample_sizes(c);
    size_t L = (size_t)slm_model_layers(c), H = c->n_heads * L, W = c->window, N = (size_t)n;
    size_t Z = sz.z, Hd16 = (c->hidden_dim + 15) / 16 * 16, V16 = (c->vocab_size + 15) / 16 * 16;
    int ok = (g->hidden_w = xmalloc(Hd16 * Z * sizeof(float), e)) &&
             (g->output_w = xmalloc(V16 * c->hidden_dim * sizeof(float), e)) &&
             (g->pos = xcalloc(N, sizeof(int), e)) && (g->recent = xcalloc(N * sz.recent, sizeof(int32_t), e)) &&
             (g->z = xcalloc(N * Z, sizeof(float), e)) && (g->scores = xcalloc(N * W, sizeof(float), e)) &&
             (g->rows = xcalloc(N * c->row_dim, sizeof(float), e)) &&
             (g->hidden = xcalloc(N * sz.hidden, sizeof(float), e)) &&
             (g->logits = xcalloc(N * sz.logits, sizeof(float), e));
    if (ok && c->arch == ARCH_ATTENTION)
        ok = (g->keys = xcalloc(N * sz.keys, sizeof(float), e)) && (g->values = xcalloc(N * sz.values, sizeof(float), e)) &&
             (g->qkv_w = xmalloc(L * qkv_w_size(c) * sizeof(float), e)) &&
             (g->distance2 = xmalloc(H * 2 * W * sizeof(float), e)) && (g->qkv = xmalloc(N * sz.qkv * sizeof(float), e)) &&
             (g->layers = xcalloc(L, sizeof(Model), e)) && (g->score = xcalloc(L, sizeof(ScoreTensors), e));
    if (!ok) {
        slm_generator_batch_free(g);
        return -1;
    }
    if (c->arch == ARCH_ATTENTION) {
        float *table = xmalloc(H * W * sizeof(float), e);
        if (!table) {
            slm_generator_batch_free(g);
            return -1;
        }
        for (int l = 0; l < (int)L; l++) {
            slm_model_layer_view(m, l, &g->layers[l]);
            slm_score_tensors(&g->layers[l], &g->score[l]);
            pack_weights(g, &g->layers[l], l, table);
        }
        free(table);
    }
    pack_rows16(m->hidden_w, c->hidden_dim, (int)Z, g->hidden_w);
    pack_rows16(m->output_w, c->vocab_size, c->hidden_dim, g->output_w);
    return 0;
}

void slm_generator_batch_free(GeneratorBatch *g) {
    slm_tf_generator_free(g);
    void *bufs[] = {g->keys, g->values, g->qkv_w, g->distance2, g->qkv, g->hidden_w, g->output_w, g->pos, g->recent,
                    g->z, g->scores, g->rows, g->hidden, g->logits, g->layers, g->score};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) free(bufs[i]);
    *g = (GeneratorBatch){0};
}

void slm_generator_batch_reset(GeneratorBatch *g, int s) { g->pos[s] = 0; }

void slm_generator_batch_copy(GeneratorBatch *g, int from, int to) {
    if (g->tf) {
        slm_tf_generator_copy(g, from, to);
        return;
    }
    SampleSizes sz = sample_sizes(&g->model->cfg);
    g->pos[to] = g->pos[from];
    if (g->keys) {
        memcpy(g->keys + to * sz.keys, g->keys + from * sz.keys, sz.keys * sizeof(float));
        memcpy(g->values + to * sz.values, g->values + from * sz.values, sz.values * sizeof(float));
    }
    memcpy(g->recent + to * sz.recent, g->recent + from * sz.recent, sz.recent * sizeof(int32_t));
    memcpy(g->logits + to * sz.logits, g->logits + from * sz.logits, sz.logits * sizeof(float));
}

const float *slm_generator_batch_logits(const GeneratorBatch *g, int s) {
    return g->logits + (size_t)s * g->model->cfg.vocab_size;
}

/* Component r of layer l's input in sample z (Z): the row, then layer l-1's heads. */
static float layer_input_at(const ModelConfig *c, const float *z, int l, int r) {
    return r < c->row_dim ? z[r] : z[r + (size_t)(l - 1) * c->n_heads * c->value_dim];
}

/* Layer l, for j < k: sample which[j]'s input (its z's row and layer l-1's
 * heads) -> its qkv = input @ layer l's qkv_w, one pass over qkv_w for all
 * of them; the key and value go to its layer l cache's slot. */
static void new_query_key_value(GeneratorBatch *g, int l, const int *which, int k) {
    const ModelConfig *c = &g->model->cfg;
    int Din = layer_input(c, l), QKV = qkv_width(c), H = c->n_heads, kd = c->key_dim, vd = c->value_dim, W = c->window;
    SampleSizes sz = sample_sizes(c);
    const float *qkv_w = g->qkv_w + (size_t)l * qkv_w_size(c);
    for (int j = 0; j < k; j++) memset(g->qkv + which[j] * sz.qkv, 0, QKV * sizeof(float));
    for (int r = 0; r < Din; r++) {
        const float *w = qkv_w + (size_t)r * QKV;
        for (int j = 0; j < k; j++) {
            float *qkv = g->qkv + which[j] * sz.qkv, x = layer_input_at(c, g->z + which[j] * sz.z, l, r);
#pragma omp simd
            for (int q = 0; q < QKV; q++) qkv[q] += x * w[q];
        }
    }
    for (int j = 0; j < k; j++) {
        int s = which[j], slot = g->pos[s] % W;
        float *qkv = g->qkv + s * sz.qkv;
        slm_score_token_qk_with(c, &g->score[l], g->pos[s], qkv); /* --pos rope, --score general|additive: turned once, cached so */
        float *keys = g->keys + s * sz.keys + (size_t)l * H * kd * W, *values = g->values + s * sz.values + (size_t)l * H * vd * W;
        for (int i = 0; i < H * kd; i++) keys[(size_t)i * W + slot] = qkv[H * kd + i];
        for (int i = 0; i < H * vd; i++) values[(size_t)i * W + slot] = qkv[2 * H * kd + i];
    }
}

/* Head h of layer l of sample s at its newest position over the cache's n
 * slots: scores (query . key / sqrt(kd) + distance score), softmax, blend of
 * the values into out (vd). */
static void head_attend(GeneratorBatch *g, int s, int l, int h, float *out) {
    const ModelConfig *c = &g->model->cfg;
    SampleSizes sz = sample_sizes(c);
    int W = c->window, kd = c->key_dim, vd = c->value_dim, pos = g->pos[s], lh = l * c->n_heads + h;
    int n = pos + 1 < W ? pos + 1 : W, newest = pos % W;
    /* slot s holds the key (newest - s) mod W back */
    const float *bias = g->distance2 + (size_t)lh * 2 * W + (W - 1 - newest);
    const float *q = g->qkv + s * sz.qkv + h * kd, *keys = g->keys + s * sz.keys + (size_t)lh * kd * W;
    float *sc = g->scores + (size_t)s * W; /* each sample its own: threads may share the batch */
    memcpy(sc, bias, n * sizeof(float));
    if (c->score == SCORE_ADDITIVE) /* --score additive: v . tanh(q~ + k~) */
        slm_additive_scores_cached(g->score[l].v + h * kd, kd, q, keys, W, n, sc);
    else
        for (int i = 0; i < kd; i++) {
            const float *key = keys + (size_t)i * W;
            float qi = q[i];
#pragma omp simd
            for (int j = 0; j < n; j++) sc[j] += qi * key[j];
        }
    slm_softmax_inplace(sc, n);
    for (int ch = 0; ch < vd; ch++) {
        const float *v = g->values + s * sz.values + ((size_t)lh * vd + ch) * W;
        float acc = 0.0f;
#pragma omp simd reduction(+ : acc)
        for (int j = 0; j < n; j++) acc += sc[j] * v[j];
        out[ch] = acc;
    }
}

/* The rows (k, D) and, layer by layer, the heads' outputs of the newest
 * tokens -> each sample's z (Z); a switched-off head's slot replaced before
 * the layer above reads it. */
static void attention_z(GeneratorBatch *g, const float *rows, const int *which, int k) {
    const ModelConfig *c = &g->model->cfg;
    int D = c->row_dim, vd = c->value_dim, H = c->n_heads;
    size_t Z = sample_sizes(c).z;
    for (int j = 0; j < k; j++) memcpy(g->z + which[j] * Z, rows + (size_t)j * D, D * sizeof(float));
    for (int l = 0; l < slm_model_layers(c); l++) {
        new_query_key_value(g, l, which, k);
        for (int j = 0; j < k; j++)
            for (int h = 0, lh = l * H; h < H; h++, lh++) {
                float *out = g->z + which[j] * Z + D + (size_t)lh * vd;
                if (g->ablation.heads & (1u << lh)) {
                    for (int i = 0; i < vd; i++) out[i] = g->ablation.mode == ABLATE_MEAN ? g->ablation.mean[lh * vd + i] : 0;
                } else {
                    head_attend(g, which[j], l, h, out);
                }
            }
    }
}

/* window8: sample s's last C rows, oldest first; the story's first row before its start. */
static void window_z(GeneratorBatch *g, int s, int32_t token) {
    const ModelConfig *c = &g->model->cfg;
    int C = c->context, D = c->row_dim;
    SampleSizes sz = sample_sizes(c);
    int32_t *recent = g->recent + s * sz.recent;
    float *z = g->z + s * sz.z;
    if (g->pos[s] == 0)
        for (int i = 0; i < C; i++) recent[i] = token;
    else {
        memmove(recent, recent + 1, (C - 1) * sizeof(int32_t));
        recent[C - 1] = token;
    }
    for (int i = 0; i < C; i++) memcpy(z + i * D, g->model->embedding + (size_t)recent[i] * D, D * sizeof(float));
}

/* slm_generator_batch_feed for tokens[j] to which[j], j < k, with the rows
 * scratch rows (k, D): one thread's part of a step. */
static void feed_part(GeneratorBatch *g, const int *which, const int32_t *tokens, int k, float *rows) {
    const Model *m = g->model;
    const ModelConfig *c = &m->cfg;
    SampleSizes sz = sample_sizes(c);
    int Z = (int)sz.z, Hd = c->hidden_dim, V = c->vocab_size, D = c->row_dim;
    if (c->arch == ARCH_ATTENTION) { /* the rows gathered (k, D) for the one pass over the query, key, value weights */
        for (int j = 0; j < k; j++) {
            memcpy(rows + (size_t)j * D, m->embedding + (size_t)tokens[j] * D, D * sizeof(float));
            slm_position_row_add(m, g->pos[which[j]], rows + (size_t)j * D); /* --pos absolute|sinusoidal */
        }
        attention_z(g, rows, which, k);
    } else {
        for (int j = 0; j < k; j++) window_z(g, which[j], tokens[j]);
    }
    /* hidden = tanh(W1 z + b1), W1 (Hd, Z); logits = W2 hidden + b2, W2 (V, Hd) */
    dense16(g->hidden_w, m->hidden_b, g->z, sz.z, which, k, Hd, Z, g->hidden, sz.hidden);
    for (int j = 0; j < k; j++) slm_tanh_inplace(g->hidden + which[j] * sz.hidden, Hd);
    dense16(g->output_w, m->output_b, g->hidden, sz.hidden, which, k, V, Hd, g->logits, sz.logits);
    for (int j = 0; j < k; j++) g->pos[which[j]]++;
}

typedef struct FeedJob {
    GeneratorBatch *g;
    const int *which;
    const int32_t *tokens;
    int k;
} FeedJob;

/* Thread t of n takes the samples which[k*t/n .. k*(t+1)/n). */
static void feed_job(void *arg, int t, int n) {
    FeedJob *f = arg;
    int j0 = f->k * t / n, j1 = f->k * (t + 1) / n;
    if (j1 > j0) feed_part(f->g, f->which + j0, f->tokens + j0, j1 - j0, f->g->rows + (size_t)j0 * f->g->model->cfg.row_dim);
}

void slm_generator_batch_feed(GeneratorBatch *g, const int *which, const int32_t *tokens, int k) {
    if (g->tf) {
        slm_tf_generator_feed(g, which, tokens, k);
        return;
    }
    if (!g->workers || g->workers->n < 2 || k < 2) {
        feed_part(g, which, tokens, k, g->rows);
        return;
    }
    FeedJob f = {g, which, tokens, k};
    slm_workers_run(g->workers, feed_job, &f);
}

void slm_generator_batch_use_workers(GeneratorBatch *g, Workers *w) { g->workers = w; }

int slm_generator_init(Generator *g, const Model *m, const Ablation *ablation, Error *e) {
    return slm_generator_batch_init(&g->batch, m, ablation, 1, e);
}

void slm_generator_free(Generator *g) { slm_generator_batch_free(&g->batch); }

void slm_generator_reset(Generator *g) { slm_generator_batch_reset(&g->batch, 0); }

const float *slm_generator_feed(Generator *g, int32_t token) {
    static const int first = 0; /* constant: the batch's only sample */
    slm_generator_batch_feed(&g->batch, &first, &token, 1);
    return g->batch.logits;
}
