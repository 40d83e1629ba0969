/* The generator's batch (generate.h's functions run it) and the operations
 * each architecture's generator provides (its Architecture's generator):
 * generate.c's batch, loop and threads are written once over these, and
 * each module's step (src/arch) needs nothing of generate.c. */
#ifndef STORYLM_GENERATOR_BATCH_H
#define STORYLM_GENERATOR_BATCH_H

#include <stdint.h>

#include "storylm/error.h"
#include "storylm/kernels16.h"
#include "storylm/model.h"
#include "storylm/steer.h"
#include "storylm/workers.h"

typedef struct GeneratorBatch {
    const struct GeneratorOps *ops; /* the model's architecture's generator */
    const Model *model;
    Ablation ablation;
    int n; /* samples */
    /* the chapter's readout's generator (the attention network's and window8's,
     * src/arch/readout_generate.c): the weights, packed once for every sample */
    float *qkv_w;        /* (L, Din, H*(2*kd+vd)): each layer's queries (times 1/sqrt(kd)), keys, values of
                          * every head from its input (Din: the row, 32, and above the first layer the
                          * heads below, 160; each layer's block as large as the widest) */
    float *distance2;    /* (L, H, 2W) and 16 more: entry k = distance score (W-1-k) mod W */
    Model *layers;       /* (L) each layer's view of the model (slm_model_layer_view) */
    ScoreTensors *score; /* (L) each layer's --score tensors, looked up once */
    Dense16 hidden_w;    /* hidden.weight and output.weight in blocks of 16 rows */
    Dense16 output_w;
    /* each sample's story; sample s's part is at s times the size given */
    int *pos;             /* (n) tokens fed so far */
    float *keys;          /* (n, L, H, W/16, kd, 16): component i of the key in slot s (position pos % W),
                           * slots in blocks of 16 (W rounded up), a block's components in turn */
    float *values;        /* (n, L, H, W, vd): the value in slot s (position pos % W), its channels together */
    int32_t *recent;      /* (n, C) window8: the last C tokens, oldest first */
    float *qkv;           /* (n, H*(2*kd+vd)) the newest token's queries, keys, values (of one layer at a time) */
    float *z;             /* (n, Z) what the hidden layer reads */
    float *hidden;        /* (n, 128) */
    float *logits;        /* (n, V) of the last token fed */
    float *scores;        /* (n, 4, W rounded up to 16) head scores, 4 heads at once (a thread's: its first sample's) */
    float *rows;          /* (n, D) scratch: the rows of the tokens fed */
    Workers *workers;     /* NULL: steps on the caller's thread alone */
    Steering steer;       /* the directions added at hook points (generate --steer); n 0: none */
    struct GenBf16 *bf16; /* with BF16: the weights in BF16 and each sample's inputs' pairs */
    struct TokenTable *token_table; /* the first layer's keys and values of each token, shared by the samples
                                     * where they depend on the token alone, and each sample's token a slot */
    int cache_only;                 /* 1: every head reads its sample's own cache (the tests' reference) */
    void *state;                    /* another architecture's own (the transformer's weights' views and key/value
                                     * caches); then only pos, logits and workers above are used */
} GeneratorBatch;

/* An architecture's generator: generate.h's batch functions with their
 * contracts, which call these. init fills *g for n samples (all its
 * buffers, pos and logits included) or frees what it took and leaves *g
 * zeroed; free frees all of it; feed steps tokens[j] into sample which[j],
 * j < k, on the calling thread, first being where which starts in the
 * step's list (its scratch's row), adding g->steer's directions at the
 * points of steer_points (a bit a HookPoint) where the step makes them;
 * copy and set_precision as generate.h's; prepare (NULL: none), on the
 * caller's thread before a step's threads, readies what the samples share
 * for the step's tokens (k) to samples which. */
typedef struct GeneratorOps {
    int (*init)(GeneratorBatch *g, const Model *m, const Ablation *ablation, int n, Error *e);
    void (*free)(GeneratorBatch *g);
    void (*copy)(GeneratorBatch *g, int from, int to);
    void (*feed)(GeneratorBatch *g, const int *which, const int32_t *tokens, int k, int first);
    void (*prepare)(GeneratorBatch *g, const int *which, const int32_t *tokens, int k);
    int (*set_precision)(GeneratorBatch *g, Precision p, Error *e);
    unsigned steer_points; /* 1u << p for each HookPoint p feed steers at (the model must declare it too) */
} GeneratorOps;

#endif
