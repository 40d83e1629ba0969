/* storylm ablate STORIES --model M [--heads 3,5]: Secret 3, switch a head
 * off. Loss and accuracy on the held-out test stories, and at the positions
 * where a story's hero comes back, with every head switched off in turn or
 * with the given set together. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "probe_common.h"
#include "storylm/svg.h"

static int run(int argc, char **argv);
const Command command_ablate = {
    "ablate", "what the network loses without some heads (Secret 3)", "storylm ablate STORIES [options]",
    "Measures the loss (nats per token) and accuracy (top guess right) over every predicted\n"
    "position of the held-out test stories of STORIES, and at the name positions of\n"
    "Secret 2 (where a story's hero comes back: loss, probability of the name's first\n"
    "piece and accuracy there). Without --heads: a table with every single head switched\n"
    "off, each compared with the intact network. With --heads 3,5: that set together.\n"
    "A switched-off head's 16 numbers become 0, or with --ablate-mode mean its mean output\n"
    "over the test stories. --ablate HEADS switches heads off in every row, the first too.",
    run};

typedef struct AblateArgs {
    ProbeOptions po;
    const char *heads;
} AblateArgs;

/* The heads of mask by name ("3,5"; "1:3,2:5" on a model of several layers). */
static int draw(const char *path, const ReportTable *t, Error *e) {
    int n = t->n_rows - 1 < 32 ? t->n_rows - 1 : 32;
    double d_loss[32], d_name[32];
    const char *labels[32];
    double hi = 0.01, hi_name = 0.01, lo_name = -0.01;
    for (int k = 0; k < n; k++) {
        labels[k] = t->cells[(size_t)(k + 1) * t->n_cols].text;
        d_loss[k] = slm_table_number(t, k + 1, 2);
        d_name[k] = slm_table_number(t, k + 1, 8);
        hi = fmax(hi, d_loss[k]);
        hi_name = fmax(hi_name, d_name[k]);
        lo_name = fmin(lo_name, d_name[k]);
    }
    Svg s;
    slm_svg_begin(&s, 900, 640, "storylm ablate: switch a head off");
    slm_svg_text(&s, 20, 24, "What the network loses with each head switched off", 15, SVG_START, 0, "black");
    SvgPanel p = {.x = 80, .y = 70, .w = 760, .h = 200, .y0 = fmin(0, slm_table_number(t, 1, 2)), .y1 = hi * 1.1};
    slm_svg_axes(&s, &p, "change in test loss (nats/token)", NULL, "change in loss", 0);
    slm_svg_bars(&s, &p, d_loss, 1, n, labels, NULL, 0);
    SvgPanel q = {.x = 80, .y = 370, .w = 760, .h = 200, .y0 = lo_name * 1.1, .y1 = hi_name * 1.1};
    const char *red = "#d62728";
    slm_svg_axes(&s, &q, "change in the probability of the hero's name where it comes back", "heads off", "change in p",
                 0);
    slm_svg_bars(&s, &q, d_name, 1, n, labels, &red, 0);
    slm_svg_bar_values(&s, &q, d_name, 1, n, 4); /* a head whose removal barely changes p */
    int rc = slm_svg_save(&s, path, e);
    slm_svg_free(&s);
    return rc;
}

/* The intact row (with --ablate's heads only), then each single head or the --heads set. */
static int ablate(const AblateArgs *a, const char *stories, Error *e) {
    ProbeSession ps;
    if (slm_probe_session_open(&ps, &a->po, "ablate", stories,
                               PROBE_ATTENTION_ONLY | PROBE_NAMES | PROBE_LAYERS | PROBE_TRANSFORMER, e))
        return -1;
    Report r;
    slm_report_init(&r, "ablate");
    ReportTable *t = NULL;
    int rc = slm_view_ablate(&r, &ps, a->heads, a->po.ablate_mode, &t, e);
    if (!rc && a->po.svg && t) rc = draw(a->po.svg, t, e);
    if (!rc) rc = probe_emit(&r, &a->po, e);
    slm_report_free(&r);
    slm_probe_session_close(&ps);
    return rc;
}

static int run(int argc, char **argv) {
    AblateArgs a = {.po = PROBE_OPTIONS_DEFAULT};
    const char *pos[1];
    Option opts[] = {
        PROBE_COMMON_OPTIONS(a.po),
        PROBE_SVG_OPTION(a.po),
        PROBE_TEST_OPTION(a.po),
        {"heads", 0, OPT_STRING, &a.heads, "HEADS",
         "switch this set off together, e.g. 3,5 (1:3,2:5 on a model of several layers; default: each head in turn)", 0,
         0},
    };
    int rc = probe_parse(&command_ablate, argc, argv, opts, N_OPTIONS(opts), &a.po, pos, 1);
    if (rc >= 0) return rc;
    Error e = {0};
    return ablate(&a, pos[0], &e) ? cli_fail(&e) : 0;
}
