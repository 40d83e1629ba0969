/* A vocabulary file (vocab.txt) made for storylm vocab and any other front:
 * learnt from a stories file, or exported from a model, never written over
 * its input, a model or stories (outputs.h); and what was done, as the
 * verb's summary lines or its JSON (docs/json.md). */
#ifndef STORYLM_VOCAB_FILE_H
#define STORYLM_VOCAB_FILE_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdio.h>

#include "storylm/error.h"
#include "storylm/loaded_model.h"
#include "storylm/vocab_train.h"

/* Learns a vocabulary of exactly size pieces (cased: keeping capitals and
 * accents) from the stories file and saves it to output (force: over a file
 * that is no input; NULL: not saved, the caller writes v where it wants). v and st are the caller's to free
 * (slm_vocab_free), also on error. */
int slm_vocab_learn_file(const char *stories, const char *output, int size, bool cased, bool force, Vocab *v,
                         VocabStats *st, Error *e);
/* The learning's summary, lines for a person (on out) or JSON (NULL when out
 * of memory); size: the pieces learnt; seconds: the time it took. */
void slm_vocab_summary_print(FILE *out, const char *path, const char *output, int size, const VocabStats *st,
                             double seconds);
cJSON *slm_vocab_summary_json(const char *path, const char *output, int size, const VocabStats *st, double seconds);

/* Writes the vocabulary stored in model_path to output, loading the model
 * into lm (the caller frees it with slm_loaded_model_free, also on error). */
int slm_vocab_export(const char *model_path, const char *output, bool force, LoadedModel *lm, Error *e);
/* The export as JSON: {"command":"vocab","model":{..},"vocab":{"file","size"}}. */
cJSON *slm_vocab_export_json(const LoadedModel *lm, const char *model_path, const char *output);

#endif
