/* Activation patching (probe_patch.c): which parts of the network carry the
 * difference between a clean text and a corrupt one of the same length.
 *
 * Both texts are run through the network (slm_model_forward, with the same
 * ablation). At the last position T-1 the logit difference
 *   LD = logit(answer) - logit(wrong)
 * is measured; then pieces of the clean run are put into the corrupt run and
 * LD measured again, normalised as (LD - LD_corrupt) / (LD_clean - LD_corrupt):
 * 0 is the corrupt run, 1 the clean one.
 *
 * In one layer a head's output at position u reaches only position u's own
 * guess, so what can change the last guess is what the last position reads:
 *   reads   (h, u): head h's key and value at position u from the clean run
 *   query   (h):    head h's query at the last position
 *   output  (h):    head h's whole output at the last position (its query,
 *                   keys and values all clean)
 *   rows    (u):    the token row at position u: every head's key and value
 *                   there, and at u = T-1 also the queries and the row's own
 *                   slot of the hidden layer's input
 *   hidden:         the hidden layer at the last position
 * Every patched run is evaluated the same way, in double, from the runs'
 * rows, queries, keys and values (probe_last_logits), so patching every row
 * (or every head's output and the last row) gives back the clean numbers bit
 * for bit. Switched-off heads (the runs' ablation) keep their replacement. */
#ifndef STORYLM_PROBE_PATCH_H
#define STORYLM_PROBE_PATCH_H

#include <stdint.h>

#include "storylm/error.h"
#include "storylm/model.h"

/* On a transformer (and any model but one layer read by the tanh readout)
 * the pieces are its hook points (hooks.h), put into the corrupt run's
 * forward pass by a hook, and LD is read from that pass's logits; heads are
 * every block's (layer's) (n_heads = blocks * H, numbered as Ablation's):
 *   reads   (g, u): head g's hook_k and hook_v at position u
 *   query   (g):    head g's hook_q at the last position
 *   output  (g):    head g's hook_z at the last position
 *   rows    (u):    blocks.0.hook_resid_pre at u (the token's embedding and position)
 *   resid   (l, u): the residual stream at u entering block l (blocks.{l}.hook_resid_pre,
 *                   l < blocks) or leaving the last (l = blocks: its hook_resid_post)
 *   hidden:         the last block's hook_resid_post at the last position
 *   all_rows:       blocks.0.hook_resid_pre everywhere: the clean run, bit for bit
 *   outputs_and_row: every head's hook_z and the last row at the last position
 * clean_diff and corrupt_diff are then the _model ones. */
typedef struct PatchResult {
    int n_positions, n_heads;
    int32_t answer, wrong;
    double clean_diff, corrupt_diff;             /* LD of the two runs, evaluated as the patches are */
    double clean_diff_model, corrupt_diff_model; /* LD from slm_model_forward's float logits */
    double *reads;                               /* (H, T) normalised, as above */
    double *query, *output;                      /* (H) */
    double *rows;                                /* (T) */
    double hidden;
    double all_rows;        /* every row patched: the clean run */
    double outputs_and_row; /* every head's output and the row at the last position */
    double *all_logits;     /* (V) logits of the run with every row patched */
    double *clean_logits;   /* (V) logits of the clean run, evaluated the same way */
    int n_layers;           /* layers (blocks) patched through the hooks (0: the exact evaluation) */
    double *resid;          /* (n_layers + 1, T) a transformer's residual stream, as above */
} PatchResult;

/* After slm_model_forward of the clean run into clean and of the corrupt run into
 * corrupt (same number of positions, same ablation, attention network):
 * every patch above. answer and wrong are token ids. */
int slm_probe_patch(const Model *m, const Activations *clean, const Activations *corrupt, int32_t answer, int32_t wrong,
                    PatchResult *out, Error *e);
void slm_patch_result_free(PatchResult *r);
/* The same from two runners (slm_probe_run of the clean and the corrupt
 * text): one layer of heads read by the tanh readout through
 * slm_probe_patch, any other model by running the corrupt text again with
 * each piece hooked in (the pieces above; on a model of several layers the
 * row is hook_embed, hidden hook_hidden at the last position, and resid NULL). */
typedef struct ProbeRunner ProbeRunner;
int slm_probe_patch_runs(const Model *m, const ProbeRunner *clean, const ProbeRunner *corrupt, int32_t answer,
                         int32_t wrong, PatchResult *out, Error *e);

/* The part above z, in double: z (Z) -> hidden (128) = tanh(W1 z + b1) ->
 * logits (V) = W2 hidden + b2. */
void slm_probe_logits_from_z(const Model *m, const double *z, double *hidden, double *logits);
void slm_probe_logits_from_hidden(const Model *m, const double *hidden, double *logits);
/* The single logit of token, and its gradient d logit / d z (Z; may be NULL):
 * W1^T ((1 - y^2) * W2[token]), y = tanh(W1 z + b1). */
double slm_probe_logit_and_grad(const Model *m, const double *z, int32_t token, double *grad);

#endif
