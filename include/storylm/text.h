/* Text before WordPiece: BERT BasicTokenizer normalisation (utf8proc) and
 * pre-tokenization into words (PCRE2). Shared by the tokenizer and the
 * vocabulary trainer. */
#ifndef STORYLM_TEXT_H
#define STORYLM_TEXT_H

#include <stddef.h>

#include "storylm/error.h"
#include "storylm/vec.h"

/* BERT normalisation of UTF-8 text, appended to out: drop NUL, U+FFFD and
 * control characters, white space -> ' ', spaces around CJK ideographs, NFD
 * and drop combining marks (Mn), lower-case. Invalid UTF-8 bytes are read as
 * U+FFFD, which the cleaning drops, as a BERT tokenizer given decoded text does. */
int text_normalize(const char *text, size_t len, ByteVec *out, Error *e);

/* The compiled PCRE2 word pattern: runs of non-space non-punctuation, or one
 * punctuation character (Unicode P* or ASCII punctuation, as BERT). */
typedef struct Pretokenizer {
    void *code; /* pcre2_code_8 *, JIT-compiled when available */
} Pretokenizer;

int pretokenizer_init(Pretokenizer *p, Error *e);
void pretokenizer_free(Pretokenizer *p);

/* Calls fn(word, len, ctx) for each word of normalised text, in order.
 * fn returns non-zero to stop early; that value is returned. */
typedef int (*WordFn)(const char *word, size_t len, void *ctx);
int pretokenize(const Pretokenizer *p, const char *normalized, size_t len, WordFn fn, void *ctx, Error *e);

/* 0 when text is valid UTF-8 with no NUL byte; otherwise fails with a message
 * naming `what` and the byte offset of the first bad byte. */
int utf8_validate(const char *text, size_t len, const char *what, Error *e);

#endif
