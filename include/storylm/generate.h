/* Incremental inference: one token at a time, keeping each earlier token's
 * keys and values (the last `window` of them) instead of recomputing them.
 * Gives the same logits as model_forward over the whole story.
 *
 * Laid out for speed (one token is some 300,000 multiply-adds, most of them
 * the output layer's): the cache holds each head's key and value components
 * as rows over the window's slots, so a head's scores and its blend are
 * loops over contiguous slots; the query, key and value weights are packed
 * into one (32, 256) matrix; the distance scores are stored reversed and
 * twice over, so the scores of every slot are one contiguous stretch; the
 * dense layers' weights are packed in blocks of 16 rows, so that 16 outputs
 * build up in one register while the weights stream past once. These
 * copies are taken at generator_init: the model must not change while the
 * generator is in use. */
#ifndef STORYLM_GENERATE_H
#define STORYLM_GENERATE_H

#include <stdint.h>

#include "storylm/error.h"
#include "storylm/model.h"

typedef struct Generator {
    const Model *model;
    Ablation ablation;
    int pos;          /* tokens fed so far */
    float *keys;      /* (H, kd, W): component i of the key in slot s (position pos % W) */
    float *values;    /* (H, vd, W) */
    float *qkv_w;     /* (D, H*(2*kd+vd)): queries (times 1/sqrt(kd)), keys, values of every head */
    float *distance2; /* (H, 2W): entry k = distance score (W-1-k) mod W */
    float *qkv;       /* (H*(2*kd+vd)) the newest token's queries, keys, values */
    float *hidden_w;  /* hidden.weight and output.weight in blocks of 16 rows, column by column */
    float *output_w;
    int32_t *recent;  /* (C) window8: the last C tokens, oldest first */
    float *z;         /* (Z) what the hidden layer reads */
    float *scores;    /* (W) */
    float *hidden;    /* (128) */
    float *logits;    /* (V) of the last token fed */
} Generator;

/* ablation may be NULL (no head switched off); it is copied. */
int generator_init(Generator *g, const Model *m, const Ablation *ablation, Error *e);
void generator_free(Generator *g);
/* Forgets the story so far. */
void generator_reset(Generator *g);
/* Feeds one token (0 <= token < V); returns the logits (V) for the next one,
 * valid until the next call. */
const float *generator_feed(Generator *g, int32_t token);

#endif
