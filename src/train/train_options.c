/* Training's options: see include/storylm/train_options.h. */
#include "storylm/train_options.h"

#include <stdio.h>

TrainOptions slm_train_default_options(void) {
    return (TrainOptions){.arch = ARCH_ATTENTION,
                          .steps = 3000,
                          .lr = 3e-3,
                          .warmup = -1,
                          .min_lr_ratio = 0.1,
                          .batch = 8,
                          .seed = 1,
                          .threads = 0,
                          .eval_every = 250,
                          .max_positions = 4096,
                          .out = "model.safetensors"};
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
