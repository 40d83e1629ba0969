/* The model's types: its configuration, the parameter buffer with its table
 * of named views, batches, head ablation and the activations of a pass (the
 * layouts are in model.h's comment), with the small types they hold of the
 * kernels' (position scheme, score function, dropout, attention's working
 * memory). Only types and sizes, no functions: every kernel of src/model
 * includes this and the headers of what it calls, never model.h (the passes),
 * so the files of src/model call each other in one direction only
 * (docs/architecture.md draws it). */
#ifndef STORYLM_MODEL_TYPES_H
#define STORYLM_MODEL_TYPES_H

#include <stddef.h>
#include <stdint.h>

#include "storylm/bf16.h"
#include "storylm/kernels.h"

/* How positions are marked (position.h, `--pos`). */
typedef enum {
    POS_DISTANCE = 0,
    POS_NONE,
    POS_ABSOLUTE,
    POS_SINUSOIDAL,
    POS_ROPE,
    POS_ALIBI,
    POS_T5,
    POS_COUNT
} PosScheme;
#define T5_BUCKETS 32 /* T5's num_buckets, one-directional (causal) */

/* How a query scores a key (score.h, `--score`). */
typedef enum { SCORE_SCALED_DOT = 0, SCORE_DOT, SCORE_GENERAL, SCORE_ADDITIVE, SCORE_COUNT } ScoreFn;

/* The MLP's activation, TransformerLens's act_fn names. */
typedef enum { ACT_GELU = 0, ACT_GELU_NEW, ACT_RELU, ACT_COUNT } ActFn;
#define STORYLM_MAX_TF_LAYERS 8
#define TF_LN_EPS 1e-5f
#define TF_MAX_D_MODEL 1024

struct Architecture; /* arch.h: the interface of the model's architecture */

typedef struct ModelConfig {
    const struct Architecture *arch; /* its architecture (arch.h's registry); what the sizes below mean for it */
    int vocab_size;                  /* V: 2000 by default (train --vocab-size); the vocabulary stored with the model */
    int row_dim;                     /* 32: a token's row of the embedding */
    int n_heads;                     /* 8 */
    int key_dim;                     /* 8: queries and keys */
    int value_dim;                   /* 16 */
    int window;                      /* 256: distances 0..window-1 are read */
    int hidden_dim;                  /* 128 */
    int context;                     /* window8 only: 8 rows, oldest first, [EOS] row before the story */
    PosScheme pos;                   /* attention only: how positions are marked (position.h); 0 = distance, today's */
    ScoreFn score;                   /* attention only: how a query scores a key (score.h); 0 = scaled-dot, today's */
    int n_layers;       /* attention only: layers of heads, 1..STORYLM_MAX_LAYERS (0 is read as 1, today's);
                         * transformer: blocks, 1..STORYLM_MAX_TF_LAYERS */
    int act;            /* transformer only: the MLP's activation, an ActFn */
    int tie_embeddings; /* transformer family: 1: W_U is W_E transposed, one tensor (embed.W_E) in the file */
} ModelConfig;

#define STORYLM_MAX_LAYERS 4
/* Heads in one layer (or block) of either network: attention's backward
 * takes a layer's switched-off heads as the bits of a uint32_t. */
#define STORYLM_MAX_HEADS 32

/* One named tensor inside the parameter buffer, safetensors-style shape. */
typedef struct ParamTensor {
    const char *name; /* "embedding", "query", ..., "output.bias" */
    int ndim;
    int shape[3];
    size_t offset; /* in floats, into Model.params */
    size_t size;   /* in floats */
    int decay;     /* 1: --weight-decay shrinks it (the matrices that multiply: query, key,
                    * value, hidden.weight, output.weight); 0: biases, distance scores and
                    * the embedding (see model_params.c for why) */
} ParamTensor;

#define MODEL_MAX_TENSORS 160   /* a transformer of 8 blocks has 150 */
#define STORYLM_MAX_HEAD_DIM 64 /* largest key_dim and value_dim the passes take */

typedef struct Model {
    ModelConfig cfg;
    float *params; /* every parameter, one buffer */
    size_t n_params;
    ParamTensor tensors[MODEL_MAX_TENSORS];
    int n_tensors;
    /* named views into params (NULL where the architecture has none) */
    float *embedding; /* (V, 32) */
    float *query;     /* (H, 32, 8): q = row @ query[h] */
    float *key;       /* (H, 32, 8) */
    float *value;     /* (H, 32, 16) */
    float *distance;  /* (H, 256): score added for each distance back */
    float *hidden_w;  /* (128, 160) attention / (128, 256) window8, PyTorch Linear layout */
    float *hidden_b;  /* (128) */
    float *output_w;  /* (V, 128) */
    float *output_b;  /* (V) */
    /* The kernels of the passes whose caller does not choose them (the
     * probes, slm_evaluate): 0, the build's default, unless a verb's
     * --kernels set it after loading. Not saved with the parameters. */
    Kernels kernels;
} Model;

/* FP32 products on m's kernels: the probes' own products (their circuits). */
static inline Compute slm_model_compute(const Model *m) {
    return (Compute){.precision = PRECISION_FP32, .kernels = m->kernels};
}

/* ---------------------------------------------------------------------------
 * A batch: several whole stories packed one after another (batch.h). */
/* Where a story in a batch stands when it is a piece of a longer one (a long
 * story runs as pieces of bounded length, so memory does not grow with it):
 * its first `context` tokens only give keys and values to the positions after
 * them (no target; at least the window's W-1 before the first predicted one,
 * so every prediction sees exactly what it would in the whole story); the
 * piece's last position predicts `next` (-1: the story ends there); `offset`
 * is where the piece's first token stands in the story, for messages. */
typedef struct BatchPiece {
    int context;
    int offset;
    int32_t next;
} BatchPiece;

typedef struct Batch {
    int32_t *tokens;   /* (max_tokens) every story's ids, packed */
    int *starts;       /* (max_stories + 1): story i is tokens[starts[i] .. starts[i+1]) */
    BatchPiece *piece; /* (max_stories): {0, 0, -1} for a whole story */
    int n_stories, n_tokens;
    int max_stories, max_tokens;
} Batch;

/* ---------------------------------------------------------------------------
 * Head ablation: a property of the forward pass, not of the weights. A
 * switched-off head's slot of z (its value_dim numbers) is replaced by zeros
 * or by that head's given mean output; the head's attention is still computed
 * (probes can read it) but nothing flows back through it. */
typedef enum { ABLATE_ZERO = 0, ABLATE_MEAN = 1 } AblationMode;

/* Heads are numbered over all layers: head h of layer l (both from 0) is
 * g = l*H + h, so a one-layer model's heads are 0..H-1 as always. A set of
 * them holds every head of the largest model storylm builds or loads: the
 * attention network's STORYLM_MAX_LAYERS layers or the transformer's
 * STORYLM_MAX_TF_LAYERS blocks, of STORYLM_MAX_HEADS heads each (the loader
 * refuses more: each architecture's config_check, arch.h). Its
 * helpers are in head_set.h. */
#define STORYLM_MAX_ALL_HEADS                                                                                          \
    ((STORYLM_MAX_LAYERS > STORYLM_MAX_TF_LAYERS ? STORYLM_MAX_LAYERS : STORYLM_MAX_TF_LAYERS) * STORYLM_MAX_HEADS)
_Static_assert(STORYLM_MAX_ALL_HEADS >= STORYLM_MAX_LAYERS * STORYLM_MAX_HEADS &&
                   STORYLM_MAX_ALL_HEADS >= STORYLM_MAX_TF_LAYERS * STORYLM_MAX_HEADS,
               "a head set holds every head of either network");
_Static_assert(STORYLM_MAX_ALL_HEADS % 64 == 0 && STORYLM_MAX_HEADS <= 32, "whole words; a layer fits a uint32_t");
typedef struct HeadSet {
    uint64_t bits[STORYLM_MAX_ALL_HEADS / 64]; /* bit g % 64 of word g / 64: head g */
} HeadSet;

/* A head of layer l switched off is switched off for the layers above it
 * too: they read its slot of z as replaced. */
typedef struct Ablation {
    HeadSet heads; /* head g switched off */
    AblationMode mode;
    const float *mean; /* (layers*H, value_dim), ABLATE_MEAN only; must outlive the backward pass */
} Ablation;

/* ---------------------------------------------------------------------------
 * Dropout (dropout.h). */
/* What a forward pass drops (all zero: nothing, the default). */
typedef struct Dropout {
    float hidden;                  /* P for each number of z (N, Z); 0: off; < 1 */
    float attention;               /* P for each attention weight; 0: off; < 1 */
    const uint64_t *story_keys;    /* (the batch's stories) each story's key (slm_dropout_story_key) */
    const uint8_t *hidden_mask;    /* tests, instead of keys: (N, Z), 1 keep, 0 drop */
    const uint8_t *attention_mask; /* tests, instead of keys: (H, N, N), [h][p][u] for key u of position p */
} Dropout;

/* One kind of dropout during one pass. */
typedef struct DropoutMask {
    float p;              /* 0: off */
    float scale;          /* 1 / (1 - p) */
    uint64_t threshold;   /* a 32-bit draw below it drops */
    uint64_t salt;        /* which kind: z or attention */
    const uint64_t *keys; /* (N) each position's key (slm_dropout_position_keys) */
    const uint8_t *fixed; /* tests: the mask itself */
    int n_positions;      /* N of the pass (a fixed attention mask's stride) */
} DropoutMask;

typedef struct VariantScratch VariantScratch; /* score.h */
/* Attention's working memory, sized by slm_activations_init (S = slm_attention_row_stride(W)). */
typedef struct AttentionScratch {
    float *kv, *d_kv;        /* (H, ld/8, kd+vd, 8): each head's keys and values in blocks of 8
                              * positions (component i of the block's 8 keys at offset 8*i), and gradients */
    float *dist, *d_dist;    /* (H, S): distance scores farthest first, 8 zeros each side, and gradients */
    float *w, *ds;           /* (H, 2, S): two positions' weights and score gradients (the forward: (H, S)) */
    float *lse;              /* (H, ld): each position's log-sum-exp of its scores, for the backward */
    DropoutMask drop;        /* training's attention dropout for this pass (p 0: none; slm_dropout_prepare) */
    float *dw;               /* (H, S): one position's weights after dropout, what the blend reads */
    VariantScratch *variant; /* --pos and --score's working memory (score.h) */
    int head_base;           /* l*H for layer l: its heads' number over all layers, attention
                              * dropout's stream (so each layer draws masks of its own) */
} AttentionScratch;

/* ---------------------------------------------------------------------------
 * Activations: everything a forward pass computes and its backward pass needs,
 * sized once for up to max_positions packed positions (N below = n_positions
 * of the last forward; p is a position in the batch, 0..N-1).
 *
 * Layouts, for the probes:
 *   z       (N, Z) what the hidden layer read: row then head 0..H-1 (an ablated
 *           head's slot holds its replacement), or window8's 8 rows
 *   layer[l].qkv, layer[l].att: layer l's heads as below (qkv, att)
 *   qkv     (H*(2*kd+vd), ld), transposed so that keys lie contiguous, row
 *           stride ld = qkv_ld >= N: query[h] component i of position p at
 *           qkv[(h*kd + i)*ld + p], key at qkv[(H*kd + h*kd + i)*ld + p],
 *           value c at qkv[(2*H*kd + h*vd + c)*ld + p] (use slm_activations_qkv)
 *   att     (H, N, S) attention weights, S = slm_attention_row_stride(W) (272):
 *           row (h, p) starts at att + (h*N + p)*S and holds whole blocks of 8
 *           positions, from the block of first_key[p]: the weight of the key at
 *           position first_key[p] + j (distance back p - first_key[p] - j) is
 *           entry first_key[p] % 8 + j, j < n_keys = p - first_key[p] + 1; the
 *           other entries are 0 (use slm_activations_attention)
 *   hidden  (N, 128) after tanh
 *   logits  (N, V) after the bias; slm_model_backward overwrites them with
 *           d loss / d logits
 * Per position: target (next id or -1 at a story's last position), loss
 * (-log p(target) in nats, 0 without target), correct (1 when the target has
 * the largest logit). qkv, att and the attention scratch are NULL for window8,
 * and the activations_* accessors below are for the attention network. */
/* One layer of heads' part of the activations (layer l; l = 0 is the first). */
typedef struct LayerActivations {
    float *qkv;               /* (QKV, ld) the layer's queries, keys, values, layout as below */
    float *att;               /* (H, N, S) its attention weights */
    float *qkv_w;             /* (QKV, Din) its query, key, value weights stacked, one sgemm for all heads;
                               * Din = 32 (layer 0) or 160 (row, the layer below's heads) */
    AttentionScratch scratch; /* kv, dist, lse, variant its own; the backward's scratch shared */
} LayerActivations;

typedef struct Activations {
    ModelConfig cfg;
    int max_positions;
    int n_positions, n_predicted;
    double mean_loss;
    Ablation ablation;                          /* of the last forward; backward honours it */
    int attention_kept;                         /* 1 after slm_model_forward: att holds the weights */
    float *z;                                   /* (N, Z) */
    LayerActivations layer[STORYLM_MAX_LAYERS]; /* the first slm_model_layers(cfg) are set */
    int qkv_ld;                                 /* row stride of qkv and d_qkv: N in blocks of 8, plus 8 */
    int *first_key;                             /* (N) earliest position p reads */
    float *hidden;                              /* (N, 128) */
    float *logits;                              /* (N, V) */
    float *lse;                                 /* (N) log-sum-exp of each row of logits */
    int32_t *target;                            /* (N) */
    float *loss;                                /* (N) */
    uint8_t *correct;                           /* (N) */
    /* backward and scratch */
    float *d_qkv_w;  /* (QKV, Din) of the widest layer */
    float *d_qkv;    /* (QKV, ld) */
    float *d_z;      /* (N, Z) */
    float *d_hidden; /* (N, 128) */
    float *ones;     /* (max_positions) for bias gradients as matrix-vector products */
    /* training's dropout: set by the caller before a forward (zeroed: none, as
     * slm_activations_init leaves it); the backward drops what its forward did */
    Dropout dropout;
    DropoutMask hidden_drop; /* z's mask for this pass (slm_dropout_prepare) */
    uint64_t *drop_keys;     /* (max_positions) each position's key */
    /* training's matrix products (bf16.h): set by the caller like dropout;
     * slm_model_loss_and_grad uses it when it computes gradients, every
     * forward alone (evaluation, probes) runs FP32. kernels: every pass's
     * (kernels.h), set like precision. products: this pass's. */
    Precision precision;
    Kernels kernels;
    Compute products;
    float *z_kept;              /* (N, Z) two layers or more: z before z's dropout, which the
                                 * backward through the upper layers reads */
    struct ForwardHooks *hooks; /* set by the caller (hooks.h; NULL: none): slm_model_forward
                                 * calls them between its parts */
    struct TfActivations *tf;   /* the transformer family: its own activations (its module's); then
                                 * hidden is ln_final's output (N, d_model) and z, layer[] unused */
} Activations;

#endif
