/* Training's options and result (the trainer, src/train/train.c, and the
 * regularisers it calls, src/train/regularise.c, both read them), their
 * defaults, and the check of a stories file's size. */
#ifndef STORYLM_TRAIN_OPTIONS_H
#define STORYLM_TRAIN_OPTIONS_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#include "storylm/dist.h"
#include "storylm/error.h"
#include "storylm/model.h"
#include "storylm/stories.h"
#include "storylm/vec.h"

/* TrainAugmentFn and TRAIN_AUGMENT_MAX_LEN, the rewrite of a story a step
 * (--swap-names), are in story_ids.h: the rewriter (src/text/name_swap.c)
 * sits below training. */

/* A front's stop request, polled between steps: 0 goes on; non-zero saves and
 * stops (TRAIN_STOP_INTERACTIVE: see there). */
typedef int (*TrainStopFn)(void *ctx);

typedef struct TrainOptions {
    const struct Architecture *arch; /* --arch (arch.h's registry) */
    PosScheme pos;                   /* --pos, attention only (position.h); 0 = distance */
    ScoreFn score;                   /* --score, attention only (score.h); 0 = scaled-dot */
    int layers; /* --layers: attention's layers of heads, 1..4 (0 read as 1); transformer's blocks, 1..8 */
    int d_model, heads, d_head, d_mlp; /* --arch transformer's sizes (0: the architecture's default) */
    ActFn act;                         /* --act, transformer only */
    bool tie_embeddings;               /* --tie-embeddings: W_U = W_E^T, transformer family only */
    int steps;                         /* total optimizer steps (the schedule's horizon) */
    double minutes;                    /* time budget; 0 = none. Stops early, saving. */
    int stop_at;                       /* stop (saving) after this step, keeping the schedule of `steps`; 0 = none */
    double lr;                         /* peak learning rate */
    int warmup;                        /* linear warm-up steps; -1 = min(100, steps / 10) */
    double min_lr_ratio;               /* cosine decays to lr * this */
    int batch;                         /* stories per step */
    uint64_t seed;
    int threads;
    int eval_every;        /* steps between test evaluations; 0 = only at the end */
    int patience;          /* stop when this many evaluations in a row found no lower test loss; 0 = never */
    int keep_last;         /* save OUT at every evaluation, not only at a lower test loss (the model kept) */
    int snapshot_every;    /* also keep OUT.stepN.safetensors every N steps; 0 = never */
    int max_positions;     /* positions per forward chunk (memory bound) */
    Precision precision;   /* of the training steps' matrix products (bf16.h); evaluation is FP32 */
    Kernels kernels;       /* of training and its evaluations (kernels.h): OpenBLAS or portable */
    const char *out;       /* model path; optimizer state beside it */
    const char *data_path; /* the stories file: the model records its name, size and hash (record.h) */
    long long test_bytes;  /* the test stories' text bytes (slm_stories_text_bytes): loss per character's
                            * divisor; 0: none reported */
    const struct StoriesRecord *data_record; /* data_path's record when the caller has made it (NULL: made here) */
    const Model *from;                       /* fine-tuning: the trained model the run starts from (its architecture and
                                              * vocabulary kept); NULL = random initial weights */
    const char *from_name;                   /* its file's name, recorded in the model as "from" */
    const char *vocab_text;                  /* vocab.txt text stored in the model */
    int vocab_size;
    int resume;
    int force;      /* --force: a model of another run where this one saves (a snapshot, the best) is replaced */
    unsigned given; /* TRAIN_GIVEN_* bits: flags the user set; a resume refuses any the run contradicts */
    volatile sig_atomic_t *stop; /* set by a signal handler: save and stop (TRAIN_STOP_INTERACTIVE: see there) */
    TrainStopFn stop_fn;         /* when set, polled between steps instead of stop: its value as the flag's */
    void *stop_ctx;
    Dist *dist; /* the ranks under mpirun (dist.h); NULL = this process alone */

    /* Regularisation (src/train/regularise.c), every one off by default so
     * that a run without them is bit for bit what it was. A resume must give
     * the same values as the run it continues (the model file records them). */
    double weight_decay;      /* AdamW's decoupled decay of the tensors with decay set (model.h) */
    double dropout;           /* P on z, the hidden layer's input, in training steps */
    double attention_dropout; /* P on the attention weights, in training steps */
    double ema;               /* decay of an exponential moving average of the weights; 0 = none */
    int ema_save;             /* the average is the model saved to `out`; the raw weights (and
                               * their optimizer state) go to OUT.raw.safetensors */
    int keep_best;            /* also keep OUT.best.safetensors: the model at its lowest test loss */
    double swap_names;        /* recorded only: the augment's probability (--swap-names) */
    double invent_names;      /* recorded only: its probability of an invented name (--invent-names) */
    TrainAugmentFn augment;   /* rewrites each training story of a step; NULL = none */
    void *augment_ctx;
} TrainOptions;

enum {
    TRAIN_GIVEN_ARCH = 1,
    TRAIN_GIVEN_LR = 2,
    TRAIN_GIVEN_BATCH = 4,
    TRAIN_GIVEN_SEED = 8,
    TRAIN_GIVEN_WARMUP = 16,
    TRAIN_GIVEN_VARIANT = 32 /* --pos or --score */,
    TRAIN_GIVEN_LAYERS = 64,
    TRAIN_GIVEN_SHAPE = 128 /* --d-model, --n-heads, --d-head, --d-mlp or --act */,
    TRAIN_GIVEN_PRECISION = 256,
    TRAIN_GIVEN_MLP = 512 /* --d-mlp or --act */
};

TrainOptions slm_train_default_options(void);

/* The default --steps fits the corpus: TRAIN_DEFAULT_PASSES passes over the
 * n_train training stories at `batch` a step, rounded up to 50, at most
 * TRAIN_MAX_DEFAULT_STEPS (a large corpus's run, the main job's). A small
 * corpus is learnt by heart long before 3,000 steps. */
#define TRAIN_MAX_DEFAULT_STEPS 3000
#define TRAIN_DEFAULT_PASSES 30
int slm_train_default_steps(int n_train, int batch);
/* The default --eval-every for a run of `steps`: 250, or a tenth of a shorter
 * run's steps (at least 10), so that a short run has a best to keep. */
#define TRAIN_MAX_DEFAULT_EVAL_EVERY 250
int slm_train_default_eval_every(int steps);
/* A fresh run stopped by the stop flag (Ctrl-C) within this many seconds
 * and before its first save saves nothing: a model of a step or two would
 * only block the same command given again. */
#define TRAIN_DISCARD_SECONDS 5
/* The stop flag's value that asks for that (the CLI's Ctrl-C, SIGINT); any
 * other non-zero value (SIGTERM, a server's stop) always saves. */
#define TRAIN_STOP_INTERACTIVE 2
/* Evaluations in a row without a lower test loss before a run stops by itself. */
#define TRAIN_DEFAULT_PATIENCE 4

/* The fewest stories a file may hold for `storylm train` (and the page's
 * training): a tenth of them is held out, and below this there is too little
 * to learn from or to measure on. */
#define TRAIN_MIN_STORIES 20
/* -1 with e saying what to do when a stories file (path, for the message)
 * holds fewer than TRAIN_MIN_STORIES stories; skips (or NULL), the stories
 * left out, may say why (a file not in UTF-8). */
int slm_train_check_story_count(int n_stories, const StorySkips *skips, const char *path, Error *e);

typedef struct TrainResult {
    int steps_done; /* in this run */
    int final_step; /* steps of the saved model */
    double train_loss, test_loss, test_accuracy, best_test_loss;
    double test_loss_per_char; /* the test loss in nats per byte of the test stories' text; NAN without test_bytes */
    int best_step;             /* of the saved model's lowest test loss (the average's with ema_save) */
    int kept_step;             /* the step of the model in OUT: the lowest test loss's, or the last (keep_last) */
    double kept_test_loss;     /* its test loss (the average's with ema_save); NAN when none was measured */
    int early_stopped;         /* stopped by patience: `patience` evaluations found no lower test loss */
    double from_test_loss;     /* fine-tuning: the test loss of the model fine-tuned, before the first step; else NAN */
    char from[256];    /* the name of the model fine-tuned ("from"), this run's or the resumed file's; "": none */
    int nothing_saved; /* stopped by the stop flag in its first seconds, before any save: no file written */
    double ema_test_loss, ema_test_accuracy; /* NAN without --ema */
    double seconds;
    int interrupted; /* stopped by the stop flag or the time budget */
    long long tokens_seen;
    long long parameters; /* the model's (its --pos, --score and --layers, a resume's as the file has them) */
} TrainResult;

#endif
