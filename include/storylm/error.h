/* Errors and checked calls.
 *
 * Library functions never print or exit: they fill an Error with what went
 * wrong, where (source file and line), and a hint saying what the user can do,
 * and return -1 (or NULL). The command-line front end prints it. */
#ifndef STORYLM_ERROR_H
#define STORYLM_ERROR_H

#include <stddef.h>
#include <stdio.h>

typedef struct Error {
    char message[1024]; /* "cannot open 'x.txt': No such file or directory" */
    char hint[512];     /* "run storylm vocab first", or empty */
    const char *file;   /* source file that raised it */
    int line;
} Error;

/* Fills e (which may be NULL) and returns -1, so callers can `return FAIL(...)`. */
int slm_error_set(Error *e, const char *file, int line, const char *hint, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
#define FAIL(e, hint, ...) slm_error_set((e), __FILE__, __LINE__, (hint), __VA_ARGS__)

/* Prefixes the message of an error already set with more context ("reading x: "). */
void slm_error_prefix(Error *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Prints "storylm: error: MESSAGE" and "---> HINT: ..." to stderr; with
 * STORYLM_DEBUG set in the environment also the source location. */
void slm_error_print(const Error *e, const char *program);

/* Checked calls: on failure they set e and return NULL. */
void *slm_xmalloc_at(size_t n, Error *e, const char *file, int line);
void *slm_xcalloc_at(size_t count, size_t size, Error *e, const char *file, int line);
void *slm_xrealloc_at(void *p, size_t n, Error *e, const char *file, int line);
FILE *slm_xfopen_at(const char *path, const char *mode, Error *e, const char *file, int line);
#define xmalloc(n, e) slm_xmalloc_at((n), (e), __FILE__, __LINE__)
#define xcalloc(c, s, e) slm_xcalloc_at((c), (s), (e), __FILE__, __LINE__)
#define xrealloc(p, n, e) slm_xrealloc_at((p), (n), (e), __FILE__, __LINE__)
#define xfopen(path, mode, e) slm_xfopen_at((path), (mode), (e), __FILE__, __LINE__)

#endif
