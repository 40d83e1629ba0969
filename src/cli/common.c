/* What several verbs share: see common.h. */
#define _XOPEN_SOURCE 700 /* realpath */
#include "common.h"
#include "storylm/parse.h"
#include "storylm/probe_views.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "storylm/checkpoint.h"

int cli_default_threads(void) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > 256 ? 256 : (int)n;
}

int cli_set_threads(int n) {
    if (n <= 0) n = cli_default_threads();
    slm_model_threads_setup(n); /* OpenMP threads; OpenBLAS single-threaded inside them */
    return n;
}

const char *cli_model_path(const char *given, bool quiet) {
    /* Written once per process (a verb asks once), so a function-local
     * buffer is simpler for callers than an allocation to free. */
    static char shipped[PATH_MAX];
    const char *found;
    /* a shipped model by its short name (-m tinystories, -m transformer): a file of that name comes first */
    if (given && !slm_data_file_exists(given) &&
        slm_data_model_path(given, shipped, sizeof shipped, &found, NULL) == 0) {
        if (!quiet) fprintf(stderr, "storylm: --model %s: the shipped model %s\n", given, found);
        return found;
    }
    if (given) return given;
    bool is_shipped;
    const char *path = slm_default_model(shipped, sizeof shipped, &is_shipped);
    if (is_shipped) /* said even when quiet (--json): stdout stays clean, and a model the
                     * user did not train should never be used silently */
        fprintf(stderr, "storylm: no %s here; using the shipped model %s (trained on TinyStories)\n",
                DEFAULT_MODEL_PATH, path);
    else if (!quiet && slm_data_file_exists(path))
        fprintf(stderr, "storylm: using %s\n", path);
    return path;
}

const char *cli_vocab_path(const char *given, Error *e) {
    static char shipped[PATH_MAX]; /* as cli_model_path's: one vocabulary a process */
    const char *path;
    bool found;
    if (!given || slm_data_vocab_path(given, shipped, sizeof shipped, &path, &found, e)) return NULL;
    if (found) fprintf(stderr, "storylm: --vocab %s: the shipped vocabulary %s\n", given, path);
    return path;
}

int cli_fail(const Error *e) {
    slm_error_print(e, "storylm");
    return 1;
}

void cli_format_exact(double x, char *buf, int size) { slm_format_exact(x, buf, size); }

void cli_format_duration(double s, char *buf, int size) {
    if (!(s >= 0)) s = 0;
    long t = (long)(s + 0.5);
    if (t >= 3600)
        snprintf(buf, size, "%ldh%02ldm", t / 3600, t / 60 % 60);
    else if (t >= 60)
        snprintf(buf, size, "%ldm%02lds", t / 60, t % 60);
    else
        snprintf(buf, size, "%lds", t);
}

int cli_json_print(cJSON *j, Error *e) { return slm_report_json_write(j, stdout, false, e); }
