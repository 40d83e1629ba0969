/* storylm plot: draws the columns of a tab-separated table as line charts
 * (SVG), e.g. the train and test loss curves kept from training logs. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "args.h"
#include "common.h"
#include "storylm/fileio.h"
#include "storylm/outputs.h"
#include "storylm/svg.h"
#include "storylm/text.h"

#define PLOT_MAX_SERIES 16

static int run(int argc, char **argv);
const Command command_plot = {
    "plot", "draw a table's columns as line charts (SVG)", "storylm plot TABLE.tsv -o FILE.svg [options]",
    "Reads a tab-separated table with a header line: the first column is x (e.g. the\n"
    "step), every other column a curve (e.g. train and test loss). Empty cells, '-' and\n"
    "'nan' are gaps (so are values beyond +-1e100, and text, with a warning): each curve joins the points it has. "
    "Draws the curves on one panel\n"
    "with a legend, using storylm's own SVG writer. Columns named alike but for a last word\n"
    "'train' or 'test' (e.g. 'attention train', 'attention test') are one model's: they share\n"
    "a colour, the test curve dashed.",
    run};

/* The table, column-major: x[row], y[series][row] (NAN where missing). */
typedef struct Table {
    char *names[PLOT_MAX_SERIES + 1];
    double *cols[PLOT_MAX_SERIES + 1];
    int n_cols, n_rows, cap;
    int n_huge;                         /* values left out for being beyond PLOT_MAX_ABS */
    int n_text;                         /* cells that are not numbers, left out */
    int first_text_row, first_text_col; /* where the first of them is (1-based line, column) */
} Table;

static void table_free(Table *t) {
    for (int c = 0; c < t->n_cols; c++) {
        free(t->names[c]);
        free(t->cols[c]);
    }
}

/* Values past this are left out (gaps): the axes' span of two of them, and
 * the pixel arithmetic, would overflow and write -nan into the SVG. */
#define PLOT_MAX_ABS 1e100

static double parse_cell(const char *s, int *huge, int *text) {
    if (!*s || !strcmp(s, "-") || !strcasecmp(s, "nan")) return NAN;
    char *end;
    double v = strtod(s, &end);
    if (*end || end == s) {
        *text += 1;
        return NAN;
    }
    if (!(fabs(v) <= PLOT_MAX_ABS)) {
        *huge += !isnan(v);
        return NAN;
    }
    return v;
}

/* Splits line (modified in place) at tabs into at most max fields. */
static int split_tabs(char *line, char **fields, int max) {
    int n = 0;
    for (char *p = line; n < max; p++) {
        fields[n++] = p;
        p = strchr(p, '\t');
        if (!p) break;
        *p = '\0';
    }
    return n;
}

static int add_row(Table *t, char **fields, int n, Error *e) {
    if (t->n_rows == t->cap) {
        t->cap = t->cap ? 2 * t->cap : 256;
        for (int c = 0; c < t->n_cols; c++) {
            double *grown = xrealloc(t->cols[c], (size_t)t->cap * sizeof(double), e);
            if (!grown) return -1;
            t->cols[c] = grown;
        }
    }
    for (int c = 0; c < t->n_cols; c++) {
        int text = 0;
        t->cols[c][t->n_rows] = c < n ? parse_cell(fields[c], &t->n_huge, &text) : NAN;
        if (text && !t->n_text++) t->first_text_row = t->n_rows + 2, t->first_text_col = c + 1;
    }
    t->n_rows++;
    return 0;
}

static int read_table(Table *t, const char *path, Error *e) {
    char *text;
    size_t len;
    if (slm_file_read_all(path, 64u << 20, &text, &len, e)) return -1;
    char *fields[PLOT_MAX_SERIES + 1];
    int rc = 0;
    char *save = NULL;
    for (char *line = strtok_r(text, "\r\n", &save); line && !rc; line = strtok_r(NULL, "\r\n", &save)) {
        int n = split_tabs(line, fields, PLOT_MAX_SERIES + 1);
        if (t->n_cols == 0) {
            if (n < 2)
                rc = FAIL(e, "give a header line: x, then one name per curve, separated by tabs",
                          "'%s' has fewer than 2 columns", path);
            for (int c = 0; c < n && !rc; c++) {
                t->names[c] = xmalloc(strlen(fields[c]) + 1, e);
                if (!t->names[c])
                    rc = -1;
                else
                    strcpy(t->names[c], fields[c]);
                t->n_cols = c + 1;
            }
        } else if (line[0] != '#') {
            rc = add_row(t, fields, n, e);
        }
    }
    free(text);
    if (!rc && t->n_rows == 0) rc = FAIL(e, "the table needs rows under its header", "'%s' has no rows", path);
    if (!rc && t->n_text)
        fprintf(stderr,
                "storylm plot: warning: %d cells of '%s' are not numbers (the first at row %d, column %d), left out, "
                "as gaps\n",
                t->n_text, path, t->first_text_row, t->first_text_col);
    if (!rc && t->n_huge)
        fprintf(stderr, "storylm plot: %d values of '%s' beyond +-%g (or infinite) left out, as gaps\n", t->n_huge,
                path, PLOT_MAX_ABS);
    return rc;
}

/* The range of column c's finite values into lo, hi. */
static void column_range(const Table *t, int c, double *lo, double *hi) {
    for (int r = 0; r < t->n_rows; r++) {
        double v = t->cols[c][r];
        if (!isfinite(v)) continue;
        if (v < *lo) *lo = v;
        if (v > *hi) *hi = v;
    }
}

/* Column names that end in "train" or "test" after a space, '_' or '-' name
 * one model's two curves: whether it is the train (0) or test (1) curve, or
 * neither (-1), and the length of the model's part of the name. */
static int split_name(const char *name, size_t *key_len) {
    static const char *const ends[2] = {"train", "test"};
    size_t n = strlen(name);
    for (int k = 0; k < 2; k++) {
        size_t m = strlen(ends[k]);
        if (n >= m && strcasecmp(name + n - m, ends[k]) == 0 && (n == m || strchr(" _-", name[n - m - 1]))) {
            *key_len = n > m ? n - m - 1 : 0;
            return k;
        }
    }
    *key_len = n;
    return -1;
}

/* Each curve's colour and dash: a model's train and test curves share a
 * colour, the test one dashed; every other curve a colour of its own. */
static void curve_styles(const Table *t, const char **colors, const char **dashes) {
    int color_of[PLOT_MAX_SERIES], n_colors = 0;
    for (int c = 1; c < t->n_cols; c++) {
        size_t len, other_len;
        int kind = split_name(t->names[c], &len);
        color_of[c - 1] = -1;
        for (int d = 1; d < c && kind >= 0 && color_of[c - 1] < 0; d++)
            if (split_name(t->names[d], &other_len) == 1 - kind && other_len == len &&
                strncmp(t->names[d], t->names[c], len) == 0)
                color_of[c - 1] = color_of[d - 1];
        if (color_of[c - 1] < 0) color_of[c - 1] = n_colors++;
        colors[c - 1] = slm_svg_palette(color_of[c - 1]);
        dashes[c - 1] = kind == 1 ? "6 4" : NULL;
    }
}

/* Curve c: the finite points (x, y) of column c joined in order. */
static void draw_curve(Svg *s, const SvgPanel *p, const Table *t, int c, const char *color, const char *dash,
                       double *xs, double *ys) {
    int n = 0;
    for (int r = 0; r < t->n_rows; r++) {
        if (!isfinite(t->cols[0][r]) || !isfinite(t->cols[c][r])) continue;
        xs[n] = t->cols[0][r];
        ys[n++] = fmin(t->cols[c][r], p->y1); /* --y-max clips the early, high losses */
    }
    slm_svg_polyline_dashed(s, p, xs, ys, n, color, 1.8, dash);
}

static int draw(const Table *t, const char *out, const char *title, const char *y_label, double y_max, Error *e) {
    double x0 = INFINITY, x1 = -INFINITY, y0 = INFINITY, y1 = -INFINITY;
    column_range(t, 0, &x0, &x1);
    for (int c = 1; c < t->n_cols; c++) column_range(t, c, &y0, &y1);
    if (!isfinite(x0) || !isfinite(y0))
        return FAIL(e, "give rows with a number in the first column (x) and in at least one other",
                    "nothing to draw into '%s': the table has no number in %s", out,
                    !isfinite(x0) ? "its first column" : "its curves");
    if (y_max > 0 && y1 > y_max) y1 = y_max;
    if (!(x1 > x0)) x1 = x0 + 1;
    if (!(y1 > y0)) y1 = y0 + 1;
    double *xs = xmalloc(2 * (size_t)t->n_rows * sizeof(double), e);
    if (!xs) return -1;
    const char *colors[PLOT_MAX_SERIES], *dashes[PLOT_MAX_SERIES];
    const char *const *names = (const char *const *)t->names + 1;
    curve_styles(t, colors, dashes);
    Svg s;
    slm_svg_begin(&s, fmax(900, 750 + slm_svg_legend_width(names, t->n_cols - 1, 1)), 460, title);
    SvgPanel p = {.x = 70, .y = 40, .w = 640, .h = 360, .x0 = x0, .x1 = x1, .y0 = y0, .y1 = y1};
    slm_svg_axes(&s, &p, title, t->names[0], y_label, 1);
    slm_svg_group_begin(&s, 0, 0);
    for (int c = 1; c < t->n_cols; c++) draw_curve(&s, &p, t, c, colors[c - 1], dashes[c - 1], xs, xs + t->n_rows);
    slm_svg_group_end(&s);
    slm_svg_line_legend(&s, 730, 50, names, colors, dashes, t->n_cols - 1);
    int rc = slm_svg_save(&s, out, e);
    slm_svg_free(&s);
    free(xs);
    return rc;
}

static int run(int argc, char **argv) {
    const char *out = NULL, *title = "storylm plot", *y_label = NULL;
    double y_max = 0;
    bool force = false;
    Option opts[] = {
        {"out", 'o', OPT_STRING, &out, "FILE",
         "the SVG file to write (required); a model, stories or other file already there is kept", 0, 0},
        FORCE_OPTION(force),
        {"title", 0, OPT_STRING, &title, "TEXT", "the chart's title", 0, 0},
        {"y-label", 0, OPT_STRING, &y_label, "TEXT", "the y axis's label", 0, 0},
        {"y-max", 0, OPT_DOUBLE, &y_max, "Y", "clip the y axis at Y (0: the largest value)", 0, 1e9},
    };
    const char *pos[1];
    int np;
    int rc = args_parse(&command_plot, argc, argv, opts, N_OPTIONS(opts), pos, 1, 1, &np);
    if (rc) return rc > 0 ? 0 : 2;
    if (!out) return args_usage_error(&command_plot, "give the SVG file to write with -o FILE");
    Error e = {0};
    Table t = {0};
    OutputPlan p;
    slm_outputs_init(&p, force);
    slm_outputs_read(&p, pos[0]);
    slm_outputs_write(&p, out, FILE_SVG);
    rc = slm_outputs_check(&p, &e) || slm_text_check(title, strlen(title), "--title", &e) ||
         (y_label && slm_text_check(y_label, strlen(y_label), "--y-label", &e));
    if (!rc) rc = read_table(&t, pos[0], &e);
    if (!rc) rc = draw(&t, out, title, y_label, y_max, &e);
    table_free(&t);
    return rc ? cli_fail(&e) : 0;
}
