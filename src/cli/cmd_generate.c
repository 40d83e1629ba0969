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

typedef struct GenerateOptions {
    int n, top_k, seed;
    double temperature, top_p;
} GenerateOptions;

static int all_finite(const float *x, int n) {
    for (int i = 0; i < n; i++)
        if (!isfinite(x[i])) return 0;
    return 1;
}

/* Feeds [EOS] + prompt, samples, appends to ids. */
static int write_on(const LoadedModel *lm, const Ablation *ab, const GenerateOptions *go, IntVec *ids, Error *e) {
    Generator g;
    Sampler smp;
    if (generator_init(&g, &lm->model, ab, e)) return -1;
    if (sampler_init(&smp, lm->model.cfg.vocab_size, (float)go->temperature, go->top_k, (float)go->top_p,
                     (uint64_t)go->seed, e)) {
        generator_free(&g);
        return -1;
    }
    const float *logits = generator_feed(&g, lm->tokenizer.eos_id);
    for (size_t i = 0; i < ids->len; i++) logits = generator_feed(&g, ids->data[i]);
    int rc = 0;
    for (int i = 0; i < go->n && !rc; i++) {
        if (!all_finite(logits, lm->model.cfg.vocab_size)) { /* a damaged model: say so rather than write noise */
            rc = FAIL(e, "train or save the model again (storylm info counts NaN and infinite weights)",
                      "'%s' gives NaN or infinite logits at token %zu: its weights hold NaN, infinite or huge numbers",
                      lm->path, ids->len);
            break;
        }
        int next = sampler_sample(&smp, logits);
        if (next == lm->tokenizer.eos_id) break;
        rc = intvec_push(ids, next, e);
        logits = generator_feed(&g, next);
    }
    sampler_free(&smp);
    generator_free(&g);
    return rc;
}

/* Head ablation: --ablate, --ablate-mode, and --stories for the mean. */
typedef struct GenerateAblation {
    const char *heads, *mode, *stories;
} GenerateAblation;

/* The tokenizer lower-cases everything; words the prompt wrote with a capital
 * (its names, usually) get their capital back wherever they come again. */
static void recapitalize(char *text, const char *prompt) {
    for (const char *p = prompt; *p;) {
        while (*p && !isalpha((unsigned char)*p)) p++;
        const char *w = p;
        while (*p && isalnum((unsigned char)*p)) p++;
        size_t n = (size_t)(p - w);
        if (n < 2 || !isupper((unsigned char)w[0])) continue;
        for (char *t = text; *t; t++) {
            if (strncasecmp(t, w, n) != 0 || (t > text && isalnum((unsigned char)t[-1])) || isalnum((unsigned char)t[n]))
                continue;
            t[0] = (char)toupper((unsigned char)t[0]);
        }
    }
}

static int generate(const char *path, const char *prompt, const GenerateAblation *ga, const GenerateOptions *go,
                    Error *e) {
    LoadedModel lm;
    if (cli_load_model(&lm, path, e)) return -1;
    IntVec ids = {0};
    Ablation ab = {0};
    float *mean = NULL;
    char desc[160];
    int rc = cli_setup_ablation(&lm, ga->heads, ga->mode, NULL, ga->stories, STORIES_DEFAULT_TEST, &ab, &mean, desc,
                                sizeof desc, e);
    if (!rc && desc[0] && isatty(2)) fprintf(stderr, "storylm: %s\n", desc);
    if (!rc) rc = tokenizer_encode(&lm.tokenizer, prompt, strlen(prompt), &ids, e);
    if (!rc) rc = write_on(&lm, &ab, go, &ids, e);
    char *text = rc ? NULL : tokenizer_decode(&lm.tokenizer, ids.data, ids.len, 1, e);
    if (text) {
        recapitalize(text, prompt);
        printf("%s\n", text);
    }
    else rc = -1;
    free(text);
    free(mean);
    intvec_free(&ids);
    cli_free_model(&lm);
    return rc;
}

static int run(int argc, char **argv) {
    GenerateOptions go = {.n = 200, .top_k = 0, .seed = -1, .temperature = 0.8, .top_p = 0.95};
    const char *model = NULL, *pos[1] = {""};
    GenerateAblation ga = {.mode = "zero"};
    int np, threads = 1;
    Option opts[] = {
        {"model", 'm', OPT_STRING, &model, "FILE", "model file (default: ./" DEFAULT_MODEL_PATH ", else the shipped model)", 0, 0},
        {"tokens", 'n', OPT_INT, &go.n, "N", "most new tokens", 0, 1000000},
        {"temperature", 't', OPT_DOUBLE, &go.temperature, "T", "sampling temperature; 0 (or below 1e-4) = greedy", 0, 100},
        {"top-k", 'k', OPT_INT, &go.top_k, "K", "sample among the K most likely; 0 = all", 0, 1000000},
        {"top-p", 'p', OPT_DOUBLE, &go.top_p, "P", "sample among the most likely holding P of the probability", 1e-6, 1},
        {"seed", 's', OPT_INT, &go.seed, "N", "sampling seed; -1 = from the clock (printed)", -1, 2147483647},
        {"ablate", 0, OPT_STRING, &ga.heads, "HEADS", "switch heads off, e.g. 3,5", 0, 0},
        {"ablate-mode", 0, OPT_STRING, &ga.mode, "MODE", ABLATE_HELP_MODE, 0, 0},
        {"stories", 0, OPT_STRING, &ga.stories, "FILE",
         "stories for --ablate-mode mean (default: the file the model was trained on, from its metadata)", 0, 0},
        {"threads", 0, OPT_INT, &threads, "N", "threads", 1, 256},
    };
    int rc = args_parse(&command_generate, argc, argv, opts, N_OPTIONS(opts), pos, 0, 1, &np);
    if (rc) return rc > 0 ? 0 : 2;
    if (probe_check_mode(&command_generate, ga.mode)) return 2;
    cli_set_threads(threads);
    if (go.seed < 0) {
        go.seed = (int)(((unsigned)time(NULL) ^ (unsigned)getpid() * 2654435761u) & 0x7fffffff);
        if (isatty(2)) fprintf(stderr, "storylm: seed %d (give --seed %d to repeat)\n", go.seed, go.seed);
    }
    Error e = {0};
    if (generate(cli_model_path(model, false), pos[0], &ga, &go, &e)) return cli_fail(&e);
    return 0;
}
