/* The work storylm bench times, one kind a call, each giving the JSON line
 * scripts/bench reads (docs/performance.md): training steps on a file of
 * token ids, generation from a model, encoding the lines of a text. The
 * threads are the caller's (slm_model_threads_setup). */
#ifndef STORYLM_BENCH_H
#define STORYLM_BENCH_H

#include <cjson/cJSON.h>
#include <stdbool.h>

#include "storylm/error.h"

typedef struct BenchOptions {
    int steps, tokens, threads, batch, first_batch, layers, samples, vocab_size;
    int given_variant; /* --layers, --position-scheme or --score given: else the architecture's own */
    bool tie;          /* --tie-embeddings (the transformer family's): W_U = W_E^T */
    const char *prompt, *pos, *score, *precision, *arch, *kernels; /* kernels: training's (kernels.h) */
} BenchOptions;

/* Called before each training step (done: the steps finished, untimed ones
 * included), so that a front can show life during long steps. */
typedef void (*BenchBeatFn)(void *ctx, int done);

/* o->steps training steps (forward, backward, Adam: storylm train's step) of a
 * fresh model on the stories of path (token ids, one story a line, as
 * storylm stories --ids prints), o->batch a step in file order from
 * o->first_batch, after 2 untimed steps. *line: {"command":"bench",
 * "work":"train", "tokens", "seconds", "cpu_seconds", "threads",
 * "parameters", "loss", "kernels", "precision"} (the caller deletes it, also
 * on error). */
int slm_bench_train(const char *path, const BenchOptions *o, BenchBeatFn beat, void *ctx, cJSON **line, Error *e);

/* [EOS], o->prompt, then o->tokens new tokens for each of o->samples
 * samples computed together, sampled with the sampler's defaults (sample i
 * seeded 1 + i), the products at o->precision; an [EOS] does not stop it.
 * *line: {"command":"bench", "work":"generate", "samples", "tokens",
 * "seconds", "cpu_seconds", "prompt_tokens", "precision"}. */
int slm_bench_generate(const char *path, const BenchOptions *o, cJSON **line, Error *e);

/* Every line of text_path encoded on its own with the vocabulary vocab_path. */
int slm_bench_encode(const char *vocab_path, const char *text_path, cJSON **line, Error *e);

#endif
