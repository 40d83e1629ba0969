/* Attribution (probe_attribute.c): which parts of what the hidden layer
 * reads push one next-token logit, and where a text surprises the network.
 *
 * At position p the hidden layer reads z = [row, head 0, ..., head 7] (160
 * numbers, model.h) and token's logit is W2[token] tanh(W1 z + b1) + b2[token].
 * For each part (the token's own row, 32 numbers; each head's output, 16):
 *   gradient x activation   sum over the part's numbers of (d logit / d z_i) z_i,
 *                           the first-order guess of what the part adds
 *   zero effect             logit - logit with the part's numbers set to 0
 *   mean effect             logit - logit with them set to their mean over the
 *                           test stories (the mean row; the head's mean output)
 * Only the part's slot of z at p changes: the row's other path, through the
 * queries, keys and values, is not removed (patch measures that). With
 * several layers z is [row, layer 1's heads, ..., layer N's heads] (model.h)
 * and the parts are the row and every layer's heads ("head 2:3"): a lower
 * layer's head keeps its path through the layers above. Everything
 * is computed in double from the float activations of one forward pass;
 * switched-off heads hold their replacement, so they add nothing.
 *
 * A transformer's parts are the residual stream's at the last block's output
 * (TransformerLens's decompose_resid, each head apart): embed (W_E[x_p]),
 * pos_embed (W_pos's row, or the sinusoidal tag), then per block each head's
 * z_h W_O[h], the attention's bias b_O and the MLP's output; they add up to
 * the final LN's input. For each part:
 *   grad x act   direct logit attribution: the part through ln_final with its
 *                scale frozen at p, as TransformerLens does (center the part,
 *                times rstd and ln_final.w, dotted with W_U[:, token]); the
 *                parts' sum plus ln_final.b W_U[:, token] + b_U[token] is the
 *                logit (direct_sum)
 *   zero effect  logit - logit with the part taken out of the final LN's input
 *                (the LN computed again: its direct path only)
 *   mean effect  the same with the part set to its mean over the test stories */
#ifndef STORYLM_PROBE_ATTRIBUTE_H
#define STORYLM_PROBE_ATTRIBUTE_H

#include <stdint.h>

#include "storylm/error.h"
#include "storylm/model.h"
#include "storylm/stories.h"

typedef struct AttributeResult {
    int position;  /* the predicting position */
    int32_t token; /* the next token whose logit is taken apart */
    double logit, probability;
    int rank;            /* 1 = the most likely */
    int n_parts;         /* 1 + H: the row, then head 0..H-1; a transformer's: as above */
    char (*names)[24];   /* (n_parts) "row", "head 3"; a transformer's "embed", "head 1:3", "b_O 1", "mlp 1" */
    const char *scope;   /* what the parts are when it needs saying (several layers), or NULL */
    double direct_sum;   /* a transformer's: sum of grad x act plus the biases after the LN (= logit) */
    double *grad_x_act;  /* (n_parts) */
    double *zero_effect; /* (n_parts) */
    double *mean_effect; /* (n_parts), NAN without means */
    double *norm;        /* (n_parts) length of the part's numbers */
    int n_positions;
    double *surprisal; /* (T) -log p(x_{t+1}) at t in nats (NAN at the last position) */
} AttributeResult;

/* After slm_model_forward of one story into a (attention network): the parts of
 * token's logit at position p (0 <= p < n_positions). mean_z (Z) may be NULL. */
int slm_probe_attribute(const Model *m, const Activations *a, int p, int32_t token, const double *mean_z,
                        AttributeResult *out, Error *e);
void slm_attribute_result_free(AttributeResult *r);
/* r's arrays for n_parts parts and T positions (n_parts set); -1 when out of memory. */
int slm_attribute_result_alloc(AttributeResult *r, int n_parts, int T, Error *e);

/* mean_z (Z) = what the hidden layer reads, averaged over every position of
 * stories idx[0..n) with no head switched off: the mean row, then each head's
 * mean output (slm_probe_head_means, what --ablate-mode mean uses). */
int slm_probe_mean_z(const Model *m, const Stories *s, const int *idx, int n, double *mean_z, Error *e);
/* Length of mean_z: Z, or a transformer's parts times d_model (each part's mean). */
size_t slm_probe_mean_z_len(const ModelConfig *c);

#endif
