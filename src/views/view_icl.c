/* In-context learning: the view icl (registry.h), its entry at the end. */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "storylm/probe_icl.h"
#include "storylm/probe_views.h"
#include "storylm/registry.h"
#include "storylm/report_header.h"
#include "storylm/svg.h"

#define ICL_MAX_MODELS 32

typedef struct IclParams {
    ProbeOptions po;
    StringList models;
    const char *stories;
    IclOptions o;
    int bin;
} IclParams;

/* What build keeps between models: the scores table and every model's losses by position. */
typedef struct IclState {
    ReportTable *scores;
    IclResult res[ICL_MAX_MODELS];
    int n;
} IclState;

static ReportTable *score_table(Report *r) {
    ReportTable *t = slm_report_table(r, "scores", "In-context-learning score: loss at --late minus loss at --early");
    const char *keys[] = {"model",        "arch",        "early",      "late",
                          "early_loss",   "late_loss",   "score",      "paired_early_loss",
                          "paired_score", "early_count", "late_count", "clipped"};
    const char *labels[] = {"model",        "arch",         "early",       "late",
                            "loss early",   "loss late",    "icl score",   "paired: loss early",
                            "paired score", "losses early", "losses late", "clipped"};
    CellKind kinds[] = {CELL_FILE,   CELL_TEXT,   CELL_INT,    CELL_INT, CELL_NUMBER, CELL_NUMBER,
                        CELL_NUMBER, CELL_NUMBER, CELL_NUMBER, CELL_INT, CELL_INT,    CELL_TEXT};
    for (int i = 0; i < 12; i++) slm_table_column(t, keys[i], labels[i], kinds[i], 3);
    return t;
}

static void score_row(ReportTable *t, const ProbeSession *ps, const IclResult *res) {
    slm_table_row(t);
    slm_cell_text(t, ps->model_path);
    slm_cell_text(t, ps->lm.model.cfg.arch->name);
    slm_cell_int(t, res->early);
    slm_cell_int(t, res->late);
    slm_cell_number(t, res->early_loss);
    slm_cell_number(t, res->late_loss);
    slm_cell_number(t, res->score);
    slm_cell_number(t, res->paired_early_loss);
    slm_cell_number(t, res->paired_score);
    slm_cell_int(t, res->early_count);
    slm_cell_int(t, res->late_count);
    slm_cell_text(t, res->early_clipped ? "early and late" : res->late_clipped ? "late" : "no");
}

/* Every position's mean loss (JSON), and the text's coarser table by bins of positions. */
static void curve_tables(Report *r, const IclResult *res, int n, int bin) {
    ReportTable *t = slm_report_table(r, "by_position", "Mean loss at each position");
    slm_table_column(t, "model", "#", CELL_INT, 0);
    slm_table_column(t, "position", "position", CELL_INT, 0);
    slm_table_column(t, "loss", "loss", CELL_NUMBER, 4);
    slm_table_column(t, "stories", "stories", CELL_INT, 0);
    if (t) t->json_only = 1;
    ReportTable *b = slm_report_table(r, "bins", "Mean loss by position (columns: models, in the order given)");
    slm_table_column(b, "from", "positions", CELL_INT, 0);
    slm_table_column(b, "to", "to", CELL_INT, 0);
    slm_table_column(b, "stories", "stories at start", CELL_INT, 0);
    char key[32], label[32];
    for (int k = 0; k < n; k++) {
        snprintf(key, sizeof key, "loss_%d", k);
        snprintf(label, sizeof label, "loss #%d", k);
        slm_table_column(b, key, label, CELL_NUMBER, 3);
        for (int p = 0; p < res[k].n_positions; p++) {
            slm_table_row(t);
            slm_cell_int(t, k), slm_cell_int(t, p), slm_cell_number(t, res[k].loss[p]),
                slm_cell_int(t, res[k].stories[p]);
        }
    }
    for (int from = 0; from <= res[0].last; from += bin) {
        int to = from + bin - 1 < res[0].last ? from + bin - 1 : res[0].last;
        slm_table_row(b);
        slm_cell_int(b, from), slm_cell_int(b, to), slm_cell_int(b, res[0].stories[from]);
        for (int k = 0; k < n; k++) {
            double sum = 0;
            long long count = 0;
            for (int p = from; p <= to && p < res[k].n_positions; p++)
                sum += res[k].loss[p] * res[k].stories[p], count += res[k].stories[p];
            slm_cell_number(b, count ? sum / (double)count : NAN);
        }
    }
}

/* Model k: the header and the scores table before the first, then its row (and a note when clipped). */
static int icl_model(ViewCall *c, const ProbeSession *ps, int k, Error *e) {
    const IclParams *p = c->params;
    IclState *st = c->state;
    Report *r = c->report;
    if (k == 0) {
        slm_report_header_session(r, ps);
        slm_report_int(r, "band", "band", p->o.band);
        slm_report_int(r, "min_stories", "min stories", p->o.min_stories);
        st->scores = score_table(r);
    }
    if (st->n == ICL_MAX_MODELS) return FAIL(e, NULL, "at most %d models", ICL_MAX_MODELS);
    IclResult *res = &st->res[st->n];
    if (slm_probe_icl(&ps->lm.model, &ps->stories, ps->stories.test, ps->stories.n_test, &p->o, &ps->ablation, res, e))
        return -1;
    st->n++;
    score_row(st->scores, ps, res);
    if (res->late_clipped)
        slm_report_note(r, "#%d: --late %d clipped to %d%s, the last position %d or more test stories reach", k,
                        p->o.late, res->late, res->early_clipped ? " (and --early too)" : "", p->o.min_stories);
    return 0;
}

static int build(ViewCall *c, Error *e) {
    const IclParams *p = c->params;
    IclState *st = c->state;
    if (slm_view_each_model(c, &p->models, p->stories, 0, icl_model, e)) return -1;
    curve_tables(c->report, st->res, st->n, p->bin);
    return 0;
}

static void done(ViewCall *c) {
    IclState *st = c->state;
    for (int k = 0; k < st->n; k++) slm_icl_result_free(&st->res[k]);
}

static int check(void *params, Error *e) {
    const IclParams *p = params;
    if (p->models.count > ICL_MAX_MODELS)
        return FAIL(e, NULL, "at most %d --model files, not %d", ICL_MAX_MODELS, p->models.count);
    if (p->o.late <= p->o.early) return FAIL(e, NULL, "--late %d must come after --early %d", p->o.late, p->o.early);
    return 0;
}

/* Model k's curve from the by_position table (rows from *row on): its
 * positions 0..last (the last that min_stories stories reach), pooled over
 * p - band .. p + band, into xs, ys; returns how many. */
static int moving_mean(const ReportTable *t, int *row, int k, int band, int min_stories, double *xs, double *ys) {
    int first = *row, n_positions = 0, last = -1;
    while (*row < t->n_rows && (int)slm_table_number(t, *row, 0) == k) (*row)++;
    n_positions = *row - first;
    for (int p = 0; p < n_positions; p++)
        if (slm_table_number(t, first + p, 3) >= min_stories) last = p;
    int n = 0;
    for (int p = 0; p <= last; p++) {
        double sum = 0;
        long long count = 0;
        for (int q = p - band; q <= p + band; q++)
            if (q >= 0 && q <= last) {
                double stories = slm_table_number(t, first + q, 3);
                sum += slm_table_number(t, first + q, 2) * stories, count += (long long)stories;
            }
        xs[n] = p, ys[n++] = sum / (double)count;
    }
    return n;
}

static int draw(ViewCall *c, const char *path, Error *e) {
    const Report *r = c->report;
    const ReportTable *scores = slm_report_find_table(r, "scores"), *pos = slm_report_find_table(r, "by_position");
    int n = scores ? scores->n_rows : 0, band = (int)slm_report_find_number(r, "band"),
        min_stories = (int)slm_report_find_number(r, "min_stories");
    if (!pos || n == 0) return FAIL(e, NULL, "no losses by position to draw");
    if (n > 32) return FAIL(e, "give at most 32 models to draw", "%d models to draw", n);
    int last = pos->n_rows; /* room for any model's positions */
    double hi = 0;
    double *xs = xmalloc((size_t)2 * (last + 1) * sizeof(double), e), *ys = xs ? xs + last + 1 : NULL;
    if (!xs) return -1;
    last = 0;
    for (int k = 0, row = 0; k < n; k++) { /* the axis fits the curves drawn, not the noisier single positions */
        int m = moving_mean(pos, &row, k, band, min_stories, xs, ys);
        last = m - 1 > last ? m - 1 : last;
        for (int i = 0; i < m; i++) hi = fmax(hi, ys[i]);
    }
    /* the legend names the models by file name, the folders are the same or do not matter */
    const char *shown[32];
    for (int k = 0; k < n; k++) {
        const char *name = slm_table_text(scores, k, 0), *slash = strrchr(name, '/');
        shown[k] = slash ? slash + 1 : name;
    }
    Svg s;
    slm_svg_begin(&s, fmax(980, 760 + slm_svg_legend_width(shown, n, 0)), 460, "storylm icl: loss by position");
    slm_svg_text(&s, 20, 24,
                 "Mean loss by position in the test stories (moving mean), with the early and late positions", 14,
                 SVG_START, 0, "black");
    SvgPanel p = {.x = 80,
                  .y = 60,
                  .w = 640,
                  .h = 320,
                  .x0 = 0,
                  .x1 = last > 0 ? last : 1,
                  .y0 = 0,
                  .y1 = slm_svg_round_up(fmin(hi, 12) * 1.05)};
    slm_svg_axes(&s, &p, NULL, "position in the story", "loss (nats)", 1);
    const char *colors[32];
    for (int k = 0, row = 0; k < n; k++) {
        int m = moving_mean(pos, &row, k, band, min_stories, xs, ys);
        colors[k] = slm_svg_palette(k);
        slm_svg_polyline(&s, &p, xs, ys, m, colors[k], 1.8);
        for (int which = 0; which < 2; which++) {
            double at = slm_svg_px(&p, slm_table_number(scores, k, which ? 3 : 2));
            slm_svg_line(&s, at, p.y, at, p.y + p.h, colors[k], 0.8);
        }
    }
    /* which line is which: the early one labelled right of it, the late one left */
    int early = (int)slm_table_number(scores, 0, 2), late = (int)slm_table_number(scores, 0, 3);
    char label[48];
    snprintf(label, sizeof label, "early (%d)", early);
    slm_svg_text(&s, slm_svg_px(&p, early) + 4, p.y + 14, label, 10, SVG_START, 0, "#444");
    snprintf(label, sizeof label, "late (%d)", late);
    slm_svg_text(&s, slm_svg_px(&p, late) - 4, p.y + 14, label, 10, SVG_END, 0, "#444");
    slm_svg_legend(&s, 740, 60, shown, colors, n);
    int rc = slm_svg_save(&s, path, e);
    slm_svg_free(&s);
    free(xs);
    return rc;
}

static const Param params[] = {
    VIEW_ARG(IclParams, stories, "STORIES", PARAM_REQUIRED | PARAM_STORIES),
    VIEW_PARAM_MODELS(IclParams, models, "repeat to compare"),
    VIEW_PARAMS_ABLATE(IclParams),
    VIEW_PARAMS_OUTPUT(IclParams),
    VIEW_PARAM_KERNELS(IclParams),
    VIEW_PARAMS_SVG(IclParams),
    VIEW_PARAM_TEST_STORIES(IclParams),
    VIEW_INT_PARAM(IclParams, o.early, "early", "P", "the early position", 0, 1000000, 50),
    VIEW_INT_PARAM(IclParams, o.late, "late", "P", "the late position", 1, 1000000, 500),
    VIEW_INT_PARAM(IclParams, o.band, "band", "B", "pool the positions within B of each", 0, 1000, 10),
    VIEW_INT_PARAM(IclParams, o.min_stories, "min-stories", "K", "a position counts when K test stories reach it", 1,
                   100000, 10),
    VIEW_INT_PARAM(IclParams, bin, "bin", "N", "positions per row of the text's loss table", 1, 100000, 25),
};
const View view_icl = {
    .name = "icl",
    .summary = "in-context learning: loss late in a story minus early",
    .usage = "storylm icl STORIES [options]",
    .description = "On the held-out test stories of STORIES: the mean loss (nats) at every position (position p\n"
                   "predicts token p+1; 0 is the opening [EOS]) and the in-context-learning score, the mean loss\n"
                   "at position --late minus at --early (Olsson et al. 2022): negative when the network predicts\n"
                   "better for having read more of the story. Each of the two is pooled over the positions\n"
                   "within --band of it, since one position of 100 stories is noisy. Both positions are\n"
                   "clipped to the last position that --min-stories stories reach (the report says when);\n"
                   "only the longer stories reach a late position, so the paired score takes the early loss\n"
                   "over just those stories too (the same stories at both ends);\n"
                   "when even --early lies beyond it, the stories are too short and icl says so. The window8\n"
                   "network is measured too (it reads only 8 tokens: its score shows what needs no long\n"
                   "context). Several --model files are compared side by side. --svg draws the loss by\n"
                   "position (a moving mean over --band each side), one curve per model.",
    .params = params,
    .n_params = VIEW_N_PARAMS(params),
    .params_size = sizeof(IclParams),
    .session = VIEW_SESSION_NONE,
    .serve = VIEW_SERVE_POST,
    .state_size = sizeof(IclState),
    .check = check,
    .build = build,
    .draw = draw,
    .done = done,
};
