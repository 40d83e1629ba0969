/* storylm generate PROMPT: let the network write on, token by token. */
#include <ctype.h>
#include <math.h>
#include <strings.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "args.h"
#include "common.h"
#include "probe_common.h"
#include "storylm/clock.h"
#include "storylm/fileio.h"
#include "storylm/generate.h"
#include "storylm/generate_output.h"
#include "storylm/sample.h"
#include "storylm/views.h"

static int run(int argc, char **argv);
const Command command_generate = {
    "generate", "continue a prompt with a trained model", "storylm generate [options] [PROMPT | -]",
    "Feeds [EOS] and the prompt's tokens to the model, then samples up to -n more tokens,\n"
    "stopping at the end of the story, and prints the prompt as typed with the story\n"
    "written on, word by word as it comes. Keys and values of earlier tokens are kept,\n"
    "not recomputed. PROMPT - (or no PROMPT with a pipe or file on stdin) reads the\n"
    "prompt from stdin, -f FILE from a file, the final newline dropped; no PROMPT\n"
    "otherwise starts a story from nothing.\n"
    "\n"
    "The short flags are llama2.c's run: -t temperature (not threads: those are\n"
    "--threads; --temp is -t too), -p top-p, -s seed, -n tokens. Sampling, in order:\n"
    "the repeat penalty (llama.cpp's: each distinct token of the story's last\n"
    "--repeat-last-n, prompt included, has a positive logit divided by the penalty, a\n"
    "negative one multiplied), min-p's cut (tokens less than P times as likely as the\n"
    "likeliest go), the temperature (0 always takes the most likely token), top-k,\n"
    "top-p. --stop STRING (repeatable) ends the story where the text first holds one\n"
    "of them, even across tokens: the text ends before it (stop reason \"stop\").\n"
    "--json gives each new token its log-probability under the model (softmax of its\n"
    "logits at temperature 1, before penalty and cuts) and, with --n-probs K, the K\n"
    "likeliest tokens at that place with theirs.\n"
    "\n"
    "--samples N writes N stories computed together (one pass over the weights a step\n"
    "for all of them): sample i (from 1) draws with seed SEED + i - 1, so --samples 1\n"
    "--seed SEED+i-1 writes it again. The seed is always printed on stderr.\n"
    "\n"
    "Names the model writes get a capital: the names learnt from the capitals of the\n"
    "stories of --stories, else of the file the model was trained on (when it is there),\n"
    "else of data/stories.txt (here or in the source tree); without one, only the words\n"
    "the prompt capitalised. A prompt mostly of [UNK] tokens gets a warning naming the\n"
    "characters the vocabulary does not know.",
    run};

/* Head ablation: --ablate, --ablate-mode, and --stories for the mean. */
typedef struct GenerateAblation {
    const char *heads, *mode, *stories;
} GenerateAblation;

typedef struct GenerateFlags {
    GenerateAblation ga;
    ViewGenerateOptions go;
    StringList stops;
    int samples;
    bool json;
} GenerateFlags;

/* stdin is a pipe or a file (not a terminal, not /dev/null): no PROMPT reads it. */
static int stdin_has_prompt(void) {
    struct stat st;
    return fstat(0, &st) == 0 && (S_ISFIFO(st.st_mode) || S_ISREG(st.st_mode));
}

/* Warns when most of the prompt's tokens are [UNK], naming the characters. */
static int warn_unknown(const Tokenizer *t, const char *prompt, PromptUnknown *pu, Error *e) {
    char chars[256];
    if (slm_view_prompt_unknown(t, prompt, pu, chars, sizeof chars, e)) return -1;
    if (!slm_view_prompt_mostly_unknown(pu)) return 0;
    fprintf(stderr, "storylm: warning: %d of the prompt's %d tokens are [UNK]", pu->unk, pu->tokens);
    if (pu->n_chars) fprintf(stderr, ": the vocabulary does not know %s", chars);
    fprintf(stderr, "\n---> HINT: write the prompt in the alphabet of the training stories\n");
    return 0;
}

/* The stories, once the model, the ablation and the names are ready. */
static int write_stories(const LoadedModel *lm, const Ablation *ab, const char *prompt, GenerateFlags *f,
                         const char *names_from, Error *e) {
    PromptUnknown pu;
    if (warn_unknown(&lm->tokenizer, prompt, &pu, e)) return -1;
    ViewBatch vb;
    if (slm_view_batch_init(&vb, lm, ab, prompt, &f->go, f->samples, e)) return -1;
    double start = slm_clock_seconds(), cpu_start = slm_clock_cpu_seconds();
    struct stat st; /* a pipe or a terminal gets each word as it comes */
    bool flush = isatty(1) || (fstat(1, &st) == 0 && S_ISFIFO(st.st_mode));
    int rc = f->json ? slm_view_batch_run(&vb, NULL, NULL, e) : slm_generate_print_batch(&vb, stdout, flush, e);
    GenerateRun run = {prompt, names_from, pu, slm_clock_seconds() - start, slm_clock_cpu_seconds() - cpu_start};
    if (!rc && f->json) rc = slm_report_json_write(slm_generate_json(&vb, lm, &f->go, &run, e), stdout, true, e);
    slm_view_batch_free(&vb);
    return rc;
}

static int generate(const char *path, const char *prompt, GenerateFlags *f, Error *e) {
    LoadedModel lm;
    if (slm_loaded_model_load(&lm, path, e)) return -1;
    const GenerateAblation *ga = &f->ga;
    Ablation ab = {0};
    float *mean = NULL;
    char desc[160], from[4096];
    NameList names = {0};
    int rc = slm_ablation_setup(&lm, ga->heads, ga->mode, NULL, ga->stories, STORIES_DEFAULT_TEST, &ab, &mean, desc,
                                sizeof desc, e);
    if (!rc && desc[0] && isatty(2)) fprintf(stderr, "storylm: %s\n", desc);
    if (!rc) rc = slm_view_generate_names(&names, &lm, ga->stories, from, sizeof from, e);
    if (!rc && from[0]) f->go.names = &names;
    if (!rc) rc = write_stories(&lm, &ab, prompt, f, from[0] ? from : NULL, e);
    slm_names_free(&names);
    free(mean);
    slm_loaded_model_free(&lm);
    return rc;
}

/* The prompt: from -f FILE, stdin (PROMPT -, or none with a pipe or file
 * there), PROMPT, or none; *owned is what the caller frees. */
static const char *find_prompt(const char *file, int np, const char *given, char **owned, Error *e) {
    *owned = NULL;
    if (file) {
        FILE *in = fopen(file, "rb");
        if (!in) return FAIL(e, "check the path given to -f", "cannot open the prompt file '%s'", file), NULL;
        *owned = slm_generate_read_prompt(in, file, e);
        fclose(in);
        return *owned;
    }
    if ((np && strcmp(given, "-") == 0) || (!np && stdin_has_prompt()))
        return *owned = slm_generate_read_prompt(stdin, "stdin", e);
    return np ? given : "";
}

static int run(int argc, char **argv) {
    GenerateFlags f = {.go = slm_view_generate_defaults(), .ga = {.mode = "zero"}, .samples = 1};
    int seed = -1;
    const char *model = NULL, *pos[1] = {NULL}, *file = NULL, *precision = "fp32";
    GenerateAblation *ga = &f.ga;
    int np, threads = cli_default_threads();
    Option opts[] = {
        {"model", 'm', OPT_STRING, &model, "FILE",
         "model file (default: ./" DEFAULT_MODEL_PATH ", else the shipped model)", 0, 0},
        {"file", 'f', OPT_STRING, &file, "FILE", "read the prompt from FILE (its final newline dropped)", 0, 0},
        {"tokens", 'n', OPT_INT, &f.go.max_tokens, "N", "most new tokens", 0, 1000000},
        {"temperature", 't', OPT_DOUBLE, &f.go.temperature, "T",
         "sampling temperature (also --temp); 0 (or below 1e-4) = greedy; -t is not threads", 0,
         SAMPLER_MAX_TEMPERATURE},
        {"top-k", 'k', OPT_INT, &f.go.top_k, "K", "sample among the K most likely (0 = all)", 0, SAMPLER_MAX_TOP_K},
        {"top-p", 'p', OPT_DOUBLE, &f.go.top_p, "P", "sample among the most likely holding P of the probability",
         SAMPLER_MIN_TOP_P, 1},
        {"min-p", 0, OPT_DOUBLE, &f.go.min_p, "P",
         "drop tokens less than P times as likely as the likeliest (0 = none)", 0, 1},
        {"repeat-penalty", 0, OPT_DOUBLE, &f.go.repeat_penalty, "R",
         "penalty of the tokens of the last --repeat-last-n (1 = none; llama.cpp's rule)", SAMPLER_MIN_REPEAT_PENALTY,
         SAMPLER_MAX_REPEAT_PENALTY},
        {"repeat-last-n", 0, OPT_INT, &f.go.repeat_last_n, "N", "tokens the repeat penalty looks back over", 0,
         SAMPLER_MAX_REPEAT_LAST_N},
        {"stop", 0, OPT_STRINGS, &f.stops, "STRING", "end the story before STRING when it is written (repeat for more)",
         0, 0},
        {"seed", 's', OPT_INT, &seed, "N", "sampling seed of the first sample (-1 = from the clock; printed)", -1,
         2147483647},
        {"samples", 0, OPT_INT, &f.samples, "N", "stories to write, computed together", 1, 4096},
        {"json", 0, OPT_BOOL, &f.json, NULL,
         "print text, tokens with log-probabilities, seed and stop reason of each sample as JSON", 0, 0},
        {"n-probs", 0, OPT_INT, &f.go.n_probs, "K", "with --json, each token's K likeliest alternatives", 0,
         SAMPLER_MAX_N_PROBS},
        ABLATE_OPTIONS(ga->heads, ga->mode),
        {"stories", 0, OPT_STRING, &ga->stories, "FILE",
         "stories for --ablate-mode mean (needed for it) and for the names (default: the model's training file if "
         "here, else data/stories.txt)",
         0, 0},
        {"threads", 0, OPT_INT, &threads, "N",
         "threads the samples of --samples are shared between, by default one per core", 1, 256},
        PRECISION_OPTION(precision),
    };
    int rc = args_parse(&command_generate, argc, argv, opts, N_OPTIONS(opts), pos, 0, 1, &np);
    if (rc) return rc > 0 ? 0 : 2;
    if (probe_check_mode(&command_generate, ga->mode)) return 2;
    Error pe = {0};
    if (slm_precision_parse(precision, &f.go.precision, &pe))
        return args_usage_error(&command_generate, "%s", pe.message);
    if (file && np) return args_usage_error(&command_generate, "give the prompt as PROMPT or as -f FILE, not both");
    if (f.go.n_probs && !f.json) return args_usage_error(&command_generate, "--n-probs needs --json");
    for (int i = 0; i < f.stops.count; i++)
        if (!f.stops.items[i][0])
            return args_usage_error(&command_generate, "--stop needs a string of one character or more");
    if (f.go.temperature > SAMPLER_WARN_TEMPERATURE)
        fprintf(
            stderr,
            "storylm: warning: temperature %g is above %d, where the text turns to noise; -t is the temperature here, "
            "as in llama2.c (the threads are --threads)\n",
            f.go.temperature, SAMPLER_WARN_TEMPERATURE);
    cli_set_threads(threads);
    if (seed < 0) seed = (int)(((unsigned)time(NULL) ^ (unsigned)getpid() * 2654435761u) & 0x7fffffff);
    if (f.samples > 1)
        fprintf(stderr, "storylm: seed %d; sample i draws with seed %d + i - 1 (give --seed %d to repeat)\n", seed,
                seed, seed);
    else
        fprintf(stderr, "storylm: seed %d (give --seed %d to repeat)\n", seed, seed);
    f.go.seed = (uint64_t)seed;
    f.go.threads = threads;
    f.go.stops = f.stops.items;
    f.go.n_stops = f.stops.count;
    f.go.logprobs = f.json;
    Error e = {0};
    char *owned;
    const char *prompt = find_prompt(file, np, pos[0], &owned, &e);
    if (!prompt) return cli_fail(&e);
    rc = generate(cli_model_path(model, false), prompt, &f, &e);
    free(owned);
    return rc ? cli_fail(&e) : 0;
}
