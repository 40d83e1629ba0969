/* The JSON endpoints: each reads its fields, opens a session on a cached
 * model and answers with the report the matching CLI verb prints with
 * --json (src/views builds both). */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server_internal.h"
#include "storylm/fileio.h"
#include "storylm/parse.h"
#include "storylm/registry.h"

/* "text": present, at most 64 KiB, at most SERVER_MAX_TOKENS tokens. */
static int request_text(const Session *ss, const cJSON *body, const char *key, const char **text, Reply *r) {
    if (field_string(body, key, text, 1, SERVER_MAX_TEXT, r)) return -1;
    IntVec ids = {0};
    Error e = {0};
    int rc = slm_tokenizer_encode(&ss->ps.lm.tokenizer, *text, strlen(*text), &ids, &e);
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
    if (!(flags & PROBE_ATTENTION_ONLY) || ((flags & PROBE_TRANSFORMER) && m->cfg.arch == ARCH_TRANSFORMER)) return 0;
    return slm_probe_need_attention(m, what, e) || (!(flags & PROBE_LAYERS) && slm_probe_need_one_layer(m, what, e));
}

/* One parameter's field (key) of the body into t: its type, range and choices. */
static int request_param(const ViewParam *p, const char *key, const cJSON *body, void *t, Reply *r) {
    int any = p->min == p->max;
    switch (p->type) {
        case VIEW_INT:
            return field_int(body, key, t, any ? -1000000000 : (int)p->min, any ? 1000000000 : (int)p->max, r);
        case VIEW_DOUBLE: return field_double(body, key, t, any ? -DBL_MAX : p->min, any ? DBL_MAX : p->max, r);
        case VIEW_BOOL: {
            int b = *(bool *)t;
            if (field_bool(body, key, &b, r)) return -1;
            *(bool *)t = b;
            return 0;
        }
        case VIEW_STRING: {
            size_t max = p->flags & VP_TEXT ? SERVER_MAX_TEXT : PATH_MAX - 1;
            if (field_string(body, key, t, (p->flags & VP_REQUIRED) != 0, max, r)) return -1;
            if (slm_view_param_choice_ok(p, *(const char **)t)) return 0;
            char msg[200], choices[128];
            slm_view_param_choices(p, choices, sizeof choices);
            snprintf(msg, sizeof msg, "\"%s\" is %s", key, choices);
            return reply_error(r, 400, msg, NULL), -1;
        }
        case VIEW_STRINGS: { /* "a" or ["a", "b"] */
            const cJSON *v = cJSON_GetObjectItemCaseSensitive(body, key), *item;
            const cJSON *list = cJSON_IsArray(v) ? v : NULL;
            StringList *l = t;
            if (cJSON_IsString(v) && l->count < 64) l->items[l->count++] = v->valuestring;
            cJSON_ArrayForEach(item, list) {
                if (!cJSON_IsString(item) || l->count == 64)
                    return reply_error(r, 400, "a list of at most 64 strings", NULL), -1;
                l->items[l->count++] = item->valuestring;
            }
            return 0;
        }
    }
    return 0;
}

/* The view's parameters from a request (absent: the defaults); the STORIES
 * the session reads are the server's own (*stories set). */
/* The STORIES a view reads: the server's (1), or a request's "stories" file
 * under a --data-dir folder (2, checked: 403 otherwise). */
static int request_stories(Server *s, const cJSON *body, const char **out, Reply *r) {
    const char *given = NULL;
    char real[PATH_MAX];
    if (field_string(body, "stories", &given, 0, PATH_MAX - 1, r)) return -1;
    *out = given && strcmp(given, s->o.stories) != 0 ? given : s->o.stories;
    if (*out == s->o.stories) return 1;
    return server_allowed_stories(s, given, real, sizeof real, r) ? -1 : 2;
}

static int request_params(Server *s, const View *v, const cJSON *body, void *params, int *stories, Reply *r) {
    char key[64];
    slm_view_params_init(v, params);
    *stories = 0;
    for (int i = 0; i < v->n_params; i++) {
        const ViewParam *p = &v->params[i];
        void *t = slm_view_param_target(p, params);
        if ((p->flags & VP_STORIES) && (*stories = request_stories(s, body, t, r)) < 0) return -1;
        if (p->flags & (VP_CLI_ONLY | VP_SERVED | VP_STORIES)) continue;
        const char *k = slm_view_param_key(p, key, sizeof key);
        if (p->alias && cJSON_GetObjectItemCaseSensitive(body, p->alias)) k = p->alias;
        if (request_param(p, k, body, t, r)) return -1;
    }
    Error e = {0};
    if (slm_view_params_check(v, params, &e)) return reply_failure(r, 400, &e), -1;
    if (!slm_view_stories(v, params)) *stories = 0; /* the check took them for another use (eval --text) */
    return 0;
}

/* The parameter of v a request's field names (its key or alias), or NULL. */
static const ViewParam *param_of_key(const View *v, const char *name) {
    char key[64];
    for (int i = 0; i < v->n_params; i++) {
        const ViewParam *p = &v->params[i];
        if (p->flags & VP_CLI_ONLY) continue;
        if (strcmp(slm_view_param_key(p, key, sizeof key), name) == 0 || (p->alias && strcmp(p->alias, name) == 0))
            return p;
    }
    return NULL;
}

/* A GET's query (every value a string) as the JSON body a POST sends: each
 * field of a number or a bool read as one (400 otherwise). */
static cJSON *query_body(const View *v, const cJSON *query, Reply *r) {
    cJSON *body = cJSON_CreateObject(), *item;
    cJSON_ArrayForEach(item, query) {
        const ViewParam *p = param_of_key(v, item->string);
        const char *text = item->valuestring;
        double x;
        cJSON *value = NULL;
        if (p && (p->type == VIEW_INT || p->type == VIEW_DOUBLE)) {
            if (slm_parse_double(text, -INFINITY, INFINITY, &x) == PARSE_OK) value = cJSON_CreateNumber(x);
        } else if (p && p->type == VIEW_BOOL) {
            int yes = !text[0] || strcmp(text, "true") == 0 || strcmp(text, "1") == 0;
            if (yes || strcmp(text, "false") == 0 || strcmp(text, "0") == 0) value = cJSON_CreateBool(yes);
        } else {
            value = cJSON_CreateString(text);
        }
        if (!value) {
            char msg[160];
            snprintf(msg, sizeof msg, "\"%.60s\" must be a %s, not '%.40s'", item->string,
                     p->type == VIEW_BOOL ? "true or false" : "number", text);
            cJSON_Delete(body);
            return reply_error(r, 400, msg, NULL), NULL;
        }
        cJSON_AddItemToObject(body, item->string, value);
    }
    return body;
}

/* Any VP_TEXT parameter's text: at most SERVER_MAX_TOKENS tokens (read
 * again: field_string checked its bytes). */
static int request_texts(const Session *ss, const View *v, const cJSON *body, Reply *r) {
    char key[64];
    const char *text;
    for (int i = 0; i < v->n_params; i++)
        if ((v->params[i].flags & VP_TEXT) &&
            cJSON_GetObjectItemCaseSensitive(body, slm_view_param_key(&v->params[i], key, sizeof key)) &&
            request_text(ss, body, key, &text, r))
            return -1;
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
    ProbeSession own = ss.ps; /* with the request's stories (2), loaded for this request only */
    own.stories = (Stories){0};
    own.names = (NameList){0};
    own.stories_path = slm_view_stories(v, params);
    /* a view's own mean ablation (ablate's "mode"): the heads' means made once, as the CLI makes them */
    int mean = strcmp(slm_view_probe_options(params)->ablate_mode, "mean") == 0 && stories == 1;
    int rc = model_fits(&ss.ps.lm.model, v->probe_flags, v->name, &e);
    if (!rc && mean) rc = entry_mean(ss.entry, s->o.stories, &e);
    ss.ps.mean = mean ? ss.entry->mean : NULL;
    if (!rc && stories == 2) rc = cache_read_stories(&s->cache, &own, v->probe_flags & PROBE_NAMES, &e);
    if (rc)
        reply_failure(r, 400, &e);
    else if (request_texts(&ss, v, body, r) == 0 && stories == 2)
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
    int required = 0;
    for (int i = 0; i < v->n_params; i++) /* a field the request must give (STORIES: the server's own) */
        required |= (v->params[i].flags & (VP_REQUIRED | VP_CLI_ONLY | VP_STORIES)) == VP_REQUIRED;
    if (get && required && !body->child)
        return reply_error(r, 405, "this endpoint takes POST with a JSON body, or GET with its fields in the query",
                           "GET /api/views lists each view's fields");
    cJSON *query = get ? query_body(v, body, r) : NULL;
    if (get && !query) return r->status;
    void *params = malloc(v->params_size);
    int stories;
    if (!params)
        reply_error(r, 500, "out of memory", NULL);
    else if (request_params(s, v, get ? query : body, params, &stories, r) == 0)
        view_answer(s, v, get ? query : body, params, stories, r);
    free(params);
    cJSON_Delete(query);
    return r->status;
}

/* GET /api/views: every view with its parameters (type, range, default, help),
 * and the defaults of a /api/generate request ("generate"). */
static int api_views(Server *s, const cJSON *body, Reply *r) {
    (void)s, (void)body;
    cJSON *j = cJSON_CreateObject(), *list = cJSON_AddArrayToObject(j, "views");
    for (int i = 0; i < slm_view_count(); i++) cJSON_AddItemToArray(list, slm_view_describe(slm_view_at(i)));
    cJSON_AddItemToObject(j, "generate", slm_view_generate_defaults_json());
    return reply_json(r, 200, j);
}

static int api_tokenize(Server *s, const cJSON *body, Reply *r) {
    Session ss;
    const char *text;
    if (session_open(s, body, 0, &ss, r)) return r->status;
    if (request_text(&ss, body, "text", &text, r) == 0) {
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

static int api_train_start(Server *s, const cJSON *body, Reply *r) {
    const char *stories = s->o.stories;
    char real[PATH_MAX];
    int steps = 300, eval_every = 0, seed = 1;
    double lr = 0; /* 0: the trainer's default */
    if (field_string(body, "stories", &stories, 0, PATH_MAX - 1, r) || field_int(body, "steps", &steps, 1, 20000, r) ||
        field_int(body, "seed", &seed, 0, 2147483647, r) || field_int(body, "eval_every", &eval_every, 0, 20000, r) ||
        field_double(body, "lr", &lr, 0, 1, r) || server_allowed_stories(s, stories, real, sizeof real, r))
        return r->status;
    if (eval_every == 0) eval_every = steps >= 20 ? steps / 20 : 1; /* about 20 points on the curve */
    if (eval_every < (steps + 199) / 200)
        eval_every = (steps + 199) / 200; /* at most 200 saves: bounded time and memory */
    int id;
    Error e = {0};
    int rc = train_job_start(s->train, real, steps, (uint64_t)seed, eval_every, lr, &id, &e);
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
    if (request_model(s, body, "model", path, sizeof path, r)) return r->status;
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
    GuardStats g = guard_stats(s->guard);
    cJSON *c = cJSON_AddObjectToObject(j, "connections");
    cJSON_AddNumberToObject(c, "open", g.open);
    cJSON_AddNumberToObject(c, "accepted", (double)g.accepted);
    cJSON_AddNumberToObject(c, "dropped", (double)g.dropped); /* waiting, closed to let a newer one in */
    cJSON_AddNumberToObject(c, "refused", (double)g.refused);
    cJSON_AddNumberToObject(c, "timed_out", (double)g.timed_out);
    return reply_json(r, 200, j);
}

enum { ROUTE_GET = 1, ROUTE_POST = 2, ROUTE_BATCH = 4 }; /* ROUTE_BATCH: a batch may hold it (a view) */

/* The endpoints that are not a view's /api/NAME, and the names a view is
 * served under besides its own (view: the registry's name; fn NULL). */
typedef struct Route {
    const char *url;
    int how; /* ROUTE_* */
    int (*fn)(Server *, const cJSON *, Reply *);
    const char *view;  /* fn NULL: this view, */
    const char *needs; /* with this field required (NULL: none) */
} Route;
static const Route routes[] = {
    {"/api/models", ROUTE_GET, api_models, NULL, NULL},
    {"/api/stories", ROUTE_GET, api_stories_get, NULL, NULL},
    {"/api/stories", ROUTE_POST, api_stories_of, NULL, NULL},
    {"/api/health", ROUTE_GET, api_health, NULL, NULL},
    {"/api/views", ROUTE_GET, api_views, NULL, NULL},
    {"/api/train", ROUTE_GET, api_train_status, NULL, NULL},
    {"/api/train", ROUTE_POST, api_train_start, NULL, NULL},
    {"/api/train/stop", ROUTE_POST, api_train_stop, NULL, NULL},
    {"/api/generate", ROUTE_POST, api_generate, NULL, NULL},
    {"/api/batch", ROUTE_POST, api_batch, NULL, NULL},
    {"/api/tokenize", ROUTE_POST | ROUTE_BATCH, api_tokenize, NULL, NULL},
    {"/api/loss", ROUTE_POST | ROUTE_BATCH, NULL, "eval", "text"}, /* eval --text, the page's name */
};
#define N_ROUTES (sizeof routes / sizeof routes[0])

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
    const char *given;
    if (route && route->needs && field_string(body, route->needs, &given, 1, SERVER_MAX_TEXT, r)) return r->status;
    return api_view(s, view, get, body, r);
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
        else if (route && route->fn)
            route->fn(s, sub, &one);
        else
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
    return route && route->fn ? route->fn(s, body, r) : route_view(s, route, view, get, body, r);
}
