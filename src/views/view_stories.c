/* What the reader makes of a stories file (stories): the verb's work, see probe_views.h. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>

#include "storylm/probe_views.h"

int slm_view_stories_open(ViewStories *vs, const LoadedModel *lm, const char *vocab, const char *path, int n_test,
                          Error *e) {
    *vs = (ViewStories){.vocab = vocab, .path = path};
    const Tokenizer *tok = &vs->own;
    int rc;
    if (vocab)
        rc = slm_tokenizer_load(&vs->own, vocab, 0, e);
    else
        vs->lm = lm, tok = &lm->tokenizer, rc = 0;
    StoriesOptions so = slm_stories_default_options();
    so.n_test = n_test;
    return rc ? rc : slm_stories_load(&vs->stories, path, tok, &so, e);
}

void slm_view_stories_close(ViewStories *vs) {
    slm_stories_free(&vs->stories);
    slm_tokenizer_free(&vs->own);
}

static void print_ids(FILE *out, const Stories *s, const int *idx, int n) {
    for (int i = 0; i < n; i++) {
        size_t len = story_len(s, idx[i]);
        for (size_t j = 0; j < len; j++) fprintf(out, j ? " %d" : "%d", story_token(s, idx[i], j));
        fprintf(out, "\n");
    }
}

int slm_view_stories_ids(const ViewStories *vs, const char *split, FILE *out, Error *e) {
    const Stories *s = &vs->stories;
    if (strcmp(split, "test") == 0)
        print_ids(out, s, s->test, s->n_test);
    else if (strcmp(split, "train") == 0)
        print_ids(out, s, s->train, s->n_train);
    else if (strcmp(split, "all") == 0)
        for (int i = 0; i < s->n_stories; i++) print_ids(out, s, &i, 1);
    else
        return FAIL(e, "give --split test, train or all", "--split must be test, train or all, not '%s'", split);
    return 0;
}

void slm_view_stories_print(const ViewStories *vs, FILE *out) {
    const Stories *s = &vs->stories;
    const char *path = vs->path;
    fprintf(out, "file         %s\n", path);
    fprintf(out, "stories      %d (%d for training, %d held out for testing)\n", s->n_stories, s->n_train, s->n_test);
    fprintf(out, "tokens       %zu ([EOS] at both ends of each story included)\n", s->n_tokens);
    fprintf(out, "skipped      %d empty, %d invalid UTF-8 or NUL, %d too long\n", s->skips.empty, s->skips.invalid_utf8,
            s->skips.too_long);
    fprintf(out, "test stories");
    for (int i = 0; i < s->n_test; i++) fprintf(out, "%s%d", i ? "," : " ", s->test[i]);
    fprintf(out, "\n");
}

/* The summary as JSON (docs/json.md): the vocabulary's source, the stories
 * with the split, the tokens, the skips, the held-out stories' numbers. */
cJSON *slm_view_stories_json(const ViewStories *vs) {
    const Stories *s = &vs->stories;
    cJSON *j = slm_view_json_begin("stories");
    if (vs->vocab)
        cJSON_AddStringToObject(j, "vocab", vs->vocab);
    else
        slm_view_json_model(j, &vs->lm->model, vs->lm->path);
    slm_view_json_stories(j, vs->path, s);
    cJSON_AddNumberToObject(j, "train_stories", s->n_train);
    cJSON_AddNumberToObject(j, "tokens", (double)s->n_tokens);
    cJSON *skipped = cJSON_AddObjectToObject(j, "skipped");
    cJSON_AddNumberToObject(skipped, "empty", s->skips.empty);
    cJSON_AddNumberToObject(skipped, "invalid_utf8", s->skips.invalid_utf8);
    cJSON_AddNumberToObject(skipped, "too_long", s->skips.too_long);
    cJSON *test = cJSON_AddArrayToObject(j, "test");
    for (int i = 0; i < s->n_test; i++) cJSON_AddItemToArray(test, cJSON_CreateNumber(s->test[i]));
    return j;
}
