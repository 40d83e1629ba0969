/* storylm trace TEXT: Tool 3, the network around it. The last token of a
 * phrase followed through: its row, each head's 16 numbers (the 160 inputs
 * of the hidden layer), the most active hidden units and the top guesses. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "probe_common.h"
#include "storylm/svg.h"

static int run(int argc, char **argv);
const Command command_trace = {
    "trace", "Tool 3: follow the last token through the network", "storylm trace TEXT [options]",
    "Runs [EOS] and the text through the network and follows its last token: the 160\n"
    "numbers the hidden layer reads (the token's row of 32, then each head's 16), the most\n"
    "active of the 128 hidden units (with the input part that pushes each hardest: W1 times\n"
    "that part of the inputs) and the most likely next tokens with their probabilities.\n"
    "--ablate HEADS shows the same with those heads switched off. --svg FILE draws it.",
    run};

static void inputs_table(Report *r, const TraceResult *t, const ModelConfig *c) {
    ReportTable *in = report_table(r, "inputs", "What the hidden layer reads (the row, then each head's output)");
    table_column(in, "part", "part", CELL_TEXT, 0);
    table_column(in, "norm", "length", CELL_NUMBER, 3);
    table_column(in, "numbers", "numbers", CELL_VECTOR, 2);
    char name[32];
    for (int k = -1; k < c->n_heads; k++) {
        int from = k < 0 ? 0 : c->row_dim + k * c->value_dim, n = k < 0 ? c->row_dim : c->value_dim;
        double len = 0;
        for (int i = 0; i < n; i++) len += (double)t->z[from + i] * t->z[from + i];
        snprintf(name, sizeof name, k < 0 ? "row" : "head %d", k);
        table_row(in);
        cell_text(in, name);
        cell_number(in, sqrt(len));
        cell_vector(in, t->z + from, n);
    }
}

static void build_report(Report *r, const ProbeSession *ps, const TraceResult *t, const char *text) {
    probe_report_header(r, ps);
    report_text(r, "text", "text", text);
    report_int(r, "position", "last position", t->position);
    report_text(r, "token", "last token", probe_token(ps, t->token));
    inputs_table(r, t, &ps->lm.model.cfg);
    ReportTable *u = report_table(r, "hidden", "Most active hidden units (tanh output)");
    table_column(u, "unit", "unit", CELL_INT, 0);
    table_column(u, "value", "value", CELL_NUMBER, 3);
    table_column(u, "strongest_part", "pushed most by", CELL_TEXT, 0);
    table_column(u, "part_input", "its input", CELL_NUMBER, 3);
    char part[32];
    for (int k = 0; k < t->n_units; k++) {
        snprintf(part, sizeof part, t->units[k].part < 0 ? "row" : "head %d", t->units[k].part);
        table_row(u);
        cell_int(u, t->units[k].unit);
        cell_number(u, t->units[k].value);
        cell_text(u, part);
        cell_number(u, t->units[k].part_input);
    }
    ReportTable *g = report_table(r, "guesses", "Top next-token guesses");
    table_column(g, "rank", "rank", CELL_INT, 0);
    table_column(g, "token", "token", CELL_TEXT, 0);
    table_column(g, "id", "id", CELL_INT, 0);
    table_column(g, "probability", "probability", CELL_PERCENT, 2);
    for (int k = 0; k < t->n_guesses; k++) {
        table_row(g);
        cell_int(g, k + 1);
        cell_text(g, probe_token(ps, t->guesses[k].token));
        cell_int(g, t->guesses[k].token);
        cell_number(g, t->guesses[k].probability);
    }
}

/* The 160 inputs as bars coloured by part, the hidden layer, and the guesses. */
static int draw(const char *path, const ProbeSession *ps, const TraceResult *t, Error *e) {
    const ModelConfig *c = &ps->lm.model.cfg;
    int Z = model_hidden_input_dim(c);
    double lo = -1, hi = 1;
    for (int i = 0; i < Z; i++) lo = fmin(lo, t->z[i]), hi = fmax(hi, t->z[i]);
    Svg s;
    svg_begin(&s, 1000, 760, "storylm trace");
    char title[160];
    snprintf(title, sizeof title, "Following '%s' (position %d) through the network", probe_token(ps, t->token),
             t->position);
    svg_text(&s, 20, 24, title, 15, SVG_START, 0, "black");
    SvgPanel p = {.x = 60, .y = 60, .w = 900, .h = 180, .x0 = 0, .x1 = Z, .y0 = lo, .y1 = hi};
    svg_axes(&s, &p, "the 160 inputs: row (grey), then heads 0-7", NULL, "value", 0);
    for (int i = 0; i < Z; i++) {
        int part = i < c->row_dim ? -1 : (i - c->row_dim) / c->value_dim;
        double y = svg_py(&p, t->z[i]), y0 = svg_py(&p, 0);
        svg_rect(&s, svg_px(&p, i), fmin(y, y0), p.w / Z * 0.9, fabs(y - y0), part < 0 ? "#999" : svg_palette(part),
                 "none", NULL);
    }
    SvgPanel ph = {.x = 60, .y = 300, .w = 900, .h = 150, .x0 = 0, .x1 = c->hidden_dim, .y0 = -1, .y1 = 1};
    svg_axes(&s, &ph, "the 128 hidden units (tanh)", NULL, "value", 0);
    for (int i = 0; i < c->hidden_dim; i++) {
        double y = svg_py(&ph, t->hidden[i]), y0 = svg_py(&ph, 0);
        svg_rect(&s, svg_px(&ph, i), fmin(y, y0), ph.w / c->hidden_dim * 0.9, fabs(y - y0), "#555", "none", NULL);
    }
    double probs[64];
    const char *labels[64];
    int n = t->n_guesses < 64 ? t->n_guesses : 64;
    for (int k = 0; k < n; k++) probs[k] = t->guesses[k].probability, labels[k] = probe_token(ps, t->guesses[k].token);
    SvgPanel pg = {.x = 60, .y = 510, .w = 900, .h = 170, .y0 = 0, .y1 = n > 0 ? fmax(probs[0], 0.01) : 1};
    svg_axes(&s, &pg, "top next-token guesses (probability)", NULL, "probability", 0);
    svg_bars(&s, &pg, probs, 1, n, labels, NULL, 1);
    int rc = svg_save(&s, path, e);
    svg_free(&s);
    return rc;
}

static int trace(const ProbeOptions *po, const char *text, int n_units, int n_guesses, Error *e) {
    ProbeSession ps;
    if (probe_session_open(&ps, po, "trace", NULL, PROBE_ATTENTION_ONLY, e)) return -1;
    IntVec ids = {0};
    ProbeRunner r = {0};
    TraceResult t = {0};
    Report rep;
    report_init(&rep, "trace");
    int rc = intvec_push(&ids, ps.lm.tokenizer.eos_id, e) || tokenizer_encode(&ps.lm.tokenizer, text, strlen(text), &ids, e);
    if (!rc) rc = probe_runner_init(&r, &ps.lm.model, (int)ids.len, e) || probe_run(&r, ids.data, (int)ids.len, &ps.ablation, e);
    if (!rc) rc = probe_trace(&r, n_units, n_guesses, &t, e);
    if (!rc) build_report(&rep, &ps, &t, text);
    if (!rc && po->svg) rc = draw(po->svg, &ps, &t, e);
    if (!rc) rc = probe_emit(&rep, po, e);
    report_free(&rep);
    trace_result_free(&t);
    probe_runner_free(&r);
    intvec_free(&ids);
    probe_session_close(&ps);
    return rc ? -1 : 0;
}

static int run(int argc, char **argv) {
    ProbeOptions po = PROBE_OPTIONS_DEFAULT;
    int units = 10, guesses = 10;
    const char *pos[1];
    Option opts[] = {
        PROBE_COMMON_OPTIONS(po),
        PROBE_SVG_OPTION(po),
        PROBE_MEAN_STORIES_OPTION(po),
        {"units", 0, OPT_INT, &units, "N", "most active hidden units to show", 1, 4096},
        {"top", 0, OPT_INT, &guesses, "K", "next-token guesses to show", 1, 64},
    };
    int rc = probe_parse(&command_trace, argc, argv, opts, N_OPTIONS(opts), &po, pos, 1);
    if (rc >= 0) return rc;
    Error e = {0};
    return trace(&po, pos[0], units, guesses, &e) ? cli_fail(&e) : 0;
}
