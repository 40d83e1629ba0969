/* storylm attend TEXT: Tool 1, a lookup by content. For one position of the
 * text and one head (or all), every token it reads: q.k/sqrt(8), the
 * distance score, their sum, the weight after softmax and the cosine of the
 * two tokens' rows; --svg draws the attention maps. */
#include <math.h>
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
    "--svg FILE draws the attention maps: every position's weights, one map per head.\n"
    "Switching heads off (--ablate) changes what the hidden layer reads, not the weights.",
    run};

typedef struct AttendArgs {
    ProbeOptions po;
    int pos, head;
} AttendArgs;

/* One head's map at (x, y): T x T squares with the tokens as labels, the read position outlined. */
static void draw_map(Svg *s, const ProbeRunner *r, const char *const *labels, int h, int p, double x, double y,
                     double cell, double *map) {
    int T = r->acts.n_positions;
    char title[32];
    snprintf(title, sizeof title, "head %d", h);
    svg_text(s, x + T * cell / 2, y - 62, title, 13, SVG_MIDDLE, 0, "black");
    probe_attention_map(r, h, map);
    double font = cell * 0.8 < 10 ? cell * 0.8 : 10;
    svg_heatmap(s, x, y, cell, map, T, T, 1.0, labels, labels, font);
    svg_rect(s, x, y + p * cell, T * cell, cell, "none", "#d62728", NULL);
}

static int draw(const char *path, const ProbeSession *ps, const ProbeRunner *r, const IntVec *ids, int p, int head,
                Error *e) {
    int T = (int)ids->len, H = ps->lm.model.cfg.n_heads, n = head < 0 ? H : 1, per_row = n < 4 ? n : 4;
    double cell = fmax(4, fmin(18, 360.0 / T)), margin = 70, size = T * cell;
    const char **labels = malloc((size_t)T * sizeof *labels);
    double *map = malloc((size_t)T * T * sizeof(double));
    if (!labels || !map) {
        free(labels);
        free(map);
        return FAIL(e, NULL, "out of memory drawing the attention maps");
    }
    for (int i = 0; i < T; i++) labels[i] = probe_token(ps, ids->data[i]);
    Svg s;
    int rows = (n + per_row - 1) / per_row;
    svg_begin(&s, fmax(720, per_row * (size + margin + 20) + 20), rows * (size + margin + 20) + 50, "storylm attend: attention maps");
    svg_text(&s, 20, 22, "Attention weights: each row is a position reading, each column a token it reads (red: --pos)",
             13, SVG_START, 0, "black");
    for (int k = 0; k < n; k++) {
        int h = head < 0 ? k : head;
        draw_map(&s, r, labels, h, p, 20 + margin + (k % per_row) * (size + margin + 20),
                 50 + margin + (k / per_row) * (size + margin + 20), cell, map);
    }
    int rc = svg_save(&s, path, e);
    svg_free(&s);
    free(labels);
    free(map);
    return rc;
}

static int attend(const AttendArgs *a, const char *text, Error *e) {
    ProbeSession ps;
    if (probe_session_open(&ps, &a->po, "attend", NULL, PROBE_ATTENTION_ONLY, e)) return -1;
    ViewText vt = {0};
    Report rep;
    report_init(&rep, "attend");
    int rc = view_check_head(&ps, a->head, e) || view_text_run(&vt, &ps, text, a->pos, VIEW_RUN_HEADS, e);
    if (!rc) view_attend(&rep, &ps, &vt, a->head);
    if (!rc && a->po.svg) rc = draw(a->po.svg, &ps, &vt.runner, &vt.ids, vt.pos, a->head, e);
    if (!rc) rc = probe_emit(&rep, &a->po, e);
    report_free(&rep);
    view_text_free(&vt);
    probe_session_close(&ps);
    return rc ? -1 : 0;
}

static int run(int argc, char **argv) {
    AttendArgs a = {.po = PROBE_OPTIONS_DEFAULT, .pos = -1, .head = -1};
    const char *pos[1];
    Option opts[] = {
        PROBE_COMMON_OPTIONS(a.po),
        PROBE_SVG_OPTION(a.po),
        PROBE_MEAN_STORIES_OPTION(a.po),
        {"pos", 0, OPT_INT, &a.pos, "N", "the position reading; negative: from the end", -1000000, 1000000},
        {"head", 0, OPT_INT, &a.head, "H", "one head (0 to 7); -1: all", -1, 7}, /* the network has 8 heads */
    };
    int rc = probe_parse(&command_attend, argc, argv, opts, N_OPTIONS(opts), &a.po, pos, 1);
    if (rc >= 0) return rc;
    Error e = {0};
    return attend(&a, pos[0], &e) ? cli_fail(&e) : 0;
}
