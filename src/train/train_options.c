/* Training's options: see include/storylm/train_options.h. */
#include "storylm/train_options.h"
#include "storylm/train_params.h"

#include <stdio.h>

/* params_train's defaults, the one place they are written, and what no
 * parameter sets: the attention network, the cosine's floor, threads 0 (the
 * caller's: every core). */
TrainOptions slm_train_default_options(void) {
    TrainParams p = {0};
    slm_params_init(&params_train, &p);
    p.o.arch = slm_arch_default();
    p.o.seed = (uint64_t)p.seed;
    p.o.min_lr_ratio = 0.1;
    p.o.threads = 0;
    return p.o;
}

int slm_train_default_steps(int n_train, int batch) {
    long long stories = (long long)TRAIN_DEFAULT_PASSES * (n_train > 0 ? n_train : 1);
    long long steps = (stories + batch - 1) / (batch > 0 ? batch : 1);
    steps = (steps + 49) / 50 * 50;
    return steps < TRAIN_MAX_DEFAULT_STEPS ? (int)steps : TRAIN_MAX_DEFAULT_STEPS;
}

int slm_train_default_eval_every(int steps) {
    int every = steps / 10;
    if (every < 10) every = 10;
    return every < TRAIN_MAX_DEFAULT_EVAL_EVERY ? every : TRAIN_MAX_DEFAULT_EVAL_EVERY;
}

int slm_train_check_story_count(int n_stories, const StorySkips *skips, const char *path, Error *e) {
    if (n_stories >= TRAIN_MIN_STORIES) return 0;
    char hint[600];
    if (skips && slm_stories_encoding_hint(skips, n_stories, path, hint, sizeof hint)) /* the likely cause */
        return FAIL(e, hint, "'%s' holds %d usable %s; training needs at least %d", path, n_stories,
                    n_stories == 1 ? "story" : "stories", TRAIN_MIN_STORIES);
    int n = snprintf(hint, sizeof hint, "%s",
                     "give at least 20 stories (a few hundred learn far more; docs/guide.md), separated by a line "
                     "holding only <|endoftext|> or by blank lines; a file without either is read as one story");
    if (n_stories == 1) /* most likely one story a line */
        snprintf(hint + n, sizeof hint - (size_t)n,
                 "; if each line is a story, put a blank line after each: sed G '%.200s' > stories.txt", path);
    return FAIL(e, hint, "'%s' holds %d %s; training needs at least %d", path, n_stories,
                n_stories == 1 ? "story" : "stories", TRAIN_MIN_STORIES);
}
