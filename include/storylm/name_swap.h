/* Name augmentation for training (--swap-names), from the chapter's Secret 2:
 * each training story's hero (probes.h: slm_find_hero) is renamed, with
 * probability p, everywhere in the story, to another name: half the time one
 * of the names of the training stories (any of them equally likely), half
 * the time one made up from pieces (the first piece of one name of two or
 * more pieces and the "##" pieces of another). So the network is pushed to
 * copy the name from the story rather than to remember which names are
 * common. Only training stories are given to it; names are learnt from the
 * training stories' text only. */
#ifndef STORYLM_NAME_SWAP_H
#define STORYLM_NAME_SWAP_H

#include <stdint.h>

#include "storylm/error.h"
#include "storylm/name_invent.h"
#include "storylm/names.h"
#include "storylm/stories.h"
#include "storylm/tokenizer.h"
#include "storylm/vec.h"

typedef struct NameSwap {
    const Tokenizer *t;
    NameList names; /* of the training stories */
    double p;
    double invent; /* probability of a freshly invented name instead (--invent-names); p + invent <= 1 */
    NameInventor inventor;
    SwapName *known; /* (n_known) the names of the training stories */
    int n_known;
    int *made; /* (n_made) indices into known of names of 2 or more pieces */
    int n_made;
    IntVec ids; /* scratch: the story being rewritten (one caller at a time) */
} NameSwap;

/* Names learnt from the training stories of path (s as slm_stories_load read it
 * from path): the file split as slm_stories_load splits it, test stories left
 * out; when the split does not line up with s, from every story
 * (*from_all = 1; may be NULL). */
int slm_names_learn_training(NameList *nl, const char *path, const Stories *s, int *from_all, Error *e);

/* The rewriter for stories s of path with probability p. */
int slm_name_swap_init(NameSwap *ns, const Tokenizer *t, const char *path, const Stories *s, double p, Error *e);
void slm_name_swap_free(NameSwap *ns);
/* A TrainAugmentFn (train.h): story `story` of s into out, its hero renamed
 * with probability ns->p (drawn from key), or with probability ns->invent to
 * a name invented for this draw (name_invent.h); otherwise, or without a
 * hero, as it is. With ns->invent 0 the draws are those of --swap-names alone. */
int slm_name_swap_story(void *ns, const Stories *s, int story, uint64_t key, IntVec *out, Error *e);

#endif
