/* The lines of storylm tokenize: see include/storylm/tokenize_output.h. */
#include "storylm/tokenize_output.h"

#include <stdlib.h>
#include <string.h>

#include "storylm/probe_views.h"
#include "storylm/report.h"
#include "storylm/vec.h"
#include "storylm/views.h"

/* The words as they come: spaces between them, or strings of a JSON array. */
typedef struct WordsCtx {
    FILE *out;
    cJSON *json; /* NULL for text */
    int count;
    Error *e;
} WordsCtx;

static int put_word(const char *word, size_t len, void *ctx_) {
    WordsCtx *ctx = ctx_;
    if (!ctx->json) {
        if (ctx->count++) fputc(' ', ctx->out);
        fwrite(word, 1, len, ctx->out);
        return 0;
    }
    char *copy = malloc(len + 1); /* cJSON takes a NUL-terminated string */
    cJSON *s = NULL;
    if (copy) {
        memcpy(copy, word, len);
        copy[len] = '\0';
        s = cJSON_CreateString(copy);
        free(copy);
    }
    if (!s || !cJSON_AddItemToArray(ctx->json, s)) {
        cJSON_Delete(s);
        return FAIL(ctx->e, "free some memory and try again", "out of memory listing the words");
    }
    return 0;
}

/* The normalised words, before WordPiece: as t normalises (cased or not), or
 * BERT-uncased when no vocabulary was loaded (t NULL). */
static int write_words(const Tokenizer *t, const Pretokenizer *pre, const char *text, size_t len, bool json, FILE *out,
                       Error *e) {
    ByteVec normalized = {0};
    if (t ? slm_tokenizer_normalize(t, text, len, &normalized, e) : slm_text_normalize(text, len, &normalized, e))
        return -1;
    cJSON *j = json ? slm_view_json_begin("tokenize") : NULL;
    WordsCtx ctx = {out, j ? cJSON_AddArrayToObject(j, "words") : NULL, 0, e};
    int rc = json && !ctx.json ? FAIL(e, "free some memory and try again", "out of memory listing the words") : 0;
    if (!rc) rc = slm_pretokenize(pre, normalized.data ? normalized.data : "", normalized.len, put_word, &ctx, e);
    slm_bytevec_free(&normalized);
    if (!json) return fputc('\n', out), rc;
    if (rc) return cJSON_Delete(j), rc;
    return slm_report_json_write(j, out, true, e);
}

/* The tokens: pieces or ids with spaces between them, or as JSON. */
static int write_tokens(const Tokenizer *t, const char *text, size_t len, const TokenizeFormat *f, FILE *out,
                        Error *e) {
    IntVec ids = {0};
    if (slm_tokenizer_encode(t, text, len, &ids, e)) return -1;
    if (f->decode) { /* the text as generate would write these tokens */
        char *back = slm_tokenizer_decode(t, ids.data, ids.len, 1, e);
        slm_intvec_free(&ids);
        if (!back) return -1;
        fprintf(out, "%s\n", back);
        free(back);
        return 0;
    }
    if (f->json) { /* the tokens built where the server builds /api/tokenize */
        cJSON *j = slm_view_json_begin("tokenize"), *tokens = slm_view_tokens_json(t, ids.data, ids.len);
        if (!cJSON_AddItemToObject(j, "tokens", tokens)) cJSON_Delete(tokens);
        slm_intvec_free(&ids);
        return slm_report_json_write(j, out, true, e);
    }
    for (size_t i = 0; i < ids.len; i++) {
        if (i) fputc(' ', out);
        if (f->ids)
            fprintf(out, "%d", ids.data[i]);
        else
            fputs(t->pieces[ids.data[i]], out);
    }
    fputc('\n', out);
    slm_intvec_free(&ids);
    return 0;
}

int slm_tokenize_write(const Tokenizer *t, const Pretokenizer *pre, const TokenizeFormat *f, const char *text,
                       size_t len, const char *what, FILE *out, Error *e) {
    if (!f->lossy && slm_utf8_validate(text, len, what, e)) {
        snprintf(e->hint, sizeof e->hint, "%s",
                 "convert the text to UTF-8 without NUL bytes, or pass --lossy to drop them");
        return -1;
    }
    if (f->words) return write_words(t && t->pieces ? t : NULL, pre, text, len, f->json, out, e);
    return write_tokens(t, text, len, f, out, e);
}

int slm_tokenize_write_lines(const Tokenizer *t, const Pretokenizer *pre, const TokenizeFormat *f, const char *data,
                             size_t len, const char *name, FILE *out, Error *e) {
    int rc = 0;
    size_t line = 1;
    for (size_t at = 0; at < len && rc == 0; line++) {
        const char *end = memchr(data + at, '\n', len - at);
        size_t stop = end ? (size_t)(end - data) : len;
        char what[1100];
        snprintf(what, sizeof what, "'%s' line %zu", name, line);
        rc = slm_tokenize_write(t, pre, f, data + at, stop - at, what, out, e);
        at = stop + 1;
    }
    return rc;
}
