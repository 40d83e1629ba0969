/* A whole training run from a stories file: see include/storylm/train_file.h. */
#include "storylm/train_file.h"

#include <limits.h>
#include <math.h>
#include <omp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "storylm/checkpoint.h"
#include "storylm/data_files.h"
#include "storylm/fileio.h"
#include "storylm/name_swap.h"
#include "storylm/stories_fit.h"
#include "storylm/train_summary.h"
#include "storylm/vocab_train.h"

/* The run's state beside p: what it has loaded, to free at the end. */
struct TrainFileRun {
    TrainParams *p;
    const TrainCallbacks *cb;
    bool root; /* rank 0 (or no mpirun): the one that says things and writes */
    char *vocab;
    Tokenizer tok;
    Stories s;
    NameSwap swap;
    Model base;
    OutputClaims claims;
    bool learnt;   /* the vocabulary is learnt by this run */
    TrainRun *run; /* once the stories are prepared */
    TrainResult r; /* the run's, as it goes */
};
typedef struct TrainFileRun FileRun;

/* Tells the user fmt's text through cb->say (the CLI's stderr line). */
__attribute__((format(printf, 2, 3))) static void say(const FileRun *f, const char *fmt, ...) {
    if (!f->cb || !f->cb->say) return;
    char small[1024], *text = small;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n >= (int)sizeof small && (text = malloc((size_t)n + 1))) {
        va_start(ap, fmt);
        vsnprintf(text, (size_t)n + 1, fmt, ap);
        va_end(ap);
    }
    f->cb->say(text ? text : small, f->cb->ctx);
    if (text != small) free(text);
}

/* On a small corpus the words give fewer than 2,000 pieces: say what the
 * model gets, and the other way, the shipped vocabulary (learnt from
 * TinyStories, so fit for English stories). */
static void say_small_vocab(const FileRun *f, int size) {
    const char *stories_path = f->p->stories, *vocab_path = f->p->vocab;
    char shipped[PATH_MAX];
    if (!slm_data_file_find(SHIPPED_VOCAB_REL, shipped, sizeof shipped))
        snprintf(shipped, sizeof shipped, SHIPPED_VOCAB_REL);
    say(f,
        "storylm: the words of %s give only %d pieces, so the model's vocabulary has %d (the chapter's has %d).\n"
        "storylm: for English stories the shipped vocabulary of %d may serve better: train with "
        "--vocab " SHIPPED_VOCAB_NAME " (%s; %s stays this corpus's own)",
        stories_path, size, size, VOCAB_DEFAULT_SIZE, VOCAB_DEFAULT_SIZE, shipped, vocab_path);
}

/* Learns a vocabulary of `size` pieces (0: as many as the words give, up to
 * 2,000) from the stories and saves it, saying so. */
static int learn_vocab(FileRun *f, int size, bool *refused, Error *e) {
    const TrainParams *p = f->p;
    say(f, "storylm: learning a %d-piece %svocabulary from %s", size ? size : VOCAB_DEFAULT_SIZE,
        p->cased ? "cased " : "", p->stories);
    int got;
    if (slm_train_learn_vocab(p->vocab, p->stories, size, p->cased, p->allow_skipped, &f->vocab, &got, refused, e))
        return -1;
    say(f, "storylm: wrote %s", p->vocab);
    if (got < VOCAB_DEFAULT_SIZE) say_small_vocab(f, got);
    return 0;
}

/* The vocabulary a model file holds (a fine-tuned run's --vocab: its base's), read from its header. */
static int model_vocab(const char *path, char **text, Error *e) {
    SafeTensorsFile sf;
    if (slm_safetensors_open(&sf, path, e)) return -1;
    const char *v = slm_metadata_get(&sf.metadata, "vocab");
    size_t n = v ? strlen(v) + 1 : 0;
    *text = v ? xmalloc(n, e) : NULL;
    if (*text) memcpy(*text, v, n);
    slm_safetensors_close(&sf);
    if (!v) return FAIL(e, "give a model storylm train saved, or a vocab.txt", "'%s' holds no vocabulary", path);
    return *text ? 0 : -1;
}

/* Reuses an existing vocabulary, or learns one from the stories and saves it
 * (f->learnt: the claims say it is to be learnt, and hold it). */
static int get_vocab(FileRun *f, bool *refused, Error *e) {
    size_t len;
    const char *vocab_path = f->p->vocab;
    if (f->learnt) return learn_vocab(f, f->p->vocab_size, refused, e);
    if (slm_file_kind(vocab_path) == FILE_MODEL) return model_vocab(vocab_path, &f->vocab, e);
    char shipped[PATH_MAX]; /* never to be deleted: the shipped model's */
    bool is_shipped = slm_data_file_find(SHIPPED_VOCAB_REL, shipped, sizeof shipped) && !strcmp(shipped, vocab_path);
    if (f->root && !is_shipped)
        say(f, "storylm: using the vocabulary in %s (delete it to learn a new one)", vocab_path);
    return slm_file_read_all(vocab_path, 64u << 20, &f->vocab, &len, e);
}

/* The tokenizer of the vocabulary file at path, or of a model file's vocabulary (text). */
static int load_tokenizer(Tokenizer *tok, const char *path, const char *text, int size, Error *e) {
    if (slm_file_kind(path) != FILE_MODEL) return slm_tokenizer_load(tok, path, size, e);
    if (!slm_tokenizer_from_text(tok, text, strlen(text), size, e)) return 0;
    slm_error_prefix(e, "the vocabulary of '%s': ", path);
    return -1;
}

/* The run's vocabulary: read or learnt, its tokenizer, and checked against --cased. */
static int settle_vocab(FileRun *f, bool *refused, Error *e) {
    const TrainParams *p = f->p;
    const char *vocab_path = p->vocab;
    int rc = get_vocab(f, refused, e);
    /* From the file, so that messages name it; the model gets the vocabulary's size
     * (exactly --vocab-size when given) */
    if (!rc && (rc = load_tokenizer(&f->tok, vocab_path, f->vocab, p->vocab_size, e)) &&
        strstr(e->message, "pieces, expected"))
        snprintf(e->hint, sizeof e->hint,
                 "leave out --vocab-size to use '%s' as it is, or delete it (or give --vocab "
                 "NEW) to learn one of %d pieces",
                 vocab_path, p->vocab_size);
    if (!rc && p->cased && !f->tok.cased)
        rc = FAIL(e,
                  p->from ? "fine-tune without --cased (the base keeps its vocabulary), or train from scratch with "
                            "--cased"
                          : "delete it or give --vocab NEW.txt, and --cased learns a cased one there",
                  "--cased: the vocabulary of '%s' is not cased (it lower-cases and strips accents)", vocab_path);
    if (!rc && !f->learnt && f->tok.size != VOCAB_DEFAULT_SIZE && f->root)
        say(f, "storylm: the model's vocabulary has %d pieces, as %s", f->tok.size, vocab_path);
    return rc;
}

/* Under mpirun: every rank reads the stories itself (no gigabytes to send;
 * on one machine they share the page cache and the cache file), rank 0 first
 * so that the others find its cache instead of encoding the file again. */
static int load_stories(Stories *s, const char *path, const Tokenizer *tok, const StoriesOptions *so, Dist *d,
                        Error *e) {
    int rc = 0;
    if (dist_rank(d) != 0) rc = slm_dist_barrier(d, e);
    if (!rc) rc = slm_stories_load(s, path, tok, so, e);
    if (dist_rank(d) == 0 && !rc) rc = slm_dist_barrier(d, e);
    return rc;
}

static void say_stories(const FileRun *f) {
    const Stories *s = &f->s;
    const char *path = f->p->stories;
    say(f, "storylm: %s: %d stories, %zu tokens; %d held out for testing%s", path, s->n_stories, s->n_tokens, s->n_test,
        s->from_cache ? " (token ids from cache)" : "");
    if (s->skips.empty + s->skips.invalid_utf8 + s->skips.too_long)
        say(f, "storylm: skipped %d empty, %d invalid UTF-8, %d too long stories", s->skips.empty,
            s->skips.invalid_utf8, s->skips.too_long);
    char hint[600];
    if (slm_stories_encoding_hint(&s->skips, s->n_stories, path, hint, sizeof hint))
        say(f, "storylm: warning: %s", hint);
}

/* The checks of the stories against the run, before its first step; *refused
 * when one fails (unless its flag accepts it on purpose). A resumed run's
 * vocabulary was accepted when the run began. */
static int check_fit(const FileRun *f, bool *refused, Error *e) {
    const TrainParams *p = f->p;
    int rc = 0;
    if (!p->allow_skipped) rc = slm_stories_check_skips(&f->s.skips, f->s.n_stories, p->stories, "--allow-skipped", e);
    if (!rc && !f->learnt && !p->resume && !p->allow_unknown)
        rc = slm_stories_check_unknown(&f->s, &f->tok, p->stories, p->vocab, "--allow-unknown", e);
    *refused = rc != 0;
    return rc;
}

/* --steps and --eval-every left out: fitted to the corpus (a small one is
 * learnt by heart long before 3,000 steps), and said when below the most. */
static void fit_schedule(const FileRun *f) {
    TrainParams *p = f->p;
    TrainOptions *o = &p->o;
    if (!p->steps_given) o->steps = slm_train_default_steps(f->s.n_train, o->batch);
    if (!p->eval_every_given) o->eval_every = slm_train_default_eval_every(o->steps);
    if (f->root && !p->steps_given && o->steps < TRAIN_MAX_DEFAULT_STEPS)
        say(f,
            "storylm: %d training stories: %d steps (%d passes over them), evaluated every %d; --steps N sets "
            "it",
            f->s.n_train, o->steps, TRAIN_DEFAULT_PASSES, o->eval_every);
}

/* --from: the trained model the run starts from (p->vocab names it too, so
 * its vocabulary is the run's), and the share of the stories' tokens its
 * vocabulary cannot spell, said (more than 1% was refused by check_fit). */
static int load_base(FileRun *f, Error *e) {
    TrainParams *p = f->p;
    TrainOptions *o = &p->o;
    char *vocab = NULL;
    Metadata md = {0};
    int rc = slm_checkpoint_load_model(p->from, &f->base, &vocab, &md, e);
    free(vocab);
    slm_metadata_free(&md);
    if (rc) return -1;
    const char *slash = strrchr(p->from, '/');
    o->from = &f->base, o->from_name = slash ? slash + 1 : p->from;
    o->arch = f->base.cfg.arch, o->layers = slm_model_layers(&f->base.cfg);
    size_t unk = slm_stories_count_unknown(&f->s, f->tok.unk_id), n = f->s.n_tokens;
    if (f->root)
        say(f,
            "storylm: fine-tuning %s (%s, %zu parameters) at --lr %g: its vocabulary of %d pieces spells %zu of "
            "the stories' %zu tokens as [UNK] (%.2f%%)",
            p->from, f->base.cfg.arch->name, f->base.n_params, o->lr, f->tok.size, unk, n,
            n ? 100.0 * (double)unk / (double)n : 0.0);
    return 0;
}

/* --swap-names, --invent-names: the rewriter of each training story's hero. */
static int set_augment(FileRun *f, Error *e) {
    TrainOptions *o = &f->p->o;
    if (!(o->swap_names > 0 || o->invent_names > 0)) return 0;
    if (slm_name_swap_init(&f->swap, &f->tok, f->p->stories, &f->s, o->swap_names, e)) return -1;
    f->swap.invent = o->invent_names;
    o->augment = slm_name_swap_story;
    o->augment_ctx = &f->swap;
    if (f->root && o->swap_names > 0)
        say(f, "storylm: --swap-names %g: %d names of the training stories, %d of them to cut up", o->swap_names,
            f->swap.n_known, f->swap.n_made);
    if (f->root && o->invent_names > 0)
        say(f,
            "storylm: --invent-names %g: heroes found by %d names of the training stories; names made of %d "
            "first pieces and %d \"##\" pieces",
            o->invent_names, f->swap.n_known, f->swap.inventor.n_heads, f->swap.inventor.n_tails);
    return 0;
}

/* Everything before the first step: the files claimed, the vocabulary, the
 * stories and their checks, --from's model, the renaming of heroes. */
static int prepare(FileRun *f, bool *refused, Error *e) {
    TrainParams *p = f->p;
    TrainOptions *o = &p->o;
    StoriesOptions so = slm_stories_default_options();
    so.n_test = p->test_stories;
    struct stat st;
    if (stat(p->vocab, &st) != 0 && dist_size(o->dist) > 1) /* every rank would learn and write it */
        return FAIL(e, "learn it first: storylm vocab STORIES -o vocab.txt",
                    "under mpirun the vocabulary '%s' must exist", p->vocab);
    /* rank 0 alone writes, so it alone checks and claims every file the run writes */
    if (f->root && slm_train_claim_outputs(p->stories, o, p->vocab, o->force, &f->claims, &f->learnt, e)) return -1;
    if (settle_vocab(f, refused, e) || load_stories(&f->s, p->stories, &f->tok, &so, o->dist, e) ||
        slm_train_check_story_count(f->s.n_stories, &f->s.skips, p->stories, e))
        return -1;
    if (f->s.n_test > 0 &&
        slm_stories_text_bytes(&f->s, p->stories, &f->tok, f->s.test, f->s.n_test, &o->test_bytes, e))
        return -1;
    if (check_fit(f, refused, e)) return -1;
    if (p->from && !p->resume && load_base(f, e)) return -1;
    return set_augment(f, e);
}

/* The summary's account of the model kept and of the early stop (docs/json.md). */
static cJSON *kept_json(cJSON *j, const TrainOptions *o, const TrainResult *r) {
    if (!j) return NULL;
    cJSON *kept = r->kept_step >= 0 ? cJSON_AddObjectToObject(j, "kept") : NULL;
    if (!kept) cJSON_AddNullToObject(j, "kept");
    if (kept) {
        cJSON_AddStringToObject(kept, "file", o->out);
        cJSON_AddNumberToObject(kept, "step", r->kept_step);
        cJSON_AddItemToObject(kept, "test_loss", slm_json_number_or_null(r->kept_test_loss));
        cJSON_AddStringToObject(kept, "why", o->keep_last ? "last" : "lowest test loss");
    }
    if (r->from[0]) { /* a resumed fine-tuning's too: its test loss before the first step was the first run's */
        cJSON *from = cJSON_AddObjectToObject(j, "from");
        cJSON_AddStringToObject(from, "file", r->from);
        cJSON_AddItemToObject(from, "test_loss", slm_json_number_or_null(r->from_test_loss));
    } else {
        cJSON_AddNullToObject(j, "from");
    }
    cJSON *stop = cJSON_AddObjectToObject(j, "early_stop");
    cJSON_AddBoolToObject(stop, "stopped", r->early_stopped);
    cJSON_AddNumberToObject(stop, "patience", o->patience);
    cJSON_AddStringToObject(stop, "off", "--patience 0");
    return j;
}

/* The summary of a finished run on rank 0: its JSON and commands, while the stories are loaded. */
static int summarise(const FileRun *f, const char *program, TrainSummary *out, Error *e) {
    const TrainParams *p = f->p;
    const TrainResult *r = &out->r;
    TrainPlace pl = {.program = program,
                     .stories = p->stories,
                     .vocab_path = p->vocab,
                     .fine_tuned = r->from[0] != '\0',
                     .s = &f->s,
                     .vocab_size = f->tok.size,
                     .n_test = p->test_stories};
    out->json = kept_json(slm_train_summary_json(&pl, &p->o, r), &p->o, r);
    out->sample_command = slm_train_command(&pl, &p->o, false);
    out->resume_command = r->interrupted ? slm_train_command(&pl, &p->o, true) : NULL;
    if (!out->json || !out->sample_command || (r->interrupted && !out->resume_command))
        return FAIL(e, NULL, "out of memory");
    return 0;
}

/* The run on prepared stories, opened (slm_train_open) with what it saves
 * beside the model: the vocabulary and the stories' path; on o->threads
 * threads, as its steps run (the passes' shards are made for OpenMP's count). */
static int open_run(FileRun *f, Error *e) {
    TrainOptions *o = &f->p->o;
    const TrainCallbacks *cb = f->cb;
    o->vocab_text = f->vocab;
    o->vocab_size = f->tok.size;
    o->data_path = f->p->stories;
    o->stop_fn = cb ? cb->stop : NULL;
    o->stop_ctx = cb ? cb->ctx : NULL;
    if (cb && cb->begin) cb->begin(o, cb->ctx);
    int threads = omp_get_max_threads();
    if (o->threads > 0) omp_set_num_threads(o->threads);
    int rc = slm_train_open(&f->run, &f->s, o, &f->r, e);
    omp_set_num_threads(threads);
    return rc;
}

int slm_train_file_open(FileRun **out, TrainParams *p, const TrainCallbacks *cb, bool *refused, Error *e) {
    *refused = false;
    FileRun *f = *out = xmalloc(sizeof *f, e);
    if (!f) return -1;
    *f = (FileRun){.p = p, .cb = cb, .root = dist_rank(p->o.dist) == 0};
    int rc = prepare(f, refused, e);
    if (!rc && f->root) say_stories(f);
    if (!rc) fit_schedule(f);
    if (!rc) rc = open_run(f, e);
    return rc;
}

/* The steps on o->threads threads (the passes' shards: pass.c reads
 * OpenMP's count), the caller's count given back after. */
int slm_train_file_steps(FileRun *f, int n, bool *done, Error *e) {
    const TrainOptions *o = &f->p->o;
    const TrainCallbacks *cb = f->cb;
    int threads = omp_get_max_threads();
    if (o->threads > 0) omp_set_num_threads(o->threads);
    int rc = slm_train_steps(f->run, n, f->root && cb ? cb->progress : NULL, cb ? cb->ctx : NULL, done, e);
    omp_set_num_threads(threads);
    return rc;
}

int slm_train_file_end(FileRun *f, const char *program, TrainSummary *out, Error *e) {
    slm_train_close(f->run); /* sets f->r.from */
    f->run = NULL;
    out->r = f->r;
    out->fine_tuned_now = f->p->o.from != NULL;
    return f->root ? summarise(f, program, out, e) : 0;
}

const Stories *slm_train_file_stories(const FileRun *f) { return &f->s; }

void slm_train_file_free(FileRun *f) {
    if (!f) return;
    TrainParams *p = f->p;
    slm_train_close(f->run);
    p->o.from = NULL; /* f->base's, freed here */
    p->o.augment = NULL, p->o.augment_ctx = NULL, p->o.vocab_text = NULL;
    slm_model_free(&f->base); /* --from's, or none */
    slm_outputs_release(&f->claims);
    slm_name_swap_free(&f->swap);
    slm_stories_free(&f->s);
    slm_tokenizer_free(&f->tok);
    free(f->vocab);
    free(f);
}

int slm_train_file(TrainParams *p, const char *program, const TrainCallbacks *cb, TrainSummary *out, Error *e) {
    *out = (TrainSummary){0};
    FileRun *f;
    bool done = false;
    int rc = slm_train_file_open(&f, p, cb, &out->refused, e);
    while (!rc && !done) rc = slm_train_file_steps(f, INT_MAX, &done, e);
    if (!rc) rc = slm_train_file_end(f, program, out, e);
    slm_train_file_free(f);
    return rc;
}

void slm_train_summary_free(TrainSummary *s) {
    cJSON_Delete(s->json);
    free(s->sample_command);
    free(s->resume_command);
    *s = (TrainSummary){0};
}
