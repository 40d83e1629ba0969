/* GET /metrics (storylm serve --metrics): requests by route and status,
 * their latency as a histogram by route, tokens generated and prompt tokens
 * run, in Prometheus's text exposition format. A route is a known URL; any
 * other (a page, a 404) is counted under "page" or "other", so a client
 * cannot grow the list. */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "openai.h"

#define METRICS_ROUTES 128 /* routes counted apart (every endpoint fits); more go to "other" */
#define METRICS_STATUSES 8 /* statuses counted apart a route */
static const double buckets[] = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60};
#define N_BUCKETS (sizeof buckets / sizeof buckets[0])

typedef struct RouteCounts {
    char route[48];
    int status[METRICS_STATUSES];
    long long by_status[METRICS_STATUSES];
    long long bucket[N_BUCKETS]; /* requests within buckets[i] seconds (cumulative when printed) */
    long long count;
    double seconds;
} RouteCounts;

struct Metrics {
    pthread_mutex_t lock;
    RouteCounts routes[METRICS_ROUTES];
    int n;
    long long generated, prompt_tokens;
};

int metrics_create(Metrics **out, Error *e) {
    Metrics *m = calloc(1, sizeof *m);
    if (!m) return FAIL(e, NULL, "out of memory starting the server");
    pthread_mutex_init(&m->lock, NULL);
    *out = m;
    return 0;
}

void metrics_free(Metrics *m) {
    if (!m) return;
    pthread_mutex_destroy(&m->lock);
    free(m);
}

/* The label of url: itself when it is a route the server has (an API's,
 * answered other than 404), "page" for the page's files, else "other". */
static void route_label(const char *url, int status, char *out, size_t size) {
    size_t n = strlen(url);
    int api = strncmp(url, "/api/", 5) == 0 || openai_owns(url);
    int plain = n < size && strspn(url, "abcdefghijklmnopqrstuvwxyz0123456789_/") == n;
    if (api && plain && status != 404)
        snprintf(out, size, "%s", url);
    else
        snprintf(out, size, "%s", !api && status < 400 ? "page" : "other");
}

static RouteCounts *find_counts(Metrics *m, const char *label) {
    for (int i = 0; i < m->n; i++)
        if (strcmp(m->routes[i].route, label) == 0) return &m->routes[i];
    return NULL;
}

/* label's counts, made on first use; the last slot is kept for "other". */
static RouteCounts *route_counts(Metrics *m, const char *label) {
    RouteCounts *rc = find_counts(m, label);
    if (rc) return rc;
    if (m->n >= METRICS_ROUTES - 1 && (rc = find_counts(m, "other"))) return rc;
    rc = &m->routes[m->n++];
    snprintf(rc->route, sizeof rc->route, "%s", m->n == METRICS_ROUTES ? "other" : label);
    return rc;
}

void metrics_request(Metrics *m, const char *url, int status, double seconds) {
    char label[48];
    route_label(url, status, label, sizeof label);
    pthread_mutex_lock(&m->lock);
    RouteCounts *rc = route_counts(m, label);
    int i = 0;
    while (i < METRICS_STATUSES - 1 && rc->status[i] && rc->status[i] != status) i++;
    rc->status[i] = rc->status[i] ? rc->status[i] : status; /* the last slot: any status past the first 7 */
    rc->by_status[i]++;
    for (size_t b = 0; b < N_BUCKETS; b++) rc->bucket[b] += seconds <= buckets[b];
    rc->count++;
    rc->seconds += seconds;
    pthread_mutex_unlock(&m->lock);
}

void metrics_tokens(Metrics *m, long long prompt_tokens, long long generated_tokens) {
    pthread_mutex_lock(&m->lock);
    m->prompt_tokens += prompt_tokens;
    m->generated += generated_tokens;
    pthread_mutex_unlock(&m->lock);
}

/* Appends printf's text to *buf (*len used of *cap); -1 when out of memory. */
__attribute__((format(printf, 4, 5))) static int put(char **buf, size_t *len, size_t *cap, const char *fmt, ...) {
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(*buf + *len, *cap - *len, fmt, ap);
        va_end(ap);
        if (n < 0) return -1;
        if (*len + (size_t)n < *cap) return *len += (size_t)n, 0;
        char *grown = realloc(*buf, *cap * 2 + (size_t)n);
        if (!grown) return -1;
        *buf = grown, *cap = *cap * 2 + (size_t)n;
    }
}

char *metrics_text(Metrics *m) {
    size_t len = 0, cap = 4096;
    char *buf = malloc(cap);
    int bad = !buf;
    pthread_mutex_lock(&m->lock);
    bad = bad || put(&buf, &len, &cap, "%s",
                     "# HELP storylm_requests_total Requests answered, by route and status.\n"
                     "# TYPE storylm_requests_total counter\n");
    for (int i = 0; !bad && i < m->n; i++)
        for (int s = 0; !bad && s < METRICS_STATUSES && m->routes[i].status[s]; s++)
            bad = put(&buf, &len, &cap, "storylm_requests_total{route=\"%s\",status=\"%d\"} %lld\n", m->routes[i].route,
                      m->routes[i].status[s], m->routes[i].by_status[s]);
    bad = bad || put(&buf, &len, &cap, "%s",
                     "# HELP storylm_request_duration_seconds Time from a request's headers to the end of its "
                     "answer (a stream's last byte), by route.\n"
                     "# TYPE storylm_request_duration_seconds histogram\n");
    for (int i = 0; !bad && i < m->n; i++) {
        const RouteCounts *rc = &m->routes[i];
        for (size_t b = 0; !bad && b < N_BUCKETS; b++)
            bad = put(&buf, &len, &cap, "storylm_request_duration_seconds_bucket{route=\"%s\",le=\"%g\"} %lld\n",
                      rc->route, buckets[b], rc->bucket[b]);
        bad = bad || put(&buf, &len, &cap,
                         "storylm_request_duration_seconds_bucket{route=\"%s\",le=\"+Inf\"} %lld\n"
                         "storylm_request_duration_seconds_sum{route=\"%s\"} %.6f\n"
                         "storylm_request_duration_seconds_count{route=\"%s\"} %lld\n",
                         rc->route, rc->count, rc->route, rc->seconds, rc->route, rc->count);
    }
    bad = bad || put(&buf, &len, &cap,
                     "# HELP storylm_tokens_generated_total New tokens written by /v1/completions.\n"
                     "# TYPE storylm_tokens_generated_total counter\n"
                     "storylm_tokens_generated_total %lld\n"
                     "# HELP storylm_prompt_tokens_total Prompt tokens run through a model by /v1/completions.\n"
                     "# TYPE storylm_prompt_tokens_total counter\n"
                     "storylm_prompt_tokens_total %lld\n",
                     m->generated, m->prompt_tokens);
    pthread_mutex_unlock(&m->lock);
    if (bad) free(buf);
    return bad ? NULL : buf;
}
