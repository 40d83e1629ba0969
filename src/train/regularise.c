/* Training's regularisation: see include/storylm/regularise.h. */
#include "storylm/parse.h"
#include "storylm/regularise.h"

#include <limits.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "storylm/checkpoint.h"
#include "storylm/dropout.h"
#include "storylm/fileio.h"
#include "storylm/outputs.h"

/* ---- options and their record -------------------------------------------- */

int slm_regularise_check_options(const TrainOptions *o, Error *e) {
    const struct {
        const char *flag;
        double x;
    } probability[] = {{"--dropout", o->dropout}, {"--attention-dropout", o->attention_dropout}};
    for (size_t i = 0; i < sizeof probability / sizeof probability[0]; i++)
        if (!(probability[i].x >= 0 && probability[i].x < 1))
            return FAIL(e, "give a probability from 0 (off) to below 1 (1 would drop everything), such as 0.1",
                        "%s %g is not a probability below 1", probability[i].flag, probability[i].x);
    if (!(o->swap_names >= 0 && o->swap_names <= 1))
        return FAIL(e, "give a probability from 0 (off) to 1 (every story)", "--swap-names %g is not a probability",
                    o->swap_names);
    if (!(o->invent_names >= 0 && o->invent_names <= 1 - o->swap_names))
        return FAIL(e, "give a probability from 0 (off) to 1 minus --swap-names (a story is renamed at most once)",
                    "--invent-names %g is not a probability up to %g", o->invent_names, 1 - o->swap_names);
    if (!(o->weight_decay >= 0 && o->weight_decay * o->lr < 1))
        return FAIL(e, "give a decay from 0 (off) such that decay x lr < 1, such as 0.1",
                    "--weight-decay %g cannot be used with --lr %g", o->weight_decay, o->lr);
    if (!(o->ema >= 0 && o->ema < 1))
        return FAIL(e, "give a decay from 0 (off) to below 1, such as 0.999", "--ema %g is not from 0 to below 1",
                    o->ema);
    if (o->ema_save && !(o->ema > 0))
        return FAIL(e, "give --ema DECAY with --ema-save",
                    "--ema-save saves the moving average, but no --ema is given");
    return 0;
}

/* The options a model file records: those off are left out, so a file of a
 * run without them has exactly the keys it always had. */
typedef struct RecordedOption {
    const char *key, *flag;
    double value;
    int is_switch; /* a flag without a value */
} RecordedOption;

static int recorded(const TrainOptions *o, RecordedOption *out) {
    RecordedOption all[] = {{"weight_decay", "--weight-decay", o->weight_decay, 0},
                            {"dropout", "--dropout", o->dropout, 0},
                            {"attention_dropout", "--attention-dropout", o->attention_dropout, 0},
                            {"ema", "--ema", o->ema, 0},
                            {"ema_save", "--ema-save", o->ema_save, 1},
                            {"keep_best", "--keep-best", o->keep_best, 1},
                            {"swap_names", "--swap-names", o->swap_names, 0},
                            {"invent_names", "--invent-names", o->invent_names, 0}};
    memcpy(out, all, sizeof all);
    return (int)(sizeof all / sizeof all[0]);
}

/* The shortest decimal that reads back as exactly x. */
static void exact_decimal(double x, char *buf, size_t size) {
    for (int digits = 1; digits <= 17; digits++) {
        snprintf(buf, size, "%.*g", digits, x);
        if (strtod(buf, NULL) == x) return;
    }
}

int slm_regularise_metadata(const TrainOptions *o, Metadata *md, Error *e) {
    RecordedOption opt[9];
    int n = recorded(o, opt);
    for (int i = 0; i < n; i++) {
        if (opt[i].value == 0) continue;
        char buf[40];
        exact_decimal(opt[i].value, buf, sizeof buf);
        if (slm_metadata_set(md, opt[i].key, buf, e)) return -1;
    }
    return 0;
}

int slm_regularise_check_resume(const TrainOptions *o, const Metadata *md, const char *path, Error *e) {
    RecordedOption opt[9];
    int n = recorded(o, opt);
    for (int i = 0; i < n; i++) {
        const char *v = slm_metadata_get(md, opt[i].key);
        double was = v ? strtod(v, NULL) : 0;
        if (was == opt[i].value) continue;
        if (opt[i].is_switch)
            return FAIL(e, "resume with the flags the run began with", "cannot resume '%s': it was trained %s %s", path,
                        was ? "with" : "without", opt[i].flag);
        return FAIL(e, "resume with the flags the run began with",
                    "cannot resume '%s': it was trained with %s %g, not %g", path, opt[i].flag, was, opt[i].value);
    }
    return 0;
}

/* ---- files ------------------------------------------------------------------ */

/* "x/m.safetensors" + "raw" -> "x/m.raw.safetensors" (or ".raw.safetensors" appended). */
static int beside(const char *out, const char *what, char *path, Error *e) {
    const char *dot = strstr(out, ".safetensors");
    int stem = dot && dot[12] == '\0' ? (int)(dot - out) : (int)strlen(out);
    if (snprintf(path, REGULARISE_PATH_MAX, "%.*s.%s.safetensors", stem, out, what) >= REGULARISE_PATH_MAX)
        return FAIL(e, "give a shorter --out", "the path '%.60s...' is too long", out);
    return 0;
}

const char *slm_regularise_file(const char *out, const char *what, char path[REGULARISE_PATH_MAX]) {
    return beside(out, what, path, NULL) ? NULL : path;
}

int slm_regularise_paths(Regularise *g, const TrainOptions *o, Error *e) {
    *g = (Regularise){.o = o, .best_loss = INFINITY, .best_step = -1};
    snprintf(g->model_path, sizeof g->model_path, "%s", o->out);
    if (beside(o->out, "ema", g->ema_path, e) || beside(o->out, "best", g->best_path, e)) return -1;
    struct stat st;
    if (o->ema_save) {
        if (beside(o->out, "raw", g->checkpoint_path, e)) return -1;
        snprintf(g->ema_path, sizeof g->ema_path, "%s", o->out);
        /* the raw weights a run with --ema-save resumes from: missing beside a model, that model had none */
        if (o->resume && stat(g->checkpoint_path, &st) != 0 && stat(o->out, &st) == 0)
            return FAIL(e, "resume with the flags the run began with",
                        "cannot resume '%s': it was trained without --ema-save (there is no '%s' beside it)", o->out,
                        g->checkpoint_path);
    } else {
        snprintf(g->checkpoint_path, sizeof g->checkpoint_path, "%s", o->out);
        char raw[REGULARISE_PATH_MAX];
        if (o->resume && beside(o->out, "raw", raw, NULL) == 0 && stat(raw, &st) == 0)
            return FAIL(e, "resume with the flags the run began with",
                        "cannot resume '%s': it was trained with --ema-save (its raw weights are in '%s')", o->out,
                        raw);
    }
    return 0;
}

/* A file of this run's (its "trained_run" is run_id) loaded into *m; 1 when
 * it is, 0 when absent or of another run; *meta keeps its keys. */
static int load_own(const char *path, uint64_t run_id, Model *m, Metadata *meta, Error *e) {
    struct stat st;
    if (stat(path, &st) != 0) return 0;
    char *vocab = NULL;
    if (slm_checkpoint_load_model(path, m, &vocab, meta, e)) return -1;
    free(vocab);
    const char *run = slm_metadata_get(meta, "trained_run");
    char want[24];
    snprintf(want, sizeof want, "%016" PRIx64, run_id);
    if (run && strcmp(run, want) == 0) return 1;
    slm_model_free(m);
    slm_metadata_free(meta);
    return 0;
}

/* On a resume: the average of the run, which must be of the resumed step. */
static int resume_average(Regularise *g, int step, uint64_t run_id, Error *e) {
    Model file;
    Metadata meta = {0};
    int own = load_own(g->ema_path, run_id, &file, &meta, e);
    if (own < 0) return -1;
    const char *at = own ? slm_metadata_get(&meta, "step") : NULL;
    int rc = 0;
    int at_step = -1;
    if (!own || !at || slm_parse_int(at, 0, INT_MAX, &at_step) != PARSE_OK || at_step != step ||
        file.n_params != g->ema.n_params)
        rc = FAIL(e,
                  "train anew: the run's moving average is lost (a kill between the model's save and the "
                  "average's leaves them at different steps)",
                  "cannot resume the moving average: '%s' is %s", g->ema_path,
                  own ? "of another step than the model" : "missing or of another run");
    else
        memcpy(g->ema.params, file.params, file.n_params * sizeof(float));
    if (own) slm_model_free(&file), slm_metadata_free(&meta);
    return rc;
}

int slm_regularise_check_own(const char *path, uint64_t run_id, bool force, Error *e) {
    struct stat st;
    if (force || stat(path, &st) != 0 || st.st_size == 0) return 0;
    char want[24];
    snprintf(want, sizeof want, "%016" PRIx64, run_id);
    SafeTensorsFile f;
    bool own = slm_safetensors_open(&f, path, NULL) == 0; /* the header alone: its metadata */
    if (own) {
        const char *run = slm_metadata_get(&f.metadata, "trained_run");
        own = run && strcmp(run, want) == 0;
        slm_safetensors_close(&f);
    }
    if (own) return 0;
    return FAIL(e, "move that file away, or give --force to replace it",
                "'%s' holds %s of another run: it is not replaced", path, slm_file_kind_name(slm_file_kind(path)));
}

/* On a resume: the best so far of the run, if its file is there; another
 * run's there (put by a run given --force) is kept, unless --force. */
static int resume_best(Regularise *g, uint64_t run_id, Error *e) {
    if (slm_regularise_check_own(g->best_path, run_id, g->o->force, e)) return -1;
    Model file;
    Metadata meta = {0};
    int own = load_own(g->best_path, run_id, &file, &meta, e);
    if (own <= 0) return own;
    const char *loss = slm_metadata_get(&meta, "test_loss"), *at = slm_metadata_get(&meta, "step");
    double best_loss;
    int best_step;
    if (loss && at && slm_parse_double(loss, 0, INFINITY, &best_loss) == PARSE_OK &&
        slm_parse_int(at, 0, INT_MAX, &best_step) == PARSE_OK)
        g->best_loss = best_loss, g->best_step = best_step;
    slm_model_free(&file);
    slm_metadata_free(&meta);
    return 0;
}

int slm_regularise_init(Regularise *g, const Model *m, Adam *adam, int step, uint64_t run_id, Error *e) {
    const TrainOptions *o = g->o;
    if ((o->swap_names > 0 || o->invent_names > 0) && !o->augment)
        return FAIL(e, NULL,
                    "--swap-names and --invent-names need the names of the training stories (TrainOptions.augment)");
    adam->weight_decay = (float)o->weight_decay;
    if (o->weight_decay > 0) {
        if (!(g->decay_mask = xmalloc(m->n_params, e))) return -1;
        slm_model_decay_mask(m, g->decay_mask);
        adam->decay_mask = g->decay_mask;
    }
    if (o->augment && !(g->rewritten = xcalloc((size_t)o->batch, sizeof(IntVec), e))) return -1;
    if (o->ema > 0) {
        if (slm_model_init(&g->ema, &m->cfg, e)) return -1;
        g->has_ema = 1;
        memcpy(g->ema.params, m->params, m->n_params * sizeof(float));
        if (step > 0 && resume_average(g, step, run_id, e)) return -1;
    }
    return o->keep_best && step > 0 ? resume_best(g, run_id, e) : 0;
}

void slm_regularise_free(Regularise *g) {
    free(g->decay_mask);
    if (g->has_ema) slm_model_free(&g->ema);
    for (int i = 0; g->rewritten && i < g->o->batch; i++) slm_intvec_free(&g->rewritten[i]);
    free(g->rewritten);
    g->decay_mask = NULL, g->rewritten = NULL, g->has_ema = 0;
}

/* ---- steps ------------------------------------------------------------------ */

int slm_regularise_before_step(Regularise *g, const Stories *s, const int *idx, int n, int64_t step, StoryRef *refs,
                               Shards *shards, Error *e) {
    const TrainOptions *o = g->o;
    shards->dropout_hidden = (float)o->dropout;
    shards->dropout_attention = (float)o->attention_dropout;
    shards->dropout_seed = o->seed;
    shards->dropout_step = step;
    for (int i = 0; o->augment && i < n; i++) {
        int len = refs[i].len;
        /* another stream than dropout's: the same seed, step and place, salted */
        uint64_t key = slm_dropout_story_key(o->seed ^ 0x6e616d6573ULL, step, i);
        if (o->augment(o->augment_ctx, s, idx[i], key, &g->rewritten[i], e)) return -1;
        if ((int)g->rewritten[i].len > TRAIN_AUGMENT_MAX_LEN(len))
            return FAIL(e, NULL, "a rewritten story of %zu tokens is longer than the %d allowed for one of %d",
                        g->rewritten[i].len, TRAIN_AUGMENT_MAX_LEN(len), len);
        refs[i] = (StoryRef){g->rewritten[i].data, (int)g->rewritten[i].len};
    }
    return 0;
}

void slm_ema_update(float *avg, const float *x, size_t n, float decay) {
    float rest = 1.0f - decay;
    for (size_t i = 0; i < n; i++) avg[i] = decay * avg[i] + rest * x[i];
}

void slm_regularise_after_step(Regularise *g, const Model *m) {
    if (g->has_ema) slm_ema_update(g->ema.params, m->params, m->n_params, (float)g->o->ema);
}

/* ---- saves ------------------------------------------------------------------ */

/* m's weights to path, with meta and this save's step, run, test loss and accuracy (the saved weights' own,
 * not the raw weights' that meta holds). */
static int save_weights(const char *path, const Model *m, const char *vocab, const Metadata *meta, int step,
                        uint64_t run_id, double test_loss, double test_accuracy, const char *weights, Error *e) {
    Metadata md = {0};
    char buf[40];
    int rc = 0;
    for (int i = 0; !rc && i < meta->count; i++)
        rc = slm_metadata_set(&md, meta->items[i].key, meta->items[i].value, e);
    snprintf(buf, sizeof buf, "%d", step);
    rc = rc ? rc : slm_metadata_set(&md, "step", buf, e);
    snprintf(buf, sizeof buf, "%016" PRIx64, run_id);
    rc = rc ? rc : slm_metadata_set(&md, "trained_run", buf, e);
    rc = rc ? rc : slm_metadata_set(&md, "weights", weights, e);
    snprintf(buf, sizeof buf, "%.6f", test_loss);
    if (!rc && isfinite(test_loss)) rc = slm_metadata_set(&md, "test_loss", buf, e);
    snprintf(buf, sizeof buf, "%.6f", test_accuracy);
    if (!rc && isfinite(test_accuracy)) rc = slm_metadata_set(&md, "test_accuracy", buf, e);
    if (!rc) rc = slm_checkpoint_save_model(path, m, vocab, &md, e);
    slm_metadata_free(&md);
    return rc;
}

int slm_regularise_saved(Regularise *g, const Model *m, const char *vocab, const Metadata *meta, int step,
                         uint64_t run_id, TrainResult *r, Error *e) {
    const TrainOptions *o = g->o;
    if (g->has_ema && save_weights(g->ema_path, &g->ema, vocab, meta, step, run_id, r->ema_test_loss,
                                   r->ema_test_accuracy, "moving average", e))
        return -1;
    if (!o->keep_best && !o->ema_save) return 0;
    const Model *model = o->ema_save ? &g->ema : m;
    double loss = o->ema_save ? r->ema_test_loss : r->test_loss;
    double accuracy = o->ema_save ? r->ema_test_accuracy : r->test_accuracy;
    if (loss < g->best_loss) {
        if (o->keep_best && save_weights(g->best_path, model, vocab, meta, step, run_id, loss, accuracy,
                                         o->ema_save ? "moving average" : "raw", e))
            return -1;
        g->best_loss = loss, g->best_step = step;
    }
    r->best_test_loss = g->best_loss, r->best_step = g->best_step;
    return 0;
}
