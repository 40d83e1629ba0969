/* What the probes read of the chapter's network beyond a run's attention
 * (arch.h's ProbeOps): a layer as a one-layer model, its position scores,
 * its heads' circuits over the vocabulary and a layer's trace. Layer l's
 * heads read x = [row, layer l-1's heads] (model.h); the hidden layer reads
 * z = [row, every layer's heads]. */
#include <math.h>

#include "storylm/activations.h"
#include "storylm/arch.h"
#include "storylm/layers.h"
#include "storylm/model_params.h"
#include "storylm/position.h"

/* table unused: a layer keeps its scores in its own tensors. */
static void layer_view(const Model *m, int l, Model *view, float *table) {
    (void)table;
    slm_model_layer_view(m, l, view);
}

static float position_score(const Model *m, int l, int h, int d) {
    Model view;
    slm_model_layer_view(m, l, &view);
    return slm_position_distance_score(&view, h, d);
}

/* ---- circuits: the direct path from the token rows ------------------------ */

static size_t circuit_scratch(const ModelConfig *c) {
    int w = c->key_dim > c->value_dim ? c->key_dim : c->value_dim;
    return 2 * (size_t)c->vocab_size * w + (size_t)c->hidden_dim * c->value_dim + (size_t)c->row_dim * c->key_dim;
}

/* rows (V, k) = E (V, D) @ weights (D, k). */
static void project_rows(const Model *m, const float *weights, int k, float *rows) {
    const ModelConfig *c = &m->cfg;
    slm_matmul_at(slm_model_compute(m), 0, 0, c->vocab_size, k, c->row_dim, m->embedding, c->row_dim, weights, k, 0,
                  rows, k);
}

/* Layer l's query, key or value weights of head h, the rows that read the token row (D, k): layer 0's
 * whole matrix, a layer above's first D rows of its (row + the layer below's heads, k). */
static const float *row_weights(const Model *layer, const float *weights, int h, int k) {
    return weights + (size_t)h * layer->cfg.row_dim * k;
}

/* qk (V, V) = (E query_l[h]) (E key_l[h])^T / sqrt(kd). */
static void circuit_qk(const Model *m, int l, int h, float *scratch, float *qk) {
    const ModelConfig *c = &m->cfg;
    int V = c->vocab_size, kd = c->key_dim;
    Model lm;
    slm_model_layer_view(m, l, &lm);
    float *q = scratch, *k = scratch + (size_t)V * kd;
    project_rows(m, row_weights(&lm, lm.query, h, kd), kd, q);
    project_rows(m, row_weights(&lm, lm.key, h, kd), kd, k);
    float scale = 1.0f / sqrtf((float)kd);
    for (size_t i = 0; i < (size_t)V * kd; i++) q[i] *= scale;
    slm_matmul_at(slm_model_compute(m), 0, 1, V, V, kd, q, kd, k, kd, 0, qk, V);
}

/* ov (V, V) = (E value_l[h]) (output.weight diag(gain) hidden.weight[:, slot of head l:h])^T. */
static void circuit_ov(const Model *m, int l, int h, const float *gain, float *scratch, float *ov) {
    const ModelConfig *c = &m->cfg;
    int V = c->vocab_size, D = c->row_dim, vd = c->value_dim, Hd = c->hidden_dim;
    int Z = slm_model_hidden_input_dim(c), slot = D + (l * c->n_heads + h) * vd;
    float *values = scratch, *map = scratch + (size_t)V * vd, *slope = map + (size_t)V * vd;
    Model lm;
    slm_model_layer_view(m, l, &lm);
    project_rows(m, row_weights(&lm, lm.value, h, vd), vd, values);
    /* slope (Hd, vd) = diag(gain) hidden.weight[:, slot h]: the linearised hidden layer seen from head h */
    for (int j = 0; j < Hd; j++)
        for (int i = 0; i < vd; i++) slope[j * vd + i] = gain[j] * m->hidden_w[(size_t)j * Z + slot + i];
    /* map (V, vd) = output.weight (V, Hd) @ slope: a head output's effect on every logit */
    slm_matmul_at(slm_model_compute(m), 0, 0, V, vd, Hd, m->output_w, Hd, slope, vd, 0, map, vd);
    slm_matmul_at(slm_model_compute(m), 0, 1, V, V, vd, values, vd, map, vd, 0, ov, V);
}

static const char *circuit_note(const ModelConfig *c) {
    return slm_model_layers(c) > 1
               ? "QK and OV: the direct path from the token rows (the rows of query, key and value that read the row; "
                 "a layer above the first also reads the heads below, left out), OV through the hidden layer "
                 "linearised at its mean input over the test stories (see --help)"
               : "OV: the hidden layer linearised at its mean input over the test stories (see --help)";
}

/* ---- a layer's trace ---------------------------------------------------------- */

/* in (D + H vd) = z's row and layer l's heads at p; hidden (Hd); push (1 + H, Hd): the part's
 * numbers times its columns of hidden.weight, the row's then each head's (hidden.weight reads
 * every layer's heads). */
static void trace_layer(const Model *m, const Activations *a, int l, int p, float *in, float *hidden, float *push) {
    const ModelConfig *c = &m->cfg;
    int D = c->row_dim, H = c->n_heads, vd = c->value_dim, HV = H * vd, Hd = c->hidden_dim;
    int Z = slm_model_hidden_input_dim(c);
    const float *zp = a->z + (size_t)p * Z;
    for (int i = 0; i < D; i++) in[i] = zp[i];
    for (int i = 0; i < HV; i++) in[D + i] = zp[D + (size_t)l * HV + i];
    for (int j = 0; j < Hd; j++) hidden[j] = a->hidden[(size_t)p * Hd + j];
    for (int u = 0; u < Hd; u++) {
        const float *w = m->hidden_w + (size_t)u * Z;
        for (int k = -1; k < H; k++) {
            int from = k < 0 ? 0 : D + k * vd, n = k < 0 ? D : vd;
            const float *wk = w + (k < 0 ? 0 : D + (size_t)(l * H + k) * vd);
            float sum = 0;
            for (int i = 0; i < n; i++) sum += wk[i] * in[from + i];
            push[(size_t)(k + 1) * Hd + u] = sum;
        }
    }
}

const ProbeOps slm_attention_probe_ops = {
    .layer_view = layer_view,
    .position_score = position_score,
    .circuit_scratch = circuit_scratch,
    .circuit_qk = circuit_qk,
    .circuit_ov = circuit_ov,
    .circuit_note = circuit_note,
    .trace_layer = trace_layer,
};
