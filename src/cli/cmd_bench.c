/* storylm bench: times one kind of work in-process and prints one JSON line,
 * for scripts/bench, which runs it interleaved with the PyTorch and npm peers. */
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "args.h"
#include "common.h"
#include "heartbeat.h"
#include "storylm/bench.h"
#include "storylm/bf16.h"
#include "storylm/kernels.h"
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

/* The names of --arch, --position-scheme, --score, --precision and --kernels, checked
 * as storylm train checks them: a wrong one is a usage error (exit 2) before
 * any file is read. */
static int names_check(const BenchOptions *o, Error *e) {
    PosScheme pos;
    ScoreFn score;
    Precision precision;
    Kernels kernels;
    return !slm_arch_find(o->arch, e) || slm_pos_parse(o->pos, &pos, e) || slm_score_parse(o->score, &score, e) ||
           slm_precision_parse(o->precision, &precision, e) || slm_kernels_parse(o->kernels, &kernels, e);
}

/* bench's struct: its options (BenchOptions) and the three positional arguments. */
typedef struct BenchArgs {
    BenchOptions o;
    const char *work, *file, *text;
    bool json; /* --json: what bench prints anyway, taken as every verb takes it */
} BenchArgs;

#define BENCH_INT(field, name_, meta_, help_, min_, max_, def_)                                                        \
    {                                                                                                                  \
        .name = name_, .type = PARAM_INT, .offset = offsetof(BenchArgs, o.field), .meta = meta_, .help = help_,        \
        .min = min_, .max = max_, .def = def_                                                                          \
    }
#define BENCH_STRING(field, name_, meta_, help_, def_)                                                                 \
    {                                                                                                                  \
        .name = name_, .type = PARAM_STRING, .offset = offsetof(BenchArgs, o.field), .meta = meta_, .help = help_,     \
        .def_string = def_                                                                                             \
    }
static const Param bench_params[] = {
    BENCH_INT(steps, "steps", "N", "training steps timed", 1, 1e6, 10),
    BENCH_INT(batch, "batch", "N", "stories a training step", 1, 4096, 8),
    BENCH_INT(first_batch, "first-batch", "K", "start at the K-th batch of IDS", 0, 1e9, 0),
    BENCH_STRING(pos, "position-scheme", "SCHEME", "training's position scheme, as storylm train --position-scheme",
                 "distance"),
    BENCH_STRING(score, "score", "FN", "training's score function, as storylm train --score", "scaled-dot"),
    BENCH_INT(layers, "layers", "N", "training's layers of heads, as storylm train --layers", 1, STORYLM_MAX_LAYERS, 1),
    BENCH_INT(vocab_size, "vocab-size", "N", "training's vocabulary size, as storylm train --vocab-size",
              VOCAB_MIN_SIZE, CHECKPOINT_MAX_VOCAB, VOCAB_DEFAULT_SIZE),
    BENCH_STRING(precision, "precision", "P",
                 "matrix products: fp32, or bf16 (operands rounded to bfloat16, FP32 sums; avx512_bf16; "
                 "docs/performance.md)",
                 "fp32"),
    BENCH_STRING(kernels, "kernels", "K",
                 "training's kernels: blas (OpenBLAS), or portable (storylm's own, the same bits at any -march; "
                 "docs/kernels.md)",
                 SLM_KERNELS_DEFAULT),
    BENCH_STRING(arch, "arch", "NAME", "training's network, as storylm train --arch (transformer: its default shape)",
                 "attention"),
    {.name = "tie-embeddings",
     .type = PARAM_BOOL,
     .offset = offsetof(BenchArgs, o.tie),
     .help = "training's --arch transformer or attn-only with tied embeddings, as storylm train --tie-embeddings"},
    /* training's; generation and encoding time one thread */
    BENCH_INT(threads, "threads", "N", "threads, by default one per core", 1, 256, 0),
    {.name = "tokens",
     .short_name = 'n',
     .type = PARAM_INT,
     .offset = offsetof(BenchArgs, o.tokens),
     .meta = "N",
     .help = "new tokens generated (a sample)",
     .min = 1,
     .max = 1e6,
     .def = 256},
    BENCH_INT(samples, "samples", "N", "generation's samples, computed together (default 1)", 1, 4096, 1),
    BENCH_STRING(prompt, "prompt", "TEXT", "generation's prompt", "Once upon a time"),
    {.name = "json",
     .type = PARAM_BOOL,
     .offset = offsetof(BenchArgs, json),
     .help = "print the result as JSON (bench's one output: taken for scripts that pass it to every verb)"},
    {.name = "WORK",
     .type = PARAM_STRING,
     .offset = offsetof(BenchArgs, work),
     .flags = PARAM_POSITIONAL | PARAM_REQUIRED},
    {.name = "FILE",
     .type = PARAM_STRING,
     .offset = offsetof(BenchArgs, file),
     .flags = PARAM_POSITIONAL | PARAM_REQUIRED},
    {.name = "TEXT", .type = PARAM_STRING, .offset = offsetof(BenchArgs, text), .flags = PARAM_POSITIONAL},
};
static const ParamTable bench_table = {"bench", bench_params, PARAMS_COUNT(bench_params)};

static int run(int argc, char **argv) {
    BenchArgs a = {0};
    slm_params_init(&bench_table, &a);
    a.o.threads = cli_default_threads();
    ParamsGiven given;
    int rc = args_parse(&command_bench, argc, argv, &bench_table, &a, &given);
    if (rc) return rc > 0 ? 0 : 2;
    BenchOptions o = a.o;
    const char *pos[3] = {a.work, a.file, a.text};
    int np = a.text ? 3 : 2;
    Error e = {0};
    if (names_check(&o, &e)) return args_usage_error(&command_bench, "%s", e.message);
    ParamList l;
    slm_params_list(&bench_table, &l);
    o.given_variant = slm_params_given(&given, &l, "layers") || slm_params_given(&given, &l, "position-scheme") ||
                      slm_params_given(&given, &l, "score");
    bool train = strcmp(pos[0], "train") == 0 && np == 2, generate = strcmp(pos[0], "generate") == 0 && np == 2;
    if (!train && !generate && !(strcmp(pos[0], "encode") == 0 && np == 3))
        return args_usage_error(&command_bench, "give train IDS, generate MODEL or encode VOCAB TEXT");
    cli_set_threads(train ? o.threads : 1); /* generation and encoding time one thread */
    return bench(pos, np, &o, &e) ? cli_fail(&e) : 0;
}
