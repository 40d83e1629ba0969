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
    if (!memchr(data, 0, len) && !memmem(data, len, "\\u0000", 6)) return 0; /* the usual body: no scan */
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
        if (next < len && data[next] == ':') { /* a key: it names the strings after it */
            snprintf(key, sizeof key, "%.*s", (int)(n < 63 ? n : 63), (const char *)text);
        } else {
            rc = slm_utf8_validate((const char *)text, n, key, &e);
        }
    }
    free(text);
    if (!rc && memchr(data, 0, len)) rc = FAIL(&e, NULL, "the request body holds a NUL byte outside its strings");
    if (!rc) return 0;
    reply_error(r, 400, e.message, "send UTF-8 text without NUL characters");
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

/* A number's field given as null is refused, not taken for the default: a
 * page's empty box sends null (JSON has no NaN), and a run of the default
 * length is not what its user asked for. */
int field_double(const cJSON *body, const char *key, double *out, double lo, double hi, Reply *r) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(body, key);
    if (!v) return 0;
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble))
        return bad(r, 400, "send it as a JSON number", "\"%s\" must be a number", key);
    if (v->valuedouble < lo || v->valuedouble > hi) {
        char msg[256];
        snprintf(msg, sizeof msg, "\"%s\" is %.15g; it must be from %.15g to %.15g", key, v->valuedouble, lo, hi);
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
    if (!v) return 0;
    if (!cJSON_IsBool(v)) return bad(r, 400, "send true or false", "\"%s\" must be true or false", key);
    *out = cJSON_IsTrue(v);
    return 0;
}

/* One head of a field as a number or a name: its text appended to buf (size) at *used. */
static int head_text(const cJSON *h, char *buf, size_t size, size_t *used) {
    const char *sep = *used ? "," : "";
    if (cJSON_IsNumber(h) && h->valuedouble == floor(h->valuedouble) && fabs(h->valuedouble) <= 1e6)
        *used += (size_t)snprintf(buf + *used, *used < size ? size - *used : 0, "%s%d", sep, (int)h->valuedouble);
    else if (cJSON_IsString(h) && h->valuestring[0] && !strchr(h->valuestring, ','))
        *used += (size_t)snprintf(buf + *used, *used < size ? size - *used : 0, "%s%s", sep, h->valuestring);
    else
        return -1;
    return 0;
}

int field_heads(const cJSON *body, const char *key, char *buf, size_t size, const char **out, Reply *r) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(body, key), *h;
    size_t used = 0;
    buf[0] = '\0';
    if (!v) return 0;
    if (cJSON_IsString(v)) {
        if (field_string(body, key, out, 0, size - 1, r)) return -1;
        *out = (*out)[0] ? strcpy(buf, *out) : NULL;
        return 0;
    }
    int ok = 1;
    if (cJSON_IsArray(v)) { /* [3, 5], ["1:3", "2:5"] as well as "3,5" */
        cJSON_ArrayForEach(h, v) ok = ok && head_text(h, buf, size, &used) == 0;
    } else {
        ok = head_text(v, buf, size, &used) == 0;
    }
    if (!ok) return bad(r, 400, "like 3, \"2:3\", [3, 5] or \"1:3,2:5\" (layer:head)", "\"%s\" must name heads", key);
    if (used >= size) return bad(r, 400, NULL, "\"%s\" lists too many heads", key);
    *out = used ? buf : NULL;
    return 0;
}

int field_ablation(const cJSON *body, char *buf, size_t size, const char **ablate, const char **mode, Reply *r) {
    *ablate = NULL;
    *mode = "zero";
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(body, "ablate");
    if (cJSON_IsArray(v)) {
        if (field_heads(body, "ablate", buf, size, ablate, r)) return -1;
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
