/* The view attend: Tool 1, a lookup by content. For one position of the
 * text and one head (or all), every token it reads: q.k/sqrt(8), the
 * distance score, their sum, the weight after softmax and the cosine of the
 * two tokens' rows; --svg draws the attention maps. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "storylm/registry.h"
#include "storylm/views.h"
#include "storylm/svg.h"

typedef struct AttendParams {
    ProbeOptions po;
    const char *text, *head;
    int pos, layer;
    bool wide;
} AttendParams;

typedef struct AttendState {
    ViewText vt;
    int ran;
    int head; /* of the layer shown, -1: all */
} AttendState;

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
    for (int i = 0; i < T; i++) bytes += strlen(slm_probe_session_token(ps, ids->data[i])) + 12;
    char **labels = malloc(bytes), *text = (char *)(labels + T);
    if (!labels) return NULL;
    for (int i = 0; i < T; i++) {
        labels[i] = text;
        text += sprintf(text, "%d %s", i, slm_probe_session_token(ps, ids->data[i])) + 1;
    }
    return labels;
}

static int draw_maps(const char *path, const ProbeSession *ps, const ProbeRunner *r, const IntVec *ids, int p, int head,
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

static int draw(ViewCall *c, const char *path, Error *e) {
    const AttendState *st = c->state;
    return draw_maps(path, c->ps, &st->vt.runner, &st->vt.ids, st->vt.pos, st->head, e);
}

static int check(void *params, Error *e) {
    const AttendParams *p = params;
    int layer, head;
    if (slm_view_head(NULL, p->head, p->layer, 1, &layer, &head, e)) return -1;
    if (p->wide && head >= 0)
        return FAIL(e, "leave out --head: --wide shows every head's weight side by side",
                    "--wide and --head %s do not go together", p->head);
    return 0;
}

static int build(ViewCall *c, Error *e) {
    const AttendParams *p = c->params;
    AttendState *st = c->state;
    int layer;
    if (slm_view_head(&c->ps->lm.model.cfg, p->head, p->layer, 1, &layer, &st->head, e)) return -1;
    st->ran = 1;
    /* st->vt is this call's copy of the run (the server's kept run is shared): its layer is this call's */
    if (slm_view_run_text(c, p->text, p->pos, VIEW_RUN_HEADS, &st->vt, e) ||
        slm_probe_runner_layer(&st->vt.runner, layer, e))
        return -1;
    if (p->wide)
        slm_view_attend_wide(c->report, c->ps, &st->vt);
    else
        slm_view_attend(c->report, c->ps, &st->vt, st->head);
    return 0;
}

static void done(ViewCall *c) {
    AttendState *st = c->state;
    if (st->ran) slm_view_release_text(c, &st->vt);
}

static const Param params[] = {
    VIEW_ARG(AttendParams, text, "TEXT", PARAM_REQUIRED | PARAM_TEXT),
    VIEW_PARAMS_COMMON(AttendParams),
    VIEW_PARAM_KERNELS(AttendParams),
    VIEW_PARAMS_SVG(AttendParams),
    VIEW_PARAM_MEAN_STORIES(AttendParams),
    VIEW_INT_PARAM(AttendParams, pos, "pos", "N", "the position reading; negative: from the end", -1000000, 1000000,
                   -1),
    VIEW_HEAD_PARAM(AttendParams, head,
                    "one head: H of the layer shown, or L:H (2:3 is layer 2's head 3); left out or -1: all"),
    VIEW_INT_PARAM(AttendParams, layer, "layer", "L", "the layer (or transformer block) whose heads to show", 1,
                   STORYLM_MAX_TF_LAYERS, 1),
    VIEW_BOOL_PARAM(AttendParams, wide, "wide", "all heads by position: each head's weight in a column"),
};

const View view_attend = {
    .name = "attend",
    .summary = "how one position reads every earlier token (Tool 1)",
    .usage = "storylm attend TEXT [options]",
    .description =
        "Runs the text (after [EOS], as every story starts) through the network and shows, for\n"
        "position --pos (0 is [EOS]; negative counts from the end; default: the last token) and\n"
        "head --head (default: all), every token it can read: dot = q.k/sqrt(d_head) (sqrt(8) in the\n"
        "chapter's network), the head's position score (the learned distance score, or the\n"
        "position scheme's bias; 0 when it adds none), score = their sum, weight = softmax of the scores (they add up\n"
        "to 1), and the cosine of the two tokens' rows of the embedding, only to compare.\n"
        "--wide shows all heads by position: one row a token read, each head's weight in a\n"
        "column of its own (weight_0, weight_1, ... in --json), without dot, distance score and score.\n"
        "--svg FILE draws the attention maps: every position's weights, one map per head.\n"
        "Switching heads off (--ablate) changes what the hidden layer reads, not the weights.",
    .params = params,
    .n_params = VIEW_N_PARAMS(params),
    .params_size = sizeof(AttendParams),
    .session = VIEW_SESSION_PROBE,
    .probe_flags = PROBE_HEADS,
    .state_size = sizeof(AttendState),
    .check = check,
    .build = build,
    .draw = draw,
    .done = done,
};
