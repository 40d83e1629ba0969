/* The sampler: turns a position's logits into the next token. Apart from the
 * model, with its own seeded RNG. In order: the repeat penalty on the tokens
 * of the story's latest stretch, min-p's cut, temperature (0 = greedy),
 * top-k, top-p. Its settings are one struct, SamplerSettings, from every front
 * end to the sampler, and one table of parameters (params_sampling: names,
 * ranges, defaults, help) that the CLI's options, the server's fields and
 * Python's keywords are read with and the sampler checks them by. */
#ifndef STORYLM_SAMPLE_H
#define STORYLM_SAMPLE_H

#include <stdint.h>

#include "storylm/error.h"
#include "storylm/kernels.h"
#include "storylm/params.h"
#include "storylm/rng.h"

/* Temperatures below this (0 included) take the most likely token: below it
 * the draw is greedy in effect, and 1/T soon overflows float. */
#define SAMPLER_GREEDY_BELOW 1e-4f

/* Defaults (those of `storylm generate`, the server's /api/generate, the bench). */
#define SAMPLER_DEFAULT_TEMPERATURE 0.8
#define SAMPLER_DEFAULT_TOP_K 0
#define SAMPLER_DEFAULT_TOP_P 0.95
#define SAMPLER_DEFAULT_MIN_P 0.0
#define SAMPLER_DEFAULT_REPEAT_PENALTY 1.0 /* 1: off */
#define SAMPLER_DEFAULT_REPEAT_LAST_N 64
/* A default as text, for --help: SAMPLER_STR(SAMPLER_DEFAULT_TOP_P) is "0.95". */
#define SAMPLER_STR_(x) #x
#define SAMPLER_STR(x) SAMPLER_STR_(x)
/* Ranges accepted (inclusive): params_sampling's, for every front end. */
#define SAMPLER_MAX_TEMPERATURE 100
#define SAMPLER_WARN_TEMPERATURE 2 /* above it the text is mostly noise: the CLI warns */
#define SAMPLER_MAX_TOP_K 1000000
#define SAMPLER_MIN_TOP_P 1e-6
#define SAMPLER_MIN_REPEAT_PENALTY 0.01
#define SAMPLER_MAX_REPEAT_PENALTY 100
#define SAMPLER_MAX_REPEAT_LAST_N 1000000
#define SAMPLER_MAX_N_PROBS 20 /* alternatives reported a token */

/* As given (the sampler works in float: slm_sampler_init_with rounds them once). */
typedef struct SamplerSettings {
    double temperature;    /* 0: always the most likely token */
    int top_k;             /* 0: no limit */
    double top_p;          /* 1: no limit; else the smallest set holding this much probability */
    double min_p;          /* 0: none; else only tokens at least min_p times as likely as the
                            * likeliest (at temperature 1, after the penalty), as llama.cpp's */
    double repeat_penalty; /* 1: none; else llama.cpp's rule on each distinct token of the story's
                            * latest repeat_last_n: a positive logit divided by it, a negative one
                            * multiplied */
    int repeat_last_n;     /* 0: no penalty */
} SamplerSettings;

/* --temperature (-t), --top-k (-k), --top-p (-p), --min-p, --repeat-penalty,
 * --repeat-last-n over a SamplerSettings: the group a verb's table takes
 * (PARAM_GROUP_OF) wherever it samples. */
extern const ParamTable params_sampling;
/* params_sampling's defaults. */
SamplerSettings slm_sampler_settings_default(void);

typedef struct Sampler {
    int vocab_size;
    float temperature, top_p, min_p, repeat_penalty;
    int top_k, repeat_last_n;
    Rng rng;
    int floor_exp;    /* the last token's nucleus floor 2^-floor_exp (0: none yet), where the next search starts */
    float *probs;     /* (V + 16) scratch */
    float *penalized; /* (V) scratch: the logits after the repeat penalty */
    uint8_t *seen;    /* (V) scratch: tokens of the penalty's stretch, each once */
    struct Candidate {
        float prob;
        int32_t id;
    } * candidates;          /* (V) scratch */
    struct Candidate *spare; /* (V) scratch of the sort */
    float *kept_probs;       /* (V + 16) scratch: the tokens above a floor, in id order, */
    int32_t *kept_ids;       /* (V + 16) and their ids (a register's worth more: whole registers are stored) */
    int32_t *probs_ids;      /* (V + 16) scratch: the ids of probs' first entries, when those are a few tokens' */
    int borrowed;            /* 1: the scratch is another sampler's (slm_sampler_share_scratch), not freed here */
    Kernels kernels;         /* of its exponentials and sums (kernels.h): set after init (0, the build's default) */
} Sampler;
typedef struct Candidate Candidate;

/* Refuses settings out of params_sampling's ranges, the error naming the parameter. */
int slm_sampler_settings_check(const SamplerSettings *st, Error *e);
int slm_sampler_init_with(Sampler *s, int vocab_size, const SamplerSettings *st, uint64_t seed, Error *e);
/* No penalty, no min-p. */
int slm_sampler_init(Sampler *s, int vocab_size, float temperature, int top_k, float top_p, uint64_t seed, Error *e);
void slm_sampler_free(Sampler *s);
/* s draws in from's scratch (its own freed), for samplers that draw one
 * after the other on one thread, as a batch's samples do each step: no
 * scratch holds anything from one draw to the next, so every draw is the
 * same, and one sampler's few kilobytes a draw stay in the core's caches
 * where 64 samplers' each came back from beyond them every step. from
 * (same vocabulary) keeps the scratch: s must not draw after from is freed. */
void slm_sampler_share_scratch(Sampler *s, const Sampler *from);

/* logits (V) -> a token id. Ties in the greedy case go to the lowest id.
 * Never picks a NaN logit: logits that cannot be scaled by 1/temperature
 * (inf, NaN, or a spread that overflows) fall back to greedy over the finite
 * and infinite ones, and NaNs are passed over. No repeat penalty. */
int slm_sampler_sample(Sampler *s, const float *logits);
/* The same after the story so far, story (n) (the prompt's tokens and those
 * written; the last repeat_last_n of them get the repeat penalty). */
int slm_sampler_sample_story(Sampler *s, const float *logits, const int32_t *story, int n);

/* logits (V) -> log-probability of token chosen under the model's own
 * distribution (softmax at temperature 1, before any penalty or cut), and
 * the k most likely tokens, most likely first (ties: lower id): their ids
 * (k) and log-probabilities (k). k at most V: only min(k, V) are written.
 * Uses s's scratch; draws nothing. */
float slm_sampler_logprobs(Sampler *s, const float *logits, int chosen, int k, int32_t *top_ids, float *top_logprobs);

/* logits (V) -> probabilities (V), softmax at temperature 1. */
void slm_softmax_probs(const float *logits, int n, float *probs);

#endif
