/* storylm train STORIES: vocabulary (built or reused), held-out test stories,
 * training with progress, atomic saves; Ctrl-C stops after saving. */
#define _GNU_SOURCE /* program_invocation_name: the program as called, for the resume command */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "args.h"
#include "common.h"
#include "heartbeat.h"
#include "train_ranks.h"
#include "storylm/checkpoint.h"
#include "storylm/fileio.h"
#include "storylm/name_swap.h"
#include "storylm/regularise.h"
#include "storylm/data_files.h"
#include "storylm/train.h"
#include "storylm/train_summary.h"
#include "storylm/vocab_train.h"

static int run(int argc, char **argv);
const Command command_train = {"train", "train a model from scratch on a stories file",
                               "storylm train STORIES [options]",
                               "Trains the chapter's attention network (or chapter 6's window8 baseline) on the\n"
                               "stories in STORIES (20 or more; docs/guide.md says how many make a useful model).\n"
                               "The vocabulary is read from --vocab, or learnt from STORIES and written there when\n"
                               "the file does not exist: 2,000 pieces, or as many as a small corpus's words give\n"
                               "(said on stderr; --vocab-size N asks for exactly N). A tenth of the stories, at most\n"
                               "100, is held out for testing.\n"
                               "Each step reads 8 whole stories. The model (and its optimizer state, for --resume)\n"
                               "is saved atomically at every evaluation and at the end. Ctrl-C stops after saving.\n"
                               "Under mpirun -np N (a build with MPI), N processes share every step's stories; the\n"
                               "model equals one process's with N x --threads threads, bit for bit; rank 0 prints\n"
                               "and saves. The vocabulary must exist then (learn it first with storylm vocab).",
                               run};

static volatile sig_atomic_t stop_requested; /* the one thing a signal handler may set */

static void on_signal(int sig) {
    (void)sig;
    stop_requested = 1;
}

static void install_handlers(void) {
    struct sigaction sa = {0};
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

typedef struct ProgressPrinter {
    bool tty;
    double last_line_s;
    Heartbeat beat; /* a line within a long step too (--batch 4096) */
} ProgressPrinter;

/* On a terminal one line rewritten in place; piped, a plain line every 10 s
 * and at every evaluation. */
static void print_progress(const TrainProgress *p, void *ctx) {
    ProgressPrinter *pp = ctx;
    bool quiet = !pp->tty && !p->evaluated && p->elapsed_s - pp->last_line_s < 10;
    cli_heartbeat_beat(&pp->beat, p->step, !quiet);
    if (quiet) return;
    pp->last_line_s = p->elapsed_s;
    char eta[32], elapsed[32], test[64] = "";
    cli_format_duration(p->eta_s, eta, sizeof eta);
    cli_format_duration(p->elapsed_s, elapsed, sizeof elapsed);
    if (p->evaluated && isfinite(p->test_loss))
        snprintf(test, sizeof test, " | test %.4f acc %.1f%%", p->test_loss, 100 * p->test_accuracy);
    if (p->evaluated && isfinite(p->ema_test_loss)) /* after the test column, which scripts read by place */
        snprintf(test + strlen(test), sizeof test - strlen(test), " ema %.4f", p->ema_test_loss);
    fprintf(stderr, "%sstep %5d/%d | loss %.4f%s | lr %.2e | %.0f tok/s | %s elapsed, ETA %s%s",
            pp->tty ? "\r\033[K" : "", p->step, p->steps, p->train_loss, test, p->lr, p->tokens_per_s, elapsed, eta,
            pp->tty && !p->evaluated ? "" : "\n");
}

/* The final summary: on stderr the numbers, on stdout where the model is and
 * the commands that sample and resume it (or all of it as JSON). */
static int print_result(const TrainPlace *pl, const TrainOptions *o, const TrainResult *r, bool json, Error *e) {
    char took[32], best[REGULARISE_PATH_MAX];
    cli_format_duration(r->seconds, took, sizeof took);
    char test[96] = "no test stories";
    if (isfinite(r->test_loss))
        snprintf(test, sizeof test, "test loss %.4f (perplexity %.1f), accuracy %.1f%%", r->test_loss,
                 exp(r->test_loss), 100 * r->test_accuracy);
    fprintf(stderr, "%s after %d steps (%s): train loss %.4f, %s\n", r->interrupted ? "stopped" : "done", r->final_step,
            took, r->train_loss, test);
    if (isfinite(r->ema_test_loss)) fprintf(stderr, "moving average: test loss %.4f\n", r->ema_test_loss);
    if (o->keep_best && r->best_step >= 0)
        fprintf(stderr, "best: step %d, test loss %.4f, kept in %s\n", r->best_step, r->best_test_loss,
                slm_regularise_file(o->out, "best", best));
    else if (r->best_step >= 0 && r->test_loss > r->best_test_loss + 0.1) /* a small corpus learnt by heart */
        fprintf(stderr,
                "storylm: the test loss was lowest at step %d (%.4f) and rose since: the model learnt its training "
                "stories by heart. Train with --steps %d, or with --keep-best to keep that model too (docs/guide.md)\n",
                r->best_step, r->best_test_loss, r->best_step);
    if (json) return cli_json_print(slm_train_summary_json(pl, o, r), e);
    char *sample = slm_train_command(pl, o, false), *resume = r->interrupted ? slm_train_command(pl, o, true) : NULL;
    if (!sample || (r->interrupted && !resume)) {
        free(sample);
        return FAIL(e, NULL, "out of memory");
    }
    printf("model saved to %s\nsample it:  %s", o->out, sample);
    if (resume) printf("\nresume it:  %s", resume);
    printf("\n");
    free(sample);
    free(resume);
    return 0;
}

/* On a small corpus the words give fewer than 2,000 pieces: say what the
 * model gets, and the other way, the shipped vocabulary (learnt from
 * TinyStories, so fit for English stories). */
static void say_small_vocab(int size, const char *stories_path, const char *vocab_path) {
    char shipped[PATH_MAX];
    if (!slm_data_file_find("models/vocab.txt", shipped, sizeof shipped))
        snprintf(shipped, sizeof shipped, "models/vocab.txt");
    fprintf(stderr,
            "storylm: the words of %s give only %d pieces, so the model's vocabulary has %d (the chapter's has %d).\n"
            "storylm: for English stories the shipped vocabulary of %d may serve better: train with --vocab %s "
            "(%s stays this corpus's own)\n",
            stories_path, size, size, VOCAB_DEFAULT_SIZE, VOCAB_DEFAULT_SIZE, shipped, vocab_path);
}

/* Learns a vocabulary of `size` pieces (0: as many as the words give, up to
 * 2,000) from the stories and saves it, saying so on stderr. */
static int learn_vocab(const char *vocab_path, const char *stories_path, int size, char **text, Error *e) {
    fprintf(stderr, "storylm: learning a %d-piece vocabulary from %s\n", size ? size : VOCAB_DEFAULT_SIZE,
            stories_path);
    int got;
    if (slm_train_learn_vocab(vocab_path, stories_path, size, text, &got, e)) return -1;
    fprintf(stderr, "storylm: wrote %s\n", vocab_path);
    if (got < VOCAB_DEFAULT_SIZE) say_small_vocab(got, stories_path, vocab_path);
    return 0;
}

/* Reuses an existing vocabulary, or learns one from the stories and saves it
 * (learn: the claims say it is to be learnt, and hold it). */
static int get_vocab(const char *vocab_path, const char *stories_path, int size, char **text, bool say, bool learn,
                     Error *e) {
    size_t len;
    if (learn) return learn_vocab(vocab_path, stories_path, size, text, e);
    if (say) fprintf(stderr, "storylm: using the vocabulary in %s (delete it to learn a new one)\n", vocab_path);
    return slm_file_read_all(vocab_path, 64u << 20, text, &len, e);
}

/* Under mpirun: every rank reads the stories itself (no gigabytes to send;
 * on one machine they share the page cache and the cache file), rank 0 first
 * so that the others find its cache instead of encoding the file again. */
static int load_stories(Stories *s, const char *path, const Tokenizer *tok, const StoriesOptions *so, Dist *d,
                        Error *e) {
    int rc = 0;
    if (d->rank != 0) rc = slm_dist_barrier(d, e);
    if (!rc) rc = slm_stories_load(s, path, tok, so, e);
    if (d->rank == 0 && !rc) rc = slm_dist_barrier(d, e);
    return rc;
}

/* Rank 0's account of the exchanges between ranks, after training. */
static void print_comm(const Dist *d, const TrainResult *r) {
    if (d->size <= 1 || d->rank != 0 || d->exchanges == 0) return;
    double steps = r->steps_done > 0 ? r->steps_done : 1;
    fprintf(stderr,
            "storylm: %d ranks exchanged %.2f MB a step (received by each rank): transfer %.1f%% of the %.1f s, "
            "waiting for the slowest rank %.1f%%\n",
            d->size, d->comm_bytes / steps / 1e6, 100 * (d->comm_seconds - d->wait_seconds) / r->seconds, r->seconds,
            100 * d->wait_seconds / r->seconds);
}

static void print_summary(const Stories *s, const char *path) {
    fprintf(stderr, "storylm: %s: %d stories, %zu tokens; %d held out for testing%s\n", path, s->n_stories, s->n_tokens,
            s->n_test, s->from_cache ? " (token ids from cache)" : "");
    if (s->skips.empty + s->skips.invalid_utf8 + s->skips.too_long)
        fprintf(stderr, "storylm: skipped %d empty, %d invalid UTF-8, %d too long stories\n", s->skips.empty,
                s->skips.invalid_utf8, s->skips.too_long);
    char hint[600];
    if (slm_stories_encoding_hint(&s->skips, s->n_stories, path, hint, sizeof hint))
        fprintf(stderr, "storylm: warning: %s\n", hint);
}

/* vocab_size: --vocab-size, 0 when not given (then any size a vocabulary file has). */
static int train_file(const char *path, TrainOptions *o, const char *vocab_path, int vocab_size, int n_test, bool json,
                      Error *e, int *signalled) {
    bool root = dist_rank(o->dist) == 0;
    char *vocab = NULL;
    Tokenizer tok = {0};
    Stories s = {0};
    NameSwap swap = {0};
    StoriesOptions so = slm_stories_default_options();
    so.n_test = n_test;
    OutputClaims claims = {0};
    struct stat st;
    int rc = 0;
    if (stat(vocab_path, &st) != 0 && dist_size(o->dist) > 1) /* every rank would learn and write it */
        rc = FAIL(e, "learn it first: storylm vocab STORIES -o vocab.txt",
                  "under mpirun the vocabulary '%s' must exist", vocab_path);
    /* rank 0 alone writes, so it alone checks and claims every file the run writes */
    bool learnt = false;
    if (!rc && root) rc = slm_train_claim_outputs(path, o, vocab_path, o->force, &claims, &learnt, e);
    if (!rc) rc = get_vocab(vocab_path, path, vocab_size, &vocab, root, learnt, e);
    /* From the file, so that messages name it; the model gets the vocabulary's size
     * (exactly --vocab-size when given) */
    if (!rc && (rc = slm_tokenizer_load(&tok, vocab_path, vocab_size, e)) && strstr(e->message, "pieces, expected"))
        snprintf(e->hint, sizeof e->hint,
                 "leave out --vocab-size to use '%s' as it is, or delete it (or give --vocab "
                 "NEW) to learn one of %d pieces",
                 vocab_path, vocab_size);
    if (!rc && !learnt && tok.size != VOCAB_DEFAULT_SIZE && root)
        fprintf(stderr, "storylm: the model's vocabulary has %d pieces, as %s\n", tok.size, vocab_path);
    if (!rc) rc = load_stories(&s, path, &tok, &so, o->dist, e);
    if (!rc) rc = slm_train_check_story_count(s.n_stories, &s.skips, path, e);
    if (!rc && (o->swap_names > 0 || o->invent_names > 0) &&
        !(rc = slm_name_swap_init(&swap, &tok, path, &s, o->swap_names, e))) {
        swap.invent = o->invent_names;
        o->augment = slm_name_swap_story;
        o->augment_ctx = &swap;
        if (root && o->swap_names > 0)
            fprintf(stderr, "storylm: --swap-names %g: %d names of the training stories, %d of them to cut up\n",
                    o->swap_names, swap.n_known, swap.n_made);
        if (root && o->invent_names > 0)
            fprintf(stderr,
                    "storylm: --invent-names %g: heroes found by %d names of the training stories; names made of %d "
                    "first pieces and %d \"##\" pieces\n",
                    o->invent_names, swap.n_known, swap.inventor.n_heads, swap.inventor.n_tails);
    }
    if (rc) goto done;
    if (root) print_summary(&s, path);
    o->vocab_text = vocab;
    o->vocab_size = tok.size;
    o->data_path = path;
    ProgressPrinter pp = {.tty = isatty(2)};
    TrainResult r;
    if (root) cli_heartbeat_start(&pp.beat, "training", o->steps);
    rc = slm_train_run(&s, o, root ? print_progress : NULL, &pp, &r, e);
    if (root) cli_heartbeat_stop(&pp.beat);
    if (rc) goto done;
    /* a signal that came at the last step or after it leaves a whole run: exit 0 */
    *signalled = r.interrupted && stop_requested;
    if (!root) goto done;
    print_comm(o->dist, &r);
    /* the program as it was called (build/storylm), or storylm when found on the PATH */
    const char *program = strchr(program_invocation_name, '/') ? program_invocation_name : "storylm";
    TrainPlace pl = {.program = program,
                     .stories = path,
                     .vocab_path = vocab_path,
                     .s = &s,
                     .vocab_size = tok.size,
                     .n_test = n_test};
    rc = print_result(&pl, o, &r, json, e);
done:
    slm_outputs_release(&claims);
    slm_name_swap_free(&swap);
    slm_stories_free(&s);
    slm_tokenizer_free(&tok);
    free(vocab);
    return rc;
}

static const char *const transformer_shape_flags[5] = {"d-model", "n-heads", "d-head", "d-mlp", "act"};

/* --arch transformer: its scheme (absolute unless --position-scheme gives one) and
 * blocks (2 unless --layers). */
static void transformer_flags(int argc, char **argv, TrainOptions *o, int *layers) {
    if (!args_given(argc, argv, "position-scheme", 0) && !args_given(argc, argv, "pos", 0)) o->pos = POS_ABSOLUTE;
    if (!args_given(argc, argv, "layers", 0)) *layers = 0; /* the transformer's default */
}

/* --d-model, --n-heads, --d-head, --d-mlp or --act given? Then --act's value
 * and the bit a resume checks them by. Non-zero after a usage error. */
static int shape_flags(int argc, char **argv, const char *act, TrainOptions *o) {
    Error e = {0};
    for (int i = 0; i < 5; i++)
        if (args_given(argc, argv, transformer_shape_flags[i], 0)) o->given |= TRAIN_GIVEN_SHAPE;
    if (slm_act_parse(act, &o->act, &e)) return args_usage_error(&command_train, "%s", e.message);
    return 0;
}

static int run(int argc, char **argv) {
    TrainOptions o = slm_train_default_options();
    o.threads = cli_default_threads();
    const char *arch = "attention", *vocab_path = "vocab.txt", *pos[1], *pos_scheme = "distance", *score = "scaled-dot";
    const char *precision = "fp32";
    int steps = o.steps, seed = (int)o.seed, n_test = STORIES_DEFAULT_TEST, np, layers = 1,
        vocab_size = VOCAB_DEFAULT_SIZE;
    const char *act = "gelu";
    ModelConfig tf = slm_transformer_config_default(0); /* the transformer's sizes, as --help shows them */
    o.d_model = tf.row_dim, o.heads = tf.n_heads, o.d_head = tf.key_dim, o.d_mlp = tf.hidden_dim;
    bool resume = false, ema_save = false, keep_best = false, json = false, force = false;
    double rank_timeout = DIST_DEFAULT_TIMEOUT_S;
    Option opts[] = {
        {"steps", 0, OPT_INT, &steps, "N", "optimizer steps", 1, 1e9},
        {"minutes", 0, OPT_DOUBLE, &o.minutes, "M", "time budget in minutes, 0 for none; stops early, saving", 0, 1e6},
        {"lr", 0, OPT_DOUBLE, &o.lr, "LR", "peak learning rate (linear warm-up, cosine decay to lr/10)", 1e-7, 1},
        {"warmup", 0, OPT_INT, &o.warmup, "N", "warm-up steps; -1: min(100, steps/10)", -1, 1e9},
        {"batch", 0, OPT_INT, &o.batch, "N", "stories per step", 1, 4096},
        {"seed", 's', OPT_INT, &seed, "N", "seed of the initial weights and the story order", 0, 2147483647},
        THREADS_OPTION(o.threads),
        {"out", 'o', OPT_STRING, &o.out, "FILE",
         "model file to write; a model already there is kept: --resume continues it, --force replaces it", 0, 0},
        FORCE_OPTION(force),
        {"json", 0, OPT_BOOL, &json, NULL, "print the final summary as JSON on stdout (progress stays on stderr)", 0,
         0},
        {"vocab", 0, OPT_STRING, &vocab_path, "FILE", "vocabulary to use, or to learn and write if missing", 0, 0},
        {"vocab-size", 0, OPT_INT, &vocab_size, "N",
         "pieces in the vocabulary, learnt or read (recorded in the model); left out: the chapter's 2,000, fewer when "
         "a small corpus's words give fewer (said on stderr), or as many as an existing --vocab file has",
         VOCAB_MIN_SIZE, CHECKPOINT_MAX_VOCAB},
        {"eval-every", 0, OPT_INT, &o.eval_every, "N", "steps between test evaluations and saves; 0: at the end", 0,
         1e9},
        {"snapshot-every", 0, OPT_INT, &o.snapshot_every, "N",
         "also keep OUT.stepN.safetensors every N steps; 0: never", 0, 1e9},
        {"test-stories", 0, OPT_INT, &n_test, "N", "held-out test stories", 0, 100000},
        {"max-positions", 0, OPT_INT, &o.max_positions, "N", "positions per forward pass (memory bound)", 64, 1 << 20},
        {"arch", 0, OPT_STRING, &arch, "NAME",
         "attention, window8 (chapter 6's baseline), or transformer (pre-LN blocks in TransformerLens's names, "
         "docs/transformer.md)",
         0, 0},
        {"position-scheme", 0, OPT_STRING, &pos_scheme, "SCHEME",
         "how positions are marked: distance (a learned score per distance back), none, absolute, sinusoidal, rope, "
         "alibi, t5 (docs/variants.md); --arch transformer: absolute unless given",
         0, 0},
        {"score", 0, OPT_STRING, &score, "FN",
         "how a query scores a key: scaled-dot (q.k/sqrt(8)), dot, general (q G k), additive (v.tanh(A q + B k))", 0,
         0},
        {"layers", 0, OPT_INT, &layers, "N",
         "layers of heads: layer l+1's heads read the row and layer l's heads; the hidden layer reads the row and "
         "every layer's heads (docs/variants.md); 1 to 4; --arch transformer: blocks, 1 to 8, default 2",
         1, STORYLM_MAX_TF_LAYERS},
        {"d-model", 0, OPT_INT, &o.d_model, "N", "--arch transformer: width of the residual stream", 1, TF_MAX_D_MODEL},
        {"n-heads", 0, OPT_INT, &o.heads, "N", "--arch transformer: heads per block (TransformerLens's n_heads)", 1,
         32},
        {"d-head", 0, OPT_INT, &o.d_head, "N", "--arch transformer: numbers per head's query, key and value", 1,
         STORYLM_MAX_HEAD_DIM},
        {"d-mlp", 0, OPT_INT, &o.d_mlp, "N", "--arch transformer: the MLP's hidden width", 1, 1 << 16},
        {"act", 0, OPT_STRING, &act, "FN", "--arch transformer: the MLP's activation, gelu, gelu_new or relu", 0, 0},
        {"stop-at", 0, OPT_INT, &o.stop_at, "STEP",
         "stop and save after this step, keeping the schedule of --steps; 0: never", 0, 1e9},
        {"resume", 0, OPT_BOOL, &resume, NULL,
         "continue the run saved in --out (and its optimizer state); --arch, --batch, --lr, --seed, --warmup must "
         "match it or be left out",
         0, 0},
        {"weight-decay", 0, OPT_DOUBLE, &o.weight_decay, "W",
         "AdamW's decoupled weight decay; 0: off. On query, key, value, hidden.weight and output.weight; "
         "not on biases, distance scores or the embedding (a rare name's row would fade between the steps that read "
         "it)",
         0, 1e6},
        {"dropout", 0, OPT_DOUBLE, &o.dropout, "P",
         "dropout on z, the hidden layer's input, in training steps only (masks seeded by --seed and the step); 0: off",
         0, 1},
        {"attention-dropout", 0, OPT_DOUBLE, &o.attention_dropout, "P",
         "dropout on the attention weights, in training steps only (seeded likewise); 0: off", 0, 1},
        {"ema", 0, OPT_DOUBLE, &o.ema, "DECAY",
         "keep a moving average of the weights (e.g. 0.999) in OUT.ema.safetensors, evaluated beside them; 0: off", 0,
         1},
        {"ema-save", 0, OPT_BOOL, &ema_save, NULL,
         "save the average as the model OUT (the raw weights, for --resume, in OUT.raw.safetensors)", 0, 0},
        {"keep-best", 0, OPT_BOOL, &keep_best, NULL,
         "also keep OUT.best.safetensors, the model at its lowest test loss", 0, 0},
        PRECISION_OPTION(precision),
        {"swap-names", 0, OPT_DOUBLE, &o.swap_names, "P",
         "rename each training story's hero with probability P (names of the training stories or made up from pieces); "
         "0: off",
         0, 1},
        {"invent-names", 0, OPT_DOUBLE, &o.invent_names, "P",
         "rename each training story's hero with probability P to a name invented for that draw (2 to 4 pieces, never "
         "a word of the training stories), so that copying a name never seen pays; at most 1 minus --swap-names; 0: "
         "off",
         0, 1},
        {"rank-timeout", 0, OPT_DOUBLE, &rank_timeout, "S",
         "under mpirun: seconds to wait for the other ranks at an exchange, then stop naming the missing one (x30 "
         "while reading the stories); 0: forever",
         0, 1e6},
    };
    int rc = args_parse(&command_train, argc, argv, opts, N_OPTIONS(opts), pos, 1, 1, &np);
    if (rc) return rc > 0 ? 0 : 2;
    Error e = {0};
    if (slm_arch_parse(arch, &o.arch, &e) || slm_pos_parse(pos_scheme, &o.pos, &e) ||
        slm_score_parse(score, &o.score, &e) || slm_precision_parse(precision, &o.precision, &e))
        return args_usage_error(&command_train, "%s", e.message);
    if (shape_flags(argc, argv, act, &o)) return 2;
    if (o.arch == ARCH_TRANSFORMER) transformer_flags(argc, argv, &o, &layers);
    if (slm_train_check_arch(&o, layers, resume, &e)) return args_usage_error(&command_train, "%s", e.message);
    o.layers = layers;
    o.steps = steps;
    o.seed = (uint64_t)seed;
    o.resume = resume;
    static const struct {
        const char *flag;
        char short_name;
        unsigned bit;
    } given[] = {{"arch", 0, TRAIN_GIVEN_ARCH},
                 {"lr", 0, TRAIN_GIVEN_LR},
                 {"batch", 0, TRAIN_GIVEN_BATCH},
                 {"seed", 's', TRAIN_GIVEN_SEED},
                 {"warmup", 0, TRAIN_GIVEN_WARMUP}};
    for (size_t i = 0; i < sizeof given / sizeof given[0]; i++)
        if (args_given(argc, argv, given[i].flag, given[i].short_name)) o.given |= given[i].bit;
    if (args_given(argc, argv, "position-scheme", 0) || args_given(argc, argv, "pos", 0) ||
        args_given(argc, argv, "score", 0))
        o.given |= TRAIN_GIVEN_VARIANT;
    if (args_given(argc, argv, "layers", 0)) o.given |= TRAIN_GIVEN_LAYERS;
    if (args_given(argc, argv, "precision", 0)) o.given |= TRAIN_GIVEN_PRECISION;
    o.ema_save = ema_save;
    o.keep_best = keep_best;
    o.force = force;
    o.threads = cli_set_threads(o.threads);
    o.stop = &stop_requested;
    if (slm_regularise_check_options(&o, &e)) return args_usage_error(&command_train, "%s", e.message);
    install_handlers();
    int signalled = 0;
    Dist dist;
    if (slm_dist_init(&dist, &e)) return cli_fail(&e);
    o.dist = &dist;
    if (!args_given(argc, argv, "vocab-size", 0)) vocab_size = 0; /* the words' or the file's size */
    dist.timeout_s = rank_timeout;
    if (cli_train_ranks_agree(&dist, opts, N_OPTIONS(opts), pos[0], vocab_path, &e) ||
        train_file(pos[0], &o, vocab_path, vocab_size, n_test, json, &e, &signalled))
        return cli_train_ranks_fail(&dist, &e);
    slm_dist_finalize(&dist);
    return signalled ? 130 : 0;
}
