/* Activations (src/model/activations.c): the working memory of a pass,
 * sized once (model_types.h has the layouts), and the accessors the probes
 * read a head's attention, queries, keys, values and output through. */
#ifndef STORYLM_ACTIVATIONS_H
#define STORYLM_ACTIVATIONS_H

#include "storylm/error.h"
#include "storylm/model_types.h"

int slm_activations_init(Activations *a, const ModelConfig *cfg, int max_positions, Error *e);
void slm_activations_free(Activations *a);

/* The accessors take a head numbered over all layers (g = l*H + h, see
 * Ablation). Head g's attention at position p: *n_keys weights, entry j for
 * the key at position *first_key + j. */
const float *slm_activations_attention(const Activations *a, int h, int p, int *first_key, int *n_keys);
/* Copies head h's query (kd), key (kd) and value (vd) of position p; any may be NULL. */
void slm_activations_qkv(const Activations *a, int h, int p, float *query, float *key, float *value);
/* Head h's output at position p as the hidden layer read it (vd numbers);
 * a transformer's: its z before W_O (hook_z, d_head numbers). */
const float *slm_activations_head_output(const Activations *a, int h, int p);

#endif
