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
#include "storylm/stories_fit.h"
#include "storylm/train.h"
#include "storylm/train_params.h"
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
    bool resume_said; /* the step a resumed run began from, said with its first step */
    double last_line_s;
    Heartbeat beat; /* a line within a long step too (--batch 4096) */
} ProgressPrinter;

/* On a terminal one line rewritten in place; piped, a plain line every 10 s
 * and at every evaluation. */
static void print_progress(const TrainProgress *p, void *ctx) {
    ProgressPrinter *pp = ctx;
    if (!pp->resume_said && p->start_step > 0)
        fprintf(stderr, "storylm: resuming from step %d of %d\n", p->start_step, p->steps);
    pp->resume_said = true;
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
    if (!slm_data_file_find(SHIPPED_VOCAB_REL, shipped, sizeof shipped))
        snprintf(shipped, sizeof shipped, SHIPPED_VOCAB_REL);
    fprintf(stderr,
            "storylm: the words of %s give only %d pieces, so the model's vocabulary has %d (the chapter's has %d).\n"
            "storylm: for English stories the shipped vocabulary of %d may serve better: train with "
            "--vocab " SHIPPED_VOCAB_NAME " (%s; %s stays this corpus's own)\n",
            stories_path, size, size, VOCAB_DEFAULT_SIZE, VOCAB_DEFAULT_SIZE, shipped, vocab_path);
}

/* Learns a vocabulary of `size` pieces (0: as many as the words give, up to
 * 2,000) from the stories and saves it, saying so on stderr. */
static int learn_vocab(const TrainParams *p, int size, char **text, bool *refused, Error *e) {
    const char *vocab_path = p->vocab, *stories_path = p->stories;
    fprintf(stderr, "storylm: learning a %d-piece vocabulary from %s\n", size ? size : VOCAB_DEFAULT_SIZE,
            stories_path);
    int got;
    if (slm_train_learn_vocab(vocab_path, stories_path, size, p->allow_skipped, text, &got, refused, e)) return -1;
    fprintf(stderr, "storylm: wrote %s\n", vocab_path);
    if (got < VOCAB_DEFAULT_SIZE) say_small_vocab(got, stories_path, vocab_path);
    return 0;
}

/* Reuses an existing vocabulary, or learns one from the stories and saves it
 * (learn: the claims say it is to be learnt, and hold it). */
static int get_vocab(const TrainParams *p, int size, char **text, bool say, bool learn, bool *refused, Error *e) {
    size_t len;
    const char *vocab_path = p->vocab;
    if (learn) return learn_vocab(p, size, text, refused, e);
    char shipped[PATH_MAX]; /* never to be deleted: the shipped model's */
    bool is_shipped = slm_data_file_find(SHIPPED_VOCAB_REL, shipped, sizeof shipped) && !strcmp(shipped, vocab_path);
    if (say && !is_shipped)
        fprintf(stderr, "storylm: using the vocabulary in %s (delete it to learn a new one)\n", vocab_path);
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

/* The checks of the stories against the run, before its first step; *refused
 * when one fails (unless its flag accepts it on purpose). A resumed run's
 * vocabulary was accepted when the run began. */
static int check_fit(const TrainParams *p, const Stories *s, const Tokenizer *tok, bool learnt, bool *refused,
                     Error *e) {
    int rc = 0;
    if (!p->allow_skipped) rc = slm_stories_check_skips(&s->skips, s->n_stories, p->stories, "--allow-skipped", e);
    if (!rc && !learnt && !p->resume && !p->allow_unknown)
        rc = slm_stories_check_unknown(s, tok, p->stories, p->vocab, "--allow-unknown", e);
    *refused = rc != 0;
    return rc;
}

/* p->vocab_size: --vocab-size, 0 when not given (then any size a vocabulary file has). */
static int train_file(TrainParams *p, Error *e, int *signalled, bool *refused) {
    const char *path = p->stories, *vocab_path = p->vocab;
    TrainOptions *o = &p->o;
    int vocab_size = p->vocab_size, n_test = p->test_stories;
    bool json = p->json;
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
    if (!rc) rc = get_vocab(p, vocab_size, &vocab, root, learnt, refused, e);
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
    if (!rc) rc = check_fit(p, &s, &tok, learnt, refused, e);
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

/* The architecture's own scheme and layers where the flags give none (the
 * transformer's: absolute, 2 blocks). */
static void arch_defaults(const ParamList *l, const ParamsGiven *given, TrainParams *p) {
    ModelConfig d = slm_model_config_default(p->o.arch, 0);
    if (!slm_params_given(given, l, "position-scheme")) p->o.pos = d.pos;
    if (!slm_params_given(given, l, "layers")) p->layers = d.n_layers;
}

/* The TRAIN_GIVEN_* bits of the flags given: a resume refuses any the run contradicts. */
static unsigned given_bits(const ParamList *l, const ParamsGiven *given) {
    static const struct {
        const char *flag;
        unsigned bit;
    } bits[] = {
        {"arch", TRAIN_GIVEN_ARCH},     {"lr", TRAIN_GIVEN_LR},         {"batch", TRAIN_GIVEN_BATCH},
        {"seed", TRAIN_GIVEN_SEED},     {"warmup", TRAIN_GIVEN_WARMUP}, {"position-scheme", TRAIN_GIVEN_VARIANT},
        {"score", TRAIN_GIVEN_VARIANT}, {"layers", TRAIN_GIVEN_LAYERS}, {"precision", TRAIN_GIVEN_PRECISION},
        {"d-mlp", TRAIN_GIVEN_MLP},     {"act", TRAIN_GIVEN_MLP}};
    unsigned out = 0;
    for (size_t i = 0; i < sizeof bits / sizeof bits[0]; i++)
        if (slm_params_given(given, l, bits[i].flag)) out |= bits[i].bit;
    ParamList shape; /* --d-model, --n-heads, --d-head, --d-mlp or --act */
    slm_params_list(&params_transformer_shape, &shape);
    for (int i = 0; i < shape.n; i++)
        if (slm_params_given(given, l, shape.at[i].p->name)) out |= TRAIN_GIVEN_SHAPE;
    return out;
}

/* The names of --arch, --position-scheme, --score and --act into p->o, and
 * what the flags given imply; non-zero after a usage error. */
static int settle(TrainParams *p, const ParamsGiven *given) {
    ParamList l;
    slm_params_list(&params_train, &l);
    TrainOptions *o = &p->o;
    Error e = {0};
    if (!(o->arch = slm_arch_find(p->arch, &e)) || slm_pos_parse(p->position_scheme, &o->pos, &e) ||
        slm_score_parse(p->score, &o->score, &e) || slm_act_parse(p->act, &o->act, &e))
        return args_usage_error(&command_train, "%s", e.message);
    o->given |= given_bits(&l, given);
    arch_defaults(&l, given, p);
    if (slm_train_check_arch(o, p->layers, p->resume, &e)) return args_usage_error(&command_train, "%s", e.message);
    o->layers = p->layers;
    o->seed = (uint64_t)p->seed;
    o->resume = p->resume;
    o->ema_save = p->ema_save;
    o->keep_best = p->keep_best;
    o->force = p->force;
    if (!slm_params_given(given, &l, "vocab-size")) p->vocab_size = 0; /* the words' or the file's size */
    return 0;
}

static int run(int argc, char **argv) {
    TrainParams p = {0};
    slm_params_init(&params_train, &p);
    p.o = slm_train_default_options();
    p.o.threads = cli_default_threads();
    for (int i = 0; i < slm_arch_count(); i++) /* the shape flags' defaults, as --help shows them */
        if (slm_arch_at(i)->config_shape) {
            ModelConfig d = slm_arch_at(i)->config_default(0);
            p.o.d_model = d.row_dim, p.o.heads = d.n_heads, p.o.d_head = d.key_dim, p.o.d_mlp = d.hidden_dim;
            break;
        }
    ParamsGiven given;
    int rc = args_parse(&command_train, argc, argv, &params_train, &p, &given);
    if (rc) return rc > 0 ? 0 : 2;
    if (settle(&p, &given)) return 2;
    TrainOptions *o = &p.o;
    o->threads = cli_set_threads(o->threads);
    o->stop = &stop_requested;
    Error e = {0};
    if (slm_regularise_check_options(o, &e)) return args_usage_error(&command_train, "%s", e.message);
    if (!(p.vocab = cli_vocab_path(p.vocab, &e))) return cli_fail(&e);
    install_handlers();
    int signalled = 0;
    bool refused = false;
    Dist dist;
    if (slm_dist_init(&dist, &e)) return cli_fail(&e);
    o->dist = &dist;
    dist.timeout_s = p.rank_timeout;
    if (cli_train_ranks_agree(&dist, &params_train, &p, p.stories, p.vocab, &e) ||
        train_file(&p, &e, &signalled, &refused)) {
        int fail = cli_train_ranks_fail(&dist, &e);
        return refused ? 2 : fail; /* refused before training: as a usage error */
    }
    slm_dist_finalize(&dist);
    return signalled ? 130 : 0;
}
