/* The transformer family's activations and parts, forward and backward
 * side by side (embed, a block's attention part and MLP part, the final LN
 * and unembedding), the driver that runs an architecture's blocks between
 * the shared ends (tf_parts.h), and the transformer's own blocks. See
 * transformer.h. Everything runs on the calling thread's
 * OpenMP team, every sum in a fixed order, so the same batch gives the same
 * bits. */
#include "tf_parts.h"

#include <stdlib.h>
#include <string.h>

#include "storylm/attention.h"
#include "storylm/batch.h"
#include "storylm/dropout.h"
#include "storylm/head_set.h"
#include "storylm/hooks.h"
#include "storylm/layers.h"
#include "storylm/model_params.h"
#include "storylm/position.h"

/* ---- activations ----------------------------------------------------------- */

/* Every float buffer of a's transformer activations with its size in floats,
 * so that init and free walk one list. Returns the count. */
#define MAX_BUFFERS (16 + 18 * STORYLM_MAX_TF_LAYERS)
typedef struct Buffer {
    float **p;
    size_t n;
} Buffer;

/* A block without an MLP (F = 0) keeps none of its part's buffers (their
 * sizes 0: slm_alloc_floats's smallest). */
static int layer_buffers(const ModelConfig *c, TfLayerActs *L, size_t N, Buffer *b) {
    size_t D = (size_t)c->row_dim, F = (size_t)c->hidden_dim, H = (size_t)c->n_heads, dh = (size_t)c->key_dim;
    size_t MD = F > 0 ? N * D : 0, MN = F > 0 ? N : 0; /* the MLP part's */
    size_t HV = H * dh, QKV = 3 * HV, LD = (size_t)slm_qkv_stride((int)N);
    size_t HS = H * (size_t)slm_attention_row_stride(c->window);
    Buffer list[] = {
        {&L->resid_pre, N * D}, {&L->ln1, N * D},          {&L->ln1_mean, N},  {&L->ln1_rstd, N},
        {&L->qkv_w, QKV * D},   {&L->qkv, QKV * LD},       {&L->att, HS * N},  {&L->scratch.kv, H * LD * 2 * dh},
        {&L->scratch.dist, HS}, {&L->scratch.lse, H * LD}, {&L->z, N * HV},    {&L->resid_mid, MD},
        {&L->ln2, MD},          {&L->ln2_mean, MN},        {&L->ln2_rstd, MN}, {&L->mlp_pre, N * F},
        {&L->mlp_post, N * F}};
    memcpy(b, list, sizeof list);
    return (int)(sizeof list / sizeof list[0]);
}

static int all_buffers(Activations *a, TfActivations *t, Buffer *b) {
    const ModelConfig *c = &a->cfg;
    size_t N = (size_t)a->max_positions, D = (size_t)c->row_dim, F = (size_t)c->hidden_dim;
    size_t H = (size_t)c->n_heads, HV = H * (size_t)c->key_dim, QKV = 3 * HV, LD = (size_t)slm_qkv_stride((int)N);
    size_t HS = H * (size_t)slm_attention_row_stride(c->window), HW = H * (size_t)c->window;
    AttentionScratch *s = &t->layer[0].scratch; /* the backward's scratch, shared by every layer */
    Buffer list[] = {{&a->logits, N * (size_t)c->vocab_size},
                     {&a->lse, N},
                     {&a->loss, N},
                     {&a->ones, N},
                     {&a->hidden, N * D},
                     {&a->d_hidden, N * D},
                     {&t->resid_final, N * D},
                     {&t->lnf_mean, N},
                     {&t->lnf_rstd, N},
                     {&t->table, HW},
                     {&t->d_table, HW},
                     {&t->d_resid, N * D},
                     {&t->d_x, N * D},
                     {&t->d_z, N * HV},
                     {&t->d_mlp, N * F},
                     {&t->d_qkv, QKV * LD},
                     {&t->d_qkv_w, QKV * D},
                     {&t->part, N * D},
                     {&s->d_kv, H * LD * 2 * (size_t)c->key_dim},
                     {&s->d_dist, HS},
                     {&s->w, 2 * HS},
                     {&s->ds, 2 * HS},
                     {&s->dw, HS}};
    int n = (int)(sizeof list / sizeof list[0]);
    memcpy(b, list, sizeof list);
    for (int l = 0; l < c->n_layers; l++) n += layer_buffers(c, &t->layer[l], N, b + n);
    return n;
}

int slm_transformer_activations_init(Activations *a, const ModelConfig *cfg, int max_positions, Error *e) {
    *a = (Activations){.cfg = *cfg, .max_positions = max_positions};
    if (max_positions < 1) return FAIL(e, NULL, "activations need at least one position (got %d)", max_positions);
    if (cfg->arch->config_check(cfg, e) || !(a->tf = xcalloc(1, sizeof *a->tf, e))) return -1;
    TfActivations *t = a->tf;
    Buffer b[MAX_BUFFERS];
    int n = all_buffers(a, t, b), ok = 1;
    for (int i = 0; ok && i < n; i++) ok = (*b[i].p = slm_alloc_floats(b[i].n, e)) != NULL;
    size_t N = (size_t)max_positions;
    ok = ok && (a->target = xmalloc(N * sizeof(int32_t), e)) && (a->correct = xmalloc(N, e)) &&
         (a->first_key = xmalloc(N * sizeof(int), e)) && (t->story_pos = xmalloc(N * sizeof(int), e)) &&
         (a->drop_keys = xmalloc(N * sizeof(uint64_t), e));
    if (!ok) {
        slm_transformer_activations_free(a);
        return -1;
    }
    for (size_t p = 0; p < N; p++) a->ones[p] = 1.0f;
    for (int l = 1; l < cfg->n_layers; l++) { /* the backward's scratch, shared */
        AttentionScratch *s = &t->layer[l].scratch, *first = &t->layer[0].scratch;
        s->d_kv = first->d_kv, s->d_dist = first->d_dist, s->w = first->w, s->ds = first->ds, s->dw = first->dw;
    }
    for (int l = 0; l < cfg->n_layers; l++) t->layer[l].scratch.head_base = l * cfg->n_heads;
    return 0;
}

void slm_transformer_activations_free(Activations *a) {
    TfActivations *t = a->tf;
    if (t) {
        Buffer b[MAX_BUFFERS];
        int n = all_buffers(a, t, b);
        for (int i = 0; i < n; i++) free(*b[i].p);
        free(t->story_pos);
        free(t);
    }
    free(a->target);
    free(a->correct);
    free(a->first_key);
    free(a->drop_keys);
    *a = (Activations){0};
}

/* ---- checks ----------------------------------------------------------------- */

static int same_config(const ModelConfig *x, const ModelConfig *y) {
    return x->arch == y->arch && x->vocab_size == y->vocab_size && x->row_dim == y->row_dim &&
           x->n_heads == y->n_heads && x->key_dim == y->key_dim && x->window == y->window &&
           x->hidden_dim == y->hidden_dim && x->pos == y->pos && x->n_layers == y->n_layers && x->act == y->act;
}

static int check_forward(const Model *m, const Activations *a, const Batch *b, const Ablation *ab, Error *e) {
    if (!a->tf || !same_config(&m->cfg, &a->cfg))
        return FAIL(e, NULL, "activations were made for another model's sizes");
    if (b->n_stories < 1) return FAIL(e, NULL, "the batch holds no story");
    if (b->n_tokens > a->max_positions)
        return FAIL(e, "allocate activations for more positions", "a batch of %d tokens exceeds the %d positions",
                    b->n_tokens, a->max_positions);
    int heads = m->cfg.n_layers * m->cfg.n_heads, last = ab ? slm_head_set_last(&ab->heads) : -1;
    if (last >= heads)
        return FAIL(e, "give heads as L:H of this model's blocks", "cannot switch off head %d in a model of %d heads",
                    last, heads);
    if (last >= 0 && ab->mode == ABLATE_MEAN && !ab->mean)
        return FAIL(e, "compute the heads' mean outputs first", "mean ablation needs the heads' mean outputs");
    for (int p = 0; p < b->n_tokens; p++)
        if (b->tokens[p] < 0 || b->tokens[p] >= m->cfg.vocab_size)
            return FAIL(e, "encode the stories with this model's vocabulary",
                        "token id %d at position %d is outside the vocabulary of %d", b->tokens[p], p,
                        m->cfg.vocab_size);
    return 0;
}

/* ---- training's dropout (dropout.h) ------------------------------------------- */

/* a->dropout for batch b -> the residual stream's mask and every block's
 * attention mask (each head its own stream, AttentionScratch.head_base);
 * all off, drawing nothing, when the pass has no keys and no fixed mask. */
static void dropout_prepare(Activations *a, const Batch *b) {
    TfActivations *t = a->tf;
    DropoutMask att;
    t->resid_drop = slm_dropout_batch_masks(a, b, &att);
    for (int l = 0; l < a->cfg.n_layers; l++) t->layer[l].scratch.drop = att;
}

/* x (N, D) -> x * the residual mask of site s (TfActivations.resid_drop), position by position. */
static void drop_resid(const Activations *a, int site, float *x) {
    int N = a->n_positions, D = a->cfg.row_dim;
    for (int p = 0; p < N; p++)
        slm_dropout_apply(&a->tf->resid_drop, p, (uint64_t)site, ((size_t)site * N + p) * D, x + (size_t)p * D, D);
}

/* Where a block part's output (N, D) is summed: onto out = before (no
 * residual dropout), or into t->part, zeroed, to be dropped by part_finish. */
static float *part_start(const Activations *a, const float *before, float *out) {
    size_t n = (size_t)a->n_positions * a->cfg.row_dim;
    float *to = a->tf->resid_drop.p > 0 ? a->tf->part : out;
    if (to == out)
        memcpy(out, before, n * sizeof(float));
    else
        memset(to, 0, n * sizeof(float));
    return to;
}

/* With residual dropout: out (N, D) = before + t->part dropped at site s. */
static void part_finish(const Activations *a, int site, const float *before, float *out) {
    if (!(a->tf->resid_drop.p > 0)) return;
    const float *part = a->tf->part;
    drop_resid(a, site, a->tf->part);
    for (size_t i = 0; i < (size_t)a->n_positions * a->cfg.row_dim; i++) out[i] = before[i] + part[i];
}

/* The gradient (N, D) of a part's output at site s: d out (t->d_resid), or
 * with residual dropout its copy in t->part dropped by the forward's mask. */
static const float *part_grad(const Activations *a, int site) {
    TfActivations *t = a->tf;
    if (!(t->resid_drop.p > 0)) return t->d_resid;
    memcpy(t->part, t->d_resid, (size_t)a->n_positions * a->cfg.row_dim * sizeof(float));
    drop_resid(a, site, t->part);
    return t->part;
}

/* Site numbers of the residual mask: the embedding, block l's attention and MLP outputs. */
#define SITE_EMBED 0
#define SITE_ATTN(l) (1 + 2 * (l))
#define SITE_MLP(l) (2 + 2 * (l))

/* ---- embed: tokens -> resid_0 ------------------------------------------------ */

/* The row of W_pos that position p of its story reads (n_ctx - 1 past the context). */
static size_t pos_row(const ModelConfig *c, int story_pos) {
    return (size_t)(story_pos < c->window ? story_pos : c->window - 1) * c->row_dim;
}

/* tokens (N) -> layer 0's resid_pre (N, D) = W_E[x] (hook_embed) + the
 * position's row (absolute: W_pos[min(t, n_ctx-1)], hook_pos_embed; sinusoidal: its fixed tag),
 * the sum dropped in training with residual dropout. */
void slm_tf_embed_forward(const Model *m, const TfViews *w, Activations *a, const Batch *b) {
    const ModelConfig *c = &m->cfg;
    int D = c->row_dim, N = a->n_positions;
    const int *story_pos = a->tf->story_pos;
    float *resid = a->tf->layer[0].resid_pre;
    slm_embedding_forward(w->W_E, b->tokens, N, D, resid, D);
    slm_hooks_at(m, a, HOOK_EMBED, 0);
    float tag[TF_MAX_D_MODEL];
    for (int p = 0; p < N && (w->W_pos || c->pos == POS_SINUSOIDAL); p++) {
        float *row = resid + (size_t)p * D;
        const float *add = tag;
        if (w->W_pos)
            add = w->W_pos + pos_row(c, story_pos[p]);
        else
            slm_sinusoid_tag(story_pos[p], D, tag);
        for (int i = 0; i < D; i++) row[i] += add[i];
    }
    if (w->W_pos) slm_hooks_at(m, a, HOOK_POS_EMBED, 0);
    if (a->tf->resid_drop.p > 0) drop_resid(a, SITE_EMBED, resid);
}

/* t->d_resid (N, D) -> d W_E, d W_pos += (d_resid dropped in place first,
 * as the forward dropped the sum). */
void slm_tf_embed_backward(const ModelConfig *c, const TfViews *g, Activations *a, const Batch *b) {
    int D = c->row_dim, N = a->n_positions;
    const float *d_resid = a->tf->d_resid;
    if (a->tf->resid_drop.p > 0) drop_resid(a, SITE_EMBED, a->tf->d_resid);
    slm_embedding_backward(g->W_E, b->tokens, N, D, d_resid, D);
    for (int p = 0; p < N && g->W_pos; p++) {
        float *row = g->W_pos + pos_row(c, a->tf->story_pos[p]);
        for (int i = 0; i < D; i++) row[i] += d_resid[(size_t)p * D + i];
    }
}

/* ---- the scheme's score per distance back ------------------------------------ */

void slm_transformer_distance_table(const ModelConfig *c, const TfBlockViews *w, float *table) {
    int H = c->n_heads, W = c->window;
    for (int h = 0; h < H; h++)
        for (int d = 0; d < W; d++) {
            float s = 0.0f;
            if (c->pos == POS_DISTANCE)
                s = w->distance[(size_t)h * W + d];
            else if (c->pos == POS_ALIBI)
                s = -slm_alibi_slope(h, H) * (float)d;
            else if (c->pos == POS_T5)
                s = w->bucket[h * T5_BUCKETS + slm_t5_bucket(d)];
            table[(size_t)h * W + d] = s;
        }
}

/* Where attention's backward adds d table: the gradient of distance itself,
 * or d_table zeroed (t5's buckets then take it in distance_table_backward). */
static float *distance_table_grad(const ModelConfig *c, const TfBlockViews *g, float *d_table) {
    if (c->pos == POS_DISTANCE) return g->distance;
    memset(d_table, 0, (size_t)c->n_heads * c->window * sizeof(float));
    return d_table;
}

static void distance_table_backward(const ModelConfig *c, const float *d_table, const TfBlockViews *g) {
    for (int h = 0; c->pos == POS_T5 && h < c->n_heads; h++)
        for (int d = 0; d < c->window; d++)
            g->bucket[h * T5_BUCKETS + slm_t5_bucket(d)] += d_table[(size_t)h * c->window + d];
}

/* ---- a block's attention part: resid_pre -> out ------------------------------ */

/* qkv (QKV, ld): rows += b_Q, b_K, b_V (H*dh each, in qkv's row order), positions < N. */
static void qkv_bias_forward(const TfBlockViews *w, int HV, int N, int ld, float *qkv) {
    const float *bias[3] = {w->b_Q, w->b_K, w->b_V};
    for (int r = 0; r < 3 * HV; r++) {
        float x = bias[r / HV][r % HV], *row = qkv + (size_t)r * ld;
        for (int p = 0; p < N; p++) row[p] += x;
    }
}

/* d_qkv (QKV, ld) -> d b_Q, d b_K, d b_V +=, positions < N in order. */
static void qkv_bias_backward(const TfBlockViews *g, int HV, int N, int ld, const float *d_qkv) {
    float *bias[3] = {g->b_Q, g->b_K, g->b_V};
    for (int r = 0; r < 3 * HV; r++) {
        const float *row = d_qkv + (size_t)r * ld;
        float s = 0.0f;
        for (int p = 0; p < N; p++) s += row[p];
        bias[r / HV][r % HV] += s;
    }
}

/* Block l's heads switched off by the forward's ablation (bit h: head h). */
static uint32_t ablated_heads(const Activations *a, const ModelConfig *c, int l) {
    return slm_head_set_layer(&a->ablation.heads, l, c->n_heads);
}

/* z (N, H*dh) of block l: --ablate's heads set to 0, or to their mean (hook_z). */
static void ablate_z(const Activations *a, const ModelConfig *c, int l, float *z) {
    int N = a->n_positions, H = c->n_heads, dh = c->key_dim, HV = H * dh;
    uint32_t off = ablated_heads(a, c, l);
    const float *mean = a->ablation.mode == ABLATE_MEAN ? a->ablation.mean : NULL; /* (layers*H, dh) */
    for (int h = 0; off && h < H; h++)
        for (int p = 0; (off >> h & 1u) && p < N; p++) {
            float *zh = z + (size_t)p * HV + h * dh;
            if (mean)
                memcpy(zh, mean + (size_t)(l * H + h) * dh, dh * sizeof(float));
            else
                memset(zh, 0, dh * sizeof(float));
        }
}

/* resid_pre (N, D) -> ln1 (N, D) -> qkv (QKV, ld) -> z (N, H*dh), the
 * weights kept in att when a->attention_kept -> out (N, D) = resid_pre +
 * z W_O + b_O (in training that sum dropped, the weights too before they
 * blend the values: the attention kernel's); the hooks ln1's, hook_q, _k, _v (before rope), hook_attn_scores,
 * hook_pattern, hook_z, hook_result, hook_attn_out. */
void slm_tf_attn_forward(const Model *m, const TfBlockViews *w, Activations *a, int l, float *out) {
    const ModelConfig *c = &m->cfg;
    TfActivations *t = a->tf;
    TfLayerActs *L = &t->layer[l];
    int N = a->n_positions, D = c->row_dim, H = c->n_heads, dh = c->key_dim, HV = H * dh, ld = a->qkv_ld;
    int keep_weights = a->attention_kept;
    slm_layernorm_forward(L->resid_pre, w->ln1_w, w->ln1_b, N, D, L->ln1, L->ln1_mean, L->ln1_rstd);
    slm_hooks_at(m, a, HOOK_LN1_SCALE, l);
    slm_hooks_at(m, a, HOOK_LN1_NORMALIZED, l);
    slm_pack_qkv(w->W_Q, w->W_K, w->W_V, H, D, dh, dh, L->qkv_w);
    slm_matmul_at(a->products, 0, 1, 3 * HV, N, D, L->qkv_w, D, L->ln1, D, 0.0f, L->qkv, ld);
    qkv_bias_forward(w, HV, N, ld, L->qkv);
    for (HookPoint p = HOOK_Q; p <= HOOK_V; p++) slm_hooks_at(m, a, p, l);
    if (c->pos == POS_ROPE) slm_rope_forward(c, t->story_pos, N, L->qkv, ld, 1);
    slm_transformer_distance_table(c, w, t->table);
    slm_attention_forward(a->products.kernels, c, L->qkv, ld, t->table, a->first_key, N, keep_weights ? L->att : NULL,
                          L->z, HV, &L->scratch);
    ablate_z(a, c, l, L->z);
    if (keep_weights) slm_hooks_at(m, a, HOOK_ATTN_SCORES, l);
    if (keep_weights) slm_hooks_at(m, a, HOOK_PATTERN, l);
    slm_hooks_at(m, a, HOOK_Z, l);
    float *sum = part_start(a, L->resid_pre, out);
    slm_matmul_at(a->products, 0, 0, N, D, HV, L->z, HV, w->W_O, D, 1.0f, sum, D);
    slm_add_bias_rows(sum, N, D, D, w->b_O);
    part_finish(a, SITE_ATTN(l), L->resid_pre, out);
    slm_hooks_at(m, a, HOOK_RESULT, l);
    slm_hooks_at(m, a, HOOK_ATTN_OUT, l);
}

/* t->d_resid (N, D): d out -> d resid_pre (in place); grads of the
 * block's LN1, W_Q/K/V, b_Q/K/V, W_O, b_O and position scores +=. */
void slm_tf_attn_backward(const ModelConfig *c, const TfBlockViews *w, const TfBlockViews *g, Activations *a, int l) {
    TfActivations *t = a->tf;
    TfLayerActs *L = &t->layer[l];
    int N = a->n_positions, D = c->row_dim, H = c->n_heads, dh = c->key_dim, HV = H * dh, ld = a->qkv_ld;
    const float *d_out = part_grad(a, SITE_ATTN(l));
    slm_matmul_at(a->products, 1, 0, HV, D, N, L->z, HV, d_out, D, 1.0f, g->W_O, D);
    slm_column_sums(d_out, N, D, D, a->ones, g->b_O);
    slm_matmul_at(a->products, 0, 1, N, HV, D, d_out, D, w->W_O, D, 0.0f, t->d_z, HV);
    float *d_table = distance_table_grad(c, g, t->d_table);
    /* nothing flows back through a switched-off head */
    slm_attention_backward(a->products.kernels, c, L->qkv, ld, a->attention_kept ? L->att : NULL, a->first_key, N,
                           t->d_z, HV, ablated_heads(a, c, l), t->d_qkv, d_table, &L->scratch);
    distance_table_backward(c, d_table, g);
    if (c->pos == POS_ROPE) slm_rope_forward(c, t->story_pos, N, t->d_qkv, ld, -1);
    qkv_bias_backward(g, HV, N, ld, t->d_qkv);
    slm_matmul_at(a->products, 0, 0, 3 * HV, D, N, t->d_qkv, ld, L->ln1, D, 0.0f, t->d_qkv_w, D);
    slm_unpack_qkv_grads(t->d_qkv_w, H, D, dh, dh, g->W_Q, g->W_K, g->W_V);
    slm_matmul_at(a->products, 1, 0, N, D, 3 * HV, t->d_qkv, ld, L->qkv_w, D, 0.0f, t->d_x, D);
    slm_layernorm_backward(L->resid_pre, w->ln1_w, L->ln1_mean, L->ln1_rstd, t->d_x, N, D, t->d_resid, g->ln1_w,
                           g->ln1_b);
}

/* ---- a block's MLP part: resid_mid -> out ------------------------------------ */

float *slm_tf_resid_post(const Activations *a, int l) {
    TfActivations *t = a->tf;
    return l + 1 < a->cfg.n_layers ? t->layer[l + 1].resid_pre : t->resid_final;
}

/* resid_mid (N, D) -> ln2 (N, D) (ln2's hooks) -> mlp_pre (hook_pre),
 * mlp_post (N, F) (hook_post) -> out (N, D) = resid_mid + mlp_post W_out +
 * b_out (hook_mlp_out; in training that sum dropped before it is added). */
void slm_tf_mlp_forward(const Model *m, const TfBlockViews *w, Activations *a, int l, float *out) {
    const ModelConfig *c = &m->cfg;
    TfLayerActs *L = &a->tf->layer[l];
    int N = a->n_positions, D = c->row_dim, F = c->hidden_dim;
    slm_layernorm_forward(L->resid_mid, w->ln2_w, w->ln2_b, N, D, L->ln2, L->ln2_mean, L->ln2_rstd);
    slm_hooks_at(m, a, HOOK_LN2_SCALE, l);
    slm_hooks_at(m, a, HOOK_LN2_NORMALIZED, l);
    slm_matmul_at(a->products, 0, 0, N, F, D, L->ln2, D, w->W_in, F, 0.0f, L->mlp_pre, F);
    slm_add_bias_rows(L->mlp_pre, N, F, F, w->b_in);
    slm_hooks_at(m, a, HOOK_MLP_PRE, l);
    slm_act_forward((ActFn)c->act, L->mlp_pre, N * F, L->mlp_post);
    slm_hooks_at(m, a, HOOK_MLP_POST, l);
    float *sum = part_start(a, L->resid_mid, out);
    slm_matmul_at(a->products, 0, 0, N, D, F, L->mlp_post, F, w->W_out, D, 1.0f, sum, D);
    slm_add_bias_rows(sum, N, D, D, w->b_out);
    part_finish(a, SITE_MLP(l), L->resid_mid, out);
    slm_hooks_at(m, a, HOOK_MLP_OUT, l);
}

/* t->d_resid (N, D): d out -> d resid_mid (in place); grads of the
 * block's LN2, W_in, b_in, W_out, b_out +=. */
void slm_tf_mlp_backward(const ModelConfig *c, const TfBlockViews *w, const TfBlockViews *g, Activations *a, int l) {
    TfActivations *t = a->tf;
    TfLayerActs *L = &t->layer[l];
    int N = a->n_positions, D = c->row_dim, F = c->hidden_dim;
    const float *d_out = part_grad(a, SITE_MLP(l));
    slm_matmul_at(a->products, 1, 0, F, D, N, L->mlp_post, F, d_out, D, 1.0f, g->W_out, D);
    slm_column_sums(d_out, N, D, D, a->ones, g->b_out);
    slm_matmul_at(a->products, 0, 1, N, F, D, d_out, D, w->W_out, D, 0.0f, t->d_mlp, F);
    slm_act_backward(a->products.kernels, (ActFn)c->act, L->mlp_pre, L->mlp_post, N * F, t->d_mlp);
    slm_matmul_at(a->products, 1, 0, D, F, N, L->ln2, D, t->d_mlp, F, 1.0f, g->W_in, F);
    slm_column_sums(t->d_mlp, N, F, F, a->ones, g->b_in);
    slm_matmul_at(a->products, 0, 1, N, D, F, t->d_mlp, F, w->W_in, F, 0.0f, t->d_x, D);
    slm_layernorm_backward(L->resid_mid, w->ln2_w, L->ln2_mean, L->ln2_rstd, t->d_x, N, D, t->d_resid, g->ln2_w,
                           g->ln2_b);
}

/* ---- the driver: begin, embed, the blocks, the final LN, the unembedding ---- */

int slm_tf_begin(const Model *m, Activations *a, const Batch *b, const Ablation *ablation, int keep_weights,
                 Precision products, Error *e) {
    if (check_forward(m, a, b, ablation, e)) return -1;
    a->products = (Compute){products, a->kernels};
    a->ablation = ablation ? *ablation : (Ablation){0};
    a->attention_kept = keep_weights;
    a->n_predicted = slm_batch_positions(b, m->cfg.window, a->target, a->first_key, a->tf->story_pos);
    a->n_positions = b->n_tokens;
    a->qkv_ld = slm_qkv_stride(b->n_tokens);
    dropout_prepare(a, b);
    return 0;
}

/* Begins, then tokens -> the blocks -> hidden = LN_final(resid_final) (N, D),
 * every product (and the unembedding's) at precision products: training's
 * --precision bf16 (bf16.h) when it computes gradients, else FP32. */
static int forward_to_final(const TfBlocks *s, const Model *m, Activations *a, const Batch *b, const Ablation *ablation,
                            int keep_weights, Precision products, Error *e) {
    if (slm_tf_begin(m, a, b, ablation, keep_weights, products, e)) return -1;
    TfActivations *t = a->tf;
    TfViews w;
    slm_transformer_views(m, m->params, &w);
    slm_tf_embed_forward(m, &w, a, b);
    s->forward(m, &w, a);
    slm_layernorm_forward(t->resid_final, w.ln_final_w, w.ln_final_b, a->n_positions, m->cfg.row_dim, a->hidden,
                          t->lnf_mean, t->lnf_rstd);
    slm_hooks_at(m, a, HOOK_LN_FINAL_SCALE, 0);
    slm_hooks_at(m, a, HOOK_LN_FINAL, 0);
    return slm_hooks_check(a, e);
}

/* The unembedding, softmax and cross-entropy over chunks of rows (layers.h's
 * slm_output_loss with W_U's layout (D, V), or W_E's (V, D) when tied); with
 * grads also its backward: d hidden, d W_U (tied: d W_E +=), d b_U. */
static void unembed(const Model *m, Activations *a, int chunk_rows, float scale, float *grads) {
    const ModelConfig *c = &m->cfg;
    TfViews w, g;
    slm_transformer_views(m, m->params, &w);
    if (grads) slm_transformer_views(m, grads, &g);
    OutputLoss o = {.W = w.W_U,
                    .bias = w.b_U,
                    .y = a->hidden,
                    .n = a->n_positions,
                    .Hd = c->row_dim,
                    .V = c->vocab_size,
                    .target = a->target,
                    .scale = scale,
                    .scratch = a->logits,
                    .lse = a->lse,
                    .loss = a->loss,
                    .correct = a->correct,
                    .chunk_rows = chunk_rows,
                    .dW = grads ? g.W_U : NULL,
                    .d_bias = grads ? g.b_U : NULL,
                    .d_y = a->d_hidden,
                    .W_columns = !w.W_U_tied,
                    .precision = a->products.precision,
                    .kernels = a->products.kernels};
    slm_output_loss(&o);
}

/* a->d_hidden (N, D) -> grads of ln_final, the blocks (the last first) and the embeddings +=. */
static void backward_from_final(const TfBlocks *s, const Model *m, Activations *a, const Batch *b, float *grads) {
    const ModelConfig *c = &m->cfg;
    TfActivations *t = a->tf;
    TfViews w, g;
    slm_transformer_views(m, m->params, &w);
    slm_transformer_views(m, grads, &g);
    memset(t->d_resid, 0, (size_t)a->n_positions * c->row_dim * sizeof(float));
    slm_layernorm_backward(t->resid_final, w.ln_final_w, t->lnf_mean, t->lnf_rstd, a->d_hidden, a->n_positions,
                           c->row_dim, t->d_resid, g.ln_final_w, g.ln_final_b);
    s->backward(c, &w, &g, a);
    slm_tf_embed_backward(c, &g, a, b);
}

int slm_tf_forward(const TfBlocks *s, const Model *m, Activations *a, const Batch *b, const Ablation *ab, Error *e) {
    if (forward_to_final(s, m, a, b, ab, 1, PRECISION_FP32, e)) return -1;
    unembed(m, a, a->n_positions, 0.0f, NULL); /* one chunk: every position's logits stay in a->logits */
    slm_hooks_at(m, a, HOOK_LOGITS, 0);
    return slm_hooks_check(a, e);
}

void slm_tf_backward(const TfBlocks *s, const Model *m, Activations *a, const Batch *b, float *grads) {
    unembed(m, a, a->n_positions, 1.0f / a->n_predicted, grads); /* the logits again, turned into their gradient */
    backward_from_final(s, m, a, b, grads);
}

/* Positions whose logits one chunk holds: 256 x V floats stay in cache. */
#define TF_OUTPUT_CHUNK_ROWS 256

int slm_tf_loss_and_grad(const TfBlocks *s, const Model *m, Activations *a, const Batch *b, const Ablation *ab,
                         float scale, float *grads, Error *e) {
    if (forward_to_final(s, m, a, b, ab, 0, grads ? a->precision : PRECISION_FP32, e)) return -1;
    int backward = grads && a->n_predicted > 0;
    int chunk = a->max_positions < TF_OUTPUT_CHUNK_ROWS ? a->max_positions : TF_OUTPUT_CHUNK_ROWS;
    unembed(m, a, chunk, scale, backward ? grads : NULL);
    if (backward) backward_from_final(s, m, a, b, grads);
    return 0;
}

/* ---- the transformer: each block its attention part, then its MLP part ---- */

static void blocks_forward(const Model *m, const TfViews *w, Activations *a) {
    for (int l = 0; l < m->cfg.n_layers; l++) {
        slm_hooks_at(m, a, HOOK_RESID_PRE, l);
        slm_tf_attn_forward(m, &w->block[l], a, l, a->tf->layer[l].resid_mid);
        slm_hooks_at(m, a, HOOK_RESID_MID, l);
        slm_tf_mlp_forward(m, &w->block[l], a, l, slm_tf_resid_post(a, l));
        slm_hooks_at(m, a, HOOK_RESID_POST, l);
    }
}

static void blocks_backward(const ModelConfig *c, const TfViews *w, const TfViews *g, Activations *a) {
    for (int l = c->n_layers - 1; l >= 0; l--) {
        slm_tf_mlp_backward(c, &w->block[l], &g->block[l], a, l);
        slm_tf_attn_backward(c, &w->block[l], &g->block[l], a, l);
    }
}

static const TfBlocks transformer_blocks = {blocks_forward, blocks_backward};

int slm_transformer_forward(const Model *m, Activations *a, const Batch *b, const Ablation *ablation, Error *e) {
    return slm_tf_forward(&transformer_blocks, m, a, b, ablation, e);
}

void slm_transformer_backward(const Model *m, Activations *a, const Batch *b, float *grads) {
    slm_tf_backward(&transformer_blocks, m, a, b, grads);
}

int slm_transformer_loss_and_grad(const Model *m, Activations *a, const Batch *b, const Ablation *ablation, float scale,
                                  float *grads, Error *e) {
    return slm_tf_loss_and_grad(&transformer_blocks, m, a, b, ablation, scale, grads, e);
}
