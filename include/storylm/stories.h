/* Stories files (SPEC section 3): splitting into stories, skipping bad ones
 * with counts, token ids with [EOS] at both ends, the deterministic held-out
 * test stories, and a token-id cache keyed by the text and the vocabulary. */
#ifndef STORYLM_STORIES_H
#define STORYLM_STORIES_H

#include <stddef.h>
#include <stdint.h>

#include "storylm/error.h"
#include "storylm/tokenizer.h"

#define STORIES_SEPARATOR "<|endoftext|>"
#define STORIES_DEFAULT_TEST 100
#define STORIES_MAX_STORY_BYTES (1u << 20) /* longer stories are skipped, with a count */

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

/* Splits text into stories: on lines holding only "<|endoftext|>" when the
 * text has one, otherwise on runs of blank lines. Bad stories are skipped
 * and counted. *spans is allocated (caller frees). Fails on an empty file
 * or one with no usable story. `what` names the file in messages. */
int stories_split(const char *text, size_t len, const char *what, StorySpan **spans, int *n, StorySkips *skips,
                  Error *e);

typedef struct StoriesOptions {
    int n_test;            /* held-out test stories (default STORIES_DEFAULT_TEST) */
    const char *cache_dir; /* NULL: $STORYLM_CACHE, else $XDG_CACHE_HOME/storylm, else ~/.cache/storylm */
    int use_cache;         /* 0: neither read nor write a cache */
} StoriesOptions;

StoriesOptions stories_default_options(void);

typedef struct Stories {
    int n_stories;
    int32_t *tokens;  /* all stories' ids; story i is tokens[starts[i] .. starts[i+1]) */
    size_t *starts;   /* n_stories + 1 entries */
    size_t n_tokens;  /* = starts[n_stories] */
    int n_test, n_train;
    int *test;        /* indices of the held-out test stories, ascending */
    int *train;       /* indices of the others, ascending */
    StorySkips skips;
    int from_cache;   /* 1 when ids came from the cache */
} Stories;

/* Reads path, splits, encodes every story as [EOS] ids... [EOS], picks the
 * held-out test stories (deterministic, by a hash of each story's text: not
 * simply the first or last ones). */
int stories_load(Stories *s, const char *path, const Tokenizer *t, const StoriesOptions *o, Error *e);
void stories_free(Stories *s);

/* Length in tokens of story i, [EOS]s included. */
static inline size_t story_len(const Stories *s, int i) { return s->starts[i + 1] - s->starts[i]; }

#endif
