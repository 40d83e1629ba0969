/* Head lists as the user writes them (--ablate, --heads): "3,5" on a model
 * of one layer, "1:3,2:5" (layer:head, layers from 1) on one of several. */
#ifndef STORYLM_HEAD_LIST_H
#define STORYLM_HEAD_LIST_H

#include <stdint.h>

#include "storylm/error.h"
#include "storylm/model.h"

/* list -> bit mask of c's heads over all its layers: "L:H" (layer from 1) or
 * a plain "H" (the first layer's), e.g. "1:3,2:5"; bit (L-1)*n_heads + H.
 * Fails for a layer or head the model does not have. */
int slm_head_list_parse(const char *list, const ModelConfig *c, uint32_t *mask, Error *e);

#endif
