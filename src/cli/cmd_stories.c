/* storylm stories STORIES: what the reader makes of a stories file: counts,
 * skips, the held-out split, and the token ids (for tools outside storylm). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "common.h"

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

static void print_ids(const Stories *s, const int *idx, int n) {
    for (int i = 0; i < n; i++) {
        size_t len = story_len(s, idx[i]);
        for (size_t j = 0; j < len; j++) printf(j ? " %d" : "%d", story_token(s, idx[i], j));
        printf("\n");
    }
}

static void print_summary(const Stories *s, const char *path) {
    printf("file         %s\n", path);
    printf("stories      %d (%d for training, %d held out for testing)\n", s->n_stories, s->n_train, s->n_test);
    printf("tokens       %zu ([EOS] at both ends of each story included)\n", s->n_tokens);
    printf("skipped      %d empty, %d invalid UTF-8 or NUL, %d too long\n", s->skips.empty, s->skips.invalid_utf8,
           s->skips.too_long);
    printf("test stories");
    for (int i = 0; i < s->n_test; i++) printf("%s%d", i ? "," : " ", s->test[i]);
    printf("\n");
}

/* The summary as JSON (docs/json.md): the vocabulary's source, the stories
 * with the split, the tokens, the skips, the held-out stories' numbers. */
static int print_json(const StoriesArgs *a, const LoadedModel *lm, const Stories *s, const char *path, Error *e) {
    cJSON *j = cli_json_begin("stories");
    if (a->vocab)
        cJSON_AddStringToObject(j, "vocab", a->vocab);
    else
        cli_json_model(j, &lm->model, lm->path);
    cli_json_stories(j, path, s);
    cJSON_AddNumberToObject(j, "train_stories", s->n_train);
    cJSON_AddNumberToObject(j, "tokens", (double)s->n_tokens);
    cJSON *skipped = cJSON_AddObjectToObject(j, "skipped");
    cJSON_AddNumberToObject(skipped, "empty", s->skips.empty);
    cJSON_AddNumberToObject(skipped, "invalid_utf8", s->skips.invalid_utf8);
    cJSON_AddNumberToObject(skipped, "too_long", s->skips.too_long);
    cJSON *test = cJSON_AddArrayToObject(j, "test");
    for (int i = 0; i < s->n_test; i++) cJSON_AddItemToArray(test, cJSON_CreateNumber(s->test[i]));
    return cli_json_print(j, e);
}

static int show(const StoriesArgs *a, const char *path, Error *e) {
    LoadedModel lm = {0};
    Tokenizer own = {0};
    const Tokenizer *tok = &own;
    int rc;
    if (a->vocab)
        rc = slm_tokenizer_load(&own, a->vocab, 0, e);
    else {
        rc = slm_loaded_model_load(&lm, cli_model_path(a->model, a->json), e); /* which vocabulary, said on stderr */
        tok = &lm.tokenizer;
    }
    Stories s = {0};
    StoriesOptions so = slm_stories_default_options();
    so.n_test = a->n_test;
    if (!rc) rc = slm_stories_load(&s, path, tok, &so, e);
    if (!rc && a->ids) {
        if (strcmp(a->split, "test") == 0)
            print_ids(&s, s.test, s.n_test);
        else if (strcmp(a->split, "train") == 0)
            print_ids(&s, s.train, s.n_train);
        else
            for (int i = 0; i < s.n_stories; i++) print_ids(&s, &i, 1);
    } else if (!rc && a->json) {
        rc = print_json(a, &lm, &s, path, e);
    } else if (!rc) {
        print_summary(&s, path);
    }
    slm_stories_free(&s);
    slm_tokenizer_free(&own);
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
