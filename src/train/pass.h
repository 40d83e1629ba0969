/* Forward (and backward) over a list of stories, split over threads by
 * stories (shards.h), internal to src/train: training's steps and
 * evaluation run through it. Each thread runs its share in chunks of whole
 * stories that fit its activations. Every chunk's backward is of scale * its
 * summed loss, scale = 1 / (predicted positions of the list), so the
 * gradients add up to the gradient of the mean over all of them. */
#ifndef STORYLM_TRAIN_PASS_H
#define STORYLM_TRAIN_PASS_H

#include "storylm/evaluate.h"
#include "storylm/shards.h"

typedef struct Pass {
    Shards shards;
    StoryRef *refs; /* (max_stories) */
    int32_t *ids;   /* (ids_cap) the run's stories' ids, as the shards read them */
    size_t ids_cap;
} Pass;

/* Threads from OpenMP's setting (slm_model_threads_setup), on each of dist's
 * ranks, on kernels k; each shard's chunks hold max_positions / shards
 * positions (slm_shards_count: over all ranks, or the portable kernels' fixed
 * count), or the longest story up to a bound (slm_shards_positions: longer
 * stories run in pieces). */
int slm_pass_init(Pass *p, const Model *m, Dist *dist, Kernels k, int max_positions, int longest, int max_stories,
                  Error *e);
void slm_pass_free(Pass *p);
/* p->refs[0..n): idx's stories, their ids copied out of s into p->ids. */
int slm_pass_refs(Pass *p, const Stories *s, const int *idx, int n, Error *e);
/* Runs p->refs[0..n) through the model. grads == NULL: forward only. Sums loss
 * and correct predictions over predicted positions into *loss_sum, *correct. */
int slm_pass_go(Pass *p, int n, const Ablation *ab, float *grads, double *loss_sum, long long *correct, Error *e);
/* Loss and accuracy of idx[0..n) with p's activations (forward only; src/train/evaluate.c). */
int slm_pass_evaluate(Pass *p, const Stories *s, const int *idx, int n, const Ablation *ab, EvalResult *r, Error *e);

#endif
