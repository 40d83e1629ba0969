/* What a front needs around a training run, built by the library so that
 * every front says the same: before the first step, the checks of the flags
 * and of every file the run will write, and the vocabulary learnt; when it
 * ends, the commands that sample and resume the model and the summary as
 * JSON (docs/json.md). */
#ifndef STORYLM_TRAIN_SUMMARY_H
#define STORYLM_TRAIN_SUMMARY_H

#include <cjson/cJSON.h>
#include <stdbool.h>

#include "storylm/error.h"
#include "storylm/outputs.h"
#include "storylm/stories.h"
#include "storylm/train.h"

/* Where the run went: its stories, vocabulary and the program that ran it. */
typedef struct TrainPlace {
    const char *program; /* as it was called (build/storylm), or "storylm" */
    const char *stories, *vocab_path;
    bool fine_tuned; /* the run fine-tunes the model vocab_path names (--from): its resume says --from */
    const Stories *s;
    int vocab_size, n_test;
} TrainPlace;

/* The command that samples the model (resume false) or the one that continues
 * the run (resume true), as one line to paste into a shell; the caller frees
 * it; NULL when out of memory. */
char *slm_train_command(const TrainPlace *pl, const TrainOptions *o, bool resume);

/* The final summary as JSON (docs/json.md); NULL when out of memory. */
/* x as a JSON number, or null when it is NaN or infinite (JSON has neither): a
 * training's losses before its first evaluation, or after a step gave NaN. */
cJSON *slm_json_number_or_null(double x);

cJSON *slm_train_summary_json(const TrainPlace *pl, const TrainOptions *o, const TrainResult *r);

/* Every file training writes, checked before the first step against the
 * inputs (the stories, an existing vocabulary), each other and what they
 * hold (outputs.h): without --resume, a model already in --out or beside it
 * is kept unless force. With --resume, --out is read and written on purpose.
 * Each is then claimed for the run (slm_outputs_claim) until the caller
 * releases c: a second run, of the CLI or a server, that would write one of
 * them is refused meanwhile (a snapshot is claimed as it is written). The
 * vocabulary (vocab_path; NULL when the caller sees to it) is one of them
 * when it is to be learnt, *learn_vocab (may be NULL) says. 0, or 1 when
 * another process holds one of the files, -1 on any other refusal. */
int slm_train_claim_outputs(const char *stories, const TrainOptions *o, const char *vocab_path, bool force,
                            OutputClaims *c, bool *learn_vocab, Error *e);

/* The architecture against the flags that are only for another (--score,
 * --position-scheme, --layers, --precision, the transformer's shape); the
 * message names the flag. layers: --layers as given; resume: a resume reads
 * the shape from its file. */
int slm_train_check_arch(const TrainOptions *o, int layers, bool resume, Error *e);

/* Learns a vocabulary of size pieces (0: as many as the words give, up to
 * 2,000) from the stories and saves it to vocab_path, never over a file that
 * appeared meanwhile; refuses a file of too few stories before writing
 * anything, and one of which a part was skipped as not UTF-8 unless
 * allow_skipped (slm_stories_check_skips; then *refused); cased: a cased
 * vocabulary (slm_vocab_train_text_until). *text: the vocabulary's text
 * (caller frees); *got: the pieces learnt. */
int slm_train_learn_vocab(const char *vocab_path, const char *stories_path, int size, bool cased, bool allow_skipped,
                          char **text, int *got, bool *refused, Error *e);

#endif
