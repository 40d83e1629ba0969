/* A small writer of self-contained SVG pictures (no scripts, no external
 * fonts or files, so any browser shows them): shapes and text with proper
 * XML escaping, and a few charts built from them (panels with axes, line
 * charts, grouped bars, heat maps) for small multiples.
 *
 *   Svg s; slm_svg_begin(&s, 800, 400, "Distance scores");
 *   SvgPanel p = {.x = 60, .y = 30, .w = 700, .h = 300, .x0 = 0, .x1 = 255, .y0 = -2, .y1 = 3};
 *   slm_svg_axes(&s, &p, "head 0", "distance back", "score");
 *   slm_svg_polyline(&s, &p, xs, ys, 256, slm_svg_palette(0), 1.5);
 *   if (slm_svg_save(&s, "d.svg", e)) ...;  slm_svg_free(&s);
 *
 * Like the report module, building remembers an allocation failure and
 * slm_svg_save reports it. Coordinates are pixels from the top left. */
#ifndef STORYLM_SVG_H
#define STORYLM_SVG_H

#include "storylm/error.h"
#include "storylm/vec.h"

typedef struct Svg {
    ByteVec buf;
    double width, height;
    int failed;
} Svg;

typedef enum { SVG_START, SVG_MIDDLE, SVG_END } SvgAnchor;

/* Starts a picture of width x height pixels on a white background; title
 * becomes its <title> (what a browser tab shows). */
void slm_svg_begin(Svg *s, double width, double height, const char *title);
void slm_svg_free(Svg *s);
/* Closes the picture and writes it to path atomically. */
int slm_svg_save(Svg *s, const char *path, Error *e);
/* Closes the picture and returns its text (owned by s), or NULL when out of memory. */
const char *slm_svg_finish(Svg *s);

/* Appends text escaped for XML (& < > " ' and control characters). */
void slm_svg_escaped(Svg *s, const char *text);

/* fill/stroke: any SVG colour ("#1f77b4", "none"); tip: a tooltip shown on
 * hover, or NULL. */
void slm_svg_rect(Svg *s, double x, double y, double w, double h, const char *fill, const char *stroke,
                  const char *tip);
void slm_svg_line(Svg *s, double x1, double y1, double x2, double y2, const char *stroke, double width);
/* rotate: degrees clockwise around (x, y). */
void slm_svg_text(Svg *s, double x, double y, const char *text, double size, SvgAnchor anchor, double rotate,
                  const char *fill);
void slm_svg_group_begin(Svg *s, double dx, double dy);
void slm_svg_group_end(Svg *s);

/* The i-th colour of a palette of 8 distinct colours (one per head), cycling. */
const char *slm_svg_palette(int i);

/* A plotting area at (x, y), w x h pixels, showing x0..x1 by y0..y1. */
typedef struct SvgPanel {
    double x, y, w, h;
    double x0, x1, y0, y1;
} SvgPanel;

double slm_svg_px(const SvgPanel *p, double v); /* data x -> pixels */
double slm_svg_py(const SvgPanel *p, double v); /* data y -> pixels (up is larger) */
/* A frame, about 5 ticks on y with labels, a line at y = 0 when inside, the
 * title above and the axis labels (either may be NULL). x ticks: about 5
 * when x_ticks, none otherwise (bar charts label their own categories). */
void slm_svg_axes(Svg *s, const SvgPanel *p, const char *title, const char *x_label, const char *y_label, int x_ticks);
/* Lines between consecutive points (x, y) of n, in panel coordinates. */
void slm_svg_polyline(Svg *s, const SvgPanel *p, const double *x, const double *y, int n, const char *stroke,
                      double width);
/* The same with a dash pattern (an SVG stroke-dasharray, e.g. "6 4"; NULL: solid). */
void slm_svg_polyline_dashed(Svg *s, const SvgPanel *p, const double *x, const double *y, int n, const char *stroke,
                             double width, const char *dash);
/* The top of an axis that fits data up to v > 0: v rounded up to the next of
 * about 5 ticks from 0 (steps of 1, 2 or 5 times a power of 10), e.g.
 * 0.0173 -> 0.018, 0.083 -> 0.1; 1 when v is not > 0. */
double slm_svg_round_up(double v);
/* Grouped bars: n_groups categories along x (labels under them, rotated
 * when rotate_labels), n_series bars in each, values[series * n_groups + g];
 * series coloured by slm_svg_palette unless colors is given. Non-finite values
 * are left out. The panel's x range is ignored (categories fill it). */
void slm_svg_bars(Svg *s, const SvgPanel *p, const double *values, int n_series, int n_groups,
                  const char *const *group_labels, const char *const *colors, int rotate_labels);
/* Value labels for the bars of slm_svg_bars (same arguments) drawn shorter than
 * min_px pixels, which the eye cannot read off the axis: each printed upright
 * just past the bar's end. */
void slm_svg_bar_values(Svg *s, const SvgPanel *p, const double *values, int n_series, int n_groups, double min_px);
/* A legend: n coloured squares with names, in a column from (x, y), 16
 * pixels a row. Legends are SVG groups of class "legend". */
void slm_svg_legend(Svg *s, double x, double y, const char *const *names, const char *const *colors, int n);
/* The same with line samples, dashed by dashes[i] (or all solid when NULL). */
void slm_svg_line_legend(Svg *s, double x, double y, const char *const *names, const char *const *colors,
                         const char *const *dashes, int n);
/* About how wide a legend of these names is, in pixels (line: slm_svg_line_legend's). */
double slm_svg_legend_width(const char *const *names, int n, int line);
/* A colour scale for slm_svg_heatmap's colours: a bar h pixels high from (x, y),
 * 0 at the bottom to vmax at the top, with values beside it (about 40 pixels
 * wide in all) and label above it (or NULL). */
void slm_svg_color_scale(Svg *s, double x, double y, double h, double vmax, const char *label);
/* About how wide text is at this font size, in pixels (0.6 em a character:
 * Helvetica's letters average about 0.5 em, so this errs on the wide side). */
double slm_svg_text_width(const char *text, double size);
/* A heat map of values (rows, cols) in [0, vmax], one square of cell pixels
 * each from (x, y); NAN cells are left blank. Labels (or NULL) go left of
 * the rows and above the columns (rotated); each square's tooltip names
 * its row, column and value. Values below 0.5% of vmax (white to the eye)
 * draw no square. */
void slm_svg_heatmap(Svg *s, double x, double y, double cell, const double *values, int rows, int cols, double vmax,
                     const char *const *row_labels, const char *const *col_labels, double label_size);

#endif
