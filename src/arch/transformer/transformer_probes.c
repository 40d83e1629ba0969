/* What the probes read of a transformer beyond a run's attention (arch.h's
 * ProbeOps): a block as a one-layer model with its scores per distance back,
 * TransformerLens's full circuits of a block's heads, a block's trace
 * through LN2 and the residual stream at the final LN taken apart. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "storylm/arch.h"
#include "storylm/layers.h"
#include "storylm/position.h"
#include "transformer.h"

/* view: m, its scores per distance back block l's (table (H, n_ctx)) read as --position-scheme distance. */
static void layer_view(const Model *m, int l, Model *view, float *table) {
    *view = *m;
    if (!table) return;
    TfViews v;
    slm_transformer_views(m, m->params, &v);
    slm_transformer_distance_table(&m->cfg, &v.block[l], table);
    view->distance = table;
    view->cfg.pos = POS_DISTANCE;
}

/* Head h of block l's score added at distance d back (the scheme's: distance, alibi, t5; 0 for the others). */
static float position_score(const Model *m, int l, int h, int d) {
    const ModelConfig *c = &m->cfg;
    TfViews v;
    slm_transformer_views(m, m->params, &v);
    const TfBlockViews *w = &v.block[l];
    if (c->pos == POS_DISTANCE) return w->distance[(size_t)h * c->window + d];
    if (c->pos == POS_ALIBI) return -slm_alibi_slope(h, c->n_heads) * (float)d;
    if (c->pos == POS_T5) return w->bucket[h * T5_BUCKETS + slm_t5_bucket(d)];
    return 0.0f;
}

/* ---- circuits: TransformerLens's full circuits, the LayerNorms' weights folded in ---- */

static size_t circuit_scratch(const ModelConfig *c) {
    int w = c->key_dim > c->value_dim ? c->key_dim : c->value_dim;
    w = w > c->row_dim ? w : c->row_dim; /* (V, d_head) and (V, d_model) rows */
    return 2 * (size_t)c->vocab_size * w + (size_t)c->hidden_dim * c->value_dim + (size_t)c->row_dim * c->key_dim;
}

/* rows (V, k) = W_E (V, D) diag(w) @ weights (D, k); folded (D, k) scratch. */
static void folded_rows(const Model *m, const float *w, const float *weights, int k, float *folded, float *rows) {
    const ModelConfig *c = &m->cfg;
    for (int i = 0; i < c->row_dim; i++)
        for (int j = 0; j < k; j++) folded[(size_t)i * k + j] = w[i] * weights[(size_t)i * k + j];
    slm_matmul_at(slm_model_compute(m), 0, 0, c->vocab_size, k, c->row_dim, m->embedding, c->row_dim, folded, k, 0,
                  rows, k);
}

/* qk (V, V) = (W_E diag(ln1.w) W_Q[h]) (W_E diag(ln1.w) W_K[h])^T / sqrt(d_head). */
static void circuit_qk(const Model *m, int l, int h, float *scratch, float *qk) {
    const ModelConfig *c = &m->cfg;
    int V = c->vocab_size, D = c->row_dim, dh = c->key_dim;
    TfViews v;
    slm_transformer_views(m, m->params, &v);
    const TfBlockViews *b = &v.block[l];
    float *q = scratch, *k = q + (size_t)V * dh, *folded = k + (size_t)V * dh;
    folded_rows(m, b->ln1_w, b->W_Q + (size_t)h * D * dh, dh, folded, q);
    folded_rows(m, b->ln1_w, b->W_K + (size_t)h * D * dh, dh, folded, k);
    float scale = 1.0f / sqrtf((float)dh);
    for (size_t i = 0; i < (size_t)V * dh; i++) q[i] *= scale;
    slm_matmul_at(slm_model_compute(m), 0, 1, V, V, dh, q, dh, k, dh, 0, qk, V);
}

/* ov (V, V) = W_E diag(ln1.w) W_V[h] W_O[h] diag(ln_final.w) W_U; gain unused. */
static void circuit_ov(const Model *m, int l, int h, const float *gain, float *scratch, float *ov) {
    (void)gain;
    const ModelConfig *c = &m->cfg;
    int V = c->vocab_size, D = c->row_dim, dh = c->key_dim;
    TfViews v;
    slm_transformer_views(m, m->params, &v);
    const TfBlockViews *b = &v.block[l];
    float *values = scratch, *written = values + (size_t)V * dh, *folded = written + (size_t)V * D;
    folded_rows(m, b->ln1_w, b->W_V + (size_t)h * D * dh, dh, folded, values);
    /* written (V, D) = values W_O[h] diag(ln_final.w): what reading token s writes, as the unembedding sees it */
    slm_matmul_at(slm_model_compute(m), 0, 0, V, D, dh, values, dh, b->W_O + (size_t)h * dh * D, D, 0, written, D);
    for (size_t s = 0; s < (size_t)V; s++)
        for (int i = 0; i < D; i++) written[s * D + i] *= v.ln_final_w[i];
    slm_matmul_at(slm_model_compute(m), 0, v.W_U_tied, V, V, D, written, D, v.W_U, v.W_U_tied ? D : V, 0, ov,
                  V); /* tied: W_E^T */
}

static const char *circuit_note(const ModelConfig *c) {
    (void)c;
    return "QK and OV: TransformerLens's full circuits of the block, W_E through W_Q W_K (QK) or W_V W_O W_U "
           "(OV), the LayerNorms' weights folded in, biases left out (see --help)";
}

/* ---- a block's trace ---------------------------------------------------------- */

/* x (D) -> y (D) = w * rstd * (x - mean(x)): x's share of a LayerNorm's
 * output at a position whose scale rstd is frozen (its bias left out). */
static void frozen_ln_share(const float *x, const float *w, float rstd, int D, float *y) {
    double mean = 0;
    for (int i = 0; i < D; i++) mean += x[i];
    mean /= D;
    for (int i = 0; i < D; i++) y[i] = w[i] * rstd * (float)(x[i] - mean);
}

/* in (D + H dh) = resid_pre and z at p; hidden (F) = the MLP's neurons (hook_post); push (1 + H, F):
 * W_in[:, u] . the share of LN2's output of resid_pre and of each head's z_h W_O[h], LN2's scale frozen. */
static void trace_layer(const Model *m, const Activations *a, int l, int p, float *in, float *hidden, float *push) {
    const ModelConfig *c = &m->cfg;
    int D = c->row_dim, H = c->n_heads, dh = c->key_dim, F = c->hidden_dim;
    const TfLayerActs *L = &a->tf->layer[l];
    TfViews v;
    slm_transformer_views(m, m->params, &v);
    const TfBlockViews *w = &v.block[l];
    memcpy(in, L->resid_pre + (size_t)p * D, (size_t)D * sizeof(float));
    memcpy(in + D, L->z + (size_t)p * H * dh, (size_t)H * dh * sizeof(float));
    if (F == 0) return; /* a block without an MLP (attn-only): no neurons, no LN2 to read them through */
    memcpy(hidden, L->mlp_post + (size_t)p * F, (size_t)F * sizeof(float));
    float out[TF_MAX_D_MODEL], share[TF_MAX_D_MODEL];
    for (int k = -1; k < H; k++) {
        if (k < 0)
            frozen_ln_share(L->resid_pre + (size_t)p * D, w->ln2_w, L->ln2_rstd[p], D, share);
        else {
            const float *z = L->z + (size_t)p * H * dh + k * dh;
            for (int i = 0; i < D; i++) out[i] = 0;
            for (int j = 0; j < dh; j++)
                for (int i = 0; i < D; i++) out[i] += z[j] * w->W_O[((size_t)k * dh + j) * D + i];
            frozen_ln_share(out, w->ln2_w, L->ln2_rstd[p], D, share);
        }
        for (int u = 0; u < F; u++) {
            float sum = 0;
            for (int i = 0; i < D; i++) sum += w->W_in[(size_t)i * F + u] * share[i];
            push[(size_t)(k + 1) * F + u] = sum;
        }
    }
}

/* ---- the residual stream at the final LN taken apart --------------------------- */

/* A block without an MLP (d_mlp 0: attn-only) has no MLP part. */
static int n_resid_parts(const ModelConfig *c) { return 2 + c->n_layers * (c->n_heads + 1 + (c->hidden_dim > 0)); }

/* parts (P, D) at position p of the run in a, in double: embed, pos_embed (W_pos's row, the sinusoidal
 * tag, or 0), then per block each head's z_h W_O[h], b_O and the MLP's output (where it has an MLP);
 * P = n_resid_parts. */
static void resid_parts(const Model *m, const Activations *a, int p, double *parts, char (*names)[24]) {
    const ModelConfig *c = &m->cfg;
    int D = c->row_dim, H = c->n_heads, dh = c->key_dim, F = c->hidden_dim, k = 2, sp = a->tf->story_pos[p];
    TfViews w;
    slm_transformer_views(m, m->params, &w);
    float tag[TF_MAX_D_MODEL] = {0};
    if (w.W_pos)
        memcpy(tag, w.W_pos + (size_t)(sp < c->window ? sp : c->window - 1) * D, (size_t)D * sizeof(float));
    else if (c->pos == POS_SINUSOIDAL)
        slm_sinusoid_tag(sp, D, tag);
    const float *resid0 = a->tf->layer[0].resid_pre + (size_t)p * D; /* W_E[x] + the position's row */
    for (int i = 0; i < D; i++) parts[i] = (double)resid0[i] - tag[i], parts[D + i] = tag[i];
    if (names) snprintf(names[0], 24, "embed"), snprintf(names[1], 24, "pos_embed");
    for (int l = 0; l < c->n_layers && l < STORYLM_MAX_TF_LAYERS; l++) { /* the views hold as many */
        const TfBlockViews *b = &w.block[l];
        const TfLayerActs *L = &a->tf->layer[l];
        for (int h = 0; h < H; h++, k++) {
            double *out = parts + (size_t)k * D;
            const float *z = L->z + (size_t)p * H * dh + h * dh;
            for (int i = 0; i < D; i++) out[i] = 0;
            for (int j = 0; j < dh; j++)
                for (int i = 0; i < D; i++) out[i] += (double)z[j] * b->W_O[((size_t)h * dh + j) * D + i];
            if (names) snprintf(names[k], 24, "head %d:%d", l + 1, h);
        }
        double *bias = parts + (size_t)k * D, *mlp = bias + D;
        for (int i = 0; i < D; i++) bias[i] = b->b_O[i];
        if (names) snprintf(names[k], 24, "b_O %d", l + 1);
        if (F > 0) { /* the MLP's part (attn-only's blocks have none) */
            const float *post = L->mlp_post + (size_t)p * F;
            for (int i = 0; i < D; i++) mlp[i] = b->b_out[i];
            for (int f = 0; f < F; f++)
                for (int i = 0; i < D; i++) mlp[i] += (double)post[f] * b->W_out[(size_t)f * D + i];
            if (names) snprintf(names[k + 1], 24, "mlp %d", l + 1);
        }
        k += F > 0 ? 2 : 1;
    }
}

static void unembed(const Model *m, const Activations *a, int p, Unembed *u) {
    TfViews w;
    slm_transformer_views(m, m->params, &w);
    *u = (Unembed){.ln_w = w.ln_final_w,
                   .ln_b = w.ln_final_b,
                   .W_U = w.W_U,
                   .b_U = w.b_U,
                   .tied = w.W_U_tied,
                   .eps = TF_LN_EPS,
                   .rstd = a ? a->tf->lnf_rstd[p] : 0};
}

const ProbeOps slm_transformer_probe_ops = {
    .layer_view = layer_view,
    .position_score = position_score,
    .circuit_scratch = circuit_scratch,
    .circuit_qk = circuit_qk,
    .circuit_ov = circuit_ov,
    .circuit_note = circuit_note,
    .trace_layer = trace_layer,
    .n_resid_parts = n_resid_parts,
    .resid_parts = resid_parts,
    .unembed = unembed,
};
