/* The JSON endpoints: each reads its fields, opens a session on a cached
 * model and answers with the report the matching CLI verb prints with
 * --json (src/views builds both). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server_internal.h"
#include "storylm/fileio.h"

/* A request's view of a cached model: the entry's session with the
 * request's own ablation (and stories, for views that read them). */
typedef struct Session {
    ModelEntry *entry;
    ProbeSession ps;
    KeptRun *run; /* the text's run the request reads, or NULL */
} Session;

/* NEED_ONE_LAYER: a view of one layer's heads; NEED_HEADS: any model's heads, a transformer's too */
enum { NEED_STORIES = 1, NEED_ATTENTION = 2, NEED_ONE_LAYER = 4, NEED_HEADS = 8 };

static void session_release(Server *s, Session *ss) {
    if (ss->run) entry_run_release(ss->entry, ss->run);
    if (ss->entry) cache_release(&s->cache, ss->entry);
    ss->entry = NULL;
    ss->run = NULL;
}

/* The text run whole through the session's model (kept for the next click
 * on it: the attention, trace and loss views of any position read the same
 * run), read at pos; held until session_release. */
static int session_run(Session *ss, const char *text, int pos, ViewText *vt, Error *e) {
    return entry_run(ss->entry, &ss->ps, text, pos, vt, &ss->run, e);
}

/* The model a request names ("model", else the server's default): one of
 * /api/models, or 404. */
static int request_model(Server *s, const cJSON *body, const char *key, char *path, size_t size, Reply *r) {
    const char *given = s->dirs.default_model;
    if (field_string(body, key, &given, 0, PATH_MAX - 1, r)) return -1;
    if (model_resolve(&s->dirs, given, path, size) == 0) return 0;
    char msg[PATH_MAX + 64];
    snprintf(msg, sizeof msg, "unknown model '%s'", given);
    reply_error(r, 404, msg, "name one of the models GET /api/models lists");
    return -1;
}

static int session_open(Server *s, const cJSON *body, int need, Session *ss, Reply *r) {
    *ss = (Session){0};
    char path[PATH_MAX], ablate_buf[256];
    const char *ablate, *mode;
    Error e = {0};
    if (request_model(s, body, "model", path, sizeof path, r) ||
        field_ablation(body, ablate_buf, sizeof ablate_buf, &ablate, &mode, r))
        return -1;
    if (cache_acquire(&s->cache, path, &ss->entry, &e)) return reply_failure(r, 400, &e), -1;
    ModelEntry *m = ss->entry;
    int mean = ablate && strcmp(mode, "mean") == 0;
    int rc = (need & NEED_ATTENTION) ? slm_probe_need_attention(&m->ps.lm.model, "this view", &e) : 0;
    if (!rc && (need & NEED_HEADS)) rc = slm_probe_need_heads(&m->ps.lm.model, "this view", &e);
    if (!rc && (need & NEED_ONE_LAYER)) rc = slm_probe_need_one_layer(&m->ps.lm.model, "this view", &e);
    if (!rc)
        rc = slm_session_ablation(&m->ps.lm, ablate, mode, NULL, NULL, &ss->ps.ablation, ss->ps.ablation_desc,
                                  sizeof ss->ps.ablation_desc, &e); /* the heads checked before anything is averaged */
    if (!rc && ((need & NEED_STORIES) || mean)) rc = entry_stories(&s->cache, m, s->o.stories, &e);
    if (!rc && mean) rc = entry_mean(m, s->o.stories, &e);
    pthread_mutex_lock(&m->lock); /* not while another request loads the stories into it */
    ss->ps = m->ps;               /* shared model, tokenizer, stories and names; never closed here */
    pthread_mutex_unlock(&m->lock);
    ss->ps.stories_path = need & NEED_STORIES ? s->o.stories : NULL;
    ss->ps.mean = NULL;
    if (!rc)
        rc = slm_session_ablation(&m->ps.lm, ablate, mode, m->mean, s->o.stories, &ss->ps.ablation,
                                  ss->ps.ablation_desc, sizeof ss->ps.ablation_desc, &e);
    if (!rc && mean) slm_session_add_warning(ss->ps.ablation_desc, sizeof ss->ps.ablation_desc, m->mean_warning);
    if (rc) {
        reply_failure(r, 400, &e);
        session_release(s, ss);
        return -1;
    }
    return 0;
}

int api_model_ablation(Server *s, const cJSON *body, ModelEntry **entry, Ablation *ab, Reply *r) {
    Session ss;
    if (session_open(s, body, 0, &ss, r)) return -1;
    *entry = ss.entry; /* handed over, still held */
    *ab = ss.ps.ablation;
    return 0;
}

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

/* The end of every report view: the report, or the error as 400. */
static int finish(Server *s, Session *ss, Report *rep, int rc, const Error *e, Reply *r) {
    if (rc)
        reply_failure(r, 400, e);
    else
        reply_report(r, rep);
    slm_report_free(rep);
    session_release(s, ss);
    return r->status;
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

static int api_attend(Server *s, const cJSON *body, Reply *r) {
    Session ss;
    const char *text;
    int pos = -1, head = -1, wide = 0, layer = 1;
    if (session_open(s, body, NEED_HEADS, &ss, r)) return r->status;
    if (request_text(&ss, body, "text", &text, r) || field_int(body, "pos", &pos, -1000000, 1000000, r) ||
        field_int(body, "layer", &layer, 1, STORYLM_MAX_TF_LAYERS, r) ||
        field_int(body, "head", &head, -1000000, 1000000, r) || field_bool(body, "wide", &wide, r))
        return session_release(s, &ss), r->status;
    Report rep;
    slm_report_init(&rep, "attend");
    ViewText vt;
    Error e = {0};
    int rc = slm_view_check_head(&ss.ps, head, &e);
    if (!rc && wide && head >= 0)
        rc = FAIL(&e, "leave out \"head\": \"wide\" gives every head's weight side by side",
                  "\"wide\" and \"head\": %d do not go together", head);
    if (!rc) rc = session_run(&ss, text, pos, &vt, &e);          /* the same numbers as attend's heads-only run */
    if (!rc) rc = slm_probe_runner_layer(&vt.runner, layer, &e); /* vt: the request's own copy */
    if (!rc && wide)
        slm_view_attend_wide(&rep, &ss.ps, &vt);
    else if (!rc)
        slm_view_attend(&rep, &ss.ps, &vt, head);
    return finish(s, &ss, &rep, rc, &e, r);
}

static int api_trace(Server *s, const cJSON *body, Reply *r) {
    Session ss;
    const char *text;
    int pos = -1, units = 10, top = 10, layer = 1;
    if (session_open(s, body, NEED_HEADS, &ss, r)) return r->status;
    if (request_text(&ss, body, "text", &text, r) || field_int(body, "pos", &pos, -1000000, 1000000, r) ||
        field_int(body, "layer", &layer, 1, STORYLM_MAX_TF_LAYERS, r) || field_int(body, "units", &units, 1, 4096, r) ||
        field_int(body, "top", &top, 1, 64, r))
        return session_release(s, &ss), r->status;
    Report rep;
    slm_report_init(&rep, "trace");
    ViewText vt;
    TraceResult t = {0};
    Error e = {0};
    int rc = session_run(&ss, text, pos, &vt, &e);
    if (!rc) rc = slm_probe_runner_layer(&vt.runner, layer, &e); /* vt: the request's own copy */
    if (!rc) rc = slm_view_trace(&rep, &ss.ps, &vt, text, units, top, &t, &e);
    slm_trace_result_free(&t);
    return finish(s, &ss, &rep, rc, &e, r);
}

static int api_loss(Server *s, const cJSON *body, Reply *r) {
    Session ss;
    const char *text;
    if (session_open(s, body, 0, &ss, r)) return r->status;
    if (request_text(&ss, body, "text", &text, r)) return session_release(s, &ss), r->status;
    Report rep;
    slm_report_init(&rep, "eval");
    ViewText vt;
    Error e = {0};
    int rc = session_run(&ss, text, -1, &vt, &e);
    if (!rc) slm_view_loss(&rep, &ss.ps, &vt, text);
    return finish(s, &ss, &rep, rc, &e, r);
}

/* "layer" L (1-based) of the session's model, as distances --layer reads it:
 * ss->ps.lm.model becomes that layer's view (the session's copy only; the
 * cached model is untouched). */
static int request_layer(Session *ss, int layer, Reply *r) {
    int layers = slm_model_layers(&ss->ps.lm.model.cfg);
    if (layer > layers) {
        char msg[96];
        snprintf(msg, sizeof msg, "\"layer\": %d, but this model has %d layer(s)", layer, layers);
        return reply_error(r, 400, msg, "give \"layer\" from 1 to the model's layers"), -1;
    }
    Model whole = ss->ps.lm.model;
    slm_model_layer_view(&whole, layer - 1, &ss->ps.lm.model);
    return 0;
}

static int api_distances(Server *s, const cJSON *body, Reply *r) {
    Session ss;
    int up_to = 255, layer = 1;
    if (session_open(s, body, NEED_ATTENTION, &ss, r)) return r->status;
    if (field_int(body, "up_to", &up_to, 0, 100000, r) || field_int(body, "layer", &layer, 1, STORYLM_MAX_LAYERS, r) ||
        request_layer(&ss, layer, r))
        return session_release(s, &ss), r->status;
    Report rep;
    slm_report_init(&rep, "distances");
    slm_view_distances(&rep, &ss.ps, up_to); /* ss.ps.lm.model: the layer's view (distances --layer) */
    return finish(s, &ss, &rep, 0, NULL, r);
}

/* heads on the server's stories, or on a file under a --data-dir (loaded for this request only). */
static int api_heads(Server *s, const cJSON *body, Reply *r) {
    Session ss;
    const char *stories = NULL;
    char real[PATH_MAX];
    int top = 5;
    if (field_string(body, "stories", &stories, 0, PATH_MAX - 1, r) || field_int(body, "top", &top, 1, 100, r))
        return r->status;
    if (stories && strcmp(stories, s->o.stories) != 0 && server_allowed_stories(s, stories, real, sizeof real, r))
        return r->status;
    int own = stories && strcmp(stories, s->o.stories) != 0;
    if (session_open(s, body, own ? NEED_HEADS : NEED_HEADS | NEED_STORIES, &ss, r)) return r->status;
    Error e = {0};
    ProbeSession other = {0};
    ProbeSession *ps = &ss.ps;
    int rc = 0;
    if (own) { /* a copy of the session with those stories of its own */
        other = ss.ps;
        other.stories = (Stories){0};
        other.names = (NameList){0};
        other.stories_path = stories;
        rc = cache_read_stories(&s->cache, &other, 0, &e);
        ps = &other;
    }
    int keep = !own && !ss.ps.ablation_desc[0]; /* the page's request: the same answer every time */
    ModelEntry *m = ss.entry;
    if (keep) pthread_mutex_lock(&m->lock); /* one computes, the others wait for it */
    if (keep && m->heads_json && m->heads_top == top) {
        r->body = strdup(m->heads_json);
        r->status = r->body ? 200 : 500;
        r->mime = "application/json";
        pthread_mutex_unlock(&m->lock);
        session_release(s, &ss);
        return r->status;
    }
    Report rep;
    slm_report_init(&rep, "heads");
    ViewHeads vh;
    HeadsResult h = {0};
    if (!rc) {
        slm_view_heads_begin(&rep, ps, &vh);
        rc = slm_view_heads_add(&vh, ps, 0, top, &h, &e);
    }
    slm_heads_result_free(&h);
    if (own) slm_stories_free(&other.stories);
    if (rc)
        reply_failure(r, 400, &e);
    else
        reply_report(r, &rep);
    slm_report_free(&rep);
    if (keep && r->status == 200 && r->body) {
        free(m->heads_json);
        m->heads_json = strdup(r->body);
        m->heads_top = top;
    }
    if (keep) pthread_mutex_unlock(&m->lock);
    session_release(s, &ss); /* last: it may free the entry */
    return r->status;
}

static int api_swap(Server *s, const cJSON *body, Reply *r) {
    Session ss, base = {0};
    const char *text, *name;
    char base_path[PATH_MAX];
    int has_base = cJSON_GetObjectItemCaseSensitive(body, "baseline") != NULL &&
                   !cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(body, "baseline"));
    if (field_string(body, "name", &name, 1, 63, r)) return r->status;
    if (has_base && request_model(s, body, "baseline", base_path, sizeof base_path, r)) return r->status;
    if (session_open(s, body, NEED_STORIES, &ss, r)) return r->status;
    if (request_text(&ss, body, "text", &text, r)) return session_release(s, &ss), r->status;
    Error e = {0};
    int rc = has_base ? cache_acquire(&s->cache, base_path, &base.entry, &e) : 0;
    if (!rc && has_base && strcmp(base.entry->ps.lm.vocab, ss.ps.lm.vocab) != 0)
        rc = FAIL(&e, "pick a baseline trained with the same vocabulary",
                  "'%s' and '%s' use different vocabularies, so their guesses cannot be compared", base_path,
                  ss.ps.model_path);
    Report rep;
    slm_report_init(&rep, "swap");
    if (!rc)
        rc = slm_view_swap_text(&rep, &ss.ps, has_base ? &base.entry->ps.lm : NULL, has_base ? base_path : NULL, text,
                                name, &e);
    session_release(s, &base);
    return finish(s, &ss, &rep, rc, &e, r);
}

/* Secret 3 (ablate --json): every single head switched off in turn on the
 * test stories, or "heads" together; "mode" zero or mean. */
static int api_ablate(Server *s, const cJSON *body, Reply *r) {
    Session ss;
    const char *heads = NULL, *mode = "zero";
    if (field_string(body, "heads", &heads, 0, 255, r) || field_string(body, "mode", &mode, 0, 8, r)) return r->status;
    if (strcmp(mode, "zero") != 0 && strcmp(mode, "mean") != 0)
        return reply_error(r, 400, "\"mode\" is zero or mean", NULL);
    if (session_open(s, body, NEED_HEADS | NEED_STORIES, &ss, r)) return r->status;
    Error e = {0};
    int rc = strcmp(mode, "mean") == 0 ? entry_mean(ss.entry, s->o.stories, &e) : 0;
    ss.ps.mean = strcmp(mode, "mean") == 0 ? ss.entry->mean : NULL; /* made once, as the CLI makes it */
    Report rep;
    slm_report_init(&rep, "ablate");
    if (!rc) rc = slm_view_ablate(&rep, &ss.ps, heads, mode, NULL, &e);
    return finish(s, &ss, &rep, rc, &e, r);
}

/* Secret 4 (pieces --json): the heroes renamed to "names" ("a,b"; default:
 * the most common one-piece name and invented ones). */
static int api_pieces(Server *s, const cJSON *body, Reply *r) {
    Session ss;
    const char *names = NULL;
    if (field_string(body, "names", &names, 0, 255, r)) return r->status;
    if (session_open(s, body, NEED_STORIES, &ss, r)) return r->status;
    SwapName list[32];
    PieceScore rows[32];
    Error e = {0};
    Report rep;
    slm_report_init(&rep, "pieces");
    int rc = slm_view_pieces(&rep, &ss.ps, names && names[0] ? names : NULL, list, rows, 32, &e) < 0 ? -1 : 0;
    return finish(s, &ss, &rep, rc, &e, r);
}

/* The held-out test stories of the server's stories file, as text. */
static char *stories_json(Server *s, Error *e) {
    ModelEntry *m;
    if (cache_acquire(&s->cache, s->dirs.default_model, &m, e)) return NULL;
    char *text = NULL, *out = NULL;
    size_t len;
    StorySpan *spans = NULL;
    int n = 0;
    int rc = entry_stories(&s->cache, m, s->o.stories, e) || slm_file_read_all(s->o.stories, 0, &text, &len, e) ||
             slm_stories_split(text, len, s->o.stories, &spans, &n, NULL, e);
    if (!rc && n != m->ps.stories.n_stories)
        rc = FAIL(e, "give --stories a file of well-formed stories",
                  "cannot line up the stories of '%s' with their text", s->o.stories);
    if (!rc) {
        cJSON *j = cJSON_CreateObject(), *list = cJSON_AddArrayToObject(j, "stories");
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
    if (!s->stories_json) s->stories_json = stories_json(s, &e);
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
    if (field_string(body, "stories", &stories, 0, PATH_MAX - 1, r) || field_int(body, "steps", &steps, 1, 20000, r) ||
        field_int(body, "seed", &seed, 0, 2147483647, r) || field_int(body, "eval_every", &eval_every, 0, 20000, r) ||
        server_allowed_stories(s, stories, real, sizeof real, r))
        return r->status;
    if (eval_every == 0) eval_every = steps >= 20 ? steps / 20 : 1; /* about 20 points on the curve */
    if (eval_every < (steps + 199) / 200)
        eval_every = (steps + 199) / 200; /* at most 200 saves: bounded time and memory */
    int id;
    Error e = {0};
    int rc = train_job_start(s->train, real, steps, (uint64_t)seed, eval_every, &id, &e);
    if (rc < 0) return reply_failure(r, 500, &e);
    if (rc > 0) return reply_error(r, 409, "a training run is going on", "wait for it, or POST /api/train/stop");
    cJSON *j = cJSON_CreateObject();
    cJSON_AddNumberToObject(j, "id", id);
    return reply_json(r, 202, j);
}

static int api_batch(Server *s, const cJSON *body, Reply *r);

/* The POST endpoints; views: those a batch may hold (a JSON answer, no stream, no side effect). */
static const struct {
    const char *url;
    int (*fn)(Server *, const cJSON *, Reply *);
    int view;
} posts[] = {{"/api/tokenize", api_tokenize, 1}, {"/api/attend", api_attend, 1},       {"/api/trace", api_trace, 1},
             {"/api/loss", api_loss, 1},         {"/api/distances", api_distances, 1}, {"/api/heads", api_heads, 1},
             {"/api/swap", api_swap, 1},         {"/api/ablate", api_ablate, 0},       {"/api/pieces", api_pieces, 0},
             {"/api/generate", api_generate, 0}, {"/api/train", api_train_start, 0},   {"/api/batch", api_batch, 0}};
#define N_POSTS (sizeof posts / sizeof posts[0])

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

/* The view a batch's item names (its index in posts), or -1 with r filled. */
static int batch_item(const cJSON *item, const cJSON **body, Reply *r) {
    const cJSON *url = cJSON_GetObjectItemCaseSensitive(item, "url");
    *body = cJSON_GetObjectItemCaseSensitive(item, "body");
    if (!cJSON_IsObject(item) || !cJSON_IsString(url) || (*body && !cJSON_IsObject(*body)))
        return reply_error(r, 400, "each of \"requests\" is {\"url\": \"/api/VIEW\", \"body\": {...}}", NULL), -1;
    for (size_t i = 0; i < N_POSTS; i++)
        if (posts[i].view && strcmp(url->valuestring, posts[i].url) == 0) return (int)i;
    char msg[160];
    snprintf(msg, sizeof msg, "a batch cannot hold '%.80s'", url->valuestring);
    return reply_error(r, 400, msg, "a batch holds the views: tokenize, attend, trace, loss, distances, heads, swap"),
           -1;
}

/* Several views in one request, each answered as it would be alone:
 * {"requests": [{"url": "/api/attend", "body": {...}}, ...]} gives
 * {"answers": [{"status": 200, "body": {...}}, ...]}, in order. A click on
 * the page asks for its attention and its trace at once: one round trip, and
 * one run of the text for both (runs.c). */
static int api_batch(Server *s, const cJSON *body, Reply *r) {
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(body, "requests"), *item, *sub;
    int n = cJSON_GetArraySize(list);
    if (!cJSON_IsArray(list) || n < 1 || n > SERVER_MAX_BATCH) {
        char msg[80];
        snprintf(msg, sizeof msg, "\"requests\" must be a list of 1 to %d requests", SERVER_MAX_BATCH);
        return reply_error(r, 400, msg, NULL);
    }
    cJSON_ArrayForEach(item, list) if (batch_item(item, &sub, r) < 0) return r->status;
    char *out = NULL, head[48];
    size_t used = 0, cap = 0;
    int ok = append(&out, &used, &cap, "{\"answers\":[", 12) == 0;
    cJSON_ArrayForEach(item, list) {
        Reply one = {0};
        cJSON *none = NULL;
        int i = batch_item(item, &sub, &one);
        if (!sub) sub = none = cJSON_CreateObject();
        if (sub)
            posts[i].fn(s, sub, &one);
        else
            reply_error(&one, 500, "out of memory", NULL);
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
    if (get && strcmp(url, "/api/models") == 0) return reply_json(r, 200, model_list(&s->dirs));
    if (get && strcmp(url, "/api/stories") == 0) return api_stories(s, r);
    if (get && strcmp(url, "/api/train") == 0) return reply_json(r, 200, train_job_status(s->train));
    if (get && strcmp(url, "/api/health") == 0) {
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
    if (!get && strcmp(url, "/api/train/stop") == 0) {
        cJSON *j = cJSON_CreateObject();
        cJSON_AddBoolToObject(j, "stopping", train_job_stop(s->train));
        return reply_json(r, 200, j);
    }
    for (size_t i = 0; i < N_POSTS; i++) {
        if (strcmp(url, posts[i].url) != 0) continue;
        if (get) return reply_error(r, 405, "this endpoint takes POST with a JSON body", NULL);
        return posts[i].fn(s, body, r);
    }
    return reply_error(r, 404, "no such endpoint", "see the README's section 'The playground' for the API");
}
