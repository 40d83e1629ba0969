/* The chapter's network (`--arch attention`, the default): any number of
 * layers of heads (--layers), every position scheme and score function
 * (--position-scheme, --score), read by the chapter's tanh readout
 * (readout.h). Its configuration, tensor table, initial values, layers of
 * heads forward and backward, activations, hook points and the attention
 * the probes read. The network is drawn in include/storylm/model.h. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../arch_shared.h"
#include "storylm/activations.h"
#include "storylm/arch.h"
#include "storylm/attention.h"
#include "storylm/head_set.h"
#include "storylm/layers.h"
#include "storylm/model_params.h"
#include "storylm/position.h"
#include "storylm/readout.h"
#include "storylm/score.h"

/* ---- configuration ------------------------------------------------------- */

extern const Architecture slm_attention_arch;

static ModelConfig config_default(int vocab_size) {
    return (ModelConfig){.arch = &slm_attention_arch,
                         .vocab_size = vocab_size,
                         .row_dim = 32,
                         .n_heads = 8,
                         .key_dim = 8,
                         .value_dim = 16,
                         .window = 256,
                         .hidden_dim = 128,
                         .context = 8,
                         .n_layers = 1};
}

static int layers(const ModelConfig *c) { return c->n_layers > 1 ? c->n_layers : 1; }

static int heads_per_layer(const ModelConfig *c) { return c->n_heads; }

/* W-1 keys a layer: a layer-2 key's value reads layer 1's heads at its own
 * position, which read W-1 further back. */
static int context_needed(const ModelConfig *c) { return layers(c) * (c->window - 1); }

static int config_check(const ModelConfig *cfg, Error *e) {
    if (slm_readout_check_sizes(cfg, e)) return -1;
    if (cfg->pos < 0 || cfg->pos >= POS_COUNT || cfg->score < 0 || cfg->score >= SCORE_COUNT)
        return FAIL(e, "--position-scheme and --score are for the attention network",
                    "invalid position scheme or score function");
    if (cfg->n_layers < 0 || cfg->n_layers > STORYLM_MAX_LAYERS)
        return FAIL(e, "give --layers from 1 to 4, and only for the attention network", "invalid number of layers %d",
                    cfg->n_layers);
    if (cfg->n_heads > STORYLM_MAX_HEADS || layers(cfg) * cfg->n_heads > STORYLM_MAX_ALL_HEADS)
        return FAIL(e, "use at most 32 heads a layer",
                    "%d layers of %d heads are more than the passes take (%d a layer)", layers(cfg), cfg->n_heads,
                    STORYLM_MAX_HEADS);
    return 0;
}

static const char *const config_keys[] = {"pos", "score", "layers", NULL};

static int config_write(const ModelConfig *c, ConfigPut put, void *ctx, Error *e) {
    return slm_arch_write_variant(c, put, ctx, e) || slm_arch_write_layers(c, put, ctx, e) ? -1 : 0;
}

/* --pos, --score and --layers; a file from before them has none: today's network. */
static int config_read(ModelConfig *c, ConfigGet get, void *ctx, Error *e) {
    if (slm_arch_read_layers(c, get, ctx, STORYLM_MAX_LAYERS, e)) return -1;
    c->act = ACT_GELU;
    return slm_arch_read_variant(c, get, ctx, e);
}

static void describe(const ModelConfig *c, char *buf, size_t size) {
    int n = snprintf(
        buf, size, "architecture  attention: %d heads, queries and keys of %d, values of %d, %d distances, hidden %d\n",
        c->n_heads, c->key_dim, c->value_dim, c->window, c->hidden_dim);
    if (layers(c) > 1 && n >= 0 && (size_t)n < size)
        n += snprintf(buf + n, size - (size_t)n,
                      "layers        %d: layer l+1's heads read the row and layer l's heads\n", layers(c));
    if (n >= 0 && (size_t)n < size)
        snprintf(buf + n, size - (size_t)n, "variant       --position-scheme %s --score %s\n", slm_pos_name(c->pos),
                 slm_score_name(c->score));
}

/* ---- parameters ---------------------------------------------------------- */

static void add_tensor(Model *m, const char *name, int ndim, int d0, int d1, int d2) {
    slm_model_add_tensor(m, name, ndim, d0, d1, d2, slm_model_decays(name));
}

/* Layer l's own tensors (l >= 1 reads the row and layer l-1's heads); the
 * first layer's absolute positions are the row's, not a layer's. */
static void layout_layer(Model *m, const ModelConfig *c, int l) {
    const char *base[] = {"query",        "key",         "value",     "distance", "distance_bucket",
                          "score.weight", "score.query", "score.key", "score.v"};
    const char *n[9];
    for (int i = 0; i < 9; i++) n[i] = slm_model_layer_tensor_name(l, base[i]);
    int in = l == 0 ? c->row_dim : c->row_dim + c->n_heads * c->value_dim;
    add_tensor(m, n[0], 3, c->n_heads, in, c->key_dim);
    add_tensor(m, n[1], 3, c->n_heads, in, c->key_dim);
    add_tensor(m, n[2], 3, c->n_heads, in, c->value_dim);
    if (c->pos == POS_DISTANCE) add_tensor(m, n[3], 2, c->n_heads, c->window, 0);
    if (c->pos == POS_ABSOLUTE && l == 0) add_tensor(m, "position", 2, c->window, c->row_dim, 0);
    if (c->pos == POS_T5) add_tensor(m, n[4], 2, c->n_heads, T5_BUCKETS, 0);
    if (c->score == SCORE_GENERAL) add_tensor(m, n[5], 3, c->n_heads, c->key_dim, c->key_dim);
    if (c->score == SCORE_ADDITIVE) {
        add_tensor(m, n[6], 3, c->n_heads, c->key_dim, c->key_dim);
        add_tensor(m, n[7], 3, c->n_heads, c->key_dim, c->key_dim);
        add_tensor(m, n[8], 2, c->n_heads, c->key_dim, 0);
    }
}

static void layout(Model *m) {
    const ModelConfig *c = &m->cfg;
    add_tensor(m, "embedding", 2, c->vocab_size, c->row_dim, 0);
    for (int l = 0; l < layers(c); l++) layout_layer(m, c, l);
    slm_readout_layout(m);
}

/* --pos and --score's own tensors, from a stream of their own, so that every
 * variant starts from the same embedding, heads and dense layers as the
 * default network of the same seed (and the default draws nothing new):
 * learned positions ("position", "distance_bucket") start at 0 like the
 * distance scores; general's G starts at I/sqrt(kd), so a general model
 * starts as the scaled dot product; additive's A, B and v are Linear-like,
 * U(-1/sqrt(kd), 1/sqrt(kd)). */
static void randomize_variant(const Model *m, uint64_t seed) {
    const ModelConfig *c = &m->cfg;
    int H = c->n_heads, kd = c->key_dim;
    Rng r;
    slm_rng_seed(&r, seed ^ 0x5C0BE5A11D0C0DEULL);
    float *G = (float *)slm_model_param(m, "score.weight");
    for (int h = 0; G && h < H; h++)
        for (int i = 0; i < kd; i++) G[((size_t)h * kd + i) * kd + i] = 1.0f / sqrtf((float)kd);
    const char *additive[] = {"score.query", "score.key", "score.v"};
    for (int i = 0; i < 3; i++) {
        const ParamTensor *t = slm_model_tensor(m, additive[i]);
        if (t) slm_fill_uniform(&r, m->params + t->offset, t->size, 1.0 / sqrt(kd));
    }
}

/* Layer l >= 1's own tensors, from a stream of their own, so that a deeper
 * network of a seed starts with the first layer, embedding and output layer
 * of the one-layer network of that seed: query, key and value Linear-like
 * over their input (row and heads, 160), distance scores 0, the variants'
 * tensors as the first layer's. */
static void randomize_layer(const Model *m, int l, uint64_t seed) {
    Model v;
    slm_model_layer_view(m, l, &v);
    const ModelConfig *c = &v.cfg;
    double bound = 1.0 / sqrt(c->row_dim);
    Rng r;
    slm_rng_seed(&r, seed ^ (0x1A7E5ULL * (uint64_t)(l + 1)) << 20);
    slm_fill_uniform(&r, v.query, (size_t)c->n_heads * c->row_dim * c->key_dim, bound);
    slm_fill_uniform(&r, v.key, (size_t)c->n_heads * c->row_dim * c->key_dim, bound);
    slm_fill_uniform(&r, v.value, (size_t)c->n_heads * c->row_dim * c->value_dim, bound);
    if (v.distance) memset(v.distance, 0, (size_t)c->n_heads * c->window * sizeof(float));
    randomize_variant(&v, seed ^ (uint64_t)l * 0x9E3779B97F4A7C15ULL);
}

/* The first layer's query, key and value (Linear-like over the row) and
 * distance scores (0), drawn between the embedding and the readout. */
static void randomize_heads(Model *m, Rng *r) {
    const ModelConfig *c = &m->cfg;
    double row_bound = 1.0 / sqrt(c->row_dim);
    slm_fill_uniform(r, m->query, (size_t)c->n_heads * c->row_dim * c->key_dim, row_bound);
    slm_fill_uniform(r, m->key, (size_t)c->n_heads * c->row_dim * c->key_dim, row_bound);
    slm_fill_uniform(r, m->value, (size_t)c->n_heads * c->row_dim * c->value_dim, row_bound);
    if (m->distance) memset(m->distance, 0, (size_t)c->n_heads * c->window * sizeof(float));
}

static void randomize(Model *m, uint64_t seed) {
    slm_readout_randomize(m, seed, randomize_heads);
    randomize_variant(m, seed);
    for (int l = 1; l < layers(&m->cfg); l++) randomize_layer(m, l, seed);
}

/* ---- activations ----------------------------------------------------------- */

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

static int activations_init(Activations *a, const ModelConfig *cfg, int max_positions, Error *e) {
    if (slm_readout_activations_init(a, cfg, max_positions, e)) return -1;
    int n_layers = layers(cfg);
    size_t Din = (size_t)cfg->row_dim + (n_layers > 1 ? (size_t)cfg->n_heads * cfg->value_dim : 0);
    size_t N = (size_t)max_positions, Z = (size_t)slm_model_hidden_input_dim(cfg);
    int ok = (a->d_qkv_w = slm_alloc_floats((size_t)slm_qkv_rows(cfg) * Din, e)) != NULL;
    for (int l = 0; ok && l < n_layers; l++) ok = layer_activations_init(a, cfg, l, e) == 0;
    if (ok && n_layers > 1) ok = (a->z_kept = slm_alloc_floats(N * Z, e)) != NULL;
    if (!ok) {
        slm_readout_activations_free(a);
        return -1;
    }
    return 0;
}

static float *layer_qkv(const Activations *a, int l) { return a->layer[l].qkv; }
static float *layer_attention(const Activations *a, int l) { return a->layer[l].att; }
static float *head_output(const Activations *a, int l, int p, int h) {
    const ModelConfig *c = &a->cfg;
    return a->z + (size_t)p * slm_model_hidden_input_dim(c) + c->row_dim +
           ((size_t)l * c->n_heads + (size_t)h) * c->value_dim;
}

/* ---- the passes: tokens -> z (the row, then every layer's heads) -------- */

/* The gradient buffer's view matching a parameter view. */
static float *grad_of(const Model *m, float *grads, const float *param) { return grads + (param - m->params); }

/* A layer's view (slm_model_layer_view) -> its qkv_w (QKV, D): D is the layer's input width. */
static void pack_qkv_weights(const Model *m, float *qkv_w) {
    const ModelConfig *c = &m->cfg;
    slm_pack_qkv(m->query, m->key, m->value, c->n_heads, c->row_dim, c->key_dim, c->value_dim, qkv_w);
}

/* The reverse of pack_qkv_weights, accumulating into the layer's gradients. */
static void unpack_qkv_grads(const Model *m, const float *d_qkv_w, float *d_query, float *d_key, float *d_value) {
    const ModelConfig *c = &m->cfg;
    slm_unpack_qkv_grads(d_qkv_w, c->n_heads, c->row_dim, c->key_dim, c->value_dim, d_query, d_key, d_value);
}

/* z (N, Z): layer l's switched-off heads' slots -> 0 or the head's mean output. */
static void ablate_heads(Activations *a, const Ablation *ab, int l) {
    const ModelConfig *c = &a->cfg;
    int Z = slm_model_hidden_input_dim(c), vd = c->value_dim;
    for (int g = l * c->n_heads; g < (l + 1) * c->n_heads; g++) {
        if (!slm_head_set_has(&ab->heads, g)) continue;
        for (int p = 0; p < a->n_positions; p++) {
            float *slot = a->z + (size_t)p * Z + c->row_dim + (size_t)g * vd;
            if (ab->mode == ABLATE_MEAN)
                memcpy(slot, ab->mean + (size_t)g * vd, vd * sizeof(float));
            else
                memset(slot, 0, vd * sizeof(float));
        }
    }
}

/* Where layer l's input lies in z: the row at column 0 (D wide) and, for
 * l >= 1, the layer below's heads at column *below (HV wide). */
static int heads_column(const ModelConfig *c, int l) { return c->row_dim + l * c->n_heads * c->value_dim; }

/* page: hidden layer */
/* Layer l (lm its view): z's row and layer l-1's heads -> its queries, keys,
 * values, attention (weights kept in att when keep_weights) -> its heads'
 * slot of z, ablated heads replaced. */
static void layer_forward(const Model *lm, Activations *a, int l, int keep_weights) {
    const ModelConfig *c = &a->cfg;
    int N = a->n_positions, Z = slm_model_hidden_input_dim(c), D = c->row_dim, Din = lm->cfg.row_dim;
    int HV = c->n_heads * c->value_dim, QKV = slm_qkv_rows(c);
    LayerActivations *la = &a->layer[l];
    VariantScratch *v = la->scratch.variant;
    pack_qkv_weights(lm, la->qkv_w);
    slm_matmul_at(a->products, 0, 1, QKV, N, D, la->qkv_w, Din, a->z, Z, 0.0f, la->qkv, a->qkv_ld);
    if (l > 0)
        slm_matmul_at(a->products, 0, 1, QKV, N, HV, la->qkv_w + D, Din, a->z + heads_column(c, l - 1), Z, 1.0f,
                      la->qkv, a->qkv_ld);
    for (HookPoint p = HOOK_Q; p <= HOOK_V; p++) slm_hooks_at(lm, a, p, l);
    slm_score_qk_forward(lm, v, la->qkv, a->qkv_ld, N);
    slm_attention_forward(a->products.kernels, &lm->cfg, la->qkv, a->qkv_ld, slm_position_table_for(lm, v->table),
                          a->first_key, N, keep_weights ? la->att : NULL, a->z + heads_column(c, l), Z, &la->scratch);
    if (!slm_head_set_empty(&a->ablation.heads)) ablate_heads(a, &a->ablation, l);
    HookPoint after[] = {HOOK_DISTANCE_SCORE, HOOK_ATTN_SCORES, HOOK_PATTERN, HOOK_Z};
    for (int i = 0; i < 4; i++) slm_hooks_at(lm, a, after[i], l);
}

/* tokens -> z (N, Z): rows, then layer by layer every head's queries, keys,
 * values, attention (its weights kept in layer[l].att when keep_weights) */
static void attention_input(const Model *m, Activations *a, const Batch *b, int keep_weights) {
    const ModelConfig *c = &m->cfg;
    int N = a->n_positions, Z = slm_model_hidden_input_dim(c), D = c->row_dim;
    slm_embedding_forward(m->embedding, b->tokens, N, D, a->z, Z);
    slm_position_rows_forward(m, a->layer[0].scratch.variant->story_pos, N, a->z, Z);
    slm_hooks_at(m, a, HOOK_EMBED, 0);
    layer_forward(m, a, 0, keep_weights);
    for (int l = 1; l < slm_model_layers(c); l++) {
        Model view;
        slm_model_layer_view(m, l, &view);
        layer_forward(&view, a, l, keep_weights);
    }
}

/* page: end */

/* page: backward */
/* Layer l (lm its view): d_z of its heads' slot -> grads of its tensors +=,
 * and d_z of its input += (the row's slot, and layer l-1's heads' slot). */
static void layer_backward(const Model *lm, Activations *a, int l, float *grads) {
    const ModelConfig *c = &a->cfg;
    int N = a->n_positions, Z = slm_model_hidden_input_dim(c), D = c->row_dim, Din = lm->cfg.row_dim;
    int H = c->n_heads, HV = H * c->value_dim, QKV = slm_qkv_rows(c);
    LayerActivations *la = &a->layer[l];
    VariantScratch *v = la->scratch.variant;
    uint32_t skip = slm_head_set_layer(&a->ablation.heads, l, H);
    v->d_additive_v = slm_model_grad(lm, grads, "score.v");
    slm_attention_backward(a->products.kernels, &lm->cfg, la->qkv, a->qkv_ld, a->attention_kept ? la->att : NULL,
                           a->first_key, N, a->d_z + heads_column(c, l), Z, skip, a->d_qkv,
                           slm_position_table_grad(lm, grads, v->d_table), &la->scratch);
    slm_position_distance_backward(lm, v->d_table, grads);
    slm_score_qk_backward(lm, v, a->d_qkv, a->qkv_ld, N, grads);
    slm_matmul_at(a->products, 0, 0, QKV, D, N, a->d_qkv, a->qkv_ld, a->z, Z, 0.0f, a->d_qkv_w, Din);
    if (l > 0)
        slm_matmul_at(a->products, 0, 0, QKV, HV, N, a->d_qkv, a->qkv_ld, a->z + heads_column(c, l - 1), Z, 0.0f,
                      a->d_qkv_w + D, Din);
    unpack_qkv_grads(lm, a->d_qkv_w, grad_of(lm, grads, lm->query), grad_of(lm, grads, lm->key),
                     grad_of(lm, grads, lm->value));
    /* the row (and the heads below) feed z directly and through q, k, v: add the second path */
    slm_matmul_at(a->products, 1, 0, N, D, QKV, a->d_qkv, a->qkv_ld, la->qkv_w, Din, 1.0f, a->d_z, Z);
    if (l > 0)
        slm_matmul_at(a->products, 1, 0, N, HV, QKV, a->d_qkv, a->qkv_ld, la->qkv_w + D, Din, 1.0f,
                      a->d_z + heads_column(c, l - 1), Z);
}

/* d_z (N, Z) -> grads of every layer's tensors, top layer first (a layer's
 * input gradient is whole only once the layers above it added theirs), then
 * of the rows' embedding and positions */
static void attention_input_backward(const Model *m, Activations *a, const Batch *b, float *grads) {
    const ModelConfig *c = &m->cfg;
    int N = a->n_positions, Z = slm_model_hidden_input_dim(c), D = c->row_dim;
    for (int l = slm_model_layers(c) - 1; l > 0; l--) {
        Model view;
        slm_model_layer_view(m, l, &view);
        layer_backward(&view, a, l, grads);
    }
    layer_backward(m, a, 0, grads);
    slm_position_rows_backward(m, a->layer[0].scratch.variant->story_pos, N, a->d_z, Z, grads);
    slm_embedding_backward(grad_of(m, grads, m->embedding), b->tokens, N, D, a->d_z, Z);
}

/* page: end */

static const ReadoutInput heads_input = {attention_input, attention_input_backward};

static int forward(const Model *m, Activations *a, const Batch *b, const Ablation *ab, int to_logits, Error *e) {
    return slm_readout_forward(&heads_input, m, a, b, ab, to_logits, e);
}

static int loss_and_grad(const Model *m, Activations *a, const Batch *b, const Ablation *ab, float scale, float *grads,
                         Error *e) {
    return slm_readout_loss_and_grad(&heads_input, m, a, b, ab, scale, grads, e);
}

static void backward(const Model *m, Activations *a, const Batch *b, float *grads) {
    slm_readout_backward(&heads_input, m, a, b, grads);
}

/* ---- hook points: the row, each layer's heads, the readout --------------- */

static void hook_points(const ModelConfig *c, HookPoints *out) {
    *out = (HookPoints){.before = {HOOK_EMBED},
                        .n_before = 1,
                        .block = {HOOK_Q, HOOK_K, HOOK_V, HOOK_DISTANCE_SCORE, HOOK_ATTN_SCORES, HOOK_PATTERN, HOOK_Z},
                        .n_block = 7,
                        .after = {HOOK_HIDDEN_IN, HOOK_HIDDEN, HOOK_LOGITS},
                        .n_after = 3,
                        .layers = layers(c)};
}

extern const ProbeOps slm_attention_probe_ops; /* attention_probes.c */

const Architecture slm_attention_arch = {
    .name = "attention",
    .summary = "the chapter's network: layers of heads read by one tanh layer; --layers, --position-scheme, --score",
    .readout = READOUT_TANH,
    .takes = TAKES_POSITIONS | TAKES_SCORES | TAKES_LAYERS | TAKES_BF16,
    .max_layers = STORYLM_MAX_LAYERS,
    .config_default = config_default,
    .config_check = config_check,
    .config_write = config_write,
    .config_read = config_read,
    .config_keys = config_keys,
    .layers = layers,
    .describe = describe,
    .heads_per_layer = heads_per_layer,
    .context_needed = context_needed,
    .layout = layout,
    .bind_views = slm_readout_bind_views,
    .randomize = randomize,
    .activations_init = activations_init,
    .activations_free = slm_readout_activations_free,
    .forward = forward,
    .loss_and_grad = loss_and_grad,
    .backward = backward,
    .hook_points = hook_points,
    .generator = &slm_readout_generator,
    .generator_portable = &slm_readout_generator_portable,
    .hook_move = slm_readout_hook_move,
    .layer_qkv = layer_qkv,
    .layer_attention = layer_attention,
    .head_output = head_output,
    .probes = &slm_attention_probe_ops,
};
