/* storylm icl STORIES [--model M ...]: in-context learning. The mean loss
 * late in a story minus early in it, and the loss by position. */
#include "probe_common.h"
#include "storylm/probe_views.h"

static int run(int argc, char **argv);
const Command command_icl = {
    "icl", "in-context learning: loss late in a story minus early", "storylm icl STORIES [options]",
    "On the held-out test stories of STORIES: the mean loss (nats) at every position (position p\n"
    "predicts token p+1; 0 is the opening [EOS]) and the in-context-learning score, the mean loss\n"
    "at position --late minus at --early (Olsson et al. 2022): negative when the network predicts\n"
    "better for having read more of the story. Each of the two is pooled over the positions\n"
    "within --band of it, since one position of 100 stories is noisy. Both positions are\n"
    "clipped to the last position that --min-stories stories reach (the report says when);\n"
    "only the longer stories reach a late position, so the paired score takes the early loss\n"
    "over just those stories too (the same stories at both ends);\n"
    "when even --early lies beyond it, the stories are too short and icl says so. The window8\n"
    "network is measured too (it reads only 8 tokens: its score shows what needs no long\n"
    "context). Several --model files are compared side by side. --svg draws the loss by\n"
    "position (a moving mean over --band each side), one curve per model.",
    run};

typedef struct IclArgs {
    ProbeOptions po;
    StringList models;
    IclParams p;
} IclArgs;

static int icl(const IclArgs *a, const char *stories, Error *e) {
    int n = a->models.count ? a->models.count : 1, rc = 0;
    Report r;
    slm_report_init(&r, "icl");
    ViewIcl vi = {0};
    for (int k = 0; !rc && k < n; k++) {
        ProbeOptions po = a->po;
        po.model = a->models.count ? a->models.items[k] : NULL;
        ProbeSession ps;
        if ((rc = slm_probe_session_open(&ps, &po, "icl", stories, 0, e))) break;
        if (k == 0) slm_view_icl_begin(&r, &ps, &a->p, &vi);
        rc = slm_view_icl_add(&vi, &r, &ps, e);
        slm_probe_session_close(&ps);
    }
    if (!rc) slm_view_icl_end(&vi, &r);
    if (!rc && a->po.svg) rc = slm_view_icl_draw(&r, a->po.svg, e);
    if (!rc) rc = probe_emit(&r, &a->po, e);
    slm_view_icl_free(&vi);
    slm_report_free(&r);
    return rc;
}

static int run(int argc, char **argv) {
    IclArgs a = {.po = PROBE_OPTIONS_DEFAULT,
                 .p = {.o = {.early = 50, .late = 500, .band = 10, .min_stories = 10}, .bin = 25}};
    const char *pos[1];
    Option opts[] = {
        PROBE_MODELS_OPTIONS(a.po, a.models, "repeat to compare"),
        PROBE_SVG_OPTION(a.po),
        PROBE_TEST_OPTION(a.po),
        {"early", 0, OPT_INT, &a.p.o.early, "P", "the early position", 0, 1000000},
        {"late", 0, OPT_INT, &a.p.o.late, "P", "the late position", 1, 1000000},
        {"band", 0, OPT_INT, &a.p.o.band, "B", "pool the positions within B of each", 0, 1000},
        {"min-stories", 0, OPT_INT, &a.p.o.min_stories, "K", "a position counts when K test stories reach it", 1,
         100000},
        {"bin", 0, OPT_INT, &a.p.bin, "N", "positions per row of the text's loss table", 1, 100000},
    };
    int rc = probe_parse(&command_icl, argc, argv, opts, N_OPTIONS(opts), &a.po, pos, 1);
    if (rc >= 0) return rc;
    if (a.models.count > 32) return args_usage_error(&command_icl, "at most 32 --model files, not %d", a.models.count);
    if (a.p.o.late <= a.p.o.early)
        return args_usage_error(&command_icl, "--late %d must come after --early %d", a.p.o.late, a.p.o.early);
    Error e = {0};
    return icl(&a, pos[0], &e) ? cli_fail(&e) : 0;
}
