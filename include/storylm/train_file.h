/* A whole training run from a stories file, as one call of the library:
 * the vocabulary read or learnt (--cased), the stories read and checked,
 * the held-out split, --from's model loaded, the schedule fitted to the
 * corpus, the run (or --resume's), the model saved, and the summary. The
 * command line (src/cli/cmd_train.c) and Python (src/api/pyapi_train.c)
 * are its callers; what it has to tell its user comes back through
 * callbacks, as text in the command line's words (the CLI prints it as it
 * is, Python says its flags as keywords) and as numbers (each step's
 * TrainProgress). */
#ifndef STORYLM_TRAIN_FILE_H
#define STORYLM_TRAIN_FILE_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>

#include "storylm/error.h"
#include "storylm/params.h"
#include "storylm/train.h"
#include "storylm/train_params.h"

typedef struct TrainCallbacks {
    TrainProgressFn progress; /* after each step (p->evaluated: after an evaluation); NULL: none */
    /* a message for the user, one or more lines without the last newline,
     * in the command line's words (the CLI's stderr lines); NULL: none */
    void (*say)(const char *text, void *ctx);
    TrainStopFn stop; /* polled between steps (train_options.h); NULL: never stopped from outside */
    /* just before the first step, with the schedule settled (o->steps); NULL: none */
    void (*begin)(const TrainOptions *o, void *ctx);
    void *ctx; /* given to each */
} TrainCallbacks;

/* What a run gives back. */
typedef struct TrainSummary {
    TrainResult r;
    cJSON *json;          /* the --json summary (docs/json.md); NULL on a rank other than 0 */
    char *sample_command; /* the shell commands that sample the model and resume the run (NULL unless */
    char *resume_command; /* interrupted); NULL on a rank other than 0 */
    bool fine_tuned_now;  /* --from's model was loaded by this run (not a resume of a fine-tuning) */
    bool refused;         /* it failed a check of the stories or vocabulary before training (the CLI's exit 2) */
} TrainSummary;

/* p filled with train's defaults as --help shows them: the table's, the
 * trainer's, threads (0: one per core) and the transformer's shape. */
void slm_train_params_init(TrainParams *p, int threads);

/* The names of p's --arch, --position-scheme, --score and --act into p->o,
 * the architecture's defaults where given (ParamsGiven of params_train's
 * list) sets none, and what --from implies (its model found as a file or a
 * shipped one's short name into from_buf, size bytes, which p->from and
 * p->vocab then point into). 0; -1 with e for a usage error (a flag that
 * does not fit the others); -2 with e when --from's model is not found. */
int slm_train_settle(TrainParams *p, const ParamsGiven *given, char *from_buf, size_t size, Error *e);

/* Trains as `storylm train` does with p (settled, p->vocab found; p->o's
 * threads set, the steps and evaluations fitted when not given), program
 * naming the commands of the summary ("storylm"). 0 with *out filled (free
 * it with slm_train_summary_free), or -1 with e (and out->refused). A stop
 * asked through cb->stop ends the run after a save (out->r.interrupted), or
 * with nothing saved when TRAIN_STOP_INTERACTIVE came in its first seconds
 * (out->r.nothing_saved). */
int slm_train_file(TrainParams *p, const char *program, const TrainCallbacks *cb, TrainSummary *out, Error *e);
void slm_train_summary_free(TrainSummary *s);

/* slm_train_file a slice of steps at a time (slm_train_steps), for a caller
 * that gets on with other work between slices (the static site's training
 * in a Web Worker): open (everything before the first step; *refused as
 * out->refused), steps until *done, end (the summary, as slm_train_file's),
 * free. slm_train_file is these, and any slicing gives the same bits. p and
 * cb must outlive the run; free it after a failed open or steps too. */
typedef struct TrainFileRun TrainFileRun;
int slm_train_file_open(TrainFileRun **out, TrainParams *p, const TrainCallbacks *cb, bool *refused, Error *e);
int slm_train_file_steps(TrainFileRun *f, int n, bool *done, Error *e);
int slm_train_file_end(TrainFileRun *f, const char *program, TrainSummary *out, Error *e);
void slm_train_file_free(TrainFileRun *f);
/* The stories the run reads (its held-out test stories: f's, valid until it is freed). */
const Stories *slm_train_file_stories(const TrainFileRun *f);

#endif
