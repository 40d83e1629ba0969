/* storylm.train for foreign-function callers (python/storylm/train.py,
 * through ctypes): the library's whole run (slm_train_file) in the calling
 * process, with what it has to say and each step's numbers handed to the
 * caller, and a stop the caller polls (a KeyboardInterrupt). Never prints. */
#ifndef STORYLM_PYAPI_TRAIN_H
#define STORYLM_PYAPI_TRAIN_H

#include "storylm/error.h"

/* What a run hands the caller as it goes. */
enum {
    PY_TRAIN_PROGRESS = 0, /* text: a step's numbers as a JSON object (slm_py_train's doc) */
    PY_TRAIN_SAY = 1       /* text: a message for the user, in the command line's words */
};
typedef void (*PyTrainEventFn)(void *ctx, int kind, const char *text);
/* Polled between steps: 0 goes on; TRAIN_STOP_INTERACTIVE (2) or 1 stops after saving (train_options.h). */
typedef int (*PyTrainStopFn)(void *ctx);

/* Trains on stories into out with options (a JSON object of train's
 * Python keywords, read with its table as slm_py_params_check reads them:
 * an error names the keyword, Error.param), threads left out: one per core.
 * on_event (may be NULL) gets each step as {"step", "steps", "start_step",
 * "loss", "test_loss", "test_accuracy", "test_loss_per_char",
 * "ema_test_loss", "lr", "tokens_per_s", "elapsed_s", "eta_s",
 * "evaluated", "saved"} (a number not measured: null) and each message.
 * Returns {"summary": train --json's object, "nothing_saved": bool} as JSON
 * text (slm_py_release), or NULL with e (its message and hint in the
 * command line's words, which the caller says in its own). */
char *slm_py_train(const char *stories, const char *out, const char *options, PyTrainEventFn on_event,
                   PyTrainStopFn stop, void *ctx, Error *e);

#endif
