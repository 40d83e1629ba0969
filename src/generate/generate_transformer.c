/* Generation for --arch transformer: one token at a time with a key/value
 * cache per block (the last n_ctx keys and values of every head), equal to
 * the forward pass over the whole story up to rounding (tests/test_transformer.c).
 * generate.c's GeneratorBatch functions dispatch here; a sample's arithmetic
 * is the same whatever the batch, so its logits have the same bits fed
 * alone or with others. The products are OpenBLAS's matrix-vector ones. */
#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "storylm/generate_transformer.h"

struct TfGenerator {
    TfViews w;
    float *qkv_w;                              /* (L, QKV, D) each block's W_Q, W_K, W_V packed (slm_pack_qkv) */
    float *table;                              /* (L, H, W) each head's score per distance back */
    float *keys;                               /* (n, L, H, W, dh): the key of the token at position u in slot u % W */
    float *values;                             /* (n, L, H, W, dh) */
    float *resid, *x, *qkv, *z, *mlp, *scores; /* one token's scratch: (D), (D), (QKV), (H*dh), (F), (W) */
    size_t cache;                              /* floats of one sample's keys (and of its values) */
};

int slm_tf_generator_init(GeneratorBatch *g, const Model *m, const Ablation *ablation, int n, Error *e) {
    const ModelConfig *c = &m->cfg;
    *g = (GeneratorBatch){.model = m, .n = n};
    if (n < 1) return FAIL(e, "ask for 1 or more samples", "a batch of %d samples", n);
    if (ablation && ablation->heads &&
        (c->n_layers * c->n_heads > 32 || (ablation->mode == ABLATE_MEAN && !ablation->mean)))
        return FAIL(e, "name at most 32 heads; for --ablate-mode mean, the heads' mean outputs",
                    "a transformer's heads are switched off 32 at most, in mean mode with their means");
    if (ablation) g->ablation = *ablation;
    size_t L = (size_t)c->n_layers, H = (size_t)c->n_heads, W = (size_t)c->window, dh = (size_t)c->key_dim;
    size_t D = (size_t)c->row_dim, F = (size_t)c->hidden_dim, QKV = 3 * H * dh, N = (size_t)n;
    struct TfGenerator *t = g->tf = xcalloc(1, sizeof *t, e);
    int ok = t && (g->pos = xcalloc(N, sizeof(int), e)) && (g->logits = xcalloc(N * c->vocab_size, sizeof(float), e));
    if (ok) t->cache = L * H * W * dh;
    ok = ok && (t->qkv_w = xmalloc(L * QKV * D * sizeof(float), e)) &&
         (t->table = xmalloc(L * H * W * sizeof(float), e)) && (t->keys = xcalloc(N * t->cache, sizeof(float), e)) &&
         (t->values = xcalloc(N * t->cache, sizeof(float), e)) && (t->resid = xmalloc(D * sizeof(float), e)) &&
         (t->x = xmalloc(D * sizeof(float), e)) && (t->qkv = xmalloc(QKV * sizeof(float), e)) &&
         (t->z = xmalloc(H * dh * sizeof(float), e)) && (t->mlp = xmalloc(F * sizeof(float), e)) &&
         (t->scores = xmalloc(W * sizeof(float), e));
    if (!ok) { /* what slm_generator_batch_free would free: this init's buffers alone */
        slm_tf_generator_free(g);
        free(g->pos);
        free(g->logits);
        *g = (GeneratorBatch){0};
        return -1;
    }
    slm_transformer_views(m, m->params, &t->w);
    for (size_t l = 0; l < L; l++) {
        const TfBlockViews *b = &t->w.block[l];
        slm_pack_qkv(b->W_Q, b->W_K, b->W_V, (int)H, (int)D, (int)dh, (int)dh, t->qkv_w + l * QKV * D);
        slm_transformer_distance_table(c, b, t->table + l * H * W);
    }
    return 0;
}

void slm_tf_generator_free(GeneratorBatch *g) {
    struct TfGenerator *t = g->tf;
    if (!t) return;
    void *bufs[] = {t->qkv_w, t->table, t->keys, t->values, t->resid, t->x, t->qkv, t->z, t->mlp, t->scores};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) free(bufs[i]);
    free(t);
    g->tf = NULL;
}

void slm_tf_generator_copy(GeneratorBatch *g, int from, int to) {
    struct TfGenerator *t = g->tf;
    size_t V = (size_t)g->model->cfg.vocab_size;
    g->pos[to] = g->pos[from];
    memcpy(t->keys + to * t->cache, t->keys + from * t->cache, t->cache * sizeof(float));
    memcpy(t->values + to * t->cache, t->values + from * t->cache, t->cache * sizeof(float));
    memcpy(g->logits + to * V, g->logits + from * V, V * sizeof(float));
}

/* resid (D) -> LN -> x (D). */
static void layernorm(const float *resid, const float *w, const float *b, int D, float *x) {
    float mean, rstd;
    slm_layernorm_forward(resid, w, b, 1, D, x, &mean, &rstd);
}

/* Head h of block l at position t: its query against the cached keys of
 * positions max(0, t-W+1)..t -> z (dh). keys, values: the block's cache of head h. */
static void head_attend(const ModelConfig *c, const float *q, const float *keys, const float *values,
                        const float *table, int t, float *scores, float *z) {
    int W = c->window, dh = c->key_dim, lo = t - W + 1 > 0 ? t - W + 1 : 0;
    float scale = 1.0f / sqrtf((float)dh), mx = -INFINITY, sum = 0.0f;
    for (int u = lo; u <= t; u++) {
        const float *k = keys + (size_t)(u % W) * dh;
        float s = 0.0f;
        for (int i = 0; i < dh; i++) s += q[i] * k[i];
        scores[u - lo] = s * scale + table[t - u];
        mx = scores[u - lo] > mx ? scores[u - lo] : mx;
    }
    for (int u = lo; u <= t; u++) sum += scores[u - lo] = expf(scores[u - lo] - mx);
    memset(z, 0, (size_t)dh * sizeof(float));
    for (int u = lo; u <= t; u++) {
        const float *v = values + (size_t)(u % W) * dh;
        float a = scores[u - lo] / sum;
        for (int i = 0; i < dh; i++) z[i] += a * v[i];
    }
}

/* Block l's attention part for sample s at position t: resid (D) += attn(LN1(resid)). */
static void attn_step(GeneratorBatch *g, int s, int l, int t) {
    const ModelConfig *c = &g->model->cfg;
    struct TfGenerator *G = g->tf;
    const TfBlockViews *b = &G->w.block[l];
    int D = c->row_dim, H = c->n_heads, dh = c->key_dim, HV = H * dh, W = c->window;
    layernorm(G->resid, b->ln1_w, b->ln1_b, D, G->x);
    cblas_sgemv(CblasRowMajor, CblasNoTrans, 3 * HV, D, 1.0f, G->qkv_w + (size_t)l * 3 * HV * D, D, G->x, 1, 0.0f,
                G->qkv, 1);
    const float *bias[3] = {b->b_Q, b->b_K, b->b_V};
    for (int r = 0; r < 3 * HV; r++) G->qkv[r] += bias[r / HV][r % HV];
    size_t block = (size_t)s * G->cache + (size_t)l * H * W * dh;
    for (int h = 0; h < H; h++) {
        float *q = G->qkv + h * dh, *k = G->qkv + HV + h * dh, *v = G->qkv + 2 * HV + h * dh;
        if (c->pos == POS_ROPE) slm_rope_turn(dh, t, 1, q), slm_rope_turn(dh, t, 1, k);
        float *keys = G->keys + block + (size_t)h * W * dh, *values = G->values + block + (size_t)h * W * dh;
        memcpy(keys + (size_t)(t % W) * dh, k, (size_t)dh * sizeof(float));
        memcpy(values + (size_t)(t % W) * dh, v, (size_t)dh * sizeof(float));
        head_attend(c, q, keys, values, G->table + ((size_t)l * H + h) * W, t, G->scores, G->z + h * dh);
        if (g->ablation.heads >> (l * H + h) & 1u) /* --ablate: z set to 0, or to the head's mean */
            g->ablation.mode == ABLATE_MEAN
                ? (void)memcpy(G->z + h * dh, g->ablation.mean + ((size_t)l * H + h) * dh, (size_t)dh * sizeof(float))
                : (void)memset(G->z + h * dh, 0, (size_t)dh * sizeof(float));
    }
    cblas_sgemv(CblasRowMajor, CblasTrans, HV, D, 1.0f, b->W_O, D, G->z, 1, 1.0f, G->resid, 1);
    for (int i = 0; i < D; i++) G->resid[i] += b->b_O[i];
}

/* Block l's MLP part: resid (D) += MLP(LN2(resid)). */
static void mlp_step(GeneratorBatch *g, int l) {
    const ModelConfig *c = &g->model->cfg;
    struct TfGenerator *G = g->tf;
    const TfBlockViews *b = &G->w.block[l];
    int D = c->row_dim, F = c->hidden_dim;
    layernorm(G->resid, b->ln2_w, b->ln2_b, D, G->x);
    cblas_sgemv(CblasRowMajor, CblasTrans, D, F, 1.0f, b->W_in, F, G->x, 1, 0.0f, G->mlp, 1);
    for (int f = 0; f < F; f++) G->mlp[f] += b->b_in[f];
    slm_act_forward((ActFn)c->act, G->mlp, F, G->mlp);
    cblas_sgemv(CblasRowMajor, CblasTrans, F, D, 1.0f, b->W_out, D, G->mlp, 1, 1.0f, G->resid, 1);
    for (int i = 0; i < D; i++) G->resid[i] += b->b_out[i];
}

/* Sample s takes token x: its logits for the next one. */
static void feed_one(GeneratorBatch *g, int s, int32_t x) {
    const ModelConfig *c = &g->model->cfg;
    struct TfGenerator *G = g->tf;
    int D = c->row_dim, V = c->vocab_size, t = g->pos[s];
    memcpy(G->resid, G->w.W_E + (size_t)x * D, (size_t)D * sizeof(float));
    if (G->w.W_pos) {
        const float *row = G->w.W_pos + (size_t)(t < c->window ? t : c->window - 1) * D;
        for (int i = 0; i < D; i++) G->resid[i] += row[i];
    } else if (c->pos == POS_SINUSOIDAL) {
        slm_sinusoid_tag(t, D, G->x);
        for (int i = 0; i < D; i++) G->resid[i] += G->x[i];
    }
    for (int l = 0; l < c->n_layers; l++) {
        attn_step(g, s, l, t);
        mlp_step(g, l);
    }
    layernorm(G->resid, G->w.ln_final_w, G->w.ln_final_b, D, G->x);
    float *logits = g->logits + (size_t)s * V;
    memcpy(logits, G->w.b_U, (size_t)V * sizeof(float));
    cblas_sgemv(CblasRowMajor, CblasTrans, D, V, 1.0f, G->w.W_U, V, G->x, 1, 1.0f, logits, 1);
    g->pos[s] = t + 1;
}

void slm_tf_generator_feed(GeneratorBatch *g, const int *which, const int32_t *tokens, int k) {
    for (int j = 0; j < k; j++) feed_one(g, which[j], tokens[j]);
}
