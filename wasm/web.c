/* The page's API in a Web Worker (web/worker.js): the routes of `storylm
 * serve` answered by the server's own code (server.h's server_open and
 * server_answer) with no socket, a request's method, URL and JSON body in,
 * its status, type and body out. The worker first writes the site's models
 * and stories into emscripten's file system and makes their folder the
 * working directory, so the models are listed as the site serves them
 * ("models/tinystories.safetensors"). */
#define _XOPEN_SOURCE 700 /* strdup */
#include <emscripten.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server.h"

/* The worker's server and the strings its options point to: the server
 * keeps those pointers (it reads the stories path at every request that
 * needs the stories), while the strings the worker passes (emscripten's
 * ccall) live on the stack only until slm_web_open returns. */
typedef struct WebServer {
    Server *server;
    char *model;
    char *stories;
} WebServer;

/* error (malloc'd, or NULL out of memory) as "message (hint)". */
static char *error_text(const Error *e) {
    size_t n = strlen(e->message) + strlen(e->hint) + 8;
    char *out = malloc(n);
    if (out) snprintf(out, n, "%s%s%s%s", e->message, e->hint[0] ? " (" : "", e->hint, e->hint[0] ? ")" : "");
    return out;
}

/* The server of the worker on model (the default) and stories (its stories
 * file, `storylm serve --stories`: names, and the test stories of a model
 * with no teaching stories beside it), for the worker's life, or NULL with
 * *error the message and hint (malloc'd, free it; NULL: out of memory).
 * stories need not be in place yet: the server reads it at the first request
 * that needs it (web/worker.js writes it after the first view, or on a
 * request that failed without it, and asks again). */
EMSCRIPTEN_KEEPALIVE WebServer *slm_web_open(const char *model, const char *stories, char **error) {
    WebServer *w = calloc(1, sizeof *w);
    *error = NULL;
    if (w && (w->model = strdup(model)) && (w->stories = strdup(stories))) {
        ServerOptions o = {.model = w->model,
                           .stories = w->stories,
                           .train_dir = "trained",
                           .threads = 1,
                           .compute_threads = 1,
                           .cache_models = 4}; /* every model of the site: a click on another keeps the first */
        Error e = {0};
        if (server_open(&w->server, &o, &e) == 0) return w;
        *error = error_text(&e);
    }
    if (w) free(w->model), free(w->stories);
    free(w);
    return NULL;
}

/* One request (server_answer): returns its body (malloc'd, free it), *status
 * and *mime (static) set. */
EMSCRIPTEN_KEEPALIVE char *slm_web_answer(WebServer *w, const char *method, const char *url, const char *body,
                                          int *status, const char **mime) {
    char *out = NULL;
    *status = server_answer(w->server, method, url, body, body ? strlen(body) : 0, &out, mime);
    return out;
}
