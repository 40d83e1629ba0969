/* In-context learning (issue 11, `storylm icl`): how much better the network
 * predicts a token late in a story than early, from what the story has said
 * so far. Position p's loss is -log p(x_{p+1}) at p (p = 0 is the opening
 * [EOS]). The in-context-learning score (as in Olsson et al., "In-context
 * Learning and Induction Heads") is the mean loss at a late position minus
 * the mean loss at an early one: negative when the network gains from the
 * context. With few stories one position is noisy, so each mean is pooled
 * over the positions within `band` of it. The late position is reached only
 * by the longer stories; the paired score compares the same stories at both
 * ends, so that a story's length does not stand in for its context. */
#ifndef STORYLM_PROBE_ICL_H
#define STORYLM_PROBE_ICL_H

#include "storylm/error.h"
#include "storylm/model.h"
#include "storylm/stories.h"

typedef struct IclOptions {
    int early, late; /* positions (late > early) */
    int band;        /* pool positions p - band .. p + band */
    int min_stories; /* a position counts when at least this many stories reach it */
} IclOptions;

typedef struct IclResult {
    int n_positions; /* positions 0..n_positions-1 have a loss in some story */
    double *loss;    /* (n_positions) mean loss at each position */
    int *stories;    /* (n_positions) stories with a loss there */
    int last;        /* the last position at least min_stories reach */
    int early, late; /* the positions used: the asked ones, clipped to last */
    int early_clipped, late_clipped;
    double early_loss, late_loss;      /* pooled over the bands */
    long long early_count, late_count; /* (story, position) losses pooled */
    double score;                      /* late_loss - early_loss */
    double paired_early_loss;          /* early's band over only the stories that reach late */
    double paired_score;               /* late_loss - paired_early_loss: the same stories at both ends */
} IclResult;

/* Over stories idx[0..n) with ablation (NULL: none). Fails when the stories
 * are too short: fewer than min_stories reach past o->early. */
int slm_probe_icl(const Model *m, const Stories *s, const int *idx, int n, const IclOptions *o,
                  const Ablation *ablation, IclResult *out, Error *e);
void slm_icl_result_free(IclResult *r);

#endif
