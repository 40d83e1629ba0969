/* Activation patching: pieces of a clean run put into a corrupt run, the
 * last position's logit difference measured again (see probe_patch.h). On a
 * model of one layer of heads read by the tanh readout the last position is
 * evaluated in double from what it reads, so that every patched run, and the
 * two runs themselves, go through the same arithmetic; on any other model
 * (several layers, a residual stream) the clean run's numbers at its hook
 * points are recorded, then the corrupt text run again with one piece of
 * them hooked in at a time, and the logit difference read from that pass. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "storylm/fixed_math.h"
#include "storylm/hooks.h"
#include "storylm/probe_patch.h"
#include "storylm/probes.h"

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
        hidden[j] = slm_tanh_fixed(sum);
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
        double y = slm_tanh_fixed(sum);
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
    for (int u = r->first; u < T; u++) sum += scores[u] = slm_exp_fixed(scores[u] - top);
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

/* ---- any model: through its hook points ------------------------------------ */

/* The clean run's numbers at the points patching reads, by hook name. */
#define PATCH_MAX_POINTS (2 + 6 * STORYLM_MAX_TF_LAYERS) /* recorded: a block's q, k, v, z and residuals */
typedef struct CleanPoints {
    int n;
    char name[PATCH_MAX_POINTS][48];
    float *data[PATCH_MAX_POINTS]; /* (T, ...) as the hook gave it */
    int failed;
} CleanPoints;

/* One patch: at the points names[0..n_names), position u (-1: every one) and
 * head h (-1: every one; a point without heads ignores it), the clean numbers. */
typedef struct Patch {
    const CleanPoints *clean;
    const char *names[PATCH_MAX_POINTS];
    int n_names, u, h;
} Patch;

static const float *clean_of(const CleanPoints *c, const char *name) {
    for (int i = 0; i < c->n; i++)
        if (strcmp(c->name[i], name) == 0) return c->data[i];
    return NULL;
}

/* HookFn of the clean run: keeps a copy of each point. */
static int record(void *ctx, const char *name, float *data, int ndim, const int *shape, int writable) {
    (void)writable;
    CleanPoints *c = ctx;
    size_t n = 1;
    for (int d = 0; d < ndim; d++) n *= (size_t)shape[d];
    if (c->n == PATCH_MAX_POINTS || !(c->data[c->n] = malloc(n * sizeof(float)))) return c->failed = 1, -1;
    memcpy(c->data[c->n], data, n * sizeof(float));
    snprintf(c->name[c->n], sizeof c->name[0], "%s", name);
    c->n++;
    return 0;
}

/* HookFn of a patched run: data (T, W) or (T, H, d) gets the clean numbers at the patch's u and h. */
static int put_clean(void *ctx, const char *name, float *data, int ndim, const int *shape, int writable) {
    (void)writable;
    const Patch *p = ctx;
    const float *clean = clean_of(p->clean, name);
    if (!clean) return -1;
    int T = shape[0], heads = ndim == 3 ? shape[1] : 1;
    size_t d = ndim == 3 ? (size_t)shape[2] : (size_t)shape[1];
    for (int t = 0; t < T; t++)
        for (int h = 0; h < heads; h++) {
            if ((p->u >= 0 && t != p->u) || (ndim == 3 && p->h >= 0 && h != p->h)) continue;
            size_t at = ((size_t)t * heads + h) * d;
            memcpy(data + at, clean + at, d * sizeof(float));
        }
    return 1;
}

/* What patching keeps while it runs. */
typedef struct HookPatcher {
    const Model *m;
    ProbeRunner run; /* the corrupt text's passes */
    const int32_t *corrupt;
    int T;
    Ablation ablation;
    int32_t answer, wrong;
    double clean_diff, corrupt_diff;
} HookPatcher;

/* LD at the last position of the corrupt text run with patch p (NULL: none). */
static int patched_diff(HookPatcher *tp, const Patch *p, double *diff, Error *e) {
    ForwardHooks hooks = {
        .fn = put_clean, .ctx = (void *)p, .names = p ? p->names : NULL, .n_names = p ? p->n_names : 0};
    tp->run.acts.hooks = p ? &hooks : NULL;
    int rc = slm_probe_run(&tp->run, tp->corrupt, tp->T, &tp->ablation, e);
    tp->run.acts.hooks = NULL;
    slm_hooks_free(&hooks);
    const float *l = tp->run.acts.logits + (size_t)(tp->T - 1) * tp->m->cfg.vocab_size;
    *diff = (double)l[tp->answer] - (double)l[tp->wrong];
    return rc;
}

/* The normalised LD of patch p: 0 the corrupt run, 1 the clean one. */
static int measure(HookPatcher *tp, const Patch *p, double *out, Error *e) {
    double diff;
    if (patched_diff(tp, p, &diff, e)) return -1;
    *out = (diff - tp->corrupt_diff) / (tp->clean_diff - tp->corrupt_diff) + 0.0; /* + 0.0: no -0 */
    return 0;
}

/* A patch of one point of layer l (or two: hook_k with hook_v). */
static Patch one_patch(const CleanPoints *clean, HookPoint a, HookPoint b, int l, int u, int h, char (*buf)[48]) {
    Patch p = {.clean = clean, .u = u, .h = h, .n_names = 1};
    slm_hook_name(a, l, buf[0], 48);
    p.names[0] = buf[0];
    if (b != a) slm_hook_name(b, l, buf[1], 48), p.names[p.n_names++] = buf[1];
    return p;
}

/* 1 when the model declares point p in its blocks (layers). */
static int has_block_point(const ModelConfig *c, HookPoint p) {
    HookPoints hp;
    c->arch->hook_points(c, &hp);
    for (int i = 0; i < hp.n_block; i++)
        if (hp.block[i] == p) return 1;
    return 0;
}

/* The residual stream entering each layer and leaving the last, at every position (resid (L + 1, T)). */
static int sweep_resid(HookPatcher *tp, const CleanPoints *clean, PatchResult *r, Error *e) {
    int T = tp->T, L = r->n_layers, rc = 0;
    char buf[PATCH_MAX_POINTS][48];
    for (int l = 0; !rc && l <= L; l++)
        for (int u = 0; !rc && u < T; u++) {
            Patch p = l < L ? one_patch(clean, HOOK_RESID_PRE, HOOK_RESID_PRE, l, u, -1, buf)
                            : one_patch(clean, HOOK_RESID_POST, HOOK_RESID_POST, L - 1, u, -1, buf);
            rc = measure(tp, &p, &r->resid[(size_t)l * T + u], e);
        }
    return rc;
}

/* Every head's reads, query and output; every position's row; the hidden layer (the residual stream
 * leaving the last block); every row; every head output with the last row. The row is the first
 * block's hook_resid_pre where the model has a residual stream, else hook_embed. */
static int sweep(HookPatcher *tp, const CleanPoints *clean, PatchResult *r, Error *e) {
    const ModelConfig *c = &tp->m->cfg;
    int T = tp->T, H = c->n_heads, L = r->n_layers, rc = 0, resid = r->resid != NULL;
    HookPoint row = resid ? HOOK_RESID_PRE : HOOK_EMBED, hidden = resid ? HOOK_RESID_POST : HOOK_HIDDEN;
    char buf[PATCH_MAX_POINTS][48];
    for (int g = 0; !rc && g < L * H; g++) {
        int l = g / H, h = g % H;
        for (int u = 0; !rc && u < T; u++) {
            Patch p = one_patch(clean, HOOK_K, HOOK_V, l, u, h, buf);
            rc = measure(tp, &p, &r->reads[(size_t)g * T + u], e);
        }
        Patch q = one_patch(clean, HOOK_Q, HOOK_Q, l, T - 1, h, buf);
        if (!rc) rc = measure(tp, &q, &r->query[g], e);
        Patch z = one_patch(clean, HOOK_Z, HOOK_Z, l, T - 1, h, buf); /* buf holds one patch's names at a time */
        if (!rc) rc = measure(tp, &z, &r->output[g], e);
    }
    if (!rc && resid) rc = sweep_resid(tp, clean, r, e);
    for (int u = 0; !rc && u < T; u++) {
        Patch p = one_patch(clean, row, row, 0, u, -1, buf);
        if (resid)
            r->rows[u] = r->resid[u];
        else
            rc = measure(tp, &p, &r->rows[u], e);
    }
    Patch last = one_patch(clean, hidden, hidden, L - 1, T - 1, -1, buf);
    if (!rc && resid)
        r->hidden = r->resid[(size_t)L * T + T - 1];
    else if (!rc)
        rc = measure(tp, &last, &r->hidden, e);
    Patch all = one_patch(clean, row, row, 0, -1, -1, buf);
    if (!rc) rc = measure(tp, &all, &r->all_rows, e);
    for (int v = 0; !rc && v < c->vocab_size; v++)
        r->all_logits[v] = tp->run.acts.logits[(size_t)(T - 1) * c->vocab_size + v];
    Patch mixed = {.clean = clean, .u = T - 1, .h = -1};
    for (int l = 0; l < L; l++) slm_hook_name(HOOK_Z, l, buf[l], 48), mixed.names[mixed.n_names++] = buf[l];
    slm_hook_name(row, 0, buf[L], 48), mixed.names[mixed.n_names++] = buf[L];
    if (!rc) rc = measure(tp, &mixed, &r->outputs_and_row, e);
    return rc;
}

/* r's lists; the residual stream's where the model has one (r->resid NULL otherwise). */
static int hooked_alloc(PatchResult *r, const ModelConfig *c, int T, Error *e) {
    int G = slm_model_heads(c), V = c->vocab_size, resid = has_block_point(c, HOOK_RESID_PRE);
    r->reads = xmalloc((size_t)G * T * sizeof(double), e);
    r->query = r->reads ? xmalloc((size_t)G * sizeof(double), e) : NULL;
    r->output = r->query ? xmalloc((size_t)G * sizeof(double), e) : NULL;
    r->rows = r->output ? xmalloc((size_t)T * sizeof(double), e) : NULL;
    r->all_logits = r->rows ? xmalloc((size_t)V * sizeof(double), e) : NULL;
    r->clean_logits = r->all_logits ? xmalloc((size_t)V * sizeof(double), e) : NULL;
    if (!r->clean_logits) return -1;
    if (resid && !(r->resid = xmalloc((size_t)(r->n_layers + 1) * T * sizeof(double), e))) return -1;
    return 0;
}

/* 1 for the points a patch reads: the row, the heads' q, k, v, z, the residuals, the hidden layer. */
static int patched_point(HookPoint p) {
    return p == HOOK_EMBED || p == HOOK_Q || p == HOOK_K || p == HOOK_V || p == HOOK_Z || p == HOOK_RESID_PRE ||
           p == HOOK_RESID_POST || p == HOOK_HIDDEN;
}

/* The names of the points of c a patch reads (names[i] into buf[i]); returns their count. */
static int patched_names(const ModelConfig *c, char (*buf)[48], const char **names) {
    HookPoints hp;
    c->arch->hook_points(c, &hp);
    int n = 0;
    for (int i = 0; i < hp.n_before; i++)
        if (patched_point(hp.before[i])) slm_hook_name(hp.before[i], 0, buf[n], 48), names[n] = buf[n], n++;
    for (int l = 0; l < hp.layers; l++)
        for (int i = 0; i < hp.n_block; i++)
            if (patched_point(hp.block[i])) slm_hook_name(hp.block[i], l, buf[n], 48), names[n] = buf[n], n++;
    for (int i = 0; i < hp.n_after; i++)
        if (patched_point(hp.after[i])) slm_hook_name(hp.after[i], 0, buf[n], 48), names[n] = buf[n], n++;
    return n;
}

/* The clean text run again with every point patching reads recorded (those alone: a
 * transformer's other points are computed only when asked for). */
static int record_clean(const Model *m, const ProbeRunner *clean, CleanPoints *points, Error *e) {
    ProbeRunner r;
    int T = clean->batch.n_tokens;
    char buf[PATCH_MAX_POINTS][48];
    const char *names[PATCH_MAX_POINTS];
    ForwardHooks hooks = {.fn = record, .ctx = points, .names = names};
    hooks.n_names = patched_names(&m->cfg, buf, names);
    if (slm_probe_runner_init(&r, m, T, e)) return -1;
    r.acts.hooks = &hooks;
    int rc = slm_probe_run(&r, clean->batch.tokens, T, &clean->acts.ablation, e);
    if (!rc && points->failed) rc = FAIL(e, NULL, "out of memory keeping the clean run's activations");
    slm_hooks_free(&hooks);
    slm_probe_runner_free(&r);
    return rc;
}

static int patch_hooked(const Model *m, const ProbeRunner *clean, const ProbeRunner *corrupt, int32_t answer,
                        int32_t wrong, PatchResult *out, Error *e) {
    const ModelConfig *c = &m->cfg;
    int T = clean->batch.n_tokens, V = c->vocab_size;
    if (T != corrupt->batch.n_tokens || T < 1)
        return FAIL(e, "give texts of the same number of tokens", "the clean run has %d positions, the corrupt run %d",
                    T, corrupt->batch.n_tokens);
    if (answer < 0 || answer >= V || wrong < 0 || wrong >= V || answer == wrong)
        return FAIL(e, "give two different tokens of the vocabulary",
                    "answer %d and wrong %d: not two tokens to compare", answer, wrong);
    CleanPoints points = {0};
    HookPatcher tp = {.m = m,
                      .corrupt = corrupt->batch.tokens,
                      .T = T,
                      .ablation = clean->acts.ablation,
                      .answer = answer,
                      .wrong = wrong};
    *out = (PatchResult){.n_positions = T,
                         .n_heads = slm_model_heads(c),
                         .n_layers = slm_model_layers(c),
                         .answer = answer,
                         .wrong = wrong};
    int rc =
        hooked_alloc(out, c, T, e) || record_clean(m, clean, &points, e) || slm_probe_runner_init(&tp.run, m, T, e);
    const float *cl = clean->acts.logits + (size_t)(T - 1) * V, *co = corrupt->acts.logits + (size_t)(T - 1) * V;
    if (!rc) {
        out->clean_diff = out->clean_diff_model = tp.clean_diff = (double)cl[answer] - (double)cl[wrong];
        out->corrupt_diff = out->corrupt_diff_model = tp.corrupt_diff = (double)co[answer] - (double)co[wrong];
        for (int v = 0; v < V; v++) out->clean_logits[v] = cl[v];
        if (fabs(tp.clean_diff - tp.corrupt_diff) < 1e-9)
            rc = FAIL(e, "choose texts (or --answer and --wrong) that the network tells apart",
                      "the clean and the corrupt run give the same logit difference (%.6f): nothing to bring back",
                      tp.clean_diff);
    }
    if (!rc) rc = sweep(&tp, &points, out, e);
    for (int i = 0; i < points.n; i++) free(points.data[i]);
    slm_probe_runner_free(&tp.run);
    if (rc) slm_patch_result_free(out);
    return rc;
}

int slm_probe_patch_runs(const Model *m, const ProbeRunner *clean, const ProbeRunner *corrupt, int32_t answer,
                         int32_t wrong, PatchResult *out, Error *e) {
    *out = (PatchResult){0};
    /* one layer of heads read by the tanh readout: the last position evaluated exactly (above); any other
     * model (several layers, a residual stream) through its hook points */
    if (m->cfg.arch->readout == READOUT_TANH && slm_model_layers(&m->cfg) == 1)
        return slm_probe_patch(m, &clean->acts, &corrupt->acts, answer, wrong, out, e);
    if (slm_probe_need_heads(m, "patching", e)) return -1;
    return patch_hooked(m, clean, corrupt, answer, wrong, out, e);
}
