/* The position schemes of --pos: see include/storylm/position.h. Each
 * scheme's forward and backward side by side: the distance tables (distance,
 * alibi, t5), the rows' tags (absolute, sinusoidal) and the turns (rope). */
#include "storylm/position.h"

#include <math.h>
#include <string.h>

#include "storylm/model_params.h"

static const char *const pos_names_list[POS_COUNT] = {"distance", "none",  "absolute", "sinusoidal",
                                                      "rope",     "alibi", "t5"};

const char *slm_pos_name(PosScheme pos) { return pos >= 0 && pos < POS_COUNT ? pos_names_list[pos] : "?"; }

const char *slm_pos_names(void) { return "distance|none|absolute|sinusoidal|rope|alibi|t5"; }

int slm_pos_parse(const char *name, PosScheme *pos, Error *e) {
    for (int i = 0; i < POS_COUNT; i++)
        if (strcmp(name, pos_names_list[i]) == 0) {
            *pos = (PosScheme)i;
            return 0;
        }
    return FAIL(e, "use one of distance, none, absolute, sinusoidal, rope, alibi, t5", "unknown position scheme '%s'",
                name);
}

int slm_pos_scores_distance(PosScheme pos) { return pos == POS_DISTANCE || pos == POS_ALIBI || pos == POS_T5; }

/* ---- distance tables: distance, alibi, t5 ------------------------------------ */

int slm_t5_bucket(int distance) {
    const int exact = T5_BUCKETS / 2;
    if (distance < exact) return distance;
    /* in float, as T5's own code computes it */
    float far = logf((float)distance / exact) / logf((float)T5_MAX_DISTANCE / exact) * (T5_BUCKETS - exact);
    int b = exact + (int)far;
    return b < T5_BUCKETS - 1 ? b : T5_BUCKETS - 1;
}

float slm_alibi_slope(int h, int H) { return (float)exp2(-8.0 * (h + 1) / H); }

float slm_position_distance_score(const Model *m, int h, int d) {
    const ModelConfig *c = &m->cfg;
    if (c->pos == POS_DISTANCE) return m->distance[(size_t)h * c->window + d];
    if (c->pos == POS_ALIBI) return -slm_alibi_slope(h, c->n_heads) * (float)d;
    if (c->pos == POS_T5) return slm_model_param(m, "distance_bucket")[h * T5_BUCKETS + slm_t5_bucket(d)];
    return 0.0f;
}

void slm_position_distance_table(const Model *m, float *table) {
    const ModelConfig *c = &m->cfg;
    for (int h = 0; h < c->n_heads; h++)
        for (int d = 0; d < c->window; d++) table[(size_t)h * c->window + d] = slm_position_distance_score(m, h, d);
}

const float *slm_position_table_for(const Model *m, float *table) {
    if (m->cfg.pos == POS_DISTANCE) return m->distance;
    slm_position_distance_table(m, table);
    return table;
}

float *slm_position_table_grad(const Model *m, float *grads, float *d_table) {
    if (m->cfg.pos == POS_DISTANCE) return grads + (m->distance - m->params);
    memset(d_table, 0, (size_t)m->cfg.n_heads * m->cfg.window * sizeof(float));
    return d_table;
}

/* d_table (H, W) -> d distance_bucket (H, 32) +=, each distance into its bucket. */
void slm_position_distance_backward(const Model *m, const float *d_table, float *grads) {
    const ModelConfig *c = &m->cfg;
    float *d_bucket = slm_model_grad(m, grads, "distance_bucket");
    if (c->pos != POS_T5 || !d_bucket) return;
    for (int h = 0; h < c->n_heads; h++)
        for (int d = 0; d < c->window; d++)
            d_bucket[h * T5_BUCKETS + slm_t5_bucket(d)] += d_table[(size_t)h * c->window + d];
}

/* ---- the rows' tags: absolute, sinusoidal --------------------------------------- */

/* row (D) += or = the sinusoidal tag of position t, pair by pair. */
static void sinusoid_put(int t, int D, int add, float *row) {
    for (int i = 0; 2 * i < D; i++) {
        double w = pow(10000.0, -2.0 * i / D), a = w * t;
        float s = (float)sin(a), c = (float)cos(a);
        row[2 * i] = add ? row[2 * i] + s : s;
        if (2 * i + 1 < D) row[2 * i + 1] = add ? row[2 * i + 1] + c : c;
    }
}

void slm_sinusoid_tag(int t, int D, float *tag) { sinusoid_put(t, D, 0, tag); }

/* Learned rows for positions 0..W-1; a later position (a story longer than
 * the window) reads the last row: "late in a long story". */
static int absolute_row(const ModelConfig *c, int t) { return t < c->window ? t : c->window - 1; }

void slm_position_row_add(const Model *m, int t, float *row) {
    const ModelConfig *c = &m->cfg;
    int D = c->row_dim;
    if (c->pos == POS_ABSOLUTE) {
        const float *P = slm_model_param(m, "position") + (size_t)absolute_row(c, t) * D;
        for (int i = 0; i < D; i++) row[i] += P[i];
    } else if (c->pos == POS_SINUSOIDAL) {
        sinusoid_put(t, D, 1, row);
    }
}

/* rows (N, D), stride ld: row p += its position's row or tag. */
void slm_position_rows_forward(const Model *m, const int *story_pos, int N, float *rows, int ld) {
    if (m->cfg.pos != POS_ABSOLUTE && m->cfg.pos != POS_SINUSOIDAL) return;
    for (int p = 0; p < N; p++) slm_position_row_add(m, story_pos[p], rows + (size_t)p * ld);
}

/* d_rows (N, D), stride ld -> d position (W, D) +=. */
void slm_position_rows_backward(const Model *m, const int *story_pos, int N, const float *d_rows, int ld,
                                float *grads) {
    const ModelConfig *c = &m->cfg;
    if (c->pos != POS_ABSOLUTE) return;
    float *dP = slm_model_grad(m, grads, "position");
    for (int p = 0; p < N; p++) {
        float *d = dP + (size_t)absolute_row(c, story_pos[p]) * c->row_dim;
        const float *g = d_rows + (size_t)p * ld;
        for (int i = 0; i < c->row_dim; i++) d[i] += g[i];
    }
}

/* ---- rope: the turns ------------------------------------------------------------- */

void slm_rope_turn(int kd, int t, int sign, float *x) {
    for (int i = 0; 2 * i + 1 < kd; i++) {
        double a = sign * t * pow(ROPE_BASE, -2.0 * i / kd);
        float cs = (float)cos(a), sn = (float)sin(a), x0 = x[2 * i], x1 = x[2 * i + 1];
        x[2 * i] = x0 * cs - x1 * sn;
        x[2 * i + 1] = x0 * sn + x1 * cs;
    }
}

/* qkv (QKV, ld): rows 0 .. 2*H*kd-1 are every head's query then key
 * components; each position's pairs turned by its story position. */
void slm_rope_forward(const ModelConfig *c, const int *story_pos, int N, float *qkv, int ld, int sign) {
    int kd = c->key_dim, HK = 2 * c->n_heads;
    for (int p = 0; p < N; p++)
        for (int i = 0; 2 * i + 1 < kd; i++) {
            double a = sign * story_pos[p] * pow(ROPE_BASE, -2.0 * i / kd);
            float cs = (float)cos(a), sn = (float)sin(a);
            for (int g = 0; g < HK; g++) { /* g: a head's query (g < H) or key */
                float *x0 = qkv + ((size_t)g * kd + 2 * i) * ld + p, *x1 = x0 + ld;
                float a0 = *x0, a1 = *x1;
                *x0 = a0 * cs - a1 * sn;
                *x1 = a0 * sn + a1 * cs;
            }
        }
}
