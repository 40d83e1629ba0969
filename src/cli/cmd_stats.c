/* storylm stats STORIES --model M: the chapter's numbers on the held-out
 * test stories: per head, whether q.k follows the cosine of the two rows and
 * how often the key closest in direction is not the largest-dot key; and how
 * many tokens come back from beyond chapter 6's window of 8. */
#include "probe_common.h"
#include "storylm/probe_views.h"

static int run(int argc, char **argv);
const Command command_stats = {"stats", "the chapter's statistics on the test stories",
                               "storylm stats STORIES [options]",
                               "On the held-out test stories of STORIES:\n"
                               "  correlation  per head, Pearson's correlation of q.k with the cosine of the two\n"
                               "               tokens' rows, over every (position, token it reads) pair, itself\n"
                               "               included (the chapter: between -0.12 and 0.09 in every head), and\n"
                               "               without the pairs of a position with itself (whose cosine is 1);\n"
                               "  not closest  per head, the share of positions reading 2 or more tokens whose key\n"
                               "               closest in direction to the query is not the key with the largest\n"
                               "               q.k (the chapter: 48% to 65%);\n"
                               "  far repeats  the share of tokens ([EOS] left out) that appeared earlier in the\n"
                               "               story but not among the 8 tokens before them, out of chapter 6's\n"
                               "               reach; the 100 most common tokens of the training stories are left\n"
                               "               out, except names (--common N changes 100).\n"
                               "--ablate is refused: no head switched off changes these numbers.",
                               run};

static int stats(const ProbeOptions *po, const char *stories, int common, Error *e) {
    ProbeSession ps;
    if (slm_probe_session_open(&ps, po, "stats", stories, PROBE_ATTENTION_ONLY | PROBE_NAMES, e)) return -1;
    Report r;
    slm_report_init(&r, "stats");
    int rc = slm_view_stats(&r, &ps, common, e);
    if (!rc && po->svg) rc = slm_view_stats_draw(&r, po->svg, e);
    if (!rc) rc = probe_emit(&r, po, e);
    slm_report_free(&r);
    slm_probe_session_close(&ps);
    return rc;
}

static int run(int argc, char **argv) {
    ProbeOptions po = PROBE_OPTIONS_DEFAULT;
    const char *pos[1];
    int common = 100;
    Option opts[] = {
        PROBE_MODEL_OPTION(po),
        PROBE_OUTPUT_OPTIONS(po),
        PROBE_SVG_OPTION(po),
        PROBE_TEST_OPTION(po),
        {"common", 0, OPT_INT, &common, "N", "most common tokens left out of the far repeats", 0, 100000},
    };
    if (probe_refuse_ablation(&command_stats, argc, argv,
                              "queries, keys and rows, which come before the heads' outputs"))
        return 2;
    int rc = probe_parse(&command_stats, argc, argv, opts, N_OPTIONS(opts), &po, pos, 1);
    if (rc >= 0) return rc;
    Error e = {0};
    return stats(&po, pos[0], common, &e) ? cli_fail(&e) : 0;
}
