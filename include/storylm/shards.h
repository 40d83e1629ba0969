/* Training and evaluation split over threads by stories.
 *
 * A step's stories are dealt to shards, one per thread (longest story first,
 * each to the shard with the fewest tokens so far); each thread runs its
 * shard's forward and backward from start to end on its own activations and
 * gradient buffer (slm_model_loss_and_grad, OpenMP and OpenBLAS one thread wide),
 * and the buffers are then summed in shard order. One wait per step instead
 * of one per layer, which is what matters on a machine others are using too;
 * and each thread's work stays in its own core's cache.
 *
 * Deterministic: the deal depends only on the stories' lengths and the number
 * of shards, every sum runs in a fixed order, so the same stories and thread
 * count give the same numbers bit for bit. Another thread count sums in
 * another grouping (the same up to float rounding), except on the portable
 * kernels: there the shards are SLM_PORTABLE_SHARDS whatever the threads and
 * ranks, each thread running several in turn, so that the deal, the chunks
 * and the order of the sum, and with them every bit, depend on neither.
 *
 * Across processes (dist.h): the shards are numbered over all ranks, rank r
 * running shards r*L .. r*L+L-1 (L = T, its threads, or on the portable
 * kernels SLM_PORTABLE_SHARDS / ranks rounded up); after a run the ranks
 * exchange every shard's gradient and losses (in rank order) and each sums
 * all of them in shard order, as one process with all the shards would. */
#ifndef STORYLM_SHARDS_H
#define STORYLM_SHARDS_H

#include <stdint.h>

#include "storylm/dist.h"
#include "storylm/error.h"
#include "storylm/model.h"
#include "storylm/workers.h"

/* One story to run: its ids ([EOS] first) and length. */
typedef struct StoryRef {
    const int32_t *ids;
    int len;
} StoryRef;

typedef struct Shard {
    Activations acts;
    Batch batch;
    float *grads;        /* (n_params) this shard's share of the gradient, in Shards.grads_all */
    int *stories;        /* (max_stories) indices into the run's stories, in order */
    uint64_t *drop_keys; /* (max_stories) dropout keys of the chunk's stories */
    int n_stories;
    long long tokens;
    double loss_sum;
    long long correct;
    int failed;
    Error error;
} Shard;

/* The shards of the portable kernels: a step's 8 stories one each. */
#define SLM_PORTABLE_SHARDS 8

typedef struct Shards {
    const Model *model;
    int n;            /* shards in all: local x ranks */
    int used;         /* shards dealt stories: n, or SLM_PORTABLE_SHARDS (the rest: padding for the exchange) */
    int first, local; /* this process runs shards first .. first + local - 1 on its threads */
    Dist *dist;       /* NULL: one process runs them all */
    float *grads_all; /* (n x n_params) every shard's gradient, in shard order: what the ranks exchange */
    double *results;  /* (n x 3) every shard's loss sum, correct predictions, failure */
    int positions;    /* per shard and forward chunk */
    int max_stories;  /* per run */
    Workers workers;
    Shard *shard; /* (n) */
    int *owner;   /* (max_stories) scratch: the shard of each story */
    /* the run under way, read by the jobs */
    const StoryRef *run_stories;
    const Ablation *run_ablation;
    float run_scale;
    float *run_grads;
    /* Training's dropout (dropout.h) in runs with gradients, never in an
     * evaluation: the rates and the step that key each story's masks with
     * its place in the run (zero rates, as slm_shards_init leaves them: none). */
    float dropout_hidden, dropout_attention;
    uint64_t dropout_seed;
    int64_t dropout_step;
    /* Training's matrix products (bf16.h), in runs with gradients; an
     * evaluation's forward is FP32 (FP32, as slm_shards_init leaves it). */
    Precision precision;
    /* The kernels of every run, with gradients or not (kernels.h; OpenBLAS, as
     * slm_shards_init leaves it; portable ones need slm_shards_init_dist's
     * layout for their thread-independent bits). */
    Kernels kernels;
    /* Each position's numbers (slm_evaluate_each), set by the caller for a run
     * (NULL, as slm_shards_init leaves them: not kept): story k's position p,
     * which predicts its id p+1, to position_loss[k][p] and
     * position_correct[k][p]; a story's last position is left as it was.
     * Only this process's shards write them. */
    float *const *position_loss;
    uint8_t *const *position_correct;
} Shards;

/* n_threads shards of up to `positions` positions per forward chunk each (a
 * shard with more tokens runs several chunks; a story longer than that runs
 * in pieces), for runs of up to max_stories stories, on OpenBLAS. */
int slm_shards_init(Shards *s, const Model *m, int n_threads, int positions, int max_stories, Error *e);
/* The same with n_threads on each of dist's ranks (dist NULL: one process)
 * and kernels k: slm_shards_count(k, n_threads, dist) shards in all. */
int slm_shards_init_dist(Shards *s, const Model *m, int n_threads, Dist *dist, Kernels k, int positions,
                         int max_stories, Error *e);
/* The shards that take stories: n_threads x ranks, or on the portable
 * kernels SLM_PORTABLE_SHARDS (the share of --max-positions each holds). */
int slm_shards_count(Kernels k, int n_threads, const Dist *dist);

/* The positions a shard should hold: `positions` (its share of
 * --max-positions), or the longest story when that is longer, up to four
 * windows' worth. A story longer than a shard's positions runs as pieces of
 * them that carry the window before their first prediction (BatchPiece): the
 * same predictions, memory independent of the story's length. */
int slm_shards_positions(const ModelConfig *c, int positions, int longest);
void slm_shards_free(Shards *s);

/* Runs stories[0..n) through the model, with the heads in ablation switched
 * off (NULL: none). Adds their losses to *loss_sum and their correct
 * predictions to *correct (over predicted positions); with grads (n_params),
 * also grads += d (scale * sum of the losses) / d params. */
int slm_shards_run(Shards *s, const StoryRef *stories, int n, const Ablation *ablation, float scale, float *grads,
                   double *loss_sum, long long *correct, Error *e);

#endif
