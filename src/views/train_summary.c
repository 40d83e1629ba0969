/* What a front needs around a training run: see include/storylm/train_summary.h. */
#define _GNU_SOURCE /* open_memstream */
#include "storylm/train_summary.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "storylm/checkpoint.h"
#include "storylm/fileio.h"
#include "storylm/stories_fit.h"
#include "storylm/outputs.h"
#include "storylm/parse.h"
#include "storylm/probe_views.h"
#include "storylm/regularise.h"
#include "storylm/vocab_train.h"

/* " --flag x" with the shortest decimal that reads back as x, when x is set. */
static void put_flag(FILE *out, const char *flag, double x) {
    char buf[40];
    if (!(x > 0)) return;
    slm_format_exact(x, buf, sizeof buf);
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
    put_flag(out, "--invent-names", o->invent_names);
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
        if (*s == '\'')
            fputs("'\\''", out);
        else
            fputc(*s, out);
    fputc('\'', out);
}

/* The command that continues this run, to paste as it is: the program as it
 * was called (build/storylm, or storylm from the PATH), the same stories,
 * vocabulary, threads (the bits depend on them), held-out split and every
 * flag the run was given that a resume does not read back from the model
 * (--arch, --lr, --batch, --seed and --warmup it does); not --stop-at, which
 * would stop it again at once. */
static void put_resume(FILE *out, const TrainPlace *pl, const TrainOptions *o) {
    TrainOptions d = slm_train_default_options();
    if (dist_size(o->dist) > 1) fprintf(out, "mpirun -np %d ", dist_size(o->dist));
    put_word(out, pl->program);
    fputs(" train ", out);
    put_word(out, pl->stories);
    fputs(" --resume --out ", out);
    put_word(out, o->out);
    fputs(pl->fine_tuned ? " --from " : " --vocab ", out);
    put_word(out, pl->vocab_path);
    fprintf(out, " --steps %d --threads %d", o->steps, o->threads);
    if (pl->n_test != STORIES_DEFAULT_TEST) fprintf(out, " --test-stories %d", pl->n_test);
    if (o->eval_every != d.eval_every) fprintf(out, " --eval-every %d", o->eval_every);
    if (o->snapshot_every != d.snapshot_every) fprintf(out, " --snapshot-every %d", o->snapshot_every);
    if (o->max_positions != d.max_positions) fprintf(out, " --max-positions %d", o->max_positions);
    put_flag(out, "--minutes", o->minutes);
    put_regularise_flags(out, o);
}

/* The command that samples the model. */
static void put_sample(FILE *out, const TrainPlace *pl, const TrainOptions *o) {
    put_word(out, pl->program);
    fputs(" generate --model ", out);
    put_word(out, o->out);
    fputs(" \"Lily found a\"", out);
}

char *slm_train_command(const TrainPlace *pl, const TrainOptions *o, bool resume) {
    char *text = NULL;
    size_t len;
    FILE *f = open_memstream(&text, &len);
    if (!f) return NULL;
    if (resume)
        put_resume(f, pl, o);
    else
        put_sample(f, pl, o);
    fclose(f);
    return text;
}

cJSON *slm_json_number_or_null(double x) { return isfinite(x) ? cJSON_CreateNumber(x) : cJSON_CreateNull(); }

cJSON *slm_train_summary_json(const TrainPlace *pl, const TrainOptions *o, const TrainResult *r) {
    cJSON *j = slm_view_json_begin("train");
    cJSON *model = cJSON_AddObjectToObject(j, "model");
    cJSON_AddStringToObject(model, "file", o->out);
    cJSON_AddStringToObject(model, "arch", o->arch->name);
    cJSON_AddNumberToObject(model, "parameters", (double)r->parameters);
    slm_view_json_stories(j, pl->stories, pl->s);
    cJSON *vocab = cJSON_AddObjectToObject(j, "vocab");
    cJSON_AddStringToObject(vocab, "file", pl->vocab_path);
    cJSON_AddNumberToObject(vocab, "size", pl->vocab_size);
    cJSON_AddNumberToObject(j, "step", r->final_step);
    cJSON_AddNumberToObject(j, "steps", o->steps);
    cJSON_AddNumberToObject(j, "steps_this_run", r->steps_done);
    cJSON_AddBoolToObject(j, "interrupted", r->interrupted);
    cJSON_AddNumberToObject(j, "seconds", r->seconds);
    cJSON_AddNumberToObject(j, "tokens_seen", (double)r->tokens_seen);
    cJSON_AddItemToObject(j, "train_loss", slm_json_number_or_null(r->train_loss));
    cJSON_AddItemToObject(j, "test_loss", slm_json_number_or_null(r->test_loss));
    cJSON_AddItemToObject(j, "test_perplexity", slm_json_number_or_null(exp(r->test_loss)));
    cJSON_AddItemToObject(j, "test_accuracy", slm_json_number_or_null(r->test_accuracy));
    cJSON_AddItemToObject(j, "test_loss_per_char", slm_json_number_or_null(r->test_loss_per_char));
    cJSON_AddItemToObject(j, "test_bits_per_char", slm_json_number_or_null(r->test_loss_per_char / log(2.0)));
    cJSON_AddItemToObject(j, "ema_test_loss", slm_json_number_or_null(r->ema_test_loss));
    cJSON_AddItemToObject(j, "ema_test_accuracy", slm_json_number_or_null(r->ema_test_accuracy));
    char best_path[REGULARISE_PATH_MAX];
    if (o->keep_best && r->best_step >= 0) {
        cJSON *best = cJSON_AddObjectToObject(j, "best");
        cJSON_AddStringToObject(best, "file", slm_regularise_file(o->out, "best", best_path));
        cJSON_AddNumberToObject(best, "step", r->best_step);
        cJSON_AddNumberToObject(best, "test_loss", r->best_test_loss);
    } else {
        cJSON_AddNullToObject(j, "best");
    }
    char *sample = slm_train_command(pl, o, false);
    char *resume = r->interrupted ? slm_train_command(pl, o, true) : NULL;
    cJSON_AddStringToObject(j, "sample_command", sample ? sample : "");
    if (resume)
        cJSON_AddStringToObject(j, "resume_command", resume);
    else
        cJSON_AddNullToObject(j, "resume_command");
    free(sample);
    free(resume);
    return j;
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

#define KEEP_MODEL_HINT "give --resume to continue it, --out NEW for another model, or --force to replace it"

/* The files beside --out that this run writes: its checkpoint (OUT, or
 * OUT.raw with --ema-save), the checkpoint's optimizer state and that
 * state's ".next", the moving average, the best model. */
typedef struct SideFiles {
    char ema[REGULARISE_PATH_MAX], best[REGULARISE_PATH_MAX], raw[REGULARISE_PATH_MAX];
    char stem[REGULARISE_PATH_MAX]; /* OUT.step (snapshots OUT.stepN.safetensors) */
    char *adam, *next;
} SideFiles;

static int side_files(SideFiles *f, const TrainOptions *o, Error *e) {
    *f = (SideFiles){0};
    if (!slm_regularise_file(o->out, "ema", f->ema) || !slm_regularise_file(o->out, "best", f->best) ||
        !slm_regularise_file(o->out, "raw", f->raw))
        return FAIL(e, "give a shorter --out", "the path '%.60s...' is too long", o->out);
    const char *checkpoint = o->ema_save ? f->raw : o->out, *dot = strstr(checkpoint, ".safetensors");
    int stem = dot && dot[12] == '\0' ? (int)(dot - checkpoint) : (int)strlen(checkpoint);
    snprintf(f->stem, sizeof f->stem, "%.*s.step", stem, checkpoint);
    f->adam = slm_checkpoint_adam_path(checkpoint, e);
    f->next = f->adam ? slm_checkpoint_adam_next_path(checkpoint, e) : NULL;
    return f->next ? 0 : -1;
}

static void side_files_free(SideFiles *f) { free(f->adam), free(f->next); }

/* The plan of every file the run writes, and of what it reads. */
static void plan_outputs(OutputPlan *p, const SideFiles *f, const char *stories, const TrainOptions *o,
                         const char *vocab_path, bool learn_vocab, bool force) {
    struct stat st;
    slm_outputs_init(p, force);
    p->keep_hint = o->resume ? NULL : KEEP_MODEL_HINT;
    slm_outputs_read(p, stories);
    slm_outputs_read(p, learn_vocab ? NULL : vocab_path);
    void (*model)(OutputPlan *, const char *, FileKind) = o->resume ? slm_outputs_write_own : slm_outputs_write;
    FileKind read_back = o->resume ? FILE_NONE : FILE_MODEL; /* a resume reads them and says what is wrong */
    model(p, o->out, read_back);
    model(p, f->adam, read_back);
    /* The state's ".next" pairs with a model only while that model's save is
     * under way: one left with no model beside it (a kill in the first save)
     * pairs with nothing, and a new run may replace it. */
    if (stat(o->out, &st) == 0)
        model(p, f->next, read_back);
    else
        slm_outputs_write_own(p, f->next, FILE_MODEL);
    model(p, o->ema > 0 && !o->ema_save ? f->ema : NULL, FILE_MODEL);
    model(p, o->keep_best ? f->best : NULL, FILE_MODEL);
    model(p, o->ema_save ? f->raw : NULL, FILE_MODEL);
    slm_outputs_write(p, learn_vocab ? vocab_path : NULL, FILE_VOCAB);
    if (o->snapshot_every > 0) slm_outputs_family(p, f->stem, ".safetensors", FILE_MODEL, o->resume);
}

int slm_train_claim_outputs(const char *stories, const TrainOptions *o, const char *vocab_path, bool force,
                            OutputClaims *c, bool *learn_vocab, Error *e) {
    *c = (OutputClaims){0};
    struct stat st;
    if (o->resume && stat(o->out, &st) != 0) /* said before a vocabulary is learnt for nothing */
        return FAIL(e, "train without --resume to start a run, or give --out the model to continue",
                    "nothing to resume: there is no model '%s' (%s)", o->out, strerror(errno));
    bool learn = vocab_path && stat(vocab_path, &st) != 0;
    if (learn_vocab) *learn_vocab = learn;
    SideFiles f;
    int rc = side_files(&f, o, e);
    OutputPlan p;
    if (!rc) plan_outputs(&p, &f, stories, o, vocab_path, learn, force);
    if (!rc && learn && slm_paths_same(o->out, vocab_path))
        rc = FAIL(e, "give --out and --vocab different names",
                  "'%s' would be written as the model and as the vocabulary", o->out);
    if (!rc) rc = slm_outputs_claim(&p, c, e);
    /* tried now, with the same temporary file a save makes, rather than after
     * minutes of training (root passes access() where a read-only file system
     * still refuses) */
    for (int i = 0; !rc && i < p.n_outputs; i++)
        if (p.outputs[i].path != f.next && try_writing(p.outputs[i].path, e)) rc = -1;
    if (rc) slm_outputs_release(c);
    side_files_free(&f);
    return rc;
}

int slm_train_check_arch(const TrainOptions *o, int layers, bool resume, Error *e) {
    const char *arch = o->arch->name;
    unsigned takes = o->arch->takes;
    if ((takes & TAKES_POSITIONS) && !(takes & TAKES_SCORES) && o->score != SCORE_SCALED_DOT)
        return FAIL(e, NULL, "--arch %s scores q.k/sqrt(d_head): --score is for the attention network", arch);
    if (!(takes & TAKES_BF16) && o->precision != PRECISION_FP32) /* its products have no BF16 path */
        return FAIL(e, NULL, "--precision %s is for the attention network and window8; --arch %s trains in fp32",
                    slm_precision_name(o->precision), arch);
    if (!(takes & TAKES_POSITIONS) && (o->pos != POS_DISTANCE || o->score != SCORE_SCALED_DOT))
        return FAIL(e, NULL, "--position-scheme and --score are for the attention network, not --arch %s", arch);
    if (!(takes & TAKES_LAYERS) && layers != 1)
        return FAIL(e, NULL, "--layers is for the attention network, not --arch %s", arch);
    if (layers > o->arch->max_layers)
        return FAIL(e, NULL, "--layers is 1 to %d for --arch %s", o->arch->max_layers, arch);
    if ((o->given & TRAIN_GIVEN_SHAPE) && !resume && !o->arch->config_shape) /* a resume finds out from the file */
        return FAIL(e, NULL,
                    "--d-model, --n-heads, --d-head, --d-mlp, --act and --tie-embeddings are not for --arch %s", arch);
    if ((o->given & TRAIN_GIVEN_MLP) && !resume && !(takes & TAKES_MLP))
        return FAIL(e, NULL, "--d-mlp and --act are for blocks with an MLP; --arch %s has none", arch);
    return 0;
}

int slm_train_learn_vocab(const char *vocab_path, const char *stories_path, int size, bool cased, bool allow_skipped,
                          char **text, int *got, bool *refused, Error *e) {
    char *data;
    size_t len;
    Vocab v = {0};
    VocabStats vs;
    if (slm_file_read_all(stories_path, 0, &data, &len, e)) return -1;
    int rc = slm_vocab_train_text_until(data, len, stories_path, size ? size : VOCAB_DEFAULT_SIZE, !size, cased, NULL,
                                        &v, &vs, e);
    free(data);
    if (rc && size && strstr(e->message, "fewer than the"))
        snprintf(e->hint, sizeof e->hint,
                 "give --vocab-size of at most the pieces above, leave it out to take as "
                 "many as the words give, or give more stories");
    if (!rc) rc = slm_train_check_story_count(vs.n_stories, &vs.skips, stories_path, e);
    if (!rc && !allow_skipped) {
        rc = slm_stories_check_skips(&vs.skips, vs.n_stories, stories_path, "--allow-skipped", e);
        *refused = rc != 0;
    }
    if (!rc) *text = slm_vocab_to_text(&v, &len, e);
    if (!rc && !*text) rc = -1;
    /* never over a file: one that appeared meanwhile is another writer's */
    if (!rc) rc = slm_file_write_new(vocab_path, *text, len, e);
    *got = v.size;
    slm_vocab_free(&v);
    return rc;
}
