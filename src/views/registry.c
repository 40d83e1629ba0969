/* The view registry: see registry.h. */
#include "storylm/registry.h"
#include "storylm/views.h"

#include "storylm/outputs.h"

#include <stdlib.h>
#include <string.h>

#define VIEW(name) extern const View view_##name;
#include "view_list.h"
#undef VIEW

static const View *const views[] = {
#define VIEW(name) &view_##name,
#include "view_list.h"
#undef VIEW
};
#define N_VIEWS ((int)(sizeof views / sizeof views[0]))

int slm_view_count(void) { return N_VIEWS; }
const View *slm_view_at(int i) { return i >= 0 && i < N_VIEWS ? views[i] : NULL; }

const View *slm_view_find(const char *name) {
    for (int i = 0; i < N_VIEWS; i++)
        if (strcmp(views[i]->name, name) == 0) return views[i];
    return NULL;
}

/* ---- the groups every probe shares, over a ProbeOptions ---- */

static const Param model_param[] = {
    {.name = "model",
     .short_name = 'm',
     .type = PARAM_STRING,
     .offset = offsetof(ProbeOptions, model),
     .meta = "FILE",
     .help = VIEW_MODEL_HELP,
     .flags = PARAM_SERVED | PARAM_NO_PYTHON},
};
const ParamTable params_model = {"model", model_param, PARAMS_COUNT(model_param)};

/* --ablate: heads as head_list.h reads them (Python's generate takes ablate= too,
 * its heads set to 0); --ablate-mode: an AblationMode, parsed once here for every front end. */
static const Param ablation_params[] = {
    {.name = "ablate",
     .type = PARAM_HEADS,
     .offset = offsetof(ProbeOptions, ablate),
     .meta = "HEADS",
     .help = VIEW_ABLATE_HELP,
     .flags = PARAM_SERVED},
    {.name = "ablate-mode",
     .type = PARAM_CHOICE,
     .offset = offsetof(ProbeOptions, ablate_mode),
     .meta = "MODE",
     .help = VIEW_ABLATE_MODE_HELP,
     .flags = PARAM_SERVED | PARAM_NO_PYTHON,
     .choices = VIEW_ABLATE_MODES},
};
const ParamTable params_ablation = {"ablation", ablation_params, PARAMS_COUNT(ablation_params)};

static const Param output_params[] = {
    {.name = "json",
     .type = PARAM_BOOL,
     .offset = offsetof(ProbeOptions, json),
     .help = "print JSON with the same numbers",
     .flags = PARAM_CLI_ONLY},
    {.name = "threads",
     .type = PARAM_INT,
     .offset = offsetof(ProbeOptions, threads),
     .meta = "N",
     .help = "threads, by default one per core",
     .min = 1,
     .max = 256,
     .flags = PARAM_CLI_ONLY},
};
const ParamTable params_output = {"output", output_params, PARAMS_COUNT(output_params)};

static const Param svg_params[] = {
    {.name = "svg",
     .type = PARAM_STRING,
     .offset = offsetof(ProbeOptions, svg),
     .meta = "FILE",
     .help = "also draw the picture into FILE (SVG); a file of another kind there is kept",
     .flags = PARAM_CLI_ONLY},
    {.name = "force",
     .type = PARAM_BOOL,
     .offset = offsetof(ProbeOptions, force),
     .help = OUTPUTS_FORCE_HELP,
     .flags = PARAM_CLI_ONLY},
};
const ParamTable params_svg = {"svg", svg_params, PARAMS_COUNT(svg_params)};

static const Param test_stories_param[] = {
    {.name = "test-stories",
     .type = PARAM_INT,
     .offset = offsetof(ProbeOptions, n_test),
     .meta = "N",
     .help = "held-out test stories (as in training)",
     .min = 1,
     .max = 100000,
     .def = STORIES_DEFAULT_TEST,
     .flags = PARAM_CLI_ONLY},
};
const ParamTable params_test_stories = {"test stories", test_stories_param, PARAMS_COUNT(test_stories_param)};

static const Param mean_stories_param[] = {
    {.name = "stories",
     .type = PARAM_STRING,
     .offset = offsetof(ProbeOptions, mean_stories),
     .meta = "FILE",
     .help = "stories for --ablate-mode mean (needed for it; info names the training file)",
     .flags = PARAM_CLI_ONLY},
};
const ParamTable params_mean_stories = {"mean stories", mean_stories_param, PARAMS_COUNT(mean_stories_param)};

/* --kernels for the verbs that run the network: portable gives the static
 * page's and the WebAssembly build's numbers, bit for bit. */
static const Param kernels_param[] = {
    KERNELS_PARAM(ProbeOptions, kernels,
                  "the kernels of the network's passes: blas (OpenBLAS), or portable (the numbers of training "
                  "with --kernels portable, of the WebAssembly build and of the static page, bit for bit; "
                  "docs/kernels.md)"),
};
const ParamTable params_kernels = {"kernels", kernels_param, PARAMS_COUNT(kernels_param)};

/* ---- a view's parameters ---- */

ParamTable slm_view_table(const View *v) { return (ParamTable){v->name, v->params, v->n_params}; }

ProbeOptions *slm_view_probe_options(void *params) { return params; }

void slm_view_params_init(const View *v, void *params) {
    memset(params, 0, v->params_size);
    /* what a view that lists no --test-stories still reads (the ablation's mode: zero, the enum's 0) */
    slm_view_probe_options(params)->n_test = STORIES_DEFAULT_TEST;
    ParamTable t = slm_view_table(v);
    slm_params_init(&t, params);
}

int slm_view_params_check(const View *v, void *params, ParamFront front, Error *e) {
    ParamTable t = slm_view_table(v);
    if (slm_params_check(&t, params, front, e)) return -1;
    return v->check ? v->check(params, e) : 0;
}

const char *slm_view_stories(const View *v, void *params) {
    ParamTable t = slm_view_table(v);
    ParamList l;
    slm_params_list(&t, &l);
    for (int i = 0; i < l.n; i++)
        if (l.at[i].p->flags & PARAM_STORIES) return *(const char **)slm_param_field(&l.at[i], params);
    return NULL;
}

cJSON *slm_view_describe(const View *v) {
    static const char *const serve[] = {"GET,POST", "POST", "CLI only"};
    void *defaults = malloc(v->params_size);
    cJSON *j = defaults ? cJSON_CreateObject() : NULL;
    if (!j) return free(defaults), NULL;
    slm_view_params_init(v, defaults);
    cJSON_AddStringToObject(j, "name", v->name);
    cJSON_AddStringToObject(j, "summary", v->summary);
    cJSON_AddStringToObject(j, "usage", v->usage);
    cJSON_AddStringToObject(j, "serve", serve[v->serve]);
    cJSON_AddBoolToObject(j, "svg", v->draw != NULL);
    ParamTable t = slm_view_table(v);
    cJSON_AddItemToObject(j, "params", slm_params_describe(&t, defaults, 0));
    free(defaults);
    return j;
}

int slm_view_run_text(ViewCall *c, const char *text, int pos, int how, ViewText *vt, Error *e) {
    *vt = (ViewText){0};
    if (c->host && c->host->run_text) return c->host->run_text(c->host->ctx, c->ps, text, pos, how, vt, e);
    return slm_view_text_run(vt, c->ps, text, pos, how, e);
}

void slm_view_release_text(ViewCall *c, ViewText *vt) {
    if (c->host && c->host->release_text)
        c->host->release_text(c->host->ctx, vt);
    else
        slm_view_text_free(vt);
}

int slm_view_other_model(ViewCall *c, const char *path, const LoadedModel **lm, Error *e) {
    return c->host && c->host->other_model ? c->host->other_model(c->host->ctx, c->ps, path, lm, e)
                                           : FAIL(e, NULL, "no other model can be opened here");
}

int slm_view_build(ViewCall *c, Error *e) {
    if (c->view->state_size && !c->state) {
        c->state = calloc(1, c->view->state_size);
        if (!c->state) return FAIL(e, NULL, "out of memory");
    }
    return c->view->build(c, e);
}

void slm_view_call_end(ViewCall *c) {
    if (c->view->done && c->state) c->view->done(c);
    free(c->state);
    c->state = NULL;
}
