/* Hooks of the forward pass: a caller's function run between the parts of
 * slm_model_forward, TransformerLens-style, that sees each part's output under
 * a hook name and may change it, the rest of the pass then reading the
 * changed numbers (what Python's run_with_hooks and run_with_cache stand on).
 *
 * The hook points, T = positions of the batch, H = heads, l = layer from 0,
 * D = 32, Z = the hidden layer's input width (160 one layer, 256 window8):
 *   hook_embed                     [T, D]    the row r_t as the heads read it (with
 *                                            --pos absolute/sinusoidal, its tag added)
 *   blocks.{l}.attn.hook_q         [T, H, kd] queries before --pos rope / --score turn them
 *   blocks.{l}.attn.hook_k         [T, H, kd] keys, likewise
 *   blocks.{l}.attn.hook_v         [T, H, vd] values
 *   blocks.{l}.attn.hook_distance_score [H, T, T] read-only: the score the position
 *                                            scheme adds at (t, u), 0 where it adds none
 *                                            or u cannot be read (u > t, or past the window)
 *   blocks.{l}.attn.hook_attn_scores [H, T, T] each read key's score (the --score
 *                                            function's, plus the distance score), -inf
 *                                            where not read; a change gives the pattern again
 *   blocks.{l}.attn.hook_pattern   [H, T, T] attention weights, 0 above the diagonal; a
 *                                            changed pattern makes the heads' outputs
 *                                            again as pattern @ values
 *   blocks.{l}.attn.hook_z         [T, H, vd] each head's output as the layers above and the
 *                                            hidden layer read it (after --ablate)
 *   hook_hidden_in                 [T, Z]    z: the row, then every layer's heads (window8:
 *                                            the last 8 rows, oldest first)
 *   hook_hidden                    [T, 128]  y = tanh(hidden.weight z + hidden.bias)
 *   hook_logits                    [T, V]    output.weight y + output.bias; changed logits
 *                                            give the loss again
 * Window8 has hook_hidden_in, hook_hidden and hook_logits only.
 *
 * The transformer's points are TransformerLens's (its shapes without the
 * batch axis; D = d_model, dh = d_head, F = d_mlp), in the pass's order:
 *   hook_embed                     [T, D]    W_E[x_t]
 *   hook_pos_embed                 [T, D]    W_pos[t] (--position-scheme absolute only); a
 *                                            change is added to the residual as new - old
 *   blocks.{l}.hook_resid_pre      [T, D]    the block's input
 *   blocks.{l}.ln1.hook_scale      [T, 1]    sqrt(var + eps) of resid_pre; a change
 *                                            normalises again with the new scale
 *   blocks.{l}.ln1.hook_normalized [T, D]    LN1(resid_pre), w and b applied
 *   blocks.{l}.attn.hook_q, _k, _v [T, H, dh] after the biases, before rope turns q and k
 *   blocks.{l}.attn.hook_attn_scores [H, T, T] q.k / sqrt(dh) + the scheme's distance
 *                                            score, -inf where a key is not read; a
 *                                            change gives the pattern and z again
 *   blocks.{l}.attn.hook_pattern   [H, T, T] attention weights (as above)
 *   blocks.{l}.attn.hook_z         [T, H, dh] each head's output before W_O (after --ablate)
 *   blocks.{l}.attn.hook_result    [T, H, D] z[h] W_O[h], no b_O; a change gives the
 *                                            block's output as resid_pre + sum + b_O
 *   blocks.{l}.hook_attn_out       [T, D]    z W_O + b_O; a change is added to resid_pre again
 *   blocks.{l}.hook_resid_mid      [T, D]    resid_pre + attn_out
 *   blocks.{l}.ln2.hook_scale, hook_normalized  as ln1's, of resid_mid
 *   blocks.{l}.mlp.hook_pre        [T, F]    LN2(resid_mid) W_in + b_in
 *   blocks.{l}.mlp.hook_post       [T, F]    act(hook_pre)
 *   blocks.{l}.hook_mlp_out        [T, D]    hook_post W_out + b_out; a change is added to resid_mid again
 *   blocks.{l}.hook_resid_post     [T, D]    resid_mid + mlp_out
 *   ln_final.hook_scale            [T, 1]    as ln1's, of the last block's resid_post
 *   ln_final.hook_normalized       [T, D]    LN_final(resid_post of the last block), w and b applied
 *   hook_logits                    [T, V]    (storylm's: TransformerLens has no hook there)
 * attn-only's are these without ln2, the MLP's and hook_resid_mid. The
 * points that are products (attn_scores, result, attn_out, mlp_out, the
 * scales) are computed at their place in the pass only when a hook asks for
 * them, so a pass without hooks does not make them.
 *
 * Hooks are for looking and intervening in a forward pass (slm_model_forward,
 * slm_model_forward_heads up to hook_hidden); the backward passes do not know
 * what a hook changed, so training leaves Activations.hooks NULL.
 *
 * Adding a hook point: one entry in the table of src/model/hooks.c (its name,
 * shape, and how its numbers are read from and written back into the
 * activations) and one slm_hooks_at call where the pass makes the part. */
#ifndef STORYLM_HOOKS_H
#define STORYLM_HOOKS_H

#include <stddef.h>

#include "storylm/error.h"

struct Activations;
struct Model;
struct ModelConfig;

typedef enum {
    HOOK_EMBED = 0,
    HOOK_Q,
    HOOK_K,
    HOOK_V,
    HOOK_DISTANCE_SCORE,
    HOOK_PATTERN,
    HOOK_Z,
    HOOK_HIDDEN_IN,
    HOOK_HIDDEN,
    HOOK_LOGITS,
    HOOK_POS_EMBED, /* the transformer's own points from here */
    HOOK_RESID_PRE,
    HOOK_RESID_MID,
    HOOK_MLP_POST,
    HOOK_RESID_POST,
    HOOK_LN_FINAL,
    HOOK_LN1_SCALE,
    HOOK_LN1_NORMALIZED,
    HOOK_ATTN_SCORES,
    HOOK_RESULT,
    HOOK_ATTN_OUT,
    HOOK_LN2_SCALE,
    HOOK_LN2_NORMALIZED,
    HOOK_MLP_PRE,
    HOOK_MLP_OUT,
    HOOK_LN_FINAL_SCALE,
    HOOK_COUNT
} HookPoint;

/* Called at each hook point the caller asked for, with the part's numbers
 * gathered into data (C order, shape[0..ndim)). Returns 0: unchanged; 1: data
 * was changed, the pass reads it (refused for a read-only point); anything
 * else stops the pass (slm_model_forward then fails with the caller's
 * message, set with slm_hooks_fail, or a general one). */
typedef int (*HookFn)(void *ctx, const char *name, float *data, int ndim, const int *shape, int writable);

typedef struct ForwardHooks {
    HookFn fn;
    void *ctx;
    const char *const *names; /* the hook names fn is called for (n_names of them); NULL: every one */
    int n_names;
    /* filled by the pass */
    float *buf; /* gather buffer, grown as needed (slm_hooks_free) */
    size_t cap;
    int failed; /* 1 once a hook stopped the pass: the later points are skipped */
    /* a block's hook_attn_out after a changed hook_result (sum of results +
     * b_O, T x D): the point reads it rather than z W_O + b_O again */
    float *attn_out;
    int attn_out_layer; /* its layer + 1; 0: none held */
    Error error;        /* why */
} ForwardHooks;

/* The name of point p in layer l ("blocks.0.attn.hook_z"; layer ignored for
 * the points outside the blocks) into buf. */
void slm_hook_name(HookPoint p, int l, char *buf, size_t size);
/* Every hook name of a model of configuration c, in the order the pass
 * reaches them, "\n"-separated into a string (caller frees); NULL when out of memory. */
char *slm_hook_names(const struct ModelConfig *c, Error *e);
/* A hook stops the pass with this message and hint (for a HookFn). */
void slm_hooks_fail(ForwardHooks *h, const char *message, const char *hint);
void slm_hooks_free(ForwardHooks *h);

/* The pass's side (src/model/model.c): point p of layer l of m's run in a,
 * when a->hooks asks for it. Does nothing after a failure. */
void slm_hooks_at(const struct Model *m, struct Activations *a, HookPoint p, int l);
/* A changed pattern buf (H, T, T) of layer l, was the pattern before: the
 * outputs of the heads whose pattern changed become pattern @ values. */
void slm_hooks_outputs_from_pattern(struct Activations *a, int l, const float *buf, const float *was);
/* Changed scores buf (H, T, T) of layer l: the pattern softmax(scores) over
 * the keys read, kept as the run's weights, and the outputs of the heads whose
 * pattern changed from it; 0, or -1 when out of memory (a->hooks->error). */
int slm_hooks_scores_back(struct Activations *a, int l, const float *buf);
/* 0, or -1 with e set when a hook stopped the pass. */
int slm_hooks_check(const struct Activations *a, Error *e);

#endif
