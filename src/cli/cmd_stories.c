/* storylm stories STORIES: what the reader makes of a stories file: counts,
 * skips, the held-out split, and the token ids (for tools outside storylm). */
#include <stdio.h>
#include <string.h>

#include "args.h"
#include "common.h"
#include "storylm/probe_views.h"
#include "storylm/stories.h"

static int run(int argc, char **argv);
const Command command_stories = {
    "stories", "count a stories file's stories and tokens, export the held-out split",
    "storylm stories STORIES [options]",
    "Reads STORIES as training does (the vocabulary from --model, or --vocab) and prints\n"
    "how many stories and tokens it holds, how many were skipped and why, and which are\n"
    "held out for testing. With --ids, prints the token ids of the --split stories instead,\n"
    "one story a line ([EOS] first and last), for checking storylm against other tools.",
    run};

typedef struct StoriesArgs {
    const char *model, *vocab, *split;
    bool ids, json;
    int n_test;
} StoriesArgs;

static int show(const StoriesArgs *a, const char *path, Error *e) {
    LoadedModel lm = {0};
    /* which vocabulary: said on stderr */
    int rc = a->vocab ? 0 : slm_loaded_model_load(&lm, cli_model_path(a->model, a->json), e);
    ViewStories vs = {0};
    if (!rc) rc = slm_view_stories_open(&vs, &lm, a->vocab, path, a->n_test, e);
    if (!rc && a->ids)
        rc = slm_view_stories_ids(&vs, a->split, stdout, e);
    else if (!rc && a->json)
        rc = cli_json_print(slm_view_stories_json(&vs), e);
    else if (!rc)
        slm_view_stories_print(&vs, stdout);
    char hint[600];
    if (!rc && slm_stories_encoding_hint(&vs.stories.skips, vs.stories.n_stories, path, hint, sizeof hint))
        fprintf(stderr, "storylm: warning: %s\n", hint);
    slm_view_stories_close(&vs);
    if (!a->vocab) slm_loaded_model_free(&lm);
    return rc;
}

static int run(int argc, char **argv) {
    StoriesArgs a = {.split = "test", .n_test = STORIES_DEFAULT_TEST};
    const char *pos[1];
    int np;
    Option opts[] = {
        {"model", 'm', OPT_STRING, &a.model, "FILE",
         "take the vocabulary from this model (default: ./" DEFAULT_MODEL_PATH ", else the shipped model)", 0, 0},
        {"vocab", 0, OPT_STRING, &a.vocab, "FILE", "take the vocabulary from this vocab.txt instead", 0, 0},
        {"ids", 0, OPT_BOOL, &a.ids, NULL, "print token ids, one story a line", 0, 0},
        {"json", 0, OPT_BOOL, &a.json, NULL, "print the summary as JSON", 0, 0},
        {"split", 0, OPT_STRING, &a.split, "NAME", "with --ids: test, train or all", 0, 0},
        {"test-stories", 0, OPT_INT, &a.n_test, "N", "held-out test stories (as in training)", 0, 100000},
    };
    int rc = args_parse(&command_stories, argc, argv, opts, N_OPTIONS(opts), pos, 1, 1, &np);
    if (rc) return rc > 0 ? 0 : 2;
    if (a.ids && a.json) return args_usage_error(&command_stories, "--ids and --json do not go together");
    if (strcmp(a.split, "test") && strcmp(a.split, "train") && strcmp(a.split, "all"))
        return args_usage_error(&command_stories, "--split must be test, train or all, not '%s'", a.split);
    Error e = {0};
    if (show(&a, pos[0], &e)) return cli_fail(&e);
    return 0;
}
