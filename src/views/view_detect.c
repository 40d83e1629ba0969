/* Head detectors: the view detect (registry.h), its entry at the end. */
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "storylm/parse.h"
#include "storylm/probe_detect.h"
#include "storylm/probe_views.h"
#include "storylm/registry.h"
#include "storylm/report_header.h"
#include "storylm/svg.h"

typedef struct DetectParams {
    ProbeOptions po;
    StringList models;
    const char *stories;
    int n_random, length, seed;
} DetectParams;

/* What build keeps between models: the tables, and the first model's layers
 * (heads are named "L:H" when more than 1; every model must have as many). */
typedef struct DetectState {
    ReportTable *heads, *models;
    int layers;
} DetectState;

/* The training step of a model file: OUT.stepN.safetensors, else its "steps" metadata, else -1. */
static int model_step(const ProbeSession *ps) {
    const char *dot = strstr(ps->model_path, ".step"), *steps = slm_metadata_get(&ps->lm.meta, "steps");
    int n;
    long long x;
    if (dot && slm_parse_integer_prefix(dot + 5, NULL, 0, INT_MAX, &x) == PARSE_OK) return (int)x;
    return steps && slm_parse_int(steps, 0, INT_MAX, &n) == PARSE_OK ? n : -1;
}

/* heads: CELL_TEXT ("L:H") for a model of several layers, else CELL_INT. */
static void make_tables(Report *r, const DetectParams *a, ReportTable **heads, ReportTable **loss, CellKind head_kind) {
    slm_report_int(r, "random_sequences", "random sequences", a->n_random);
    slm_report_int(r, "random_length", "tokens per copy", a->length);
    slm_report_int(r, "seed", "seed", a->seed);
    *heads = slm_report_table(r, "heads", "Head scores on the test stories, and on random tokens repeated twice");
    const char *keys[] = {
        "model",           "step", "head", "previous", "duplicate", "induction", "random_previous", "random_duplicate",
        "random_induction"};
    const char *labels[] = {"model",
                            "step",
                            "head",
                            "previous",
                            "duplicate",
                            "induction",
                            "random: previous",
                            "random: duplicate",
                            "random: induction"};
    for (int i = 0; i < 9; i++)
        slm_table_column(*heads, keys[i], labels[i],
                         i == 0   ? CELL_FILE
                         : i == 2 ? head_kind
                         : i < 3  ? CELL_INT
                                  : CELL_PERCENT,
                         1);
    if (*heads) (*heads)->group_column = 0;
    *loss = slm_report_table(r, "models",
                             "Per model: positions counted and the induction loss on random tokens repeated twice");
    const char *lk[] = {"model",      "step",        "positions",          "duplicate_positions", "induction_positions",
                        "loss_first", "loss_second", "induction_loss_drop"};
    const char *ll[] = {"model",         "step",          "positions", "with a duplicate", "with an induction target",
                        "loss 1st copy", "loss 2nd copy", "drop"};
    for (int i = 0; i < 8; i++)
        slm_table_column(*loss, lk[i], ll[i], i == 0 ? CELL_FILE : i < 5 ? CELL_INT : CELL_NUMBER, 3);
}

static void add_rows(ReportTable *heads, ReportTable *loss, const char *model, int step, const DetectResult *d) {
    for (int h = 0; h < d->n_heads; h++) {
        slm_table_row(heads);
        slm_cell_text(heads, model);
        slm_cell_int(heads, step);
        char name[16];
        slm_detect_head_name(d, h, name, sizeof name);
        if (d->layers > 1)
            slm_cell_text(heads, name);
        else
            slm_cell_int(heads, h);
        const DetectScores *s = &d->stories[h], *q = &d->random[h];
        double v[] = {s->previous, s->duplicate, s->induction, q->previous, q->duplicate, q->induction};
        for (int i = 0; i < 6; i++) slm_cell_number(heads, v[i]);
    }
    slm_table_row(loss);
    slm_cell_text(loss, model);
    slm_cell_int(loss, step);
    slm_cell_int(loss, d->positions);
    slm_cell_int(loss, d->duplicate_positions);
    slm_cell_int(loss, d->induction_positions);
    slm_cell_number(loss, d->loss_first);
    slm_cell_number(loss, d->loss_second);
    slm_cell_number(loss, d->loss_first - d->loss_second);
}

/* Model k: the tables before the first, then its rows. */
static int detect_model(ViewCall *c, const ProbeSession *ps, int k, Error *e) {
    const DetectParams *p = c->params;
    DetectState *st = c->state;
    int layers = slm_model_layers(&ps->lm.model.cfg);
    if (k == 0) {
        st->layers = layers;
        slm_report_header_session(c->report, ps);
        make_tables(c->report, p, &st->heads, &st->models, layers > 1 ? CELL_TEXT : CELL_INT);
    } else if (layers != st->layers) {
        return FAIL(e, "compare models of as many layers", "'%s' has %d layer(s), the first model %d", ps->model_path,
                    layers, st->layers);
    }
    DetectOptions o = {.n_random = p->n_random, .length = p->length, .seed = (uint64_t)p->seed};
    DetectResult d = {0};
    int rc =
        slm_probe_detect(&ps->lm.model, &ps->stories, ps->stories.test, ps->stories.n_test, &o, &ps->ablation, &d, e);
    if (!rc) add_rows(st->heads, st->models, ps->model_path, model_step(ps), &d);
    slm_detect_result_free(&d);
    return rc;
}

static int build(ViewCall *c, Error *e) {
    const DetectParams *p = c->params;
    return slm_view_each_model(c, &p->models, p->stories, PROBE_HEADS, detect_model, e);
}

/* What a drawing reads from the report: n models of H heads each. */
typedef struct DetectTables {
    const ReportTable *heads, *models;
    int n, H;
} DetectTables;

#define SCORE_PANELS 4
static const char *const panel_titles[SCORE_PANELS] = {"previous-token score", "duplicate-token score",
                                                       "induction score (test stories)",
                                                       "induction score (random, repeated)"};

/* Model k's head h in panel's score: previous, duplicate, induction, random induction. */
static double panel_value(const DetectTables *d, int k, int panel, int h) {
    static const int column[SCORE_PANELS] = {3, 4, 5, 8};
    return slm_table_number(d->heads, k * d->H + h, column[panel]);
}

/* "head 3", or "head 1:3" on a model of several layers. */
static void head_label(const DetectTables *d, int h, char *buf, size_t size) {
    const char *text = slm_table_text(d->heads, h, 2);
    if (text)
        snprintf(buf, size, "head %s", text);
    else
        snprintf(buf, size, "head %d", (int)slm_table_number(d->heads, h, 2));
}

/* One model: the four scores as bars per head. */
static void draw_bars(Svg *s, const DetectTables *d) {
    int H = d->H < 32 ? d->H : 32;
    double values[SCORE_PANELS * 32], hi = 0;
    char names[32][24];
    const char *labels[32];
    for (int h = 0; h < H; h++) {
        head_label(d, h, names[h], sizeof names[h]);
        labels[h] = names[h];
        for (int k = 0; k < SCORE_PANELS; k++) hi = fmax(hi, values[k * H + h] = panel_value(d, 0, k, h));
    }
    SvgPanel p = {.x = 80, .y = 70, .w = 760, .h = 300, .y0 = 0, .y1 = fmin(1, slm_svg_round_up(hi * 1.1))};
    slm_svg_axes(s, &p, NULL, NULL, "mean weight", 0);
    slm_svg_bars(s, &p, values, SCORE_PANELS, H, labels, NULL, 0);
    slm_svg_legend(s, 860, 70, panel_titles, NULL, SCORE_PANELS);
}

/* Several models: each score across training, a curve per head, and the losses on the two copies. */
static void draw_curves(Svg *s, const DetectTables *d) {
    int n = d->n;
    double xs[64], ys[64];
    for (int k = 0; k < n; k++) {
        double step = slm_table_number(d->models, k, 1);
        xs[k] = step >= 0 ? step : k;
    }
    SvgPanel base = {
        .w = 330, .h = 220, .x0 = xs[0], .x1 = xs[n - 1] > xs[0] ? xs[n - 1] : xs[0] + 1, .y0 = 0, .y1 = 1};
    int H = d->H;
    for (int panel = 0; panel < SCORE_PANELS; panel++) {
        SvgPanel p = base;
        double hi = 0; /* each axis fits its scores: an induction score of 0.01 is not drawn flat */
        for (int k = 0; k < n; k++)
            for (int h = 0; h < H; h++) hi = fmax(hi, panel_value(d, k, panel, h));
        p.y1 = fmin(1, slm_svg_round_up(hi * 1.1));
        p.x = 70 + (panel % 3) * 400, p.y = 60 + (panel / 3) * 300;
        slm_svg_axes(s, &p, panel_titles[panel], "training step", "mean weight", 1);
        for (int h = 0; h < H; h++) {
            for (int k = 0; k < n; k++) ys[k] = panel_value(d, k, panel, h);
            slm_svg_polyline(s, &p, xs, ys, n, slm_svg_palette(h), 1.8);
        }
    }
    SvgPanel p = base;
    p.x = 470, p.y = 360, p.y1 = 0;
    for (int k = 0; k < n; k++)
        p.y1 = fmax(p.y1, fmax(slm_table_number(d->models, k, 5), slm_table_number(d->models, k, 6)) * 1.1);
    slm_svg_axes(s, &p, "loss on random tokens: 1st copy, 2nd copy", "training step", "nats", 1);
    for (int copy = 0; copy < 2; copy++) {
        for (int k = 0; k < n; k++) ys[k] = slm_table_number(d->models, k, copy ? 6 : 5);
        slm_svg_polyline(s, &p, xs, ys, n, copy ? "#d62728" : "#7f7f7f", 2);
    }
    char names[32][24];
    const char *labels[32], *colors[32];
    for (int h = 0; h < H && h < 32; h++) {
        head_label(d, h, names[h], sizeof names[h]);
        labels[h] = names[h], colors[h] = slm_svg_palette(h);
    }
    slm_svg_legend(s, 880, 380, labels, colors, H < 32 ? H : 32);
    const char *copies[2] = {"1st copy", "2nd copy"}, *copy_colors[2] = {"#7f7f7f", "#d62728"};
    slm_svg_legend(s, 1000, 380, copies, copy_colors, 2);
}

static int draw(ViewCall *c, const char *path, Error *e) {
    const Report *r = c->report;
    DetectTables d = {.heads = slm_report_find_table(r, "heads"), .models = slm_report_find_table(r, "models")};
    d.n = d.models ? d.models->n_rows : 0;
    if (!d.heads || d.n == 0) return FAIL(e, NULL, "no head scores to draw");
    if (d.n > 64) return FAIL(e, "give at most 64 models to draw", "%d models to draw", d.n);
    d.H = d.heads->n_rows / d.n;
    int n = d.n;
    Svg s;
    slm_svg_begin(&s, n > 1 ? 1280 : 1180, n > 1 ? 640 : 420, "storylm detect: head detectors");
    slm_svg_text(&s, 20, 24, n > 1 ? "Head scores across training (one curve per head)" : "Head scores per head", 15,
                 SVG_START, 0, "black");
    if (n > 1)
        draw_curves(&s, &d);
    else
        draw_bars(&s, &d);
    int rc = slm_svg_save(&s, path, e);
    slm_svg_free(&s);
    return rc;
}

static const Param params[] = {
    VIEW_ARG(DetectParams, stories, "STORIES", PARAM_REQUIRED | PARAM_STORIES),
    VIEW_PARAM_MODELS(DetectParams, models, "repeat for snapshots"),
    VIEW_PARAMS_ABLATE(DetectParams),
    VIEW_PARAMS_OUTPUT(DetectParams),
    VIEW_PARAM_KERNELS(DetectParams),
    VIEW_PARAMS_SVG(DetectParams),
    VIEW_PARAM_TEST_STORIES(DetectParams),
    VIEW_INT_PARAM(DetectParams, n_random, "random", "N", "random sequences repeated twice (0: none)", 0, 100000, 50),
    VIEW_INT_PARAM(DetectParams, length, "length", "L", "random tokens in each copy", 2, 100000, 100),
    {.name = "seed",
     .short_name = 's',
     .type = PARAM_INT,
     .offset = offsetof(DetectParams, seed),
     .meta = "N",
     .help = "seed of the random sequences",
     .min = 0,
     .max = 2147483647,
     .def = 1},
};
const View view_detect = {
    .name = "detect",
    .summary = "head detectors: previous-token, duplicate and induction scores",
    .usage = "storylm detect STORIES [options]",
    .description = "For every head, on the held-out test stories of STORIES, the mean over positions of:\n"
                   "  previous  the weight on the token just before;\n"
                   "  duplicate the total weight on earlier copies of the position's own token;\n"
                   "  induction the total weight on the tokens right after earlier copies of the position's\n"
                   "            token (where an induction head looks, to say what came next last time).\n"
                   "The last two count only positions whose token came earlier within reach. The same on\n"
                   "--random sequences of --length random tokens (drawn, with --seed, from the tokens of the\n"
                   "test stories) repeated twice, [EOS] r1..rL r1..rL, with the induction loss: the mean loss\n"
                   "on r2..rL in the second copy against the first. A network with induction heads predicts\n"
                   "the second copy almost perfectly; the chapter says one layer cannot. Random attention\n"
                   "gives about 1/(position+1) to each score's positions. Several --model files (snapshots:\n"
                   "storylm train --snapshot-every N) give the table for each and, with --svg, curves across\n"
                   "training (x: the step in the file name OUT.stepN.safetensors or the model's metadata).\n"
                   "--ablate HEADS switches heads off (their weights are still measured; the losses change).",
    .params = params,
    .n_params = VIEW_N_PARAMS(params),
    .params_size = sizeof(DetectParams),
    .session = VIEW_SESSION_NONE,
    .probe_flags = PROBE_HEADS,
    .serve = VIEW_SERVE_POST,
    .state_size = sizeof(DetectState),
    .build = build,
    .draw = draw,
};
