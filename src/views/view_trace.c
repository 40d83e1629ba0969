/* The view trace: Tool 3, the network around it. The last token of a
 * phrase followed through: its row, each head's 16 numbers (the 160 inputs
 * of the hidden layer), the most active hidden units and the top guesses. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "storylm/registry.h"
#include "storylm/views.h"
#include "storylm/svg.h"

typedef struct TraceParams {
    ProbeOptions po;
    const char *text;
    int units, guesses, pos, layer;
} TraceParams;

typedef struct TraceState {
    ViewText vt;
    TraceResult t;
    int ran;
} TraceState;

/* The 160 inputs as bars coloured by part, the hidden layer, and the guesses. */
static int draw_trace(const char *path, const ProbeSession *ps, const TraceResult *t, Error *e) {
    const ModelConfig *c = &ps->lm.model.cfg;
    int Z = t->n_inputs;
    double lo = -1, hi = 1;
    for (int i = 0; i < Z; i++) lo = fmin(lo, t->z[i]), hi = fmax(hi, t->z[i]);
    Svg s;
    slm_svg_begin(&s, 1000, 760, "storylm trace");
    char title[160];
    snprintf(title, sizeof title, "Following '%s' (position %d) through the network",
             slm_probe_session_token(ps, t->token), t->position);
    slm_svg_text(&s, 20, 24, title, 15, SVG_START, 0, "black");
    SvgPanel p = {.x = 60, .y = 60, .w = 820, .h = 180, .x0 = 0, .x1 = Z, .y0 = lo, .y1 = hi};
    char axis[96]; /* the model's own sizes: 160 inputs and heads 0-7 on the chapter's network */
    snprintf(axis, sizeof axis, "the %d inputs: row (grey), then heads 0-%d", Z, c->n_heads - 1);
    slm_svg_axes(&s, &p, axis, NULL, "value", 0);
    for (int i = 0; i < Z; i++) {
        int part = i < c->row_dim ? -1 : (i - c->row_dim) / c->value_dim;
        double y = slm_svg_py(&p, t->z[i]), y0 = slm_svg_py(&p, 0);
        slm_svg_rect(&s, slm_svg_px(&p, i), fmin(y, y0), p.w / Z * 0.9, fabs(y - y0),
                     part < 0 ? "#999" : slm_svg_palette(part), "none", NULL);
    }
    const char *parts[9] = {"row"}, *part_colors[9] = {"#999"};
    char heads[8][16];
    for (int h = 0; h < c->n_heads && h < 8; h++) {
        snprintf(heads[h], sizeof heads[h], "head %d", h);
        parts[h + 1] = heads[h], part_colors[h + 1] = slm_svg_palette(h);
    }
    slm_svg_legend(&s, 900, 60, parts, part_colors, 1 + (c->n_heads < 8 ? c->n_heads : 8));
    SvgPanel ph = {.x = 60, .y = 300, .w = 820, .h = 150, .x0 = 0, .x1 = c->hidden_dim, .y0 = -1, .y1 = 1};
    snprintf(axis, sizeof axis, "the %d hidden units (%s)", c->hidden_dim,
             c->arch->readout == READOUT_RESIDUAL ? "the MLP's neurons" : "tanh");
    if (c->hidden_dim > 0) slm_svg_axes(&s, &ph, axis, NULL, "value", 0); /* attn-only's blocks have none */
    for (int i = 0; i < c->hidden_dim; i++) {
        double y = slm_svg_py(&ph, t->hidden[i]), y0 = slm_svg_py(&ph, 0);
        slm_svg_rect(&s, slm_svg_px(&ph, i), fmin(y, y0), ph.w / c->hidden_dim * 0.9, fabs(y - y0), "#555", "none",
                     NULL);
    }
    double probs[64];
    const char *labels[64];
    int n = t->n_guesses < 64 ? t->n_guesses : 64;
    for (int k = 0; k < n; k++)
        probs[k] = t->guesses[k].probability, labels[k] = slm_probe_session_token(ps, t->guesses[k].token);
    SvgPanel pg = {.x = 60, .y = 510, .w = 820, .h = 170, .y0 = 0, .y1 = n > 0 ? fmax(probs[0], 0.01) : 1};
    slm_svg_axes(&s, &pg, "top next-token guesses (probability)", NULL, "probability", 0);
    slm_svg_bars(&s, &pg, probs, 1, n, labels, NULL, 1);
    int rc = slm_svg_save(&s, path, e);
    slm_svg_free(&s);
    return rc;
}

static int draw(ViewCall *c, const char *path, Error *e) {
    return draw_trace(path, c->ps, &((const TraceState *)c->state)->t, e);
}

/* The whole text run, as the server runs it: the same bits. */
static int build(ViewCall *c, Error *e) {
    const TraceParams *p = c->params;
    TraceState *st = c->state;
    st->ran = 1;
    /* st->vt is this call's copy of the run (the server's kept run is shared): its layer is this call's */
    if (slm_view_run_text(c, p->text, p->pos, 0, &st->vt, e) || slm_probe_runner_layer(&st->vt.runner, p->layer, e))
        return -1;
    return slm_view_trace(c->report, c->ps, &st->vt, p->text, p->units, p->guesses, &st->t, e);
}

static void done(ViewCall *c) {
    TraceState *st = c->state;
    slm_trace_result_free(&st->t);
    if (st->ran) slm_view_release_text(c, &st->vt);
}

static const Param params[] = {
    VIEW_ARG(TraceParams, text, "TEXT", PARAM_REQUIRED | PARAM_TEXT),
    VIEW_PARAMS_COMMON(TraceParams),
    VIEW_PARAM_KERNELS(TraceParams),
    VIEW_PARAMS_SVG(TraceParams),
    VIEW_PARAM_MEAN_STORIES(TraceParams),
    VIEW_INT_PARAM(TraceParams, units, "units", "N", "most active hidden units to show", 1, 4096, 10),
    {.name = "top-k",
     .type = PARAM_INT,
     .offset = offsetof(TraceParams, guesses),
     .meta = "K",
     .help = "the K most likely next tokens to show",
     .min = 1,
     .max = 64,
     .def = 10,
     .alias = "top"},
    VIEW_INT_PARAM(TraceParams, pos, "pos", "N", "the position followed (0 is [EOS]); negative: from the end", -1000000,
                   1000000, -1),
    VIEW_INT_PARAM(TraceParams, layer, "layer", "L", "the layer (or transformer block) whose heads to show", 1,
                   STORYLM_MAX_TF_LAYERS, 1),
};

const View view_trace = {
    .name = "trace",
    .summary = "follow a token through the network (Tool 3)",
    .usage = "storylm trace TEXT [options]",
    .description = "Runs [EOS] and the text through the network and follows its last token (or the one at\n"
                   "--pos: 0 is [EOS], negative counts from the end; what follows it plays no part): the\n"
                   "numbers the hidden layer reads (in the chapter's network 160: the token's row of 32, then\n"
                   "each head's 16), the most active of its hidden units (128 there; a transformer's MLP\n"
                   "neurons of the block --layer), with the input part that pushes each hardest (W1 times\n"
                   "that part of the inputs), and the most likely next tokens with their probabilities.\n"
                   "--ablate HEADS shows the same with those heads switched off. --svg FILE draws it.",
    .params = params,
    .n_params = VIEW_N_PARAMS(params),
    .params_size = sizeof(TraceParams),
    .session = VIEW_SESSION_PROBE,
    .probe_flags = PROBE_HEADS,
    .state_size = sizeof(TraceState),
    .build = build,
    .draw = draw,
    .done = done,
};
