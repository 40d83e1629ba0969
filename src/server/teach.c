/* A model's teaching stories: the stories the page's test-story picker,
 * Secret 1, Secrets 3 and 4 and the mean ablation read for that model. They
 * come from the model's own training data, which its record names (file
 * name, size, FNV-1a hash: storylm info):
 *   1. the training file itself, beside the server's --stories, the model or
 *      its folder's parent, when its size and hash match the record (the
 *      project's data/stories.txt for a model trained on it, an upload the
 *      page trained on); its held-out test stories, as the CLI holds them out;
 *   2. else the held-out stories shipped beside the model: for a record of
 *      NAME-train.txt, NAME-test.txt in the model's folder or its parent (the
 *      shipped models' 100 test stories, models/tinystories-test.txt); every
 *      story of it is a test story, and the names are learnt from all of it;
 *   3. else the server's --stories, as before (the mean ablation then warns
 *      as the CLI does). */
#define _XOPEN_SOURCE 700
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server_internal.h"
#include "storylm/fileio.h"
#include "storylm/record.h"

/* The folder of path with its '/', or "" for the working directory. */
static void folder_of(const char *path, char *out, size_t size) {
    snprintf(out, size, "%s", path);
    char *slash = strrchr(out, '/');
    if (slash)
        slash[1] = '\0';
    else
        out[0] = '\0';
}

/* Whether dir/name is the recorded training file (its size and hash). */
static int is_recorded(const StoriesRecord *rec, const char *path) {
    Error e = {0};
    return slm_data_file_exists(path) && slm_record_check_file(rec, path, NULL, 0, &e) == 1;
}

/* Fills m->teach and m->teach_all_test (see the top of the file). */
static void teach_find(ModelEntry *m, const char *fallback) {
    StoriesRecord rec;
    slm_record_from_metadata(&rec, &m->ps.lm.meta);
    snprintf(m->teach, sizeof m->teach, "%s", fallback);
    m->teach_all_test = 0;
    if (!rec.name[0] || !rec.has_sums || strchr(rec.name, '/')) return;
    char dirs[3][PATH_MAX], path[PATH_MAX];
    folder_of(fallback, dirs[0], PATH_MAX);
    folder_of(m->path, dirs[1], PATH_MAX);
    if (snprintf(dirs[2], PATH_MAX, "%s../", dirs[1]) >= PATH_MAX) return;
    if (is_recorded(&rec, fallback)) return;
    for (int i = 0; i < 3; i++) {
        if (snprintf(path, sizeof path, "%s%s", dirs[i], rec.name) < (int)sizeof path && is_recorded(&rec, path)) {
            snprintf(m->teach, sizeof m->teach, "%s", path);
            return;
        }
    }
    char held[300];
    size_t n = strlen(rec.name), tail = strlen("-train.txt");
    if (n <= tail || strcmp(rec.name + n - tail, "-train.txt") != 0) return;
    snprintf(held, sizeof held, "%.*s-test.txt", (int)(n - tail), rec.name);
    for (int i = 1; i < 3; i++) {
        if (snprintf(path, sizeof path, "%s%s", dirs[i], held) < (int)sizeof path && slm_data_file_exists(path)) {
            snprintf(m->teach, sizeof m->teach, "%s", path);
            m->teach_all_test = 1;
            return;
        }
    }
}

/* Every story of ps->stories a test story (a file of held-out stories only). */
static int all_test(Stories *s, Error *e) {
    int *test = xmalloc((size_t)s->n_stories * sizeof *test, e);
    if (!test) return -1;
    for (int i = 0; i < s->n_stories; i++) test[i] = i;
    free(s->test);
    s->test = test;
    s->n_test = s->n_stories;
    s->n_train = 0;
    return 0;
}

/* The names of every story of ps->stories_path (no training story to learn them from). */
static int names_of_all(ProbeSession *ps, Error *e) {
    char *text;
    size_t len;
    StorySpan *spans = NULL;
    int n = 0;
    if (slm_file_read_all(ps->stories_path, 0, &text, &len, e)) return -1;
    int rc = slm_stories_split(text, len, ps->stories_path, &spans, &n, NULL, e);
    uint8_t *use = rc ? NULL : xmalloc((size_t)n + 1, e);
    if (!rc && !use) rc = -1;
    if (!rc) {
        memset(use, 1, (size_t)n);
        rc = slm_names_learn(&ps->names, text, spans, n, use, e);
        ps->names_from_all = 1;
    }
    free(use);
    free(spans);
    free(text);
    return rc;
}

/* Finds m's teaching stories (its training file, else the held-out
 * stories shipped beside it, else fallback) and loads them into m->ps. */
static int teach_load(ModelCache *c, ModelEntry *m, const char *fallback, Error *e) {
    teach_find(m, fallback);
    m->ps.stories_path = m->teach;
    if (!m->teach_all_test) return cache_read_stories(c, &m->ps, PROBE_NAMES, e);
    int rc = cache_read_stories(c, &m->ps, 0, e);
    if (!rc) rc = all_test(&m->ps.stories, e);
    if (!rc) rc = names_of_all(&m->ps, e);
    return rc;
}

int entry_stories(ModelCache *c, ModelEntry *m, const char *stories_path, Error *e) {
    pthread_mutex_lock(&m->lock);
    int rc = 0;
    if (!m->stories_loaded) {
        rc = teach_load(c, m, stories_path, e); /* the model's own teaching stories, else stories_path */
        if (rc) {
            slm_stories_free(&m->ps.stories);
            slm_names_free(&m->ps.names);
            m->ps.stories = (Stories){0};
            m->ps.names = (NameList){0};
            m->ps.stories_path = NULL;
        }
        m->stories_loaded = !rc;
    }
    pthread_mutex_unlock(&m->lock);
    return rc;
}
