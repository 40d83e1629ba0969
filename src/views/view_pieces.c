/* The view pieces: Secret 4, what one layer cannot do. Heroes renamed to
 * invented names of several pieces: where the name comes back, after its
 * first piece, how well the network predicts the piece that followed it the
 * first time, against the same for a name of one piece. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "storylm/registry.h"
#include "storylm/views.h"
#include "storylm/svg.h"

typedef struct PiecesParams {
    ProbeOptions po;
    const char *stories, *names;
} PiecesParams;

typedef struct PiecesState {
    SwapName names[32];
    PieceScore rows[32];
    int n;
} PiecesState;

static int draw_rows(const char *path, const SwapName *names, const PieceScore *rows, int n, Error *e) {
    double values[2 * 32], hi = 0;
    const char *labels[32];
    n = n < 32 ? n : 32;
    for (int k = 0; k < n; k++) {
        labels[k] = names[k].word;
        values[k] = rows[k].first_probability;
        values[n + k] = rows[k].next_probability;
        hi = fmax(hi, fmax(values[k], values[n + k]));
    }
    Svg s;
    slm_svg_begin(&s, 900, 400, "storylm pieces: finishing a name made of pieces");
    slm_svg_text(&s, 20, 24,
                 "Where the renamed hero comes back: its first piece, then the piece that followed it before", 14,
                 SVG_START, 0, "black");
    /* the axis fits the data (probabilities here stay far below 1) */
    SvgPanel p = {.x = 80, .y = 70, .w = 620, .h = 240, .y0 = 0, .y1 = fmin(1, slm_svg_round_up(hi * 1.1))};
    slm_svg_axes(&s, &p, NULL, NULL, "mean probability", 0);
    slm_svg_bars(&s, &p, values, 2, n, labels, NULL, 0);
    slm_svg_bar_values(&s, &p, values, 2, n, 8); /* the invented names' bars are a pixel high */
    const char *legend[2] = {"first piece", "next piece, after the first"};
    slm_svg_legend(&s, 720, 70, legend, NULL, 2);
    int rc = slm_svg_save(&s, path, e);
    slm_svg_free(&s);
    return rc;
}

static int draw(ViewCall *c, const char *path, Error *e) {
    const PiecesState *st = c->state;
    return draw_rows(path, st->names, st->rows, st->n, e);
}

static int build(ViewCall *c, Error *e) {
    const PiecesParams *p = c->params;
    PiecesState *st = c->state;
    st->n = slm_view_pieces(c->report, c->ps, p->names && p->names[0] ? p->names : NULL, st->names, st->rows, 32, e);
    return st->n < 0 ? -1 : 0;
}

static const Param params[] = {
    VIEW_ARG(PiecesParams, stories, "STORIES", PARAM_REQUIRED | PARAM_STORIES),
    VIEW_PARAMS_COMMON(PiecesParams),
    VIEW_PARAM_KERNELS(PiecesParams),
    VIEW_PARAMS_SVG(PiecesParams),
    VIEW_PARAM_TEST_STORIES(PiecesParams),
    VIEW_STRING_PARAM(PiecesParams, names, "names", "LIST", "names to give the heroes, e.g. lily,zarko"),
};

const View view_pieces = {
    .name = "pieces",
    .summary = "finishing a name made of pieces (Secret 4)",
    .usage = "storylm pieces STORIES [options]",
    .description = "Renames the hero of each held-out test story that has one (see storylm swap --help)\n"
                   "to invented names of 3 or more pieces, such as z ##ark ##o, and to the most common\n"
                   "name of one piece. At every later mention it measures the first piece (mean\n"
                   "probability, share as top guess: one lookup copies it) and, after the first piece,\n"
                   "the token that followed the first piece at the first mention (the name's second\n"
                   "piece; for a one-piece name, the word after it): two lookups, find the earlier first\n"
                   "piece and read the token after it. --names a,b,c gives your own names.\n"
                   "On a model of several layers (--layers) it also shows, head by head, the two steps of\n"
                   "that lookup over the names of 2+ pieces: at the token after the earlier first piece\n"
                   "(the token to copy), the weight on the token before it; at the later first piece, the\n"
                   "weight on the token to copy. A head of layer 2 or above with much of the second is an\n"
                   "induction head.",
    .params = params,
    .n_params = VIEW_N_PARAMS(params),
    .params_size = sizeof(PiecesParams),
    .session = VIEW_SESSION_PROBE,
    .probe_flags = PROBE_NAMES,
    .serve = VIEW_SERVE_POST,
    .state_size = sizeof(PiecesState),
    .build = build,
    .draw = draw,
};
