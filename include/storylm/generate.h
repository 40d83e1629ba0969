/* Incremental inference: one token at a time, keeping each earlier token's
 * keys and values (the last `window` of them) instead of recomputing them.
 * Gives the same logits as model_forward over the whole story. */
#ifndef STORYLM_GENERATE_H
#define STORYLM_GENERATE_H

#include <stdint.h>

#include "storylm/error.h"
#include "storylm/model.h"

typedef struct Generator {
    const Model *model;
    Ablation ablation;
    int pos;         /* tokens fed so far */
    float *keys;     /* (H, W, kd) ring buffer: slot pos % W */
    float *values;   /* (H, W, vd) */
    int32_t *recent; /* (C) window8: the last C tokens, oldest first */
    float *row;      /* (D) scratch */
    float *z;        /* (Z) what the hidden layer reads */
    float *query;    /* (H, kd) */
    float *scores;   /* (W) */
    float *hidden;   /* (128) */
    float *logits;   /* (V) of the last token fed */
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
