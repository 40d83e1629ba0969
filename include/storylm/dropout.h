/* Dropout (Srivastava et al., 2014) for training: each number of z, the
 * hidden layer's input, and/or each attention weight is zeroed with
 * probability P and the others scaled by 1/(1-P), so that the expected input
 * of the next layer is unchanged and evaluation runs the network as it is.
 *
 * No mask is stored: whether a number is kept is a hash of its story's key
 * (the run's seed, the step and the story's place in the step), its place in
 * the story, and which number it is (the head and the key's distance back,
 * or the slot of z). So the masks do not depend on how stories are packed
 * into batches or split over threads, a resumed run draws what an
 * uninterrupted one would, and the backward pass draws the forward's mask
 * again. Tests give a fixed mask instead (hidden_mask, attention_mask). */
#ifndef STORYLM_DROPOUT_H
#define STORYLM_DROPOUT_H

#include <stddef.h>
#include <stdint.h>

/* What a forward pass drops (all zero: nothing, the default). */
typedef struct Dropout {
    float hidden;                  /* P for each number of z (N, Z); 0: off; < 1 */
    float attention;               /* P for each attention weight; 0: off; < 1 */
    const uint64_t *story_keys;    /* (the batch's stories) each story's key (slm_dropout_story_key) */
    const uint8_t *hidden_mask;    /* tests, instead of keys: (N, Z), 1 keep, 0 drop */
    const uint8_t *attention_mask; /* tests, instead of keys: (H, N, N), [h][p][u] for key u of position p */
} Dropout;

/* One kind of dropout during one pass. */
typedef struct DropoutMask {
    float p;              /* 0: off */
    float scale;          /* 1 / (1 - p) */
    uint64_t threshold;   /* a 32-bit draw below it drops */
    uint64_t salt;        /* which kind: z or attention */
    const uint64_t *keys; /* (N) each position's key (slm_dropout_position_keys) */
    const uint8_t *fixed; /* tests: the mask itself */
    int n_positions;      /* N of the pass (a fixed attention mask's stride) */
} DropoutMask;

/* The key of the story in slot `slot` of training step `step` of a run seeded `seed`. */
uint64_t slm_dropout_story_key(uint64_t seed, int64_t step, int slot);
/* keys (n): positions first .. first+n-1 of the story keyed story_key. */
void slm_dropout_story_position_keys(uint64_t story_key, int first, int n, uint64_t *keys);
/* keys (N): position t of story i (starts (n_stories+1), packed) gets a key from story_keys[i] and t. */
void slm_dropout_position_keys(const uint64_t *story_keys, const int *starts, int n_stories, uint64_t *keys);
DropoutMask slm_dropout_mask(float p, uint64_t salt, const uint64_t *keys, const uint8_t *fixed);
/* x (n): numbers 0..n-1 of position pos's sequence `stream` (the head, or 0
 * for z), each times 0 or 1/(1-p) by the mask; with a fixed mask, by its
 * entries fixed[at .. at+n). */
void slm_dropout_apply(const DropoutMask *d, int pos, uint64_t stream, size_t at, float *x, int n);

#define DROPOUT_SALT_HIDDEN 0x68696464656eULL
#define DROPOUT_SALT_ATTENTION 0x617474656e74ULL

#endif
