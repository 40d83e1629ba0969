/* Generation for the transformer family (tf_parts.h): one token at a time
 * with a key/value cache per block (the last n_ctx keys and values of every head), equal to
 * the forward pass over the whole story up to rounding (tests/test_transformer.c):
 * its Architecture's generator, which generate.c's batch functions call. As
 * for the attention network (readout_generate.c), the products are kernels16.c's packed 16-row blocks
 * run over all the samples fed in a step, and a head's scores read its keys
 * 16 slots a register: every sum is in a fixed order, so a sample's logits
 * have the same bits fed alone or with others, on one thread or several. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "storylm/dense_bf16.h"
#include "storylm/generator_batch.h"
#include "storylm/kernels16.h"
#include "transformer.h"
#include "tf_parts.h"

struct TfGenerator {
    TfViews w;
    /* each block's products in blocks of 16 rows, as (out, in): qkv_w (QKV, D)
     * W_Q (times 1/sqrt(dh)), W_K, W_V; W_O (D, H*dh); W_in (F, D); W_out (D, F) */
    Dense16 qkv_w[STORYLM_MAX_TF_LAYERS], W_O[STORYLM_MAX_TF_LAYERS], W_in[STORYLM_MAX_TF_LAYERS],
        W_out[STORYLM_MAX_TF_LAYERS];
    Dense16 W_U;      /* (V, D) */
    float *qkv_b;     /* (L, QKV) b_Q (times 1/sqrt(dh)), b_K, b_V */
    float *distance2; /* (L, H, 2W) and 16 more: entry k = the score of distance (W-1-k) mod W */
    float *keys;      /* (n, L, H, W/16, dh, 16): component i of the key in slot u % W (slm_key_at) */
    float *values;    /* (n, L, H, W/16, dh, 16): the value of slot u % W, laid out as the keys */
    /* each sample's scratch (threads may share a batch): (n, D), (n, D), (n, QKV), (n, H*dh), (n, F), (n, W/16*16) */
    float *resid, *x, *qkv, *z, *mlp, *scores;
    size_t cache;        /* floats of one sample's keys (and of its values) */
    struct TfBf16 *bf16; /* --precision bf16: the products' weights in BF16; NULL: FP32 */
};

/* The products above in BF16 (dense_bf16.h), and each sample's input to a
 * product as pairs (step of them a sample, the widest input's). */
struct TfBf16 {
    DenseBf16 qkv_w[STORYLM_MAX_TF_LAYERS], W_O[STORYLM_MAX_TF_LAYERS], W_in[STORYLM_MAX_TF_LAYERS],
        W_out[STORYLM_MAX_TF_LAYERS], W_U;
    Bf16Inputs in;
};

/* Sizes of one sample's part of a batch's buffers. */
typedef struct TfSizes {
    int D, H, dh, HV, QKV, F, V, W, slots;
} TfSizes;

static TfSizes tf_sizes(const ModelConfig *c) {
    int H = c->n_heads, dh = c->key_dim;
    return (TfSizes){.D = c->row_dim,
                     .H = H,
                     .dh = dh,
                     .HV = H * dh,
                     .QKV = 3 * H * dh,
                     .F = c->hidden_dim,
                     .V = c->vocab_size,
                     .W = c->window,
                     .slots = slm_key_slots(c->window)};
}

/* t's caches and scratch for n samples (shapes in struct TfGenerator); 0 when all came. */
static int alloc_buffers(struct TfGenerator *t, const ModelConfig *c, int n, Error *e) {
    TfSizes z = tf_sizes(c);
    size_t L = (size_t)c->n_layers, N = (size_t)n;
    t->cache = L * z.H * z.slots * z.dh;
    return (t->qkv_b = xmalloc(L * z.QKV * sizeof(float), e)) &&
           (t->distance2 = xcalloc(L * z.H * 2 * z.W + 16, sizeof(float), e)) &&
           (t->keys = slm_cache_alloc(N * t->cache, e)) && (t->values = slm_cache_alloc(N * t->cache, e)) &&
           (t->resid = xcalloc(N * z.D, sizeof(float), e)) && (t->x = xcalloc(N * z.D, sizeof(float), e)) &&
           (t->qkv = xcalloc(N * z.QKV, sizeof(float), e)) && (t->z = xcalloc(N * z.HV, sizeof(float), e)) &&
           (t->mlp = xcalloc(N * z.F, sizeof(float), e)) && (t->scores = xcalloc(N * z.slots, sizeof(float), e));
}

/* Block l's W_Q, W_K, W_V (H, D, dh) -> t->qkv_w[l] (QKV, D) and b_Q, b_K, b_V
 * (H, dh) -> its qkv_b, the queries' times 1/sqrt(dh) (the forward pass
 * scales the scores instead: the same to rounding); its distance table
 * (H, W) -> its distance2 block (H, 2W). scratch: (QKV*D + H*W) floats. */
static int pack_attention(struct TfGenerator *t, const ModelConfig *c, int l, float *scratch, Error *e) {
    TfSizes z = tf_sizes(c);
    const TfBlockViews *b = &t->w.block[l];
    float scale = 1.0f / sqrtf((float)z.dh), *bias = t->qkv_b + (size_t)l * z.QKV;
    float *distance2 = t->distance2 + (size_t)l * z.H * 2 * z.W;
    slm_pack_qkv(b->W_Q, b->W_K, b->W_V, z.H, z.D, z.dh, z.dh, scratch);
    for (size_t i = 0; i < (size_t)z.HV * z.D; i++) scratch[i] *= scale;
    for (int r = 0; r < z.HV; r++) {
        bias[r] = b->b_Q[r] * scale;
        bias[z.HV + r] = b->b_K[r];
        bias[2 * z.HV + r] = b->b_V[r];
    }
    float *table = scratch + (size_t)z.QKV * z.D;
    slm_transformer_distance_table(c, b, table);
    for (int h = 0; h < z.H; h++)
        for (int k = 0; k < 2 * z.W; k++)
            distance2[(size_t)h * 2 * z.W + k] = table[(size_t)h * z.W + (2 * z.W - 1 - k) % z.W];
    return slm_dense16_pack(&t->qkv_w[l], scratch, z.D, 1, z.QKV, z.D, e);
}

/* The weights of every product in blocks of 16 rows (the MLP's where F > 0) (TransformerLens's W_O,
 * W_in, W_out, W_U are (in, out): their rows are the columns here). */
static int pack_weights(struct TfGenerator *t, const ModelConfig *c, Error *e) {
    TfSizes z = tf_sizes(c);
    float *scratch = xmalloc(((size_t)z.QKV * z.D + (size_t)z.H * z.W) * sizeof(float), e);
    int ok = scratch != NULL;
    for (int l = 0; ok && l < c->n_layers; l++) {
        const TfBlockViews *b = &t->w.block[l];
        ok = !pack_attention(t, c, l, scratch, e) && !slm_dense16_pack(&t->W_O[l], b->W_O, 1, z.D, z.D, z.HV, e) &&
             (z.F == 0 || (!slm_dense16_pack(&t->W_in[l], b->W_in, 1, z.F, z.F, z.D, e) &&
                           !slm_dense16_pack(&t->W_out[l], b->W_out, 1, z.D, z.D, z.F, e)));
    }
    free(scratch);
    size_t token_stride = t->w.W_U_tied ? (size_t)z.D : 1, dim_stride = t->w.W_U_tied ? 1 : (size_t)z.V; /* W_E's */
    return ok && !slm_dense16_pack(&t->W_U, t->w.W_U, token_stride, dim_stride, z.V, z.D, e) ? 0 : -1;
}

static void state_free(GeneratorBatch *g);

int slm_tf_generator_init(GeneratorBatch *g, const Model *m, const Ablation *ablation, int n, Error *e) {
    const ModelConfig *c = &m->cfg;
    *g = (GeneratorBatch){.model = m, .n = n};
    if (n < 1) return FAIL(e, "ask for 1 or more samples", "a batch of %d samples", n);
    int last = ablation ? slm_head_set_last(&ablation->heads) : -1;
    if (last >= c->n_layers * c->n_heads || (last >= 0 && ablation->mode == ABLATE_MEAN && !ablation->mean))
        return FAIL(e, "name heads of this model's blocks; for --ablate-mode mean, give the heads' mean outputs",
                    "cannot switch off head %d of a model of %d heads%s", last, c->n_layers * c->n_heads,
                    last < c->n_layers * c->n_heads ? " without their mean outputs" : "");
    if (ablation) g->ablation = *ablation;
    struct TfGenerator *t = g->state = xcalloc(1, sizeof *t, e);
    int ok = t && (g->pos = xcalloc((size_t)n, sizeof(int), e)) &&
             (g->logits = xcalloc((size_t)n * c->vocab_size, sizeof(float), e)) && alloc_buffers(t, c, n, e);
    if (ok) slm_transformer_views(m, m->params, &t->w);
    if (!ok || pack_weights(t, c, e)) { /* this init's buffers */
        state_free(g);
        free(g->pos);
        free(g->logits);
        *g = (GeneratorBatch){0};
        return -1;
    }
    return 0;
}

static void bf16_free(struct TfBf16 *b) {
    if (!b) return;
    for (int l = 0; l < STORYLM_MAX_TF_LAYERS; l++) {
        slm_dense_bf16_free(&b->qkv_w[l]);
        slm_dense_bf16_free(&b->W_O[l]);
        slm_dense_bf16_free(&b->W_in[l]);
        slm_dense_bf16_free(&b->W_out[l]);
    }
    slm_dense_bf16_free(&b->W_U);
    slm_bf16_inputs_free(&b->in);
    free(b);
}

/* t's FP32 products packed again in BF16 for n samples; NULL with e set when out of memory. */
static struct TfBf16 *bf16_pack(const struct TfGenerator *t, const ModelConfig *c, int n, Error *e) {
    TfSizes z = tf_sizes(c);
    struct TfBf16 *b = xcalloc(1, sizeof *b, e);
    if (!b) return NULL;
    int widest = z.D > z.HV ? z.D : z.HV;
    int ok = !slm_bf16_inputs_init(&b->in, n, widest > z.F ? widest : z.F, e);
    for (int l = 0; ok && l < c->n_layers; l++)
        ok = !slm_dense_bf16_from16(&b->qkv_w[l], &t->qkv_w[l], e) &&
             !slm_dense_bf16_from16(&b->W_O[l], &t->W_O[l], e) &&
             (z.F == 0 || (!slm_dense_bf16_from16(&b->W_in[l], &t->W_in[l], e) &&
                           !slm_dense_bf16_from16(&b->W_out[l], &t->W_out[l], e)));
    if (ok && !slm_dense_bf16_from16(&b->W_U, &t->W_U, e)) return b;
    bf16_free(b);
    return NULL;
}

int slm_tf_generator_set_precision(GeneratorBatch *g, Precision p, Error *e) {
    struct TfGenerator *t = g->state;
    if (slm_precision_check(p, e)) return -1;
    if (p == PRECISION_BF16 && !t->bf16 && !(t->bf16 = bf16_pack(t, &g->model->cfg, g->n, e))) return -1;
    if (p == PRECISION_FP32) bf16_free(t->bf16), t->bf16 = NULL;
    return 0;
}

static void state_free(GeneratorBatch *g) {
    struct TfGenerator *t = g->state;
    if (!t) return;
    bf16_free(t->bf16);
    for (int l = 0; l < STORYLM_MAX_TF_LAYERS; l++) {
        slm_dense16_free(&t->qkv_w[l]);
        slm_dense16_free(&t->W_O[l]);
        slm_dense16_free(&t->W_in[l]);
        slm_dense16_free(&t->W_out[l]);
    }
    slm_dense16_free(&t->W_U);
    void *bufs[] = {t->qkv_b, t->distance2, t->keys, t->values, t->resid, t->x, t->qkv, t->z, t->mlp, t->scores};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) free(bufs[i]);
    free(t);
    g->state = NULL;
}

void slm_tf_generator_free(GeneratorBatch *g) {
    state_free(g);
    free(g->pos);
    free(g->logits);
    *g = (GeneratorBatch){0};
}

void slm_tf_generator_copy(GeneratorBatch *g, int from, int to) {
    struct TfGenerator *t = g->state;
    size_t V = (size_t)g->model->cfg.vocab_size;
    g->pos[to] = g->pos[from];
    memcpy(t->keys + to * t->cache, t->keys + from * t->cache, t->cache * sizeof(float));
    memcpy(t->values + to * t->cache, t->values + from * t->cache, t->cache * sizeof(float));
    memcpy(g->logits + to * V, g->logits + from * V, V * sizeof(float));
}

/* For j < k: sample which[j]'s x (D) = LN(its resid (D)) with weight w, bias b (D). */
static void layernorm(struct TfGenerator *t, int D, const float *w, const float *b, const int *which, int k) {
    for (int j = 0; j < k; j++) {
        float mean, rstd;
        size_t at = (size_t)which[j] * D;
        slm_layernorm_forward(t->resid + at, w, b, 1, D, t->x + at, &mean, &rstd);
    }
}

/* For j < k: sample which[j]'s resid (D) += its x (D). */
static void add_x(struct TfGenerator *t, int D, const int *which, int k) {
    for (int j = 0; j < k; j++) {
        float *resid = t->resid + (size_t)which[j] * D, *x = t->x + (size_t)which[j] * D;
        for (int i = 0; i < D; i++) resid[i] += x[i];
    }
}

/* Head h of block l of sample s at position t: its query q (dh, already
 * scaled) against the cached keys of the n newest slots -> out (dh). */
static void head_attend(struct TfGenerator *G, const TfSizes *z, int s, int l, int h, int t, const float *q,
                        float *out) {
    int lh = l * z->H + h, n = t + 1 < z->W ? t + 1 : z->W, newest = t % z->W;
    /* slot j holds the key (newest - j) mod W back */
    const float *bias = G->distance2 + (size_t)lh * 2 * z->W + (z->W - 1 - newest);
    const float *keys = G->keys + s * G->cache + (size_t)lh * z->slots * z->dh;
    float *sc = G->scores + (size_t)s * z->slots;
    slm_query_key_scores(q, z->dh, keys, bias, n, sc);
    slm_softmax_weights(sc, n);
    slm_blend_values_by_slot(sc, n, G->values + s * G->cache + (size_t)lh * z->slots * z->dh, z->dh, out);
}

/* Block l, sample s at position t: its qkv's key and value of every head
 * into the cache (queries and keys turned for rope), then each head's
 * output into its z (H*dh), or --ablate's 0 or mean. */
static void heads_step(GeneratorBatch *g, const TfSizes *z, int s, int l) {
    const ModelConfig *c = &g->model->cfg;
    struct TfGenerator *G = g->state;
    int t = g->pos[s], slot = t % z->W, dh = z->dh;
    float *qkv = G->qkv + (size_t)s * z->QKV, *zs = G->z + (size_t)s * z->HV;
    for (int h = 0; h < z->H; h++) {
        int lh = l * z->H + h;
        float *q = qkv + h * dh, *k = qkv + z->HV + h * dh, *v = qkv + 2 * z->HV + h * dh;
        if (c->pos == POS_ROPE) slm_rope_turn(dh, t, 1, q), slm_rope_turn(dh, t, 1, k);
        float *keys = G->keys + s * G->cache + (size_t)lh * z->slots * dh;
        float *values = G->values + s * G->cache + (size_t)lh * z->slots * dh;
        for (int i = 0; i < dh; i++) keys[slm_key_at(dh, i, slot)] = k[i], values[slm_key_at(dh, i, slot)] = v[i];
        if (!slm_head_set_has(&g->ablation.heads, lh))
            head_attend(G, z, s, l, h, t, q, zs + h * dh);
        else if (g->ablation.mode == ABLATE_MEAN) /* --ablate: z set to the head's mean, or to 0 */
            memcpy(zs + h * dh, g->ablation.mean + (size_t)lh * dh, (size_t)dh * sizeof(float));
        else
            memset(zs + h * dh, 0, (size_t)dh * sizeof(float));
    }
}

/* Block l for which[j], j < k: resid (D) += attn(LN1(resid)); each
 * product one pass over its weights for all k. */
void slm_tf_gen_attn(GeneratorBatch *g, int l, const int *which, int k) {
    struct TfGenerator *G = g->state;
    TfSizes z = tf_sizes(&g->model->cfg);
    const TfBlockViews *b = &G->w.block[l];
    const struct TfBf16 *B = G->bf16;
    int D = z.D;
    layernorm(G, D, b->ln1_w, b->ln1_b, which, k);
    slm_dense_at(&G->qkv_w[l], B ? &B->qkv_w[l] : NULL, B ? &B->in : NULL, G->qkv_b + (size_t)l * z.QKV, G->x, D, which,
                 k, G->qkv, z.QKV);
    for (int j = 0; j < k; j++) heads_step(g, &z, which[j], l);
    if (g->steer.n) slm_steer_rows(&g->steer, HOOK_Z, l, G->z, z.HV, which, k);
    slm_dense_at(&G->W_O[l], B ? &B->W_O[l] : NULL, B ? &B->in : NULL, b->b_O, G->z, z.HV, which, k, G->x, D);
    add_x(G, D, which, k);
    if (g->steer.n) slm_steer_rows(&g->steer, HOOK_RESID_MID, l, G->resid, D, which, k);
}

/* Block l for which[j], j < k: resid (D) += MLP(LN2(resid)) (F neurons). */
void slm_tf_gen_mlp(GeneratorBatch *g, int l, const int *which, int k) {
    struct TfGenerator *G = g->state;
    TfSizes z = tf_sizes(&g->model->cfg);
    const TfBlockViews *b = &G->w.block[l];
    const struct TfBf16 *B = G->bf16;
    int D = z.D;
    layernorm(G, D, b->ln2_w, b->ln2_b, which, k);
    slm_dense_at(&G->W_in[l], B ? &B->W_in[l] : NULL, B ? &B->in : NULL, b->b_in, G->x, D, which, k, G->mlp, z.F);
    for (int j = 0; j < k; j++) {
        float *mlp = G->mlp + (size_t)which[j] * z.F;
        slm_act_forward((ActFn)g->model->cfg.act, mlp, z.F, mlp);
    }
    if (g->steer.n) slm_steer_rows(&g->steer, HOOK_MLP_POST, l, G->mlp, z.F, which, k);
    slm_dense_at(&G->W_out[l], B ? &B->W_out[l] : NULL, B ? &B->in : NULL, b->b_out, G->mlp, z.F, which, k, G->x, D);
    add_x(G, D, which, k);
}

/* Sample s's resid (D) = W_E[x] + its position's row (--pos absolute or sinusoidal). */
static void embed(GeneratorBatch *g, int s, int32_t x) {
    const ModelConfig *c = &g->model->cfg;
    struct TfGenerator *G = g->state;
    int D = c->row_dim, t = g->pos[s];
    float *resid = G->resid + (size_t)s * D, *tag = G->x + (size_t)s * D;
    memcpy(resid, G->w.W_E + (size_t)x * D, (size_t)D * sizeof(float));
    if (G->w.W_pos) {
        const float *row = G->w.W_pos + (size_t)(t < c->window ? t : c->window - 1) * D;
        for (int i = 0; i < D; i++) resid[i] += row[i];
    } else if (c->pos == POS_SINUSOIDAL) {
        slm_sinusoid_tag(t, D, tag);
        for (int i = 0; i < D; i++) resid[i] += tag[i];
    }
}

void slm_tf_gen_embed(GeneratorBatch *g, const int *which, const int32_t *tokens, int k) {
    for (int j = 0; j < k; j++) embed(g, which[j], tokens[j]);
    slm_tf_gen_steer_resid(g, HOOK_EMBED, 0, which, k); /* hook_embed's additions go to the stream */
}

void slm_tf_gen_steer_resid(GeneratorBatch *g, HookPoint p, int l, const int *which, int k) {
    struct TfGenerator *G = g->state;
    if (g->steer.n) slm_steer_rows(&g->steer, p, l, G->resid, (size_t)g->model->cfg.row_dim, which, k);
}

/* For which[j], j < k: logits (V) = LN_final(resid) W_U + b_U, then the position moves on. */
void slm_tf_gen_final(GeneratorBatch *g, const int *which, int k) {
    struct TfGenerator *G = g->state;
    TfSizes z = tf_sizes(&g->model->cfg);
    layernorm(G, z.D, G->w.ln_final_w, G->w.ln_final_b, which, k);
    if (g->steer.n) slm_steer_rows(&g->steer, HOOK_LN_FINAL, 0, G->x, z.D, which, k);
    slm_dense_at(&G->W_U, G->bf16 ? &G->bf16->W_U : NULL, G->bf16 ? &G->bf16->in : NULL, G->w.b_U, G->x, z.D, which, k,
                 g->logits, z.V);
    if (g->steer.n) slm_steer_rows(&g->steer, HOOK_LOGITS, 0, g->logits, z.V, which, k);
    for (int j = 0; j < k; j++) g->pos[which[j]]++;
}

/* The transformer's step: embed, each block's attention part then MLP part, the final LN and W_U. */
static void generator_feed(GeneratorBatch *g, const int *which, const int32_t *tokens, int k, int first) {
    (void)first; /* each sample's scratch is its own row */
    slm_tf_gen_embed(g, which, tokens, k);
    for (int l = 0; l < g->model->cfg.n_layers; l++) {
        slm_tf_gen_steer_resid(g, HOOK_RESID_PRE, l, which, k);
        slm_tf_gen_attn(g, l, which, k);
        slm_tf_gen_mlp(g, l, which, k);
        slm_tf_gen_steer_resid(g, HOOK_RESID_POST, l, which, k); /* blocks.l.hook_mlp_out's additions too */
    }
    slm_tf_gen_final(g, which, k);
}

const GeneratorOps slm_transformer_generator = {
    .init = slm_tf_generator_init,
    .free = slm_tf_generator_free,
    .copy = slm_tf_generator_copy,
    .feed = generator_feed,
    .set_precision = slm_tf_generator_set_precision,
    .steer_points = SLM_TF_STEER_POINTS | 1u << HOOK_RESID_MID | 1u << HOOK_MLP_POST,
};
