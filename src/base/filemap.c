/* Read-only memory maps of files: see include/storylm/filemap.h. */
#define _DEFAULT_SOURCE /* madvise */
#include "storylm/filemap.h"

#include <errno.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

int slm_file_map_fd(FileMap *m, int fd, size_t len, const char *what, Error *e) {
    *m = (FileMap){.data = "", .len = 0};
    if (len == 0) return 0;
    void *p = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED)
        return FAIL(e, "check free memory (ulimit -v) and that the file is readable", "cannot map '%s': %s", what,
                    strerror(errno));
    *m = (FileMap){.data = p, .len = len};
    return 0;
}

int slm_file_map(FileMap *m, const char *path, Error *e) {
    *m = (FileMap){.data = "", .len = 0};
    FILE *f = xfopen(path, "rb", e); /* its checks and messages: a folder, a pipe, a missing file */
    if (!f) return -1;
    struct stat st;
    int rc = 0;
    if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode))
        rc = FAIL(e, "give the path of a regular file", "'%s' is not a regular file", path);
    else if ((uint64_t)st.st_size > SIZE_MAX)
        rc = FAIL(e, NULL, "'%s' is too large to map", path);
    else
        rc = slm_file_map_fd(m, fileno(f), (size_t)st.st_size, path, e);
    fclose(f);
    return rc;
}

void slm_file_unmap(FileMap *m) {
    if (m->len) munmap((void *)m->data, m->len);
    *m = (FileMap){.data = "", .len = 0};
}

void slm_file_map_drop(const FileMap *m, size_t from, size_t to) {
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    if (to > m->len) to = m->len;
    from = (from + page - 1) / page * page; /* the map starts on a page */
    to = to / page * page;
    if (to > from) madvise((void *)(m->data + from), to - from, MADV_DONTNEED);
}
