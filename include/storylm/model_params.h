/* The model's parameters and their views (src/model/model_params.c): the
 * table of named tensors in the one parameter buffer (each architecture
 * lays out its own, arch.h), the views the passes and the tools read (by
 * name, by layer), and the sizes derived from a configuration. The optimizer, the
 * checkpoint code, the gradient checks and `info` all walk this table. */
#ifndef STORYLM_MODEL_PARAMS_H
#define STORYLM_MODEL_PARAMS_H

#include <stddef.h>
#include <stdint.h>

#include "storylm/error.h"
#include "storylm/model_types.h"

/* Layers of heads of c (1 for window8, and for a config that leaves n_layers 0). */
int slm_model_layers(const ModelConfig *c);
/* Heads over all layers or blocks (layers * n_heads; 0 for window8). */
int slm_model_heads(const ModelConfig *c);
/* The name of head g (numbered over all layers, see Ablation): "3" on a
 * one-layer model, "L:H" with the layer from 1 on others ("2:5" is layer 2's
 * head 5), as --ablate reads them. */
void slm_head_name(const ModelConfig *c, int g, char *buf, size_t size);

/* Whether --weight-decay shrinks the tensor called name (the matrices that
 * multiply; see model_params.c for why not the others). */
int slm_model_decays(const char *name);
/* Appends a tensor to m's table at the end of the buffer (the layouts'
 * step; decay as ParamTensor.decay). */
void slm_model_add_tensor(Model *m, const char *name, int ndim, int d0, int d1, int d2, int decay);
/* The tensor called name, or NULL. */
const ParamTensor *slm_model_tensor(const Model *m, const char *name);
/* mask (n_params): 1 where the parameter's tensor has decay set, 0 elsewhere. */
void slm_model_decay_mask(const Model *m, uint8_t *mask);
/* The model as layer l's passes see it (l = 0 .. layers-1), written into
 * *view: for l = 0 a plain copy of m; for l >= 1 a copy whose query, key,
 * value and distance views and whose table's per-layer tensors are layer
 * l's, named as layer 0's ("layer2.score.weight" found as "score.weight"),
 * and whose cfg.row_dim is the layer's input width (row + one layer's heads,
 * 160). Its params is m's buffer, so offsets (and grads + offset) hold. */
void slm_model_layer_view(const Model *m, int l, Model *view);
/* The name of layer l's tensor called base in layer 0 ("query" of layer 1:
 * "layer2.query"), or NULL when base is not a per-layer tensor. */
const char *slm_model_layer_tensor_name(int l, const char *base);

/* Width of z, the hidden layer's input: 160 (row, 8 heads; + 128 a further
 * layer) or 256 (8 rows). */
int slm_model_hidden_input_dim(const ModelConfig *c);

/* The tensor called name in the parameters, or in grads (laid out like
 * them); NULL where the model has none. */
const float *slm_model_param(const Model *m, const char *name);
float *slm_model_grad(const Model *m, float *grads, const char *name);

#endif
