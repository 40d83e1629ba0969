/* Views of a model's weights and of its heads on stories: see views.h.
 * Tool 2 (distances) and Secret 1 (heads). Moved from the CLI's verbs. */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "storylm/parse.h"
#include "storylm/report_header.h"
#include "storylm/views.h"

void slm_view_distances(Report *r, const ProbeSession *ps, int up_to) {
    const ModelConfig *c = &ps->lm.model.cfg;
    slm_report_header_session(r, ps);
    ReportTable *t = slm_report_table(r, "scores", "Distance scores (rows: distance back; columns: heads)");
    slm_table_column(t, "distance", "distance", CELL_INT, 0);
    char key[32], label[32];
    for (int h = 0; h < c->n_heads; h++) {
        snprintf(key, sizeof key, "head_%d", h);
        snprintf(label, sizeof label, "head %d", h);
        slm_table_column(t, key, label, CELL_NUMBER, 3);
    }
    for (int d = 0; d <= up_to && d < c->window; d++) {
        slm_table_row(t);
        slm_cell_int(t, d);
        for (int h = 0; h < c->n_heads; h++)
            slm_cell_number(t, slm_position_distance_score(&ps->lm.model, h, d)); /* --pos: the scheme's */
    }
}

/* The training step of the model: from the snapshot's name
 * (OUT.step1200.safetensors) or the model's metadata; -1 when neither says. */
static int model_step(const ProbeSession *ps) {
    const char *dot = strstr(ps->model_path, ".step"), *step = slm_metadata_get(&ps->lm.meta, "step");
    int n = -1;
    long long x;
    if (dot && slm_parse_integer_prefix(dot + 5, NULL, 0, INT_MAX, &x) == PARSE_OK) return (int)x;
    return step && slm_parse_int(step, 0, INT_MAX, &n) == PARSE_OK ? n : -1;
}

/* "step 1200 (path)", or the path alone. */
void slm_view_model_label(const ProbeSession *ps, char *buf, size_t size) {
    int step = model_step(ps);
    if (step >= 0)
        snprintf(buf, size, "step %d (%s)", step, ps->model_path);
    else
        snprintf(buf, size, "%s", ps->model_path);
}

/* Head g's cell: its number, or "L:H" on a model of several layers. */
static void head_cell(ReportTable *t, const ModelConfig *c, int g) {
    char name[16];
    slm_head_name(c, g, name, sizeof name);
    if (slm_model_layers(c) > 1)
        slm_cell_text(t, name);
    else
        slm_cell_int(t, g);
}

static void add_rows(ReportTable *t, ReportTable *tokens, const ProbeSession *ps, const HeadsResult *h, int k) {
    char reads[512];
    int step = model_step(ps);
    const ModelConfig *c = &ps->lm.model.cfg;
    for (int head = 0; head < h->n_heads; head++) {
        slm_table_row(t);
        slm_cell_int(t, k);
        slm_cell_text(t, ps->model_path);
        if (step >= 0)
            slm_cell_int(t, step);
        else
            slm_cell_skip(t);
        head_cell(t, c, head);
        for (int b = 0; b < HEAD_BINS; b++) slm_cell_number(t, h->mass[head * HEAD_BINS + b]);
        slm_cell_number(t, h->mean_distance[head]);
        size_t used = 0;
        reads[0] = '\0';
        for (int j = 0; j < h->top_k; j++) {
            const HeadToken *ht = &h->top[(size_t)head * h->top_k + j];
            if (ht->token < 0) break;
            used += (size_t)snprintf(reads + used, sizeof reads - used, "%s%s %.0f%%", j ? ", " : "",
                                     slm_probe_session_token(ps, ht->token), 100 * ht->share);
            if (used >= sizeof reads) break;
            slm_table_row(tokens);
            slm_cell_int(tokens, k);
            head_cell(tokens, c, head);
            slm_cell_int(tokens, j + 1);
            slm_cell_text(tokens, slm_probe_session_token(ps, ht->token));
            slm_cell_int(tokens, ht->token);
            slm_cell_number(tokens, ht->share);
        }
        slm_cell_text(t, reads);
    }
}

/* heads: text ("L:H") on a model of several layers, else numbers. */
static void make_tables(Report *r, ReportTable **t, ReportTable **tokens, CellKind heads) {
    *t = slm_report_table(r, "heads", "Where each head's weight goes, by distance back, and what it reads most");
    slm_table_column(*t, "snapshot", "#", CELL_INT, 0);
    slm_table_column(*t, "model", "model", CELL_FILE, 0);
    slm_table_column(*t, "step", "step", CELL_INT, 0);
    slm_table_column(*t, "head", "head", heads, 0);
    const char *keys[HEAD_BINS] = {"d0", "d1", "d2", "d3_7", "d8_31", "d32_255"};
    for (int b = 0; b < HEAD_BINS; b++) slm_table_column(*t, keys[b], slm_head_bin_names[b], CELL_PERCENT, 1);
    slm_table_column(*t, "mean_distance", "mean dist", CELL_NUMBER, 1);
    slm_table_column(*t, "reads_most", "reads most", CELL_TEXT, 0);
    if (*t) (*t)->group_column = 0;
    *tokens = slm_report_table(r, "top_tokens", "The tokens each head reads most");
    slm_table_column(*tokens, "snapshot", "#", CELL_INT, 0);
    slm_table_column(*tokens, "head", "head", heads, 0);
    slm_table_column(*tokens, "rank", "rank", CELL_INT, 0);
    slm_table_column(*tokens, "token", "token", CELL_TEXT, 0);
    slm_table_column(*tokens, "id", "id", CELL_INT, 0);
    slm_table_column(*tokens, "share", "share", CELL_PERCENT, 1);
    if (*tokens) (*tokens)->json_only = 1;
}

void slm_view_heads_begin(Report *r, const ProbeSession *ps, ViewHeads *vh) {
    slm_report_header_session(r, ps);
    vh->layers = slm_model_layers(&ps->lm.model.cfg);
    make_tables(r, &vh->heads, &vh->tokens, vh->layers > 1 ? CELL_TEXT : CELL_INT);
}

int slm_view_heads_add(ViewHeads *vh, const ProbeSession *ps, int k, int top, HeadsResult *h, Error *e) {
    *h = (HeadsResult){0};
    if (slm_model_layers(&ps->lm.model.cfg) != vh->layers)
        return FAIL(e, "compare models of as many layers", "'%s' has %d layer(s), the first model %d", ps->model_path,
                    slm_model_layers(&ps->lm.model.cfg), vh->layers);
    if (slm_probe_heads(&ps->lm.model, &ps->stories, ps->stories.test, ps->stories.n_test, top, h, e)) return -1;
    add_rows(vh->heads, vh->tokens, ps, h, k);
    return 0;
}
