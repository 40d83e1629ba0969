/* Stories files (SPEC section 3): splitting into stories, skipping bad ones
 * with counts, token ids with [EOS] at both ends, the deterministic held-out
 * test stories, and a token-id cache keyed by the text and the vocabulary. */
#ifndef STORYLM_STORIES_H
#define STORYLM_STORIES_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "storylm/error.h"
#include "storylm/tokenizer.h"

#define STORIES_SEPARATOR "<|endoftext|>"
#define STORIES_DEFAULT_TEST 100
/* Longer stories are skipped, with a count. A pass over a story holds all its
 * positions (about 22 KB each for the attention network), so a story of 1 MB
 * (250,000 tokens) needed 5 GB; 64 KiB is 16 times the longest TinyStories story. */
#define STORIES_MAX_STORY_BYTES (64u << 10)

/* One story's text inside a file's bytes. */
typedef struct StorySpan {
    size_t offset, len;
} StorySpan;

/* Why stories were left out. */
typedef struct StorySkips {
    int empty;        /* only white space */
    int invalid_utf8; /* invalid UTF-8 or NUL bytes */
    int too_long;     /* over STORIES_MAX_STORY_BYTES */
} StorySkips;

/* Splits text into stories, one pass over its lines.
 *
 * - Separators: when any line holds only "<|endoftext|>" (spaces, tabs and
 *   a CRLF file's '\r' around it allowed), stories lie between such lines
 *   and blank lines inside a story stay in it; "<|endoftext|>" inside a line
 *   of text is text. A file with no such line is split at runs of blank lines
 *   (lines of nothing but spaces, tabs, '\r').
 * - Each story is trimmed of ASCII white space at both ends (a CRLF file's
 *   '\r's inside a story stay). A UTF-8 byte-order mark at the file's start
 *   is dropped.
 * - Skipped and counted in *skips (which may be NULL): a piece of only white
 *   space (pieces holding nothing but line breaks, as before a leading
 *   separator or after a trailing one or between two in a row, are no story
 *   and not counted), invalid UTF-8 or a NUL byte, more than
 *   STORIES_MAX_STORY_BYTES after trimming (never looked at further).
 *
 * *spans is allocated (caller frees) and ordered as in the file. Fails,
 * naming `what`, on an empty file or one with no usable story
 * ("'x.txt' holds no stories: ..."). */
int slm_stories_split(const char *text, size_t len, const char *what, StorySpan **spans, int *n, StorySkips *skips,
                      Error *e);

typedef struct StoriesOptions {
    int n_test;            /* held-out test stories (default STORIES_DEFAULT_TEST); 0: none */
    const char *cache_dir; /* NULL: $STORYLM_CACHE, else $XDG_CACHE_HOME/storylm, else ~/.cache/storylm */
    int use_cache;         /* 0: neither read nor write a cache */
    const volatile sig_atomic_t
        *stop; /* NULL, or set (by a signal or another thread) to give up reading: fails with "stopped" */
} StoriesOptions;

StoriesOptions slm_stories_default_options(void);

/* The ids live in a memory-mapped file (the cache, or an unlinked temporary
 * file when there is no cache), two bytes an id when the vocabulary fits in
 * 16 bits, else four; per story only its start. Read them through
 * story_len, story_token, story_copy_ids or slm_story_ids below. A Stories made
 * by hand (tests) sets ids32 and starts and leaves map empty. */
typedef struct Stories {
    int n_stories;
    const uint16_t *ids16; /* all stories' ids when 16 bits hold them, else NULL */
    const int32_t *ids32;  /* else here; story i is ids[starts[i] .. starts[i+1]) */
    const size_t *starts;  /* n_stories + 1 entries */
    size_t n_tokens;       /* = starts[n_stories] */
    int n_test, n_train;
    int *test;  /* indices of the held-out test stories, ascending */
    int *train; /* indices of the others, ascending */
    StorySkips skips;
    int from_cache;  /* 1 when ids came from the cache */
    const void *map; /* the mapped ids file holding ids and starts (NULL: none) */
    size_t map_len;
} Stories;

/* Reads path, splits (slm_stories_split), encodes every story as
 * [EOS] ids... [EOS] (stories in parallel; the result is the same at any
 * thread count). A story that encodes to no token at all (only no-break
 * spaces or control characters, say) is counted in skips.empty and left out.
 *
 * Held-out test stories: the n_test stories whose text has the smallest
 * slm_hash64 (ties by index), n_test = min(o->n_test, n_stories / 10) but at
 * least 1 when there are 2 or more stories; so a file with one story has no
 * test stories, and o->n_test = 0 asks for none. Chosen by text, not by
 * place: spread over the file, and a story keeps its role when the file is
 * reordered. test and train are ascending indices into the stories.
 *
 * Memory: the file is read in one streaming pass over its memory map, a few
 * thousand stories at a time, and the ids go to a file as they come, so a
 * file of gigabytes needs tens of megabytes (16 bytes a story stay in memory
 * until the end); s then maps that file.
 *
 * Cache: <cache folder>/<16 hex digits>.ids, the digits a hash of the file's
 * bytes, the vocabulary's text and the key's version (the same names as
 * before the streaming reader). A cache that is short, corrupt, of another
 * layout version or holds an impossible id or story boundary is ignored and
 * rewritten. The folder is made when missing; when it cannot be made or
 * written, the ids go to an unlinked temporary file instead (no error).
 * Caches of old texts or vocabularies are left in the folder. A cache must
 * not be changed in place while a Stories maps it (storylm only ever renames
 * a new one over it).
 * o = NULL means slm_stories_default_options(). On failure s is left empty. */
int slm_stories_load(Stories *s, const char *path, const Tokenizer *t, const StoriesOptions *o, Error *e);
void slm_stories_free(Stories *s);

/* Length in tokens of story i, [EOS]s included. */
static inline size_t story_len(const Stories *s, int i) { return s->starts[i + 1] - s->starts[i]; }
/* Token j of story i (j < story_len(s, i)). Read stories through these
 * accessors, not through the arrays, so that how the ids are stored can change. */
static inline int32_t story_token(const Stories *s, int i, size_t j) {
    size_t k = s->starts[i] + j;
    return s->ids16 ? (int32_t)s->ids16[k] : s->ids32[k];
}
/* Story i's ids into out (story_len(s, i) entries). */
static inline void story_copy_ids(const Stories *s, int i, int32_t *out) {
    for (size_t j = 0, n = story_len(s, i); j < n; j++) out[j] = story_token(s, i, j);
}

/* Room for one story's ids as int32, reused from story to story. */
typedef struct StoryBuf {
    int32_t *ids;
    size_t cap;
} StoryBuf;

/* Story i's ids (story_len(s, i) of them) as int32: the stored array itself
 * when it is 4 bytes an id, else copied into b (grown as needed). Valid
 * until the next call with b; NULL when out of memory. */
const int32_t *slm_story_ids(const Stories *s, int i, StoryBuf *b, Error *e);
void slm_story_buf_free(StoryBuf *b);

/* slm_hash64 (seed) of every story's ids in order as 4-byte ints, however they
 * are stored: what slm_hash64(ids, n_tokens * 4, seed) gave when they were. */
uint64_t slm_stories_hash_ids(const Stories *s, uint64_t seed);

#endif
