/* Incremental inference: one token at a time, keeping each earlier token's
 * keys and values (the last `window` of them) instead of recomputing them.
 * Gives the same logits as slm_model_forward over the whole story.
 *
 * Several stories at once (a batch of samples): each sample has its own
 * cache of keys and values and its own position, and one step feeds one
 * token to each of any subset of the samples in one pass over the weights
 * (the dense layers' weight blocks are read once for all the rows, not once
 * a row). A sample's arithmetic is the same, operation for operation,
 * whatever the batch: its logits have the same bits fed alone or with 63
 * others.
 *
 * Laid out for speed (one token is some 300,000 multiply-adds, most of them
 * the output layer's): the cache holds each head's key components as rows
 * over blocks of 16 slots, so a head's scores are 16 slots a register, and
 * each slot's value channels together, so its blend is 16 channels a
 * register; the query, key and value weights are packed
 * into one (32, 256) matrix; the distance scores are stored reversed and
 * twice over, so the scores of every slot are one contiguous stretch; the
 * dense layers' weights are packed in blocks of 16 rows, so that 16 outputs
 * build up in one register while the weights stream past once. These
 * copies are taken at init: the model must not change while the generator
 * is in use. */
#ifndef STORYLM_GENERATE_H
#define STORYLM_GENERATE_H

#include <stdint.h>

#include "storylm/error.h"
#include "storylm/generator_batch.h" /* GeneratorBatch, GeneratorOps */
#include "storylm/model.h"
#include "storylm/workers.h"

/* n >= 1 samples, each at the start of a story; ablation may be NULL (no
 * head switched off); it is copied. */
int slm_generator_batch_init(GeneratorBatch *g, const Model *m, const Ablation *ablation, int n, Error *e);
/* The same on kernels k (kernels.h; the above: the build's default): portable
 * computes each sum in one order on every target and in FP32 only, so the
 * logits have the same bits at any -march and in the WebAssembly build
 * (an architecture without a portable generator, attn-only, keeps its own). */
int slm_generator_batch_init_at(GeneratorBatch *g, Kernels k, const Model *m, const Ablation *ablation, int n,
                                Error *e);
void slm_generator_batch_free(GeneratorBatch *g);
/* Sample to takes over sample from's story (cache, position, logits): a
 * prompt fed once serves every sample. */
void slm_generator_batch_copy(GeneratorBatch *g, int from, int to);
/* One step: token tokens[j] (0 <= token < V) to sample which[j], for j < k
 * (distinct samples; the others wait). */
void slm_generator_batch_feed(GeneratorBatch *g, const int *which, const int32_t *tokens, int k);
/* Steps share the samples fed between w's threads (NULL: none), each
 * sample's arithmetic unchanged; w must outlive the batch's use. */
void slm_generator_batch_use_workers(GeneratorBatch *g, Workers *w);
/* The products from the next step on at precision p: FP32 (the default),
 * or BF16 (`generate --precision bf16`: the query, key, value, hidden and
 * output layers' weights and inputs rounded to bfloat16, FP32 sums,
 * dense_bf16.h; the attention, tanh and logits FP32), the weights packed so
 * the first time. A sample's logits have the same bits alone or in any
 * batch at either (the transformer: every product, W_Q, W_K, W_V, W_O, the
 * MLP's and the unembedding, in BF16). -1 with e set for BF16 on a CPU
 * without avx512_bf16. */
int slm_generator_batch_set_precision(GeneratorBatch *g, Precision p, Error *e);
/* From the next step on, every sample's step adds s's directions at their
 * hook points (a copy is kept); -1 with e set for a point the model's
 * generator does not steer at (s's widths are the caller's to match the
 * model's points: sae_model.h's site gives them). */
int slm_generator_batch_steer(GeneratorBatch *g, const Steering *s, Error *e);
/* Sample s's logits (V) for its next token, valid until it is fed again. */
const float *slm_generator_batch_logits(const GeneratorBatch *g, int s);

/* One story: a batch of one. */
typedef struct Generator {
    GeneratorBatch batch;
} Generator;

int slm_generator_init(Generator *g, const Model *m, const Ablation *ablation, Error *e);
void slm_generator_free(Generator *g);
/* Feeds one token (0 <= token < V); returns the logits (V) for the next one,
 * valid until the next call. */
const float *slm_generator_feed(Generator *g, int32_t token);

#endif
