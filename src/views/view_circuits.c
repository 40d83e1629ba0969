/* QK and OV circuits of every head, from the weights: the view circuits (registry.h), its entry at the end. */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "storylm/probe_circuits.h"
#include "storylm/ablation.h"
#include "storylm/probe_views.h"
#include "storylm/registry.h"
#include "storylm/views.h"
#include "storylm/report_header.h"
#include "storylm/svg.h"

/* The stories of the mean input (--stories) are the session's in the server
 * (PARAM_STORIES); check moves them to po.mean_stories, so that no session
 * reads them as its own (circuits reads no stories but these). */
typedef struct CircuitsParams {
    ProbeOptions po;
    const char *stories, *head;
    int top, layer;
    const char *tokens;
} CircuitsParams;

#define READ_TOP 5 /* tokens raised listed for each --token-list token */
#define MAX_READS 64

static void self_columns(ReportTable *t) {
    slm_table_column(t, "head", "head", CELL_INT, 0);
    slm_table_column(t, "tokens", "over tokens", CELL_TEXT, 0);
    slm_table_column(t, "n", "n", CELL_INT, 0);
    const char *keys[] = {"qk_top1", "qk_top10", "qk_above_mean", "copy_top1", "copy_top10", "copy_above_mean"};
    const char *labels[] = {"looks for itself: top1", "top10", "above mean", "copies: top1", "top10", "above mean"};
    for (int i = 0; i < 6; i++) slm_table_column(t, keys[i], labels[i], CELL_PERCENT, 1);
    t->group_column = 0;
}

static void self_rows(ReportTable *t, const CircuitHead *ch) {
    for (int k = 0; k < 2; k++) {
        slm_table_row(t);
        slm_cell_int(t, ch->head);
        slm_cell_text(t, k ? "seen in test" : "all");
        slm_cell_int(t, ch->copy[k].tokens);
        const SelfScore *q = &ch->qk_self[k], *c = &ch->copy[k];
        double v[] = {q->top1, q->top10, q->above_mean, c->top1, c->top10, c->above_mean};
        for (int i = 0; i < 6; i++) slm_cell_number(t, v[i]);
    }
}

static void pair_table(Report *r, const ProbeSession *ps, const CircuitsResult *cr, int ov) {
    ReportTable *t = slm_report_table(r, ov ? "ov" : "qk",
                                      ov ? "OV circuit: reading token s raises token t (logit change, linearised)"
                                         : "QK circuit: a query at token s looks for a key at token t");
    slm_table_column(t, "head", "head", CELL_INT, 0);
    slm_table_column(t, "rank", "rank", CELL_INT, 0);
    slm_table_column(t, ov ? "reads" : "query", ov ? "reads s" : "query s", CELL_TEXT, 0);
    slm_table_column(t, ov ? "reads_id" : "query_id", "id", CELL_INT, 0);
    slm_table_column(t, ov ? "raises" : "key", ov ? "raises t" : "key t", CELL_TEXT, 0);
    slm_table_column(t, ov ? "raises_id" : "key_id", "id", CELL_INT, 0);
    slm_table_column(t, ov ? "change" : "score", ov ? "change" : "score", CELL_NUMBER, 3);
    slm_table_column(t, "vs_mean", "vs mean", CELL_NUMBER, 3);
    if (t) t->group_column = 0;
    for (int i = 0; i < cr->n_heads; i++) {
        const CircuitHead *ch = &cr->heads[i];
        for (int k = 0; k < cr->top; k++) {
            const CircuitPair *p = ov ? &ch->ov[k] : &ch->qk[k];
            if (p->from < 0) break;
            slm_table_row(t);
            slm_cell_int(t, ch->head);
            slm_cell_int(t, k + 1);
            slm_cell_text(t, slm_probe_session_token(ps, p->from));
            slm_cell_int(t, p->from);
            slm_cell_text(t, slm_probe_session_token(ps, p->to));
            slm_cell_int(t, p->to);
            slm_cell_number(t, p->value);
            slm_cell_number(t, p->centred);
        }
    }
}

/* --token-list: for each head and token asked for, the tokens its reading raises most. */
static void reads_tables(Report *r, const ProbeSession *ps, const CircuitsResult *cr) {
    ReportTable *t =
        slm_report_table(r, "reads", "OV circuit: reading each --token-list token raises most (change vs mean)");
    slm_table_column(t, "head", "head", CELL_INT, 0);
    slm_table_column(t, "reads", "reads", CELL_TEXT, 0);
    slm_table_column(t, "raises_most", "raises most", CELL_TEXT, 0);
    if (t) t->group_column = 0;
    ReportTable *j = slm_report_table(r, "reads_top", "The same, one row per token raised");
    const char *keys[] = {"head", "reads", "reads_id", "rank", "raises", "raises_id", "change", "vs_mean"};
    for (int i = 0; i < 8; i++)
        slm_table_column(j, keys[i], keys[i], i == 1 || i == 4 ? CELL_TEXT : i < 6 ? CELL_INT : CELL_NUMBER, 3);
    if (j) j->json_only = 1;
    char text[512];
    for (int i = 0; i < cr->n_heads; i++)
        for (int k = 0; k < cr->n_reads; k++) {
            const CircuitPair *top = cr->heads[i].reads + (size_t)k * cr->read_top;
            size_t used = 0;
            text[0] = '\0';
            for (int q = 0; q < cr->read_top && top[q].to >= 0 && used < sizeof text; q++) {
                used += (size_t)snprintf(text + used, sizeof text - used, "%s%s %+.2f", q ? ", " : "",
                                         slm_probe_session_token(ps, top[q].to), top[q].centred);
                slm_table_row(j);
                slm_cell_int(j, cr->heads[i].head), slm_cell_text(j, slm_probe_session_token(ps, top[q].from)),
                    slm_cell_int(j, top[q].from);
                slm_cell_int(j, q + 1), slm_cell_text(j, slm_probe_session_token(ps, top[q].to)),
                    slm_cell_int(j, top[q].to);
                slm_cell_number(j, top[q].value), slm_cell_number(j, top[q].centred);
            }
            slm_table_row(t);
            slm_cell_int(t, cr->heads[i].head);
            slm_cell_text(t, slm_probe_session_token(ps, top[0].from));
            slm_cell_text(t, text);
        }
}

/* --token-list "lily,tom" as token ids (pieces exactly as in the vocabulary); returns how many, -1 on error. */
static int parse_tokens(const ProbeSession *ps, const char *list, int32_t *ids, int max, Error *e) {
    int n = 0;
    for (const char *p = list; p && *p;) {
        size_t len = strcspn(p, ",");
        int id = len ? slm_tokenizer_lookup(&ps->lm.tokenizer, p, len) : -1;
        if (id < 0)
            return FAIL(e,
                        "give tokens as the vocabulary spells them, lower-case, e.g. lily,tom,##ark (storylm tokenize "
                        "shows them)",
                        "'%.*s' is not a token of the model's vocabulary", (int)len, p);
        if (n == max) return FAIL(e, NULL, "at most %d --token-list tokens", max);
        ids[n++] = id;
        p += len + (p[len] == ',');
    }
    return n;
}

/* z_mean (Z) as a JSON-only table, its heads named as the model names them. */
static void mean_input_table(Report *r, const ProbeSession *ps, const float *z_mean) {
    const ModelConfig *c = &ps->lm.model.cfg;
    int H = slm_model_heads(c),
        every_layer = slm_model_layers(c) > 1 && slm_model_hidden_input_dim(c) == c->row_dim + H * c->value_dim;
    char title[96], last[16]; /* z's heads: 0..7 on the chapter's network, 1:0..2:7 on two layers */
    if (every_layer)
        slm_head_name(c, H - 1, last, sizeof last);
    else
        snprintf(last, sizeof last, "%d", c->n_heads - 1);
    snprintf(title, sizeof title, "The hidden layer's mean input z_mean (row, then heads %s..%s)",
             every_layer ? "1:0" : "0", last);
    ReportTable *z = slm_report_table(r, "mean_input", title);
    slm_table_column(z, "z", "z", CELL_VECTOR, 4);
    if (z) z->json_only = 1;
    slm_table_row(z);
    slm_cell_vector(z, z_mean, slm_model_hidden_input_dim(c));
}

static void build_report(Report *r, const ProbeSession *ps, const char *stories, const Stories *s, long long positions,
                         const float *z_mean, const CircuitsResult *cr) {
    slm_report_header_session(r, ps);
    slm_report_header_stories(r, stories, s->n_stories, s->n_test); /* the mean input's */
    slm_report_int(r, "positions", "positions averaged", positions);
    if (slm_model_layers(&ps->lm.model.cfg) > 1) slm_report_int(r, "layer", "layer (block)", cr->layer + 1);
    slm_report_note(r, "%s", slm_circuits_note(&ps->lm.model.cfg));
    ReportTable *t =
        slm_report_table(r, "heads", "Per head: looking for itself (QK) and copying (OV), shares of tokens");
    if (t) self_columns(t);
    for (int i = 0; i < cr->n_heads; i++) self_rows(t, &cr->heads[i]);
    pair_table(r, ps, cr, 0);
    pair_table(r, ps, cr, 1);
    if (cr->n_reads) reads_tables(r, ps, cr);
    if (slm_circuits_use_mean_input(&ps->lm.model.cfg)) mean_input_table(r, ps, z_mean);
}

/* The stories of the mean input, z_mean over their test stories, and the
 * circuits from it. */
static int circuits(Report *r, const ProbeSession *ps, const CircuitsParams *cp, Error *e) {
    const Model *m = &ps->lm.model;
    int layer, head, rc = slm_view_head(&m->cfg, cp->head, cp->layer, 1, &layer, &head, e);
    char warning[400] = "";
    const char *path =
        rc ? NULL
           : slm_ablation_mean_stories(&ps->lm, cp->po.mean_stories,
                                       slm_circuits_use_mean_input(&m->cfg) ? "circuits' mean input to the hidden layer"
                                                                            : "circuits' shares of the tokens seen",
                                       warning, sizeof warning, e);
    StoriesOptions so = slm_stories_default_options();
    so.n_test = cp->po.n_test;
    Stories s = {0};
    rc = path ? slm_stories_load(&s, path, &ps->lm.tokenizer, &so, e) : -1;
    if (!rc && s.n_test == 0)
        rc = FAIL(e, "give --stories FILE with more stories", "'%s' has too few stories to hold any out", path);
    float *z_mean = rc ? NULL : xmalloc((size_t)slm_model_hidden_input_dim(&m->cfg) * sizeof(float), e);
    uint8_t *seen = z_mean ? xmalloc((size_t)m->cfg.vocab_size, e) : NULL;
    long long positions = 0;
    CircuitsResult cr = {0};
    int32_t reads[MAX_READS];
    CircuitsOptions co = {.top = cp->top, .reads = reads, .read_top = READ_TOP, .layer = layer - 1};
    if (head >= 0) slm_head_set_add(&co.heads, head);
    co.n_reads = seen ? parse_tokens(ps, cp->tokens, reads, MAX_READS, e) : -1;
    rc = co.n_reads >= 0 ? slm_circuits_mean_input(m, &s, s.test, s.n_test, &ps->ablation, z_mean, seen, &positions, e)
                         : -1;
    if (!rc) rc = slm_probe_circuits(m, z_mean, seen, &co, &cr, e);
    if (!rc) build_report(r, ps, path, &s, positions, z_mean, &cr);
    if (!rc && warning[0]) slm_report_note(r, "warning: %s", warning);
    slm_circuits_result_free(&cr);
    free(seen);
    free(z_mean);
    slm_stories_free(&s);
    return rc;
}

/* Per head, from the heads table's "seen in test" rows: copying and looking for itself, top 10. */
static int draw(ViewCall *c, const char *path, Error *e) {
    const ReportTable *t = slm_report_find_table(c->report, "heads");
    int n = t ? t->n_rows / 2 : 0, qk = slm_table_find_column(t, "qk_top10"),
        ov = slm_table_find_column(t, "copy_top10");
    n = n < 32 ? n : 32;
    double values[2 * 32];
    char names[32][16];
    const char *labels[32];
    for (int i = 0; i < n; i++) {
        values[i] = slm_table_number(t, 2 * i + 1, ov);
        values[n + i] = slm_table_number(t, 2 * i + 1, qk);
        snprintf(names[i], sizeof names[i], "head %d", (int)slm_table_number(t, 2 * i + 1, 0));
        labels[i] = names[i];
    }
    Svg s;
    slm_svg_begin(&s, 900, 400, "storylm circuits: copying and looking for itself");
    slm_svg_text(
        &s, 20, 24,
        "Share of the tokens seen in the test stories that a head raises (OV) or looks for (QK) when it reads them", 13,
        SVG_START, 0, "black");
    SvgPanel p = {.x = 80, .y = 70, .w = 560, .h = 260, .y0 = 0, .y1 = 0.05}; /* small shares stay readable */
    for (int i = 0; i < 2 * n; i++) p.y1 = fmax(p.y1, fmin(1, values[i] * 1.2));
    slm_svg_axes(&s, &p, NULL, NULL, "share of tokens (itself among the top 10)", 0);
    slm_svg_bars(&s, &p, values, 2, n, labels, NULL, 0);
    const char *legend[2] = {"copies: reading t raises t", "looks for itself: query t, key t"};
    slm_svg_legend(&s, 660, 70, legend, NULL, 2);
    int rc = slm_svg_save(&s, path, e);
    slm_svg_free(&s);
    return rc;
}

static int check(void *params, Error *e) {
    CircuitsParams *p = params;
    int layer, head;
    if (p->stories) p->po.mean_stories = p->stories, p->stories = NULL;
    return slm_view_head(NULL, p->head, p->layer, 1, &layer, &head, e);
}

static int build(ViewCall *c, Error *e) { return circuits(c->report, c->ps, c->params, e); }

static const Param params[] = {
    VIEW_PARAMS_COMMON(CircuitsParams),
    VIEW_PARAM_KERNELS(CircuitsParams),
    VIEW_PARAMS_SVG(CircuitsParams),
    VIEW_PARAM_TEST_STORIES(CircuitsParams),
    {.name = "stories",
     .type = PARAM_STRING,
     .offset = offsetof(CircuitsParams, stories),
     .meta = "FILE",
     .help = "stories for the mean input and --ablate-mode mean (needed; info names the training file)",
     .flags = PARAM_STORIES},
    VIEW_HEAD_PARAM(CircuitsParams, head, "only this head: H of the block shown, or L:H (-1: every head)"),
    VIEW_INT_PARAM(CircuitsParams, layer, "layer", "L", "the layer (transformer block) whose heads to show", 1,
                   STORYLM_MAX_TF_LAYERS, 1),
    VIEW_INT_PARAM(CircuitsParams, top, "top-k", "K", "the K strongest pairs listed per circuit and head", 1, 10000,
                   20),
    VIEW_STRING_PARAM(CircuitsParams, tokens, "token-list", "LIST",
                      "also list what reading each of these tokens raises, e.g. lily,tom"),
};
const View view_circuits = {
    .name = "circuits",
    .summary = "QK and OV circuits of every head, from the weights",
    .usage = "storylm circuits [options]",
    .description =
        "QK circuit: for every pair of tokens (s, t), the score E[s] query[h] . E[t] key[h] / sqrt(d_head)\n"
        "a query at token s gives a key at token t before the distance score is added: which tokens\n"
        "look for which. Listed: the --top-k pairs with the largest score, and 'vs mean', the score\n"
        "less the mean over all keys t (softmax ignores a constant per query).\n"
        "OV circuit: when head h puts all its weight on token s its output is E[s] value[h]; the\n"
        "change this makes to every logit, against an output of 0 (zero ablation), is read through\n"
        "the hidden layer linearised: tanh(W1 z + b1) is replaced by its tangent at the mean input\n"
        "z_mean of the hidden layer over every position of the held-out test stories, so\n"
        "  change of logit t = output.weight[t] . ((1 - tanh^2(W1 z_mean + b1)) * W1[:, head h] E[s] value[h]).\n"
        "It is the first-order effect: close when the head output moves z little from z_mean.\n"
        "Listed: the --top-k (token read, token raised) pairs with the largest change less the mean\n"
        "change over all tokens (logits matter only up to a constant). The copying score: the share\n"
        "of tokens t whose reading raises t itself the most (top 1), among the 10 most (top 10),\n"
        "or above the mean (random heads: 0.05%, 0.5%, 50%); 'looks for itself' is the same for\n"
        "the QK circuit. Both over every token of the vocabulary and over the tokens seen in the\n"
        "test stories.\n"
        "--token-list lily,tom lists, per head, the 5 tokens that reading each of them raises most.\n"
        "The stories (for z_mean) are --stories FILE (needed; 'storylm info' names the training file).\n"
        "--ablate HEADS switches heads off while z_mean is measured. --svg draws the scores per head.\n"
        "On a transformer, --layer L's heads, with TransformerLens's full circuits: QK from W_E through\n"
        "W_Q and W_K, OV from W_E through W_V, W_O and W_U, the LayerNorms' weights folded in\n"
        "(docs/transformer.md); no mean input is needed, --stories gives the tokens seen.\n"
        "On a model of several layers (--layers), --layer L's heads (or --head L:H): the direct path\n"
        "from the token rows, through the rows of layer L's query, key and value that read the row\n"
        "(what a layer above the first reads of the heads below is left out).",
    .params = params,
    .n_params = VIEW_N_PARAMS(params),
    .params_size = sizeof(CircuitsParams),
    .session = VIEW_SESSION_PROBE,
    .probe_flags = PROBE_HEADS,
    .serve = VIEW_SERVE_POST,
    .check = check,
    .build = build,
    .draw = draw,
};
