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

#include "storylm/model_types.h" /* Dropout, DropoutMask */

/* The key of the story in slot `slot` of training step `step` of a run seeded `seed`. */
uint64_t slm_dropout_story_key(uint64_t seed, int64_t step, int slot);
/* keys (N): position t of story i (starts (n_stories+1), packed) gets a key from story_keys[i] and t. */
void slm_dropout_position_keys(const uint64_t *story_keys, const int *starts, int n_stories, uint64_t *keys);
DropoutMask slm_dropout_mask(float p, uint64_t salt, const uint64_t *keys, const uint8_t *fixed);
/* x (n): numbers 0..n-1 of position pos's sequence `stream` (the head, or 0
 * for z), each times 0 or 1/(1-p) by the mask; with a fixed mask, by its
 * entries fixed[at .. at+n). */
void slm_dropout_apply(const DropoutMask *d, int pos, uint64_t stream, size_t at, float *x, int n);

#define DROPOUT_SALT_HIDDEN 0x68696464656eULL
#define DROPOUT_SALT_ATTENTION 0x617474656e74ULL

/* ---- the passes' hooks (model.c calls them) ---- */
/* a->drop_keys (N) = each position of batch b's key from a->dropout's story
 * keys; returns them, or NULL when the pass drops nothing by key (no keys, or
 * both rates 0: then no number is drawn). */
const uint64_t *slm_dropout_batch_keys(Activations *a, const Batch *b);
/* a->dropout for batch b -> each position's key (a->drop_keys), *attention =
 * the attention weights' mask; returns the hidden mask (the chapter's z, the
 * transformer's residual stream). Masks of p 0 (nothing drawn) without keys. */
DropoutMask slm_dropout_batch_masks(Activations *a, const Batch *b, DropoutMask *attention);
/* a->dropout for batch b -> each position's key, z's mask and attention's (in each layer's scratch). */
void slm_dropout_prepare(Activations *a, const Batch *b);
/* z (N, Z) -> z * mask / (1-P), in place, what the hidden layer reads (z as
 * it was kept in z_kept first with two layers or more). */
void slm_dropout_hidden_forward(Activations *a);
/* d_z (N, Z) -> d_z * the same mask / (1-P); then z's rows (attention) read
 * again from the embedding (or, with two layers or more, z from z_kept), as
 * the backward through q, k, v needs them. */
void slm_dropout_hidden_backward(const Model *m, Activations *a, const Batch *b);

#endif
