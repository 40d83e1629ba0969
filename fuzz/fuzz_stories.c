/* Fuzzes the stories reader: any bytes as a stories file are split, encoded
 * and divided into training and held-out stories, or refused with a message.
 * What comes back must be well formed (every story [EOS] ... [EOS], ids in
 * the vocabulary, each story train or test exactly once), and reading the
 * file a second time, through the token-id cache the first read wrote, must
 * give the very same stories. */
#include "fuzz_util.h"

#include <dirent.h>
#include <string.h>

#include "storylm/stories.h"

/* A cache folder of this process, emptied before every input so it never grows. */
static const char *cache_dir(void) {
    static char dir[] = "/tmp/storylm-fuzz-cache-XXXXXX";
    static int made;
    if (!made) {
        if (!mkdtemp(dir)) abort();
        made = 1;
    }
    DIR *d = opendir(dir);
    if (!d) abort();
    struct dirent *ent;
    while ((ent = readdir(d)) != NULL) {
        if (ent->d_name[0] == '.') continue;
        char path[512];
        snprintf(path, sizeof path, "%s/%s", dir, ent->d_name);
        unlink(path);
    }
    closedir(d);
    return dir;
}

static void check_stories(const Stories *s, const Tokenizer *t) {
    FUZZ_ASSERT(s->n_stories >= 1 && s->starts[0] == 0 && s->starts[s->n_stories] == s->n_tokens);
    for (int i = 0; i < s->n_stories; i++) {
        size_t n = story_len(s, i);
        FUZZ_ASSERT(n > 2 && story_token(s, i, 0) == t->eos_id && story_token(s, i, n - 1) == t->eos_id);
        for (size_t j = 0; j < n; j++) FUZZ_ASSERT(story_token(s, i, j) >= 0 && story_token(s, i, j) < t->size);
    }
    FUZZ_ASSERT(s->n_test >= 0 && s->n_train >= 0 && s->n_test + s->n_train == s->n_stories);
    int test = 0, train = 0;
    for (int i = 0; i < s->n_stories; i++) { /* both lists ascending, together every story once */
        int in_test = test < s->n_test && s->test[test] == i, in_train = train < s->n_train && s->train[train] == i;
        FUZZ_ASSERT(in_test + in_train == 1);
        test += in_test, train += in_train;
    }
}

static int same_stories(const Stories *a, const Stories *b) {
    if (a->n_stories != b->n_stories) return 0;
    for (int i = 0; i < a->n_stories; i++)
        for (size_t j = 0; j < story_len(a, i) && j < story_len(b, i); j++)
            if (story_token(a, i, j) != story_token(b, i, j)) return 0;
    return a->n_tokens == b->n_tokens && a->n_test == b->n_test &&
           !memcmp(a->starts, b->starts, ((size_t)a->n_stories + 1) * sizeof *a->starts) &&
           !memcmp(a->test, b->test, (size_t)a->n_test * sizeof *a->test) &&
           !memcmp(&a->skips, &b->skips, sizeof a->skips);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const Tokenizer *t = fuzz_tokenizer();
    const char *path = fuzz_file(data, size);
    StoriesOptions o = slm_stories_default_options();
    o.cache_dir = cache_dir();
    o.n_test = size ? data[0] % 8 : 0; /* few stories: let the split itself vary */
    Stories first, second;
    Error e = {0};
    if (slm_stories_load(&first, path, t, &o, &e) != 0) {
        FUZZ_ASSERT(strstr(e.message, path) != NULL); /* refused, naming the file */
        return 0;
    }
    check_stories(&first, t);
    FUZZ_ASSERT(slm_stories_load(&second, path, t, &o, &e) == 0);
    FUZZ_ASSERT(second.from_cache);
    FUZZ_ASSERT(same_stories(&first, &second));
    slm_stories_free(&first);
    slm_stories_free(&second);
    return 0;
}
