/* The page's API in a Web Worker (web/worker.js): the routes of `storylm
 * serve` answered by the server's own code (server.h's server_open and
 * server_answer) with no socket, a request's method, URL and JSON body in,
 * its status, type and body out. The worker first writes the site's models
 * and stories into emscripten's file system and makes their folder the
 * working directory, so the models are listed as the site serves them
 * ("models/tinystories.safetensors"). */
#include <emscripten.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server.h"

/* The server of the worker on model (the default) and stories (the test
 * stories and names when a model's record names none beside it), or NULL
 * with *error the message and hint (malloc'd, free it). */
EMSCRIPTEN_KEEPALIVE Server *slm_web_open(const char *model, const char *stories, char **error) {
    ServerOptions o = {.model = model,
                       .stories = stories,
                       .train_dir = "trained",
                       .threads = 1,
                       .compute_threads = 1,
                       .cache_models = 4}; /* every model of the site: a click on another keeps the first */
    Server *s = NULL;
    Error e = {0};
    *error = NULL;
    if (server_open(&s, &o, &e) == 0) return s;
    size_t n = strlen(e.message) + strlen(e.hint) + 8;
    if ((*error = malloc(n))) snprintf(*error, n, "%s%s%s", e.message, e.hint[0] ? " (" : "", e.hint[0] ? e.hint : "");
    if (*error && e.hint[0]) strcat(*error, ")");
    return NULL;
}

/* One request (server_answer): returns its body (malloc'd, free it), *status
 * and *mime (static) set. */
EMSCRIPTEN_KEEPALIVE char *slm_web_answer(Server *s, const char *method, const char *url, const char *body, int *status,
                                          const char **mime) {
    char *out = NULL;
    *status = server_answer(s, method, url, body, body ? strlen(body) : 0, &out, mime);
    return out;
}
