/* The playground's training job: one run at a time, in a thread of its own,
 * with the library's trainer (the same as storylm train). It learns (or
 * reuses) a vocabulary for the stories file, trains from scratch, saves
 * atomically into the server's training folder at every evaluation, and
 * records the loss curve and, at every save, where each head's weight goes
 * by distance back (Secret 1) for the page to draw. */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "server_internal.h"
#include "storylm/checkpoint.h"
#include "storylm/filemap.h"
#include "storylm/fileio.h"
#include "storylm/record.h"
#include "storylm/train.h"
#include "storylm/train_summary.h"
#include "storylm/vocab_train.h"

#define HEADS_STORIES 20 /* test stories the heads' weights are measured on at each save */

struct TrainJob {
    pthread_mutex_t lock; /* everything below but the inputs */
    pthread_t thread;
    int has_thread;
    char dir[PATH_MAX];
    int id;
    const char *state; /* idle running done stopped failed */
    int step, steps, every;
    cJSON *points, *heads;
    char model[PATH_MAX + 64], message[1600];
    volatile sig_atomic_t stop;
    /* the run's inputs, set before its thread starts */
    char stories[PATH_MAX];
    char from[PATH_MAX]; /* the model fine-tuned, "": from scratch */
    uint64_t seed;
    int eval_every;
    double lr;            /* peak learning rate, as given (train's range: 0 is none) */
    const Stories *s;     /* while running */
    StoriesRecord record; /* of the stories file, made while its vocabulary is found: the trainer reads it no more */
    OutputClaims claims;  /* the run's files, claimed when it starts, released when it ends */
};

int train_job_create(TrainJob **out, const char *train_dir, Error *e) {
    TrainJob *j = calloc(1, sizeof *j);
    if (!j) return FAIL(e, NULL, "out of memory");
    pthread_mutex_init(&j->lock, NULL);
    snprintf(j->dir, sizeof j->dir, "%s", train_dir);
    j->state = "idle";
    j->points = cJSON_CreateArray();
    j->heads = cJSON_CreateArray();
    *out = j;
    return 0;
}

static void set_message(TrainJob *j, const char *state, const char *msg) {
    pthread_mutex_lock(&j->lock);
    if (state) j->state = state;
    snprintf(j->message, sizeof j->message, "%.1500s", msg);
    pthread_mutex_unlock(&j->lock);
}

/* slm_hash64 of a mapped file's bytes (what slm_record_of_file records), a
 * slice at a time: a stop is heard, and the pages read go back behind. */
static int map_hash(const FileMap *m, const volatile sig_atomic_t *stop, uint64_t *out, Error *e) {
    const size_t slice = (size_t)16 << 20;
    uint64_t h = SLM_HASH64_BASIS;
    for (size_t at = 0; at < m->len; at += slice) {
        if (*stop) return FAIL(e, "it was asked to stop", "stopped");
        size_t n = m->len - at < slice ? m->len - at : slice;
        h = slm_hash64_more(h, m->data + at, n);
        slm_file_map_drop(m, at, at + n);
    }
    *out = h;
    return 0;
}

/* The stories file's vocabulary: <dir>/<stem>.<hash of its bytes>.vocab.txt,
 * learnt once. Keyed by the bytes, not the name: two files of one name (in
 * two --data-dir folders), or a file changed since, never share one. */
static int job_vocab(TrainJob *j, char **text, Error *e) {
    const char *base = strrchr(j->stories, '/');
    base = base ? base + 1 : j->stories;
    char path[PATH_MAX + 300], stem[256];
    snprintf(stem, sizeof stem, "%.200s", base);
    char *dot = strrchr(stem, '.');
    if (dot && dot != stem) *dot = '\0';
    FileMap map;
    uint64_t hash = 0;
    if (slm_file_map(&map, j->stories, e)) return -1;
    int rc = map_hash(&map, &j->stop, &hash, e);
    j->record =
        (StoriesRecord){.bytes = map.len, .fnv1a64 = hash, .has_sums = true}; /* what slm_record_of_file makes */
    slm_record_set_name(&j->record, j->stories);
    snprintf(path, sizeof path, "%s/%s.%016llx.vocab.txt", j->dir, stem, (unsigned long long)hash);
    size_t len;
    struct stat st;
    /* claimed while it is learnt: another server learning it at once is
     * refused, and a file there is read, never written over */
    FileLock lock = {0};
    if (!rc && slm_file_lock(&lock, path, e)) rc = -1;
    if (!rc && stat(path, &st) == 0) {
        slm_file_unmap(&map);
        slm_file_unlock(&lock);
        return slm_file_read_all(path, 64u << 20, text, &len, e);
    }
    char msg[PATH_MAX + 80];
    snprintf(msg, sizeof msg, "learning a %d-piece vocabulary from %s", VOCAB_DEFAULT_SIZE, j->stories);
    if (!rc) set_message(j, NULL, msg);
    Vocab v = {0};
    VocabStats vs;
    /* a small corpus gets as many pieces as its words give, as storylm train does */
    if (!rc)
        rc = slm_vocab_train_text_until(map.data, map.len, j->stories, VOCAB_DEFAULT_SIZE, true, false, &j->stop, &v,
                                        &vs, e);
    slm_file_unmap(&map);
    if (!rc) rc = slm_train_check_story_count(vs.n_stories, &vs.skips, j->stories, e);
    if (!rc && !(*text = slm_vocab_to_text(&v, &len, e))) rc = -1;
    if (!rc) rc = slm_file_write_new(path, *text, len, e);
    slm_file_unlock(&lock);
    slm_vocab_free(&v);
    return rc;
}

#define RUN_MAX INT_MAX /* the largest run number: a run's number is an int (its id in the status) */

/* N of a file named "runN" or "runN.*", N from 1 to RUN_MAX; 0 for any
 * other name (a number of more digits is no run's, never wrapped). */
static long long run_number(const char *name) {
    if (strncmp(name, "run", 3) != 0) return 0;
    const char *c = name + 3;
    long long n = 0;
    for (; *c >= '0' && *c <= '9'; c++)
        if ((n = n * 10 + (*c - '0')) > RUN_MAX) return 0;
    return c > name + 3 && (*c == '.' || *c == '\0') ? n : 0;
}

/* The number of the next run: above every runN.* in the folder (left by this
 * server, another or an earlier one, a CLI run, or an upload so named) and
 * every run of this server; when that would pass RUN_MAX, the lowest N that
 * no file has. 0 when out of memory. */
static int next_run(const TrainJob *j) {
    long long last = j->id, files = 0;
    DIR *d = opendir(j->dir);
    for (struct dirent *de; d && (de = readdir(d));) {
        long long n = run_number(de->d_name);
        files += n > 0;
        if (n > last) last = n;
    }
    if (last < RUN_MAX) {
        if (d) closedir(d);
        return (int)last + 1;
    }
    /* at most `files` numbers are taken: one of 1 .. files + 1 is free */
    bool *taken = calloc((size_t)files + 2, 1);
    if (d) rewinddir(d);
    for (struct dirent *de; taken && d && (de = readdir(d));) {
        long long n = run_number(de->d_name);
        if (n <= files + 1) taken[n] = true;
    }
    int n = 1;
    while (taken && taken[n]) n++;
    if (d) closedir(d);
    free(taken);
    return taken ? n : 0;
}

/* The next run's number, its model's path (model, PATH_MAX + 64 bytes) and
 * every file it writes claimed (slm_train_claim_outputs): a number that
 * another server or a CLI run takes meanwhile (its files show) is passed
 * over. 0; 1 when other runs took every number tried; -1 on an error (e). */
static int claim_run(TrainJob *j, int *id, char *model, Error *e) {
    int refused = -1;
    for (int attempt = 0; attempt < 100; attempt++) {
        int n = next_run(j);
        if (n == 0) return FAIL(e, NULL, "out of memory");
        if (n == refused) return -1; /* refused with no file of it there: no other run's, an error */
        snprintf(model, PATH_MAX + 64, "%s/run%d.safetensors", j->dir, n);
        TrainOptions o = slm_train_default_options();
        o.out = model;
        if (slm_train_claim_outputs(NULL, &o, NULL, false, &j->claims, NULL, e) == 0) {
            *id = n;
            return 0;
        }
        refused = n;
    }
    return 1;
}

cJSON *train_heads_point(const char *model, const Stories *s, int step) {
    Model m = {0};
    char *vocab = NULL;
    Metadata meta = {0};
    HeadsResult h = {0};
    cJSON *o = NULL;
    int n = s->n_test < HEADS_STORIES ? s->n_test : HEADS_STORIES;
    if (!slm_checkpoint_load_model(model, &m, &vocab, &meta, NULL) &&
        !slm_probe_heads(&m, s, s->test, n, 1, &h, NULL)) {
        o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "step", step);
        cJSON *mass = cJSON_AddArrayToObject(o, "mass");
        for (int head = 0; head < h.n_heads; head++) {
            cJSON *row = cJSON_CreateArray();
            for (int b = 0; b < HEAD_BINS; b++)
                cJSON_AddItemToArray(row, cJSON_CreateNumber(h.mass[head * HEAD_BINS + b]));
            cJSON_AddItemToArray(mass, row);
        }
    }
    slm_heads_result_free(&h);
    slm_model_free(&m);
    free(vocab);
    slm_metadata_free(&meta);
    return o;
}

cJSON *train_loss_point(const TrainProgress *p) {
    cJSON *pt = cJSON_CreateObject();
    cJSON_AddNumberToObject(pt, "step", p->step);
    cJSON_AddItemToObject(pt, "train_loss", slm_json_number_or_null(p->train_loss));
    cJSON_AddItemToObject(pt, "test_loss", slm_json_number_or_null(p->evaluated ? p->test_loss : NAN));
    if (p->evaluated && isfinite(p->test_loss_per_char)) /* nats per character of the test stories */
        cJSON_AddNumberToObject(pt, "test_loss_per_char", p->test_loss_per_char);
    return pt;
}

static void on_progress(const TrainProgress *p, void *ctx) {
    TrainJob *j = ctx;
    cJSON *heads =
        p->saved ? train_heads_point(j->model, j->s, p->step) : NULL; /* outside the lock: it reads the file */
    pthread_mutex_lock(&j->lock);
    j->step = p->step;
    if (p->evaluated || p->step % j->every == 0 || p->step == p->steps) /* at most about 500 points */
        cJSON_AddItemToArray(j->points, train_loss_point(p));
    if (heads) cJSON_AddItemToArray(j->heads, heads);
    snprintf(j->message, sizeof j->message, "step %d of %d, loss %.4f", p->step, p->steps, p->train_loss);
    pthread_mutex_unlock(&j->lock);
}

/* Fine-tuning: the base model and its vocabulary, and the stories' record
 * (job_vocab makes it when a vocabulary is learnt). */
static int job_base(TrainJob *j, Model *base, char **vocab, Error *e) {
    Metadata md = {0};
    set_message(j, NULL, "reading the model to fine-tune");
    int rc = slm_checkpoint_load_model(j->from, base, vocab, &md, e) || slm_record_of_file(&j->record, j->stories, e);
    slm_metadata_free(&md);
    return rc ? -1 : 0;
}

/* Steps left to the corpus as storylm train fits them; evaluations about 20
 * in the run, at most 200 (bounded time and memory). Said in the status. */
static void job_schedule(TrainJob *j, TrainOptions *o, const Stories *s) {
    if (o->steps == 0) o->steps = slm_train_default_steps(s->n_train, o->batch);
    int every = o->eval_every ? o->eval_every : o->steps >= 20 ? o->steps / 20 : 1;
    o->eval_every = every < (o->steps + 199) / 200 ? (o->steps + 199) / 200 : every;
    pthread_mutex_lock(&j->lock);
    j->steps = o->steps;
    j->every = o->steps > 500 ? o->steps / 500 : 1;
    pthread_mutex_unlock(&j->lock);
}

static int job_run(TrainJob *j, Error *e) {
    char *vocab = NULL;
    Tokenizer tok = {0};
    Stories s = {0};
    Model base = {0};
    StoriesOptions so = slm_stories_default_options();
    so.stop = &j->stop; /* a stop while the stories are tokenized is heard too */
    int rc = (j->from[0] ? job_base(j, &base, &vocab, e) : job_vocab(j, &vocab, e)) ||
             slm_tokenizer_from_text(&tok, vocab, strlen(vocab), 0, e);
    if (!rc) set_message(j, NULL, "reading the stories");
    if (!rc) rc = slm_stories_load(&s, j->stories, &tok, &so, e);
    if (!rc) rc = slm_train_check_story_count(s.n_stories, &s.skips, j->stories, e);
    TrainOptions o = slm_train_default_options();
    o.steps = j->steps;
    o.seed = j->seed;
    o.eval_every = j->eval_every;
    if (!rc) job_schedule(j, &o, &s);
    if (j->from[0]) { /* the base's architecture, as train --from keeps it */
        const char *slash = strrchr(j->from, '/');
        o.from = &base, o.from_name = slash ? slash + 1 : j->from;
        o.arch = base.cfg.arch, o.layers = slm_model_layers(&base.cfg);
    }
    o.lr = j->lr;
    o.threads = 1; /* the other core answers the page */
    o.out = j->model;
    o.data_path = j->stories;
    o.data_record = &j->record;
    o.vocab_text = vocab;
    o.vocab_size = tok.size;
    o.stop = &j->stop;
    if (!rc && s.n_test > 0) rc = slm_stories_text_bytes(&s, j->stories, &tok, s.test, s.n_test, &o.test_bytes, e);
    TrainResult res;
    j->s = &s;
    if (!rc) rc = slm_train_run(&s, &o, on_progress, j, &res, e);
    j->s = NULL;
    slm_outputs_release(&j->claims); /* before the page hears it ended */
    if (!rc) {
        char msg[256];
        snprintf(msg, sizeof msg, "%s after %d steps: test loss %.4f", res.interrupted ? "stopped" : "done",
                 res.final_step, res.test_loss);
        set_message(j, res.interrupted ? "stopped" : "done", msg);
    }
    slm_stories_free(&s);
    if (tok.pieces) slm_tokenizer_free(&tok);
    if (j->from[0]) slm_model_free(&base);
    free(vocab);
    return rc;
}

static void *job_thread(void *arg) {
    TrainJob *j = arg;
    slm_model_threads_setup(1);
    Error e = {0};
    int rc = job_run(j, &e);
    if (rc && j->stop) {
        pthread_mutex_lock(&j->lock);
        j->model[0] = '\0'; /* none was saved: the page offers none */
        pthread_mutex_unlock(&j->lock);
        set_message(j, "stopped", "stopped before training began: no model was saved");
    } else if (rc) {
        char msg[1600];
        snprintf(msg, sizeof msg, "%s%s%s", e.message, e.hint[0] ? " (" : "", e.hint[0] ? e.hint : "");
        if (e.hint[0]) strncat(msg, ")", sizeof msg - strlen(msg) - 1);
        set_message(j, "failed", msg);
    }
    return NULL;
}

int train_job_start(TrainJob *j, const char *stories, const char *from, int steps, uint64_t seed, int eval_every,
                    double lr, int *id, Error *e) {
    pthread_mutex_lock(&j->lock);
    if (strcmp(j->state, "running") == 0) {
        pthread_mutex_unlock(&j->lock);
        return 1;
    }
    if (j->has_thread) pthread_join(j->thread, NULL); /* the last run's thread has ended */
    j->has_thread = 0;
    char model[PATH_MAX + 64];
    int claimed = claim_run(j, id, model, e);
    if (claimed) {
        pthread_mutex_unlock(&j->lock);
        return claimed > 0 ? 2 : -1;
    }
    j->id = *id;
    j->state = "running";
    j->step = 0;
    j->steps = steps; /* 0 until the stories are read and the steps fitted to them */
    j->every = steps > 500 ? steps / 500 : 1;
    j->stop = 0;
    cJSON_Delete(j->points);
    cJSON_Delete(j->heads);
    j->points = cJSON_CreateArray();
    j->heads = cJSON_CreateArray();
    snprintf(j->model, sizeof j->model, "%s", model);
    snprintf(j->message, sizeof j->message, "starting");
    snprintf(j->stories, sizeof j->stories, "%s", stories);
    snprintf(j->from, sizeof j->from, "%s", from ? from : "");
    j->seed = seed;
    j->eval_every = eval_every;
    j->lr = lr;
    int rc = pthread_create(&j->thread, NULL, job_thread, j);
    j->has_thread = rc == 0;
    if (rc) j->state = "failed";
    if (rc) slm_outputs_release(&j->claims);
    pthread_mutex_unlock(&j->lock);
    return rc ? FAIL(e, NULL, "cannot start the training thread") : 0;
}

cJSON *train_job_status(TrainJob *j) {
    pthread_mutex_lock(&j->lock);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "state", j->state);
    cJSON_AddNumberToObject(o, "id", j->id);
    cJSON_AddNumberToObject(o, "step", j->step);
    cJSON_AddNumberToObject(o, "steps", j->steps);
    cJSON_AddItemToObject(o, "points", cJSON_Duplicate(j->points, 1));
    cJSON_AddItemToObject(o, "heads", cJSON_Duplicate(j->heads, 1));
    cJSON_AddStringToObject(o, "model", j->id ? j->model : "");
    cJSON_AddStringToObject(o, "message", j->message);
    pthread_mutex_unlock(&j->lock);
    return o;
}

int train_job_stop(TrainJob *j) {
    pthread_mutex_lock(&j->lock);
    int running = strcmp(j->state, "running") == 0;
    if (running) j->stop = 1; /* the trainer's own flag: it saves, then stops */
    pthread_mutex_unlock(&j->lock);
    return running;
}

void train_job_free(TrainJob *j) {
    train_job_stop(j);
    if (j->has_thread) pthread_join(j->thread, NULL);
    cJSON_Delete(j->points);
    cJSON_Delete(j->heads);
    pthread_mutex_destroy(&j->lock);
    free(j);
}
