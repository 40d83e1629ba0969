/* What several verbs share: see common.h. */
#define _XOPEN_SOURCE 700 /* realpath */
#include "common.h"

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
    model_threads_setup(n); /* OpenMP threads; OpenBLAS single-threaded inside them */
    return n;
}

static bool file_exists(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* The shipped model, models/tinystories.safetensors, looked for next to the
 * executable: <exe dir>/../models (build/storylm in the source tree) or
 * <exe dir>/models. Writes the path into buf; false when neither exists. */
static bool find_shipped_model(char *buf, size_t size) {
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) return false;
    exe[n] = '\0';
    char *slash = strrchr(exe, '/');
    if (!slash) return false;
    *slash = '\0';
    const char *tails[] = {"../models/" SHIPPED_MODEL_NAME, "models/" SHIPPED_MODEL_NAME};
    char candidate[8192], resolved[PATH_MAX];
    for (size_t i = 0; i < sizeof tails / sizeof tails[0]; i++) {
        snprintf(candidate, sizeof candidate, "%s/%s", exe, tails[i]);
        if (!file_exists(candidate)) continue;
        /* "…/models/x" rather than "…/build/../models/x" in what we tell the user */
        const char *path = realpath(candidate, resolved) ? resolved : candidate;
        if (strlen(path) >= size) return false;
        strcpy(buf, path);
        return true;
    }
    return false;
}

const char *cli_model_path(const char *given, bool quiet) {
    /* Written once per process (a verb asks once), so a function-local
     * buffer is simpler for callers than an allocation to free. */
    static char shipped[PATH_MAX];
    if (given) return given;
    if (file_exists(DEFAULT_MODEL_PATH)) {
        if (!quiet) fprintf(stderr, "storylm: using %s\n", DEFAULT_MODEL_PATH);
        return DEFAULT_MODEL_PATH;
    }
    if (find_shipped_model(shipped, sizeof shipped)) {
        /* said even when quiet (--json): stdout stays clean, and a model the
         * user did not train should never be used silently */
        fprintf(stderr, "storylm: no %s here; using the shipped model %s (trained on TinyStories)\n",
                DEFAULT_MODEL_PATH, shipped);
        return shipped;
    }
    return DEFAULT_MODEL_PATH; /* the loader's error says how to get one */
}

int cli_load_model(LoadedModel *lm, const char *path, Error *e) {
    *lm = (LoadedModel){.path = path};
    struct stat st;
    if (stat(path, &st) != 0) /* anything else there (a folder, say) the loader names */
        return FAIL(e, "train one with 'storylm train STORIES', or give --model FILE", "no model file '%s'", path);
    if (checkpoint_load_model(path, &lm->model, &lm->vocab, &lm->meta, e)) return -1;
    if (tokenizer_from_text(&lm->tokenizer, lm->vocab, strlen(lm->vocab), lm->model.cfg.vocab_size, e)) {
        error_prefix(e, "the vocabulary in '%s' is unusable: ", path);
        cli_free_model(lm);
        return -1;
    }
    return 0;
}

void cli_free_model(LoadedModel *lm) {
    model_free(&lm->model);
    tokenizer_free(&lm->tokenizer);
    metadata_free(&lm->meta);
    free(lm->vocab);
    *lm = (LoadedModel){0};
}

int cli_parse_heads(const char *list, int n_heads, uint32_t *mask, Error *e) {
    *mask = 0;
    const char *p = list;
    if (!*p) return FAIL(e, "give head numbers like 3,5", "empty head list");
    while (*p) {
        char *end;
        long h = strtol(p, &end, 10);
        if (end == p || (*end && *end != ','))
            return FAIL(e, "give head numbers separated by commas, like 3,5", "cannot read head list '%s'", list);
        if (h < 0 || h >= n_heads)
            return FAIL(e, "heads are numbered from 0", "head %ld is out of range: this model has heads 0 to %d", h,
                        n_heads - 1);
        *mask |= 1u << h;
        p = *end ? end + 1 : end;
    }
    return 0;
}

int cli_fail(const Error *e) {
    error_print(e, "storylm");
    return 1;
}

void cli_format_duration(double s, char *buf, int size) {
    if (!(s >= 0)) s = 0;
    long t = (long)(s + 0.5);
    if (t >= 3600) snprintf(buf, size, "%ldh%02ldm", t / 3600, t / 60 % 60);
    else if (t >= 60) snprintf(buf, size, "%ldm%02lds", t / 60, t % 60);
    else snprintf(buf, size, "%lds", t);
}
