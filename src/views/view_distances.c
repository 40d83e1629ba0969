/* The view distances: Tool 2, where as well as what: every head's learned
 * score for each distance back, added to q.k/sqrt(8) before softmax. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "storylm/position.h"
#include "storylm/registry.h"
#include "storylm/views.h"
#include "storylm/svg.h"

typedef struct DistancesParams {
    ProbeOptions po;
    int up_to, layer;
} DistancesParams;

/* What build keeps for the drawing: the model shown (--layer's tensors, a
 * transformer block's scores in `table`). */
typedef struct DistancesState {
    Model shown;
    float *table;
} DistancesState;

/* One panel of every head's curve over distances 0..last. */
static void draw_panel(Svg *s, const Model *m, int last, double x, double y, const char *title) {
    const ModelConfig *c = &m->cfg;
    double lo = 0, hi = 0, xs[4096], ys[4096];
    for (size_t i = 0; i < (size_t)c->n_heads * c->window; i++) {
        lo = fmin(lo, m->distance[i]);
        hi = fmax(hi, m->distance[i]);
    }
    SvgPanel p = {.x = x, .y = y, .w = 560, .h = 300, .x0 = 0, .x1 = last, .y0 = lo, .y1 = hi > lo ? hi : lo + 1};
    slm_svg_axes(s, &p, title, "distance back", "score", 1);
    for (int h = 0; h < c->n_heads; h++) {
        int n = last + 1 < 4096 ? last + 1 : 4096;
        for (int d = 0; d < n; d++) {
            xs[d] = d;
            ys[d] = m->distance[(size_t)h * c->window + d];
        }
        slm_svg_polyline(s, &p, xs, ys, n, slm_svg_palette(h), 1.6);
    }
}

static int draw_model(const char *path, const Model *m, Error *e) {
    const char *names[32], *colors[32];
    char buf[32][16];
    int H = m->cfg.n_heads < 32 ? m->cfg.n_heads : 32;
    for (int h = 0; h < H; h++) {
        snprintf(buf[h], sizeof buf[h], "head %d", h);
        names[h] = buf[h];
        colors[h] = slm_svg_palette(h);
    }
    Svg s;
    slm_svg_begin(&s, 1380, 420, "storylm distances: the heads' distance scores");
    char title[128]; /* q.k/sqrt(8) on the chapter's network: its queries and keys hold 8 numbers */
    snprintf(title, sizeof title,
             "Each head's learned score for each distance back (added to q.k/sqrt(%d) before softmax)", m->cfg.key_dim);
    slm_svg_text(&s, 20, 24, title, 14, SVG_START, 0, "black");
    draw_panel(&s, m, m->cfg.window - 1, 70, 60, "all distances");
    draw_panel(&s, m, m->cfg.window < 32 ? m->cfg.window - 1 : 31, 700, 60, "the first 32");
    slm_svg_legend(&s, 1280, 60, names, colors, H);
    int rc = slm_svg_save(&s, path, e);
    slm_svg_free(&s);
    return rc;
}

/* --pos alibi|t5: the same drawing over the scheme's table of scores. */
static int draw(ViewCall *c, const char *path, Error *e) {
    const Model *m = &((DistancesState *)c->state)->shown;
    if (m->cfg.pos == POS_DISTANCE) return draw_model(path, m, e);
    Model shown = *m;
    float *table = xmalloc((size_t)m->cfg.n_heads * m->cfg.window * sizeof(float), e);
    if (!table) return -1;
    slm_position_distance_table(m, table);
    shown.distance = table;
    int rc = draw_model(path, &shown, e);
    free(table);
    return rc;
}

/* Layer (block) l shown as a model of one layer: its own tensors, or, where its
 * scores per distance back live elsewhere (a transformer block's scheme:
 * distance, alibi, t5), a "distance" of them in table, so that the table and
 * drawing read every model as the attention network's. */
static int layer_scores(const Model *m, int l, Model *shown, float **table, Error *e) {
    const ProbeOps *ops = m->cfg.arch->probes;
    if (slm_probe_need_ops(m, ops && ops->layer_view, "distances", e)) return -1;
    *table = xmalloc((size_t)m->cfg.n_heads * m->cfg.window * sizeof(float), e);
    if (!*table) return -1;
    m->cfg.arch->probes->layer_view(m, l, shown, *table);
    return 0;
}

static int build(ViewCall *c, Error *e) {
    const DistancesParams *p = c->params;
    DistancesState *st = c->state;
    const Model *whole = &c->ps->lm.model;
    if (slm_variant_check(&whole->cfg, "distances", VARIANT_NEEDS_DISTANCE, e)) return -1;
    if (p->layer > slm_model_layers(&whole->cfg))
        return FAIL(e, "give --layer from 1 to the model's layers", "--layer %d: '%s' has %d layer(s)", p->layer,
                    c->ps->model_path, slm_model_layers(&whole->cfg));
    if (layer_scores(whole, p->layer - 1, &st->shown, &st->table, e)) return -1;
    ProbeSession shown = *c->ps; /* the session with --layer's view as its model */
    shown.lm.model = st->shown;
    slm_view_distances(c->report, &shown, p->up_to);
    return 0;
}

static void done(ViewCall *c) { free(((DistancesState *)c->state)->table); }

static const Param params[] = {
    VIEW_PARAM_MODEL(DistancesParams),
    VIEW_PARAMS_OUTPUT(DistancesParams),
    VIEW_PARAMS_SVG(DistancesParams),
    VIEW_INT_PARAM(DistancesParams, up_to, "up-to", "D", "print distances 0 to D", 0, 100000, 255),
    VIEW_INT_PARAM(DistancesParams, layer, "layer", "L",
                   "the layer (or transformer block) whose heads to show, on a model of several", 1,
                   STORYLM_MAX_TF_LAYERS, 1),
};

const View view_distances = {
    .name = "distances",
    .summary = "the heads' learned distance scores (Tool 2)",
    .usage = "storylm distances [options]",
    .description =
        "Prints each head's learned distance scores (8 heads in the chapter's network): the number\n"
        "added to each score for every distance back, 0 (the token itself) to 255. A head with a high score at\n"
        "distance 1 reads the token just before; one with flat scores reads by content alone.\n"
        "--svg FILE draws them as one curve per head, over all 256 distances and over the first 32.\n"
        "No head switched off changes them: they are weights, so --ablate is refused.",
    .params = params,
    .n_params = VIEW_N_PARAMS(params),
    .params_size = sizeof(DistancesParams),
    .session = VIEW_SESSION_PROBE,
    .probe_flags = PROBE_HEADS,
    .no_ablation = "weights, read before any forward pass",
    .state_size = sizeof(DistancesState),
    .build = build,
    .draw = draw,
    .done = done,
};
