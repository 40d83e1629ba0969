/* What storylm tokenize prints, built by the library: one line a text, its
 * WordPiece pieces or ids, its normalised words (--words), or the same as
 * JSON (docs/json.md; the tokens as /api/tokenize gives them). */
#ifndef STORYLM_TOKENIZE_OUTPUT_H
#define STORYLM_TOKENIZE_OUTPUT_H

#include <stdbool.h>
#include <stdio.h>

#include "storylm/error.h"
#include "storylm/text.h"
#include "storylm/tokenizer.h"

typedef struct TokenizeFormat {
    bool ids;    /* token ids instead of pieces */
    bool json;   /* {"command":"tokenize","tokens":[..]} (or "words") */
    bool words;  /* the normalised words before WordPiece (needs only pre) */
    bool lossy;  /* bytes that are not UTF-8 dropped, not refused */
    bool decode; /* the tokens decoded back into text, as generate writes them */
} TokenizeFormat;

/* Writes the line of one text (len bytes, named what in messages) to out:
 * checked as UTF-8 (unless lossy), then its words (pre; normalised as t
 * does when t has pieces, else BERT-uncased) or tokens (t). */
int slm_tokenize_write(const Tokenizer *t, const Pretokenizer *pre, const TokenizeFormat *f, const char *text,
                       size_t len, const char *what, FILE *out, Error *e);

/* The same for every line of data (len bytes; a final newline ends the
 * last), each a text of its own, named "'name' line N" in messages. */
int slm_tokenize_write_lines(const Tokenizer *t, const Pretokenizer *pre, const TokenizeFormat *f, const char *data,
                             size_t len, const char *name, FILE *out, Error *e);

#endif
