/* Names and heroes (src/text/names.c): the names the probes swap (Secrets 2
 * and 4) and training rewrites (--swap-names, name_swap.h).
 *
 * Which words are names is learnt from the text of training stories (the
 * tokenizer lower-cases, so ids alone cannot tell): a word (a run of ASCII
 * letters) is a name when it appears capitalised (first letter upper, the
 * rest lower) at least twice where a sentence does not start (not first in
 * the story, or after . ! ? " or a line break), and lower-case at most once
 * for every 10 such uses, and is not one of a few capitalised common words
 * (i, mom, dad, mr, days, months, ...). The hero of a story is the first
 * name in its first sentence (up to the first . ! or ?) that comes back
 * later in the story as a whole word. */
#ifndef STORYLM_NAMES_H
#define STORYLM_NAMES_H

#include <stddef.h>
#include <stdint.h>

#include "storylm/error.h"
#include "storylm/hashmap.h"
#include "storylm/stories.h"
#include "storylm/tokenizer.h"
#include "storylm/vec.h"

typedef struct NameList {
    char **words;      /* (count) every word seen, lower-case, in the order first seen */
    int *total;        /* (count) times seen in any form */
    int *cap_mid;      /* (count) capitalised where no sentence starts */
    int *lower;        /* (count) lower-case */
    size_t cap, count; /* entries room is made for, entries */
    HashMap index;     /* word -> entry (hashmap.h) */
    long long stories;
} NameList;

/* Counts words over stories spans[i] of text for which use[i] is non-zero
 * (use NULL: all). */
int slm_names_learn(NameList *nl, const char *text, const StorySpan *spans, int n_spans, const uint8_t *use, Error *e);
void slm_names_free(NameList *nl);
/* Times word (lower-case) was seen in any form; 0 when never. */
int slm_names_count(const NameList *nl, const char *word);
/* 1 when word (lower-case) is a name by the rule above. */
int slm_names_is_name(const NameList *nl, const char *word);
/* The names, most common first (ties by word), at most max; returns how many. */
int slm_names_most_common(const NameList *nl, const char **out, int *counts, int max);

/* A word as pieces: token ids [start, start + n) with no "##" piece after. */
/* The lower-case text of the word starting at ids[i] (pieces joined, "##"
 * dropped) into buf; returns the number of pieces, 0 when ids[i] is itself
 * a "##" piece or the word does not fit. */
int slm_word_at(const Tokenizer *t, const int32_t *ids, int len, int i, char *buf, size_t size);

#define HERO_MAX_MENTIONS 256
typedef struct Hero {
    char word[64]; /* lower-case */
    int32_t pieces[16];
    int n_pieces;
    int mentions[HERO_MAX_MENTIONS]; /* start of every mention, ascending; [0] is the first */
    int n_mentions;                  /* >= 2 when found */
} Hero;

/* 1 and *hero filled when the story ids (len) has a hero by the rule above,
 * 0 when not. */
int slm_find_hero(const Tokenizer *t, const NameList *nl, const int32_t *ids, int len, Hero *hero);
/* Every whole-word occurrence of the word of pieces (n) in ids into starts
 * (at most max); returns how many. */
int slm_find_word(const Tokenizer *t, const int32_t *ids, int len, const int32_t *pieces, int n, int *starts, int max);
/* ids with every mention of hero replaced by pieces (n) into out (cleared
 * first); new_starts (hero->n_mentions) gets the mentions' new starts. */
int slm_swap_hero(const int32_t *ids, int len, const Hero *hero, const int32_t *pieces, int n, IntVec *out,
                  int *new_starts, Error *e);

/* The names swapped in (Secret 2 and 4). */
typedef enum { NAME_ORIGINAL, NAME_COMMON, NAME_RARE, NAME_INVENTED } NameKind;
extern const char *const slm_name_kind_names[4];
#define NAME_RARE_BELOW 20 /* seen fewer times in training: rare; never: invented */

typedef struct SwapName {
    char word[64];
    NameKind kind;
    int train_count; /* times seen in the training stories */
    int32_t pieces[16];
    int n_pieces;
} SwapName;

/* Fills name from word: its pieces (fails when it is not one word of at most
 * 16 pieces) and its kind from nl's counts. */
int slm_swap_name_make(const Tokenizer *t, const NameList *nl, const char *word, SwapName *name, Error *e);
/* The default list: the 3 most common names, 3 rare ones (seen 2 to 19
 * times, the least seen first), 3 invented ones never seen and of 3 or more
 * pieces (from a fixed list of candidates). Returns how many (at most max). */
int slm_swap_default_names(const Tokenizer *t, const NameList *nl, SwapName *out, int max);
/* Invented names of at least min_pieces pieces never seen in training. */
int slm_invented_names(const Tokenizer *t, const NameList *nl, int min_pieces, SwapName *out, int max);

#endif
