/* storylm swap STORIES --model M [--baseline W]: Secret 2, it copies the
 * names it knows. Heroes of the test stories renamed to common, rare and
 * invented names; where the name comes back, how strongly each network
 * predicts the new name. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "probe_common.h"
#include "storylm/fileio.h"
#include "storylm/svg.h"

static int run(int argc, char **argv);
const Command command_swap = {"swap", "rename the hero, see who follows (Secret 2)", "storylm swap STORIES [options]",
                              "In the held-out test stories of STORIES whose hero is named in the first sentence and\n"
                              "named again later, the hero's name is replaced everywhere by each of a set of names;\n"
                              "at every later mention it reports the mean probability the network gives the new\n"
                              "name's first piece and how often that piece is its top guess, for the model and for\n"
                              "--baseline (a window8 model trained on the same vocabulary), side by side; and the\n"
                              "same at the mentions whose previous mention is more than 8 tokens back, out of\n"
                              "window8's reach. The first row keeps each story's own hero.\n"
                              "Names: a word is a name when the training stories (the file's stories other than the\n"
                              "test ones) write it capitalised, where no sentence starts, at least twice and almost\n"
                              "never lower-case; the hero is the first name of the first sentence that comes back.\n"
                              "Default set: the 3 most common names, 3 rare ones (seen 2 to 19 times) and 3\n"
                              "invented ones (never seen, 3 or more pieces); --names a,b,c gives your own (kinds:\n"
                              "invented when never seen, rare under 20 times, common otherwise).\n"
                              "--text TEXT --names NAME does it for one typed story instead: its hero (named in its\n"
                              "first sentence and again later) renamed to NAME, and at every later mention the\n"
                              "probability and rank each network gives the new name's first piece.",
                              run};

typedef struct SwapArgs {
    ProbeOptions po;
    const char *baseline, *names, *text;
} SwapArgs;

/* "z ##ark ##o" */
static void pieces_text(const ProbeSession *ps, const SwapName *n, char *buf, size_t size) {
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < n->n_pieces && used < size; i++)
        used +=
            (size_t)snprintf(buf + used, size - used, "%s%s", i ? " " : "", slm_probe_session_token(ps, n->pieces[i]));
}

static ReportTable *name_table(Report *r, const char *key, const char *title, int baseline) {
    ReportTable *t = slm_report_table(r, key, title);
    slm_table_column(t, "name", "name", CELL_TEXT, 0);
    slm_table_column(t, "kind", "kind", CELL_TEXT, 0);
    slm_table_column(t, "train_count", "in training", CELL_INT, 0);
    slm_table_column(t, "pieces", "pieces", CELL_TEXT, 0);
    slm_table_column(t, "stories", "stories", CELL_INT, 0);
    slm_table_column(t, "mentions", "mentions", CELL_INT, 0);
    slm_table_column(t, "model_probability", "p(name)", CELL_NUMBER, 4);
    slm_table_column(t, "model_top1", "name top guess", CELL_PERCENT, 1);
    if (baseline) {
        slm_table_column(t, "baseline_probability", "window8 p(name)", CELL_NUMBER, 4);
        slm_table_column(t, "baseline_top1", "window8 name top guess", CELL_PERCENT, 1);
    }
    return t;
}

static void name_row(ReportTable *t, const ProbeSession *ps, const SwapRow *row, int far, int baseline) {
    char pieces[256];
    pieces_text(ps, &row->name, pieces, sizeof pieces);
    slm_table_row(t);
    slm_cell_text(t, row->name.word);
    slm_cell_text(t, slm_name_kind_names[row->name.kind]);
    if (row->name.kind == NAME_ORIGINAL)
        slm_cell_skip(t), slm_cell_skip(t);
    else
        slm_cell_int(t, row->name.train_count), slm_cell_text(t, pieces);
    slm_cell_int(t, row->model.stories);
    slm_cell_int(t, far ? row->model.far_mentions : row->model.mentions);
    slm_cell_number(t, far ? row->model.far_probability : row->model.probability);
    slm_cell_number(t, far ? row->model.far_top1 : row->model.top1);
    if (baseline) {
        slm_cell_number(t, far ? row->baseline.far_probability : row->baseline.probability);
        slm_cell_number(t, far ? row->baseline.far_top1 : row->baseline.top1);
    }
}

static void build_report(Report *r, const ProbeSession *ps, const char *baseline, const SwapRow *rows, int n) {
    slm_report_header_session(r, ps);
    slm_report_text(r, "baseline", "baseline", baseline ? baseline : "none");
    if (ps->names_from_all) slm_report_note(r, "note: names were learnt from every story (test ones included)");
    ReportTable *all = name_table(r, "names", "At every later mention of the hero", baseline != NULL);
    ReportTable *far =
        name_table(r, "far", "At later mentions more than 8 tokens after the previous one", baseline != NULL);
    for (int k = 0; k < n; k++) name_row(all, ps, &rows[k], 0, baseline != NULL);
    for (int k = 0; k < n; k++) name_row(far, ps, &rows[k], 1, baseline != NULL);
}

static void draw_panel(Svg *s, const SwapRow *rows, int n, const char **labels, int far, int baseline, double y,
                       const char *title) {
    double values[2 * 64], hi = 0.05;
    for (int k = 0; k < n; k++) {
        values[k] = far ? rows[k].model.far_probability : rows[k].model.probability;
        values[n + k] = far ? rows[k].baseline.far_probability : rows[k].baseline.probability;
        hi = fmax(hi, fmax(values[k], baseline ? values[n + k] : 0) * 1.15);
    }
    SvgPanel p = {.x = 70, .y = y, .w = 760, .h = 220, .y0 = 0, .y1 = fmin(1, hi)};
    slm_svg_axes(s, &p, title, NULL, "mean probability", 0);
    slm_svg_bars(s, &p, values, baseline ? 2 : 1, n, labels, NULL, 1);
    slm_svg_bar_values(s, &p, values, baseline ? 2 : 1, n, 8); /* invented names' bars are a pixel high */
}

static int draw(const char *path, const SwapRow *rows, int n, int baseline, Error *e) {
    const char *labels[64];
    for (int k = 0; k < n && k < 64; k++) labels[k] = rows[k].name.kind == NAME_ORIGINAL ? "(own)" : rows[k].name.word;
    n = n < 64 ? n : 64;
    Svg s;
    slm_svg_begin(&s, 980, 700, "storylm swap: who follows a renamed hero");
    slm_svg_text(&s, 20, 24, "Probability of the hero's (new) name where it comes back", 15, SVG_START, 0, "black");
    draw_panel(&s, rows, n, labels, 0, baseline, 70, "every later mention");
    draw_panel(&s, rows, n, labels, 1, baseline, 400, "mentions more than 8 tokens after the previous one");
    const char *names[2] = {"attention", "window8"};
    slm_svg_legend(&s, 850, 70, names, NULL, baseline ? 2 : 1);
    int rc = slm_svg_save(&s, path, e);
    slm_svg_free(&s);
    return rc;
}

/* --text: one typed story's hero renamed (the server's /api/swap). */
static int swap_text(const SwapArgs *a, const char *stories, Error *e) {
    ProbeSession ps;
    if (slm_probe_session_open(&ps, &a->po, "swap", stories, PROBE_NAMES, e)) return -1;
    LoadedModel base = {0};
    Report r;
    slm_report_init(&r, "swap");
    int rc = a->baseline ? slm_probe_session_load_other(&ps, a->baseline, &base, e) : 0;
    if (!rc) rc = slm_view_swap_text(&r, &ps, a->baseline ? &base : NULL, a->baseline, a->text, a->names, e);
    if (!rc) rc = probe_emit(&r, &a->po, e);
    slm_report_free(&r);
    if (a->baseline) slm_loaded_model_free(&base);
    slm_probe_session_close(&ps);
    return rc;
}

static int swap(const SwapArgs *a, const char *stories, Error *e) {
    ProbeSession ps;
    if (slm_probe_session_open(&ps, &a->po, "swap", stories, PROBE_NAMES, e)) return -1;
    LoadedModel base = {0};
    SwapName names[64];
    SwapRow rows[65];
    Report r;
    slm_report_init(&r, "swap");
    int rc = a->baseline ? slm_probe_session_check_outputs(&a->po, ps.model_path, stories, a->baseline, e)
                         : 0; /* the baseline is an input too */
    if (!rc && a->baseline) rc = slm_probe_session_load_other(&ps, a->baseline, &base, e);
    int n = rc ? -1 : slm_probe_session_swap_names(&ps, a->names, names, 64, e);
    rc = n < 0 ? -1
               : slm_probe_swap(&ps.lm.model, a->baseline ? &base.model : NULL, &ps.lm.tokenizer, &ps.names,
                                &ps.stories, ps.stories.test, ps.stories.n_test, names, n, &ps.ablation, rows, e);
    if (!rc) build_report(&r, &ps, a->baseline, rows, n + 1);
    if (!rc && a->po.svg) rc = draw(a->po.svg, rows, n + 1, a->baseline != NULL, e);
    if (!rc) rc = probe_emit(&r, &a->po, e);
    slm_report_free(&r);
    if (a->baseline) slm_loaded_model_free(&base);
    slm_probe_session_close(&ps);
    return rc;
}

static int run(int argc, char **argv) {
    SwapArgs a = {.po = PROBE_OPTIONS_DEFAULT};
    const char *pos[1];
    Option opts[] = {
        PROBE_COMMON_OPTIONS(a.po),
        PROBE_SVG_OPTION(a.po),
        PROBE_TEST_OPTION(a.po),
        {"baseline", 0, OPT_STRING, &a.baseline, "FILE", "a window8 model to compare with", 0, 0},
        {"names", 0, OPT_STRING, &a.names, "LIST", "names to swap in, e.g. lily,fred,zarko", 0, 0},
        {"text", 0, OPT_STRING, &a.text, "TEXT", "rename the hero of this typed story to --names NAME instead", 0, 0},
    };
    int rc = probe_parse(&command_swap, argc, argv, opts, N_OPTIONS(opts), &a.po, pos, 1);
    if (rc >= 0) return rc;
    Error e = {0};
    if (a.text && (!a.names || strchr(a.names, ',')))
        return args_usage_error(&command_swap, "--text needs one name: --names NAME");
    return (a.text ? swap_text(&a, pos[0], &e) : swap(&a, pos[0], &e)) ? cli_fail(&e) : 0;
}
