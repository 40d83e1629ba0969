/* Text before WordPiece: BERT BasicTokenizer normalisation (utf8proc) and
 * pre-tokenization into words (PCRE2). Shared by the tokenizer and the
 * vocabulary trainer. The reference for both is BertNormalizer and
 * BertPreTokenizer of @huggingface/tokenizers 0.2.0 (tests/compat). */
#ifndef STORYLM_TEXT_H
#define STORYLM_TEXT_H

#include <stddef.h>

#include "storylm/error.h"
#include "storylm/vec.h"

/* BERT normalisation of UTF-8 text, appended to out (NUL-terminated): drop
 * NUL, U+FFFD and control characters (Cc Cf Co, but \t \n \r are white
 * space), white space -> ' ', spaces around CJK ideographs, lower-case (as
 * JavaScript's toLowerCase, final sigma included), NFD and drop Mn marks.
 * Invalid UTF-8 is read as a browser's TextDecoder reads it (each maximal
 * invalid sequence one U+FFFD, never swallowing a valid character), so bad
 * bytes are dropped. The output is valid UTF-8; its only white space is ' '.
 * Fails only when out of memory. */
int slm_text_normalize(const char *text, size_t len, ByteVec *out, Error *e);

/* BERT-cased normalisation (BasicTokenizer with do_lower_case=False), for a
 * cased vocabulary: the same cleaning, white space and CJK padding, but no
 * lower-casing and no accent stripping; then NFC, so that an accent typed as
 * a combining mark (e + U+0301) gives the same word as the precomposed one
 * (BERT composes nothing; without NFC one word would have two spellings).
 * The output is valid UTF-8; its only white space is ' '. */
int slm_text_normalize_cased(const char *text, size_t len, ByteVec *out, Error *e);

/* The compiled PCRE2 word pattern: runs of non-space non-punctuation, or one
 * punctuation character (Unicode P*, and ASCII punctuation as BERT: !-/ :-@
 * [-` {-~). Read-only once made: threads may share one. */
enum { ASCII_SPACE, ASCII_PUNCT, ASCII_WORD };
typedef struct Pretokenizer {
    void *code;                     /* pcre2_code_8 *, JIT-compiled when available */
    int jit;                        /* 1 when JIT compilation worked */
    unsigned char ascii_class[128]; /* ASCII_*, learnt from the pattern */
} Pretokenizer;

int slm_pretokenizer_init(Pretokenizer *p, Error *e);
void slm_pretokenizer_free(Pretokenizer *p);

/* Calls fn(word, len, ctx) for each word of UTF-8 text (normally the output
 * of slm_text_normalize), in order. fn returns non-zero to stop early; that value
 * is returned. Invalid UTF-8 fails with its byte offset. Allocates only a
 * little match data per call, so it is safe from several threads at once. */
typedef int (*WordFn)(const char *word, size_t len, void *ctx);
int slm_pretokenize(const Pretokenizer *p, const char *normalized, size_t len, WordFn fn, void *ctx, Error *e);

/* 0 when text is valid UTF-8 with no NUL byte; otherwise fails with a message
 * "WHAT: invalid UTF-8 at byte offset N (byte 0xXX)" or "WHAT: NUL byte at
 * byte offset N". */
int slm_utf8_validate(const char *text, size_t len, const char *what, Error *e);

/* text (NUL-terminated) -> out (size bytes, NUL-terminated): valid UTF-8
 * whatever text is, each byte of an invalid sequence written as \xHH (a file
 * name saved as Latin-1: "st\xe9.txt"); cut at a whole character when out is
 * too small. */
void slm_utf8_escape(const char *text, char *out, size_t size);

/* Text a user gives (an argument, a prompt, a request's field): refused when
 * it is not valid UTF-8 or holds a NUL byte, with the message storylm
 * tokenize gives ("the text: invalid UTF-8 at byte offset N (byte 0xXX)")
 * and a hint. Every verb and the server check typed text through this one
 * function before encoding it, so none reads bad bytes silently. */
int slm_text_check(const char *text, size_t len, const char *what, Error *e);

#endif
