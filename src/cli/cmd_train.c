/* storylm train STORIES: the library's whole run (slm_train_file: the
 * vocabulary built or reused, held-out test stories, training, atomic
 * saves), its progress and summary printed here; Ctrl-C stops after saving
 * (the SIGINT flag is the run's stop callback). */
#define _GNU_SOURCE /* program_invocation_name: the program as called, for the resume command */
#include <errno.h>  /* program_invocation_name */
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "args.h"
#include "common.h"
#include "heartbeat.h"
#include "train_ranks.h"
#include "storylm/regularise.h"
#include "storylm/train_file.h"

static int run(int argc, char **argv);
const Command command_train = {"train", "train a model on a stories file, from scratch or (--from) from a trained one",
                               "storylm train STORIES [options]",
                               "Trains the chapter's attention network (or chapter 6's window8 baseline) on the\n"
                               "stories in STORIES (20 or more; docs/guide.md says how many make a useful model),\n"
                               "or, with --from MODEL, fine-tunes a trained model on them (its architecture and\n"
                               "vocabulary kept): a writer's few hundred stories learn far more that way.\n"
                               "The vocabulary is read from --vocab, or learnt from STORIES and written there when\n"
                               "the file does not exist: 2,000 pieces, or as many as a small corpus's words give\n"
                               "(said on stderr; --vocab-size N asks for exactly N). A tenth of the stories, at most\n"
                               "100, is held out for testing.\n"
                               "Each step reads 8 whole stories; --steps left out fits the corpus (30 passes, at\n"
                               "most 3,000). The model (and its optimizer state, for --resume) is saved atomically\n"
                               "when an evaluation finds the lowest test loss yet, so --out holds the best model;\n"
                               "the run stops by itself after --patience evaluations without a lower one. Ctrl-C\n"
                               "stops after saving.\n"
                               "Under mpirun -np N (a build with MPI), N processes share every step's stories; the\n"
                               "model equals one process's with N x --threads threads, bit for bit; rank 0 prints\n"
                               "and saves. The vocabulary must exist then (learn it first with storylm vocab).",
                               run};

static volatile sig_atomic_t stop_requested; /* the one thing a signal handler may set */

/* Ctrl-C (SIGINT) in a run's first seconds saves nothing; SIGTERM always saves. */
static void on_signal(int sig) { stop_requested = sig == SIGINT ? TRAIN_STOP_INTERACTIVE : 1; }

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
    char eta[32], elapsed[32], test[96] = "";
    cli_format_duration(p->eta_s, eta, sizeof eta);
    cli_format_duration(p->elapsed_s, elapsed, sizeof elapsed);
    if (p->evaluated && isfinite(p->test_loss))
        snprintf(test, sizeof test, " | test %.4f acc %.1f%%", p->test_loss, 100 * p->test_accuracy);
    if (p->evaluated && isfinite(p->ema_test_loss)) /* after the test column, which scripts read by place */
        snprintf(test + strlen(test), sizeof test - strlen(test), " ema %.4f", p->ema_test_loss);
    if (p->evaluated && isfinite(p->test_loss_per_char)) /* last: the columns before keep their places */
        snprintf(test + strlen(test), sizeof test - strlen(test), " (%.4f/char)", p->test_loss_per_char);
    fprintf(stderr, "%sstep %5d/%d | loss %.4f%s | lr %.2e | %.0f tok/s | %s elapsed, ETA %s%s",
            pp->tty ? "\r\033[K" : "", p->step, p->steps, p->train_loss, test, p->lr, p->tokens_per_s, elapsed, eta,
            pp->tty && !p->evaluated ? "" : "\n");
}

/* Which model --out holds: the best evaluated (said when not the last), or the last with --keep-last. */
static void print_kept(const TrainOptions *o, const TrainResult *r, bool fine_tuned) {
    if (r->kept_step < 0) return;
    if (r->kept_step == 0 && fine_tuned)
        fprintf(stderr,
                "kept: step 0, the model fine-tuned from as it was, in %s: no step lowered its test loss %.4f (give "
                "more stories, or a lower --lr)\n",
                o->out, r->kept_test_loss);
    else if (r->kept_step != r->final_step && isfinite(r->kept_test_loss))
        fprintf(stderr,
                "kept: step %d, test loss %.4f, the lowest evaluated, in %s (the test loss rose after it: the later "
                "steps learnt the training stories by heart; --keep-last keeps the last model instead)\n",
                r->kept_step, r->kept_test_loss, o->out);
    else if (r->kept_step != r->final_step)
        fprintf(stderr, "kept: step %d in %s\n", r->kept_step, o->out);
    else if (o->keep_last && r->best_step >= 0 && r->test_loss > r->best_test_loss + 0.1)
        fprintf(stderr,
                "storylm: the test loss was lowest at step %d (%.4f) and rose since: the model learnt its training "
                "stories by heart; without --keep-last the run keeps that model (docs/guide.md)\n",
                r->best_step, r->best_test_loss);
}

/* The final summary: on stderr the numbers, on stdout where the model is and
 * the commands that sample and resume it (or all of it as JSON). */
static int print_result(const TrainOptions *o, TrainSummary *sum, bool json, Error *e) {
    const TrainResult *r = &sum->r;
    char took[32], best[REGULARISE_PATH_MAX];
    cli_format_duration(r->seconds, took, sizeof took);
    cJSON *j = sum->json;
    sum->json = NULL; /* printed and deleted by cli_json_print */
    if (r->nothing_saved) {
        fprintf(stderr, "stopped at step %d in its first seconds: nothing saved, so the same command starts afresh\n",
                r->final_step);
        return json ? cli_json_print(j, e) : (cJSON_Delete(j), 0);
    }
    char test[160] = "no test stories";
    if (isfinite(r->test_loss))
        snprintf(test, sizeof test, "test loss %.4f (perplexity %.1f), accuracy %.1f%%", r->test_loss,
                 exp(r->test_loss), 100 * r->test_accuracy);
    if (isfinite(r->test_loss_per_char))
        snprintf(test + strlen(test), sizeof test - strlen(test), ", %.4f nats (%.4f bits) per character",
                 r->test_loss_per_char, r->test_loss_per_char / log(2.0));
    fprintf(stderr, "%s after %d steps (%s): train loss %.4f, %s\n", r->interrupted ? "stopped" : "done", r->final_step,
            took, r->train_loss, test);
    if (isfinite(r->ema_test_loss)) fprintf(stderr, "moving average: test loss %.4f\n", r->ema_test_loss);
    if (r->early_stopped)
        fprintf(stderr,
                "storylm: stopped early: the last %d evaluations found no test loss below step %d's; --patience 0 "
                "trains all %d steps\n",
                o->patience, r->best_step, o->steps);
    print_kept(o, r, sum->fine_tuned_now);
    if (isfinite(r->from_test_loss))
        fprintf(stderr, "fine-tuned: test loss %.4f before the first step (%s as it was), %.4f kept\n",
                r->from_test_loss, o->from_name, r->kept_test_loss);
    if (o->keep_best && r->best_step >= 0)
        fprintf(stderr, "best: step %d, test loss %.4f, kept in %s\n", r->best_step, r->best_test_loss,
                slm_regularise_file(o->out, "best", best));
    if (json) return cli_json_print(j, e);
    cJSON_Delete(j);
    printf("model saved to %s\nsample it:  %s", o->out, sum->sample_command);
    if (sum->resume_command) printf("\nresume it:  %s", sum->resume_command);
    printf("\n");
    return 0;
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

/* What the library tells the user: a line (or lines) on stderr. */
static void say(const char *text, void *ctx) {
    (void)ctx;
    fprintf(stderr, "%s\n", text);
}

/* The SIGINT or SIGTERM flag, polled between steps. */
static int stop_asked(void *ctx) {
    (void)ctx;
    return stop_requested;
}

/* The heartbeat's thread, from the first step on (rank 0's alone: it prints). */
static void begin(const TrainOptions *o, void *ctx) {
    ProgressPrinter *pp = ctx;
    if (dist_rank(o->dist) == 0) cli_heartbeat_start(&pp->beat, "training", o->steps);
}

/* The run (slm_train_file), then rank 0's summary; *signalled: a signal cut it short. */
static int train_file(TrainParams *p, Error *e, int *signalled, bool *refused) {
    TrainOptions *o = &p->o;
    bool root = dist_rank(o->dist) == 0;
    ProgressPrinter pp = {.tty = isatty(2)};
    TrainCallbacks cb = {.progress = print_progress, .say = say, .stop = stop_asked, .begin = begin, .ctx = &pp};
    TrainSummary sum;
    /* the program as it was called (build/storylm), or storylm when found on the PATH */
    const char *program = strchr(program_invocation_name, '/') ? program_invocation_name : "storylm";
    int rc = slm_train_file(p, program, &cb, &sum, e);
    if (root) cli_heartbeat_stop(&pp.beat);
    *refused = sum.refused;
    /* a signal that came at the last step or after it leaves a whole run: exit 0 */
    *signalled = !rc && sum.r.interrupted && stop_requested;
    if (!rc && root) {
        print_comm(o->dist, &sum.r);
        rc = print_result(o, &sum, p->json, e);
    }
    slm_train_summary_free(&sum);
    return rc;
}

static int run(int argc, char **argv) {
    TrainParams p;
    slm_train_params_init(&p, cli_default_threads());
    ParamsGiven given;
    int rc = args_parse(&command_train, argc, argv, &params_train, &p, &given);
    if (rc) return rc > 0 ? 0 : 2;
    Error e = {0};
    static char from[PATH_MAX]; /* --from's model found: one a process, as cli_vocab_path's */
    if ((rc = slm_train_settle(&p, &given, from, sizeof from, &e)))
        return rc == -2 ? (cli_fail(&e), 2) : args_usage_error(&command_train, "%s", e.message);
    TrainOptions *o = &p.o;
    o->threads = cli_set_threads(o->threads);
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
