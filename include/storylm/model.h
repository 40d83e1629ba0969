/* The chapter's network (SPEC section 4) and chapter 6's window8 baseline:
 * configuration, one parameter buffer with a table of named views, batches of
 * whole stories, the forward and backward passes, and head ablation.
 *
 * The network, for a story of ids x_0..x_{T-1} (x_0 = [EOS]); position t
 * predicts x_{t+1}, so positions 0..T-2 have targets:
 *   row      r_t = E[x_t]                                    (32)
 *   head h   q_t = r_t query[h], k_u = r_u key[h], v_u = r_u value[h]
 *            s_u = q_t.k_u / sqrt(8) + distance[h][t-u],  u = max(0, t-255)..t
 *            o_h = sum_u softmax(s)_u v_u                     (16)
 *   z_t = [r_t, o_0, ..., o_7]                                (160)
 *   --layers N (2..4): layer l+1's heads read x_t = [r_t, layer l's o_0..o_7]
 *            (32 + 128 = 160) with their own query/key (H, 160, 8), value
 *            (H, 160, 16) and position/score tensors ("layer2.query", ...);
 *            z_t = [r_t, layer 1's heads, ..., layer N's heads]  (32 + 128 N)
 *   window8: z_t = [E[x_{t-7}], ..., E[x_t]], oldest first, E[x_0] standing
 *            in before the story's start                      (256)
 *   hidden   y_t = tanh(hidden.weight z_t + hidden.bias)      (128)
 *   logits   output.weight y_t + output.bias                  (V: 2000, train --vocab-size)
 *   loss     mean over every predicted position of the batch of -log p(x_{t+1}), nats
 *
 * Usage (one training step):
 *   slm_model_threads_setup(0);                          once, at program start
 *   Batch b; slm_batch_init(&b, max_tokens, 8, e); slm_batch_add(&b, ids, len, e); ...
 *   Activations a; slm_activations_init(&a, &m.cfg, max_tokens, e);
 *   slm_model_forward(&m, &a, &b, NULL, &loss, e);      NULL: no head switched off
 *   slm_model_zero_grad(&m, grads); slm_model_backward(&m, &a, &b, grads);
 *   slm_adam_update(&opt, m.params, grads, lr);
 * Nothing is allocated inside a step. Every sum is taken in a fixed order (no
 * atomics, no reductions across threads), so the same inputs and thread count
 * give the same numbers bit for bit.
 *
 * The layers the passes are made of are declared in layers.h (embedding,
 * hidden, output, the products) and attention.h (the attention kernels);
 * this header includes both. */
#ifndef STORYLM_MODEL_H
#define STORYLM_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "storylm/attention.h"
#include "storylm/dropout.h"
#include "storylm/error.h"
#include "storylm/layers.h"
#include "storylm/position.h"
#include "storylm/score.h"
#include "storylm/transformer.h"

typedef enum { ARCH_ATTENTION = 0, ARCH_WINDOW8 = 1, ARCH_TRANSFORMER = 2 } Arch;

typedef struct ModelConfig {
    Arch arch;
    int vocab_size; /* V: 2000 by default (train --vocab-size); the vocabulary stored with the model */
    int row_dim;    /* 32: a token's row of the embedding */
    int n_heads;    /* 8 */
    int key_dim;    /* 8: queries and keys */
    int value_dim;  /* 16 */
    int window;     /* 256: distances 0..window-1 are read */
    int hidden_dim; /* 128 */
    int context;    /* window8 only: 8 rows, oldest first, [EOS] row before the story */
    PosScheme pos;  /* attention only: how positions are marked (position.h); 0 = distance, today's */
    ScoreFn score;  /* attention only: how a query scores a key (score.h); 0 = scaled-dot, today's */
    int n_layers;   /* attention only: layers of heads, 1..STORYLM_MAX_LAYERS (0 is read as 1, today's);
                     * transformer: blocks, 1..STORYLM_MAX_TF_LAYERS */
    int act;        /* transformer only: the MLP's activation, an ActFn (transformer.h) */
} ModelConfig;

#define STORYLM_MAX_LAYERS 4

/* Layers of heads of c (1 for window8, and for a config that leaves n_layers 0). */
int slm_model_layers(const ModelConfig *c);
/* Heads over all layers or blocks (layers * n_heads; 0 for window8). */
int slm_model_heads(const ModelConfig *c);
/* The name of head g (numbered over all layers, see Ablation): "3" on a
 * one-layer model, "L:H" with the layer from 1 on others ("2:5" is layer 2's
 * head 5), as --ablate reads them. */
void slm_head_name(const ModelConfig *c, int g, char *buf, size_t size);

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
} Model;

ModelConfig slm_model_config_default(Arch arch, int vocab_size);
const char *slm_arch_name(Arch arch);
int slm_arch_parse(const char *name, Arch *arch, Error *e);

/* Lays out the tensor table for cfg and allocates params (zeroed). */
int slm_model_init(Model *m, const ModelConfig *cfg, Error *e);
void slm_model_free(Model *m);
/* Deterministic random init from seed (see src/model/model.c for why these scales):
 * embedding N(0, 1) (nn.Embedding's default); query, key, value, hidden and
 * output weights and biases U(-1/sqrt(fan_in), 1/sqrt(fan_in)) (nn.Linear's
 * default); distance scores 0, so every head starts reading evenly (the chapter). */
void slm_model_randomize(Model *m, uint64_t seed);
/* Appends a tensor to m's table at the end of the buffer (the layouts'
 * step; decay as ParamTensor.decay). */
void slm_model_add_tensor(Model *m, const char *name, int ndim, int d0, int d1, int d2, int decay);
/* The tensor called name, or NULL. */
const ParamTensor *slm_model_tensor(const Model *m, const char *name);
/* mask (n_params): 1 where the parameter's tensor has decay set, 0 elsewhere. */
void slm_model_decay_mask(const Model *m, uint8_t *mask);
/* The model as layer l's passes see it (l = 0 .. layers-1), written into
 * *view: for l = 0 a plain copy of m; for l >= 1 a copy whose query, key,
 * value and distance views and whose table's per-layer tensors are layer
 * l's, named as layer 0's ("layer2.score.weight" found as "score.weight"),
 * and whose cfg.row_dim is the layer's input width (row + one layer's heads,
 * 160). Its params is m's buffer, so offsets (and grads + offset) hold. */
void slm_model_layer_view(const Model *m, int l, Model *view);
/* The name of layer l's tensor called base in layer 0 ("query" of layer 1:
 * "layer2.query"), or NULL when base is not a per-layer tensor. */
const char *slm_model_layer_tensor_name(int l, const char *base);
/* Number of floats the table would hold for cfg (352,848 for the default). */
size_t slm_model_param_count(const ModelConfig *cfg);

/* Process-wide, once at program start: n_threads OpenMP threads (0: keep
 * OMP_NUM_THREADS or all cores) and OpenBLAS single-threaded, so that the
 * passes split their products over OpenMP's threads themselves (see matmul).
 * Without it everything still works, with OpenBLAS threading each product,
 * but its spinning threads and OpenMP's then fight over the cores. */
void slm_model_threads_setup(int n_threads);

/* Width of z, the hidden layer's input: 160 (row, 8 heads; + 128 a further
 * layer) or 256 (8 rows). */
int slm_model_hidden_input_dim(const ModelConfig *c);

/* ---------------------------------------------------------------------------
 * A batch: several whole stories packed one after another. */
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

int slm_batch_init(Batch *b, int max_tokens, int max_stories, Error *e);
void slm_batch_free(Batch *b);
void slm_batch_clear(Batch *b);
/* Appends a story of len >= 1 ids (normally [EOS] first); fails when full. */
int slm_batch_add(Batch *b, const int32_t *ids, int len, Error *e);
/* Appends a piece of a longer story (see BatchPiece). */
int slm_batch_add_piece(Batch *b, const int32_t *ids, int len, BatchPiece piece, Error *e);

/* ---------------------------------------------------------------------------
 * Head ablation: a property of the forward pass, not of the weights. A
 * switched-off head's slot of z (its value_dim numbers) is replaced by zeros
 * or by that head's given mean output; the head's attention is still computed
 * (probes can read it) but nothing flows back through it. */
typedef enum { ABLATE_ZERO = 0, ABLATE_MEAN = 1 } AblationMode;

/* Heads are numbered over all layers: head h of layer l (both from 0) is
 * g = l*H + h, so a one-layer model's heads are 0..H-1 as always. A head of
 * layer l switched off is switched off for the layers above it too: they read
 * its slot of z as replaced. */
typedef struct Ablation {
    uint32_t heads; /* bit g set: head g switched off */
    AblationMode mode;
    const float *mean; /* (layers*H, value_dim), ABLATE_MEAN only; must outlive the backward pass */
} Ablation;

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
     * forward alone (evaluation, probes) runs FP32. products: this pass's. */
    Precision precision, products;
    float *z_kept;              /* (N, Z) two layers or more: z before z's dropout, which the
                                 * backward through the upper layers reads */
    struct ForwardHooks *hooks; /* set by the caller (hooks.h; NULL: none): slm_model_forward
                                 * calls them between its parts */
    struct TfActivations *tf;   /* --arch transformer: its own activations (transformer.h); then
                                 * hidden is ln_final's output (N, d_model) and z, layer[] unused */
} Activations;

/* Helpers the attention network and the transformer share (src/model/model.c). */
/* n floats from a 64-byte boundary (free with free()); NULL with a message. */
float *slm_alloc_floats(size_t n, Error *e);
/* Row stride of qkv for N positions (Activations.qkv_ld). */
int slm_qkv_stride(int N);
/* query (H, D, kd), key (H, D, kd), value (H, D, vd) -> qkv_w (QKV, D): one
 * sgemm then makes every head's queries, keys and values in qkv's layout. */
void slm_pack_qkv(const float *query, const float *key, const float *value, int H, int D, int kd, int vd, float *qkv_w);
/* The reverse, accumulating: d_qkv_w (QKV, D) -> d_query, d_key, d_value +=. */
void slm_unpack_qkv_grads(const float *d_qkv_w, int H, int D, int kd, int vd, float *d_query, float *d_key,
                          float *d_value);
/* Per position p of b: target[p] (the next id, -1 at a story's end or in a
 * piece's context), first_key[p] (the first position a window of W reaches)
 * and story_pos[p] (its place in the whole story; may be NULL). Returns the
 * number of positions with a target. */
int slm_batch_positions(const Batch *b, int W, int32_t *target, int *first_key, int *story_pos);

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

/* ---------------------------------------------------------------------------
 * The passes. */

/* Runs the network on every position of b (b->n_tokens <= max_positions, ids
 * in range), with the heads in ablation switched off (NULL: none). Fills a;
 * *mean_loss (may be NULL) = mean loss over predicted positions (0 if none). */
int slm_model_forward(const Model *m, Activations *a, const Batch *b, const Ablation *ablation, float *mean_loss,
                      Error *e);
/* slm_model_forward up to the hidden layer: the attention weights, z and the
 * hidden layer, but no logits, log-sum-exp or loss (they are left as they
 * were): for views that show only what the heads read, where the 2,000-way
 * output layer would be most of the work. */
int slm_model_forward_heads(const Model *m, Activations *a, const Batch *b, const Ablation *ablation, Error *e);
/* Training's pass (and evaluation's, grads NULL), lighter in memory and
 * faster than slm_model_forward + slm_model_backward: the same forward up to the
 * hidden layer, then the output layer over chunks of positions whose logits
 * never leave the cache (slm_output_loss), then, with grads, the backward:
 * grads += d (scale * sum of the losses) / d params. Fills z, hidden, lse,
 * loss, correct and mean_loss as slm_model_forward does; logits hold only
 * scratch and the attention weights are not kept (the backward computes
 * them again): neither is ever written in full, so their memory is never
 * touched. Runs on the calling thread's OpenMP team (one thread inside a
 * Workers job). */
int slm_model_loss_and_grad(const Model *m, Activations *a, const Batch *b, const Ablation *ablation, float scale,
                            float *grads, Error *e);
/* grads (n_params, the layout of params) = 0. */
void slm_model_zero_grad(const Model *m, float *grads);
/* After slm_model_forward on the same b: grads += d mean_loss / d params. */
void slm_model_backward(const Model *m, Activations *a, const Batch *b, float *grads);

/* Training's dropout (src/model/dropout.c, dropout.h), as hooks of the passes. */
/* a->dropout for batch b -> each position's key, z's mask and attention's (in each layer's scratch). */
void slm_dropout_prepare(Activations *a, const Batch *b);
/* z (N, Z) -> z * mask / (1-P), in place, what the hidden layer reads (z as
 * it was kept in z_kept first with two layers or more). */
void slm_dropout_hidden_forward(Activations *a);
/* d_z (N, Z) -> d_z * the same mask / (1-P); then z's rows (attention) read
 * again from the embedding (or, with two layers or more, z from z_kept), as
 * the backward through q, k, v needs them. */
void slm_dropout_hidden_backward(const Model *m, Activations *a, const Batch *b);

#endif
