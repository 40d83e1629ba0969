/* The JSON endpoints: each reads its fields, opens a session on a cached
 * model and answers with the report the matching CLI verb prints with
 * --json (src/views builds both). */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server_internal.h"
#include "storylm/fileio.h"
#include "storylm/parse.h"
#include "storylm/registry.h"
#include "storylm/train_params.h"

/* A text (key's, read: at most 64 KiB) of at most SERVER_MAX_TOKENS tokens. */
static int request_tokens(const Session *ss, const char *key, const char *text, Reply *r) {
    IntVec ids = {0};
    Error e = {0};
    int rc = slm_tokenizer_encode(&ss->ps.lm.tokenizer, text, strlen(text), &ids, &e);
    size_t n = ids.len;
    slm_intvec_free(&ids);
    if (rc) return reply_failure(r, 400, &e), -1;
    if (n < SERVER_MAX_TOKENS) return 0;
    char msg[160];
    snprintf(msg, sizeof msg, "\"%s\" is %zu tokens; the limit is %d", key, n, SERVER_MAX_TOKENS - 1);
    reply_error(r, 413, msg, "send a shorter text");
    return -1;
}

/* ---- the views of the registry: /api/NAME from the entry ------------------------------ */

/* The text run whole (kept for the next click: the attention, trace and
 * loss views of any position read the same run), whatever `how` asks: a
 * run of the whole text gives a prefix's positions the same numbers. */
static int host_run_text(void *ctx, const ProbeSession *ps, const char *text, int pos, int how, ViewText *vt,
                         Error *e) {
    Session *ss = ctx;
    (void)how;
    if (ss->run) entry_run_release(ss->entry, ss->run);
    ss->run = NULL;
    return entry_run(ss->entry, ps, text, pos, vt, &ss->run, e);
}

static void host_release_text(void *ctx, ViewText *vt) {
    (void)ctx, (void)vt;
} /* the session's run: released with it */

/* Another listed model from the cache (404 when not listed), held until the session is released. */
static int host_other_model(void *ctx, const ProbeSession *ps, const char *path, const LoadedModel **lm, Error *e) {
    Session *ss = ctx;
    char real[PATH_MAX];
    if (ss->n_other == (int)(sizeof ss->other / sizeof ss->other[0]))
        return FAIL(e, NULL, "too many models in one request");
    if (model_resolve(&ss->server->dirs, path, real, sizeof real)) {
        ss->status = 404;
        return FAIL(e, "name one of the models GET /api/models lists", "unknown model '%s'", path);
    }
    ModelEntry *m;
    if (cache_acquire(&ss->server->cache, real, &m, e)) return -1;
    ss->other[ss->n_other++] = m;
    if (strcmp(m->ps.lm.vocab, ps->lm.vocab) != 0)
        return FAIL(e, "pick a baseline trained with the same vocabulary",
                    "'%s' and '%s' use different vocabularies, so their guesses cannot be compared", real,
                    ps->model_path);
    *lm = &m->ps.lm;
    return 0;
}

/* The model fits the view (its PROBE_* flags, as slm_probe_session_open checks them). */
static int model_fits(const Model *m, int flags, const char *what, Error *e) {
    return flags & PROBE_HEADS ? slm_probe_need_heads(m, what, e) : 0;
}

/* The STORIES a view reads (the field given, read): the server's (1), or a
 * request's "stories" file under a --data-dir folder (2, checked: 403 otherwise). */
static int request_stories(Server *s, const char **field, Reply *r) {
    char real[PATH_MAX];
    const char *given = *field;
    *field = given && strcmp(given, s->o.stories) != 0 ? given : s->o.stories;
    if (*field == s->o.stories) return 1;
    return server_allowed_stories(s, given, real, sizeof real, r) ? -1 : 2;
}

/* The view's parameters from a request (absent: the defaults); *stories
 * says whose STORIES the session reads. */
static int request_params(Server *s, const View *v, const cJSON *body, void *params, int *stories, char *scratch,
                          size_t size, Reply *r) {
    ParamTable t = slm_view_table(v);
    slm_view_params_init(v, params);
    *stories = 0;
    if (request_read(&t, body, params, NULL, scratch, size, r)) return -1;
    ParamList l;
    slm_params_list(&t, &l);
    for (int i = 0; i < l.n; i++)
        if ((l.at[i].p->flags & PARAM_STORIES) &&
            (*stories = request_stories(s, (const char **)slm_param_field(&l.at[i], params), r)) < 0)
            return -1;
    Error e = {0};
    if (slm_view_params_check(v, params, PARAM_FROM_REQUEST, &e)) return reply_failure(r, 400, &e), -1;
    if (!slm_view_stories(v, params)) *stories = 0; /* the check took them for another use (eval --text) */
    return 0;
}

/* The parameter of l a request's field names (its key or alias), or NULL. */
static const Param *param_of_key(const ParamList *l, const char *name) {
    char key[64];
    for (int i = 0; i < l->n; i++) {
        const Param *p = l->at[i].p;
        if (!slm_param_from(p, PARAM_FROM_REQUEST)) continue;
        if (strcmp(slm_param_key(p, key, sizeof key), name) == 0 || (p->alias && strcmp(p->alias, name) == 0)) return p;
    }
    return NULL;
}

/* The bytes of s to show of at most max: cut between whole characters. */
static int shown(const char *s, int max) {
    int n = (int)strnlen(s, (size_t)max + 1);
    if (n <= max) return n;
    while (max > 0 && ((unsigned char)s[max] & 0xC0) == 0x80) max--;
    return max;
}

/* A GET's query (every value a string) as the JSON body a POST sends: each
 * field of a number or a bool read as one (400 otherwise). */
static cJSON *query_body(const ParamTable *t, const cJSON *query, Reply *r) {
    ParamList l;
    slm_params_list(t, &l);
    cJSON *body = cJSON_CreateObject(), *item;
    cJSON_ArrayForEach(item, query) {
        const Param *p = param_of_key(&l, item->string);
        const char *text = item->valuestring;
        double x;
        cJSON *value = NULL;
        if (p && (p->type == PARAM_INT || p->type == PARAM_DOUBLE)) {
            if (slm_parse_double(text, -INFINITY, INFINITY, &x) == PARSE_OK) value = cJSON_CreateNumber(x);
        } else if (p && p->type == PARAM_BOOL) {
            int yes = !text[0] || strcmp(text, "true") == 0 || strcmp(text, "1") == 0;
            if (yes || strcmp(text, "false") == 0 || strcmp(text, "0") == 0) value = cJSON_CreateBool(yes);
        } else {
            value = cJSON_CreateString(text);
        }
        if (!value) {
            char msg[160];
            snprintf(msg, sizeof msg, "\"%.*s\" must be a %s, not '%.*s'", shown(item->string, 60), item->string,
                     p->type == PARAM_BOOL ? "true or false" : "number", shown(text, 40), text);
            cJSON_Delete(body);
            return reply_error(r, 400, msg, NULL), NULL;
        }
        cJSON_AddItemToObject(body, item->string, value);
    }
    return body;
}

/* Each PARAM_TEXT parameter's text given: at most SERVER_MAX_TOKENS tokens
 * (its bytes were bounded as it was read). */
static int request_texts(const Session *ss, const View *v, void *params, Reply *r) {
    ParamTable t = slm_view_table(v);
    ParamList l;
    slm_params_list(&t, &l);
    char key[64];
    for (int i = 0; i < l.n; i++) {
        if (!(l.at[i].p->flags & PARAM_TEXT)) continue; /* only a text's field holds a char * */
        const char *text = *(const char **)slm_param_field(&l.at[i], params);
        if (text && request_tokens(ss, slm_param_key(l.at[i].p, key, sizeof key), text, r)) return -1;
    }
    return 0;
}

/* The view built on the request's session and answered as its --json. */
/* The view built on ps (the request's session, or its copy with the
 * request's own stories) into r. */
static int view_build(const View *v, Session *ss, ProbeSession *ps, void *params, Reply *r) {
    ViewHost host = {
        .ctx = ss, .run_text = host_run_text, .release_text = host_release_text, .other_model = host_other_model};
    Report rep;
    slm_report_init(&rep, v->name);
    ViewCall c = {.view = v, .params = params, .ps = ps, .report = &rep, .host = &host, .served = 1};
    Error e = {0};
    int rc = slm_view_build(&c, &e);
    slm_view_call_end(&c);
    if (rc)
        reply_failure(r, ss->status ? ss->status : 400, &e);
    else
        reply_report(r, &rep);
    slm_report_free(&rep);
    return r->status;
}

/* A view marked keep, asked with no ablation on the server's stories, gives
 * the same answer every time: the model's entry keeps the last one with
 * the request that made it (the fields but the model). */
static char *kept_key(const View *v, const cJSON *body) {
    cJSON *copy = cJSON_Duplicate(body, 1);
    cJSON_DeleteItemFromObjectCaseSensitive(copy, "model");
    cJSON_AddStringToObject(copy, " view", v->name);
    char *key = copy ? cJSON_PrintUnformatted(copy) : NULL;
    cJSON_Delete(copy);
    return key;
}

/* view_build, or the kept answer of the same request (one computes, the others wait). */
static int view_build_kept(const View *v, Session *ss, void *params, const cJSON *body, Reply *r) {
    ModelEntry *m = ss->entry;
    char *key = kept_key(v, body);
    pthread_mutex_lock(&m->lock);
    if (key && m->kept_json && strcmp(m->kept_key, key) == 0) {
        r->body = strdup(m->kept_json);
        r->status = r->body ? 200 : 500;
        r->mime = "application/json";
    } else if (view_build(v, ss, &ss->ps, params, r) == 200 && key && r->body) {
        free(m->kept_json), free(m->kept_key);
        m->kept_json = strdup(r->body);
        m->kept_key = m->kept_json ? key : NULL;
        key = m->kept_json ? NULL : key;
    }
    pthread_mutex_unlock(&m->lock);
    free(key);
    return r->status;
}

/* The session of the request (stories: 0 none, 1 the server's, 2 the
 * request's own) opened and checked, the view built on it. */
static int view_answer(Server *s, const View *v, const cJSON *body, void *params, int stories, Reply *r) {
    Session ss;
    if (session_open(s, body, stories == 1 ? NEED_STORIES : 0, &ss, r)) return r->status;
    ss.server = s;
    Error e = {0};
    /* the request's kernels (its copy of the shared model: the weights are shared, the choice is not) */
    ss.ps.lm.model.kernels = (Kernels)slm_view_probe_options(params)->kernels;
    ProbeSession own = ss.ps; /* with the request's stories (2), loaded for this request only */
    own.stories = (Stories){0};
    own.names = (NameList){0};
    own.stories_path = slm_view_stories(v, params);
    /* a view's own mean ablation (ablate's "mode"): the heads' means made once, as the CLI makes them */
    int mean = slm_view_probe_options(params)->ablate_mode == ABLATE_MEAN && stories == 1;
    int rc = slm_kernels_check(ss.ps.lm.model.kernels, PRECISION_FP32, &e) || /* the WebAssembly build has no blas */
             model_fits(&ss.ps.lm.model, v->probe_flags, v->name, &e);
    if (!rc && mean) rc = entry_mean(ss.entry, ss.ps.lm.model.kernels, s->o.stories, &e);
    ss.ps.mean = mean ? ss.entry->mean[ss.ps.lm.model.kernels] : NULL;
    if (!rc && stories == 2) rc = cache_read_stories(&s->cache, &own, v->probe_flags & PROBE_NAMES, &e);
    if (rc)
        reply_failure(r, 400, &e);
    else if (request_texts(&ss, v, params, r) == 0 && stories == 2)
        view_build(v, &ss, &own, params, r);
    else if (r->status == 0 && v->keep && !ss.ps.ablation_desc[0])
        view_build_kept(v, &ss, params, body, r);
    else if (r->status == 0)
        view_build(v, &ss, &ss.ps, params, r);
    slm_stories_free(&own.stories);
    slm_names_free(&own.names);
    session_release(s, &ss); /* last: it may free the entry */
    return r->status;
}

/* /api/NAME for the view v: GET with a query string (query), POST with a JSON body. */
static int api_view(Server *s, const View *v, int get, const cJSON *body, Reply *r) {
    if (v->serve == VIEW_SERVE_CLI) {
        char msg[160];
        snprintf(msg, sizeof msg, "%s writes files, so it is not served", v->name);
        return reply_error(r, 405, msg, "run storylm on the command line for it");
    }
    if (get && v->serve == VIEW_SERVE_POST)
        return reply_error(r, 405, "this view takes POST with a JSON body (it computes over every test story)", NULL);
    ParamTable t = slm_view_table(v);
    ParamList l;
    slm_params_list(&t, &l);
    int required = 0;
    for (int i = 0; i < l.n; i++) /* a field the request must give (STORIES: the server's own) */
        required |= (l.at[i].p->flags & (PARAM_REQUIRED | PARAM_CLI_ONLY | PARAM_STORIES)) == PARAM_REQUIRED;
    if (get && required && !body->child)
        return reply_error(r, 405, "this endpoint takes POST with a JSON body, or GET with its fields in the query",
                           "GET /api/views lists each view's fields");
    cJSON *query = get ? query_body(&t, body, r) : NULL;
    if (get && !query) return r->status;
    void *params = malloc(v->params_size);
    int stories;
    char scratch[SERVER_HEADS_TEXT]; /* "heads": [3, "2:5"] as text */
    if (!params)
        reply_error(r, 500, "out of memory", NULL);
    else if (request_params(s, v, get ? query : body, params, &stories, scratch, sizeof scratch, r) == 0)
        view_answer(s, v, get ? query : body, params, stories, r);
    free(params);
    cJSON_Delete(query);
    return r->status;
}

static cJSON *routes_describe(void);

/* GET /api/views: every view with its parameters (type, range, default, help),
 * the defaults of a /api/generate request ("generate"), and the fields of
 * the routes that are not views ("routes"). */
static int api_views(Server *s, const cJSON *body, Reply *r) {
    (void)s, (void)body;
    cJSON *j = cJSON_CreateObject(), *list = cJSON_AddArrayToObject(j, "views");
    for (int i = 0; i < slm_view_count(); i++) cJSON_AddItemToArray(list, slm_view_describe(slm_view_at(i)));
    cJSON_AddItemToObject(j, "generate", slm_view_generate_defaults_json());
    cJSON_AddItemToObject(j, "routes", routes_describe());
    return reply_json(r, 200, j);
}

/* ---- the fields of the routes that are not views: a table each (params.h) ---- */

/* A route of no fields (GET ones: their query must be empty). */
static const ParamTable no_fields = {"none", NULL, 0};

/* /api/stories (POST): the model whose stories. */
static const Param model_field[] = {PARAM_GROUP_AT(0, params_model)};
static const ParamTable model_fields = {"stories", model_field, PARAMS_COUNT(model_field)};

/* /api/tokenize: the model and the text. */
typedef struct TokenizeFields {
    ProbeOptions po;
    const char *text;
} TokenizeFields;
static const Param tokenize_field[] = {
    PARAM_GROUP_OF(TokenizeFields, po, params_model),
    {.name = "text",
     .type = PARAM_STRING,
     .offset = offsetof(TokenizeFields, text),
     .help = "the text to cut into tokens",
     .flags = PARAM_REQUIRED | PARAM_TEXT},
};
static const ParamTable tokenize_fields = {"tokenize", tokenize_field, PARAMS_COUNT(tokenize_field)};

/* /api/train (POST): train's own --lr, --seed and --from (a shipped model by
 * its short name); steps and evaluations within the page's bounds (a run of
 * the server's, in minutes), the steps fitted to the corpus when not given. */
static const Param train_field[] = {
    {.name = "stories",
     .type = PARAM_STRING,
     .offset = offsetof(TrainParams, stories),
     .meta = "FILE",
     .help = "the stories file: the server's --stories (the default), one under a --data-dir folder, or an upload"},
    {.name = "steps",
     .type = PARAM_INT,
     .offset = offsetof(TrainParams, o.steps),
     .meta = "N",
     .help = "optimizer steps (default: fitted to the corpus, as storylm train fits them)",
     .min = 1,
     .max = 20000,
     .def = 300},
    TRAIN_PARAM_SEED,
    TRAIN_PARAM_FROM,
    {.name = "eval-every",
     .type = PARAM_INT,
     .offset = offsetof(TrainParams, o.eval_every),
     .meta = "N",
     .help = "steps between test evaluations and saves; 0: about 20 in the run (at most 200)",
     .min = 0,
     .max = 20000},
    TRAIN_PARAM_LR,
};
static const ParamTable train_fields = {"train", train_field, PARAMS_COUNT(train_field)};

/* /api/batch and each of its requests: known here, read by api_batch itself. */
typedef struct BatchFields {
    const char *requests, *url, *body;
} BatchFields;
static const Param batch_field[] = {{.name = "requests",
                                     .type = PARAM_STRING,
                                     .offset = offsetof(BatchFields, requests),
                                     .help = "the requests: [{\"url\", \"body\"}]",
                                     .flags = PARAM_SERVED}};
static const ParamTable batch_fields = {"batch", batch_field, PARAMS_COUNT(batch_field)};
static const Param batch_item_field[] = {
    {.name = "url",
     .type = PARAM_STRING,
     .offset = offsetof(BatchFields, url),
     .help = "the view's /api/NAME",
     .flags = PARAM_SERVED},
    {.name = "body",
     .type = PARAM_STRING,
     .offset = offsetof(BatchFields, body),
     .help = "its fields",
     .flags = PARAM_SERVED},
};
static const ParamTable batch_item_fields = {"batch request", batch_item_field, PARAMS_COUNT(batch_item_field)};

static int api_tokenize(Server *s, const cJSON *body, Reply *r) {
    Session ss;
    TokenizeFields f = {0};
    if (request_read(&tokenize_fields, body, &f, NULL, NULL, 0, r) || session_open(s, body, 0, &ss, r))
        return r->status;
    const char *text = f.text;
    if (request_tokens(&ss, "text", text, r) == 0) {
        IntVec ids = {0};
        Error e = {0};
        if (slm_tokenizer_encode(&ss.ps.lm.tokenizer, text, strlen(text), &ids, &e))
            reply_failure(r, 400, &e);
        else
            reply_json(r, 200, slm_view_tokens_json(&ss.ps.lm.tokenizer, ids.data, ids.len));
        slm_intvec_free(&ids);
    }
    session_release(s, &ss);
    return r->status;
}

/* The test stories of a model's teaching stories (teach.c), as text. */
static char *stories_json(Server *s, const char *model, Error *e) {
    ModelEntry *m;
    if (cache_acquire(&s->cache, model, &m, e)) return NULL;
    char *text = NULL, *out = NULL;
    size_t len;
    StorySpan *spans = NULL;
    int n = 0;
    int rc = entry_stories(&s->cache, m, s->o.stories, e) || slm_file_read_all(m->teach, 0, &text, &len, e) ||
             slm_stories_split(text, len, m->teach, &spans, &n, NULL, e);
    if (!rc && n != m->ps.stories.n_stories)
        rc = FAIL(e, "give --stories a file of well-formed stories",
                  "cannot line up the stories of '%s' with their text", m->teach);
    if (!rc) {
        cJSON *j = cJSON_CreateObject();
        cJSON_AddStringToObject(j, "file", m->teach);
        cJSON *list = cJSON_AddArrayToObject(j, "stories");
        for (int k = 0; k < m->ps.stories.n_test; k++) {
            int i = m->ps.stories.test[k];
            char *t = strndup(text + spans[i].offset, spans[i].len);
            cJSON *o = cJSON_CreateObject();
            cJSON_AddNumberToObject(o, "index", i);
            cJSON_AddStringToObject(o, "text", t ? t : "");
            cJSON_AddItemToArray(list, o);
            free(t);
        }
        out = cJSON_PrintUnformatted(j);
        cJSON_Delete(j);
    }
    free(spans);
    free(text);
    cache_release(&s->cache, m);
    return out;
}

static int api_stories(Server *s, Reply *r) {
    Error e = {0};
    pthread_mutex_lock(&s->lock);
    if (!s->stories_json) s->stories_json = stories_json(s, s->dirs.default_model, &e);
    char *body = s->stories_json ? strdup(s->stories_json) : NULL;
    pthread_mutex_unlock(&s->lock);
    if (!body) return reply_failure(r, 500, &e);
    r->status = 200;
    r->body = body;
    r->mime = "application/json";
    return 200;
}

/* The model "from" names, into path: a shipped model by its short name
 * (tinystories, transformer, ...), never a path of the server's machine. */
static int train_base(const char *given, char *path, size_t size, Reply *r) {
    Error e = {0};
    const char *found = NULL;
    if (!given[0] || given[strspn(given, "abcdefghijklmnopqrstuvwxyz0123456789-")] != '\0')
        return reply_error(r, 400, "\"from\" is a shipped model's short name",
                           "give tinystories, transformer, window8, ... (as storylm train --from takes them)");
    if (slm_data_model_path(given, path, size, &found, &e)) return reply_failure(r, 400, &e);
    if (found != path) snprintf(path, size, "%s", found);
    return 0;
}

static int api_train_start(Server *s, const cJSON *body, Reply *r) {
    char real[PATH_MAX], base[PATH_MAX];
    TrainParams f = {0};
    ParamsGiven given = {0};
    slm_params_init(&train_fields, &f);
    if (request_read(&train_fields, body, &f, &given, NULL, 0, r) ||
        server_allowed_stories(s, f.stories ? f.stories : s->o.stories, real, sizeof real, r) ||
        (f.from && train_base(f.from, base, sizeof base, r)))
        return r->status;
    ParamList l;
    slm_params_list(&train_fields, &l);
    int steps = slm_params_given(&given, &l, "steps") ? f.o.steps : 0, eval_every = f.o.eval_every, seed = f.seed;
    double lr = f.o.lr;
    int id;
    Error e = {0};
    int rc = train_job_start(s->train, real, f.from ? base : NULL, steps, (uint64_t)seed, eval_every, lr, &id, &e);
    if (rc < 0) return reply_failure(r, 500, &e);
    if (rc == 2) return reply_failure(r, 409, &e);
    if (rc > 0) return reply_error(r, 409, "a training run is going on", "wait for it, or POST /api/train/stop");
    cJSON *j = cJSON_CreateObject();
    cJSON_AddNumberToObject(j, "id", id);
    return reply_json(r, 202, j);
}

/* The same for the model a request names (the page's picker follows the model). */
static int api_stories_of(Server *s, const cJSON *body, Reply *r) {
    char path[PATH_MAX];
    Error e = {0};
    if (request_model(s, body, path, sizeof path, r)) return r->status;
    char *text = stories_json(s, path, &e);
    if (!text) return reply_failure(r, 400, &e);
    r->status = 200;
    r->body = text;
    r->mime = "application/json";
    return 200;
}

static int api_batch(Server *s, const cJSON *body, Reply *r);
static int api_models(Server *s, const cJSON *body, Reply *r) {
    return (void)body, reply_json(r, 200, model_list(&s->dirs));
}
static int api_stories_get(Server *s, const cJSON *body, Reply *r) { return (void)body, api_stories(s, r); }
static int api_train_status(Server *s, const cJSON *body, Reply *r) {
    return (void)body, reply_json(r, 200, train_job_status(s->train));
}
static int api_train_stop(Server *s, const cJSON *body, Reply *r) {
    (void)body;
    cJSON *j = cJSON_CreateObject();
    cJSON_AddBoolToObject(j, "stopping", train_job_stop(s->train));
    return reply_json(r, 200, j);
}

static int api_health(Server *s, const cJSON *body, Reply *r) {
    (void)body;
    cJSON *j = cJSON_CreateObject();
    cJSON_AddBoolToObject(j, "ok", 1);
    pthread_mutex_lock(&s->lock);
    cJSON_AddNumberToObject(j, "streams", s->streams);
    cJSON_AddNumberToObject(j, "streams_done", s->streams_done);
    cJSON_AddNumberToObject(j, "streams_stopped", s->streams_stopped);
    pthread_mutex_unlock(&s->lock);
    if (s->health) s->health(s, j); /* the front end's connections */
    return reply_json(r, 200, j);
}

enum { ROUTE_GET = 1, ROUTE_POST = 2, ROUTE_BATCH = 4 }; /* ROUTE_BATCH: a batch may hold it (a view) */

/* The endpoints that are not a view's /api/NAME, and the names a view is
 * served under besides its own (view: the registry's name; fn NULL). */
typedef struct Route {
    const char *url;
    int how; /* ROUTE_* */
    int (*fn)(Server *, const cJSON *, Reply *);
    const char *view;         /* fn NULL: this view, */
    const char *needs;        /* with this field required (NULL: none) */
    const ParamTable *fields; /* fn's: the request's fields (a view's are its table) */
    size_t size;              /* of the struct they fill */
} Route;
static const Route routes[] = {
    {"/api/models", ROUTE_GET, api_models, NULL, NULL, &no_fields, 0},
    {"/api/stories", ROUTE_GET, api_stories_get, NULL, NULL, &no_fields, 0},
    {"/api/stories", ROUTE_POST, api_stories_of, NULL, NULL, &model_fields, sizeof(ProbeOptions)},
    {"/api/health", ROUTE_GET, api_health, NULL, NULL, &no_fields, 0},
    {"/api/views", ROUTE_GET, api_views, NULL, NULL, &no_fields, 0},
    {"/api/train", ROUTE_GET, api_train_status, NULL, NULL, &no_fields, 0},
    {"/api/train", ROUTE_POST, api_train_start, NULL, NULL, &train_fields, sizeof(TrainParams)},
    {"/api/train/stop", ROUTE_POST, api_train_stop, NULL, NULL, &no_fields, 0},
    {"/api/generate", ROUTE_POST, api_generate, NULL, NULL, &params_generate, sizeof(GenerateParams)},
    {"/api/batch", ROUTE_POST, api_batch, NULL, NULL, &batch_fields, sizeof(BatchFields)},
    {"/api/tokenize", ROUTE_POST | ROUTE_BATCH, api_tokenize, NULL, NULL, &tokenize_fields, sizeof(TokenizeFields)},
    {"/api/loss", ROUTE_POST | ROUTE_BATCH, NULL, "eval", "text", NULL, 0}, /* eval --text, the page's name */
    {"/api/sae/features", ROUTE_POST, api_sae_features, NULL, NULL, &sae_features_fields, sizeof(SaeFeatureFields)},
};
#define N_ROUTES (sizeof routes / sizeof routes[0])

/* [{"url", "method", "params": [...]}]: each route of a table of its own, with a request's fields. */
static cJSON *routes_describe(void) {
    cJSON *list = cJSON_CreateArray();
    for (size_t i = 0; list && i < N_ROUTES; i++) {
        if (!routes[i].fn) continue;
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "url", routes[i].url);
        cJSON_AddStringToObject(o, "method", routes[i].how & ROUTE_GET ? "GET" : "POST");
        cJSON_AddItemToObject(o, "params", slm_params_describe(routes[i].fields, NULL, PARAM_FROM_REQUEST));
        cJSON_AddItemToArray(list, o);
    }
    return list;
}

/* What url names: a route of the table (*route: one that takes the method
 * when there are several), and the view it serves (*view: a route's, or
 * the registry's at /api/NAME); 0, or -1 for neither. */
static int find_endpoint(const char *url, int get, const Route **route, const View **view) {
    *route = NULL;
    *view = NULL;
    for (size_t i = 0; i < N_ROUTES; i++) {
        if (strcmp(url, routes[i].url) != 0) continue;
        if (!*route || (routes[i].how & (get ? ROUTE_GET : ROUTE_POST))) *route = &routes[i];
    }
    if (*route && (*route)->view) *view = slm_view_find((*route)->view);
    if (!*route && strncmp(url, "/api/", 5) == 0) *view = slm_view_find(url + 5);
    return *route || *view ? 0 : -1;
}

/* A route to a view (fn NULL) answered by the view, its needed field first. */
static int route_view(Server *s, const Route *route, const View *view, int get, const cJSON *body, Reply *r) {
    if (route && route->needs && !cJSON_GetObjectItemCaseSensitive(body, route->needs)) {
        char msg[80];
        snprintf(msg, sizeof msg, "missing \"%s\"", route->needs);
        return reply_error(r, 400, msg, "send it as a JSON string");
    }
    return api_view(s, view, get, body, r);
}

/* A route's fields (not a view's) read with its table into a struct of its
 * own: a field it does not take, a value of the wrong type or out of range
 * refused before its handler runs (which reads what it needs with the same table). */
static int route_fields(const Route *route, const cJSON *body, Reply *r) {
    void *params = calloc(1, route->size ? route->size : 1); /* size 0: a table of no fields */
    char scratch[SERVER_HEADS_TEXT];
    if (!params) return reply_error(r, 500, "out of memory", NULL), -1;
    slm_params_init(route->fields, params);
    int rc = request_read(route->fields, body, params, NULL, scratch, sizeof scratch, r);
    free(params);
    return rc;
}

/* A route's fields (fn) or a view's (view, a GET's query read as its types) checked: 0, or -1 with r. */
static int endpoint_fields(const Route *route, const View *view, int get, const cJSON *body, Reply *r) {
    if (route && route->fn) return route_fields(route, body, r);
    ParamTable t = slm_view_table(view);
    cJSON *query = get ? query_body(&t, body, r) : NULL;
    void *params = (!get || query) ? malloc(view->params_size) : NULL;
    char scratch[SERVER_HEADS_TEXT];
    Error e = {0};
    int rc = -1;
    if (params) {
        slm_view_params_init(view, params);
        rc = request_read(&t, get ? query : body, params, NULL, scratch, sizeof scratch, r);
        if (!rc && slm_view_params_check(view, params, PARAM_FROM_REQUEST, &e)) {
            reply_failure(r, 400, &e);
            rc = -1;
        }
    } else if (!get || query) {
        reply_error(r, 500, "out of memory", NULL);
    }
    free(params);
    cJSON_Delete(query);
    return rc;
}

/* Appends text (len bytes) to *buf (size *cap, *len used); -1 when out of memory. */
static int append(char **buf, size_t *used, size_t *cap, const char *text, size_t len) {
    if (*used + len + 1 > *cap) {
        size_t want = (*used + len + 1) * 2;
        char *grown = realloc(*buf, want);
        if (!grown) return -1;
        *buf = grown, *cap = want;
    }
    memcpy(*buf + *used, text, len);
    *used += len;
    (*buf)[*used] = '\0';
    return 0;
}

/* The view a batch's item names (a route that may be batched, or a view
 * served by GET and POST), or -1 with r filled. */
static int batch_item(const cJSON *item, const cJSON **body, const Route **route, const View **view, Reply *r) {
    const cJSON *url = cJSON_GetObjectItemCaseSensitive(item, "url");
    *body = cJSON_GetObjectItemCaseSensitive(item, "body");
    if (!cJSON_IsObject(item) || !cJSON_IsString(url) || (*body && !cJSON_IsObject(*body)))
        return reply_error(r, 400, "each of \"requests\" is {\"url\": \"/api/VIEW\", \"body\": {...}}", NULL), -1;
    BatchFields f = {0};
    if (request_read(&batch_item_fields, item, &f, NULL, NULL, 0, r)) return -1;
    if (find_endpoint(url->valuestring, 0, route, view) == 0 &&
        (*route ? ((*route)->how & ROUTE_BATCH) != 0 : (*view)->serve == VIEW_SERVE_GET_POST) && (*route || *view))
        return 0;
    char msg[160];
    snprintf(msg, sizeof msg, "a batch cannot hold '%.80s'", url->valuestring);
    return reply_error(r, 400, msg,
                       "a batch holds the views: tokenize, attend, trace, loss, heads, swap, and those GET /api/views "
                       "lists as served by GET,POST"),
           -1;
}

/* Several views in one request, each answered as it would be alone:
 * {"requests": [{"url": "/api/attend", "body": {...}}, ...]} gives
 * {"answers": [{"status": 200, "body": {...}}, ...]}, in order. A click on
 * the page asks for its attention and its trace at once: one round trip, and
 * one run of the text for both (runs.c). */
static int api_batch(Server *s, const cJSON *body, Reply *r) {
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(body, "requests"), *item, *sub;
    const Route *route;
    const View *view;
    int n = cJSON_GetArraySize(list);
    if (!cJSON_IsArray(list) || n < 1 || n > SERVER_MAX_BATCH) {
        char msg[80];
        snprintf(msg, sizeof msg, "\"requests\" must be a list of 1 to %d requests", SERVER_MAX_BATCH);
        return reply_error(r, 400, msg, NULL);
    }
    cJSON_ArrayForEach(item, list) if (batch_item(item, &sub, &route, &view, r) < 0) return r->status;
    char *out = NULL, head[48];
    size_t used = 0, cap = 0;
    int ok = append(&out, &used, &cap, "{\"answers\":[", 12) == 0;
    cJSON_ArrayForEach(item, list) {
        Reply one = {0};
        cJSON *none = NULL;
        batch_item(item, &sub, &route, &view, &one);
        if (!sub) sub = none = cJSON_CreateObject();
        if (!sub)
            reply_error(&one, 500, "out of memory", NULL);
        else if (route && route->fn) {
            if (route_fields(route, sub, &one) == 0) route->fn(s, sub, &one);
        } else
            route_view(s, route, view, 0, sub, &one);
        cJSON_Delete(none);
        int len = snprintf(head, sizeof head, "%s{\"status\":%d,\"body\":", item == list->child ? "" : ",", one.status);
        ok = ok && one.body && append(&out, &used, &cap, head, (size_t)len) == 0 &&
             append(&out, &used, &cap, one.body, strlen(one.body)) == 0 && append(&out, &used, &cap, "}", 1) == 0;
        free(one.body);
    }
    if (!(ok && append(&out, &used, &cap, "]}", 2) == 0)) {
        free(out);
        return reply_error(r, 500, "out of memory", NULL);
    }
    r->status = 200;
    r->body = out;
    r->mime = "application/json";
    return 200;
}

int api_handle(Server *s, const char *method, const char *url, const cJSON *body, Reply *r) {
    int get = strcmp(method, "GET") == 0;
    const Route *route;
    const View *view;
    if (find_endpoint(url, get, &route, &view))
        return reply_error(r, 404, "no such endpoint", "see docs/views.md, or GET /api/views for the views");
    if (route && !(route->how & (get ? ROUTE_GET : ROUTE_POST)))
        return reply_error(r, 405, get ? "this endpoint takes POST with a JSON body" : "this endpoint takes GET", NULL);
    if (route && route->fn && route_fields(route, body, r)) return r->status;
    return route && route->fn ? route->fn(s, body, r) : route_view(s, route, view, get, body, r);
}

int api_check_fields(const char *url, int get, const cJSON *body, int depth, Reply *r) {
    const Route *route;
    const View *view;
    if (find_endpoint(url, get, &route, &view)) return reply_error(r, 404, "no such endpoint", NULL), -1;
    if (route && !(route->how & (get ? ROUTE_GET : ROUTE_POST))) return reply_error(r, 405, "method", NULL), -1;
    if (endpoint_fields(route, view, get, body, r)) return -1;
    if (!route || route->fn != api_batch || depth > 0) return 0;
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(body, "requests"), *item, *sub;
    if (!cJSON_IsArray(list)) return 0; /* api_batch refuses it */
    cJSON_ArrayForEach(item, list) {
        const Route *ir;
        const View *iv;
        Reply one = {0};
        int rc = batch_item(item, &sub, &ir, &iv, &one);
        if (!rc && sub)
            rc = api_check_fields(cJSON_GetObjectItemCaseSensitive(item, "url")->valuestring, 0, sub, 1, &one);
        free(one.body);
        if (rc) return reply_error(r, one.status ? one.status : 400, "a request of the batch", NULL), -1;
    }
    return 0;
}
