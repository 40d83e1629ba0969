/* A table's columns as line charts (plot.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "storylm/fileio.h"
#include "storylm/plot.h"
#include "storylm/svg.h"

void slm_plot_table_free(PlotTable *t) {
    for (int c = 0; c < t->n_cols; c++) {
        free(t->names[c]);
        free(t->cols[c]);
    }
}

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

static int add_row(PlotTable *t, char **fields, int n, Error *e) {
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

int slm_plot_table_read(PlotTable *t, const char *path, Error *e) {
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
    return rc;
}

/* The range of column c's finite values into lo, hi. */
static void column_range(const PlotTable *t, int c, double *lo, double *hi) {
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
static void curve_styles(const PlotTable *t, const char **colors, const char **dashes) {
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
static void draw_curve(Svg *s, const SvgPanel *p, const PlotTable *t, int c, const char *color, const char *dash,
                       double *xs, double *ys) {
    int n = 0;
    for (int r = 0; r < t->n_rows; r++) {
        if (!isfinite(t->cols[0][r]) || !isfinite(t->cols[c][r])) continue;
        xs[n] = t->cols[0][r];
        ys[n++] = fmin(t->cols[c][r], p->y1); /* --y-max clips the early, high losses */
    }
    slm_svg_polyline_dashed(s, p, xs, ys, n, color, 1.8, dash);
}

int slm_plot_draw(const PlotTable *t, const char *out, const char *title, const char *y_label, double y_max, Error *e) {
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
