/* storylm icl STORIES [--model M ...]: in-context learning. The mean loss
 * late in a story minus early in it, and the loss by position. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "probe_common.h"
#include "storylm/probe_icl.h"
#include "storylm/svg.h"

static int run(int argc, char **argv);
const Command command_icl = {
    "icl", "in-context learning: loss late in a story minus early", "storylm icl STORIES [options]",
    "On the held-out test stories of STORIES: the mean loss (nats) at every position (position p\n"
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
    run};

typedef struct IclArgs {
    ProbeOptions po;
    StringList models;
    IclOptions o;
    int bin;
} IclArgs;

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

/* res's losses pooled over p - band .. p + band, for p = 0..last, into xs, ys; returns how many. */
static int moving_mean(const IclResult *res, int band, double *xs, double *ys) {
    int n = 0;
    for (int p = 0; p <= res->last; p++) {
        double sum = 0;
        long long count = 0;
        for (int q = p - band; q <= p + band; q++)
            if (q >= 0 && q <= res->last) sum += res->loss[q] * res->stories[q], count += res->stories[q];
        xs[n] = p, ys[n++] = sum / (double)count;
    }
    return n;
}

static int draw(const char *path, const IclResult *res, const char *const *names, int n, int band, Error *e) {
    int last = 0;
    double hi = 0;
    for (int k = 0; k < n; k++) last = res[k].last > last ? res[k].last : last;
    double *xs = xmalloc((size_t)2 * (last + 1) * sizeof(double), e), *ys = xs ? xs + last + 1 : NULL;
    if (!xs) return -1;
    /* the legend names the models by file name, the folders are the same or do not matter */
    const char *shown[32];
    for (int k = 0; k < n && k < 32; k++) {
        const char *slash = strrchr(names[k], '/');
        shown[k] = slash ? slash + 1 : names[k];
    }
    Svg s;
    slm_svg_begin(&s, fmax(980, 760 + slm_svg_legend_width(shown, n, 0)), 460, "storylm icl: loss by position");
    slm_svg_text(&s, 20, 24,
                 "Mean loss by position in the test stories (moving mean), with the early and late positions", 14,
                 SVG_START, 0, "black");
    for (int k = 0; k < n; k++) /* the axis fits the curves drawn, not the noisier single positions */
        for (int i = 0, m = moving_mean(&res[k], band, xs, ys); i < m; i++) hi = fmax(hi, ys[i]);
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
    for (int k = 0; k < n; k++) {
        int m = moving_mean(&res[k], band, xs, ys);
        colors[k] = slm_svg_palette(k);
        slm_svg_polyline(&s, &p, xs, ys, m, colors[k], 1.8);
        for (int which = 0; which < 2; which++) {
            double at = slm_svg_px(&p, which ? res[k].late : res[k].early);
            slm_svg_line(&s, at, p.y, at, p.y + p.h, colors[k], 0.8);
        }
    }
    if (n > 0) { /* which line is which: the early one labelled right of it, the late one left */
        char label[48];
        snprintf(label, sizeof label, "early (%d)", res[0].early);
        slm_svg_text(&s, slm_svg_px(&p, res[0].early) + 4, p.y + 14, label, 10, SVG_START, 0, "#444");
        snprintf(label, sizeof label, "late (%d)", res[0].late);
        slm_svg_text(&s, slm_svg_px(&p, res[0].late) - 4, p.y + 14, label, 10, SVG_END, 0, "#444");
    }
    slm_svg_legend(&s, 740, 60, shown, colors, n);
    int rc = slm_svg_save(&s, path, e);
    slm_svg_free(&s);
    free(xs);
    return rc;
}

static int icl(const IclArgs *a, const char *stories, Error *e) {
    int n = a->models.count ? a->models.count : 1, rc = 0;
    IclResult res[32] = {{0}};
    const char *names[32];
    Report r;
    slm_report_init(&r, "icl");
    ReportTable *t = NULL;
    for (int k = 0; !rc && k < n; k++) {
        ProbeOptions po = a->po;
        po.model = a->models.count ? a->models.items[k] : NULL;
        ProbeSession ps;
        if ((rc = slm_probe_session_open(&ps, &po, "icl", stories, 0, e))) break;
        if (k == 0) {
            slm_report_header_session(&r, &ps);
            slm_report_int(&r, "band", "band", a->o.band);
            slm_report_int(&r, "min_stories", "min stories", a->o.min_stories);
            t = score_table(&r);
        }
        names[k] = a->models.count ? a->models.items[k] : ps.model_path;
        rc = slm_probe_icl(&ps.lm.model, &ps.stories, ps.stories.test, ps.stories.n_test, &a->o, &ps.ablation, &res[k],
                           e);
        if (!rc) score_row(t, &ps, &res[k]);
        if (!rc && res[k].late_clipped)
            slm_report_note(&r, "#%d: --late %d clipped to %d%s, the last position %d or more test stories reach", k,
                            a->o.late, res[k].late, res[k].early_clipped ? " (and --early too)" : "", a->o.min_stories);
        slm_probe_session_close(&ps);
    }
    if (!rc) curve_tables(&r, res, n, a->bin);
    if (!rc && a->po.svg) rc = draw(a->po.svg, res, names, n, a->o.band, e);
    if (!rc) rc = probe_emit(&r, &a->po, e);
    for (int k = 0; k < n; k++) slm_icl_result_free(&res[k]);
    slm_report_free(&r);
    return rc;
}

static int run(int argc, char **argv) {
    IclArgs a = {
        .po = PROBE_OPTIONS_DEFAULT, .o = {.early = 50, .late = 500, .band = 10, .min_stories = 10}, .bin = 25};
    const char *pos[1];
    Option opts[] = {
        PROBE_MODELS_OPTIONS(a.po, a.models, "repeat to compare"),
        PROBE_SVG_OPTION(a.po),
        PROBE_TEST_OPTION(a.po),
        {"early", 0, OPT_INT, &a.o.early, "P", "the early position", 0, 1000000},
        {"late", 0, OPT_INT, &a.o.late, "P", "the late position", 1, 1000000},
        {"band", 0, OPT_INT, &a.o.band, "B", "pool the positions within B of each", 0, 1000},
        {"min-stories", 0, OPT_INT, &a.o.min_stories, "K", "a position counts when K test stories reach it", 1, 100000},
        {"bin", 0, OPT_INT, &a.bin, "N", "positions per row of the text's loss table", 1, 100000},
    };
    int rc = probe_parse(&command_icl, argc, argv, opts, N_OPTIONS(opts), &a.po, pos, 1);
    if (rc >= 0) return rc;
    if (a.models.count > 32) return args_usage_error(&command_icl, "at most 32 --model files, not %d", a.models.count);
    if (a.o.late <= a.o.early)
        return args_usage_error(&command_icl, "--late %d must come after --early %d", a.o.late, a.o.early);
    Error e = {0};
    return icl(&a, pos[0], &e) ? cli_fail(&e) : 0;
}
