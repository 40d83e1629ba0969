/* The sampler: turns a position's logits into the next token. Apart from the
 * model, with its own seeded RNG: temperature (0 = greedy), top-k, top-p. */
#ifndef STORYLM_SAMPLE_H
#define STORYLM_SAMPLE_H

#include <stdint.h>

#include "storylm/error.h"
#include "storylm/rng.h"

/* Temperatures below this (0 included) take the most likely token: below it
 * the draw is greedy in effect, and 1/T soon overflows float. */
#define SAMPLER_GREEDY_BELOW 1e-4f

typedef struct Sampler {
    int vocab_size;
    float temperature; /* 0: always the most likely token */
    int top_k;         /* 0: no limit */
    float top_p;       /* 1: no limit; else the smallest set holding this much probability */
    Rng rng;
    float *probs;      /* (V) scratch */
    struct Candidate { float prob; int32_t id; } *candidates; /* (V) scratch */
    struct Candidate *spare; /* (V) scratch of the sort */
} Sampler;
typedef struct Candidate Candidate;

int slm_sampler_init(Sampler *s, int vocab_size, float temperature, int top_k, float top_p, uint64_t seed, Error *e);
void slm_sampler_free(Sampler *s);

/* logits (V) -> a token id. Ties in the greedy case go to the lowest id.
 * Never picks a NaN logit: logits that cannot be scaled by 1/temperature
 * (inf, NaN, or a spread that overflows) fall back to greedy over the finite
 * and infinite ones, and NaNs are passed over. */
int slm_sampler_sample(Sampler *s, const float *logits);

/* logits (V) -> probabilities (V), softmax at temperature 1. */
void slm_softmax_probs(const float *logits, int n, float *probs);

#endif
