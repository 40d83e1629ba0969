/* The chapter's readout (src/model/readout.c): what the attention network
 * and window8 share, composed by their modules (src/arch/attention,
 * src/arch/window8). Each makes z (N, Z) its own way (ReadoutInput); then
 *   hidden   y = tanh(hidden.weight z + hidden.bias)      (N, 128)
 *   logits   output.weight y + output.bias                 (N, V)
 *   loss     mean over the predicted positions of -log p(next), nats
 * with dropout on z, hooks between the parts, the products at training's
 * precision, and the backward down to d_z, which the input turns into its
 * own gradients. The network is drawn in model.h. */
#ifndef STORYLM_READOUT_H
#define STORYLM_READOUT_H

#include <stdint.h>

#include "storylm/error.h"
#include "storylm/hooks.h"
#include "storylm/model_types.h"
#include "storylm/rng.h"

/* How a network makes z and takes its gradient. */
typedef struct ReadoutInput {
    /* tokens of b -> z (N, Z), the attention weights kept when keep_weights */
    void (*forward)(const Model *m, Activations *a, const Batch *b, int keep_weights);
    /* d_z (N, Z) -> grads of the input's tensors += */
    void (*backward)(const Model *m, Activations *a, const Batch *b, float *grads);
} ReadoutInput;

/* The passes of model.h (Architecture's forward, loss_and_grad, backward) with
 * in making z. The forward checks its inputs; the losses are the caller's to check. */
int slm_readout_forward(const ReadoutInput *in, const Model *m, Activations *a, const Batch *b, const Ablation *ab,
                        int to_logits, Error *e);
int slm_readout_loss_and_grad(const ReadoutInput *in, const Model *m, Activations *a, const Batch *b,
                              const Ablation *ab, float scale, float *grads, Error *e);
void slm_readout_backward(const ReadoutInput *in, const Model *m, Activations *a, const Batch *b, float *grads);

/* The readout's initial values from seed (PyTorch's defaults, model.h): the
 * embedding N(0, 1), then heads(m, r) draws the input's own tensors from
 * the same stream (NULL: none), then the hidden and output layers
 * U(-1/sqrt(fan_in), 1/sqrt(fan_in)). */
void slm_readout_randomize(Model *m, uint64_t seed, void (*heads)(Model *m, Rng *r));
void slm_fill_uniform(Rng *r, float *x, size_t n, double bound);

/* The readout's activations for up to max_positions positions (z, hidden,
 * logits, losses and their scratch; none of the heads' layers). */
int slm_readout_activations_init(Activations *a, const ModelConfig *cfg, int max_positions, Error *e);
/* Frees them and every layer's buffers (the attention network's too). */
void slm_readout_activations_free(Activations *a);

/* The readout's table: hidden.weight (128, Z), hidden.bias, output.weight
 * (V, 128), output.bias appended to m's. */
void slm_readout_layout(Model *m);
/* m's views of the embedding and the readout's tensors (query, key, value,
 * distance too where the table has them). */
void slm_readout_bind_views(Model *m);
/* The sizes every chapter network needs positive (the caller's own next). */
int slm_readout_check_sizes(const ModelConfig *c, Error *e);

/* Hook points in z (hooks.h): hook_embed (the row), blocks.l.attn.hook_z
 * (layer l's heads) and hook_hidden_in (z whole) moved between z and buf
 * (to_buf: gathered, else written back); 1 for the points hooks.c moves. */
int slm_readout_hook_move(const Model *m, Activations *a, HookPoint p, int l, float *buf, int to_buf);

#endif
