/* The chapter's readout's generator, the attention network's and window8's
 * (arch_shared.h; generate.h describes the batch and its layout for speed).
 * The arithmetic is slm_model_forward's for one position, so the two agree
 * to float rounding. */
#include "arch_shared.h"
#include "storylm/dense_bf16.h"
#include "storylm/generator_batch.h"
#include "storylm/head_set.h"
#include "storylm/kernels16.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* --precision bf16: each layer's query, key and value weights (qkv_w's
 * block of layer l as (QKV, Din)), the hidden and output layers', packed in
 * BF16, and each sample's input to the next product as pairs (step of them
 * a sample, the widest input's). */
struct GenBf16 {
    DenseBf16 qkv[STORYLM_MAX_LAYERS], hidden, output;
    Bf16Inputs in;
};

static void bf16_free(struct GenBf16 *b) {
    if (!b) return;
    for (int l = 0; l < STORYLM_MAX_LAYERS; l++) slm_dense_bf16_free(&b->qkv[l]);
    slm_dense_bf16_free(&b->hidden);
    slm_dense_bf16_free(&b->output);
    slm_bf16_inputs_free(&b->in);
    free(b);
}

static int qkv_width(const ModelConfig *c) { return c->n_heads * (2 * c->key_dim + c->value_dim); }

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
    float scale = slm_score_scale(c);                         /* --score: 1/sqrt(kd) for scaled-dot, else 1 */
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
        for (int k = 0; k < 2 * W; k++)
            distance2[(size_t)h * 2 * W + k] = distance[(size_t)h * W + (2 * W - 1 - k) % W];
}

/* The first layer's keys and values of each token, shared by the samples.
 * Its input is the token's row alone where no position is added to the row
 * (--pos distance, none, alibi, t5: position enters through the scores) and
 * none turns the keys (--pos rope), so a head's key and value in a slot are
 * the slot's token's, the same bits for every sample and position. The
 * samples' heads then read a token's row of this table (hot in the core's
 * caches: a story uses a few hundred tokens) and the slots' rows instead
 * of their own caches (768 bytes a slot), which 64 samples read from
 * beyond the core's caches every step. Rows are given in the order the
 * tokens come, so the few hundred sit together (a row a token id left
 * most of a megabyte's pages to be faulted in, one at a time). Under
 * --precision bf16 the rows are the BF16 product's (its caches' bits), and
 * a change of precision empties the table. What the table holds is not
 * written into the caches while the table is read; before a step reads a
 * sample's caches again (a direction added at hook_embed, or the sample
 * alone) its slots are written from the table. */
struct TokenTable {
    int32_t *slot_rows;   /* (n, W) the row of the token in each sample's slot */
    int32_t *row_of;      /* (V) token t's row, -1 before it first comes */
    int rows;             /* rows given so far */
    float *values;        /* (H, V, vd) head h's value of row r at (h V + r) vd */
    float *keys;          /* (H, V, 8) head h's key of row r; NULL: the keys from the caches (a key of other
                           * than 8 components, or --score additive's, which has its own scores) */
    float *queries;       /* (V, H * 8) row r's queries (turned as the step turns them), with the keys: a step
                           * that reads the table copies them instead of each sample's product */
    float *qkv;           /* (QKV) scratch: a token's queries, keys, values */
    uint32_t *pairs;      /* (D/2) scratch: a token's row as BF16 pairs (--precision bf16) */
    unsigned char *stale; /* (n) 1: the sample's first-layer cache lacks slots of the table's */
    int use;              /* this step's first layer reads the table (decided before its threads) */
    int off;              /* never read again: the precision changed mid-story (token_table_empty) */
};

/* Whether the first layer's keys and values depend on the token alone. */
static int token_table_fits(const ModelConfig *c) {
    return slm_model_heads(c) > 0 && c->pos != POS_ABSOLUTE && c->pos != POS_SINUSOIDAL && c->pos != POS_ROPE;
}

static void token_table_free(struct TokenTable *t) {
    if (!t) return;
    free(t->slot_rows), free(t->row_of), free(t->values), free(t->qkv), free(t->pairs), free(t->stale);
    /* keys and queries: in values' block */
    free(t);
}

static struct TokenTable *token_table_alloc(const ModelConfig *c, int n, Error *e) {
    size_t H = c->n_heads, V = c->vocab_size;
    struct TokenTable *t = xcalloc(1, sizeof *t, e);
    if (!t) return NULL;
    /* the values, keys and queries in one block of whole 2 MB pages (slm_cache_alloc's, faulted in here): the
     * heads read rows all over it, which in 4 KB pages were misses of the core's address cache */
    int keys = c->key_dim == 8 && c->score != SCORE_ADDITIVE;
    size_t values = H * V * c->value_dim, floats = values + (keys ? 2 * H * V * 8 : 0);
    size_t page = ((size_t)2 << 20) / sizeof(float);
    int ok = (t->slot_rows = xcalloc((size_t)n * c->window, sizeof(int32_t), e)) &&
             (t->values = slm_cache_alloc((floats + page - 1) / page * page, e)) &&
             (t->row_of = xmalloc(V * sizeof(int32_t), e)) &&
             (t->qkv = xmalloc((size_t)qkv_width(c) * sizeof(float), e)) &&
             (t->pairs = xcalloc((size_t)(c->row_dim + 1) / 2, sizeof(uint32_t), e)) && (t->stale = xcalloc(n, 1, e));
    if (ok && keys) t->keys = t->values + values, t->queries = t->keys + H * V * 8;
    for (size_t i = 0; ok && i < V; i++) t->row_of[i] = -1;
    if (!ok) token_table_free(t);
    return ok ? t : NULL;
}

/* Whether this step's first layer reads the token table: not with a
 * direction added to the rows, and not when a test asks for the caches
 * alone. */
static int token_table_on(const GeneratorBatch *g) {
    if (!g->token_table || g->token_table->off || g->cache_only) return 0;
    for (int i = 0; i < g->steer.n; i++)
        if (g->steer.add[i].point == HOOK_EMBED) return 0;
    return 1;
}

static int key_slots(const ModelConfig *c);

/* Sample s's first-layer cache <- the table's keys (if it has them) and
 * values of each slot written: the bits new_query_key_value would have
 * written there. */
static void cache_from_table(GeneratorBatch *g, int s) {
    const ModelConfig *c = &g->model->cfg;
    const struct TokenTable *t = g->token_table;
    int W = c->window, H = c->n_heads, kd = c->key_dim, vd = c->value_dim, V = c->vocab_size;
    int n = g->pos[s] < W ? g->pos[s] : W, layers = slm_model_layers(c);
    float *keys = g->keys + (size_t)s * layers * H * kd * key_slots(c),
          *values = g->values + (size_t)s * layers * H * W * vd;
    for (int slot = 0; slot < n; slot++) {
        size_t r = (size_t)t->slot_rows[(size_t)s * W + slot];
        for (int h = 0; h < H; h++) {
            memcpy(values + ((size_t)h * W + slot) * vd, t->values + ((size_t)h * V + r) * vd, vd * sizeof(float));
            for (int i = 0; t->keys && i < kd; i++)
                keys[(size_t)h * kd * key_slots(c) + slm_key_at(kd, i, slot)] = t->keys[((size_t)h * V + r) * kd + i];
        }
    }
}

/* Before a step of tokens (k) to samples which: the tokens not yet in the
 * table -> their first layer's keys and values, computed as
 * new_query_key_value computes them from the row (also in steps that read
 * the caches: their slots are read later); whether the step reads the
 * table (many samples: one alone reads its cache faster, in the core's
 * caches, than the table's rows turned in registers: 10% fewer tokens a
 * CPU-second); a sample whose cache the step reads has it written first. */
static void token_table_prepare(GeneratorBatch *g, const int *which, const int32_t *tokens, int k) {
    if (!g->token_table) return;
    if (g->token_table->off) { /* the caches alone from here on */
        g->token_table->use = 0;
        return;
    }
    const ModelConfig *c = &g->model->cfg;
    struct TokenTable *t = g->token_table;
    int D = c->row_dim, H = c->n_heads, kd = c->key_dim, vd = c->value_dim, V = c->vocab_size;
    for (int j = 0; j < k; j++) {
        int32_t id = tokens[j], r = t->rows;
        if (t->row_of[id] >= 0) continue;
        const float *row = g->model->embedding + (size_t)id * D;
        if (g->bf16) { /* the product new_query_key_value makes of the row in BF16: its bits */
            static const int alone = 0;
            slm_dense_bf16_pairs(row, D, NULL, 0, t->pairs);
            slm_dense_bf16(&g->bf16->qkv[0], NULL, t->pairs, 0, &alone, 1, t->qkv, 0);
        } else {
            slm_row_times_matrix(g->qkv_w, D, qkv_width(c), row, D, NULL, t->qkv);
        }
        slm_score_token_qk_with(c, &g->score[0], 0, t->qkv); /* as the caches' keys (--score general turns queries) */
        for (int h = 0; h < H; h++) {
            memcpy(t->values + ((size_t)h * V + r) * vd, t->qkv + 2 * H * kd + h * vd, vd * sizeof(float));
            if (t->keys) memcpy(t->keys + ((size_t)h * V + r) * kd, t->qkv + (H + h) * kd, kd * sizeof(float));
        }
        if (t->queries) memcpy(t->queries + (size_t)r * H * kd, t->qkv, (size_t)H * kd * sizeof(float));
        t->row_of[id] = t->rows++;
    }
    t->use = k > 1 && token_table_on(g);
    for (int j = 0; j < k; j++) {
        if (!t->use && t->stale[which[j]]) cache_from_table(g, which[j]);
        t->stale[which[j]] = (unsigned char)t->use;
    }
}

/* Sizes of one sample's part of each per-sample buffer. */
typedef struct SampleSizes {
    size_t keys, values, recent, qkv, z, hidden, logits;
} SampleSizes;

/* Slots of a head's key cache (slm_key_at's layout). */
static int key_slots(const ModelConfig *c) { return slm_key_slots(c->window); }

static SampleSizes sample_sizes(const ModelConfig *c) {
    int att = slm_model_heads(c) > 0; /* the chapter's heads (the transformer has its own generator) */
    size_t H = c->n_heads * (size_t)slm_model_layers(c), W = c->window; /* every layer's heads */
    return (SampleSizes){.keys = att ? H * key_slots(c) * c->key_dim : 0,
                         .values = att ? H * W * c->value_dim : 0,
                         .recent = c->context > 0 ? (size_t)c->context : 1,
                         .qkv = att ? (size_t)qkv_width(c) : 0,
                         .z = slm_model_hidden_input_dim(c),
                         .hidden = c->hidden_dim,
                         .logits = c->vocab_size};
}

static void generator_free(GeneratorBatch *g);

static int generator_init(GeneratorBatch *g, const Model *m, const Ablation *ablation, int n, Error *e) {
    const ModelConfig *c = &m->cfg;
    *g = (GeneratorBatch){.model = m, .n = n};
    if (ablation) g->ablation = *ablation;
    if (n < 1) return FAIL(e, "ask for 1 or more samples", "a batch of %d samples", n);
    SampleSizes sz = sample_sizes(c);
    size_t L = (size_t)slm_model_layers(c), H = c->n_heads * L, W = c->window, N = (size_t)n;
    size_t Z = sz.z;
    int ok = !slm_dense16_pack(&g->hidden_w, m->hidden_w, Z, 1, c->hidden_dim, (int)Z, e) &&
             !slm_dense16_pack(&g->output_w, m->output_w, c->hidden_dim, 1, c->vocab_size, c->hidden_dim, e) &&
             (g->pos = xcalloc(N, sizeof(int), e)) && (g->recent = xcalloc(N * sz.recent, sizeof(int32_t), e)) &&
             (g->z = xcalloc(N * Z, sizeof(float), e)) &&
             (g->scores = xcalloc(N * 4 * key_slots(c), sizeof(float), e)) &&
             (g->rows = xcalloc(N * c->row_dim, sizeof(float), e)) &&
             (g->hidden = xcalloc(N * sz.hidden, sizeof(float), e)) &&
             (g->logits = xcalloc(N * sz.logits, sizeof(float), e));
    if (ok && sz.keys)
        ok = (g->keys = slm_cache_alloc(N * sz.keys, e)) && (g->values = slm_cache_alloc(N * sz.values, e)) &&
             (g->qkv_w = xmalloc(L * qkv_w_size(c) * sizeof(float), e)) &&
             (g->distance2 = xcalloc(H * 2 * W + 16, sizeof(float), e)) &&
             (g->qkv = xmalloc(N * sz.qkv * sizeof(float), e)) && (g->layers = xcalloc(L, sizeof(Model), e)) &&
             (g->score = xcalloc(L, sizeof(ScoreTensors), e));
    if (ok && token_table_fits(c) && n > 1) /* one sample's cache stays in the core's caches */
        ok = (g->token_table = token_table_alloc(c, n, e)) != NULL;
    if (!ok) {
        generator_free(g);
        return -1;
    }
    if (sz.keys) {
        float *table = xmalloc(H * W * sizeof(float), e);
        if (!table) {
            generator_free(g);
            return -1;
        }
        for (int l = 0; l < (int)L; l++) {
            slm_model_layer_view(m, l, &g->layers[l]);
            slm_score_tensors(&g->layers[l], &g->score[l]);
            pack_weights(g, &g->layers[l], l, table);
        }
        free(table);
    }
    return 0;
}

static void generator_free(GeneratorBatch *g) {
    bf16_free(g->bf16);
    token_table_free(g->token_table);
    slm_dense16_free(&g->hidden_w);
    slm_dense16_free(&g->output_w);
    void *bufs[] = {g->keys, g->values, g->qkv_w, g->distance2, g->qkv,    g->pos,    g->recent,
                    g->z,    g->scores, g->rows,  g->hidden,    g->logits, g->layers, g->score};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) free(bufs[i]);
    *g = (GeneratorBatch){0};
}

/* Sample from's cache -> sample to's: each head's slots written so far (its
 * keys whole blocks of 16), not the whole window: after a prompt that is a
 * few slots of 256, and 64 samples copied their 12 MB of caches. A slot
 * past them is written before any score or blend reads it. */
static void copy_cache(GeneratorBatch *g, int from, int to) {
    const ModelConfig *c = &g->model->cfg;
    SampleSizes sz = sample_sizes(c);
    int W = c->window, kd = c->key_dim, vd = c->value_dim, n = g->pos[from] < W ? g->pos[from] : W;
    size_t key_floats = (size_t)(n + 15) / 16 * 16 * kd, value_floats = (size_t)n * vd;
    for (int lh = 0; lh < c->n_heads * slm_model_layers(c); lh++) {
        size_t k = (size_t)lh * kd * key_slots(c), v = (size_t)lh * W * vd;
        memcpy(g->keys + to * sz.keys + k, g->keys + from * sz.keys + k, key_floats * sizeof(float));
        memcpy(g->values + to * sz.values + v, g->values + from * sz.values + v, value_floats * sizeof(float));
    }
}

static void generator_copy(GeneratorBatch *g, int from, int to) {
    SampleSizes sz = sample_sizes(&g->model->cfg);
    if (from == to) return;
    if (g->keys) copy_cache(g, from, to);
    if (g->token_table) {
        int32_t *slots = g->token_table->slot_rows;
        size_t W = g->model->cfg.window;
        memcpy(slots + to * W, slots + from * W, W * sizeof(int32_t));
        g->token_table->stale[to] = g->token_table->stale[from];
    }
    g->pos[to] = g->pos[from];
    memcpy(g->recent + to * sz.recent, g->recent + from * sz.recent, sz.recent * sizeof(int32_t));
    memcpy(g->logits + to * sz.logits, g->logits + from * sz.logits, sz.logits * sizeof(float));
}

/* Layer l, for j < k: sample which[j]'s input (its z's row and layer l-1's
 * heads) -> its qkv = input @ layer l's qkv_w (which stays in the
 * first-level cache for all of them); the key and value go to its layer l
 * cache's slot, unless shared: the token table holds them, and its queries
 * too where it holds the keys (the same product of the same row, turned
 * alike: the same bits), which the heads then read from its row. */
static void new_query_key_value(GeneratorBatch *g, int l, const int *which, int k, int shared) {
    const ModelConfig *c = &g->model->cfg;
    int Din = layer_input(c, l), QKV = qkv_width(c), H = c->n_heads, kd = c->key_dim, vd = c->value_dim, W = c->window;
    SampleSizes sz = sample_sizes(c);
    const float *qkv_w = g->qkv_w + (size_t)l * qkv_w_size(c);
    if (shared && g->token_table->queries) return; /* head_attend reads them from the token's row */
    for (int j = 0; j < k; j++) { /* layer l's input: the row, then layer l-1's heads (layer_input_at) */
        const float *z = g->z + which[j] * sz.z, *heads = z + c->row_dim + (size_t)(l > 0 ? l - 1 : 0) * H * vd;
        if (g->bf16)
            slm_dense_bf16_pairs(z, c->row_dim, heads, Din - c->row_dim,
                                 g->bf16->in.pairs + which[j] * g->bf16->in.step);
        else
            slm_row_times_matrix(qkv_w, Din, QKV, z, c->row_dim, heads, g->qkv + which[j] * sz.qkv);
    }
    if (g->bf16) slm_dense_bf16(&g->bf16->qkv[l], NULL, g->bf16->in.pairs, g->bf16->in.step, which, k, g->qkv, sz.qkv);
    for (int j = 0; j < k; j++) {
        int s = which[j], slot = g->pos[s] % W;
        float *qkv = g->qkv + s * sz.qkv;
        slm_score_token_qk_with(c, &g->score[l], g->pos[s],
                                qkv); /* --pos rope, --score general|additive: turned once, cached so */
        float *keys = g->keys + s * sz.keys + (size_t)l * H * kd * key_slots(c),
              *values = g->values + s * sz.values + (size_t)l * H * vd * W;
        if (shared && g->token_table->keys) continue; /* the table holds them */
        for (int h = 0; h < H; h++)
            for (int i = 0; i < kd; i++)
                keys[(size_t)h * kd * key_slots(c) + slm_key_at(kd, i, slot)] = qkv[(H + h) * kd + i];
        for (int h = 0; h < H && !shared; h++)
            memcpy(values + ((size_t)h * W + slot) * vd, qkv + 2 * H * kd + h * vd, vd * sizeof(float));
    }
}

/* Head h of layer l of sample s at its newest position over the cache's n
 * slots -> its weights in sc (key_slots: scratch): scores (query . key /
 * sqrt(kd) + distance score), softmax; returns n. shared: the keys (where
 * the table has them) are the slots' rows of the token table. */
static int head_weights(GeneratorBatch *g, const SampleSizes *sz, int s, int l, int h, int shared, float *sc) {
    const ModelConfig *c = &g->model->cfg;
    int W = c->window, kd = c->key_dim, pos = g->pos[s], lh = l * c->n_heads + h;
    int n = pos + 1 < W ? pos + 1 : W, newest = pos % W;
    /* slot s holds the key (newest - s) mod W back */
    const float *bias = g->distance2 + (size_t)lh * 2 * W + (W - 1 - newest);
    const float *q = g->qkv + s * sz->qkv + h * kd, *keys = g->keys + s * sz->keys + (size_t)lh * kd * key_slots(c);
    if (shared && g->token_table->queries) /* the newest slot's token's row: no copy a sample a step */
        q = g->token_table->queries + (size_t)g->token_table->slot_rows[(size_t)s * W + newest] * c->n_heads * kd +
            h * kd;
    const int32_t *rows = shared ? g->token_table->slot_rows + (size_t)s * W : NULL;
    if (c->score == SCORE_ADDITIVE) { /* --score additive: v . tanh(q~ + k~), a block at a time */
        memcpy(sc, bias, n * sizeof(float));
        for (int j = 0; j < n; j += 16)
            slm_additive_scores_cached(g->score[l].v + h * kd, kd, q, keys + (size_t)j * kd, 16,
                                       n - j < 16 ? n - j : 16, sc + j);
    } else if (shared && g->token_table->keys) { /* the largest score found on the way: the softmax's shift */
        float mx =
            slm_query_key_row_scores(q, g->token_table->keys + (size_t)h * c->vocab_size * kd, rows, bias, n, sc);
        slm_softmax_weights_max(sc, n, mx);
        return n;
    } else {
        slm_query_key_scores(q, kd, keys, bias, n, sc);
    }
    slm_softmax_weights(sc, n);
    return n;
}

/* Head h of layer l of sample s: head_weights, then the blend of the
 * values into out (vd); shared: the values are the slots' rows of the token
 * table. */
static void head_attend(GeneratorBatch *g, const SampleSizes *sz, int s, int l, int h, int shared, float *sc,
                        float *out) {
    const ModelConfig *c = &g->model->cfg;
    int W = c->window, vd = c->value_dim, n = head_weights(g, sz, s, l, h, shared, sc);
    if (shared)
        slm_blend_value_rows(sc, n, g->token_table->values + (size_t)h * c->vocab_size * vd,
                             g->token_table->slot_rows + (size_t)s * W, vd, out);
    else
        slm_blend_values(sc, n, g->values + s * sz->values + (size_t)(l * c->n_heads + h) * W * vd, vd, out);
}

/* Heads h .. h + 3 of the first layer of sample s, read from the token
 * table (vd 16), into out (4 vd): head_weights for each into sc (4
 * key_slots), then the four blended in one pass over the slots, which
 * reads each slot's row once (head_attend's bits). */
static void heads_attend4(GeneratorBatch *g, const SampleSizes *sz, int s, int h, float *sc, float *out) {
    const ModelConfig *c = &g->model->cfg;
    int W = c->window, V = c->vocab_size, n = 0;
    const float *a[4], *tables[4];
    float *outs[4];
    for (int i = 0; i < 4; i++) {
        n = head_weights(g, sz, s, 0, h + i, 1, sc + (size_t)i * key_slots(c)); /* the same n for each */
        a[i] = sc + (size_t)i * key_slots(c);
        tables[i] = g->token_table->values + (size_t)(h + i) * V * 16;
        outs[i] = out + 16 * i;
    }
    slm_blend_value_rows4(a, n, tables, g->token_table->slot_rows + (size_t)s * W, outs);
}

/* Asks the cache for head h of layer l of sample s's keys and values (the
 * slots its scores and blend read), ahead of their use: into the first-level
 * cache when they are next (one sample: the head after the one computing),
 * else into the second (many: the next sample's same head, a sample's
 * heads of compute ahead). With many samples each one's cache has left the
 * core's caches since its last step, and its short stretches, one a head,
 * are too short for the hardware's prefetcher to find in time; a head ahead
 * into the first-level cache measured slower than a sample ahead. shared:
 * the values (and keys) are the token table's, and the slots' rows are
 * asked for. */
static void prefetch_head(const GeneratorBatch *g, const SampleSizes *sz, int s, int l, int h, int next, int shared) {
    const ModelConfig *c = &g->model->cfg;
    int W = c->window, kd = c->key_dim, vd = c->value_dim, lh = l * c->n_heads + h;
    int n = g->pos[s] + 1 < W ? g->pos[s] + 1 : W;
    const char *keys = (const char *)(g->keys + s * sz->keys + (size_t)lh * kd * key_slots(c));
    const char *values = (const char *)(g->values + s * sz->values + (size_t)lh * W * vd);
    size_t key_bytes = (size_t)(n + 15) / 16 * 16 * kd * sizeof(float), value_bytes = (size_t)n * vd * sizeof(float);
    if (shared) values = (const char *)(g->token_table->slot_rows + (size_t)s * W), value_bytes = n * sizeof(int32_t);
    if (shared && g->token_table->keys) key_bytes = 0;
    if (next) { /* the hint is a constant in each call */
        for (size_t b = 0; b < key_bytes; b += 64) __builtin_prefetch(keys + b, 0, 3);
        for (size_t b = 0; b < value_bytes; b += 64) __builtin_prefetch(values + b, 0, 3);
    } else {
        for (size_t b = 0; b < key_bytes; b += 64) __builtin_prefetch(keys + b, 0, 2);
        for (size_t b = 0; b < value_bytes; b += 64) __builtin_prefetch(values + b, 0, 2);
    }
}

/* Whether heads lh .. lh + m - 1 are all switched on. */
static int heads_live(const GeneratorBatch *g, int lh, int m) {
    for (int i = 0; i < m; i++)
        if (slm_head_set_has(&g->ablation.heads, lh + i)) return 0;
    return 1;
}

/* The rows (k, D) and, layer by layer, the heads' outputs of the newest
 * tokens -> each sample's z (Z), with sc (4 key_slots) the heads' scratch of
 * scores; a switched-off head's slot replaced before the layer above reads
 * it. The first layer reads the token table when the step's prepare said so. */
static void attention_z(GeneratorBatch *g, const float *rows, const int *which, int k, float *sc) {
    const ModelConfig *c = &g->model->cfg;
    int D = c->row_dim, vd = c->value_dim, H = c->n_heads;
    SampleSizes sz = sample_sizes(c); /* once a step: the heads' calls below are 1,024 a step of 64 samples */
    size_t Z = sz.z;
    for (int j = 0; j < k; j++) memcpy(g->z + which[j] * Z, rows + (size_t)j * D, D * sizeof(float));
    int table = g->token_table && g->token_table->use;
    for (int l = 0; l < slm_model_layers(c); l++) {
        int shared = table && l == 0; /* the layers above read the heads below, no token's alone */
        new_query_key_value(g, l, which, k, shared);
        for (int j = 0; j < k; j++)
            for (int h = 0, lh = l * H; h < H; h++, lh++) {
                float *out = g->z + which[j] * Z + D + (size_t)lh * vd;
                if (shared && vd == 16 && h % 4 == 0 && h + 4 <= H && heads_live(g, lh, 4)) {
                    for (int i = 0; i < 4 && j + 1 < k; i++) prefetch_head(g, &sz, which[j + 1], l, h + i, 0, shared);
                    heads_attend4(g, &sz, which[j], h, sc, out);
                    h += 3, lh += 3;
                } else if (slm_head_set_has(&g->ablation.heads, lh)) {
                    for (int i = 0; i < vd; i++)
                        out[i] = g->ablation.mode == ABLATE_MEAN ? g->ablation.mean[lh * vd + i] : 0;
                } else {
                    if (k == 1 && h + 1 < H)
                        prefetch_head(g, &sz, which[j], l, h + 1, 1, shared);
                    else if (j + 1 < k)
                        prefetch_head(g, &sz, which[j + 1], l, h, 0, shared);
                    head_attend(g, &sz, which[j], l, h, shared, sc, out);
                }
            }
        if (g->steer.n) /* blocks.l.attn.hook_z: the heads as the layers above and the hidden layer read them */
            slm_steer_rows(&g->steer, HOOK_Z, l, g->z + D + (size_t)l * H * vd, Z, which, k);
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

static struct GenBf16 *bf16_pack(const GeneratorBatch *g, Error *e) {
    const ModelConfig *c = &g->model->cfg;
    SampleSizes sz = sample_sizes(c);
    int Z = (int)sz.z, Hd = c->hidden_dim, QKV = qkv_width(c), L = slm_model_heads(c) > 0 ? slm_model_layers(c) : 0;
    struct GenBf16 *b = xcalloc(1, sizeof *b, e);
    if (!b) return NULL;
    int ok = !slm_bf16_inputs_init(&b->in, g->n, Z > Hd ? Z : Hd, e);
    for (int l = 0; ok && l < L; l++)
        ok = !slm_dense_bf16_pack(&b->qkv[l], g->qkv_w + (size_t)l * qkv_w_size(c), 1, QKV, QKV, layer_input(c, l), e);
    ok = ok && !slm_dense_bf16_from16(&b->hidden, &g->hidden_w, e) &&
         !slm_dense_bf16_from16(&b->output, &g->output_w, e);
    if (!ok) bf16_free(b);
    return ok ? b : NULL;
}

/* At a change of precision: the token table's rows forgotten (their bits
 * the other precision's), each sample's slots first written from them into
 * its caches. Once a sample has fed a token, its slots hold the earlier
 * precision's keys and values, which a row a token cannot: the table is
 * then off for good (the caches give the bits; a change mid-story is rare). */
static void token_table_empty(GeneratorBatch *g) {
    struct TokenTable *t = g->token_table;
    if (!t) return;
    for (int s = 0; s < g->n; s++) {
        if (t->stale[s]) cache_from_table(g, s), t->stale[s] = 0;
        t->off |= g->pos[s] > 0;
    }
    for (int i = 0; i < g->model->cfg.vocab_size; i++) t->row_of[i] = -1;
    t->rows = 0;
}

static int generator_set_precision(GeneratorBatch *g, Precision p, Error *e) {
    if (slm_precision_check(p, e)) return -1;
    if ((p == PRECISION_BF16) == (g->bf16 != NULL)) return 0;
    struct GenBf16 *b = p == PRECISION_BF16 ? bf16_pack(g, e) : NULL;
    if (p == PRECISION_BF16 && !b) return -1;
    token_table_empty(g);
    bf16_free(g->bf16);
    g->bf16 = b;
    return 0;
}

/* slm_generator_batch_feed for tokens[j] to which[j], j < k, with the rows
 * scratch's rows from first (k, D): one thread's part of a step. */
static void generator_feed(GeneratorBatch *g, const int *which, const int32_t *tokens, int k, int first) {
    const Model *m = g->model;
    float *rows = g->rows + (size_t)first * m->cfg.row_dim;
    const ModelConfig *c = &m->cfg;
    SampleSizes sz = sample_sizes(c);
    int Hd = c->hidden_dim, D = c->row_dim;
    if (slm_model_heads(c) > 0) { /* the rows gathered (k, D) for the one pass over the query, key, value weights */
        struct TokenTable *t = g->token_table; /* each slot's row, the token's (prepare gave it one) */
        for (int j = 0; t && j < k; j++)
            t->slot_rows[(size_t)which[j] * c->window + g->pos[which[j]] % c->window] = t->row_of[tokens[j]];
        for (int j = 0; j < k; j++) {
            memcpy(rows + (size_t)j * D, m->embedding + (size_t)tokens[j] * D, D * sizeof(float));
            slm_position_row_add(m, g->pos[which[j]], rows + (size_t)j * D); /* --pos absolute|sinusoidal */
        }
        if (g->steer.n) slm_steer_rows(&g->steer, HOOK_EMBED, 0, rows, D, NULL, k);
        /* the scores' scratch the thread's own (its first sample's), the same for each of its samples: hot in
         * the core's caches, where a scratch a sample (1 KB) came back from beyond them every step */
        attention_z(g, rows, which, k, g->scores + (size_t)first * 4 * key_slots(c));
    } else {
        for (int j = 0; j < k; j++) window_z(g, which[j], tokens[j]);
    }
    /* hidden = tanh(W1 z + b1), W1 (Hd, Z); logits = W2 hidden + b2, W2 (V, Hd) */
    struct GenBf16 *b = g->bf16;
    if (g->steer.n) slm_steer_rows(&g->steer, HOOK_HIDDEN_IN, 0, g->z, sz.z, which, k);
    slm_dense_at(&g->hidden_w, b ? &b->hidden : NULL, b ? &b->in : NULL, m->hidden_b, g->z, sz.z, which, k, g->hidden,
                 sz.hidden);
    for (int j = 0; j < k; j++) slm_tanh_inplace(g->hidden + which[j] * sz.hidden, Hd);
    if (g->steer.n) slm_steer_rows(&g->steer, HOOK_HIDDEN, 0, g->hidden, sz.hidden, which, k);
    slm_dense_at(&g->output_w, b ? &b->output : NULL, b ? &b->in : NULL, m->output_b, g->hidden, sz.hidden, which, k,
                 g->logits, sz.logits);
    if (g->steer.n) slm_steer_rows(&g->steer, HOOK_LOGITS, 0, g->logits, sz.logits, which, k);
    for (int j = 0; j < k; j++) g->pos[which[j]]++;
}

const GeneratorOps slm_readout_generator = {
    .init = generator_init,
    .free = generator_free,
    .copy = generator_copy,
    .feed = generator_feed,
    .prepare = token_table_prepare,
    .set_precision = generator_set_precision,
    .steer_points = 1u << HOOK_EMBED | 1u << HOOK_Z | 1u << HOOK_HIDDEN_IN | 1u << HOOK_HIDDEN | 1u << HOOK_LOGITS,
};
