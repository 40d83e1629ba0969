/* storylm bench: times one kind of work in-process and prints one JSON line,
 * for scripts/bench, which runs it interleaved with the PyTorch and npm peers. */
#include <stdio.h>
#include <string.h>

#include "args.h"
#include "common.h"
#include "heartbeat.h"
#include "storylm/bench.h"
#include "storylm/bf16.h"
#include "storylm/model_params.h"
#include "storylm/position.h"
#include "storylm/score.h"
#include "storylm/sample.h"
#include "storylm/checkpoint.h"
#include "storylm/vocab_train.h"

static int run(int argc, char **argv);
/* The sampler's defaults as the help says them. */
#define BENCH_SAMPLER "(t " SAMPLER_STR(SAMPLER_DEFAULT_TEMPERATURE) ", top-p " SAMPLER_STR(SAMPLER_DEFAULT_TOP_P) ")"
const Command command_bench = {
    "bench", "time training, generation or encoding (for scripts/bench)",
    "storylm bench train IDS [options] | storylm bench generate MODEL [options] | storylm bench encode VOCAB TEXT "
    "[options]",
    "Times one kind of work and prints one JSON line; scripts/bench runs it side by side\n"
    "with the PyTorch and npm peers and prints the table.\n\n"
    "  train IDS          --steps training steps (forward, backward, Adam) on the stories\n"
    "                     of IDS (token ids, one story a line, as `storylm stories --ids`\n"
    "                     prints), --batch a step in file order from --first-batch, after\n"
    "                     2 untimed steps; a fresh model; the step of storylm train\n"
    "                     (stories split over threads, Adam). Counts predicted tokens.\n"
    "                     --position-scheme, --score and --layers time a variant (docs/variants.md),\n"
    "                     and with --precision bf16, the BF16 products (docs/performance.md).\n"
    "  generate MODEL     [EOS], --prompt, then --tokens new tokens, one thread, sampled\n"
    "                     as `storylm generate` does by default " BENCH_SAMPLER "; an\n"
    "                     [EOS] does not stop it. --samples N: N stories of --tokens\n"
    "                     each, computed together as `generate --samples` does (the\n"
    "                     prompt fed once, one pass of the batch a step); --precision\n"
    "                     bf16: the products in BF16, as `generate --precision bf16`.\n"
    "  encode VOCAB TEXT  every line of TEXT encoded on its own, one thread.",
    run};

/* A line every 10 s while bench train runs: a step on very long stories takes minutes. */
static void beat(void *ctx, int done) { cli_heartbeat_beat(ctx, done, false); }

/* Runs the work of pos[0] and prints its JSON line. */
static int bench(const char *const *pos, int np, const BenchOptions *o, Error *e) {
    cJSON *line = NULL;
    int rc;
    if (strcmp(pos[0], "train") == 0) {
        Heartbeat h;
        cli_heartbeat_start(&h, "bench train", o->steps + 2);
        rc = slm_bench_train(pos[1], o, beat, &h, &line, e);
        cli_heartbeat_stop(&h);
    } else if (strcmp(pos[0], "generate") == 0) {
        rc = slm_bench_generate(pos[1], o, &line, e);
    } else {
        rc = slm_bench_encode(pos[1], pos[2], &line, e);
    }
    if (rc) return cJSON_Delete(line), -1;
    return slm_report_json_write(line, stdout, true, e);
}

/* The names of --arch, --position-scheme, --score and --precision, checked
 * as storylm train checks them: a wrong one is a usage error (exit 2) before
 * any file is read. */
static int names_check(const BenchOptions *o, Error *e) {
    Arch arch;
    PosScheme pos;
    ScoreFn score;
    Precision precision;
    return slm_arch_parse(o->arch, &arch, e) || slm_pos_parse(o->pos, &pos, e) ||
           slm_score_parse(o->score, &score, e) || slm_precision_parse(o->precision, &precision, e);
}

static int run(int argc, char **argv) {
    BenchOptions o = {.steps = 10,
                      .tokens = 256,
                      .threads = cli_default_threads(),
                      .batch = 8,
                      .layers = 1,
                      .samples = 1,
                      .vocab_size = VOCAB_DEFAULT_SIZE,
                      .prompt = "Once upon a time",
                      .pos = "distance",
                      .score = "scaled-dot",
                      .precision = "fp32",
                      .arch = "attention"};
    const char *pos[3];
    int np;
    Option opts[] = {
        {"steps", 0, OPT_INT, &o.steps, "N", "training steps timed", 1, 1e6},
        {"batch", 0, OPT_INT, &o.batch, "N", "stories a training step", 1, 4096},
        {"first-batch", 0, OPT_INT, &o.first_batch, "K", "start at the K-th batch of IDS", 0, 1e9},
        {"position-scheme", 0, OPT_STRING, &o.pos, "SCHEME",
         "training's position scheme, as storylm train --position-scheme", 0, 0},
        {"score", 0, OPT_STRING, &o.score, "FN", "training's score function, as storylm train --score", 0, 0},
        {"layers", 0, OPT_INT, &o.layers, "N", "training's layers of heads, as storylm train --layers", 1,
         STORYLM_MAX_LAYERS},
        {"vocab-size", 0, OPT_INT, &o.vocab_size, "N", "training's vocabulary size, as storylm train --vocab-size",
         VOCAB_MIN_SIZE, CHECKPOINT_MAX_VOCAB},
        PRECISION_OPTION(o.precision),
        {"arch", 0, OPT_STRING, &o.arch, "NAME",
         "training's network, as storylm train --arch (transformer: its default shape)", 0, 0},
        THREADS_OPTION(o.threads), /* training; generation and encoding time one thread */
        {"tokens", 'n', OPT_INT, &o.tokens, "N", "new tokens generated (a sample)", 1, 1e6},
        {"samples", 0, OPT_INT, &o.samples, "N", "generation's samples, computed together (default 1)", 1, 4096},
        {"prompt", 0, OPT_STRING, &o.prompt, "TEXT", "generation's prompt", 0, 0},
    };
    int rc = args_parse(&command_bench, argc, argv, opts, N_OPTIONS(opts), pos, 2, 3, &np);
    if (rc) return rc > 0 ? 0 : 2;
    Error e = {0};
    if (names_check(&o, &e)) return args_usage_error(&command_bench, "%s", e.message);
    o.given_variant = args_given(argc, argv, "layers", 0) || args_given(argc, argv, "position-scheme", 0) ||
                      args_given(argc, argv, "score", 0);
    bool train = strcmp(pos[0], "train") == 0 && np == 2, generate = strcmp(pos[0], "generate") == 0 && np == 2;
    if (!train && !generate && !(strcmp(pos[0], "encode") == 0 && np == 3))
        return args_usage_error(&command_bench, "give train IDS, generate MODEL or encode VOCAB TEXT");
    cli_set_threads(train ? o.threads : 1); /* generation and encoding time one thread */
    return bench(pos, np, &o, &e) ? cli_fail(&e) : 0;
}
