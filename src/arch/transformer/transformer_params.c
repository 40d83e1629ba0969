/* The transformer's parameters: its config, its tensor table in
 * TransformerLens's names and shapes, the views the passes read, and its
 * initial values. See transformer.h. */
#include "transformer_params.h"

#include "tf_parts.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "storylm/arch.h"
#include "storylm/model_params.h"
#include "storylm/rng.h"

extern const Architecture slm_transformer_arch;

ModelConfig slm_transformer_config_default(int vocab_size) {
    return (ModelConfig){.arch = &slm_transformer_arch,
                         .vocab_size = vocab_size,
                         .row_dim = 64,
                         .n_heads = 8,
                         .key_dim = 8,
                         .value_dim = 8,
                         .window = 256,
                         .hidden_dim = 256,
                         .context = 8,
                         .pos = POS_ABSOLUTE,
                         .score = SCORE_SCALED_DOT,
                         .n_layers = 2,
                         .act = ACT_GELU};
}

int slm_tf_check_sizes(const ModelConfig *c, Error *e) {
    if (c->vocab_size < 2 || c->row_dim < 1 || c->n_heads < 1 || c->key_dim < 1 || c->window < 1)
        return FAIL(e, NULL, "invalid --arch %s sizes", c->arch->name);
    if (c->row_dim > TF_MAX_D_MODEL)
        return FAIL(e, "use a --d-model of at most 1024", "d_model %d is more than the passes take", c->row_dim);
    if (c->key_dim != c->value_dim)
        return FAIL(e, "give one --d-head", "a transformer's queries and values have one size, d_head (got %d and %d)",
                    c->key_dim, c->value_dim);
    if (c->key_dim > STORYLM_MAX_HEAD_DIM || c->n_heads > STORYLM_MAX_HEADS)
        return FAIL(e, "use at most 32 heads of at most 64", "%d heads of %d are more than the passes take", c->n_heads,
                    c->key_dim);
    if (c->n_layers < 1 || c->n_layers > STORYLM_MAX_TF_LAYERS)
        return FAIL(e, "give --layers from 1 to 8", "invalid number of transformer layers %d", c->n_layers);
    if (c->n_layers * c->n_heads > STORYLM_MAX_ALL_HEADS) /* kept by the two limits above: said should they change */
        return FAIL(e, "use fewer heads or blocks", "%d blocks of %d heads are more than the %d heads a model may have",
                    c->n_layers, c->n_heads, STORYLM_MAX_ALL_HEADS);
    if (c->pos < 0 || c->pos >= POS_COUNT || c->score != SCORE_SCALED_DOT)
        return FAIL(e, "a transformer scores q.k/sqrt(d_head); --score is for the attention network",
                    "invalid position scheme or score function for a transformer");
    return 0;
}

/* The sizes, then its MLP's: d_mlp and the activation. */
int slm_transformer_check_config(const ModelConfig *c, Error *e) {
    if (slm_tf_check_sizes(c, e)) return -1;
    if (c->hidden_dim < 1) return FAIL(e, NULL, "invalid transformer sizes");
    if (c->act < 0 || c->act >= ACT_COUNT)
        return FAIL(e, "use gelu, gelu_new or relu", "invalid activation %d", c->act);
    return 0;
}

/* One block's tensor names, in the order of the table (TransformerLens's
 * names; distance and distance_bucket are the schemes it lacks). */
enum {
    LN1_W,
    LN1_B,
    W_Q,
    W_K,
    W_V,
    B_Q,
    B_K,
    B_V,
    W_O,
    B_O,
    LN2_W,
    LN2_B,
    W_IN,
    B_IN,
    W_OUT,
    B_OUT,
    DISTANCE,
    BUCKET,
    PER_BLOCK
};
#define BLOCK_NAMES(l)                                                                                                 \
    {                                                                                                                  \
        "blocks." #l ".ln1.w", "blocks." #l ".ln1.b", "blocks." #l ".attn.W_Q", "blocks." #l ".attn.W_K",              \
            "blocks." #l ".attn.W_V", "blocks." #l ".attn.b_Q", "blocks." #l ".attn.b_K", "blocks." #l ".attn.b_V",    \
            "blocks." #l ".attn.W_O", "blocks." #l ".attn.b_O", "blocks." #l ".ln2.w", "blocks." #l ".ln2.b",          \
            "blocks." #l ".mlp.W_in", "blocks." #l ".mlp.b_in", "blocks." #l ".mlp.W_out", "blocks." #l ".mlp.b_out",  \
            "blocks." #l ".attn.distance", "blocks." #l ".attn.distance_bucket"                                        \
    }
static const char *const block_names[STORYLM_MAX_TF_LAYERS][PER_BLOCK] = {
    BLOCK_NAMES(0), BLOCK_NAMES(1), BLOCK_NAMES(2), BLOCK_NAMES(3),
    BLOCK_NAMES(4), BLOCK_NAMES(5), BLOCK_NAMES(6), BLOCK_NAMES(7)};

/* Weight decay takes the matrices that multiply (W_Q, W_K, W_V, W_O, W_in,
 * W_out, W_U), as it takes the attention network's; not the embeddings,
 * biases, LayerNorms or learned position scores (model_params.c says why). */
void slm_tf_layout_attn(Model *m, int l) {
    const ModelConfig *c = &m->cfg;
    const char *const *n = block_names[l];
    int D = c->row_dim, H = c->n_heads, dh = c->key_dim;
    slm_model_add_tensor(m, n[LN1_W], 1, D, 0, 0, 0);
    slm_model_add_tensor(m, n[LN1_B], 1, D, 0, 0, 0);
    for (int i = W_Q; i <= W_V; i++) slm_model_add_tensor(m, n[i], 3, H, D, dh, 1);
    for (int i = B_Q; i <= B_V; i++) slm_model_add_tensor(m, n[i], 2, H, dh, 0, 0);
    slm_model_add_tensor(m, n[W_O], 3, H, dh, D, 1);
    slm_model_add_tensor(m, n[B_O], 1, D, 0, 0, 0);
}

void slm_tf_layout_mlp(Model *m, int l) {
    const ModelConfig *c = &m->cfg;
    const char *const *n = block_names[l];
    int D = c->row_dim, F = c->hidden_dim;
    slm_model_add_tensor(m, n[LN2_W], 1, D, 0, 0, 0);
    slm_model_add_tensor(m, n[LN2_B], 1, D, 0, 0, 0);
    slm_model_add_tensor(m, n[W_IN], 2, D, F, 0, 1);
    slm_model_add_tensor(m, n[B_IN], 1, F, 0, 0, 0);
    slm_model_add_tensor(m, n[W_OUT], 2, F, D, 0, 1);
    slm_model_add_tensor(m, n[B_OUT], 1, D, 0, 0, 0);
}

void slm_tf_layout_scores(Model *m, int l) {
    const ModelConfig *c = &m->cfg;
    if (c->pos == POS_DISTANCE) slm_model_add_tensor(m, block_names[l][DISTANCE], 2, c->n_heads, c->window, 0, 0);
    if (c->pos == POS_T5) slm_model_add_tensor(m, block_names[l][BUCKET], 2, c->n_heads, T5_BUCKETS, 0, 0);
}

void slm_tf_layout_embed(Model *m) {
    const ModelConfig *c = &m->cfg;
    slm_model_add_tensor(m, "embed.W_E", 2, c->vocab_size, c->row_dim, 0, 0);
    if (c->pos == POS_ABSOLUTE) slm_model_add_tensor(m, "pos_embed.W_pos", 2, c->window, c->row_dim, 0, 0);
}

/* Tied (--tie-embeddings): no unembed.W_U, the passes read embed.W_E in its place. */
void slm_tf_layout_final(Model *m) {
    const ModelConfig *c = &m->cfg;
    slm_model_add_tensor(m, "ln_final.w", 1, c->row_dim, 0, 0, 0);
    slm_model_add_tensor(m, "ln_final.b", 1, c->row_dim, 0, 0, 0);
    if (!c->tie_embeddings) slm_model_add_tensor(m, "unembed.W_U", 2, c->row_dim, c->vocab_size, 0, 1);
    slm_model_add_tensor(m, "unembed.b_U", 1, c->vocab_size, 0, 0, 0);
}

/* Embedding, then each block's attention, MLP and scheme's scores, then the final LN and W_U. */
void slm_transformer_layout(Model *m) {
    slm_tf_layout_embed(m);
    for (int l = 0; l < m->cfg.n_layers; l++) {
        slm_tf_layout_attn(m, l);
        slm_tf_layout_mlp(m, l);
        slm_tf_layout_scores(m, l);
    }
    slm_tf_layout_final(m);
}

/* base's view of the tensor called name (NULL when the model has none). */
static float *view_of(const Model *m, const float *base, const char *name) {
    const ParamTensor *t = slm_model_tensor(m, name);
    return t ? (float *)base + t->offset : NULL;
}

void slm_transformer_views(const Model *m, const float *base, TfViews *v) {
    *v = (TfViews){.W_E = view_of(m, base, "embed.W_E"),
                   .W_pos = view_of(m, base, "pos_embed.W_pos"),
                   .ln_final_w = view_of(m, base, "ln_final.w"),
                   .ln_final_b = view_of(m, base, "ln_final.b"),
                   .W_U = view_of(m, base, m->cfg.tie_embeddings ? "embed.W_E" : "unembed.W_U"),
                   .W_U_tied = m->cfg.tie_embeddings,
                   .b_U = view_of(m, base, "unembed.b_U")};
    for (int l = 0; l < m->cfg.n_layers && l < STORYLM_MAX_TF_LAYERS; l++) {
        float *p[PER_BLOCK];
        for (int i = 0; i < PER_BLOCK; i++) p[i] = view_of(m, base, block_names[l][i]);
        v->block[l] = (TfBlockViews){.ln1_w = p[LN1_W],
                                     .ln1_b = p[LN1_B],
                                     .W_Q = p[W_Q],
                                     .W_K = p[W_K],
                                     .W_V = p[W_V],
                                     .b_Q = p[B_Q],
                                     .b_K = p[B_K],
                                     .b_V = p[B_V],
                                     .W_O = p[W_O],
                                     .b_O = p[B_O],
                                     .ln2_w = p[LN2_W],
                                     .ln2_b = p[LN2_B],
                                     .W_in = p[W_IN],
                                     .b_in = p[B_IN],
                                     .W_out = p[W_OUT],
                                     .b_out = p[B_OUT],
                                     .distance = p[DISTANCE],
                                     .bucket = p[BUCKET]};
    }
}

/* TransformerLens's "gpt2" init: its weight matrices (the names with W_)
 * N(0, initializer_range = 0.8/sqrt(d_model)), drawn in the table's order;
 * LayerNorm weights 1; biases and learned position scores 0 (calloc's). */
void slm_transformer_randomize(Model *m, uint64_t seed) {
    Rng r;
    slm_rng_seed(&r, seed);
    double std = 0.8 / sqrt(m->cfg.row_dim);
    memset(m->params, 0, m->n_params * sizeof(float));
    for (int i = 0; i < m->n_tensors; i++) {
        const ParamTensor *t = &m->tensors[i];
        float *x = m->params + t->offset;
        const char *last = strrchr(t->name, '.');
        last = last ? last + 1 : t->name;
        if (strncmp(last, "W_", 2) == 0)
            for (size_t j = 0; j < t->size; j++) x[j] = (float)(slm_rng_normal(&r) * std);
        else if (strcmp(last, "w") == 0)
            for (size_t j = 0; j < t->size; j++) x[j] = 1.0f;
    }
}

void slm_transformer_bind_views(Model *m) { /* its passes look their tensors up in TfViews; W_E is the embedding */
    m->embedding = (float *)slm_model_param(m, "embed.W_E");
}
