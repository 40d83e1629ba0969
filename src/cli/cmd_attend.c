/* storylm attend TEXT: Tool 1, a lookup by content. For one position of the
 * text and one head (or all), every token it reads: q.k/sqrt(8), the
 * distance score, their sum, the weight after softmax and the cosine of the
 * two tokens' rows; --svg draws the attention maps. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "probe_common.h"
#include "storylm/svg.h"

static int run(int argc, char **argv);
const Command command_attend = {
    "attend", "how one position reads every earlier token (Tool 1)", "storylm attend TEXT [options]",
    "Runs the text (after [EOS], as every story starts) through the network and shows, for\n"
    "position --pos (0 is [EOS]; negative counts from the end; default: the last token) and\n"
    "head --head (default: all 8), every token it can read: dot = q.k/sqrt(8), the head's\n"
    "learned distance score, score = their sum, weight = softmax of the scores (they add up\n"
    "to 1), and the cosine of the two tokens' rows of the embedding, only to compare.\n"
    "--wide shows all heads by position: one row a token read, each head's weight in a\n"
    "column of its own (weight_0 .. weight_7 in --json), without dot, distance score and score.\n"
    "--svg FILE draws the attention maps: every position's weights, one map per head.\n"
    "Switching heads off (--ablate) changes what the hidden layer reads, not the weights.",
    run};

typedef struct AttendArgs {
    ProbeOptions po;
    int pos, head, layer;
    bool wide;
} AttendArgs;

/* How one picture of attention maps is laid out: every size in pixels. */
typedef struct MapLayout {
    double cell, font;       /* a square of the map; its labels (never below 10) */
    double label_w;          /* the widest "12 mia" label */
    double map_w;            /* the map, or its axis titles when they are longer */
    double block_w, block_h; /* one head's map with its labels and titles */
    int per_row;
} MapLayout;

#define KEY_TITLE "key: the token read (attends to)"
#define QUERY_TITLE "query: the position reading"

/* Squares shrink from 18 pixels as the text grows, but never below 12: the
 * tokens' labels stay 10 pixels high and a long story makes a bigger
 * picture (fewer maps a row), not an unreadable one. */
static MapLayout map_layout(const char *const *labels, int T, int n) {
    MapLayout l = {.cell = fmax(12, fmin(18, 360.0 / T))};
    l.font = fmin(11, l.cell - 2);
    for (int i = 0; i < T; i++) l.label_w = fmax(l.label_w, slm_svg_text_width(labels[i], l.font));
    l.map_w = fmax(T * l.cell, fmax(slm_svg_text_width(KEY_TITLE, 11), slm_svg_text_width(QUERY_TITLE, 11)));
    l.block_w = 30 + l.label_w + 6 + l.map_w + 30;
    l.block_h = 24 + 22 + l.label_w + 6 + l.map_w + 30;
    l.per_row = (int)fmax(1, fmin(fmin(n, 4), floor(2400 / l.block_w)));
    return l;
}

/* One head's map with its block's top left at (x, y): T x T squares, each
 * row a position reading (the query), each column a token it reads (the
 * key); the tokens as labels, the read position outlined. */
static void draw_map(Svg *s, const ProbeRunner *r, const char *const *labels, const MapLayout *l, int h, int p,
                     double x, double y, double *map) {
    int T = r->acts.n_positions;
    double size = T * l->cell, mx = x + 30 + l->label_w + 6, my = y + 24 + 22 + l->label_w + 6;
    char title[32];
    snprintf(title, sizeof title, "head %d", h);
    slm_svg_text(s, mx + l->map_w / 2, y + 14, title, 13, SVG_MIDDLE, 0, "black");
    slm_svg_text(s, mx + l->map_w / 2, y + 24 + 12, KEY_TITLE, 11, SVG_MIDDLE, 0, "#444");
    slm_svg_text(s, x + 12, my + l->map_w / 2, QUERY_TITLE, 11, SVG_MIDDLE, -90, "#444");
    slm_probe_attention_map(r, h, map);
    slm_svg_heatmap(s, mx, my, l->cell, map, T, T, 1.0, labels, labels, l->font);
    slm_svg_rect(s, mx, my + p * l->cell, size, l->cell, "none", "#d62728", NULL);
}

/* The labels "0 [EOS]", "1 once", ...: position and token, into one block. */
static char **position_labels(const ProbeSession *ps, const IntVec *ids) {
    int T = (int)ids->len;
    size_t bytes = (size_t)T * sizeof(char *);
    for (int i = 0; i < T; i++) bytes += strlen(slm_probe_token(ps, ids->data[i])) + 12;
    char **labels = malloc(bytes), *text = (char *)(labels + T);
    if (!labels) return NULL;
    for (int i = 0; i < T; i++) {
        labels[i] = text;
        text += sprintf(text, "%d %s", i, slm_probe_token(ps, ids->data[i])) + 1;
    }
    return labels;
}

static int draw(const char *path, const ProbeSession *ps, const ProbeRunner *r, const IntVec *ids, int p, int head,
                Error *e) {
    int T = (int)ids->len, H = ps->lm.model.cfg.n_heads, n = head < 0 ? H : 1;
    char **labels = position_labels(ps, ids);
    double *map = malloc((size_t)T * T * sizeof(double));
    if (!labels || !map) {
        free(labels);
        free(map);
        return FAIL(e, NULL, "out of memory drawing the attention maps");
    }
    const char *header = "Attention weights, one map a head (outlined in red: --pos)";
    MapLayout l = map_layout((const char *const *)labels, T, n);
    int rows = (n + l.per_row - 1) / l.per_row;
    double maps_w = 20 + l.per_row * l.block_w, scale_x = maps_w + 10, top = 40;
    Svg s;
    /* as wide as what is drawn: one head's map is not set on a page sized for eight */
    slm_svg_begin(&s, fmax(scale_x + 70, slm_svg_text_width(header, 13) + 40), top + rows * l.block_h + 10,
                  "storylm attend: attention maps");
    slm_svg_text(&s, 20, 22, header, 13, SVG_START, 0, "black");
    for (int k = 0; k < n; k++)
        draw_map(&s, r, (const char *const *)labels, &l, head < 0 ? k : head, p, 20 + (k % l.per_row) * l.block_w,
                 top + (k / l.per_row) * l.block_h, map);
    slm_svg_color_scale(&s, scale_x, top + 24 + 22 + l.label_w + 6 + 14, fmin(200, fmax(80, T * l.cell)), 1.0,
                        "weight");
    int rc = slm_svg_save(&s, path, e);
    slm_svg_free(&s);
    free(labels);
    free(map);
    return rc;
}

static int attend(const AttendArgs *a, const char *text, Error *e) {
    ProbeSession ps;
    if (slm_probe_session_open(&ps, &a->po, "attend", NULL, PROBE_ATTENTION_ONLY | PROBE_LAYERS | PROBE_TRANSFORMER, e))
        return -1;
    ViewText vt = {0};
    Report rep;
    slm_report_init(&rep, "attend");
    int rc = slm_view_check_head(&ps, a->head, e) || slm_view_text_run(&vt, &ps, text, a->pos, VIEW_RUN_HEADS, e) ||
             slm_probe_runner_layer(&vt.runner, a->layer, e);
    if (!rc && a->wide)
        slm_view_attend_wide(&rep, &ps, &vt);
    else if (!rc)
        slm_view_attend(&rep, &ps, &vt, a->head);
    if (!rc && a->po.svg) rc = draw(a->po.svg, &ps, &vt.runner, &vt.ids, vt.pos, a->head, e);
    if (!rc) rc = probe_emit(&rep, &a->po, e);
    slm_report_free(&rep);
    slm_view_text_free(&vt);
    slm_probe_session_close(&ps);
    return rc ? -1 : 0;
}

static int run(int argc, char **argv) {
    AttendArgs a = {.po = PROBE_OPTIONS_DEFAULT, .pos = -1, .head = -1, .layer = 1};
    const char *pos[1];
    Option opts[] = {
        PROBE_COMMON_OPTIONS(a.po),
        PROBE_SVG_OPTION(a.po),
        PROBE_MEAN_STORIES_OPTION(a.po),
        {"pos", 0, OPT_INT, &a.pos, "N", "the position reading; negative: from the end", -1000000, 1000000},
        {"head", 0, OPT_INT, &a.head, "H", "one head (0 to 7); -1: all", -1, 7}, /* the network has 8 heads */
        {"layer", 0, OPT_INT, &a.layer, "L", "the layer (or transformer block) whose heads to show", 1,
         STORYLM_MAX_TF_LAYERS},
        {"wide", 0, OPT_BOOL, &a.wide, NULL, "all heads by position: each head's weight in a column", 0, 0},
    };
    int rc = probe_parse(&command_attend, argc, argv, opts, N_OPTIONS(opts), &a.po, pos, 1);
    if (rc >= 0) return rc;
    Error e = {0};
    if (a.wide && a.head >= 0) {
        FAIL(&e, "leave out --head: --wide shows every head's weight side by side",
             "--wide and --head %d do not go together", a.head);
        return cli_fail(&e);
    }
    return attend(&a, pos[0], &e) ? cli_fail(&e) : 0;
}
