/* A stories file's token ids: see include/storylm/story_ids.h. */
#include "storylm/story_ids.h"

#include <stdlib.h>

#include "storylm/filemap.h"
#include "storylm/fileio.h"

StoriesOptions slm_stories_default_options(void) {
    return (StoriesOptions){.n_test = STORIES_DEFAULT_TEST, .cache_dir = NULL, .use_cache = 1};
}

void slm_stories_free(Stories *s) {
    if (s->map) {
        FileMap m = {.data = s->map, .len = s->map_len};
        slm_file_unmap(&m);
    }
    free(s->starts_own);
    free(s->test);
    free(s->train);
    *s = (Stories){0};
}

const int32_t *slm_story_ids(const Stories *s, int i, StoryBuf *b, Error *e) {
    if (!s->ids16) return s->ids32 + s->starts[i];
    size_t n = story_len(s, i);
    if (n > b->cap) {
        int32_t *p = xrealloc(b->ids, n * sizeof *p, e);
        if (!p) return NULL;
        b->ids = p;
        b->cap = n;
    }
    story_copy_ids(s, i, b->ids);
    return b->ids;
}

void slm_story_buf_free(StoryBuf *b) {
    free(b->ids);
    *b = (StoryBuf){0};
}

uint64_t slm_stories_hash_ids(const Stories *s, uint64_t seed) {
    if (!s->ids16) return slm_hash64(s->ids32, s->n_tokens * sizeof(int32_t), seed);
    const uint64_t basis = slm_hash64(NULL, 0, 0);
    uint64_t h = slm_hash64(NULL, 0, seed);
    int32_t chunk[4096];
    for (size_t at = 0; at < s->n_tokens;) {
        size_t n = s->n_tokens - at < 4096 ? s->n_tokens - at : 4096;
        for (size_t j = 0; j < n; j++) chunk[j] = s->ids16[at + j];
        h = slm_hash64(chunk, n * sizeof(int32_t), h ^ basis);
        at += n;
    }
    return h;
}
