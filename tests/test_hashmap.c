/* The hash index (hashmap.h): every key filed is found again through growth
 * from empty, absent keys are not, colliding hashes are told apart by the
 * caller's comparison, and reserve keeps the table at most half full. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "storylm/hashmap.h"

enum { N = 20000 };

/* Entry of key in keys[] under hash h, or -1. */
static int32_t find(const HashMap *m, const uint64_t *keys, uint64_t key, uint64_t h) {
    int32_t i;
    for (HashProbe p = hashmap_probe(m, h); (i = hashmap_next(m, &p)) >= 0;)
        if (keys[i] == key) return i;
    return -1;
}

static uint64_t mix(uint64_t k) {
    k *= 0x9E3779B97F4A7C15ULL;
    return k ^ (k >> 31);
}

static void keys_come_back(void) {
    Error e = {0};
    HashMap m = {0};
    uint64_t none[1] = {5}, *keys = malloc(N * sizeof *keys);
    CHECK(find(&m, none, 5, mix(5)) == -1 && m.slots == NULL); /* empty: no memory, nothing found */
    for (int i = 0; i < N; i++) {
        keys[i] = 3 * (uint64_t)i + 1;
        CHECK(find(&m, keys, keys[i], mix(keys[i])) == -1);
        CHECK(slm_hashmap_add(&m, mix(keys[i]), i, &e) == 0);
        CHECK(2 * m.n <= m.mask + 1);
    }
    CHECK(m.n == N);
    int found = 0, absent = 0;
    for (int i = 0; i < N; i++) {
        found += find(&m, keys, keys[i], mix(keys[i])) == i;
        absent += find(&m, keys, 3 * (uint64_t)i + 2, mix(3 * (uint64_t)i + 2)) == -1;
    }
    CHECK(found == N && absent == N);
    slm_hashmap_free(&m);
    CHECK(m.slots == NULL && m.n == 0);
    free(keys);
}

/* Every key under one hash: the probe walks all of them, the comparison picks. */
static void one_hash_for_all(void) {
    Error e = {0};
    HashMap m = {0};
    uint64_t keys[100];
    for (int i = 0; i < 100; i++) {
        keys[i] = (uint64_t)i * 7;
        CHECK(slm_hashmap_add(&m, 42, i, &e) == 0);
    }
    int ok = 0;
    for (int i = 0; i < 100; i++) ok += find(&m, keys, keys[i], 42) == i;
    CHECK(ok == 100);
    CHECK(find(&m, keys, 5, 42) == -1 && find(&m, keys, 0, 43) == -1);
    slm_hashmap_free(&m);
}

static void reserve_sizes_once(void) {
    Error e = {0};
    HashMap m = {0};
    CHECK(slm_hashmap_reserve(&m, 1000, &e) == 0);
    HashSlot *slots = m.slots;
    CHECK(m.mask + 1 >= 2000 && ((m.mask + 1) & m.mask) == 0); /* a power of two */
    for (int i = 0; i < 1000; i++) CHECK(slm_hashmap_add(&m, mix((uint64_t)i), i, &e) == 0);
    CHECK(m.slots == slots);                                         /* no growth */
    CHECK(slm_hashmap_reserve(&m, 10, &e) == 0 && m.slots == slots); /* never shrinks */
    slm_hashmap_free(&m);
}

int main(void) {
    keys_come_back();
    one_hash_for_all();
    reserve_sizes_once();
    return check_report();
}
