/* The server without its socket: what every front end of the API has (the
 * folders a request may name, the model cache, the training job) and one
 * request answered from its method, URL and body to a status and a body.
 * server.c puts libmicrohttpd in front of it; wasm/web.c, the page's Web
 * Worker, calls server_answer directly. */
#define _XOPEN_SOURCE 700 /* realpath */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "server_internal.h"

/* The real paths of the folders /api/train may read from. */
static int data_dirs_init(Server *s, Error *e) {
    for (int i = 0; i < s->o.n_data_dirs; i++) {
        char *real = realpath(s->o.data_dirs[i], NULL);
        struct stat st;
        if (!real || stat(real, &st) != 0 || !S_ISDIR(st.st_mode)) {
            free(real);
            return FAIL(e, "give --data-dir an existing folder", "--data-dir '%s' is not a folder", s->o.data_dirs[i]);
        }
        snprintf(s->data_real[s->n_data++], PATH_MAX, "%s", real);
        free(real);
    }
    char *real = realpath(s->o.stories, NULL); /* the server's stories (the project's by default), always allowed */
    if (real) snprintf(s->default_stories_real, PATH_MAX, "%s", real);
    free(real);
    return 0;
}

int server_core_init(Server *s, const ServerOptions *o, Error *e) {
    s->o = *o;
    pthread_mutex_init(&s->lock, NULL);
    mkdir(o->train_dir, 0755); /* where trained models go; an error shows when training saves */
    if (data_dirs_init(s, e) || model_dirs_init(&s->dirs, o->train_dir, o->model, e) ||
        train_job_create(&s->train, o->train_dir, e))
        return -1;
    if (cache_init(&s->cache, o->cache_models)) return FAIL(e, NULL, "out of memory starting the server");
    return 0;
}

void server_core_free(Server *s) {
    if (s->train) train_job_free(s->train); /* stops a running job first, saving */
    if (s->cache.entries) cache_free(&s->cache);
    free(s->stories_json);
    pthread_mutex_destroy(&s->lock);
}

cJSON *request_fields(int get, const char *data, size_t len, const cJSON *query, int openai, Reply *r) {
    cJSON *body = NULL;
    if (!get && len > 0 && body_check_strings(data, len, r)) return NULL;
    if (!get && len > 0) {
        body = cJSON_ParseWithLength(data, len);
        if (!body || !cJSON_IsObject(body)) {
            cJSON_Delete(body);
            reply_error(r, 400, "the request body is not a JSON object",
                        openai ? "send a body like {\"model\": \"tinystories\", \"prompt\": \"Lily found a\"}"
                               : "send a body like {\"text\": \"Lily found a\"}");
            return NULL;
        }
        return body;
    }
    body = get && query ? cJSON_Duplicate(query, 1) : cJSON_CreateObject();
    if (!body) return reply_error(r, 500, "out of memory", NULL), NULL;
    if (get && query_check_strings(body, r)) {
        cJSON_Delete(body);
        return NULL;
    }
    return body;
}

/* A hex digit's value, or -1. */
static int hex(char c) {
    return c >= '0' && c <= '9'   ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                  : -1;
}

/* n bytes of a URL's argument decoded ('+' a space, %XX a byte) into a new string. */
static char *url_decode(const char *s, size_t n) {
    char *out = malloc(n + 1), *o = out;
    for (size_t i = 0; out && i < n; i++) {
        if (s[i] == '%' && i + 2 < n && hex(s[i + 1]) >= 0 && hex(s[i + 2]) >= 0) {
            *o++ = (char)(hex(s[i + 1]) * 16 + hex(s[i + 2]));
            i += 2;
        } else {
            *o++ = s[i] == '+' ? ' ' : s[i];
        }
    }
    if (out) *o = '\0';
    return out;
}

/* The arguments after url's '?' as a JSON object of strings (the first of a
 * name repeated kept, as libmicrohttpd gives them); NULL when out of memory. */
static cJSON *url_query(const char *url) {
    cJSON *q = cJSON_CreateObject();
    const char *p = strchr(url, '?');
    while (q && p && *p) {
        p++;
        size_t n = strcspn(p, "&"), k = strcspn(p, "=&");
        char *key = url_decode(p, k), *value = url_decode(p + k + (k < n), n - k - (k < n));
        if (key && value && key[0] && !cJSON_GetObjectItemCaseSensitive(q, key)) cJSON_AddStringToObject(q, key, value);
        free(key), free(value);
        p += n;
    }
    return q;
}

int server_open(Server **out, const ServerOptions *o, Error *e) {
    *out = calloc(1, sizeof **out);
    if (!*out) return FAIL(e, NULL, "out of memory starting the server");
    if (server_core_init(*out, o, e) == 0) return 0;
    server_close(*out);
    *out = NULL;
    return -1;
}

int server_answer(Server *s, const char *method, const char *url, const char *body, size_t len, char **out,
                  const char **mime) {
    Reply r = {0};
    int get = strcmp(method, "GET") == 0;
    char path[256];
    snprintf(path, sizeof path, "%.*s", (int)strcspn(url, "?"), url);
    cJSON *query = get ? url_query(url) : NULL, *fields = NULL;
    if (!get && strcmp(method, "POST") != 0)
        reply_error(&r, 405, "the API takes GET and POST", NULL);
    else if ((!get || query) && (fields = request_fields(get, body, body ? len : 0, query, 0, &r)))
        api_handle(s, get ? "GET" : "POST", path, fields, &r);
    cJSON_Delete(query);
    cJSON_Delete(fields);
    if (!r.body) reply_error(&r, 500, "out of memory", NULL);
    *out = r.body;
    *mime = r.mime ? r.mime : "application/json";
    return r.status;
}

void server_close(Server *s) {
    if (!s) return;
    server_core_free(s);
    free(s);
}
