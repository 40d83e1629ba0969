/* The model's orchestration: init by architecture, the initial values, and
 * the forward and backward passes that chain the layers of src/model/layers.c and src/model/attention.c.
 * See include/storylm/model.h for the network and the layouts. */
#include "storylm/model.h"

#include <cblas.h>
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "storylm/hooks.h"
#include "storylm/rng.h"

/* OpenBLAS's own: stops its thread pool (it runs it around fork). Weak: a
 * BLAS without a pool (a serial build) has none, and it is then NULL. */
int blas_thread_shutdown_(void) __attribute__((weak));

void slm_model_threads_setup(int n_threads) {
    if (n_threads > 0) omp_set_num_threads(n_threads);
    /* Set only when it changes: setting it starts again a pool that was stopped. */
    if (openblas_get_num_threads() != 1) openblas_set_num_threads(1);
    /* A pthread OpenBLAS starts a thread per core when it loads, and one with
     * no work spins about 0.1 s before it sleeps: in a short run (a story
     * takes 5 ms) that doubles the CPU time. Single-threaded, it never needs
     * them, so they are stopped (a second call finds none: a no-op). */
    if (blas_thread_shutdown_) blas_thread_shutdown_();
}

/* ---- init ---------------------------------------------------------------- */

ModelConfig slm_model_config_default(Arch arch, int vocab_size) {
    if (arch == ARCH_TRANSFORMER) return slm_transformer_config_default(vocab_size);
    return (ModelConfig){.arch = arch,
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

/* The table for cfg (and n_params), without allocating: the transformer's
 * (transformer_params.c) or the attention network's and window8's
 * (model_params.c). */
static void layout(Model *m, const ModelConfig *cfg) {
    m->cfg = *cfg;
    m->n_params = 0;
    m->n_tensors = 0;
    if (cfg->arch == ARCH_TRANSFORMER)
        slm_transformer_layout(m);
    else
        slm_model_layout(m);
}

size_t slm_model_param_count(const ModelConfig *cfg) {
    Model m = {0};
    layout(&m, cfg);
    return m.n_params;
}

int slm_model_init(Model *m, const ModelConfig *cfg, Error *e) {
    *m = (Model){0};
    if (cfg->arch == ARCH_TRANSFORMER ? slm_transformer_check_config(cfg, e) : slm_model_check_config(cfg, e))
        return -1;
    layout(m, cfg);
    m->params = xcalloc(m->n_params, sizeof(float), e);
    if (!m->params) return -1;
    slm_model_bind_views(m);
    return 0;
}

void slm_model_free(Model *m) {
    free(m->params);
    *m = (Model){0};
}

static void fill_normal(Rng *r, float *x, size_t n, double std) {
    for (size_t i = 0; i < n; i++) x[i] = (float)(slm_rng_normal(r) * std);
}

static void fill_uniform(Rng *r, float *x, size_t n, double bound) {
    for (size_t i = 0; i < n; i++) x[i] = (float)slm_rng_range(r, -bound, bound);
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
        if (t) fill_uniform(&r, m->params + t->offset, t->size, 1.0 / sqrt(kd));
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
    fill_uniform(&r, v.query, (size_t)c->n_heads * c->row_dim * c->key_dim, bound);
    fill_uniform(&r, v.key, (size_t)c->n_heads * c->row_dim * c->key_dim, bound);
    fill_uniform(&r, v.value, (size_t)c->n_heads * c->row_dim * c->value_dim, bound);
    if (v.distance) memset(v.distance, 0, (size_t)c->n_heads * c->window * sizeof(float));
    randomize_variant(&v, seed ^ (uint64_t)l * 0x9E3779B97F4A7C15ULL);
}

/* PyTorch's defaults, the scales the chapter's kind of network trains well from:
 * unit-sized rows, and each Linear's outputs starting near unit size too, so
 * tanh starts in its linear part, the first scores q.k/sqrt(8) are small
 * (every head reads almost evenly, as the chapter describes) and the first
 * logits are near 0 (loss near ln 2000). Distance scores start at exactly 0. */
void slm_model_randomize(Model *m, uint64_t seed) {
    const ModelConfig *c = &m->cfg;
    if (c->arch == ARCH_TRANSFORMER) {
        slm_transformer_randomize(m, seed);
        return;
    }
    Rng r;
    slm_rng_seed(&r, seed);
    double row_bound = 1.0 / sqrt(c->row_dim), z_bound = 1.0 / sqrt(slm_model_hidden_input_dim(c));
    double y_bound = 1.0 / sqrt(c->hidden_dim);
    fill_normal(&r, m->embedding, (size_t)c->vocab_size * c->row_dim, 1.0);
    if (c->arch == ARCH_ATTENTION) {
        fill_uniform(&r, m->query, (size_t)c->n_heads * c->row_dim * c->key_dim, row_bound);
        fill_uniform(&r, m->key, (size_t)c->n_heads * c->row_dim * c->key_dim, row_bound);
        fill_uniform(&r, m->value, (size_t)c->n_heads * c->row_dim * c->value_dim, row_bound);
        if (m->distance) memset(m->distance, 0, (size_t)c->n_heads * c->window * sizeof(float));
    }
    fill_uniform(&r, m->hidden_w, (size_t)c->hidden_dim * slm_model_hidden_input_dim(c), z_bound);
    fill_uniform(&r, m->hidden_b, (size_t)c->hidden_dim, z_bound);
    fill_uniform(&r, m->output_w, (size_t)c->vocab_size * c->hidden_dim, y_bound);
    fill_uniform(&r, m->output_b, (size_t)c->vocab_size, y_bound);
    if (c->arch == ARCH_ATTENTION) randomize_variant(m, seed);
    for (int l = 1; l < slm_model_layers(c); l++) randomize_layer(m, l, seed);
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
    if (c->arch != ARCH_ATTENTION) return FAIL(e, "ablate heads of an attention model", "window8 has no heads");
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
    slm_attention_forward(&lm->cfg, la->qkv, a->qkv_ld, slm_position_table_for(lm, v->table), a->first_key, N,
                          keep_weights ? la->att : NULL, a->z + heads_column(c, l), Z, &la->scratch);
    if (!slm_head_set_empty(&a->ablation.heads)) ablate_heads(a, &a->ablation, l);
    for (HookPoint p = HOOK_DISTANCE_SCORE; p <= HOOK_Z; p++) slm_hooks_at(lm, a, p, l);
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

/* Checks, then tokens -> z -> hidden (N, 128): everything before the output
 * layer; the attention weights kept in a->att when keep_weights. */
static int forward_to_hidden(const Model *m, Activations *a, const Batch *b, const Ablation *ablation, int keep_weights,
                             Precision products, Error *e) {
    if (check_forward(m, a, b, ablation, e)) return -1;
    a->products = products;
    const ModelConfig *c = &m->cfg;
    a->ablation = ablation ? *ablation : (Ablation){0};
    a->attention_kept = keep_weights;
    prepare_positions(a, b);
    slm_dropout_prepare(a, b);
    if (c->arch == ARCH_ATTENTION)
        attention_input(m, a, b, keep_weights);
    else
        slm_window_forward(m->embedding, b, c->context, c->row_dim, a->z);
    if (a->hidden_drop.p > 0) slm_dropout_hidden_forward(a);
    slm_hooks_at(m, a, HOOK_HIDDEN_IN, 0);
    slm_dense_tanh_forward_at(a->products, m->hidden_w, m->hidden_b, a->z, a->n_positions,
                              slm_model_hidden_input_dim(c), c->hidden_dim, a->hidden);
    slm_hooks_at(m, a, HOOK_HIDDEN, 0);
    return slm_hooks_check(a, e);
}
/* page: end */

/* a->mean_loss and *mean_loss (may be NULL) from the positions' losses. */
static void mean_of_losses(Activations *a, float *mean_loss) {
    double sum = 0.0;
    for (int p = 0; p < a->n_positions; p++) sum += a->loss[p];
    a->mean_loss = a->n_predicted > 0 ? sum / a->n_predicted : 0.0;
    if (mean_loss) *mean_loss = (float)a->mean_loss;
}

/* Every position's log-sum-exp and loss must be finite: finite weights can
 * still overflow (logits past 3.4e38), and a NaN mean loss must never be
 * delivered as a result. Names the first bad position. */
static int check_losses(const Activations *a, const Batch *b, Error *e) {
    for (int p = 0; p < a->n_positions; p++) {
        if (isfinite(a->lse[p]) && isfinite(a->loss[p])) continue;
        int i = 0;
        while (i + 1 < b->n_stories && b->starts[i + 1] <= p) i++;
        return FAIL(e, "the model's weights are too large to compute with; train or save it again",
                    "the %s overflows at position %d of story %d of the batch (token id %d): its logits are not finite",
                    isfinite(a->lse[p]) ? "loss" : "log-sum-exp of the logits", p - b->starts[i] + b->piece[i].offset,
                    i, b->tokens[p]);
    }
    return 0;
}

int slm_model_forward_heads(const Model *m, Activations *a, const Batch *b, const Ablation *ablation, Error *e) {
    if (m->cfg.arch == ARCH_TRANSFORMER) return slm_transformer_forward(m, a, b, ablation, e);
    return forward_to_hidden(m, a, b, ablation, 1, PRECISION_FP32, e);
}

int slm_model_forward(const Model *m, Activations *a, const Batch *b, const Ablation *ablation, float *mean_loss,
                      Error *e) {
    if (m->cfg.arch == ARCH_TRANSFORMER) {
        if (slm_transformer_forward(m, a, b, ablation, e) || check_losses(a, b, e)) return -1;
        mean_of_losses(a, mean_loss);
        return 0;
    }
    if (forward_to_hidden(m, a, b, ablation, 1, PRECISION_FP32, e)) return -1;
    const ModelConfig *c = &m->cfg;
    slm_output_forward(m->output_w, m->output_b, a->hidden, a->n_positions, c->hidden_dim, c->vocab_size, a->logits,
                       a->target, a->lse, a->loss, a->correct);
    slm_hooks_at(m, a, HOOK_LOGITS, 0);
    if (slm_hooks_check(a, e) || check_losses(a, b, e)) return -1;
    mean_of_losses(a, mean_loss);
    return 0;
}

/* ---- backward ---------------------------------------------------------------- */

void slm_model_zero_grad(const Model *m, float *grads) { memset(grads, 0, m->n_params * sizeof(float)); }

/* The gradient buffer's view matching a parameter view. */
static float *grad_of(const Model *m, float *grads, const float *param) { return grads + (param - m->params); }

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
    slm_attention_backward(&lm->cfg, la->qkv, a->qkv_ld, a->attention_kept ? la->att : NULL, a->first_key, N,
                           a->d_z + heads_column(c, l), Z, skip, a->d_qkv,
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

/* d_hidden (N, 128) -> grads of the hidden layer and everything before it. */
static void backward_from_hidden(const Model *m, Activations *a, const Batch *b, float *grads) {
    const ModelConfig *c = &m->cfg;
    slm_dense_tanh_backward_at(a->products, m->hidden_w, a->z, a->hidden, a->d_hidden, a->n_positions,
                               slm_model_hidden_input_dim(c), c->hidden_dim, grad_of(m, grads, m->hidden_w),
                               grad_of(m, grads, m->hidden_b), a->d_z, a->ones);
    if (a->hidden_drop.p > 0) slm_dropout_hidden_backward(m, a, b);
    if (c->arch == ARCH_ATTENTION)
        attention_input_backward(m, a, b, grads);
    else
        slm_window_backward(grad_of(m, grads, m->embedding), b, c->context, c->row_dim, a->d_z);
}

void slm_model_backward(const Model *m, Activations *a, const Batch *b, float *grads) {
    const ModelConfig *c = &m->cfg;
    if (a->n_predicted < 1) return; /* no target: the loss depends on nothing */
    if (c->arch == ARCH_TRANSFORMER) {
        slm_transformer_backward(m, a, b, grads);
        return;
    }
    slm_output_backward(m->output_w, a->hidden, a->logits, a->target, a->lse, 1.0f / a->n_predicted, a->n_positions,
                        c->hidden_dim, c->vocab_size, grad_of(m, grads, m->output_w), grad_of(m, grads, m->output_b),
                        a->d_hidden, a->ones);
    backward_from_hidden(m, a, b, grads);
}
/* page: end */

/* Positions whose logits one chunk of slm_output_loss holds: 128 x 2,000 floats
 * (1 MB) stay in a core's cache between the products and the softmax. */
#define OUTPUT_CHUNK_ROWS 256

int slm_model_loss_and_grad(const Model *m, Activations *a, const Batch *b, const Ablation *ablation, float scale,
                            float *grads, Error *e) {
    if (m->cfg.arch == ARCH_TRANSFORMER) {
        if (slm_transformer_loss_and_grad(m, a, b, ablation, scale, grads, e) || check_losses(a, b, e)) return -1;
        mean_of_losses(a, NULL);
        return 0;
    }
    if (forward_to_hidden(m, a, b, ablation, 0, grads ? a->precision : PRECISION_FP32, e)) return -1;
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
                    .precision = a->products};
    slm_output_loss(&o);
    if (check_losses(a, b, e)) return -1;
    mean_of_losses(a, NULL);
    if (backward) backward_from_hidden(m, a, b, grads);
    return 0;
}
