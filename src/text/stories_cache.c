/* The token-id file behind a Stories: see src/text/stories_cache.h.
 *
 * Layout (native byte order; a machine of the other order reads a wrong
 * version number and rewrites the file):
 *   header: magic "storyids", u32 version, u32 vocab size, u64 key,
 *           u64 n_stories, u64 n_tokens, u32 skips (empty, invalid_utf8,
 *           too_long, nul), u32 bytes an id (2 or 4), u32 0
 *   ids (n_tokens, 2 or 4 bytes each), zeros up to a multiple of 8 bytes,
 *   u64 starts (n_stories + 1), u64 text hashes (n_stories),
 *   u64 checksum: slm_hash64 of the bytes after the header up to the checksum,
 *   continued over the header (so a writer can sum as it goes and write the
 *   header last).
 * The ids come first so that they can be written while the text is read;
 * the starts and hashes (16 bytes a story) are held until the end. */
#include "stories_cache.h"

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "storylm/filemap.h"
#include "storylm/fileio.h"

#define CACHE_VERSION 3u     /* of the layout (3: the skips' NUL count) */
#define CACHE_KEY_VERSION 1u /* of the key: unchanged, so a file keeps its cache's name */
#define WINDOW (8u << 20)    /* bytes of a map read between giving pages back */

/* The starts are read from the file in place as size_t where it is 8 bytes;
 * a 32-bit target (wasm32) copies them (point_into). */
#define STARTS_IN_PLACE (SIZE_MAX == UINT64_MAX)

typedef struct CacheHeader {
    char magic[8];
    uint32_t version, vocab_size;
    uint64_t key, n_stories, n_tokens;
    uint32_t skips[4], id_bytes, zero; /* zero: no padding's unknown bytes in the checksum */
} CacheHeader;

static const char CACHE_MAGIC[8] = {'s', 't', 'o', 'r', 'y', 'i', 'd', 's'};

/* slm_hash64_more over a map's bytes [from, to), giving the pages back behind. */
static uint64_t hash_map(uint64_t h, const FileMap *m, size_t from, size_t to) {
    for (size_t at = from; at < to;) {
        size_t n = to - at < WINDOW ? to - at : WINDOW;
        h = slm_hash64_more(h, m->data + at, n);
        slm_file_map_drop(m, at, at + n);
        at += n;
    }
    return h;
}

/* ------------------------------------------------------------- folder, key */

/* The folder for caches: the option, $STORYLM_CACHE, $XDG_CACHE_HOME/storylm,
 * ~/.cache/storylm; NULL when none can be named. Caller frees. */
static char *cache_folder(const StoriesOptions *o) {
    const char *env[3] = {o->cache_dir, getenv("STORYLM_CACHE"), getenv("XDG_CACHE_HOME")};
    const char *suffix[3] = {"", "", "/storylm"};
    const char *home = getenv("HOME");
    const char *dir = NULL, *tail = "/.cache/storylm";
    for (int i = 0; i < 3 && !dir; i++)
        if (env[i] && env[i][0]) dir = env[i], tail = suffix[i];
    if (!dir && home && home[0]) dir = home;
    if (!dir) return NULL;
    size_t n = strlen(dir) + strlen(tail) + 1;
    char *out = malloc(n);
    if (out) snprintf(out, n, "%s%s", dir, tail);
    return out;
}

/* mkdir -p; 0 when path is a folder afterwards. */
static int make_folders(char *path) {
    for (char *p = path + 1; *p; p++) {
        if (*p != '/') continue;
        *p = '\0';
        int rc = mkdir(path, 0755);
        *p = '/';
        if (rc != 0 && errno != EEXIST) return -1;
    }
    struct stat st;
    if (mkdir(path, 0755) != 0 && errno != EEXIST) return -1;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode) ? 0 : -1;
}

char *slm_ids_cache_path(const StoriesOptions *o, uint64_t key) {
    char *dir = cache_folder(o);
    if (!dir || make_folders(dir) != 0) {
        free(dir);
        return NULL;
    }
    size_t n = strlen(dir) + 32;
    char *path = malloc(n);
    if (path) snprintf(path, n, "%s/%016llx.ids", dir, (unsigned long long)key);
    free(dir);
    return path;
}

int slm_ids_cache_key(const FileMap *text, const Tokenizer *t, const volatile sig_atomic_t *stop, uint64_t *key,
                      Error *e) {
    size_t vocab_len, len = text->len, longest = STORIES_MAX_STORY_BYTES;
    uint64_t h = slm_hash64(NULL, 0, CACHE_KEY_VERSION);
    for (size_t at = 0; at < len; at += WINDOW) { /* a window at a time: a stop is heard within one */
        if (stop && *stop) return FAIL(e, "it was asked to stop", "stopped");
        h = hash_map(h, text, at, len - at < WINDOW ? len : at + WINDOW);
    }
    char *vocab = slm_tokenizer_to_text(t, &vocab_len, e);
    if (!vocab) return -1;
    h = slm_hash64(&len, sizeof len, h);
    h = slm_hash64(&longest, sizeof longest, h);
    *key = slm_hash64(vocab, vocab_len, h);
    free(vocab);
    return 0;
}

/* ------------------------------------------------------------------ layout */

static size_t ids_end(uint64_t n_tokens, uint32_t id_bytes) {
    return (sizeof(CacheHeader) + (size_t)n_tokens * id_bytes + 7) / 8 * 8;
}

/* Size in bytes of a file of these counts (callers bound the counts). */
static size_t file_size(uint64_t n_stories, uint64_t n_tokens, uint32_t id_bytes) {
    return ids_end(n_tokens, id_bytes) + (size_t)(2 * n_stories + 1) * 8 + 8;
}

static int id_bytes_for(const Tokenizer *t) { return t->size <= 65536 ? 2 : 4; }

/* The file's u64 starts as size_t: in place, or copied into s->starts_own
 * where size_t is narrower (counts are bounded by the map's size, so they
 * fit). -1 when out of memory. */
static int point_starts(Stories *s, const char *starts, uint64_t n_stories) {
    if (STARTS_IN_PLACE) {
        s->starts = (const size_t *)(const void *)starts;
        return 0;
    }
    size_t *own = malloc(((size_t)n_stories + 1) * sizeof *own);
    if (!own) return -1;
    for (size_t i = 0; i <= n_stories; i++) {
        uint64_t v;
        memcpy(&v, starts + i * 8, 8);
        own[i] = (size_t)v;
    }
    s->starts = s->starts_own = own;
    return 0;
}

/* Points s (ids, starts, counts, map) and *hashes into a mapped file whose
 * header is h. The map is s's from now on, unless this fails (-1: out of
 * memory for a copy of the starts). */
static int point_into(Stories *s, const FileMap *m, const CacheHeader *h, const uint64_t **hashes) {
    const char *ids = m->data + sizeof *h, *starts = m->data + ids_end(h->n_tokens, h->id_bytes);
    if (point_starts(s, starts, h->n_stories)) return -1;
    s->ids16 = h->id_bytes == 2 ? (const uint16_t *)(const void *)ids : NULL;
    s->ids32 = h->id_bytes == 4 ? (const int32_t *)(const void *)ids : NULL;
    *hashes = (const uint64_t *)(const void *)(starts + ((size_t)h->n_stories + 1) * 8);
    s->n_stories = (int)h->n_stories;
    s->n_tokens = (size_t)h->n_tokens;
    s->skips = (StorySkips){(int)h->skips[0], (int)h->skips[1], (int)h->skips[2], (int)h->skips[3]};
    s->map = m->data;
    s->map_len = m->len;
    return 0;
}

/* ----------------------------------------------------------------- reading */

/* 1 when the header fits the file: magic, version, key, vocabulary, counts
 * that match the size. */
static int header_valid(const FileMap *m, uint64_t key, const Tokenizer *t, CacheHeader *h) {
    if (m->len < sizeof *h + 8) return 0;
    memcpy(h, m->data, sizeof *h);
    return !memcmp(h->magic, CACHE_MAGIC, 8) && h->version == CACHE_VERSION && h->key == key &&
           h->vocab_size == (uint32_t)t->size && h->id_bytes == (uint32_t)id_bytes_for(t) && h->n_stories >= 1 &&
           h->n_stories <= INT_MAX && h->n_tokens <= m->len / h->id_bytes &&
           file_size(h->n_stories, h->n_tokens, h->id_bytes) == m->len;
}

/* The checksum and every id a vocabulary id, in one pass over windows. */
static int body_valid(const FileMap *m, const CacheHeader *h, const Tokenizer *t) {
    size_t from = sizeof *h, ids_to = from + (size_t)h->n_tokens * h->id_bytes, step = WINDOW / 4 * h->id_bytes;
    uint64_t sum = slm_hash64(NULL, 0, 0), stored;
    int ok = 1;
    for (size_t at = from; at < ids_to; at += step) {
        size_t n = ids_to - at < step ? ids_to - at : step;
        sum = slm_hash64_more(sum, m->data + at, n);
        for (size_t i = 0; i < n / h->id_bytes; i++) {
            int32_t id;
            if (h->id_bytes == 2)
                id = ((const uint16_t *)(const void *)(m->data + at))[i];
            else
                id = ((const int32_t *)(const void *)(m->data + at))[i];
            ok &= id >= 0 && id < t->size;
        }
        slm_file_map_drop(m, at, at + n);
    }
    sum = hash_map(sum, m, ids_to, m->len - 8);
    sum = slm_hash64_more(sum, m->data, sizeof *h);
    memcpy(&stored, m->data + m->len - 8, 8);
    return ok && sum == stored;
}

/* Starts rising from 0 to n_tokens, every story [EOS] something [EOS]: a
 * file that passes cannot send a reader out of bounds. */
static int starts_valid(const Stories *s, const FileMap *m, const Tokenizer *t) {
    if (s->starts[0] != 0 || s->starts[s->n_stories] != s->n_tokens) return 0;
    size_t dropped = 0, id_bytes = s->ids16 ? 2 : 4;
    for (int i = 0; i < s->n_stories; i++) {
        size_t b = s->starts[i], e = s->starts[i + 1];
        if (e > s->n_tokens || e < b || e - b < 3) return 0;
        if (story_token(s, i, 0) != t->eos_id || story_token(s, i, e - b - 1) != t->eos_id) return 0;
        if ((b - dropped) * id_bytes > WINDOW) {
            slm_file_map_drop(m, sizeof(CacheHeader) + dropped * id_bytes, sizeof(CacheHeader) + b * id_bytes);
            dropped = b;
        }
    }
    return 1;
}

int slm_ids_cache_read(const char *path, uint64_t key, const Tokenizer *t, Stories *s, const uint64_t **hashes) {
    FileMap m;
    CacheHeader h;
    if (slm_file_map(&m, path, NULL) != 0) return -1;
    Stories got = *s;
    if (!header_valid(&m, key, t, &h) || !body_valid(&m, &h, t)) {
        slm_file_unmap(&m);
        return -1;
    }
    if (point_into(&got, &m, &h, hashes) || !starts_valid(&got, &m, t)) {
        free(got.starts_own);
        slm_file_unmap(&m);
        return -1;
    }
    *s = got;
    return 0;
}

/* ----------------------------------------------------------------- writing */

/* fwrite that keeps the running checksum. */
static int put(IdsWriter *w, uint64_t *sum, const void *data, size_t len, Error *e) {
    *sum = slm_hash64_more(*sum, data, len);
    if (fwrite(data, 1, len, w->f) == len) return 0;
    return FAIL(e, "check free disk space where the cache lives ($STORYLM_CACHE)", "cannot write the token ids: %s",
                strerror(errno));
}

int slm_ids_writer_open(IdsWriter *w, const char *final_path, const Tokenizer *t, Error *e) {
    *w = (IdsWriter){.id_bytes = id_bytes_for(t)};
    if (final_path) {
        size_t n = strlen(final_path) + 1;
        w->final_path = xmalloc(n, e);
        if (!w->final_path) return slm_ids_writer_abort(w), -1;
        snprintf(w->final_path, n, "%s", final_path);
        /* never through a link planted at the temporary's name (slm_temp_open) */
        int fd = slm_temp_open(final_path, &w->temp_path, e);
        if (fd < 0) return slm_ids_writer_abort(w), -1;
        w->f = fdopen(fd, "w+b");
        if (!w->f) close(fd);
    } else {
        w->f = tmpfile();
    }
    if (!w->f) {
        slm_ids_writer_abort(w);
        return FAIL(e, "set TMPDIR to a folder with free space", "cannot make a file for the token ids: %s",
                    strerror(errno));
    }
    setvbuf(w->f, NULL, _IOFBF, 1 << 20);
    CacheHeader zero = {0};
    w->body_sum = slm_hash64(NULL, 0, 0);
    if (fwrite(&zero, sizeof zero, 1, w->f) != 1) {
        slm_ids_writer_abort(w);
        return FAIL(e, "check free disk space", "cannot write the token ids: %s", strerror(errno));
    }
    return 0;
}

/* Room for one more story's start and hash. */
static int grow(IdsWriter *w, Error *e) {
    if (w->n_stories + 2 <= w->cap) return 0;
    size_t cap = w->cap < 4096 ? 4096 : w->cap * 2;
    uint64_t *starts = xrealloc(w->starts, cap * 8, e);
    if (!starts) return -1;
    w->starts = starts;
    uint64_t *hashes = xrealloc(w->hashes, cap * 8, e);
    if (!hashes) return -1;
    w->hashes = hashes;
    w->cap = cap;
    return 0;
}

int slm_ids_writer_story(IdsWriter *w, const int32_t *ids, size_t n, int32_t eos, uint64_t hash, Error *e) {
    if (w->n_stories >= INT_MAX) return FAIL(e, "split the file into smaller files", "more than %d stories", INT_MAX);
    if (grow(w, e)) return -1;
    if (n + 2 > w->row_cap) {
        void *row = xrealloc(w->row, (n + 2) * 4, e);
        if (!row) return -1;
        w->row = row;
        w->row_cap = n + 2;
    }
    if (w->id_bytes == 2) {
        uint16_t *r = w->row;
        r[0] = r[n + 1] = (uint16_t)eos;
        for (size_t i = 0; i < n; i++) r[i + 1] = (uint16_t)ids[i];
    } else {
        int32_t *r = w->row;
        r[0] = r[n + 1] = eos;
        memcpy(r + 1, ids, n * 4);
    }
    w->starts[w->n_stories] = w->n_tokens;
    w->hashes[w->n_stories++] = hash;
    w->n_tokens += n + 2;
    return put(w, &w->body_sum, w->row, (n + 2) * (size_t)w->id_bytes, e);
}

/* The starts, hashes, checksum and header after the ids. */
static int write_tail(IdsWriter *w, uint64_t key, const Tokenizer *t, const StorySkips *k, CacheHeader *h, Error *e) {
    static const char zeros[8] = {0};
    size_t pad = ids_end(w->n_tokens, (uint32_t)w->id_bytes) - sizeof *h - w->n_tokens * (size_t)w->id_bytes;
    w->starts[w->n_stories] = w->n_tokens;
    *h =
        (CacheHeader){.version = CACHE_VERSION,
                      .vocab_size = (uint32_t)t->size,
                      .key = key,
                      .n_stories = w->n_stories,
                      .n_tokens = w->n_tokens,
                      .skips = {(uint32_t)k->empty, (uint32_t)k->invalid_utf8, (uint32_t)k->too_long, (uint32_t)k->nul},
                      .id_bytes = (uint32_t)w->id_bytes};
    memcpy(h->magic, CACHE_MAGIC, 8);
    if (put(w, &w->body_sum, zeros, pad, e) || put(w, &w->body_sum, w->starts, (w->n_stories + 1) * 8, e) ||
        put(w, &w->body_sum, w->hashes, w->n_stories * 8, e))
        return -1;
    uint64_t sum = slm_hash64_more(w->body_sum, h, sizeof *h), ignored = 0;
    if (put(w, &ignored, &sum, 8, e)) return -1;
    if (fseek(w->f, 0, SEEK_SET) != 0 || put(w, &ignored, h, sizeof *h, e)) return -1;
    if (fflush(w->f) == 0) return 0;
    return FAIL(e, "check free disk space", "cannot write the token ids: %s", strerror(errno));
}

int slm_ids_writer_finish(IdsWriter *w, uint64_t key, const Tokenizer *t, const StorySkips *skips, Stories *s,
                          const uint64_t **hashes, Error *e) {
    CacheHeader h;
    FileMap m;
    int rc = grow(w, e);
    if (!rc) rc = write_tail(w, key, t, skips, &h, e);
    if (!rc) rc = slm_file_map_fd(&m, fileno(w->f), file_size(h.n_stories, h.n_tokens, h.id_bytes), "the token ids", e);
    /* no fsync: a cache cut short by a crash fails its checksum and is rewritten */
    if (!rc && w->final_path && rename(w->temp_path, w->final_path) != 0) remove(w->temp_path);
    if (!rc && point_into(s, &m, &h, hashes)) {
        slm_file_unmap(&m);
        rc = FAIL(e, "check free memory", "out of memory for the stories' starts");
    }
    if (!rc && w->temp_path) {
        free(w->temp_path); /* now in place: nothing left to remove */
        w->temp_path = NULL;
    }
    slm_ids_writer_abort(w);
    return rc;
}

void slm_ids_writer_abort(IdsWriter *w) {
    if (w->f) fclose(w->f);
    if (w->temp_path) remove(w->temp_path);
    free(w->temp_path);
    free(w->final_path);
    free(w->starts);
    free(w->hashes);
    free(w->row);
    *w = (IdsWriter){0};
}
