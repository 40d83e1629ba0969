/* Plot: the columns of a tab-separated table (a header line, then rows; the
 * first column x, e.g. the step, every other a curve, e.g. train and test
 * loss, as training logs keep them) drawn as line charts in one SVG panel
 * with a legend. Columns named alike but for a last word "train" or "test"
 * are one model's: they share a colour, the test curve dashed. Never prints. */
#ifndef STORYLM_PLOT_H
#define STORYLM_PLOT_H

#include "storylm/error.h"

#define PLOT_MAX_SERIES 16
/* Values past this are left out (gaps): the axes' span of two of them, and
 * the pixel arithmetic, would overflow and write -nan into the SVG. */
#define PLOT_MAX_ABS 1e100

/* The table, column-major: x[row], y[series][row] (NAN where missing). */
typedef struct PlotTable {
    char *names[PLOT_MAX_SERIES + 1];
    double *cols[PLOT_MAX_SERIES + 1];
    int n_cols, n_rows, cap;
    int n_huge;                         /* values left out for being beyond PLOT_MAX_ABS */
    int n_text;                         /* cells that are not numbers, left out */
    int first_text_row, first_text_col; /* where the first of them is (1-based line, column) */
} PlotTable;

/* Reads path (at most 64 MiB; empty cells, '-' and 'nan' are gaps, so are
 * text and values beyond PLOT_MAX_ABS, counted in n_text and n_huge for a
 * warning). Lines starting with '#' after the header are left out. */
int slm_plot_table_read(PlotTable *t, const char *path, Error *e);
void slm_plot_table_free(PlotTable *t);
/* Draws t into the SVG file out: title, y_label (may be NULL), the y axis
 * clipped at y_max (0: the largest value). */
int slm_plot_draw(const PlotTable *t, const char *out, const char *title, const char *y_label, double y_max, Error *e);

#endif
