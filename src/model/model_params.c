/* The model's parameter table: one buffer, named views. The optimizer, the
 * checkpoint code, the gradient checks and `info` all walk this table. */
#include <stdlib.h>
#include <string.h>

#include "storylm/model.h"

ModelConfig slm_model_config_default(Arch arch, int vocab_size) {
    return (ModelConfig){.arch = arch, .vocab_size = vocab_size, .row_dim = 32, .n_heads = 8, .key_dim = 8,
                         .value_dim = 16, .window = 256, .hidden_dim = 128, .context = 8};
}

const char *slm_arch_name(Arch arch) { return arch == ARCH_WINDOW8 ? "window8" : "attention"; }

int slm_arch_parse(const char *name, Arch *arch, Error *e) {
    if (strcmp(name, "attention") == 0) *arch = ARCH_ATTENTION;
    else if (strcmp(name, "window8") == 0) *arch = ARCH_WINDOW8;
    else return FAIL(e, "use attention or window8", "unknown architecture '%s'", name);
    return 0;
}

/* The hidden layer's input width: the row and 8 heads' values, or 8 rows. */
static int hidden_input_dim(const ModelConfig *c) {
    return c->arch == ARCH_ATTENTION ? c->row_dim + c->n_heads * c->value_dim : c->context * c->row_dim;
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
    return strcmp(name, "query") == 0 || strcmp(name, "key") == 0 || strcmp(name, "value") == 0 ||
           strcmp(name, "hidden.weight") == 0 || strcmp(name, "output.weight") == 0;
}

static void add_tensor(Model *m, const char *name, int ndim, int d0, int d1, int d2) {
    ParamTensor *t = &m->tensors[m->n_tensors++];
    int dims[3] = {d0, d1, d2};
    t->name = name;
    t->decay = decays(name);
    t->ndim = ndim;
    t->size = 1;
    for (int i = 0; i < 3; i++) {
        t->shape[i] = i < ndim ? dims[i] : 0;
        if (i < ndim) t->size *= (size_t)dims[i];
    }
    t->offset = m->n_params;
    m->n_params += t->size;
}

/* Fills the table (and n_params) for cfg without allocating. */
static void layout(Model *m, const ModelConfig *c) {
    m->cfg = *c;
    m->n_params = 0;
    m->n_tensors = 0;
    add_tensor(m, "embedding", 2, c->vocab_size, c->row_dim, 0);
    if (c->arch == ARCH_ATTENTION) {
        add_tensor(m, "query", 3, c->n_heads, c->row_dim, c->key_dim);
        add_tensor(m, "key", 3, c->n_heads, c->row_dim, c->key_dim);
        add_tensor(m, "value", 3, c->n_heads, c->row_dim, c->value_dim);
        if (c->pos == POS_DISTANCE) add_tensor(m, "distance", 2, c->n_heads, c->window, 0);
        if (c->pos == POS_ABSOLUTE) add_tensor(m, "position", 2, c->window, c->row_dim, 0);
        if (c->pos == POS_T5) add_tensor(m, "distance_bucket", 2, c->n_heads, T5_BUCKETS, 0);
        if (c->score == SCORE_GENERAL) add_tensor(m, "score.weight", 3, c->n_heads, c->key_dim, c->key_dim);
        if (c->score == SCORE_ADDITIVE) {
            add_tensor(m, "score.query", 3, c->n_heads, c->key_dim, c->key_dim);
            add_tensor(m, "score.key", 3, c->n_heads, c->key_dim, c->key_dim);
            add_tensor(m, "score.v", 2, c->n_heads, c->key_dim, 0);
        }
    }
    add_tensor(m, "hidden.weight", 2, c->hidden_dim, hidden_input_dim(c), 0);
    add_tensor(m, "hidden.bias", 1, c->hidden_dim, 0, 0);
    add_tensor(m, "output.weight", 2, c->vocab_size, c->hidden_dim, 0);
    add_tensor(m, "output.bias", 1, c->vocab_size, 0, 0);
}

void slm_model_decay_mask(const Model *m, uint8_t *mask) {
    for (int i = 0; i < m->n_tensors; i++)
        memset(mask + m->tensors[i].offset, m->tensors[i].decay, m->tensors[i].size);
}

size_t slm_model_param_count(const ModelConfig *cfg) {
    Model m = {0};
    layout(&m, cfg);
    return m.n_params;
}

const ParamTensor *slm_model_tensor(const Model *m, const char *name) {
    for (int i = 0; i < m->n_tensors; i++)
        if (strcmp(m->tensors[i].name, name) == 0) return &m->tensors[i];
    return NULL;
}

static float *view(Model *m, const char *name) {
    const ParamTensor *t = slm_model_tensor(m, name);
    return t ? m->params + t->offset : NULL;
}

int slm_model_init(Model *m, const ModelConfig *cfg, Error *e) {
    *m = (Model){0};
    if (cfg->vocab_size < 2 || cfg->row_dim < 1 || cfg->n_heads < 1 || cfg->key_dim < 1 || cfg->value_dim < 1 ||
        cfg->window < 1 || cfg->hidden_dim < 1 || cfg->context < 1)
        return FAIL(e, NULL, "invalid model sizes");
    if (cfg->pos < 0 || cfg->pos >= POS_COUNT || cfg->score < 0 || cfg->score >= SCORE_COUNT ||
        (cfg->arch != ARCH_ATTENTION && (cfg->pos != POS_DISTANCE || cfg->score != SCORE_SCALED_DOT)))
        return FAIL(e, "--pos and --score are for the attention network", "invalid position scheme or score function");
    layout(m, cfg);
    m->params = xcalloc(m->n_params, sizeof(float), e);
    if (!m->params) return -1;
    m->embedding = view(m, "embedding");
    m->query = view(m, "query");
    m->key = view(m, "key");
    m->value = view(m, "value");
    m->distance = view(m, "distance");
    m->hidden_w = view(m, "hidden.weight");
    m->hidden_b = view(m, "hidden.bias");
    m->output_w = view(m, "output.weight");
    m->output_b = view(m, "output.bias");
    return 0;
}

void slm_model_free(Model *m) {
    free(m->params);
    *m = (Model){0};
}
