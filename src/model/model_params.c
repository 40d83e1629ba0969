/* The model's parameters and their views: see include/storylm/model_params.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "storylm/model_params.h"

#include "storylm/arch.h"

int slm_model_layers(const ModelConfig *c) { return c->arch->layers(c); }

int slm_model_heads(const ModelConfig *c) { return c->arch->layers(c) * c->arch->heads_per_layer(c); }

void slm_head_name(const ModelConfig *c, int g, char *buf, size_t size) {
    if (slm_model_layers(c) > 1)
        snprintf(buf, size, "%d:%d", g / c->n_heads + 1, g % c->n_heads);
    else
        snprintf(buf, size, "%d", g);
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
int slm_model_decays(const char *name) {
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

const float *slm_model_param(const Model *m, const char *name) {
    const ParamTensor *t = slm_model_tensor(m, name);
    return t ? m->params + t->offset : NULL;
}

float *slm_model_grad(const Model *m, float *grads, const char *name) {
    const ParamTensor *t = slm_model_tensor(m, name);
    return t && grads ? grads + t->offset : NULL;
}

int slm_model_hidden_input_dim(const ModelConfig *c) { /* the heads' outputs after the row, or the rows of the window */
    return c->arch->readout == READOUT_TANH && slm_model_heads(c) ? c->row_dim + slm_model_heads(c) * c->value_dim
                                                                  : c->context * c->row_dim;
}
