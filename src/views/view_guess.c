/* The view guess: any network's next-token guesses after a text (window8's
 * too), and the probability and rank it gives a word there. The question of
 * the chapter: after a story whose hero was named long before, which network
 * brings the name back? */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "storylm/registry.h"
#include "storylm/views.h"
#include "storylm/report_header.h"

typedef struct GuessParams {
    ProbeOptions po;
    const char *text, *stories, *word;
    int pos, top;
} GuessParams;

typedef struct GuessState {
    ViewText vt;
    int ran;
} GuessState;

/* The top (k) tokens by logit at position p, largest first, into out. */
static void top_tokens(const float *logits, int V, int k, int *out) {
    for (int i = 0; i < k; i++) {
        int best = -1;
        for (int v = 0; v < V; v++) {
            int taken = 0;
            for (int j = 0; j < i && !taken; j++) taken = out[j] == v;
            if (!taken && (best < 0 || logits[v] > logits[best])) best = v;
        }
        out[i] = best;
    }
}

static void guess_rows(Report *r, const ProbeSession *ps, const ViewText *vt, int k) {
    const Activations *a = &vt->runner.acts;
    int V = ps->lm.model.cfg.vocab_size, top[64];
    top_tokens(a->logits + (size_t)vt->pos * V, V, k, top);
    ReportTable *g = slm_report_table(r, "guesses", "Top next-token guesses");
    slm_table_column(g, "rank", "rank", CELL_INT, 0);
    slm_table_column(g, "token", "token", CELL_TEXT, 0);
    slm_table_column(g, "id", "id", CELL_INT, 0);
    slm_table_column(g, "probability", "probability", CELL_PERCENT, 2);
    for (int i = 0; i < k; i++) {
        slm_table_row(g);
        slm_cell_int(g, i + 1);
        slm_cell_text(g, slm_probe_session_token(ps, top[i]));
        slm_cell_int(g, top[i]);
        slm_cell_number(g, slm_probe_probability(a, vt->pos, top[i], NULL));
    }
}

/* The word's first piece at the position: its probability and rank; with
 * names (a STORIES file), how often the word was seen and its kind. */
static int word_rows(Report *r, const ProbeSession *ps, const ViewText *vt, const char *word, Error *e) {
    SwapName name;
    if (slm_swap_name_make(&ps->lm.tokenizer, &ps->names, word, &name, e)) return -1;
    int rank;
    double prob = slm_probe_probability(&vt->runner.acts, vt->pos, name.pieces[0], &rank);
    slm_report_text(r, "word.word", "word", name.word);
    slm_report_text(r, "word.first_piece", "its first piece", slm_probe_session_token(ps, name.pieces[0]));
    slm_report_int(r, "word.pieces", "pieces", name.n_pieces);
    slm_report_number(r, "word.probability", "probability of its first piece", prob, 6);
    slm_report_int(r, "word.rank", "rank", rank);
    if (!ps->stories_path) return 0;
    slm_report_int(r, "word.seen", "seen in the stories names are learnt from", name.train_count);
    slm_report_text(r, "word.kind", "kind", slm_name_kind_names[name.kind]);
    return 0;
}

/* Names that show the point: the most common, rare and invented (slm_swap_default_names). */
static void suggestions(Report *r, const ProbeSession *ps) {
    SwapName names[9];
    int n = slm_swap_default_names(&ps->lm.tokenizer, &ps->names, names, 9);
    ReportTable *t = slm_report_table(r, "names", "Names to try: common, rare, invented");
    slm_table_column(t, "name", "name", CELL_TEXT, 0);
    slm_table_column(t, "kind", "kind", CELL_TEXT, 0);
    slm_table_column(t, "seen", "seen", CELL_INT, 0);
    slm_table_column(t, "pieces", "pieces", CELL_INT, 0);
    for (int i = 0; i < n; i++) {
        slm_table_row(t);
        slm_cell_text(t, names[i].word);
        slm_cell_text(t, slm_name_kind_names[names[i].kind]);
        slm_cell_int(t, names[i].train_count);
        slm_cell_int(t, names[i].n_pieces);
    }
}

static int build(ViewCall *c, Error *e) {
    const GuessParams *p = c->params;
    GuessState *st = c->state;
    const ProbeSession *ps = c->ps;
    st->ran = 1;
    if (slm_view_run_text(c, p->text, p->pos, 0, &st->vt, e)) return -1;
    int V = ps->lm.model.cfg.vocab_size, k = p->top < V ? p->top : V;
    slm_report_header_session(c->report, ps);
    slm_report_text(c->report, "text", "text", p->text);
    slm_report_int(c->report, "position", "position", st->vt.pos);
    slm_report_text(c->report, "token", "token", slm_probe_session_token(ps, st->vt.ids.data[st->vt.pos]));
    slm_report_int(c->report, "tokens", "tokens ([EOS] first)", (long long)st->vt.ids.len);
    slm_report_int(c->report, "context", "window8's window (tokens read)", ps->lm.model.cfg.context);
    if (p->word && p->word[0] && word_rows(c->report, ps, &st->vt, p->word, e)) return -1;
    guess_rows(c->report, ps, &st->vt, k);
    if (ps->stories_path) suggestions(c->report, ps);
    return 0;
}

static void done(ViewCall *c) {
    GuessState *st = c->state;
    if (st->ran) slm_view_release_text(c, &st->vt);
}

static const Param params[] = {
    VIEW_ARG(GuessParams, text, "TEXT", PARAM_REQUIRED | PARAM_TEXT),
    VIEW_ARG(GuessParams, stories, "STORIES", PARAM_STORIES),
    VIEW_PARAMS_COMMON(GuessParams),
    VIEW_PARAM_KERNELS(GuessParams),
    VIEW_PARAM_TEST_STORIES(GuessParams),
    VIEW_INT_PARAM(GuessParams, pos, "pos", "N", "the position guessing the next token; negative: from the end",
                   -1000000, 1000000, -1),
    {.name = "top-k",
     .type = PARAM_INT,
     .offset = offsetof(GuessParams, top),
     .meta = "K",
     .help = "the K most likely next tokens to show",
     .min = 1,
     .max = 64,
     .def = 10,
     .alias = "top"},
    VIEW_STRING_PARAM(GuessParams, word, "word", "WORD", "also the probability and rank of WORD's first piece"),
};

const View view_guess = {
    .name = "guess",
    .summary = "any network's next-token guesses after a text",
    .usage = "storylm guess TEXT [STORIES] [options]",
    .description = "Runs the text (after [EOS]) through any network, window8's included, and lists its\n"
                   "--top-k likeliest next tokens after position --pos (default: the last token).\n"
                   "--word W: the probability and rank of W's first piece there (as swap measures a\n"
                   "name). With STORIES, names are learnt from its training stories: how often W was seen\n"
                   "there and its kind (common, rare, invented), and names to try of each kind.",
    .params = params,
    .n_params = VIEW_N_PARAMS(params),
    .params_size = sizeof(GuessParams),
    .session = VIEW_SESSION_PROBE,
    .probe_flags = PROBE_NAMES,
    .state_size = sizeof(GuessState),
    .build = build,
    .done = done,
};
