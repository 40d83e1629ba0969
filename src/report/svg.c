/* A small SVG writer: see include/storylm/svg.h. */
#include "storylm/svg.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "storylm/fileio.h"

static void put(Svg *s, const char *text, size_t n) {
    if (!s->failed && slm_bytevec_append(&s->buf, text, n, NULL)) s->failed = 1;
}

static void putf(Svg *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void putf(Svg *s, const char *fmt, ...) {
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (n > 0) put(s, buf, (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1);
}

void slm_svg_escaped(Svg *s, const char *text) {
    for (const char *p = text ? text : ""; *p; p++) {
        unsigned char c = (unsigned char)*p;
        switch (c) {
            case '&': put(s, "&amp;", 5); break;
            case '<': put(s, "&lt;", 4); break;
            case '>': put(s, "&gt;", 4); break;
            case '"': put(s, "&quot;", 6); break;
            case '\'': put(s, "&apos;", 6); break;
            default:
                if (c >= 0x20 && c != 0x7f) put(s, p, 1); /* XML 1.0 allows no other control characters */
        }
    }
}

void slm_svg_begin(Svg *s, double width, double height, const char *title) {
    *s = (Svg){.width = width, .height = height};
    putf(s, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    putf(s,
         "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" "
         "font-family=\"Helvetica, Arial, sans-serif\">\n<title>",
         width, height, width, height);
    slm_svg_escaped(s, title);
    putf(s, "</title>\n<rect x=\"0\" y=\"0\" width=\"%.0f\" height=\"%.0f\" fill=\"white\"/>\n", width, height);
}

void slm_svg_free(Svg *s) {
    slm_bytevec_free(&s->buf);
    *s = (Svg){0};
}

const char *slm_svg_finish(Svg *s) {
    put(s, "</svg>\n", 7);
    return s->failed ? NULL : s->buf.data;
}

int slm_svg_save(Svg *s, const char *path, Error *e) {
    if (!slm_svg_finish(s)) return FAIL(e, "free some memory and try again", "out of memory while drawing '%s'", path);
    if (slm_file_write_atomic(path, s->buf.data, s->buf.len, e)) {
        slm_error_prefix(e, "writing the picture: ");
        return -1;
    }
    return 0;
}

static void put_tip(Svg *s, const char *tip) {
    if (!tip) return;
    put(s, "<title>", 7);
    slm_svg_escaped(s, tip);
    put(s, "</title>", 8);
}

void slm_svg_rect(Svg *s, double x, double y, double w, double h, const char *fill, const char *stroke,
                  const char *tip) {
    putf(s, "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"", x, y, w > 0 ? w : 0, h > 0 ? h : 0);
    slm_svg_escaped(s, fill ? fill : "none");
    put(s, "\" stroke=\"", 10);
    slm_svg_escaped(s, stroke ? stroke : "none");
    if (tip) {
        put(s, "\">", 2);
        put_tip(s, tip);
        put(s, "</rect>\n", 8);
    } else {
        put(s, "\"/>\n", 4);
    }
}

void slm_svg_line(Svg *s, double x1, double y1, double x2, double y2, const char *stroke, double width) {
    putf(s, "<line x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\" stroke-width=\"%.2f\" stroke=\"", x1, y1, x2, y2,
         width);
    slm_svg_escaped(s, stroke);
    put(s, "\"/>\n", 4);
}

void slm_svg_text(Svg *s, double x, double y, const char *text, double size, SvgAnchor anchor, double rotate,
                  const char *fill) {
    static const char *const anchors[] = {"start", "middle", "end"};
    putf(s, "<text x=\"%.2f\" y=\"%.2f\" font-size=\"%.1f\" text-anchor=\"%s\"", x, y, size, anchors[anchor]);
    if (rotate != 0) putf(s, " transform=\"rotate(%.1f %.2f %.2f)\"", rotate, x, y);
    put(s, " fill=\"", 7);
    slm_svg_escaped(s, fill ? fill : "black");
    put(s, "\">", 2);
    slm_svg_escaped(s, text);
    put(s, "</text>\n", 8);
}

void slm_svg_group_begin(Svg *s, double dx, double dy) { putf(s, "<g transform=\"translate(%.2f %.2f)\">\n", dx, dy); }

void slm_svg_group_end(Svg *s) { put(s, "</g>\n", 5); }

const char *slm_svg_palette(int i) {
    static const char *const colors[8] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728",
                                          "#9467bd", "#8c564b", "#e377c2", "#17becf"};
    return colors[((i % 8) + 8) % 8];
}

/* A colour for t in [0, 1] from white to dark blue, as "#rrggbb" into buf (8). */
static void slm_svg_heat(double t, char *buf) {
    if (!(t > 0)) t = 0;
    if (t > 1) t = 1;
    /* white (255, 255, 255) to dark blue (8, 48, 107) */
    int r = (int)lround(255 - t * (255 - 8)), g = (int)lround(255 - t * (255 - 48)),
        b = (int)lround(255 - t * (255 - 107));
    snprintf(buf, 8, "#%02x%02x%02x", r, g, b);
}

/* ---- charts ------------------------------------------------------------------ */

double slm_svg_px(const SvgPanel *p, double v) {
    double span = p->x1 - p->x0;
    return p->x + (span != 0 ? (v - p->x0) / span : 0.5) * p->w;
}

double slm_svg_py(const SvgPanel *p, double v) {
    double span = p->y1 - p->y0;
    return p->y + p->h - (span != 0 ? (v - p->y0) / span : 0.5) * p->h;
}

/* A round step giving about n ticks over span: 1, 2 or 5 times a power of 10. */
static double tick_step(double span, int n) {
    if (!(span > 0)) return 1;
    double raw = span / n, mag = pow(10, floor(log10(raw))), f = raw / mag;
    return (f < 1.5 ? 1 : f < 3.5 ? 2 : f < 7.5 ? 5 : 10) * mag;
}

double slm_svg_round_up(double v) {
    if (!(v > 0)) return 1;
    double step = tick_step(v, 5);
    return ceil(v / step * (1 - 1e-9)) * step;
}

/* How many ticks of step from *first (the first multiple of step at or above
 * lo) up to hi: 0 when any is not finite, at most 50. Counted, not stepped
 * to (v += step never reaches hi when step is below v's precision, or
 * infinite), so that drawing always ends. */
static int tick_count(double lo, double hi, double step, double *first) {
    *first = ceil(lo / step) * step;
    if (!isfinite(lo) || !isfinite(hi) || !isfinite(*first) || !(step > 0)) return 0;
    double n = floor((hi + step * 1e-6 - *first) / step) + 1;
    return n >= 1 && *first + step > *first ? (int)fmin(n, 50) : 0;
}

/* The ticks on y with their labels; returns how wide the widest label is. */
static double y_ticks(Svg *s, const SvgPanel *p) {
    double lo = fmin(p->y0, p->y1), hi = fmax(p->y0, p->y1), step = tick_step(hi - lo, 5), widest = 0;
    char label[32];
    double first;
    for (int i = 0, n = tick_count(lo, hi, step, &first); i < n; i++) {
        double v = first + i * step, y = slm_svg_py(p, v);
        slm_svg_line(s, p->x - 4, y, p->x, y, "#444", 1);
        snprintf(label, sizeof label, "%g", fabs(v) < step * 1e-6 ? 0.0 : v);
        slm_svg_text(s, p->x - 6, y + 3.5, label, 10, SVG_END, 0, "#444");
        widest = fmax(widest, slm_svg_text_width(label, 10));
    }
    return widest;
}

static void x_ticks(Svg *s, const SvgPanel *p) {
    double lo = fmin(p->x0, p->x1), hi = fmax(p->x0, p->x1), step = tick_step(hi - lo, 5);
    char label[32];
    double first;
    for (int i = 0, n = tick_count(lo, hi, step, &first); i < n; i++) {
        double v = first + i * step, x = slm_svg_px(p, v);
        slm_svg_line(s, x, p->y + p->h, x, p->y + p->h + 4, "#444", 1);
        snprintf(label, sizeof label, "%g", fabs(v) < step * 1e-6 ? 0.0 : v);
        slm_svg_text(s, x, p->y + p->h + 15, label, 10, SVG_MIDDLE, 0, "#444");
    }
}

/* A panel's frame: class "frame" tells a reader of the SVG (the screenshot
 * checks) where one chart ends and the next begins. */
static void frame(Svg *s, double x, double y, double w, double h) {
    putf(s,
         "<rect class=\"frame\" x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"none\" stroke=\"#888\"/>\n",
         x, y, w, h);
}

void slm_svg_axes(Svg *s, const SvgPanel *p, const char *title, const char *x_label, const char *y_label, int with_x) {
    frame(s, p->x, p->y, p->w, p->h);
    double ticks_w = y_ticks(s, p);
    if (with_x) x_ticks(s, p);
    if (p->y0 < 0 && p->y1 > 0) slm_svg_line(s, p->x, slm_svg_py(p, 0), p->x + p->w, slm_svg_py(p, 0), "#bbb", 1);
    if (title) slm_svg_text(s, p->x + p->w / 2, p->y - 8, title, 12, SVG_MIDDLE, 0, "black");
    if (x_label) slm_svg_text(s, p->x + p->w / 2, p->y + p->h + 30, x_label, 10, SVG_MIDDLE, 0, "#444");
    /* clear of the widest tick label ("0.006" needs more room than "4") */
    if (y_label)
        slm_svg_text(s, p->x - fmax(38, 6 + ticks_w + 10), p->y + p->h / 2, y_label, 10, SVG_MIDDLE, -90, "#444");
}

void slm_svg_polyline(Svg *s, const SvgPanel *p, const double *x, const double *y, int n, const char *stroke,
                      double width) {
    slm_svg_polyline_dashed(s, p, x, y, n, stroke, width, NULL);
}

void slm_svg_polyline_dashed(Svg *s, const SvgPanel *p, const double *x, const double *y, int n, const char *stroke,
                             double width, const char *dash) {
    put(s, "<polyline fill=\"none\" stroke=\"", 30);
    slm_svg_escaped(s, stroke);
    if (dash) {
        put(s, "\" stroke-dasharray=\"", 20);
        slm_svg_escaped(s, dash);
    }
    putf(s, "\" stroke-width=\"%.2f\" points=\"", width);
    for (int i = 0; i < n; i++)
        if (isfinite(x[i]) && isfinite(y[i])) putf(s, "%.2f,%.2f ", slm_svg_px(p, x[i]), slm_svg_py(p, y[i]));
    put(s, "\"/>\n", 4);
}

void slm_svg_bars(Svg *s, const SvgPanel *p, const double *values, int n_series, int n_groups,
                  const char *const *group_labels, const char *const *colors, int rotate_labels) {
    if (n_groups < 1 || n_series < 1) return;
    double group_w = p->w / n_groups, bar_w = group_w * 0.8 / n_series;
    double base = slm_svg_py(p, p->y0 <= 0 && p->y1 >= 0 ? 0 : p->y0);
    char tip[160];
    for (int g = 0; g < n_groups; g++) {
        double gx = p->x + g * group_w + group_w * 0.1;
        for (int k = 0; k < n_series; k++) {
            double v = values[(size_t)k * n_groups + g];
            if (!isfinite(v)) continue;
            double y = slm_svg_py(p, v);
            snprintf(tip, sizeof tip, "%s: %.4g", group_labels ? group_labels[g] : "", v);
            slm_svg_rect(s, gx + k * bar_w, fmin(y, base), bar_w * 0.92, fabs(base - y),
                         colors ? colors[k] : slm_svg_palette(k), "none", tip);
        }
        if (group_labels) {
            double lx = p->x + (g + 0.5) * group_w, ly = p->y + p->h + 13;
            if (rotate_labels)
                slm_svg_text(s, lx, ly - 4, group_labels[g], 10, SVG_END, -45, "#222");
            else
                slm_svg_text(s, lx, ly, group_labels[g], 10, SVG_MIDDLE, 0, "#222");
        }
    }
}

/* Opens a group of class "legend", what the screenshot checks look for. */
static void legend_begin(Svg *s) { put(s, "<g class=\"legend\">\n", 19); }

/* Squares side by side drawn without anti-aliased seams between them. */
static void crisp_begin(Svg *s) { putf(s, "<g shape-rendering=\"crispEdges\">\n"); }

void slm_svg_legend(Svg *s, double x, double y, const char *const *names, const char *const *colors, int n) {
    legend_begin(s);
    for (int i = 0; i < n; i++) {
        slm_svg_rect(s, x, y + i * 16, 10, 10, colors ? colors[i] : slm_svg_palette(i), "none", NULL);
        slm_svg_text(s, x + 15, y + i * 16 + 9, names[i], 11, SVG_START, 0, "#222");
    }
    slm_svg_group_end(s);
}

void slm_svg_line_legend(Svg *s, double x, double y, const char *const *names, const char *const *colors,
                         const char *const *dashes, int n) {
    legend_begin(s);
    for (int i = 0; i < n; i++) {
        double ly = y + i * 16 + 5;
        putf(s, "<line x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\" stroke-width=\"2\" stroke=\"", x, ly, x + 22,
             ly);
        slm_svg_escaped(s, colors ? colors[i] : slm_svg_palette(i));
        if (dashes && dashes[i]) {
            put(s, "\" stroke-dasharray=\"", 20);
            slm_svg_escaped(s, dashes[i]);
        }
        put(s, "\"/>\n", 4);
        slm_svg_text(s, x + 28, y + i * 16 + 9, names[i], 11, SVG_START, 0, "#222");
    }
    slm_svg_group_end(s);
}

double slm_svg_legend_width(const char *const *names, int n, int line) {
    double w = 0;
    for (int i = 0; i < n; i++) w = fmax(w, slm_svg_text_width(names[i], 11));
    return w + (line ? 28 : 15);
}

void slm_svg_color_scale(Svg *s, double x, double y, double h, double vmax, const char *label) {
    enum { STEPS = 50 };
    char color[8], value[32];
    legend_begin(s);
    if (label) slm_svg_text(s, x, y - 8, label, 11, SVG_START, 0, "#222");
    crisp_begin(s);
    for (int i = 0; i < STEPS; i++) { /* from vmax at the top down to 0 */
        slm_svg_heat(1 - (i + 0.5) / STEPS, color);
        slm_svg_rect(s, x, y + i * h / STEPS, 14, h / STEPS, color, "none", NULL);
    }
    slm_svg_group_end(s);
    frame(s, x, y, 14, h);
    double step = tick_step(vmax, 4);
    double first;
    for (int i = 0, n = tick_count(0, vmax * (1 + 1e-9), step, &first); i < n; i++) {
        double v = first + i * step, ty = y + h - (vmax > 0 ? v / vmax : 0) * h;
        slm_svg_line(s, x + 14, ty, x + 18, ty, "#444", 1);
        snprintf(value, sizeof value, "%g", v);
        slm_svg_text(s, x + 21, ty + 3.5, value, 10, SVG_START, 0, "#444");
    }
    slm_svg_group_end(s);
}

double slm_svg_text_width(const char *text, double size) {
    int chars = 0;
    for (const unsigned char *p = (const unsigned char *)(text ? text : ""); *p; p++)
        if ((*p & 0xc0) != 0x80) chars++; /* a character, not a continuation byte of UTF-8 */
    return chars * size * 0.6;
}

void slm_svg_bar_values(Svg *s, const SvgPanel *p, const double *values, int n_series, int n_groups, double min_px) {
    if (n_groups < 1 || n_series < 1) return;
    double group_w = p->w / n_groups, bar_w = group_w * 0.8 / n_series;
    double base = slm_svg_py(p, p->y0 <= 0 && p->y1 >= 0 ? 0 : p->y0);
    char label[32];
    for (int g = 0; g < n_groups; g++)
        for (int k = 0; k < n_series; k++) {
            double v = values[(size_t)k * n_groups + g], y = slm_svg_py(p, v);
            if (!isfinite(v) || fabs(base - y) >= min_px) continue;
            snprintf(label, sizeof label, "%.2g", v);
            /* upright along the bar, starting just past its end: narrow bars keep their labels apart */
            double cx = p->x + g * group_w + group_w * 0.1 + (k + 0.46) * bar_w;
            int up = v >= 0;
            slm_svg_text(s, cx + 3.5, up ? fmin(y, base) - 3 : fmax(y, base) + 3, label, 10, up ? SVG_START : SVG_END,
                         -90, "#222");
        }
}

void slm_svg_heatmap(Svg *s, double x, double y, double cell, const double *values, int rows, int cols, double vmax,
                     const char *const *row_labels, const char *const *col_labels, double label_size) {
    char color[8], tip[256];
    crisp_begin(s);
    for (int r = 0; r < rows; r++) {
        if (row_labels)
            slm_svg_text(s, x - 3, y + (r + 0.5) * cell + label_size * 0.35, row_labels[r], label_size, SVG_END, 0,
                         "#222");
        for (int c = 0; c < cols; c++) {
            double v = values[(size_t)r * cols + c];
            /* below 0.5% of vmax a square is white to the eye: not drawn, a long
             * story's maps would otherwise be hundreds of thousands of them */
            if (!isfinite(v) || !(v >= vmax * 0.005)) continue;
            slm_svg_heat(vmax > 0 ? v / vmax : 0, color);
            snprintf(tip, sizeof tip, "%s, %s: %.4f", row_labels ? row_labels[r] : "", col_labels ? col_labels[c] : "",
                     v);
            slm_svg_rect(s, x + c * cell, y + r * cell, cell, cell, color, "none", tip);
        }
    }
    slm_svg_group_end(s);
    for (int c = 0; col_labels && c < cols; c++)
        slm_svg_text(s, x + (c + 0.5) * cell + label_size * 0.35, y - 3, col_labels[c], label_size, SVG_START, -90,
                     "#222");
    frame(s, x, y, cols * cell, rows * cell);
}
