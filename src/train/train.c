/* Training: see include/storylm/train.h. */
#include "storylm/train.h"

#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <omp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "storylm/adam.h"
#include "storylm/checkpoint.h"
#include "storylm/clock.h"
#include "storylm/fileio.h"
#include "storylm/record.h"
#include "storylm/regularise.h"
#include "storylm/rng.h"
#include "storylm/shards.h"
#include "pass.h"
#include "train_dist.h"
#include "train_testing.h"

static int warmup_steps(const TrainOptions *o) {
    if (o->warmup >= 0) return o->warmup;
    int w = o->steps / 10;
    return w < 100 ? w : 100;
}

double slm_train_lr_at(const TrainOptions *o, int step) {
    int warm = warmup_steps(o);
    if (step < warm) return o->lr * (step + 1) / warm;
    double span = o->steps - warm, t = span > 0 ? (step - warm) / span : 1.0;
    if (t > 1) t = 1;
    double floor = o->lr * o->min_lr_ratio;
    return floor + (o->lr - floor) * 0.5 * (1 + cos(3.14159265358979323846 * t));
}

/* ---------------------------------------------------------------------------
 * The order stories are read in: pass p over the training stories is a
 * shuffle seeded by (seed, p), so story k of the stream depends only on k and
 * a resumed run reads exactly what an uninterrupted one would. */
typedef struct StoryStream {
    const Stories *s;
    uint64_t seed;
    long pass;  /* pass whose order is in `order` (-1: none yet) */
    int *order; /* (n_train) */
} StoryStream;

static void stream_shuffle(StoryStream *st, long pass) {
    int n = st->s->n_train;
    Rng r;
    slm_rng_seed(&r, st->seed * 0x9E3779B97F4A7C15ULL + (uint64_t)pass + 1);
    memcpy(st->order, st->s->train, (size_t)n * sizeof(int));
    for (int i = n - 1; i > 0; i--) {
        int j = (int)slm_rng_below(&r, (uint64_t)i + 1), t = st->order[i];
        st->order[i] = st->order[j];
        st->order[j] = t;
    }
    st->pass = pass;
}

static int stream_story(StoryStream *st, long long k) {
    long pass = (long)(k / st->s->n_train);
    if (pass != st->pass) stream_shuffle(st, pass);
    return st->order[k % st->s->n_train];
}

/* ---------------------------------------------------------------------------
 * The training run. */
struct TrainRun {
    const Stories *s;
    TrainOptions o;
    Model model;
    Adam adam;
    float *grads;
    Pass pass;
    StoryStream stream;
    int *step_stories;    /* (batch) */
    int step;             /* steps done */
    int saved_step;       /* step of the model in o.out from this run or the one resumed; -1: none */
    double best_loss;     /* the lowest test loss evaluated (the average's with ema_save); INFINITY: none yet */
    int best_step;        /* its step; -1: none */
    int evals_since_best; /* evaluations since best_step: the patience counter */
    uint64_t run_id, data_hash;
    char *from_name;    /* the fine-tuned model's name ("from"), this run's or the resumed file's; NULL: none */
    StoriesRecord data; /* of o.data_path: its name, size and hash, never its path */
    TrainResult *r;
    Regularise reg;
    int overflow_at_step; /* tests only (train_testing.h): this step's gradient overflows; 0 = never */
    /* the loop's own clock and counts, kept between slices (slm_train_steps) */
    bool begun, done;    /* the first slice ran; the run ended (its last step, a stop or an error) */
    double start;        /* when this run began, for the rate, the ETA and --minutes */
    double window_start; /* the tokens per second: of the last half second's window */
    long long window_tokens;
    double rate;
    int start_step;         /* a resume begins part way: the rate and ETA count only this run's steps */
    long long start_tokens; /* a resume carries the earlier runs' count */
    Error snapshot_error;   /* a snapshot refused: said after the model is saved all the same */
};
typedef struct TrainRun Trainer;

/* A copy of s (caller frees), or NULL with e set. */
static char *copy_text(const char *s, Error *e) {
    size_t n = strlen(s) + 1;
    char *c = xmalloc(n, e);
    return c ? memcpy(c, s, n) : NULL;
}

/* Identifies the training data: the token ids and the held-out split. */
static uint64_t data_hash(const Stories *s) {
    uint64_t h = slm_stories_hash_ids(s, 0);
    return slm_hash64(s->test, (size_t)s->n_test * sizeof(int), h);
}

static int set_meta(Metadata *md, const char *key, const char *fmt, double x, Error *e) {
    char buf[64];
    snprintf(buf, sizeof buf, fmt, x);
    return slm_metadata_set(md, key, buf, e);
}

/* The shortest decimal that reads back as exactly x, so a resume gets the same bits. */
static int set_meta_exact(Metadata *md, const char *key, double x, Error *e) {
    char buf[64];
    for (int digits = 1; digits <= 17; digits++) {
        snprintf(buf, sizeof buf, "%.*g", digits, x);
        if (strtod(buf, NULL) == x) break;
    }
    return slm_metadata_set(md, key, buf, e);
}

/* The keys a model file carries about its training (read by info and resume). */
static int fill_metadata(const Trainer *t, Metadata *md, Error *e) {
    const TrainOptions *o = &t->o;
    const TrainResult *r = t->r;
    int rc = slm_record_to_metadata(&t->data, md, e);
    rc = rc ? rc : set_meta(md, "steps", "%.0f", o->steps, e);
    rc = rc ? rc : set_meta(md, "seed", "%.0f", (double)o->seed, e);
    rc = rc ? rc : set_meta_exact(md, "lr", o->lr, e);
    rc = rc ? rc : set_meta(md, "warmup", "%.0f", warmup_steps(o), e);
    rc = rc ? rc : set_meta_exact(md, "min_lr_ratio", o->min_lr_ratio, e);
    rc = rc ? rc : set_meta(md, "batch", "%.0f", o->batch, e);
    rc = rc ? rc : set_meta(md, "threads", "%.0f", o->threads, e);
    rc = rc ? rc : slm_metadata_set(md, "precision", slm_precision_name(o->precision), e);
    rc = rc ? rc : set_meta(md, "train_stories", "%.0f", t->s->n_train, e);
    rc = rc ? rc : set_meta(md, "test_stories", "%.0f", t->s->n_test, e);
    rc = rc ? rc : set_meta(md, "tokens_seen", "%.0f", (double)r->tokens_seen, e);
    rc = rc ? rc : set_meta(md, "train_loss", "%.6f", r->train_loss, e);
    if (!rc && isfinite(r->test_loss)) rc = set_meta(md, "test_loss", "%.6f", r->test_loss, e);
    if (!rc && isfinite(r->test_accuracy)) rc = set_meta(md, "test_accuracy", "%.6f", r->test_accuracy, e);
    rc = rc ? rc : set_meta(md, "seconds", "%.1f", r->seconds, e);
    if (!rc && t->best_step >= 0) { /* what keeps the best model and the patience across a resume */
        rc = set_meta(md, "best_step", "%.0f", t->best_step, e);
        rc = rc ? rc : set_meta_exact(md, "best_test_loss", t->best_loss, e);
        rc = rc ? rc : set_meta(md, "evals_since_best", "%.0f", t->evals_since_best, e);
    }
    if (!rc && t->from_name) rc = slm_metadata_set(md, "from", t->from_name, e);
    rc = rc ? rc : slm_train_dist_set_meta(o->dist, md, e);
    rc = rc ? rc : slm_regularise_metadata(o, md, e);
    return rc;
}

static int save(Trainer *t, const char *path, Error *e) {
    if (dist_rank(t->o.dist) != 0) return (void)(t->saved_step = t->step), 0; /* rank 0 alone writes */
    Metadata md = {0};
    TrainingState st = {.adam_m = t->adam.m,
                        .adam_v = t->adam.v,
                        .n_params = t->model.n_params,
                        .step = (uint64_t)t->step,
                        .data_hash = t->data_hash,
                        .run_id = t->run_id};
    int rc = fill_metadata(t, &md, e);
    if (!rc) rc = slm_checkpoint_save_all(path, &t->model, t->o.vocab_text, &md, &st, e);
    if (!rc) rc = slm_regularise_saved(&t->reg, &t->model, t->o.vocab_text, &md, t->step, t->run_id, t->r, e);
    if (!rc) t->saved_step = t->step;
    slm_metadata_free(&md);
    return rc;
}

/* The model's test loss that picks the model kept: the average's when the average is what OUT holds. */
static double kept_loss(const Trainer *t) { return t->o.ema_save ? t->r->ema_test_loss : t->r->test_loss; }

/* After an evaluation: is the model the best yet? Counts the evaluations since the best otherwise. */
static bool judge(Trainer *t) {
    double loss = kept_loss(t);
    if (loss < t->best_loss) {
        t->best_loss = loss, t->best_step = t->step, t->evals_since_best = 0;
        return true;
    }
    t->evals_since_best++;
    return false;
}

/* A number the resumed file holds for key, from min to max (the flags' ranges:
 * a damaged or foreign file must not set a schedule the run cannot follow);
 * *x stays when the key is absent. */
static int resume_number(const Metadata *md, const char *path, const char *key, double min, double max, double *x,
                         Error *e) {
    const char *v = slm_metadata_get(md, key);
    if (!v) return 0;
    char *end;
    double d = strtod(v, &end);
    if (end == v || *end || !(d >= min && d <= max))
        return FAIL(e, "resume only what storylm train saved, or train anew without --resume",
                    "cannot resume '%s': its %s '%.40s' is not a number from %.10g to %.10g", path, key, v, min, max);
    *x = d;
    return 0;
}

/* A flag the user gave (bit of o.given) with another value than the resumed
 * run's: refused, since the run goes on with its own and would ignore it. */
static int contradicts(const Trainer *t, unsigned bit, const char *flag, double given, double run, Error *e) {
    if (!(t->o.given & bit) || given == run) return 0;
    return FAIL(e, "leave the flag out (a resumed run keeps its settings; only --steps may change), or train afresh",
                "cannot resume '%s' with --%s %.10g: the run was trained with %s %.10g", t->o.out, flag, given, flag,
                run);
}

/* The precision of the run the file comes from (fp32 when it names none:
 * files from before --precision); a --precision given against it is refused. */
static int resume_precision(Trainer *t, const Metadata *md, Error *e) {
    const char *v = slm_metadata_get(md, "precision");
    Precision run = PRECISION_FP32;
    if (v && slm_precision_parse(v, &run, e)) {
        slm_error_prefix(e, "cannot resume: ");
        return -1;
    }
    if ((t->o.given & TRAIN_GIVEN_PRECISION) && t->o.precision != run)
        return FAIL(e, "leave --precision out when resuming (the run keeps its own), or train afresh",
                    "cannot resume '%s' with --precision %s: the run was trained with --precision %s", t->o.out,
                    slm_precision_name(t->o.precision), slm_precision_name(run));
    t->o.precision = run;
    return 0;
}

/* The lowest test loss the run saw, its step and the patience counter (a
 * file without them, from before they were kept: none seen yet). */
static int resume_best(Trainer *t, const Metadata *md, Error *e) {
    const char *path = t->o.out;
    double step = -1, loss = INFINITY, since = 0;
    if (resume_number(md, path, "best_step", 0, t->step, &step, e) ||
        resume_number(md, path, "evals_since_best", 0, 1e9, &since, e) ||
        (step >= 0 && resume_number(md, path, "best_test_loss", 0, 1e9, &loss, e)))
        return -1;
    t->best_step = (int)step, t->best_loss = loss, t->evals_since_best = (int)since;
    return 0;
}

/* The seed, schedule and position of the run the file comes from. */
static int resume_schedule(Trainer *t, const Metadata *md, const TrainingState *st, Error *e) {
    const char *path = t->o.out;
    double seed = (double)t->o.seed, lr = t->o.lr, warmup = t->o.warmup, ratio = t->o.min_lr_ratio;
    double batch = t->o.batch, tokens = 0;
    if (resume_number(md, path, "seed", 0, 2147483647, &seed, e) || resume_number(md, path, "lr", 1e-7, 1, &lr, e) ||
        resume_number(md, path, "warmup", -1, 1e9, &warmup, e) ||
        resume_number(md, path, "min_lr_ratio", 0, 1, &ratio, e) ||
        resume_number(md, path, "batch", 1, 4096, &batch, e) ||
        resume_number(md, path, "tokens_seen", 0, 1e18, &tokens, e))
        return -1;
    if (st->step > 1000000000)
        return FAIL(e, "resume only what storylm train saved, or train anew without --resume",
                    "cannot resume '%s': its step %" PRIu64 " is more than --steps allows", path, st->step);
    if (contradicts(t, TRAIN_GIVEN_SEED, "seed", (double)t->o.seed, seed, e) ||
        contradicts(t, TRAIN_GIVEN_LR, "lr", t->o.lr, lr, e) ||
        contradicts(t, TRAIN_GIVEN_WARMUP, "warmup", t->o.warmup, warmup, e) ||
        contradicts(t, TRAIN_GIVEN_BATCH, "batch", t->o.batch, batch, e))
        return -1;
    t->o.seed = (uint64_t)seed;
    t->o.lr = lr;
    t->o.warmup = (int)warmup;
    t->o.min_lr_ratio = ratio;
    t->o.batch = (int)batch;
    t->r->tokens_seen = (long long)tokens;
    t->step = (int)st->step;
    return resume_best(t, md, e);
}

/* The shape flags (--d-model, ...) into c, for an architecture that takes them. */
static void apply_shape(const TrainOptions *o, ModelConfig *c) {
    ConfigShape s = {.d_model = o->d_model,
                     .heads = o->heads,
                     .d_head = o->d_head,
                     .d_mlp = o->d_mlp,
                     .act = (int)o->act,
                     .tie = o->tie_embeddings};
    if (c->arch->config_shape) c->arch->config_shape(c, &s);
}

/* A resume given transformer sizes must be given the file's. */
static int check_resume_shape(const TrainOptions *o, const ModelConfig *have, Error *e) {
    if (!(o->given & TRAIN_GIVEN_SHAPE)) return 0;
    ModelConfig want = *have;
    apply_shape(o, &want);
    if (have->arch->config_shape && want.row_dim == have->row_dim && want.n_heads == have->n_heads &&
        want.key_dim == have->key_dim && want.hidden_dim == have->hidden_dim && want.act == have->act &&
        want.tie_embeddings == have->tie_embeddings)
        return 0;
    return FAIL(e,
                "leave --d-model, --n-heads, --d-head, --d-mlp, --act and --tie-embeddings out when resuming, or "
                "train afresh",
                "cannot resume '%s' with those sizes: it is a %s model of d_model %d, %d heads of %d, d_mlp %d%s",
                o->out, have->arch->name, have->row_dim, have->n_heads, have->key_dim, have->hidden_dim,
                have->tie_embeddings ? ", tied embeddings" : "");
}

/* Loads o.out and its optimizer state; the schedule and seed come from the
 * file so the run goes on as it began (only --steps may extend it). */
static int resume(Trainer *t, Error *e) {
    Metadata md = {0};
    TrainingState st = {0};
    char *vocab = NULL;
    if (slm_checkpoint_load_all(t->o.out, &t->model, &vocab, &md, &st, e)) {
        slm_error_prefix(e, "cannot resume: ");
        return -1;
    }
    int rc = 0;
    if (strcmp(vocab, t->o.vocab_text) != 0 || st.data_hash != t->data_hash)
        rc = FAIL(e, "resume with the same stories file and vocabulary, or train anew without --resume",
                  "cannot resume '%s': it was trained on other data or another vocabulary", t->o.out);
    if (!rc) rc = slm_train_dist_check_resume(t->o.dist, &md, t->o.out, e);
    if (!rc) {
        if ((t->o.given & TRAIN_GIVEN_ARCH) && t->o.arch != t->model.cfg.arch)
            rc = FAIL(e, "leave --arch out when resuming, or train afresh",
                      "cannot resume '%s' with --arch %s: it is a model of architecture %s", t->o.out, t->o.arch->name,
                      t->model.cfg.arch->name);
        t->o.arch = t->model.cfg.arch;
        if (!rc && (t->o.given & TRAIN_GIVEN_VARIANT) &&
            (t->o.pos != t->model.cfg.pos || t->o.score != t->model.cfg.score))
            rc = FAIL(e, "leave --position-scheme and --score out when resuming, or train afresh",
                      "cannot resume '%s' with --position-scheme %s --score %s: it is a model with --position-scheme "
                      "%s --score %s",
                      t->o.out, slm_pos_name(t->o.pos), slm_score_name(t->o.score), slm_pos_name(t->model.cfg.pos),
                      slm_score_name(t->model.cfg.score));
        if (!rc && (t->o.given & TRAIN_GIVEN_LAYERS) &&
            (t->o.layers > 1 ? t->o.layers : 1) != slm_model_layers(&t->model.cfg))
            rc = FAIL(e, "leave --layers out when resuming, or train afresh",
                      "cannot resume '%s' with --layers %d: it is a model of %d layers", t->o.out, t->o.layers,
                      slm_model_layers(&t->model.cfg));
        t->o.layers = slm_model_layers(&t->model.cfg);
        if (!rc) rc = check_resume_shape(&t->o, &t->model.cfg, e);
        if (!rc) rc = resume_schedule(t, &md, &st, e);
        if (!rc) rc = resume_precision(t, &md, e);
    }
    if (!rc) rc = slm_regularise_check_resume(&t->o, &md, t->o.out, e);
    const char *from = slm_metadata_get(&md, "from");
    if (!rc && from && !(t->from_name = copy_text(from, e))) rc = -1;
    if (!rc) {
        t->run_id = st.run_id;
        rc = slm_adam_init(&t->adam, t->model.n_params, e);
    }
    if (!rc) {
        memcpy(t->adam.m, st.adam_m, t->model.n_params * sizeof(float));
        memcpy(t->adam.v, st.adam_v, t->model.n_params * sizeof(float));
        t->adam.step = (int64_t)st.step;
    }
    slm_training_state_free(&st);
    slm_metadata_free(&md);
    free(vocab);
    return rc;
}

static int trainer_init(Trainer *t, const Stories *s, const TrainOptions *o, TrainResult *r, Error *e) {
    *t = (Trainer){.s = s, .o = *o, .r = r, .saved_step = -1, .best_loss = INFINITY, .best_step = -1};
    t->data_hash = data_hash(s);
    if (slm_train_dist_same_data(o->dist, t->data_hash, o->data_path, e)) return -1;
    if (o->data_record)
        t->data = *o->data_record; /* the file is not read again: a server's run stops at once */
    else if (o->data_path && slm_record_of_file(&t->data, o->data_path, e))
        return -1;
    if (s->n_train < 1) return FAIL(e, "give a file with more stories", "no training stories");
    if (slm_regularise_check_options(o, e) || slm_regularise_paths(&t->reg, &t->o, e)) return -1;
    t->o.out = t->reg.checkpoint_path; /* OUT itself, or OUT.raw with --ema-save */
    int ntok = 0;
    for (int i = 0; i < s->n_stories; i++) ntok = (int)story_len(s, i) > ntok ? (int)story_len(s, i) : ntok;
    if (o->resume) {
        if (resume(t, e)) return -1;
        t->saved_step = t->step;
        r->kept_step = t->step; /* until a better model replaces it */
        r->kept_test_loss = t->best_step == t->step ? t->best_loss : NAN;
    } else if (o->from) { /* fine-tuning: the trained model's architecture, sizes and weights */
        if (slm_model_init(&t->model, &o->from->cfg, e) || slm_adam_init(&t->adam, t->model.n_params, e)) return -1;
        memcpy(t->model.params, o->from->params, t->model.n_params * sizeof(float));
        t->o.arch = t->model.cfg.arch;
        t->o.layers = slm_model_layers(&t->model.cfg);
        if (o->from_name && !(t->from_name = copy_text(o->from_name, e))) return -1;
        t->run_id = slm_checkpoint_new_run_id();
    } else {
        ModelConfig cfg = slm_model_config_default(o->arch, 0);
        cfg.vocab_size = o->vocab_size;
        cfg.pos = o->pos;
        cfg.score = o->score;
        if (o->layers > 0) cfg.n_layers = o->layers; /* else the architecture's default */
        apply_shape(o, &cfg);
        if (slm_model_init(&t->model, &cfg, e) || slm_adam_init(&t->adam, t->model.n_params, e)) return -1;
        slm_model_randomize(&t->model, o->seed);
        t->run_id = slm_checkpoint_new_run_id();
    }
    r->parameters = (long long)t->model.n_params;
    if (slm_train_dist_same_start(o->dist, &t->model, t->step, t->o.out, e)) return -1;
    if (slm_regularise_init(&t->reg, &t->model, &t->adam, t->step, t->run_id, e)) return -1;
    t->grads = xmalloc(t->model.n_params * sizeof(float), e);
    t->step_stories = t->grads ? xmalloc((size_t)t->o.batch * sizeof(int), e) : NULL;
    t->stream = (StoryStream){.s = s, .seed = t->o.seed, .pass = -1};
    t->stream.order = t->step_stories ? xmalloc((size_t)s->n_train * sizeof(int), e) : NULL;
    if (!t->stream.order) return -1;
    int stories = t->o.batch > s->n_test ? t->o.batch : s->n_test; /* a step's, or the test stories */
    if (o->augment) ntok = TRAIN_AUGMENT_MAX_LEN(ntok);            /* a rewritten story may be longer */
    if (slm_precision_check(t->o.precision, e) || slm_kernels_check(t->o.kernels, t->o.precision, e) ||
        slm_pass_init(&t->pass, &t->model, o->dist, t->o.kernels, o->max_positions, ntok, stories > 1 ? stories : 1, e))
        return -1;
    t->pass.shards.precision = t->o.precision;
    return 0;
}

static void trainer_free(Trainer *t) {
    free(t->from_name);
    slm_regularise_free(&t->reg);
    slm_pass_free(&t->pass);
    free(t->grads);
    free(t->step_stories);
    free(t->stream.order);
    slm_adam_free(&t->adam);
    slm_model_free(&t->model);
}

/* Stops a step whose loss or gradient (what) is not finite, before the update:
 * the message names the step and the last good model, which stays on disk. */
static int diverged(const Trainer *t, const char *what, Error *e) {
    const char *hint = "lower --lr and train again";
    if (t->saved_step < 0)
        return FAIL(e, hint, "training diverged at step %d: the %s is not finite; no model was saved yet", t->step + 1,
                    what);
    return FAIL(e, hint,
                "training diverged at step %d: the %s is not finite; '%s' keeps the last good model, of step %d",
                t->step + 1, what, t->o.out, t->saved_step);
}

/* A step whose pass failed (logits that overflow, say): its message gets the
 * step and the model left on disk, as diverged() says them. */
static int stopped_at(const Trainer *t, int step, Error *e) {
    if (!e) return -1;
    slm_error_prefix(e, "training stopped at step %d: ", step);
    size_t n = strlen(e->message);
    if (t->saved_step >= 0)
        snprintf(e->message + n, sizeof e->message - n, "; '%s' keeps the last good model, of step %d", t->o.out,
                 t->saved_step);
    return -1;
}

/* One optimizer step (slm_train_step) on the next o.batch stories of the stream. */
static int trainer_step(Trainer *t, double *loss, long long *positions, Error *e) {
    long long first = (long long)t->step * t->o.batch;
    for (int i = 0; i < t->o.batch; i++) t->step_stories[i] = stream_story(&t->stream, first + i);
    TrainStep step = {.shards = &t->pass.shards, .model = &t->model, .adam = &t->adam, .grads = t->grads};
    TrainStepResult r;
    if (slm_pass_refs(&t->pass, t->s, t->step_stories, t->o.batch, e) ||
        slm_regularise_before_step(&t->reg, t->s, t->step_stories, t->o.batch, t->step, t->pass.refs, &t->pass.shards,
                                   e) ||
        train_step_overflowing(&step, t->pass.refs, t->o.batch, (float)slm_train_lr_at(&t->o, t->step),
                               t->step + 1 == t->overflow_at_step, &r, e))
        return stopped_at(t, t->step + 1, e);
    *positions = r.positions;
    *loss = r.loss;
    if (r.not_finite) return diverged(t, r.not_finite, e);
    slm_regularise_after_step(&t->reg, &t->model);
    t->step++;
    return 0;
}

static int evaluate_test(Trainer *t, Error *e) {
    EvalResult ev;
    if (t->s->n_test == 0) return 0;
    /* the training step's activations: a second set would double the peak memory */
    if (slm_pass_evaluate(&t->pass, t->s, t->s->test, t->s->n_test, NULL, &ev, e)) return -1;
    t->r->test_loss = ev.loss;
    t->r->test_accuracy = ev.accuracy;
    t->r->test_loss_per_char = t->o.test_bytes > 0 ? ev.loss * (double)ev.positions / (double)t->o.test_bytes : NAN;
    if (!(ev.loss >= t->r->best_test_loss)) {
        t->r->best_test_loss = ev.loss;
        t->r->best_step = t->step;
    }
    if (t->reg.has_ema) { /* the average, through the same shards */
        t->pass.shards.model = &t->reg.ema;
        int rc = slm_pass_evaluate(&t->pass, t->s, t->s->test, t->s->n_test, NULL, &ev, e);
        t->pass.shards.model = &t->model;
        if (rc) return -1;
        t->r->ema_test_loss = ev.loss;
        t->r->ema_test_accuracy = ev.accuracy;
    }
    return 0;
}

/* "out.safetensors" -> "out.step1200.safetensors", claimed as it is
 * written (another run may be writing a model of that name) and written
 * only over one of this run's own (its "trained_run"), unless --force. */
static int snapshot(Trainer *t, Error *e) {
    if (dist_rank(t->o.dist) != 0) return 0; /* rank 0 alone writes */
    char path[4096], run[24];
    const char *out = t->o.out, *dot = strstr(out, ".safetensors");
    int stem = dot && dot[12] == '\0' ? (int)(dot - out) : (int)strlen(out);
    snprintf(path, sizeof path, "%.*s.step%d.safetensors", stem, out, t->step);
    snprintf(run, sizeof run, "%016" PRIx64, t->run_id);
    FileLock lock;
    Metadata md = {0};
    int rc = slm_file_lock(&lock, path, e) ? -1 : 0;
    if (!rc) rc = slm_regularise_check_own(path, t->run_id, t->o.force, e);
    if (!rc) rc = fill_metadata(t, &md, e);
    if (!rc) rc = set_meta(&md, "step", "%.0f", t->step, e);
    if (!rc) rc = slm_metadata_set(&md, "trained_run", run, e);
    if (!rc) rc = slm_checkpoint_save_model(path, &t->model, t->o.vocab_text, &md, e);
    slm_metadata_free(&md);
    slm_file_unlock(&lock);
    return rc;
}

/* start and start_step: when and at which step this run began (a resume
 * begins part way), so that the rate and the ETA count only its own steps. */
static void report(Trainer *t, TrainProgressFn fn, void *ctx, double start, int start_step, double rate, int evaluated,
                   int saved) {
    if (!fn) return;
    TrainProgress p = {.step = t->step,
                       .steps = t->o.steps,
                       .start_step = start_step,
                       .train_loss = t->r->train_loss,
                       .test_loss = evaluated ? t->r->test_loss : NAN,
                       .test_loss_per_char = evaluated ? t->r->test_loss_per_char : NAN,
                       .test_accuracy = t->r->test_accuracy,
                       .ema_test_loss = evaluated ? t->r->ema_test_loss : NAN,
                       .lr = slm_train_lr_at(&t->o, t->step - 1),
                       .tokens_per_s = rate,
                       .elapsed_s = slm_clock_seconds() - start,
                       .evaluated = evaluated,
                       .saved = saved};
    int done = t->step - start_step;
    double per_step = done > 0 ? p.elapsed_s / done : 0;
    p.eta_s = per_step * (t->o.steps - t->step);
    if (t->o.minutes > 0 && p.eta_s > t->o.minutes * 60 - p.elapsed_s) p.eta_s = t->o.minutes * 60 - p.elapsed_s;
    fn(&p, ctx);
}

/* The front's stop request: its callback's answer, else its flag's (0: go on). Read once a step. */
static int stop_asked(const TrainOptions *o) {
    if (o->stop_fn) return o->stop_fn(o->stop_ctx);
    return o->stop ? *o->stop : 0;
}

/* The loop's clock and, fine-tuning, the model it starts from evaluated
 * and kept first, so that no later model worse on the held-out stories
 * replaces it. */
static int train_begin(Trainer *t, Error *e) {
    TrainResult *r = t->r;
    t->begun = true;
    t->start = t->window_start = slm_clock_seconds();
    t->start_step = t->step;
    t->start_tokens = r->tokens_seen;
    if (t->o.from && t->step == 0 && t->s->n_test > 0) {
        if (evaluate_test(t, e)) return -1;
        r->from_test_loss = kept_loss(t);
        judge(t);
        if (save(t, t->o.out, e)) return -1;
        r->kept_step = 0, r->kept_test_loss = r->from_test_loss;
    }
    return 0;
}

/* After step: evaluated, kept, snapshot and reported as its schedule says;
 * *stop when the run ends here (before its last step: a stop asked, the
 * clock, --stop-at, or the patience run out). */
static int after_step(Trainer *t, TrainProgressFn fn, void *ctx, long long positions, int *stop, Error *e) {
    TrainResult *r = t->r;
    r->tokens_seen += positions;
    t->window_tokens += positions;
    double now = slm_clock_seconds();
    if (now - t->window_start > 0.5) {
        t->rate = t->window_tokens / (now - t->window_start);
        t->window_start = now;
        t->window_tokens = 0;
    }
    int asked = stop_asked(&t->o);
    *stop = asked || (t->o.minutes > 0 && now - t->start >= t->o.minutes * 60) ||
            (t->o.stop_at > 0 && t->step >= t->o.stop_at);
    if (slm_dist_any(t->o.dist, *stop, stop, e)) return -1; /* a signal or a clock on one rank stops all */
    if (asked == TRAIN_STOP_INTERACTIVE && t->saved_step < 0 && now - t->start < TRAIN_DISCARD_SECONDS &&
        dist_size(t->o.dist) <= 1) {
        r->interrupted = r->nothing_saved = 1; /* Ctrl-C at once: no model to block the command given again */
        return 1;
    }
    int last = t->step == t->o.steps || *stop;
    int snap = t->o.snapshot_every > 0 && t->step % t->o.snapshot_every == 0;
    /* a snapshot is evaluated too, so it records its own test loss */
    int eval = last || snap || (t->o.eval_every > 0 && t->step % t->o.eval_every == 0);
    if (eval && evaluate_test(t, e)) return -1;
    /* OUT keeps the best model: saved when this one is better (always, with no test stories to tell) */
    int keep = eval && (t->s->n_test == 0 ? 1 : judge(t) || t->o.keep_last);
    /* a snapshot refused (its name another run's): the model is saved all the same, then the run stops */
    int refused = snap && snapshot(t, &t->snapshot_error);
    r->seconds = slm_clock_seconds() - t->start;
    if (keep && save(t, t->o.out, e)) return -1;
    if (keep) r->kept_step = t->step, r->kept_test_loss = t->s->n_test ? kept_loss(t) : NAN;
    if (refused && e) *e = t->snapshot_error;
    if (refused) return stopped_at(t, t->step, e);
    double rate = t->rate ? t->rate : (double)(r->tokens_seen - t->start_tokens) / (now - t->start);
    report(t, fn, ctx, t->start, t->start_step, rate, eval, keep);
    /* no lower test loss for `patience` evaluations: the run stops by itself, a whole run */
    if (eval && !last && t->s->n_test > 0 && t->o.patience > 0 && t->evals_since_best >= t->o.patience)
        *stop = 1, r->early_stopped = 1;
    if (*stop)
        r->interrupted = t->step < t->o.steps && !r->early_stopped; /* a stop at the last step cut nothing short */
    return 0;
}

/* Up to n steps of the loop (fewer when the run ends: t->done); the bits
 * are those of one call for all the steps, whatever the slices. */
static int train_slice(Trainer *t, int n, TrainProgressFn fn, void *ctx, Error *e) {
    TrainResult *r = t->r;
    if (!t->begun && train_begin(t, e)) return -1;
    for (int i = 0; i < n && t->step < t->o.steps; i++) {
        double loss;
        long long positions;
        int stop = 0;
        if (trainer_step(t, &loss, &positions, e)) return -1;
        r->train_loss = loss;
        int rc = after_step(t, fn, ctx, positions, &stop, e);
        if (rc < 0) return -1;
        if (rc > 0 || stop) {
            t->done = true;
            break;
        }
    }
    if (t->step >= t->o.steps) t->done = true;
    if (t->done) {
        r->best_test_loss = t->best_loss, r->best_step = t->best_step;
        r->steps_done = t->step - t->start_step;
        r->final_step = t->step;
    }
    return 0;
}

static void result_init(TrainResult *r) {
    *r = (TrainResult){.test_loss = NAN,
                       .test_loss_per_char = NAN,
                       .test_accuracy = NAN,
                       .best_test_loss = INFINITY,
                       .best_step = -1,
                       .kept_step = -1,
                       .kept_test_loss = NAN,
                       .from_test_loss = NAN,
                       .ema_test_loss = NAN,
                       .ema_test_accuracy = NAN};
}

void slm_train_close(TrainRun *t) {
    if (!t) return;
    if (t->from_name) snprintf(t->r->from, sizeof t->r->from, "%s", t->from_name);
    trainer_free(t);
    free(t);
}

int slm_train_open(TrainRun **out, const Stories *s, const TrainOptions *o, TrainResult *r, Error *e) {
    result_init(r);
    Trainer *t = *out = xmalloc(sizeof *t, e);
    if (!t) return -1;
    int rc = trainer_init(t, s, o, r, e);
    if (!rc && t->step >= t->o.steps)
        rc = FAIL(e, "give a larger --steps to train further", "'%s' has already done %d of %d steps", o->out, t->step,
                  t->o.steps);
    if (rc) slm_train_close(t), *out = NULL;
    return rc;
}

int slm_train_steps(TrainRun *t, int n, TrainProgressFn progress, void *ctx, bool *done, Error *e) {
    /* The passes run on the shards' threads; the rest of a step (Adam, the
     * checks) is cheap and runs here alone, so that no OpenMP team is left
     * busy-waiting beside the shards. */
    int threads = omp_get_max_threads();
    omp_set_num_threads(1);
    int rc = t->done ? 0 : train_slice(t, n, progress, ctx, e);
    omp_set_num_threads(threads);
    if (rc) t->done = true; /* an error ends the run: its model on disk stays as last saved */
    *done = t->done;
    return rc;
}

int train_run_overflowing(const Stories *s, const TrainOptions *o, TrainProgressFn progress, void *ctx,
                          int overflow_at_step, TrainResult *r, Error *e) {
    TrainRun *t;
    bool done;
    if (slm_train_open(&t, s, o, r, e)) return -1;
    t->overflow_at_step = overflow_at_step;
    int rc = slm_train_steps(t, INT_MAX, progress, ctx, &done, e);
    slm_train_close(t);
    return rc;
}

int slm_train_run(const Stories *s, const TrainOptions *o, TrainProgressFn progress, void *ctx, TrainResult *r,
                  Error *e) {
    return train_run_overflowing(s, o, progress, ctx, 0, r, e);
}
