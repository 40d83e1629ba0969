/* Batches: see include/storylm/batch.h. */
#include "storylm/batch.h"

#include <stdlib.h>
#include <string.h>

int slm_batch_init(Batch *b, int max_tokens, int max_stories, Error *e) {
    *b = (Batch){.max_tokens = max_tokens, .max_stories = max_stories};
    if (max_tokens < 1 || max_stories < 1)
        return FAIL(e, NULL, "a batch needs room for at least one token and one story (got %d, %d)", max_tokens,
                    max_stories);
    b->tokens = xmalloc((size_t)max_tokens * sizeof(int32_t), e);
    b->starts = xcalloc((size_t)max_stories + 1, sizeof(int), e);
    b->piece = xcalloc((size_t)max_stories, sizeof *b->piece, e);
    if (!b->tokens || !b->starts || !b->piece) {
        slm_batch_free(b);
        return -1;
    }
    return 0;
}

void slm_batch_free(Batch *b) {
    free(b->tokens);
    free(b->starts);
    free(b->piece);
    *b = (Batch){0};
}

void slm_batch_clear(Batch *b) {
    b->n_stories = 0;
    b->n_tokens = 0;
}

int slm_batch_add(Batch *b, const int32_t *ids, int len, Error *e) {
    return slm_batch_add_piece(b, ids, len, (BatchPiece){.context = 0, .offset = 0, .next = -1}, e);
}

int slm_batch_add_piece(Batch *b, const int32_t *ids, int len, BatchPiece piece, Error *e) {
    if (len < 1) return FAIL(e, NULL, "cannot add a story of %d tokens to a batch", len);
    if (piece.context < 0 || piece.context >= len)
        return FAIL(e, NULL, "a piece of %d tokens cannot begin with %d of context", len, piece.context);
    if (b->n_stories >= b->max_stories || len > b->max_tokens - b->n_tokens)
        return FAIL(e, "make the batch larger or put fewer stories in it",
                    "a story of %d tokens does not fit in the batch (%d of %d tokens, %d of %d stories used)", len,
                    b->n_tokens, b->max_tokens, b->n_stories, b->max_stories);
    memcpy(b->tokens + b->n_tokens, ids, (size_t)len * sizeof(int32_t));
    b->n_tokens += len;
    b->piece[b->n_stories] = piece;
    b->starts[++b->n_stories] = b->n_tokens;
    return 0;
}

int slm_batch_positions(const Batch *b, int W, int32_t *target, int *first_key, int *story_pos) {
    int n_predicted = 0;
    for (int i = 0; i < b->n_stories; i++) {
        int start = b->starts[i], end = b->starts[i + 1];
        const BatchPiece *piece = &b->piece[i];
        for (int p = start; p < end; p++) {
            target[p] = p < start + piece->context ? -1 : p + 1 < end ? b->tokens[p + 1] : piece->next;
            first_key[p] = p - (W - 1) > start ? p - (W - 1) : start;
            n_predicted += target[p] >= 0;
            if (story_pos) story_pos[p] = piece->offset + (p - start); /* --pos: the place in the whole story */
        }
    }
    return n_predicted;
}
