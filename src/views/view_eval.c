/* The view eval: loss, perplexity and accuracy on the held-out test stories
 * (or all of them), or on one typed text (--text: the server's /api/loss). */
#include <float.h>
#include <math.h>
#include <stdlib.h>

#include "storylm/evaluate.h"
#include "storylm/registry.h"
#include "storylm/views.h"
#include "storylm/report_header.h"

typedef struct EvalParams {
    ProbeOptions po;
    const char *stories, *text;
    bool all;
    int max_positions;
} EvalParams;

typedef struct EvalState {
    ViewText vt;
    int ran;
} EvalState;

/* --text: STORIES, when given, are mean ablation's (the session reads none). */
static int check(void *params, Error *e) {
    EvalParams *p = params;
    if (!p->text && !p->stories) return FAIL(e, NULL, "missing STORIES (or --text TEXT)");
    if (p->text && p->all) return FAIL(e, NULL, "--all is for STORIES, not --text");
    if (p->text) {
        p->po.mean_stories = p->stories;
        p->stories = NULL;
    }
    return 0;
}

/* The numbers as a report (docs/json.md): model, stories, ablation, then the measures. */
static void eval_report(Report *rep, const ProbeSession *ps, bool all, const EvalResult *r, long long bytes) {
    /* past a loss of 709 nats exp overflows double: the largest double stands
     * in (JSON has no infinity, and null is no result) */
    double perplexity = fmin(exp(r->loss), DBL_MAX);
    const Stories *s = &ps->stories;
    slm_report_header_session(rep, ps);
    slm_report_text(rep, "split", "evaluated", all ? "all" : "test");
    slm_report_int(rep, "stories_evaluated", "stories evaluated", all ? s->n_stories : s->n_test);
    slm_report_int(rep, "positions", "predicted positions", r->positions);
    slm_report_number(rep, "loss", "loss (nats/token)", r->loss, 4);
    slm_report_number(rep, "perplexity", perplexity < DBL_MAX ? "perplexity" : NULL, perplexity, 2);
    if (perplexity == DBL_MAX) slm_report_note(rep, "perplexity over 1e308 (the loss is past 709 nats)");
    slm_report_percent(rep, "accuracy", "accuracy (top guess right)", r->accuracy, 2);
    slm_view_loss_per_char(rep, r->loss * (double)r->positions, bytes);
}

/* The held-out test stories of the session, or --all of them. */
static int eval_stories(ViewCall *c, Error *e) {
    const EvalParams *p = c->params;
    const ProbeSession *ps = c->ps;
    const Stories *s = &ps->stories;
    if (!p->all && s->n_test == 0)
        return FAIL(e, "use --all to evaluate on every story", "'%s' has too few stories to hold any out",
                    ps->stories_path);
    int *all = NULL, n = p->all ? s->n_stories : s->n_test;
    if (p->all && !(all = xmalloc((size_t)s->n_stories * sizeof(int), e))) return -1;
    for (int i = 0; all && i < s->n_stories; i++) all[i] = i;
    EvalResult r;
    long long bytes = 0;
    int rc = slm_evaluate(&ps->lm.model, s, p->all ? all : s->test, n, &ps->ablation, p->max_positions, &r, e) ||
             slm_stories_text_bytes(s, ps->stories_path, &ps->lm.tokenizer, p->all ? all : s->test, n, &bytes, e);
    free(all);
    if (rc) slm_error_prefix(e, "evaluating '%s': ", ps->model_path);
    if (!rc && (r.positions == 0 || !isfinite(r.loss))) /* never a NaN delivered as a result */
        rc = FAIL(e, "give stories of at least two tokens", "'%s': the stories evaluated hold no position to predict",
                  ps->stories_path);
    if (!rc) eval_report(c->report, ps, p->all, &r, bytes);
    return rc;
}

static int build(ViewCall *c, Error *e) {
    const EvalParams *p = c->params;
    EvalState *st = c->state;
    if (!p->text) return eval_stories(c, e);
    st->ran = 1;
    if (slm_view_run_text(c, p->text, -1, 0, &st->vt, e)) return -1;
    slm_view_loss(c->report, c->ps, &st->vt, p->text);
    return 0;
}

static void done(ViewCall *c) {
    EvalState *st = c->state;
    if (st->ran) slm_view_release_text(c, &st->vt);
}

static const Param params[] = {
    VIEW_ARG(EvalParams, stories, "STORIES", PARAM_STORIES),
    VIEW_PARAM_MODEL(EvalParams),
    VIEW_BOOL_PARAM(EvalParams, all, "all", "every story of the file, not only the held-out ones"),
    {.name = "text",
     .type = PARAM_STRING,
     .offset = offsetof(EvalParams, text),
     .meta = "TEXT",
     .help = "measure one typed text instead of the stories",
     .flags = PARAM_TEXT},
    VIEW_PARAM_TEST_STORIES(EvalParams),
    VIEW_PARAMS_ABLATE(EvalParams),
    VIEW_PARAMS_OUTPUT(EvalParams),
    {.name = "max-positions",
     .type = PARAM_INT,
     .offset = offsetof(EvalParams, max_positions),
     .meta = "N",
     .help = "positions per forward pass",
     .min = 64,
     .max = 1 << 20,
     .def = 4096,
     .flags = PARAM_CLI_ONLY},
    VIEW_PARAM_KERNELS(EvalParams),
};

const View view_eval = {
    .name = "eval",
    .summary = "loss, perplexity and accuracy on held-out stories",
    .usage = "storylm eval STORIES [options] | storylm eval --text TEXT [STORIES] [options]",
    .description = "Reads STORIES with the model's own vocabulary and measures, over every predicted\n"
                   "position of the held-out test stories (the same 100 that training left out) or of\n"
                   "--all stories: the loss in nats per token, the perplexity exp(loss), the share of\n"
                   "positions where the most likely token is the right one, and the loss per character\n"
                   "(nats and bits): the total over the stories' UTF-8 bytes as the file holds them, each\n"
                   "story trimmed, plus one a story for its closing [EOS]; so vocabularies compare.\n"
                   "--text TEXT measures the same over one typed text instead (after [EOS]; each position\n"
                   "predicting the text's next token) and lists every position's token, target, loss and\n"
                   "rank; STORIES is then optional (mean ablation's test stories).",
    .params = params,
    .n_params = VIEW_N_PARAMS(params),
    .params_size = sizeof(EvalParams),
    .session = VIEW_SESSION_PROBE,
    .probe_flags = PROBE_ALL_STORIES,
    .state_size = sizeof(EvalState),
    .check = check,
    .build = build,
    .done = done,
};
