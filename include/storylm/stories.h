/* Stories files (SPEC section 3): splitting into stories, skipping bad ones
 * with counts, token ids with [EOS] at both ends, the deterministic held-out
 * test stories, and a token-id cache keyed by the text and the vocabulary. */
#ifndef STORYLM_STORIES_H
#define STORYLM_STORIES_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "storylm/error.h"
#include "storylm/story_ids.h" /* Stories, StoriesOptions, StorySkips and the accessors */
#include "storylm/tokenizer.h"

#define STORIES_SEPARATOR "<|endoftext|>"

/* One story's text inside a file's bytes. */
typedef struct StorySpan {
    size_t offset, len;
} StorySpan;

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

/* What to say when a twentieth or more of the stories were left out as not
 * UTF-8 (n_kept: the stories kept): a file saved as Windows-1252 or Latin-1
 * is the likely cause, and iconv converts it. Into buf (size), naming path;
 * false when there is nothing to say. */
bool slm_stories_encoding_hint(const StorySkips *k, int n_kept, const char *path, char *buf, size_t size);

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
 * o = NULL means slm_stories_default_options(). On failure s is left empty;
 * slm_stories_free (story_ids.h) frees it. */
int slm_stories_load(Stories *s, const char *path, const Tokenizer *t, const StoriesOptions *o, Error *e);

/* The characters that loss per character divides by: for each story idx[i]
 * of s (read from path with t by slm_stories_load), the UTF-8 bytes of its
 * text as the tokenizer was given it (slm_stories_split's span: trimmed of
 * white space at both ends, no separator line, before any normalising),
 * plus one for the [EOS] that closes it (a predicted position; the one
 * that opens it is not). So a model of any vocabulary is divided by the same
 * number for the same stories. path is read again (mapped); the stories that
 * encoded to no token, left out of s, are found by encoding when there are
 * any. Fails when the file no longer gives s's stories. */
int slm_stories_text_bytes(const Stories *s, const char *path, const Tokenizer *t, const int *idx, int n,
                           long long *bytes, Error *e);

#endif
