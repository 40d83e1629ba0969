/* Activation patching: pieces of a clean run put into a corrupt run, the
 * last position's logit difference measured again (see probe_patch.h). The
 * last position is evaluated in double from what it reads, so that every
 * patched run, and the two runs themselves, go through the same arithmetic. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "storylm/probe_patch.h"

void slm_probe_logits_from_hidden(const Model *m, const double *y, double *logits) {
    const ModelConfig *c = &m->cfg;
    int Hd = c->hidden_dim;
    for (int v = 0; v < c->vocab_size; v++) {
        const float *w = m->output_w + (size_t)v * Hd;
        double sum = m->output_b[v];
        for (int j = 0; j < Hd; j++) sum += w[j] * y[j];
        logits[v] = sum;
    }
}

void slm_probe_logits_from_z(const Model *m, const double *z, double *hidden, double *logits) {
    const ModelConfig *c = &m->cfg;
    int Z = slm_model_hidden_input_dim(c);
    for (int j = 0; j < c->hidden_dim; j++) {
        const float *w = m->hidden_w + (size_t)j * Z;
        double sum = m->hidden_b[j];
        for (int i = 0; i < Z; i++) sum += w[i] * z[i];
        hidden[j] = tanh(sum);
    }
    slm_probe_logits_from_hidden(m, hidden, logits);
}

double slm_probe_logit_and_grad(const Model *m, const double *z, int32_t token, double *grad) {
    const ModelConfig *c = &m->cfg;
    int Z = slm_model_hidden_input_dim(c), Hd = c->hidden_dim;
    const float *w2 = m->output_w + (size_t)token * Hd;
    double logit = m->output_b[token];
    if (grad) memset(grad, 0, (size_t)Z * sizeof(double));
    for (int j = 0; j < Hd; j++) {
        const float *w = m->hidden_w + (size_t)j * Z;
        double sum = m->hidden_b[j];
        for (int i = 0; i < Z; i++) sum += w[i] * z[i];
        double y = tanh(sum);
        logit += w2[j] * y;
        /* d logit / d pre_j = W2[token, j] (1 - y^2), then back through W1 */
        double d_pre = w2[j] * (1.0 - y * y);
        for (int i = 0; grad && i < Z; i++) grad[i] += d_pre * w[i];
    }
    return logit;
}

/* What the last position T-1 reads, in double. */
typedef struct LastReads {
    int T, first;  /* positions; the earliest key the last one reads */
    double *rows;  /* (T, D) */
    double *query; /* (H, kd) at the last position */
    double *key;   /* (H, T, kd) */
    double *value; /* (H, T, vd) */
    size_t size;   /* doubles in the one block rows points into */
} LastReads;

static int reads_init(LastReads *r, const ModelConfig *c, int T, Error *e) {
    size_t H = (size_t)c->n_heads, kd = (size_t)c->key_dim;
    r->T = T;
    r->first = T > c->window ? T - c->window : 0;
    r->size = (size_t)T * c->row_dim + H * kd + H * T * (kd + c->value_dim);
    r->rows = xmalloc(r->size * sizeof(double), e);
    if (!r->rows) return -1;
    r->query = r->rows + (size_t)T * c->row_dim;
    r->key = r->query + H * kd;
    r->value = r->key + H * T * kd;
    return 0;
}

/* a (after slm_model_forward, attention network) -> r. */
static void reads_fill(LastReads *r, const Activations *a) {
    const ModelConfig *c = &a->cfg;
    int T = r->T, D = c->row_dim, kd = c->key_dim, vd = c->value_dim, Z = slm_model_hidden_input_dim(c);
    float q[STORYLM_MAX_HEAD_DIM], k[STORYLM_MAX_HEAD_DIM], v[STORYLM_MAX_HEAD_DIM];
    for (int p = 0; p < T; p++)
        for (int i = 0; i < D; i++) r->rows[(size_t)p * D + i] = a->z[(size_t)p * Z + i];
    for (int h = 0; h < c->n_heads; h++)
        for (int p = 0; p < T; p++) {
            slm_activations_qkv(a, h, p, q, k, v);
            for (int i = 0; i < kd; i++) r->key[((size_t)h * T + p) * kd + i] = k[i];
            for (int i = 0; i < vd; i++) r->value[((size_t)h * T + p) * vd + i] = v[i];
            if (p == T - 1)
                for (int i = 0; i < kd; i++) r->query[h * kd + i] = q[i];
        }
}

/* Head h's output at the last position from r: out (vd). */
static void head_output(const Model *m, const LastReads *r, int h, double *scores, double *out) {
    const ModelConfig *c = &m->cfg;
    int T = r->T, kd = c->key_dim, vd = c->value_dim;
    const double *q = r->query + h * kd;
    double top = -INFINITY, sum = 0, scale = slm_score_scale(c); /* 1/sqrt(kd), or 1 (--score dot, general) */
    for (int u = r->first; u < T; u++) {
        const double *k = r->key + ((size_t)h * T + u) * kd;
        double dot = 0;
        for (int i = 0; i < kd; i++) dot += q[i] * k[i];
        scores[u] = dot * scale + slm_position_distance_score(m, h, T - 1 - u);
        top = fmax(top, scores[u]);
    }
    for (int u = r->first; u < T; u++) sum += scores[u] = exp(scores[u] - top);
    memset(out, 0, (size_t)vd * sizeof(double));
    for (int u = r->first; u < T; u++) {
        const double *v = r->value + ((size_t)h * T + u) * vd;
        for (int i = 0; i < vd; i++) out[i] += scores[u] / sum * v[i];
    }
}

/* z (Z) of the last position from r, switched-off heads as ab replaces them. */
static void last_z(const Model *m, const LastReads *r, const Ablation *ab, double *scores, double *z) {
    const ModelConfig *c = &m->cfg;
    int D = c->row_dim, vd = c->value_dim;
    for (int i = 0; i < D; i++) z[i] = r->rows[(size_t)(r->T - 1) * D + i];
    for (int h = 0; h < c->n_heads; h++) {
        double *slot = z + D + h * vd;
        if (!slm_head_set_has(&ab->heads, h))
            head_output(m, r, h, scores, slot);
        else
            for (int i = 0; i < vd; i++) slot[i] = ab->mode == ABLATE_MEAN ? ab->mean[h * vd + i] : 0.0;
    }
}

/* Working memory of one patching sweep. */
typedef struct Patcher {
    const Model *m;
    const Ablation *ablation;
    LastReads clean, corrupt, work;
    double *scores, *z, *hidden, *logits; /* (T), (Z), (Hd), (V) */
    double *clean_hidden;                 /* (Hd) the clean run's hidden layer at the last position */
    int32_t answer, wrong;
} Patcher;

static double slm_evaluate(Patcher *p, const LastReads *r) {
    last_z(p->m, r, p->ablation, p->scores, p->z);
    slm_probe_logits_from_z(p->m, p->z, p->hidden, p->logits);
    return p->logits[p->answer] - p->logits[p->wrong];
}

/* Pieces of the work copy, copied from src. */
static void copy_row(LastReads *dst, const LastReads *src, int u, int D) {
    memcpy(dst->rows + (size_t)u * D, src->rows + (size_t)u * D, (size_t)D * sizeof(double));
}
static void copy_reads(LastReads *dst, const LastReads *src, const ModelConfig *c, int h, int u) {
    size_t T = (size_t)dst->T, kd = (size_t)c->key_dim, vd = (size_t)c->value_dim;
    memcpy(dst->key + (h * T + u) * kd, src->key + (h * T + u) * kd, kd * sizeof(double));
    memcpy(dst->value + (h * T + u) * vd, src->value + (h * T + u) * vd, vd * sizeof(double));
}
static void copy_query(LastReads *dst, const LastReads *src, const ModelConfig *c, int h) {
    memcpy(dst->query + h * c->key_dim, src->query + h * c->key_dim, (size_t)c->key_dim * sizeof(double));
}
/* Everything the token row at u makes: the row, every head's key and value, and at the last position the queries. */
static void copy_token(LastReads *dst, const LastReads *src, const ModelConfig *c, int u) {
    copy_row(dst, src, u, c->row_dim);
    for (int h = 0; h < c->n_heads; h++) {
        copy_reads(dst, src, c, h, u);
        if (u == dst->T - 1) copy_query(dst, src, c, h);
    }
}

static void reset_work(Patcher *p) { memcpy(p->work.rows, p->corrupt.rows, p->work.size * sizeof(double)); }

/* + 0.0 turns the -0 of an unchanged run over a negative denominator into 0 */
static double normalised(const PatchResult *r, double diff) {
    return (diff - r->corrupt_diff) / (r->clean_diff - r->corrupt_diff) + 0.0;
}

static void sweep_heads(Patcher *p, PatchResult *r) {
    const ModelConfig *c = &p->m->cfg;
    int T = p->work.T;
    for (int h = 0; h < c->n_heads; h++) {
        for (int u = 0; u < T; u++) {
            reset_work(p);
            copy_reads(&p->work, &p->clean, c, h, u);
            r->reads[(size_t)h * T + u] = normalised(r, slm_evaluate(p, &p->work));
        }
        reset_work(p);
        copy_query(&p->work, &p->clean, c, h);
        r->query[h] = normalised(r, slm_evaluate(p, &p->work));
        for (int u = 0; u < T; u++) copy_reads(&p->work, &p->clean, c, h, u);
        r->output[h] = normalised(r, slm_evaluate(p, &p->work));
    }
}

/* The rows one at a time, then every row, then every head output and the last row. */
static void sweep_rows(Patcher *p, PatchResult *r) {
    const ModelConfig *c = &p->m->cfg;
    int T = p->work.T;
    for (int u = 0; u < T; u++) {
        reset_work(p);
        copy_token(&p->work, &p->clean, c, u);
        r->rows[u] = normalised(r, slm_evaluate(p, &p->work));
    }
    for (int u = 0; u < T; u++) copy_token(&p->work, &p->clean, c, u);
    r->all_rows = normalised(r, slm_evaluate(p, &p->work));
    memcpy(r->all_logits, p->logits, (size_t)c->vocab_size * sizeof(double));
    reset_work(p);
    copy_row(&p->work, &p->clean, T - 1, c->row_dim);
    for (int h = 0; h < c->n_heads; h++) {
        copy_query(&p->work, &p->clean, c, h);
        for (int u = 0; u < T; u++) copy_reads(&p->work, &p->clean, c, h, u);
    }
    r->outputs_and_row = normalised(r, slm_evaluate(p, &p->work));
}

void slm_patch_result_free(PatchResult *r) {
    free(r->reads);
    free(r->query);
    free(r->output);
    free(r->rows);
    free(r->all_logits);
    free(r->clean_logits);
    free(r->resid);
    *r = (PatchResult){0};
}

static void patcher_free(Patcher *p) {
    free(p->clean.rows);
    free(p->corrupt.rows);
    free(p->work.rows);
    free(p->scores);
    free(p->z);
    free(p->hidden);
    free(p->logits);
}

static int patch_alloc(Patcher *p, PatchResult *r, const ModelConfig *c, int T, Error *e) {
    int H = c->n_heads, V = c->vocab_size;
    if (reads_init(&p->clean, c, T, e) || reads_init(&p->corrupt, c, T, e) || reads_init(&p->work, c, T, e)) return -1;
    p->scores = xmalloc((size_t)T * sizeof(double), e);
    p->z = p->scores ? xmalloc((size_t)slm_model_hidden_input_dim(c) * sizeof(double), e) : NULL;
    p->hidden = p->z ? xmalloc((size_t)c->hidden_dim * 2 * sizeof(double), e) : NULL;
    p->clean_hidden = p->hidden ? p->hidden + c->hidden_dim : NULL;
    p->logits = p->hidden ? xmalloc((size_t)V * sizeof(double), e) : NULL;
    r->reads = p->logits ? xmalloc((size_t)H * T * sizeof(double), e) : NULL;
    r->query = r->reads ? xmalloc((size_t)H * sizeof(double), e) : NULL;
    r->output = r->query ? xmalloc((size_t)H * sizeof(double), e) : NULL;
    r->rows = r->output ? xmalloc((size_t)T * sizeof(double), e) : NULL;
    r->all_logits = r->rows ? xmalloc((size_t)V * sizeof(double), e) : NULL;
    r->clean_logits = r->all_logits ? xmalloc((size_t)V * sizeof(double), e) : NULL;
    return r->clean_logits ? 0 : -1;
}

static int check_runs(const Model *m, const Activations *clean, const Activations *corrupt, int32_t answer,
                      int32_t wrong, Error *e) {
    const ModelConfig *c = &m->cfg;
    if (slm_model_heads(c) == 0 || c->arch->readout != READOUT_TANH || !clean->attention_kept ||
        !corrupt->attention_kept)
        return FAIL(e, "give an attention model", "patching needs both runs of the attention network (model_forward)");
    if (slm_variant_check(c, "patching a head's keys and queries", VARIANT_NEEDS_DOT, e)) return -1;
    if (clean->n_positions != corrupt->n_positions || clean->n_positions < 1)
        return FAIL(e, "give texts of the same number of tokens", "the clean run has %d positions, the corrupt run %d",
                    clean->n_positions, corrupt->n_positions);
    if (answer < 0 || answer >= c->vocab_size || wrong < 0 || wrong >= c->vocab_size || answer == wrong)
        return FAIL(e, "give two different tokens of the vocabulary",
                    "answer %d and wrong %d: not two tokens to compare", answer, wrong);
    if (!slm_head_set_equal(&clean->ablation.heads, &corrupt->ablation.heads) ||
        clean->ablation.mode != corrupt->ablation.mode)
        return FAIL(e, "run both texts with the same --ablate", "the two runs switch off different heads");
    return 0;
}

/* LD from slm_model_forward's logits at the last position of a. */
static double model_diff(const Activations *a, int32_t answer, int32_t wrong) {
    const float *l = a->logits + (size_t)(a->n_positions - 1) * a->cfg.vocab_size;
    return (double)l[answer] - (double)l[wrong];
}

int slm_probe_patch(const Model *m, const Activations *clean, const Activations *corrupt, int32_t answer, int32_t wrong,
                    PatchResult *out, Error *e) {
    *out = (PatchResult){0};
    if (check_runs(m, clean, corrupt, answer, wrong, e)) return -1;
    const ModelConfig *c = &m->cfg;
    int T = clean->n_positions;
    Patcher p = {.m = m, .ablation = &clean->ablation, .answer = answer, .wrong = wrong};
    if (patch_alloc(&p, out, c, T, e)) {
        patcher_free(&p);
        slm_patch_result_free(out);
        return -1;
    }
    *out = (PatchResult){.n_positions = T,
                         .n_heads = c->n_heads,
                         .answer = answer,
                         .wrong = wrong,
                         .reads = out->reads,
                         .query = out->query,
                         .output = out->output,
                         .rows = out->rows,
                         .all_logits = out->all_logits,
                         .clean_logits = out->clean_logits};
    reads_fill(&p.clean, clean);
    reads_fill(&p.corrupt, corrupt);
    out->clean_diff = slm_evaluate(&p, &p.clean);
    memcpy(p.clean_hidden, p.hidden, (size_t)c->hidden_dim * sizeof(double));
    memcpy(out->clean_logits, p.logits, (size_t)c->vocab_size * sizeof(double));
    out->corrupt_diff = slm_evaluate(&p, &p.corrupt);
    out->clean_diff_model = model_diff(clean, answer, wrong);
    out->corrupt_diff_model = model_diff(corrupt, answer, wrong);
    int rc = 0;
    if (fabs(out->clean_diff - out->corrupt_diff) < 1e-9)
        rc = FAIL(e, "choose texts (or --answer and --wrong) that the network tells apart",
                  "the clean and the corrupt run give the same logit difference (%.6f): nothing to bring back",
                  out->clean_diff);
    if (!rc) {
        sweep_heads(&p, out);
        sweep_rows(&p, out);
        slm_probe_logits_from_hidden(m, p.clean_hidden, p.logits); /* the corrupt run above the clean hidden layer */
        out->hidden = normalised(out, p.logits[answer] - p.logits[wrong]);
    }
    patcher_free(&p);
    if (rc) slm_patch_result_free(out);
    return rc;
}
