/* storylm generate PROMPT: let the network write on, token by token. */
#include <ctype.h>
#include <math.h>
#include <strings.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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
static int write_stories(const LoadedModel *lm, const Ablation *ab, const char *prompt, GenerateParams *f,
                         const char *names_from, Error *e) {
    PromptUnknown pu;
    if (warn_unknown(&lm->tokenizer, prompt, &pu, e)) return -1;
    ViewBatch vb;
    if (slm_view_batch_init(&vb, lm, ab, prompt, &f->go, f->samples, e)) return -1;
    double start = slm_clock_seconds(), cpu_start = slm_clock_cpu_seconds();
    struct stat st; /* a pipe or a terminal gets each word as it comes */
    bool flush = isatty(1) || (fstat(1, &st) == 0 && S_ISFIFO(st.st_mode));
    int rc = f->po.json ? slm_view_batch_run(&vb, NULL, NULL, e) : slm_generate_print_batch(&vb, stdout, flush, e);
    GenerateRun run = {prompt, names_from, pu, slm_clock_seconds() - start, slm_clock_cpu_seconds() - cpu_start};
    if (!rc && f->po.json) rc = slm_report_json_write(slm_generate_json(&vb, lm, &f->go, &run, e), stdout, true, e);
    slm_view_batch_free(&vb);
    return rc;
}

static int generate(const char *path, const char *prompt, GenerateParams *f, Error *e) {
    LoadedModel lm;
    if (slm_loaded_model_load(&lm, path, e)) return -1;
    const ProbeOptions *po = &f->po;
    Ablation ab = {0};
    float *mean = NULL;
    char desc[160], from[4096];
    NameList names = {0};
    int rc = slm_ablation_setup(&lm, po->ablate, po->ablate_mode, NULL, po->mean_stories, STORIES_DEFAULT_TEST, &ab,
                                &mean, desc, sizeof desc, e);
    if (!rc && desc[0] && isatty(2)) fprintf(stderr, "storylm: %s\n", desc);
    if (!rc) rc = slm_view_generate_names(&names, &lm, po->mean_stories, from, sizeof from, e);
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
    GenerateParams f = {0};
    slm_params_init(&params_generate, &f);
    f.po.threads = cli_default_threads(); /* shown as --threads' default */
    int rc = args_parse(&command_generate, argc, argv, &params_generate, &f, NULL);
    if (rc) return rc > 0 ? 0 : 2;
    if (f.file && f.prompt)
        return args_usage_error(&command_generate, "give the prompt as PROMPT or as -f FILE, not both");
    if (f.go.n_probs && !f.po.json) return args_usage_error(&command_generate, "--n-probs needs --json");
    if (f.go.sampling.temperature > SAMPLER_WARN_TEMPERATURE)
        fprintf(
            stderr,
            "storylm: warning: temperature %g is above %d, where the text turns to noise; -t is the temperature here, "
            "as in llama2.c (the threads are --threads)\n",
            f.go.sampling.temperature, SAMPLER_WARN_TEMPERATURE);
    ProbeOptions *po = &f.po;
    cli_set_threads(po->threads);
    int seed = f.seed < 0 ? slm_clock_seed() : f.seed;
    if (f.samples > 1)
        fprintf(stderr, "storylm: seed %d; sample i draws with seed %d + i - 1 (give --seed %d to repeat)\n", seed,
                seed, seed);
    else
        fprintf(stderr, "storylm: seed %d (give --seed %d to repeat)\n", seed, seed);
    f.go.seed = (uint64_t)seed;
    f.go.threads = po->threads;
    f.go.stops = f.stops.items;
    f.go.n_stops = f.stops.count;
    f.go.steers = f.steers.items;
    f.go.n_steers = f.steers.count;
    f.go.logprobs = po->json;
    Error e = {0};
    char *owned;
    const char *prompt = find_prompt(f.file, f.prompt != NULL, f.prompt, &owned, &e);
    if (!prompt) return cli_fail(&e);
    rc = generate(cli_model_path(po->model, false), prompt, &f, &e);
    free(owned);
    return rc ? cli_fail(&e) : 0;
}
