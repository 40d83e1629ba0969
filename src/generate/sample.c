/* The sampler: see include/storylm/sample.h. */
#include "storylm/sample.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "storylm/model.h"

int slm_sampler_init(Sampler *s, int vocab_size, float temperature, int top_k, float top_p, uint64_t seed, Error *e) {
    *s = (Sampler){.vocab_size = vocab_size, .temperature = temperature, .top_k = top_k, .top_p = top_p};
    if (!(temperature >= 0) || top_k < 0 || !(top_p > 0 && top_p <= 1))
        return FAIL(e, "use --temperature >= 0, --top-k >= 0, 0 < --top-p <= 1", "invalid sampling settings");
    slm_rng_seed(&s->rng, seed);
    s->probs = xmalloc((size_t)vocab_size * sizeof *s->probs, e);
    s->candidates = s->probs ? xmalloc((size_t)vocab_size * sizeof(Candidate), e) : NULL;
    s->spare = s->candidates ? xmalloc((size_t)vocab_size * sizeof(Candidate), e) : NULL;
    if (!s->spare) {
        slm_sampler_free(s);
        return -1;
    }
    return 0;
}

void slm_sampler_free(Sampler *s) {
    free(s->probs);
    free(s->candidates);
    free(s->spare);
    s->probs = NULL;
    s->candidates = NULL;
    s->spare = NULL;
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

/* Can logits / temperature be exponentiated without overflow or NaN? The
 * softmax subtracts the largest, so what matters is the spread: every scaled
 * logit finite and max - min (scaled) finite too, in double. */
static int scales_safely(const float *logits, int n, float inv) {
    float lo = INFINITY, hi = -INFINITY;
    for (int i = 0; i < n; i++) {
        if (!isfinite(logits[i])) return 0;
        lo = logits[i] < lo ? logits[i] : lo;
        hi = logits[i] > hi ? logits[i] : hi;
    }
    double big = fmax(fabs((double)hi), fabs((double)lo)), spread = (double)hi - (double)lo;
    return big * inv < FLT_MAX && spread * inv < FLT_MAX;
}

/* c (m) in id order -> highest probability first, ties by id: a stable radix
 * sort on the probabilities' bits (non-negative floats order as their bits),
 * 8 bits a pass, passes where every key has the same digit skipped. */
static void sort_by_prob_desc(Candidate *c, Candidate *spare, int m) {
    for (int shift = 0; shift < 32; shift += 8) {
        int count[257] = {0};
        for (int i = 0; i < m; i++) {
            uint32_t bits;
            memcpy(&bits, &c[i].prob, sizeof bits);
            count[((~bits) >> shift & 0xffu) + 1]++;
        }
        int same = 0;
        for (int d = 1; d <= 256; d++) same |= count[d] == m;
        if (same) continue;
        for (int d = 1; d <= 256; d++) count[d] += count[d - 1];
        for (int i = 0; i < m; i++) {
            uint32_t bits;
            memcpy(&bits, &c[i].prob, sizeof bits);
            spare[count[(~bits) >> shift & 0xffu]++] = c[i];
        }
        memcpy(c, spare, (size_t)m * sizeof *c);
    }
}

/* Probability held by the tokens at or above floor. */
static float mass_from(const float *probs, int n, float floor) {
    float mass = 0.0f;
#pragma omp simd reduction(+ : mass)
    for (int i = 0; i < n; i++) mass += probs[i] >= floor ? probs[i] : 0.0f;
    return mass;
}

/* A power of two such that the tokens at or above it hold at least top_p of
 * the mass (with a little room), found in five passes; 0 if none down to 2^-24. */
static float nucleus_floor(const float *probs, int n, float top_p) {
    if (mass_from(probs, n, 0x1p-24f) < top_p + 1e-3f) return 0.0f;
    int lo = 0, hi = 24; /* 2^-hi is enough, 2^-lo is not (nothing is above 1) */
    while (hi - lo > 1) {
        int mid = (lo + hi) / 2;
        if (mass_from(probs, n, ldexpf(1.0f, -mid)) >= top_p + 1e-3f) hi = mid;
        else lo = mid;
    }
    return ldexpf(1.0f, -hi);
}

/* Candidates at or above floor, most likely first; returns how many. */
static int candidates_from(Sampler *s, const float *probs, float floor) {
    int m = 0;
    for (int i = 0; i < s->vocab_size; i++) { /* without a branch: which tokens pass is hard to predict */
        s->candidates[m] = (Candidate){probs[i], i};
        m += probs[i] >= floor;
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

/* Draws from the top-k / top-p set of probs (V), renormalised: the most
 * likely tokens, highest first, until top_k of them or top_p of the mass.
 * Only the tokens above a floor that surely holds the set are sorted; the
 * draw is the same as sorting all of them. */
static int sample_truncated(Sampler *s, const float *probs) {
    int n = s->vocab_size;
    /* Tokens below this share cannot be in the top-p set (llama2.c's cut-off). */
    float cutoff = s->top_p < 1 ? (1.0f - s->top_p) / (float)(n - 1) : 0.0f;
    float floor = nucleus_floor(probs, n, s->top_p);
    int m = candidates_from(s, probs, floor > cutoff ? floor : cutoff);
    int keep = m ? nucleus_size(s, m, floor <= cutoff) : 0;
    if (m && !keep) keep = nucleus_size(s, m = candidates_from(s, probs, cutoff), 1);
    /* None above the cut-off: a top-p under 1/V on a flat distribution (its set is
     * the most likely token), or NaN probabilities from NaN or inf logits. */
    if (m == 0) return argmax(probs, n);
    const Candidate *c = s->candidates;
    double mass = 0;
    for (int i = 0; i < keep; i++) mass += c[i].prob;
    double r = slm_rng_uniform(&s->rng) * mass, acc = 0;
    for (int i = 0; i < keep; i++) {
        acc += c[i].prob;
        if (r < acc) return c[i].id;
    }
    return c[keep - 1].id;
}

int slm_sampler_sample(Sampler *s, const float *logits) {
    int n = s->vocab_size;
    /* At a temperature this low sampling is greedy anyway; and 1/T would
     * overflow (1e-38, 1e-45), turning every logit into inf and the softmax
     * into NaN. The same when the logits themselves are too spread to scale. */
    if (s->temperature < SAMPLER_GREEDY_BELOW) return argmax(logits, n);
    float inv = 1.0f / s->temperature;
    if (!scales_safely(logits, n, inv)) return argmax(logits, n);
    for (int i = 0; i < n; i++) s->probs[i] = logits[i] * inv;
    slm_softmax_probs(s->probs, n, s->probs);
    if (s->top_k == 0 && s->top_p >= 1) {
        double r = slm_rng_uniform(&s->rng), acc = 0;
        for (int i = 0; i < n; i++) {
            acc += s->probs[i];
            if (r < acc) return i;
        }
        return argmax(s->probs, n);
    }
    return sample_truncated(s, s->probs);
}
