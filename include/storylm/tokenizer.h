/* The WordPiece tokenizer of SPEC section 2: BERT BasicTokenizer normalisation
 * (clean control characters, pad CJK ideographs, strip accents, lower-case),
 * pre-tokenization with PCRE2 (white space splits, every punctuation character
 * its own word), greedy longest-match-first WordPiece with "##" pieces.
 * A standard BERT WordPiece tokenizer given our vocab.txt gives the same ids. */
#ifndef STORYLM_TOKENIZER_H
#define STORYLM_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>

#include "storylm/error.h"
#include "storylm/text.h"
#include "storylm/vec.h"

#define TOKENIZER_MAX_WORD_CHARS 100 /* longer words become [UNK], as in BERT */
#define TOKEN_UNK_TEXT "[UNK]"
#define TOKEN_EOS_TEXT "[EOS]"

typedef struct Tokenizer {
    int size;         /* number of entries; id = line number of vocab.txt */
    char **pieces;    /* id -> piece text ("the", "##s", "[UNK]") */
    int unk_id;       /* id of [UNK] */
    int eos_id;       /* id of [EOS]: opens and closes every story */
    /* lookup: open-addressing hash table of piece -> id */
    int32_t *table;
    size_t table_mask;
    Pretokenizer pretokenizer;
} Tokenizer;

/* Loads vocab.txt (one piece a line). Refuses duplicates, empty lines, a
 * missing [UNK] or [EOS], and (when expected_size > 0) any other size. */
int tokenizer_load(Tokenizer *t, const char *path, int expected_size, Error *e);
/* The same from text in memory (the vocabulary stored in a model file). */
int tokenizer_from_text(Tokenizer *t, const char *text, size_t len, int expected_size, Error *e);
/* vocab.txt text of the pieces, one a line (caller frees). */
char *tokenizer_to_text(const Tokenizer *t, size_t *len, Error *e);
void tokenizer_free(Tokenizer *t);

/* id of an exact piece, or -1. */
int tokenizer_lookup(const Tokenizer *t, const char *piece, size_t len);

/* Text -> ids appended to out (no [EOS] added). */
int tokenizer_encode(const Tokenizer *t, const char *text, size_t len, IntVec *out, Error *e);

/* ids -> readable text: pieces joined, "##" pieces glued to the one before,
 * no space before . , ! ? ; : ' ) and after ( , sentence starts capitalised
 * when capitalize is set. [EOS] is left out. Caller frees. */
char *tokenizer_decode(const Tokenizer *t, const int32_t *ids, size_t n, int capitalize, Error *e);

#endif
