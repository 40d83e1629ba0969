/* Growable arrays of token ids and bytes. */
#ifndef STORYLM_VEC_H
#define STORYLM_VEC_H

#include <stddef.h>
#include <stdint.h>
#include "storylm/error.h"

typedef struct IntVec {
    int32_t *data;
    size_t len, cap;
} IntVec;

typedef struct ByteVec {
    char *data; /* kept NUL-terminated when len > 0 */
    size_t len, cap;
} ByteVec;

int slm_intvec_push(IntVec *v, int32_t x, Error *e);
int slm_intvec_reserve(IntVec *v, size_t cap, Error *e);
void slm_intvec_free(IntVec *v);

int slm_bytevec_append(ByteVec *v, const void *data, size_t n, Error *e);
int slm_bytevec_reserve(ByteVec *v, size_t cap, Error *e);
void slm_bytevec_free(ByteVec *v);

#endif
