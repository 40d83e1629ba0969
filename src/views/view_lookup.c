/* The view lookup: the film of the page. One head's lookup at one position,
 * step by step: the position's query, the key and the value of every token it
 * reads, their scores (q.k/sqrt(d_head), the distance score, the sum), the
 * weights softmax makes of them, and the blend of the values it brings back. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "storylm/activations.h"
#include "storylm/position.h"
#include "storylm/registry.h"
#include "storylm/views.h"
#include "storylm/report_header.h"
#include "storylm/score.h"

typedef struct LookupParams {
    ProbeOptions po;
    const char *text, *head;
    int pos, layer;
} LookupParams;

typedef struct LookupState {
    ViewText vt;
    int ran;
} LookupState;

/* What the position asks with: its token, query (kd) and the blend (vd) of the values it reads. */
static void reading_row(Report *r, const ProbeSession *ps, const ViewText *vt, const float *query, int kd,
                        const float *blend, int vd) {
    ReportTable *t = slm_report_table(r, "reading", "The position reading: its query, and the blend it brings back");
    slm_table_column(t, "position", "pos", CELL_INT, 0);
    slm_table_column(t, "token", "token", CELL_TEXT, 0);
    slm_table_column(t, "query", "query", CELL_VECTOR, 3);
    slm_table_column(t, "blend", "blend of the values", CELL_VECTOR, 3);
    slm_table_row(t);
    slm_cell_int(t, vt->pos);
    slm_cell_text(t, slm_probe_session_token(ps, vt->ids.data[vt->pos]));
    slm_cell_vector(t, query, kd);
    slm_cell_vector(t, blend, vd);
}

/* keys (n) of head g read at position p, nearest first: key (kd), value (vd), scores, weight; blend (vd) += w v. */
static void key_rows(Report *r, const ProbeSession *ps, const Activations *a, int g, const AttendKey *keys, int n,
                     float *blend) {
    int kd = a->cfg.key_dim, vd = a->cfg.value_dim;
    ReportTable *t = slm_report_table(r, "keys", "Every token it reads (nearest first)");
    const char *cols[][2] = {{"position", "pos"},
                             {"token", "token"},
                             {"distance", "dist"},
                             {"key", "key"},
                             {"value", "value"},
                             {"dot", "q.k/sqrt(d)"},
                             {"distance_score", "dist.score"},
                             {"score", "score"},
                             {"weight", "weight"}};
    for (int c = 0; c < 9; c++)
        slm_table_column(t, cols[c][0], cols[c][1],
                         c == 1             ? CELL_TEXT
                         : c == 0 || c == 2 ? CELL_INT
                         : c < 5            ? CELL_VECTOR
                                            : CELL_NUMBER,
                         4);
    float key[STORYLM_MAX_HEAD_DIM], value[STORYLM_MAX_HEAD_DIM];
    for (int j = n - 1; j >= 0; j--) {
        const AttendKey *k = &keys[j];
        slm_activations_qkv(a, g, k->position, NULL, key, value);
        for (int i = 0; i < vd; i++) blend[i] += k->weight * value[i];
        slm_table_row(t);
        slm_cell_int(t, k->position);
        slm_cell_text(t, slm_probe_session_token(ps, k->token));
        slm_cell_int(t, k->distance);
        slm_cell_vector(t, key, kd);
        slm_cell_vector(t, value, vd);
        slm_cell_number(t, k->dot);
        slm_cell_number(t, k->distance_score);
        slm_cell_number(t, k->score);
        slm_cell_number(t, k->weight);
    }
}

/* How the scores are made: the score function, its scale and the position scheme (learned or fixed). */
static void scheme(Report *r, const ModelConfig *c) {
    slm_report_text(r, "score", "score", slm_score_name(c->score));
    slm_report_number(r, "scale", "q.k times", 1.0 / sqrt((double)c->key_dim), 6);
    slm_report_text(r, "position_scheme", "position scheme", slm_pos_name(c->pos));
    slm_report_int(r, "position_learned", "its scores learned",
                   c->pos == POS_DISTANCE || c->pos == POS_T5 || c->pos == POS_ABSOLUTE);
}

static int check(void *params, Error *e) {
    const LookupParams *p = params;
    int layer, head;
    return slm_view_head(NULL, p->head, p->layer, 0, &layer, &head, e);
}

static int build(ViewCall *c, Error *e) {
    const LookupParams *p = c->params;
    LookupState *st = c->state;
    const ModelConfig *cfg = &c->ps->lm.model.cfg;
    int layer, head;
    if (slm_view_head(cfg, p->head, p->layer, 0, &layer, &head, e)) return -1;
    st->ran = 1;
    if (slm_view_run_text(c, p->text, p->pos, VIEW_RUN_HEADS, &st->vt, e) ||
        slm_probe_runner_layer(&st->vt.runner, layer, e))
        return -1;
    const Activations *a = &st->vt.runner.acts;
    int g = st->vt.runner.layer * cfg->n_heads + head;
    AttendKey *keys = xmalloc((size_t)cfg->window * sizeof(AttendKey), e);
    float *blend = keys ? xcalloc((size_t)cfg->value_dim, sizeof(float), e) : NULL;
    float query[STORYLM_MAX_HEAD_DIM];
    if (!blend) {
        free(keys);
        return -1;
    }
    int n = slm_probe_attend(&st->vt.runner, head, st->vt.pos, keys);
    slm_activations_qkv(a, g, st->vt.pos, query, NULL, NULL);
    slm_report_header_session(c->report, c->ps);
    if (slm_model_layers(cfg) > 1) slm_report_int(c->report, "layer", "layer", st->vt.runner.layer + 1);
    slm_report_int(c->report, "head", "head", head);
    scheme(c->report, cfg);
    key_rows(c->report, c->ps, a, g, keys, n, blend);
    reading_row(c->report, c->ps, &st->vt, query, cfg->key_dim, blend, cfg->value_dim);
    free(keys);
    free(blend);
    return 0;
}

static void done(ViewCall *c) {
    LookupState *st = c->state;
    if (st->ran) slm_view_release_text(c, &st->vt);
}

static const Param params[] = {
    VIEW_ARG(LookupParams, text, "TEXT", PARAM_REQUIRED | PARAM_TEXT),
    VIEW_PARAMS_COMMON(LookupParams),
    VIEW_PARAM_KERNELS(LookupParams),
    VIEW_PARAM_MEAN_STORIES(LookupParams),
    VIEW_INT_PARAM(LookupParams, pos, "pos", "N", "the position reading; negative: from the end", -1000000, 1000000,
                   -1),
    {.name = "head",
     .type = PARAM_HEADS,
     .offset = offsetof(LookupParams, head),
     .meta = "HEAD",
     .help = "the head: H of the layer shown, or L:H (2:3 is layer 2's head 3)",
     .def_string = "0"},
    VIEW_INT_PARAM(LookupParams, layer, "layer", "L", "the layer (or transformer block) of the head", 1,
                   STORYLM_MAX_TF_LAYERS, 1),
};

const View view_lookup = {
    .name = "lookup",
    .summary = "one head's lookup at one position, step by step (the film)",
    .usage = "storylm lookup TEXT [options]",
    .description = "Runs the text (after [EOS]) and follows position --pos (default: the last token) as\n"
                   "head --head of --layer reads back: its query, then for every token it reads (nearest\n"
                   "first) that token's key and value, dot = q.k/sqrt(d_head) (or the model's score), the\n"
                   "distance score (the position scheme's; learned or fixed), score = their sum and the\n"
                   "weight softmax makes of the scores; last, the blend: the values added up with those\n"
                   "weights, what the head brings back. Switched-off heads (--ablate) change what later\n"
                   "layers read, not this layer's numbers.",
    .params = params,
    .n_params = VIEW_N_PARAMS(params),
    .params_size = sizeof(LookupParams),
    .session = VIEW_SESSION_PROBE,
    .probe_flags = PROBE_HEADS,
    .state_size = sizeof(LookupState),
    .check = check,
    .build = build,
    .done = done,
};
