/* storylm eval STORIES --model M: loss, perplexity and accuracy on the
 * held-out test stories (or all of them). */
#include <cjson/cJSON.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "args.h"
#include "common.h"
#include "probe_common.h"
#include "storylm/train.h"

static int run(int argc, char **argv);
const Command command_eval = {"eval", "loss, perplexity and accuracy on held-out stories",
                              "storylm eval STORIES [options] | storylm eval --text TEXT [STORIES] [options]",
                              "Reads STORIES with the model's own vocabulary and measures, over every predicted\n"
                              "position of the held-out test stories (the same 100 that training left out) or of\n"
                              "--all stories: the loss in nats per token, the perplexity exp(loss) and the share of\n"
                              "positions where the most likely token is the right one.\n"
                              "--text TEXT measures the same over one typed text instead (after [EOS]; each position\n"
                              "predicting the text's next token) and lists every position's token, target, loss and\n"
                              "rank; STORIES is then optional (mean ablation's test stories).",
                              run};

typedef struct EvalArgs {
    const char *model, *ablate, *ablate_mode, *text;
    bool all, json;
    int n_test, threads, max_positions;
} EvalArgs;

/* The numbers as a report (docs/json.md): model, stories, ablation, then the measures. */
static int print_result(const EvalArgs *a, const LoadedModel *lm, const Stories *s, const char *stories,
                        const Ablation *ab, const char *desc, const EvalResult *r, Error *e) {
    /* past a loss of 709 nats exp overflows double: the largest double stands
     * in (JSON has no infinity, and null is no result) */
    double perplexity = fmin(exp(r->loss), DBL_MAX);
    Report rep;
    slm_report_init(&rep, "eval");
    slm_report_header_model(&rep, &lm->model, lm->path);
    slm_report_header_stories(&rep, stories, s->n_stories, s->n_test);
    slm_report_header_ablation(&rep, ab, &lm->model.cfg, desc);
    slm_report_text(&rep, "split", "evaluated", a->all ? "all" : "test");
    slm_report_int(&rep, "stories_evaluated", "stories evaluated", a->all ? s->n_stories : s->n_test);
    slm_report_int(&rep, "positions", "predicted positions", r->positions);
    slm_report_number(&rep, "loss", "loss (nats/token)", r->loss, 4);
    slm_report_number(&rep, "perplexity", perplexity < DBL_MAX ? "perplexity" : NULL, perplexity, 2);
    if (perplexity == DBL_MAX) slm_report_note(&rep, "perplexity over 1e308 (the loss is past 709 nats)");
    slm_report_percent(&rep, "accuracy", "accuracy (top guess right)", r->accuracy, 2);
    ProbeOptions po = {.json = a->json};
    int rc = probe_emit(&rep, &po, e);
    slm_report_free(&rep);
    return rc;
}

static int eval_file(const EvalArgs *a, const char *stories_path, Error *e) {
    LoadedModel lm;
    const char *path = cli_model_path(a->model, a->json);
    if (slm_loaded_model_load(&lm, path, e)) return -1;
    Stories s = {0};
    StoriesOptions so = slm_stories_default_options();
    so.n_test = a->n_test;
    Ablation ab = {0};
    float *mean = NULL;
    char desc[160];
    int rc = slm_stories_load(&s, stories_path, &lm.tokenizer, &so, e);
    if (!rc)
        rc = slm_ablation_setup(&lm, a->ablate, a->ablate_mode, &s, stories_path, a->n_test, &ab, &mean, desc,
                                sizeof desc, e);
    int *all = NULL;
    if (!rc && a->all) {
        all = xmalloc((size_t)s.n_stories * sizeof(int), e);
        if (!all) rc = -1;
        for (int i = 0; !rc && i < s.n_stories; i++) all[i] = i;
    }
    if (!rc && !a->all && s.n_test == 0)
        rc = FAIL(e, "use --all to evaluate on every story", "'%s' has too few stories to hold any out", stories_path);
    EvalResult r;
    int n = a->all ? s.n_stories : s.n_test;
    if (!rc && (rc = slm_evaluate(&lm.model, &s, a->all ? all : s.test, n, &ab, a->max_positions, &r, e)))
        slm_error_prefix(e, "evaluating '%s': ", path);
    if (!rc && (r.positions == 0 || !isfinite(r.loss))) /* never a NaN delivered as a result */
        rc = FAIL(e, "give stories of at least two tokens", "'%s': the stories evaluated hold no position to predict",
                  stories_path);
    if (!rc) rc = print_result(a, &lm, &s, stories_path, &ab, desc, &r, e);
    free(all);
    free(mean);
    slm_stories_free(&s);
    slm_loaded_model_free(&lm);
    return rc;
}

/* --text: the loss on one typed text, as the server's /api/loss gives it. */
static int eval_text(const EvalArgs *a, const char *stories_path, Error *e) {
    ProbeOptions po = {.model = cli_model_path(a->model, a->json),
                       .ablate = a->ablate,
                       .ablate_mode = a->ablate_mode,
                       .mean_stories = stories_path,
                       .json = a->json,
                       .n_test = a->n_test};
    ProbeSession ps;
    if (slm_probe_session_open(&ps, &po, "eval", NULL, 0, e)) return -1;
    ViewText vt;
    Report r;
    slm_report_init(&r, "eval");
    int rc = slm_view_text_run(&vt, &ps, a->text, -1, 0, e);
    if (!rc) slm_view_loss(&r, &ps, &vt, a->text);
    if (!rc) rc = probe_emit(&r, &po, e);
    slm_report_free(&r);
    slm_view_text_free(&vt);
    slm_probe_session_close(&ps);
    return rc;
}

static int run(int argc, char **argv) {
    EvalArgs a = {
        .n_test = STORIES_DEFAULT_TEST, .threads = cli_default_threads(), .max_positions = 4096, .ablate_mode = "zero"};
    const char *pos[1];
    int np;
    Option opts[] = {
        {"model", 'm', OPT_STRING, &a.model, "FILE",
         "model file (default: ./" DEFAULT_MODEL_PATH ", else the shipped model)", 0, 0},
        {"all", 0, OPT_BOOL, &a.all, NULL, "every story of the file, not only the held-out ones", 0, 0},
        {"text", 0, OPT_STRING, &a.text, "TEXT", "measure one typed text instead of the stories", 0, 0},
        {"test-stories", 0, OPT_INT, &a.n_test, "N", "held-out test stories (as in training)", 1, 100000},
        ABLATE_OPTIONS(a.ablate, a.ablate_mode),
        {"json", 0, OPT_BOOL, &a.json, NULL, "print JSON", 0, 0},
        THREADS_OPTION(a.threads),
        {"max-positions", 0, OPT_INT, &a.max_positions, "N", "positions per forward pass", 64, 1 << 20},
    };
    int rc = args_parse(&command_eval, argc, argv, opts, N_OPTIONS(opts), pos, 0, 1, &np);
    if (rc) return rc > 0 ? 0 : 2;
    if (!a.text && np == 0) return args_usage_error(&command_eval, "missing STORIES (or --text TEXT)");
    if (a.text && a.all) return args_usage_error(&command_eval, "--all is for STORIES, not --text");
    if (probe_check_mode(&command_eval, a.ablate_mode)) return 2;
    cli_set_threads(a.threads);
    Error e = {0};
    if (a.text ? eval_text(&a, np ? pos[0] : NULL, &e) : eval_file(&a, pos[0], &e)) return cli_fail(&e);
    return 0;
}
