/* The one runner of every view of the registry (storylm/registry.h): its
 * options parsed from the entry's table, its session opened, the report
 * built and printed as a table or --json, drawn with --svg. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "probe_common.h"
#include "storylm/registry.h"

#define MAX_OTHER_MODELS 4

/* The other models a call opened (swap's baseline), freed at its end. */
typedef struct CliModels {
    LoadedModel lm[MAX_OTHER_MODELS];
    int n;
} CliModels;

static int other_model(void *ctx, const ProbeSession *ps, const char *path, const LoadedModel **lm, Error *e) {
    CliModels *m = ctx;
    if (m->n == MAX_OTHER_MODELS) return FAIL(e, NULL, "too many models in one view");
    if (slm_probe_session_load_other(ps, path, &m->lm[m->n], e)) return -1;
    *lm = &m->lm[m->n++];
    return 0;
}

static void release_models(void *ctx) {
    CliModels *m = ctx;
    for (int i = 0; i < m->n; i++) slm_loaded_model_free(&m->lm[i]);
    m->n = 0;
}

/* Parses argv into params: -1 to go on, else the exit code. */
static int parse(const View *v, const Command *cmd, int argc, char **argv, void *params) {
    ParamTable t = slm_view_table(v);
    ParamsGiven given;
    int rc = args_parse(cmd, argc, argv, &t, params, &given);
    if (rc) return rc > 0 ? 0 : 2;
    ProbeOptions *po = slm_view_probe_options(params);
    Error e = {0};
    if (slm_view_params_check(v, params, PARAM_FROM_CLI, &e)) return args_param_error(cmd, &e);
    rc = probe_after_parse(cmd, &t, &given, po); /* after the checks: it finds the model */
    if (rc >= 0) return rc;
    if (v->session == VIEW_SESSION_PROBE && !po->model) /* a view whose --model is a list (heads) */
        po->model = cli_model_path(NULL, po->json);
    return -1;
}

/* Builds, draws (--svg) and prints the view on an open session (or none). */
static int build_and_print(const View *v, void *params, ProbeSession *ps, Error *e) {
    ProbeOptions *po = slm_view_probe_options(params);
    CliModels models = {0};
    ViewHost host = {.ctx = &models, .other_model = other_model, .release_models = release_models};
    Report rep;
    slm_report_init(&rep, v->name);
    ViewCall c = {.view = v, .params = params, .ps = ps, .report = &rep, .host = &host};
    int rc = slm_view_build(&c, e);
    if (!rc && po->svg && v->draw) rc = v->draw(&c, po->svg, e);
    if (!rc) rc = probe_emit(&rep, po, e);
    slm_view_call_end(&c);
    release_models(&models);
    slm_report_free(&rep);
    return rc;
}

int cli_run_view(const View *v, int argc, char **argv) {
    const Command cmd = {v->name, v->summary, v->usage, v->description, NULL};
    void *params = malloc(v->params_size);
    if (!params) return fprintf(stderr, "storylm %s: out of memory\n", v->name), 1;
    slm_view_params_init(v, params);
    slm_view_probe_options(params)->threads = cli_default_threads(); /* shown as --threads' default */
    int rc = parse(v, &cmd, argc, argv, params);
    if (rc >= 0) {
        free(params);
        return rc;
    }
    Error e = {0};
    ProbeSession ps = {0};
    int open = v->session == VIEW_SESSION_PROBE;
    if (open && slm_probe_session_open(&ps, slm_view_probe_options(params), v->name, slm_view_stories(v, params),
                                       v->probe_flags, &e)) {
        rc = -1;
    } else {
        rc = build_and_print(v, params, open ? &ps : NULL, &e);
        if (open) slm_probe_session_close(&ps);
    }
    free(params);
    return rc ? cli_fail(&e) : 0;
}
