/* storylm detect STORIES [--model M ...]: head detectors. Per head, the
 * previous-token, duplicate-token and induction scores on the held-out test
 * stories and on random sequences repeated twice, with the induction loss;
 * for several models (training snapshots), the same across training. */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "storylm/parse.h"
#include "probe_common.h"
#include "storylm/probe_detect.h"
#include "storylm/svg.h"

static int run(int argc, char **argv);
const Command command_detect = {
    "detect", "head detectors: previous-token, duplicate and induction scores", "storylm detect STORIES [options]",
    "For every head, on the held-out test stories of STORIES, the mean over positions of:\n"
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
    run};

typedef struct DetectArgs {
    ProbeOptions po;
    StringList models;
    int n_random, length, seed;
} DetectArgs;

/* The training step of a model file: OUT.stepN.safetensors, else its "steps" metadata, else -1. */
static int model_step(const ProbeSession *ps) {
    const char *dot = strstr(ps->model_path, ".step"), *steps = slm_metadata_get(&ps->lm.meta, "steps");
    int n;
    long long x;
    if (dot && slm_parse_integer_prefix(dot + 5, NULL, 0, INT_MAX, &x) == PARSE_OK) return (int)x;
    return steps && slm_parse_int(steps, 0, INT_MAX, &n) == PARSE_OK ? n : -1;
}

/* heads: CELL_TEXT ("L:H") for a model of several layers, else CELL_INT. */
static void make_tables(Report *r, const DetectArgs *a, ReportTable **heads, ReportTable **loss, CellKind head_kind) {
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

#define SCORE_PANELS 4
static const char *const panel_titles[SCORE_PANELS] = {"previous-token score", "duplicate-token score",
                                                       "induction score (test stories)",
                                                       "induction score (random, repeated)"};

static double panel_value(const DetectResult *d, int panel, int h) {
    const DetectScores *s = panel == 3 ? &d->random[h] : &d->stories[h];
    return panel == 0 ? s->previous : panel == 1 ? s->duplicate : s->induction;
}

/* One model: the four scores as bars per head. */
static void draw_bars(Svg *s, const DetectResult *d) {
    int H = d->n_heads < 32 ? d->n_heads : 32;
    double values[SCORE_PANELS * 32], hi = 0;
    char names[32][24];
    const char *labels[32];
    for (int h = 0; h < H; h++) {
        char name[12];
        slm_detect_head_name(d, h, name, sizeof name);
        snprintf(names[h], sizeof names[h], "head %s", name);
        labels[h] = names[h];
        for (int k = 0; k < SCORE_PANELS; k++) hi = fmax(hi, values[k * H + h] = panel_value(d, k, h));
    }
    SvgPanel p = {.x = 80, .y = 70, .w = 760, .h = 300, .y0 = 0, .y1 = fmin(1, slm_svg_round_up(hi * 1.1))};
    slm_svg_axes(s, &p, NULL, NULL, "mean weight", 0);
    slm_svg_bars(s, &p, values, SCORE_PANELS, H, labels, NULL, 0);
    slm_svg_legend(s, 860, 70, panel_titles, NULL, SCORE_PANELS);
}

/* Several models: each score across training, a curve per head, and the losses on the two copies. */
static void draw_curves(Svg *s, const DetectResult *d, const int *steps, int n) {
    double xs[64], ys[64];
    for (int k = 0; k < n; k++) xs[k] = steps[k] >= 0 ? steps[k] : k;
    SvgPanel base = {
        .w = 330, .h = 220, .x0 = xs[0], .x1 = xs[n - 1] > xs[0] ? xs[n - 1] : xs[0] + 1, .y0 = 0, .y1 = 1};
    int H = d[0].n_heads;
    for (int panel = 0; panel < SCORE_PANELS; panel++) {
        SvgPanel p = base;
        double hi = 0; /* each axis fits its scores: an induction score of 0.01 is not drawn flat */
        for (int k = 0; k < n; k++)
            for (int h = 0; h < H; h++) hi = fmax(hi, panel_value(&d[k], panel, h));
        p.y1 = fmin(1, slm_svg_round_up(hi * 1.1));
        p.x = 70 + (panel % 3) * 400, p.y = 60 + (panel / 3) * 300;
        slm_svg_axes(s, &p, panel_titles[panel], "training step", "mean weight", 1);
        for (int h = 0; h < H; h++) {
            for (int k = 0; k < n; k++) ys[k] = panel_value(&d[k], panel, h);
            slm_svg_polyline(s, &p, xs, ys, n, slm_svg_palette(h), 1.8);
        }
    }
    SvgPanel p = base;
    p.x = 470, p.y = 360, p.y1 = 0;
    for (int k = 0; k < n; k++) p.y1 = fmax(p.y1, fmax(d[k].loss_first, d[k].loss_second) * 1.1);
    slm_svg_axes(s, &p, "loss on random tokens: 1st copy, 2nd copy", "training step", "nats", 1);
    for (int copy = 0; copy < 2; copy++) {
        for (int k = 0; k < n; k++) ys[k] = copy ? d[k].loss_second : d[k].loss_first;
        slm_svg_polyline(s, &p, xs, ys, n, copy ? "#d62728" : "#7f7f7f", 2);
    }
    char names[32][24];
    const char *labels[32], *colors[32];
    for (int h = 0; h < H && h < 32; h++) {
        char name[12];
        slm_detect_head_name(&d[0], h, name, sizeof name);
        snprintf(names[h], sizeof names[h], "head %s", name);
        labels[h] = names[h], colors[h] = slm_svg_palette(h);
    }
    slm_svg_legend(s, 880, 380, labels, colors, H < 32 ? H : 32);
    const char *copies[2] = {"1st copy", "2nd copy"}, *copy_colors[2] = {"#7f7f7f", "#d62728"};
    slm_svg_legend(s, 1000, 380, copies, copy_colors, 2);
}

static int draw(const char *path, const DetectResult *d, const int *steps, int n, Error *e) {
    Svg s;
    slm_svg_begin(&s, n > 1 ? 1280 : 1180, n > 1 ? 640 : 420, "storylm detect: head detectors");
    slm_svg_text(&s, 20, 24, n > 1 ? "Head scores across training (one curve per head)" : "Head scores per head", 15,
                 SVG_START, 0, "black");
    if (n > 1)
        draw_curves(&s, d, steps, n);
    else
        draw_bars(&s, d);
    int rc = slm_svg_save(&s, path, e);
    slm_svg_free(&s);
    return rc;
}

static int detect(const DetectArgs *a, const char *stories, Error *e) {
    int n = a->models.count ? a->models.count : 1, rc = 0, steps[64];
    DetectResult results[64] = {{0}};
    DetectOptions o = {.n_random = a->n_random, .length = a->length, .seed = (uint64_t)a->seed};
    Report r;
    slm_report_init(&r, "detect");
    ReportTable *heads = NULL, *loss = NULL;
    for (int k = 0; !rc && k < n; k++) {
        ProbeOptions po = a->po;
        po.model = a->models.count ? a->models.items[k] : NULL;
        ProbeSession ps;
        int flags = PROBE_ATTENTION_ONLY | PROBE_LAYERS | PROBE_TRANSFORMER;
        if ((rc = slm_probe_session_open(&ps, &po, "detect", stories, flags, e))) break;
        if (k == 0) {
            slm_report_header_session(&r, &ps);
            make_tables(&r, a, &heads, &loss, slm_model_layers(&ps.lm.model.cfg) > 1 ? CELL_TEXT : CELL_INT);
        } else if (slm_model_layers(&ps.lm.model.cfg) != results[0].layers) {
            rc = FAIL(e, "compare models of as many layers", "'%s' has %d layer(s), the first model %d", ps.model_path,
                      slm_model_layers(&ps.lm.model.cfg), results[0].layers);
            slm_probe_session_close(&ps);
            break;
        }
        steps[k] = model_step(&ps);
        rc = slm_probe_detect(&ps.lm.model, &ps.stories, ps.stories.test, ps.stories.n_test, &o, &ps.ablation,
                              &results[k], e);
        if (!rc) add_rows(heads, loss, ps.model_path, steps[k], &results[k]);
        slm_probe_session_close(&ps);
    }
    if (!rc && a->po.svg) rc = draw(a->po.svg, results, steps, n, e);
    if (!rc) rc = probe_emit(&r, &a->po, e);
    for (int k = 0; k < n; k++) slm_detect_result_free(&results[k]);
    slm_report_free(&r);
    return rc;
}

static int run(int argc, char **argv) {
    DetectArgs a = {.po = PROBE_OPTIONS_DEFAULT, .n_random = 50, .length = 100, .seed = 1};
    const char *pos[1];
    Option opts[] = {
        PROBE_MODELS_OPTIONS(a.po, a.models, "repeat for snapshots"),
        PROBE_SVG_OPTION(a.po),
        PROBE_TEST_OPTION(a.po),
        {"random", 0, OPT_INT, &a.n_random, "N", "random sequences repeated twice (0: none)", 0, 100000},
        {"length", 0, OPT_INT, &a.length, "L", "random tokens in each copy", 2, 100000},
        {"seed", 's', OPT_INT, &a.seed, "N", "seed of the random sequences", 0, 2147483647},
    };
    int rc = probe_parse(&command_detect, argc, argv, opts, N_OPTIONS(opts), &a.po, pos, 1);
    if (rc >= 0) return rc;
    if (a.models.count > 64)
        return args_usage_error(&command_detect, "at most 64 --model files, not %d", a.models.count);
    Error e = {0};
    return detect(&a, pos[0], &e) ? cli_fail(&e) : 0;
}
