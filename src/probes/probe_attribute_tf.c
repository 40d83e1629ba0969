/* A transformer's attribution: the residual stream at the final LN's input
 * taken apart (embed, pos_embed, each head's z W_O, each block's b_O and
 * MLP output where it has an MLP), each part's direct logit attribution through ln_final with
 * its scale frozen, and the exact effect of taking it out of (or averaging
 * it in) the final LN's input. See probe_attribute.h. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "storylm/probe_attribute.h"
#include "storylm/probes.h"
#include "storylm/transformer.h"

/* A block without an MLP (d_mlp 0: attn-only) has no MLP part. */
int slm_tf_parts(const ModelConfig *c) { return 2 + c->n_layers * (c->n_heads + 1 + (c->hidden_dim > 0)); }

/* parts (P, D) at position p of the run in a, in double, in slm_tf_parts' order;
 * names (P) may be NULL. The position part: W_pos's row, the sinusoidal tag, or 0. */
static void tf_parts(const Model *m, const Activations *a, int p, double *parts, char (*names)[24]) {
    const ModelConfig *c = &m->cfg;
    int D = c->row_dim, H = c->n_heads, dh = c->key_dim, F = c->hidden_dim, k = 0, sp = a->tf->story_pos[p];
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
    k = 2;
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

/* token's logit from the final LN's input x (D), the LN computed in double. */
static double logit_of(const Model *m, const double *x, int32_t token) {
    const ModelConfig *c = &m->cfg;
    int D = c->row_dim, V = c->vocab_size;
    TfViews w;
    slm_transformer_views(m, m->params, &w);
    double mean = 0, var = 0, logit = w.b_U[token];
    for (int i = 0; i < D; i++) mean += x[i] / D;
    for (int i = 0; i < D; i++) var += (x[i] - mean) * (x[i] - mean) / D;
    double rstd = 1 / sqrt(var + TF_LN_EPS);
    for (int i = 0; i < D; i++)
        logit += ((x[i] - mean) * rstd * w.ln_final_w[i] + w.ln_final_b[i]) * w.W_U[(size_t)i * V + token];
    return logit;
}

/* Direct logit attribution of part (D) with the final LN's scale rstd frozen. */
static double direct_attribution(const Model *m, const double *part, double rstd, int32_t token) {
    const ModelConfig *c = &m->cfg;
    int D = c->row_dim, V = c->vocab_size;
    TfViews w;
    slm_transformer_views(m, m->params, &w);
    double mean = 0, dla = 0;
    for (int i = 0; i < D; i++) mean += part[i] / D;
    for (int i = 0; i < D; i++) dla += (part[i] - mean) * rstd * w.ln_final_w[i] * w.W_U[(size_t)i * V + token];
    return dla;
}

/* logit - logit with part k of the sum x (D) replaced by fill (D; NULL: zeros). work (D). */
static double removal(const Model *m, const double *x, const double *part, const double *fill, int32_t token,
                      double logit, double *work) {
    for (int i = 0; i < m->cfg.row_dim; i++) work[i] = x[i] - part[i] + (fill ? fill[i] : 0.0);
    return logit - logit_of(m, work, token);
}

int slm_probe_attribute_tf(const Model *m, const Activations *a, int p, int32_t token, const double *mean_parts,
                           AttributeResult *out, Error *e) {
    const ModelConfig *c = &m->cfg;
    int T = a->n_positions, D = c->row_dim, P = slm_tf_parts(c), V = c->vocab_size;
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
    tf_parts(m, a, p, parts, out->names);
    for (int i = 0; i < D; i++) x[i] = 0;
    for (int k = 0; k < P; k++)
        for (int i = 0; i < D; i++) x[i] += parts[(size_t)k * D + i];
    TfViews w;
    slm_transformer_views(m, m->params, &w);
    out->position = p, out->token = token, out->n_positions = T;
    out->logit = a->logits[(size_t)p * V + token];
    out->probability = slm_probe_probability(a, p, token, &out->rank);
    double rstd = a->tf->lnf_rstd[p];
    out->direct_sum = w.b_U[token];
    for (int i = 0; i < D; i++) out->direct_sum += (double)w.ln_final_b[i] * w.W_U[(size_t)i * V + token];
    double whole = logit_of(m, x, token); /* the logit again in double, from the parts' sum */
    for (int k = 0; k < P; k++) {
        const double *part = parts + (size_t)k * D;
        double len = 0;
        for (int i = 0; i < D; i++) len += part[i] * part[i];
        out->norm[k] = sqrt(len);
        out->grad_x_act[k] = direct_attribution(m, part, rstd, token);
        out->direct_sum += out->grad_x_act[k];
        out->zero_effect[k] = removal(m, x, part, NULL, token, whole, work);
        out->mean_effect[k] = mean_parts ? removal(m, x, part, mean_parts + (size_t)k * D, token, whole, work) : NAN;
    }
    for (int t = 0; t < T; t++) out->surprisal[t] = a->target[t] >= 0 ? a->loss[t] : NAN;
    free(parts);
    return 0;
}

int slm_probe_mean_parts_tf(const Model *m, const Stories *s, const int *idx, int n, double *mean_parts, Error *e) {
    const ModelConfig *c = &m->cfg;
    size_t PD = (size_t)slm_tf_parts(c) * c->row_dim;
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
            tf_parts(m, &r.acts, p, parts, NULL);
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
