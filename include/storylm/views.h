/* Views: the reports the probe verbs print with --json, built in one place
 * so that `storylm VERB --json` and the server's /api/VERB give the same
 * keys and the same numbers. Each fills a Report (report.h) from a session
 * (probe_session.h) and the view's parameters; the caller prints it or turns it
 * into JSON. Never prints.
 *
 * Files: view_text.c (a typed text run through the network; Tools 1 and 3,
 * the loss on a text), view_model.c (Tool 2, Secret 1), view_swap.c (Secret 2
 * on a typed story), view_generate.c (writing on, token by token),
 * view_tokens.c (the tokens of a text as JSON). */
#ifndef STORYLM_VIEWS_H
#define STORYLM_VIEWS_H

#include <cjson/cJSON.h>
#include <stdint.h>

#include "storylm/error.h"
#include "storylm/generate.h"
#include "storylm/probes.h"
#include "storylm/report.h"
#include "storylm/sample.h"
#include "storylm/loaded_model.h"
#include "storylm/params.h"
#include "storylm/probe_session.h"
#include "storylm/text.h"

/* A typed text run through the network: ids = [EOS] + the text's tokens (T);
 * pos is the position asked for (negative from the end), resolved and checked. */
typedef struct ViewText {
    IntVec ids;
    ProbeRunner runner;
    int pos;
} ViewText;

/* How slm_view_text_run runs the text (bits). */
enum {
    VIEW_RUN_PREFIX = 1, /* ids[0..pos] only: what position pos sees is all a causal network needs */
    VIEW_RUN_HEADS = 2   /* up to the hidden layer, no logits (slm_model_forward_heads): the attention view */
};
/* Encodes text, checks pos, runs ids[0..pos] (VIEW_RUN_PREFIX) or all of
 * them with ps's ablation; how: 0 or VIEW_RUN_* bits. */
int slm_view_text_run(ViewText *vt, const ProbeSession *ps, const char *text, int pos, int how, Error *e);
/* Resolves and checks pos (negative: from the end) into vt->pos. A run of
 * the whole text serves every position: the server keeps such runs and
 * gives each request a copy with its own pos. */
int slm_view_text_at(ViewText *vt, int pos, Error *e);
void slm_view_text_free(ViewText *vt);

/* A view's head (its parameter "head") and layer L (from 1) against c
 * (NULL: the form alone, before the model is loaded) into *out_layer and
 * *out_head: a plain "H" is layer L's, "L:H" names its own layer (a layer
 * other than 1 must agree); with all, NULL and "-1" are every head
 * (*out_head -1). Errors name the parameter (head_list.h). */
int slm_view_head(const ModelConfig *c, const char *head, int layer, int all, int *out_layer, int *out_head, Error *e);

/* Tool 1 (attend): the tokens, and every key position vt->pos reads with
 * head (-1: all), nearest first. */
void slm_view_attend(Report *r, const ProbeSession *ps, const ViewText *vt, int head);
/* The same for all heads at once, by position (attend --wide): one row a key
 * position, its token, distance and cosine once and each head's weight in a
 * column of its own (weight_0 ..), without dot, distance_score and score. A
 * tenth of the size of all heads' rows: what the page's all-heads view draws. */
void slm_view_attend_wide(Report *r, const ProbeSession *ps, const ViewText *vt);

/* Tool 3 (trace): position vt->pos of the run followed through the network
 * (trace runs the whole text, as the server does, so that both give the same
 * bits); t (caller frees with slm_trace_result_free) keeps the numbers. */
int slm_view_trace(Report *r, const ProbeSession *ps, const ViewText *vt, const char *text, int n_units, int n_guesses,
                   TraceResult *t, Error *e);

/* eval --text: loss, perplexity and accuracy over the text's predicted
 * positions (0..T-2, each predicting the next token of the text), and every
 * position's token, target, loss and rank; vt run whole. */
void slm_view_loss(Report *r, const ProbeSession *ps, const ViewText *vt, const char *text);
/* The loss per character of a text of bytes bytes that cost nats in all:
 * "characters", "loss_per_char" (nats) and "bits_per_char" (docs/json.md). */
void slm_view_loss_per_char(Report *r, double nats, long long bytes);

/* Tool 2 (distances): the heads' distance scores for distances 0..up_to. */
void slm_view_distances(Report *r, const ProbeSession *ps, int up_to);

/* Secret 1 (heads): the tables, then one call of slm_view_heads_add per model
 * (k: its index, from 0) on the held-out test stories of its session. */
typedef struct ViewHeads {
    ReportTable *heads, *tokens;
    int layers; /* the first model's: heads are named "L:H" when more than 1; every model must have as many */
} ViewHeads;
void slm_view_heads_begin(Report *r, const ProbeSession *ps, ViewHeads *vh);
int slm_view_heads_add(ViewHeads *vh, const ProbeSession *ps, int k, int top, HeadsResult *h, Error *e);
/* "step 1200 (path)" from a snapshot's name or the model's metadata. */
void slm_view_model_label(const ProbeSession *ps, char *buf, size_t size);

/* left_out (V) for far repeats (stats, repeats): the top most common tokens of
 * ps's training stories, or of its test stories when it has none (a file of
 * held-out stories only), names kept (slm_common_tokens). */
int slm_view_common_tokens(const ProbeSession *ps, int top, uint8_t *left_out, Error *e);

/* tokenize --json: [{"piece": .., "id": ..}, ...] (caller cJSON_Deletes); NULL when out of memory. */
cJSON *slm_view_tokens_json(const Tokenizer *t, const int32_t *ids, size_t n);

/* Writing on (generate). The text is the prompt as typed (case, spacing,
 * accents, newlines), then what the model wrote, decoded: sentence starts
 * get a capital, and so do the words that are names: those names knows
 * (slm_names_is_name), the words the prompt wrote with a capital where no
 * sentence starts, and at a sentence start those names never saw (invented
 * names). Without names (NULL) only the words the prompt wrote with a
 * capital get it back (slm_view_recapitalize). */
typedef struct ViewGenerateOptions {
    int max_tokens;
    SamplerSettings sampling; /* the sampler's settings, as every front end gives them (sample.h) */
    uint64_t seed;            /* of sample 0; sample i draws with seed + i */
    const char *const *stops; /* (n_stops) strings the text ends before: the first written ends the story */
    int n_stops;
    int logprobs;              /* keep each new token's log-probability (slm_view_generator_logprob), */
    int n_probs;               /* and its n_probs likeliest alternatives (0..SAMPLER_MAX_N_PROBS; a
                                * model of fewer tokens gives all of them: slm_view_generate_n_probs) */
    const NameList *names;     /* may be NULL; kept by the caller while the generator lives */
    int threads;               /* a ViewBatch's steps share its samples between this many (0, 1: the caller's) */
    Precision precision;       /* of the generator's products (slm_generator_batch_set_precision): FP32 by default */
    Kernels kernels;           /* the generator's and sampler's (slm_generator_batch_init_at): the build's default */
    const char *const *steers; /* (n_steers) --steer DIR:LATENT:SCALE: SAE latents added while generating */
    int n_steers;
} ViewGenerateOptions;
/* New tokens of one generation a request may ask for: the server bounds its work. */
#define GENERATE_SERVED_TOKENS 2000
/* The generator's own check of what it is handed, by params_generate: the
 * tokens, the sampler's settings, --n-probs, --precision, each stop string. */
int slm_view_generate_check(const ViewGenerateOptions *go, Error *e);
/* g's steps add each of specs[0..n) ("DIR:LATENT:SCALE": SCALE times the
 * decoder row of the SAE in DIR's LATENT, at the SAE's hook point of m);
 * errors name --steer. */
int slm_view_steer(GeneratorBatch *g, const Model *m, const char *const *specs, int n, Error *e);
/* params_generate's defaults (the sampler's, 200 tokens, FP32), seed 0, one thread. */
ViewGenerateOptions slm_view_generate_defaults(void);
/* The alternatives a token gets: go's n_probs, at most the vocabulary's size
 * (its JSON says this number; the generators keep this many). */
int slm_view_generate_n_probs(const ViewGenerateOptions *go, int vocab_size);

/* storylm generate's parameters, filled from params_generate by the command
 * line's options, /api/generate's fields and Python's keywords alike. */
typedef struct GenerateParams {
    ProbeOptions po;        /* --model, --ablate, --ablate-mode, --stories (po.mean_stories), --json, --threads */
    const char *prompt;     /* PROMPT ("-": standard input); a request's "prompt" */
    const char *file;       /* -f FILE: the prompt's file */
    ViewGenerateOptions go; /* --tokens, the sampler's settings, --n-probs, --precision */
    int seed;               /* -s: of the first sample; -1 draws one from the clock */
    StringList stops;       /* --stop */
    StringList steers;      /* --steer */
    int samples;
} GenerateParams;
/* generate's table: --model, -f, --tokens (max_tokens), the sampler's group,
 * --stop, --seed, --samples, --json, --n-probs, the ablation's group,
 * --stories, --threads, --precision, PROMPT. */
extern const ParamTable params_generate;
/* The same as the fields of a generate request: {"max_tokens", "temperature",
 * "top_k", "top_p", "min_p", "repeat_penalty", "repeat_last_n"} (caller
 * cJSON_Deletes; NULL when out of memory): the one place the page and the
 * Python package read the sampler's defaults from. */
cJSON *slm_view_generate_defaults_json(void);
/* Adds go's "max_tokens" .. "repeat_last_n" to j, in that order (what both the
 * defaults above and generate --json say of the sampler). */
void slm_view_generate_settings_json(cJSON *j, const ViewGenerateOptions *go);
/* One of a token's likeliest alternatives. */
typedef struct TokenAlternative {
    int32_t id;
    float logprob;
} TokenAlternative;
/* One story, one token at a time, so a caller can stream them (the server)
 * or stop; in a ViewBatch, one of its samples. */
typedef struct ViewGenerator {
    const LoadedModel *lm;
    const char *prompt; /* kept by the caller while the generator lives */
    const NameList *names;
    GeneratorBatch own;     /* alone: a batch of one */
    GeneratorBatch *shared; /* in a ViewBatch: its batch, and this story's sample there */
    int slot;
    Sampler smp;
    uint64_t seed;
    IntVec ids; /* the prompt's tokens, then the new ones */
    int prompt_tokens;
    const float *logits;    /* for the next token */
    int tokens, max_tokens; /* new tokens so far; at most */
    int finished;
    const char *stop_reason;  /* "end" (the story ended), "max_tokens" or "stop" (a stop string) */
    const char *const *stops; /* the options' stop strings (n_stops) */
    int n_stops;
    const char *stop; /* with "stop": the string written, and the text's bytes before it */
    size_t stop_at;
    int logprobs, n_probs;
    ByteVec logprob;      /* (tokens) float: each new token's log-probability (with logprobs) */
    ByteVec alternatives; /* (tokens, n_probs) TokenAlternative */
    size_t shown;         /* bytes of the text streamed so far (slm_view_batch_run), */
    size_t settled;       /* and the ids it was made of */
} ViewGenerator;
/* Feeds [EOS] and the prompt's tokens. */
int slm_view_generator_init(ViewGenerator *vg, const LoadedModel *lm, const Ablation *ab, const char *prompt,
                            const ViewGenerateOptions *go, Error *e);
/* The same from the prompt's ids (each checked against the vocabulary);
 * prompt: their text (the story's text starts with it). */
int slm_view_generator_init_ids(ViewGenerator *vg, const LoadedModel *lm, const Ablation *ab, const char *prompt,
                                const IntVec *ids, const ViewGenerateOptions *go, Error *e);
/* 1: one more token (the last of vg->ids); 0: finished (vg->stop_reason); -1: error. */
int slm_view_generator_next(ViewGenerator *vg, Error *e);
/* The prompt and what was written, as the verb prints it (caller frees):
 * after a stop string, the text before it; before the end, without a tail
 * that may yet become a stop string. */
char *slm_view_generator_text(const ViewGenerator *vg, Error *e);
/* The text as far as it is settled (what generate streams: never taken
 * back by a token to come), cut as slm_view_generator_text cuts; all of it
 * once finished. Caller frees. */
char *slm_view_generator_settled_text(const ViewGenerator *vg, Error *e);
/* New token i's log-probability under the model (slm_sampler_logprobs), and
 * its n_probs alternatives; only with options' logprobs. */
float slm_view_generator_logprob(const ViewGenerator *vg, int i);
const TokenAlternative *slm_view_generator_alternatives(const ViewGenerator *vg, int i);
/* New token i as JSON: {"piece", "id"} and, with logprobs, "logprob" and
 * "top_logprobs" [{"piece", "id", "logprob"}] (n_probs of them); NULL when
 * out of memory. The same for every new token: an array. */
cJSON *slm_view_generator_token_json(const ViewGenerator *vg, int i);
cJSON *slm_view_tokens_logprobs_json(const ViewGenerator *vg);
/* The same for any ids: the prompt as typed, then ids[n_prompt..n) decoded
 * (ids[0..n_prompt) are the prompt's tokens), names (may be NULL) capitalised. */
char *slm_view_story_text(const Tokenizer *t, const char *prompt, const int32_t *ids, size_t n_prompt, size_t n,
                          const NameList *names, Error *e);
void slm_view_generator_free(ViewGenerator *vg);
/* All at once: *text (caller frees). */
int slm_view_generate(const LoadedModel *lm, const Ablation *ab, const char *prompt, const ViewGenerateOptions *go,
                      char **text, Error *e);
/* Words the prompt wrote with a capital get it back wherever they come again. */
void slm_view_recapitalize(char *text, const char *prompt);

/* n stories from one prompt, computed together: each step feeds every
 * unfinished sample's token in one pass over the weights (generate.h).
 * Sample i draws with seed go->seed + i: it writes what a batch of one
 * with that seed writes, bit for bit. */
typedef struct ViewBatch {
    GeneratorBatch gen;
    Workers workers; /* when threads > 1 */
    int has_workers;
    int n;
    ViewGenerator *samples; /* (n) */
    int *which;             /* (n) scratch of a step: the samples fed, */
    int32_t *next;          /* (n) and their tokens */
} ViewBatch;
int slm_view_batch_init(ViewBatch *vb, const LoadedModel *lm, const Ablation *ab, const char *prompt,
                        const ViewGenerateOptions *go, int n, Error *e);
/* Called with each new stretch of sample's text (text, len bytes), in order;
 * done: the sample is finished and this is its last call. Returns 0 to go
 * on, else that value stops slm_view_batch_run. */
typedef int (*ViewTextFn)(void *ctx, int sample, const char *text, size_t len, int done);
/* Writes until every sample is finished, calling fn (may be NULL) as the
 * text grows: first with the prompt, then a word at a time (a word is
 * shown once the next piece starts another: whether it is a name, and so
 * its capital, is known only then). Each sample's calls add up to its
 * slm_view_generator_text. 0, -1 on error, or what fn returned. */
int slm_view_batch_run(ViewBatch *vb, ViewTextFn fn, void *ctx, Error *e);
void slm_view_batch_free(ViewBatch *vb);

/* A prompt's tokens against the vocabulary: how many are [UNK], and the
 * characters it does not know (each once, as typed, ", " between them,
 * cut to fit chars (size)). */
typedef struct PromptUnknown {
    int tokens, unk;
    int n_chars;
} PromptUnknown;
int slm_view_prompt_unknown(const Tokenizer *t, const char *prompt, PromptUnknown *pu, char *chars, size_t size,
                            Error *e);
/* 1 when most of the prompt's tokens are [UNK] (worth a warning). */
int slm_view_prompt_mostly_unknown(const PromptUnknown *pu);

/* The names a generation with lm capitalises, learnt from the capitals of
 * every story (test ones too) of a file: stories when given, else the file
 * lm was trained on (its "data") when it is there, else data/stories.txt
 * here or in the source tree. The file's path goes into from (size), ""
 * when there is none (nl then stays empty: slm_names_is_name says no). The CLI
 * and the server find the same file, so they write the same text. */
int slm_view_generate_names(NameList *nl, const LoadedModel *lm, const char *stories, char *from, size_t size,
                            Error *e);

/* Secret 3 (ablate): loss and accuracy over the held-out test stories of
 * ps (and at the name positions of Secret 2), with ps's ablation, then each
 * single head switched off in turn (heads NULL), or the heads of the list
 * heads ("3,5", "1:3,2:5") together; mode zero or mean (ps->mean, or
 * made here). *table (may be NULL): the table of rows, for a drawing. */
int slm_view_ablate(Report *r, const ProbeSession *ps, const char *heads, AblationMode mode, ReportTable **table,
                    Error *e);

/* Secret 4 (pieces): heroes of the test stories renamed to each name of list
 * ("a,b"; NULL: the most common one-piece name and invented ones), their
 * pieces guessed at later mentions; on a model of several layers the two
 * lookups head by head. names and rows (max entries) keep the numbers;
 * returns how many names, or -1. */
int slm_view_pieces(Report *r, const ProbeSession *ps, const char *list, SwapName *names, PieceScore *rows, int max,
                    Error *e);

#endif
