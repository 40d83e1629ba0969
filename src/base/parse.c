/* Checked numbers from text: see include/storylm/parse.h. */
#include "storylm/parse.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

int slm_parse_integer_prefix(const char *s, const char **end, long long min, long long max, long long *out) {
    const char *p = s + (*s == '-' || *s == '+');
    if (end) *end = s;
    if (*p < '0' || *p > '9') return PARSE_NOT_NUMBER; /* strtoll would skip spaces: not here */
    char *stop;
    errno = 0;
    long long x = strtoll(s, &stop, 10);
    if (end) *end = stop;
    if (errno == ERANGE || x < min || x > max) return PARSE_OUT_OF_RANGE;
    *out = x;
    return PARSE_OK;
}

int slm_parse_integer(const char *s, long long min, long long max, long long *out) {
    const char *end;
    long long x;
    int rc = slm_parse_integer_prefix(s, &end, min, max, &x);
    if (rc == PARSE_NOT_NUMBER || *end) return PARSE_NOT_NUMBER;
    if (rc == PARSE_OK) *out = x;
    return rc;
}

int slm_parse_int(const char *s, int min, int max, int *out) {
    long long x;
    int rc = slm_parse_integer(s, min, max, &x);
    if (rc == PARSE_OK) *out = (int)x;
    return rc;
}

int slm_parse_double(const char *s, double min, double max, double *out) {
    char *end;
    if (!*s || *s == ' ' || *s == '\t' || *s == '\n') return PARSE_NOT_NUMBER;
    errno = 0;
    double x = strtod(s, &end);
    if (*end || end == s) return PARSE_NOT_NUMBER;
    if (!isfinite(x) || (errno == ERANGE && x != 0) || x < min || x > max) return PARSE_OUT_OF_RANGE;
    *out = x;
    return PARSE_OK;
}

void slm_format_exact(double x, char *buf, int size) {
    for (int digits = 1; digits <= 17; digits++) {
        snprintf(buf, size, "%.*g", digits, x);
        if (strtod(buf, NULL) == x) break;
    }
}
