/* The transformer's parameters (transformer_params.c): its configuration,
 * its tensor table in TransformerLens's names and shapes, the views its
 * passes read and its initial values. The table itself is model_params.h's.
 * Internal to the transformer's family and their tests. See transformer.h
 * for the network. */
#ifndef STORYLM_TRANSFORMER_PARAMS_H
#define STORYLM_TRANSFORMER_PARAMS_H

#include <stdint.h>

#include "storylm/error.h"
#include "storylm/model_types.h"

/* One block's tensors, views into a buffer laid out like params (the
 * parameters themselves, or their gradients). */
typedef struct TfBlockViews {
    float *ln1_w, *ln1_b;   /* (D) */
    float *W_Q, *W_K, *W_V; /* (H, D, dh) */
    float *b_Q, *b_K, *b_V; /* (H, dh) */
    float *W_O;             /* (H, dh, D) */
    float *b_O;             /* (D) */
    float *ln2_w, *ln2_b;   /* (D) */
    float *W_in, *b_in;     /* (D, F), (F) */
    float *W_out, *b_out;   /* (F, D), (D) */
    float *distance;        /* (H, n_ctx) --pos distance only ("blocks.l.attn.distance") */
    float *bucket;          /* (H, 32) --pos t5 only ("blocks.l.attn.distance_bucket") */
} TfBlockViews;

typedef struct TfViews {
    float *W_E;   /* (V, D) */
    float *W_pos; /* (n_ctx, D) --pos absolute only */
    TfBlockViews block[STORYLM_MAX_TF_LAYERS];
    float *ln_final_w, *ln_final_b; /* (D) */
    float *W_U;                     /* (D, V); tied: W_E (V, D) itself, W_U[i, t] = W_E[t, i] */
    int W_U_tied;                   /* --tie-embeddings: W_U points at W_E */
    float *b_U;                     /* (V) */
} TfViews;

/* v = the views of base (m->params, or a gradient buffer of the same layout). */
void slm_transformer_views(const Model *m, const float *base, TfViews *v);
/* TransformerLens's default init ("gpt2"): every W_ N(0, 0.8/sqrt(d_model)),
 * biases 0, LayerNorm weights 1 and biases 0, the schemes' own scores 0. */
void slm_transformer_randomize(Model *m, uint64_t seed);

/* The transformer's default config (2 layers, d_model 64, 8 heads of 8,
 * d_mlp 256, n_ctx 256, gelu, --pos absolute): 374,480 parameters at 2,000 tokens. */
ModelConfig slm_transformer_config_default(int vocab_size);
/* Checks sizes the passes take; 0 or -1 with a message. */
int slm_transformer_check_config(const ModelConfig *c, Error *e);

/* Adds the transformer's tensors to m's table (its Architecture's layout). */
void slm_transformer_layout(Model *m);
/* m->embedding = W_E; the passes read the rest through TfViews. */
void slm_transformer_bind_views(Model *m);

#endif
