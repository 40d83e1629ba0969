/* Reading a request's JSON fields, and answering. */
#define _GNU_SOURCE /* realpath, memmem */
#include <math.h>
#include <stdint.h>
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

int reply_failure(Reply *r, int status, const Error *e) {
    char text[sizeof e->message + 300]; /* a parameter the error names, in a request's words */
    return reply_error(r, status, slm_error_text(e, ERROR_STYLE_JSON, text, sizeof text), e->hint);
}

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

/* ---- NUL in a body's strings ---- */

/* Appends code point cp as UTF-8 (a lone surrogate as its three bytes: invalid). */
static size_t put_utf8(unsigned char *out, uint32_t cp) {
    if (cp < 0x80) return out[0] = (unsigned char)cp, 1;
    if (cp < 0x800) return out[0] = (unsigned char)(0xC0 | cp >> 6), out[1] = (unsigned char)(0x80 | (cp & 0x3F)), 2;
    if (cp < 0x10000) {
        out[0] = (unsigned char)(0xE0 | cp >> 12), out[1] = (unsigned char)(0x80 | (cp >> 6 & 0x3F));
        return out[2] = (unsigned char)(0x80 | (cp & 0x3F)), 3;
    }
    out[0] = (unsigned char)(0xF0 | cp >> 18), out[1] = (unsigned char)(0x80 | (cp >> 12 & 0x3F));
    return out[2] = (unsigned char)(0x80 | (cp >> 6 & 0x3F)), out[3] = (unsigned char)(0x80 | (cp & 0x3F)), 4;
}

/* The 4 hex digits at d, or -1. */
static long hex4(const char *d, size_t left) {
    if (left < 4) return -1;
    char digits[5] = {d[0], d[1], d[2], d[3], 0}, *end;
    long v = strtol(digits, &end, 16);
    return *end || strspn(digits, "0123456789abcdefABCDEF") != 4 ? -1 : v;
}

/* Decodes the JSON string whose opening quote is d[*at] into out (room for
 * its raw length); *at moves past the closing quote. Returns the decoded
 * length: what cJSON would hold, but with its NULs (cJSON stops at them). */
static size_t json_string(const char *d, size_t len, size_t *at, unsigned char *out) {
    size_t i = *at + 1, n = 0;
    while (i < len && d[i] != '"') {
        if (d[i] != '\\' || i + 1 >= len) {
            out[n++] = (unsigned char)d[i++];
            continue;
        }
        char c = d[i + 1];
        i += 2;
        if (c != 'u') {
            const char *from = "bfnrt", *to = "\b\f\n\r\t", *k = strchr(from, c);
            out[n++] = (unsigned char)(c && k ? to[k - from] : c);
            continue;
        }
        long cp = hex4(d + i, len - i);
        if (cp < 0) continue; /* malformed: cJSON refuses it */
        i += 4;
        long low = cp >= 0xD800 && cp < 0xDC00 && i + 1 < len && d[i] == '\\' && d[i + 1] == 'u'
                       ? hex4(d + i + 2, len - i - 2)
                       : -1;
        if (low >= 0xDC00 && low < 0xE000) cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00), i += 6;
        n += put_utf8(out + n, (uint32_t)cp);
    }
    *at = i + 1;
    return n;
}

int body_check_strings(const char *data, size_t len, Reply *r) {
    if (!memchr(data, 0, len) && !memmem(data, len, "\\u0000", 6) && slm_utf8_validate(data, len, "", NULL) == 0)
        return 0; /* the usual body: one pass, no scan */
    unsigned char *text = malloc(len + 4);
    if (!text) return reply_error(r, 500, "out of memory", NULL), -1;
    char key[64] = "request body";
    Error e = {0};
    int rc = 0;
    for (size_t at = 0; at < len && !rc;) {
        if (data[at] != '"') {
            at++;
            continue;
        }
        size_t n = json_string(data, len, &at, text), next = at;
        while (next < len && strchr(" \t\r\n", data[next]) && data[next]) next++;
        if (next < len && data[next] == ':') { /* a key: it names the strings after it (cut at a character) */
            size_t k = n < 63 ? n : 63;
            while (k > 0 && k < n && (text[k] & 0xC0) == 0x80) k--;
            if (slm_utf8_validate((const char *)text, k, "", NULL) == 0)
                snprintf(key, sizeof key, "%.*s", (int)k, (const char *)text);
            else
                snprintf(key, sizeof key, "%s", "a field's name");
        } else {
            rc = slm_utf8_validate((const char *)text, n, key, &e);
        }
    }
    free(text);
    if (!rc && memchr(data, 0, len)) rc = FAIL(&e, NULL, "the request body holds a NUL byte outside its strings");
    if (!rc) rc = slm_utf8_validate(data, len, "the request body", &e); /* a field's name, or outside the strings */
    if (!rc) return 0;
    reply_error(r, 400, e.message, "send UTF-8 text without NUL characters");
    return -1;
}

int query_check_strings(const cJSON *query, Reply *r) {
    const cJSON *item;
    Error e = {0};
    cJSON_ArrayForEach(item, query) {
        const char *s = cJSON_IsString(item) ? item->valuestring : "";
        if (slm_utf8_validate(item->string, strlen(item->string), "a field's name in the query", &e) ||
            slm_utf8_validate(s, strlen(s), item->string, &e)) {
            reply_error(r, 400, e.message, "send UTF-8 text");
            return -1;
        }
    }
    return 0;
}

/* "the fields of this request: a, b, c" (each field t takes from a request) into buf. */
static void fields_hint(const ParamTable *t, char *buf, size_t size) {
    ParamList l;
    slm_params_list(t, &l);
    size_t used = (size_t)snprintf(buf, size, "%s", "the fields of this request:");
    int n = 0;
    for (int i = 0; i < l.n && used < size; i++) {
        char key[64];
        if (!slm_param_from(l.at[i].p, PARAM_FROM_REQUEST)) continue;
        used += (size_t)snprintf(buf + used, size - used, "%s %s", n++ ? "," : "",
                                 slm_param_key(l.at[i].p, key, sizeof key));
    }
    if (!n) snprintf(buf, size, "%s", "this request takes no fields");
}

/* e (naming a parameter of t, or not) as a 400 (413 for a text too long). */
static int reply_param_error(Reply *r, const Error *e, const ParamTable *t) {
    char text[sizeof e->message + 300], hint[1024];
    slm_error_text(e, ERROR_STYLE_JSON, text, sizeof text);
    if (e->param.kind == ERROR_PARAM_UNKNOWN && t)
        fields_hint(t, hint, sizeof hint);
    else
        snprintf(hint, sizeof hint, "%s", e->hint);
    return reply_error(r, e->param.kind == ERROR_PARAM_TOO_LONG ? 413 : 400, text, hint);
}

/* A request's strings: UTF-8 without NUL, as storylm tokenize reads a file (slm_utf8_validate). */
static int check_text(const char *text, size_t len, const char *what, Error *e) {
    return slm_utf8_validate(text, len, what, e);
}

int request_read(const ParamTable *t, const cJSON *body, void *params, ParamsGiven *given, char *scratch, size_t size,
                 Reply *r) {
    ParamRead how = {.front = PARAM_FROM_REQUEST,
                     .skip_served = true,
                     .max_text = SERVER_MAX_TEXT,
                     .max_string = PATH_MAX - 1,
                     .scratch = scratch,
                     .scratch_size = size,
                     .check_text = check_text};
    Error e = {0};
    if (slm_params_read_json(t, body, &how, params, given, &e) == 0) return 0;
    reply_param_error(r, &e, t);
    return -1;
}

int request_read_some(const ParamTable *t, const cJSON *body, void *params, char *scratch, size_t size, Reply *r) {
    ParamRead how = {.front = PARAM_FROM_REQUEST,
                     .allow_unknown = true,
                     .max_text = SERVER_MAX_TEXT,
                     .max_string = PATH_MAX - 1,
                     .scratch = scratch,
                     .scratch_size = size,
                     .check_text = check_text};
    Error e = {0};
    if (slm_params_read_json(t, body, &how, params, NULL, &e) == 0) return 0;
    reply_param_error(r, &e, t);
    return -1;
}

/* real is under folder (a real path): equal to it or below it. */
static int under(const char *real, const char *folder) {
    size_t n = strlen(folder);
    return strncmp(real, folder, n) == 0 && (real[n] == '/' || (n > 0 && folder[n - 1] == '/'));
}

int server_allowed_stories(const Server *s, const char *given, char *out, size_t size, Reply *r) {
    char *real = realpath(given, NULL);
    int ok = real && slm_data_file_exists(real) &&
             (s->default_stories_real[0] && strcmp(real, s->default_stories_real) == 0);
    for (int i = 0; real && !ok && i < s->n_data; i++) ok = under(real, s->data_real[i]) && slm_data_file_exists(real);
    char *uploads = real && !ok ? realpath(s->o.train_dir, NULL) : NULL; /* stories sent to /api/upload */
    if (uploads) ok = under(real, uploads) && slm_data_file_exists(real);
    free(uploads);
    if (ok) snprintf(out, size, "%s", real); /* the file checked, whatever a symlink points to later */
    free(real);
    if (ok) return 0;
    reply_error(r, 403, "that stories file is not in a folder the server was given",
                "name a file under a --data-dir folder of storylm serve (or the project's data/stories.txt)");
    return -1;
}
