/* Whole-file reads and atomic writes. */
#ifndef STORYLM_FILEIO_H
#define STORYLM_FILEIO_H

#include <stddef.h>
#include <stdint.h>
#include "storylm/error.h"

/* Reads a regular file whole into *data (NUL-terminated, caller frees).
 * Refuses directories and files larger than max_bytes (0 = no limit). */
int file_read_all(const char *path, size_t max_bytes, char **data, size_t *len, Error *e);

/* Writes data to path atomically: into "path.tmp.PID", fsync, rename over path.
 * An interrupted write never leaves a half-written file at path. */
int file_write_atomic(const char *path, const void *data, size_t len, Error *e);

/* An atomic writer for output produced in pieces (a model file, say). */
typedef struct AtomicFile {
    FILE *f;
    char *final_path;
    char *temp_path;
} AtomicFile;
int atomic_open(AtomicFile *a, const char *path, Error *e);
int atomic_write(AtomicFile *a, const void *data, size_t len, Error *e);
int atomic_commit(AtomicFile *a, Error *e); /* fsync + rename; frees a */
void atomic_abort(AtomicFile *a);           /* removes the temporary file; frees a */

/* 64-bit FNV-1a, for cache keys and deterministic choices (not security). */
uint64_t hash64(const void *data, size_t len, uint64_t seed);

#endif
