/* Secrets 3 and 4 as reports (ablate, pieces): see views.h. Built here so
 * that `storylm ablate|pieces --json` and the server's /api/ablate and
 * /api/pieces give the same keys and the same numbers. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "storylm/head_list.h"
#include "storylm/report_header.h"
#include "storylm/views.h"

/* ---------- Secret 3: ablate ---------- */

/* A row's heads off, "1:3,2:5": room for every head of the largest model ("8:31," each). */
#define ABLATE_LABEL_SIZE (STORYLM_MAX_ALL_HEADS * 6)

static ReportTable *ablate_table(Report *r) {
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

static void ablate_row(ReportTable *t, const char *heads, const AblateScore *s, const AblateScore *base) {
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

int slm_view_ablate(Report *r, const ProbeSession *ps, const char *heads, AblationMode mode, ReportTable **table,
                    Error *e) {
    const Stories *s = &ps->stories;
    const ModelConfig *c = &ps->lm.model.cfg;
    int H = slm_model_heads(c), rc; /* every layer's heads, in turn */
    HeadSet set = {0};
    NameTargets names = {0};
    AblateScore base, score;
    ReportTable *t = NULL;
    rc = heads ? slm_head_list_parse(heads, c, "heads", &set, e) : 0;
    float *mean = ps->mean, *own_mean = NULL; /* mean ablation without --ablate: the means are made here */
    if (!rc && !mean && mode == ABLATE_MEAN) {
        mean = own_mean = xmalloc((size_t)H * c->value_dim * sizeof(float), e);
        rc = mean ? slm_probe_head_means(&ps->lm.model, s, s->test, s->n_test, mean, e) : -1;
    }
    if (!rc) rc = slm_name_targets_find(&ps->lm.tokenizer, &ps->names, s, s->test, s->n_test, &names, e);
    if (!rc) rc = slm_probe_score(&ps->lm.model, s, s->test, s->n_test, &ps->ablation, &names, &base, e);
    if (!rc) {
        slm_report_header_session(r, ps);
        slm_report_int(r, "positions", "predicted positions", base.positions);
        slm_report_int(r, "name_positions", "name positions", base.name_positions);
        t = ablate_table(r);
        char label[ABLATE_LABEL_SIZE];
        slm_head_list_text(&ps->ablation.heads, c, label, sizeof label);
        ablate_row(t, label, &base, &base);
    }
    for (int h = 0; !rc && h < H; h++) {
        if (heads && h > 0) break;
        Ablation ab = ps->ablation;
        if (heads)
            slm_head_set_add_all(&ab.heads, &set);
        else
            slm_head_set_add(&ab.heads, h);
        if (mean) ab.mode = ABLATE_MEAN, ab.mean = mean;
        rc = slm_probe_score(&ps->lm.model, s, s->test, s->n_test, &ab, &names, &score, e);
        char label[ABLATE_LABEL_SIZE];
        slm_head_list_text(&ab.heads, c, label, sizeof label);
        if (!rc) ablate_row(t, label, &score, &base);
    }
    slm_name_targets_free(&names);
    free(own_mean);
    if (table) *table = t;
    return rc ? -1 : 0;
}

/* ---------- Secret 4: pieces ---------- */

/* The most common one-piece name, then invented names of 3+ pieces. */
static int default_names(const ProbeSession *ps, SwapName *out, int max) {
    const char *common[50];
    int n = slm_names_most_common(&ps->names, common, NULL, 50), k = 0;
    for (int i = 0; i < n && k == 0; i++)
        if (slm_swap_name_make(&ps->lm.tokenizer, &ps->names, common[i], &out[0], NULL) == 0 && out[0].n_pieces == 1)
            k = 1;
    return k + slm_invented_names(&ps->lm.tokenizer, &ps->names, 3, out + k, max - k < 4 ? max - k : 4);
}

static void pieces_table(Report *r, const ProbeSession *ps, const SwapName *names, const PieceScore *rows, int n) {
    slm_report_header_session(r, ps);
    if (ps->names_from_all) slm_report_note(r, "note: names were learnt from every story (test ones included)");
    ReportTable *t = slm_report_table(r, "names", "Where the renamed hero comes back");
    const char *cols[][2] = {{"name", "name"},
                             {"kind", "kind"},
                             {"pieces", "pieces"},
                             {"stories", "stories"},
                             {"mentions", "mentions"},
                             {"first_probability", "p(first piece)"},
                             {"first_top1", "first piece top guess"},
                             {"next_probability", "p(next piece)"},
                             {"next_top1", "next piece top guess"},
                             {"next_median_rank", "next piece median rank"}};
    for (int c = 0; c < 10; c++)
        slm_table_column(t, cols[c][0], cols[c][1],
                         c < 3   ? CELL_TEXT
                         : c < 5 ? CELL_INT
                         : c % 2 ? CELL_NUMBER
                                 : CELL_PERCENT,
                         c == 9  ? 1
                         : c % 2 ? 4
                                 : 1);
    char pieces[256];
    for (int k = 0; k < n; k++) {
        size_t used = 0;
        pieces[0] = '\0';
        for (int i = 0; i < names[k].n_pieces && used < sizeof pieces; i++)
            used += (size_t)snprintf(pieces + used, sizeof pieces - used, "%s%s", i ? " " : "",
                                     slm_probe_session_token(ps, names[k].pieces[i]));
        slm_table_row(t);
        slm_cell_text(t, names[k].word);
        slm_cell_text(t, slm_name_kind_names[names[k].kind]);
        slm_cell_text(t, pieces);
        slm_cell_int(t, rows[k].stories);
        slm_cell_int(t, rows[k].mentions);
        slm_cell_number(t, rows[k].first_probability);
        slm_cell_number(t, rows[k].first_top1);
        slm_cell_number(t, rows[k].next_probability);
        slm_cell_number(t, rows[k].next_top1);
        slm_cell_number(t, rows[k].next_median_rank);
    }
}

/* The two steps head by head (models of several layers), and the head of
 * layer 2 or above that reads the token to copy most. */
static void pieces_heads(Report *r, const ModelConfig *c, const PieceHeads *ph) {
    ReportTable *t = slm_report_table(r, "heads", "The two lookups, head by head (names of 2+ pieces)");
    slm_table_column(t, "head", "head", CELL_TEXT, 0);
    slm_table_column(t, "layer", "layer", CELL_INT, 0);
    slm_table_column(t, "previous_token", "at the token to copy: on the one before", CELL_NUMBER, 4);
    slm_table_column(t, "induction", "at the later first piece: on the token to copy", CELL_NUMBER, 4);
    int best = -1;
    char name[16];
    for (int g = 0; g < ph->n_heads; g++) {
        slm_head_name(c, g, name, sizeof name);
        slm_table_row(t);
        slm_cell_text(t, name);
        slm_cell_int(t, g / c->n_heads + 1);
        slm_cell_number(t, ph->previous[g]);
        slm_cell_number(t, ph->induction[g]);
        if (g >= c->n_heads && (best < 0 || ph->induction[g] > ph->induction[best])) best = g;
    }
    slm_report_int(r, "heads_mentions", "later mentions measured", ph->mentions);
    slm_report_number(r, "even_weight", "weight of a head reading evenly there", ph->even, 4);
    if (best < 0) return;
    slm_head_name(c, best, name, sizeof name);
    slm_report_text(r, "induction_head", "reads the token to copy most (layer 2+)", name);
    slm_report_number(r, "induction_weight", "its weight on it", ph->induction[best], 4);
}

int slm_view_pieces(Report *r, const ProbeSession *ps, const char *list, SwapName *names, PieceScore *rows, int max,
                    Error *e) {
    PieceHeads heads;
    int layered = slm_model_layers(&ps->lm.model.cfg) > 1; /* a one-layer model's report stays as it was */
    int n = list ? slm_probe_session_swap_names(ps, list, names, max, e) : default_names(ps, names, max);
    int rc = n < 0 ? -1
                   : slm_probe_pieces(&ps->lm.model, &ps->lm.tokenizer, &ps->names, &ps->stories, ps->stories.test,
                                      ps->stories.n_test, names, n, &ps->ablation, rows, layered ? &heads : NULL, e);
    if (!rc) pieces_table(r, ps, names, rows, n);
    if (!rc && layered) pieces_heads(r, &ps->lm.model.cfg, &heads);
    return rc ? -1 : n;
}
