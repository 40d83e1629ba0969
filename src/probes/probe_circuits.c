/* Circuits from the weights: each head's QK and OV circuits over the whole
 * vocabulary (see probe_circuits.h for the formulas and the linearisation). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "storylm/fixed_math.h"
#include "storylm/probe_circuits.h"
#include "storylm/probes.h"

/* z (N, Z) of the story run last, summed into sum (Z) in double. */
static void add_inputs(const Activations *a, int Z, double *sum) {
    for (int p = 0; p < a->n_positions; p++)
        for (int i = 0; i < Z; i++) sum[i] += a->z[(size_t)p * Z + i];
}

int slm_circuits_use_mean_input(const ModelConfig *c) { return c->arch->readout != READOUT_RESIDUAL; }

int slm_circuits_mean_input(const Model *m, const Stories *s, const int *idx, int n, const Ablation *ablation,
                            float *z_mean, uint8_t *seen, long long *positions, Error *e) {
    if (slm_probe_need_heads(m, "circuits", e)) return -1;
    int tf = !slm_circuits_use_mean_input(&m->cfg); /* needs only the tokens seen */
    if (n < 1)
        return FAIL(e, "give a stories file with test stories",
                    "no stories to take the hidden layer's mean input over");
    int Z = slm_model_hidden_input_dim(&m->cfg);
    double *sum = xcalloc((size_t)Z, sizeof(double), e);
    int32_t *ids = NULL;
    size_t cap = 0;
    ProbeRunner r = {0};
    int rc = sum ? slm_probe_runner_init(&r, m, 1024, e) : -1;
    memset(seen, 0, (size_t)m->cfg.vocab_size);
    *positions = 0;
    for (int i = 0; !rc && i < n; i++) {
        size_t len = story_len(s, idx[i]);
        rc = slm_probe_run_story(&r, s, idx[i], ablation, &ids, &cap, e);
        for (size_t j = 0; !rc && j < len; j++) seen[ids[j]] = 1;
        if (!rc && !tf) add_inputs(&r.acts, Z, sum);
        *positions += (long long)len;
    }
    for (int i = 0; !rc && i < Z; i++) z_mean[i] = tf ? 0.0f : (float)(sum[i] / (double)*positions);
    slm_probe_runner_free(&r);
    free(ids);
    free(sum);
    return rc;
}

void slm_circuits_gain(const Model *m, const float *z_mean, float *gain) {
    int Z = slm_model_hidden_input_dim(&m->cfg), Hd = m->cfg.hidden_dim;
    for (int j = 0; j < Hd; j++) {
        double pre = m->hidden_b[j];
        for (int i = 0; i < Z; i++) pre += (double)m->hidden_w[(size_t)j * Z + i] * z_mean[i];
        double y = slm_tanh_fixed(pre);
        gain[j] = (float)(1 - y * y);
    }
}

size_t slm_circuit_scratch_size(const ModelConfig *c) { return c->arch->probes->circuit_scratch(c); }

const char *slm_circuits_note(const ModelConfig *c) { return c->arch->probes->circuit_note(c); }

void slm_circuit_qk(const Model *m, int l, int h, float *scratch, float *qk) {
    m->cfg.arch->probes->circuit_qk(m, l, h, scratch, qk);
}

void slm_circuit_ov(const Model *m, int l, int h, const float *gain, float *scratch, float *ov) {
    m->cfg.arch->probes->circuit_ov(m, l, h, gain, scratch, ov);
}

/* ---- reading a circuit ------------------------------------------------------- */

/* means (V) of every row of M (V, V) over the columns with mask (NULL: all). */
static void row_means(const float *M, int V, const uint8_t *mask, double *means) {
    for (int s = 0; s < V; s++) {
        double sum = 0;
        int n = 0;
        for (int t = 0; t < V; t++)
            if (!mask || mask[t]) sum += M[(size_t)s * V + t], n++;
        means[s] = n ? sum / n : 0;
    }
}

static SelfScore self_score(const float *M, int V, const uint8_t *mask, const double *means) {
    SelfScore r = {0};
    long top1 = 0, top10 = 0, above = 0;
    for (int s = 0; s < V; s++) {
        if (mask && !mask[s]) continue;
        const float *row = M + (size_t)s * V;
        int higher = 0;
        for (int t = 0; t < V; t++) higher += t != s && (!mask || mask[t]) && row[t] >= row[s]; /* a tie is no win */
        top1 += higher == 0;
        top10 += higher < 10;
        above += row[s] > means[s];
        r.tokens++;
    }
    if (r.tokens)
        r.top1 = (double)top1 / r.tokens, r.top10 = (double)top10 / r.tokens, r.above_mean = (double)above / r.tokens;
    return r;
}

static double pair_key(const CircuitPair *p, int by_centred) { return by_centred ? p->centred : p->value; }

/* top (k), best first: the entries of M (V, V) largest by value or by centred value. */
static void top_pairs(const float *M, int V, const double *means, int by_centred, CircuitPair *top, int k) {
    int n = 0;
    for (int s = 0; s < V; s++)
        for (int t = 0; t < V; t++) {
            float v = M[(size_t)s * V + t];
            CircuitPair p = {s, t, v, (float)(v - means[s])};
            double key = pair_key(&p, by_centred);
            if (n == k && key <= pair_key(&top[k - 1], by_centred)) continue;
            int i = n < k ? n++ : k - 1;
            for (; i > 0 && pair_key(&top[i - 1], by_centred) < key; i--) top[i] = top[i - 1];
            top[i] = p;
        }
    for (int i = n; i < k; i++) top[i] = (CircuitPair){-1, -1, NAN, NAN};
}

/* Fills one head's top pairs and self scores from its circuit M; means (V) scratch. */
static void read_circuit(const float *M, int V, const uint8_t *seen, int by_centred, CircuitPair *top, int k,
                         SelfScore self[2], double *means) {
    row_means(M, V, NULL, means);
    top_pairs(M, V, means, by_centred, top, k);
    self[0] = self_score(M, V, NULL, means);
    row_means(M, V, seen, means);
    self[1] = self_score(M, V, seen, means);
}

/* reads (n, k): for each token reads_ids[i], the k columns of its row of M (V, V) largest above the row's mean. */
static void read_rows(const float *M, int V, const int32_t *ids, int n, int k, CircuitPair *reads) {
    for (int i = 0; i < n; i++) {
        const float *row = M + (size_t)ids[i] * V;
        double mean = 0;
        for (int t = 0; t < V; t++) mean += row[t];
        mean /= V;
        CircuitPair *top = reads + (size_t)i * k;
        for (int j = 0; j < k; j++) top[j] = (CircuitPair){-1, -1, NAN, NAN};
        for (int t = 0; t < V; t++) {
            if (top[k - 1].from >= 0 && row[t] <= top[k - 1].value) continue;
            int j = k - 1;
            for (; j > 0 && (top[j - 1].from < 0 || top[j - 1].value < row[t]); j--) top[j] = top[j - 1];
            top[j] = (CircuitPair){ids[i], t, row[t], (float)(row[t] - mean)};
        }
    }
}

void slm_circuits_result_free(CircuitsResult *r) {
    for (int i = 0; r->heads && i < r->n_heads; i++) {
        free(r->heads[i].qk);
        free(r->heads[i].ov);
        free(r->heads[i].reads);
    }
    free(r->heads);
    *r = (CircuitsResult){0};
}

/* One head's three lists. */
static int head_alloc(CircuitHead *ch, const CircuitsResult *out, Error *e) {
    ch->qk = xmalloc((size_t)out->top * sizeof(CircuitPair), e);
    ch->ov = ch->qk ? xmalloc((size_t)out->top * sizeof(CircuitPair), e) : NULL;
    ch->reads = ch->ov ? xmalloc(((size_t)out->n_reads * out->read_top + 1) * sizeof(CircuitPair), e) : NULL;
    return ch->reads ? 0 : -1;
}

int slm_probe_circuits(const Model *m, const float *z_mean, const uint8_t *seen, const CircuitsOptions *o,
                       CircuitsResult *out, Error *e) {
    *out = (CircuitsResult){
        .top = o->top > 0 ? o->top : 1, .read_top = o->read_top > 0 ? o->read_top : 1, .layer = o->layer};
    const ModelConfig *c = &m->cfg;
    int tf = c->arch->readout == READOUT_RESIDUAL;
    const ProbeOps *ops = c->arch->probes;
    if (slm_probe_need_heads(m, "circuits", e) ||
        slm_probe_need_ops(m, ops && ops->circuit_qk && ops->circuit_ov && ops->circuit_scratch, "circuits", e) ||
        (!tf && slm_variant_check(&m->cfg, "the QK circuit of token rows", VARIANT_NEEDS_ROW_SCORES, e)))
        return -1;
    if (o->layer < 0 || o->layer >= slm_model_layers(c))
        return FAIL(e, "give --layer from 1 to the model's layers (blocks)", "--layer %d: the model has %d layer(s)",
                    o->layer + 1, slm_model_layers(c));
    int V = c->vocab_size, H = c->n_heads;
    HeadSet heads = o->heads;
    for (int i = 0; i < o->n_reads; i++)
        if (o->reads[i] < 0 || o->reads[i] >= V) return FAIL(e, NULL, "token id %d is out of range", o->reads[i]);
    out->n_reads = o->reads ? o->n_reads : 0;
    if (slm_head_set_empty(&heads)) slm_head_set_add_layer(&heads, 0, H);
    for (int h = 0; h < H; h++) out->n_heads += slm_head_set_has(&heads, h);
    float *M = xmalloc((size_t)V * V * sizeof(float), e);
    float *scratch = M ? xmalloc(slm_circuit_scratch_size(c) * sizeof(float), e) : NULL;
    float *gain = scratch ? xmalloc((size_t)c->hidden_dim * sizeof(float), e) : NULL;
    double *means = gain ? xmalloc((size_t)V * sizeof(double), e) : NULL;
    out->heads = means ? xcalloc((size_t)out->n_heads, sizeof(CircuitHead), e) : NULL;
    int rc = out->heads ? 0 : -1;
    if (!rc && !tf) slm_circuits_gain(m, z_mean, gain);
    for (int h = 0, k = 0; !rc && h < H; h++) {
        if (!slm_head_set_has(&heads, h)) continue;
        CircuitHead *ch = &out->heads[k++];
        ch->head = h;
        if ((rc = head_alloc(ch, out, e))) break;
        slm_circuit_qk(m, o->layer, h, scratch, M);
        read_circuit(M, V, seen, 0, ch->qk, out->top, ch->qk_self, means);
        slm_circuit_ov(m, o->layer, h, gain, scratch, M);
        read_circuit(M, V, seen, 1, ch->ov, out->top, ch->copy, means);
        read_rows(M, V, o->reads, out->n_reads, out->read_top, ch->reads);
    }
    free(means);
    free(gain);
    free(scratch);
    free(M);
    if (rc) slm_circuits_result_free(out);
    return rc;
}
