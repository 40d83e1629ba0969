/* Running stories through the network for the probes, one story at a time,
 * and the heads' mean outputs that mean ablation uses. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "storylm/probes.h"

int slm_probe_runner_init(ProbeRunner *r, const Model *m, int max_positions, Error *e) {
    *r = (ProbeRunner){.model = m};
    if (max_positions < 1) max_positions = 1;
    if (slm_activations_init(&r->acts, &m->cfg, max_positions, e)) return -1;
    r->acts.kernels = m->kernels; /* --kernels portable: the WebAssembly build's numbers */
    if (slm_batch_init(&r->batch, max_positions, 1, e)) {
        slm_activations_free(&r->acts);
        return -1;
    }
    return 0;
}

void slm_probe_runner_free(ProbeRunner *r) {
    slm_activations_free(&r->acts);
    slm_batch_free(&r->batch);
    *r = (ProbeRunner){0};
}

/* Room for len positions: the activations are remade larger when needed. */
static int runner_fit(ProbeRunner *r, int len, Error *e) {
    if (len <= r->acts.max_positions) return 0;
    const Model *m = r->model;
    int heads_only = r->heads_only, layer = r->layer;
    slm_probe_runner_free(r);
    int rc = slm_probe_runner_init(r, m, len, e);
    r->heads_only = heads_only, r->layer = layer;
    return rc;
}

int slm_probe_runner_layer(ProbeRunner *r, int layer, Error *e) {
    int layers = slm_model_layers(&r->model->cfg);
    if (layer < 1 || layer > layers)
        return FAIL(e, "give --layer from 1 to the model's layers (transformer blocks)",
                    "--layer %d: the model has %d layer(s)", layer, layers);
    r->layer = layer - 1;
    return 0;
}

int slm_probe_run(ProbeRunner *r, const int32_t *ids, int len, const Ablation *ablation, Error *e) {
    if (runner_fit(r, len, e)) return -1;
    slm_batch_clear(&r->batch);
    if (slm_batch_add(&r->batch, ids, len, e)) return -1;
    return r->heads_only ? slm_model_forward_heads(r->model, &r->acts, &r->batch, ablation, e)
                         : slm_model_forward(r->model, &r->acts, &r->batch, ablation, NULL, e);
}

int slm_probe_run_story(ProbeRunner *r, const Stories *s, int i, const Ablation *ablation, int32_t **ids, size_t *cap,
                        Error *e) {
    size_t len = story_len(s, i);
    if (len > *cap) {
        int32_t *grown = xrealloc(*ids, len * sizeof **ids, e);
        if (!grown) return -1;
        *ids = grown, *cap = len;
    }
    story_copy_ids(s, i, *ids);
    return slm_probe_run(r, *ids, (int)len, ablation, e);
}

int slm_probe_need_attention(const Model *m, const char *what, Error *e) {
    int heads = slm_model_heads(&m->cfg) > 0;
    if (heads && m->cfg.arch->readout == READOUT_TANH) return 0;
    if (heads) /* its heads write into a residual stream, which these probes do not read yet */
        return FAIL(
            e,
            "every probe verb reads a transformer (docs/transformer.md); for this view give a model trained with "
            "--arch attention",
            "%s cannot read a %s yet (its heads sit in blocks of attention and MLP, docs/transformer.md)", what,
            m->cfg.arch->name);
    return FAIL(e, "give a model trained with --arch attention (the default)",
                "%s needs the attention network, and this is a %s model: it has no heads", what, m->cfg.arch->name);
}

int slm_probe_need_heads(const Model *m, const char *what, Error *e) {
    return m->cfg.arch->readout == READOUT_RESIDUAL && slm_model_heads(&m->cfg) > 0
               ? 0
               : slm_probe_need_attention(m, what, e);
}

int slm_probe_need_ops(const Model *m, int has_ops, const char *what, Error *e) {
    if (has_ops) return 0;
    return FAIL(e, "give a model of another architecture ('storylm info' names a model's)",
                "%s means nothing for a %s model: its architecture says no way to read it", what, m->cfg.arch->name);
}

double slm_probe_probability(const Activations *a, int p, int32_t token, int *rank) {
    int V = a->cfg.vocab_size;
    const float *logits = a->logits + (size_t)p * V;
    if (rank) {
        int above = 0;
        for (int v = 0; v < V; v++) above += logits[v] > logits[token] || (logits[v] == logits[token] && v < token);
        *rank = above + 1;
    }
    return exp(slm_output_log_prob(logits, V, token, a->lse[p]));
}

double slm_probe_loss(const Activations *a, int p, int32_t token) {
    int V = a->cfg.vocab_size;
    double log_prob = slm_output_log_prob(a->logits + (size_t)p * V, V, token, a->lse[p]), prob = exp(log_prob);
    /* through the probability where it is a normal number: the bits eval --text always gave */
    return prob >= DBL_MIN ? -log(prob) : -log_prob;
}

double slm_probe_cosine(const float *a, const float *b, int n) {
    double ab = 0, aa = 0, bb = 0;
    for (int i = 0; i < n; i++) {
        ab += (double)a[i] * b[i];
        aa += (double)a[i] * a[i];
        bb += (double)b[i] * b[i];
    }
    return aa > 0 && bb > 0 ? ab / sqrt(aa * bb) : 0.0;
}

/* mean (layers*H, vd): sums of every layer's heads' outputs over the positions run, added in double. */
static void add_head_outputs(const Activations *a, double *sum) {
    const ModelConfig *c = &a->cfg;
    int vd = c->value_dim;
    for (int h = 0; h < slm_model_heads(c); h++)
        for (int p = 0; p < a->n_positions; p++) {
            const float *o = slm_activations_head_output(a, h, p);
            for (int i = 0; i < vd; i++) sum[h * vd + i] += o[i];
        }
}

int slm_probe_head_means(const Model *m, const Stories *s, const int *idx, int n, float *mean, Error *e) {
    if (slm_probe_need_heads(m, "mean ablation", e)) return -1;
    if (n < 1) return FAIL(e, "give a stories file with test stories", "no stories to average the heads' outputs over");
    const ModelConfig *c = &m->cfg;
    size_t HV = (size_t)slm_model_heads(c) * c->value_dim;
    double *sum = calloc(HV, sizeof(double));
    if (!sum) return FAIL(e, NULL, "out of memory");
    ProbeRunner r;
    int rc = slm_probe_runner_init(&r, m, 1024, e);
    long long positions = 0;
    StoryBuf buf = {0};
    for (int i = 0; !rc && i < n; i++) {
        int len = (int)story_len(s, idx[i]);
        const int32_t *ids = slm_story_ids(s, idx[i], &buf, e);
        rc = ids ? slm_probe_run(&r, ids, len, NULL, e) : -1;
        if (!rc) add_head_outputs(&r.acts, sum);
        positions += len;
    }
    for (size_t i = 0; !rc && i < HV; i++) mean[i] = (float)(sum[i] / (double)positions);
    slm_probe_runner_free(&r);
    slm_story_buf_free(&buf);
    free(sum);
    return rc;
}
