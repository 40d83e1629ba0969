/* A stories file's token ids as read (stories.h reads them, and the cache,
 * src/text/stories_cache.c, maps them): the Stories type, the options of a
 * read, the counts of stories left out, and the accessors every reader of
 * the ids goes through. */
#ifndef STORYLM_STORY_IDS_H
#define STORYLM_STORY_IDS_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "storylm/error.h"
#include "storylm/vec.h"

#define STORIES_DEFAULT_TEST 100
/* Longer stories are skipped, with a count. A pass over a story holds all its
 * positions (about 22 KB each for the attention network), so a story of 1 MB
 * (250,000 tokens) needed 5 GB; 64 KiB is 16 times the longest TinyStories story. */
#define STORIES_MAX_STORY_BYTES (64u << 10)

/* Why stories were left out. */
typedef struct StorySkips {
    int empty;        /* only white space */
    int invalid_utf8; /* invalid UTF-8 or NUL bytes */
    int too_long;     /* over STORIES_MAX_STORY_BYTES */
    int nul;          /* of invalid_utf8, those holding a NUL byte: no text file's (the hint differs) */
} StorySkips;

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
    size_t *starts_own;    /* starts when copied out of the map (a 32-bit size_t), else NULL */
    size_t n_tokens;       /* = starts[n_stories] */
    int n_test, n_train;
    int *test;  /* indices of the held-out test stories, ascending */
    int *train; /* indices of the others, ascending */
    StorySkips skips;
    int from_cache;  /* 1 when ids came from the cache */
    const void *map; /* the mapped ids file holding ids and starts (NULL: none) */
    size_t map_len;
} Stories;

/* Unmaps and frees s (slm_stories_load's), leaving it empty. */
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

/* Rewrites training story `story` of s for one step into *out (cleared
 * first), at most TRAIN_AUGMENT_MAX_LEN(its length) ids (the trainer sizes
 * its chunks for that); key comes from the run's seed, the step and the
 * story's place in it, so a resumed run rewrites as the first one did.
 * Returns 0, or -1 with e set. Only training stories are ever given
 * (--swap-names). */
#define TRAIN_AUGMENT_MAX_LEN(len) ((len) + (len) / 4 + 16)
typedef int (*TrainAugmentFn)(void *ctx, const Stories *s, int story, uint64_t key, IntVec *out, Error *e);

#endif
