/* The view registry: every view (a verb that builds a Report, printed as a
 * table, as --json, and optionally drawn with --svg) is one entry, in one
 * file src/views/view_NAME.c, and one line VIEW(NAME) in
 * src/views/view_list.h. From the entry alone the CLI parses the verb's
 * options (and prints its --help), and the server answers /api/NAME (GET
 * with a query string, POST with a JSON body) and lists it in /api/views.
 *
 * An entry declares its parameters in one table (params.h) bound to a struct
 * of its own whose first member is a ProbeOptions (the options every probe
 * shares: model, ablation, json, threads, svg, each group a table of its
 * own, below); the front end fills that struct
 * (defaults from the table, then the command line or the request), opens
 * the session the entry asks for, and calls build (params -> Report), then
 * draw (-> SVG file) when the CLI was given --svg. See docs/views.md. */
#ifndef STORYLM_REGISTRY_H
#define STORYLM_REGISTRY_H

#include <cjson/cJSON.h>
#include <stddef.h>

#include "storylm/error.h"
#include "storylm/params.h"
#include "storylm/report.h"
#include "storylm/loaded_model.h"
#include "storylm/probe_session.h"

/* A text run through the network (views.h, the views' shared helpers, which
 * an entry includes when it uses them). */
typedef struct ViewText ViewText;

/* View.session: what the front end opens before build. */
enum {
    VIEW_SESSION_PROBE = 1, /* a ProbeSession on the model (with the STORIES param's stories, if any) */
    VIEW_SESSION_NONE = 2   /* nothing: build reads params alone (and opens what it needs) */
};

/* View.serve */
enum {
    VIEW_SERVE_GET_POST = 0, /* /api/NAME answers both, and a batch may hold it */
    VIEW_SERVE_POST = 1,     /* POST only: it computes over every test story (seconds); no batch */
    VIEW_SERVE_CLI = 2       /* not served: it writes files (the message says so) */
};

typedef struct View View;
typedef struct ViewCall ViewCall;

/* What a front end offers a view beyond the session: runs of a text (the
 * server keeps them for the next click) and other models (swap's baseline).
 * NULL functions: the library's own (slm_view_text_run, slm_probe_session_load_other). */
typedef struct ViewHost {
    void *ctx;
    int (*run_text)(void *ctx, const ProbeSession *ps, const char *text, int pos, int how, ViewText *vt, Error *e);
    void (*release_text)(void *ctx, ViewText *vt);
    int (*other_model)(void *ctx, const ProbeSession *ps, const char *path, const LoadedModel **lm, Error *e);
    void (*release_models)(void *ctx); /* after the call: every other_model given back */
} ViewHost;

/* One call of a view. */
struct ViewCall {
    const View *view;
    void *params;     /* the view's params struct, filled (its first member a ProbeOptions) */
    ProbeSession *ps; /* VIEW_SESSION_PROBE: the session, ablation set (the server's is a copy of its cached one) */
    Report *report;
    void *state; /* state_size bytes, zeroed: what build keeps for draw; done frees what it holds */
    const ViewHost *host;
    int served; /* 1: a request of the server (build may cache; --svg is never set) */
};

struct View {
    const char *name;
    const char *summary;     /* one line for storylm --help */
    const char *usage;       /* "storylm distances [options]" */
    const char *description; /* storylm NAME --help's paragraphs */
    const Param *params;     /* its table (params.h): slm_view_table */
    int n_params;
    size_t params_size;
    int session;             /* VIEW_SESSION_* */
    int probe_flags;         /* PROBE_* of slm_probe_session_open (server: the same checks) */
    const char *no_ablation; /* this view takes no --ablate: why (what its numbers are), else NULL */
    int serve;               /* VIEW_SERVE_* */
    size_t state_size;       /* of ViewCall.state */
    int keep; /* 1: the server keeps its last answer a model (asked with no ablation on its stories, the page's
               * request: the same every time, and seconds to make) */
    /* Checks the parameters against each other after parsing, and settles
     * what one implies for another (eval --text: STORIES become mean
     * ablation's); NULL: nothing to check. -1 with e set: a usage error (the
     * CLI exits 2, the server says 400). */
    int (*check)(void *params, Error *e);
    /* Fills c->report; -1 with e set. */
    int (*build)(ViewCall *c, Error *e);
    /* Draws what build kept into the SVG file path (NULL: the view has no picture). */
    int (*draw)(ViewCall *c, const char *path, Error *e);
    /* Frees what build kept in c->state (NULL: nothing). */
    void (*done)(ViewCall *c);
};

/* The registry: every view of src/views/view_list.h, by name. */
int slm_view_count(void);
const View *slm_view_at(int i);
const View *slm_view_find(const char *name);

/* v's table of parameters. */
ParamTable slm_view_table(const View *v);
/* Fills params (the view's params_size bytes) with the table's defaults;
 * threads left at 0 (the front end's default: every core). */
void slm_view_params_init(const View *v, void *params);
/* The view's ProbeOptions: the first member of its params. */
ProbeOptions *slm_view_probe_options(void *params);
/* Checks a filled params struct (front's parameters in range, among their
 * choices, required ones given) and runs v->check: -1 with e set. */
int slm_view_params_check(const View *v, void *params, ParamFront front, Error *e);
/* The STORIES the session reads (the PARAM_STORIES parameter's value), or NULL. */
const char *slm_view_stories(const View *v, void *params);

/* {"name", "summary", "usage", "serve": "GET,POST" | "POST" | "CLI only",
 *  "params": [{"name", "key", "type", "help", "default", "min", "max",
 *  "choices", "positional", "required", "cli_only"}]}: what /api/views
 * lists for v (NULL when out of memory). */
cJSON *slm_view_describe(const View *v);

/* Runs text through c's session (c->host's run, else slm_view_text_run); a
 * view that ran one gives it back with slm_view_release_text before done. */
int slm_view_run_text(ViewCall *c, const char *text, int pos, int how, ViewText *vt, Error *e);
void slm_view_release_text(ViewCall *c, ViewText *vt);
/* Another model of path (swap's baseline): of the same vocabulary, held
 * until the front end ends the call. */
int slm_view_other_model(ViewCall *c, const char *path, const LoadedModel **lm, Error *e);

/* Builds c into c->report (slm_report_init'd by the caller): v->build. */
int slm_view_build(ViewCall *c, Error *e);
/* v->done, and the state freed. */
void slm_view_call_end(ViewCall *c);

/* ---- the shared parameters, for a view's table (T: its params struct) ---- */

/* The groups every probe shares, each over a ProbeOptions (the first member
 * of a view's params): the same options in every verb. */
extern const ParamTable params_model;        /* --model FILE */
extern const ParamTable params_ablation;     /* --ablate HEADS, --ablate-mode zero|mean */
extern const ParamTable params_output;       /* --json, --threads */
extern const ParamTable params_svg;          /* --svg FILE, --force */
extern const ParamTable params_test_stories; /* --test-stories N */
extern const ParamTable params_mean_stories; /* --stories FILE: where mean ablation finds its stories */
extern const ParamTable params_kernels;      /* --kernels blas|portable: the passes' kernels */

#define VIEW_MODEL_HELP "model file (default: ./" DEFAULT_MODEL_PATH ", else the shipped model)"
/* --ablate's and --ablate-mode's help: every verb that switches heads off says the same. */
#define VIEW_ABLATE_HELP                                                                                               \
    "switch heads off, e.g. 3,5 (1:3,2:5 is layer 1's head 3 and layer 2's head 5; the chapter's network has heads 0 " \
    "to 7)"
#define VIEW_ABLATE_MODE_HELP "zero, or mean: each head's mean output over the held-out test stories"
/* --ablate-mode's values, in AblationMode's order (model_types.h): the first, zero, is the default. */
#define VIEW_ABLATE_MODES "zero,mean"
#define VIEW_PARAM_MODEL(T) PARAM_GROUP_OF(T, po, params_model)
#define VIEW_PARAMS_ABLATE(T) PARAM_GROUP_OF(T, po, params_ablation)
#define VIEW_PARAMS_OUTPUT(T) PARAM_GROUP_OF(T, po, params_output)
#define VIEW_PARAMS_SVG(T) PARAM_GROUP_OF(T, po, params_svg)
#define VIEW_PARAM_TEST_STORIES(T) PARAM_GROUP_OF(T, po, params_test_stories)
/* For views without a STORIES argument: where mean ablation finds its stories. */
#define VIEW_PARAM_MEAN_STORIES(T) PARAM_GROUP_OF(T, po, params_mean_stories)
/* For views that run the network. */
#define VIEW_PARAM_KERNELS(T) PARAM_GROUP_OF(T, po, params_kernels)
/* The model, the ablation, --json and --threads: what every probe takes. */
#define VIEW_PARAMS_COMMON(T) VIEW_PARAM_MODEL(T), VIEW_PARAMS_ABLATE(T), VIEW_PARAMS_OUTPUT(T)

/* A view's own parameters (T its params struct, field a member of it);
 * flags, key, alias or choices: a designated initializer of their own. */
#define VIEW_INT_PARAM(T, field, name_, meta_, help_, min_, max_, def_)                                                \
    {                                                                                                                  \
        .name = name_, .type = PARAM_INT, .offset = offsetof(T, field), .meta = meta_, .help = help_, .min = min_,     \
        .max = max_, .def = def_                                                                                       \
    }
#define VIEW_DOUBLE_PARAM(T, field, name_, meta_, help_, min_, max_, def_)                                             \
    {                                                                                                                  \
        .name = name_, .type = PARAM_DOUBLE, .offset = offsetof(T, field), .meta = meta_, .help = help_, .min = min_,  \
        .max = max_, .def = def_                                                                                       \
    }
#define VIEW_BOOL_PARAM(T, field, name_, help_)                                                                        \
    { .name = name_, .type = PARAM_BOOL, .offset = offsetof(T, field), .help = help_ }
/* --head HEAD: "H" of --layer, or "L:H", read by slm_view_head; left out: every head. */
#define VIEW_HEAD_PARAM(T, field, help_)                                                                               \
    { .name = "head", .type = PARAM_HEADS, .offset = offsetof(T, field), .meta = "HEAD", .help = help_ }
#define VIEW_STRING_PARAM(T, field, name_, meta_, help_)                                                               \
    { .name = name_, .type = PARAM_STRING, .offset = offsetof(T, field), .meta = meta_, .help = help_ }
/* A positional argument: "TEXT", "STORIES" (flags: PARAM_REQUIRED, PARAM_TEXT, PARAM_STORIES...). */
#define VIEW_ARG(T, field, name_, flags_)                                                                              \
    { .name = name_, .type = PARAM_STRING, .offset = offsetof(T, field), .flags = PARAM_POSITIONAL | (flags_) }

#define VIEW_N_PARAMS(a) PARAMS_COUNT(a)

#endif
