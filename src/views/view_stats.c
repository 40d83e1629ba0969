/* The chapter's statistics on the test stories: the view stats (registry.h), its entry at the end. */
#include <math.h>
#include <stdio.h>
#include <stddef.h>
#include <stdlib.h>

#include "storylm/probe_views.h"
#include "storylm/registry.h"
#include "storylm/views.h"
#include "storylm/report_header.h"
#include "storylm/svg.h"

static void build_report(Report *r, const ProbeSession *ps, const StatsResult *s, int common) {
    slm_report_header_session(r, ps);
    slm_report_heading(r, "What the heads read, on the test stories");
    slm_report_int(r, "pairs", "pairs (position, token it reads)", s->pairs);
    slm_report_int(r, "positions", "positions reading 2+ tokens", s->positions);
    ReportTable *t = slm_report_table(r, "heads", "Per head: does q.k follow the cosine of the two rows?");
    slm_table_column(t, "head", "head", CELL_INT, 0);
    slm_table_column(t, "correlation", "corr(q.k, cos rows)", CELL_NUMBER, 3);
    slm_table_column(t, "correlation_others", "without itself", CELL_NUMBER, 3);
    slm_table_column(t, "closest_not_largest", "closest in direction is not largest q.k", CELL_PERCENT, 1);
    double lo = INFINITY, hi = -INFINITY, lo2 = INFINITY, hi2 = -INFINITY;
    for (int h = 0; h < s->n_heads; h++) {
        slm_table_row(t);
        slm_cell_int(t, h);
        slm_cell_number(t, s->correlation[h]);
        slm_cell_number(t, s->correlation_others[h]);
        slm_cell_number(t, s->closest_not_largest[h]);
        lo = fmin(lo, s->correlation[h]), hi = fmax(hi, s->correlation[h]);
        lo2 = fmin(lo2, s->closest_not_largest[h]), hi2 = fmax(hi2, s->closest_not_largest[h]);
    }
    slm_report_note(r, "\ncorrelation over the heads: %.3f to %.3f (the chapter: -0.12 to 0.09)", lo, hi);
    slm_report_note(
        r, "closest in direction is not the largest q.k: %.1f%% to %.1f%% of positions (the chapter: 48%% to 65%%)",
        100 * lo2, 100 * hi2);
    slm_report_heading(r, "Far repeats: tokens back from beyond chapter 6's window of 8");
    slm_report_int(r, "tokens", "tokens ([EOS] left out)", s->tokens);
    slm_report_int(r, "common_left_out", "most common tokens left out", common);
    slm_report_int(r, "counted_tokens", "tokens not left out", s->counted_tokens);
    slm_report_int(r, "far_repeats", "seen earlier, not among the 8 before", s->far_repeats);
    slm_report_percent(r, "far_repeat_share", "share of all tokens",
                       s->tokens ? (double)s->far_repeats / (double)s->tokens : NAN, 1);
    slm_report_percent(r, "far_repeat_share_counted", "share of tokens not left out",
                       s->counted_tokens ? (double)s->far_repeats / (double)s->counted_tokens : NAN, 1);
}

typedef struct StatsParams {
    ProbeOptions po;
    const char *stories;
    int common;
} StatsParams;

static int stats(Report *r, const ProbeSession *ps, int common, Error *e) {
    const Stories *s = &ps->stories;
    uint8_t *left_out = xmalloc((size_t)ps->lm.tokenizer.size, e);
    StatsResult res = {0};
    int rc = left_out ? slm_view_common_tokens(ps, common, left_out, e) : -1;
    if (!rc) rc = slm_probe_stats(&ps->lm.model, s, s->test, s->n_test, left_out, &res, e);
    if (!rc) build_report(r, ps, &res, common);
    slm_stats_result_free(&res);
    free(left_out);
    return rc;
}

/* The heads table's correlation and share per head, as two panels of bars. */
static int draw(ViewCall *c, const char *path, Error *e) {
    const ReportTable *t = slm_report_find_table(c->report, "heads");
    double corr[32], share[32];
    const char *labels[32];
    char buf[32][8];
    int H = t ? (t->n_rows < 32 ? t->n_rows : 32) : 0;
    double lo = -0.2, hi = 0.2;
    for (int h = 0; h < H; h++) {
        snprintf(buf[h], sizeof buf[h], "%d", h);
        labels[h] = buf[h];
        corr[h] = slm_table_number(t, h, 1);
        share[h] = slm_table_number(t, h, 3);
        lo = fmin(lo, corr[h] * 1.1), hi = fmax(hi, corr[h] * 1.1);
    }
    Svg svg;
    slm_svg_begin(&svg, 900, 360, "storylm stats");
    slm_svg_text(&svg, 20, 24, "The chapter's statistics per head, on the test stories", 15, SVG_START, 0, "black");
    SvgPanel p = {.x = 70, .y = 70, .w = 360, .h = 220, .y0 = lo, .y1 = hi};
    slm_svg_axes(&svg, &p, "correlation of q.k with cos(rows)", "head", NULL, 0);
    slm_svg_bars(&svg, &p, corr, 1, H, labels, NULL, 0);
    SvgPanel q = {.x = 500, .y = 70, .w = 360, .h = 220, .y0 = 0, .y1 = 1};
    const char *orange = slm_svg_palette(1);
    slm_svg_axes(&svg, &q, "closest key in direction is not the largest q.k", "head", NULL, 0);
    slm_svg_bars(&svg, &q, share, 1, H, labels, &orange, 0);
    int rc = slm_svg_save(&svg, path, e);
    slm_svg_free(&svg);
    return rc;
}

static int build(ViewCall *c, Error *e) { return stats(c->report, c->ps, ((const StatsParams *)c->params)->common, e); }

static const Param params[] = {
    VIEW_ARG(StatsParams, stories, "STORIES", PARAM_REQUIRED | PARAM_STORIES),
    VIEW_PARAM_MODEL(StatsParams),
    VIEW_PARAMS_OUTPUT(StatsParams),
    VIEW_PARAM_KERNELS(StatsParams),
    VIEW_PARAMS_SVG(StatsParams),
    VIEW_PARAM_TEST_STORIES(StatsParams),
    VIEW_INT_PARAM(StatsParams, common, "common", "N", "most common tokens left out of the far repeats", 0, 100000,
                   100),
};
const View view_stats = {
    .name = "stats",
    .summary = "the chapter's statistics on the test stories",
    .usage = "storylm stats STORIES [options]",
    .description = "On the held-out test stories of STORIES:\n"
                   "  correlation  per head, Pearson's correlation of q.k with the cosine of the two\n"
                   "               tokens' rows, over every (position, token it reads) pair, itself\n"
                   "               included (the chapter: between -0.12 and 0.09 in every head), and\n"
                   "               without the pairs of a position with itself (whose cosine is 1);\n"
                   "  not closest  per head, the share of positions reading 2 or more tokens whose key\n"
                   "               closest in direction to the query is not the key with the largest\n"
                   "               q.k (the chapter: 48% to 65%);\n"
                   "  far repeats  the share of tokens ([EOS] left out) that appeared earlier in the\n"
                   "               story but not among the 8 tokens before them, out of chapter 6's\n"
                   "               reach; the 100 most common tokens of the training stories are left\n"
                   "               out, except names (--common N changes 100).\n"
                   "--ablate is refused: no head switched off changes these numbers.\n"
                   "On a transformer every block's heads, numbered l*H + h (block l from 0), with\n"
                   "q and k as each block makes them (hook_q, hook_k, turned by rope) and the rows of W_E;\n"
                   "on a model of several layers (--layers) every layer's heads, numbered the same way.",
    .params = params,
    .n_params = VIEW_N_PARAMS(params),
    .params_size = sizeof(StatsParams),
    .session = VIEW_SESSION_PROBE,
    .probe_flags = PROBE_HEADS | PROBE_NAMES,
    .no_ablation = "queries, keys and rows, which come before the heads' outputs",
    .serve = VIEW_SERVE_POST,
    .build = build,
    .draw = draw,
};
