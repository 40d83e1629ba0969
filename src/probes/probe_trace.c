/* Tool 3, the network around it: one token of the story run last,
 * followed through what the hidden layer reads (its row and the heads'
 * outputs), the hidden layer and the next-token guesses. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "storylm/probes.h"
#include "storylm/transformer.h"

void slm_trace_result_free(TraceResult *t) {
    free(t->z);
    free(t->hidden);
    free(t->units);
    free(t->guesses);
    *t = (TraceResult){0};
}

/* The part of z (row: -1, or head k of layer l) whose inputs add the most
 * (in size) to hidden unit u's input, and that amount. z (D + H*vd): the
 * row then layer l's heads; hidden_w (128, Z) reads every layer's heads. */
static void strongest_part(const Model *m, int l, const float *z, int u, int *part, float *amount) {
    const ModelConfig *c = &m->cfg;
    int Z = slm_model_hidden_input_dim(c), D = c->row_dim, vd = c->value_dim;
    const float *w = m->hidden_w + (size_t)u * Z;
    *part = -1;
    *amount = 0;
    for (int k = -1; k < c->n_heads; k++) {
        int from = k < 0 ? 0 : D + k * vd, n = k < 0 ? D : vd;
        const float *wk = w + (k < 0 ? 0 : D + (size_t)(l * c->n_heads + k) * vd);
        float sum = 0;
        for (int i = 0; i < n; i++) sum += wk[i] * z[from + i];
        if (k < 0 || fabsf(sum) > fabsf(*amount)) {
            *part = k;
            *amount = sum;
        }
    }
}

/* x (D) -> y (D) = w * rstd * (x - mean(x)): x's share of a LayerNorm's
 * output at a position whose scale rstd is frozen (its bias left out). */
static void frozen_ln_share(const float *x, const float *w, float rstd, int D, float *y) {
    double mean = 0;
    for (int i = 0; i < D; i++) mean += x[i];
    mean /= D;
    for (int i = 0; i < D; i++) y[i] = w[i] * rstd * (float)(x[i] - mean);
}

/* Transformer block l at position p: shares (1 + H, D), the shares of LN2's
 * output of resid_pre and of each head's z_h W_O[h], with LN2's scale frozen. */
static void block_shares(const Model *m, const Activations *a, int l, int p, float *shares) {
    const ModelConfig *c = &m->cfg;
    int D = c->row_dim, H = c->n_heads, dh = c->key_dim;
    const TfLayerActs *L = &a->tf->layer[l];
    TfViews v;
    slm_transformer_views(m, m->params, &v);
    const TfBlockViews *w = &v.block[l];
    float out[TF_MAX_D_MODEL];
    frozen_ln_share(L->resid_pre + (size_t)p * D, w->ln2_w, L->ln2_rstd[p], D, shares);
    for (int h = 0; h < H; h++) {
        const float *z = L->z + (size_t)p * H * dh + h * dh;
        for (int i = 0; i < D; i++) out[i] = 0;
        for (int j = 0; j < dh; j++)
            for (int i = 0; i < D; i++) out[i] += z[j] * w->W_O[((size_t)h * dh + j) * D + i];
        frozen_ln_share(out, w->ln2_w, L->ln2_rstd[p], D, shares + (size_t)(1 + h) * D);
    }
}

/* The part (resid_pre: -1, or head h) whose share pushes MLP neuron u of
 * block l hardest: W_in[:, u] . share, from shares (1 + H, D). */
static void strongest_share(const Model *m, int l, const float *shares, int u, int *part, float *amount) {
    const ModelConfig *c = &m->cfg;
    int D = c->row_dim, F = c->hidden_dim;
    TfViews v;
    slm_transformer_views(m, m->params, &v);
    const float *W_in = v.block[l].W_in;
    *part = -1;
    *amount = 0;
    for (int k = -1; k < c->n_heads; k++) {
        const float *x = shares + (size_t)(k + 1) * D;
        float sum = 0;
        for (int i = 0; i < D; i++) sum += W_in[(size_t)i * F + u] * x[i];
        if (k < 0 || fabsf(sum) > fabsf(*amount)) {
            *part = k;
            *amount = sum;
        }
    }
}

/* The n indices of x (len) largest by key (|x| when by_size), in order. */
static void top_indices(const float *x, int len, int n, int by_size, int *out) {
    for (int k = 0; k < n; k++) {
        int best = -1;
        for (int i = 0; i < len; i++) {
            int taken = 0;
            for (int j = 0; j < k && !taken; j++) taken = out[j] == i;
            float v = by_size ? fabsf(x[i]) : x[i];
            if (!taken && (best < 0 || v > (by_size ? fabsf(x[best]) : x[best]))) best = i;
        }
        out[k] = best;
    }
}

static int trace_alloc(TraceResult *t, int Z, int Hd, int n_units, int n_guesses, Error *e) {
    t->z = xmalloc((size_t)Z * sizeof(float), e);
    t->hidden = t->z ? xmalloc((size_t)Hd * sizeof(float), e) : NULL;
    t->units = t->hidden ? xcalloc((size_t)n_units, sizeof(TraceUnit), e) : NULL;
    t->guesses = t->units ? xcalloc((size_t)n_guesses, sizeof(TraceGuess), e) : NULL;
    return t->guesses ? 0 : -1;
}

/* What layer (block) l's trace shows at position p: z (D + H*vd) and hidden (Hd). */
static void copy_inputs(const ProbeRunner *r, int l, int p, float *z, float *hidden) {
    const ModelConfig *c = &r->model->cfg;
    const Activations *a = &r->acts;
    int D = c->row_dim, HV = c->n_heads * c->value_dim, Hd = c->hidden_dim;
    if (c->arch->readout == READOUT_RESIDUAL) {
        const TfLayerActs *L = &a->tf->layer[l];
        memcpy(z, L->resid_pre + (size_t)p * D, (size_t)D * sizeof(float));
        memcpy(z + D, L->z + (size_t)p * HV, (size_t)HV * sizeof(float));
        memcpy(hidden, L->mlp_post + (size_t)p * Hd, (size_t)Hd * sizeof(float));
        return;
    }
    const float *zp = a->z + (size_t)p * slm_model_hidden_input_dim(c);
    memcpy(z, zp, (size_t)D * sizeof(float));
    memcpy(z + D, zp + D + (size_t)l * HV, (size_t)HV * sizeof(float));
    memcpy(hidden, a->hidden + (size_t)p * Hd, (size_t)Hd * sizeof(float));
}

int slm_probe_trace(const ProbeRunner *r, int p, int n_units, int n_guesses, TraceResult *out, Error *e) {
    const Model *m = r->model;
    const ModelConfig *c = &m->cfg;
    const Activations *a = &r->acts;
    int tf = c->arch->readout == READOUT_RESIDUAL, l = r->layer, Hd = c->hidden_dim, V = c->vocab_size;
    int Z = slm_model_heads(c) == 0 ? slm_model_hidden_input_dim(c) : c->row_dim + c->n_heads * c->value_dim;
    if (p < 0 || p >= a->n_positions)
        return FAIL(e, NULL, "position %d of the trace is outside the %d positions run", p, a->n_positions);
    n_units = n_units < Hd ? n_units : Hd;
    n_guesses = n_guesses < V ? n_guesses : V;
    *out = (TraceResult){.position = p,
                         .token = r->batch.tokens[p],
                         .layer = l,
                         .n_inputs = Z,
                         .n_units = n_units,
                         .n_guesses = n_guesses};
    int *order = xmalloc((size_t)(n_units > n_guesses ? n_units : n_guesses) * sizeof(int) + 1, e);
    float *shares = tf ? xmalloc((size_t)(1 + c->n_heads) * c->row_dim * sizeof(float), e) : NULL;
    if (!order || (tf && !shares) || trace_alloc(out, Z, Hd, n_units, n_guesses, e)) {
        free(order);
        free(shares);
        slm_trace_result_free(out);
        return -1;
    }
    if (slm_model_heads(c) == 0) {
        memcpy(out->z, a->z + (size_t)p * Z, (size_t)Z * sizeof(float));
        memcpy(out->hidden, a->hidden + (size_t)p * Hd, (size_t)Hd * sizeof(float));
    } else
        copy_inputs(r, l, p, out->z, out->hidden);
    if (tf && Hd > 0) block_shares(m, a, l, p, shares); /* attn-only's blocks have no MLP (d_mlp 0) */
    top_indices(out->hidden, Hd, n_units, 1, order);
    for (int k = 0; k < n_units; k++) {
        TraceUnit *u = &out->units[k];
        u->unit = order[k];
        u->value = out->hidden[order[k]];
        if (!tf && slm_model_heads(c) > 0) strongest_part(m, l, out->z, order[k], &u->part, &u->part_input);
        if (tf) strongest_share(m, l, shares, order[k], &u->part, &u->part_input);
    }
    const float *logits = a->logits + (size_t)p * V;
    top_indices(logits, V, n_guesses, 0, order);
    for (int k = 0; k < n_guesses; k++) out->guesses[k] = (TraceGuess){order[k], expf(logits[order[k]] - a->lse[p])};
    free(order);
    free(shares);
    return 0;
}
