/* The sampler: see include/storylm/sample.h. */
#include "storylm/sample.h"

#include <math.h>
#include <stdlib.h>

int sampler_init(Sampler *s, int vocab_size, float temperature, int top_k, float top_p, uint64_t seed, Error *e) {
    *s = (Sampler){.vocab_size = vocab_size, .temperature = temperature, .top_k = top_k, .top_p = top_p};
    if (!(temperature >= 0) || top_k < 0 || !(top_p > 0 && top_p <= 1))
        return FAIL(e, "use --temperature >= 0, --top-k >= 0, 0 < --top-p <= 1", "invalid sampling settings");
    rng_seed(&s->rng, seed);
    s->probs = xmalloc((size_t)vocab_size * sizeof *s->probs, e);
    s->candidates = s->probs ? xmalloc((size_t)vocab_size * sizeof(Candidate), e) : NULL;
    if (!s->candidates) {
        sampler_free(s);
        return -1;
    }
    return 0;
}

void sampler_free(Sampler *s) {
    free(s->probs);
    free(s->candidates);
    s->probs = NULL;
    s->candidates = NULL;
}

void softmax_probs(const float *logits, int n, float *probs) {
    float max = logits[0];
    for (int i = 1; i < n; i++) max = logits[i] > max ? logits[i] : max;
    double sum = 0;
    for (int i = 0; i < n; i++) sum += probs[i] = expf(logits[i] - max);
    float inv = (float)(1.0 / sum);
    for (int i = 0; i < n; i++) probs[i] *= inv;
}

static int argmax(const float *x, int n) {
    int best = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[best]) best = i;
    return best;
}

/* Highest probability first; ties by id, so the order never depends on qsort. */
static int by_prob_desc(const void *a, const void *b) {
    const Candidate *x = a, *y = b;
    if (x->prob != y->prob) return x->prob > y->prob ? -1 : 1;
    return (x->id > y->id) - (x->id < y->id);
}

/* Draws from the top-k / top-p set of probs (V), renormalised. */
static int sample_truncated(Sampler *s, const float *probs) {
    int n = s->vocab_size, m = 0;
    Candidate *c = s->candidates;
    /* Tokens below this share cannot be in the top-p set (llama2.c's cut-off),
     * so only the few above it are sorted. */
    float cutoff = s->top_p < 1 ? (1.0f - s->top_p) / (float)(n - 1) : 0.0f;
    for (int i = 0; i < n; i++)
        if (probs[i] >= cutoff) c[m++] = (Candidate){probs[i], i};
    /* None above the cut-off: a top-p under 1/V on a flat distribution (its set is
     * the most likely token), or NaN probabilities from NaN or inf logits. */
    if (m == 0) return argmax(probs, n);
    qsort(c, (size_t)m, sizeof *c, by_prob_desc);
    if (s->top_k > 0 && m > s->top_k) m = s->top_k;
    double total = 0;
    int keep = m;
    for (int i = 0; i < m; i++) {
        total += c[i].prob;
        if (total >= s->top_p) {
            keep = i + 1;
            break;
        }
    }
    double mass = 0;
    for (int i = 0; i < keep; i++) mass += c[i].prob;
    double r = rng_uniform(&s->rng) * mass, acc = 0;
    for (int i = 0; i < keep; i++) {
        acc += c[i].prob;
        if (r < acc) return c[i].id;
    }
    return c[keep - 1].id;
}

int sampler_sample(Sampler *s, const float *logits) {
    int n = s->vocab_size;
    if (s->temperature == 0) return argmax(logits, n);
    for (int i = 0; i < n; i++) s->probs[i] = logits[i] / s->temperature;
    softmax_probs(s->probs, n, s->probs);
    if (s->top_k == 0 && s->top_p >= 1) {
        double r = rng_uniform(&s->rng), acc = 0;
        for (int i = 0; i < n; i++) {
            acc += s->probs[i];
            if (r < acc) return i;
        }
        return argmax(s->probs, n);
    }
    return sample_truncated(s, s->probs);
}
