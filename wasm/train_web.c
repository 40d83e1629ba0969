/* Training in the page's tab (web/train_worker.js): `storylm train` itself
 * (slm_train_file's pieces, src/views/train_file.c) a slice of steps at a
 * time, so that the worker, of one thread, hears the page's Stop between
 * slices; the same bits whatever the slices. The run writes its model where
 * `storylm train -o` would (in emscripten's file system: the worker reads
 * it from there for the download), and each slice answers what the page's
 * training card draws, in the shapes of the server's /api/train
 * (src/server/train_job.c's points and heads). */
#include <emscripten.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server_internal.h"
#include "storylm/clock.h"
#include "storylm/regularise.h"
#include "storylm/train_file.h"

typedef struct TrainWeb {
    TrainParams p;
    cJSON *options;         /* the options read: p's strings point into them */
    char stories[PATH_MAX]; /* STORIES and --out, kept: the caller's strings live for one call */
    char out[PATH_MAX];
    char from[PATH_MAX];  /* --from's model found (slm_train_settle) */
    char vocab[PATH_MAX]; /* --vocab found (slm_data_vocab_path) */
    TrainCallbacks cb;
    TrainFileRun *run;
    cJSON *points, *heads, *said; /* this slice's, handed to the page and begun anew */
    int every;                    /* a point of the loss curve every this many steps (at most about 500) */
    int step;
    bool done;         /* the run ended: no step is left to take */
    const char *ended; /* its last state, once its end was answered ("done", "stopped", "failed"); NULL: not yet */
} TrainWeb;

EMSCRIPTEN_KEEPALIVE void slm_train_web_close(TrainWeb *w);

static void on_say(const char *text, void *ctx) {
    TrainWeb *w = ctx;
    cJSON_AddItemToArray(w->said, cJSON_CreateString(text));
}

/* A step's point of the curve (each evaluation's, and every w->every
 * steps'), and the heads of each model saved, as the server's job keeps them. */
static void on_progress(const TrainProgress *p, void *ctx) {
    TrainWeb *w = ctx;
    w->step = p->step;
    if (!w->every) w->every = p->steps > 500 ? p->steps / 500 : 1;
    if (p->evaluated || p->step % w->every == 0 || p->step == p->steps)
        cJSON_AddItemToArray(w->points, train_loss_point(p));
    cJSON *heads = p->saved ? train_heads_point(w->p.o.out, slm_train_file_stories(w->run), p->step) : NULL;
    if (heads) cJSON_AddItemToArray(w->heads, heads);
}

/* {"error", "hint"} of e, as the server's answers put it (malloc'd). */
static char *error_text(const Error *e) {
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "state", "failed");
    cJSON_AddStringToObject(j, "error", e->message);
    if (e->hint[0]) cJSON_AddStringToObject(j, "hint", e->hint);
    char *text = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    return text;
}

/* options (a JSON object of train's parameters, as storylm.train takes
 * them: {"steps": 100, "seed": 3}) into w->p, settled as the command line
 * settles its flags; one thread, as `--threads 1`. */
static int read_params(TrainWeb *w, const char *stories, const char *out, const char *options, Error *e) {
    TrainParams *p = &w->p;
    slm_train_params_init(p, 1);
    if (!(w->options = cJSON_Parse(options ? options : "{}")) || !cJSON_IsObject(w->options))
        return FAIL(e, NULL, "the options are not a JSON object");
    ParamRead how = {.front = PARAM_FROM_PYTHON};
    ParamsGiven given = {0};
    bool shipped;
    if (slm_params_read_json(&params_train, w->options, &how, p, &given, e) ||
        slm_train_settle(p, &given, w->from, sizeof w->from, e) || slm_regularise_check_options(&p->o, e))
        return -1;
    snprintf(w->stories, sizeof w->stories, "%s", stories);
    snprintf(w->out, sizeof w->out, "%s", out);
    p->stories = w->stories, p->o.out = w->out;
    return slm_data_vocab_path(p->vocab, w->vocab, sizeof w->vocab, &p->vocab, &shipped, e);
}

/* A run of `storylm train STORIES -o OUT` with options, everything before
 * its first step done (the vocabulary learnt, the stories read): the
 * session, or NULL with *answer {"state": "failed", "error", "hint"}. Else
 * *answer is {"state": "running", "steps", "said": [lines]}. Free *answer. */
EMSCRIPTEN_KEEPALIVE TrainWeb *slm_train_web_open(const char *stories, const char *out, const char *options,
                                                  char **answer) {
    Error e = {0};
    TrainWeb *w = calloc(1, sizeof *w);
    if (!w || !(w->points = cJSON_CreateArray()) || !(w->heads = cJSON_CreateArray()) ||
        !(w->said = cJSON_CreateArray())) {
        FAIL(&e, NULL, "out of memory");
        *answer = error_text(&e);
        slm_train_web_close(w);
        return NULL;
    }
    w->cb = (TrainCallbacks){.progress = on_progress, .say = on_say, .ctx = w};
    bool refused;
    int rc = read_params(w, stories, out, options, &e);
    if (!rc) rc = slm_train_file_open(&w->run, &w->p, &w->cb, &refused, &e);
    if (rc) {
        *answer = error_text(&e);
        slm_train_web_close(w);
        return NULL;
    }
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "state", "running");
    cJSON_AddNumberToObject(j, "steps", w->p.o.steps);
    cJSON_AddItemToObject(j, "said", w->said);
    w->said = cJSON_CreateArray();
    *answer = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    return w;
}

/* The run's end: its summary (train --json's) and the server job's message. */
static void add_end(TrainWeb *w, cJSON *j, Error *e) {
    TrainSummary sum;
    int rc = slm_train_file_end(w->run, "storylm", &sum, e);
    const TrainResult *r = &sum.r;
    char msg[256];
    snprintf(msg, sizeof msg, "%s after %d steps: test loss %.4f", r->interrupted ? "stopped" : "done", r->final_step,
             r->test_loss);
    w->ended = rc ? "failed" : r->interrupted ? "stopped" : "done";
    cJSON_AddStringToObject(j, "state", w->ended);
    cJSON_AddStringToObject(j, "message", rc ? e->message : msg);
    if (!rc) cJSON_AddItemToObject(j, "summary", sum.json);
    sum.json = NULL;
    slm_train_summary_free(&sum);
}

/* Steps until `seconds` have passed, at most n (and never past the run's
 * end): {"state": "running" | "done" | "stopped" | "failed", "step",
 * "steps", "points", "heads", "said" (this slice's), "message", and at the
 * end "summary"}. Free the answer. */
EMSCRIPTEN_KEEPALIVE char *slm_train_web_steps(TrainWeb *w, int n, double seconds) {
    Error e = {0};
    double until = slm_clock_seconds() + seconds;
    int rc = 0;
    for (int i = 0; !rc && !w->done && i < n && (i == 0 || slm_clock_seconds() < until); i++)
        rc = slm_train_file_steps(w->run, 1, &w->done, &e);
    cJSON *j = cJSON_CreateObject();
    if (w->ended) { /* asked again after its end: the state alone */
        cJSON_AddStringToObject(j, "state", w->ended);
    } else if (rc) {
        w->ended = "failed";
        cJSON_AddStringToObject(j, "state", "failed");
        cJSON_AddStringToObject(j, "message", e.message);
        if (e.hint[0]) cJSON_AddStringToObject(j, "hint", e.hint);
    } else if (w->done) {
        add_end(w, j, &e);
    } else {
        char msg[128];
        snprintf(msg, sizeof msg, "step %d of %d", w->step, w->p.o.steps);
        cJSON_AddStringToObject(j, "state", "running");
        cJSON_AddStringToObject(j, "message", msg);
    }
    w->done = w->done || rc;
    cJSON_AddNumberToObject(j, "step", w->step);
    cJSON_AddNumberToObject(j, "steps", w->p.o.steps);
    cJSON_AddItemToObject(j, "points", w->points);
    cJSON_AddItemToObject(j, "heads", w->heads);
    cJSON_AddItemToObject(j, "said", w->said);
    w->points = cJSON_CreateArray(), w->heads = cJSON_CreateArray(), w->said = cJSON_CreateArray();
    char *text = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    return text;
}

/* Frees the session (NULL: nothing); its model stays in the file system. */
EMSCRIPTEN_KEEPALIVE void slm_train_web_close(TrainWeb *w) {
    if (!w) return;
    slm_train_file_free(w->run);
    cJSON_Delete(w->options);
    cJSON_Delete(w->points);
    cJSON_Delete(w->heads);
    cJSON_Delete(w->said);
    free(w);
}
