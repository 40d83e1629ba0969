/* Whole-file reads and atomic writes: see include/storylm/fileio.h. */
#include "storylm/fileio.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int file_read_all(const char *path, size_t max_bytes, char **data, size_t *len, Error *e) {
    *data = NULL;
    *len = 0;
    FILE *f = xfopen(path, "rb", e);
    if (!f) return -1;
    struct stat st;
    if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
        fclose(f);
        return FAIL(e, "give the path of a regular file", "'%s' is not a regular file", path);
    }
    size_t size = (size_t)st.st_size;
    if (max_bytes && size > max_bytes) {
        fclose(f);
        return FAIL(e, NULL, "'%s' is too large (%zu bytes, at most %zu)", path, size, max_bytes);
    }
    char *buf = xmalloc(size + 1, e);
    if (!buf) {
        fclose(f);
        return -1;
    }
    size_t got = fread(buf, 1, size, f);
    int err = ferror(f);
    fclose(f);
    if (err || got != size) {
        free(buf);
        return FAIL(e, "check that the file is readable and not being written", "error reading '%s'", path);
    }
    buf[size] = '\0';
    *data = buf;
    *len = size;
    return 0;
}

int atomic_open(AtomicFile *a, const char *path, Error *e) {
    *a = (AtomicFile){0};
    size_t n = strlen(path) + 32;
    a->final_path = xmalloc(n, e);
    a->temp_path = a->final_path ? xmalloc(n, e) : NULL;
    if (!a->temp_path) {
        free(a->final_path);
        return -1;
    }
    strcpy(a->final_path, path);
    snprintf(a->temp_path, n, "%s.tmp.%ld", path, (long)getpid());
    a->f = xfopen(a->temp_path, "wb", e);
    if (!a->f) {
        error_prefix(e, "cannot write '%s': ", path);
        free(a->final_path);
        free(a->temp_path);
        *a = (AtomicFile){0};
        return -1;
    }
    return 0;
}

int atomic_write(AtomicFile *a, const void *data, size_t len, Error *e) {
    if (len && fwrite(data, 1, len, a->f) != len)
        return FAIL(e, "check free disk space", "error writing '%s': %s", a->temp_path, strerror(errno));
    return 0;
}

void atomic_abort(AtomicFile *a) {
    if (a->f) fclose(a->f);
    if (a->temp_path) unlink(a->temp_path);
    free(a->final_path);
    free(a->temp_path);
    *a = (AtomicFile){0};
}

int atomic_commit(AtomicFile *a, Error *e) {
    int bad = fflush(a->f) != 0 || fsync(fileno(a->f)) != 0;
    bad |= fclose(a->f) != 0;
    a->f = NULL;
    if (bad || rename(a->temp_path, a->final_path) != 0) {
        FAIL(e, "check free disk space and permissions", "cannot save '%s': %s", a->final_path, strerror(errno));
        atomic_abort(a);
        return -1;
    }
    free(a->final_path);
    free(a->temp_path);
    *a = (AtomicFile){0};
    return 0;
}

int file_write_atomic(const char *path, const void *data, size_t len, Error *e) {
    AtomicFile a;
    if (atomic_open(&a, path, e)) return -1;
    if (atomic_write(&a, data, len, e)) {
        atomic_abort(&a);
        return -1;
    }
    return atomic_commit(&a, e);
}

uint64_t hash64(const void *data, size_t len, uint64_t seed) {
    const unsigned char *p = data;
    uint64_t h = 14695981039346656037ULL ^ seed;
    for (size_t i = 0; i < len; i++) {
        h ^= p[i];
        h *= 1099511628211ULL;
    }
    return h;
}
