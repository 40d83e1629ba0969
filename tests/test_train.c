/* Training: the learning-rate schedule, evaluation in chunks equal to one
 * pass, a step split into chunks equal to one unsplit, loss falling on a
 * learnable toy language, and the saved model reloading to the same numbers. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "storylm/checkpoint.h"
#include "storylm/rng.h"
#include "storylm/train.h"

enum { V = 40, N_STORIES = 60 };

/* A toy language: each story counts up from a random start, mod V - 2,
 * between [EOS]s (id 1), so the next token is predictable. */
static void toy_stories(Stories *s) {
    Rng r;
    rng_seed(&r, 5);
    *s = (Stories){.n_stories = N_STORIES};
    size_t *starts = calloc(N_STORIES + 1, sizeof *starts);
    int32_t *tokens = malloc(N_STORIES * 80 * sizeof *tokens);
    for (int i = 0; i < N_STORIES; i++) {
        int len = 10 + (int)rng_below(&r, 60), x = (int)rng_below(&r, V - 2);
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
        if (i % 10 == 3) s->test[a++] = i;
        else s->train[b++] = i;
    }
}

static char *toy_vocab(void) {
    char *text = calloc(V * 8, 1);
    strcat(text, "[UNK]\n[EOS]\n");
    for (int i = 2; i < V; i++) sprintf(text + strlen(text), "w%d\n", i);
    return text;
}

static void schedule_warms_up_then_decays(void) {
    TrainOptions o = train_default_options();
    o.steps = 1000;
    o.lr = 1e-3;
    CHECK_CLOSE(train_lr_at(&o, 0), 1e-5, 1e-9, 0);   /* warm-up: 100 steps */
    CHECK_CLOSE(train_lr_at(&o, 99), 1e-3, 1e-9, 0);
    CHECK_CLOSE(train_lr_at(&o, 550), 0.55e-3, 1e-9, 0); /* half way down the cosine */
    CHECK_CLOSE(train_lr_at(&o, 1000), 1e-4, 1e-9, 0);
    o.warmup = 0;
    CHECK_CLOSE(train_lr_at(&o, 0), 1e-3, 1e-9, 0);
}

static void chunks_change_nothing(const Stories *s) {
    Error e = {0};
    ModelConfig cfg = model_config_default(ARCH_ATTENTION, V);
    Model m;
    CHECK(model_init(&m, &cfg, &e) == 0);
    model_randomize(&m, 3);
    EvalResult one, many;
    CHECK(evaluate(&m, s, s->train, s->n_train, NULL, 1 << 14, &one, &e) == 0);
    CHECK(evaluate(&m, s, s->train, s->n_train, NULL, 70, &many, &e) == 0);
    CHECK(one.positions == many.positions && one.positions > 1000);
    CHECK_CLOSE(many.loss, one.loss, 1e-6, 0);
    CHECK_CLOSE(many.accuracy, one.accuracy, 0, 1e-12);
    CHECK_CLOSE(one.loss, log(V), 0.15, 0); /* an untrained model is near uniform */
    model_free(&m);
}

/* Trains with the given chunk size and returns the test loss; the model
 * stays at path. */
static double train_toy(const Stories *s, int max_positions, const char *path, const char *vocab) {
    Error e = {0};
    TrainOptions o = train_default_options();
    o.steps = 150;
    o.eval_every = 0;
    o.max_positions = max_positions;
    o.out = path;
    o.vocab_text = vocab;
    o.vocab_size = V;
    o.batch = 4;
    TrainResult r;
    int rc = train_run(s, &o, NULL, NULL, &r, &e);
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
    CHECK(checkpoint_load_model(big, &m, &text, &md, &e) == 0);
    EvalResult ev;
    CHECK(evaluate(&m, s, s->test, s->n_test, NULL, 4096, &ev, &e) == 0);
    CHECK_CLOSE(ev.loss, a, 1e-9, 0);
    CHECK(metadata_get(&md, "test_loss") && fabs(atof(metadata_get(&md, "test_loss")) - a) < 1e-5);
    model_free(&m);
    metadata_free(&md);
    free(text);
    free(vocab);
}

int main(void) {
    model_threads_setup(2);
    Stories s;
    toy_stories(&s);
    schedule_warms_up_then_decays();
    chunks_change_nothing(&s);
    training_learns_and_saves(&s);
    free((void *)s.ids32); /* made here, not mapped: stories_free leaves them */
    free((void *)s.starts);
    stories_free(&s);
    return check_report();
}
