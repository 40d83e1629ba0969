/* Numbers read from text (flags, files, metadata), checked: every whole
 * number in storylm is read here, so that none wraps silently (4294967297
 * read as an int32 is 1) or overflows. */
#ifndef STORYLM_PARSE_H
#define STORYLM_PARSE_H

/* What a parse gave: a number in range, no number at all, or a number out of
 * [min, max] (overflow included). */
enum { PARSE_OK = 0, PARSE_NOT_NUMBER = -1, PARSE_OUT_OF_RANGE = -2 };

/* A decimal whole number at the start of s (an optional '-' or '+', then
 * digits; no spaces): *out in [min, max], *end after its digits (end may be
 * NULL). Returns PARSE_OK, PARSE_NOT_NUMBER (no digits) or PARSE_OUT_OF_RANGE
 * (*end still after the digits). */
int slm_parse_integer_prefix(const char *s, const char **end, long long min, long long max, long long *out);

/* The whole of s is one whole number in [min, max]. */
int slm_parse_integer(const char *s, long long min, long long max, long long *out);

/* The same for an int (min and max within int's range). */
int slm_parse_int(const char *s, int min, int max, int *out);

/* The whole of s is one finite number (strtod's syntax, no spaces) in [min, max]. */
int slm_parse_double(const char *s, double min, double max, double *out);

/* x as the shortest decimal that reads back as exactly x ("0.1", not
 * "0.10000000000000001"), so that a pasted flag gives the same bits. */
void slm_format_exact(double x, char *buf, int size);

#endif
