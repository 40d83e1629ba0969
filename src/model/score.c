/* The score functions of --score and the variants' working memory: see
 * include/storylm/score.h. The transforms of the queries and keys, forward
 * and backward side by side; the additive score's kernel itself lives in
 * attention.c, beside the dot product's. */
#include "storylm/score.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "storylm/layers.h"
#include "storylm/model_params.h"
#include "storylm/position.h"

static const char *const score_names_list[SCORE_COUNT] = {"scaled-dot", "dot", "general", "additive"};

const char *slm_score_name(ScoreFn score) { return score >= 0 && score < SCORE_COUNT ? score_names_list[score] : "?"; }

const char *slm_score_names(void) { return "scaled-dot|dot|general|additive"; }

int slm_score_parse(const char *name, ScoreFn *score, Error *e) {
    for (int i = 0; i < SCORE_COUNT; i++)
        if (strcmp(name, score_names_list[i]) == 0) {
            *score = (ScoreFn)i;
            return 0;
        }
    return FAIL(e, "use one of scaled-dot, dot, general, additive", "unknown score function '%s'", name);
}

float slm_score_scale(const ModelConfig *c) {
    return c->score == SCORE_SCALED_DOT ? 1.0f / sqrtf((float)c->key_dim) : 1.0f;
}

/* ---- working memory ------------------------------------------------------------ */

VariantScratch *slm_variant_scratch_new(const ModelConfig *c, int max_positions, int max_ld, Error *e) {
    VariantScratch *v = xcalloc(1, sizeof *v, e);
    if (!v) return NULL;
    size_t HW = (size_t)c->n_heads * c->window, QK = 2 * (size_t)c->n_heads * c->key_dim * max_ld;
    v->story_pos = xcalloc((size_t)max_positions, sizeof(int), e);
    v->table = v->story_pos ? xcalloc(HW, sizeof(float), e) : NULL;
    v->d_table = v->table ? xcalloc(HW, sizeof(float), e) : NULL;
    int transforms = c->score == SCORE_GENERAL || c->score == SCORE_ADDITIVE;
    v->qk_before = v->d_table && transforms ? xcalloc(QK, sizeof(float), e) : NULL;
    if (!v->d_table || (transforms && !v->qk_before)) {
        slm_variant_scratch_free(v);
        return NULL;
    }
    return v;
}

void slm_variant_scratch_free(VariantScratch *v) {
    if (!v) return;
    free(v->story_pos);
    free(v->table);
    free(v->d_table);
    free(v->qk_before);
    free(v);
}

/* ---- the transforms of queries and keys --------------------------------------- */

/* y (kd) = M x, M (kd, kd) row-major (transposed: y = M^T x). */
static void small_matvec(const float *M, int kd, int transposed, const float *x, float *y) {
    for (int j = 0; j < kd; j++) {
        float s = 0.0f;
        for (int i = 0; i < kd; i++) s += (transposed ? M[i * kd + j] : M[j * kd + i]) * x[i];
        y[j] = s;
    }
}

/* Row block `g` of qkv (a head's query, g < H, or key, g >= H): component i
 * of position p at rows[(g*kd + i)*ld + p]. Each position's kd numbers x
 * become M x (or M^T x), the old ones kept in before. */
static void transform_rows(const float *M, int kd, int transposed, int g, float *qkv, float *before, int ld, int N) {
    float x[STORYLM_MAX_HEAD_DIM], y[STORYLM_MAX_HEAD_DIM];
    float *rows = qkv + (size_t)g * kd * ld, *keep = before + (size_t)g * kd * ld;
    for (int p = 0; p < N; p++) {
        for (int i = 0; i < kd; i++) x[i] = keep[(size_t)i * ld + p] = rows[(size_t)i * ld + p];
        small_matvec(M, kd, transposed, x, y);
        for (int i = 0; i < kd; i++) rows[(size_t)i * ld + p] = y[i];
    }
}

/* Backward of transform_rows: d rows (of M x) -> d x in place; dM +=. */
static void transform_rows_backward(const float *M, int kd, int transposed, int g, float *d_qkv, const float *before,
                                    int ld, int N, float *dM) {
    float dy[STORYLM_MAX_HEAD_DIM], dx[STORYLM_MAX_HEAD_DIM];
    float *rows = d_qkv + (size_t)g * kd * ld;
    const float *x = before + (size_t)g * kd * ld;
    for (int p = 0; p < N; p++) {
        for (int j = 0; j < kd; j++) dy[j] = rows[(size_t)j * ld + p];
        /* y = M x: dx = M^T dy, dM[j][i] += dy_j x_i; y = M^T x: dx = M dy, dM[i][j] += x_i dy_j */
        small_matvec(M, kd, !transposed, dy, dx);
        for (int j = 0; j < kd; j++)
            for (int i = 0; i < kd; i++) dM[transposed ? i * kd + j : j * kd + i] += dy[j] * x[(size_t)i * ld + p];
        for (int i = 0; i < kd; i++) rows[(size_t)i * ld + p] = dx[i];
    }
}

void slm_score_qk_forward(const Model *m, VariantScratch *v, float *qkv, int ld, int N) {
    const ModelConfig *c = &m->cfg;
    int H = c->n_heads, kd = c->key_dim;
    if (c->pos == POS_ROPE) slm_rope_forward(c, v->story_pos, N, qkv, ld, 1);
    if (c->score == SCORE_GENERAL) {
        const float *G = slm_model_param(m, "score.weight");
        for (int h = 0; h < H; h++) transform_rows(G + (size_t)h * kd * kd, kd, 1, h, qkv, v->qk_before, ld, N);
    } else if (c->score == SCORE_ADDITIVE) {
        const float *A = slm_model_param(m, "score.query"), *B = slm_model_param(m, "score.key");
        for (int h = 0; h < H; h++) {
            transform_rows(A + (size_t)h * kd * kd, kd, 0, h, qkv, v->qk_before, ld, N);
            transform_rows(B + (size_t)h * kd * kd, kd, 0, H + h, qkv, v->qk_before, ld, N);
        }
    }
    v->additive_v = slm_model_param(m, "score.v");
}

void slm_score_qk_backward(const Model *m, const VariantScratch *v, float *d_qkv, int ld, int N, float *grads) {
    const ModelConfig *c = &m->cfg;
    int H = c->n_heads, kd = c->key_dim;
    if (c->score == SCORE_GENERAL) {
        const float *G = slm_model_param(m, "score.weight");
        float *dG = slm_model_grad(m, grads, "score.weight");
        for (int h = 0; h < H; h++)
            transform_rows_backward(G + (size_t)h * kd * kd, kd, 1, h, d_qkv, v->qk_before, ld, N,
                                    dG + (size_t)h * kd * kd);
    } else if (c->score == SCORE_ADDITIVE) {
        const float *A = slm_model_param(m, "score.query"), *B = slm_model_param(m, "score.key");
        float *dA = slm_model_grad(m, grads, "score.query"), *dB = slm_model_grad(m, grads, "score.key");
        for (int h = 0; h < H; h++) {
            size_t o = (size_t)h * kd * kd;
            transform_rows_backward(A + o, kd, 0, h, d_qkv, v->qk_before, ld, N, dA + o);
            transform_rows_backward(B + o, kd, 0, H + h, d_qkv, v->qk_before, ld, N, dB + o);
        }
    }
    if (c->pos == POS_ROPE) slm_rope_forward(c, v->story_pos, N, d_qkv, ld, -1);
}

void slm_score_tensors(const Model *m, ScoreTensors *t) {
    *t = (ScoreTensors){.general = slm_model_param(m, "score.weight"),
                        .query = slm_model_param(m, "score.query"),
                        .key = slm_model_param(m, "score.key"),
                        .v = slm_model_param(m, "score.v")};
}

void slm_score_token_qk_with(const ModelConfig *c, const ScoreTensors *st, int t, float *qkv) {
    int H = c->n_heads, kd = c->key_dim;
    float x[STORYLM_MAX_HEAD_DIM];
    for (int g = 0; g < 2 * H && c->pos == POS_ROPE; g++) slm_rope_turn(kd, t, 1, qkv + g * kd);
    for (int g = 0; g < 2 * H; g++) {
        int h = g % H, query = g < H;
        const float *M = c->score == SCORE_GENERAL    ? (query ? st->general : NULL)
                         : c->score == SCORE_ADDITIVE ? (query ? st->query : st->key)
                                                      : NULL;
        if (!M) continue;
        memcpy(x, qkv + g * kd, kd * sizeof(float));
        small_matvec(M + (size_t)h * kd * kd, kd, c->score == SCORE_GENERAL, x, qkv + g * kd);
    }
}

float slm_score_content(const Model *m, int h, const float *q, const float *k) {
    const ModelConfig *c = &m->cfg;
    int kd = c->key_dim;
    if (c->score == SCORE_ADDITIVE) return slm_additive_score(slm_model_param(m, "score.v") + (size_t)h * kd, kd, q, k);
    float dot = 0.0f;
    for (int i = 0; i < kd; i++) dot += q[i] * k[i];
    return dot * slm_score_scale(c);
}

float slm_additive_score(const float *v, int kd, const float *q, const float *k) {
    float t[STORYLM_MAX_HEAD_DIM], s = 0.0f;
    for (int i = 0; i < kd; i++) t[i] = q[i] + k[i];
    slm_tanh_inplace(t, kd); /* the passes' tanh, so that every path scores alike */
    for (int i = 0; i < kd; i++) s += v[i] * t[i];
    return s;
}

/* ---- what a probe can read ------------------------------------------------------- */

int slm_variant_check(const ModelConfig *c, const char *what, unsigned need, Error *e) {
    int plain_dot = c->score == SCORE_SCALED_DOT || c->score == SCORE_DOT;
    int rows_alone = c->pos == POS_DISTANCE || c->pos == POS_NONE || c->pos == POS_ALIBI || c->pos == POS_T5;
    const char *why = NULL, *hint = NULL;
    if ((need & VARIANT_NEEDS_DOT) && c->score == SCORE_ADDITIVE) {
        why = "its scores are additive (v . tanh(A q + B k)), not a product of a query and a key";
        hint = "give a model trained with --score scaled-dot, dot or general";
    } else if ((need & VARIANT_NEEDS_DISTANCE) && !slm_pos_scores_distance(c->pos)) {
        why = "it adds no score per distance back";
        hint = "give a model trained with --position-scheme distance (the default), alibi or t5";
    } else if ((need & VARIANT_NEEDS_ROW_SCORES) && (!plain_dot || !rows_alone)) {
        why = !plain_dot ? "its score is not a plain product of two tokens' queries and keys"
                         : "its queries and keys depend on the tokens' positions, not on the tokens alone";
        hint = "give a model trained with --position-scheme distance, none, alibi or t5 and --score scaled-dot or dot";
    }
    if (!why) return 0;
    return FAIL(e, hint, "%s has no meaning for a model with --position-scheme %s --score %s: %s", what,
                slm_pos_name(c->pos), slm_score_name(c->score), why);
}
