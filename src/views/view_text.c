/* Views of a typed text: see views.h. Tool 1 (attend), Tool 3 (trace) and
 * the loss on a text (eval --text). Moved from the CLI's verbs. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "storylm/head_list.h"
#include "storylm/text.h"
#include "storylm/report_header.h"
#include "storylm/views.h"

int slm_view_text_at(ViewText *vt, int pos, Error *e) {
    int T = (int)vt->ids.len;
    vt->pos = pos < 0 ? T + pos : pos;
    if (vt->pos >= 0 && vt->pos < T) return 0;
    return FAIL(e, "positions run from 0 ([EOS]) to the number of tokens; -1 is the last",
                "--pos %d is outside the text's %d positions", pos, T);
}

int slm_view_text_run(ViewText *vt, const ProbeSession *ps, const char *text, int pos, int how, Error *e) {
    *vt = (ViewText){0};
    int rc = slm_text_check(text, strlen(text), "the text", e) ||
             slm_intvec_push(&vt->ids, ps->lm.tokenizer.eos_id, e) ||
             slm_tokenizer_encode(&ps->lm.tokenizer, text, strlen(text), &vt->ids, e) || slm_view_text_at(vt, pos, e);
    int T = (int)vt->ids.len;
    int n = how & VIEW_RUN_PREFIX ? vt->pos + 1 : T;
    if (!rc) rc = slm_probe_runner_init(&vt->runner, &ps->lm.model, n, e);
    if (!rc) vt->runner.heads_only = (how & VIEW_RUN_HEADS) != 0;
    if (!rc) rc = slm_probe_run(&vt->runner, vt->ids.data, n, &ps->ablation, e);
    if (rc) slm_view_text_free(vt);
    return rc ? -1 : 0;
}

void slm_view_text_free(ViewText *vt) {
    slm_probe_runner_free(&vt->runner);
    slm_intvec_free(&vt->ids);
    *vt = (ViewText){0};
}

int slm_view_head(const ModelConfig *c, const char *head, int layer, int all, int *out_layer, int *out_head, Error *e) {
    *out_layer = layer, *out_head = -1;
    if (!head && !all) {
        FAIL(e, "give one head, like 3 or 2:3", "is missing: this view reads one head");
        slm_error_set_param(e, ERROR_PARAM_MISSING, "head", "head", NULL, 0, 0);
        return -1;
    }
    if (!head || slm_head_parse(head, c, layer, all, "head", out_layer, out_head, e)) return head ? -1 : 0;
    if (*out_layer == layer || layer == 1) return 0; /* the layer's default gives way to L:H */
    FAIL(e, "name the layer once: L:H alone, or the layer and a plain H", "names layer %d, and the layer given is %d",
         *out_layer, layer);
    slm_error_set_param(e, ERROR_PARAM_VALUE, "head", "head", head, 1, 0);
    return -1;
}

/* ---- Tool 1: attend ---------------------------------------------------------- */

static void add_keys(ReportTable *t, const ProbeSession *ps, const ProbeRunner *r, int h, int p, AttendKey *keys) {
    int n = slm_probe_attend(r, h, p, keys);
    for (int j = n - 1; j >= 0; j--) { /* nearest first, as one reads back */
        const AttendKey *k = &keys[j];
        slm_table_row(t);
        slm_cell_int(t, h);
        slm_cell_int(t, k->position);
        slm_cell_text(t, slm_probe_session_token(ps, k->token));
        slm_cell_int(t, k->token);
        slm_cell_int(t, k->distance);
        slm_cell_number(t, k->dot);
        slm_cell_number(t, k->distance_score);
        slm_cell_number(t, k->score);
        slm_cell_number(t, k->weight);
        slm_cell_number(t, k->cosine);
    }
}

/* What both layouts start with: the tokens, the reading position and token. */
static void attend_header(Report *r, const ProbeSession *ps, const ViewText *vt) {
    const IntVec *ids = &vt->ids;
    slm_report_header_session(r, ps);
    ReportTable *tokens = slm_report_table(r, "tokens", "Tokens (position, id, text)");
    slm_table_column(tokens, "position", "pos", CELL_INT, 0);
    slm_table_column(tokens, "id", "id", CELL_INT, 0);
    slm_table_column(tokens, "token", "token", CELL_TEXT, 0);
    for (size_t i = 0; i < ids->len; i++) {
        slm_table_row(tokens);
        slm_cell_int(tokens, (long long)i);
        slm_cell_int(tokens, ids->data[i]);
        slm_cell_text(tokens, slm_probe_session_token(ps, ids->data[i]));
    }
    slm_report_int(r, "position", "reading position", vt->pos);
    slm_report_text(r, "token", "reading token", slm_probe_session_token(ps, ids->data[vt->pos]));
    if (slm_model_layers(&ps->lm.model.cfg) > 1) slm_report_int(r, "layer", "layer", vt->runner.layer + 1);
}

void slm_view_attend(Report *r, const ProbeSession *ps, const ViewText *vt, int head) {
    const ProbeRunner *run_ = &vt->runner;
    int p = vt->pos;
    attend_header(r, ps, vt);
    ReportTable *t = slm_report_table(r, "keys", "What it reads (nearest first)");
    const char *keys[][2] = {{"head", "head"},
                             {"position", "pos"},
                             {"token", "token"},
                             {"id", "id"},
                             {"distance", "dist"},
                             {"dot", "q.k/sqrt8"},
                             {"distance_score", "dist.score"},
                             {"score", "score"},
                             {"weight", "weight"},
                             {"cosine", "cos(rows)"}};
    for (int c = 0; c < 10; c++)
        slm_table_column(t, keys[c][0], keys[c][1], c == 2 ? CELL_TEXT : c < 5 ? CELL_INT : CELL_NUMBER, 4);
    if (t) t->group_column = 0;
    AttendKey *buf = malloc((size_t)ps->lm.model.cfg.window * sizeof(AttendKey));
    if (!buf) r->failed = 1;
    for (int h = 0; buf && h < ps->lm.model.cfg.n_heads; h++)
        if (head < 0 || h == head) add_keys(t, ps, run_, h, p, buf);
    free(buf);
}

void slm_view_attend_wide(Report *r, const ProbeSession *ps, const ViewText *vt) {
    int H = ps->lm.model.cfg.n_heads, W = ps->lm.model.cfg.window, n = 0;
    attend_header(r, ps, vt);
    ReportTable *t = slm_report_table(r, "keys", "What it reads (nearest first), each head's weight");
    const char *cols[][2] = {
        {"position", "pos"}, {"token", "token"}, {"id", "id"}, {"distance", "dist"}, {"cosine", "cos(rows)"}};
    for (int c = 0; c < 5; c++)
        slm_table_column(t, cols[c][0], cols[c][1], c == 1 ? CELL_TEXT : c < 4 ? CELL_INT : CELL_NUMBER, 4);
    char key[32], label[32];
    for (int h = 0; h < H; h++) {
        snprintf(key, sizeof key, "weight_%d", h);
        snprintf(label, sizeof label, "head %d", h);
        slm_table_column(t, key, label, CELL_NUMBER, 4);
    }
    AttendKey *keys = malloc((size_t)H * W * sizeof(AttendKey)); /* (H, window): every head's keys, oldest first */
    if (!keys) r->failed = 1;
    for (int h = 0; keys && h < H; h++) n = slm_probe_attend(&vt->runner, h, vt->pos, keys + (size_t)h * W);
    for (int j = n - 1; keys && j >= 0; j--) { /* the heads read the same positions: nearest first */
        const AttendKey *k = &keys[j];
        slm_table_row(t);
        slm_cell_int(t, k->position);
        slm_cell_text(t, slm_probe_session_token(ps, k->token));
        slm_cell_int(t, k->token);
        slm_cell_int(t, k->distance);
        slm_cell_number(t, k->cosine);
        for (int h = 0; h < H; h++) slm_cell_number(t, keys[(size_t)h * W + j].weight);
    }
    free(keys);
}

/* ---- Tool 3: trace ------------------------------------------------------------ */

/* A part of the trace's inputs: "row" (a transformer's "resid_pre") for -1,
 * else "head 3", or "head 2:3" on a model of several layers. */
static void part_name(const ModelConfig *c, int layer, int part, char *buf, size_t size) {
    char head[16];
    slm_head_name(c, layer * c->n_heads + part, head, sizeof head);
    if (part < 0)
        snprintf(buf, size, "%s", c->arch->readout == READOUT_RESIDUAL ? "resid_pre" : "row");
    else
        snprintf(buf, size, "head %s", head);
}

static void inputs_table(Report *r, const TraceResult *t, const ModelConfig *c) {
    ReportTable *in = slm_report_table(r, "inputs",
                                       c->arch->readout == READOUT_RESIDUAL
                                           ? "What the block reads (resid_pre), then each head's z (hook_z)"
                                           : "What the hidden layer reads (the row, then each head's output)");
    slm_table_column(in, "part", "part", CELL_TEXT, 0);
    slm_table_column(in, "norm", "length", CELL_NUMBER, 3);
    slm_table_column(in, "numbers", "numbers", CELL_VECTOR, 2);
    char name[32];
    for (int k = -1; k < c->n_heads; k++) {
        int from = k < 0 ? 0 : c->row_dim + k * c->value_dim, n = k < 0 ? c->row_dim : c->value_dim;
        double len = 0;
        for (int i = 0; i < n; i++) len += (double)t->z[from + i] * t->z[from + i];
        part_name(c, t->layer, k, name, sizeof name);
        slm_table_row(in);
        slm_cell_text(in, name);
        slm_cell_number(in, sqrt(len));
        slm_cell_vector(in, t->z + from, n);
    }
}

/* The hidden layer's (or the block's MLP's) most active units; none where
 * the blocks have no MLP (attn-only). */
static void units_table(Report *r, const TraceResult *t, const ModelConfig *c) {
    ReportTable *u =
        slm_report_table(r, "hidden",
                         c->arch->readout == READOUT_RESIDUAL ? "Most active MLP neurons (hook_post) of the block"
                                                              : "Most active hidden units (tanh output)");
    slm_table_column(u, "unit", "unit", CELL_INT, 0);
    slm_table_column(u, "value", "value", CELL_NUMBER, 3);
    slm_table_column(u, "strongest_part", "pushed most by", CELL_TEXT, 0);
    slm_table_column(u, "part_input", "its input", CELL_NUMBER, 3);
    char part[32];
    for (int k = 0; k < t->n_units; k++) {
        part_name(c, t->layer, t->units[k].part, part, sizeof part);
        slm_table_row(u);
        slm_cell_int(u, t->units[k].unit);
        slm_cell_number(u, t->units[k].value);
        slm_cell_text(u, part);
        slm_cell_number(u, t->units[k].part_input);
    }
}

static void trace_report(Report *r, const ProbeSession *ps, const TraceResult *t, const char *text) {
    slm_report_header_session(r, ps);
    slm_report_text(r, "text", "text", text);
    slm_report_int(r, "position", "last position", t->position);
    slm_report_text(r, "token", "last token", slm_probe_session_token(ps, t->token));
    const ModelConfig *c = &ps->lm.model.cfg;
    if (slm_model_layers(c) > 1) slm_report_int(r, "layer", "layer", t->layer + 1);
    inputs_table(r, t, c);
    if (c->hidden_dim > 0) units_table(r, t, c);
    ReportTable *g = slm_report_table(r, "guesses", "Top next-token guesses");
    slm_table_column(g, "rank", "rank", CELL_INT, 0);
    slm_table_column(g, "token", "token", CELL_TEXT, 0);
    slm_table_column(g, "id", "id", CELL_INT, 0);
    slm_table_column(g, "probability", "probability", CELL_PERCENT, 2);
    for (int k = 0; k < t->n_guesses; k++) {
        slm_table_row(g);
        slm_cell_int(g, k + 1);
        slm_cell_text(g, slm_probe_session_token(ps, t->guesses[k].token));
        slm_cell_int(g, t->guesses[k].token);
        slm_cell_number(g, t->guesses[k].probability);
    }
}

int slm_view_trace(Report *r, const ProbeSession *ps, const ViewText *vt, const char *text, int n_units, int n_guesses,
                   TraceResult *t, Error *e) {
    *t = (TraceResult){0};
    if (slm_probe_trace(&vt->runner, vt->pos, n_units, n_guesses, t, e)) return -1;
    trace_report(r, ps, t, text);
    return 0;
}

/* ---- the loss on a text ------------------------------------------------------- */

void slm_view_loss(Report *r, const ProbeSession *ps, const ViewText *vt, const char *text) {
    slm_report_header_session(r, ps);
    slm_report_text(r, "text", "text", text);
    int T = (int)vt->ids.len;
    ReportTable *tab = slm_report_table(r, "tokens", "Every position: the token, the next one it predicts, its loss");
    const char *cols[][2] = {
        {"position", "pos"},        {"token", "token"},           {"id", "id"},     {"target", "target"},
        {"target_id", "target id"}, {"probability", "p(target)"}, {"loss", "loss"}, {"rank", "rank"}};
    for (int c = 0; c < 8; c++)
        slm_table_column(tab, cols[c][0], cols[c][1],
                         c == 1 || c == 3   ? CELL_TEXT
                         : c == 5 || c == 6 ? CELL_NUMBER
                                            : CELL_INT,
                         4);
    double sum = 0;
    int right = 0;
    for (int p = 0; p + 1 < T; p++) {
        int rank, target = vt->ids.data[p + 1];
        double prob = slm_probe_probability(&vt->runner.acts, p, target, &rank),
               loss = slm_probe_loss(&vt->runner.acts, p, target);
        sum += loss;
        right += rank == 1;
        slm_table_row(tab);
        slm_cell_int(tab, p);
        slm_cell_text(tab, slm_probe_session_token(ps, vt->ids.data[p]));
        slm_cell_int(tab, vt->ids.data[p]);
        slm_cell_text(tab, slm_probe_session_token(ps, target));
        slm_cell_int(tab, target);
        slm_cell_number(tab, prob);
        slm_cell_number(tab, loss);
        slm_cell_int(tab, rank);
    }
    int n = T - 1;
    slm_report_int(r, "positions", "predicted positions", n);
    slm_report_number(r, "loss", "loss (nats/token)", n > 0 ? sum / n : NAN, 4);
    slm_report_number(r, "perplexity", "perplexity", n > 0 ? exp(sum / n) : NAN, 2);
    slm_report_percent(r, "accuracy", "accuracy", n > 0 ? (double)right / n : NAN, 2);
    slm_view_loss_per_char(r, sum, (long long)strlen(text)); /* the text's bytes as typed */
}

void slm_view_loss_per_char(Report *r, double nats, long long bytes) {
    double per_char = bytes > 0 ? nats / (double)bytes : NAN;
    slm_report_int(r, "characters", "characters (UTF-8 bytes)", bytes);
    slm_report_number(r, "loss_per_char", "loss (nats/character)", per_char, 4);
    slm_report_number(r, "bits_per_char", "loss (bits/character)", per_char / log(2.0), 4);
}
