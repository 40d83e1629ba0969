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
 *   loss          [N]            -log p(x_{t+1}) in nats, 0 at a story's last position
 *
 * A transformer's cache is TransformerLens's: tokens and story_starts, then
 * every hook point of the pass (hooks.h) under its hook name, in the pass's
 * order, with TransformerLens's shape without the batch axis and the
 * positions of all stories packed on the position axis ([N, D], [N, H, dh],
 * [N, d_mlp], [N, V]), hook_pattern as [H, N, L] with L the longest story's
 * length and the key axis the key's position in its story (for one text,
 * [H, T, T] as TransformerLens's), then loss. */
#ifndef STORYLM_PROBE_CACHE_H
#define STORYLM_PROBE_CACHE_H

#include <stdint.h>

#include "storylm/error.h"
#include "storylm/model.h"
#include "storylm/safetensors.h"

#define CACHE_TENSORS 11
/* a transformer's hooks: 2 before its blocks, 18 a block, 3 after */
#define CACHE_MAX_HOOKS (5 + 18 * STORYLM_MAX_TF_LAYERS)
#define CACHE_MAX_TENSORS (3 + CACHE_MAX_HOOKS) /* a transformer's: tokens, story_starts, its hooks, loss */

typedef struct ActivationCache {
    int n_stories, n_positions, max_distance; /* S, N, K */
    int n_heads, row_dim, key_dim, value_dim, hidden_dim, vocab_size;
    float *tokens, *story_starts, *rows, *queries, *keys, *values, *attention, *head_outputs, *hidden, *logits, *loss;
    /* a transformer: every hook point, by hook name, in the pass's order (the fields above
     * but tokens, story_starts and loss unused) */
    int n_hooks, longest;
    char *hook_name[CACHE_MAX_HOOKS];
    int hook_ndim[CACHE_MAX_HOOKS], hook_shape[CACHE_MAX_HOOKS][3];
    float *hook_data[CACHE_MAX_HOOKS];
} ActivationCache;

/* Runs each story ids[starts[i] .. starts[i+1]) (n stories, each [EOS]
 * first, attention network) with ablation (NULL: none) into out. */
int slm_probe_cache(const Model *m, const int32_t *ids, const int *starts, int n, const Ablation *ablation,
                    ActivationCache *out, Error *e);
void slm_activation_cache_free(ActivationCache *c);
/* The tensors in the order above, names and shapes filled (t: CACHE_MAX_TENSORS);
 * returns how many (CACHE_TENSORS for the attention network). */
int slm_activation_cache_tensors(const ActivationCache *c, SafeTensorOut *t);
/* The metadata's "tensors": their names, where to read what they hold. */
const char *slm_activation_cache_summary(const ActivationCache *c);
/* Writes them with metadata (may be NULL) to path, atomically. */
int slm_activation_cache_write(const ActivationCache *c, const char *path, const Metadata *metadata, Error *e);

#endif
