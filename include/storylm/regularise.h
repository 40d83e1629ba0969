/* Training's regularisation, beside the trainer (src/train/train.c calls
 * these at a few fixed points): AdamW's weight decay, dropout's keys, an
 * exponential moving average of the weights, keeping the best model, and
 * rewriting a step's stories (--swap-names). Every one is off by default.
 *
 * Files, for --out OUT.safetensors:
 *   OUT.safetensors        the model (the raw weights; the average with ema_save)
 *   OUT.raw.safetensors    with ema_save: the raw weights and, beside them as
 *                          usual, their optimizer state (what --resume reads)
 *   OUT.ema.safetensors    without ema_save: the average, when --ema is given
 *   OUT.best.safetensors   with keep_best: the model at its lowest test loss
 * The average and best files carry the training record, "step" and
 * "trained_run" (the run's id), so a resume takes them only from its own run. */
#ifndef STORYLM_REGULARISE_H
#define STORYLM_REGULARISE_H

#include <stdbool.h>
#include <stdint.h>

#include "storylm/adam.h"
#include "storylm/model.h"
#include "storylm/safetensors.h"
#include "storylm/shards.h"
#include "storylm/train_options.h"

#define REGULARISE_PATH_MAX 4096

typedef struct Regularise {
    const TrainOptions *o; /* the trainer's options */
    uint8_t *decay_mask;   /* (n_params) which parameters decay */
    Model ema;             /* the moving average (ema > 0), laid out like the model */
    int has_ema;
    double best_loss;                          /* of the model as saved to OUT (the average's with ema_save) */
    int best_step;                             /* -1: none yet */
    IntVec *rewritten;                         /* (batch) a step's rewritten stories */
    char model_path[REGULARISE_PATH_MAX];      /* the user's --out */
    char checkpoint_path[REGULARISE_PATH_MAX]; /* where the raw weights and Adam's state go */
    char ema_path[REGULARISE_PATH_MAX], best_path[REGULARISE_PATH_MAX];
} Regularise;

/* "x/m.safetensors" + "best" -> path "x/m.best.safetensors" (".best.safetensors"
 * appended to a name without the extension); NULL when too long. */
const char *slm_regularise_file(const char *out, const char *what, char path[REGULARISE_PATH_MAX]);

/* Before the run writes over path (a snapshot, or the best model on a
 * resume): 0 when nothing is there, it is this run's (its "trained_run" is
 * run_id), or force; else refused, naming what the file holds. */
int slm_regularise_check_own(const char *path, uint64_t run_id, bool force, Error *e);

/* Refuses values the options cannot take (a probability not below 1, a
 * negative decay, ema_save without ema, ...), naming the flag. */
int slm_regularise_check_options(const TrainOptions *o, Error *e);
/* Paths only, from o->out (before the model exists: the trainer resumes from
 * checkpoint_path). */
int slm_regularise_paths(Regularise *g, const TrainOptions *o, Error *e);
/* Once the model is made or loaded (step > 0: resumed, run_id its run):
 * Adam's decay and mask, the average (the model's weights at the start, or
 * the run's average file on a resume), the best so far on a resume. */
int slm_regularise_init(Regularise *g, const Model *m, Adam *adam, int step, uint64_t run_id, Error *e);
void slm_regularise_free(Regularise *g);

/* The keys a model file records (only those not off) and, on a resume, the
 * check that the options are those of the run continued. */
int slm_regularise_metadata(const TrainOptions *o, Metadata *md, Error *e);
int slm_regularise_check_resume(const TrainOptions *o, const Metadata *md, const char *path, Error *e);

/* Before a step's pass: its stories refs (n) rewritten by o->augment, each
 * keyed by the seed, the step and its place; the shards' dropout for the step. */
int slm_regularise_before_step(Regularise *g, const Stories *s, const int *idx, int n, int64_t step, StoryRef *refs,
                               Shards *shards, Error *e);
/* After Adam's update: average = ema * average + (1 - ema) * weights. */
void slm_regularise_after_step(Regularise *g, const Model *m);
/* avg (n) = decay * avg + (1 - decay) * x (n): the average's arithmetic. */
void slm_ema_update(float *avg, const float *x, size_t n, float decay);

/* After the trainer saved at step (meta: its training record, r: the
 * losses just evaluated): the average's file and, with keep_best, the best
 * model when this one is better; r's best_* then follow the saved model. */
int slm_regularise_saved(Regularise *g, const Model *m, const char *vocab, const Metadata *meta, int step,
                         uint64_t run_id, TrainResult *r, Error *e);

#endif
