/* storylm distances: Tool 2, where as well as what: every head's learned
 * score for each distance back, added to q.k/sqrt(8) before softmax. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "probe_common.h"
#include "storylm/svg.h"

static int run(int argc, char **argv);
const Command command_distances = {
    "distances", "the heads' learned distance scores (Tool 2)", "storylm distances [options]",
    "Prints the 8 heads' learned distance scores: the number added to each score for\n"
    "every distance back, 0 (the token itself) to 255. A head with a high score at\n"
    "distance 1 reads the token just before; one with flat scores reads by content alone.\n"
    "--svg FILE draws them as 8 curves, over all 256 distances and over the first 32.\n"
    "No head switched off changes them: they are weights, so --ablate is refused.",
    run};

/* One panel of every head's curve over distances 0..last. */
static void draw_panel(Svg *s, const Model *m, int last, double x, double y, const char *title) {
    const ModelConfig *c = &m->cfg;
    double lo = 0, hi = 0, xs[4096], ys[4096];
    for (size_t i = 0; i < (size_t)c->n_heads * c->window; i++) {
        lo = fmin(lo, m->distance[i]);
        hi = fmax(hi, m->distance[i]);
    }
    SvgPanel p = {.x = x, .y = y, .w = 560, .h = 300, .x0 = 0, .x1 = last, .y0 = lo, .y1 = hi > lo ? hi : lo + 1};
    slm_svg_axes(s, &p, title, "distance back", "score", 1);
    for (int h = 0; h < c->n_heads; h++) {
        int n = last + 1 < 4096 ? last + 1 : 4096;
        for (int d = 0; d < n; d++) {
            xs[d] = d;
            ys[d] = m->distance[(size_t)h * c->window + d];
        }
        slm_svg_polyline(s, &p, xs, ys, n, slm_svg_palette(h), 1.6);
    }
}

static int draw(const char *path, const Model *m, Error *e) {
    const char *names[32], *colors[32];
    char buf[32][16];
    int H = m->cfg.n_heads < 32 ? m->cfg.n_heads : 32;
    for (int h = 0; h < H; h++) {
        snprintf(buf[h], sizeof buf[h], "head %d", h);
        names[h] = buf[h];
        colors[h] = slm_svg_palette(h);
    }
    Svg s;
    slm_svg_begin(&s, 1380, 420, "storylm distances: the heads' distance scores");
    slm_svg_text(&s, 20, 24, "Each head's learned score for each distance back (added to q.k/sqrt(8) before softmax)",
                 14, SVG_START, 0, "black");
    draw_panel(&s, m, m->cfg.window - 1, 70, 60, "all distances");
    draw_panel(&s, m, m->cfg.window < 32 ? m->cfg.window - 1 : 31, 700, 60, "the first 32");
    slm_svg_legend(&s, 1280, 60, names, colors, H);
    int rc = slm_svg_save(&s, path, e);
    slm_svg_free(&s);
    return rc;
}

/* --pos alibi|t5: the same drawing over the scheme's table of scores. */
static int draw_scheme(const char *path, const Model *m, Error *e) {
    if (m->cfg.pos == POS_DISTANCE) return draw(path, m, e);
    Model shown = *m;
    float *table = xmalloc((size_t)m->cfg.n_heads * m->cfg.window * sizeof(float), e);
    if (!table) return -1;
    slm_position_distance_table(m, table);
    shown.distance = table;
    int rc = draw(path, &shown, e);
    free(table);
    return rc;
}

/* A transformer's block l shown as a model of one layer whose "distance"
 * holds the block's scores per distance back (its scheme's: distance, alibi,
 * t5), so the table and drawing read it as the attention network's. */
static int transformer_block_scores(const Model *m, int l, Model *shown, float **table, Error *e) {
    *table = xmalloc((size_t)m->cfg.n_heads * m->cfg.window * sizeof(float), e);
    if (!*table) return -1;
    TfViews v;
    slm_transformer_views(m, m->params, &v);
    slm_transformer_distance_table(&m->cfg, &v.block[l], *table);
    *shown = *m;
    shown->distance = *table;
    shown->cfg.pos = POS_DISTANCE;
    return 0;
}

static int run(int argc, char **argv) {
    ProbeOptions po = PROBE_OPTIONS_DEFAULT;
    int up_to = 255, np, layer = 1;
    Option opts[] = {
        PROBE_MODEL_OPTION(po),
        PROBE_OUTPUT_OPTIONS(po),
        PROBE_SVG_OPTION(po),
        {"up-to", 0, OPT_INT, &up_to, "D", "print distances 0 to D", 0, 100000},
        {"layer", 0, OPT_INT, &layer, "L",
         "the layer (or transformer block) whose heads to show, on a model of several", 1, STORYLM_MAX_TF_LAYERS},
    };
    if (probe_refuse_ablation(&command_distances, argc, argv, "weights, read before any forward pass")) return 2;
    int rc = args_parse(&command_distances, argc, argv, opts, N_OPTIONS(opts), NULL, 0, 0, &np);
    if (rc) return rc > 0 ? 0 : 2;
    cli_set_threads(po.threads);
    po.model = cli_model_path(po.model, po.json);
    Error e = {0};
    ProbeSession ps;
    if (slm_probe_session_open(&ps, &po, "distances", NULL, PROBE_ATTENTION_ONLY | PROBE_LAYERS | PROBE_TRANSFORMER,
                               &e))
        return cli_fail(&e);
    if (slm_variant_check(&ps.lm.model.cfg, "distances", VARIANT_NEEDS_DISTANCE, &e) ||
        (layer > slm_model_layers(&ps.lm.model.cfg) &&
         FAIL(&e, "give --layer from 1 to the model's layers", "--layer %d: '%s' has %d layer(s)", layer, ps.model_path,
              slm_model_layers(&ps.lm.model.cfg)))) {
        slm_probe_session_close(&ps);
        return cli_fail(&e);
    }
    Model whole = ps.lm.model; /* the view of --layer's tensors, shown as the model; put back before closing */
    float *table = NULL;
    if (whole.cfg.arch == ARCH_TRANSFORMER && transformer_block_scores(&whole, layer - 1, &ps.lm.model, &table, &e)) {
        slm_probe_session_close(&ps);
        return cli_fail(&e);
    }
    if (whole.cfg.arch != ARCH_TRANSFORMER) slm_model_layer_view(&whole, layer - 1, &ps.lm.model);
    Report r;
    slm_report_init(&r, "distances");
    slm_view_distances(&r, &ps, up_to);
    rc = po.svg ? draw_scheme(po.svg, &ps.lm.model, &e) : 0;
    if (!rc) rc = probe_emit(&r, &po, &e);
    slm_report_free(&r);
    ps.lm.model = whole;
    free(table);
    slm_probe_session_close(&ps);
    return rc ? cli_fail(&e) : 0;
}
