/* The token-id file behind a Stories (internal to src/text): written once in
 * a streaming pass, then memory-mapped; the same format serves as the cache
 * (<folder>/<key>.ids) and, without a cache, as an unlinked temporary file. */
#ifndef STORYLM_STORIES_CACHE_H
#define STORYLM_STORIES_CACHE_H

#include <stdint.h>
#include <stdio.h>

#include "storylm/story_ids.h"
#include "storylm/tokenizer.h"

/* The cache's file name for this key, "<folder>/<16 hex digits>.ids"
 * (the folder made when missing); NULL when no folder is usable. */
char *slm_ids_cache_path(const StoriesOptions *o, uint64_t key);

/* The cache key of a stories file: its bytes, the vocabulary's text and the
 * longest story kept, as before the streaming reader (the same file names).
 * text is a map: the pass gives its pages back as it goes. */
typedef struct FileMap FileMap;
int slm_ids_cache_key(const FileMap *text, const Tokenizer *t, const volatile sig_atomic_t *stop, uint64_t *key,
                      Error *e);

/* An ids file being written, story by story, in file order. */
typedef struct IdsWriter {
    FILE *f;
    char *final_path, *temp_path; /* final_path NULL: an unlinked temporary file */
    int id_bytes;                 /* 2 or 4 */
    size_t n_tokens;
    uint64_t *starts, *hashes; /* (n_stories + 1), (n_stories) */
    size_t n_stories, cap;
    void *row;         /* a story's ids in the file's width */
    uint64_t body_sum; /* the checksum of what follows the header, so far */
    size_t row_cap;
} IdsWriter;

/* final_path NULL: write to an unlinked temporary file (no cache). */
int slm_ids_writer_open(IdsWriter *w, const char *final_path, const Tokenizer *t, Error *e);
/* Appends [EOS] ids[0..n) [EOS], with the story's text hash. */
int slm_ids_writer_story(IdsWriter *w, const int32_t *ids, size_t n, int32_t eos, uint64_t hash, Error *e);
/* Writes the starts, hashes, header and checksum, puts the file in place
 * and maps it into s (ids, starts, map) with *hashes into the map. Frees w. */
int slm_ids_writer_finish(IdsWriter *w, uint64_t key, const Tokenizer *t, const StorySkips *skips, Stories *s,
                          const uint64_t **hashes, Error *e);
void slm_ids_writer_abort(IdsWriter *w);

/* Maps the cache at path into s (ids, starts, skips, map) and *hashes when it
 * is whole and valid for this key and vocabulary; -1 (s untouched) on a miss. */
int slm_ids_cache_read(const char *path, uint64_t key, const Tokenizer *t, Stories *s, const uint64_t **hashes);

#endif
