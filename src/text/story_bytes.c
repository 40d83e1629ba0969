/* The stories' text bytes, loss per character's divisor: see
 * slm_stories_text_bytes in include/storylm/stories.h. */
#include <stdlib.h>

#include "storylm/filemap.h"
#include "storylm/stories.h"

/* keep (n_spans) = 1 for the spans that encoded to a token (the stories s
 * holds, in order); the others (only spaces of other kinds, control
 * characters) were left out as empty. */
static int spans_kept(const char *text, const StorySpan *spans, int n_spans, const Tokenizer *t, char *keep, Error *e) {
    IntVec ids = {0};
    for (int i = 0; i < n_spans; i++) {
        ids.len = 0;
        if (slm_tokenizer_encode(t, text + spans[i].offset, spans[i].len, &ids, e)) {
            slm_intvec_free(&ids);
            return -1;
        }
        keep[i] = ids.len > 0;
    }
    slm_intvec_free(&ids);
    return 0;
}

/* story (n_stories) = each story's text bytes, from the file's spans. */
static int story_text_bytes(const Stories *s, const char *path, const Tokenizer *t, long long *story, Error *e) {
    FileMap text;
    if (slm_file_map(&text, path, e)) return -1;
    StorySpan *spans = NULL;
    int n_spans = 0, rc = slm_stories_split(text.data, text.len, path, &spans, &n_spans, NULL, e);
    char *keep = rc ? NULL : xmalloc((size_t)n_spans + 1, e);
    if (!keep) rc = -1;
    for (int i = 0; !rc && i < n_spans; i++) keep[i] = 1;
    if (!rc && n_spans != s->n_stories) rc = spans_kept(text.data, spans, n_spans, t, keep, e);
    int k = 0;
    for (int i = 0; !rc && i < n_spans; i++)
        if (keep[i] && k < s->n_stories) story[k++] = (long long)spans[i].len;
    if (!rc && k != s->n_stories)
        rc = FAIL(e, "evaluate the file the stories were read from, unchanged", "'%s' now holds %d stories, not %d",
                  path, k, s->n_stories);
    free(keep);
    free(spans);
    slm_file_unmap(&text);
    return rc;
}

int slm_stories_text_bytes(const Stories *s, const char *path, const Tokenizer *t, const int *idx, int n,
                           long long *bytes, Error *e) {
    *bytes = 0;
    long long *story = xmalloc(((size_t)s->n_stories + 1) * sizeof *story, e);
    if (!story) return -1;
    int rc = story_text_bytes(s, path, t, story, e);
    for (int i = 0; !rc && i < n; i++) *bytes += story[idx[i]] + 1; /* + the closing [EOS] */
    free(story);
    return rc;
}
