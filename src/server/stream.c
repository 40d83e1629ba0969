/* POST /api/generate: the network writes on, one Server-Sent Event a token
 * (sse.h: a token is made when the client can take it; without a socket, the
 * page's worker, every event made at once and answered in one piece). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server_internal.h"
#include "sse.h"
#include "storylm/clock.h"

#define STREAM_MAX_STOPS 16
#define STREAM_MAX_STOP_BYTES 256

typedef struct Stream {
    Sse sse; /* first: the writer's callbacks get the stream */
    Server *s;
    ModelEntry *entry; /* held while streaming: the generator reads its weights and mean */
    char *prompt;
    char *stops[STREAM_MAX_STOPS]; /* "stop": the strings the text ends before */
    int n_stops;
    int tokens_sent; /* token events made */
    ViewGenerator vg;
    uint64_t seed;
} Stream;

/* Token i's "logprob" and "top_logprobs" (as the CLI's --json) into j. */
static void add_logprobs(cJSON *j, const ViewGenerator *vg, int i) {
    static const char *const keys[] = {"logprob", "top_logprobs"};
    cJSON *t = slm_view_generator_token_json(vg, i);
    for (int k = 0; t && k < 2; k++) {
        cJSON *v = cJSON_DetachItemFromObjectCaseSensitive(t, keys[k]);
        if (v) cJSON_AddItemToObject(j, keys[k], v);
    }
    cJSON_Delete(t);
}

/* The next event: a token, the end, or an error. */
static void next_event(Sse *sse) {
    Stream *st = (Stream *)sse;
    Error e = {0};
    int rc = slm_view_generator_next(&st->vg, &e);
    if (rc == 0 && st->vg.tokens > st->tokens_sent) rc = 1; /* the token that wrote a stop string: its event first */
    st->tokens_sent += rc > 0;
    char *text = rc >= 0 ? slm_view_generator_text(&st->vg, &e) : NULL;
    cJSON *j = cJSON_CreateObject();
    if (rc > 0 && text) {
        int32_t id = st->vg.ids.data[st->vg.ids.len - 1];
        cJSON_AddNumberToObject(j, "id", id);
        cJSON_AddNumberToObject(j, "index", st->vg.tokens - 1);
        cJSON_AddStringToObject(j, "token", st->vg.lm->tokenizer.pieces[id]);
        add_logprobs(j, &st->vg, st->vg.tokens - 1);
        cJSON_AddStringToObject(j, "text", text);
        sse_set(sse, sse_event(NULL, j));
    } else if (rc == 0 && text) {
        cJSON_AddStringToObject(j, "text", text);
        cJSON_AddNumberToObject(j, "tokens", st->vg.tokens);
        cJSON_AddNumberToObject(j, "seed", (double)st->seed);
        cJSON_AddStringToObject(j, "stop_reason", st->vg.stop_reason);
        if (st->vg.stop) cJSON_AddStringToObject(j, "stop", st->vg.stop);
        sse_set(sse, sse_event("done", j));
        sse->ended = 1;
    } else {
        cJSON_AddStringToObject(j, "error", e.message[0] ? e.message : "out of memory");
        sse_set(sse, sse_event("error", j));
        sse->ended = 1;
    }
    free(text);
}

static void free_stream(Sse *sse) {
    Stream *st = (Stream *)sse;
    Server *s = st->s;
    pthread_mutex_lock(&s->lock);
    s->streams--;
    if (sse_finished(sse))
        s->streams_done++;
    else
        s->streams_stopped++; /* the client went away first */
    pthread_mutex_unlock(&s->lock);
    slm_view_generator_free(&st->vg);
    cache_release(&s->cache, st->entry);
    free(st->prompt);
    for (int i = 0; i < st->n_stops; i++) free(st->stops[i]);
    free(st);
}

/* The stop strings a request may send (at most 16 of at most 256 bytes), copied into st. */
static int copy_stops(const StringList *stops, Stream *st, Reply *r) {
    if (stops->count > STREAM_MAX_STOPS)
        return reply_error(r, 400, "\"stop\" must be a string or an array of at most 16 strings",
                           "send [\".\", \"The end\"]");
    for (int i = 0; i < stops->count; i++) {
        if (strlen(stops->items[i]) > STREAM_MAX_STOP_BYTES)
            return reply_error(r, 400, "each \"stop\" must be a string of 1 to 256 bytes", "send [\".\", \"The end\"]");
        if (!(st->stops[st->n_stops] = strdup(stops->items[i]))) return reply_error(r, 500, "out of memory", NULL);
        st->n_stops++;
    }
    return 0;
}

const NameList *entry_generate_names(ModelEntry *m) {
    pthread_mutex_lock(&m->lock);
    if (!m->gen_names_tried) {
        Error e = {0};
        char from[PATH_MAX];
        if (slm_view_generate_names(&m->gen_names, &m->ps.lm, NULL, from, sizeof from, &e))
            m->gen_names = (NameList){0};
        m->gen_names_tried = 1;
    }
    pthread_mutex_unlock(&m->lock);
    return m->gen_names.cap ? &m->gen_names : NULL;
}

/* A request's "steer": each DIR:LATENT:SCALE's DIR must name the SAE beside
 * the request's model (MODEL.sae for MODEL.safetensors), by its folder's
 * name or its path: a request reads no other files. The specs with the
 * folder's path into specs (n of them, each PATH_MAX + 64), ptrs to them. */
static int served_steers(const ModelEntry *m, const StringList *in, char (*specs)[PATH_MAX + 64], const char **ptrs,
                         Reply *r) {
    char sae[PATH_MAX];
    size_t n = strlen(m->path), ext = strlen(".safetensors");
    if (n > ext && strcmp(m->path + n - ext, ".safetensors") == 0) n -= ext;
    snprintf(sae, sizeof sae, "%.*s.sae", (int)n, m->path);
    const char *base = strrchr(sae, '/') ? strrchr(sae, '/') + 1 : sae;
    for (int i = 0; i < in->count; i++) {
        const char *spec = in->items[i], *colon = strchr(spec, ':');
        size_t d = colon ? (size_t)(colon - spec) : strlen(spec);
        int ok =
            colon && ((d == strlen(base) && !strncmp(spec, base, d)) || (d == strlen(sae) && !strncmp(spec, sae, d)));
        if (!ok || strlen(colon) > 63) {
            Error e = {0};
            FAIL(&e, "name the model's own SAE folder, e.g. \"tinystories.sae:12:8\"",
                 ": a request steers only with the SAE beside its model (%s)", base);
            slm_error_set_param(&e, ERROR_PARAM_VALUE, "steer", "steer", spec, 1, 0);
            return reply_failure(r, 400, &e);
        }
        snprintf(specs[i], sizeof specs[i], "%s%s", sae, colon);
        ptrs[i] = specs[i];
    }
    return 0;
}

/* Frees st before it streams (a refused request). */
static void drop_stream(Stream *st) {
    for (int i = 0; i < st->n_stops; i++) free(st->stops[i]);
    free(st->prompt);
    free(st);
}

int api_generate(Server *s, const cJSON *body, Reply *r) {
    GenerateParams p = {0}; /* generate's table: the CLI's fields, names and ranges (max_tokens: a request's bound) */
    slm_params_init(&params_generate, &p);
    if (request_read(&params_generate, body, &p, NULL, NULL, 0, r)) return r->status;
    ViewGenerateOptions go = p.go;
    go.threads = 1;
    const char *prompt = p.prompt ? p.prompt : "";
    int seed = p.seed;
    Error e = {0};
    Stream *st = calloc(1, sizeof *st);
    if (!st) return reply_error(r, 500, "out of memory", NULL);
    if (copy_stops(&p.stops, st, r)) {
        drop_stream(st);
        return r->status;
    }
    Ablation ab;
    if (session_model_ablation(s, body, &st->entry, &ab, r)) {
        drop_stream(st);
        return r->status;
    }
    if (seed < 0) seed = slm_clock_seed();
    st->s = s;
    st->seed = (uint64_t)seed;
    st->prompt = strdup(prompt);
    go.seed = st->seed;
    go.names = entry_generate_names(st->entry);
    go.stops = (const char *const *)st->stops;
    go.n_stops = st->n_stops;
    go.logprobs = 1;
    char specs[STEER_MAX][PATH_MAX + 64];
    const char *steers[STEER_MAX];
    if (p.steers.count > STEER_MAX || served_steers(st->entry, &p.steers, specs, steers, r)) {
        cache_release(&s->cache, st->entry);
        drop_stream(st);
        return p.steers.count > STEER_MAX ? reply_error(r, 400, "too many steers", "give at most 8") : r->status;
    }
    go.steers = steers, go.n_steers = p.steers.count;
    if (!st->prompt || slm_view_generator_init(&st->vg, &st->entry->ps.lm, &ab, st->prompt, &go, &e)) {
        cache_release(&s->cache, st->entry);
        drop_stream(st);
        return reply_failure(r, 400, &e);
    }
    pthread_mutex_lock(&s->lock);
    s->streams++;
    pthread_mutex_unlock(&s->lock);
    st->sse.next = next_event, st->sse.free = free_stream;
    if (s->stream) return s->stream(&st->sse, r);
    char *events = sse_gather(&st->sse); /* no stream without a socket: the events in one piece */
    if (!events) return reply_error(r, 500, "out of memory", NULL);
    r->status = 200;
    r->body = events;
    r->mime = "text/event-stream; charset=utf-8";
    return 200;
}
