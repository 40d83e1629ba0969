/* Circuits from the weights (issue 11, `storylm circuits`): what each head
 * looks for and what its reading does, read off the parameters as products
 * of matrices over the whole vocabulary, in the style of "A Mathematical
 * Framework for Transformer Circuits".
 *
 *   QK circuit of head h (V, V):  qk[s, t] = E[s] query[h] . E[t] key[h] / sqrt(kd)
 *     the score a query at token s gives a key at token t before the distance
 *     score is added: which tokens look for which.
 *   OV circuit of head h (V, V):  ov[s, t] = the change of token t's logit when
 *     head h puts all its weight on token s, so that its output is E[s] value[h],
 *     against an output of 0 (what zero ablation gives). The hidden layer's tanh
 *     is linearised at its mean input z_mean (the mean of z over the positions of
 *     some stories): with g = 1 - tanh^2(hidden.weight z_mean + hidden.bias),
 *       ov[s, t] = output.weight[t] . (g * (hidden.weight[:, slot h] (E[s] value[h])))
 *     Logits only matter up to a constant per row, so rows are read centred:
 *     "raises t" means ov[s, t] above the row's mean.
 *
 * Every product over the vocabulary is one cblas_sgemm.
 *
 * A transformer's block l (CircuitsOptions.layer), TransformerLens's full
 * circuits with the LayerNorms' weights folded in as its fold_ln does (their
 * biases, the attention biases and the centring left out):
 *   QK (V, V):  qk[s, t] = (E[s] diag(ln1.w) W_Q[h]) . (E[t] diag(ln1.w) W_K[h]) / sqrt(d_head)
 *               (the direct path from the embedding; rope's turn left out: at distance 0)
 *   OV (V, V):  ov[s, t] = E[s] diag(ln1.w) W_V[h] W_O[h] diag(ln_final.w) W_U[:, t]
 *               (what the head writes into the residual stream, read by the unembedding)
 * Rows are read centred as above; no mean input is needed. */
#ifndef STORYLM_PROBE_CIRCUITS_H
#define STORYLM_PROBE_CIRCUITS_H

#include <stdint.h>

#include "storylm/error.h"
#include "storylm/model.h"
#include "storylm/stories.h"

/* One entry of a circuit: reading token `from` (the query's token for QK,
 * the token read for OV), token `to` (the key's token, the token raised). */
typedef struct CircuitPair {
    int32_t from, to;
    float value;   /* qk[from, to], or ov[from, to] */
    float centred; /* value minus the mean of row `from` */
} CircuitPair;

/* How much a circuit's rows favour their own token, over the tokens s with
 * mask[s] (the candidates t range over the mask too). */
typedef struct SelfScore {
    int tokens;        /* rows counted */
    double top1;       /* share of rows s where [s, s] is the largest entry */
    double top10;      /* share where it is among the 10 largest */
    double above_mean; /* share where it is above the row's mean */
} SelfScore;

typedef struct CircuitHead {
    int head;
    CircuitPair *qk, *ov; /* (top) each: the largest qk (by value), the largest ov (by centred value) */
    CircuitPair *reads;   /* (n_reads, read_top): for each token asked for, the tokens reading it raises most */
    SelfScore qk_self[2]; /* [0] over all tokens, [1] over the tokens seen in the stories */
    SelfScore copy[2];    /* the OV circuit's copying score, the same two ways */
} CircuitHead;

typedef struct CircuitsResult {
    int n_heads, top; /* heads listed, pairs per circuit */
    int layer;        /* a transformer's block, from 0 */
    int n_reads, read_top;
    CircuitHead *heads;
} CircuitsResult;

typedef struct CircuitsOptions {
    int top;               /* pairs per circuit and head */
    HeadSet heads;         /* head h of the layer (block) below, from 0; empty: every head */
    const int32_t *reads;  /* tokens whose OV rows to list (may be NULL) */
    int n_reads, read_top; /* how many, and the tokens raised listed for each */
    int layer;             /* a transformer's block, from 0 (the attention network: 0) */
} CircuitsOptions;

/* 1 if m's OV circuits read through the hidden layer's slope at a mean input
 * (the attention network's); 0 where they need none (the residual models'). */
int slm_circuits_use_mean_input(const ModelConfig *c);

/* z_mean (Z) = mean of the hidden layer's input over every position of
 * stories idx[0..n) with ablation (NULL: none); seen (V) = 1 for the tokens
 * that occur in them; *positions counted. Where the circuits use no mean
 * input (slm_circuits_use_mean_input), z_mean is left zero. */
int slm_circuits_mean_input(const Model *m, const Stories *s, const int *idx, int n, const Ablation *ablation,
                            float *z_mean, uint8_t *seen, long long *positions, Error *e);

/* gain (hidden_dim) = 1 - tanh^2(hidden.weight z_mean + hidden.bias): the slope of the linearised hidden layer. */
void slm_circuits_gain(const Model *m, const float *z_mean, float *gain);
/* Scratch floats slm_circuit_qk and slm_circuit_ov need. */
size_t slm_circuit_scratch_size(const ModelConfig *c);
/* qk (V, V) of head h of layer (block) l, from 0: the model's (arch.h's ProbeOps, formulas above). */
void slm_circuit_qk(const Model *m, int l, int h, float *scratch, float *qk);
/* ov (V, V) of head h of layer (block) l, through the hidden layer's slope gain (hidden_dim; a
 * transformer's: unused, NULL). */
void slm_circuit_ov(const Model *m, int l, int h, const float *gain, float *scratch, float *ov);
/* The report's note on how the OV circuit is read, for m's architecture. */
const char *slm_circuits_note(const ModelConfig *c);

/* For every head of o->heads: the top entries of both circuits, the rows of
 * o->reads and the self scores, with the OV circuit linearised at z_mean (Z);
 * seen (V) for the second self score (NULL: all tokens). */
int slm_probe_circuits(const Model *m, const float *z_mean, const uint8_t *seen, const CircuitsOptions *o,
                       CircuitsResult *out, Error *e);
void slm_circuits_result_free(CircuitsResult *r);

#endif
