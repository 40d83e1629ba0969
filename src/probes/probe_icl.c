/* In-context learning: the loss by position over stories and the score, late
 * minus early (see probe_icl.h). Works for both architectures. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "storylm/probe_icl.h"
#include "storylm/probes.h"

void slm_icl_result_free(IclResult *r) {
    free(r->loss);
    free(r->stories);
    *r = (IclResult){0};
}

/* Adds the story run last (len ids) to loss and, when it reaches position
 * late, its losses in early's band to paired. */
static void add_story(const Activations *a, size_t len, const IclResult *out, int band, double *loss, double *paired) {
    for (size_t p = 0; p + 1 < len; p++) loss[p] += a->loss[p];
    if ((int)len - 2 < out->late) return;
    for (int p = out->early - band; p <= out->early + band; p++)
        if (p >= 0 && p <= out->last) paired[0] += a->loss[p], paired[1]++;
}

/* loss (n_positions) summed over stories idx[0..n), and paired as add_story fills it. */
static int sum_losses(const Model *m, const Stories *s, const int *idx, int n, const Ablation *ab, const IclResult *out,
                      int band, double *loss, double *paired, Error *e) {
    int32_t *ids = NULL;
    size_t cap = 0;
    ProbeRunner r = {0};
    int rc = slm_probe_runner_init(&r, m, 1024, e);
    for (int i = 0; !rc && i < n; i++) {
        size_t len = story_len(s, idx[i]);
        rc = slm_probe_run_story(&r, s, idx[i], ab, &ids, &cap, e);
        if (!rc) add_story(&r.acts, len, out, band, loss, paired);
    }
    slm_probe_runner_free(&r);
    free(ids);
    return rc;
}

/* Pooled mean of sums over positions centre-band .. centre+band within 0..last. */
static double pooled(const double *sum, const int *count, int centre, int band, int last, long long *n) {
    double total = 0;
    *n = 0;
    for (int p = centre - band; p <= centre + band; p++)
        if (p >= 0 && p <= last) total += sum[p], *n += count[p];
    return *n ? total / (double)*n : NAN;
}

/* Clips early and late to the last position min_stories reach (from the stories' lengths). */
static int clip(IclResult *out, const IclOptions *o, Error *e) {
    out->last = -1;
    for (int p = 0; p < out->n_positions; p++)
        if (out->stories[p] >= o->min_stories) out->last = p;
    out->early = o->early, out->late = o->late;
    if (out->early > out->last) out->early = out->last, out->early_clipped = 1;
    if (out->late > out->last) out->late = out->last, out->late_clipped = 1;
    if (out->late <= out->early)
        return FAIL(e, "give a smaller --early (or --late), or fewer --min-stories",
                    "the stories are too short for --early %d and --late %d: only up to position %d do %d or more "
                    "of them reach",
                    o->early, o->late, out->last, o->min_stories);
    return 0;
}

static void score(IclResult *out, const double *sum, const double *paired, int band) {
    out->early_loss = pooled(sum, out->stories, out->early, band, out->last, &out->early_count);
    out->late_loss = pooled(sum, out->stories, out->late, band, out->last, &out->late_count);
    out->score = out->late_loss - out->early_loss;
    out->paired_early_loss = paired[1] > 0 ? paired[0] / paired[1] : NAN;
    out->paired_score = out->late_loss - out->paired_early_loss;
}

int slm_probe_icl(const Model *m, const Stories *s, const int *idx, int n, const IclOptions *o,
                  const Ablation *ablation, IclResult *out, Error *e) {
    *out = (IclResult){0};
    if (n < 1) return FAIL(e, "give a stories file with test stories", "no stories to measure the loss by position on");
    if (o->early < 0 || o->late <= o->early)
        return FAIL(e, "give --early below --late",
                    "--early %d and --late %d: the late position must come after the early one", o->early, o->late);
    size_t longest = 0;
    for (int i = 0; i < n; i++) longest = story_len(s, idx[i]) > longest ? story_len(s, idx[i]) : longest;
    int N = longest > 1 ? (int)longest - 1 : 0;
    double *sum = xcalloc((size_t)N + 1, sizeof(double), e), paired[2] = {0, 0};
    out->stories = sum ? xcalloc((size_t)N + 1, sizeof(int), e) : NULL;
    out->loss = out->stories ? xcalloc((size_t)N + 1, sizeof(double), e) : NULL;
    out->n_positions = N;
    int rc = out->loss ? 0 : -1;
    for (int i = 0; !rc && i < n; i++)
        for (int p = 0; p + 1 < (int)story_len(s, idx[i]); p++) out->stories[p]++;
    if (!rc) rc = clip(out, o, e);
    if (!rc) rc = sum_losses(m, s, idx, n, ablation, out, o->band, sum, paired, e);
    for (int p = 0; !rc && p < N; p++) out->loss[p] = out->stories[p] ? sum[p] / out->stories[p] : NAN;
    if (!rc) score(out, sum, paired, o->band);
    free(sum);
    if (rc) slm_icl_result_free(out);
    return rc;
}
