/* The model's parameters and their views: see include/storylm/model_params.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "storylm/model_params.h"

int slm_model_layers(const ModelConfig *c) {
    return (c->arch == ARCH_ATTENTION || c->arch == ARCH_TRANSFORMER) && c->n_layers > 1 ? c->n_layers : 1;
}

int slm_model_heads(const ModelConfig *c) { return c->arch != ARCH_WINDOW8 ? slm_model_layers(c) * c->n_heads : 0; }

void slm_head_name(const ModelConfig *c, int g, char *buf, size_t size) {
    if (slm_model_layers(c) > 1)
        snprintf(buf, size, "%d:%d", g / c->n_heads + 1, g % c->n_heads);
    else
        snprintf(buf, size, "%d", g);
}

const char *slm_arch_name(Arch arch) {
    return arch == ARCH_WINDOW8 ? "window8" : arch == ARCH_TRANSFORMER ? "transformer" : "attention";
}

int slm_arch_parse(const char *name, Arch *arch, Error *e) {
    if (strcmp(name, "attention") == 0)
        *arch = ARCH_ATTENTION;
    else if (strcmp(name, "window8") == 0)
        *arch = ARCH_WINDOW8;
    else if (strcmp(name, "transformer") == 0)
        *arch = ARCH_TRANSFORMER;
    else
        return FAIL(e, "use attention, window8 or transformer", "unknown architecture '%s'", name);
    return 0;
}

/* Every layer's own tensors, by layer: layer 0's names are today's, layer
 * l's the same with the prefix "layer<l+1>.". */
#define PER_LAYER 9
#define LAYER_NAMES(p)                                                                                                 \
    {                                                                                                                  \
        p "query", p "key", p "value", p "distance", p "distance_bucket", p "score.weight", p "score.query",           \
            p "score.key", p "score.v"                                                                                 \
    }
static const char *const layer_names[STORYLM_MAX_LAYERS][PER_LAYER] = {LAYER_NAMES(""), LAYER_NAMES("layer2."),
                                                                       LAYER_NAMES("layer3."), LAYER_NAMES("layer4.")};

/* Which per-layer tensor name is (its index), and of which layer; -1 if none. */
static int per_layer_index(const char *name, int *layer) {
    for (int l = 0; l < STORYLM_MAX_LAYERS; l++)
        for (int i = 0; i < PER_LAYER; i++)
            if (strcmp(name, layer_names[l][i]) == 0) {
                *layer = l;
                return i;
            }
    return -1;
}

const char *slm_model_layer_tensor_name(int l, const char *base) {
    int layer;
    int i = l >= 0 && l < STORYLM_MAX_LAYERS ? per_layer_index(base, &layer) : -1;
    return i >= 0 && layer == 0 ? layer_names[l][i] : NULL;
}

/* Weight decay pulls a tensor towards 0 at every step, whether its entries were
 * used or not. It suits the matrices that multiply (query, key, value and the
 * two dense layers): every step updates all of them, and smaller products mean
 * smoother functions. Not the biases and distance scores: they are offsets, a
 * few hundred numbers with nothing to overfit, and decaying distance scores
 * towards 0 would push every head to read evenly. Not the embedding either: a
 * rare token's row (a rare name, the very thing Secret 2 copies) gets a
 * gradient only in the few steps that read it, so a decay applied at every
 * step would shrink it to nothing between them. */
static int decays(const char *name) {
    int layer, i = per_layer_index(name, &layer);
    if (i >= 0) name = layer_names[0][i]; /* a further layer's query, key, value decay as the first's */
    return strcmp(name, "query") == 0 || strcmp(name, "key") == 0 || strcmp(name, "value") == 0 ||
           strcmp(name, "hidden.weight") == 0 || strcmp(name, "output.weight") == 0;
}

void slm_model_add_tensor(Model *m, const char *name, int ndim, int d0, int d1, int d2, int decay) {
    ParamTensor *t = &m->tensors[m->n_tensors++];
    int dims[3] = {d0, d1, d2};
    t->name = name;
    t->decay = decay;
    t->ndim = ndim;
    t->size = 1;
    for (int i = 0; i < 3; i++) {
        t->shape[i] = i < ndim ? dims[i] : 0;
        if (i < ndim) t->size *= (size_t)dims[i];
    }
    t->offset = m->n_params;
    m->n_params += t->size;
}

static void add_tensor(Model *m, const char *name, int ndim, int d0, int d1, int d2) {
    slm_model_add_tensor(m, name, ndim, d0, d1, d2, decays(name));
}

/* Layer l's own tensors (l >= 1 reads the row and layer l-1's heads); the
 * first layer's absolute positions are the row's, not a layer's. */
static void layout_layer(Model *m, const ModelConfig *c, int l) {
    const char *const *n = layer_names[l];
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

void slm_model_decay_mask(const Model *m, uint8_t *mask) {
    for (int i = 0; i < m->n_tensors; i++) memset(mask + m->tensors[i].offset, m->tensors[i].decay, m->tensors[i].size);
}

const ParamTensor *slm_model_tensor(const Model *m, const char *name) {
    for (int i = 0; i < m->n_tensors; i++)
        if (strcmp(m->tensors[i].name, name) == 0) return &m->tensors[i];
    return NULL;
}

void slm_model_layer_view(const Model *m, int l, Model *view) {
    *view = *m;
    if (l == 0) return;
    view->n_tensors = 0;
    for (int i = 0; i < m->n_tensors; i++) {
        const ParamTensor *t = &m->tensors[i];
        int layer, k = per_layer_index(t->name, &layer);
        if (k >= 0 && layer != l) continue; /* another layer's */
        view->tensors[view->n_tensors] = *t;
        if (k >= 0) view->tensors[view->n_tensors].name = layer_names[0][k];
        view->n_tensors++;
    }
    view->cfg.row_dim = m->cfg.row_dim + m->cfg.n_heads * m->cfg.value_dim;
    view->query = (float *)slm_model_param(view, "query");
    view->key = (float *)slm_model_param(view, "key");
    view->value = (float *)slm_model_param(view, "value");
    view->distance = (float *)slm_model_param(view, "distance");
}

void slm_model_layout(Model *m) {
    const ModelConfig *c = &m->cfg;
    add_tensor(m, "embedding", 2, c->vocab_size, c->row_dim, 0);
    for (int l = 0; c->arch == ARCH_ATTENTION && l < slm_model_layers(c); l++) layout_layer(m, c, l);
    add_tensor(m, "hidden.weight", 2, c->hidden_dim, slm_model_hidden_input_dim(c), 0);
    add_tensor(m, "hidden.bias", 1, c->hidden_dim, 0, 0);
    add_tensor(m, "output.weight", 2, c->vocab_size, c->hidden_dim, 0);
    add_tensor(m, "output.bias", 1, c->vocab_size, 0, 0);
}

int slm_model_check_config(const ModelConfig *cfg, Error *e) {
    if (cfg->vocab_size < 2 || cfg->row_dim < 1 || cfg->n_heads < 1 || cfg->key_dim < 1 || cfg->value_dim < 1 ||
        cfg->window < 1 || cfg->hidden_dim < 1 || cfg->context < 1)
        return FAIL(e, NULL, "invalid model sizes");
    if (cfg->pos < 0 || cfg->pos >= POS_COUNT || cfg->score < 0 || cfg->score >= SCORE_COUNT ||
        (cfg->arch != ARCH_ATTENTION && (cfg->pos != POS_DISTANCE || cfg->score != SCORE_SCALED_DOT)))
        return FAIL(e, "--position-scheme and --score are for the attention network",
                    "invalid position scheme or score function");
    if (cfg->n_layers < 0 || cfg->n_layers > STORYLM_MAX_LAYERS || (cfg->arch != ARCH_ATTENTION && cfg->n_layers > 1))
        return FAIL(e, "give --layers from 1 to 4, and only for the attention network", "invalid number of layers %d",
                    cfg->n_layers);
    if (cfg->n_heads > STORYLM_MAX_HEADS || slm_model_heads(cfg) > STORYLM_MAX_ALL_HEADS)
        return FAIL(e, "use at most 32 heads a layer",
                    "%d layers of %d heads are more than the passes take (%d a layer)", slm_model_layers(cfg),
                    cfg->n_heads, STORYLM_MAX_HEADS);
    return 0;
}

const float *slm_model_param(const Model *m, const char *name) {
    const ParamTensor *t = slm_model_tensor(m, name);
    return t ? m->params + t->offset : NULL;
}

float *slm_model_grad(const Model *m, float *grads, const char *name) {
    const ParamTensor *t = slm_model_tensor(m, name);
    return t && grads ? grads + t->offset : NULL;
}

void slm_model_bind_views(Model *m) {
    if (m->cfg.arch == ARCH_TRANSFORMER) { /* its passes look their tensors up in TfViews */
        m->embedding = (float *)slm_model_param(m, "embed.W_E");
        return;
    }
    const char *names[] = {"embedding",     "query",       "key",           "value",      "distance",
                           "hidden.weight", "hidden.bias", "output.weight", "output.bias"};
    float **views[] = {&m->embedding, &m->query,    &m->key,      &m->value,   &m->distance,
                       &m->hidden_w,  &m->hidden_b, &m->output_w, &m->output_b};
    for (int i = 0; i < 9; i++) *views[i] = (float *)slm_model_param(m, names[i]);
}

int slm_model_hidden_input_dim(const ModelConfig *c) {
    return c->arch == ARCH_ATTENTION ? c->row_dim + slm_model_layers(c) * c->n_heads * c->value_dim
                                     : c->context * c->row_dim;
}
