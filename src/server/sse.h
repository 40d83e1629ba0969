/* One writer of Server-Sent Events for every streaming answer (/api/generate,
 * /v1/completions with "stream"): libmicrohttpd asks for bytes only when the
 * client can take them, and only then is the next event made, so a slow
 * client slows the work and one that goes away ends it (its stream freed,
 * nothing more made). A stream embeds an Sse as its first member. */
#ifndef STORYLM_SERVER_SSE_H
#define STORYLM_SERVER_SSE_H

#include <cjson/cJSON.h>
#include <stddef.h>

struct MHD_Response;

typedef struct Sse {
    /* Makes the next event (sse_set), marking ended with the last one; an
     * event left NULL ends the stream with an error. */
    void (*next)(struct Sse *sse);
    /* Frees the stream that embeds sse, when the answer is done or dropped. */
    void (*free)(struct Sse *sse);
    char *event; /* the event being sent */
    size_t len, sent;
    int ended; /* the last event is made */
} Sse;

/* "event: NAME\ndata: JSON\n\n" ("data: JSON\n\n" for NAME NULL); takes j.
 * NULL when out of memory. */
char *sse_event(const char *name, cJSON *j);
/* text (taken, may be NULL) as the event to send. */
void sse_set(Sse *sse, char *text);
/* 1 when every byte of the last event went out (a client that left early: 0). */
int sse_finished(const Sse *sse);
/* Every event of sse made at once, one after the other, as one text (the
 * same bytes a client of sse_response reads); sse freed. NULL when out of
 * memory or an event failed to be made. */
char *sse_gather(Sse *sse);
/* sse_http.c: an event-stream response reading sse; NULL when out of memory (sse then
 * freed with its free). */
struct MHD_Response *sse_response(Sse *sse);

#endif
