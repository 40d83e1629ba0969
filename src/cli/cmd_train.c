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
static void print_kept(const TrainOptions *o, const TrainResult *r) {
    if (r->kept_step < 0) return;
    if (r->kept_step == 0 && o->from)
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

/* The summary's account of the model kept and of the early stop (docs/json.md). */
static cJSON *kept_json(cJSON *j, const TrainOptions *o, const TrainResult *r) {
    if (!j) return NULL;
    cJSON *kept = r->kept_step >= 0 ? cJSON_AddObjectToObject(j, "kept") : NULL;
    if (!kept) cJSON_AddNullToObject(j, "kept");
    if (kept) {
        cJSON_AddStringToObject(kept, "file", o->out);
        cJSON_AddNumberToObject(kept, "step", r->kept_step);
        if (isfinite(r->kept_test_loss))
            cJSON_AddNumberToObject(kept, "test_loss", r->kept_test_loss);
        else
            cJSON_AddNullToObject(kept, "test_loss");
        cJSON_AddStringToObject(kept, "why", o->keep_last ? "last" : "lowest test loss");
    }
    if (r->from[0]) { /* a resumed fine-tuning's too: its test loss before the first step was the first run's */
        cJSON *from = cJSON_AddObjectToObject(j, "from");
        cJSON_AddStringToObject(from, "file", r->from);
        if (isfinite(r->from_test_loss))
            cJSON_AddNumberToObject(from, "test_loss", r->from_test_loss);
        else
            cJSON_AddNullToObject(from, "test_loss");
    } else {
        cJSON_AddNullToObject(j, "from");
    }
    cJSON *stop = cJSON_AddObjectToObject(j, "early_stop");
    cJSON_AddBoolToObject(stop, "stopped", r->early_stopped);
    cJSON_AddNumberToObject(stop, "patience", o->patience);
    cJSON_AddStringToObject(stop, "off", "--patience 0");
    return j;
}

/* The final summary: on stderr the numbers, on stdout where the model is and
 * the commands that sample and resume it (or all of it as JSON). */
static int print_result(const TrainPlace *pl, const TrainOptions *o, const TrainResult *r, bool json, Error *e) {
    char took[32], best[REGULARISE_PATH_MAX];
    cli_format_duration(r->seconds, took, sizeof took);
    if (r->nothing_saved) {
        fprintf(stderr, "stopped at step %d in its first seconds: nothing saved, so the same command starts afresh\n",
                r->final_step);
        return json ? cli_json_print(kept_json(slm_train_summary_json(pl, o, r), o, r), e) : 0;
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
    print_kept(o, r);
    if (isfinite(r->from_test_loss))
        fprintf(stderr, "fine-tuned: test loss %.4f before the first step (%s as it was), %.4f kept\n",
                r->from_test_loss, o->from_name, r->kept_test_loss);
    if (o->keep_best && r->best_step >= 0)
        fprintf(stderr, "best: step %d, test loss %.4f, kept in %s\n", r->best_step, r->best_test_loss,
                slm_regularise_file(o->out, "best", best));
    if (json) return cli_json_print(kept_json(slm_train_summary_json(pl, o, r), o, r), e);
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
    fprintf(stderr, "storylm: learning a %d-piece %svocabulary from %s\n", size ? size : VOCAB_DEFAULT_SIZE,
            p->cased ? "cased " : "", stories_path);
    int got;
    if (slm_train_learn_vocab(vocab_path, stories_path, size, p->cased, p->allow_skipped, text, &got, refused, e))
        return -1;
    fprintf(stderr, "storylm: wrote %s\n", vocab_path);
    if (got < VOCAB_DEFAULT_SIZE) say_small_vocab(got, stories_path, vocab_path);
    return 0;
}

/* The vocabulary a model file holds (a fine-tuned run's --vocab: its base's), read from its header. */
static int model_vocab(const char *path, char **text, Error *e) {
    SafeTensorsFile f;
    if (slm_safetensors_open(&f, path, e)) return -1;
    const char *v = slm_metadata_get(&f.metadata, "vocab");
    size_t n = v ? strlen(v) + 1 : 0;
    *text = v ? xmalloc(n, e) : NULL;
    if (*text) memcpy(*text, v, n);
    slm_safetensors_close(&f);
    if (!v) return FAIL(e, "give a model storylm train saved, or a vocab.txt", "'%s' holds no vocabulary", path);
    return *text ? 0 : -1;
}

/* Reuses an existing vocabulary, or learns one from the stories and saves it
 * (learn: the claims say it is to be learnt, and hold it). */
static int get_vocab(const TrainParams *p, int size, char **text, bool say, bool learn, bool *refused, Error *e) {
    size_t len;
    const char *vocab_path = p->vocab;
    if (learn) return learn_vocab(p, size, text, refused, e);
    if (slm_file_kind(vocab_path) == FILE_MODEL) return model_vocab(vocab_path, text, e);
    char shipped[PATH_MAX]; /* never to be deleted: the shipped model's */
    bool is_shipped = slm_data_file_find(SHIPPED_VOCAB_REL, shipped, sizeof shipped) && !strcmp(shipped, vocab_path);
    if (say && !is_shipped)
        fprintf(stderr, "storylm: using the vocabulary in %s (delete it to learn a new one)\n", vocab_path);
    return slm_file_read_all(vocab_path, 64u << 20, text, &len, e);
}

/* The tokenizer of the vocabulary file at path, or of a model file's vocabulary (text). */
static int load_tokenizer(Tokenizer *tok, const char *path, const char *text, int size, Error *e) {
    if (slm_file_kind(path) != FILE_MODEL) return slm_tokenizer_load(tok, path, size, e);
    if (!slm_tokenizer_from_text(tok, text, strlen(text), size, e)) return 0;
    slm_error_prefix(e, "the vocabulary of '%s': ", path);
    return -1;
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

/* --steps and --eval-every left out: fitted to the corpus (a small one is
 * learnt by heart long before 3,000 steps), and said when below the most. */
static void fit_schedule(TrainParams *p, const Stories *s, bool say) {
    TrainOptions *o = &p->o;
    if (!p->steps_given) o->steps = slm_train_default_steps(s->n_train, o->batch);
    if (!p->eval_every_given) o->eval_every = slm_train_default_eval_every(o->steps);
    if (say && !p->steps_given && o->steps < TRAIN_MAX_DEFAULT_STEPS)
        fprintf(stderr,
                "storylm: %d training stories: %d steps (%d passes over them), evaluated every %d; --steps N sets "
                "it\n",
                s->n_train, o->steps, TRAIN_DEFAULT_PASSES, o->eval_every);
}

/* --from: the trained model the run starts from (p->vocab names it too, so
 * its vocabulary is the run's), and the share of the stories' tokens its
 * vocabulary cannot spell, said (more than 1% was refused by check_fit). */
static int load_base(TrainParams *p, Model *base, const Stories *s, const Tokenizer *tok, bool say, Error *e) {
    TrainOptions *o = &p->o;
    char *vocab = NULL;
    Metadata md = {0};
    int rc = slm_checkpoint_load_model(p->from, base, &vocab, &md, e);
    free(vocab);
    slm_metadata_free(&md);
    if (rc) return -1;
    const char *slash = strrchr(p->from, '/');
    o->from = base, o->from_name = slash ? slash + 1 : p->from;
    o->arch = base->cfg.arch, o->layers = slm_model_layers(&base->cfg);
    size_t unk = slm_stories_count_unknown(s, tok->unk_id);
    if (say)
        fprintf(stderr,
                "storylm: fine-tuning %s (%s, %zu parameters) at --lr %g: its vocabulary of %d pieces spells %zu of "
                "the stories' %zu tokens as [UNK] (%.2f%%)\n",
                p->from, base->cfg.arch->name, base->n_params, o->lr, tok->size, unk, s->n_tokens,
                s->n_tokens ? 100.0 * (double)unk / (double)s->n_tokens : 0.0);
    return 0;
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
    if (!rc && (rc = load_tokenizer(&tok, vocab_path, vocab, vocab_size, e)) && strstr(e->message, "pieces, expected"))
        snprintf(e->hint, sizeof e->hint,
                 "leave out --vocab-size to use '%s' as it is, or delete it (or give --vocab "
                 "NEW) to learn one of %d pieces",
                 vocab_path, vocab_size);
    if (!rc && p->cased && !tok.cased)
        rc = FAIL(e,
                  p->from ? "fine-tune without --cased (the base keeps its vocabulary), or train from scratch with "
                            "--cased"
                          : "delete it or give --vocab NEW.txt, and --cased learns a cased one there",
                  "--cased: the vocabulary of '%s' is not cased (it lower-cases and strips accents)", vocab_path);
    if (!rc && !learnt && tok.size != VOCAB_DEFAULT_SIZE && root)
        fprintf(stderr, "storylm: the model's vocabulary has %d pieces, as %s\n", tok.size, vocab_path);
    if (!rc) rc = load_stories(&s, path, &tok, &so, o->dist, e);
    if (!rc) rc = slm_train_check_story_count(s.n_stories, &s.skips, path, e);
    if (!rc && s.n_test > 0) rc = slm_stories_text_bytes(&s, path, &tok, s.test, s.n_test, &o->test_bytes, e);
    if (!rc) rc = check_fit(p, &s, &tok, learnt, refused, e);
    Model base = {0};
    if (!rc && p->from && !p->resume) rc = load_base(p, &base, &s, &tok, root, e);
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
    fit_schedule(p, &s, root);
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
                     .fine_tuned = r.from[0] != '\0',
                     .s = &s,
                     .vocab_size = tok.size,
                     .n_test = n_test};
    rc = print_result(&pl, o, &r, json, e);
done:
    if (o->from) slm_model_free(&base);
    o->from = NULL;
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

/* --from: the model's architecture and vocabulary are the run's, so the flags
 * that would set others are refused (--lr stays training's 3e-3: of 3e-4, 1e-3
 * and 3e-3 it fine-tuned best, docs/guide.md). The
 * model is found as a file or a shipped one's short name, and is the run's
 * vocabulary (--vocab MODEL reads a model's). */
static int settle_from(TrainParams *p, const ParamList *l, const ParamsGiven *given) {
    static const char *const kept[] = {"vocab",           "vocab-size", "arch",    "layers",
                                       "position-scheme", "score",      "d-model", "n-heads",
                                       "d-head",          "d-mlp",      "act"};
    for (size_t i = 0; i < sizeof kept / sizeof kept[0]; i++)
        if (slm_params_given(given, l, kept[i]))
            return args_usage_error(&command_train,
                                    "--from keeps the model's architecture and vocabulary: leave --%s out (or train "
                                    "from scratch without --from)",
                                    kept[i]);
    static char found[PATH_MAX]; /* one model a process, as cli_vocab_path's */
    Error e = {0};
    if (slm_data_model_path(p->from, found, sizeof found, &p->from, &e)) return cli_fail(&e), 2;
    p->vocab = p->from;
    return 0;
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
    o->keep_last = p->keep_last;
    p->steps_given = slm_params_given(given, &l, "steps");
    p->eval_every_given = slm_params_given(given, &l, "eval-every");
    o->force = p->force;
    if (!slm_params_given(given, &l, "vocab-size")) p->vocab_size = 0; /* the words' or the file's size */
    return p->from ? settle_from(p, &l, given) : 0;
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
