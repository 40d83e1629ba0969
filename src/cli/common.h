/* What several verbs share: threads, finding and loading a model, reading
 * stories with the model's vocabulary, head lists, printing progress. */
#ifndef STORYLM_CLI_COMMON_H
#define STORYLM_CLI_COMMON_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdint.h>

#include "storylm/error.h"
#include "storylm/model.h"
#include "storylm/safetensors.h"
#include "storylm/data_files.h"
#include "storylm/loaded_model.h" /* LoadedModel, slm_loaded_model_load: in the library */
#include "storylm/report_header.h"
#include "storylm/stories.h"
#include "storylm/tokenizer.h"

/* Sets the thread count (slm_model_threads_setup); n = 0: every core. Returns n used. */
int cli_set_threads(int n);
/* One thread per core (at most 256, what --threads allows): the default of --threads. */
int cli_default_threads(void);

/* The model a command should use: the given path, else ./model.safetensors,
 * else the shipped model (../models/ or models/ beside the executable).
 * Says which on stderr when it was not given (the shipped one even when quiet). */
const char *cli_model_path(const char *given, bool quiet);
/* The vocabulary file --vocab names (slm_data_vocab_path: "shipped", or the
 * guide's models/vocab.txt from any folder, is the shipped one, said on
 * stderr); given itself otherwise, NULL (e set) when "shipped" is not found. */
const char *cli_vocab_path(const char *given, Error *e);

/* Prints e and returns the exit code for a failure (1). */
int cli_fail(const Error *e);

/* Prints j on stdout and deletes it; -1 with e set when it could not be printed. */
int cli_json_print(cJSON *j, Error *e);

/* Seconds as "1h02m", "3m05s" or "12s". */
void cli_format_duration(double s, char *buf, int size);
/* x as the shortest decimal that reads back as exactly x ("0.1", not "0.10000000000000001"). */
void cli_format_exact(double x, char *buf, int size);

#endif
