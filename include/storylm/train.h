/* Training (SPEC section 4): 8 whole stories a step, mean cross-entropy over
 * every predicted position, Adam with warm-up and cosine decay, periodic
 * evaluation on the held-out test stories, atomic checkpoints, resume that
 * continues bit for bit. The caller (the CLI) owns printing: progress comes
 * back through a callback. */
#ifndef STORYLM_TRAIN_H
#define STORYLM_TRAIN_H

#include "storylm/dist.h"
#include <signal.h>
#include <stdint.h>

#include "storylm/adam.h"
#include "storylm/error.h"
#include "storylm/evaluate.h" /* evaluate, EvalResult: what training reports */
#include "storylm/model.h"
#include "storylm/shards.h"
#include "storylm/stories.h"
#include "storylm/train_options.h" /* TrainOptions, TrainResult */
#include "storylm/vec.h"

/* What the progress callback sees. */
typedef struct TrainProgress {
    int step, steps;
    int start_step;            /* the step this run began from: 0, or the resumed model's */
    double train_loss;         /* mean over the last step */
    double test_loss;          /* NAN until evaluated */
    double test_loss_per_char; /* nats per byte of the test stories' text; NAN until evaluated or without it */
    double test_accuracy;
    double tokens_per_s;     /* recent, of this run */
    double lr;               /* the learning rate of the step just taken */
    double elapsed_s, eta_s; /* of this run (a resume counts from its own start) */
    double ema_test_loss;    /* the moving average's, NAN when none or not evaluated */
    int evaluated;           /* 1 when this report follows an evaluation */
    int saved;               /* 1 when the model was just saved */
} TrainProgress;
typedef void (*TrainProgressFn)(const TrainProgress *p, void *ctx);

/* Trains a new model on s (or resumes o->out when o->resume), saving to o->out. */
int slm_train_run(const Stories *s, const TrainOptions *o, TrainProgressFn progress, void *ctx, TrainResult *r,
                  Error *e);

/* The same run a slice of steps at a time, for a caller that must get on
 * with other work between slices (the static site's training, in a Web
 * Worker of one thread): slm_train_run is slm_train_open, slm_train_steps
 * until *done, slm_train_close, and any slicing gives the same bits. r is
 * filled as the run goes (its final_step, best_step and steps_done once
 * done) and must outlive the run; s and o's strings too. */
typedef struct TrainRun TrainRun;
/* The model made (or loaded: o->resume, o->from), nothing trained yet; or -1 with e. */
int slm_train_open(TrainRun **out, const Stories *s, const TrainOptions *o, TrainResult *r, Error *e);
/* Up to n more steps, each reported to progress; *done once the run ended
 * (its last step, a stop asked through o, the patience run out, or an
 * error: -1 with e, the model saved last stays in o->out). */
int slm_train_steps(TrainRun *t, int n, TrainProgressFn progress, void *ctx, bool *done, Error *e);
/* Frees the run (NULL: nothing); r->from set. */
void slm_train_close(TrainRun *t);

/* The learning rate at step (0-based) of o's schedule. */
double slm_train_lr_at(const TrainOptions *o, int step);

/* One optimizer step, as slm_train_run takes each of its steps (and storylm
 * bench times them), on stories refs[0..n) ([EOS] first): grads = d (mean
 * loss over their predicted positions) / d params, the stories split over
 * the shards' threads (shards.h); then, when the loss and every gradient
 * are finite, Adam's update of the model at lr, on the calling thread. The
 * regularisers' hooks (regularise.h) go around it. Returns 0 (with
 * r->not_finite set, nothing was updated: the caller stops), or -1 with e
 * set when a pass failed. */
typedef struct TrainStep {
    Shards *shards; /* made for the model, for at least n stories */
    Model *model;
    Adam *adam;
    float *grads; /* (n_params) scratch */
} TrainStep;
typedef struct TrainStepResult {
    double loss;            /* mean over the predicted positions */
    long long positions;    /* predicted: each story's length - 1 */
    const char *not_finite; /* NULL, or "loss" or "gradient": what stopped the step before the update */
} TrainStepResult;
int slm_train_step(const TrainStep *t, const StoryRef *refs, int n, float lr, TrainStepResult *r, Error *e);

#endif
