/* The network's layers, forward and backward side by side (src/model/layers.c):
 * the products (matmul, split over OpenMP's threads with the same bits at
 * every thread count), the embedding, window8's rows, the tanh hidden layer,
 * the output layer with its softmax and cross-entropy, and the small vector
 * kernels under them. model.h strings them together into the passes; the
 * attention kernels are in attention.h.
 * Backward functions accumulate (+=) into parameter gradients. */
#ifndef STORYLM_LAYERS_H
#define STORYLM_LAYERS_H

#include <stddef.h>
#include <stdint.h>

#include "storylm/bf16.h"
#include "storylm/kernels.h"

#include "storylm/error.h"
#include "storylm/model_types.h" /* Batch */

/* C (M, N) = op(A) op(B) + beta C, row-major (cblas_sgemm with alpha 1;
 * trans_a/trans_b: use A, B transposed). C is cut in blocks of 256 rows (or
 * columns, when it has more of them), one sgemm call each, the same blocks at
 * every thread count, so the result has the same bits at any thread count.
 * With OpenBLAS single-threaded and several OpenMP threads, the threads take
 * whole blocks: one kind of thread runs everything (OpenMP's and OpenBLAS's
 * busy-waiting threads would fight over the cores). */
void slm_matmul(int trans_a, int trans_b, int M, int N, int K, const float *A, int lda, const float *B, int ldb,
                float beta, float *C, int ldc);
/* sums (cols) += column sums of A (rows, cols), row stride lda; ones (rows). Split like matmul. */
void slm_column_sums(const float *A, int rows, int cols, int lda, const float *ones, float *sums);

/* tokens (n) -> rows (n, D) written with row stride ld. */
void slm_embedding_forward(const float *embedding, const int32_t *tokens, int n, int D, float *rows, int ld);
void slm_embedding_backward(float *d_embedding, const int32_t *tokens, int n, int D, const float *d_rows, int ld);
/* window8: z (n, C*D): row slots of x_{p-C+1} .. x_p, the story's first row before its start. */
void slm_window_forward(const float *embedding, const Batch *b, int C, int D, float *z);
void slm_window_backward(float *d_embedding, const Batch *b, int C, int D, const float *d_z);
/* The hidden layer, its products at precision p (bf16.h: FP32 but in
 * training's --precision bf16), with p's kernels (kernels.h). x (n, in) -> y (n, out) = tanh(x W^T + bias),
 * W (out, in). */
void slm_dense_tanh_forward_at(Compute p, const float *W, const float *bias, const float *x, int n, int in, int out,
                               float *y);
/* d_y (n, out) is turned into d_pre in place; dW (out, in) +=, d_bias (out) +=,
 * d_x (n, in) = (overwritten). ones (n). */
void slm_dense_tanh_backward_at(Compute p, const float *W, const float *x, const float *y, float *d_y, int n, int in,
                                int out, float *dW, float *d_bias, float *d_x, const float *ones);
/* y (n, Hd) -> logits (n, V) = y W^T + bias, then per row: lse, and for rows
 * with a target (>= 0): loss = lse - logit[target], correct. */
void slm_output_forward(Kernels k, const float *W, const float *bias, const float *y, int n, int Hd, int V,
                        float *logits, const int32_t *target, float *lse, float *loss, uint8_t *correct);
/* A row of logits (V) as slm_output_forward leaves it, with its lse -> the
 * log-probability of target, in double: logit - lse for logits of ordinary
 * size, else minus the loss the pass gives the row (lse in float has lost
 * log(sum) beside a huge largest logit: biases of 3e38 gave probability 1).
 * The per-token loss (eval --text, Python's loss) and the stories' pass share
 * this one routine, so they cannot disagree. */
double slm_output_log_prob(const float *row, int V, int32_t target, float lse);
/* logits (n, V) become d logits in place, (softmax - onehot) * scale on rows
 * with a target, 0 elsewhere; dW (V, Hd) +=, d_bias (V) +=, d_y (n, Hd) =. */
void slm_output_backward(Kernels k, const float *W, const float *y, float *logits, const int32_t *target,
                         const float *lse, float scale, int n, int Hd, int V, float *dW, float *d_bias, float *d_y,
                         const float *ones);
/* The output layer, softmax and cross-entropy on the calling thread, over
 * chunks of chunk_rows positions whose logits live only in scratch
 * (chunk_rows, V) and stay in cache: y (n, Hd) -> per position lse, loss and
 * correct as slm_output_forward gives them; with dW, also the backward of
 * scale * (sum of the losses): dW (V, Hd) +=, d_bias (V) +=, d_y (n, Hd) =. */
typedef struct OutputLoss {
    const float *W, *bias, *y; /* (V, Hd), (V), (n, Hd) */
    int n, Hd, V, chunk_rows;
    const int32_t *target; /* (n), -1: nothing to predict */
    float scale;
    float *scratch;           /* (chunk_rows, V) */
    float *lse, *loss;        /* (n) */
    uint8_t *correct;         /* (n) */
    float *dW, *d_bias, *d_y; /* NULL: forward only */
    int W_columns;            /* 1: W and dW are (Hd, V), TransformerLens's W_U */
    Precision precision;      /* of the three products (bf16.h); 0: FP32 */
    Kernels kernels;          /* the whole layer's (kernels.h); 0: OpenBLAS */
} OutputLoss;
void slm_output_loss(const OutputLoss *o);
/* x (n) -> exp(x - shift) in place (slm_softmax_inplace's exp). */
void slm_exp_inplace(float *x, int n, float shift);
/* The same with kernels k: portable, without FMAs (kernels.h). */
void slm_exp_inplace_at(Kernels k, float *x, int n, float shift);
/* That exp of one float, as plain C: the bits the vector code is held to (tests). */
float slm_exp_one(float x);
/* The same, returning their sum: a softmax is x times 1 / sum, with the bits
 * of slm_softmax_max_inplace(x, n, shift). */
float slm_exp_sum_inplace(float *x, int n, float shift);
/* x (n) -> exp(x * scale - shift) summed with slm_exp_sum_inplace's bits
 * (of x * scale), without writing them: only those at or above keep are
 * written, in order, to kept and their indices to ids (each with room for
 * n + 16); *k says how many. */
float slm_exp_sum_keep(const float *x, int n, float scale, float shift, float keep, float *kept, int32_t *ids, int *k);
/* The same with kernels k: portable, without FMAs, the sum in 16 lanes of plain C. */
float slm_exp_sum_keep_at(Kernels k, const float *x, int n, float scale, float shift, float keep, float *kept,
                          int32_t *ids, int *m);
/* x (n) -> softmax in place; returns the log-sum-exp of the input. */
float slm_softmax_inplace(float *x, int n);
/* The same with kernels k (slm_exp_inplace_at). */
float slm_softmax_inplace_at(Kernels k, float *x, int n);
/* The same bits without the log-sum-exp: an attention's weights, where its
 * logarithm is a call each head's step does not need. */
void slm_softmax_weights(float *x, int n);
/* The same with x's largest element (NaNs passed over) mx known: a pass fewer, the same bits. */
void slm_softmax_weights_max(float *x, int n, float mx);
/* The same when x's largest element mx is known (a pass fewer; the same bits). */
float slm_softmax_max_inplace(float *x, int n, float mx);
/* The same with kernels k (slm_exp_inplace_at). */
float slm_softmax_max_inplace_at(Kernels k, float *x, int n, float mx);
/* x (n) -> tanh x in place, vectorized (the hidden layer's tanh). */
void slm_tanh_inplace(float *x, int n);

/* slm_matmul (FP32), its portable twin or slm_matmul_bf16, by p (kernels.h). */
void slm_matmul_at(Compute p, int trans_a, int trans_b, int M, int N, int K, const float *A, int lda, const float *B,
                   int ldb, float beta, float *C, int ldc);
/* n floats from a 64-byte boundary (free with free()); NULL with a message. */
float *slm_alloc_floats(size_t n, Error *e);

#endif
