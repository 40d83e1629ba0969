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

/* The most common one-piece name, then invented names of 3+ pieces. */
static int default_names(const ProbeSession *ps, SwapName *out, int max) {
    const char *common[50];
    int n = slm_names_most_common(&ps->names, common, NULL, 50), k = 0;
    for (int i = 0; i < n && k == 0; i++)
        if (slm_swap_name_make(&ps->lm.tokenizer, &ps->names, common[i], &out[0], NULL) == 0 && out[0].n_pieces == 1) k = 1;
    return k + slm_invented_names(&ps->lm.tokenizer, &ps->names, 3, out + k, max - k < 4 ? max - k : 4);
}

static void build_report(Report *r, const ProbeSession *ps, const SwapName *names, const PieceScore *rows, int n) {
    slm_probe_report_header(r, ps);
    if (ps->names_from_all) slm_report_note(r, "note: names were learnt from every story (test ones included)");
    ReportTable *t = slm_report_table(r, "names", "Where the renamed hero comes back");
    const char *cols[][2] = {{"name", "name"},           {"kind", "kind"},           {"pieces", "pieces"},
                             {"stories", "stories"},     {"mentions", "mentions"},   {"first_probability", "p(first piece)"},
                             {"first_top1", "first piece top guess"}, {"next_probability", "p(next piece)"}, {"next_top1", "next piece top guess"},
                             {"next_median_rank", "next piece median rank"}};
    for (int c = 0; c < 10; c++)
        slm_table_column(t, cols[c][0], cols[c][1], c < 3 ? CELL_TEXT : c < 5 ? CELL_INT : c % 2 ? CELL_NUMBER : CELL_PERCENT,
                     c == 9 ? 1 : c % 2 ? 4 : 1);
    char pieces[256];
    for (int k = 0; k < n; k++) {
        size_t used = 0;
        pieces[0] = '\0';
        for (int i = 0; i < names[k].n_pieces && used < sizeof pieces; i++)
            used += (size_t)snprintf(pieces + used, sizeof pieces - used, "%s%s", i ? " " : "",
                                     slm_probe_token(ps, names[k].pieces[i]));
        slm_table_row(t);
        slm_cell_text(t, names[k].word);
        slm_cell_text(t, slm_name_kind_names[names[k].kind]);
        slm_cell_text(t, pieces);
        slm_cell_int(t, rows[k].stories);
        slm_cell_int(t, rows[k].mentions);
        slm_cell_number(t, rows[k].first_probability);
        slm_cell_number(t, rows[k].first_top1);
        slm_cell_number(t, rows[k].next_probability);
        slm_cell_number(t, rows[k].next_top1);
        slm_cell_number(t, rows[k].next_median_rank);
    }
}

/* The two steps head by head (models of several layers), and the head of
 * layer 2 or above that reads the token to copy most. */
static void heads_report(Report *r, const ModelConfig *c, const PieceHeads *ph) {
    ReportTable *t = slm_report_table(r, "heads", "The two lookups, head by head (names of 2+ pieces)");
    slm_table_column(t, "head", "head", CELL_TEXT, 0);
    slm_table_column(t, "layer", "layer", CELL_INT, 0);
    slm_table_column(t, "previous_token", "at the token to copy: on the one before", CELL_NUMBER, 4);
    slm_table_column(t, "induction", "at the later first piece: on the token to copy", CELL_NUMBER, 4);
    int best = -1;
    char name[16];
    for (int g = 0; g < ph->n_heads; g++) {
        slm_head_name(c, g, name, sizeof name);
        slm_table_row(t);
        slm_cell_text(t, name);
        slm_cell_int(t, g / c->n_heads + 1);
        slm_cell_number(t, ph->previous[g]);
        slm_cell_number(t, ph->induction[g]);
        if (g >= c->n_heads && (best < 0 || ph->induction[g] > ph->induction[best])) best = g;
    }
    slm_report_int(r, "heads_mentions", "later mentions measured", ph->mentions);
    slm_report_number(r, "even_weight", "weight of a head reading evenly there", ph->even, 4);
    if (best < 0) return;
    slm_head_name(c, best, name, sizeof name);
    slm_report_text(r, "induction_head", "reads the token to copy most (layer 2+)", name);
    slm_report_number(r, "induction_weight", "its weight on it", ph->induction[best], 4);
}

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
    slm_svg_text(&s, 20, 24, "Where the renamed hero comes back: its first piece, then the piece that followed it before", 14,
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
    PieceHeads heads;
    int layered = slm_model_layers(&ps.lm.model.cfg) > 1; /* a one-layer model's report stays as it was */
    Report r;
    slm_report_init(&r, "pieces");
    int n = a->names ? slm_cli_swap_names(&ps, a->names, names, 32, e) : default_names(&ps, names, 32);
    int rc = n < 0 ? -1
                   : slm_probe_pieces(&ps.lm.model, &ps.lm.tokenizer, &ps.names, &ps.stories, ps.stories.test,
                                  ps.stories.n_test, names, n, &ps.ablation, rows, layered ? &heads : NULL, e);
    if (!rc) build_report(&r, &ps, names, rows, n);
    if (!rc && layered) heads_report(&r, &ps.lm.model.cfg, &heads);
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
