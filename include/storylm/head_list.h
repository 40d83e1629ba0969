/* Head lists as the user writes them (--ablate, --heads): "3,5" on a model
 * of one layer, "1:3,2:5" (layer:head, layers from 1) on one of several. */
#ifndef STORYLM_HEAD_LIST_H
#define STORYLM_HEAD_LIST_H

#include "storylm/error.h"
#include "storylm/model.h"

/* list -> the set of c's heads over all its layers: "L:H" (layer from 1) or
 * a plain "H" (the first layer's), e.g. "1:3,2:5"; head (L-1)*n_heads + H.
 * Fails for a layer or head the model does not have. */
int slm_head_list_parse(const char *list, const ModelConfig *c, HeadSet *set, Error *e);

/* The heads of set as the user writes them, comma-separated ("3,5", or
 * "1:3,2:5" on a model of several layers), into buf (size); "none" when empty. */
void slm_head_list_text(const HeadSet *set, const ModelConfig *c, char *buf, size_t size);

#endif
