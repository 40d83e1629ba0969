/* Data files: see data_files.h. */
#define _XOPEN_SOURCE 700 /* realpath */
#include "storylm/data_files.h"

#include <limits.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

bool slm_data_file_exists(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

#ifndef STORYLM_DATA_DIR /* CMakeLists.txt sets both from the install prefix */
#define STORYLM_DATA_DIR "/usr/local/share/storylm"
#endif
#ifndef STORYLM_DATA_FROM_BIN
#define STORYLM_DATA_FROM_BIN "../share/storylm"
#endif
#define STORYLM_SOURCE_MARKER "storylm-source.txt" /* CMakeLists.txt writes it in the build folder */

/* The executable's folder into buf (size); false when it cannot be known. */
static bool exe_dir(char *buf, size_t size) {
    ssize_t n = readlink("/proc/self/exe", buf, size - 1);
    if (n <= 0 || (size_t)n >= size - 1) return false;
    buf[n] = '\0';
    char *slash = strrchr(buf, '/');
    if (!slash) return false;
    *slash = '\0';
    return true;
}

/* The source tree a build tree's executable was built from, as CMake wrote it
 * beside the executable (a build outside the source tree finds the shipped
 * models there); false for an installed executable, which has no such file. */
static bool source_tree(const char *dir, char *buf, size_t size) {
    char marker[4200];
    snprintf(marker, sizeof marker, "%s/" STORYLM_SOURCE_MARKER, dir);
    FILE *f = fopen(marker, "r");
    if (!f) return false;
    bool ok = fgets(buf, (int)size, f) != NULL;
    fclose(f);
    buf[ok ? strcspn(buf, "\n") : 0] = '\0';
    return buf[0] == '/';
}

/* Place i where rel is looked for, into buf; false past the last one. The
 * first four need the executable's folder (dir, or NULL when unknown); a
 * place that does not apply is left empty. */
static bool source_place(int i, const char *dir, const char *rel, char *buf, size_t size) {
    const char *beside[] = {"../", "", STORYLM_DATA_FROM_BIN "/"};
    char tree[4096];
    buf[0] = '\0'; /* skipped */
    if (i < 3) {
        if (dir) snprintf(buf, size, "%s/%s%s", dir, beside[i], rel);
    } else if (i == 3) {
        if (dir && source_tree(dir, tree, sizeof tree)) snprintf(buf, size, "%s/%s", tree, rel);
    } else if (i == 4) {
        snprintf(buf, size, "%s/%s", STORYLM_DATA_DIR, rel);
    }
    return i <= 4;
}

bool slm_data_file_find(const char *rel, char *buf, size_t size) {
    char dir[4096], candidate[8192], resolved[PATH_MAX];
    bool have_dir = exe_dir(dir, sizeof dir);
    for (int i = 0; source_place(i, have_dir ? dir : NULL, rel, candidate, sizeof candidate); i++) {
        if (!candidate[0] || !slm_data_file_exists(candidate)) continue;
        /* "…/models/x" rather than "…/build/../models/x" in what we tell the user */
        const char *path = realpath(candidate, resolved) ? resolved : candidate;
        if (strlen(path) >= size) return false;
        strcpy(buf, path);
        return true;
    }
    return false;
}

void slm_data_file_places(const char *rel, char *buf, size_t size) {
    char dir[4096], candidate[8192];
    bool have_dir = exe_dir(dir, sizeof dir);
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; source_place(i, have_dir ? dir : NULL, rel, candidate, sizeof candidate); i++) {
        if (!candidate[0]) continue;
        int n = snprintf(buf + used, size - used, "%s%s", used ? ", " : "", candidate);
        if (n < 0 || (size_t)n >= size - used) return; /* cut short: the first places matter most */
        used += (size_t)n;
    }
}

bool slm_data_file_shipped_model(char *buf, size_t size) { return slm_data_file_find(SHIPPED_MODEL_REL, buf, size); }

/* A relative path that is not there, in a folder that is not there either: a
 * file that cannot be read nor written here, so one of the source tree's. */
static bool nowhere_here(const char *path) {
    const char *slash = strrchr(path, '/');
    if (path[0] == '/' || !slash || slm_data_file_exists(path)) return false;
    char dir[4096];
    struct stat st;
    snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
    return stat(dir, &st) != 0;
}

int slm_data_vocab_path(const char *given, char *buf, size_t size, const char **path, bool *found, Error *e) {
    *path = given;
    *found = false;
    bool shipped = strcmp(given, SHIPPED_VOCAB_NAME) == 0;
    if (!shipped && !nowhere_here(given)) return 0;
    if (slm_data_file_find(shipped ? SHIPPED_VOCAB_REL : given, buf, size)) {
        *path = buf;
        *found = true;
        return 0;
    }
    if (!shipped) return 0; /* said by whoever opens it */
    char places[2048];
    slm_data_file_places(SHIPPED_VOCAB_REL, places, sizeof places);
    return FAIL(e, "give the path of a vocab.txt, or reinstall storylm",
                "--vocab shipped: no shipped vocabulary found (looked in %s)", places);
}

int slm_data_model_path(const char *given, char *buf, size_t size, const char **path, Error *e) {
    *path = given;
    if (slm_data_file_exists(given)) return 0;
    /* a short name: models/NAME, models/NAME.safetensors, models/tinystories-NAME.safetensors */
    const char *forms[] = {"models/%s", "models/%s.safetensors", "models/tinystories-%s.safetensors"};
    char rel[512];
    for (size_t i = 0; i < sizeof forms / sizeof forms[0] && !strchr(given, '/'); i++) {
        snprintf(rel, sizeof rel, forms[i], given);
        if (slm_data_file_find(rel, buf, size)) {
            *path = buf;
            return 0;
        }
    }
    char places[2048];
    slm_data_file_places("models", places, sizeof places);
    return FAIL(e,
                "give a model file, or a shipped model by its short name: tinystories (the default), transformer, "
                "window8, layers2, induction, ... (the files models/tinystories-NAME.safetensors)",
                "no model file '%s', nor a shipped model of that name (looked in %s)", given, places);
}
