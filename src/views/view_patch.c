/* Activation patching: the view patch (registry.h), its entry at the end. */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "storylm/probe_patch.h"
#include "storylm/probe_views.h"
#include "storylm/registry.h"
#include "storylm/report_header.h"
#include "storylm/svg.h"

typedef struct PatchParams {
    ProbeOptions po;
    const char *clean, *corrupt, *answer, *wrong;
} PatchParams;

typedef struct PatchInput {
    const PatchParams *p;
    IntVec clean_ids, corrupt_ids;
    int32_t answer_id, wrong_id;
} PatchInput;

static int same_length(const ProbeSession *ps, const PatchInput *in, Error *e) {
    if (in->clean_ids.len == in->corrupt_ids.len) return 0;
    char a[2048], b[2048];
    slm_view_ids_text(ps, in->clean_ids.data, (int)in->clean_ids.len, a, sizeof a);
    slm_view_ids_text(ps, in->corrupt_ids.data, (int)in->corrupt_ids.len, b, sizeof b);
    return FAIL(e, "change the corrupt text so that it has as many tokens (e.g. swap a name for one of as many pieces)",
                "the texts have different numbers of tokens, so positions cannot be matched:\n"
                "  clean   (%zu tokens): %s\n  corrupt (%zu tokens): %s",
                in->clean_ids.len, a, in->corrupt_ids.len, b);
}

/* --answer and --wrong, or the defaults from the two runs. */
static int choose_tokens(const ProbeSession *ps, PatchInput *in, const Activations *clean, const Activations *corrupt,
                         Error *e) {
    int last = clean->n_positions - 1;
    if (in->p->answer ? slm_view_token_id(ps, in->p->answer, "--answer", &in->answer_id, e) : 0) return -1;
    if (!in->p->answer) in->answer_id = slm_view_top_guess(clean, last, -1);
    if (in->p->wrong ? slm_view_token_id(ps, in->p->wrong, "--wrong", &in->wrong_id, e) : 0) return -1;
    if (!in->p->wrong) in->wrong_id = slm_view_top_guess(corrupt, last, in->answer_id);
    if (in->wrong_id == in->answer_id)
        return FAIL(e, "give a --wrong token other than the answer", "--answer and --wrong are the same token '%s'",
                    slm_probe_session_token(ps, in->answer_id));
    return 0;
}

static void positions_table(Report *r, const ProbeSession *ps, const PatchInput *in, const PatchResult *p) {
    ReportTable *t =
        slm_report_table(r, "positions", "Clean pieces at each position put into the corrupt run (0 corrupt, 1 clean)");
    slm_table_column(t, "position", "pos", CELL_INT, 0);
    slm_table_column(t, "clean", "clean", CELL_TEXT, 0);
    slm_table_column(t, "corrupt", "corrupt", CELL_TEXT, 0);
    slm_table_column(t, "row", "row", CELL_NUMBER, 3);
    char key[32], label[32];
    for (int h = 0; h < p->n_heads; h++) {
        snprintf(key, sizeof key, "head_%d", h);
        slm_head_name(&ps->lm.model.cfg, h, label + 5, sizeof label - 5); /* "head 3", a transformer's "head 1:3" */
        memcpy(label, "head ", 5);
        slm_table_column(t, key, label, CELL_NUMBER, 3);
    }
    for (int u = 0; u < p->n_positions; u++) {
        slm_table_row(t);
        slm_cell_int(t, u);
        slm_cell_text(t, slm_probe_session_token(ps, in->clean_ids.data[u]));
        slm_cell_text(t, slm_probe_session_token(ps, in->corrupt_ids.data[u]));
        slm_cell_number(t, p->rows[u]);
        for (int h = 0; h < p->n_heads; h++) slm_cell_number(t, p->reads[(size_t)h * p->n_positions + u]);
    }
}

/* A transformer's residual stream: one column a block's input (then the last block's output), one row a position. */
static void resid_table(Report *r, const ProbeSession *ps, const PatchInput *in, const PatchResult *p) {
    ReportTable *t = slm_report_table(r, "resid", "The residual stream at each position put into the corrupt run");
    slm_table_column(t, "position", "pos", CELL_INT, 0);
    slm_table_column(t, "clean", "clean", CELL_TEXT, 0);
    char key[48], label[48];
    for (int l = 0; l <= p->n_layers; l++) {
        snprintf(key, sizeof key, "blocks.%d.hook_resid_%s", l < p->n_layers ? l : l - 1,
                 l < p->n_layers ? "pre" : "post");
        snprintf(label, sizeof label, l < p->n_layers ? "into block %d" : "out of block %d",
                 l < p->n_layers ? l + 1 : l);
        slm_table_column(t, key, label, CELL_NUMBER, 3);
    }
    for (int u = 0; u < p->n_positions; u++) {
        slm_table_row(t);
        slm_cell_int(t, u);
        slm_cell_text(t, slm_probe_session_token(ps, in->clean_ids.data[u]));
        for (int l = 0; l <= p->n_layers; l++) slm_cell_number(t, p->resid[(size_t)l * p->n_positions + u]);
    }
}

static void heads_table(Report *r, const PatchResult *p) {
    ReportTable *t = slm_report_table(r, "heads", "Each head at the last position (0 corrupt, 1 clean)");
    slm_table_column(t, "head", "head", CELL_INT, 0);
    slm_table_column(t, "query", "query", CELL_NUMBER, 3);
    slm_table_column(t, "output", "whole output", CELL_NUMBER, 3);
    for (int h = 0; h < p->n_heads; h++) {
        slm_table_row(t);
        slm_cell_int(t, h);
        slm_cell_number(t, p->query[h]);
        slm_cell_number(t, p->output[h]);
    }
}

static void build_report(Report *r, const ProbeSession *ps, const PatchInput *in, const PatchResult *p) {
    slm_report_header_session(r, ps);
    slm_report_text(r, "clean", "clean text", in->p->clean);
    slm_report_text(r, "corrupt", "corrupt text", in->p->corrupt);
    slm_report_int(r, "tokens", "tokens", p->n_positions);
    slm_report_text(r, "answer", "answer", slm_probe_session_token(ps, p->answer));
    slm_report_int(r, "answer_id", "answer id", p->answer);
    slm_report_text(r, "wrong", "wrong token", slm_probe_session_token(ps, p->wrong));
    slm_report_int(r, "wrong_id", "wrong id", p->wrong);
    slm_report_number(r, "clean_diff", "logit difference, clean", p->clean_diff, 4);
    slm_report_number(r, "corrupt_diff", "logit difference, corrupt", p->corrupt_diff, 4);
    slm_report_number(r, "clean_diff_model", "  (float forward pass, clean)", p->clean_diff_model, 4);
    slm_report_number(r, "corrupt_diff_model", "  (float forward pass, corrupt)", p->corrupt_diff_model, 4);
    slm_report_number(r, "hidden", "hidden layer patched", p->hidden, 4);
    slm_report_number(r, "all_rows", "every row patched", p->all_rows, 4);
    slm_report_number(r, "outputs_and_row", "every head output and the last row patched", p->outputs_and_row, 4);
    positions_table(r, ps, in, p);
    heads_table(r, p);
    if (p->resid) resid_table(r, ps, in, p);
}

static int patch(Report *r, const ProbeSession *ps, const PatchParams *pp, Error *e) {
    PatchInput in = {.p = pp};
    ProbeRunner clean = {0}, corrupt = {0};
    PatchResult p = {0};
    int rc = slm_view_encode(ps, pp->clean, &in.clean_ids, e) || slm_view_encode(ps, pp->corrupt, &in.corrupt_ids, e) ||
             same_length(ps, &in, e);
    int T = (int)in.clean_ids.len;
    if (!rc)
        rc = slm_probe_runner_init(&clean, &ps->lm.model, T, e) || slm_probe_runner_init(&corrupt, &ps->lm.model, T, e);
    if (!rc)
        rc = slm_probe_run(&clean, in.clean_ids.data, T, &ps->ablation, e) ||
             slm_probe_run(&corrupt, in.corrupt_ids.data, T, &ps->ablation, e);
    if (!rc) rc = choose_tokens(ps, &in, &clean.acts, &corrupt.acts, e);
    if (!rc) rc = slm_probe_patch_runs(&ps->lm.model, &clean, &corrupt, in.answer_id, in.wrong_id, &p, e);
    if (!rc) build_report(r, ps, &in, &p);
    slm_patch_result_free(&p);
    slm_probe_runner_free(&clean);
    slm_probe_runner_free(&corrupt);
    slm_intvec_free(&in.clean_ids);
    slm_intvec_free(&in.corrupt_ids);
    return rc ? -1 : 0;
}

/* Rows: the row, then heads; columns: positions (the positions table), then
 * query and output (the heads table; the row's: every row patched). */
static double *heat_values(const Report *r, const ReportTable *pos, const ReportTable *heads, int cols) {
    int H = heads->n_rows, T = pos->n_rows;
    double *v = malloc((size_t)(H + 1) * cols * sizeof(double));
    if (!v) return NULL;
    for (int u = 0; u < T; u++) {
        v[u] = slm_table_number(pos, u, 3);
        for (int h = 0; h < H; h++) v[(size_t)(h + 1) * cols + u] = slm_table_number(pos, u, 4 + h);
    }
    v[T] = NAN;
    v[T + 1] = slm_report_find_number(r, "all_rows");
    for (int h = 0; h < H; h++) {
        v[(size_t)(h + 1) * cols + T] = slm_table_number(heads, h, 1);
        v[(size_t)(h + 1) * cols + T + 1] = slm_table_number(heads, h, 2);
    }
    return v;
}

static int draw(ViewCall *c, const char *path, Error *e) {
    const Report *r = c->report;
    const ReportTable *pos = slm_report_find_table(r, "positions"), *heads = slm_report_find_table(r, "heads");
    if (!pos || !heads) return FAIL(e, NULL, "no patching tables to draw");
    int H = heads->n_rows, T = pos->n_rows, cols = T + 2;
    double *values = heat_values(r, pos, heads, cols);
    char(*names)[48] = malloc((size_t)(cols + H + 1) * sizeof *names);
    const char **labels = malloc((size_t)(cols + H + 1) * sizeof *labels);
    if (!values || !names || !labels) {
        free(values), free(names), free(labels);
        return FAIL(e, NULL, "out of memory drawing the patching heat map");
    }
    for (int u = 0; u < T; u++) {
        const char *a = slm_table_text(pos, u, 1), *b = slm_table_text(pos, u, 2);
        if (strcmp(a, b) == 0)
            snprintf(names[u], sizeof names[u], "%d %s", u, a);
        else
            snprintf(names[u], sizeof names[u], "%d %s/%s", u, a, b);
    }
    snprintf(names[T], sizeof names[T], "query");
    snprintf(names[T + 1], sizeof names[T + 1], "output (row: every row)");
    snprintf(names[cols], sizeof names[cols], "row");
    for (int h = 0; h < H; h++) snprintf(names[cols + 1 + h], sizeof names[0], "head %d", h);
    for (int i = 0; i < cols + H + 1; i++) labels[i] = names[i];
    /* squares of 12 pixels or more keep the labels 10 pixels high: a long story makes a wider picture */
    double cell = fmax(12, fmin(24, 900.0 / cols)), left = 70, top = 190, scale_x = left + cols * cell + 20;
    Svg s;
    slm_svg_begin(&s, fmax(640, scale_x + 110), top + (H + 1) * cell + 60, "storylm patch");
    char title[256];
    snprintf(title, sizeof title, "Activation patching: '%s' over '%s' (0 corrupt, 1 clean; clean/corrupt tokens)",
             slm_report_find_text(r, "answer"), slm_report_find_text(r, "wrong"));
    slm_svg_text(&s, 20, 22, title, 13, SVG_START, 0, "black");
    slm_svg_text(
        &s, 20, 40,
        "a cell: that piece of the clean run put into the corrupt one; head h at position u: its key and value there",
        11, SVG_START, 0, "#444");
    slm_svg_heatmap(&s, left, top, cell, values, H + 1, cols, 1.0, labels + cols, labels, fmin(11, cell - 2));
    slm_svg_color_scale(&s, scale_x, top, fmax(100, (H + 1) * cell), 1.0, "share restored");
    int rc = slm_svg_save(&s, path, e);
    slm_svg_free(&s);
    free(values), free(names), free(labels);
    return rc;
}

static int build(ViewCall *c, Error *e) { return patch(c->report, c->ps, c->params, e); }

static const Param params[] = {
    VIEW_ARG(PatchParams, clean, "CLEAN", PARAM_REQUIRED | PARAM_TEXT),
    VIEW_ARG(PatchParams, corrupt, "CORRUPT", PARAM_REQUIRED | PARAM_TEXT),
    VIEW_PARAMS_COMMON(PatchParams),
    VIEW_PARAM_KERNELS(PatchParams),
    VIEW_PARAMS_SVG(PatchParams),
    VIEW_PARAM_MEAN_STORIES(PatchParams),
    VIEW_PARAM_TEST_STORIES(PatchParams),
    VIEW_STRING_PARAM(PatchParams, answer, "answer", "TOKEN",
                      "the token the clean text should lead to (default: its top guess)"),
    VIEW_STRING_PARAM(PatchParams, wrong, "wrong", "TOKEN",
                      "the token to compare with (default: the corrupt run's top guess)"),
};
const View view_patch = {
    .name = "patch",
    .summary = "activation patching: which heads and positions carry a difference",
    .usage = "storylm patch CLEAN CORRUPT [options]",
    .description = "Runs [EOS] and each text through the network (the two must have the same number of\n"
                   "tokens; differing ones are refused with both tokenizations shown). At the last position\n"
                   "it measures the logit difference LD = logit(answer) - logit(wrong), by default the\n"
                   "answer being the clean run's top guess and the wrong token the corrupt run's (its second\n"
                   "guess when both agree). Then it puts pieces of the clean run into the corrupt run, one at a\n"
                   "time, and reports (LD - LD_corrupt) / (LD_clean - LD_corrupt): 0 is the corrupt run, 1 the\n"
                   "clean one, above 1 or below 0 when a piece overshoots.\n"
                   "\n"
                   "In one layer a head's output at an earlier position reaches only that position's own\n"
                   "guess, so the pieces are what the last position reads:\n"
                   "  head h, position u   head h's key and value at u (what the head reads there)\n"
                   "  head h, query        head h's query at the last position\n"
                   "  head h, output       head h's whole output at the last position\n"
                   "  row, position u      the token row at u: every head's key and value there, and at the\n"
                   "                       last position also the queries and the row's own slot of z\n"
                   "  hidden               the hidden layer at the last position\n"
                   "Patching every row, or every head's output with the last row, gives back the clean run's\n"
                   "numbers exactly. The last position is evaluated in double precision for every patch.\n"
                   "--ablate switches heads off in both runs (patching them then changes nothing).\n"
                   "--svg FILE draws the heat map: the row and the heads by position, then query and output.\n"
                   "On a transformer the pieces are its hook points, hooked into the corrupt run's forward\n"
                   "pass (every block's heads, L:H): hook_k and hook_v at u, hook_q and hook_z at the last\n"
                   "position, the row is blocks.0.hook_resid_pre at u, hidden the last block's\n"
                   "hook_resid_post at the last position, and a table 'resid' patches the residual stream\n"
                   "entering each block (and leaving the last) at each position (docs/transformer.md).\n"
                   "On a model of several layers (--layers) the pieces are its hook points likewise, every\n"
                   "layer's heads (L:H): a head's output at an earlier position reaches the last one through\n"
                   "the layers above; the row is hook_embed at u and hidden hook_hidden at the last position.",
    .params = params,
    .n_params = VIEW_N_PARAMS(params),
    .params_size = sizeof(PatchParams),
    .session = VIEW_SESSION_PROBE,
    .probe_flags = PROBE_HEADS,
    .build = build,
    .draw = draw,
};
