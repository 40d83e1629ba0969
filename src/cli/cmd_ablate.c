/* storylm ablate STORIES --model M [--heads 3,5]: Secret 3, switch a head
 * off. Loss and accuracy on the held-out test stories, and at the positions
 * where a story's hero comes back, with every head switched off in turn or
 * with the given set together. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "probe_common.h"
#include "storylm/svg.h"

static int run(int argc, char **argv);
const Command command_ablate = {
    "ablate", "what the network loses without some heads (Secret 3)", "storylm ablate STORIES [options]",
    "Measures the loss (nats per token) and accuracy (top guess right) over every predicted\n"
    "position of the held-out test stories of STORIES, and at the name positions of\n"
    "Secret 2 (where a story's hero comes back: loss, probability of the name's first\n"
    "piece and accuracy there). Without --heads: a table with every single head switched\n"
    "off, each compared with the intact network. With --heads 3,5: that set together.\n"
    "A switched-off head's 16 numbers become 0, or with --ablate-mode mean its mean output\n"
    "over the test stories. --ablate HEADS switches heads off in every row, the first too.",
    run};

typedef struct AblateArgs {
    ProbeOptions po;
    const char *heads;
} AblateArgs;

/* The heads of mask by name ("3,5"; "1:3,2:5" on a model of several layers). */
static void heads_text(uint32_t mask, const ModelConfig *c, char *buf, size_t size) {
    size_t used = 0;
    buf[0] = '\0';
    for (int h = 0; h < slm_model_heads(c) && used < size; h++) {
        char name[16];
        slm_head_name(c, h, name, sizeof name);
        if (mask >> h & 1u) used += (size_t)snprintf(buf + used, size - used, "%s%s", used ? "," : "", name);
    }
    if (!used) snprintf(buf, size, "none");
}

static ReportTable *make_table(Report *r) {
    ReportTable *t = slm_report_table(r, "ablations", "Heads switched off (changes against the first row)");
    /* each change headed by what changed; accuracies change by percentage points */
    const char *cols[][2] = {{"heads", "heads off"},
                             {"loss", "loss"},
                             {"d_loss", "loss change"},
                             {"accuracy", "accuracy"},
                             {"d_accuracy", "accuracy change (points)"},
                             {"name_loss", "name loss"},
                             {"d_name_loss", "name loss change"},
                             {"name_probability", "name p"},
                             {"d_name_probability", "name p change"},
                             {"name_accuracy", "name accuracy"},
                             {"d_name_accuracy", "name accuracy change (points)"}};
    for (int c = 0; c < 11; c++) {
        int pct = strstr(cols[c][0], "accuracy") != NULL, diff = cols[c][0][0] == 'd';
        CellKind kind = c == 0 ? CELL_TEXT : pct ? (diff ? CELL_POINTS : CELL_PERCENT) : CELL_NUMBER;
        slm_table_column(t, cols[c][0], cols[c][1], kind, pct ? 2 : 4);
    }
    return t;
}

static void add_row(ReportTable *t, const char *heads, const AblateScore *s, const AblateScore *base) {
    slm_table_row(t);
    slm_cell_text(t, heads);
    double v[5][2] = {{s->loss, base->loss},
                      {s->accuracy, base->accuracy},
                      {s->name_loss, base->name_loss},
                      {s->name_probability, base->name_probability},
                      {s->name_accuracy, base->name_accuracy}};
    for (int k = 0; k < 5; k++) {
        slm_cell_number(t, v[k][0]);
        slm_cell_number(t, v[k][1] == v[k][1] ? v[k][0] - v[k][1] : NAN);
    }
}

static int draw(const char *path, const ReportTable *t, Error *e) {
    int n = t->n_rows - 1 < 32 ? t->n_rows - 1 : 32;
    double d_loss[32], d_name[32];
    const char *labels[32];
    double hi = 0.01, hi_name = 0.01, lo_name = -0.01;
    for (int k = 0; k < n; k++) {
        labels[k] = t->cells[(size_t)(k + 1) * t->n_cols].text;
        d_loss[k] = slm_table_number(t, k + 1, 2);
        d_name[k] = slm_table_number(t, k + 1, 8);
        hi = fmax(hi, d_loss[k]);
        hi_name = fmax(hi_name, d_name[k]);
        lo_name = fmin(lo_name, d_name[k]);
    }
    Svg s;
    slm_svg_begin(&s, 900, 640, "storylm ablate: switch a head off");
    slm_svg_text(&s, 20, 24, "What the network loses with each head switched off", 15, SVG_START, 0, "black");
    SvgPanel p = {.x = 80, .y = 70, .w = 760, .h = 200, .y0 = fmin(0, slm_table_number(t, 1, 2)), .y1 = hi * 1.1};
    slm_svg_axes(&s, &p, "change in test loss (nats/token)", NULL, "change in loss", 0);
    slm_svg_bars(&s, &p, d_loss, 1, n, labels, NULL, 0);
    SvgPanel q = {.x = 80, .y = 370, .w = 760, .h = 200, .y0 = lo_name * 1.1, .y1 = hi_name * 1.1};
    const char *red = "#d62728";
    slm_svg_axes(&s, &q, "change in the probability of the hero's name where it comes back", "heads off", "change in p", 0);
    slm_svg_bars(&s, &q, d_name, 1, n, labels, &red, 0);
    slm_svg_bar_values(&s, &q, d_name, 1, n, 4); /* a head whose removal barely changes p */
    int rc = slm_svg_save(&s, path, e);
    slm_svg_free(&s);
    return rc;
}

/* The intact row (with --ablate's heads only), then each single head or the --heads set. */
static int ablate(const AblateArgs *a, const char *stories, Error *e) {
    ProbeSession ps;
    if (slm_probe_session_open(&ps, &a->po, "ablate", stories,
                               PROBE_ATTENTION_ONLY | PROBE_NAMES | PROBE_LAYERS | PROBE_TRANSFORMER, e)) return -1;
    const Stories *s = &ps.stories;
    const ModelConfig *c = &ps.lm.model.cfg;
    int H = slm_model_heads(c), rc; /* every layer's heads, in turn */
    uint32_t set = 0;
    NameTargets names = {0};
    AblateScore base, score;
    Report r;
    slm_report_init(&r, "ablate");
    ReportTable *t = NULL;
    rc = a->heads ? slm_cli_parse_model_heads(a->heads, c, &set, e) : 0;
    float *mean = ps.mean, *own_mean = NULL; /* mean ablation without --ablate: the means are made here */
    if (!rc && !mean && strcmp(a->po.ablate_mode, "mean") == 0) {
        mean = own_mean = xmalloc((size_t)H * c->value_dim * sizeof(float), e);
        rc = mean ? slm_probe_head_means(&ps.lm.model, s, s->test, s->n_test, mean, e) : -1;
    }
    if (!rc) rc = slm_name_targets_find(&ps.lm.tokenizer, &ps.names, s, s->test, s->n_test, &names, e);
    if (!rc) rc = slm_probe_score(&ps.lm.model, s, s->test, s->n_test, &ps.ablation, &names, &base, e);
    if (!rc) {
        slm_probe_report_header(&r, &ps);
        slm_report_int(&r, "positions", "predicted positions", base.positions);
        slm_report_int(&r, "name_positions", "name positions", base.name_positions);
        t = make_table(&r);
        char label[64];
        heads_text(ps.ablation.heads, c, label, sizeof label);
        add_row(t, label, &base, &base);
    }
    for (int h = 0; !rc && h < H; h++) {
        uint32_t off = a->heads ? set : 1u << h;
        if (a->heads && h > 0) break;
        Ablation ab = ps.ablation;
        ab.heads |= off;
        if (mean) ab.mode = ABLATE_MEAN, ab.mean = mean;
        rc = slm_probe_score(&ps.lm.model, s, s->test, s->n_test, &ab, &names, &score, e);
        char label[64];
        heads_text(ab.heads, c, label, sizeof label);
        if (!rc) add_row(t, label, &score, &base);
    }
    if (!rc && a->po.svg && t) rc = draw(a->po.svg, t, e);
    if (!rc) rc = probe_emit(&r, &a->po, e);
    slm_report_free(&r);
    slm_name_targets_free(&names);
    free(own_mean);
    slm_probe_session_close(&ps);
    return rc;
}

static int run(int argc, char **argv) {
    AblateArgs a = {.po = PROBE_OPTIONS_DEFAULT};
    const char *pos[1];
    Option opts[] = {
        PROBE_COMMON_OPTIONS(a.po),
        PROBE_SVG_OPTION(a.po),
        PROBE_TEST_OPTION(a.po),
        {"heads", 0, OPT_STRING, &a.heads, "HEADS", "switch this set off together, e.g. 3,5 (1:3,2:5 on a model of several layers; default: each head in turn)", 0, 0},
    };
    int rc = probe_parse(&command_ablate, argc, argv, opts, N_OPTIONS(opts), &a.po, pos, 1);
    if (rc >= 0) return rc;
    Error e = {0};
    return ablate(&a, pos[0], &e) ? cli_fail(&e) : 0;
}
