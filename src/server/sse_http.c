/* The Server-Sent Events of sse.h sent by libmicrohttpd as they are made. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <microhttpd.h>

#include "sse.h"

/* libmicrohttpd's reader: the rest of the event, else the next one. */
static ssize_t read_events(void *cls, uint64_t pos, char *buf, size_t max) {
    Sse *sse = cls;
    (void)pos;
    if (sse->sent == sse->len) {
        if (sse->ended) return MHD_CONTENT_READER_END_OF_STREAM;
        sse->next(sse);
        if (!sse->event) return MHD_CONTENT_READER_END_WITH_ERROR;
    }
    size_t n = sse->len - sse->sent < max ? sse->len - sse->sent : max;
    memcpy(buf, sse->event + sse->sent, n);
    sse->sent += n;
    return (ssize_t)n;
}

static void free_events(void *cls) {
    Sse *sse = cls;
    char *event = sse->event;
    sse->free(sse); /* reads sse_finished first */
    free(event);
}

struct MHD_Response *sse_response(Sse *sse) {
    struct MHD_Response *r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096, read_events, sse, free_events);
    if (!r) {
        free_events(sse);
        return NULL;
    }
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/event-stream; charset=utf-8");
    MHD_add_response_header(r, "X-Accel-Buffering", "no"); /* proxies: pass each event on at once */
    return r;
}
