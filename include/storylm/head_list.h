/* Heads as the user names them, checked against a model: "H", or "L:H" with
 * the layer (a transformer's block) from 1 and the head from 0, so "2:3" is
 * layer 2's head 3 (TransformerLens's blocks.1, head 3). A plain "H" is head
 * H of the layer the caller says: the first for a list (--ablate 3 on a
 * model of two layers is 1:3, as always), --layer's for --head. One reader
 * and one message for every front end: --head, --heads, --ablate, the
 * server's "head", "heads" and "ablate", Python's ablate=. */
#ifndef STORYLM_HEAD_LIST_H
#define STORYLM_HEAD_LIST_H

#include "storylm/error.h"
#include "storylm/model.h"

/* param: the parameter's name ("head", "heads", "ablate"). An error names
 * it and the value as given (Error.param), so each front end says it in its
 * own words: "--head 12 is out of range: this model has heads 0 to 7", a
 * request's "\"head\": 12 ...", Python's "ablate='3,12': head 12 is out of
 * range: ...". */

/* One head, name, into *layer (from 1) and *head (from 0); a plain "H" is
 * head H of layer `layer` (from 1). With all, "-1" (or "L:-1") names every
 * head of the layer: *head = -1. c NULL: only the form is checked (*layer
 * and *head as written, *layer = `layer` for a plain H), for a check before
 * the model is loaded. */
int slm_head_parse(const char *name, const ModelConfig *c, int layer, int all, const char *param, int *out_layer,
                   int *out_head, Error *e);

/* A list, "3,5" or "1:3,2:5" (a plain H: the first layer's), into set:
 * head h of layer L is (L-1)*H + h (HeadSet, model_types.h). */
int slm_head_list_parse(const char *list, const ModelConfig *c, const char *param, HeadSet *set, Error *e);

/* The heads of set as the user writes them, comma-separated ("3,5", or
 * "1:3,2:5" on a model of several layers), into buf (size); "none" when empty. */
void slm_head_list_text(const HeadSet *set, const ModelConfig *c, char *buf, size_t size);

#endif
