/* Chapter 6's baseline (`--arch window8`): no heads; z is the last 8 rows,
 * oldest first, read by the chapter's tanh readout (readout.h). Its
 * configuration, tensor table, initial values and the rows forward and
 * backward; everything after z is the readout's. */
#include <stdio.h>

#include "../arch_shared.h"
#include "storylm/arch.h"
#include "storylm/layers.h"
#include "storylm/model_params.h"
#include "storylm/readout.h"

extern const Architecture slm_window8_arch;

/* The chapter's sizes: only the row, the context and the readout's are read. */
static ModelConfig config_default(int vocab_size) {
    return (ModelConfig){.arch = &slm_window8_arch,
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

static int layers(const ModelConfig *c) {
    (void)c;
    return 1;
}

static int heads_per_layer(const ModelConfig *c) {
    (void)c;
    return 0;
}

static int context_needed(const ModelConfig *c) { return c->context - 1; }

static int config_check(const ModelConfig *cfg, Error *e) {
    if (slm_readout_check_sizes(cfg, e)) return -1;
    if (cfg->pos != POS_DISTANCE || cfg->score != SCORE_SCALED_DOT)
        return FAIL(e, "--position-scheme and --score are for the attention network",
                    "invalid position scheme or score function");
    if (cfg->n_layers < 0 || cfg->n_layers > 1)
        return FAIL(e, "give --layers from 1 to 4, and only for the attention network", "invalid number of layers %d",
                    cfg->n_layers);
    if (cfg->n_heads > STORYLM_MAX_HEADS) /* its sizes keep heads it has not: bounded as the others' */
        return FAIL(e, "use at most 32 heads a layer",
                    "%d layers of %d heads are more than the passes take (%d a layer)", 1, cfg->n_heads,
                    STORYLM_MAX_HEADS);
    return 0;
}

/* It writes none, but reads these to refuse a file that claims a variant. */
static const char *const config_keys[] = {"pos", "score", "layers", NULL};

static int config_write(const ModelConfig *c, ConfigPut put, void *ctx, Error *e) {
    (void)c, (void)put, (void)ctx, (void)e;
    return 0; /* its sizes say everything */
}

static int config_read(ModelConfig *c, ConfigGet get, void *ctx, Error *e) {
    if (slm_arch_read_layers(c, get, ctx, STORYLM_MAX_LAYERS, e)) return -1;
    c->act = ACT_GELU;
    if (c->n_layers != 1) return FAIL(e, SLM_BAD_MODEL_HINT, "a %s model has no layers of heads", c->arch->name);
    if (slm_arch_read_variant(c, get, ctx, e)) return -1;
    if (c->pos != POS_DISTANCE || c->score != SCORE_SCALED_DOT)
        return FAIL(e, SLM_BAD_MODEL_HINT, "a %s model has no --position-scheme or --score", c->arch->name);
    return 0;
}

static void describe(const ModelConfig *c, char *buf, size_t size) {
    snprintf(buf, size, "architecture  window8: the last %d rows, hidden %d\n", c->context, c->hidden_dim);
}

static void layout(Model *m) {
    const ModelConfig *c = &m->cfg;
    slm_model_add_tensor(m, "embedding", 2, c->vocab_size, c->row_dim, 0, slm_model_decays("embedding"));
    slm_readout_layout(m);
}

static void randomize(Model *m, uint64_t seed) { slm_readout_randomize(m, seed, NULL); }

/* tokens -> z (N, 256): the last 8 rows, oldest first. */
static void rows_forward(const Model *m, Activations *a, const Batch *b, int keep_weights) {
    (void)keep_weights;
    slm_window_forward(m->embedding, b, m->cfg.context, m->cfg.row_dim, a->z);
}

/* d_z (N, 256) -> d embedding +=. */
static void rows_backward(const Model *m, Activations *a, const Batch *b, float *grads) {
    slm_window_backward(grads + (m->embedding - m->params), b, m->cfg.context, m->cfg.row_dim, a->d_z);
}

static const ReadoutInput rows_input = {rows_forward, rows_backward};

static int forward(const Model *m, Activations *a, const Batch *b, const Ablation *ab, int to_logits, Error *e) {
    return slm_readout_forward(&rows_input, m, a, b, ab, to_logits, e);
}

static int loss_and_grad(const Model *m, Activations *a, const Batch *b, const Ablation *ab, float scale, float *grads,
                         Error *e) {
    return slm_readout_loss_and_grad(&rows_input, m, a, b, ab, scale, grads, e);
}

static void backward(const Model *m, Activations *a, const Batch *b, float *grads) {
    slm_readout_backward(&rows_input, m, a, b, grads);
}

/* No rows or heads of its own to hook: the readout's points only. */
static void hook_points(const ModelConfig *c, HookPoints *out) {
    (void)c;
    *out = (HookPoints){.after = {HOOK_HIDDEN_IN, HOOK_HIDDEN, HOOK_LOGITS}, .n_after = 3};
}

const Architecture slm_window8_arch = {
    .name = "window8",
    .summary = "chapter 6's baseline: the last 8 rows read by one tanh layer, no heads",
    .readout = READOUT_TANH,
    .takes = TAKES_BF16,
    .max_layers = 1,
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
    .activations_init = slm_readout_activations_init,
    .activations_free = slm_readout_activations_free,
    .forward = forward,
    .loss_and_grad = loss_and_grad,
    .backward = backward,
    .hook_points = hook_points,
    .generator = &slm_readout_generator,
    .generator_portable = &slm_readout_generator_portable,
    .hook_move = slm_readout_hook_move,
};
