/* Which parts push a guess, and the surprisal of every token: the view attribute (registry.h), its entry at the end. */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "storylm/probe_attribute.h"
#include "storylm/ablation.h"
#include "storylm/probe_views.h"
#include "storylm/registry.h"
#include "storylm/report_header.h"
#include "storylm/svg.h"

typedef struct AttributeParams {
    ProbeOptions po;
    const char *text, *token;
    int pos; /* -1: the last */
} AttributeParams;

/* The mean z over the test stories of --stories; *have 0 without it (the note then says which file to give). */
static int mean_input(const ProbeSession *ps, const AttributeParams *ap, double *mean_z, int *have, char *note,
                      size_t size, Error *e) {
    char warning[400];
    Error none = {0};
    const char *path = slm_ablation_mean_stories(&ps->lm, ap->po.mean_stories, "the mean column", warning,
                                                 sizeof warning, ap->po.mean_stories ? e : &none);
    *have = 0;
    if (!path && ap->po.mean_stories) return -1;
    if (!path) {
        snprintf(note, size, "mean: left empty, no stories to average over (%.400s)", none.hint);
        return 0;
    }
    Stories s;
    StoriesOptions so = slm_stories_default_options();
    so.n_test = ap->po.n_test;
    if (slm_stories_load(&s, path, &ps->lm.tokenizer, &so, e)) return -1;
    int rc = s.n_test > 0
                 ? slm_probe_mean_z(&ps->lm.model, &s, s.test, s.n_test, mean_z, e)
                 : FAIL(e, "give --stories FILE with more stories", "'%s' has too few stories to hold any out", path);
    if (!rc)
        snprintf(note, size, "mean: over the %d test stories of %s%s%s", s.n_test, path,
                 warning[0] ? "; warning: " : "", warning);
    slm_stories_free(&s);
    *have = rc == 0;
    return rc;
}

static void parts_table(Report *r, const AttributeResult *a) {
    ReportTable *t = slm_report_table(r, "parts", "What each part adds to the logit");
    slm_table_column(t, "part", "part", CELL_TEXT, 0);
    slm_table_column(t, "norm", "length", CELL_NUMBER, 3);
    slm_table_column(t, "grad_x_act", "grad x act", CELL_NUMBER, 4);
    slm_table_column(t, "zero", "zero", CELL_NUMBER, 4);
    slm_table_column(t, "mean", "mean", CELL_NUMBER, 4);
    for (int k = 0; k < a->n_parts; k++) {
        slm_table_row(t);
        slm_cell_text(t, a->names[k]);
        slm_cell_number(t, a->norm[k]);
        slm_cell_number(t, a->grad_x_act[k]);
        slm_cell_number(t, a->zero_effect[k]);
        if (isfinite(a->mean_effect[k]))
            slm_cell_number(t, a->mean_effect[k]);
        else
            slm_cell_skip(t);
    }
}

static void surprisal_table(Report *r, const ProbeSession *ps, const IntVec *ids, const AttributeResult *a) {
    ReportTable *t = slm_report_table(r, "surprisal", "Surprisal of each token given the ones before");
    slm_table_column(t, "position", "pos", CELL_INT, 0);
    slm_table_column(t, "token", "token", CELL_TEXT, 0);
    slm_table_column(t, "id", "id", CELL_INT, 0);
    slm_table_column(t, "nats", "nats", CELL_NUMBER, 3);
    slm_table_column(t, "bits", "bits", CELL_NUMBER, 3);
    slm_table_column(t, "probability", "probability", CELL_PERCENT, 2);
    for (int u = 1; u < a->n_positions; u++) {
        double s = a->surprisal[u - 1];
        slm_table_row(t);
        slm_cell_int(t, u);
        slm_cell_text(t, slm_probe_session_token(ps, ids->data[u]));
        slm_cell_int(t, ids->data[u]);
        slm_cell_number(t, s);
        slm_cell_number(t, s / log(2.0));
        slm_cell_number(t, exp(-s));
    }
}

static void build_report(Report *r, const ProbeSession *ps, const char *text, const IntVec *ids,
                         const AttributeResult *a, const char *mean_note) {
    slm_report_header_session(r, ps);
    slm_report_text(r, "text", "text", text);
    slm_report_int(r, "position", "position", a->position);
    slm_report_text(r, "at", "token there", slm_probe_session_token(ps, ids->data[a->position]));
    slm_report_text(r, "token", "next token", slm_probe_session_token(ps, a->token));
    slm_report_int(r, "token_id", "next token id", a->token);
    slm_report_number(r, "logit", "its logit", a->logit, 4);
    slm_report_percent(r, "probability", "its probability", a->probability, 2);
    slm_report_int(r, "rank", "its rank", a->rank);
    slm_report_note(r, "%s", mean_note);
    if (a->scope) slm_report_note(r, "%s", a->scope);
    parts_table(r, a);
    double total = 0;
    for (int u = 0; u + 1 < a->n_positions; u++) total += a->surprisal[u];
    slm_report_number(r, "mean_surprisal", "mean surprisal (nats)",
                      a->n_positions > 1 ? total / (a->n_positions - 1) : NAN, 4);
    surprisal_table(r, ps, ids, a);
}

static int attribute(Report *rep, const ProbeSession *ps, const AttributeParams *ap, Error *e) {
    IntVec ids = {0};
    ProbeRunner r = {0};
    AttributeResult a = {0};
    char note[512] = "";
    int have_mean = 0;
    double *mean_z = xmalloc(slm_probe_mean_z_len(&ps->lm.model.cfg) * sizeof(double), e);
    int rc = !mean_z || slm_view_encode(ps, ap->text, &ids, e);
    int T = (int)ids.len, p = ap->pos < 0 ? T + ap->pos : ap->pos;
    if (!rc && (p < 0 || p >= T))
        rc = FAIL(e,
                  "give --pos from 0 ([EOS]) to the last token, or from -1 (the last) back; 'storylm tokenize' shows "
                  "the positions",
                  "--pos %d is outside the text's %d positions", ap->pos, T);
    if (!rc) rc = slm_probe_runner_init(&r, &ps->lm.model, T, e) || slm_probe_run(&r, ids.data, T, &ps->ablation, e);
    int32_t token = -1;
    if (!rc)
        rc = ap->token ? slm_view_token_id(ps, ap->token, "--token", &token, e)
                       : (token = slm_view_top_guess(&r.acts, p, -1), 0);
    if (!rc) rc = mean_input(ps, ap, mean_z, &have_mean, note, sizeof note, e);
    if (!rc) rc = slm_probe_attribute(&ps->lm.model, &r.acts, p, token, have_mean ? mean_z : NULL, &a, e);
    if (!rc) build_report(rep, ps, ap->text, &ids, &a, note);
    slm_attribute_result_free(&a);
    slm_probe_runner_free(&r);
    slm_intvec_free(&ids);
    free(mean_z);
    return rc ? -1 : 0;
}

/* The parts' three measures as grouped bars, then the surprisal of every token. */
static int draw(ViewCall *c, const char *path, Error *e) {
    const Report *r = c->report;
    const ReportTable *parts = slm_report_find_table(r, "parts"), *sur = slm_report_find_table(r, "surprisal");
    if (!parts || !sur) return FAIL(e, NULL, "no attribution tables to draw");
    int P = parts->n_rows, T = sur->n_rows + 1;
    double *values = malloc((size_t)(3 * P + T) * sizeof(double));
    const char **labels = malloc((size_t)(P + T) * sizeof *labels);
    if (!values || !labels) {
        free(values), free(labels);
        return FAIL(e, NULL, "out of memory drawing the attribution");
    }
    double lo = 0, hi = 0, top = 1;
    for (int k = 0; k < P; k++) {
        values[k] = slm_table_number(parts, k, 2), values[P + k] = slm_table_number(parts, k, 3),
        values[2 * P + k] = slm_table_number(parts, k, 4);
        labels[k] = slm_table_text(parts, k, 0);
    }
    for (int i = 0; i < 3 * P; i++)
        if (isfinite(values[i])) lo = fmin(lo, values[i]), hi = fmax(hi, values[i]);
    double *s = values + 3 * P;
    for (int u = 1; u < T; u++)
        s[u - 1] = slm_table_number(sur, u - 1, 3), top = fmax(top, s[u - 1]),
              labels[P + u - 1] = slm_table_text(sur, u - 1, 1);
    Svg svg;
    double width = fmax(900, 120 + 14.0 * T);
    slm_svg_begin(&svg, width, 760, "storylm attribute");
    char title[200];
    snprintf(title, sizeof title, "What pushes '%s' at position %d (logit %.3f)", slm_report_find_text(r, "token"),
             (int)slm_report_find_number(r, "position"), slm_report_find_number(r, "logit"));
    slm_svg_text(&svg, 20, 24, title, 15, SVG_START, 0, "black");
    SvgPanel p1 = {.x = 70, .y = 60, .w = width - 260, .h = 250, .y0 = 1.1 * lo, .y1 = hi > lo ? 1.1 * hi : lo + 1};
    slm_svg_axes(&svg, &p1, "each part: gradient x activation, zero removal, mean removal", NULL, "logit", 0);
    slm_svg_bars(&svg, &p1, values, 3, P, labels, NULL, 0);
    const char *series[3] = {"grad x act", "zero", "mean"},
               *colors[3] = {slm_svg_palette(0), slm_svg_palette(1), slm_svg_palette(2)};
    slm_svg_legend(&svg, width - 170, 70, series, colors, 3);
    SvgPanel p2 = {.x = 70, .y = 400, .w = width - 110, .h = 250, .y0 = 0, .y1 = 1.1 * top};
    slm_svg_axes(&svg, &p2, "surprisal of each token (nats)", NULL, "nats", 0);
    slm_svg_bars(&svg, &p2, s, 1, T - 1, labels + P, NULL, 1);
    int rc = slm_svg_save(&svg, path, e);
    slm_svg_free(&svg);
    free(values), free(labels);
    return rc;
}

static int build(ViewCall *c, Error *e) { return attribute(c->report, c->ps, c->params, e); }

static const Param params[] = {
    VIEW_ARG(AttributeParams, text, "TEXT", PARAM_REQUIRED | PARAM_TEXT),
    VIEW_PARAMS_COMMON(AttributeParams),
    VIEW_PARAM_KERNELS(AttributeParams),
    VIEW_PARAMS_SVG(AttributeParams),
    VIEW_PARAM_MEAN_STORIES(AttributeParams),
    VIEW_PARAM_TEST_STORIES(AttributeParams),
    VIEW_INT_PARAM(AttributeParams, pos, "pos", "N", "position to take apart, 0 = [EOS]; negative: from the end", -1e9,
                   1e9, -1),
    VIEW_STRING_PARAM(AttributeParams, token, "token", "T",
                      "next token whose logit is taken apart (default: the top guess)"),
};
const View view_attribute = {
    .name = "attribute",
    .summary = "which parts push a guess: gradient x activation, removal, surprisal",
    .usage = "storylm attribute TEXT [options]",
    .description = "Runs [EOS] and the text through the network. At position --pos (0 is [EOS]; negative\n"
                   "counts from the end; default: the last token) the hidden layer reads z = [the token's row (32), "
                   "head 0 (16), ..., "
                   "head 7]\n"
                   "and the next token --token (default: the top guess there) gets the logit\n"
                   "W2[token] tanh(W1 z + b1) + b2[token]. For the row and each head it shows:\n"
                   "  grad x act   the sum over the part's numbers of d logit / d z_i times z_i: a\n"
                   "               first-order estimate of what the part adds\n"
                   "  zero         the exact change of the logit when the part's numbers are set to 0\n"
                   "  mean         the same with the part set to its mean over the test stories (the\n"
                   "               mean row, the head's mean output) of --stories FILE (the model file\n"
                   "               names the file it was trained on); left empty without it\n"
                   "Only the part's own slot of z is removed: the row also reaches the guess through the\n"
                   "heads' queries, keys and values, which 'storylm patch' measures. A large gap between\n"
                   "grad x act and the removals shows where tanh is far from linear.\n"
                   "Then the surprisal of every token, -log p(token | the tokens before), in nats and bits,\n"
                   "so you see where the network is surprised. --ablate switches heads off first (their\n"
                   "parts then hold the replacement). --svg FILE draws both.\n"
                   "On a transformer the parts are the residual stream's before the final LN: embed,\n"
                   "pos_embed, each head's z W_O, each block's b_O and MLP output; grad x act is their\n"
                   "direct logit attribution through ln_final with its scale frozen (TransformerLens's),\n"
                   "zero and mean take the part out of the final LN's input (docs/transformer.md).\n"
                   "On a model of several layers (--layers) z = [row, layer 1's heads, ..., layer N's heads]\n"
                   "and the parts are the row and every layer's heads (head 2:3): removing a lower layer's\n"
                   "head takes out its slot of z only, not its path through the heads above (patch does).",
    .params = params,
    .n_params = VIEW_N_PARAMS(params),
    .params_size = sizeof(AttributeParams),
    .session = VIEW_SESSION_PROBE,
    .probe_flags = PROBE_HEADS,
    .build = build,
    .draw = draw,
};
