/* The connections of libmicrohttpd's front end (guard.c): bounds on how many
 * are open, from one address, and how long each may wait. */
#ifndef STORYLM_SERVER_GUARD_H
#define STORYLM_SERVER_GUARD_H

#include <microhttpd.h>

#include "server_internal.h"

/* ---- connections (guard.c) ------------------------------------------------------ */

#define GUARD_MAX_CONNECTIONS 512 /* open at once */
#define GUARD_MAX_PER_ADDRESS 256 /* open at once from one client address */
#define GUARD_HEADER_SECONDS 5.0  /* for a request's headers */
#define GUARD_BODY_SECONDS 10.0   /* for its body (at most SERVER_MAX_BODY) */
#define GUARD_IDLE_SECONDS 30     /* an answer's client reading nothing (libmicrohttpd's timeout) */

typedef struct GuardStats {
    long long accepted, dropped, refused, timed_out; /* dropped: waiting, closed for a newcomer */
    int open;
} GuardStats;
enum { GUARD_HEADERS, GUARD_BODY, GUARD_BUSY }; /* what a connection waits for, or busy answering */

int guard_create(Guard **out, Error *e);
void guard_free(Guard *g); /* after the daemon stopped */
/* libmicrohttpd's MHD_OPTION_NOTIFY_CONNECTION callback, cls the guard. */
void guard_notify(void *cls, struct MHD_Connection *conn, void **socket_context,
                  enum MHD_ConnectionNotificationCode code);
/* conn's request moves on: its headers came (GUARD_BODY), it is being
 * answered (GUARD_BUSY), or its answer is sent (GUARD_HEADERS: the next). */
void guard_phase(Guard *g, struct MHD_Connection *conn, int phase);
GuardStats guard_stats(Guard *g);

#endif
