/* In-context learning (icl): see probe_views.h. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "storylm/probe_views.h"
#include "storylm/report_header.h"
#include "storylm/svg.h"

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
    slm_cell_text(t, slm_arch_name(ps->lm.model.cfg.arch));
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

void slm_view_icl_begin(Report *r, const ProbeSession *ps, const IclParams *ip, ViewIcl *vi) {
    *vi = (ViewIcl){.p = *ip};
    slm_report_header_session(r, ps);
    slm_report_int(r, "band", "band", ip->o.band);
    slm_report_int(r, "min_stories", "min stories", ip->o.min_stories);
    vi->scores = score_table(r);
}

int slm_view_icl_add(ViewIcl *vi, Report *r, const ProbeSession *ps, Error *e) {
    if (vi->n == VIEW_ICL_MAX_MODELS) return FAIL(e, NULL, "at most %d models", VIEW_ICL_MAX_MODELS);
    int k = vi->n;
    IclResult *res = &vi->res[k];
    int rc = slm_probe_icl(&ps->lm.model, &ps->stories, ps->stories.test, ps->stories.n_test, &vi->p.o, &ps->ablation,
                           res, e);
    if (rc) return rc;
    vi->n++;
    score_row(vi->scores, ps, res);
    if (res->late_clipped)
        slm_report_note(r, "#%d: --late %d clipped to %d%s, the last position %d or more test stories reach", k,
                        vi->p.o.late, res->late, res->early_clipped ? " (and --early too)" : "", vi->p.o.min_stories);
    return 0;
}

void slm_view_icl_end(ViewIcl *vi, Report *r) {
    if (vi->n) curve_tables(r, vi->res, vi->n, vi->p.bin);
}

void slm_view_icl_free(ViewIcl *vi) {
    for (int k = 0; k < vi->n; k++) slm_icl_result_free(&vi->res[k]);
    vi->n = 0;
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

int slm_view_icl_draw(const Report *r, const char *path, Error *e) {
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
