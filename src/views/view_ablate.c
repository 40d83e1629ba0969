/* The view ablate: Secret 3, switch a head off. Loss and accuracy on the
 * held-out test stories, and at the positions where a story's hero comes
 * back, with every head switched off in turn or with the given set together. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "storylm/registry.h"
#include "storylm/views.h"
#include "storylm/svg.h"

typedef struct AblateParams {
    ProbeOptions po;
    const char *stories, *heads;
} AblateParams;

typedef struct AblateState {
    ReportTable *table; /* the report's, for the drawing */
} AblateState;

/* Each head's (or set's) change in loss and in the name's probability, as bars. */
static int draw_table(const char *path, const ReportTable *t, Error *e) {
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

static int draw(ViewCall *c, const char *path, Error *e) {
    const AblateState *st = c->state;
    return st->table ? draw_table(path, st->table, e) : 0;
}

/* The intact row (with --ablate's heads only), then each single head or the
 * --heads set, switched off as --ablate-mode says (a request's "mode"). */
static int build(ViewCall *c, Error *e) {
    const AblateParams *p = c->params;
    return slm_view_ablate(c->report, c->ps, p->heads, p->po.ablate_mode, &((AblateState *)c->state)->table, e);
}

static const Param params[] = {
    VIEW_ARG(AblateParams, stories, "STORIES", PARAM_REQUIRED | PARAM_STORIES),
    VIEW_PARAMS_COMMON(AblateParams),
    VIEW_PARAM_KERNELS(AblateParams),
    VIEW_PARAMS_SVG(AblateParams),
    VIEW_PARAM_TEST_STORIES(AblateParams),
    {.name = "heads",
     .type = PARAM_HEADS,
     .offset = offsetof(AblateParams, heads),
     .meta = "HEADS",
     .help =
         "switch this set off together, e.g. 3,5 (1:3,2:5 on a model of several layers; default: each head in turn)"},
    /* the page's name for --ablate-mode here: a request's "ablate_mode" switches its --ablate heads off */
    {.name = "mode",
     .type = PARAM_CHOICE,
     .offset = offsetof(AblateParams, po.ablate_mode),
     .help = "how --heads are switched off: zero, or mean (the CLI's --ablate-mode)",
     .flags = PARAM_REQUEST_ONLY,
     .choices = VIEW_ABLATE_MODES},
};

const View view_ablate = {
    .name = "ablate",
    .summary = "what the network loses without some heads (Secret 3)",
    .usage = "storylm ablate STORIES [options]",
    .description = "Measures the loss (nats per token) and accuracy (top guess right) over every predicted\n"
                   "position of the held-out test stories of STORIES, and at the name positions of\n"
                   "Secret 2 (where a story's hero comes back: loss, probability of the name's first\n"
                   "piece and accuracy there). Without --heads: a table with every single head switched\n"
                   "off, each compared with the intact network. With --heads 3,5: that set together.\n"
                   "A switched-off head's 16 numbers become 0, or with --ablate-mode mean its mean output\n"
                   "over the test stories. --ablate HEADS switches heads off in every row, the first too.",
    .params = params,
    .n_params = VIEW_N_PARAMS(params),
    .params_size = sizeof(AblateParams),
    .session = VIEW_SESSION_PROBE,
    .probe_flags = PROBE_HEADS | PROBE_NAMES,
    .serve = VIEW_SERVE_POST,
    .state_size = sizeof(AblateState),
    .build = build,
    .draw = draw,
};
