/* The hash index: see include/storylm/hashmap.h. */
#include "storylm/hashmap.h"

#include <stdlib.h>
#include <string.h>

#define HASHMAP_MIN_SLOTS 64

static void place(HashSlot *slots, size_t mask, uint32_t hash, int32_t entry) {
    size_t at = hash & mask;
    while (slots[at].entry >= 0) at = (at + 1) & mask;
    slots[at] = (HashSlot){hash, entry};
}

int slm_hashmap_reserve(HashMap *m, size_t n, Error *e) {
    size_t cap = m->slots ? m->mask + 1 : HASHMAP_MIN_SLOTS;
    if (n > (size_t)INT32_MAX) return FAIL(e, "use a smaller input", "%zu entries are more than a table holds", n);
    while (cap < 2 * n) cap *= 2;
    if (m->slots && cap == m->mask + 1) return 0;
    HashSlot *slots = xmalloc(cap * sizeof *slots, e);
    if (!slots) return -1;
    memset(slots, 0xff, cap * sizeof *slots); /* every entry -1: empty */
    for (size_t i = 0; m->slots && i <= m->mask; i++)
        if (m->slots[i].entry >= 0) place(slots, cap - 1, m->slots[i].hash, m->slots[i].entry);
    free(m->slots);
    m->slots = slots;
    m->mask = cap - 1;
    return 0;
}

int slm_hashmap_add(HashMap *m, uint64_t hash, int32_t entry, Error *e) {
    if ((!m->slots || 2 * (m->n + 1) > m->mask + 1) && slm_hashmap_reserve(m, m->n + 1, e)) return -1;
    place(m->slots, m->mask, (uint32_t)hash, entry);
    m->n++;
    return 0;
}

void slm_hashmap_free(HashMap *m) {
    free(m->slots);
    *m = (HashMap){0};
}
