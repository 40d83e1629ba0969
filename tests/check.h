/* A tiny test harness: CHECK records a failure and goes on; the test's main
 * returns check_report(), which is non-zero when anything failed. */
#ifndef STORYLM_TEST_CHECK_H
#define STORYLM_TEST_CHECK_H

#include <stdio.h>

int check_at(int ok, const char *expr, const char *file, int line);
int check_close_at(double got, double want, double rel, double abs_tol, const char *expr, const char *file, int line);
int check_report(void);
/* A scratch folder for this test (created): $STORYLM_TEST_TMP or /tmp. */
const char *check_tmpdir(void);
/* $STORYLM_SOURCE_DIR/rel, for fixtures and data. */
const char *check_source_path(const char *rel);

#define CHECK(cond) check_at(!!(cond), #cond, __FILE__, __LINE__)
#define CHECK_CLOSE(got, want, rel, abs_tol) \
    check_close_at((got), (want), (rel), (abs_tol), #got " ~ " #want, __FILE__, __LINE__)

#endif
