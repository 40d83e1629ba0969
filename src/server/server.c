/* The daemon: libmicrohttpd's thread pool, request bodies (bounded),
 * routing to the API or to the page compiled in from web/. */
#define _XOPEN_SOURCE 700 /* realpath */
#include <arpa/inet.h>
#include <malloc.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "server_internal.h"
#include "web_assets.h"

/* One request's body, gathered over the calls libmicrohttpd makes. */
typedef struct Body {
    char *data;
    size_t len;
    int too_big; /* more than SERVER_MAX_BODY: the rest is read and dropped */
} Body;

static const WebAsset *find_asset(const char *url) {
    const char *path = strcmp(url, "/") == 0 ? "/index.html" : url;
    for (int i = 0; i < web_assets_count; i++)
        if (strcmp(web_assets[i].path, path) == 0) return &web_assets[i];
    return NULL;
}

static enum MHD_Result send_reply(struct MHD_Connection *conn, Reply *r) {
    struct MHD_Response *resp = r->response;
    if (!resp) {
        if (!r->body) reply_error(r, 500, "out of memory", NULL);
        resp = MHD_create_response_from_buffer(strlen(r->body), r->body, MHD_RESPMEM_MUST_FREE);
        if (!resp) {
            free(r->body);
            return MHD_NO;
        }
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, r->mime ? r->mime : "application/json");
    }
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    if (r->timing) MHD_add_response_header(resp, "Server-Timing", r->timing);
    MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
    enum MHD_Result ok = MHD_queue_response(conn, (unsigned)r->status, resp);
    MHD_destroy_response(resp);
    return ok;
}

static enum MHD_Result send_asset(struct MHD_Connection *conn, const WebAsset *a) {
    struct MHD_Response *resp = MHD_create_response_from_buffer(a->size, (void *)a->data, MHD_RESPMEM_PERSISTENT);
    if (!resp) return MHD_NO;
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, a->mime);
    Reply r = {.status = 200, .response = resp};
    return send_reply(conn, &r);
}

/* host:port (or [::1]:port) names this machine's loopback. */
static int loopback_name(const char *host) {
    static const char *const names[] = {"localhost", "127.0.0.1", "[::1]"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        size_t n = strlen(names[i]);
        if (strncmp(host, names[i], n) == 0 && (host[n] == '\0' || host[n] == ':')) return 1;
    }
    return 0;
}

/* Served on loopback, the server answers only requests addressed to
 * loopback (a web page elsewhere cannot rebind its name to us) and refuses
 * requests a page of another origin sends (it could start trainings). */
static int foreign_request(const Server *s, struct MHD_Connection *conn) {
    const char *host = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_HOST);
    const char *origin = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Origin");
    int loopback = strcmp(s->o.host, "127.0.0.1") == 0 || strcmp(s->o.host, "localhost") == 0;
    if (loopback && host && !loopback_name(host)) return 1;
    if (origin) { /* "null" too: what a sandboxed frame of any site sends */
        const char *o = strstr(origin, "://");
        if (!o || !host || strcmp(o + 3, host) != 0) return 1;
    }
    return 0;
}

static int is_upload(const char *url) { return strcmp(url, "/api/upload") == 0; }

/* The bodies of upload and download: not JSON (a text file's bytes; a query
 * argument). NULL when url is neither. */
static Reply *file_routes(Server *s, struct MHD_Connection *conn, const char *url, int post, Body *b, Reply *r) {
    if (is_upload(url) && post) {
        if (b->too_big) reply_error(r, 413, "the file is larger than 20 MiB", "split it, or train with storylm train");
        else api_upload(s, MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "name"), b->data ? b->data : "", b->len, r);
        return r;
    }
    if (strcmp(url, "/api/download") == 0 && !post) {
        api_download(s, MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "model"), r);
        return r;
    }
    if (is_upload(url) || strcmp(url, "/api/download") == 0) {
        reply_error(r, 405, post ? "download takes GET" : "upload takes POST with the file as body", NULL);
        return r;
    }
    return NULL;
}

static enum MHD_Result dispatch(Server *s, struct MHD_Connection *conn, const char *url, const char *method,
                                Body *b) {
    Reply r = {0};
    int get = strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0, post = strcmp(method, "POST") == 0;
    if (foreign_request(s, conn)) {
        reply_error(&r, 403, "requests from other sites are refused", "open the page the server prints");
        return send_reply(conn, &r);
    }
    if (strncmp(url, "/api/", 5) != 0) {
        const WebAsset *a = get ? find_asset(url) : NULL;
        if (a) return send_asset(conn, a);
        reply_error(&r, get ? 404 : 405, get ? "no such page" : "the page is read with GET", NULL);
        return send_reply(conn, &r);
    }
    if (!get && !post) {
        reply_error(&r, 405, "the API takes GET and POST", NULL);
        return send_reply(conn, &r);
    }
    if (file_routes(s, conn, url, post, b, &r)) return send_reply(conn, &r);
    if (b->too_big) {
        reply_error(&r, 413, "the request body is larger than 256 KiB", "send a shorter text (at most 64 KiB)");
        return send_reply(conn, &r);
    }
    cJSON *body = NULL;
    if (post && b->len > 0) {
        body = cJSON_ParseWithLength(b->data, b->len);
        if (!body || !cJSON_IsObject(body)) {
            cJSON_Delete(body);
            reply_error(&r, 400, "the request body is not a JSON object", "send a body like {\"text\": \"Lily found a\"}");
            return send_reply(conn, &r);
        }
    }
    if (!body) body = cJSON_CreateObject();
    /* one thread a request: the pool's threads are the parallelism (an
     * OpenMP team in each would oversubscribe the cores) */
    slm_model_threads_setup(s->o.compute_threads);
    struct timespec t0, t1, c0, c1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
    api_handle(s, get ? "GET" : "POST", url, body, &r);
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    cJSON_Delete(body);
    char timing[96]; /* what the answer cost here (wall and CPU time), for scripts/serve_latency */
    snprintf(timing, sizeof timing, "app;dur=%.3f, cpu;dur=%.3f",
             (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6,
             (c1.tv_sec - c0.tv_sec) * 1e3 + (c1.tv_nsec - c0.tv_nsec) / 1e6);
    if (!r.response) r.timing = timing;
    return send_reply(conn, &r);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
                                  const char *version, const char *upload_data, size_t *upload_data_size,
                                  void **con_cls) {
    Server *s = cls;
    Body *b = *con_cls;
    if (!b) { /* the first call: headers only */
        b = calloc(1, sizeof *b);
        if (!b) return MHD_NO;
        *con_cls = b;
        return MHD_YES;
    }
    if (*upload_data_size) {
        size_t n = *upload_data_size;
        *upload_data_size = 0;
        if (b->too_big || b->len + n > (is_upload(url) ? SERVER_MAX_UPLOAD : SERVER_MAX_BODY)) {
            b->too_big = 1;
            free(b->data);
            b->data = NULL;
            b->len = 0;
            return MHD_YES;
        }
        char *grown = realloc(b->data, b->len + n + 1);
        if (!grown) return MHD_NO;
        memcpy(grown + b->len, upload_data, n);
        b->data = grown;
        b->len += n;
        return MHD_YES;
    }
    return dispatch(s, conn, url, method, b);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls, enum MHD_RequestTerminationCode toe) {
    Body *b = *con_cls;
    if (b) free(b->data);
    free(b);
    *con_cls = NULL;
}

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

static int listen_address(const char *host, int port, struct sockaddr_in *addr, Error *e) {
    *addr = (struct sockaddr_in){.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    const char *ip = strcmp(host, "localhost") == 0 ? "127.0.0.1" : host;
    if (inet_pton(AF_INET, ip, &addr->sin_addr) != 1)
        return FAIL(e, "give --host an IPv4 address such as 127.0.0.1 (the default) or 0.0.0.0", "cannot listen on '%s'",
                    host);
    return 0;
}

int server_start(Server **out, const ServerOptions *o, Error *e) {
    *out = NULL;
    Server *s = calloc(1, sizeof *s);
    if (!s) return FAIL(e, NULL, "out of memory starting the server");
    s->o = *o;
    pthread_mutex_init(&s->lock, NULL);
    /* Buffers of 256 KiB and more (a request's activations, a kept run's) are mapped
     * and go back to the system when freed: glibc would otherwise raise this threshold
     * as they are freed and keep them in its per-thread heaps, where the runs the server
     * makes and drops under load fragment, and its memory would grow with no leak. */
    mallopt(M_MMAP_THRESHOLD, 256 * 1024);
    struct sockaddr_in addr;
    mkdir(o->train_dir, 0755); /* where trained models go; an error shows when training saves */
    int rc = listen_address(o->host, o->port, &addr, e) || data_dirs_init(s, e) ||
             model_dirs_init(&s->dirs, o->train_dir, o->model, e) || train_job_create(&s->train, o->train_dir, e);
    if (!rc && cache_init(&s->cache, o->cache_models)) rc = FAIL(e, NULL, "out of memory starting the server");
    if (!rc) {
        s->daemon = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO, (uint16_t)o->port, NULL, NULL,
                                     on_request, s, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&addr,
                                     MHD_OPTION_THREAD_POOL_SIZE, (unsigned)(o->threads > 0 ? o->threads : 4),
                                     MHD_OPTION_CONNECTION_LIMIT, 512u, MHD_OPTION_CONNECTION_TIMEOUT, 60u,
                                     MHD_OPTION_NOTIFY_COMPLETED, on_completed, s, MHD_OPTION_END);
        if (!s->daemon)
            rc = FAIL(e, "pick another --port, or stop what listens there", "cannot listen on %s:%d", o->host, o->port);
    }
    if (rc) {
        server_stop(s);
        return -1;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(s->daemon, MHD_DAEMON_INFO_BIND_PORT);
    s->port = info ? info->port : o->port;
    *out = s;
    return 0;
}

int server_port(const Server *s) { return s->port; }

void server_stop(Server *s) {
    if (!s) return;
    if (s->train) train_job_stop(s->train); /* it saves while the daemon winds down */
    if (s->daemon) MHD_stop_daemon(s->daemon); /* waits for its threads: no request reads the job after this */
    if (s->train) train_job_free(s->train);
    if (s->cache.entries) cache_free(&s->cache);
    free(s->stories_json);
    pthread_mutex_destroy(&s->lock);
    free(s);
}
