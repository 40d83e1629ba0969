/* storylm.train in process: see include/storylm/pyapi_train.h. */
#include "storylm/pyapi_train.h"

#include <cjson/cJSON.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "storylm/data_files.h"
#include "storylm/regularise.h"
#include "storylm/train_file.h"
#include "storylm/train_summary.h"

typedef struct PyTrain {
    PyTrainEventFn on_event;
    PyTrainStopFn stop;
    void *ctx;
} PyTrain;

static int on_stop(void *ctx) {
    PyTrain *t = ctx;
    return t->stop ? t->stop(t->ctx) : 0;
}

static void add_number(cJSON *j, const char *key, double x) {
    cJSON_AddItemToObject(j, key, slm_json_number_or_null(x));
}

/* A step's numbers as a JSON object to the caller. */
static void on_progress(const TrainProgress *p, void *ctx) {
    PyTrain *t = ctx;
    if (!t->on_event) return;
    cJSON *j = cJSON_CreateObject();
    if (!j) return;
    cJSON_AddNumberToObject(j, "step", p->step);
    cJSON_AddNumberToObject(j, "steps", p->steps);
    cJSON_AddNumberToObject(j, "start_step", p->start_step);
    add_number(j, "loss", p->train_loss);
    add_number(j, "test_loss", p->test_loss);
    add_number(j, "test_accuracy", p->evaluated ? p->test_accuracy : NAN);
    add_number(j, "test_loss_per_char", p->test_loss_per_char);
    add_number(j, "ema_test_loss", p->ema_test_loss);
    add_number(j, "lr", p->lr);
    add_number(j, "tokens_per_s", p->tokens_per_s);
    add_number(j, "elapsed_s", p->elapsed_s);
    add_number(j, "eta_s", p->eta_s);
    cJSON_AddBoolToObject(j, "evaluated", p->evaluated);
    cJSON_AddBoolToObject(j, "saved", p->saved);
    char *text = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    if (text) t->on_event(t->ctx, PY_TRAIN_PROGRESS, text);
    free(text);
}

static void on_say(const char *text, void *ctx) {
    PyTrain *t = ctx;
    if (t->on_event) t->on_event(t->ctx, PY_TRAIN_SAY, text);
}

/* options into p (train's defaults first, threads one per core), settled as the command line settles its flags. */
static int read_params(TrainParams *p, const char *options, cJSON **json, char *from, size_t size, Error *e) {
    slm_train_params_init(p, 0);
    *json = cJSON_Parse(options ? options : "{}");
    if (!*json) return FAIL(e, NULL, "the options are not a JSON object");
    ParamRead how = {.front = PARAM_FROM_PYTHON};
    ParamsGiven given = {0};
    if (slm_params_read_json(&params_train, *json, &how, p, &given, e)) return -1;
    return slm_train_settle(p, &given, from, size, e) ? -1 : slm_regularise_check_options(&p->o, e);
}

/* The run's summary and whether it saved nothing, as the text slm_py_train returns. */
static char *result_text(TrainSummary *sum, Error *e) {
    cJSON *j = cJSON_CreateObject();
    if (j) cJSON_AddItemToObject(j, "summary", sum->json);
    if (j) sum->json = NULL;
    if (j) cJSON_AddBoolToObject(j, "nothing_saved", sum->r.nothing_saved);
    char *text = j ? cJSON_PrintUnformatted(j) : NULL;
    cJSON_Delete(j);
    if (!text) FAIL(e, NULL, "out of memory making JSON");
    return text;
}

char *slm_py_train(const char *stories, const char *out, const char *options, PyTrainEventFn on_event,
                   PyTrainStopFn stop, void *ctx, Error *e) {
    TrainParams p;
    cJSON *json = NULL;
    char from[PATH_MAX], vocab[PATH_MAX];
    PyTrain t = {.on_event = on_event, .stop = stop, .ctx = ctx};
    TrainSummary sum = {0};
    char *result = NULL;
    bool shipped = false;
    int rc = read_params(&p, options, &json, from, sizeof from, e);
    p.stories = stories, p.o.out = out;
    const char *given = p.vocab;
    if (!rc) rc = slm_data_vocab_path(given, vocab, sizeof vocab, &p.vocab, &shipped, e);
    if (!rc && shipped && on_event) { /* said as the command line says it */
        char said[2 * PATH_MAX + 64];
        snprintf(said, sizeof said, "storylm: --vocab %s: the shipped vocabulary %s", given, p.vocab);
        on_event(ctx, PY_TRAIN_SAY, said);
    }
    TrainCallbacks cb = {.progress = on_progress, .say = on_say, .stop = on_stop, .ctx = &t};
    if (!rc) rc = slm_train_file(&p, "storylm", &cb, &sum, e);
    if (!rc) result = result_text(&sum, e);
    slm_train_summary_free(&sum);
    cJSON_Delete(json);
    return result;
}
