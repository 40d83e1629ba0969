/* The view swap (Secret 2), and Secret 2 on one typed story (swap --text, see views.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "storylm/registry.h"
#include "storylm/svg.h"
#include "storylm/text.h"
#include "storylm/report_header.h"
#include "storylm/views.h"

typedef struct SwapText {
    IntVec ids, swapped;
    Hero hero;
    SwapName name;
    int starts[HERO_MAX_MENTIONS];
    ProbeRunner model, baseline;
} SwapText;

static void swap_text_free(SwapText *w) {
    slm_intvec_free(&w->ids);
    slm_intvec_free(&w->swapped);
    slm_probe_runner_free(&w->model);
    slm_probe_runner_free(&w->baseline);
}

/* The typed story's hero, renamed, run through the model (and the baseline, no ablation). */
static int swap_text_run(SwapText *w, const ProbeSession *ps, const LoadedModel *baseline, const char *text,
                         const char *name, Error *e) {
    const Tokenizer *t = &ps->lm.tokenizer;
    if (slm_text_check(text, strlen(text), "the text", e) || slm_text_check(name, strlen(name), "the name", e) ||
        slm_intvec_push(&w->ids, t->eos_id, e) || slm_tokenizer_encode(t, text, strlen(text), &w->ids, e))
        return -1;
    int len = (int)w->ids.len;
    if (!slm_find_hero(t, &ps->names, w->ids.data, len, &w->hero))
        return FAIL(e, "name the hero in the first sentence and again later, like 'Lily found a shell. Lily smiled.'",
                    "the text has no hero: no name of its first sentence comes back later");
    if (slm_swap_name_make(t, &ps->names, name, &w->name, e)) return -1;
    if (slm_swap_hero(w->ids.data, len, &w->hero, w->name.pieces, w->name.n_pieces, &w->swapped, w->starts, e))
        return -1;
    int n = (int)w->swapped.len;
    if (slm_probe_runner_init(&w->model, &ps->lm.model, n, e) ||
        slm_probe_run(&w->model, w->swapped.data, n, &ps->ablation, e))
        return -1;
    if (!baseline) return 0;
    return slm_probe_runner_init(&w->baseline, &baseline->model, n, e) ||
                   slm_probe_run(&w->baseline, w->swapped.data, n, NULL, e)
               ? -1
               : 0;
}

static void mention_rows(Report *r, const SwapText *w, int baseline) {
    ReportTable *t = slm_report_table(r, "mentions", "At every later mention: the new name's first piece");
    slm_table_column(t, "mention", "mention", CELL_INT, 0);
    slm_table_column(t, "position", "pos", CELL_INT, 0);
    slm_table_column(t, "far", "> 8 back", CELL_INT, 0);
    slm_table_column(t, "model_probability", "model p", CELL_NUMBER, 4);
    slm_table_column(t, "model_rank", "model rank", CELL_INT, 0);
    if (baseline) {
        slm_table_column(t, "baseline_probability", "window8 p", CELL_NUMBER, 4);
        slm_table_column(t, "baseline_rank", "window8 rank", CELL_INT, 0);
    }
    double sum[2] = {0, 0}, top1[2] = {0, 0};
    int n = w->hero.n_mentions - 1;
    for (int k = 1; k <= n; k++) {
        int p = w->starts[k] - 1, rank;
        slm_table_row(t);
        slm_cell_int(t, k);
        slm_cell_int(t, w->starts[k]);
        slm_cell_int(t, w->starts[k - 1] < p - 7); /* out of window8's reach: it sees positions p-7..p */
        for (int b = 0; b <= baseline; b++) {
            double prob = slm_probe_probability(b ? &w->baseline.acts : &w->model.acts, p, w->name.pieces[0], &rank);
            sum[b] += prob;
            top1[b] += rank == 1;
            slm_cell_number(t, prob);
            slm_cell_int(t, rank);
        }
    }
    slm_report_int(r, "later_mentions", "later mentions", n);
    slm_report_number(r, "model_probability", "model: mean probability", n ? sum[0] / n : NAN, 4);
    slm_report_percent(r, "model_top1", "model: top guess", n ? top1[0] / n : NAN, 1);
    if (baseline) {
        slm_report_number(r, "baseline_probability", "window8: mean probability", n ? sum[1] / n : NAN, 4);
        slm_report_percent(r, "baseline_top1", "window8: top guess", n ? top1[1] / n : NAN, 1);
    }
}

/* Secret 2 on one typed story (swap --text): its hero (found with ps's
 * names) renamed to name everywhere; at every later mention, the probability
 * and rank the model (and baseline, may be NULL) give the new name's first
 * piece. */
static int slm_view_swap_text(Report *r, const ProbeSession *ps, const LoadedModel *baseline, const char *baseline_path,
                              const char *text, const char *name, Error *e) {
    SwapText w = {0};
    int rc = swap_text_run(&w, ps, baseline, text, name, e);
    char *swapped = rc ? NULL : slm_tokenizer_decode(&ps->lm.tokenizer, w.swapped.data + 1, w.swapped.len - 1, 1, e);
    if (!rc && !swapped) rc = -1;
    if (!rc) {
        slm_report_header_session(r, ps);
        slm_report_text(r, "baseline", "baseline", baseline_path ? baseline_path : "none");
        slm_report_text(r, "text", "text", text);
        slm_report_text(r, "hero", "hero", w.hero.word);
        slm_report_text(r, "name", "new name", w.name.word);
        slm_report_text(r, "kind", "kind", slm_name_kind_names[w.name.kind]);
        slm_report_int(r, "train_count", "seen in training", w.name.train_count);
        slm_report_text(r, "swapped_text", "renamed story", swapped);
        mention_rows(r, &w, baseline != NULL);
    }
    free(swapped);
    swap_text_free(&w);
    return rc;
}

/* ---- the view swap: Secret 2, it copies the names it knows ----------------------- */
/* Heroes of the test stories renamed to common, rare and invented names;
 * where the name comes back, how strongly each network predicts the new
 * name. --text: one typed story's hero (the server's /api/swap). */

typedef struct SwapParams {
    ProbeOptions po;
    const char *stories, *baseline, *names, *text;
} SwapParams;

typedef struct SwapState {
    SwapRow rows[65];
    int n, baseline;
    char legend[2][128]; /* the model's and the baseline's names in the picture */
} SwapState;

/* "z ##ark ##o" */
static void pieces_text(const ProbeSession *ps, const SwapName *n, char *buf, size_t size) {
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < n->n_pieces && used < size; i++)
        used +=
            (size_t)snprintf(buf + used, size - used, "%s%s", i ? " " : "", slm_probe_session_token(ps, n->pieces[i]));
}

static ReportTable *name_table(Report *r, const char *key, const char *title, int baseline) {
    ReportTable *t = slm_report_table(r, key, title);
    slm_table_column(t, "name", "name", CELL_TEXT, 0);
    slm_table_column(t, "kind", "kind", CELL_TEXT, 0);
    slm_table_column(t, "train_count", "in training", CELL_INT, 0);
    slm_table_column(t, "pieces", "pieces", CELL_TEXT, 0);
    slm_table_column(t, "stories", "stories", CELL_INT, 0);
    slm_table_column(t, "mentions", "mentions", CELL_INT, 0);
    slm_table_column(t, "model_probability", "p(name)", CELL_NUMBER, 4);
    slm_table_column(t, "model_top1", "name top guess", CELL_PERCENT, 1);
    if (baseline) {
        slm_table_column(t, "baseline_probability", "window8 p(name)", CELL_NUMBER, 4);
        slm_table_column(t, "baseline_top1", "window8 name top guess", CELL_PERCENT, 1);
    }
    return t;
}

static void name_row(ReportTable *t, const ProbeSession *ps, const SwapRow *row, int far, int baseline) {
    char pieces[256];
    pieces_text(ps, &row->name, pieces, sizeof pieces);
    slm_table_row(t);
    slm_cell_text(t, row->name.word);
    slm_cell_text(t, slm_name_kind_names[row->name.kind]);
    if (row->name.kind == NAME_ORIGINAL)
        slm_cell_skip(t), slm_cell_skip(t);
    else
        slm_cell_int(t, row->name.train_count), slm_cell_text(t, pieces);
    slm_cell_int(t, row->model.stories);
    slm_cell_int(t, far ? row->model.far_mentions : row->model.mentions);
    slm_cell_number(t, far ? row->model.far_probability : row->model.probability);
    slm_cell_number(t, far ? row->model.far_top1 : row->model.top1);
    if (baseline) {
        slm_cell_number(t, far ? row->baseline.far_probability : row->baseline.probability);
        slm_cell_number(t, far ? row->baseline.far_top1 : row->baseline.top1);
    }
}

static void build_report(Report *r, const ProbeSession *ps, const char *baseline, const SwapRow *rows, int n) {
    slm_report_header_session(r, ps);
    slm_report_text(r, "baseline", "baseline", baseline ? baseline : "none");
    if (ps->names_from_all) slm_report_note(r, "note: names were learnt from every story (test ones included)");
    ReportTable *all = name_table(r, "names", "At every later mention of the hero", baseline != NULL);
    ReportTable *far =
        name_table(r, "far", "At later mentions more than 8 tokens after the previous one", baseline != NULL);
    for (int k = 0; k < n; k++) name_row(all, ps, &rows[k], 0, baseline != NULL);
    for (int k = 0; k < n; k++) name_row(far, ps, &rows[k], 1, baseline != NULL);
}

static void draw_panel(Svg *s, const SwapRow *rows, int n, const char **labels, int far, int baseline, double y,
                       const char *title) {
    double values[2 * 64], hi = 0.05;
    for (int k = 0; k < n; k++) {
        values[k] = far ? rows[k].model.far_probability : rows[k].model.probability;
        values[n + k] = far ? rows[k].baseline.far_probability : rows[k].baseline.probability;
        hi = fmax(hi, fmax(values[k], baseline ? values[n + k] : 0) * 1.15);
    }
    SvgPanel p = {.x = 70, .y = y, .w = 760, .h = 220, .y0 = 0, .y1 = fmin(1, hi)};
    slm_svg_axes(s, &p, title, NULL, "mean probability", 0);
    slm_svg_bars(s, &p, values, baseline ? 2 : 1, n, labels, NULL, 1);
    slm_svg_bar_values(s, &p, values, baseline ? 2 : 1, n, 8); /* invented names' bars are a pixel high */
}

static int draw_rows(const char *path, const SwapRow *rows, int n, int baseline, const char **legend, Error *e) {
    const char *labels[64];
    for (int k = 0; k < n && k < 64; k++) labels[k] = rows[k].name.kind == NAME_ORIGINAL ? "(own)" : rows[k].name.word;
    n = n < 64 ? n : 64;
    Svg s;
    slm_svg_begin(&s, 980, 700, "storylm swap: who follows a renamed hero");
    slm_svg_text(&s, 20, 24, "Probability of the hero's (new) name where it comes back", 15, SVG_START, 0, "black");
    draw_panel(&s, rows, n, labels, 0, baseline, 70, "every later mention");
    draw_panel(&s, rows, n, labels, 1, baseline, 400, "mentions more than 8 tokens after the previous one");
    slm_svg_legend(&s, 850, 70, legend, NULL, baseline ? 2 : 1);
    int rc = slm_svg_save(&s, path, e);
    slm_svg_free(&s);
    return rc;
}

static int draw(ViewCall *c, const char *path, Error *e) {
    const SwapState *st = c->state;
    const char *legend[2] = {st->legend[0], st->legend[1]};
    return st->n ? draw_rows(path, st->rows, st->n, st->baseline, legend, e) : 0; /* --text draws nothing */
}

static int check(void *params, Error *e) {
    const SwapParams *p = params;
    if (p->text && (!p->names || strchr(p->names, ','))) return FAIL(e, NULL, "--text needs one name: --names NAME");
    return 0;
}

/* The legend's names: each model's architecture, or its file's name where
 * both models share one (two attention models told apart). */
static void legend_names(SwapState *st, const ProbeSession *ps, const LoadedModel *base) {
    const char *arch = ps->lm.model.cfg.arch->name;
    snprintf(st->legend[0], sizeof st->legend[0], "%s", arch);
    if (!base) return;
    if (base->model.cfg.arch != ps->lm.model.cfg.arch) {
        snprintf(st->legend[1], sizeof st->legend[1], "%s", base->model.cfg.arch->name);
        return;
    }
    const char *paths[2] = {ps->model_path, base->path};
    for (int i = 0; i < 2; i++) {
        const char *slash = strrchr(paths[i], '/');
        snprintf(st->legend[i], sizeof st->legend[i], "%s", slash ? slash + 1 : paths[i]);
    }
}

/* The test stories with each name, the first row the heroes' own. */
static int swap_stories(ViewCall *c, const LoadedModel *base, Error *e) {
    const SwapParams *p = c->params;
    const ProbeSession *ps = c->ps;
    SwapState *st = c->state;
    SwapName names[64];
    int n = slm_probe_session_swap_names(ps, p->names, names, 64, e);
    if (n < 0 || slm_probe_swap(&ps->lm.model, base ? &base->model : NULL, &ps->lm.tokenizer, &ps->names, &ps->stories,
                                ps->stories.test, ps->stories.n_test, names, n, &ps->ablation, st->rows, e))
        return -1;
    st->n = n + 1;
    st->baseline = base != NULL;
    legend_names(st, ps, base);
    build_report(c->report, ps, base ? base->path : NULL, st->rows, n + 1);
    return 0;
}

static int build(ViewCall *c, Error *e) {
    const SwapParams *p = c->params;
    const LoadedModel *base = NULL;
    /* the baseline is an input too: no --svg over it */
    if (p->baseline && !p->text && !c->served &&
        slm_probe_session_check_outputs(&p->po, c->ps->model_path, p->stories, p->baseline, e))
        return -1;
    if (p->baseline && slm_view_other_model(c, p->baseline, &base, e)) return -1;
    if (p->text) return slm_view_swap_text(c->report, c->ps, base, base ? base->path : NULL, p->text, p->names, e);
    return swap_stories(c, base, e);
}

static const Param params[] = {
    VIEW_ARG(SwapParams, stories, "STORIES", PARAM_REQUIRED | PARAM_STORIES),
    VIEW_PARAMS_COMMON(SwapParams),
    VIEW_PARAM_KERNELS(SwapParams),
    VIEW_PARAMS_SVG(SwapParams),
    VIEW_PARAM_TEST_STORIES(SwapParams),
    VIEW_STRING_PARAM(SwapParams, baseline, "baseline", "FILE", "a window8 model to compare with"),
    {.name = "names",
     .type = PARAM_STRING,
     .offset = offsetof(SwapParams, names),
     .meta = "LIST",
     .help = "names to swap in, e.g. lily,fred,zarko",
     .alias = "name"},
    {.name = "text",
     .type = PARAM_STRING,
     .offset = offsetof(SwapParams, text),
     .meta = "TEXT",
     .help = "rename the hero of this typed story to --names NAME instead",
     .flags = PARAM_TEXT},
};

const View view_swap = {
    .name = "swap",
    .summary = "rename the hero, see who follows (Secret 2)",
    .usage = "storylm swap STORIES [options]",
    .description = "In the held-out test stories of STORIES whose hero is named in the first sentence and\n"
                   "named again later, the hero's name is replaced everywhere by each of a set of names;\n"
                   "at every later mention it reports the mean probability the network gives the new\n"
                   "name's first piece and how often that piece is its top guess, for the model and for\n"
                   "--baseline (a window8 model trained on the same vocabulary), side by side; and the\n"
                   "same at the mentions whose previous mention is more than 8 tokens back, out of\n"
                   "window8's reach. The first row keeps each story's own hero.\n"
                   "Names: a word is a name when the training stories (the file's stories other than the\n"
                   "test ones) write it capitalised, where no sentence starts, at least twice and almost\n"
                   "never lower-case; the hero is the first name of the first sentence that comes back.\n"
                   "Default set: the 3 most common names, 3 rare ones (seen 2 to 19 times) and 3\n"
                   "invented ones (never seen, 3 or more pieces); --names a,b,c gives your own (kinds:\n"
                   "invented when never seen, rare under 20 times, common otherwise).\n"
                   "--text TEXT --names NAME does it for one typed story instead: its hero (named in its\n"
                   "first sentence and again later) renamed to NAME, and at every later mention the\n"
                   "probability and rank each network gives the new name's first piece.",
    .params = params,
    .n_params = VIEW_N_PARAMS(params),
    .params_size = sizeof(SwapParams),
    .session = VIEW_SESSION_PROBE,
    .probe_flags = PROBE_NAMES,
    .state_size = sizeof(SwapState),
    .check = check,
    .build = build,
    .draw = draw,
};
