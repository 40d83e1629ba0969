/* storylm pieces STORIES --model M: Secret 4, what one layer cannot do.
 * Heroes renamed to invented names of several pieces: where the name comes
 * back, after its first piece, how well the network predicts the piece that
 * followed it the first time, against the same for a name of one piece. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "probe_common.h"
#include "storylm/svg.h"

static int run(int argc, char **argv);
const Command command_pieces = {
    "pieces", "finishing a name made of pieces (Secret 4)", "storylm pieces STORIES [options]",
    "Renames the hero of each held-out test story that has one (see storylm swap --help)\n"
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
    run};

typedef struct PiecesArgs {
    ProbeOptions po;
    const char *names;
} PiecesArgs;

static int draw(const char *path, const SwapName *names, const PieceScore *rows, int n, Error *e) {
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

static int pieces(const PiecesArgs *a, const char *stories, Error *e) {
    ProbeSession ps;
    if (slm_probe_session_open(&ps, &a->po, "pieces", stories, PROBE_NAMES, e)) return -1;
    SwapName names[32];
    PieceScore rows[32];
    Report r;
    slm_report_init(&r, "pieces");
    int n = slm_view_pieces(&r, &ps, a->names, names, rows, 32, e), rc = n < 0 ? -1 : 0;
    if (!rc && a->po.svg) rc = draw(a->po.svg, names, rows, n, e);
    if (!rc) rc = probe_emit(&r, &a->po, e);
    slm_report_free(&r);
    slm_probe_session_close(&ps);
    return rc;
}

static int run(int argc, char **argv) {
    PiecesArgs a = {.po = PROBE_OPTIONS_DEFAULT};
    const char *pos[1];
    Option opts[] = {
        PROBE_COMMON_OPTIONS(a.po),
        PROBE_SVG_OPTION(a.po),
        PROBE_TEST_OPTION(a.po),
        {"names", 0, OPT_STRING, &a.names, "LIST", "names to give the heroes, e.g. lily,zarko", 0, 0},
    };
    int rc = probe_parse(&command_pieces, argc, argv, opts, N_OPTIONS(opts), &a.po, pos, 1);
    if (rc >= 0) return rc;
    Error e = {0};
    return pieces(&a, pos[0], &e) ? cli_fail(&e) : 0;
}
