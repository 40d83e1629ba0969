/* Read-only memory maps of files, for inputs larger than memory should hold:
 * the stories file while it is read, the token-id cache while it is used. */
#ifndef STORYLM_FILEMAP_H
#define STORYLM_FILEMAP_H

#include <stddef.h>

#include "storylm/error.h"

typedef struct FileMap {
    const char *data; /* len bytes; "" (not mapped) for an empty file */
    size_t len;
} FileMap;

/* Maps the regular file path read-only, with the messages of slm_file_read_all
 * ("'x' is not a regular file", ...). */
int slm_file_map(FileMap *m, const char *path, Error *e);
/* Maps an open file's first len bytes (fd stays the caller's). */
int slm_file_map_fd(FileMap *m, int fd, size_t len, const char *what, Error *e);
void slm_file_unmap(FileMap *m);

/* Gives the pages wholly inside [from, to) of a mapped file back to the
 * kernel: a pass over a mapped file of gigabytes then stays small in resident
 * memory. The bytes read the same afterwards (they come back from the file).
 * Only for FileMap data, never for malloc'd memory (it would be zeroed). */
void slm_file_map_drop(const FileMap *m, size_t from, size_t to);

#endif
