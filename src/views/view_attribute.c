/* Which parts push a guess, and the surprisal of every token (attribute): see probe_views.h. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "storylm/probe_attribute.h"
#include "storylm/ablation.h"
#include "storylm/probe_views.h"
#include "storylm/report_header.h"
#include "storylm/svg.h"

/* The mean z over the test stories of --stories; *have 0 without it (the note then says which file to give). */
static int mean_input(const ProbeSession *ps, const AttributeParams *ap, double *mean_z, int *have, char *note,
                      size_t size, Error *e) {
    char warning[400];
    Error none = {0};
    const char *path = slm_ablation_mean_stories(&ps->lm, ap->stories, "the mean column", warning, sizeof warning,
                                                 ap->stories ? e : &none);
    *have = 0;
    if (!path && ap->stories) return -1;
    if (!path) {
        snprintf(note, size, "mean: left empty, no stories to average over (%.400s)", none.hint);
        return 0;
    }
    Stories s;
    StoriesOptions so = slm_stories_default_options();
    so.n_test = ap->n_test;
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
    char name[32];
    for (int k = 0; k < a->n_parts; k++) {
        snprintf(name, sizeof name, k == 0 ? "row" : "head %d", k - 1);
        slm_table_row(t);
        slm_cell_text(t, name);
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
    parts_table(r, a);
    double total = 0;
    for (int u = 0; u + 1 < a->n_positions; u++) total += a->surprisal[u];
    slm_report_number(r, "mean_surprisal", "mean surprisal (nats)",
                      a->n_positions > 1 ? total / (a->n_positions - 1) : NAN, 4);
    surprisal_table(r, ps, ids, a);
}

int slm_view_attribute(Report *rep, const ProbeSession *ps, const AttributeParams *ap, Error *e) {
    IntVec ids = {0};
    ProbeRunner r = {0};
    AttributeResult a = {0};
    char note[512] = "";
    int have_mean = 0, Z = slm_model_hidden_input_dim(&ps->lm.model.cfg);
    double *mean_z = xmalloc((size_t)Z * sizeof(double), e);
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
int slm_view_attribute_draw(const Report *r, const char *path, Error *e) {
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
