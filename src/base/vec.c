/* Growable arrays: see include/storylm/vec.h. */
#include "storylm/vec.h"

#include <stdlib.h>
#include <string.h>

int slm_intvec_reserve(IntVec *v, size_t cap, Error *e) {
    if (cap <= v->cap) return 0;
    size_t n = v->cap ? v->cap : 64;
    while (n < cap) n *= 2;
    int32_t *p = xrealloc(v->data, n * sizeof *p, e);
    if (!p) return -1;
    v->data = p;
    v->cap = n;
    return 0;
}

int slm_intvec_push(IntVec *v, int32_t x, Error *e) {
    if (v->len == v->cap && slm_intvec_reserve(v, v->len + 1, e)) return -1;
    v->data[v->len++] = x;
    return 0;
}

void slm_intvec_free(IntVec *v) {
    free(v->data);
    *v = (IntVec){0};
}

int slm_bytevec_reserve(ByteVec *v, size_t cap, Error *e) {
    if (cap <= v->cap) return 0;
    size_t n = v->cap ? v->cap : 256;
    while (n < cap) n *= 2;
    char *p = xrealloc(v->data, n, e);
    if (!p) return -1;
    v->data = p;
    v->cap = n;
    return 0;
}

int slm_bytevec_append(ByteVec *v, const void *data, size_t n, Error *e) {
    if (slm_bytevec_reserve(v, v->len + n + 1, e)) return -1;
    memcpy(v->data + v->len, data, n);
    v->len += n;
    v->data[v->len] = '\0';
    return 0;
}

void slm_bytevec_free(ByteVec *v) {
    free(v->data);
    *v = (ByteVec){0};
}
