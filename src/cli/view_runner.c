/* The one runner of every view of the registry (storylm/registry.h): its
 * options parsed from the entry's table, its session opened, the report
 * built and printed as a table or --json, drawn with --svg. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "probe_common.h"
#include "storylm/registry.h"

#define MAX_VIEW_OPTIONS 64
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

/* The entry's table as args.c's options bound to params; positional ones
 * (and a request's own fields) left out. Returns how many. */
static int view_options(const View *v, void *params, Option *opts) {
    static const OptionKind kinds[] = {OPT_BOOL, OPT_INT, OPT_DOUBLE, OPT_STRING, OPT_STRINGS};
    int n = 0;
    for (int i = 0; i < v->n_params && n < MAX_VIEW_OPTIONS; i++) {
        const ViewParam *p = &v->params[i];
        if (p->flags & (VP_POSITIONAL | VP_REQUEST_ONLY)) continue;
        opts[n++] = (Option){p->name, p->short_name, kinds[p->type], slm_view_param_target(p, params),
                             p->meta, p->help,       p->min,         p->max};
    }
    return n;
}

/* The positional arguments into their fields, in table order. */
static void view_positionals(const View *v, void *params, const char **given, int n) {
    for (int i = 0, k = 0; i < v->n_params && k < n; i++)
        if (v->params[i].flags & VP_POSITIONAL)
            *(const char **)slm_view_param_target(&v->params[i], params) = given[k++];
}

/* Parses argv into params: -1 to go on, else the exit code. */
static int parse(const View *v, const Command *cmd, int argc, char **argv, void *params) {
    Option opts[MAX_VIEW_OPTIONS];
    int n_opts = view_options(v, params, opts), min_pos = 0, max_pos = 0, np = 0;
    for (int i = 0; i < v->n_params; i++)
        if (v->params[i].flags & VP_POSITIONAL) min_pos += (v->params[i].flags & VP_REQUIRED) != 0, max_pos++;
    const char *given[8];
    if (v->no_ablation && probe_refuse_ablation(cmd, argc, argv, v->no_ablation)) return 2;
    int rc = args_parse(cmd, argc, argv, opts, n_opts, given, min_pos, max_pos < 8 ? max_pos : 8, &np);
    if (rc) return rc > 0 ? 0 : 2;
    view_positionals(v, params, given, np);
    ProbeOptions *po = slm_view_probe_options(params);
    Error e = {0};
    if (slm_view_params_check(v, params, &e)) return args_usage_error(cmd, "%s", e.message);
    rc = probe_after_parse(cmd, argc, argv, opts, n_opts, po); /* after the checks: it finds the model */
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
