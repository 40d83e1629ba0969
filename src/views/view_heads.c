/* The view heads: Secret 1, the heads find jobs. Per head, where its weight
 * goes by distance back and which tokens it reads most, on the held-out
 * test stories; for several training snapshots, the same for each, to watch
 * the heads find their jobs. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "storylm/registry.h"
#include "storylm/views.h"
#include "storylm/svg.h"

typedef struct HeadsParams {
    ProbeOptions po;
    const char *stories;
    StringList models;
    int top;
} HeadsParams;

/* The picture, drawn a row of models at a time as build reads them. */
typedef struct HeadsState {
    Svg s;
    int drawing;
} HeadsState;

/* One row of small multiples: each head's distance shares as bars. */
/* One model's heads, a row of panels a layer (ROW_HEIGHT each). */
#define ROW_HEIGHT 160
static void draw_row(Svg *s, const HeadsResult *h, const ModelConfig *c, const char *label, double y) {
    static const char *const bins[HEAD_BINS] = {"0", "1", "2", "3-7", "8-31", "32+"};
    slm_svg_text(s, 10, y + 12, label, 12, SVG_START, 0, "black");
    for (int head = 0; head < h->n_heads; head++) {
        double values[HEAD_BINS];
        for (int b = 0; b < HEAD_BINS; b++) values[b] = h->mass[head * HEAD_BINS + b];
        SvgPanel p = {.x = 40 + head % c->n_heads * 180,
                      .y = y + 40 + head / c->n_heads * ROW_HEIGHT,
                      .w = 150,
                      .h = 80,
                      .y0 = 0,
                      .y1 = 1};
        char title[32], name[16];
        slm_head_name(c, head, name, sizeof name);
        snprintf(title, sizeof title, "head %s", name);
        slm_svg_axes(s, &p, title, NULL, NULL, 0);
        const char *color = slm_svg_palette(head);
        slm_svg_bars(s, &p, values, 1, HEAD_BINS, bins, &color, 0);
    }
}

/* The first model is the session's (--model's first); the others open here. */
static int check(void *params, Error *e) {
    HeadsParams *p = params;
    (void)e;
    if (p->models.count) p->po.model = p->models.items[0];
    return 0;
}

/* Model k's table (and row of the picture): ps its session. */
static int add_model(ViewCall *c, ViewHeads *vh, const ProbeSession *ps, int k, int n, Error *e) {
    const HeadsParams *p = c->params;
    HeadsState *st = c->state;
    if (k == 0) slm_view_heads_begin(c->report, ps, vh);
    int layers = slm_model_layers(&ps->lm.model.cfg);
    if (k == 0 && p->po.svg) { /* a row of panels a layer; every model has as many (slm_view_heads_add) */
        slm_svg_begin(&st->s, 1480, ROW_HEIGHT * n * layers + 60, "storylm heads: where each head looks");
        slm_svg_text(&st->s, 10, 24,
                     "Share of each head's weight by distance back (0, 1, 2, 3-7, 8-31, 32-255), on the test stories",
                     14, SVG_START, 0, "black");
        st->drawing = 1;
    }
    HeadsResult h = {0};
    int rc = slm_view_heads_add(vh, ps, k, p->top, &h, e);
    char label[256];
    slm_view_model_label(ps, label, sizeof label);
    if (!rc && st->drawing) draw_row(&st->s, &h, &ps->lm.model.cfg, label, 40 + ROW_HEIGHT * layers * k);
    slm_heads_result_free(&h);
    return rc;
}

static int build(ViewCall *c, Error *e) {
    const HeadsParams *p = c->params;
    ViewHeads vh = {0};
    int n = p->models.count > 1 ? p->models.count : 1, rc = 0;
    for (int k = 0; !rc && k < n; k++) {
        if (k == 0) {
            rc = add_model(c, &vh, c->ps, 0, n, e);
            continue;
        }
        ProbeOptions po = p->po;
        po.model = p->models.items[k];
        ProbeSession ps;
        if ((rc = slm_probe_session_open(&ps, &po, "heads", c->ps->stories_path, c->view->probe_flags, e))) break;
        rc = add_model(c, &vh, &ps, k, n, e);
        slm_probe_session_close(&ps);
    }
    return rc;
}

static int draw(ViewCall *c, const char *path, Error *e) {
    HeadsState *st = c->state;
    return st->drawing ? slm_svg_save(&st->s, path, e) : 0;
}

static void done(ViewCall *c) {
    HeadsState *st = c->state;
    if (st->drawing) slm_svg_free(&st->s);
}

static const Param params[] = {
    VIEW_ARG(HeadsParams, stories, "STORIES", PARAM_REQUIRED | PARAM_STORIES),
    {.name = "model",
     .short_name = 'm',
     .type = PARAM_STRINGS,
     .offset = offsetof(HeadsParams, models),
     .meta = "FILE",
     .help = "model file; repeat for snapshots (default: ./" DEFAULT_MODEL_PATH ", else the shipped model)",
     .flags = PARAM_SERVED},
    VIEW_PARAMS_OUTPUT(HeadsParams),
    VIEW_PARAM_KERNELS(HeadsParams),
    VIEW_PARAMS_SVG(HeadsParams),
    VIEW_PARAM_TEST_STORIES(HeadsParams),
    {.name = "top-k",
     .type = PARAM_INT,
     .offset = offsetof(HeadsParams, top),
     .meta = "K",
     .help = "the K tokens read most, per head",
     .min = 1,
     .max = 100,
     .def = 5,
     .alias = "top"},
};

const View view_heads = {
    .name = "heads",
    .summary = "where each head looks, across snapshots (Secret 1)",
    .usage = "storylm heads STORIES [options]",
    .description = "For every head of the model, on the held-out test stories of STORIES: the share of its\n"
                   "weight at each distance back (0 = the token itself, 1, 2, 3-7, 8-31, 32-255), its mean\n"
                   "distance back, and the tokens it reads most (share of all its weight). Give several\n"
                   "--model snapshots (storylm train --snapshot-every N writes OUT.stepN.safetensors) to\n"
                   "see the table for each, in the order given. --svg FILE draws the distance shares as\n"
                   "small multiples: one row per model, one panel per head. --ablate is refused: the\n"
                   "table is where the heads look, which no head switched off changes here.",
    .params = params,
    .n_params = VIEW_N_PARAMS(params),
    .params_size = sizeof(HeadsParams),
    .session = VIEW_SESSION_PROBE,
    .probe_flags = PROBE_HEADS,
    .no_ablation = "where each head's weight goes, measured with every head on",
    .keep = 1,
    .state_size = sizeof(HeadsState),
    .check = check,
    .build = build,
    .draw = draw,
    .done = done,
};
