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
#include <strings.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "openai.h"
#include "guard.h"
#include "server_internal.h"
#include "sse.h"
#include "web_assets.h"
#include "storylm/clock.h"

/* One request's body, gathered over the calls libmicrohttpd makes. */
typedef struct Body {
    char *data;
    size_t len, cap; /* cap: data's bytes, doubled as it fills (a 20 MiB upload comes in thousands of parts) */
    int too_big;     /* more than SERVER_MAX_BODY: the rest is read and dropped */
    size_t dropped;  /* bytes dropped so: past SERVER_MAX_DROPPED the connection is closed */
    int openai;      /* a route of openai.c: its errors in OpenAI's shape */
    int status;      /* of the answer queued, for the metrics */
    double t0;       /* when its headers came */
    char url[64];    /* its first bytes, for the metrics' route */
} Body;

static const WebAsset *find_asset(const char *url) {
    const char *path = strcmp(url, "/") == 0 ? "/index.html" : url;
    for (int i = 0; i < web_assets_count; i++)
        if (strcmp(web_assets[i].path, path) == 0) return &web_assets[i];
    return NULL;
}

static enum MHD_Result send_reply(struct MHD_Connection *conn, Reply *r, Body *b) {
    struct MHD_Response *resp = r->response;
    if (!resp) {
        if (!r->body) reply_error(r, 500, "out of memory", NULL);
        if (b->openai) openai_error_shape(r);
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
    b->status = r->status;
    enum MHD_Result ok = MHD_queue_response(conn, (unsigned)r->status, resp);
    MHD_destroy_response(resp);
    return ok;
}

static enum MHD_Result send_asset(struct MHD_Connection *conn, const WebAsset *a, Body *b) {
    struct MHD_Response *resp = MHD_create_response_from_buffer(a->size, (void *)a->data, MHD_RESPMEM_PERSISTENT);
    if (!resp) return MHD_NO;
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, a->mime);
    Reply r = {.status = 200, .response = resp};
    return send_reply(conn, &r, b);
}

/* A Host header's value names this server: one of its names (127.0.0.1,
 * localhost, [::1], the --host given; listening on 0.0.0.0, any IP address
 * or this machine's name) with the port it listens on (left out only for
 * port 80). A web page elsewhere can rebind its own name to 127.0.0.1, but
 * its requests then still carry that name. */
static int host_names_us(const Server *s, const char *host) {
    const char *end = host[0] == '[' ? strchr(host, ']') : host + strcspn(host, ":");
    if (!end) return 0;
    end += host[0] == '[';
    if (*end == ':') {
        const char *digits = end + 1;
        size_t n = strlen(digits);
        if (n == 0 || n > 5 || strspn(digits, "0123456789") != n || atoi(digits) != s->port) return 0;
    } else if (*end != '\0' || s->port != 80) {
        return 0;
    }
    char name[256];
    size_t n = (size_t)(end - host);
    if (n == 0 || n >= sizeof name) return 0;
    memcpy(name, host, n);
    name[n] = '\0';
    static const char *const loopback[] = {"localhost", "127.0.0.1", "[::1]"};
    for (size_t i = 0; i < sizeof loopback / sizeof loopback[0]; i++)
        if (strcasecmp(name, loopback[i]) == 0) return 1;
    if (strcasecmp(name, s->o.host) == 0) return 1;
    if (strcmp(s->o.host, "0.0.0.0") != 0) return 0;
    unsigned char ip[16];
    char here[256] = "";
    if (name[0] == '[' && n > 2) { /* [v6]: the address within */
        name[n - 1] = '\0';
        return inet_pton(AF_INET6, name + 1, ip) == 1;
    }
    gethostname(here, sizeof here - 1);
    return inet_pton(AF_INET, name, ip) == 1 || (here[0] && strcasecmp(name, here) == 0);
}

static enum MHD_Result count_host(void *cls, enum MHD_ValueKind kind, const char *key, const char *value) {
    (void)kind, (void)value;
    if (strcasecmp(key, MHD_HTTP_HEADER_HOST) == 0) ++*(int *)cls;
    return MHD_YES;
}

/* A refused request's message in r (403), or 0: the request names this
 * server in one Host header, and a page of another origin did not send it
 * (it could start trainings). */
static int refused_request(const Server *s, struct MHD_Connection *conn, Reply *r) {
    const char *host = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_HOST);
    const char *origin = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Origin");
    char hint[160], msg[200], shown[101];
    snprintf(hint, sizeof hint, "open the page the server prints (http://%s:%d/)",
             strcmp(s->o.host, "0.0.0.0") == 0 ? "127.0.0.1" : s->o.host, s->port);
    int hosts = 0;
    MHD_get_connection_values(conn, MHD_HEADER_KIND, count_host, &hosts);
    if (!host || !host[0] || hosts != 1) {
        snprintf(msg, sizeof msg,
                 hosts > 1 ? "the request has %d Host headers; it must have one" : "the request names no Host", hosts);
        return reply_error(r, 403, msg, hint);
    }
    if (!host_names_us(s, host)) {
        size_t n = 0; /* shown as printable ASCII: the answer stays UTF-8 */
        for (; host[n] && n < sizeof shown - 1; n++) shown[n] = host[n] >= 0x20 && host[n] < 0x7f ? host[n] : '?';
        shown[n] = '\0';
        snprintf(msg, sizeof msg, "the Host '%s' is not this server's address", shown);
        return reply_error(r, 403, msg, hint);
    }
    if (origin) { /* "null" too: what a sandboxed frame of any site sends */
        const char *o = strstr(origin, "://");
        if (!o || strcmp(o + 3, host) != 0) return reply_error(r, 403, "requests from other sites are refused", hint);
    }
    return 0;
}

static int is_upload(const char *url) { return strcmp(url, "/api/upload") == 0; }

/* The most bytes of a body url takes: a stories file, or a request's JSON. */
static size_t body_limit(const char *url) { return is_upload(url) ? SERVER_MAX_UPLOAD : SERVER_MAX_BODY; }

static enum MHD_Result add_query_field(void *cls, enum MHD_ValueKind kind, const char *key, const char *value);

/* The URL's arguments as a JSON object of strings (NULL when out of memory). */
static cJSON *query_of(struct MHD_Connection *conn) {
    cJSON *q = cJSON_CreateObject();
    if (q) MHD_get_connection_values(conn, MHD_GET_ARGUMENT_KIND, add_query_field, q);
    return q;
}

/* The bodies of upload and download: not JSON (a text file's bytes; a query
 * argument). NULL when url is neither. */
static Reply *file_routes(Server *s, struct MHD_Connection *conn, const char *url, int post, Body *b, Reply *r) {
    cJSON *query = NULL;
    if (is_upload(url) && post) {
        if (b->too_big)
            reply_error(r, 413, "the file is larger than 20 MiB", "split it, or train with storylm train");
        else if (!(query = query_of(conn)))
            reply_error(r, 500, "out of memory", NULL);
        else if (query_check_strings(query, r) == 0)
            api_upload(s, query, b->data ? b->data : "", b->len, r);
        cJSON_Delete(query);
        return r;
    }
    if (strcmp(url, "/api/download") == 0 && !post) {
        if (!(query = query_of(conn)))
            reply_error(r, 500, "out of memory", NULL);
        else if (query_check_strings(query, r) == 0)
            api_download(s, query, r);
        cJSON_Delete(query);
        return r;
    }
    if (is_upload(url) || strcmp(url, "/api/download") == 0) {
        reply_error(r, 405, post ? "download takes GET" : "upload takes POST with the file as body", NULL);
        return r;
    }
    return NULL;
}

/* A GET's query field into the object cls (every value a string; the
 * handler reads each as its field's type). */
static enum MHD_Result add_query_field(void *cls, enum MHD_ValueKind kind, const char *key, const char *value) {
    (void)kind;
    if (key && !cJSON_GetObjectItemCaseSensitive(cls, key)) cJSON_AddStringToObject(cls, key, value ? value : "");
    return MHD_YES;
}

static enum MHD_Result dispatch(Server *s, struct MHD_Connection *conn, const char *url, const char *method, Body *b) {
    Reply r = {0};
    int get = strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0, post = strcmp(method, "POST") == 0;
    guard_phase(s->guard, conn, GUARD_BUSY);
    if (refused_request(s, conn, &r)) return send_reply(conn, &r, b);
    if (strncmp(url, "/api/", 5) != 0 && !b->openai) {
        const WebAsset *a = get ? find_asset(url) : NULL;
        if (a) return send_asset(conn, a, b);
        reply_error(&r, get ? 404 : 405, get ? "no such page" : "the page is read with GET", NULL);
        return send_reply(conn, &r, b);
    }
    if (!get && !post) {
        reply_error(&r, 405, "the API takes GET and POST", NULL);
        return send_reply(conn, &r, b);
    }
    if (!b->openai && file_routes(s, conn, url, post, b, &r)) return send_reply(conn, &r, b);
    if (b->too_big) {
        reply_error(&r, 413, "the request body is larger than 256 KiB", "send a shorter text (at most 64 KiB)");
        return send_reply(conn, &r, b);
    }
    cJSON *query = get ? query_of(conn) : NULL;
    cJSON *body = get && !query ? NULL : request_fields(get, b->data, b->len, query, b->openai, &r);
    cJSON_Delete(query);
    if (!body) {
        if (!r.body) reply_error(&r, 500, "out of memory", NULL);
        return send_reply(conn, &r, b);
    }
    /* one thread a request: the pool's threads are the parallelism (an
     * OpenMP team in each would oversubscribe the cores) */
    slm_model_threads_setup(s->o.compute_threads);
    double t0 = slm_clock_seconds(), c0 = slm_clock_thread_cpu_seconds();
    if (b->openai)
        openai_handle(s, get, url, body, &r);
    else
        api_handle(s, get ? "GET" : "POST", url, body, &r);
    double c1 = slm_clock_thread_cpu_seconds(), t1 = slm_clock_seconds();
    cJSON_Delete(body);
    char timing[96]; /* what the answer cost here (wall and CPU time), for scripts/serve_latency */
    snprintf(timing, sizeof timing, "app;dur=%.3f, cpu;dur=%.3f", (t1 - t0) * 1e3, (c1 - c0) * 1e3);
    if (!r.response) r.timing = timing;
    return send_reply(conn, &r, b);
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
        b->openai = openai_owns(url);
        b->t0 = slm_clock_seconds();
        snprintf(b->url, sizeof b->url, "%s", strlen(url) < sizeof b->url ? url : "/too-long");
        guard_phase(s->guard, conn, GUARD_BODY);
        /* A body a little too large is read and dropped, so the client reads the 413
         * (a socket closed with bytes unread is reset, and the answer may be lost);
         * one said to be far too large is answered now, unread, and closed. */
        const char *length = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
        if (!length || strtoull(length, NULL, 10) <= body_limit(url) + SERVER_MAX_DROPPED) return MHD_YES;
        b->too_big = 1;
        return dispatch(s, conn, url, method, b);
    }
    if (*upload_data_size) {
        size_t n = *upload_data_size;
        *upload_data_size = 0;
        b->dropped += b->too_big ? n : 0;
        if (b->dropped > SERVER_MAX_DROPPED) return MHD_NO; /* a chunked body without end: closed */
        if (b->too_big || b->len + n > body_limit(url)) {
            b->too_big = 1;
            free(b->data);
            b->data = NULL;
            b->len = b->cap = 0;
            return MHD_YES;
        }
        if (b->len + n + 1 > b->cap) {
            size_t cap = b->cap ? b->cap : 4096;
            while (cap < b->len + n + 1) cap *= 2;
            char *grown = realloc(b->data, cap);
            if (!grown) return MHD_NO;
            b->data = grown;
            b->cap = cap;
        }
        memcpy(b->data + b->len, upload_data, n);
        b->len += n;
        return MHD_YES;
    }
    return dispatch(s, conn, url, method, b);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls, enum MHD_RequestTerminationCode toe) {
    Server *s = cls;
    (void)toe;
    guard_phase(s->guard, conn, GUARD_HEADERS); /* the next request's time begins */
    Body *b = *con_cls;
    if (b && b->status && s->metrics) metrics_request(s->metrics, b->url, b->status, slm_clock_seconds() - b->t0);
    if (b) free(b->data);
    free(b);
    *con_cls = NULL;
}

static int listen_address(const char *host, int port, struct sockaddr_in *addr, Error *e) {
    *addr = (struct sockaddr_in){.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    const char *ip = strcmp(host, "localhost") == 0 ? "127.0.0.1" : host;
    if (inet_pton(AF_INET, ip, &addr->sin_addr) != 1)
        return FAIL(e, "give --host an IPv4 address such as 127.0.0.1 (the default) or 0.0.0.0",
                    "cannot listen on '%s'", host);
    return 0;
}

/* libmicrohttpd's own bound on connections, above the guard's: it takes a
 * newcomer in, and the guard then closes the oldest waiting one (at its own
 * bound, libmicrohttpd would close the newcomer). The file descriptors it
 * needs are asked for (the soft limit raised toward the hard one). */
static unsigned connection_backstop(void) {
    unsigned want = 2 * GUARD_MAX_CONNECTIONS + 64;
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0) return want;
    rlim_t need = want + 256; /* model files, stories, the token cache, logs */
    if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < need) {
        rl.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max > need ? need : rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
        getrlimit(RLIMIT_NOFILE, &rl);
    }
    if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < need)
        want = rl.rlim_cur > 512 ? (unsigned)rl.rlim_cur - 256 : 256;
    return want;
}

/* An event stream sent as its events are made (Server.stream). */
static int stream_http(struct Sse *sse, Reply *r) {
    if (!(r->response = sse_response(sse))) return reply_error(r, 500, "out of memory", NULL);
    r->status = 200;
    return 200;
}

/* /api/health's "connections" (Server.health): the guard's counts. */
static void health_connections(Server *s, cJSON *j) {
    GuardStats g = guard_stats(s->guard);
    cJSON *c = cJSON_AddObjectToObject(j, "connections");
    cJSON_AddNumberToObject(c, "open", g.open);
    cJSON_AddNumberToObject(c, "accepted", (double)g.accepted);
    cJSON_AddNumberToObject(c, "dropped", (double)g.dropped); /* waiting, closed to let a newer one in */
    cJSON_AddNumberToObject(c, "refused", (double)g.refused);
    cJSON_AddNumberToObject(c, "timed_out", (double)g.timed_out);
}

int server_start(Server **out, const ServerOptions *o, Error *e) {
    *out = NULL;
    Server *s = calloc(1, sizeof *s);
    if (!s) return FAIL(e, NULL, "out of memory starting the server");
    /* Buffers of 256 KiB and more (a request's activations, a kept run's) are mapped
     * and go back to the system when freed: glibc would otherwise raise this threshold
     * as they are freed and keep them in its per-thread heaps, where the runs the server
     * makes and drops under load fragment, and its memory would grow with no leak. */
    mallopt(M_MMAP_THRESHOLD, 256 * 1024);
    struct sockaddr_in addr;
    s->stream = stream_http;
    s->health = health_connections;
    int rc = listen_address(o->host, o->port, &addr, e) || server_core_init(s, o, e) || guard_create(&s->guard, e) ||
             (o->metrics && metrics_create(&s->metrics, e));
    s->port = o->port; /* the Host rule reads it: set before the first request (0: set below) */
    if (!rc) {
        s->daemon = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO, (uint16_t)o->port, NULL, NULL,
                                     on_request, s, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&addr,
                                     MHD_OPTION_THREAD_POOL_SIZE, (unsigned)(o->threads > 0 ? o->threads : 4),
                                     MHD_OPTION_CONNECTION_LIMIT, connection_backstop(), MHD_OPTION_CONNECTION_TIMEOUT,
                                     (unsigned)GUARD_IDLE_SECONDS, MHD_OPTION_NOTIFY_CONNECTION, guard_notify, s->guard,
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
    if (s->train) train_job_stop(s->train);    /* it saves while the daemon winds down */
    if (s->daemon) MHD_stop_daemon(s->daemon); /* waits for its threads: no request reads the job after this */
    guard_free(s->guard);                      /* after the daemon: no connection is left to watch */
    metrics_free(s->metrics);
    server_core_free(s);
    free(s);
}
