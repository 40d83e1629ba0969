/* The sampler: see include/storylm/sample.h. */
#include "storylm/sample.h"

#include <float.h>
#include <math.h>
#ifdef __AVX512F__
#include <immintrin.h>
#endif
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "storylm/model.h"

static const Param sampling_params[] = {
    {.name = "temperature",
     .short_name = 't',
     .type = PARAM_DOUBLE,
     .offset = offsetof(SamplerSettings, temperature),
     .meta = "T",
     .help = "sampling temperature (also --temp); 0 (or below 1e-4) = greedy; -t is not threads",
     .min = 0,
     .max = SAMPLER_MAX_TEMPERATURE,
     .def = SAMPLER_DEFAULT_TEMPERATURE},
    {.name = "top-k",
     .short_name = 'k',
     .type = PARAM_INT,
     .offset = offsetof(SamplerSettings, top_k),
     .meta = "K",
     .help = "sample among the K most likely (0 = all)",
     .min = 0,
     .max = SAMPLER_MAX_TOP_K,
     .def = SAMPLER_DEFAULT_TOP_K},
    {.name = "top-p",
     .short_name = 'p',
     .type = PARAM_DOUBLE,
     .offset = offsetof(SamplerSettings, top_p),
     .meta = "P",
     .help = "sample among the most likely holding P of the probability",
     .min = SAMPLER_MIN_TOP_P,
     .max = 1,
     .def = SAMPLER_DEFAULT_TOP_P},
    {.name = "min-p",
     .type = PARAM_DOUBLE,
     .offset = offsetof(SamplerSettings, min_p),
     .meta = "P",
     .help = "drop tokens less than P times as likely as the likeliest (0 = none)",
     .min = 0,
     .max = 1,
     .def = SAMPLER_DEFAULT_MIN_P},
    {.name = "repeat-penalty",
     .type = PARAM_DOUBLE,
     .offset = offsetof(SamplerSettings, repeat_penalty),
     .meta = "R",
     .help = "penalty of the tokens of the last --repeat-last-n (1 = none; llama.cpp's rule)",
     .min = SAMPLER_MIN_REPEAT_PENALTY,
     .max = SAMPLER_MAX_REPEAT_PENALTY,
     .def = SAMPLER_DEFAULT_REPEAT_PENALTY},
    {.name = "repeat-last-n",
     .type = PARAM_INT,
     .offset = offsetof(SamplerSettings, repeat_last_n),
     .meta = "N",
     .help = "tokens the repeat penalty looks back over",
     .min = 0,
     .max = SAMPLER_MAX_REPEAT_LAST_N,
     .def = SAMPLER_DEFAULT_REPEAT_LAST_N},
};
const ParamTable params_sampling = {"sampling", sampling_params, PARAMS_COUNT(sampling_params)};

SamplerSettings slm_sampler_settings_default(void) {
    SamplerSettings st;
    slm_params_init(&params_sampling, &st);
    return st;
}

int slm_sampler_settings_check(const SamplerSettings *st, Error *e) {
    return slm_params_check(&params_sampling, st, PARAM_FROM_CLI, e);
}

int slm_sampler_init_with(Sampler *s, int vocab_size, const SamplerSettings *st, uint64_t seed, Error *e) {
    *s = (Sampler){.vocab_size = vocab_size,
                   .temperature = (float)st->temperature,
                   .top_k = st->top_k,
                   .top_p = (float)st->top_p,
                   .min_p = (float)st->min_p,
                   .repeat_penalty = (float)st->repeat_penalty,
                   .repeat_last_n = st->repeat_last_n};
    if (slm_sampler_settings_check(st, e)) return -1;
    slm_rng_seed(&s->rng, seed);
    s->probs = xmalloc(((size_t)vocab_size + 16) * sizeof *s->probs, e);
    s->penalized = s->probs ? xmalloc((size_t)vocab_size * sizeof *s->penalized, e) : NULL;
    s->seen = s->penalized ? xcalloc((size_t)vocab_size, 1, e) : NULL;
    s->candidates = s->seen ? xmalloc((size_t)vocab_size * sizeof(Candidate), e) : NULL;
    s->spare = s->candidates ? xmalloc((size_t)vocab_size * sizeof(Candidate), e) : NULL;
    s->kept_probs = s->spare ? xmalloc(((size_t)vocab_size + 16) * sizeof(float), e) : NULL;
    s->kept_ids = s->kept_probs ? xmalloc(((size_t)vocab_size + 16) * sizeof(int32_t), e) : NULL;
    s->probs_ids = s->kept_ids ? xmalloc(((size_t)vocab_size + 16) * sizeof(int32_t), e) : NULL;
    if (!s->probs_ids) {
        slm_sampler_free(s);
        return -1;
    }
    return 0;
}

int slm_sampler_init(Sampler *s, int vocab_size, float temperature, int top_k, float top_p, uint64_t seed, Error *e) {
    SamplerSettings st = {.temperature = temperature,
                          .top_k = top_k,
                          .top_p = top_p,
                          .min_p = 0,
                          .repeat_penalty = 1,
                          .repeat_last_n = 0};
    return slm_sampler_init_with(s, vocab_size, &st, seed, e);
}

void slm_sampler_free(Sampler *s) {
    if (!s->borrowed) { /* another sampler's scratch is only forgotten */
        free(s->probs);
        free(s->penalized);
        free(s->seen);
        free(s->candidates);
        free(s->spare);
        free(s->kept_probs);
        free(s->kept_ids);
        free(s->probs_ids);
    }
    s->probs = s->penalized = s->kept_probs = NULL;
    s->seen = NULL;
    s->candidates = s->spare = NULL;
    s->kept_ids = s->probs_ids = NULL;
    s->borrowed = 0;
}

void slm_sampler_share_scratch(Sampler *s, const Sampler *from) {
    if (s == from || s->probs == from->probs) return;
    slm_sampler_free(s);
    s->probs = from->probs, s->penalized = from->penalized, s->seen = from->seen;
    s->candidates = from->candidates, s->spare = from->spare;
    s->kept_probs = from->kept_probs, s->kept_ids = from->kept_ids, s->probs_ids = from->probs_ids;
    s->borrowed = 1;
}

void slm_softmax_probs(const float *logits, int n, float *probs) {
    if (probs != logits) memcpy(probs, logits, (size_t)n * sizeof(float));
    slm_softmax_inplace(probs, n); /* vectorized exp: a token's sampling is a few microseconds */
}

/* The first largest of x (n), NaNs passed over (0 if every one is NaN). */
static int argmax(const float *x, int n) {
    int best = 0;
    while (best < n - 1 && isnan(x[best])) best++;
    for (int i = best + 1; i < n; i++)
        if (x[i] > x[best]) best = i;
    return best;
}

/* Whether logits (n) divided by the temperature (times inv) can be
 * exponentiated without overflow or NaN: the softmax subtracts the largest,
 * so what matters is the spread: every scaled logit finite and max - min
 * (scaled) finite too, in double. Returns 0 when they cannot; else 1 with
 * *largest the largest scaled logit (max(x) times inv: rounding keeps the
 * order, so it is the largest of the products). It only reads them: the
 * next pass reads them again from the first-level cache, where a scaled
 * copy written for each of many samples went beyond it. */
static int scalable(const float *logits, int n, float inv, float *largest) {
    float lo = INFINITY, hi = -INFINITY, poison = 0.0f;
    /* one vectorised pass: x * 0 is NaN exactly when x is inf or NaN */
#pragma omp simd reduction(min : lo) reduction(max : hi) reduction(+ : poison)
    for (int i = 0; i < n; i++) {
        lo = logits[i] < lo ? logits[i] : lo;
        hi = logits[i] > hi ? logits[i] : hi;
        poison += logits[i] * 0.0f;
    }
    if (poison != poison) return 0;
    double big = fmax(fabs((double)hi), fabs((double)lo)), spread = (double)hi - (double)lo;
    *largest = hi * inv;
    return big * inv < FLT_MAX && spread * inv < FLT_MAX;
}

/* The sort key of a probability: its bits inverted (non-negative floats
 * order as their bits), so that the most likely comes first. */
static uint32_t sort_key(float prob) {
    uint32_t bits;
    memcpy(&bits, &prob, sizeof bits);
    return ~bits;
}

#ifdef __AVX512F__
/* Candidates rank_sort takes: 4 registers of probabilities. */
#define RANK_SORT_MAX 64
_Static_assert(sizeof(Candidate) == 8 && offsetof(Candidate, prob) == 0, "rank_sort reads a probability every 8 bytes");

/* c (m <= RANK_SORT_MAX) in id order -> highest probability first, ties by
 * id, through spare (m): each candidate's place counted in registers (those
 * more likely, and those as likely before it), no branch on the
 * probabilities. Insertion, which it replaces here, branches on each
 * comparison, and 64 samples' candidates change from one draw to the next,
 * too often for the branch predictor. The same order as a stable sort. */
static void rank_sort(Candidate *c, Candidate *spare, int m) {
    __m512 p[RANK_SORT_MAX / 16];
    const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    int nv = (m + 15) / 16;
    for (int v = 0; v < nv; v++) { /* the probabilities of c[16 v ..] in one register, -1 (below all) past m */
        int live = m - 16 * v < 16 ? m - 16 * v : 16;
        __mmask16 lo = (__mmask16)((1u << (2 * live < 16 ? 2 * live : 16)) - 1),
                  hi = (__mmask16)((1u << (2 * live > 16 ? 2 * live - 16 : 0)) - 1);
        const float *f = &c[16 * v].prob;
        __m512 a = _mm512_maskz_loadu_ps(lo, f), b = _mm512_maskz_loadu_ps(hi, f + 16);
        p[v] = _mm512_mask_mov_ps(_mm512_set1_ps(-1.0f), (__mmask16)((1u << live) - 1),
                                  _mm512_permutex2var_ps(a, even, b));
    }
    for (int i = 0; i < m; i++) {
        __m512 x = _mm512_set1_ps(c[i].prob);
        int rank = 0;
        for (int v = 0; v < nv; v++) {
            int d = i - 16 * v; /* lanes before i in register v */
            __mmask16 before = (__mmask16)((1u << (d < 0 ? 0 : d > 16 ? 16 : d)) - 1);
            rank += __builtin_popcount(_mm512_cmp_ps_mask(p[v], x, _CMP_GT_OQ)) +
                    __builtin_popcount(_mm512_mask_cmp_ps_mask(before, p[v], x, _CMP_EQ_OQ));
        }
        spare[rank] = c[i];
    }
    memcpy(c, spare, (size_t)m * sizeof *c);
}
#endif

/* c (m) in id order -> highest probability first, ties by id: a stable radix
 * sort on sort_key, 8 bits a pass, the four digits counted in one read,
 * passes where every key has the same digit skipped, the two buffers taking
 * turns; up to 64 candidates by insertion instead (also stable, so the same
 * order): the radix sort's counts (4 KB to clear, 1,024 bins to sum) cost
 * more than that, and a token's candidates are mostly a few dozen; with
 * AVX-512 by rank_sort, the same order without a branch a comparison. */
static void sort_by_prob_desc(Candidate *c, Candidate *spare, int m) {
#ifdef __AVX512F__
    if (m <= RANK_SORT_MAX) {
        rank_sort(c, spare, m);
        return;
    }
#endif
    if (m <= 64) {
        for (int i = 1; i < m; i++) {
            Candidate x = c[i];
            int j = i;
            for (; j > 0 && c[j - 1].prob < x.prob; j--) c[j] = c[j - 1];
            c[j] = x;
        }
        return;
    }
    int count[4][257] = {{0}};
    for (int i = 0; i < m; i++) {
        uint32_t key = sort_key(c[i].prob);
        for (int d = 0; d < 4; d++) count[d][(key >> (8 * d) & 0xffu) + 1]++;
    }
    Candidate *from = c, *to = spare;
    for (int d = 0; d < 4; d++) {
        int same = 0, *n = count[d];
        for (int b = 1; b <= 256; b++) same |= n[b] == m;
        if (same) continue;
        for (int b = 1; b <= 256; b++) n[b] += n[b - 1];
        for (int i = 0; i < m; i++) to[n[sort_key(from[i].prob) >> (8 * d) & 0xffu]++] = from[i];
        Candidate *t = from;
        from = to, to = t;
    }
    if (from != c) memcpy(c, from, (size_t)m * sizeof *c);
}

/* Probability held by the tokens at or above floor. */
static float mass_from(const float *probs, int n, float floor) {
    float mass = 0.0f;
#pragma omp simd reduction(+ : mass)
    for (int i = 0; i < n; i++) mass += probs[i] >= floor ? probs[i] : 0.0f;
    return mass;
}

static int enough_from(const float *probs, int n, int e, float target) {
    return mass_from(probs, n, ldexpf(1.0f, -e)) >= target;
}

/* A power of two 2^-e such that the tokens of probs (n) at or above it hold
 * at least top_p of the mass (with a little room) and those above 2^-(e-1)
 * do not, or 0 if none down to 2^-24. The search starts at the last token's
 * e (*last: the next token's distribution is mostly much like it), so two
 * passes usually find it; a binary search otherwise. Which floor is found
 * changes only how many candidates are sorted, never the draw; so probs may
 * be only the tokens above the cut-off (the floor found is then 0 where it
 * would be below it: the candidates are the same). */
static float nucleus_floor(const float *probs, int n, float top_p, int *last) {
    float target = top_p + 1e-3f;
    if (!enough_from(probs, n, 24, target)) return 0.0f;
    int lo = 0, hi = 24; /* 2^-hi is enough, 2^-lo is not (nothing is above 1) */
    if (*last > 0 && *last < 24) {
        if (enough_from(probs, n, *last, target)) {
            hi = *last;
            if (!enough_from(probs, n, hi - 1, target)) lo = hi - 1;
        } else {
            lo = *last;
            if (enough_from(probs, n, lo + 1, target)) hi = lo + 1;
        }
    }
    while (hi - lo > 1) {
        int mid = (lo + hi) / 2;
        if (enough_from(probs, n, mid, target))
            hi = mid;
        else
            lo = mid;
    }
    *last = hi;
    return ldexpf(1.0f, -hi);
}

/* Candidates at or above floor, most likely first, from the k kept tokens
 * (those at or above the cut-off, in id order); returns how many. */
static int candidates_from(Sampler *s, int k, float floor) {
    int m = 0;
    for (int i = 0; i < k; i++) { /* without a branch: which tokens pass is hard to predict */
        s->candidates[m] = (Candidate){s->kept_probs[i], s->kept_ids[i]};
        m += s->kept_probs[i] >= floor;
    }
    sort_by_prob_desc(s->candidates, s->spare, m);
    return m;
}

/* How many of the m sorted candidates the top-k / top-p set keeps; 0 when the
 * m are too few to tell (only a part of the candidates was sorted). */
static int nucleus_size(const Sampler *s, int m, int complete) {
    int limit = s->top_k > 0 && m > s->top_k ? s->top_k : m;
    double total = 0;
    for (int i = 0; i < limit; i++) {
        total += s->candidates[i].prob;
        if (total >= s->top_p) return i + 1;
    }
    return complete || limit == s->top_k ? limit : 0;
}

/* probs (n, exponentials) times inv -> the probabilities, in place (the
 * bits of slm_softmax_max_inplace's last pass), and in the same pass the
 * tokens at or above keep (their probabilities and ids, in id order) into
 * s->kept_probs, s->kept_ids; returns how many. The floor's search and the
 * candidates then read those few (about 180 of 2,000 with the shipped model
 * at the defaults) instead of passes over all. probs are tokens 0..n-1, or
 * with ids those tokens (in order). */
static int normalize_and_keep(Sampler *s, float *probs, const int32_t *id_of, int n, float inv, float keep) {
    int k = 0, i = 0;
#ifdef __AVX512F__
    __m512 scale = _mm512_set1_ps(inv), at = _mm512_set1_ps(keep);
    __m512i ids = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    for (; i < n; i += 16, ids = _mm512_add_epi32(ids, _mm512_set1_epi32(16))) {
        __mmask16 live = n - i >= 16 ? 0xffff : (__mmask16)((1u << (n - i)) - 1);
        __m512 p = _mm512_mul_ps(_mm512_maskz_loadu_ps(live, probs + i), scale);
        __m512i id = id_of ? _mm512_maskz_loadu_epi32(live, id_of + i) : ids;
        _mm512_mask_storeu_ps(probs + i, live, p);
        __mmask16 kept = _mm512_mask_cmp_ps_mask(live, p, at, _CMP_GE_OQ);
        if (kept) { /* compacted in registers, stored whole: the buffers have 16 floats more */
            _mm512_storeu_ps(s->kept_probs + k, _mm512_maskz_compress_ps(kept, p));
            _mm512_storeu_si512(s->kept_ids + k, _mm512_maskz_compress_epi32(kept, id));
            k += __builtin_popcount(kept);
        }
    }
#else
    for (; i < n; i++) { /* without a branch, as candidates_from */
        float p = probs[i] *= inv;
        s->kept_probs[k] = p, s->kept_ids[k] = id_of ? id_of[i] : i;
        k += p >= keep;
    }
#endif
    return k;
}

/* Tokens below this share cannot be in the top-p set (llama2.c's cut-off). */
static float top_p_cutoff(const Sampler *s) {
    return s->top_p < 1 ? (1.0f - s->top_p) / (float)(s->vocab_size - 1) : 0.0f;
}

/* Draws from the top-k / top-p set of probs (n: exponentials, or
 * probabilities with inv 1) times inv, renormalised: the most likely tokens,
 * highest first, until top_k of them or top_p of the mass. probs are every
 * token's (ids NULL), or those of ids (in id order), which must hold every
 * token at or above top-p's cut-off and the likeliest. Only the tokens
 * above a floor that surely holds the set are sorted; the draw is the same
 * as sorting all of them. */
static int sample_truncated(Sampler *s, float *probs, const int32_t *ids, int n, float inv) {
    float cutoff = top_p_cutoff(s);
    int kept = normalize_and_keep(s, probs, ids, n, inv, cutoff);
    float floor = nucleus_floor(s->kept_probs, kept, s->top_p, &s->floor_exp);
    int m = candidates_from(s, kept, floor > cutoff ? floor : cutoff);
    int keep = m ? nucleus_size(s, m, floor <= cutoff) : 0;
    if (m && !keep) keep = nucleus_size(s, m = candidates_from(s, kept, cutoff), 1);
    /* None above the cut-off: a top-p under 1/V on a flat distribution (its set is
     * the most likely token), or NaN probabilities from NaN or inf logits. */
    if (m == 0) return ids ? ids[argmax(probs, n)] : argmax(probs, n);
    const Candidate *c = s->candidates;
    double mass = 0;
    for (int i = 0; i < keep; i++) mass += c[i].prob;
    double r = slm_rng_uniform(&s->rng) * mass, acc = 0;
    for (int i = 0; i < keep; i++) {
        acc += c[i].prob;
        if (r < acc) return c[i].id;
    }
    while (keep > 1 && c[keep - 1].prob == 0) keep--; /* rounding: never a token min-p cut */
    return c[keep - 1].id;
}

/* logits (V) -> s->penalized: llama.cpp's repeat penalty on each distinct
 * token of recent (n): a positive logit divided by the penalty, a negative
 * one multiplied (so a penalty above 1 always makes the token less likely). */
static const float *penalize(Sampler *s, const float *logits, const int32_t *recent, int n) {
    float pen = s->repeat_penalty;
    memcpy(s->penalized, logits, (size_t)s->vocab_size * sizeof(float));
    for (int i = 0; i < n; i++) {
        int32_t t = recent[i];
        if (t < 0 || t >= s->vocab_size || s->seen[t]) continue;
        s->seen[t] = 1;
        s->penalized[t] = logits[t] > 0 ? logits[t] / pen : logits[t] * pen;
    }
    for (int i = 0; i < n; i++)
        if (recent[i] >= 0 && recent[i] < s->vocab_size) s->seen[recent[i]] = 0;
    return s->penalized;
}

/* min-p's cut, as llama.cpp's: probs (V, from logits at the temperature)
 * keep only the tokens whose logit is within log(min_p) of the largest (at
 * temperature 1, as likely as min_p times the likeliest or more), and are
 * renormalised. */
static void min_p_cut(Sampler *s, const float *logits) {
    int n = s->vocab_size;
    float floor = logits[argmax(logits, n)] + logf(s->min_p), total = 0.0f;
    for (int i = 0; i < n; i++) {
        s->probs[i] = logits[i] >= floor ? s->probs[i] : 0.0f;
        total += s->probs[i];
    }
    float inv = 1.0f / total; /* the largest survives: total > 0 */
    for (int i = 0; i < n; i++) s->probs[i] *= inv;
}

int slm_sampler_sample_story(Sampler *s, const float *logits, const int32_t *story, int n_story) {
    int n = s->vocab_size;
    if (s->repeat_penalty != 1.0f && s->repeat_last_n > 0 && n_story > 0) {
        int m = n_story < s->repeat_last_n ? n_story : s->repeat_last_n;
        logits = penalize(s, logits, story + n_story - m, m);
    }
    /* At a temperature this low sampling is greedy anyway; and 1/T would
     * overflow (1e-38, 1e-45), turning every logit into inf and the softmax
     * into NaN. The same when the logits themselves are too spread to scale. */
    if (s->temperature < SAMPLER_GREEDY_BELOW) return argmax(logits, n);
    float inv = 1.0f / s->temperature, largest;
    if (!scalable(logits, n, inv, &largest)) return argmax(logits, n);
    if (s->min_p == 0 && (s->top_k > 0 || s->top_p < 1)) {
        /* The exponentials summed in one pass that keeps only those that may reach top-p's cut-off
         * (a probability is an exponential times 1 / sum, and the sum is 1 or more: the largest's is 1),
         * and the softmax's last pass is sample_truncated's first, over those few. */
        int k;
        float sum =
            slm_exp_sum_keep_at(s->kernels, logits, n, inv, largest, top_p_cutoff(s), s->probs, s->probs_ids, &k);
        return sample_truncated(s, s->probs, s->probs_ids, k, 1.0f / sum);
    }
#pragma omp simd
    for (int i = 0; i < n; i++) s->probs[i] = logits[i] * inv;
    slm_softmax_max_inplace_at(s->kernels, s->probs, n, largest); /* the largest known: a pass fewer */
    if (s->min_p > 0) min_p_cut(s, logits);
    if (s->top_k == 0 && s->top_p >= 1) {
        double r = slm_rng_uniform(&s->rng), acc = 0;
        for (int i = 0; i < n; i++) {
            acc += s->probs[i];
            if (r < acc) return i;
        }
        return argmax(s->probs, n);
    }
    return sample_truncated(s, s->probs, NULL, n, 1.0f); /* probabilities already: times 1 changes no bit */
}

int slm_sampler_sample(Sampler *s, const float *logits) { return slm_sampler_sample_story(s, logits, NULL, 0); }

float slm_sampler_logprobs(Sampler *s, const float *logits, int chosen, int k, int32_t *top_ids, float *top_logprobs) {
    int n = s->vocab_size;
    memcpy(s->probs, logits, (size_t)n * sizeof(float));
    float lse = slm_softmax_inplace_at(s->kernels, s->probs, n);
    /* the k largest in one pass, kept sorted by insertion; a later token
     * enters only when strictly larger, so ties keep the lower id first */
    int m = 0;
    k = k < n ? k : n;
    for (int i = 0; i < n && k > 0; i++) {
        if (isnan(logits[i]) || (m == k && !(logits[i] > logits[top_ids[m - 1]]))) continue;
        int at = m < k ? m++ : k - 1;
        while (at > 0 && logits[i] > logits[top_ids[at - 1]]) {
            top_ids[at] = top_ids[at - 1];
            at--;
        }
        top_ids[at] = i;
    }
    for (int j = 0; j < k; j++) {
        if (j >= m) top_ids[j] = 0;
        top_logprobs[j] = j < m ? logits[top_ids[j]] - lse : -INFINITY;
    }
    return logits[chosen] - lse;
}
