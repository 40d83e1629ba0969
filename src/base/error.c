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
    return -1;
}

void slm_error_prefix(Error *e, const char *fmt, ...) {
    if (!e) return;
    char prefix[512], old[sizeof e->message];
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
    fprintf(stderr, "%s: error: %s\n", program, e->message[0] ? e->message : "unknown error");
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
