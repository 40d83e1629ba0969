/* Head detectors (issue 11, `storylm detect`): scores that say which heads
 * do the jobs named in circuits research, measured on attention weights.
 *
 * For a head and a position p (reading keys first..p, the window):
 *   previous-token score  the weight on p - 1                       (p >= 1)
 *   duplicate-token score the total weight on the earlier positions u < p
 *                         in reach holding p's token                (p with one)
 *   induction score       the total weight on the positions u + 1 in reach,
 *                         u + 1 < p, after an earlier occurrence u of p's
 *                         token: where an induction head looks to copy what
 *                         came next last time                       (p with one)
 * Each is a mean over the positions it is defined at, on stories and on
 * random sequences repeated twice: [EOS] r_1..r_L r_1..r_L, the r drawn
 * (seeded) from the tokens of the stories, [EOS] left out. On those the
 * induction loss: the mean loss predicting r_2..r_L in the second copy,
 * against the same tokens in the first; a network that can copy in context
 * what followed a token before predicts the second copy far better. */
#ifndef STORYLM_PROBE_DETECT_H
#define STORYLM_PROBE_DETECT_H

#include <stdint.h>

#include "storylm/error.h"
#include "storylm/model.h"
#include "storylm/probes.h"
#include "storylm/stories.h"

typedef struct DetectScores {
    double previous, duplicate, induction;
} DetectScores;

/* Sums over the positions run so far, for means. */
typedef struct DetectTally {
    int n_heads;
    double *previous, *duplicate, *induction;       /* (H) summed weights */
    long long n_previous, n_duplicate, n_induction; /* positions where each is defined */
} DetectTally;

int slm_detect_tally_init(DetectTally *t, int n_heads, Error *e);
void slm_detect_tally_free(DetectTally *t);
/* Adds every position of the story run last by r (tokens ids, as run). */
int slm_detect_tally_add(DetectTally *t, const ProbeRunner *r, const int32_t *ids, Error *e);
/* Head h's means (NAN where no position counted). */
DetectScores slm_detect_tally_scores(const DetectTally *t, int h);

typedef struct DetectOptions {
    int n_random; /* random sequences */
    int length;   /* L: tokens in each copy (2L + 1 <= the window, so the first copy stays in reach) */
    uint64_t seed;
} DetectOptions;

typedef struct DetectResult {
    int n_heads;                    /* every layer's heads (layer l's head h is l*H + h) */
    int layers;                     /* of heads; names them (slm_detect_head_name) */
    DetectScores *stories, *random; /* (H) each, one block */
    long long positions, duplicate_positions, induction_positions; /* stories */
    long long random_positions, random_duplicate_positions, random_induction_positions;
    double loss_first, loss_second; /* random sequences: r_2..r_L in the first copy, in the second */
} DetectResult;

/* The scores over stories idx[0..n) and o->n_random random sequences, with
 * ablation (NULL: none). */
int slm_probe_detect(const Model *m, const Stories *s, const int *idx, int n, const DetectOptions *o,
                     const Ablation *ablation, DetectResult *out, Error *e);
void slm_detect_result_free(DetectResult *r);
/* Head g's name as slm_head_name gives it: "3", or "2:3" with several layers. */
void slm_detect_head_name(const DetectResult *r, int g, char *buf, size_t size);

#endif
