/* Reading a request's JSON fields, and answering. */
#define _XOPEN_SOURCE 700 /* realpath */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server_internal.h"
#include "storylm/text.h"

int reply_error(Reply *r, int status, const char *message, const char *hint) {
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "error", message);
    if (hint && hint[0]) cJSON_AddStringToObject(j, "hint", hint);
    return reply_json(r, status, j);
}

int reply_failure(Reply *r, int status, const Error *e) { return reply_error(r, status, e->message, e->hint); }

int reply_json(Reply *r, int status, cJSON *j) {
    r->body = j ? cJSON_PrintUnformatted(j) : NULL;
    cJSON_Delete(j);
    r->mime = "application/json";
    r->status = r->body ? status : 500;
    return r->status;
}

int reply_report(Reply *r, const Report *rep) {
    Error e = {0};
    if (slm_report_failed(rep, &e)) return reply_failure(r, 500, &e);
    return reply_json(r, 200, slm_report_json(rep));
}

static int bad(Reply *r, int status, const char *hint, const char *fmt, const char *key) {
    char msg[256];
    snprintf(msg, sizeof msg, fmt, key);
    reply_error(r, status, msg, hint);
    return -1;
}

int field_string(const cJSON *body, const char *key, const char **out, int required, size_t max, Reply *r) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(body, key);
    if (!v || cJSON_IsNull(v)) return required ? bad(r, 400, "send it as a JSON string", "missing \"%s\"", key) : 0;
    if (!cJSON_IsString(v)) return bad(r, 400, "send it as a JSON string", "\"%s\" must be a string", key);
    size_t n = strlen(v->valuestring);
    if (n > max) {
        char msg[256];
        snprintf(msg, sizeof msg, "\"%s\" is %zu bytes; the limit is %zu", key, n, max);
        reply_error(r, 413, msg, "send a shorter text");
        return -1;
    }
    Error e = {0};
    if (slm_utf8_validate(v->valuestring, n, key, &e)) {
        reply_failure(r, 400, &e);
        return -1;
    }
    *out = v->valuestring;
    return 0;
}

int field_double(const cJSON *body, const char *key, double *out, double lo, double hi, Reply *r) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(body, key);
    if (!v || cJSON_IsNull(v)) return 0;
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble))
        return bad(r, 400, "send it as a JSON number", "\"%s\" must be a number", key);
    if (v->valuedouble < lo || v->valuedouble > hi) {
        char msg[256];
        snprintf(msg, sizeof msg, "\"%s\" is %g; it must be from %g to %g", key, v->valuedouble, lo, hi);
        reply_error(r, 400, msg, NULL);
        return -1;
    }
    *out = v->valuedouble;
    return 0;
}

int field_int(const cJSON *body, const char *key, int *out, int lo, int hi, Reply *r) {
    double x = *out;
    if (field_double(body, key, &x, lo, hi, r)) return -1;
    if (x != floor(x)) return bad(r, 400, "send a whole number", "\"%s\" must be a whole number", key);
    *out = (int)x;
    return 0;
}

int field_bool(const cJSON *body, const char *key, int *out, Reply *r) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(body, key);
    if (!v || cJSON_IsNull(v)) return 0;
    if (!cJSON_IsBool(v)) return bad(r, 400, "send true or false", "\"%s\" must be true or false", key);
    *out = cJSON_IsTrue(v);
    return 0;
}

int field_ablation(const cJSON *body, char *buf, size_t size, const char **ablate, const char **mode, Reply *r) {
    *ablate = NULL;
    *mode = "zero";
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(body, "ablate");
    if (cJSON_IsArray(v)) { /* [3, 5] as well as "3,5" */
        size_t used = 0;
        buf[0] = '\0';
        const cJSON *h;
        cJSON_ArrayForEach(h, v) {
            if (!cJSON_IsNumber(h) || h->valuedouble != floor(h->valuedouble) || fabs(h->valuedouble) > 1e6)
                return bad(r, 400, "like [3, 5] or \"3,5\"", "\"%s\" must list head numbers", "ablate");
            used += (size_t)snprintf(buf + used, used < size ? size - used : 0, "%s%d", used ? "," : "", (int)h->valuedouble);
        }
        if (used >= size) return bad(r, 400, NULL, "\"%s\" lists too many heads", "ablate");
        if (used) *ablate = buf;
    } else if (v && !cJSON_IsNull(v)) {
        const char *s = NULL;
        if (field_string(body, "ablate", &s, 0, size - 1, r)) return -1;
        if (s && s[0]) *ablate = strcpy(buf, s);
    }
    if (field_string(body, "ablate_mode", mode, 0, 16, r)) return -1;
    if (strcmp(*mode, "zero") != 0 && strcmp(*mode, "mean") != 0)
        return bad(r, 400, "zero, or mean", "\"%s\" is zero or mean", "ablate_mode");
    return 0;
}

/* real is under folder (a real path): equal to it or below it. */
static int under(const char *real, const char *folder) {
    size_t n = strlen(folder);
    return strncmp(real, folder, n) == 0 && (real[n] == '/' || (n > 0 && folder[n - 1] == '/'));
}

int server_allowed_stories(const Server *s, const char *given, char *out, size_t size, Reply *r) {
    char *real = realpath(given, NULL);
    int ok = real && slm_session_file_exists(real) &&
             (s->default_stories_real[0] && strcmp(real, s->default_stories_real) == 0);
    for (int i = 0; real && !ok && i < s->n_data; i++) ok = under(real, s->data_real[i]) && slm_session_file_exists(real);
    char *uploads = real && !ok ? realpath(s->o.train_dir, NULL) : NULL; /* stories sent to /api/upload */
    if (uploads) ok = under(real, uploads) && slm_session_file_exists(real);
    free(uploads);
    if (ok) snprintf(out, size, "%s", real); /* the file checked, whatever a symlink points to later */
    free(real);
    if (ok) return 0;
    reply_error(r, 403, "that stories file is not in a folder the server was given",
                "name a file under a --data-dir folder of storylm serve (or the project's data/stories.txt)");
    return -1;
}
