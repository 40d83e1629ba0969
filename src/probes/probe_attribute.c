/* Attribution: gradient x activation and the exact effect of removing each
 * part of what the readout reads at one position, and the surprisal of every
 * token (see probe_attribute.h). The tanh readout's parts are z's slots (the
 * row, every layer's heads); a residual readout's are its stream's parts at
 * the final LN (the architecture's resid_parts), each read through the
 * unembedding with the LN's scale frozen and taken out of the LN's input. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "storylm/probe_attribute.h"
#include "storylm/probe_patch.h"
#include "storylm/probes.h"

int slm_attribute_result_alloc(AttributeResult *r, int n_parts, int T, Error *e) {
    r->grad_x_act = xmalloc((size_t)n_parts * sizeof(double), e);
    r->zero_effect = r->grad_x_act ? xmalloc((size_t)n_parts * sizeof(double), e) : NULL;
    r->mean_effect = r->zero_effect ? xmalloc((size_t)n_parts * sizeof(double), e) : NULL;
    r->norm = r->mean_effect ? xmalloc((size_t)n_parts * sizeof(double), e) : NULL;
    r->surprisal = r->norm ? xmalloc((size_t)T * sizeof(double), e) : NULL;
    r->names = r->surprisal ? xcalloc((size_t)n_parts, sizeof *r->names, e) : NULL;
    r->n_parts = n_parts;
    return r->names ? 0 : -1;
}

void slm_attribute_result_free(AttributeResult *r) {
    free(r->grad_x_act);
    free(r->zero_effect);
    free(r->mean_effect);
    free(r->norm);
    free(r->surprisal);
    free(r->names);
    *r = (AttributeResult){0};
}

/* ---- the tanh readout: z's slots ------------------------------------------------- */

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

/* ---- a residual readout: its stream's parts at the final LN ------------------------- */

/* token's logit from the final LN's input x (D), the LN computed in double. */
static double logit_of(const Model *m, const Unembed *u, const double *x, int32_t token) {
    const ModelConfig *c = &m->cfg;
    int D = c->row_dim, V = c->vocab_size;
    double mean = 0, var = 0, logit = u->b_U[token];
    for (int i = 0; i < D; i++) mean += x[i] / D;
    for (int i = 0; i < D; i++) var += (x[i] - mean) * (x[i] - mean) / D;
    double rstd = 1 / sqrt(var + u->eps);
    for (int i = 0; i < D; i++)
        logit += ((x[i] - mean) * rstd * u->ln_w[i] + u->ln_b[i]) * slm_unembed_weight(u, i, token, D, V);
    return logit;
}

/* Direct logit attribution of part (D) with the final LN's scale u->rstd frozen. */
static double direct_attribution(const Model *m, const Unembed *u, const double *part, int32_t token) {
    const ModelConfig *c = &m->cfg;
    int D = c->row_dim, V = c->vocab_size;
    double mean = 0, dla = 0;
    for (int i = 0; i < D; i++) mean += part[i] / D;
    for (int i = 0; i < D; i++) dla += (part[i] - mean) * u->rstd * u->ln_w[i] * slm_unembed_weight(u, i, token, D, V);
    return dla;
}

/* logit - logit with part k of the sum x (D) replaced by fill (D; NULL: zeros). work (D). */
static double removal(const Model *m, const Unembed *u, const double *x, const double *part, const double *fill,
                      int32_t token, double logit, double *work) {
    for (int i = 0; i < m->cfg.row_dim; i++) work[i] = x[i] - part[i] + (fill ? fill[i] : 0.0);
    return logit - logit_of(m, u, work, token);
}

/* The residual readout's attribution at p (the checks' messages as the tanh readout's). */
static int attribute_resid(const Model *m, const Activations *a, int p, int32_t token, const double *mean_parts,
                           AttributeResult *out, Error *e) {
    const ModelConfig *c = &m->cfg;
    const ProbeOps *ops = c->arch->probes;
    if (slm_probe_need_ops(m, ops && ops->n_resid_parts && ops->resid_parts && ops->unembed, "attribution", e))
        return -1;
    int T = a->n_positions, D = c->row_dim, P = ops->n_resid_parts(c), V = c->vocab_size;
    if (p < 0 || p >= T)
        return FAIL(e, "give a position from 0 ([EOS]) to the last token",
                    "position %d is outside the text's %d positions", p, T);
    if (token < 0 || token >= V) return FAIL(e, NULL, "token id %d is outside the vocabulary of %d", token, V);
    double *parts = xmalloc(((size_t)P + 2) * D * sizeof(double), e);
    if (!parts || slm_attribute_result_alloc(out, P, T, e)) {
        free(parts);
        slm_attribute_result_free(out);
        return -1;
    }
    double *x = parts + (size_t)P * D, *work = x + D;
    ops->resid_parts(m, a, p, parts, out->names);
    for (int i = 0; i < D; i++) x[i] = 0;
    for (int k = 0; k < P; k++)
        for (int i = 0; i < D; i++) x[i] += parts[(size_t)k * D + i];
    Unembed u;
    ops->unembed(m, a, p, &u);
    out->position = p, out->token = token, out->n_positions = T;
    out->logit = a->logits[(size_t)p * V + token];
    out->probability = slm_probe_probability(a, p, token, &out->rank);
    out->direct_sum = u.b_U[token];
    for (int i = 0; i < D; i++) out->direct_sum += (double)u.ln_b[i] * slm_unembed_weight(&u, i, token, D, V);
    double whole = logit_of(m, &u, x, token); /* the logit again in double, from the parts' sum */
    for (int k = 0; k < P; k++) {
        const double *part = parts + (size_t)k * D;
        double len = 0;
        for (int i = 0; i < D; i++) len += part[i] * part[i];
        out->norm[k] = sqrt(len);
        out->grad_x_act[k] = direct_attribution(m, &u, part, token);
        out->direct_sum += out->grad_x_act[k];
        out->zero_effect[k] = removal(m, &u, x, part, NULL, token, whole, work);
        out->mean_effect[k] =
            mean_parts ? removal(m, &u, x, part, mean_parts + (size_t)k * D, token, whole, work) : NAN;
    }
    for (int t = 0; t < T; t++) out->surprisal[t] = a->target[t] >= 0 ? a->loss[t] : NAN;
    free(parts);
    return 0;
}

/* mean_parts (P, D): the residual readout's parts averaged over every position of stories idx[0..n). */
static int mean_resid_parts(const Model *m, const Stories *s, const int *idx, int n, double *mean_parts, Error *e) {
    const ModelConfig *c = &m->cfg;
    const ProbeOps *ops = c->arch->probes;
    if (slm_probe_need_ops(m, ops && ops->n_resid_parts && ops->resid_parts, "attribution's mean parts", e)) return -1;
    size_t PD = slm_probe_mean_z_len(c);
    double *parts = xmalloc(PD * sizeof(double), e);
    ProbeRunner r = {0};
    int rc = parts ? slm_probe_runner_init(&r, m, 1024, e) : -1;
    long long positions = 0;
    StoryBuf buf = {0};
    memset(mean_parts, 0, PD * sizeof(double));
    for (int i = 0; !rc && i < n; i++) {
        int len = (int)story_len(s, idx[i]);
        const int32_t *ids = slm_story_ids(s, idx[i], &buf, e);
        rc = ids ? slm_probe_run(&r, ids, len, NULL, e) : -1;
        for (int p = 0; !rc && p < len; p++, positions++) {
            ops->resid_parts(m, &r.acts, p, parts, NULL);
            for (size_t j = 0; j < PD; j++) mean_parts[j] += parts[j];
        }
    }
    if (!rc && positions < 1) rc = FAIL(e, "give stories with tokens", "no positions to average the parts over");
    for (size_t j = 0; !rc && j < PD; j++) mean_parts[j] /= (double)positions;
    slm_probe_runner_free(&r);
    slm_story_buf_free(&buf);
    free(parts);
    return rc;
}

/* ---- either readout ---------------------------------------------------------------- */

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
    if (c->arch->readout == READOUT_RESIDUAL) return attribute_resid(m, a, p, token, mean_z, out, e);
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
    const ProbeOps *ops = c->arch->probes;
    if (c->arch->readout == READOUT_RESIDUAL) /* (room for one part where the model has no way to take it apart) */
        return (size_t)(ops && ops->n_resid_parts ? ops->n_resid_parts(c) : 1) * c->row_dim;
    return (size_t)slm_model_hidden_input_dim(c);
}

int slm_probe_mean_z(const Model *m, const Stories *s, const int *idx, int n, double *mean_z, Error *e) {
    const ModelConfig *c = &m->cfg;
    if (c->arch->readout == READOUT_RESIDUAL) return mean_resid_parts(m, s, idx, n, mean_z, e);
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
