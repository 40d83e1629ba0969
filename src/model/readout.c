/* The chapter's readout: z -> the tanh hidden layer -> logits and loss, and
 * back to d_z; the frame of the attention network's and window8's passes
 * (see include/storylm/readout.h; the network in include/storylm/model.h). */
#include "storylm/readout.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "storylm/activations.h"
#include "storylm/arch.h"
#include "storylm/attention.h"
#include "storylm/batch.h"
#include "storylm/dropout.h"
#include "storylm/head_set.h"
#include "storylm/hooks.h"
#include "storylm/layers.h"
#include "storylm/model_params.h"
#include "storylm/score.h"

/* ---- init ---------------------------------------------------------------- */

/* Helpers of the initial values: x (n) drawn N(0, std) or U(-bound, bound). */
static void slm_fill_normal(Rng *r, float *x, size_t n, double std) {
    for (size_t i = 0; i < n; i++) x[i] = (float)(slm_rng_normal(r) * std);
}

void slm_fill_uniform(Rng *r, float *x, size_t n, double bound) {
    for (size_t i = 0; i < n; i++) x[i] = (float)slm_rng_range(r, -bound, bound);
}

/* PyTorch's defaults, the scales the chapter's kind of network trains well from:
 * unit-sized rows, and each Linear's outputs starting near unit size too, so
 * tanh starts in its linear part, the first scores q.k/sqrt(8) are small
 * (every head reads almost evenly, as the chapter describes) and the first
 * logits are near 0 (loss near ln 2000). Distance scores start at exactly 0. */
void slm_readout_randomize(Model *m, uint64_t seed, void (*heads)(Model *m, Rng *r)) {
    const ModelConfig *c = &m->cfg;
    Rng r;
    slm_rng_seed(&r, seed);
    double z_bound = 1.0 / sqrt(slm_model_hidden_input_dim(c)), y_bound = 1.0 / sqrt(c->hidden_dim);
    slm_fill_normal(&r, m->embedding, (size_t)c->vocab_size * c->row_dim, 1.0);
    if (heads) heads(m, &r);
    slm_fill_uniform(&r, m->hidden_w, (size_t)c->hidden_dim * slm_model_hidden_input_dim(c), z_bound);
    slm_fill_uniform(&r, m->hidden_b, (size_t)c->hidden_dim, z_bound);
    slm_fill_uniform(&r, m->output_w, (size_t)c->vocab_size * c->hidden_dim, y_bound);
    slm_fill_uniform(&r, m->output_b, (size_t)c->vocab_size, y_bound);
}

void slm_readout_layout(Model *m) {
    const ModelConfig *c = &m->cfg;
    slm_model_add_tensor(m, "hidden.weight", 2, c->hidden_dim, slm_model_hidden_input_dim(c), 0, 1);
    slm_model_add_tensor(m, "hidden.bias", 1, c->hidden_dim, 0, 0, 0);
    slm_model_add_tensor(m, "output.weight", 2, c->vocab_size, c->hidden_dim, 0, 1);
    slm_model_add_tensor(m, "output.bias", 1, c->vocab_size, 0, 0, 0);
}

void slm_readout_bind_views(Model *m) {
    const char *names[] = {"embedding",     "query",       "key",           "value",      "distance",
                           "hidden.weight", "hidden.bias", "output.weight", "output.bias"};
    float **views[] = {&m->embedding, &m->query,    &m->key,      &m->value,   &m->distance,
                       &m->hidden_w,  &m->hidden_b, &m->output_w, &m->output_b};
    for (int i = 0; i < 9; i++) *views[i] = (float *)slm_model_param(m, names[i]);
}

int slm_readout_check_sizes(const ModelConfig *cfg, Error *e) {
    if (cfg->vocab_size < 2 || cfg->row_dim < 1 || cfg->n_heads < 1 || cfg->key_dim < 1 || cfg->value_dim < 1 ||
        cfg->window < 1 || cfg->hidden_dim < 1 || cfg->context < 1)
        return FAIL(e, NULL, "invalid model sizes");
    return 0;
}

/* ---- activations ----------------------------------------------------------- */

int slm_readout_activations_init(Activations *a, const ModelConfig *cfg, int max_positions, Error *e) {
    *a = (Activations){.cfg = *cfg, .max_positions = max_positions};
    if (max_positions < 1) return FAIL(e, NULL, "activations need at least one position (got %d)", max_positions);
    if (cfg->key_dim > STORYLM_MAX_HEAD_DIM || cfg->value_dim > STORYLM_MAX_HEAD_DIM ||
        cfg->n_heads > STORYLM_MAX_HEADS)
        return FAIL(e, NULL, "heads of %d query and %d value numbers (%d heads) are more than the passes take",
                    cfg->key_dim, cfg->value_dim, cfg->n_heads);
    size_t N = (size_t)max_positions, Z = (size_t)slm_model_hidden_input_dim(cfg), Hd = (size_t)cfg->hidden_dim;
    int ok = (a->z = slm_alloc_floats(N * Z, e)) && (a->d_z = slm_alloc_floats(N * Z, e)) &&
             (a->hidden = slm_alloc_floats(N * Hd, e)) && (a->d_hidden = slm_alloc_floats(N * Hd, e)) &&
             (a->logits = slm_alloc_floats(N * cfg->vocab_size, e)) && (a->lse = slm_alloc_floats(N, e)) &&
             (a->loss = slm_alloc_floats(N, e)) && (a->target = xmalloc(N * sizeof(int32_t), e)) &&
             (a->correct = xmalloc(N, e)) && (a->first_key = xmalloc(N * sizeof(int), e)) &&
             (a->ones = slm_alloc_floats(N, e)) && (a->drop_keys = xmalloc(N * sizeof(uint64_t), e));
    if (!ok) {
        slm_readout_activations_free(a);
        return -1;
    }
    for (size_t p = 0; p < N; p++) a->ones[p] = 1.0f;
    return 0;
}

void slm_readout_activations_free(Activations *a) {
    for (int l = 0; l < STORYLM_MAX_LAYERS; l++) {
        LayerActivations *la = &a->layer[l];
        slm_variant_scratch_free(la->scratch.variant);
        free(la->qkv);
        free(la->att);
        free(la->qkv_w);
        free(la->scratch.kv);
        free(la->scratch.dist);
        free(la->scratch.lse);
    }
    const AttentionScratch *s = &a->layer[0].scratch; /* the shared backward scratch */
    void *bufs[] = {a->z,      a->d_z,     a->hidden,    a->d_hidden,  a->logits, a->lse,     a->loss,
                    a->target, a->correct, a->first_key, a->ones,      a->d_qkv,  a->d_qkv_w, s->d_kv,
                    s->d_dist, s->w,       s->ds,        a->drop_keys, s->dw,     a->z_kept};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) free(bufs[i]);
    *a = (Activations){0};
}

/* ---- forward ------------------------------------------------------------------ */

static int same_config(const ModelConfig *x, const ModelConfig *y) {
    return x->arch == y->arch && x->vocab_size == y->vocab_size && x->row_dim == y->row_dim &&
           x->n_heads == y->n_heads && x->key_dim == y->key_dim && x->value_dim == y->value_dim &&
           x->window == y->window && x->hidden_dim == y->hidden_dim && x->context == y->context && x->pos == y->pos &&
           x->score == y->score && slm_model_layers(x) == slm_model_layers(y);
}

static int check_ablation(const ModelConfig *c, const Ablation *ab, Error *e) {
    if (!ab || slm_head_set_empty(&ab->heads)) return 0;
    if (slm_model_heads(c) == 0) return FAIL(e, "ablate heads of an attention model", "%s has no heads", c->arch->name);
    int heads = slm_model_heads(c), last = slm_head_set_last(&ab->heads);
    if (last >= heads)
        return FAIL(e, "give head numbers from 0 to the number of heads - 1",
                    "cannot switch off head %d: the model has heads 0 to %d", last, heads - 1);
    if (ab->mode == ABLATE_MEAN && !ab->mean)
        return FAIL(e, "compute the heads' mean outputs first", "mean ablation needs the heads' mean outputs");
    return 0;
}

static int check_forward(const Model *m, const Activations *a, const Batch *b, const Ablation *ab, Error *e) {
    if (!same_config(&m->cfg, &a->cfg)) return FAIL(e, NULL, "activations were made for another model's sizes");
    if (b->n_stories < 1) return FAIL(e, NULL, "the batch holds no story");
    if (b->n_tokens > a->max_positions)
        return FAIL(e, "allocate activations for more positions", "a batch of %d tokens exceeds the %d positions",
                    b->n_tokens, a->max_positions);
    for (int p = 0; p < b->n_tokens; p++)
        if (b->tokens[p] < 0 || b->tokens[p] >= m->cfg.vocab_size)
            return FAIL(e, "encode the stories with this model's vocabulary",
                        "token id %d at position %d is outside the vocabulary of %d", b->tokens[p], p,
                        m->cfg.vocab_size);
    return check_ablation(&m->cfg, ab, e);
}

/* Per position: target, first key and place in the story (slm_batch_positions). */
static void prepare_positions(Activations *a, const Batch *b) {
    int *story_pos = a->layer[0].scratch.variant ? a->layer[0].scratch.variant->story_pos : NULL;
    a->n_predicted = slm_batch_positions(b, a->cfg.window, a->target, a->first_key, story_pos);
    a->n_positions = b->n_tokens;
    a->qkv_ld = slm_qkv_stride(b->n_tokens);
    for (int l = 1; story_pos && l < slm_model_layers(&a->cfg); l++) /* every layer's variant reads them */
        memcpy(a->layer[l].scratch.variant->story_pos, story_pos, (size_t)b->n_tokens * sizeof(int));
}

/* page: hidden layer */
/* Checks, then tokens -> z (in) -> hidden (N, 128): everything before the
 * output layer; the attention weights kept in a->att when keep_weights. */
static int forward_to_hidden(const ReadoutInput *in, const Model *m, Activations *a, const Batch *b,
                             const Ablation *ablation, int keep_weights, Precision products, Error *e) {
    if (check_forward(m, a, b, ablation, e)) return -1;
    a->products = (Compute){products, a->kernels};
    const ModelConfig *c = &m->cfg;
    a->ablation = ablation ? *ablation : (Ablation){0};
    a->attention_kept = keep_weights;
    prepare_positions(a, b);
    slm_dropout_prepare(a, b);
    in->forward(m, a, b, keep_weights);
    if (a->hidden_drop.p > 0) slm_dropout_hidden_forward(a);
    slm_hooks_at(m, a, HOOK_HIDDEN_IN, 0);
    slm_dense_tanh_forward_at(a->products, m->hidden_w, m->hidden_b, a->z, a->n_positions,
                              slm_model_hidden_input_dim(c), c->hidden_dim, a->hidden);
    slm_hooks_at(m, a, HOOK_HIDDEN, 0);
    return slm_hooks_check(a, e);
}
/* page: end */

int slm_readout_forward(const ReadoutInput *in, const Model *m, Activations *a, const Batch *b, const Ablation *ab,
                        int to_logits, Error *e) {
    if (forward_to_hidden(in, m, a, b, ab, 1, PRECISION_FP32, e)) return -1;
    if (!to_logits) return 0;
    const ModelConfig *c = &m->cfg;
    slm_output_forward(a->products.kernels, m->output_w, m->output_b, a->hidden, a->n_positions, c->hidden_dim,
                       c->vocab_size, a->logits, a->target, a->lse, a->loss, a->correct);
    slm_hooks_at(m, a, HOOK_LOGITS, 0);
    return slm_hooks_check(a, e);
}

/* ---- backward ---------------------------------------------------------------- */

/* The gradient buffer's view matching a parameter view. */
static float *grad_of(const Model *m, float *grads, const float *param) { return grads + (param - m->params); }

/* page: backward */
/* d_hidden (N, 128) -> grads of the hidden layer and everything before it. */
static void backward_from_hidden(const ReadoutInput *in, const Model *m, Activations *a, const Batch *b, float *grads) {
    const ModelConfig *c = &m->cfg;
    slm_dense_tanh_backward_at(a->products, m->hidden_w, a->z, a->hidden, a->d_hidden, a->n_positions,
                               slm_model_hidden_input_dim(c), c->hidden_dim, grad_of(m, grads, m->hidden_w),
                               grad_of(m, grads, m->hidden_b), a->d_z, a->ones);
    if (a->hidden_drop.p > 0) slm_dropout_hidden_backward(m, a, b);
    in->backward(m, a, b, grads);
}

void slm_readout_backward(const ReadoutInput *in, const Model *m, Activations *a, const Batch *b, float *grads) {
    const ModelConfig *c = &m->cfg;
    slm_output_backward(a->products.kernels, m->output_w, a->hidden, a->logits, a->target, a->lse,
                        1.0f / a->n_predicted, a->n_positions, c->hidden_dim, c->vocab_size,
                        grad_of(m, grads, m->output_w), grad_of(m, grads, m->output_b), a->d_hidden, a->ones);
    backward_from_hidden(in, m, a, b, grads);
}
/* page: end */

/* Positions whose logits one chunk of slm_output_loss holds: 128 x 2,000 floats
 * (1 MB) stay in a core's cache between the products and the softmax. */
#define OUTPUT_CHUNK_ROWS 256

int slm_readout_loss_and_grad(const ReadoutInput *in, const Model *m, Activations *a, const Batch *b,
                              const Ablation *ablation, float scale, float *grads, Error *e) {
    if (forward_to_hidden(in, m, a, b, ablation, 0, grads ? a->precision : PRECISION_FP32, e)) return -1;
    const ModelConfig *c = &m->cfg;
    int backward = grads && a->n_predicted > 0;
    OutputLoss o = {.W = m->output_w,
                    .bias = m->output_b,
                    .y = a->hidden,
                    .n = a->n_positions,
                    .Hd = c->hidden_dim,
                    .V = c->vocab_size,
                    .target = a->target,
                    .scale = scale,
                    .scratch = a->logits,
                    .lse = a->lse,
                    .loss = a->loss,
                    .correct = a->correct,
                    .chunk_rows = a->max_positions < OUTPUT_CHUNK_ROWS ? a->max_positions : OUTPUT_CHUNK_ROWS,
                    .dW = backward ? grad_of(m, grads, m->output_w) : NULL,
                    .d_bias = backward ? grad_of(m, grads, m->output_b) : NULL,
                    .d_y = a->d_hidden,
                    .precision = a->products.precision,
                    .kernels = a->products.kernels};
    slm_output_loss(&o);
    if (backward) backward_from_hidden(in, m, a, b, grads);
    return 0;
}

/* ---- hook points in z ---------------------------------------------------- */

/* n columns of z from column col, every position <-> buf (T, n). */
static void move_z(Activations *a, size_t col, int n, float *buf, int to_buf) {
    size_t Z = (size_t)slm_model_hidden_input_dim(&a->cfg);
    for (int t = 0; t < a->n_positions; t++) {
        float *x = a->z + t * Z + col, *y = buf + (size_t)t * n;
        memcpy(to_buf ? y : x, to_buf ? x : y, (size_t)n * sizeof(float));
    }
}

int slm_readout_hook_move(const Model *m, Activations *a, HookPoint p, int l, float *buf, int to_buf) {
    (void)m;
    const ModelConfig *c = &a->cfg;
    size_t heads_at = (size_t)c->row_dim + (size_t)l * c->n_heads * c->value_dim; /* layer l's column of z */
    switch (p) {
        case HOOK_EMBED: move_z(a, 0, c->row_dim, buf, to_buf); return 0;
        case HOOK_Z: move_z(a, heads_at, c->n_heads * c->value_dim, buf, to_buf); return 0;
        case HOOK_HIDDEN_IN: move_z(a, 0, slm_model_hidden_input_dim(c), buf, to_buf); return 0;
        default: return 1;
    }
}
