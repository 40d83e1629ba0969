/* What several verbs share: threads, finding and loading a model, reading
 * stories with the model's vocabulary, head lists, printing progress. */
#ifndef STORYLM_CLI_COMMON_H
#define STORYLM_CLI_COMMON_H

#include <stdbool.h>
#include <stdint.h>

#include "storylm/error.h"
#include "storylm/model.h"
#include "storylm/safetensors.h"
#include "storylm/stories.h"
#include "storylm/tokenizer.h"

#define DEFAULT_MODEL_PATH "model.safetensors"
/* The model shipped in the source tree's models/ directory. */
#define SHIPPED_MODEL_NAME "tinystories.safetensors"

/* Sets the thread count (model_threads_setup); n = 0: every core. Returns n used. */
int cli_set_threads(int n);
/* One thread per core (at most 256, what --threads allows): the default of --threads. */
int cli_default_threads(void);

/* The model a command should use: the given path, else ./model.safetensors,
 * else the shipped model (../models/ or models/ beside the executable).
 * Says which on stderr when it was not given (the shipped one even when quiet). */
const char *cli_model_path(const char *given, bool quiet);

/* A model file with its tokenizer (from the vocabulary stored in it). */
typedef struct LoadedModel {
    Model model;
    Tokenizer tokenizer;
    Metadata meta;
    char *vocab;
    const char *path;
} LoadedModel;

int cli_load_model(LoadedModel *lm, const char *path, Error *e);
void cli_free_model(LoadedModel *lm);

/* "3,5" -> bit mask of heads; fails for numbers outside 0..n_heads-1. */
int cli_parse_heads(const char *list, int n_heads, uint32_t *mask, Error *e);

/* Prints e and returns the exit code for a failure (1). */
int cli_fail(const Error *e);

/* Seconds as "1h02m", "3m05s" or "12s". */
void cli_format_duration(double s, char *buf, int size);

#endif
