/* The one Server-Sent Events writer: see sse.h. */
#include "sse.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char *sse_event(const char *name, cJSON *j) {
    char *data = j ? cJSON_PrintUnformatted(j) : NULL;
    cJSON_Delete(j);
    if (!data) return NULL;
    size_t n = strlen(data) + (name ? strlen(name) : 0) + 32;
    char *out = malloc(n);
    if (out) snprintf(out, n, "%s%s%sdata: %s\n\n", name ? "event: " : "", name ? name : "", name ? "\n" : "", data);
    free(data);
    return out;
}

void sse_set(Sse *sse, char *text) {
    free(sse->event);
    sse->event = text;
    sse->len = text ? strlen(text) : 0;
    sse->sent = 0;
}

int sse_finished(const Sse *sse) { return sse->ended && sse->sent == sse->len; }

char *sse_gather(Sse *sse) {
    char *all = NULL;
    size_t used = 0;
    int ok = 1;
    while (ok && !sse->ended) {
        sse->next(sse);
        char *grown = sse->event ? realloc(all, used + sse->len + 1) : NULL;
        ok = grown != NULL;
        if (ok) {
            memcpy(grown + used, sse->event, sse->len + 1);
            all = grown;
            used += sse->len;
            sse->sent = sse->len;
        }
    }
    char *event = sse->event;
    sse->free(sse); /* reads sse_finished first */
    free(event);
    if (!ok) free(all);
    return ok ? all : NULL;
}
