/* storylm stories STORIES: what the reader makes of a stories file: counts,
 * skips, the held-out split, and the token ids (for tools outside storylm). */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "args.h"
#include "common.h"
#include "storylm/train_params.h"
#include "storylm/probe_views.h"
#include "storylm/stories.h"

static int run(int argc, char **argv);
const Command command_stories = {
    "stories", "count a stories file's stories and tokens, export the held-out split",
    "storylm stories STORIES [options]",
    "Reads STORIES as training does (the vocabulary from --vocab, --model, ./model.safetensors,\n"
    "else ./vocab.txt as train would use it, else the shipped model's) and prints\n"
    "how many stories and tokens it holds, how many were skipped and why, and which are\n"
    "held out for testing. With --ids, prints the token ids of the --split stories instead,\n"
    "one story a line ([EOS] first and last), for checking storylm against other tools.",
    run};

typedef struct StoriesArgs {
    const char *stories, *model, *vocab, *split;
    bool ids, json;
    int n_test;
} StoriesArgs;

static const Param stories_params[] = {
    {.name = "model",
     .short_name = 'm',
     .type = PARAM_STRING,
     .offset = offsetof(StoriesArgs, model),
     .meta = "FILE",
     .help = "take the vocabulary from this model (default: ./" DEFAULT_MODEL_PATH ", else the shipped model)"},
    {.name = "vocab",
     .type = PARAM_STRING,
     .offset = offsetof(StoriesArgs, vocab),
     .meta = "FILE",
     .help = "take the vocabulary from this vocab.txt instead (shipped: the shipped model's)"},
    {.name = "ids",
     .type = PARAM_BOOL,
     .offset = offsetof(StoriesArgs, ids),
     .help = "print token ids, one story a line"},
    {.name = "json", .type = PARAM_BOOL, .offset = offsetof(StoriesArgs, json), .help = "print the summary as JSON"},
    {.name = "split",
     .type = PARAM_STRING,
     .offset = offsetof(StoriesArgs, split),
     .meta = "NAME",
     .help = "with --ids: test, train or all",
     .def_string = "test",
     .choices = "test,train,all"},
    {.name = "test-stories",
     .type = PARAM_INT,
     .offset = offsetof(StoriesArgs, n_test),
     .meta = "N",
     .help = "held-out test stories (as in training)",
     .min = 0,
     .max = 100000,
     .def = STORIES_DEFAULT_TEST},
    {.name = "STORIES",
     .type = PARAM_STRING,
     .offset = offsetof(StoriesArgs, stories),
     .flags = PARAM_POSITIONAL | PARAM_REQUIRED},
};
static const ParamTable stories_table = {"stories", stories_params, PARAMS_COUNT(stories_params)};

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

/* Neither --model nor --vocab nor ./model.safetensors: the tokens are counted
 * with the vocabulary `storylm train STORIES` would use here, ./vocab.txt
 * when it is there (said on stderr); else the shipped model's, and train
 * would learn one from the file. */
static void run_vocab(StoriesArgs *a) {
    if (a->vocab || a->model || slm_data_file_exists(DEFAULT_MODEL_PATH)) return; /* the model here, as before */
    if (slm_data_file_exists(TRAIN_DEFAULT_VOCAB)) {
        a->vocab = TRAIN_DEFAULT_VOCAB;
        fprintf(stderr,
                "storylm: counting with the vocabulary in %s, as train would (--model M counts with a "
                "model's)\n",
                TRAIN_DEFAULT_VOCAB);
    } else {
        fprintf(stderr, "storylm: no %s here: train would learn one from %s; counting with a model's vocabulary\n",
                TRAIN_DEFAULT_VOCAB, a->stories);
    }
}

static int run(int argc, char **argv) {
    StoriesArgs a = {0};
    slm_params_init(&stories_table, &a);
    int rc = args_parse(&command_stories, argc, argv, &stories_table, &a, NULL);
    if (rc) return rc > 0 ? 0 : 2;
    if (a.ids && a.json) return args_usage_error(&command_stories, "--ids and --json do not go together");
    Error e = {0};
    run_vocab(&a);
    if ((a.vocab && !(a.vocab = cli_vocab_path(a.vocab, &e))) || show(&a, a.stories, &e)) return cli_fail(&e);
    return 0;
}
