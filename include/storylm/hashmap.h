/* A small hash index, the one every lookup table of the library uses (the
 * tokenizer's pieces, the vocabulary trainer's words and pairs, the names
 * probe's words): it files entries, numbers 0, 1, ... into arrays the caller
 * keeps, under their keys' hashes, and the caller compares the keys. So one
 * table serves any key (strings, pairs of ids, code points) without
 * callbacks, and a lookup stays an inlined loop in the caller:
 *
 *   int32_t i;
 *   for (HashProbe p = hashmap_probe(&m, h); (i = hashmap_next(&m, &p)) >= 0;)
 *       if (entry i's key is the key sought) return i;
 *   ...not there: keep the new entry as number n, then slm_hashmap_add(&m, h, n, e)
 *
 * Linear probing over a power-of-two table kept at most half full. Each slot
 * keeps 32 bits of the hash beside the entry, so a probe passes most other
 * keys without reading them and the table grows without asking for keys.
 * A zeroed HashMap is an empty one, no memory held. */
#ifndef STORYLM_HASHMAP_H
#define STORYLM_HASHMAP_H

#include <stddef.h>
#include <stdint.h>

#include "storylm/error.h"

typedef struct HashSlot {
    uint32_t hash; /* the entry's hash, low 32 bits */
    int32_t entry; /* -1: empty */
} HashSlot;

typedef struct HashMap {
    HashSlot *slots; /* (mask + 1), NULL while empty */
    size_t mask;
    size_t n; /* entries filed */
} HashMap;

/* Where a lookup of one hash stands. */
typedef struct HashProbe {
    size_t at;
    uint32_t hash;
} HashProbe;

static inline HashProbe hashmap_probe(const HashMap *m, uint64_t hash) {
    return (HashProbe){(uint32_t)hash & m->mask, (uint32_t)hash};
}

/* The next entry filed under p's hash (the caller compares its key), or -1
 * when there is none left: the key is not in the table. */
static inline int32_t hashmap_next(const HashMap *m, HashProbe *p) {
    if (!m->slots) return -1;
    for (;;) {
        const HashSlot *s = &m->slots[p->at];
        p->at = (p->at + 1) & m->mask;
        if (s->entry < 0) return -1;
        if (s->hash == p->hash) return s->entry;
    }
}

/* Files entry (>= 0, its key not in the table yet) under hash, growing the
 * table when it would be more than half full. */
int slm_hashmap_add(HashMap *m, uint64_t hash, int32_t entry, Error *e);
/* Room for n entries in all without growing (the table only grows). */
int slm_hashmap_reserve(HashMap *m, size_t n, Error *e);
void slm_hashmap_free(HashMap *m);

#endif
