/* Attribution: gradient x activation and the exact effect of removing each
 * part of z at one position, and the surprisal of every token (see
 * probe_attribute.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "storylm/probe_attribute.h"
#include "storylm/probe_patch.h"
#include "storylm/probes.h"

/* Part k of z: -1 the row, g a head (numbered over every layer: z holds each layer's heads in turn). */
static void part_range(const ModelConfig *c, int k, int *from, int *to) {
    *from = k < 0 ? 0 : c->row_dim + k * c->value_dim;
    *to = k < 0 ? c->row_dim : *from + c->value_dim;
}

/* logit - logit with part k of z replaced by fill (Z; NULL: zeros). work (Z). */
static double removal_effect(const Model *m, const double *z, int k, const double *fill, int32_t token, double logit,
                             double *work) {
    int Z = slm_model_hidden_input_dim(&m->cfg), from, to;
    part_range(&m->cfg, k, &from, &to);
    memcpy(work, z, (size_t)Z * sizeof(double));
    for (int i = from; i < to; i++) work[i] = fill ? fill[i] : 0.0;
    return logit - slm_probe_logit_and_grad(m, work, token, NULL);
}

static void parts(const Model *m, const double *z, const double *grad, const double *mean_z, AttributeResult *r,
                  double *work) {
    const ModelConfig *c = &m->cfg;
    for (int k = -1; k < slm_model_heads(c); k++) {
        int from, to, j = k + 1;
        part_range(c, k, &from, &to);
        double gxa = 0, len = 0;
        for (int i = from; i < to; i++) gxa += grad[i] * z[i], len += z[i] * z[i];
        r->grad_x_act[j] = gxa;
        r->norm[j] = sqrt(len);
        r->zero_effect[j] = removal_effect(m, z, k, NULL, r->token, r->logit, work);
        r->mean_effect[j] = mean_z ? removal_effect(m, z, k, mean_z, r->token, r->logit, work) : NAN;
    }
}

/* "row", then "head 3" (one layer) or "head 2:3" (layer 2's head 3). */
static void part_name(const ModelConfig *c, int k, char *buf, size_t size) {
    char head[16];
    slm_head_name(c, k - 1, head, sizeof head);
    snprintf(buf, size, k ? "head %s" : "row", head);
}

int slm_probe_attribute(const Model *m, const Activations *a, int p, int32_t token, const double *mean_z,
                        AttributeResult *out, Error *e) {
    const ModelConfig *c = &m->cfg;
    *out = (AttributeResult){0};
    if (c->arch->readout == READOUT_RESIDUAL) return slm_probe_attribute_tf(m, a, p, token, mean_z, out, e);
    if (slm_probe_need_attention(m, "attribution", e)) return -1;
    int T = a->n_positions, Z = slm_model_hidden_input_dim(c);
    if (p < 0 || p >= T)
        return FAIL(e, "give a position from 0 ([EOS]) to the last token",
                    "position %d is outside the text's %d positions", p, T);
    if (token < 0 || token >= c->vocab_size)
        return FAIL(e, NULL, "token id %d is outside the vocabulary of %d", token, c->vocab_size);
    double *z = xmalloc((size_t)Z * 3 * sizeof(double), e);
    if (!z || slm_attribute_result_alloc(out, slm_model_heads(c) + 1, T, e)) {
        free(z);
        slm_attribute_result_free(out);
        return -1;
    }
    double *grad = z + Z, *work = grad + Z;
    for (int i = 0; i < Z; i++) z[i] = a->z[(size_t)p * Z + i];
    out->position = p;
    out->token = token;
    out->n_positions = T;
    for (int k = 0; k < out->n_parts; k++) part_name(c, k, out->names[k], sizeof out->names[k]);
    if (slm_model_layers(c) > 1)
        out->scope = "parts: what the hidden layer reads, the row and every layer's heads (L:H); removing a head "
                     "takes out its own slot only, so a lower layer's head keeps its path through the heads above "
                     "(patch measures that)";
    out->logit = slm_probe_logit_and_grad(m, z, token, grad);
    out->probability = slm_probe_probability(a, p, token, &out->rank);
    parts(m, z, grad, mean_z, out, work);
    for (int t = 0; t < T; t++) out->surprisal[t] = a->target[t] >= 0 ? a->loss[t] : NAN;
    free(z);
    return 0;
}

size_t slm_probe_mean_z_len(const ModelConfig *c) {
    return c->arch->readout == READOUT_RESIDUAL ? (size_t)slm_tf_parts(c) * c->row_dim
                                                : (size_t)slm_model_hidden_input_dim(c);
}

int slm_probe_mean_z(const Model *m, const Stories *s, const int *idx, int n, double *mean_z, Error *e) {
    const ModelConfig *c = &m->cfg;
    if (c->arch->readout == READOUT_RESIDUAL) return slm_probe_mean_parts_tf(m, s, idx, n, mean_z, e);
    int D = c->row_dim, HV = slm_model_heads(c) * c->value_dim;
    float *heads = xmalloc((size_t)HV * sizeof(float), e), *row = heads ? xmalloc((size_t)D * sizeof(float), e) : NULL;
    if (!row || slm_probe_head_means(m, s, idx, n, heads, e)) {
        free(heads);
        free(row);
        return -1;
    }
    long long positions = 0;
    memset(mean_z, 0, (size_t)D * sizeof(double));
    for (int i = 0; i < n; i++)
        for (size_t j = 0, len = story_len(s, idx[i]); j < len; j++, positions++) {
            memcpy(row, m->embedding + (size_t)story_token(s, idx[i], j) * D, (size_t)D * sizeof(float));
            slm_position_row_add(m, (int)j, row); /* --pos absolute|sinusoidal: z's row carries the tag */
            for (int d = 0; d < D; d++) mean_z[d] += row[d];
        }
    for (int d = 0; d < D; d++) mean_z[d] /= (double)positions;
    for (int i = 0; i < HV; i++) mean_z[D + i] = heads[i];
    free(heads);
    free(row);
    return 0;
}
