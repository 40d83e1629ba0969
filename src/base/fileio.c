/* Whole-file reads and atomic writes: see include/storylm/fileio.h. */
#define _GNU_SOURCE /* realpath, renameat2 */
#include "storylm/fileio.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h> /* flock */
#include <sys/stat.h>
#include <unistd.h>

#define OUTPUT_HINT "give the path of a regular file (or of one to create) in a folder you can write"

int slm_file_read_all(const char *path, size_t max_bytes, char **data, size_t *len, Error *e) {
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

/* ---- outputs: checked before any work ---------------------------------- */

/* The folder part of path ("." for a bare name) into buf. */
static void folder_of(const char *path, char *buf, size_t size) {
    const char *slash = strrchr(path, '/');
    if (!slash)
        snprintf(buf, size, ".");
    else if (slash == path)
        snprintf(buf, size, "/");
    else
        snprintf(buf, size, "%.*s", (int)(slash - path), path);
}

static int same_file(const struct stat *x, const struct stat *y) {
    return x->st_dev == y->st_dev && x->st_ino == y->st_ino;
}

int slm_output_check(const char *path, const char *const *inputs, int n_inputs, Error *e) {
    if (!path || !*path) return FAIL(e, OUTPUT_HINT, "an output path is empty");
    struct stat link = {0}, st;
    if (lstat(path, &link) == 0) {
        if (stat(path, &st) != 0)
            return FAIL(e, "point the link at a file, or give another path", "'%s' is a symbolic link to nothing",
                        path);
        if (S_ISDIR(st.st_mode))
            return FAIL(e, "give a file name inside the folder, e.g. DIR/model.safetensors",
                        "cannot write '%s': it is a directory", path);
        if (!S_ISREG(st.st_mode))
            return FAIL(e, OUTPUT_HINT, "cannot write '%s': it is not a regular file (a device, pipe or socket)", path);
        for (int i = 0; i < n_inputs; i++) {
            struct stat in;
            if (inputs[i] && stat(inputs[i], &in) == 0 && same_file(&in, &st))
                return FAIL(e, "give the output another name: writing it would destroy the input",
                            "the output '%s' is the same file as the input '%s'", path, inputs[i]);
        }
    } else if (errno != ENOENT) {
        return FAIL(e, OUTPUT_HINT, "cannot write '%s': %s", path, strerror(errno));
    }
    char folder[PATH_MAX], resolved[PATH_MAX];
    /* a save writes beside the link's target, so that is the folder to check */
    folder_of(S_ISLNK(link.st_mode) && realpath(path, resolved) ? resolved : path, folder, sizeof folder);
    if (stat(folder, &st) != 0 || !S_ISDIR(st.st_mode))
        return FAIL(e, "create the folder first", "cannot write '%s': there is no folder '%s'", path, folder);
    if (access(folder, W_OK | X_OK) != 0)
        return FAIL(e, "choose a folder you can write, or change its permissions",
                    "cannot write '%s': the folder '%s' is not writable", path, folder);
    return 0;
}

int slm_paths_same(const char *a, const char *b) {
    struct stat x, y;
    if (stat(a, &x) == 0 && stat(b, &y) == 0) return same_file(&x, &y);
    char fa[PATH_MAX], fb[PATH_MAX], ra[PATH_MAX], rb[PATH_MAX];
    folder_of(a, fa, sizeof fa);
    folder_of(b, fb, sizeof fb);
    const char *sa = strrchr(a, '/'), *sb = strrchr(b, '/');
    sa = sa ? sa + 1 : a;
    sb = sb ? sb + 1 : b;
    if (strcmp(sa, sb) != 0) return 0;
    return realpath(fa, ra) && realpath(fb, rb) ? strcmp(ra, rb) == 0 : strcmp(fa, fb) == 0;
}

/* Is pid a running process? A zombie (a process that ended and was not yet
 * collected, as mpirun leaves a stopped rank for a moment) is not: its lock
 * or temporary file is stale. Unknown (another user's) counts as running. */
static bool process_running(long pid) {
    if (kill((pid_t)pid, 0) != 0 && errno == ESRCH) return false;
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f) return true;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *paren = strrchr(buf, ')'); /* the name may hold spaces and parentheses */
    return !(paren && paren[1] == ' ' && (paren[2] == 'Z' || paren[2] == 'X'));
}

/* Removes "NAME.tmp.PID[.K]" files beside final whose process no longer
 * exists: what a kill -9 in the middle of a save leaves. A live PID's file
 * stays (a save under way, or a reused PID: left alone rather than risk a
 * live save); so does anything but a regular file. */
static void remove_stale_temps(const char *final) {
    char folder[PATH_MAX];
    folder_of(final, folder, sizeof folder);
    const char *slash = strrchr(final, '/'), *name = slash ? slash + 1 : final;
    size_t name_len = strlen(name);
    DIR *d = opendir(folder);
    if (!d) return;
    struct dirent *de;
    while ((de = readdir(d))) {
        const char *tail = de->d_name + name_len;
        if (strncmp(de->d_name, name, name_len) != 0 || strncmp(tail, ".tmp.", 5) != 0) continue;
        char *end;
        long pid = strtol(tail + 5, &end, 10);
        if (*end == '.' && end[1] >= '0' && end[1] <= '9') strtol(end + 1, &end, 10); /* a second try's ".K" */
        if (*end || end == tail + 5 || pid <= 0 || pid == (long)getpid()) continue;
        if (process_running(pid)) continue;
        char stale[PATH_MAX + 256];
        struct stat st;
        snprintf(stale, sizeof stale, "%s/%s", folder, de->d_name);
        if (lstat(stale, &st) == 0 && S_ISREG(st.st_mode)) unlink(stale);
    }
    closedir(d);
}

int slm_temp_open(const char *final, char **temp_path, Error *e) {
    size_t n = strlen(final) + 48;
    *temp_path = xmalloc(n, e);
    if (!*temp_path) return -1;
    /* O_EXCL and O_NOFOLLOW: a file or a link planted at the name is never
     * opened, so its target is never written; another name is tried instead. */
    for (int k = 0; k < 100; k++) {
        if (k == 0)
            snprintf(*temp_path, n, "%s.tmp.%ld", final, (long)getpid());
        else
            snprintf(*temp_path, n, "%s.tmp.%ld.%d", final, (long)getpid(), k);
        int fd = open(*temp_path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
        if (fd >= 0) return fd;
        if (errno != EEXIST && errno != ELOOP) break;
    }
    FAIL(e, OUTPUT_HINT, "cannot create a temporary file '%s': %s", *temp_path, strerror(errno));
    free(*temp_path);
    *temp_path = NULL;
    return -1;
}

int slm_atomic_open(AtomicFile *a, const char *path, Error *e) {
    *a = (AtomicFile){0};
    if (slm_output_check(path, NULL, 0, e)) return -1;
    /* Through a symbolic link to its target: renaming over the link would
     * replace the link itself with a file. */
    char resolved[PATH_MAX];
    struct stat link;
    const char *final = lstat(path, &link) == 0 && S_ISLNK(link.st_mode) && realpath(path, resolved) ? resolved : path;
    size_t n = strlen(final) + 1;
    a->final_path = xmalloc(n, e);
    if (!a->final_path) return -1;
    strcpy(a->final_path, final);
    remove_stale_temps(final);
    free(a->temp_path);
    int fd = slm_temp_open(final, &a->temp_path, e);
    a->f = fd >= 0 ? fdopen(fd, "wb") : NULL;
    if (fd >= 0 && !a->f) {
        FAIL(e, "free some memory and try again", "%s", strerror(errno));
        close(fd);
        unlink(a->temp_path);
    }
    if (!a->f) {
        slm_error_prefix(e, "cannot write '%s': ", path);
        free(a->final_path);
        free(a->temp_path);
        *a = (AtomicFile){0};
        return -1;
    }
    return 0;
}

int slm_atomic_write(AtomicFile *a, const void *data, size_t len, Error *e) {
    if (len && fwrite(data, 1, len, a->f) != len)
        return FAIL(e, "check free disk space", "error writing '%s': %s", a->temp_path, strerror(errno));
    return 0;
}

void slm_atomic_abort(AtomicFile *a) {
    if (a->f) fclose(a->f);
    if (a->temp_path) unlink(a->temp_path);
    free(a->final_path);
    free(a->temp_path);
    *a = (AtomicFile){0};
}

int slm_atomic_commit(AtomicFile *a, Error *e) {
    int bad = fflush(a->f) != 0 || fsync(fileno(a->f)) != 0;
    bad |= fclose(a->f) != 0;
    a->f = NULL;
    if (bad || rename(a->temp_path, a->final_path) != 0) {
        FAIL(e, "check free disk space and permissions", "cannot save '%s': %s", a->final_path, strerror(errno));
        slm_atomic_abort(a);
        return -1;
    }
    free(a->final_path);
    free(a->temp_path);
    *a = (AtomicFile){0};
    return 0;
}

/* Puts temp at name unless something is there: link() fails on an existing
 * name, where rename() would replace it. Where the file system has no hard
 * links, renameat2's RENAME_NOREPLACE does the same. 0 placed, 1 taken. */
static int place_new(const char *temp, const char *name, Error *e) {
    if (link(temp, name) == 0) return unlink(temp), 0;
    if (errno == EEXIST) return 1;
#ifdef __linux__ /* renameat2 is Linux's (not in WebAssembly's C library) */
    if (errno == EPERM || errno == EOPNOTSUPP || errno == ENOSYS) {
        if (renameat2(AT_FDCWD, temp, AT_FDCWD, name, RENAME_NOREPLACE) == 0) return 0;
        if (errno == EEXIST) return 1;
    }
#else /* WebAssembly: no hard links, no renameat2; one process writes there */
    if (access(name, F_OK) == 0) return 1;
    if (rename(temp, name) == 0) return 0;
#endif
    return FAIL(e, "check the folder's permissions", "cannot save '%s': %s", name, strerror(errno));
}

int slm_atomic_commit_new(AtomicFile *a, const char *name, Error *e) {
    if (a->f) {
        int bad = fflush(a->f) != 0 || fsync(fileno(a->f)) != 0;
        bad |= fclose(a->f) != 0;
        a->f = NULL;
        if (bad) {
            FAIL(e, "check free disk space", "cannot save '%s': %s", a->final_path, strerror(errno));
            slm_atomic_abort(a);
            return -1;
        }
    }
    int rc = place_new(a->temp_path, name ? name : a->final_path, e);
    if (rc == 1) return 1;
    if (rc) {
        slm_atomic_abort(a);
        return -1;
    }
    free(a->final_path);
    free(a->temp_path);
    *a = (AtomicFile){0};
    return 0;
}

int slm_file_write_new(const char *path, const void *data, size_t len, Error *e) {
    AtomicFile a;
    if (slm_atomic_open(&a, path, e)) return -1;
    int rc = slm_atomic_write(&a, data, len, e) ? -1 : slm_atomic_commit_new(&a, NULL, e);
    if (rc == 1) {
        FAIL(e, "give another name, or move that file away", "'%s' appeared while it was written: it is not replaced",
             path);
        slm_atomic_abort(&a);
    } else if (rc < 0 && a.temp_path) {
        slm_atomic_abort(&a);
    }
    return rc ? -1 : 0;
}

int slm_file_write_atomic(const char *path, const void *data, size_t len, Error *e) {
    AtomicFile a;
    if (slm_atomic_open(&a, path, e)) return -1;
    if (slm_atomic_write(&a, data, len, e)) {
        slm_atomic_abort(&a);
        return -1;
    }
    return slm_atomic_commit(&a, e);
}

/* ---- a lock beside an output ------------------------------------------- */

/* What a lock file holds, read from the open file: its PID when it is a
 * lock's content ("PID\n" and nothing else), 0 when empty (a lock being
 * taken, or nothing to lose), -1 when it holds anything else (not ours to
 * remove). */
static long lock_content(int fd) {
    char buf[32] = {0};
    ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
    if (n == 0) return 0;
    if (n < 2 || buf[n - 1] != '\n' || buf[0] < '0' || buf[0] > '9') return -1;
    char *end;
    long pid = strtol(buf, &end, 10);
    return end == buf + n - 1 && pid > 0 ? pid : -1;
}

#define NOT_A_LOCK_HINT "move that file away (it is not a lock storylm wrote), or write to another file"
#define HELD_HINT "wait for that run to finish, or write to another file"

/* 1, with e saying who holds the lock (pid 0: its PID not written yet). */
static int lock_held(const char *lock_path, const char *path, long pid, const char *hint, Error *e) {
    if (pid > 0)
        FAIL(e, hint, "'%s' is being written by another process (PID %ld holds '%s')", path, pid, lock_path);
    else
        FAIL(e, hint, "'%s' is being written by another process (it is taking the lock '%s')", path, lock_path);
    return 1;
}

/* The lock file open, flock()ed when flocked: 0 when it is ours to take, 1
 * when a live process holds it, -1 when it is not a lock. Free of flock, a
 * PID that runs is held all the same: an older storylm's lock, the lock of
 * this process's other run where the file system has no flock, or a PID
 * reused after a kill -9 (held, to be safe; the hint says how to free it). */
static int lock_judge(int fd, bool flocked, const char *lock_path, const char *path, Error *e) {
    long pid = lock_content(fd);
    if (pid < 0) return FAIL(e, NOT_A_LOCK_HINT, "'%s' exists and is not a lock: it is not removed", lock_path);
    if (pid > 0 && process_running(pid) && (pid != (long)getpid() || !flocked))
        return lock_held(lock_path, path, pid, HELD_HINT "; if no such run exists, remove the lock file", e);
    return 0;
}

/* One try at lock_path: 0 taken (*fd open and flock()ed, our PID in it),
 * 1 held, -1 an error, 2 the file was replaced meanwhile (try again). */
static int lock_try(const char *lock_path, const char *path, int *fd, Error *e) {
    *fd = open(lock_path, O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0644);
    if (*fd < 0 && errno == ELOOP)
        return FAIL(e, NOT_A_LOCK_HINT, "'%s' exists and is not a lock: it is not removed", lock_path);
    if (*fd < 0) return FAIL(e, OUTPUT_HINT, "cannot create the lock file '%s': %s", lock_path, strerror(errno));
    struct stat st, now;
    int rc = 0;
    if (fstat(*fd, &st) != 0 || !S_ISREG(st.st_mode))
        rc = FAIL(e, NOT_A_LOCK_HINT, "'%s' exists and is not a lock: it is not removed", lock_path);
    bool flocked = !rc && flock(*fd, LOCK_EX | LOCK_NB) == 0;
    if (!rc && !flocked && errno == EWOULDBLOCK) rc = lock_held(lock_path, path, lock_content(*fd), HELD_HINT, e);
    /* a lock released (and removed) while we opened it: open the new one */
    if (!rc && (lstat(lock_path, &now) != 0 || now.st_ino != st.st_ino || now.st_dev != st.st_dev)) rc = 2;
    if (!rc) rc = lock_judge(*fd, flocked, lock_path, path, e);
    char buf[32];
    int len = snprintf(buf, sizeof buf, "%ld\n", (long)getpid());
    if (!rc && (ftruncate(*fd, 0) != 0 || pwrite(*fd, buf, (size_t)len, 0) != len))
        rc = FAIL(e, "check free disk space", "cannot write the lock file '%s'", lock_path);
    if (rc) {
        close(*fd);
        *fd = -1;
    }
    return rc;
}

int slm_file_lock(FileLock *l, const char *path, Error *e) {
    *l = (FileLock){.fd = -1};
    /* keyed by the file itself: a link to a running run's output finds its lock */
    char resolved[PATH_MAX];
    if (!slm_path_resolve(path, resolved, sizeof resolved))
        return FAIL(e, OUTPUT_HINT, "cannot write '%s': its folder cannot be found", path);
    size_t n = strlen(resolved) + sizeof ".lock";
    char *lock_path = xmalloc(n, e);
    if (!lock_path) return -1;
    snprintf(lock_path, n, "%s.lock", resolved);
    int rc = 2, fd = -1;
    for (int attempt = 0; attempt < 100 && rc == 2; attempt++) rc = lock_try(lock_path, path, &fd, e);
    if (rc == 2) rc = FAIL(e, "try again", "cannot take the lock '%s': it keeps being replaced", lock_path);
    if (rc) {
        free(lock_path);
        return rc;
    }
    l->path = lock_path;
    l->fd = fd;
    return 0;
}

char *slm_file_lock_path(const char *path, Error *e) {
    char resolved[PATH_MAX];
    const char *base = slm_path_resolve(path, resolved, sizeof resolved) ? resolved : path;
    size_t n = strlen(base) + sizeof ".lock";
    char *lock_path = xmalloc(n, e);
    if (lock_path) snprintf(lock_path, n, "%s.lock", base);
    return lock_path;
}

void slm_file_unlock(FileLock *l) {
    /* removed while still held, so that no one takes a lock on a file on its way out */
    struct stat st, now;
    if (l->path && l->fd >= 0 && fstat(l->fd, &st) == 0 && lstat(l->path, &now) == 0 && st.st_ino == now.st_ino &&
        st.st_dev == now.st_dev && lock_content(l->fd) == (long)getpid())
        unlink(l->path);
    if (l->path && l->fd >= 0) close(l->fd);
    free(l->path);
    *l = (FileLock){.fd = -1};
}

uint64_t slm_hash64_more(uint64_t h, const void *data, size_t len) {
    const unsigned char *p = data;
    for (size_t i = 0; i < len; i++) {
        h ^= p[i];
        h *= 1099511628211ULL; /* FNV's 64-bit prime */
    }
    return h;
}

uint64_t slm_hash64(const void *data, size_t len, uint64_t seed) {
    return slm_hash64_more(SLM_HASH64_BASIS ^ seed, data, len);
}

/* A link to a file not there yet (a run's output before its first save):
 * its target, read relative to the link's folder, into buf. */
static bool link_target(const char *path, char *buf, size_t size) {
    char target[PATH_MAX];
    ssize_t n = readlink(path, target, sizeof target - 1);
    if (n <= 0) return false;
    target[n] = '\0';
    const char *slash = strrchr(path, '/');
    if (target[0] == '/' || !slash) return snprintf(buf, size, "%s", target) < (int)size;
    return snprintf(buf, size, "%.*s/%s", (int)(slash - path), path, target) < (int)size;
}

bool slm_path_resolve(const char *path, char *buf, size_t size) {
    char tmp[PATH_MAX], next[PATH_MAX];
    if (realpath(path, tmp)) return snprintf(buf, size, "%s", tmp) < (int)size;
    struct stat st;
    for (int depth = 0; depth < 16 && lstat(path, &st) == 0 && S_ISLNK(st.st_mode); depth++) {
        if (!link_target(path, next, sizeof next)) return false;
        snprintf(tmp, sizeof tmp, "%s", next);
        path = tmp;
    }
    const char *slash = strrchr(path, '/');
    char folder[PATH_MAX];
    if (!slash)
        snprintf(folder, sizeof folder, ".");
    else if (slash == path)
        snprintf(folder, sizeof folder, "/");
    else
        snprintf(folder, sizeof folder, "%.*s", (int)(slash - path), path);
    const char *name = slash ? slash + 1 : path;
    if (!*name || !strcmp(name, ".") || !strcmp(name, "..") || !realpath(folder, tmp)) return false;
    return snprintf(buf, size, "%s%s%s", tmp, strcmp(tmp, "/") ? "/" : "", name) < (int)size;
}
