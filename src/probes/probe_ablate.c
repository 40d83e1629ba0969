/* Secret 3, switch a head off: loss and accuracy over every predicted
 * position of the stories, and at the positions where a story's hero comes
 * back (Secret 2's name positions), with any heads switched off. */
#include <math.h>
#include <stdlib.h>

#include "storylm/evaluate.h"
#include "storylm/probes.h"

void slm_name_targets_free(NameTargets *nt) {
    free(nt->story);
    free(nt->position);
    *nt = (NameTargets){0};
}

static int add_target(NameTargets *nt, int *cap, int story, int position, Error *e) {
    if (nt->n == *cap) {
        int want = *cap ? *cap * 2 : 256;
        int *st = xrealloc(nt->story, (size_t)want * sizeof(int), e);
        if (!st) return -1;
        nt->story = st;
        int *pos = xrealloc(nt->position, (size_t)want * sizeof(int), e);
        if (!pos) return -1;
        nt->position = pos;
        *cap = want;
    }
    nt->story[nt->n] = story;
    nt->position[nt->n++] = position;
    return 0;
}

int slm_name_targets_find(const Tokenizer *t, const NameList *nl, const Stories *s, const int *idx, int n,
                          NameTargets *out, Error *e) {
    *out = (NameTargets){0};
    int cap = 0;
    StoryBuf buf = {0};
    for (int i = 0; i < n; i++) {
        Hero hero;
        const int32_t *ids = slm_story_ids(s, idx[i], &buf, e);
        if (ids && !slm_find_hero(t, nl, ids, (int)story_len(s, idx[i]), &hero)) continue;
        for (int k = 1; ids && k < hero.n_mentions; k++)
            if (add_target(out, &cap, idx[i], hero.mentions[k] - 1, e)) ids = NULL;
        if (!ids) {
            slm_story_buf_free(&buf);
            slm_name_targets_free(out);
            return -1;
        }
    }
    slm_story_buf_free(&buf);
    return 0;
}

/* Loss, accuracy and probability at the name positions, from each
 * position's numbers (slm_evaluate_each's layout over idx[0..n)). */
static void score_name_positions(const Stories *s, const int *idx, int n, const NameTargets *names, const float *loss,
                                 const uint8_t *correct, AblateScore *out) {
    double sums[4] = {0};
    size_t at = 0;
    for (int i = 0, next = 0; names && i < n; at += story_len(s, idx[i]), i++)
        for (; next < names->n && names->story[next] == idx[i]; next++) {
            size_t p = at + (size_t)names->position[next];
            sums[0] += loss[p];
            sums[1] += correct[p];
            sums[2] += exp(-(double)loss[p]);
            sums[3] += 1;
        }
    out->name_positions = (long long)sums[3];
    out->name_loss = out->name_positions > 0 ? sums[0] / (double)out->name_positions : NAN;
    out->name_accuracy = out->name_positions > 0 ? sums[1] / (double)out->name_positions : NAN;
    out->name_probability = out->name_positions > 0 ? sums[2] / (double)out->name_positions : NAN;
}

/* Positions a forward chunk holds (split over the threads): training's default. */
#define SCORE_POSITIONS 4096

int slm_probe_score(const Model *m, const Stories *s, const int *idx, int n, const Ablation *ablation,
                    const NameTargets *names, AblateScore *out, Error *e) {
    *out = (AblateScore){0};
    size_t total = 0;
    for (int i = 0; i < n; i++) total += story_len(s, idx[i]);
    float *loss = names ? xmalloc((total ? total : 1) * sizeof *loss, e) : NULL;
    uint8_t *correct = loss ? xmalloc(total ? total : 1, e) : NULL;
    EvalResult r;
    int rc = names && !correct ? -1 : slm_evaluate_each(m, s, idx, n, ablation, SCORE_POSITIONS, &r, loss, correct, e);
    if (!rc) {
        out->loss = r.loss, out->accuracy = r.accuracy, out->positions = r.positions;
        score_name_positions(s, idx, n, names, loss, correct, out);
    }
    free(loss);
    free(correct);
    return rc;
}
