/* The chapter's network (SPEC section 4) and chapter 6's window8 baseline:
 * the forward and backward passes. The types are in model_types.h, the
 * parameters and their views in model_params.h, batches in batch.h, the
 * activations in activations.h; this header includes them all, with the
 * kernels the passes are made of.
 *
 * The network, for a story of ids x_0..x_{T-1} (x_0 = [EOS]); position t
 * predicts x_{t+1}, so positions 0..T-2 have targets:
 *   row      r_t = E[x_t]                                    (32)
 *   head h   q_t = r_t query[h], k_u = r_u key[h], v_u = r_u value[h]
 *            s_u = q_t.k_u / sqrt(8) + distance[h][t-u],  u = max(0, t-255)..t
 *            o_h = sum_u softmax(s)_u v_u                     (16)
 *   z_t = [r_t, o_0, ..., o_7]                                (160)
 *   --layers N (2..4): layer l+1's heads read x_t = [r_t, layer l's o_0..o_7]
 *            (32 + 128 = 160) with their own query/key (H, 160, 8), value
 *            (H, 160, 16) and position/score tensors ("layer2.query", ...);
 *            z_t = [r_t, layer 1's heads, ..., layer N's heads]  (32 + 128 N)
 *   window8: z_t = [E[x_{t-7}], ..., E[x_t]], oldest first, E[x_0] standing
 *            in before the story's start                      (256)
 *   hidden   y_t = tanh(hidden.weight z_t + hidden.bias)      (128)
 *   logits   output.weight y_t + output.bias                  (V: 2000, train --vocab-size)
 *   loss     mean over every predicted position of the batch of -log p(x_{t+1}), nats
 *
 * Usage (one training step):
 *   slm_model_threads_setup(0);                          once, at program start
 *   Batch b; slm_batch_init(&b, max_tokens, 8, e); slm_batch_add(&b, ids, len, e); ...
 *   Activations a; slm_activations_init(&a, &m.cfg, max_tokens, e);
 *   slm_model_forward(&m, &a, &b, NULL, &loss, e);      NULL: no head switched off
 *   slm_model_zero_grad(&m, grads); slm_model_backward(&m, &a, &b, grads);
 *   slm_adam_update(&opt, m.params, grads, lr);
 * Nothing is allocated inside a step. Every sum is taken in a fixed order (no
 * atomics, no reductions across threads), so the same inputs and thread count
 * give the same numbers bit for bit.
 *
 * The layers the passes are made of are declared in layers.h (embedding,
 * hidden, output, the products) and attention.h (the attention kernels);
 * this header includes both. */
#ifndef STORYLM_MODEL_H
#define STORYLM_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "storylm/activations.h"
#include "storylm/arch.h"
#include "storylm/attention.h"
#include "storylm/batch.h"
#include "storylm/dropout.h"
#include "storylm/error.h"
#include "storylm/head_set.h"
#include "storylm/layers.h"
#include "storylm/model_params.h"
#include "storylm/model_types.h"
#include "storylm/position.h"
#include "storylm/score.h"
#include "storylm/act_fn.h"

/* Deterministic random init from seed, the architecture's (readout.c says why these scales):
 * embedding N(0, 1) (nn.Embedding's default); query, key, value, hidden and
 * output weights and biases U(-1/sqrt(fan_in), 1/sqrt(fan_in)) (nn.Linear's
 * default); distance scores 0, so every head starts reading evenly (the chapter). */
void slm_model_randomize(Model *m, uint64_t seed);

/* The architecture's default sizes (arch.h's config_default) for a vocabulary of vocab_size. */
ModelConfig slm_model_config_default(const Architecture *arch, int vocab_size);
/* Checks cfg and lays out its architecture's tensor table, allocates params (zeroed). */
int slm_model_init(Model *m, const ModelConfig *cfg, Error *e);
void slm_model_free(Model *m);
/* Number of floats the table would hold for cfg (352,848 for the default). */
size_t slm_model_param_count(const ModelConfig *cfg);

/* Process-wide, once at program start: n_threads OpenMP threads (0: keep
 * OMP_NUM_THREADS or all cores) and OpenBLAS single-threaded, so that the
 * passes split their products over OpenMP's threads themselves (see matmul).
 * Without it everything still works, with OpenBLAS threading each product,
 * but its spinning threads and OpenMP's then fight over the cores. It also
 * stops the threads a pthread OpenBLAS started at load (idle, they spin for
 * about 0.1 s: that doubled a short generation's CPU time). */
void slm_model_threads_setup(int n_threads);

/* ---------------------------------------------------------------------------
 * The passes. */

/* Runs the network on every position of b (b->n_tokens <= max_positions, ids
 * in range), with the heads in ablation switched off (NULL: none). Fills a;
 * *mean_loss (may be NULL) = mean loss over predicted positions (0 if none). */
int slm_model_forward(const Model *m, Activations *a, const Batch *b, const Ablation *ablation, float *mean_loss,
                      Error *e);
/* slm_model_forward up to the hidden layer: the attention weights, z and the
 * hidden layer, but no logits, log-sum-exp or loss (they are left as they
 * were): for views that show only what the heads read, where the 2,000-way
 * output layer would be most of the work. */
int slm_model_forward_heads(const Model *m, Activations *a, const Batch *b, const Ablation *ablation, Error *e);
/* Training's pass (and evaluation's, grads NULL), lighter in memory and
 * faster than slm_model_forward + slm_model_backward: the same forward up to the
 * hidden layer, then the output layer over chunks of positions whose logits
 * never leave the cache (slm_output_loss), then, with grads, the backward:
 * grads += d (scale * sum of the losses) / d params. Fills z, hidden, lse,
 * loss, correct and mean_loss as slm_model_forward does; logits hold only
 * scratch and the attention weights are not kept (the backward computes
 * them again): neither is ever written in full, so their memory is never
 * touched. Runs on the calling thread's OpenMP team (one thread inside a
 * Workers job). */
int slm_model_loss_and_grad(const Model *m, Activations *a, const Batch *b, const Ablation *ablation, float scale,
                            float *grads, Error *e);
/* grads (n_params, the layout of params) = 0. */
void slm_model_zero_grad(const Model *m, float *grads);
/* After slm_model_forward on the same b: grads += d mean_loss / d params. */
void slm_model_backward(const Model *m, Activations *a, const Batch *b, float *grads);

#endif
