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
    "heads", "Secret 1: where each head looks, across snapshots", "storylm heads STORIES --model M [--model M2 ...] [options]",
    "For every head of the model, on the held-out test stories of STORIES: the share of its\n"
    "weight at each distance back (0 = the token itself, 1, 2, 3-7, 8-31, 32-255), its mean\n"
    "distance back, and the tokens it reads most (share of all its weight). Give several\n"
    "--model snapshots (storylm train --snapshot-every N writes OUT.stepN.safetensors) to\n"
    "see the table for each, in the order given. --svg FILE draws the distance shares as\n"
    "small multiples: one row per model, one panel per head. --ablate is accepted for\n"
    "symmetry; in a one-layer network it does not change where the heads look.",
    run};

typedef struct HeadsArgs {
    ProbeOptions po;
    StringList models;
    int top;
} HeadsArgs;

/* "step 1200 (path)" from the snapshot's name (OUT.step1200.safetensors) or
 * the model's metadata, or the path alone. */
static void model_label(const ProbeSession *ps, char *buf, size_t size) {
    const char *path = ps->model_path, *dot = strstr(path, ".step"), *step = metadata_get(&ps->lm.meta, "step");
    int n = 0;
    if (dot && sscanf(dot, ".step%d", &n) == 1) snprintf(buf, size, "step %d (%s)", n, path);
    else if (step) snprintf(buf, size, "step %s (%s)", step, path);
    else snprintf(buf, size, "%s", path);
}

static void add_rows(ReportTable *t, ReportTable *tokens, const ProbeSession *ps, const HeadsResult *h, int k) {
    char label[256], reads[512];
    model_label(ps, label, sizeof label);
    for (int head = 0; head < h->n_heads; head++) {
        table_row(t);
        cell_int(t, k);
        cell_text(t, label);
        cell_int(t, head);
        for (int b = 0; b < HEAD_BINS; b++) cell_number(t, h->mass[head * HEAD_BINS + b]);
        cell_number(t, h->mean_distance[head]);
        size_t used = 0;
        reads[0] = '\0';
        for (int j = 0; j < h->top_k; j++) {
            const HeadToken *ht = &h->top[(size_t)head * h->top_k + j];
            if (ht->token < 0) break;
            used += (size_t)snprintf(reads + used, sizeof reads - used, "%s%s %.0f%%", j ? ", " : "",
                                     probe_token(ps, ht->token), 100 * ht->share);
            if (used >= sizeof reads) break;
            table_row(tokens);
            cell_int(tokens, k);
            cell_int(tokens, head);
            cell_int(tokens, j + 1);
            cell_text(tokens, probe_token(ps, ht->token));
            cell_int(tokens, ht->token);
            cell_number(tokens, ht->share);
        }
        cell_text(t, reads);
    }
}

static void make_tables(Report *r, ReportTable **t, ReportTable **tokens) {
    *t = report_table(r, "heads", "Where each head's weight goes, by distance back, and what it reads most");
    table_column(*t, "snapshot", "#", CELL_INT, 0);
    table_column(*t, "model", "model", CELL_TEXT, 0);
    table_column(*t, "head", "head", CELL_INT, 0);
    const char *keys[HEAD_BINS] = {"d0", "d1", "d2", "d3_7", "d8_31", "d32_255"};
    for (int b = 0; b < HEAD_BINS; b++) table_column(*t, keys[b], head_bin_names[b], CELL_PERCENT, 1);
    table_column(*t, "mean_distance", "mean dist", CELL_NUMBER, 1);
    table_column(*t, "reads_most", "reads most", CELL_TEXT, 0);
    if (*t) (*t)->group_column = 0;
    *tokens = report_table(r, "top_tokens", "The tokens each head reads most");
    table_column(*tokens, "snapshot", "#", CELL_INT, 0);
    table_column(*tokens, "head", "head", CELL_INT, 0);
    table_column(*tokens, "rank", "rank", CELL_INT, 0);
    table_column(*tokens, "token", "token", CELL_TEXT, 0);
    table_column(*tokens, "id", "id", CELL_INT, 0);
    table_column(*tokens, "share", "share", CELL_PERCENT, 1);
    if (*tokens) (*tokens)->json_only = 1;
}

/* One row of small multiples: each head's distance shares as bars. */
static void draw_row(Svg *s, const HeadsResult *h, const char *label, double y) {
    static const char *const bins[HEAD_BINS] = {"0", "1", "2", "3-7", "8-31", "32+"};
    svg_text(s, 10, y + 12, label, 12, SVG_START, 0, "black");
    for (int head = 0; head < h->n_heads; head++) {
        double values[HEAD_BINS];
        for (int b = 0; b < HEAD_BINS; b++) values[b] = h->mass[head * HEAD_BINS + b];
        SvgPanel p = {.x = 40 + head * 180, .y = y + 40, .w = 150, .h = 80, .y0 = 0, .y1 = 1};
        char title[32];
        snprintf(title, sizeof title, "head %d", head);
        svg_axes(s, &p, title, NULL, NULL, 0);
        const char *color = svg_palette(head);
        svg_bars(s, &p, values, 1, HEAD_BINS, bins, &color, 0);
    }
}

static int run_heads(const HeadsArgs *a, const char *stories, Error *e) {
    Report r;
    report_init(&r, "heads");
    ReportTable *t = NULL, *tokens = NULL;
    Svg s;
    int n = a->models.count ? a->models.count : 1, rc = 0;
    if (a->po.svg) {
        svg_begin(&s, 1480, 160 * n + 60, "storylm heads: where each head looks");
        svg_text(&s, 10, 24, "Share of each head's weight by distance back (0, 1, 2, 3-7, 8-31, 32-255), on the test stories",
                 14, SVG_START, 0, "black");
    }
    for (int k = 0; !rc && k < n; k++) {
        ProbeOptions po = a->po;
        po.model = a->models.count ? a->models.items[k] : NULL;
        ProbeSession ps;
        HeadsResult h = {0};
        if ((rc = probe_session_open(&ps, &po, "heads", stories, PROBE_ATTENTION_ONLY, e))) break;
        if (k == 0) {
            probe_report_header(&r, &ps);
            make_tables(&r, &t, &tokens);
        }
        rc = probe_heads(&ps.lm.model, &ps.stories, ps.stories.test, ps.stories.n_test, a->top, &h, e);
        if (!rc) add_rows(t, tokens, &ps, &h, k);
        char label[256];
        model_label(&ps, label, sizeof label);
        if (!rc && a->po.svg) draw_row(&s, &h, label, 40 + 160 * k);
        heads_result_free(&h);
        probe_session_close(&ps);
    }
    if (!rc && a->po.svg) rc = svg_save(&s, a->po.svg, e);
    if (a->po.svg) svg_free(&s);
    if (!rc) rc = probe_emit(&r, &a->po, e);
    report_free(&r);
    return rc;
}

static int run(int argc, char **argv) {
    HeadsArgs a = {.po = PROBE_OPTIONS_DEFAULT, .top = 5};
    const char *pos[1];
    Option opts[] = {
        {"model", 'm', OPT_STRINGS, &a.models, "FILE", "model file; repeat for snapshots (default: ./" DEFAULT_MODEL_PATH ", else the shipped model)", 0, 0},
        {"ablate", 0, OPT_STRING, &a.po.ablate, "HEADS", "switch heads off, e.g. 3,5 (heads 0 to 7)", 0, 0},
        {"ablate-mode", 0, OPT_STRING, &a.po.ablate_mode, "MODE", ABLATE_HELP_MODE, 0, 0},
        {"json", 0, OPT_BOOL, &a.po.json, NULL, "print JSON with the same numbers", 0, 0},
        {"threads", 0, OPT_INT, &a.po.threads, "N", "threads, by default one per core", 1, 256},
        PROBE_SVG_OPTION(a.po),
        PROBE_TEST_OPTION(a.po),
        {"top", 0, OPT_INT, &a.top, "K", "tokens read most, per head", 1, 100},
    };
    int rc = probe_parse(&command_heads, argc, argv, opts, N_OPTIONS(opts), &a.po, pos, 1);
    if (rc >= 0) return rc;
    Error e = {0};
    return run_heads(&a, pos[0], &e) ? cli_fail(&e) : 0;
}
