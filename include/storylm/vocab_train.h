/* Learning the WordPiece vocabulary (SPEC section 2, `storylm vocab`).
 *
 * The way HuggingFace's WordPieceTrainer does it: a BPE trainer with the
 * continuing-subword prefix "##". Every word is split into characters, the
 * first as is and the rest as "##c"; the most frequent adjacent pair of pieces
 * is merged, again and again, into a + b (b without its "##"). The vocabulary
 * is [UNK] (id 0), [EOS] (id 1), [CASED] (id 2) in a cased vocabulary, the alphabet ("c" for every character kept,
 * by code point, then "##c" for those seen inside a word, by code point), then
 * the merged pieces in merge order, until it holds exactly `size` entries.
 *
 * Deterministic: ties between pairs of equal count go to the pair whose first
 * piece, then second piece, sorts first bytewise; the result depends only on
 * the multiset of (word, count), not on the order of the words or threads.
 *
 * Where we differ from HuggingFace, on purpose: ties go by the pieces' bytes
 * (HF: by ids, and its "##c" ids follow hash-map order), "##c" pieces are in
 * code point order, words over 100 characters are left out (they are [UNK]
 * in encoding), and when the alphabet must be cut, words with a character
 * left out are left out whole (HF drops the character and merges across it). */
#ifndef STORYLM_VOCAB_TRAIN_H
#define STORYLM_VOCAB_TRAIN_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "storylm/error.h"
#include "storylm/stories.h"

#define VOCAB_DEFAULT_SIZE 2000
#define VOCAB_MIN_SIZE 3 /* [UNK], [EOS] and at least one piece */
#define VOCAB_MAX_SIZE 1000000

/* One pre-tokenized, normalised word and how often it occurs. */
typedef struct WordCount {
    const char *word; /* UTF-8, no white space; need not be NUL-terminated */
    size_t len;       /* in bytes */
    int64_t count;    /* > 0 */
} WordCount;

/* What the training saw and did, for the summary a user reads. */
typedef struct VocabStats {
    /* reading (slm_vocab_train_text only) */
    int n_stories;         /* stories read */
    StorySkips skips;      /* stories left out, by reason */
    int64_t n_word_tokens; /* words in the text, repeats counted */
    /* training */
    int n_words;                   /* distinct words given */
    int n_long_words;              /* left out: longer than 100 characters ([UNK] anyway) */
    int n_chars;                   /* distinct characters in the words trained on */
    int n_chars_kept;              /* characters in the alphabet (fewer when size is small) */
    int64_t n_char_tokens;         /* character occurrences, repeats counted */
    int64_t n_char_tokens_dropped; /* occurrences of characters left out of the alphabet */
    int n_words_dropped;           /* distinct words with a character left out ([UNK] anyway) */
    int n_alphabet_pieces;         /* "c" and "##c" pieces */
    int n_merges;                  /* merges done */
    int n_merges_existing;         /* merges whose piece was already in the vocabulary */
    int64_t last_merge_count;      /* how often the last merged pair occurred */
} VocabStats;

/* A learnt vocabulary: pieces[id], id = line number of vocab.txt. */
typedef struct Vocab {
    int size;
    char **pieces; /* NUL-terminated UTF-8 */
} Vocab;

/* Learns a vocabulary of exactly `size` pieces from words and their counts.
 * Words longer than 100 characters are left out. When the characters need
 * more room than size - 2, the most frequent ones are kept (ties: lower code
 * point) and words with any other character are left out. Fails, saying how
 * many pieces could be learnt, when the words cannot fill `size`. st may be
 * NULL. */
int slm_vocab_train_from_counts(const WordCount *words, size_t n_words, int size, Vocab *v, VocabStats *st, Error *e);

/* Counts the words of a stories file's text (split into stories, normalised
 * and pre-tokenized exactly as the tokenizer does, in parallel with OpenMP)
 * and learns the vocabulary from them. `what` names the file in messages. */
int slm_vocab_train_text(const char *text, size_t len, const char *what, int size, Vocab *v, VocabStats *st, Error *e);
/* The same, giving up as soon as *stop is set (looked at before each story
 * is counted and each merge): fails with "stopped" (a server stopping does
 * not wait for a file of hundreds of megabytes). stop may be NULL. With
 * up_to, size is a ceiling (as slm_vocab_train_text_up_to). With cased, the
 * words keep their capitals and accents (slm_text_normalize_cased) and the
 * vocabulary holds [CASED] after [EOS] (id 2), which makes the tokenizer
 * read text that way. */
int slm_vocab_train_text_until(const char *text, size_t len, const char *what, int size, bool up_to, bool cased,
                               const volatile sig_atomic_t *stop, Vocab *v, VocabStats *st, Error *e);

/* As slm_vocab_train_text, but max_size is a ceiling: when the words cannot
 * fill it, the vocabulary holds every piece they give (v->size < max_size),
 * which a small corpus needs. */
int slm_vocab_train_text_up_to(const char *text, size_t len, const char *what, int max_size, Vocab *v, VocabStats *st,
                               Error *e);

/* vocab.txt text: one piece a line, "\n" line ends (caller frees). */
char *slm_vocab_to_text(const Vocab *v, size_t *len, Error *e);
/* Writes vocab.txt atomically. */
int slm_vocab_save(const Vocab *v, const char *path, Error *e);
void slm_vocab_free(Vocab *v);

#endif
