/* The chapter's statistics: does q.k follow the cosine of the two rows (per
 * head, over every pair of a position and a key it reads); how often the key
 * closest in direction to the query is not the one with the largest q.k; and
 * how many tokens repeat from earlier in the story beyond chapter 6's window
 * of 8. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "storylm/probes.h"

void slm_stats_result_free(StatsResult *r) {
    free(r->correlation);
    free(r->correlation_others);
    free(r->closest_not_largest);
    *r = (StatsResult){0};
}

typedef struct TokenCount {
    int32_t token;
    long long count;
} TokenCount;

static int by_count(const void *a, const void *b) {
    const TokenCount *x = a, *y = b;
    if (x->count != y->count) return x->count > y->count ? -1 : 1;
    return (x->token > y->token) - (x->token < y->token);
}

int slm_common_tokens(const Stories *s, const int *idx, int n, const Tokenizer *t, const NameList *nl, int top,
                      uint8_t *left_out, Error *e) {
    int V = t->size;
    TokenCount *counts = xcalloc((size_t)V, sizeof *counts, e);
    if (!counts) return -1;
    for (int v = 0; v < V; v++) counts[v].token = v;
    for (int i = 0; i < n; i++)
        for (size_t j = 0, len = story_len(s, idx[i]); j < len; j++) counts[story_token(s, idx[i], j)].count++;
    qsort(counts, (size_t)V, sizeof *counts, by_count);
    memset(left_out, 0, (size_t)V);
    for (int k = 0; k < top && k < V; k++) {
        const char *piece = t->pieces[counts[k].token];
        left_out[counts[k].token] = !(strncmp(piece, "##", 2) != 0 && slm_names_is_name(nl, piece));
    }
    free(counts);
    return 0;
}

/* Streaming sums for a Pearson correlation. */
typedef struct Pearson {
    double n, x, y, xx, yy, xy;
} Pearson;

static void pearson_add(Pearson *p, double x, double y) {
    p->n += 1;
    p->x += x;
    p->y += y;
    p->xx += x * x;
    p->yy += y * y;
    p->xy += x * y;
}

static double pearson(const Pearson *p) {
    double cov = p->xy - p->x * p->y / p->n, vx = p->xx - p->x * p->x / p->n, vy = p->yy - p->y * p->y / p->n;
    return p->n > 1 && vx > 0 && vy > 0 ? cov / sqrt(vx * vy) : NAN;
}

/* Per story scratch: unit rows (T, D), one head's queries and keys (T, kd), key lengths (T). */
typedef struct StatsWork {
    float *unit_rows, *query, *key, *key_len;
    int cap;
} StatsWork;

static int work_fit(StatsWork *w, int T, const ModelConfig *c, Error *e) {
    if (T <= w->cap) return 0;
    free(w->unit_rows);
    free(w->query);
    free(w->key);
    free(w->key_len);
    *w = (StatsWork){.cap = T};
    w->unit_rows = xmalloc((size_t)T * c->row_dim * sizeof(float), e);
    w->query = w->unit_rows ? xmalloc((size_t)T * c->key_dim * sizeof(float), e) : NULL;
    w->key = w->query ? xmalloc((size_t)T * c->key_dim * sizeof(float), e) : NULL;
    w->key_len = w->key ? xmalloc((size_t)T * sizeof(float), e) : NULL;
    return w->key_len ? 0 : -1;
}

static float dot(const float *a, const float *b, int n) {
    float s = 0;
    for (int i = 0; i < n; i++) s += a[i] * b[i];
    return s;
}

/* Head h over the story run last: pairs into pc (all) and po (a position with
 * another), and *differ += positions whose closest-direction key is not the
 * largest-dot key. */
static void head_pairs(const ProbeRunner *r, StatsWork *w, int h, Pearson *pc, Pearson *po, long long *differ) {
    const Activations *a = &r->acts;
    int T = a->n_positions, D = a->cfg.row_dim, kd = a->cfg.key_dim;
    for (int p = 0; p < T; p++) {
        slm_activations_qkv(a, h, p, w->query + (size_t)p * kd, w->key + (size_t)p * kd, NULL);
        w->key_len[p] = sqrtf(dot(w->key + (size_t)p * kd, w->key + (size_t)p * kd, kd));
    }
    for (int p = 0; p < T; p++) {
        const float *q = w->query + (size_t)p * kd;
        int first = a->first_key[p], best_dot = first, best_dir = first;
        float max_dot = -INFINITY, max_dir = -INFINITY;
        for (int u = first; u <= p; u++) {
            float qk = dot(q, w->key + (size_t)u * kd, kd);
            double cosine = dot(w->unit_rows + (size_t)p * D, w->unit_rows + (size_t)u * D, D);
            pearson_add(pc, qk, cosine);
            if (u < p) pearson_add(po, qk, cosine);
            float dir = w->key_len[u] > 0 ? qk / w->key_len[u] : -INFINITY; /* |q| is the same for every key */
            if (qk > max_dot) max_dot = qk, best_dot = u;
            if (dir > max_dir) max_dir = dir, best_dir = u;
        }
        if (p > first) *differ += best_dot != best_dir;
    }
}

static void unit_rows(const Model *m, const int32_t *ids, int T, float *out) {
    int D = m->cfg.row_dim;
    for (int p = 0; p < T; p++) {
        const float *row = m->embedding + (size_t)ids[p] * D;
        float len = sqrtf(dot(row, row, D));
        for (int i = 0; i < D; i++) out[(size_t)p * D + i] = len > 0 ? row[i] / len : 0;
    }
}

int slm_far_repeat_marks(const int32_t *ids, int T, int32_t eos, const uint8_t *left_out, int *last, uint8_t *far) {
    int n = 0;
    for (int p = 0; p < T; p++) last[ids[p]] = -1;
    for (int p = 0; p < T; p++) {
        int32_t x = ids[p];
        far[p] = x != eos && !left_out[x] && last[x] >= 0 && last[x] < p - 8;
        n += far[p];
        last[x] = p;
    }
    return n;
}

/* Tokens of one story seen earlier but not among the 8 before them; last (V), far (T) scratch. */
static void far_repeats(const int32_t *ids, int T, int eos, const uint8_t *left_out, int *last, uint8_t *far,
                        StatsResult *out) {
    out->far_repeats += slm_far_repeat_marks(ids + 1, T - 1, eos, left_out, last, far);
    for (int p = 1; p < T; p++) {
        out->tokens += ids[p] != eos;
        out->counted_tokens += ids[p] != eos && !left_out[ids[p]];
    }
}

static int stats_alloc(StatsResult *out, Pearson **pc, long long **differ, int **last, int H, int V, Error *e) {
    out->correlation = xcalloc((size_t)H, sizeof(double), e);
    out->correlation_others = out->correlation ? xcalloc((size_t)H, sizeof(double), e) : NULL;
    out->closest_not_largest = out->correlation_others ? xcalloc((size_t)H, sizeof(double), e) : NULL;
    *pc = out->closest_not_largest ? xcalloc(2 * (size_t)H, sizeof(Pearson), e) : NULL; /* all, then others */
    *differ = *pc ? xcalloc((size_t)H, sizeof(long long), e) : NULL;
    *last = *differ ? xmalloc((size_t)V * sizeof(int), e) : NULL;
    return *last ? 0 : -1;
}

int slm_probe_stats(const Model *m, const Stories *s, const int *idx, int n, const uint8_t *left_out, StatsResult *out,
                    Error *e) {
    const ModelConfig *c = &m->cfg;
    int tf = c->arch->readout == READOUT_RESIDUAL, H = slm_model_heads(c); /* every layer's (block's) heads */
    *out = (StatsResult){.n_heads = H};
    if (slm_probe_need_heads(m, "stats", e) ||
        (!tf && slm_variant_check(&m->cfg, "the correlation of q.k with the rows' cosine", VARIANT_NEEDS_DOT, e)))
        return -1;
    if (n < 1) return FAIL(e, "give a stories file with test stories", "no stories to measure");
    Pearson *pc = NULL;
    long long *differ = NULL;
    int *last = NULL, eos = story_token(s, idx[0], 0);
    uint8_t *far = NULL;
    StoryBuf buf = {0};
    StatsWork w = {0};
    ProbeRunner r = {0};
    int rc = stats_alloc(out, &pc, &differ, &last, H, c->vocab_size, e) ? -1 : slm_probe_runner_init(&r, m, 1024, e);
    for (int i = 0; !rc && i < n; i++) {
        const int32_t *ids = slm_story_ids(s, idx[i], &buf, e);
        int T = (int)story_len(s, idx[i]);
        rc = !ids || slm_probe_run(&r, ids, T, NULL, e) || work_fit(&w, T, c, e) ? -1 : 0;
        uint8_t *grown = rc ? NULL : xrealloc(far, (size_t)T, e);
        if (!rc && !grown) rc = -1;
        far = grown ? grown : far;
        if (rc) break;
        unit_rows(m, ids, T, w.unit_rows);
        for (int h = 0; h < H; h++) head_pairs(&r, &w, h, &pc[h], &pc[H + h], &differ[h]);
        for (int p = 0; p < T; p++) out->positions += p > r.acts.first_key[p];
        far_repeats(ids, T, eos, left_out, last, far, out);
    }
    if (!rc) out->pairs = (long long)pc[0].n;
    for (int h = 0; !rc && h < H; h++) {
        out->correlation[h] = pearson(&pc[h]);
        out->correlation_others[h] = pearson(&pc[H + h]);
        out->closest_not_largest[h] = out->positions ? (double)differ[h] / (double)out->positions : NAN;
    }
    free(w.unit_rows), free(w.query), free(w.key), free(w.key_len);
    free(pc), free(differ), free(last), free(far);
    slm_story_buf_free(&buf);
    slm_probe_runner_free(&r);
    if (rc) slm_stats_result_free(out);
    return rc;
}
