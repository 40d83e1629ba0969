/* The transformer (--arch transformer): its parts' backward against central
 * finite differences (LayerNorm, the activations), then the whole network's
 * forward and every parameter's gradient against a plain re-statement in
 * double (loops straight from transformer.h's equations, nothing shared with
 * src/ but the tensor table), for every position scheme and activation, on
 * a tiny configuration of two blocks: vocabulary 11, n_ctx 4, a story longer
 * than the window and two shorter ones. Then the default's parameter count,
 * TransformerLens's names and shapes, and the same bits twice. Tied
 * embeddings (--tie-embeddings) likewise: the re-statement reads W_U as W_E
 * transposed, so W_E's gradient is checked through both its uses. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "storylm/dropout.h"
#include "storylm/generate.h"
#include "storylm/model.h"
#include "storylm/probe_patch.h"
#include "storylm/probes.h"
#include "storylm/rng.h"
#include "transformer/transformer.h"

static ModelConfig tiny(PosScheme pos, ActFn act) {
    ModelConfig c = slm_transformer_config_default(11);
    c.row_dim = 6, c.n_heads = 2, c.key_dim = c.value_dim = 4, c.hidden_dim = 8, c.window = 4, c.n_layers = 2;
    c.pos = pos, c.act = act;
    return c;
}

/* ---- the parts ------------------------------------------------------------ */

/* sum of d_y * LN(x) as a function of x, w, b: its gradient is the backward's. */
static double ln_objective(const float *x, const float *w, const float *b, const float *d_y, int n, int D) {
    float y[64], mean[8], rstd[8];
    slm_layernorm_forward(x, w, b, n, D, y, mean, rstd);
    double s = 0;
    for (int i = 0; i < n * D; i++) s += (double)d_y[i] * y[i];
    return s;
}

/* d (objective) / d v[i] by central differences, v perturbed in place. */
static double numeric(float *v, int i, const float *x, const float *w, const float *b, const float *d_y, int n, int D) {
    float saved = v[i], h = 1e-2f;
    v[i] = saved + h;
    double up = ln_objective(x, w, b, d_y, n, D);
    v[i] = saved - h;
    double down = ln_objective(x, w, b, d_y, n, D);
    v[i] = saved;
    return (up - down) / (2 * h);
}

static void check_layernorm(Rng *rng) {
    enum { n = 3, D = 7 };
    float x[n * D], w[D], b[D], d_y[n * D], d_x[n * D] = {0}, d_w[D] = {0}, d_b[D] = {0}, y[n * D], mean[n], rstd[n];
    for (int i = 0; i < n * D; i++) x[i] = (float)slm_rng_normal(rng) * 2 + 1, d_y[i] = (float)slm_rng_normal(rng);
    for (int i = 0; i < D; i++) w[i] = 1 + (float)slm_rng_normal(rng) * 0.3f, b[i] = (float)slm_rng_normal(rng);
    slm_layernorm_forward(x, w, b, n, D, y, mean, rstd);
    double m = 0, v = 0;
    for (int i = 0; i < D; i++) m += x[i];
    m /= D;
    for (int i = 0; i < D; i++) v += (x[i] - m) * (x[i] - m);
    v /= D;
    CHECK_CLOSE(y[2], (x[2] - m) / sqrt(v + 1e-5) * w[2] + b[2], 1e-5, 1e-6); /* biased variance, eps 1e-5 */
    slm_layernorm_backward(x, w, mean, rstd, d_y, n, D, d_x, d_w, d_b);
    for (int i = 0; i < n * D; i++) CHECK_CLOSE(d_x[i], numeric(x, i, x, w, b, d_y, n, D), 1e-2, 2e-3);
    for (int i = 0; i < D; i++) {
        CHECK_CLOSE(d_w[i], numeric(w, i, x, w, b, d_y, n, D), 1e-2, 2e-3);
        CHECK_CLOSE(d_b[i], numeric(b, i, x, w, b, d_y, n, D), 1e-2, 2e-3);
    }
}

static void check_activations(void) {
    static const float xs[] = {-3.0f, -1.2f, -0.3f, 0.0005f, 0.2f, 0.9f, 2.5f}; /* 0.0005: gelu's backward near 0 */
    for (int act = 0; act < ACT_COUNT; act++)
        for (int i = 0; i < 7; i++) {
            /* a step that does not cross relu's kink */
            float x = xs[i], h = fabsf(x) < 0.01f ? 1e-4f : 1e-3f, up[1], down[1], post[1], d[1] = {1.0f};
            float xu = x + h, xd = x - h;
            slm_act_forward((ActFn)act, &xu, 1, up);
            slm_act_forward((ActFn)act, &xd, 1, down);
            slm_act_forward((ActFn)act, &x, 1, post);
            slm_act_backward(KERNELS_BLAS, (ActFn)act, &x, post, 1, d);
            CHECK_CLOSE(d[0], (up[0] - down[0]) / (2 * h), 1e-2, 1e-3);
        }
    float x = 1.0f, y;
    slm_act_forward(ACT_GELU, &x, 1, &y);
    CHECK_CLOSE(y, 0.8413447460685429, 1e-6, 0); /* x Phi(x) at 1 */
    slm_act_forward(ACT_GELU_NEW, &x, 1, &y);
    CHECK_CLOSE(y, 0.8411919906082768, 1e-6, 0); /* GPT-2's tanh form at 1 */
}

/* ---- the whole network, restated in double ---------------------------------- */

typedef struct Ref {
    const Model *m;
    const double *p;
    uint32_t off; /* heads switched off (zero mode), numbered over the blocks */
    /* training's dropout with fixed masks (NULL: none) over the batch's n
     * packed positions, the story's first at base (ref_loss sets it) */
    const Dropout *drop;
    int n, base;
} Ref;

enum { MAXT = 12, MAXD = 8, MAXF = 8, MAXH = 2, MAXV = 11 };

static const double *tensor(const Ref *r, const char *name) {
    const ParamTensor *t = slm_model_tensor(r->m, name);
    return t ? r->p + t->offset : NULL;
}

/* W_U[j, v]: unembed.W_U's, or W_E[v, j] for a tied model (which has no unembed.W_U). */
static double ref_W_U(const Ref *r, int j, int v) {
    const double *Wu = tensor(r, "unembed.W_U");
    int D = r->m->cfg.row_dim, V = r->m->cfg.vocab_size;
    return Wu ? Wu[j * V + v] : tensor(r, "embed.W_E")[v * D + j];
}

/* The fixed masks' factor: number j of the story's position t at residual
 * site s (0 the embedding, 1 + 2l block l's attention output, 2 + 2l its
 * MLP's), and key u of t in block l's head h (TfActivations' layout). */
static double resid_factor(const Ref *r, int site, int t, int j) {
    const Dropout *d = r->drop;
    if (!d || !d->hidden_mask) return 1.0;
    size_t at = ((size_t)site * r->n + r->base + t) * r->m->cfg.row_dim + j;
    return d->hidden_mask[at] ? 1.0 / (1.0 - d->hidden) : 0.0;
}

static double att_factor(const Ref *r, int l, int h, int t, int u) {
    const Dropout *d = r->drop;
    if (!d || !d->attention_mask) return 1.0;
    size_t g = (size_t)l * r->m->cfg.n_heads + h;
    return d->attention_mask[(g * r->n + r->base + t) * r->n + r->base + u] ? 1.0 / (1.0 - d->attention) : 0.0;
}

static const double *block_tensor(const Ref *r, int l, const char *name) {
    char full[64];
    snprintf(full, sizeof full, "blocks.%d.%s", l, name);
    return tensor(r, full);
}

static void ref_layernorm(const double *x, const double *w, const double *b, int D, double *y) {
    double m = 0, v = 0;
    for (int i = 0; i < D; i++) m += x[i];
    m /= D;
    for (int i = 0; i < D; i++) v += (x[i] - m) * (x[i] - m);
    v /= D;
    for (int i = 0; i < D; i++) y[i] = (x[i] - m) / sqrt(v + 1e-5) * w[i] + b[i];
}

static double ref_act(int act, double x) {
    if (act == ACT_GELU) return 0.5 * x * (1 + erf(x / sqrt(2.0)));
    if (act == ACT_GELU_NEW) return 0.5 * x * (1 + tanh(sqrt(2 / 3.14159265358979323846) * (x + 0.044715 * x * x * x)));
    return x > 0 ? x : 0;
}

/* x (dh) turned by position t, adjacent pairs (TransformerLens's rotary_adjacent_pairs). */
static void ref_rope(double *x, int dh, int t) {
    for (int i = 0; 2 * i + 1 < dh; i++) {
        double a = t * pow(10000.0, -2.0 * i / dh), x0 = x[2 * i], x1 = x[2 * i + 1];
        x[2 * i] = x0 * cos(a) - x1 * sin(a);
        x[2 * i + 1] = x0 * sin(a) + x1 * cos(a);
    }
}

static double ref_position_score(const Ref *r, int l, int h, int d) {
    const ModelConfig *c = &r->m->cfg;
    if (c->pos == POS_DISTANCE) return block_tensor(r, l, "attn.distance")[h * c->window + d];
    if (c->pos == POS_ALIBI) return -pow(2.0, -8.0 * (h + 1) / c->n_heads) * d;
    if (c->pos == POS_T5) return block_tensor(r, l, "attn.distance_bucket")[h * 32 + d]; /* d < 16: its own bucket */
    return 0;
}

/* resid (T, D) += block l's attention part. */
static void ref_attention(const Ref *r, int l, int T, double resid[MAXT][MAXD]) {
    const ModelConfig *c = &r->m->cfg;
    int D = c->row_dim, H = c->n_heads, dh = c->key_dim;
    const double *Wq = block_tensor(r, l, "attn.W_Q"), *Wk = block_tensor(r, l, "attn.W_K");
    const double *Wv = block_tensor(r, l, "attn.W_V"), *bq = block_tensor(r, l, "attn.b_Q");
    const double *bk = block_tensor(r, l, "attn.b_K"), *bv = block_tensor(r, l, "attn.b_V");
    const double *Wo = block_tensor(r, l, "attn.W_O"), *bo = block_tensor(r, l, "attn.b_O");
    double x[MAXT][MAXD], q[MAXT][MAXH][MAXD], k[MAXT][MAXH][MAXD], v[MAXT][MAXH][MAXD], out[MAXT][MAXD];
    for (int t = 0; t < T; t++) {
        ref_layernorm(resid[t], block_tensor(r, l, "ln1.w"), block_tensor(r, l, "ln1.b"), D, x[t]);
        for (int h = 0; h < H; h++) {
            for (int i = 0; i < dh; i++) {
                q[t][h][i] = bq[h * dh + i], k[t][h][i] = bk[h * dh + i], v[t][h][i] = bv[h * dh + i];
                for (int j = 0; j < D; j++) {
                    q[t][h][i] += x[t][j] * Wq[(h * D + j) * dh + i];
                    k[t][h][i] += x[t][j] * Wk[(h * D + j) * dh + i];
                    v[t][h][i] += x[t][j] * Wv[(h * D + j) * dh + i];
                }
            }
            if (c->pos == POS_ROPE) ref_rope(q[t][h], dh, t), ref_rope(k[t][h], dh, t);
        }
    }
    for (int t = 0; t < T; t++) {
        for (int j = 0; j < D; j++) out[t][j] = bo[j];
        int lo = t - c->window + 1 > 0 ? t - c->window + 1 : 0;
        for (int h = 0; h < H; h++) {
            double s[MAXT], mx = -1e300, sum = 0, z[MAXD] = {0};
            for (int u = lo; u <= t; u++) {
                double dot = 0;
                for (int i = 0; i < dh; i++) dot += q[t][h][i] * k[u][h][i];
                s[u] = dot / sqrt(dh) + ref_position_score(r, l, h, t - u);
                mx = fmax(mx, s[u]);
            }
            for (int u = lo; u <= t; u++) sum += exp(s[u] - mx);
            for (int u = lo; u <= t; u++)
                for (int i = 0; i < dh; i++) z[i] += exp(s[u] - mx) / sum * att_factor(r, l, h, t, u) * v[u][h][i];
            if (r->off >> (l * H + h) & 1u) continue; /* switched off: its z is 0 */
            for (int i = 0; i < dh; i++)
                for (int j = 0; j < D; j++) out[t][j] += z[i] * Wo[(h * dh + i) * D + j];
        }
    }
    for (int t = 0; t < T; t++)
        for (int j = 0; j < D; j++) resid[t][j] += out[t][j] * resid_factor(r, 1 + 2 * l, t, j);
}

/* resid (T, D) += block l's MLP part. */
static void ref_mlp(const Ref *r, int l, int T, double resid[MAXT][MAXD]) {
    const ModelConfig *c = &r->m->cfg;
    int D = c->row_dim, F = c->hidden_dim;
    const double *Win = block_tensor(r, l, "mlp.W_in"), *bin = block_tensor(r, l, "mlp.b_in");
    const double *Wout = block_tensor(r, l, "mlp.W_out"), *bout = block_tensor(r, l, "mlp.b_out");
    for (int t = 0; t < T; t++) {
        double x[MAXD], post[MAXF];
        ref_layernorm(resid[t], block_tensor(r, l, "ln2.w"), block_tensor(r, l, "ln2.b"), D, x);
        for (int f = 0; f < F; f++) {
            double pre = bin[f];
            for (int j = 0; j < D; j++) pre += x[j] * Win[j * F + f];
            post[f] = ref_act(c->act, pre);
        }
        for (int j = 0; j < D; j++) {
            double o = bout[j];
            for (int f = 0; f < F; f++) o += post[f] * Wout[f * D + j];
            resid[t][j] += o * resid_factor(r, 2 + 2 * l, t, j);
        }
    }
}

/* Sum of the losses of one story. */
static double ref_story_loss(const Ref *r, const int32_t *ids, int T) {
    const ModelConfig *c = &r->m->cfg;
    int D = c->row_dim, V = c->vocab_size;
    const double *E = tensor(r, "embed.W_E"), *P = tensor(r, "pos_embed.W_pos");
    double resid[MAXT][MAXD], total = 0;
    for (int t = 0; t < T; t++)
        for (int j = 0; j < D; j++)
            resid[t][j] = (E[ids[t] * D + j] + (P ? P[(t < c->window ? t : c->window - 1) * D + j] : 0)) *
                          resid_factor(r, 0, t, j);
    for (int l = 0; l < c->n_layers; l++) {
        ref_attention(r, l, T, resid);
        ref_mlp(r, l, T, resid);
    }
    const double *bu = tensor(r, "unembed.b_U");
    for (int t = 0; t + 1 < T; t++) {
        double x[MAXD], logits[MAXV], mx = -1e300, sum = 0;
        ref_layernorm(resid[t], tensor(r, "ln_final.w"), tensor(r, "ln_final.b"), D, x);
        for (int v = 0; v < V; v++) {
            logits[v] = bu[v];
            for (int j = 0; j < D; j++) logits[v] += x[j] * ref_W_U(r, j, v);
            mx = fmax(mx, logits[v]);
        }
        for (int v = 0; v < V; v++) sum += exp(logits[v] - mx);
        total += mx + log(sum) - logits[ids[t + 1]];
    }
    return total;
}

/* resid (T, D) entering block l of the story ids (l = blocks: leaving the last). */
static void ref_resid(const Ref *r, const int32_t *ids, int T, int l, double resid[MAXT][MAXD]) {
    const ModelConfig *c = &r->m->cfg;
    int D = c->row_dim;
    const double *E = tensor(r, "embed.W_E"), *P = tensor(r, "pos_embed.W_pos");
    for (int t = 0; t < T; t++)
        for (int j = 0; j < D; j++)
            resid[t][j] = (E[ids[t] * D + j] + (P ? P[(t < c->window ? t : c->window - 1) * D + j] : 0)) *
                          resid_factor(r, 0, t, j);
    for (int k = 0; k < l; k++) {
        ref_attention(r, k, T, resid);
        ref_mlp(r, k, T, resid);
    }
}

/* logit(answer) - logit(wrong) at the last position of the corrupt story with
 * the clean story's residual stream at position u entering block l put in
 * (u < 0: nothing put in). */
static double ref_patched_diff(const Ref *r, const int32_t *clean, const int32_t *corrupt, int T, int l, int u,
                               int32_t answer, int32_t wrong) {
    const ModelConfig *c = &r->m->cfg;
    int D = c->row_dim;
    double from[MAXT][MAXD], resid[MAXT][MAXD], x[MAXD];
    ref_resid(r, clean, T, l, from);
    ref_resid(r, corrupt, T, l, resid);
    if (u >= 0) memcpy(resid[u], from[u], sizeof resid[u]);
    for (int k = l; k < c->n_layers; k++) {
        ref_attention(r, k, T, resid);
        ref_mlp(r, k, T, resid);
    }
    ref_layernorm(resid[T - 1], tensor(r, "ln_final.w"), tensor(r, "ln_final.b"), D, x);
    double diff = tensor(r, "unembed.b_U")[answer] - tensor(r, "unembed.b_U")[wrong];
    for (int j = 0; j < D; j++) diff += x[j] * (ref_W_U(r, j, answer) - ref_W_U(r, j, wrong));
    return diff;
}

static double ref_loss(const Ref *r, const Batch *b) {
    double total = 0;
    int n = 0;
    Ref story = *r;
    story.n = b->n_tokens;
    for (int s = 0; s < b->n_stories; s++) {
        int T = b->starts[s + 1] - b->starts[s];
        story.base = b->starts[s];
        total += ref_story_loss(&story, b->tokens + b->starts[s], T);
        n += T - 1;
    }
    return total / n;
}

/* Weights large enough that attention is far from even and the MLP bends;
 * LayerNorm weights around 1. */
static void random_params(Model *m, Rng *rng) {
    for (int t = 0; t < m->n_tensors; t++) {
        const ParamTensor *pt = &m->tensors[t];
        const char *last = strrchr(pt->name, '.');
        int ln_weight = last && strcmp(last, ".w") == 0;
        for (size_t i = pt->offset; i < pt->offset + pt->size; i++)
            m->params[i] = (float)(ln_weight ? 1 + 0.3 * slm_rng_normal(rng) : 0.6 * slm_rng_normal(rng));
    }
}

/* Fixed masks for training's dropout over n positions of the tiny model
 * (P 0.3 on the residual stream's additions, 0.25 on the attention weights,
 * about a quarter of each dropped), or none for drop 0. */
static Dropout fixed_dropout(const ModelConfig *c, int n, int drop, Rng *rng) {
    if (!drop) return (Dropout){0};
    static uint8_t resid[(1 + 2 * 2) * 32 * MAXD], att[2 * MAXH * 32 * 32];
    size_t nr = (size_t)(1 + 2 * c->n_layers) * n * c->row_dim, na = (size_t)c->n_layers * c->n_heads * n * n;
    for (size_t i = 0; i < nr && i < sizeof resid; i++) resid[i] = slm_rng_uniform(rng) >= 0.25;
    for (size_t i = 0; i < na && i < sizeof att; i++) att[i] = slm_rng_uniform(rng) >= 0.25;
    return (Dropout){.hidden = 0.3f, .attention = 0.25f, .hidden_mask = resid, .attention_mask = att};
}

/* Analytic (slm_model_backward and training's slm_model_loss_and_grad)
 * against numerical gradients of the double re-statement, every parameter;
 * with drop, both passes and the re-statement drop by the same fixed masks. */
static void gradcheck_with(PosScheme pos, ActFn act, uint32_t off, int tie, int drop) {
    ModelConfig cfg = tiny(pos, act);
    cfg.tie_embeddings = tie;
    Ablation ab = {.heads = check_heads(off)}, *abp = off ? &ab : NULL;
    char what[64];
    snprintf(what, sizeof what, "%s %s%s%s%s", slm_pos_name(pos), slm_act_name(act), off ? " ablated" : "",
             tie ? " tied" : "", drop ? " dropout" : "");
    Model m;
    Activations a;
    Batch b;
    Error e;
    Rng rng;
    slm_rng_seed(&rng, 7);
    CHECK(slm_model_init(&m, &cfg, &e) == 0);
    CHECK(slm_activations_init(&a, &cfg, 32, &e) == 0);
    check_tiny_batch(&b, 11, &rng);
    random_params(&m, &rng);
    float *grads = malloc(m.n_params * sizeof(float)), *fused = calloc(m.n_params, sizeof(float));
    double *p = malloc(m.n_params * sizeof(double));
    for (size_t i = 0; i < m.n_params; i++) p[i] = m.params[i];
    Dropout fixed = fixed_dropout(&cfg, b.n_tokens, drop, &rng);
    a.dropout = fixed;
    Ref ref = {&m, p, off, drop ? &fixed : NULL, 0, 0};
    float loss;
    CHECK(slm_model_forward(&m, &a, &b, abp, &loss, &e) == 0);
    CHECK_CLOSE(a.mean_loss, ref_loss(&ref, &b), 1e-5, 0); /* the same function */
    slm_model_zero_grad(&m, grads);
    slm_model_backward(&m, &a, &b, grads);
    CHECK(slm_model_loss_and_grad(&m, &a, &b, abp, 1.0f / a.n_predicted, fused, &e) == 0);
    CHECK_CLOSE(a.mean_loss, loss, 1e-6, 0);
    double worst = 0, h = 1e-5;
    for (int t = 0; t < m.n_tensors; t++) {
        const ParamTensor *pt = &m.tensors[t];
        double max_diff = 0, max_grad = 0;
        for (size_t i = pt->offset; i < pt->offset + pt->size; i++) {
            double saved = p[i];
            p[i] = saved + h;
            double up = ref_loss(&ref, &b);
            p[i] = saved - h;
            double down = ref_loss(&ref, &b);
            p[i] = saved;
            double num = (up - down) / (2 * h);
            max_diff = fmax(max_diff, fmax(fabs(num - grads[i]), fabs(num - fused[i])));
            max_grad = fmax(max_grad, fabs(num));
        }
        /* b_K's true gradient is 0 unless rope turns it: a bias on every key moves
         * all of a query's scores alike. The float pass leaves rounding there. */
        int ok = CHECK(max_grad > 1e-9 ? max_diff <= 2e-4 * max_grad : max_diff <= 1e-6);
        if (!ok) fprintf(stderr, "  %s %s: diff %.3g, max %.3g\n", what, pt->name, max_diff, max_grad);
        if (max_grad > 1e-9) worst = fmax(worst, max_diff / max_grad);
    }
    printf("%-20s loss %.6f, worst gradient %.2e of its tensor's max\n", what, loss, worst);
    free(p);
    free(fused);
    free(grads);
    slm_batch_free(&b);
    slm_activations_free(&a);
    slm_model_free(&m);
}

static void gradcheck_tied(PosScheme pos, ActFn act, uint32_t off, int tie) { gradcheck_with(pos, act, off, tie, 0); }
static void gradcheck(PosScheme pos, ActFn act, uint32_t off) { gradcheck_with(pos, act, off, 0, 0); }

/* ---- the table ------------------------------------------------------------------ */

static void check_default_table(void) {
    ModelConfig c = slm_transformer_config_default(2000);
    CHECK(slm_model_param_count(&c) == 374480); /* docs/transformer.md */
    c.pos = POS_ROPE;
    CHECK(slm_model_param_count(&c) == 358096);
    c.pos = POS_ABSOLUTE;
    Model m;
    Error e;
    CHECK(slm_model_init(&m, &c, &e) == 0);
    const ParamTensor *t = slm_model_tensor(&m, "blocks.1.attn.W_Q");
    CHECK(t && t->ndim == 3 && t->shape[0] == 8 && t->shape[1] == 64 && t->shape[2] == 8 && t->decay);
    t = slm_model_tensor(&m, "blocks.0.attn.W_O");
    CHECK(t && t->shape[0] == 8 && t->shape[1] == 8 && t->shape[2] == 64);
    t = slm_model_tensor(&m, "unembed.W_U");
    CHECK(t && t->shape[0] == 64 && t->shape[1] == 2000);
    t = slm_model_tensor(&m, "pos_embed.W_pos");
    CHECK(t && t->shape[0] == 256 && t->shape[1] == 64 && !t->decay);
    CHECK(slm_model_tensor(&m, "blocks.1.mlp.W_in")->shape[1] == 256);
    CHECK(slm_model_tensor(&m, "blocks.0.ln1.b") && !slm_model_tensor(&m, "blocks.2.ln1.w"));
    slm_model_free(&m);
    c.tie_embeddings = 1; /* one tensor embed.W_E: 2,000 x 64 fewer (docs/transformer.md) */
    CHECK(slm_model_param_count(&c) == 374480 - 128000);
    CHECK(slm_model_init(&m, &c, &e) == 0);
    CHECK(!slm_model_tensor(&m, "unembed.W_U") && slm_model_tensor(&m, "unembed.b_U"));
    CHECK(m.n_params == 246480 && !slm_model_tensor(&m, "embed.W_E")->decay);
    slm_model_free(&m);
    c.tie_embeddings = 0;
    c.n_layers = 9;
    CHECK(slm_model_init(&m, &c, &e) != 0); /* 1..8 blocks */
    c.n_layers = 2, c.value_dim = 4;
    CHECK(slm_model_init(&m, &c, &e) != 0); /* one d_head */
}

/* The same batch twice, and a fresh model of the same seed: the same bits. */
static void check_same_bits(void) {
    ModelConfig c = tiny(POS_ROPE, ACT_GELU);
    Model m1, m2;
    Activations a;
    Batch b;
    Error e;
    Rng rng;
    slm_rng_seed(&rng, 3);
    CHECK(slm_model_init(&m1, &c, &e) == 0 && slm_model_init(&m2, &c, &e) == 0);
    slm_model_randomize(&m1, 99);
    slm_model_randomize(&m2, 99);
    CHECK(memcmp(m1.params, m2.params, m1.n_params * sizeof(float)) == 0);
    CHECK(slm_activations_init(&a, &c, 32, &e) == 0);
    check_tiny_batch(&b, 11, &rng);
    float *g1 = calloc(m1.n_params, sizeof(float)), *g2 = calloc(m1.n_params, sizeof(float));
    CHECK(slm_model_loss_and_grad(&m1, &a, &b, NULL, 0.1f, g1, &e) == 0);
    float l1 = (float)a.mean_loss;
    CHECK(slm_model_loss_and_grad(&m2, &a, &b, NULL, 0.1f, g2, &e) == 0);
    CHECK(l1 == (float)a.mean_loss && memcmp(g1, g2, m1.n_params * sizeof(float)) == 0);
    Ablation ab = {.heads = check_heads(1), .mode = ABLATE_MEAN, .mean = NULL};
    CHECK(slm_model_forward(&m1, &a, &b, &ab, NULL, &e) != 0); /* mean mode without the means: refused */
    CHECK(strstr(e.message, "mean") != NULL);
    ab = (Ablation){.heads = check_heads(1u << 4)}; /* the tiny model has heads 0..3 (2 blocks of 2): no head 4 */
    CHECK(slm_model_forward(&m1, &a, &b, &ab, NULL, &e) != 0);
    free(g1);
    free(g2);
    slm_batch_free(&b);
    slm_activations_free(&a);
    slm_model_free(&m1);
    slm_model_free(&m2);
}

/* A long story run as a piece (n_layers * (n_ctx - 1) tokens of context, as
 * training's shards cut it) predicts exactly as in the whole story. */
static void check_piece(PosScheme pos) {
    ModelConfig c = tiny(pos, ACT_GELU);
    Model m;
    Activations a;
    Batch whole, piece;
    Error e;
    Rng rng;
    slm_rng_seed(&rng, 5);
    int32_t ids[14] = {1};
    for (int t = 1; t < 14; t++) ids[t] = (int32_t)slm_rng_below(&rng, 11);
    CHECK(slm_model_init(&m, &c, &e) == 0 && slm_activations_init(&a, &c, 32, &e) == 0);
    random_params(&m, &rng);
    CHECK(slm_batch_init(&whole, 32, 1, &e) == 0 && slm_batch_init(&piece, 32, 1, &e) == 0);
    CHECK(slm_batch_add(&whole, ids, 14, &e) == 0);
    int context = c.n_layers * (c.window - 1), begin = 3; /* predicting from position 9 */
    CHECK(slm_batch_add_piece(&piece, ids + begin, 14 - begin, (BatchPiece){context, begin, -1}, &e) == 0);
    float want[14];
    CHECK(slm_model_forward(&m, &a, &whole, NULL, NULL, &e) == 0);
    memcpy(want, a.loss, sizeof want);
    CHECK(slm_model_forward(&m, &a, &piece, NULL, NULL, &e) == 0);
    CHECK(a.n_predicted == 14 - begin - context - 1);
    for (int p = context; p < 14 - begin - 1; p++) CHECK_CLOSE(a.loss[p], want[begin + p], 1e-5, 1e-6);
    slm_batch_free(&whole);
    slm_batch_free(&piece);
    slm_activations_free(&a);
    slm_model_free(&m);
}

/* The key/value cache per block gives the forward pass's logits at every
 * position, also past the window (a story of 9 in n_ctx 4), with the heads
 * of off switched off (mean: set to a mean output of their own, else 0). */
static void check_generator_tied(PosScheme pos, uint32_t off, int mean, int tie) {
    ModelConfig c = tiny(pos, ACT_GELU);
    c.tie_embeddings = tie;
    float means[2 * 2 * 4]; /* (layers*H, dh) */
    for (int i = 0; i < 16; i++) means[i] = 0.3f * (float)(i % 5) - 0.5f;
    Ablation ab = {.heads = check_heads(off), .mode = mean ? ABLATE_MEAN : ABLATE_ZERO, .mean = mean ? means : NULL};
    Model m;
    Activations a;
    Batch b;
    Generator g;
    Error e;
    Rng rng;
    slm_rng_seed(&rng, 11);
    CHECK(slm_model_init(&m, &c, &e) == 0 && slm_activations_init(&a, &c, 32, &e) == 0);
    random_params(&m, &rng);
    check_tiny_batch(&b, 11, &rng);
    CHECK(slm_model_forward(&m, &a, &b, &ab, NULL, &e) == 0);
    CHECK(slm_generator_init(&g, &m, &ab, &e) == 0);
    double worst = 0;
    for (int p = 0; p < b.starts[1]; p++) {
        const float *logits = slm_generator_feed(&g, b.tokens[p]);
        for (int v = 0; v < c.vocab_size; v++)
            worst = fmax(worst, fabs(logits[v] - a.logits[(size_t)p * c.vocab_size + v]));
    }
    if (!CHECK(worst < 1e-4)) fprintf(stderr, "  generator %s: logits differ by %.3g\n", slm_pos_name(pos), worst);
    double sum_err = 0; /* the probes' view of the weights: every head of every block sums to 1 over its keys */
    for (int head = 0; head < slm_model_heads(&c); head++)
        for (int p = 0; p < b.n_tokens; p++) {
            int first, n;
            const float *w = slm_activations_attention(&a, head, p, &first, &n);
            double sum = 0;
            for (int j = 0; j < n; j++) sum += w[j];
            sum_err = fmax(sum_err, fabs(sum - 1));
            CHECK(n == p - first + 1 && n <= c.window);
        }
    CHECK(sum_err < 1e-5);
    for (int p = 0; mean && p < b.n_tokens; p++) /* a switched-off head's hook_z is its mean */
        for (int head = 0; head < slm_model_heads(&c); head++)
            CHECK(!(off >> head & 1u) || memcmp(slm_activations_head_output(&a, head, p), means + head * 4, 16) == 0);
    slm_generator_free(&g);
    slm_batch_free(&b);
    slm_activations_free(&a);
    slm_model_free(&m);
}

static void check_generator(PosScheme pos, uint32_t off, int mean) { check_generator_tied(pos, off, mean, 0); }

/* patch on a transformer: the residual stream at every block and position put
 * into the corrupt run gives the logit difference of the re-statement in
 * double with that row put in (the stories longer than n_ctx 4). */
static void check_patch_resid(PosScheme pos, int tie) {
    ModelConfig cfg = tiny(pos, ACT_GELU);
    cfg.tie_embeddings = tie;
    enum { T = 7 };
    const int32_t clean[T] = {1, 4, 9, 4, 2, 10, 4}, corrupt[T] = {1, 7, 9, 3, 2, 10, 7};
    Model m;
    Error e;
    Rng rng;
    slm_rng_seed(&rng, 21);
    CHECK(slm_model_init(&m, &cfg, &e) == 0);
    random_params(&m, &rng);
    double *p = malloc(m.n_params * sizeof(double));
    for (size_t i = 0; i < m.n_params; i++) p[i] = m.params[i];
    Ref ref = {.m = &m, .p = p};
    ProbeRunner rc, rx;
    CHECK(slm_probe_runner_init(&rc, &m, T, &e) == 0 && slm_probe_runner_init(&rx, &m, T, &e) == 0);
    CHECK(slm_probe_run(&rc, clean, T, NULL, &e) == 0 && slm_probe_run(&rx, corrupt, T, NULL, &e) == 0);
    int32_t answer = 0, wrong = 1;
    double lx = ref_patched_diff(&ref, corrupt, corrupt, T, 0, -1, answer, wrong);
    PatchResult pr;
    CHECK(slm_probe_patch_runs(&m, &rc, &rx, answer, wrong, &pr, &e) == 0);
    CHECK(pr.n_layers == 2 && pr.n_heads == 4 && pr.all_rows == 1.0 && pr.hidden == 1.0);
    CHECK_CLOSE(pr.clean_diff, ref_patched_diff(&ref, clean, clean, T, 0, -1, answer, wrong), 1e-4, 1e-4);
    CHECK_CLOSE(pr.corrupt_diff, lx, 1e-4, 1e-4);
    double worst = 0;
    for (int l = 0; l <= 2; l++)
        for (int u = 0; u < T; u++) {
            double want = ref_patched_diff(&ref, clean, corrupt, T, l, u, answer, wrong);
            double got = pr.resid[l * T + u] * (pr.clean_diff - pr.corrupt_diff) + pr.corrupt_diff;
            worst = fmax(worst, fabs(got - want));
        }
    printf("patch of the residual stream, %-8s worst %.2e from the re-statement\n", slm_pos_name(pos), worst);
    if (!CHECK(worst < 1e-4))
        fprintf(stderr, "  patch of the residual stream, %s: off by %.3g\n", slm_pos_name(pos), worst);
    slm_patch_result_free(&pr);
    slm_probe_runner_free(&rc);
    slm_probe_runner_free(&rx);
    free(p);
    slm_model_free(&m);
}

/* ---- training's dropout by key ------------------------------------------------ */

/* Residual dropout drops about P of resid_0's numbers and scales the rest by
 * exactly 1/(1-P); the same keys draw the same masks (the loss repeats bit
 * for bit); rates without keys (evaluation's passes) drop nothing; attention
 * dropout alone leaves resid_0 as it was and changes the loss. */
static void check_dropout_by_key(void) {
    enum { T = 200 };
    ModelConfig cfg = slm_transformer_config_default(50);
    Model m;
    Activations a;
    Batch b;
    Error e;
    CHECK(slm_model_init(&m, &cfg, &e) == 0 && slm_activations_init(&a, &cfg, T, &e) == 0 &&
          slm_batch_init(&b, T, 1, &e) == 0);
    slm_model_randomize(&m, 3);
    int32_t ids[T];
    for (int t = 0; t < T; t++) ids[t] = t ? 2 + (t * 7) % 48 : 1;
    CHECK(slm_batch_add(&b, ids, T, &e) == 0);
    size_t n = (size_t)T * cfg.row_dim;
    float *plain = malloc(n * sizeof(float));
    double loss[6];
    uint64_t key = slm_dropout_story_key(3, 0, 0);
    const Dropout runs[6] = {{0},
                             {.hidden = 0.1f, .attention = 0.1f}, /* rates without keys: nothing */
                             {.hidden = 0.1f, .story_keys = &key},
                             {.hidden = 0.1f, .story_keys = &key},
                             {.attention = 0.1f, .story_keys = &key},
                             {.attention = 0.1f, .story_keys = &key}};
    for (int i = 0; i < 6; i++) {
        a.dropout = runs[i];
        CHECK(slm_model_loss_and_grad(&m, &a, &b, NULL, 1.0f, NULL, &e) == 0);
        loss[i] = a.mean_loss;
        const float *x = a.tf->layer[0].resid_pre;
        if (i == 0) memcpy(plain, x, n * sizeof(float));
        if (i == 1 || i == 4) CHECK(memcmp(plain, x, n * sizeof(float)) == 0);
        if (i != 2) continue;
        size_t dropped = 0, scaled = 0;
        for (size_t j = 0; j < n; j++) dropped += x[j] == 0.0f, scaled += x[j] == plain[j] * (1.0f / 0.9f);
        double rate = (double)dropped / (double)n;
        printf("residual dropout P 0.1 by key: %zu of %zu dropped (%.4f)\n", dropped, n, rate);
        CHECK(fabs(rate - 0.1) < 0.01 && dropped + scaled == n);
    }
    CHECK(loss[1] == loss[0] && loss[2] != loss[0] && loss[3] == loss[2] && loss[4] != loss[0] && loss[5] == loss[4]);
    free(plain);
    slm_batch_free(&b), slm_activations_free(&a), slm_model_free(&m);
}

int main(void) {
    Rng rng;
    slm_rng_seed(&rng, 1);
    check_layernorm(&rng);
    check_activations();
    static const PosScheme schemes[] = {POS_ABSOLUTE, POS_ROPE, POS_ALIBI, POS_T5, POS_DISTANCE, POS_NONE};
    for (int i = 0; i < 6; i++) gradcheck(schemes[i], ACT_GELU, 0);
    gradcheck(POS_ABSOLUTE, ACT_GELU_NEW, 0);
    gradcheck(POS_ROPE, ACT_RELU, 0);
    gradcheck(POS_ROPE, ACT_GELU, 0x5);           /* --ablate 1:0,2:0 */
    gradcheck_tied(POS_ABSOLUTE, ACT_GELU, 0, 1); /* --tie-embeddings: W_E's gradient from both ends */
    gradcheck_tied(POS_ROPE, ACT_RELU, 0x5, 1);
    gradcheck_with(POS_ABSOLUTE, ACT_GELU, 0, 0, 1); /* --dropout, --attention-dropout with fixed masks */
    gradcheck_with(POS_ROPE, ACT_RELU, 0x5, 1, 1);
    gradcheck_with(POS_T5, ACT_GELU, 0, 0, 1);
    check_dropout_by_key();
    check_default_table();
    check_same_bits();
    for (int i = 0; i < 6; i++) check_generator(schemes[i], 0, 0);
    check_generator(POS_SINUSOIDAL, 0, 0);
    check_generator(POS_ABSOLUTE, 0x6, 0);
    check_generator(POS_ROPE, 0x9, 1);           /* --ablate 1:0,2:1 --ablate-mode mean */
    check_generator_tied(POS_ABSOLUTE, 0, 0, 1); /* the cache's W_U packed from W_E */
    for (int i = 0; i < 6; i++) check_piece(schemes[i]);
    check_patch_resid(POS_ABSOLUTE, 0);
    check_patch_resid(POS_ROPE, 0);
    check_patch_resid(POS_ROPE, 1);
    return check_report();
}
