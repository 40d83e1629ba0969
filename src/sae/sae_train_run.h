/* The state of a training run of an SAE (sae_train.c), shared with its
 * checkpoint (sae_resume.c), which writes and reads all of it. */
#ifndef STORYLM_SAE_TRAIN_RUN_H
#define STORYLM_SAE_TRAIN_RUN_H

#include "storylm/adam.h"
#include "storylm/rng.h"
#include "storylm/sae_train.h"

/* The store: n rows (n, d) of the stream, handed out in a shuffled order. */
typedef struct Store {
    float *rows;
    long long *order;
    long long n, at;
    int d;
    Rng rng;
    /* where its last fill began: the stream's place and rng before the shuffle (a resume fills it again) */
    SaeStreamPos fill_pos;
    Rng fill_rng;
} Store;

/* Firing counts: since[j] tokens since latent j last fired; counts of the window being filled and of the last one. */
typedef struct Firing {
    long long *since, window, in_now, in_last;
    float *now, *last;
    int *in_batch; /* (L): tokens of the step's batch it fired on */
    uint8_t *dead;
} Firing;

typedef struct Run {
    Sae *s;
    SaePass pass;
    Store store;
    Firing firing;
    Adam adam;
    float *grads, *x;
    float scale; /* the normalisation of the activations */
    int done;    /* steps done */
} Run;

/* Writes r's state (steps done, parameters before the scale is folded in) to o->checkpoint, atomically. */
int slm_sae_checkpoint_save(const Run *r, const SaeTrainOptions *o, Error *e);
/* Reads o->checkpoint into r (made by run_init for the same options), refused when its options differ. */
int slm_sae_checkpoint_load(Run *r, const SaeTrainOptions *o, Error *e);

#endif
