/* Secret 2, it copies the names it knows: the heroes of test stories renamed
 * to common, rare and invented names, and how strongly the network (and the
 * window8 baseline) predicts the new name where it comes back. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "storylm/fileio.h"
#include "storylm/probes.h"

const char *const slm_name_kind_names[4] = {"original", "common", "rare", "invented"};

/* Candidates for invented names: none is an English word; those the training
 * text holds, or that come out in fewer pieces than asked, are passed over. */
static const char *const invented_candidates[] = {"zarko",   "blimto",  "quenfrey", "vodrick", "plimzy", "grunthor",
                                                  "tazmin",  "dribbet", "yolvane",  "krespin", "zubnik", "flormax",
                                                  "wuzzlet", "trobkin", "snerda",   "glimbo"};

int slm_swap_name_make(const Tokenizer *t, const NameList *nl, const char *word, SwapName *name, Error *e) {
    *name = (SwapName){0};
    size_t n = strlen(word);
    if (n == 0 || n >= sizeof name->word)
        return FAIL(e, "give names of 1 to 63 letters", "cannot use the name '%s'", word);
    for (size_t i = 0; i <= n; i++)
        name->word[i] = (char)(word[i] >= 'A' && word[i] <= 'Z' ? word[i] - 'A' + 'a' : word[i]);
    IntVec ids = {0};
    if (slm_tokenizer_encode(t, name->word, n, &ids, e)) return -1;
    char joined[64];
    int pieces = ids.len > 0 ? slm_word_at(t, ids.data, (int)ids.len, 0, joined, sizeof joined) : 0;
    int ok = pieces > 0 && (size_t)pieces == ids.len && pieces <= 16 && ids.data[0] != t->unk_id;
    if (ok) memcpy(name->pieces, ids.data, (size_t)pieces * sizeof(int32_t));
    slm_intvec_free(&ids);
    if (!ok)
        return FAIL(e, "give single words of letters, like lily or zarko",
                    "'%s' is not one word this vocabulary can spell in at most 16 pieces", word);
    name->n_pieces = pieces;
    name->train_count = slm_names_count(nl, name->word);
    name->kind = name->train_count == 0 ? NAME_INVENTED : name->train_count < NAME_RARE_BELOW ? NAME_RARE : NAME_COMMON;
    return 0;
}

int slm_invented_names(const Tokenizer *t, const NameList *nl, int min_pieces, SwapName *out, int max) {
    int k = 0;
    for (size_t i = 0; i < sizeof invented_candidates / sizeof invented_candidates[0] && k < max; i++) {
        SwapName name;
        if (slm_swap_name_make(t, nl, invented_candidates[i], &name, NULL)) continue;
        if (name.kind == NAME_INVENTED && name.n_pieces >= min_pieces) out[k++] = name;
    }
    return k;
}

typedef struct RareName {
    const char *word;
    int count;
    uint64_t order;
} RareName;

static int by_rarity(const void *a, const void *b) {
    const RareName *x = a, *y = b;
    if (x->count != y->count) return x->count < y->count ? -1 : 1;
    return x->order < y->order ? -1 : x->order > y->order;
}

/* Up to max names seen 2 to NAME_RARE_BELOW - 1 times, the least seen first
 * (ties in a fixed order that does not follow the alphabet). */
static int rare_names(const Tokenizer *t, const NameList *nl, SwapName *out, int max) {
    RareName *all = malloc((nl->count + 1) * sizeof *all);
    if (!all) return 0;
    int n = 0, k = 0;
    for (size_t s = 0; s < nl->count; s++)
        if (slm_names_is_name(nl, nl->words[s]) && nl->total[s] < NAME_RARE_BELOW)
            all[n++] = (RareName){nl->words[s], nl->total[s], slm_hash64(nl->words[s], strlen(nl->words[s]), 7)};
    qsort(all, (size_t)n, sizeof *all, by_rarity);
    for (int i = 0; i < n && k < max; i++)
        if (slm_swap_name_make(t, nl, all[i].word, &out[k], NULL) == 0) k++;
    free(all);
    return k;
}

int slm_swap_default_names(const Tokenizer *t, const NameList *nl, SwapName *out, int max) {
    const char *common[3];
    int k = 0, n = slm_names_most_common(nl, common, NULL, 3);
    for (int i = 0; i < n && k < max; i++)
        if (slm_swap_name_make(t, nl, common[i], &out[k], NULL) == 0) k++;
    k += rare_names(t, nl, out + k, max - k < 3 ? max - k : 3);
    k += slm_invented_names(t, nl, 3, out + k, max - k < 3 ? max - k : 3);
    return k;
}

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
