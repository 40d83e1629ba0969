/* Evaluation: a model's loss (nats per predicted token) and top-1 accuracy
 * over stories, the numbers `storylm eval`, training's test evaluation and
 * the ablation probe (slm_probe_score) report. It runs the stories through the
 * training pass (shards.h: split over OpenMP's threads by stories, forward
 * only), so every one of them gives the same numbers for the same model. */
#ifndef STORYLM_EVALUATE_H
#define STORYLM_EVALUATE_H

#include <stdint.h>

#include "storylm/error.h"
#include "storylm/kernels.h"
#include "storylm/model.h"
#include "storylm/stories.h"

typedef struct EvalResult {
    double loss, accuracy; /* NAN without predicted positions */
    long long positions;   /* predicted: each story's length - 1 */
} EvalResult;

/* Loss and accuracy of m over stories idx[0..n) of s with the heads in
 * ablation switched off (NULL: none), in chunks of up to max_positions
 * positions, on m->kernels. */
int slm_evaluate(const Model *m, const Stories *s, const int *idx, int n, const Ablation *ablation, int max_positions,
                 EvalResult *r, Error *e);

/* slm_evaluate on kernels k (slm_evaluate: m's): --kernels
 * portable gives training's --kernels portable numbers, and the WebAssembly
 * build's, bit for bit. */
int slm_evaluate_on(Kernels k, const Model *m, const Stories *s, const int *idx, int n, const Ablation *ablation,
                    int max_positions, EvalResult *r, Error *e);

/* evaluate, and each position's numbers: position p of story idx[i], which
 * predicts its token p+1, at loss[at + p] and correct[at + p] (1 when the
 * target had the largest logit), at = the lengths of stories idx[0..i)
 * added up; loss and correct hold that sum over all n stories, and each
 * story's last position gets 0. */
int slm_evaluate_each(const Model *m, const Stories *s, const int *idx, int n, const Ablation *ablation,
                      int max_positions, EvalResult *r, float *loss, uint8_t *correct, Error *e);

#endif
