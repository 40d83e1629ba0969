/* Dropout's masks: see include/storylm/dropout.h. */
#include "storylm/dropout.h"

#include <math.h>
#include <string.h>

#include "storylm/layers.h"
#include "storylm/model_params.h"
#include "storylm/position.h"
#include "storylm/rng.h"
#include "storylm/score.h" /* VariantScratch */

uint64_t slm_dropout_story_key(uint64_t seed, int64_t step, int slot) {
    uint64_t x = seed * 0xD1B54A32D192ED03ULL ^ (uint64_t)step;
    x = slm_splitmix64(&x) ^ (uint64_t)slot;
    return slm_splitmix64(&x);
}

/* keys (n): positions first .. first+n-1 of the story keyed story_key. */
static void slm_dropout_story_position_keys(uint64_t story_key, int first, int n, uint64_t *keys) {
    for (int t = 0; t < n; t++) {
        uint64_t x = story_key + (uint64_t)(first + t) * 0xA24BAED4963EE407ULL;
        keys[t] = slm_splitmix64(&x);
    }
}

void slm_dropout_position_keys(const uint64_t *story_keys, const int *starts, int n_stories, uint64_t *keys) {
    for (int i = 0; i < n_stories; i++)
        slm_dropout_story_position_keys(story_keys[i], 0, starts[i + 1] - starts[i], keys + starts[i]);
}

DropoutMask slm_dropout_mask(float p, uint64_t salt, const uint64_t *keys, const uint8_t *fixed) {
    if (!(p > 0.0f)) return (DropoutMask){0};
    /* p of the 2^32 draws fall below the threshold */
    return (DropoutMask){.p = p,
                         .scale = 1.0f / (1.0f - p),
                         .threshold = (uint64_t)llround(p * 4294967296.0),
                         .salt = salt,
                         .keys = keys,
                         .fixed = fixed};
}

/* Value k (from 1) of the slm_splitmix64 stream started at state: its
 * state then is state + k * its increment, so each value is computed on its
 * own (the same bits as k calls of slm_splitmix64), and a loop of them has
 * no chain from one to the next and no call. */
static inline uint64_t splitmix64_at(uint64_t state, uint64_t k) {
    uint64_t z = state + k * 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* Two 32-bit draws from each 64-bit value of a slm_splitmix64 stream: a few
 * cycles a number, against the tens a key costs in attention. */
void slm_dropout_apply(const DropoutMask *d, int pos, uint64_t stream, size_t at, float *x, int n) {
    if (d->fixed) {
        for (int j = 0; j < n; j++) x[j] *= d->fixed[at + j] ? d->scale : 0.0f;
        return;
    }
    uint64_t state = d->keys[pos] ^ d->salt ^ (stream + 1) * 0x9FB21C651E98DF25ULL, threshold = d->threshold;
    /* factor[draw >= threshold]: a lookup, not a branch taken at random P of the time */
    const float factor[2] = {0.0f, d->scale};
    for (int k = 0; k < n / 2; k++) {
        uint64_t r = splitmix64_at(state, (uint64_t)k + 1);
        x[2 * k] *= factor[(r & 0xFFFFFFFFu) >= threshold];
        x[2 * k + 1] *= factor[(r >> 32) >= threshold];
    }
    if (n % 2) x[n - 1] *= factor[(splitmix64_at(state, (uint64_t)n / 2 + 1) & 0xFFFFFFFFu) >= threshold];
}

/* ---- the passes' hooks ----------------------------------------------------- */

const uint64_t *slm_dropout_batch_keys(Activations *a, const Batch *b) {
    const Dropout *d = &a->dropout;
    int keyed = d->story_keys && (d->hidden > 0 || d->attention > 0);
    /* a piece of a long story (BatchPiece) draws the whole story's masks: its
     * positions count from the story's start, not the piece's */
    for (int i = 0; keyed && i < b->n_stories; i++)
        slm_dropout_story_position_keys(d->story_keys[i], b->piece ? b->piece[i].offset : 0,
                                        b->starts[i + 1] - b->starts[i], a->drop_keys + b->starts[i]);
    return keyed ? a->drop_keys : NULL;
}

DropoutMask slm_dropout_batch_masks(Activations *a, const Batch *b, DropoutMask *attention) {
    const Dropout *d = &a->dropout;
    const uint64_t *keys = slm_dropout_batch_keys(a, b);
    /* a mask needs keys or a fixed mask; without either, nothing is dropped */
    *attention = keys || d->attention_mask
                     ? slm_dropout_mask(d->attention, DROPOUT_SALT_ATTENTION, keys, d->attention_mask)
                     : (DropoutMask){0};
    attention->n_positions = a->n_positions;
    return keys || d->hidden_mask ? slm_dropout_mask(d->hidden, DROPOUT_SALT_HIDDEN, keys, d->hidden_mask)
                                  : (DropoutMask){0};
}

void slm_dropout_prepare(Activations *a, const Batch *b) {
    DropoutMask att;
    a->hidden_drop = slm_dropout_batch_masks(a, b, &att);
    /* every layer the same mask; each head draws its own stream (AttentionScratch.head_base) */
    for (int l = 0; l < slm_model_layers(&a->cfg); l++) a->layer[l].scratch.drop = att;
}

/* x (N, Z) -> x * z's mask, position by position. */
static void mask_z(const Activations *a, float *x) {
    int Z = slm_model_hidden_input_dim(&a->cfg);
    for (int p = 0; p < a->n_positions; p++)
        slm_dropout_apply(&a->hidden_drop, p, 0, (size_t)p * Z, x + (size_t)p * Z, Z);
}

void slm_dropout_hidden_forward(Activations *a) {
    /* the layers above the first read z's heads; their backward needs them unmasked */
    if (slm_model_layers(&a->cfg) > 1)
        memcpy(a->z_kept, a->z, (size_t)a->n_positions * slm_model_hidden_input_dim(&a->cfg) * sizeof(float));
    mask_z(a, a->z);
}

void slm_dropout_hidden_backward(const Model *m, Activations *a, const Batch *b) {
    mask_z(a, a->d_z);
    const ModelConfig *c = &m->cfg;
    if (slm_model_layers(c) > 1) {
        memcpy(a->z, a->z_kept, (size_t)a->n_positions * slm_model_hidden_input_dim(c) * sizeof(float));
    } else if (slm_model_heads(c) > 0) { /* the heads' backward reads the row in z: unmasked again */
        slm_embedding_forward(m->embedding, b->tokens, a->n_positions, c->row_dim, a->z, slm_model_hidden_input_dim(c));
        slm_position_rows_forward(m, a->layer[0].scratch.variant->story_pos, a->n_positions, a->z,
                                  slm_model_hidden_input_dim(c));
    }
}
