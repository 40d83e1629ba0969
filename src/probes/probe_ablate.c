/* Secret 3, switch a head off: loss and accuracy over every predicted
 * position of the stories, and at the positions where a story's hero comes
 * back (Secret 2's name positions), with any heads switched off. */
#include <math.h>
#include <stdlib.h>

#include "storylm/probes.h"

void name_targets_free(NameTargets *nt) {
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

int name_targets_find(const Tokenizer *t, const NameList *nl, const Stories *s, const int *idx, int n,
                      NameTargets *out, Error *e) {
    *out = (NameTargets){0};
    int cap = 0;
    StoryBuf buf = {0};
    for (int i = 0; i < n; i++) {
        Hero hero;
        const int32_t *ids = story_ids(s, idx[i], &buf, e);
        if (ids && !find_hero(t, nl, ids, (int)story_len(s, idx[i]), &hero)) continue;
        for (int k = 1; ids && k < hero.n_mentions; k++)
            if (add_target(out, &cap, idx[i], hero.mentions[k] - 1, e)) ids = NULL;
        if (!ids) {
            story_buf_free(&buf);
            name_targets_free(out);
            return -1;
        }
    }
    story_buf_free(&buf);
    return 0;
}

/* Adds the story run last; its name positions are names->position[*next..]
 * while the story matches (targets come in the order of the stories). */
static void score_story(const Activations *a, int story, const NameTargets *names, int *next, double *sums) {
    for (int p = 0; p < a->n_positions; p++) {
        if (a->target[p] < 0) continue;
        sums[0] += a->loss[p];
        sums[1] += a->correct[p];
    }
    while (names && *next < names->n && names->story[*next] == story) {
        int p = names->position[(*next)++];
        sums[2] += a->loss[p];
        sums[3] += a->correct[p];
        sums[4] += exp(-(double)a->loss[p]);
        sums[5] += 1;
    }
}

int probe_score(const Model *m, const Stories *s, const int *idx, int n, const Ablation *ablation,
                const NameTargets *names, AblateScore *out, Error *e) {
    *out = (AblateScore){0};
    ProbeRunner r;
    int rc = probe_runner_init(&r, m, 1024, e), next = 0;
    double sums[6] = {0};
    StoryBuf buf = {0};
    for (int i = 0; !rc && i < n; i++) {
        const int32_t *ids = story_ids(s, idx[i], &buf, e);
        rc = ids ? probe_run(&r, ids, (int)story_len(s, idx[i]), ablation, e) : -1;
        if (!rc) score_story(&r.acts, idx[i], names, &next, sums);
        if (!rc) out->positions += r.acts.n_predicted;
    }
    probe_runner_free(&r);
    story_buf_free(&buf);
    if (rc) return -1;
    out->loss = out->positions ? sums[0] / (double)out->positions : NAN;
    out->accuracy = out->positions ? sums[1] / (double)out->positions : NAN;
    out->name_positions = (long long)sums[5];
    out->name_loss = sums[5] > 0 ? sums[2] / sums[5] : NAN;
    out->name_accuracy = sums[5] > 0 ? sums[3] / sums[5] : NAN;
    out->name_probability = sums[5] > 0 ? sums[4] / sums[5] : NAN;
    return 0;
}
