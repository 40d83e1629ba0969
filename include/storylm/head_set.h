/* Sets of heads (HeadSet, model_types.h), numbered over all layers: head h
 * of layer l is g = l*H + h. Every head of every model the loader accepts
 * fits (STORYLM_MAX_ALL_HEADS), so no head number shifts past a word: a
 * number outside the set is simply not in it. */
#ifndef STORYLM_HEAD_SET_H
#define STORYLM_HEAD_SET_H

#include <stdint.h>

#include "storylm/model_types.h"

/* 1 when head g is in s (0 for any g outside 0..STORYLM_MAX_ALL_HEADS-1). */
static inline int slm_head_set_has(const HeadSet *s, int g) {
    return g >= 0 && g < STORYLM_MAX_ALL_HEADS && (s->bits[g / 64] >> (g % 64) & 1u);
}

/* Head g into s (a g outside the set's range is left out). */
static inline void slm_head_set_add(HeadSet *s, int g) {
    if (g >= 0 && g < STORYLM_MAX_ALL_HEADS) s->bits[g / 64] |= (uint64_t)1 << (g % 64);
}

/* Every head of b into a. */
static inline void slm_head_set_add_all(HeadSet *a, const HeadSet *b) {
    for (int i = 0; i < STORYLM_MAX_ALL_HEADS / 64; i++) a->bits[i] |= b->bits[i];
}

static inline int slm_head_set_empty(const HeadSet *s) {
    for (int i = 0; i < STORYLM_MAX_ALL_HEADS / 64; i++)
        if (s->bits[i]) return 0;
    return 1;
}

static inline int slm_head_set_count(const HeadSet *s) {
    int n = 0;
    for (int i = 0; i < STORYLM_MAX_ALL_HEADS / 64; i++) n += __builtin_popcountll(s->bits[i]);
    return n;
}

static inline int slm_head_set_equal(const HeadSet *a, const HeadSet *b) {
    for (int i = 0; i < STORYLM_MAX_ALL_HEADS / 64; i++)
        if (a->bits[i] != b->bits[i]) return 0;
    return 1;
}

/* The largest head of s, or -1 when it is empty. */
static inline int slm_head_set_last(const HeadSet *s) {
    for (int i = STORYLM_MAX_ALL_HEADS / 64 - 1; i >= 0; i--)
        if (s->bits[i]) return i * 64 + 63 - __builtin_clzll(s->bits[i]);
    return -1;
}

/* Layer l's heads of s, H a layer (H <= STORYLM_MAX_HEADS): bit h set when
 * head l*H + h is in s, what a layer's kernels take. */
static inline uint32_t slm_head_set_layer(const HeadSet *s, int l, int H) {
    uint32_t bits = 0;
    for (int h = 0; h < H && h < STORYLM_MAX_HEADS; h++) bits |= (uint32_t)slm_head_set_has(s, l * H + h) << h;
    return bits;
}

/* Every head of layer l (H a layer) into s. */
static inline void slm_head_set_add_layer(HeadSet *s, int l, int H) {
    for (int h = 0; h < H; h++) slm_head_set_add(s, l * H + h);
}

#endif
