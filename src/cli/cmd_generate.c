/* storylm generate PROMPT: let the network write on, token by token. */
#include <ctype.h>
#include <math.h>
#include <strings.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "args.h"
#include "common.h"
#include "probe_common.h"
#include "storylm/generate.h"
#include "storylm/sample.h"

static int run(int argc, char **argv);
const Command command_generate = {
    "generate", "continue a prompt with a trained model", "storylm generate [options] [PROMPT]",
    "Feeds [EOS] and the prompt's tokens to the model, then samples up to -n more tokens,\n"
    "stopping at the end of the story. Keys and values of earlier tokens are kept, not\n"
    "recomputed. --temperature 0 always takes the most likely token. With no PROMPT the\n"
    "model starts a story from nothing.",
    run};

/* Head ablation: --ablate, --ablate-mode, and --stories for the mean. */
typedef struct GenerateAblation {
    const char *heads, *mode, *stories;
} GenerateAblation;

static int generate(const char *path, const char *prompt, const GenerateAblation *ga, const ViewGenerateOptions *go,
                    Error *e) {
    LoadedModel lm;
    if (cli_load_model(&lm, path, e)) return -1;
    Ablation ab = {0};
    float *mean = NULL;
    char desc[160];
    char *out = NULL;
    int rc = cli_setup_ablation(&lm, ga->heads, ga->mode, NULL, ga->stories, STORIES_DEFAULT_TEST, &ab, &mean, desc,
                                sizeof desc, e);
    if (!rc && desc[0] && isatty(2)) fprintf(stderr, "storylm: %s\n", desc);
    if (!rc) rc = view_generate(&lm, &ab, prompt, go, &out, e);
    if (!rc) printf("%s\n", out);
    free(out);
    free(mean);
    cli_free_model(&lm);
    return rc;
}

static int run(int argc, char **argv) {
    ViewGenerateOptions go = {.max_tokens = 200, .top_k = 0, .temperature = 0.8, .top_p = 0.95};
    int seed = -1;
    const char *model = NULL, *pos[1] = {""};
    GenerateAblation ga = {.mode = "zero"};
    int np, threads = 1;
    Option opts[] = {
        {"model", 'm', OPT_STRING, &model, "FILE", "model file (default: ./" DEFAULT_MODEL_PATH ", else the shipped model)", 0, 0},
        {"tokens", 'n', OPT_INT, &go.max_tokens, "N", "most new tokens", 0, 1000000},
        {"temperature", 't', OPT_DOUBLE, &go.temperature, "T", "sampling temperature; 0 (or below 1e-4) = greedy", 0, 100},
        {"top-k", 'k', OPT_INT, &go.top_k, "K", "sample among the K most likely; 0 = all", 0, 1000000},
        {"top-p", 'p', OPT_DOUBLE, &go.top_p, "P", "sample among the most likely holding P of the probability", 1e-6, 1},
        {"seed", 's', OPT_INT, &seed, "N", "sampling seed; -1 = from the clock (printed)", -1, 2147483647},
        ABLATE_OPTIONS(ga.heads, ga.mode),
        ABLATE_STORIES_OPTION(ga.stories),
        {"threads", 0, OPT_INT, &threads, "N", "threads", 1, 256},
    };
    int rc = args_parse(&command_generate, argc, argv, opts, N_OPTIONS(opts), pos, 0, 1, &np);
    if (rc) return rc > 0 ? 0 : 2;
    if (probe_check_mode(&command_generate, ga.mode)) return 2;
    cli_set_threads(threads);
    if (seed < 0) {
        seed = (int)(((unsigned)time(NULL) ^ (unsigned)getpid() * 2654435761u) & 0x7fffffff);
        if (isatty(2)) fprintf(stderr, "storylm: seed %d (give --seed %d to repeat)\n", seed, seed);
    }
    go.seed = (uint64_t)seed;
    Error e = {0};
    if (generate(cli_model_path(model, false), pos[0], &ga, &go, &e)) return cli_fail(&e);
    return 0;
}
