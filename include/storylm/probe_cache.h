/* The activation cache (probe_cache.c): every activation of the forward pass
 * over one or more stories, as named F32 tensors written to a safetensors
 * file, so numpy or PyTorch users analyse them without storylm.
 *
 * N = positions of all stories packed one after another, S = stories,
 * H = heads, K = min(window, longest story); token ids and offsets are
 * stored as F32 (exact below 2^24):
 *   tokens        [N]            the token ids
 *   story_starts  [S + 1]        story i is positions story_starts[i] .. story_starts[i+1]-1
 *   rows          [N, 32]        r_t = embedding[x_t]
 *   queries       [N, H, 8]      q = r_t @ query[h]
 *   keys          [N, H, 8]      k = r_t @ key[h]
 *   values        [N, H, 16]     v = r_t @ value[h]
 *   attention     [H, N, K]      weight position t gives to the token d back in its
 *                                story (d = 0: itself); 0 where there is none
 *   head_outputs  [N, H, 16]     o_h as the hidden layer read it (a switched-off
 *                                head's replacement)
 *   hidden        [N, 128]       y_t = tanh(hidden.weight [r_t, o_0..o_7] + hidden.bias)
 *   logits        [N, V]         output.weight y_t + output.bias
 *   loss          [N]            -log p(x_{t+1}) in nats, 0 at a story's last position */
#ifndef STORYLM_PROBE_CACHE_H
#define STORYLM_PROBE_CACHE_H

#include <stdint.h>

#include "storylm/error.h"
#include "storylm/model.h"
#include "storylm/safetensors.h"

#define CACHE_TENSORS 11

typedef struct ActivationCache {
    int n_stories, n_positions, max_distance; /* S, N, K */
    int n_heads, row_dim, key_dim, value_dim, hidden_dim, vocab_size;
    float *tokens, *story_starts, *rows, *queries, *keys, *values, *attention, *head_outputs, *hidden, *logits, *loss;
} ActivationCache;

/* Runs each story ids[starts[i] .. starts[i+1]) (n stories, each [EOS]
 * first, attention network) with ablation (NULL: none) into out. */
int slm_probe_cache(const Model *m, const int32_t *ids, const int *starts, int n, const Ablation *ablation,
                    ActivationCache *out, Error *e);
void slm_activation_cache_free(ActivationCache *c);
/* The tensors in the order above, names and shapes filled (t: CACHE_TENSORS). */
void slm_activation_cache_tensors(const ActivationCache *c, SafeTensorOut *t);
/* Writes them with metadata (may be NULL) to path, atomically. */
int slm_activation_cache_write(const ActivationCache *c, const char *path, const Metadata *metadata, Error *e);

#endif
