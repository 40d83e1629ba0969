/* Activation patching on a transformer: the clean run's numbers at its hook
 * points recorded, then the corrupt text run again with one piece of them
 * hooked in at a time, and the last position's logit difference read from
 * that pass's logits (see probe_patch.h). The attention network's own
 * patcher (probe_patch.c) evaluates the last position in double instead. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "storylm/hooks.h"
#include "storylm/probe_patch.h"
#include "storylm/probes.h"

/* The clean run's numbers at the points patching reads, by hook name. */
#define PATCH_MAX_POINTS (2 + 4 * STORYLM_MAX_TF_LAYERS)
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
typedef struct TfPatcher {
    const Model *m;
    ProbeRunner run; /* the corrupt text's passes */
    const int32_t *corrupt;
    int T;
    Ablation ablation;
    int32_t answer, wrong;
    double clean_diff, corrupt_diff;
} TfPatcher;

/* LD at the last position of the corrupt text run with patch p (NULL: none). */
static int patched_diff(TfPatcher *tp, const Patch *p, double *diff, Error *e) {
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
static int measure(TfPatcher *tp, const Patch *p, double *out, Error *e) {
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
static int sweep_resid(TfPatcher *tp, const CleanPoints *clean, PatchResult *r, Error *e) {
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
static int sweep(TfPatcher *tp, const CleanPoints *clean, PatchResult *r, Error *e) {
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

/* The clean text run again with every point patching reads recorded. */
static int record_clean(const Model *m, const ProbeRunner *clean, CleanPoints *points, Error *e) {
    ProbeRunner r;
    int T = clean->batch.n_tokens;
    ForwardHooks hooks = {.fn = record, .ctx = points};
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
    TfPatcher tp = {.m = m,
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
