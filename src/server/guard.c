/* The connections' guard: slow or stuck clients never keep others waiting.
 *
 * libmicrohttpd polls every socket (epoll), so a connection that sends half
 * a request costs a file descriptor and a little memory, not a thread. What
 * it cannot do alone is choose which connection to give up when they are
 * too many: its own limits refuse the newcomer, so 600 half-open connections
 * would lock out the page. The guard keeps a list of the connections and
 * what each is doing, and:
 *   - bounds them: at most GUARD_MAX_CONNECTIONS, GUARD_MAX_PER_ADDRESS from
 *     one address; a connection beyond either bound closes the oldest one
 *     still waiting for its request (its headers or its body), so a real
 *     request always gets in; only when none waits is the newcomer closed;
 *   - gives a request GUARD_HEADER_SECONDS for its headers (from the
 *     connection's start, or from the end of the answer before it on a kept
 *     connection) and GUARD_BODY_SECONDS for its body; a watcher thread
 *     closes the connections past their time four times a second.
 * A connection is closed with shutdown(2): libmicrohttpd sees the end of
 * the stream on its next poll and frees it as it frees any other. Bytes that
 * wait unread in a socket mean the server, not the client, is late (its
 * thread is busy answering another request): such a connection is never
 * taken for a slow one. Answers being sent are bounded by libmicrohttpd's
 * own inactivity timeout (server.c). */
#define _GNU_SOURCE /* malloc_trim */
#include <errno.h>
#include <malloc.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>

#include "guard.h"
#include "storylm/clock.h"

enum Phase { WAIT_HEADERS, WAIT_BODY, BUSY, CLOSING };

typedef struct GuardConn {
    int fd;
    unsigned char addr[16]; /* the client's IPv4 (4 bytes) or IPv6 address */
    int addr_len;
    enum Phase phase;
    double since; /* when the phase began, CLOCK_MONOTONIC seconds */
} GuardConn;

struct Guard {
    pthread_mutex_t lock;
    pthread_cond_t wake;
    pthread_t watcher;
    int has_watcher, stopping;
    GuardConn **conns; /* every open connection, in no order */
    int n, cap;
    GuardStats stats;
    int trimmed; /* 1: memory handed back since the last request */
};

/* Bytes the client sent that the server has not read yet. */
static int unread_bytes(const GuardConn *c) {
    int n = 0;
    return ioctl(c->fd, FIONREAD, &n) == 0 ? n : 0;
}

static int waiting(const GuardConn *c) { return c->phase == WAIT_HEADERS || c->phase == WAIT_BODY; }

static int same_address(const GuardConn *a, const GuardConn *b) {
    return a->addr_len == b->addr_len && memcmp(a->addr, b->addr, (size_t)a->addr_len) == 0;
}

/* Closes c (libmicrohttpd frees it at its next poll). Under g->lock. */
static void close_conn(GuardConn *c) {
    shutdown(c->fd, SHUT_RDWR);
    c->phase = CLOSING;
}

/* The connection, other than fresh, waiting longest for a client that has
 * sent all it has (of address like's when like is not NULL), or NULL. */
static GuardConn *oldest_waiting(Guard *g, const GuardConn *like, const GuardConn *fresh) {
    GuardConn *best = NULL;
    for (int i = 0; i < g->n; i++) {
        GuardConn *c = g->conns[i];
        if (c == fresh || !waiting(c) || (like && !same_address(c, like))) continue;
        if ((!best || c->since < best->since) && unread_bytes(c) == 0) best = c;
    }
    return best;
}

/* Makes room for fresh within the bounds: closes the oldest waiting
 * connections, or fresh itself when none waits. Under g->lock. */
static void enforce_limits(Guard *g, GuardConn *fresh) {
    int total = 0, mine = 0;
    for (int i = 0; i < g->n; i++) {
        const GuardConn *c = g->conns[i];
        if (c->phase == CLOSING) continue;
        total++;
        mine += same_address(c, fresh);
    }
    for (int round = 0; round < 2 && fresh->phase != CLOSING; round++) {
        int over = round == 0 ? mine - GUARD_MAX_PER_ADDRESS : total - GUARD_MAX_CONNECTIONS;
        for (; over > 0 && fresh->phase != CLOSING; over--, total--, mine--) {
            GuardConn *victim = oldest_waiting(g, round == 0 ? fresh : NULL, fresh);
            if (!victim) {
                victim = fresh;
                g->stats.refused++;
            } else {
                g->stats.dropped++;
            }
            close_conn(victim);
        }
    }
}

static void address_of(struct MHD_Connection *conn, GuardConn *c) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    const struct sockaddr *sa = info ? info->client_addr : NULL;
    if (sa && sa->sa_family == AF_INET) {
        memcpy(c->addr, &((const struct sockaddr_in *)(const void *)sa)->sin_addr, 4);
        c->addr_len = 4;
    } else if (sa && sa->sa_family == AF_INET6) {
        memcpy(c->addr, &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr, 16);
        c->addr_len = 16;
    }
}

static void add_conn(Guard *g, struct MHD_Connection *conn, void **socket_context) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    GuardConn *c = calloc(1, sizeof *c);
    if (!c || !info) { /* no room to watch it: refused */
        free(c);
        if (info) shutdown(info->connect_fd, SHUT_RDWR);
        return;
    }
    c->fd = info->connect_fd;
    address_of(conn, c);
    c->phase = WAIT_HEADERS;
    c->since = slm_clock_seconds();
    pthread_mutex_lock(&g->lock);
    if (g->n == g->cap) {
        int cap = g->cap ? 2 * g->cap : 64;
        GuardConn **grown = realloc(g->conns, (size_t)cap * sizeof *grown);
        if (!grown) {
            pthread_mutex_unlock(&g->lock);
            shutdown(c->fd, SHUT_RDWR);
            free(c);
            return;
        }
        g->conns = grown, g->cap = cap;
    }
    g->conns[g->n++] = c;
    g->stats.accepted++;
    enforce_limits(g, c);
    pthread_mutex_unlock(&g->lock);
    *socket_context = c;
}

/* Before libmicrohttpd closes the socket: the fd is not shut down after this. */
static void remove_conn(Guard *g, GuardConn *c) {
    pthread_mutex_lock(&g->lock);
    for (int i = 0; i < g->n; i++)
        if (g->conns[i] == c) {
            g->conns[i] = g->conns[--g->n];
            break;
        }
    pthread_mutex_unlock(&g->lock);
    free(c);
}

void guard_notify(void *cls, struct MHD_Connection *conn, void **socket_context,
                  enum MHD_ConnectionNotificationCode code) {
    Guard *g = cls;
    if (code == MHD_CONNECTION_NOTIFY_STARTED)
        add_conn(g, conn, socket_context);
    else if (*socket_context)
        remove_conn(g, *socket_context);
    if (code != MHD_CONNECTION_NOTIFY_STARTED) *socket_context = NULL;
}

void guard_phase(Guard *g, struct MHD_Connection *conn, int phase) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    GuardConn *c = info ? info->socket_context : NULL;
    if (!c) return;
    pthread_mutex_lock(&g->lock);
    if (c->phase != CLOSING) {
        c->phase = phase == GUARD_BODY ? WAIT_BODY : phase == GUARD_BUSY ? BUSY : WAIT_HEADERS;
        c->since = slm_clock_seconds();
    }
    if (phase == GUARD_BUSY) g->trimmed = 0;
    pthread_mutex_unlock(&g->lock);
}

/* Closes the connections past their time. Under g->lock. */
static void close_late(Guard *g, double now) {
    for (int i = 0; i < g->n; i++) {
        GuardConn *c = g->conns[i];
        double limit = c->phase == WAIT_HEADERS ? GUARD_HEADER_SECONDS
                       : c->phase == WAIT_BODY  ? GUARD_BODY_SECONDS
                                                : -1;
        if (limit > 0 && now - c->since > limit && unread_bytes(c) == 0) {
            close_conn(c);
            g->stats.timed_out++;
        }
    }
}

/* 1 once no request is being answered after some were: then the memory the
 * answers used goes back to the system (glibc keeps what threads free in
 * their own heaps). Under g->lock. */
static int time_to_trim(Guard *g) {
    if (g->trimmed) return 0;
    for (int i = 0; i < g->n; i++)
        if (g->conns[i]->phase == BUSY) return 0;
    g->trimmed = 1;
    return 1;
}

static void *watch(void *arg) {
    Guard *g = arg;
    pthread_mutex_lock(&g->lock);
    while (!g->stopping) {
        struct timespec t;
        clock_gettime(CLOCK_REALTIME, &t);
        t.tv_nsec += 250 * 1000 * 1000;
        if (t.tv_nsec >= 1000000000) t.tv_sec++, t.tv_nsec -= 1000000000;
        pthread_cond_timedwait(&g->wake, &g->lock, &t);
        if (g->stopping) break;
        close_late(g, slm_clock_seconds());
        if (time_to_trim(g)) { /* not under the lock: connections come and go meanwhile */
            pthread_mutex_unlock(&g->lock);
            malloc_trim(0);
            pthread_mutex_lock(&g->lock);
        }
    }
    pthread_mutex_unlock(&g->lock);
    return NULL;
}

int guard_create(Guard **out, Error *e) {
    *out = NULL;
    Guard *g = calloc(1, sizeof *g);
    if (!g) return FAIL(e, NULL, "out of memory starting the server");
    pthread_mutex_init(&g->lock, NULL);
    pthread_cond_init(&g->wake, NULL);
    g->trimmed = 1;
    if (pthread_create(&g->watcher, NULL, watch, g) != 0) {
        guard_free(g);
        return FAIL(e, NULL, "cannot start the server's connection watcher");
    }
    g->has_watcher = 1;
    *out = g;
    return 0;
}

GuardStats guard_stats(Guard *g) {
    pthread_mutex_lock(&g->lock);
    GuardStats s = g->stats;
    s.open = 0;
    for (int i = 0; i < g->n; i++) s.open += g->conns[i]->phase != CLOSING;
    pthread_mutex_unlock(&g->lock);
    return s;
}

void guard_free(Guard *g) {
    if (!g) return;
    pthread_mutex_lock(&g->lock);
    g->stopping = 1;
    pthread_cond_signal(&g->wake);
    pthread_mutex_unlock(&g->lock);
    if (g->has_watcher) pthread_join(g->watcher, NULL);
    for (int i = 0; i < g->n; i++) free(g->conns[i]); /* none left once the daemon stopped */
    free(g->conns);
    pthread_cond_destroy(&g->wake);
    pthread_mutex_destroy(&g->lock);
    free(g);
}
