/* Seams for the tests alone: a gradient made to overflow (one inf), to see
 * what a diverging step and a diverging run do, and the step's check itself.
 * Not in include/storylm (no user or front end sets them) and not exported
 * from libstorylm.so (no slm_ prefix; cmake/storylm.map exports slm_* only);
 * the tests include this file by its path. slm_train_step and slm_train_run
 * are these with no overflow. */
#ifndef STORYLM_TRAIN_TESTING_H
#define STORYLM_TRAIN_TESTING_H

#include <stdbool.h>
#include <stddef.h>

#include "storylm/train.h"

/* slm_train_step, with the gradient made to overflow before the check when overflow. */
int train_step_overflowing(const TrainStep *t, const StoryRef *refs, int n, float lr, bool overflow, TrainStepResult *r,
                           Error *e);
/* Whether no x (n) is inf or NaN: the step's check of its gradient. */
int train_all_finite(const float *x, size_t n);
/* slm_train_run, whose step overflow_at_step (from 1; 0: none) overflows. */
int train_run_overflowing(const Stories *s, const TrainOptions *o, TrainProgressFn progress, void *ctx,
                          int overflow_at_step, TrainResult *r, Error *e);

#endif
