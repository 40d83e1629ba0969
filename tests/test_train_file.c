/* The library's whole training run (slm_train_file), as the command line
 * and Python call it: a stop asked through its callback saves the model
 * and leaves a run that --resume finishes to the bits of an uninterrupted
 * one; Ctrl-C's stop in the first seconds saves nothing; the messages and
 * each step's numbers come back through the callbacks; the run taken a
 * slice of steps at a time (slm_train_file_open, _steps, _end: the static
 * site's training in the tab) gives the bits of one call, on either kernels. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "storylm/checkpoint.h"
#include "storylm/train_file.h"

enum { STEPS = 6, STOP_AFTER = 3 };

/* What a run's callbacks saw, and when its stop callback asks to stop. */
typedef struct Seen {
    int steps_seen, evaluations, says;
    int stop_after; /* after this step is reported, the next step's poll asks; 0: never */
    int stop_value; /* given from then on */
    char first_say[256];
} Seen;

static void on_progress(const TrainProgress *p, void *ctx) {
    Seen *s = ctx;
    s->steps_seen = p->step;
    s->evaluations += p->evaluated;
}

static void on_say(const char *text, void *ctx) {
    Seen *s = ctx;
    if (!s->says++) snprintf(s->first_say, sizeof s->first_say, "%s", text);
}

static int on_stop(void *ctx) {
    const Seen *s = ctx;
    return s->stop_after > 0 && s->steps_seen >= s->stop_after ? s->stop_value : 0;
}

/* The first 60 stories of data/stories.txt into path: 0, or -1 when the file is not here. */
static int write_stories(const char *path) {
    FILE *in = fopen(check_source_path("data/stories.txt"), "r"), *out = fopen(path, "w");
    if (!in || !out) return (in ? fclose(in) : 0), (out ? fclose(out) : 0), -1;
    char line[8192];
    int stories = 0;
    while (stories < 60 && fgets(line, sizeof line, in)) {
        fputs(line, out);
        stories += strcmp(line, "<|endoftext|>\n") == 0;
    }
    fclose(in);
    fclose(out);
    return 0;
}

/* train's parameters for a run of STEPS on stories into out (resume: --resume), settled. */
static void params_for(TrainParams *p, const char *stories, const char *out, bool resume) {
    slm_train_params_init(p, 1);
    ParamList l;
    ParamsGiven given = {0};
    slm_params_list(&params_train, &l);
    slm_params_mark(&given, slm_params_find(&l, "steps"));
    slm_params_mark(&given, slm_params_find(&l, "eval-every"));
    p->stories = stories, p->o.out = out, p->vocab = check_source_path("models/vocab.txt");
    p->o.steps = STEPS, p->o.eval_every = 2, p->test_stories = 6, p->resume = resume;
    Error e = {0};
    CHECK(slm_train_settle(p, &given, NULL, 0, &e) == 0);
}

static int run(const char *stories, const char *out, bool resume, Seen *seen, TrainSummary *sum) {
    TrainParams p;
    params_for(&p, stories, out, resume);
    TrainCallbacks cb = {.progress = on_progress, .say = on_say, .stop = on_stop, .ctx = seen};
    Error e = {0};
    int rc = slm_train_file(&p, "storylm", &cb, sum, &e);
    if (rc) fprintf(stderr, "slm_train_file: %s (%s)\n", e.message, e.hint);
    return rc;
}

/* The two files' model, Adam's moments and step, and every key of their
 * metadata but the run's seconds and its random run id, byte for byte. */
static int same_files(const char *a, const char *b) {
    Model ma = {0}, mb = {0};
    char *va = NULL, *vb = NULL;
    Metadata da = {0}, db = {0};
    TrainingState sa = {0}, sb = {0};
    Error e = {0};
    int same = slm_checkpoint_load_all(a, &ma, &va, &da, &sa, &e) == 0 &&
               slm_checkpoint_load_all(b, &mb, &vb, &db, &sb, &e) == 0 && ma.n_params == mb.n_params &&
               memcmp(ma.params, mb.params, ma.n_params * sizeof(float)) == 0 &&
               memcmp(sa.adam_m, sb.adam_m, ma.n_params * sizeof(float)) == 0 &&
               memcmp(sa.adam_v, sb.adam_v, ma.n_params * sizeof(float)) == 0 && sa.step == sb.step &&
               strcmp(va, vb) == 0 && da.count == db.count;
    for (int i = 0; same && i < da.count; i++) {
        const char *v = slm_metadata_get(&db, da.items[i].key);
        const char *k = da.items[i].key;
        same = v && (strcmp(k, "seconds") == 0 || strcmp(k, "run_id") == 0 || strcmp(v, da.items[i].value) == 0);
        if (!same)
            fprintf(stderr, "same_files: %s differs: %s, %s\n", da.items[i].key, da.items[i].value, v ? v : "none");
    }
    slm_model_free(&ma);
    slm_model_free(&mb);
    free(va);
    free(vb);
    slm_metadata_free(&da);
    slm_metadata_free(&db);
    slm_training_state_free(&sa);
    slm_training_state_free(&sb);
    return same;
}

/* Every tensor of the two model files, byte for byte. */
static int same_tensors(const char *a, const char *b) {
    Model ma = {0}, mb = {0};
    char *va = NULL, *vb = NULL;
    Error e = {0};
    int same = slm_checkpoint_load_model(a, &ma, &va, NULL, &e) == 0 &&
               slm_checkpoint_load_model(b, &mb, &vb, NULL, &e) == 0 && ma.n_params == mb.n_params &&
               memcmp(ma.params, mb.params, ma.n_params * sizeof(float)) == 0;
    slm_model_free(&ma);
    slm_model_free(&mb);
    free(va);
    free(vb);
    return same;
}

/* A stop asked after step 3 is reported saves the model of step 4 (polled after it); --resume then finishes to the
 * uninterrupted run's bits. */
static void a_stop_saves_and_resume_finishes(const char *stories, const char *dir) {
    char whole[512], cut[512];
    snprintf(whole, sizeof whole, "%s/whole.safetensors", dir);
    snprintf(cut, sizeof cut, "%s/cut.safetensors", dir);
    Seen seen = {0};
    TrainSummary sum;
    CHECK(run(stories, whole, false, &seen, &sum) == 0);
    CHECK(sum.r.final_step == STEPS && !sum.r.interrupted && sum.resume_command == NULL);
    CHECK(seen.steps_seen == STEPS && seen.evaluations == STEPS / 2);
    CHECK(strstr(seen.first_say, "storylm: ") == seen.first_say); /* the command line's words, said once a line */
    CHECK(sum.json && cJSON_IsFalse(cJSON_GetObjectItem(sum.json, "interrupted")));
    slm_train_summary_free(&sum);

    seen = (Seen){.stop_after = STOP_AFTER, .stop_value = 1};
    CHECK(run(stories, cut, false, &seen, &sum) == 0);
    CHECK(sum.r.interrupted && !sum.r.nothing_saved && sum.r.final_step == STOP_AFTER + 1);
    CHECK(sum.resume_command && strstr(sum.resume_command, " --resume "));
    CHECK(cJSON_IsTrue(cJSON_GetObjectItem(sum.json, "interrupted")));
    slm_train_summary_free(&sum);
    CHECK(access(cut, F_OK) == 0);

    seen = (Seen){0};
    CHECK(run(stories, cut, true, &seen, &sum) == 0);
    CHECK(sum.r.final_step == STEPS && sum.r.steps_done == STEPS - STOP_AFTER - 1 && !sum.r.interrupted);
    slm_train_summary_free(&sum);
    CHECK(same_tensors(whole, cut));
}

/* Ctrl-C's stop (TRAIN_STOP_INTERACTIVE) at the second step of a fresh run, before any save, saves nothing. */
static void ctrl_c_at_once_saves_nothing(const char *stories, const char *dir) {
    char out[512];
    snprintf(out, sizeof out, "%s/at_once.safetensors", dir);
    Seen seen = {.stop_after = 1, .stop_value = TRAIN_STOP_INTERACTIVE};
    TrainSummary sum;
    CHECK(run(stories, out, false, &seen, &sum) == 0);
    CHECK(sum.r.interrupted && sum.r.nothing_saved && sum.r.final_step == 2);
    slm_train_summary_free(&sum);
    CHECK(access(out, F_OK) != 0);
}

/* A file that is not there fails with a message naming it, and nothing written. */
static void a_missing_file_fails(const char *dir) {
    char out[512], missing[512];
    snprintf(out, sizeof out, "%s/never.safetensors", dir);
    snprintf(missing, sizeof missing, "%s/no-such-stories.txt", dir);
    TrainParams p;
    params_for(&p, missing, out, false);
    Seen seen = {0};
    TrainCallbacks cb = {.progress = on_progress, .say = on_say, .stop = on_stop, .ctx = &seen};
    TrainSummary sum;
    Error e = {0};
    CHECK(slm_train_file(&p, "storylm", &cb, &sum, &e) == -1);
    CHECK(strstr(e.message, "no-such-stories.txt") != NULL);
    CHECK(sum.json == NULL && seen.steps_seen == 0);
    CHECK(access(out, F_OK) != 0);
}

/* 40 steps in slices of 7 (the tab's slices, by time, are of any size;
 * the last one short) equal 40 in one call, on the portable kernels or the
 * default ones, with evaluations inside slices and at their ends. */
static void slices_give_the_same_bits(const char *stories, const char *dir, bool portable) {
    const char *name = portable ? "portable" : "default";
    char whole[512], sliced[512];
    snprintf(whole, sizeof whole, "%s/whole_%s.safetensors", dir, name);
    snprintf(sliced, sizeof sliced, "%s/sliced_%s.safetensors", dir, name);
    TrainParams p;
    Seen seen = {0};
    TrainCallbacks cb = {.progress = on_progress, .ctx = &seen};
    TrainSummary sum;
    Error e = {0};
    params_for(&p, stories, whole, false);
    p.o.steps = 40, p.o.eval_every = 10;
    if (portable) p.o.kernels = KERNELS_PORTABLE;
    CHECK(slm_train_file(&p, "storylm", &cb, &sum, &e) == 0);
    CHECK(sum.r.final_step == 40);
    slm_train_summary_free(&sum);

    params_for(&p, stories, sliced, false);
    p.o.steps = 40, p.o.eval_every = 10;
    if (portable) p.o.kernels = KERNELS_PORTABLE;
    TrainFileRun *f;
    bool refused, done = false;
    seen = (Seen){0};
    int slices = 0, rc = slm_train_file_open(&f, &p, &cb, &refused, &e);
    for (; !rc && !done; slices++) rc = slm_train_file_steps(f, 7, &done, &e);
    CHECK(rc == 0 && slices == 6 && seen.steps_seen == 40 && seen.evaluations == 4);
    CHECK(slm_train_file_stories(f)->n_test == 6);
    CHECK(slm_train_file_end(f, "storylm", &sum, &e) == 0);
    CHECK(sum.r.final_step == 40 && !sum.r.interrupted && sum.json);
    slm_train_summary_free(&sum);
    slm_train_file_free(f);
    CHECK(same_files(whole, sliced));
}

int main(void) {
    char dir[256], stories[300];
    snprintf(dir, sizeof dir, "%s/train_file", check_tmpdir());
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s' && mkdir -p '%s'", dir, dir);
    if (system(cmd) != 0) return 1;
    snprintf(stories, sizeof stories, "%s/stories.txt", dir);
    if (write_stories(stories)) {
        printf("test_train_file: data/stories.txt is not here: skipped\n");
        return 77;
    }
    a_stop_saves_and_resume_finishes(stories, dir);
    ctrl_c_at_once_saves_nothing(stories, dir);
    a_missing_file_fails(dir);
    slices_give_the_same_bits(stories, dir, true);
    slices_give_the_same_bits(stories, dir, false);
    return check_report();
}
