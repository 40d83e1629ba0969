/* Errors and checked calls: see include/storylm/error.h. */
#include "storylm/error.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int slm_error_set(Error *e, const char *file, int line, const char *hint, const char *fmt, ...) {
    if (!e) return -1;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->message, sizeof e->message, fmt, ap);
    va_end(ap);
    snprintf(e->hint, sizeof e->hint, "%s", hint ? hint : "");
    e->file = file;
    e->line = line;
    e->param = (ErrorParam){0}; /* an Error used again names no parameter of before */
    return -1;
}

/* src into dst (size), cut where it must be at a whole character (never
 * within a UTF-8 sequence: a front end shows it). */
static void copy_text(char *dst, size_t size, const char *src) {
    size_t n = strlen(src ? src : "");
    if (n >= size) {
        n = size - 1;
        while (n > 0 && ((unsigned char)src[n] & 0xC0) == 0x80) n--;
    }
    if (n) memcpy(dst, src, n);
    dst[n] = '\0';
}

void slm_error_set_param(Error *e, ErrorParamKind kind, const char *name, const char *key, const char *value, int text,
                         int positional) {
    if (!e) return;
    ErrorParam *p = &e->param;
    *p = (ErrorParam){.kind = kind, .has_value = value != NULL, .text = text != 0, .positional = positional != 0};
    copy_text(p->name, sizeof p->name, name);
    copy_text(p->key, sizeof p->key, key);
    copy_text(p->value, sizeof p->value, value);
}

/* s quoted for style: 'it\'s' on the command line and in Python (as repr
 * would, near enough), "it's" in JSON (control characters as \u00XX); cut
 * where it must be, between whole characters. */
static void quote(const char *s, char q, char *buf, size_t size) {
    size_t n = 0;
    if (n + 1 < size) buf[n++] = q;
    while (*s) {
        unsigned char c = (unsigned char)*s;
        size_t seq = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
        int escaped = c == (unsigned char)q || c == '\\'; /* a backslash before it; not a 2-byte character */
        size_t out = c < 0x20 ? 6 : escaped ? 2 : seq;
        if (n + out + 2 >= size) break; /* the character whole, and the closing quote, or nothing */
        size_t k = 1;
        if (c < 0x20)
            n += (size_t)snprintf(buf + n, size - n, q == '"' ? "\\u%04x" : "\\x%02x", c);
        else if (escaped)
            buf[n++] = '\\', buf[n++] = (char)c;
        else
            for (k = 0; k < seq && s[k]; k++) buf[n++] = s[k];
        s += k;
    }
    if (n + 1 < size) buf[n++] = q;
    buf[n < size ? n : size - 1] = '\0';
}

/* The parameter and its value in style's words: --top-k -1, top_k=-1, "top_k": -1. */
static void param_words(const ErrorParam *p, ErrorStyle style, char *buf, size_t size) {
    char value[sizeof p->value + 32] = "", key[sizeof p->key + 8];
    int cli = style == ERROR_STYLE_CLI;
    if (p->has_value && p->text)
        quote(p->value, style == ERROR_STYLE_JSON ? '"' : '\'', value, sizeof value);
    else if (p->has_value)
        snprintf(value, sizeof value, "%s", p->value);
    /* a text the shell needs no quotes for is shown bare on the command line: --ablate-mode half */
    if (cli && p->has_value && p->text && p->value[0] && !strpbrk(p->value, " \t\n'\"\\$`*?"))
        snprintf(value, sizeof value, "%s", p->value);
    if (cli && p->positional)
        snprintf(buf, size, "%s", p->name);
    else if (cli)
        snprintf(buf, size, "--%s%s%s", p->name, p->has_value ? " " : "", value);
    else if (style == ERROR_STYLE_PYTHON)
        snprintf(buf, size, "%s=%s", p->key, value);
    else {
        quote(p->key, '"', key, sizeof key);
        snprintf(buf, size, "%s%s%s", key, p->has_value ? ": " : "", value);
    }
}

const char *slm_error_text(const Error *e, ErrorStyle style, char *buf, size_t size) {
    const ErrorParam *p = &e->param;
    const char *msg = e->message[0] ? e->message : "unknown error";
    if (p->kind == ERROR_PARAM_NONE) {
        snprintf(buf, size, "%s", msg);
        return buf;
    }
    char words[256], near[64] = "";
    if (p->kind == ERROR_PARAM_UNKNOWN) { /* the front ends' own refusals of a name they do not know */
        ErrorParam named = *p, nearest = *p;
        named.has_value = nearest.has_value = 0;
        snprintf(nearest.name, sizeof nearest.name, "%s", p->near);
        snprintf(nearest.key, sizeof nearest.key, "%s", p->near);
        param_words(&named, style, words, sizeof words);
        if (p->near[0]) param_words(&nearest, style, near, sizeof near);
        const char *what = style == ERROR_STYLE_CLI      ? "unknown option '%s'"
                           : style == ERROR_STYLE_PYTHON ? "no option %s"
                                                         : "unknown field %s";
        int n = snprintf(buf, size, what, words);
        if (near[0] && n >= 0 && (size_t)n < size) snprintf(buf + n, size - (size_t)n, "; did you mean %s?", near);
        return buf;
    }
    ErrorParam shown = *p;
    if (p->kind == ERROR_PARAM_MISSING || p->kind == ERROR_PARAM_TOO_LONG) shown.has_value = 0; /* none, or huge */
    param_words(&shown, style, words, sizeof words);
    if (p->kind == ERROR_PARAM_MISSING)
        snprintf(buf, size, "missing %s", words);
    else
        snprintf(buf, size, msg[0] == ':' ? "%s%s" : "%s %s", words, msg); /* "--ablate 3,12: head 12 is ..." */
    return buf;
}

void slm_error_prefix(Error *e, const char *fmt, ...) {
    if (!e) return;
    char prefix[512], old[sizeof e->message];
    if (e->param.kind != ERROR_PARAM_NONE) { /* the parameter goes into the message, after the prefix */
        slm_error_text(e, ERROR_STYLE_CLI, old, sizeof old);
        memcpy(e->message, old, sizeof old);
        e->param = (ErrorParam){0};
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    memcpy(old, e->message, sizeof old);
    size_t n = strlen(prefix);
    if (n >= sizeof e->message) n = sizeof e->message - 1;
    memcpy(e->message, prefix, n);
    size_t rest = strnlen(old, sizeof old - 1);
    if (rest > sizeof e->message - 1 - n) rest = sizeof e->message - 1 - n;
    memcpy(e->message + n, old, rest);
    e->message[n + rest] = '\0';
}

void slm_error_print(const Error *e, const char *program) {
    char text[sizeof e->message + 300];
    fprintf(stderr, "%s: error: %s\n", program, slm_error_text(e, ERROR_STYLE_CLI, text, sizeof text));
    if (e->hint[0]) fprintf(stderr, "---> HINT: %s\n", e->hint);
    if (getenv("STORYLM_DEBUG") && e->file) fprintf(stderr, "     (raised at %s:%d)\n", e->file, e->line);
}

void *slm_xmalloc_at(size_t n, Error *e, const char *file, int line) {
    void *p = malloc(n ? n : 1);
    if (!p)
        slm_error_set(e, file, line, "free some memory or use a smaller input", "out of memory allocating %zu bytes",
                      n);
    return p;
}

void *slm_xcalloc_at(size_t count, size_t size, Error *e, const char *file, int line) {
    void *p = calloc(count ? count : 1, size ? size : 1);
    if (!p)
        slm_error_set(e, file, line, "free some memory or use a smaller input",
                      "out of memory allocating %zu x %zu bytes", count, size);
    return p;
}

void *slm_xrealloc_at(void *old, size_t n, Error *e, const char *file, int line) {
    void *p = realloc(old, n ? n : 1);
    if (!p)
        slm_error_set(e, file, line, "free some memory or use a smaller input", "out of memory growing to %zu bytes",
                      n);
    return p;
}

FILE *slm_xfopen_at(const char *path, const char *mode, Error *e, const char *file, int line) {
    struct stat st;
    if (mode[0] == 'r' && stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
        slm_error_set(e, file, line, "give the path of a file, not of a folder", "'%s' is a directory", path);
        return NULL;
    }
    /* Opening a named pipe blocks until someone writes to it: refuse it (and
     * sockets, devices) before opening rather than hang. */
    if (mode[0] == 'r' && stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
        slm_error_set(e, file, line, "give the path of a regular file",
                      "'%s' is not a regular file (a pipe or a device)", path);
        return NULL;
    }
    FILE *f = fopen(path, mode);
    if (!f) {
        int err = errno;
        const char *hint = mode[0] == 'r' ? "check the path and that the file exists"
                                          : "check that the folder exists and that you may write to it";
        slm_error_set(e, file, line, hint, "cannot open '%s' for %s: %s", path, mode[0] == 'r' ? "reading" : "writing",
                      strerror(err));
    }
    return f;
}
