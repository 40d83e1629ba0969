/* How a query scores a key (issue 12, the seed's "three ways to score a
 * note" and the sqrt(d) section): the score functions of `--score`.
 *
 *   scaled-dot  s = q.k / sqrt(kd)               today's, the default
 *   dot         s = q.k                          without the sqrt(8)
 *   general     s = q^T G_h k                    G: (H, kd, kd) learned ("score.weight")
 *   additive    s = v_h . tanh(A_h q + B_h k)    A, B: (H, kd, kd), v: (H, kd)
 *                                                ("score.query", "score.key", "score.v")
 *
 * general and additive are computed as transforms of the queries and keys
 * before the attention kernel: general turns q into q~ = G^T q and scores
 * q~.k; additive turns q into A q and k into B k, and the kernel scores
 * v.tanh(q~ + k~). So the fast kernel, its dropout, its recomputation in the
 * backward and generation's key cache serve every score.
 *
 * The working memory of the variants (positions, distance tables, the
 * queries and keys before their transform) lives in a VariantScratch beside
 * attention's scratch. */
#ifndef STORYLM_SCORE_H
#define STORYLM_SCORE_H

#include <stddef.h>

#include "storylm/error.h"
#include "storylm/model_types.h" /* ScoreFn, the model */

const char *slm_score_name(ScoreFn score);
int slm_score_parse(const char *name, ScoreFn *score, Error *e);
const char *slm_score_names(void);

/* The factor the kernel multiplies q.k by: 1/sqrt(kd) for scaled-dot, else 1. */
float slm_score_scale(const struct ModelConfig *c);

/* The variants' working memory for up to max_positions positions, qkv rows of stride up to max_ld. */
typedef struct VariantScratch {
    int *story_pos;          /* (N) each position's place in its story */
    float *table;            /* (H, W) distance scores as attention reads them (not for `distance`) */
    float *d_table;          /* (H, W) */
    float *qk_before;        /* (2*H*kd, ld) queries and keys before the score's transform */
    const float *additive_v; /* (H, kd) additive only: the model's v, set by the forward */
    float *d_additive_v;     /* (H, kd) additive only: its gradient, set by the backward */
} VariantScratch;

VariantScratch *slm_variant_scratch_new(const struct ModelConfig *c, int max_positions, int max_ld, Error *e);
void slm_variant_scratch_free(VariantScratch *v);

/* qkv (QKV, ld) of N positions: queries and keys turned by rope (if the
 * model uses it) and transformed by the score (general, additive); the
 * untransformed ones kept in v->qk_before. Sets v->additive_v. */
void slm_score_qk_forward(const struct Model *m, VariantScratch *v, float *qkv, int ld, int N);
/* d_qkv (QKV, ld) w.r.t. the transformed queries and keys -> w.r.t. the
 * matmul's, in place; grads of the score's tensors +=. */
void slm_score_qk_backward(const struct Model *m, const VariantScratch *v, float *d_qkv, int ld, int N, float *grads);
/* The score's tensors of a model (or of a layer's view), looked up once, so
 * that generation's every token does not look them up by name (NULL where
 * the score has none). */
typedef struct ScoreTensors {
    const float *general;     /* "score.weight" (H, kd, kd) */
    const float *query, *key; /* "score.query", "score.key" (H, kd, kd) */
    const float *v;           /* "score.v" (H, kd) */
} ScoreTensors;
void slm_score_tensors(const struct Model *m, ScoreTensors *t);
/* One new token's queries and keys (qkv as generation lays it: H*kd queries,
 * H*kd keys, values) at position t: turned and transformed like the above,
 * with st the model's (slm_score_tensors). */
void slm_score_token_qk_with(const struct ModelConfig *c, const ScoreTensors *st, int t, float *qkv);
/* Head h's score of key k for query q before any distance score, from the
 * queries and keys as the activations hold them (turned and transformed):
 * q.k times slm_score_scale, or the additive score. */
float slm_score_content(const struct Model *m, int h, const float *q, const float *k);
/* The additive score of a query q~ (kd) and key k~ (kd) of head h. */
float slm_additive_score(const float *v, int kd, const float *q, const float *k);

/* 0, or -1 with a message naming `what` and the variant when a probe or
 * view cannot read a model of this kind. need: VARIANT_NEEDS_* bits. */
enum {
    VARIANT_NEEDS_DOT = 1,       /* scores that are a dot product of q and k (not additive) */
    VARIANT_NEEDS_DISTANCE = 2,  /* scores per distance back (--pos distance, alibi, t5) */
    VARIANT_NEEDS_ROW_SCORES = 4 /* scores of two tokens' rows alone: no position inside q or k, plain dot */
};
int slm_variant_check(const struct ModelConfig *c, const char *what, unsigned need, Error *e);

#endif
