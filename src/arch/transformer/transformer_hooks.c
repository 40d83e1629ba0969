/* The transformer family's hook points (hooks.h) between a run's
 * activations and a hook's buffer: the points the pass keeps (residuals,
 * LayerNorm outputs, z, the MLP's) are copied; the ones it never makes whole
 * (LayerNorm scales, attention scores, each head's result, attn_out,
 * mlp_out) are computed here, at their place in the pass and only when a
 * hook asks, so a pass without hooks pays nothing for them. A changed point
 * is written back into what the rest of the pass reads.
 *
 * N = T positions, D = d_model, H heads of dh, F = d_mlp. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "storylm/activations.h"
#include "storylm/head_set.h"
#include "storylm/hooks.h"
#include "storylm/position.h"
#include "storylm/score.h"
#include "tf_parts.h"

/* The buffer (T, n) that point p of block l reads and writes in place (*n
 * its width); NULL for the points computed or gathered otherwise. */
static float *hook_buffer(const Activations *a, HookPoint p, int l, int *n) {
    const ModelConfig *c = &a->cfg;
    TfActivations *t = a->tf;
    TfLayerActs *L = &t->layer[l];
    *n = p == HOOK_MLP_POST || p == HOOK_MLP_PRE ? c->hidden_dim : p == HOOK_Z ? c->n_heads * c->value_dim : c->row_dim;
    switch (p) {
        case HOOK_EMBED: return t->layer[0].resid_pre; /* W_E[x] before the positions are added */
        case HOOK_RESID_PRE: return L->resid_pre;
        case HOOK_LN1_NORMALIZED: return L->ln1;
        case HOOK_Z: return L->z;
        case HOOK_RESID_MID: return L->resid_mid;
        case HOOK_LN2_NORMALIZED: return L->ln2;
        case HOOK_MLP_PRE: return L->mlp_pre;
        case HOOK_MLP_POST: return L->mlp_post;
        case HOOK_RESID_POST: return slm_tf_resid_post(a, l);
        case HOOK_LN_FINAL: return a->hidden;
        default: return NULL;
    }
}

/* buf (T, D) <-> W_pos's rows of the positions (hook_pos_embed); to_buf:
 * gather, else the residual (W_E[x] + W_pos[t]) gets buf - W_pos[t]. */
static void pos_embed(const TfViews *w, Activations *a, float *buf, int to_buf) {
    const ModelConfig *c = &a->cfg;
    int D = c->row_dim;
    for (int t = 0; t < a->n_positions; t++) {
        int sp = a->tf->story_pos[t];
        const float *row = w->W_pos + (size_t)(sp < c->window ? sp : c->window - 1) * D;
        float *y = buf + (size_t)t * D, *resid = a->tf->layer[0].resid_pre + (size_t)t * D;
        for (int i = 0; i < D; i++) {
            if (to_buf)
                y[i] = row[i];
            else
                resid[i] += y[i] - row[i];
        }
    }
}

/* ---- the LayerNorms' scales ------------------------------------------------ */

/* One LayerNorm of the run: its input x, output y (N, D), mean and rstd (N), w and b (D). */
typedef struct Norm {
    const float *x, *w, *b;
    float *y, *mean, *rstd;
} Norm;

static Norm norm_of(const TfViews *w, const Activations *a, HookPoint p, int l) {
    TfLayerActs *L = &a->tf->layer[l];
    const TfBlockViews *bw = &w->block[l];
    if (p == HOOK_LN1_SCALE) return (Norm){L->resid_pre, bw->ln1_w, bw->ln1_b, L->ln1, L->ln1_mean, L->ln1_rstd};
    if (p == HOOK_LN2_SCALE) return (Norm){L->resid_mid, bw->ln2_w, bw->ln2_b, L->ln2, L->ln2_mean, L->ln2_rstd};
    return (Norm){a->tf->resid_final, w->ln_final_w, w->ln_final_b, a->hidden, a->tf->lnf_mean, a->tf->lnf_rstd};
}

/* buf (T, 1) <-> the scale sqrt(var + eps) = 1 / rstd; written back, each
 * position's output (x - mean) / scale * w + b again, as the kernel makes it. */
static void norm_scale(const Norm *n, int T, int D, float *buf, int to_buf) {
    for (int t = 0; t < T; t++) {
        if (to_buf) {
            buf[t] = 1.0f / n->rstd[t];
            continue;
        }
        float r = n->rstd[t] = 1.0f / buf[t], mu = n->mean[t];
        const float *x = n->x + (size_t)t * D;
        float *y = n->y + (size_t)t * D;
        for (int i = 0; i < D; i++) y[i] = (x[i] - mu) * r * n->w[i] + n->b[i];
    }
}

/* ---- attention scores -------------------------------------------------------- */

/* buf (H, T, T) = block l's scores q.k * scale + the distance table (t->table,
 * this block's while its attention runs), -inf where a key is not read. */
static void gather_scores(const Activations *a, int l, float *buf) {
    const ModelConfig *c = &a->cfg;
    int T = a->n_positions, H = c->n_heads, dh = c->key_dim, ld = a->qkv_ld;
    const float *qkv = slm_tf_layer_qkv(a, l);
    double scale = slm_score_scale(c);
    for (int h = 0; h < H; h++)
        for (int t = 0; t < T; t++) {
            float *row = buf + ((size_t)h * T + t) * T;
            for (int u = 0; u < T; u++) row[u] = -INFINITY;
            for (int u = a->first_key[t]; u <= t; u++) {
                double dot = 0;
                for (int i = 0; i < dh; i++)
                    dot += (double)qkv[(size_t)(h * dh + i) * ld + t] * qkv[(size_t)((H + h) * dh + i) * ld + u];
                row[u] = (float)(dot * scale + a->tf->table[(size_t)h * c->window + (t - u)]);
            }
        }
}

/* ---- the attention part's output ----------------------------------------------- */

/* Where block l's attention part writes resid_pre + attn_out: resid_mid, or
 * (blocks without an MLP) the block's output. */
static float *attn_target(const Activations *a, int l) {
    return a->cfg.hidden_dim > 0 ? a->tf->layer[l].resid_mid : slm_tf_resid_post(a, l);
}

/* buf (T, H, D) = z[t, h] W_O[h], no b_O. */
static void gather_result(const TfBlockViews *w, const Activations *a, int l, float *buf) {
    const ModelConfig *c = &a->cfg;
    int T = a->n_positions, H = c->n_heads, dh = c->value_dim, D = c->row_dim;
    const float *z = a->tf->layer[l].z;
    for (int t = 0; t < T; t++)
        for (int h = 0; h < H; h++) {
            float *y = buf + ((size_t)t * H + h) * D;
            for (int j = 0; j < D; j++) {
                double s = 0;
                for (int i = 0; i < dh; i++)
                    s += (double)z[((size_t)t * H + h) * dh + i] * w->W_O[((size_t)h * dh + i) * D + j];
                y[j] = (float)s;
            }
        }
}

/* Changed results buf (T, H, D): attn_out = their sum + b_O, held for
 * hook_attn_out, and the block's output resid_pre + attn_out. */
static int result_back(const TfBlockViews *w, Activations *a, int l, const float *buf) {
    const ModelConfig *c = &a->cfg;
    int T = a->n_positions, H = c->n_heads, D = c->row_dim;
    ForwardHooks *hk = a->hooks;
    if (!hk->attn_out && !(hk->attn_out = xmalloc((size_t)a->max_positions * D * sizeof(float), &hk->error))) return -1;
    const float *pre = a->tf->layer[l].resid_pre;
    float *out = attn_target(a, l);
    for (int t = 0; t < T; t++)
        for (int j = 0; j < D; j++) {
            float s = w->b_O[j];
            for (int h = 0; h < H; h++) s += buf[((size_t)t * H + h) * D + j];
            hk->attn_out[(size_t)t * D + j] = s;
            out[(size_t)t * D + j] = pre[(size_t)t * D + j] + s;
        }
    hk->attn_out_layer = l + 1;
    return 0;
}

/* buf (T, D) = block l's attn_out (z W_O + b_O, or what a changed
 * hook_result made) or mlp_out (mlp_post W_out + b_out). */
static void gather_part(const TfBlockViews *w, const Activations *a, HookPoint p, int l, float *buf) {
    const ModelConfig *c = &a->cfg;
    TfLayerActs *L = &a->tf->layer[l];
    int T = a->n_positions, D = c->row_dim, HV = c->n_heads * c->value_dim, F = c->hidden_dim;
    if (p == HOOK_ATTN_OUT && a->hooks->attn_out_layer == l + 1)
        memcpy(buf, a->hooks->attn_out, (size_t)T * D * sizeof(float));
    else if (p == HOOK_ATTN_OUT) {
        slm_matmul_at(a->products, 0, 0, T, D, HV, L->z, HV, w->W_O, D, 0.0f, buf, D);
        slm_add_bias_rows(buf, T, D, D, w->b_O);
    } else {
        slm_matmul_at(a->products, 0, 0, T, D, F, L->mlp_post, F, w->W_out, D, 0.0f, buf, D);
        slm_add_bias_rows(buf, T, D, D, w->b_out);
    }
}

/* A changed part buf (T, D): the residual after it is the one before it + buf. */
static void part_back(Activations *a, HookPoint p, int l, const float *buf) {
    TfLayerActs *L = &a->tf->layer[l];
    const float *before = p == HOOK_ATTN_OUT ? L->resid_pre : L->resid_mid;
    float *after = p == HOOK_ATTN_OUT ? attn_target(a, l) : slm_tf_resid_post(a, l);
    for (size_t i = 0; i < (size_t)a->n_positions * a->cfg.row_dim; i++) after[i] = before[i] + buf[i];
}

/* Points computed here, into buf or back from it; 1 when p is not one of them. */
static int computed_point(const Model *m, Activations *a, HookPoint p, int l, float *buf, int to_buf) {
    const ModelConfig *c = &a->cfg;
    TfViews w;
    slm_transformer_views(m, m->params, &w);
    switch (p) {
        case HOOK_POS_EMBED: pos_embed(&w, a, buf, to_buf); return 0;
        case HOOK_LN1_SCALE:
        case HOOK_LN2_SCALE:
        case HOOK_LN_FINAL_SCALE: {
            Norm n = norm_of(&w, a, p, l);
            norm_scale(&n, a->n_positions, c->row_dim, buf, to_buf);
            return 0;
        }
        case HOOK_ATTN_SCORES:
            if (to_buf) gather_scores(a, l, buf);
            return to_buf ? 0 : slm_hooks_scores_back(a, l, buf);
        case HOOK_RESULT:
            if (to_buf) gather_result(&w.block[l], a, l, buf);
            return to_buf ? 0 : result_back(&w.block[l], a, l, buf);
        case HOOK_ATTN_OUT:
        case HOOK_MLP_OUT:
            if (to_buf)
                gather_part(&w.block[l], a, p, l, buf);
            else
                part_back(a, p, l, buf);
            return 0;
        default: return 1;
    }
}

/* The family's (tf_parts.h): to_buf gathers into buf, else writes buf back;
 * 1 when p is none of those it moves itself (q, k, v, the pattern and the
 * logits are hooks.c's), -1 when out of memory (a->hooks->error says so). */
int slm_tf_hook_move(const Model *m, Activations *a, HookPoint p, int l, float *buf, int to_buf) {
    int n;
    float *x = hook_buffer(a, p, l, &n);
    if (!x) return computed_point(m, a, p, l, buf, to_buf);
    memcpy(to_buf ? buf : x, to_buf ? x : buf, (size_t)a->n_positions * n * sizeof(float));
    return 0;
}
