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
#include "storylm/hashmap.h"
#include "storylm/text.h"
#include "storylm/vec.h"

#define TOKENIZER_MAX_WORD_CHARS 100 /* longer words become [UNK], as in BERT */
#define TOKEN_UNK_TEXT "[UNK]"
#define TOKEN_EOS_TEXT "[EOS]"
/* A vocabulary holding this piece is cased: its text keeps capitals and
 * accents (slm_text_normalize_cased). The piece marks the file, so the mode
 * travels with vocab.txt and with the vocabulary in a model file; no text
 * encodes to it ('[' and ']' are words of their own). */
#define TOKEN_CASED_TEXT "[CASED]"

typedef struct Tokenizer {
    int size;          /* number of entries; id = line number of vocab.txt (from 0) */
    char **pieces;     /* id -> piece text ("the", "##s", "[UNK]"), NUL-terminated */
    int *piece_len;    /* id -> bytes of the piece */
    int unk_id;        /* id of [UNK] */
    int eos_id;        /* id of [EOS]: opens and closes every story */
    int cased;         /* 1: the vocabulary has [CASED]; text is normalised without lower-casing */
    HashMap index;     /* lookup: piece -> id, the entries are ids (hashmap.h) */
    int max_piece_len; /* bytes of the longest piece: no longer match is tried */
    char *storage;     /* the pieces' text, one block */
    Pretokenizer pretokenizer;
} Tokenizer;

/* Loads vocab.txt: one piece a line, id = line number from 0; a final newline
 * and CRLF line ends are accepted. Refuses, naming the file and the line,
 * empty lines, duplicate pieces, invalid UTF-8, a missing [UNK] or [EOS], and
 * (when expected_size > 0) any other number of pieces. A missing file fails
 * with the hint to run storylm vocab. */
int slm_tokenizer_load(Tokenizer *t, const char *path, int expected_size, Error *e);
/* The same from text in memory (the vocabulary stored in a model file). */
int slm_tokenizer_from_text(Tokenizer *t, const char *text, size_t len, int expected_size, Error *e);
/* vocab.txt text of the pieces, one a line, each ending in '\n' (caller frees). */
char *slm_tokenizer_to_text(const Tokenizer *t, size_t *len, Error *e);
void slm_tokenizer_free(Tokenizer *t);

/* The tokenizer's normalisation of text, appended to out: BERT-uncased
 * (slm_text_normalize) or, for a cased vocabulary, BERT-cased. */
int slm_tokenizer_normalize(const Tokenizer *t, const char *text, size_t len, ByteVec *out, Error *e);

/* id of an exact piece ("the", "##s"), or -1. */
int slm_tokenizer_lookup(const Tokenizer *t, const char *piece, size_t len);

/* Text -> ids appended to out (no [EOS] added). Any bytes are accepted:
 * invalid UTF-8 and NUL bytes are dropped by the normalisation (check with
 * slm_utf8_validate first to refuse them instead). The text "[UNK]" or "[EOS]" is
 * plain text, never a special token. Thread-safe: threads may encode with
 * the same Tokenizer at once. */
int slm_tokenizer_encode(const Tokenizer *t, const char *text, size_t len, IntVec *out, Error *e);

/* A memo of the words one thread has encoded with one Tokenizer: most words
 * of a corpus come back again and again, and a word of several pieces costs
 * a lookup for every length tried. The ids are those of slm_tokenizer_encode. */
typedef struct TokenizerMemo {
    struct MemoSlot *slots; /* a fixed number of remembered words */
    const Tokenizer *t;     /* the tokenizer the memo is of */
} TokenizerMemo;
int slm_tokenizer_memo_init(TokenizerMemo *m, const Tokenizer *t, Error *e);
void slm_tokenizer_memo_free(TokenizerMemo *m);
/* slm_tokenizer_encode, with m (of t; one thread's at a time) remembering words. */
int slm_tokenizer_encode_memo(const Tokenizer *t, TokenizerMemo *m, const char *text, size_t len, IntVec *out,
                              Error *e);

/* ids -> readable text (caller frees). "##" pieces are glued to the piece
 * before; words are separated by one space, except: no space before
 * . , ! ? ; : ) ] } ” » … %, none after ( [ { “ « ‘ „ ‚, none around - / – —;
 * a " opens and closes in turn, but opens after "said," (a speech verb and
 * a comma or colon); “ and ‘ close a „ and ‚; an apostrophe after a word is glued to it, and to the word after
 * when that is t s m re ve ll d ("don't", "lily's") or the word before is a
 * French or Italian elision (l'histoire, qu'il); . and : between digits are
 * glued on both sides (3.5, 10:30). With capitalize (ignored for a cased
 * vocabulary, whose letters are the text's), sentence starts, the word "i",
 * and the word after a quote closed on . ! or ? get a capital letter, unless
 * after ! or ? it opens a dialogue tag: a speech verb or a pronoun ("Why?"
 * asked tom). Only the pieces so far decide a piece's text, so the text of
 * a prefix of ids (ending at a whole word) starts the text of all of them.
 * [EOS] is left out (the next story starts a sentence). An id outside the
 * vocabulary fails. decode(encode(text)) equals the normalised text up to
 * spaces, and encoding the decoded text gives the same ids again, for text
 * whose words have no [UNK]. */
char *slm_tokenizer_decode(const Tokenizer *t, const int32_t *ids, size_t n, int capitalize, Error *e);

#endif
