/* Head detectors: previous-token, duplicate-token and induction scores on
 * stories and on repeated random sequences, and the induction loss (see
 * probe_detect.h for the definitions). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "storylm/probe_detect.h"
#include "storylm/rng.h"

int slm_detect_tally_init(DetectTally *t, int n_heads, Error *e) {
    *t = (DetectTally){.n_heads = n_heads};
    t->previous = xcalloc((size_t)3 * n_heads, sizeof(double), e);
    if (!t->previous) return -1;
    t->duplicate = t->previous + n_heads;
    t->induction = t->duplicate + n_heads;
    return 0;
}

void slm_detect_tally_free(DetectTally *t) {
    free(t->previous);
    *t = (DetectTally){0};
}

/* Sum of w (the weights of keys first..) over the key positions at[0..n). */
static double weight_at(const float *w, int first, const int *at, int n) {
    double sum = 0;
    for (int i = 0; i < n; i++) sum += w[at[i] - first];
    return sum;
}

/* dup (n_dup): earlier positions in first..p-1 holding ids[p]; next (n_next):
 * positions v in first..p-1, v >= 1, right after one holding ids[p]. */
static void matches(const int32_t *ids, int first, int p, int *dup, int *n_dup, int *next, int *n_next) {
    *n_dup = *n_next = 0;
    for (int u = first; u < p; u++) {
        if (ids[u] == ids[p]) dup[(*n_dup)++] = u;
        if (u >= 1 && ids[u - 1] == ids[p]) next[(*n_next)++] = u;
    }
}

int slm_detect_tally_add(DetectTally *t, const ProbeRunner *r, const int32_t *ids, Error *e) {
    const Activations *a = &r->acts;
    int N = a->n_positions;
    int *dup = xmalloc((size_t)2 * N * sizeof(int), e), *next = dup ? dup + N : NULL;
    if (!dup) return -1;
    for (int p = 0; p < N; p++) {
        int first, n_keys, n_dup, n_next;
        slm_activations_attention(a, 0, p, &first, &n_keys);
        matches(ids, first, p, dup, &n_dup, next, &n_next);
        t->n_previous += p > first;
        t->n_duplicate += n_dup > 0;
        t->n_induction += n_next > 0;
        for (int h = 0; h < t->n_heads; h++) {
            const float *w = slm_activations_attention(a, h, p, &first, &n_keys);
            if (p > first) t->previous[h] += w[p - 1 - first];
            t->duplicate[h] += weight_at(w, first, dup, n_dup);
            t->induction[h] += weight_at(w, first, next, n_next);
        }
    }
    free(dup);
    return 0;
}

static double mean_or_nan(double sum, long long n) { return n > 0 ? sum / (double)n : NAN; }

DetectScores slm_detect_tally_scores(const DetectTally *t, int h) {
    return (DetectScores){mean_or_nan(t->previous[h], t->n_previous), mean_or_nan(t->duplicate[h], t->n_duplicate),
                          mean_or_nan(t->induction[h], t->n_induction)};
}

void slm_detect_result_free(DetectResult *r) {
    free(r->stories); /* random lies in the same block */
    *r = (DetectResult){0};
}

/* ---- runs ------------------------------------------------------------------------- */

static void fill_scores(const DetectTally *t, DetectScores *out) {
    for (int h = 0; h < t->n_heads; h++) out[h] = slm_detect_tally_scores(t, h);
}

/* Stories idx[0..n) into t. */
static int tally_stories(ProbeRunner *r, const Stories *s, const int *idx, int n, const Ablation *ab, DetectTally *t,
                         long long *positions, Error *e) {
    int32_t *ids = NULL;
    size_t cap = 0;
    int rc = 0;
    for (int i = 0; !rc && i < n; i++) {
        size_t len = story_len(s, idx[i]);
        rc = slm_probe_run_story(r, s, idx[i], ab, &ids, &cap, e);
        if (!rc) rc = slm_detect_tally_add(t, r, ids, e);
        *positions += (long long)len;
    }
    free(ids);
    return rc;
}

/* The tokens random sequences draw from: those of the stories but their first ([EOS]); returns how many. */
static int token_pool(const Stories *s, const int *idx, int n, int V, int32_t *pool, Error *e) {
    uint8_t *seen = xcalloc((size_t)V, 1, e);
    if (!seen) return -1;
    for (int i = 0; i < n; i++)
        for (size_t j = 0, len = story_len(s, idx[i]); j < len; j++) seen[story_token(s, idx[i], j)] = 1;
    for (int i = 0; i < n; i++) seen[story_token(s, idx[i], 0)] = 0;
    int k = 0;
    for (int v = 0; v < V; v++)
        if (seen[v]) pool[k++] = v;
    free(seen);
    return k;
}

/* Sum of the losses at positions [from, to) of the run last. */
static double loss_sum(const Activations *a, int from, int to) {
    double sum = 0;
    for (int p = from; p < to; p++) sum += a->loss[p];
    return sum;
}

static int tally_random(ProbeRunner *r, const Stories *s, const int *idx, int n, const DetectOptions *o,
                        const Ablation *ab, DetectTally *t, DetectResult *out, Error *e) {
    int V = r->model->cfg.vocab_size, L = o->length, len = 2 * L + 1;
    int32_t *pool = xmalloc((size_t)V * sizeof(int32_t), e),
            *ids = pool ? xmalloc((size_t)len * sizeof(int32_t), e) : NULL;
    int n_pool = ids ? token_pool(s, idx, n, V, pool, e) : -1, rc = n_pool < 0 ? -1 : 0;
    if (!rc && n_pool < 2)
        rc = FAIL(e, "give stories with more than one kind of token", "too few tokens to draw random sequences from");
    Rng rng;
    slm_rng_seed(&rng, o->seed);
    double first = 0, second = 0;
    for (int k = 0; !rc && k < o->n_random; k++) {
        ids[0] = story_token(s, idx[0], 0);
        for (int i = 1; i <= L; i++) ids[i] = ids[i + L] = pool[slm_rng_below(&rng, (uint64_t)n_pool)];
        rc = slm_probe_run(r, ids, len, ab, e);
        if (!rc) rc = slm_detect_tally_add(t, r, ids, e);
        /* positions 1..L-1 predict r_2..r_L of the first copy, L+1..2L-1 the same tokens again */
        first += loss_sum(&r->acts, 1, L);
        second += loss_sum(&r->acts, L + 1, 2 * L);
        out->random_positions += len;
    }
    double count = (double)o->n_random * (L - 1);
    out->loss_first = count > 0 ? first / count : NAN;
    out->loss_second = count > 0 ? second / count : NAN;
    free(ids);
    free(pool);
    return rc;
}

static int check_options(const Model *m, int n, const DetectOptions *o, Error *e) {
    if (slm_probe_need_heads(m, "detect", e)) return -1;
    if (n < 1) return FAIL(e, "give a stories file with test stories", "no stories to detect heads on");
    if (o->length < 2 || 2 * o->length + 1 > m->cfg.window)
        return FAIL(e, "give a --length from 2 to half the window (127 for 256 distances)",
                    "random sequences of %d tokens repeated twice do not fit the window of %d: the second copy could "
                    "not see the first",
                    o->length, m->cfg.window);
    return 0;
}

void slm_detect_head_name(const DetectResult *r, int g, char *buf, size_t size) {
    int layers = r->layers > 1 ? r->layers : 1;
    ModelConfig c = {.arch = slm_arch_default(), .n_heads = r->n_heads / layers, .n_layers = layers};
    slm_head_name(&c, g, buf, size);
}

int slm_probe_detect(const Model *m, const Stories *s, const int *idx, int n, const DetectOptions *o,
                     const Ablation *ablation, DetectResult *out, Error *e) {
    int H = slm_model_heads(&m->cfg); /* every layer's heads */
    *out = (DetectResult){.n_heads = H, .layers = slm_model_layers(&m->cfg)};
    if (check_options(m, n, o, e)) return -1;
    DetectTally st = {0}, rt = {0};
    ProbeRunner r = {0};
    out->stories = xcalloc((size_t)2 * H, sizeof(DetectScores), e);
    int rc = out->stories && !slm_detect_tally_init(&st, H, e) && !slm_detect_tally_init(&rt, H, e) ? 0 : -1;
    if (!rc) out->random = out->stories + H, rc = slm_probe_runner_init(&r, m, 1024, e);
    if (!rc) rc = tally_stories(&r, s, idx, n, ablation, &st, &out->positions, e);
    if (!rc && o->n_random > 0) rc = tally_random(&r, s, idx, n, o, ablation, &rt, out, e);
    if (!rc) {
        fill_scores(&st, out->stories);
        fill_scores(&rt, out->random);
        out->duplicate_positions = st.n_duplicate, out->induction_positions = st.n_induction;
        out->random_duplicate_positions = rt.n_duplicate, out->random_induction_positions = rt.n_induction;
        if (o->n_random <= 0) out->loss_first = out->loss_second = NAN;
    }
    slm_probe_runner_free(&r);
    slm_detect_tally_free(&st);
    slm_detect_tally_free(&rt);
    if (rc) free(out->stories), *out = (DetectResult){0};
    return rc;
}
