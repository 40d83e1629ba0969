/* Invented names for training (--invent-names): a name that no training story
 * holds, made anew at every draw from the vocabulary's pieces, so that the
 * only way to predict its second piece at a later mention is to find the
 * earlier mention and copy the piece after it (the chapter's Secret 4). */
#ifndef STORYLM_NAME_INVENT_H
#define STORYLM_NAME_INVENT_H

#include <stdint.h>

#include "storylm/error.h"
#include "storylm/names.h"
#include "storylm/rng.h"
#include "storylm/tokenizer.h"

#define NAME_INVENT_MAX_HEAD 3 /* letters of a first piece drawn (longer ones are mostly words) */
#define NAME_INVENT_MAX_TAIL 4 /* letters of a "##" piece drawn */

typedef struct NameInventor {
    int32_t *heads; /* (n_heads) word-start pieces of 1 to NAME_INVENT_MAX_HEAD letters a-z */
    int n_heads;
    int32_t *tails; /* (n_tails) "##" pieces of 1 to NAME_INVENT_MAX_TAIL letters a-z */
    int n_tails;
} NameInventor;

/* The pieces of t that names are made of; fails when t has none of either kind. */
int slm_name_inventor_init(NameInventor *inv, const Tokenizer *t, Error *e);
void slm_name_inventor_free(NameInventor *inv);

/* A name never seen in nl's stories (NAME_INVENTED), of 2 or more pieces as
 * the tokenizer spells it, into out: a head and 1 to 3 tails drawn uniformly
 * from r, the word re-spelt by t (so training sees the pieces a test would).
 * Returns its number of pieces, 0 when 16 draws gave none. */
int slm_name_invent(const NameInventor *inv, const Tokenizer *t, const NameList *nl, Rng *r, SwapName *out);

#endif
