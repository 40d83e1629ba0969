/* The OpenAI-compatible routes beside /api/...: /v1/models,
 * /v1/completions (openai.c, its choices in openai_complete.c, streamed in
 * openai_stream.c), /v1/chat/completions (refused: a story model has no
 * chat format), llama.cpp's /tokenize and /detokenize, and /metrics
 * (metrics.c). Errors in OpenAI's shape: {"error": {"message", "type",
 * "param", "code"}}. */
#ifndef STORYLM_SERVER_OPENAI_H
#define STORYLM_SERVER_OPENAI_H

#include <stdbool.h>

#include "server_internal.h"
#include "storylm/sample.h"

#define OPENAI_MAX_CHOICES 16 /* prompts times n in one request: bounds its work as /api/batch's 16 views */
#define OPENAI_MAX_STOPS 16
#define OPENAI_MAX_STOP_BYTES 256

/* A /v1/completions request's fields, read with completion_table. */
typedef struct CompletionFields {
    ProbeOptions po;    /* "model", "ablate", "ablate_mode" */
    const char *prompt; /* PARAM_SERVED: a string, strings, ids or lists of ids (openai_prompts) */
    int max_tokens;
    SamplerSettings sampling; /* temperature, top_p; top_k, min_p, repeat_penalty, repeat_last_n */
    int n, seed, logprobs;    /* seed -1: from the clock; logprobs: with logprobs_given */
    StringList stop;
    bool stream, echo;
    const char *user; /* taken, not used */
    bool logprobs_given;
} CompletionFields;

/* One prompt: its text (the story's text starts with it) and its ids (no [EOS]). */
typedef struct Prompt {
    char *text;
    IntVec ids;
} Prompt;

/* What a completion needs besides the body (which the stream outlives): the
 * model held, the request's ablation, prompts, stops, settings. */
typedef struct Completion {
    Server *s;
    ModelEntry *entry; /* held: cache_release */
    Ablation ab;
    char model[PATH_MAX]; /* as the request named it (or the default) */
    Prompt *prompts;
    int n_prompts, n, max_tokens, logprobs; /* logprobs -1: none */
    bool echo;
    char *stops[OPENAI_MAX_STOPS];
    int n_stops;
    ViewGenerateOptions go;
    uint64_t seed;
    char id[48];
    long long created;
} Completion;

void completion_close(Completion *c);
/* Choice k's generator (prompt k / n, seed + k % n), initialised. */
int completion_generator(const Completion *c, int k, ViewGenerator *vg, Error *e);
/* Prompt p's echo: its tokens' log-probabilities (the first null), top
 * alternatives and offsets, appended to the legacy logprobs object lp. */
int completion_prompt_logprobs(const Completion *c, int p, cJSON *lp, Error *e);
/* Generated token i of vg into lp (offset: in the choice's text, echo counted). */
int completion_token_logprobs(const Completion *c, const ViewGenerator *vg, int i, size_t base, cJSON *lp, Error *e);
/* When vg's story ended ([EOS] drawn), that token too (offset: the text's
 * end): the legacy shape lists the end-of-text token, and a client that drops
 * the last listed token as the new one (lm-evaluation-harness) must not drop
 * a prompt's. */
int completion_end_logprobs(ViewGenerator *vg, size_t offset, cJSON *lp, Error *e);
/* {"tokens": [], "token_logprobs": [], "top_logprobs": [], "text_offset": []} */
cJSON *completion_logprobs_new(void);
/* "stop" or "length". */
const char *completion_finish(const ViewGenerator *vg);
/* The answer's envelope: {"id", "object", "created", "model", "choices": []}. */
cJSON *completion_envelope(const Completion *c);
/* POST /v1/completions with "stream": true (openai_stream.c): takes c. */
int openai_stream(Completion *c, Reply *r);

/* ---- errors ---- */

/* {"error": {"message", "type", "param", "code"}} with status. */
int openai_error(Reply *r, int status, const char *message, const char *param, const char *code);

/* ---- metrics (metrics.c) ---- */

typedef struct Metrics Metrics;
int metrics_create(Metrics **out, Error *e);
void metrics_free(Metrics *m);
/* One answered request: its URL (labelled by route), status and seconds. */
void metrics_request(Metrics *m, const char *url, int status, double seconds);
void metrics_tokens(Metrics *m, long long prompt_tokens, long long generated_tokens);
/* The Prometheus text exposition (caller frees), NULL when out of memory. */
char *metrics_text(Metrics *m);

#endif
