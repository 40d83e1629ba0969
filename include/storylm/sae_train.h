/* Training a sparse autoencoder (sae.h) on a stream of activations: Adam,
 * activations normalised as SAELens's expected_average_only_in (scaled so
 * that their mean norm is sqrt(d_in); the scale folded into the weights at
 * the end), TopK's dead latents (none fired in the last dead_window tokens)
 * fed to AuxK, L1's coefficient warmed up over the first 5% of the steps, the
 * learning rate decayed to 0 over the last 20% (Anthropic's recipe). Rows
 * are drawn from a store of activations shuffled with the seed, so the same
 * seed and stream give the same bits at any thread count. Never prints. */
#ifndef STORYLM_SAE_TRAIN_H
#define STORYLM_SAE_TRAIN_H

#include <signal.h>
#include <stdint.h>

#include "storylm/sae.h"

/* The stream: the next n tokens' activations into x (n, d_in); -1 with e set. */
typedef int (*SaeFill)(void *ctx, float *x, int n, Error *e);
/* A place in the stream, for a checkpoint: the order shuffled so many times,
 * the batch begun at that index of the order (-1: none yet), rows handed out of it. */
typedef struct SaeStreamPos {
    long long shuffles, batch_start, at;
} SaeStreamPos;
typedef void (*SaeTell)(void *ctx, SaeStreamPos *pos);
typedef int (*SaeSeek)(void *ctx, const SaeStreamPos *pos, Error *e);

typedef struct SaeProgress {
    int step, steps;
    long long tokens;
    double mse, explained_variance, l0, dead_share; /* of the step's batch; dead: of the last window */
    double lr, l1_coeff, elapsed_s, tokens_per_s;
} SaeProgress;

typedef struct SaeTrainOptions {
    SaeKind kind;
    int expansion, k, batch_tokens, threads;
    double l1, lr, minutes;
    long long tokens;
    long long dead_window;  /* tokens without a firing that make a latent dead */
    long long store_tokens; /* rows shuffled together (0: 64 batches, at most 128 MB and tokens) */
    uint64_t seed;
    const volatile sig_atomic_t *stop; /* set: stop after the step (the SAE is still whole) */
    void (*progress)(const SaeProgress *p, void *ctx);
    void *progress_ctx;
    /* Resume (sae_resume.c): when stopped early the run's whole state goes to
     * checkpoint (NULL: not kept; removed when the run finishes); resume: the
     * run goes on from it, refused unless its options and origin are these.
     * tell and seek place fill's stream (both NULL: no checkpoint). */
    const char *checkpoint;
    int resume;
    SaeTell tell;
    SaeSeek seek;
    const char *origin[8]; /* pairs: a flag ("-m", "STORIES") and its value, NULL-ended; checked on resume */
} SaeTrainOptions;

typedef struct SaeTrainResult {
    int steps;
    long long tokens;
    double seconds;
    int resumed_at;  /* the step the run went on from (0: a new run) */
    int interrupted; /* stopped by stop or --minutes before the tokens were done */
    float scale;     /* the normalisation, folded into the weights */
    double dead_share;
    float *density; /* (d_sae): each latent's firing frequency over the last window (caller frees) */
} SaeTrainResult;

SaeTrainOptions slm_sae_train_defaults(void);
/* Checks o's values (messages name the flag). */
int slm_sae_train_check(const SaeTrainOptions *o, Error *e);
/* Makes s (d_in wide, reading hook) and trains it on fill's stream; s holds
 * the trained SAE with the scale folded in, also when stopped early. */
int slm_sae_train(Sae *s, int d_in, const char *hook, SaeFill fill, void *ctx, const SaeTrainOptions *o,
                  SaeTrainResult *r, Error *e);

#endif
