/* storylm train STORIES: vocabulary (built or reused), held-out test stories,
 * training with progress, atomic saves; Ctrl-C stops after saving. */
#define _GNU_SOURCE /* program_invocation_name: the program as called, for the resume command */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "args.h"
#include "common.h"
#include "storylm/checkpoint.h"
#include "storylm/fileio.h"
#include "storylm/name_swap.h"
#include "storylm/regularise.h"
#include "storylm/train.h"
#include "storylm/vocab_train.h"

static int run(int argc, char **argv);
const Command command_train = {
    "train", "train a model from scratch on a stories file", "storylm train STORIES [options]",
    "Trains the chapter's attention network (or chapter 6's window8 baseline) on the\n"
    "stories in STORIES. The vocabulary is read from --vocab, or learnt from STORIES and\n"
    "written there when the file does not exist. 100 stories are held out for testing.\n"
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
} ProgressPrinter;

/* On a terminal one line rewritten in place; piped, a plain line every 10 s
 * and at every evaluation. */
static void print_progress(const TrainProgress *p, void *ctx) {
    ProgressPrinter *pp = ctx;
    if (!pp->tty && !p->evaluated && p->elapsed_s - pp->last_line_s < 10) return;
    pp->last_line_s = p->elapsed_s;
    char eta[32], elapsed[32], test[64] = "";
    cli_format_duration(p->eta_s, eta, sizeof eta);
    cli_format_duration(p->elapsed_s, elapsed, sizeof elapsed);
    if (p->evaluated && isfinite(p->test_loss))
        snprintf(test, sizeof test, " | test %.4f acc %.1f%%", p->test_loss, 100 * p->test_accuracy);
    if (p->evaluated && isfinite(p->ema_test_loss)) /* after the test column, which scripts read by place */
        snprintf(test + strlen(test), sizeof test - strlen(test), " ema %.4f", p->ema_test_loss);
    fprintf(stderr, "%sstep %5d/%d | loss %.4f%s | lr %.2e | %.0f tok/s | %s elapsed, ETA %s%s", pp->tty ? "\r\033[K" : "",
            p->step, p->steps, p->train_loss, test, p->lr, p->tokens_per_s, elapsed, eta,
            pp->tty && !p->evaluated ? "" : "\n");
}

/* " --flag x" with the shortest decimal that reads back as x, when x is set. */
static void put_flag(FILE *out, const char *flag, double x) {
    char buf[40];
    if (!(x > 0)) return;
    for (int digits = 1; digits <= 17; digits++) {
        snprintf(buf, sizeof buf, "%.*g", digits, x);
        if (strtod(buf, NULL) == x) break;
    }
    fprintf(out, " %s %s", flag, buf);
}

/* The regularisation flags of o, as a resume must repeat them. */
static void put_regularise_flags(FILE *out, const TrainOptions *o) {
    put_flag(out, "--weight-decay", o->weight_decay);
    put_flag(out, "--dropout", o->dropout);
    put_flag(out, "--attention-dropout", o->attention_dropout);
    put_flag(out, "--ema", o->ema);
    if (o->ema_save) fputs(" --ema-save", out);
    if (o->keep_best) fputs(" --keep-best", out);
    put_flag(out, "--swap-names", o->swap_names);
}

/* s as one shell word: as it is when only safe characters, else in single
 * quotes (a ' inside written '\''), so that a pasted command reads it back. */
static void put_word(FILE *out, const char *s) {
    if (*s && s[strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_./:=,+-@%")] == '\0') {
        fputs(s, out);
        return;
    }
    fputc('\'', out);
    for (; *s; s++)
        if (*s == '\'') fputs("'\\''", out);
        else fputc(*s, out);
    fputc('\'', out);
}

/* The program as it was called (build/storylm), or storylm when found on the PATH. */
static void put_program(FILE *out) {
    put_word(out, strchr(program_invocation_name, '/') ? program_invocation_name : "storylm");
}

/* The command that continues this run, to paste as it is: the program as it
 * was called (build/storylm, or storylm from the PATH), the same stories,
 * vocabulary, threads (the bits depend on them), held-out split and every
 * flag the run was given that a resume does not read back from the model
 * (--arch, --lr, --batch, --seed and --warmup it does); not --stop-at, which
 * would stop it again at once. */
static void put_resume(FILE *out, const char *stories, const TrainOptions *o, const char *vocab_path, int n_test) {
    TrainOptions d = slm_train_default_options();
    if (dist_size(o->dist) > 1) fprintf(out, "mpirun -np %d ", dist_size(o->dist));
    put_program(out);
    fputs(" train ", out);
    put_word(out, stories);
    fputs(" --resume --out ", out);
    put_word(out, o->out);
    fputs(" --vocab ", out);
    put_word(out, vocab_path);
    fprintf(out, " --steps %d --threads %d", o->steps, o->threads);
    if (n_test != STORIES_DEFAULT_TEST) fprintf(out, " --test-stories %d", n_test);
    if (o->eval_every != d.eval_every) fprintf(out, " --eval-every %d", o->eval_every);
    if (o->snapshot_every != d.snapshot_every) fprintf(out, " --snapshot-every %d", o->snapshot_every);
    if (o->max_positions != d.max_positions) fprintf(out, " --max-positions %d", o->max_positions);
    put_flag(out, "--minutes", o->minutes);
    put_regularise_flags(out, o);
}

/* The command that samples the model. */
static void put_sample(FILE *out, const TrainOptions *o) {
    put_program(out);
    fputs(" generate --model ", out);
    put_word(out, o->out);
    fputs(" \"Lily found a\"", out);
}

/* What a put_ function writes, as a string (caller frees; NULL when out of memory). */
static char *command_text(const char *stories, const TrainOptions *o, const char *vocab_path, int n_test, int resume) {
    char *text = NULL;
    size_t len;
    FILE *f = open_memstream(&text, &len);
    if (!f) return NULL;
    if (resume) put_resume(f, stories, o, vocab_path, n_test);
    else put_sample(f, o);
    fclose(f);
    return text;
}

/* Where the run went, read from its files and the stories (for --json). */
typedef struct TrainPlace {
    const char *stories, *vocab_path;
    const Stories *s;
    int vocab_size, n_test;
} TrainPlace;

static cJSON *number_or_null(double x) { return isfinite(x) ? cJSON_CreateNumber(x) : cJSON_CreateNull(); }

/* The final summary as JSON (docs/json.md). */
static int print_json(const TrainPlace *pl, const TrainOptions *o, const TrainResult *r, Error *e) {
    cJSON *j = cli_json_begin("train");
    cJSON *model = cJSON_AddObjectToObject(j, "model");
    cJSON_AddStringToObject(model, "file", o->out);
    cJSON_AddStringToObject(model, "arch", slm_arch_name(o->arch));
    cJSON_AddNumberToObject(model, "parameters", (double)r->parameters);
    cli_json_stories(j, pl->stories, pl->s);
    cJSON *vocab = cJSON_AddObjectToObject(j, "vocab");
    cJSON_AddStringToObject(vocab, "file", pl->vocab_path);
    cJSON_AddNumberToObject(vocab, "size", pl->vocab_size);
    cJSON_AddNumberToObject(j, "step", r->final_step);
    cJSON_AddNumberToObject(j, "steps", o->steps);
    cJSON_AddNumberToObject(j, "steps_this_run", r->steps_done);
    cJSON_AddBoolToObject(j, "interrupted", r->interrupted);
    cJSON_AddNumberToObject(j, "seconds", r->seconds);
    cJSON_AddNumberToObject(j, "tokens_seen", (double)r->tokens_seen);
    cJSON_AddItemToObject(j, "train_loss", number_or_null(r->train_loss));
    cJSON_AddItemToObject(j, "test_loss", number_or_null(r->test_loss));
    cJSON_AddItemToObject(j, "test_perplexity", number_or_null(exp(r->test_loss)));
    cJSON_AddItemToObject(j, "test_accuracy", number_or_null(r->test_accuracy));
    cJSON_AddItemToObject(j, "ema_test_loss", number_or_null(r->ema_test_loss));
    char best_path[REGULARISE_PATH_MAX];
    if (o->keep_best && r->best_step >= 0) {
        cJSON *best = cJSON_AddObjectToObject(j, "best");
        cJSON_AddStringToObject(best, "file", slm_regularise_file(o->out, "best", best_path));
        cJSON_AddNumberToObject(best, "step", r->best_step);
        cJSON_AddNumberToObject(best, "test_loss", r->best_test_loss);
    } else {
        cJSON_AddNullToObject(j, "best");
    }
    char *sample = command_text(pl->stories, o, pl->vocab_path, pl->n_test, 0);
    char *resume = r->interrupted ? command_text(pl->stories, o, pl->vocab_path, pl->n_test, 1) : NULL;
    cJSON_AddStringToObject(j, "sample_command", sample ? sample : "");
    if (resume) cJSON_AddStringToObject(j, "resume_command", resume);
    else cJSON_AddNullToObject(j, "resume_command");
    free(sample);
    free(resume);
    return cli_json_print(j, e);
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
    fprintf(stderr, "%s after %d steps (%s): train loss %.4f, %s\n", r->interrupted ? "stopped" : "done",
            r->final_step, took, r->train_loss, test);
    if (isfinite(r->ema_test_loss)) fprintf(stderr, "moving average: test loss %.4f\n", r->ema_test_loss);
    if (o->keep_best && r->best_step >= 0)
        fprintf(stderr, "best: step %d, test loss %.4f, kept in %s\n", r->best_step, r->best_test_loss,
                slm_regularise_file(o->out, "best", best));
    if (json) return print_json(pl, o, r, e);
    printf("model saved to %s\nsample it:  ", o->out);
    put_sample(stdout, o);
    if (r->interrupted) {
        printf("\nresume it:  ");
        put_resume(stdout, pl->stories, o, pl->vocab_path, pl->n_test);
    }
    printf("\n");
    return 0;
}

/* Reuses an existing vocabulary, or learns one from the stories and saves it. */
static int get_vocab(const char *vocab_path, const char *stories_path, int size, char **text, bool say, Error *e) {
    size_t len;
    struct stat st;
    if (stat(vocab_path, &st) == 0) {
        if (say) fprintf(stderr, "storylm: using the vocabulary in %s (delete it to learn a new one)\n", vocab_path);
        return slm_file_read_all(vocab_path, 64u << 20, text, &len, e);
    }
    fprintf(stderr, "storylm: learning a %d-piece vocabulary from %s\n", size, stories_path);
    char *data;
    Vocab v = {0};
    VocabStats vs;
    if (slm_file_read_all(stories_path, 0, &data, &len, e)) return -1;
    int rc = slm_vocab_train_text(data, len, stories_path, size, &v, &vs, e);
    free(data);
    if (!rc) rc = slm_vocab_save(&v, vocab_path, e);
    if (!rc) *text = slm_vocab_to_text(&v, &len, e);
    slm_vocab_free(&v);
    if (!rc && !*text) rc = -1;
    if (!rc) fprintf(stderr, "storylm: wrote %s\n", vocab_path);
    return rc;
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
    fprintf(stderr, "storylm: %s: %d stories, %zu tokens; %d held out for testing%s\n", path, s->n_stories,
            s->n_tokens, s->n_test, s->from_cache ? " (token ids from cache)" : "");
    if (s->skips.empty + s->skips.invalid_utf8 + s->skips.too_long)
        fprintf(stderr, "storylm: skipped %d empty, %d invalid UTF-8, %d too long stories\n", s->skips.empty,
                s->skips.invalid_utf8, s->skips.too_long);
}

/* Can path be written? Tried now, with the same temporary file a save makes,
 * rather than after minutes of training (root passes access() where a
 * read-only file system still refuses). */
static int try_writing(const char *path, Error *e) {
    AtomicFile a;
    if (slm_atomic_open(&a, path, e)) return -1;
    slm_atomic_abort(&a);
    return 0;
}

/* Every file training writes, checked before the first step (a folder or an
 * input given as --out was found only at the first save, or never): --out,
 * its optimizer state and that state's ".next", and a vocabulary to learn;
 * none may be an input (the stories, an existing vocabulary) or another of
 * them. With --resume, --out is read and written on purpose. */
static int check_outputs(const char *stories, const TrainOptions *o, const char *vocab_path, Error *e) {
    struct stat st;
    int learn_vocab = stat(vocab_path, &st) != 0;
    char *adam = slm_checkpoint_adam_path(o->out, e), *next = adam ? slm_checkpoint_adam_next_path(o->out, e) : NULL;
    const char *inputs[] = {stories, learn_vocab ? NULL : vocab_path};
    const char *outputs[] = {o->out, adam, next, learn_vocab ? vocab_path : NULL};
    int rc = next ? 0 : -1;
    for (int i = 0; i < 4 && !rc; i++) {
        if (!outputs[i]) continue;
        rc = slm_output_check(outputs[i], inputs, 2, e);
        if (!rc && i != 2) rc = try_writing(outputs[i], e);
        for (int j = 0; j < i && !rc; j++)
            if (outputs[j] && slm_paths_same(outputs[i], outputs[j]))
                rc = FAIL(e, "give --out and --vocab different names",
                          "'%s' would be written as the model and as the vocabulary", outputs[i]);
    }
    free(adam);
    free(next);
    return rc;
}

static int train_file(const char *path, TrainOptions *o, const char *vocab_path, int n_test, bool json, Error *e,
                      int *signalled) {
    bool root = dist_rank(o->dist) == 0;
    char *vocab = NULL;
    Tokenizer tok = {0};
    Stories s = {0};
    NameSwap swap = {0};
    StoriesOptions so = slm_stories_default_options();
    so.n_test = n_test;
    FileLock lock = {0};
    struct stat st;
    int rc = 0;
    if (stat(vocab_path, &st) != 0 && dist_size(o->dist) > 1) /* every rank would learn and write it */
        rc = FAIL(e, "learn it first: storylm vocab STORIES -o vocab.txt", "under mpirun the vocabulary '%s' must exist",
                  vocab_path);
    /* rank 0 alone writes, so it alone checks the outputs and holds the lock */
    if (!rc && root) rc = check_outputs(path, o, vocab_path, e);
    if (!rc && root) rc = slm_file_lock(&lock, o->out, e); /* one run per output: they would share the state's .next */
    if (!rc) rc = get_vocab(vocab_path, path, 2000, &vocab, root, e);
    /* From the file, so that messages name it; the model has room for exactly 2,000 pieces. */
    if (!rc) rc = slm_tokenizer_load(&tok, vocab_path, VOCAB_DEFAULT_SIZE, e);
    if (!rc) rc = load_stories(&s, path, &tok, &so, o->dist, e);
    if (!rc && o->swap_names > 0 && !(rc = slm_name_swap_init(&swap, &tok, path, &s, o->swap_names, e))) {
        o->augment = slm_name_swap_story;
        o->augment_ctx = &swap;
        if (root)
            fprintf(stderr, "storylm: --swap-names %g: %d names of the training stories, %d of them to cut up\n",
                    o->swap_names, swap.n_known, swap.n_made);
    }
    if (rc) goto done;
    if (root) print_summary(&s, path);
    o->vocab_text = vocab;
    o->vocab_size = tok.size;
    o->data_path = path;
    ProgressPrinter pp = {.tty = isatty(2)};
    TrainResult r;
    rc = slm_train_run(&s, o, root ? print_progress : NULL, &pp, &r, e);
    if (rc) goto done;
    /* a signal that came at the last step or after it leaves a whole run: exit 0 */
    *signalled = r.interrupted && stop_requested;
    if (!root) goto done;
    print_comm(o->dist, &r);
    TrainPlace pl = {.stories = path, .vocab_path = vocab_path, .s = &s, .vocab_size = tok.size, .n_test = n_test};
    rc = print_result(&pl, o, &r, json, e);
done:
    slm_file_unlock(&lock);
    slm_name_swap_free(&swap);
    slm_stories_free(&s);
    slm_tokenizer_free(&tok);
    free(vocab);
    return rc;
}

static int run(int argc, char **argv) {
    TrainOptions o = slm_train_default_options();
    o.threads = cli_default_threads();
    const char *arch = "attention", *vocab_path = "vocab.txt", *pos[1], *pos_scheme = "distance", *score = "scaled-dot";
    const char *precision = "fp32";
    int steps = o.steps, seed = (int)o.seed, n_test = STORIES_DEFAULT_TEST, np, layers = 1;
    bool resume = false, ema_save = false, keep_best = false, json = false;
    Option opts[] = {
        {"steps", 0, OPT_INT, &steps, "N", "optimizer steps", 1, 1e9},
        {"minutes", 0, OPT_DOUBLE, &o.minutes, "M", "time budget in minutes, 0 for none; stops early, saving", 0, 1e6},
        {"lr", 0, OPT_DOUBLE, &o.lr, "LR", "peak learning rate (linear warm-up, cosine decay to lr/10)", 1e-7, 1},
        {"warmup", 0, OPT_INT, &o.warmup, "N", "warm-up steps; -1: min(100, steps/10)", -1, 1e9},
        {"batch", 0, OPT_INT, &o.batch, "N", "stories per step", 1, 4096},
        {"seed", 's', OPT_INT, &seed, "N", "seed of the initial weights and the story order", 0, 2147483647},
        THREADS_OPTION(o.threads),
        {"out", 'o', OPT_STRING, &o.out, "FILE", "model file to write", 0, 0},
        {"json", 0, OPT_BOOL, &json, NULL, "print the final summary as JSON on stdout (progress stays on stderr)", 0, 0},
        {"vocab", 0, OPT_STRING, &vocab_path, "FILE", "vocabulary to use, or to learn and write if missing", 0, 0},
        {"eval-every", 0, OPT_INT, &o.eval_every, "N", "steps between test evaluations and saves; 0: at the end", 0, 1e9},
        {"snapshot-every", 0, OPT_INT, &o.snapshot_every, "N", "also keep OUT.stepN.safetensors every N steps; 0: never", 0, 1e9},
        {"test-stories", 0, OPT_INT, &n_test, "N", "held-out test stories", 0, 100000},
        {"max-positions", 0, OPT_INT, &o.max_positions, "N", "positions per forward pass (memory bound)", 64, 1 << 20},
        {"arch", 0, OPT_STRING, &arch, "NAME", "attention, or window8 (chapter 6's baseline)", 0, 0},
        {"pos", 0, OPT_STRING, &pos_scheme, "SCHEME", "how positions are marked: distance (a learned score per distance back), none, absolute, sinusoidal, rope, alibi, t5 (docs/variants.md)", 0, 0},
        {"score", 0, OPT_STRING, &score, "FN", "how a query scores a key: scaled-dot (q.k/sqrt(8)), dot, general (q G k), additive (v.tanh(A q + B k))", 0, 0},
        {"layers", 0, OPT_INT, &layers, "N", "layers of heads: layer l+1's heads read the row and layer l's heads; the hidden layer reads the row and every layer's heads (docs/variants.md)", 1, STORYLM_MAX_LAYERS},
        {"stop-at", 0, OPT_INT, &o.stop_at, "STEP", "stop and save after this step, keeping the schedule of --steps; 0: never", 0, 1e9},
        {"resume", 0, OPT_BOOL, &resume, NULL, "continue the run saved in --out (and its optimizer state); --arch, --batch, --lr, --seed, --warmup must match it or be left out", 0, 0},
        {"weight-decay", 0, OPT_DOUBLE, &o.weight_decay, "W",
         "AdamW's decoupled weight decay; 0: off. On query, key, value, hidden.weight and output.weight; "
         "not on biases, distance scores or the embedding (a rare name's row would fade between the steps that read it)", 0, 1e6},
        {"dropout", 0, OPT_DOUBLE, &o.dropout, "P", "dropout on z, the hidden layer's input, in training steps only (masks seeded by --seed and the step); 0: off", 0, 1},
        {"attention-dropout", 0, OPT_DOUBLE, &o.attention_dropout, "P", "dropout on the attention weights, in training steps only (seeded likewise); 0: off", 0, 1},
        {"ema", 0, OPT_DOUBLE, &o.ema, "DECAY", "keep a moving average of the weights (e.g. 0.999) in OUT.ema.safetensors, evaluated beside them; 0: off", 0, 1},
        {"ema-save", 0, OPT_BOOL, &ema_save, NULL, "save the average as the model OUT (the raw weights, for --resume, in OUT.raw.safetensors)", 0, 0},
        {"keep-best", 0, OPT_BOOL, &keep_best, NULL, "also keep OUT.best.safetensors, the model at its lowest test loss", 0, 0},
        PRECISION_OPTION(precision),
        {"swap-names", 0, OPT_DOUBLE, &o.swap_names, "P", "rename each training story's hero with probability P (names of the training stories or made up from pieces); 0: off", 0, 1},
    };
    int rc = args_parse(&command_train, argc, argv, opts, N_OPTIONS(opts), pos, 1, 1, &np);
    if (rc) return rc > 0 ? 0 : 2;
    Error e = {0};
    if (slm_arch_parse(arch, &o.arch, &e) || slm_pos_parse(pos_scheme, &o.pos, &e) || slm_score_parse(score, &o.score, &e) ||
        slm_precision_parse(precision, &o.precision, &e))
        return args_usage_error(&command_train, "%s", e.message);
    if (o.arch != ARCH_ATTENTION && (o.pos != POS_DISTANCE || o.score != SCORE_SCALED_DOT))
        return args_usage_error(&command_train, "--pos and --score are for the attention network, not --arch %s", arch);
    if (o.arch != ARCH_ATTENTION && layers != 1)
        return args_usage_error(&command_train, "--layers is for the attention network, not --arch %s", arch);
    o.layers = layers;
    o.steps = steps;
    o.seed = (uint64_t)seed;
    o.resume = resume;
    static const struct { const char *flag; char short_name; unsigned bit; } given[] = {
        {"arch", 0, TRAIN_GIVEN_ARCH}, {"lr", 0, TRAIN_GIVEN_LR}, {"batch", 0, TRAIN_GIVEN_BATCH},
        {"seed", 's', TRAIN_GIVEN_SEED}, {"warmup", 0, TRAIN_GIVEN_WARMUP}};
    for (size_t i = 0; i < sizeof given / sizeof given[0]; i++)
        if (args_given(argc, argv, given[i].flag, given[i].short_name)) o.given |= given[i].bit;
    if (args_given(argc, argv, "pos", 0) || args_given(argc, argv, "score", 0)) o.given |= TRAIN_GIVEN_VARIANT;
    if (args_given(argc, argv, "layers", 0)) o.given |= TRAIN_GIVEN_LAYERS;
    if (args_given(argc, argv, "precision", 0)) o.given |= TRAIN_GIVEN_PRECISION;
    o.ema_save = ema_save;
    o.keep_best = keep_best;
    o.threads = cli_set_threads(o.threads);
    o.stop = &stop_requested;
    if (slm_regularise_check_options(&o, &e)) return args_usage_error(&command_train, "%s", e.message);
    install_handlers();
    int signalled = 0;
    Dist dist;
    if (slm_dist_init(&dist, &e)) return cli_fail(&e);
    o.dist = &dist;
    if (train_file(pos[0], &o, vocab_path, n_test, json, &e, &signalled)) {
        if (dist.rank != 0) slm_error_prefix(&e, "rank %d: ", dist.rank);
        rc = cli_fail(&e);
        slm_dist_abort(&dist, rc); /* the other ranks may be waiting for this one */
        return rc;
    }
    slm_dist_finalize(&dist);
    return signalled ? 130 : 0;
}
