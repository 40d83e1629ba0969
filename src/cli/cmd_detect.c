/* storylm detect STORIES [--model M ...]: head detectors. Per head, the
 * previous-token, duplicate-token and induction scores on the held-out test
 * stories and on random sequences repeated twice, with the induction loss;
 * for several models (training snapshots), the same across training. */
#include "probe_common.h"
#include "storylm/probe_views.h"

static int run(int argc, char **argv);
const Command command_detect = {
    "detect", "head detectors: previous-token, duplicate and induction scores", "storylm detect STORIES [options]",
    "For every head, on the held-out test stories of STORIES, the mean over positions of:\n"
    "  previous  the weight on the token just before;\n"
    "  duplicate the total weight on earlier copies of the position's own token;\n"
    "  induction the total weight on the tokens right after earlier copies of the position's\n"
    "            token (where an induction head looks, to say what came next last time).\n"
    "The last two count only positions whose token came earlier within reach. The same on\n"
    "--random sequences of --length random tokens (drawn, with --seed, from the tokens of the\n"
    "test stories) repeated twice, [EOS] r1..rL r1..rL, with the induction loss: the mean loss\n"
    "on r2..rL in the second copy against the first. A network with induction heads predicts\n"
    "the second copy almost perfectly; the chapter says one layer cannot. Random attention\n"
    "gives about 1/(position+1) to each score's positions. Several --model files (snapshots:\n"
    "storylm train --snapshot-every N) give the table for each and, with --svg, curves across\n"
    "training (x: the step in the file name OUT.stepN.safetensors or the model's metadata).\n"
    "--ablate HEADS switches heads off (their weights are still measured; the losses change).",
    run};

typedef struct DetectArgs {
    ProbeOptions po;
    StringList models;
    DetectParams p;
} DetectArgs;

static int detect(const DetectArgs *a, const char *stories, Error *e) {
    int n = a->models.count ? a->models.count : 1, rc = 0;
    Report r;
    slm_report_init(&r, "detect");
    ViewDetect vd;
    for (int k = 0; !rc && k < n; k++) {
        ProbeOptions po = a->po;
        po.model = a->models.count ? a->models.items[k] : NULL;
        ProbeSession ps;
        int flags = PROBE_ATTENTION_ONLY | PROBE_LAYERS | PROBE_TRANSFORMER;
        if ((rc = slm_probe_session_open(&ps, &po, "detect", stories, flags, e))) break;
        if (k == 0) slm_view_detect_begin(&r, &ps, &a->p, &vd);
        rc = slm_view_detect_add(&vd, &ps, e);
        slm_probe_session_close(&ps);
    }
    if (!rc && a->po.svg) rc = slm_view_detect_draw(&r, a->po.svg, e);
    if (!rc) rc = probe_emit(&r, &a->po, e);
    slm_report_free(&r);
    return rc;
}

static int run(int argc, char **argv) {
    DetectArgs a = {.po = PROBE_OPTIONS_DEFAULT, .p = {.n_random = 50, .length = 100, .seed = 1}};
    const char *pos[1];
    Option opts[] = {
        PROBE_MODELS_OPTIONS(a.po, a.models, "repeat for snapshots"),
        PROBE_SVG_OPTION(a.po),
        PROBE_TEST_OPTION(a.po),
        {"random", 0, OPT_INT, &a.p.n_random, "N", "random sequences repeated twice (0: none)", 0, 100000},
        {"length", 0, OPT_INT, &a.p.length, "L", "random tokens in each copy", 2, 100000},
        {"seed", 's', OPT_INT, &a.p.seed, "N", "seed of the random sequences", 0, 2147483647},
    };
    int rc = probe_parse(&command_detect, argc, argv, opts, N_OPTIONS(opts), &a.po, pos, 1);
    if (rc >= 0) return rc;
    if (a.models.count > 64)
        return args_usage_error(&command_detect, "at most 64 --model files, not %d", a.models.count);
    Error e = {0};
    return detect(&a, pos[0], &e) ? cli_fail(&e) : 0;
}
