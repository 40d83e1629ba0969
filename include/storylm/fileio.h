/* Whole-file reads and atomic writes. */
#ifndef STORYLM_FILEIO_H
#define STORYLM_FILEIO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "storylm/error.h"

/* Reads a regular file whole into *data (NUL-terminated, caller frees).
 * Refuses directories and files larger than max_bytes (0 = no limit). */
int slm_file_read_all(const char *path, size_t max_bytes, char **data, size_t *len, Error *e);

/* Writes data to path atomically: into "path.tmp.PID", fsync, rename over path.
 * An interrupted write never leaves a half-written file at path. An existing
 * path must be a regular file (slm_output_check); a symbolic link is written
 * through, to its target, never replaced. Temporaries of earlier saves whose
 * process no longer exists (a kill -9 mid-save) are removed. */
int slm_file_write_atomic(const char *path, const void *data, size_t len, Error *e);

/* An atomic writer for output produced in pieces (a model file, say). */
typedef struct AtomicFile {
    FILE *f;
    char *final_path;
    char *temp_path;
} AtomicFile;
int slm_atomic_open(AtomicFile *a, const char *path, Error *e);
int slm_atomic_write(AtomicFile *a, const void *data, size_t len, Error *e);
int slm_atomic_commit(AtomicFile *a, Error *e); /* fsync + rename; frees a */
void slm_atomic_abort(AtomicFile *a);           /* removes the temporary file; frees a */
/* fsync, then the file put at name (NULL: the path it was opened for) only
 * if nothing is there, never over a file: 0 placed (frees a); 1 the name is
 * taken (a is kept: try another name, or abort); -1 an error (frees a). */
int slm_atomic_commit_new(AtomicFile *a, const char *name, Error *e);
/* slm_file_write_atomic for a file that must be new: refused, and nothing
 * replaced, when path appeared meanwhile (written by another process). */
int slm_file_write_new(const char *path, const void *data, size_t len, Error *e);

/* Before any work: can path be an output of a command that reads inputs[0..n)
 * (NULL entries skipped)? Refuses an output that is the same file as an input
 * (device and inode, whatever the names or links), an existing folder,
 * device, pipe or socket, a symbolic link to nothing, and a path whose folder
 * is missing or not writable. slm_atomic_open checks the same without inputs. */
int slm_output_check(const char *path, const char *const *inputs, int n_inputs, Error *e);

/* Do paths a and b name one file: the same inode when both exist, else the
 * same name in the same folder? */
int slm_paths_same(const char *a, const char *b);

/* "path.lock", the claim of one file that a run writes, held until
 * slm_file_unlock: flock()ed (the system lets it go when the process ends,
 * kill -9 too) and holding our PID, for the message of whoever finds it
 * held. path is resolved first (links, ".."), so that every name of one file
 * finds one lock. Returns 0 when taken; 1 when another process holds it (a
 * lock being taken, its PID not written yet, is held too) or, where the file
 * system has no flock, when its PID runs; -1 on an error, or when the file
 * at that name is not a lock (a PID and a newline, or empty): it is refused,
 * never removed. A lock no process holds is taken over when the PID it names
 * no longer runs (or is ours); one whose PID runs is held all the same, to be
 * safe (an older storylm's lock, or a PID reused after a kill -9). */
typedef struct FileLock {
    char *path; /* NULL when not held */
    int fd;     /* open and flock()ed while held */
} FileLock;
int slm_file_lock(FileLock *l, const char *path, Error *e);
void slm_file_unlock(FileLock *l); /* removes the lock if it is ours; frees l */
/* The lock file slm_file_lock takes for path (caller frees), for output checks. */
char *slm_file_lock_path(const char *path, Error *e);

/* Creates a new temporary file beside final ("final.tmp.PID", or
 * "final.tmp.PID.K" when that name is taken) with O_CREAT|O_EXCL|O_NOFOLLOW, so
 * that a file or symbolic link planted at the name is never written through.
 * Returns its descriptor (read-write) and *temp_path (caller frees), or -1. */
int slm_temp_open(const char *final, char **temp_path, Error *e);

/* 64-bit FNV-1a, for cache keys, checksums and deterministic choices (not
 * security): the project's one hash. slm_hash64 starts from the offset basis
 * xor seed; slm_hash64_more goes on from a state h (a file a slice at a
 * time, a key made of parts). */
#define SLM_HASH64_BASIS 14695981039346656037ULL
uint64_t slm_hash64(const void *data, size_t len, uint64_t seed);
uint64_t slm_hash64_more(uint64_t h, const void *data, size_t len);

/* path with its links and ".." resolved into buf (size), also for a file not
 * there yet (its folder resolved, its name kept); false when the folder
 * cannot be resolved. */
bool slm_path_resolve(const char *path, char *buf, size_t size);

#endif
