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

int intvec_push(IntVec *v, int32_t x, Error *e);
int intvec_reserve(IntVec *v, size_t cap, Error *e);
void intvec_free(IntVec *v);

int bytevec_append(ByteVec *v, const void *data, size_t n, Error *e);
int bytevec_reserve(ByteVec *v, size_t cap, Error *e);
void bytevec_free(ByteVec *v);

#endif
