/* Training: the learning-rate schedule, evaluation in chunks equal to one
 * pass, a step split into chunks equal to one unsplit, loss falling on a
 * learnable toy language, and the saved model reloading to the same numbers. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "archs.h"
#include "check.h"
#include "storylm/checkpoint.h"
#include "storylm/rng.h"
#include "storylm/train.h"
#include "../src/train/train_testing.h" /* the overflow seam */

enum { V = 40, N_STORIES = 60 };

/* A toy language: each story counts up from a random start, mod V - 2,
 * between [EOS]s (id 1), so the next token is predictable. */
static void toy_stories(Stories *s) {
    Rng r;
    slm_rng_seed(&r, 5);
    *s = (Stories){.n_stories = N_STORIES};
    size_t *starts = calloc(N_STORIES + 1, sizeof *starts);
    int32_t *tokens = malloc(N_STORIES * 80 * sizeof *tokens);
    for (int i = 0; i < N_STORIES; i++) {
        int len = 10 + (int)slm_rng_below(&r, 60), x = (int)slm_rng_below(&r, V - 2);
        size_t at = starts[i];
        tokens[at] = 1;
        for (int t = 1; t < len - 1; t++) tokens[at + t] = 2 + (x + t) % (V - 2);
        tokens[at + len - 1] = 1;
        starts[i + 1] = at + len;
    }
    s->starts = starts;
    s->ids32 = tokens;
    s->n_tokens = starts[N_STORIES];
    s->n_test = 6;
    s->n_train = N_STORIES - 6;
    s->test = malloc(6 * sizeof(int));
    s->train = malloc(s->n_train * sizeof(int));
    for (int i = 0, a = 0, b = 0; i < N_STORIES; i++) {
        if (i % 10 == 3)
            s->test[a++] = i;
        else
            s->train[b++] = i;
    }
}

static char *toy_vocab(void) {
    char *text = calloc(V * 8, 1);
    strcat(text, "[UNK]\n[EOS]\n");
    for (int i = 2; i < V; i++) sprintf(text + strlen(text), "w%d\n", i);
    return text;
}

static void schedule_warms_up_then_decays(void) {
    TrainOptions o = slm_train_default_options();
    o.steps = 1000;
    o.lr = 1e-3;
    CHECK_CLOSE(slm_train_lr_at(&o, 0), 1e-5, 1e-9, 0); /* warm-up: 100 steps */
    CHECK_CLOSE(slm_train_lr_at(&o, 99), 1e-3, 1e-9, 0);
    CHECK_CLOSE(slm_train_lr_at(&o, 550), 0.55e-3, 1e-9, 0); /* half way down the cosine */
    CHECK_CLOSE(slm_train_lr_at(&o, 1000), 1e-4, 1e-9, 0);
    o.warmup = 0;
    CHECK_CLOSE(slm_train_lr_at(&o, 0), 1e-3, 1e-9, 0);
}

static void chunks_change_nothing(const Stories *s) {
    Error e = {0};
    ModelConfig cfg = slm_model_config_default(&slm_attention_arch, V);
    Model m;
    CHECK(slm_model_init(&m, &cfg, &e) == 0);
    slm_model_randomize(&m, 3);
    EvalResult one, many;
    CHECK(slm_evaluate(&m, s, s->train, s->n_train, NULL, 1 << 14, &one, &e) == 0);
    CHECK(slm_evaluate(&m, s, s->train, s->n_train, NULL, 70, &many, &e) == 0);
    CHECK(one.positions == many.positions && one.positions > 1000);
    CHECK_CLOSE(many.loss, one.loss, 1e-6, 0);
    CHECK_CLOSE(many.accuracy, one.accuracy, 0, 1e-12);
    CHECK_CLOSE(one.loss, log(V), 0.15, 0); /* an untrained model is near uniform */
    slm_model_free(&m);
}

/* Trains with the given chunk size and returns the test loss; the model
 * stays at path. */
static double train_toy(const Stories *s, int max_positions, const char *path, const char *vocab) {
    Error e = {0};
    TrainOptions o = slm_train_default_options();
    o.steps = 150;
    o.eval_every = 0;
    o.max_positions = max_positions;
    o.out = path;
    o.vocab_text = vocab;
    o.vocab_size = V;
    o.batch = 4;
    TrainResult r;
    int rc = slm_train_run(s, &o, NULL, NULL, &r, &e);
    if (rc) fprintf(stderr, "train_run: %s\n", e.message);
    CHECK(rc == 0 && r.final_step == 150);
    return r.test_loss;
}

static void training_learns_and_saves(const Stories *s) {
    char big[512], small[512];
    snprintf(big, sizeof big, "%s/train_big.safetensors", check_tmpdir());
    snprintf(small, sizeof small, "%s/train_small.safetensors", check_tmpdir());
    char *vocab = toy_vocab();
    double a = train_toy(s, 1 << 14, big, vocab), b = train_toy(s, 80, small, vocab);
    printf("toy test loss after 150 steps: %.4f (one chunk), %.4f (chunks of 80)\n", a, b);
    CHECK(a < 0.5 * log(V));
    CHECK_CLOSE(b, a, 0.02, 0); /* the same gradient up to summation order */
    Model m;
    char *text = NULL;
    Metadata md = {0};
    Error e = {0};
    CHECK(slm_checkpoint_load_model(big, &m, &text, &md, &e) == 0);
    EvalResult ev;
    CHECK(slm_evaluate(&m, s, s->test, s->n_test, NULL, 4096, &ev, &e) == 0);
    CHECK_CLOSE(ev.loss, a, 1e-9, 0);
    CHECK(slm_metadata_get(&md, "test_loss") && fabs(atof(slm_metadata_get(&md, "test_loss")) - a) < 1e-5);
    slm_model_free(&m);
    slm_metadata_free(&md);
    free(text);
    free(vocab);
}

/* Options of a short toy run saving every 2 steps to path. */
static TrainOptions toy_options(const char *path, const char *vocab) {
    TrainOptions o = slm_train_default_options();
    o.steps = 12;
    o.eval_every = 2;
    o.out = path;
    o.vocab_text = vocab;
    o.vocab_size = V;
    o.batch = 4;
    o.seed = 3;
    return o;
}

/* The parameters of the model file at path into m (caller model_frees); 0 when read. */
static int load_params(const char *path, Model *m) {
    char *text = NULL;
    Metadata md = {0};
    Error e = {0};
    int rc = slm_checkpoint_load_model(path, m, &text, &md, &e);
    if (rc) fprintf(stderr, "%s: %s\n", path, e.message);
    slm_metadata_free(&md);
    free(text);
    return rc;
}

/* Do the model files a and b hold the same numbers, bit for bit? */
static int same_model(const char *a, const char *b) {
    Model ma, mb;
    if (load_params(a, &ma)) return 0;
    int ok = load_params(b, &mb) == 0;
    if (ok) {
        ok = ma.n_params == mb.n_params && memcmp(ma.params, mb.params, ma.n_params * sizeof(float)) == 0;
        slm_model_free(&mb);
    }
    slm_model_free(&ma);
    return ok;
}

static char *slurp(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    char *buf = f ? malloc(1 << 22) : NULL;
    *len = buf ? fread(buf, 1, 1 << 22, f) : 0;
    if (f) fclose(f);
    return buf;
}

/* A gradient that overflows at step 7 (train_testing.h's seam, which the
 * CLI cannot reach): the run stops naming the step, the model on disk is
 * the clean run's of step 6, and resuming it ends where the clean run ends;
 * before the first save an older file at the path is left alone. */
static void overflow_stops_and_keeps_the_last_good_model(const Stories *s) {
    char clean6[512], clean[512], fault[512], early[512];
    snprintf(clean6, sizeof clean6, "%s/overflow_clean6.safetensors", check_tmpdir());
    snprintf(clean, sizeof clean, "%s/overflow_clean.safetensors", check_tmpdir());
    snprintf(fault, sizeof fault, "%s/overflow_fault.safetensors", check_tmpdir());
    snprintf(early, sizeof early, "%s/overflow_early.safetensors", check_tmpdir());
    char *vocab = toy_vocab();
    TrainResult r;
    Error e = {0};
    TrainOptions o = toy_options(clean6, vocab);
    o.stop_at = 6;
    CHECK(slm_train_run(s, &o, NULL, NULL, &r, &e) == 0 && r.final_step == 6);
    o = toy_options(clean, vocab);
    CHECK(slm_train_run(s, &o, NULL, NULL, &r, &e) == 0 && r.final_step == 12);

    o = toy_options(fault, vocab);
    CHECK(train_run_overflowing(s, &o, NULL, NULL, 7, &r, &e) != 0);
    char want[1024];
    snprintf(want, sizeof want,
             "training diverged at step 7: the gradient is not finite; '%s' keeps the last good model, of step 6",
             fault);
    CHECK(strstr(e.message, want) != NULL);
    CHECK(strstr(e.hint, "lower --lr") != NULL);
    CHECK(same_model(fault, clean6));
    o = toy_options(fault, vocab);
    o.resume = 1;
    e = (Error){0};
    CHECK(slm_train_run(s, &o, NULL, NULL, &r, &e) == 0 && r.final_step == 12);
    CHECK(same_model(fault, clean));

    /* before the first save: nothing written, the file there stays as it was */
    size_t n_before, n_after;
    char *before = slurp(clean6, &n_before);
    FILE *f = fopen(early, "wb");
    if (f) fwrite(before, 1, n_before, f), fclose(f);
    o = toy_options(early, vocab);
    e = (Error){0};
    CHECK(train_run_overflowing(s, &o, NULL, NULL, 1, &r, &e) != 0);
    CHECK(strstr(e.message, "training diverged at step 1: the gradient is not finite; no model was saved yet") != NULL);
    char *after = slurp(early, &n_after);
    CHECK(before && after && n_before == n_after && memcmp(before, after, n_before) == 0);
    free(before);
    free(after);
    free(vocab);
}

typedef struct FirstReport {
    TrainProgress p;
    int seen;
} FirstReport;

static void keep_first(const TrainProgress *p, void *ctx) {
    FirstReport *f = ctx;
    if (!f->seen++) f->p = *p;
}

/* A resumed run's progress counts its own steps: the ETA is its time per
 * step so far times the steps left (not the time over every step since 0),
 * and the learning rate is the schedule's at the step just taken. */
static void resumed_progress_counts_its_own_steps(const Stories *s) {
    char path[512];
    snprintf(path, sizeof path, "%s/progress.safetensors", check_tmpdir());
    char *vocab = toy_vocab();
    TrainResult r;
    Error e = {0};
    TrainOptions o = toy_options(path, vocab);
    o.stop_at = 6;
    CHECK(slm_train_run(s, &o, NULL, NULL, &r, &e) == 0);
    o = toy_options(path, vocab);
    o.resume = 1;
    FirstReport f = {0};
    CHECK(slm_train_run(s, &o, keep_first, &f, &r, &e) == 0 && f.seen == 6);
    CHECK(f.p.step == 7 && f.p.steps == 12);
    CHECK_CLOSE(f.p.eta_s, f.p.elapsed_s / 1 * 5, 1e-9, 1e-12);
    CHECK_CLOSE(f.p.lr, slm_train_lr_at(&o, 6), 1e-12, 0);
    CHECK(f.p.tokens_per_s > 0 && isfinite(f.p.tokens_per_s));
    free(vocab);
}

int main(void) {
    slm_model_threads_setup(2);
    Stories s;
    toy_stories(&s);
    schedule_warms_up_then_decays();
    chunks_change_nothing(&s);
    training_learns_and_saves(&s);
    overflow_stops_and_keeps_the_last_good_model(&s);
    resumed_progress_counts_its_own_steps(&s);
    free((void *)s.ids32); /* made here, not mapped: slm_stories_free leaves them */
    free((void *)s.starts);
    slm_stories_free(&s);
    return check_report();
}
