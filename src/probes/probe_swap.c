/* Secret 2, it copies the names it knows: the heroes of test stories renamed
 * to common, rare and invented names, and how strongly the network (and the
 * window8 baseline) predicts the new name where it comes back. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "storylm/fileio.h"
#include "storylm/probes.h"

/* ---- measuring -------------------------------------------------------------------- */

/* Adds the later mentions (starts[1..n)) of a name whose first piece is first. */
static void measure(const Activations *a, int32_t first, const int *starts, int n, NameScore *sc) {
    for (int k = 1; k < n; k++) {
        int p = starts[k] - 1, rank;
        double prob = slm_probe_probability(a, p, first, &rank);
        sc->mentions++;
        sc->probability += prob;
        sc->top1 += rank == 1;
        if (starts[k - 1] < p - 7) { /* out of window8's reach: it sees positions p-7..p */
            sc->far_mentions++;
            sc->far_probability += prob;
            sc->far_top1 += rank == 1;
        }
    }
    sc->stories++;
}

static void finish(NameScore *sc) {
    sc->probability = sc->mentions ? sc->probability / (double)sc->mentions : NAN;
    sc->top1 = sc->mentions ? sc->top1 / (double)sc->mentions : NAN;
    sc->far_probability = sc->far_mentions ? sc->far_probability / (double)sc->far_mentions : NAN;
    sc->far_top1 = sc->far_mentions ? sc->far_top1 / (double)sc->far_mentions : NAN;
}

typedef struct SwapWork {
    ProbeRunner model, baseline;
    IntVec ids;
    int starts[HERO_MAX_MENTIONS];
} SwapWork;

/* One story with its hero renamed to name (or as it is, for NAME_ORIGINAL). */
static int swap_story(SwapWork *w, const Tokenizer *t, const int32_t *ids, int len, const Hero *hero,
                      const SwapName *name, const Ablation *ab, SwapRow *row, Error *e) {
    int32_t first = hero->pieces[0];
    if (name->kind == NAME_ORIGINAL) {
        w->ids.len = 0;
        if (slm_intvec_reserve(&w->ids, (size_t)len, e)) return -1;
        memcpy(w->ids.data, ids, (size_t)len * sizeof(int32_t));
        w->ids.len = (size_t)len;
        memcpy(w->starts, hero->mentions, (size_t)hero->n_mentions * sizeof(int));
    } else {
        int unused;
        if (slm_find_word(t, ids, len, name->pieces, name->n_pieces, &unused, 0) > 0) return 0; /* already there */
        if (slm_swap_hero(ids, len, hero, name->pieces, name->n_pieces, &w->ids, w->starts, e)) return -1;
        first = name->pieces[0];
    }
    if (slm_probe_run(&w->model, w->ids.data, (int)w->ids.len, ab, e)) return -1;
    measure(&w->model.acts, first, w->starts, hero->n_mentions, &row->model);
    if (!w->baseline.model) return 0;
    if (slm_probe_run(&w->baseline, w->ids.data, (int)w->ids.len, NULL, e)) return -1;
    measure(&w->baseline.acts, first, w->starts, hero->n_mentions, &row->baseline);
    return 0;
}

int slm_probe_swap(const Model *m, const Model *baseline, const Tokenizer *t, const NameList *nl, const Stories *s,
                   const int *idx, int n, const SwapName *names, int n_names, const Ablation *ablation, SwapRow *rows,
                   Error *e) {
    SwapWork w = {0};
    rows[0] = (SwapRow){.name = {.word = "(each story's own)", .kind = NAME_ORIGINAL}};
    for (int k = 0; k < n_names; k++) rows[k + 1] = (SwapRow){.name = names[k]};
    int rc = slm_probe_runner_init(&w.model, m, 1024, e);
    if (!rc && baseline) rc = slm_probe_runner_init(&w.baseline, baseline, 1024, e);
    StoryBuf buf = {0};
    for (int i = 0; !rc && i < n; i++) {
        const int32_t *ids = slm_story_ids(s, idx[i], &buf, e);
        int len = (int)story_len(s, idx[i]);
        Hero hero;
        if (!ids)
            rc = -1;
        else if (!slm_find_hero(t, nl, ids, len, &hero))
            continue;
        for (int k = 0; !rc && k <= n_names; k++)
            rc = swap_story(&w, t, ids, len, &hero, &rows[k].name, ablation, &rows[k], e);
    }
    for (int k = 0; k <= n_names; k++) {
        finish(&rows[k].model);
        finish(&rows[k].baseline);
    }
    slm_story_buf_free(&buf);
    slm_probe_runner_free(&w.model);
    slm_probe_runner_free(&w.baseline);
    slm_intvec_free(&w.ids);
    return rc;
}
