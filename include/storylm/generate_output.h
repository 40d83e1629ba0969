/* What generate gives besides the model's tokens, for every front: the prompt
 * read from a file or a pipe, the stories of a ViewBatch printed in order as
 * they grow, and a finished run as JSON (docs/json.md). */
#ifndef STORYLM_GENERATE_OUTPUT_H
#define STORYLM_GENERATE_OUTPUT_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdio.h>

#include "storylm/error.h"
#include "storylm/views.h"

/* The whole of in (caller frees), named name in messages, one final
 * newline (as echo, a here document or an editor adds) dropped; a NUL byte
 * is refused. NULL with e set on error. */
char *slm_generate_read_prompt(FILE *in, const char *name, Error *e);

/* Runs vb, writing its stories to out: sample 0 as it grows, later ones
 * once the ones before are done, each under a "--- sample i of n ---" line
 * when there are several; flush: after every word (a pipe, a terminal). */
int slm_generate_print_batch(ViewBatch *vb, FILE *out, bool flush, Error *e);

/* What the JSON of a run holds besides the batch and its options. */
typedef struct GenerateRun {
    const char *prompt, *names_from; /* names_from: the stories the names came from, or NULL */
    PromptUnknown pu;                /* the prompt's [UNK] tokens */
    double seconds, cpu_seconds;     /* writing only, not loading */
} GenerateRun;

/* The finished batch vb as the JSON of storylm generate --json; NULL when
 * out of memory. */
cJSON *slm_generate_json(const ViewBatch *vb, const LoadedModel *lm, const ViewGenerateOptions *go,
                         const GenerateRun *run, Error *e);

#endif
