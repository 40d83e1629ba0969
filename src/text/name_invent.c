/* Invented names for training: see include/storylm/name_invent.h. */
#include "storylm/name_invent.h"

#include <stdlib.h>
#include <string.h>

#include "storylm/fileio.h"

/* The letters of piece after skip bytes are 1 to max of a-z. */
static int letters(const char *piece, int len, int skip, int max) {
    if (len - skip < 1 || len - skip > max) return 0;
    for (int i = skip; i < len; i++)
        if (piece[i] < 'a' || piece[i] > 'z') return 0;
    return 1;
}

int slm_name_inventor_init(NameInventor *inv, const Tokenizer *t, Error *e) {
    *inv = (NameInventor){0};
    inv->heads = xmalloc((size_t)t->size * sizeof(int32_t), e);
    inv->tails = inv->heads ? xmalloc((size_t)t->size * sizeof(int32_t), e) : NULL;
    if (!inv->tails) {
        slm_name_inventor_free(inv);
        return -1;
    }
    for (int id = 0; id < t->size; id++) {
        const char *p = t->pieces[id];
        int len = t->piece_len[id];
        if (len > 2 && p[0] == '#' && p[1] == '#') {
            if (letters(p, len, 2, NAME_INVENT_MAX_TAIL)) inv->tails[inv->n_tails++] = id;
        } else if (letters(p, len, 0, NAME_INVENT_MAX_HEAD))
            inv->heads[inv->n_heads++] = id;
    }
    if (inv->n_heads == 0 || inv->n_tails == 0) {
        slm_name_inventor_free(inv);
        return FAIL(e, "use a vocabulary with word pieces and ## pieces of letters (storylm vocab learns one)",
                    "names cannot be invented: the vocabulary has no %s pieces of 1 to %d letters",
                    inv->n_heads == 0 ? "word-start" : "\"##\"",
                    inv->n_heads == 0 ? NAME_INVENT_MAX_HEAD : NAME_INVENT_MAX_TAIL);
    }
    return 0;
}

void slm_name_inventor_free(NameInventor *inv) {
    free(inv->heads);
    free(inv->tails);
    *inv = (NameInventor){0};
}

int slm_name_invent(const NameInventor *inv, const Tokenizer *t, const NameList *nl, Rng *r, SwapName *out) {
    for (int tries = 0; tries < 16; tries++) {
        char word[1 + NAME_INVENT_MAX_HEAD + 3 * NAME_INVENT_MAX_TAIL];
        const char *head = t->pieces[inv->heads[slm_rng_below(r, (uint64_t)inv->n_heads)]];
        size_t len = strlen(head);
        memcpy(word, head, len);
        int n_tails = 1 + (int)slm_rng_below(r, 3);
        for (int k = 0; k < n_tails; k++) {
            const char *tail = t->pieces[inv->tails[slm_rng_below(r, (uint64_t)inv->n_tails)]] + 2;
            size_t n = strlen(tail);
            memcpy(word + len, tail, n);
            len += n;
        }
        word[len] = '\0';
        if (slm_swap_name_make(t, nl, word, out, NULL) == 0 && out->kind == NAME_INVENTED && out->n_pieces >= 2)
            return out->n_pieces;
    }
    return 0;
}
