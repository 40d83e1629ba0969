/* storylm serve: the playground, a local web server on libmicrohttpd. It
 * serves the page compiled in from web/ and a JSON API, one endpoint per
 * view, whose answers are the reports the CLI verbs print with --json
 * (built by the same code in src/views). Training runs in a thread of its
 * own, one at a time.
 *
 * Files: server.c (the daemon, routing, limits, static files), api.c (the
 * JSON endpoints), request.c (reading a request's JSON fields), models.c
 * (which model files may be named; the cache of loaded models), runs.c (texts
 * run lately, kept for the next click), stream.c
 * (generation as Server-Sent Events), train_job.c (the training job); app.c
 * (what answers a request without a socket: server_open, server_answer) and
 * guard.c (libmicrohttpd's connections). */
#ifndef STORYLM_SERVER_H
#define STORYLM_SERVER_H

#include <stdbool.h>

#include "storylm/error.h"

#define SERVER_MAX_DATA_DIRS 16

typedef struct ServerOptions {
    const char *host;                            /* "127.0.0.1"; "0.0.0.0" must be asked for */
    int port;                                    /* 0: any free port */
    const char *model;                           /* the default model */
    const char *stories;                         /* test stories, names, mean ablation, heads */
    const char *data_dirs[SERVER_MAX_DATA_DIRS]; /* where /api/train may read stories */
    int n_data_dirs;
    const char *train_dir; /* where trained models are saved (created) */
    int threads;           /* libmicrohttpd's thread pool */
    int compute_threads;   /* OpenMP threads a request computes with */
    int cache_models;      /* loaded models kept (least recently used dropped) */
    bool metrics;          /* GET /metrics answers (Prometheus text); else 404 */
} ServerOptions;

typedef struct Server Server;

/* Starts listening; *out to server_stop. */
int server_start(Server **out, const ServerOptions *o, Error *e);
/* The port listened on (the one chosen when o->port was 0). */
int server_port(const Server *s);
/* Stops the training job (saving), the daemon, and frees everything. */
void server_stop(Server *s);

/* The same server without a socket (the page's Web Worker, wasm/web.c): the
 * routes, the model cache and the views of server_start, each request
 * answered in one piece (a generation's events gathered into one body).
 * o's host, port, threads and metrics are not read. *out to server_close. */
int server_open(Server **out, const ServerOptions *o, Error *e);
/* One request: method "GET" or "POST", url its path and query
 * ("/api/attend", "/api/models?x=1"), body a POST's JSON (len bytes; NULL
 * for none). Returns the status; *out the answer's body (malloc'd: free
 * it), *mime its type. */
int server_answer(Server *s, const char *method, const char *url, const char *body, size_t len, char **out,
                  const char **mime);
void server_close(Server *s);

#endif
