/* storylm patch CLEAN CORRUPT: activation patching. Pieces of the clean
 * run put into the corrupt run, one at a time, and how much of the clean
 * run's preference for the answer over the wrong token comes back. */
#include "probe_common.h"
#include "storylm/probe_views.h"

static int run(int argc, char **argv);
const Command command_patch = {
    "patch", "activation patching: which heads and positions carry a difference",
    "storylm patch CLEAN CORRUPT [options]",
    "Runs [EOS] and each text through the network (the two must have the same number of\n"
    "tokens; differing ones are refused with both tokenizations shown). At the last position\n"
    "it measures the logit difference LD = logit(answer) - logit(wrong), by default the\n"
    "answer being the clean run's top guess and the wrong token the corrupt run's (its second\n"
    "guess when both agree). Then it puts pieces of the clean run into the corrupt run, one at a\n"
    "time, and reports (LD - LD_corrupt) / (LD_clean - LD_corrupt): 0 is the corrupt run, 1 the\n"
    "clean one, above 1 or below 0 when a piece overshoots.\n"
    "\n"
    "In one layer a head's output at an earlier position reaches only that position's own\n"
    "guess, so the pieces are what the last position reads:\n"
    "  head h, position u   head h's key and value at u (what the head reads there)\n"
    "  head h, query        head h's query at the last position\n"
    "  head h, output       head h's whole output at the last position\n"
    "  row, position u      the token row at u: every head's key and value there, and at the\n"
    "                       last position also the queries and the row's own slot of z\n"
    "  hidden               the hidden layer at the last position\n"
    "Patching every row, or every head's output with the last row, gives back the clean run's\n"
    "numbers exactly. The last position is evaluated in double precision for every patch.\n"
    "--ablate switches heads off in both runs (patching them then changes nothing).\n"
    "--svg FILE draws the heat map: the row and the heads by position, then query and output.",
    run};

static int patch(const ProbeOptions *po, const PatchParams *pp, Error *e) {
    ProbeSession ps;
    if (slm_probe_session_open(&ps, po, "patch", NULL, PROBE_ATTENTION_ONLY, e)) return -1;
    Report rep;
    slm_report_init(&rep, "patch");
    int rc = slm_view_patch(&rep, &ps, pp, e);
    if (!rc && po->svg) rc = slm_view_patch_draw(&rep, po->svg, e);
    if (!rc) rc = probe_emit(&rep, po, e);
    slm_report_free(&rep);
    slm_probe_session_close(&ps);
    return rc ? -1 : 0;
}

static int run(int argc, char **argv) {
    ProbeOptions po = PROBE_OPTIONS_DEFAULT;
    PatchParams in = {0};
    const char *pos[2];
    Option opts[] = {
        PROBE_COMMON_OPTIONS(po),
        PROBE_SVG_OPTION(po),
        PROBE_MEAN_STORIES_OPTION(po),
        PROBE_TEST_OPTION(po),
        {"answer", 0, OPT_STRING, &in.answer, "TOKEN",
         "the token the clean text should lead to (default: its top guess)", 0, 0},
        {"wrong", 0, OPT_STRING, &in.wrong, "TOKEN", "the token to compare with (default: the corrupt run's top guess)",
         0, 0},
    };
    int rc = probe_parse(&command_patch, argc, argv, opts, N_OPTIONS(opts), &po, pos, 2);
    if (rc >= 0) return rc;
    in.clean = pos[0];
    in.corrupt = pos[1];
    Error e = {0};
    return patch(&po, &in, &e) ? cli_fail(&e) : 0;
}
