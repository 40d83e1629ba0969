/* The names of an MLP's activations (ActFn, model_types.h) as TransformerLens's
 * act_fn calls them: what train's --act, the model file's act_fn and info read
 * and write. The activations themselves are their architecture's own kernels. */
#ifndef STORYLM_ACT_FN_H
#define STORYLM_ACT_FN_H

#include "storylm/error.h"
#include "storylm/model_types.h" /* ActFn */

/* "gelu", "gelu_new", "relu"; "?" for a value outside ActFn. */
const char *slm_act_name(ActFn act);
/* *act = the activation called name; 0, or -1 with a message that lists the names. */
int slm_act_parse(const char *name, ActFn *act, Error *e);

#endif
