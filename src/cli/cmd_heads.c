/* storylm heads STORIES --model M [--model M2 ...]: Secret 1, the heads found
 * jobs. Per head, where its weight goes by distance back and which tokens it
 * reads most, on the held-out test stories; for several training snapshots,
 * the same for each, to watch the heads find their jobs. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "probe_common.h"
#include "storylm/svg.h"

static int run(int argc, char **argv);
const Command command_heads = {
    "heads", "where each head looks, across snapshots (Secret 1)", "storylm heads STORIES [options]",
    "For every head of the model, on the held-out test stories of STORIES: the share of its\n"
    "weight at each distance back (0 = the token itself, 1, 2, 3-7, 8-31, 32-255), its mean\n"
    "distance back, and the tokens it reads most (share of all its weight). Give several\n"
    "--model snapshots (storylm train --snapshot-every N writes OUT.stepN.safetensors) to\n"
    "see the table for each, in the order given. --svg FILE draws the distance shares as\n"
    "small multiples: one row per model, one panel per head. --ablate is refused: the\n"
    "table is where the heads look, which no head switched off changes here.",
    run};

typedef struct HeadsArgs {
    ProbeOptions po;
    StringList models;
    int top;
} HeadsArgs;

/* One row of small multiples: each head's distance shares as bars. */
/* One model's heads, a row of panels a layer (ROW_HEIGHT each). */
#define ROW_HEIGHT 160
static void draw_row(Svg *s, const HeadsResult *h, const ModelConfig *c, const char *label, double y) {
    static const char *const bins[HEAD_BINS] = {"0", "1", "2", "3-7", "8-31", "32+"};
    slm_svg_text(s, 10, y + 12, label, 12, SVG_START, 0, "black");
    for (int head = 0; head < h->n_heads; head++) {
        double values[HEAD_BINS];
        for (int b = 0; b < HEAD_BINS; b++) values[b] = h->mass[head * HEAD_BINS + b];
        SvgPanel p = {.x = 40 + head % c->n_heads * 180,
                      .y = y + 40 + head / c->n_heads * ROW_HEIGHT,
                      .w = 150,
                      .h = 80,
                      .y0 = 0,
                      .y1 = 1};
        char title[32], name[16];
        slm_head_name(c, head, name, sizeof name);
        snprintf(title, sizeof title, "head %s", name);
        slm_svg_axes(s, &p, title, NULL, NULL, 0);
        const char *color = slm_svg_palette(head);
        slm_svg_bars(s, &p, values, 1, HEAD_BINS, bins, &color, 0);
    }
}

static int run_heads(const HeadsArgs *a, const char *stories, Error *e) {
    Report r;
    slm_report_init(&r, "heads");
    ViewHeads vh = {0};
    Svg s = {0};
    int n = a->models.count ? a->models.count : 1, rc = 0, layers = 1;
    for (int k = 0; !rc && k < n; k++) {
        ProbeOptions po = a->po;
        po.model = a->models.count ? a->models.items[k] : cli_model_path(NULL, a->po.json);
        ProbeSession ps;
        HeadsResult h = {0};
        if ((rc = slm_probe_session_open(&ps, &po, "heads", stories,
                                         PROBE_ATTENTION_ONLY | PROBE_LAYERS | PROBE_TRANSFORMER, e)))
            break;
        if (k == 0) slm_view_heads_begin(&r, &ps, &vh);
        if (k == 0 && a->po.svg) { /* a row of panels a layer; every model has as many (slm_view_heads_add) */
            layers = slm_model_layers(&ps.lm.model.cfg);
            slm_svg_begin(&s, 1480, ROW_HEIGHT * n * layers + 60, "storylm heads: where each head looks");
            slm_svg_text(
                &s, 10, 24,
                "Share of each head's weight by distance back (0, 1, 2, 3-7, 8-31, 32-255), on the test stories", 14,
                SVG_START, 0, "black");
        }
        rc = slm_view_heads_add(&vh, &ps, k, a->top, &h, e);
        char label[256];
        slm_view_model_label(&ps, label, sizeof label);
        if (!rc && a->po.svg) draw_row(&s, &h, &ps.lm.model.cfg, label, 40 + ROW_HEIGHT * layers * k);
        slm_heads_result_free(&h);
        slm_probe_session_close(&ps);
    }
    if (!rc && a->po.svg) rc = slm_svg_save(&s, a->po.svg, e);
    if (a->po.svg && s.buf.data) slm_svg_free(&s);
    if (!rc) rc = probe_emit(&r, &a->po, e);
    slm_report_free(&r);
    return rc;
}

static int run(int argc, char **argv) {
    HeadsArgs a = {.po = PROBE_OPTIONS_DEFAULT, .top = 5};
    const char *pos[1];
    Option opts[] = {
        PROBE_MODELS_OPTION(a.models, "repeat for snapshots"),
        PROBE_OUTPUT_OPTIONS(a.po),
        PROBE_SVG_OPTION(a.po),
        PROBE_TEST_OPTION(a.po),
        {"top-k", 0, OPT_INT, &a.top, "K", "the K tokens read most, per head", 1, 100},
    };
    if (probe_refuse_ablation(&command_heads, argc, argv, "where each head's weight goes, measured with every head on"))
        return 2;
    int rc = probe_parse(&command_heads, argc, argv, opts, N_OPTIONS(opts), &a.po, pos, 1);
    if (rc >= 0) return rc;
    Error e = {0};
    return run_heads(&a, pos[0], &e) ? cli_fail(&e) : 0;
}
