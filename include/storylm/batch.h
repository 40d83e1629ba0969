/* Batches (src/model/batch.c): several whole stories, or pieces of longer
 * ones (BatchPiece), packed one after another, as the passes read them. */
#ifndef STORYLM_BATCH_H
#define STORYLM_BATCH_H

#include <stdint.h>

#include "storylm/error.h"
#include "storylm/model_types.h"

int slm_batch_init(Batch *b, int max_tokens, int max_stories, Error *e);
void slm_batch_free(Batch *b);
void slm_batch_clear(Batch *b);
/* Appends a story of len >= 1 ids (normally [EOS] first); fails when full. */
int slm_batch_add(Batch *b, const int32_t *ids, int len, Error *e);
/* Appends a piece of a longer story (see BatchPiece). */
int slm_batch_add_piece(Batch *b, const int32_t *ids, int len, BatchPiece piece, Error *e);
/* Per position p of b: target[p] (the next id, -1 at a story's end or in a
 * piece's context), first_key[p] (the first position a window of W reaches)
 * and story_pos[p] (its place in the whole story; may be NULL). Returns the
 * number of positions with a target. */
int slm_batch_positions(const Batch *b, int W, int32_t *target, int *first_key, int *story_pos);

#endif
