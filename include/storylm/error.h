/* Errors and checked calls.
 *
 * Library functions never print or exit: they fill an Error with what went
 * wrong, where (source file and line), and a hint saying what the user can do,
 * and return -1 (or NULL). The command-line front end prints it. */
#ifndef STORYLM_ERROR_H
#define STORYLM_ERROR_H

#include <stddef.h>
#include <stdio.h>

/* What an error says of a parameter it names (params.h). */
typedef enum {
    ERROR_PARAM_NONE = 0,
    ERROR_PARAM_VALUE,   /* a value out of range, not among the choices, empty */
    ERROR_PARAM_TYPE,    /* a value of the wrong type: "x" where a number goes */
    ERROR_PARAM_UNKNOWN, /* no parameter of that name (near: the nearest) */
    ERROR_PARAM_MISSING, /* a required one not given */
    ERROR_PARAM_TOO_LONG /* a text longer than a request may send */
} ErrorParamKind;

/* The parameter an error is about: each front end says it in its own words
 * (slm_error_text), and the message then holds what follows it ("is out of
 * range (0 to 100)"; one that starts with ':' follows the value directly:
 * "--ablate 3,12: head 12 is out of range"). */
typedef struct ErrorParam {
    ErrorParamKind kind; /* ERROR_PARAM_NONE: the error names no parameter */
    char name[48];       /* the command line's name without dashes ("top-k"; a positional's "TEXT") */
    char key[48];        /* a request's field and Python's keyword ("top_k") */
    char value[96];      /* the value given, as text ("" with has_value 0) */
    char near[48];       /* ERROR_PARAM_UNKNOWN: the nearest known key, or "" */
    unsigned char has_value, text, positional; /* value is a text (quoted by JSON, repr'd by Python) */
} ErrorParam;

typedef struct Error {
    char message[1024]; /* "cannot open 'x.txt': No such file or directory" */
    char hint[512];     /* "run storylm vocab first", or empty */
    const char *file;   /* source file that raised it */
    int line;
    ErrorParam param; /* the parameter the message is about, if any */
} Error;

/* Fills e (which may be NULL) and returns -1, so callers can `return FAIL(...)`. */
int slm_error_set(Error *e, const char *file, int line, const char *hint, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
#define FAIL(e, hint, ...) slm_error_set((e), __FILE__, __LINE__, (hint), __VA_ARGS__)

/* Prefixes the message of an error already set with more context ("reading x: "). */
void slm_error_prefix(Error *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Makes e, already set, name a parameter (ErrorParam's fields); value NULL: none. */
void slm_error_set_param(Error *e, ErrorParamKind kind, const char *name, const char *key, const char *value, int text,
                         int positional);

/* How a front end says a parameter: the command line's `--temperature 200`,
 * Python's `temperature=200`, a request's `"temperature": 200`. */
typedef enum { ERROR_STYLE_CLI, ERROR_STYLE_PYTHON, ERROR_STYLE_JSON } ErrorStyle;
/* e's message, its parameter (if any) said in style's words, into buf (size):
 * "--top-k -1 is out of range (0 to 1000000)", "unknown field \"tempreature\";
 * did you mean \"temperature\"?". Returns buf. */
const char *slm_error_text(const Error *e, ErrorStyle style, char *buf, size_t size);

/* Prints "storylm: error: MESSAGE" (a parameter in the command line's words)
 * and "---> HINT: ..." to stderr; with STORYLM_DEBUG set in the environment
 * also the source location. */
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
