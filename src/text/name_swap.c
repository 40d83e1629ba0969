/* Name augmentation for training: see include/storylm/name_swap.h. */
#include "storylm/name_swap.h"

#include <stdlib.h>
#include <string.h>

#include "storylm/fileio.h"
#include "storylm/rng.h"

int slm_names_learn_training(NameList *nl, const char *path, const Stories *s, int *from_all, Error *e) {
    char *text;
    size_t len;
    StorySpan *spans = NULL;
    int n = 0;
    if (slm_file_read_all(path, 0, &text, &len, e)) return -1;
    int rc = slm_stories_split(text, len, path, &spans, &n, NULL, e);
    uint8_t *use = rc ? NULL : xmalloc((size_t)n + 1, e);
    if (!rc && !use) rc = -1;
    if (!rc) {
        int all = n != s->n_stories;
        memset(use, 1, (size_t)n);
        for (int i = 0; !all && i < s->n_test; i++) use[s->test[i]] = 0;
        if (from_all) *from_all = all;
        rc = slm_names_learn(nl, text, spans, n, use, e);
    }
    free(use);
    free(spans);
    free(text);
    return rc;
}

/* The names of the training stories as pieces; those of 2+ pieces can be cut up. */
static int collect_names(NameSwap *ns, Error *e) {
    enum { MAX_NAMES = 20000 };
    const char **words = xmalloc(MAX_NAMES * sizeof *words, e);
    if (!words) return -1;
    int n = slm_names_most_common(&ns->names, words, NULL, MAX_NAMES);
    ns->known = xmalloc((size_t)(n + 1) * sizeof(SwapName), e);
    ns->made = ns->known ? xmalloc((size_t)(n + 1) * sizeof(int), e) : NULL;
    for (int i = 0; ns->made && i < n; i++) {
        SwapName *name = &ns->known[ns->n_known];
        if (slm_swap_name_make(ns->t, &ns->names, words[i], name, NULL)) continue; /* not spelt as one word */
        if (name->n_pieces >= 2) ns->made[ns->n_made++] = ns->n_known;
        ns->n_known++;
    }
    free(words);
    return ns->made ? 0 : -1;
}

int slm_name_swap_init(NameSwap *ns, const Tokenizer *t, const char *path, const Stories *s, double p, Error *e) {
    *ns = (NameSwap){.t = t, .p = p};
    if (slm_names_learn_training(&ns->names, path, s, NULL, e) || collect_names(ns, e) ||
        slm_name_inventor_init(&ns->inventor, t, e)) {
        slm_name_swap_free(ns);
        return -1;
    }
    if (ns->n_known < 2) {
        slm_name_swap_free(ns);
        return FAIL(e, "train without --swap-names and --invent-names on stories without named heroes",
                    "renaming heroes: fewer than 2 names in the training stories of '%s'", path);
    }
    return 0;
}

void slm_name_swap_free(NameSwap *ns) {
    slm_names_free(&ns->names);
    free(ns->known);
    free(ns->made);
    slm_name_inventor_free(&ns->inventor);
    slm_intvec_free(&ns->ids);
    *ns = (NameSwap){0};
}

/* The new name's pieces (n) into pieces: a known name, or one made up, never the hero's own. */
static int pick_name(const NameSwap *ns, Rng *r, const Hero *hero, int32_t *pieces) {
    for (int tries = 0; tries < 8; tries++) {
        int n;
        if (ns->n_made >= 2 && slm_rng_below(r, 2) == 0) { /* made up: the head of one, the tail of another */
            const SwapName *a = &ns->known[ns->made[slm_rng_below(r, (uint64_t)ns->n_made)]];
            const SwapName *b = &ns->known[ns->made[slm_rng_below(r, (uint64_t)ns->n_made)]];
            pieces[0] = a->pieces[0];
            memcpy(pieces + 1, b->pieces + 1, (size_t)(b->n_pieces - 1) * sizeof(int32_t));
            n = b->n_pieces;
        } else {
            const SwapName *a = &ns->known[slm_rng_below(r, (uint64_t)ns->n_known)];
            memcpy(pieces, a->pieces, (size_t)a->n_pieces * sizeof(int32_t));
            n = a->n_pieces;
        }
        if (n != hero->n_pieces || memcmp(pieces, hero->pieces, (size_t)n * sizeof(int32_t)) != 0) return n;
    }
    return 0; /* only the hero's own name came up: leave the story as it is */
}

/* The story (ns->ids, len) into out as it is. */
static int keep(const NameSwap *ns, int len, IntVec *out, Error *e) {
    out->len = 0;
    if (slm_intvec_reserve(out, (size_t)len, e)) return -1;
    memcpy(out->data, ns->ids.data, (size_t)len * sizeof(int32_t));
    out->len = (size_t)len;
    return 0;
}

int slm_name_swap_story(void *ctx, const Stories *s, int story, uint64_t key, IntVec *out, Error *e) {
    NameSwap *ns = ctx;
    int len = (int)story_len(s, story);
    if (slm_intvec_reserve(&ns->ids, (size_t)len, e)) return -1;
    story_copy_ids(s, story, ns->ids.data);
    ns->ids.len = (size_t)len;
    Rng r;
    slm_rng_seed(&r, key);
    Hero hero;
    int32_t pieces[16];
    double u = slm_rng_uniform(&r);
    int n = 0;
    if (u < ns->p + ns->invent && slm_find_hero(ns->t, &ns->names, ns->ids.data, len, &hero)) {
        SwapName made;
        n = u < ns->p ? pick_name(ns, &r, &hero, pieces) : slm_name_invent(&ns->inventor, ns->t, &ns->names, &r, &made);
        if (u >= ns->p) memcpy(pieces, made.pieces, (size_t)n * sizeof(int32_t));
    }
    /* not renamed, or renamed too long for the trainer's chunks: as it is */
    if (n == 0 || len + (n - hero.n_pieces) * hero.n_mentions > TRAIN_AUGMENT_MAX_LEN(len))
        return keep(ns, len, out, e);
    int starts[HERO_MAX_MENTIONS];
    return slm_swap_hero(ns->ids.data, len, &hero, pieces, n, out, starts, e);
}
