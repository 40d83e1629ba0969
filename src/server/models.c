/* Which model files a client may name, and the cache of loaded ones. */
#define _XOPEN_SOURCE 700 /* realpath */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "server_internal.h"
#include "storylm/checkpoint.h"
#include "storylm/fileio.h"
#include "storylm/safetensors.h"

/* The default model's folder and its snapshots/ listed too: an installed
 * storylm run from any folder lists every shipped model beside the default
 * (share/storylm/models), not the default alone. */
static void model_dirs_add_home(ModelDirs *d, const char *default_model) {
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", default_model);
    char *slash = strrchr(dir, '/');
    if (!slash) return; /* in the working directory: listed already */
    slash[1] = '\0';
    for (int k = 0; k < 2 && d->n < 6; k++) {
        if (k == 1) strncat(dir, "snapshots/", sizeof dir - strlen(dir) - 1);
        char *real = realpath(dir, NULL);
        int known = !real;
        for (int i = 0; real && i < d->n; i++) known = known || strcmp(d->real[i], real) == 0;
        if (!known) {
            snprintf(d->prefix[d->n], PATH_MAX, "%s", dir);
            snprintf(d->real[d->n], PATH_MAX, "%s", real);
            d->n++;
        }
        free(real);
    }
}

int model_dirs_init(ModelDirs *d, const char *train_dir, const char *default_model, Error *e) {
    *d = (ModelDirs){0};
    char train_prefix[PATH_MAX];
    snprintf(train_prefix, sizeof train_prefix, "%s/", train_dir);
    const char *prefixes[4] = {"", "models/", "models/snapshots/", train_prefix};
    for (int i = 0; i < 4; i++) {
        char *real = realpath(prefixes[i][0] ? prefixes[i] : ".", NULL);
        if (!real) continue; /* a folder that is not there lists nothing */
        snprintf(d->prefix[d->n], PATH_MAX, "%s", prefixes[i]);
        snprintf(d->real[d->n], PATH_MAX, "%s", real);
        free(real);
        d->n++;
    }
    if (!slm_data_file_exists(default_model))
        return FAIL(e, "train one with 'storylm train STORIES', or give --model FILE", "no model file '%s'",
                    default_model);
    model_dirs_add_home(d, default_model);
    char listed[PATH_MAX];
    if (model_resolve(d, default_model, listed, sizeof listed) == 0) /* "models/x" rather than "/abs/models/x" */
        snprintf(d->default_model, sizeof d->default_model, "%s", listed);
    else
        snprintf(d->default_model, sizeof d->default_model, "%s", default_model);
    return 0;
}

static int is_model_name(const char *name) {
    size_t n = strlen(name), ext = strlen(".safetensors");
    return n > ext && strcmp(name + n - ext, ".safetensors") == 0 && !strstr(name, ".adam.") && name[0] != '.';
}

int model_resolve(const ModelDirs *d, const char *given, char *out, size_t size) {
    char *real = realpath(given, NULL);
    if (!real) return -1;
    int found = -1;
    char *def = d->default_model[0] ? realpath(d->default_model, NULL) : NULL;
    if (def && strcmp(def, real) == 0) {
        snprintf(out, size, "%s", d->default_model);
        found = 0;
    }
    char *slash = strrchr(real, '/');
    if (found && slash && is_model_name(slash + 1) && slm_data_file_exists(real)) {
        *slash = '\0';
        for (int i = 0; i < d->n && found; i++)
            if (strcmp(d->real[i], real[0] ? real : "/") == 0) {
                snprintf(out, size, "%s%s", d->prefix[i], slash + 1);
                found = 0;
            }
    }
    free(def);
    free(real);
    return found;
}

/* The page draws a model's heads from these, never from fixed numbers:
 * "layers" (1 unless the header says), "heads" a layer (0: no heads, as
 * window8) and each head's "value_dim" and the "hidden_dim"; the sizes of
 * its chapter's table ("row_dim", "key_dim", "window", "context") and how it
 * scores ("pos", "score": the chapter's when the header is older). */
static void model_item_shape(cJSON *o, const Metadata *md, const char *arch) {
    const char *keys[][2] = {{"layers", "layers"},         {"heads", "n_heads"},   {"value_dim", "value_dim"},
                             {"hidden_dim", "hidden_dim"}, {"row_dim", "row_dim"}, {"key_dim", "key_dim"},
                             {"window", "window"},         {"context", "context"}};
    int headless = 0; /* an architecture without heads (window8) keeps in its header the sizes of heads it has not */
    for (int i = 0; i < slm_arch_count(); i++)
        if (strcmp(arch, slm_arch_at(i)->name) == 0) {
            ModelConfig d = slm_arch_at(i)->config_default(2);
            headless = slm_arch_at(i)->heads_per_layer(&d) == 0;
        }
    for (int i = 0; i < 8; i++) {
        const char *v = slm_metadata_get(md, keys[i][1]);
        int none = i == 1 && headless;
        cJSON_AddNumberToObject(o, keys[i][0], none ? 0 : v ? atof(v) : i == 0 ? 1 : 0);
    }
    const char *pos = slm_metadata_get(md, "pos"), *score = slm_metadata_get(md, "score");
    cJSON_AddStringToObject(o, "pos", pos ? pos : "distance");
    cJSON_AddStringToObject(o, "score", score ? score : "scaled-dot");
}

/* What the page says of a model, from its architecture (the registry's), never
 * from its name: "summary" (the architecture's line of --arch's help),
 * "description" (info's architecture line: its blocks or layers, heads and
 * sizes), "readout" ("tanh": the chapter's hidden layer reads the heads;
 * "residual": blocks write into a stream read through a final LayerNorm),
 * "d_model" and "d_mlp" (the width of a block's MLP, 0 when it has none). */
static void model_item_kind(cJSON *o, const SafeTensorsFile *st) {
    ModelConfig c;
    if (slm_checkpoint_read_config(st, &c, NULL)) return; /* the shape keys above still draw it */
    char lines[1024] = "";
    c.arch->describe(&c, lines, sizeof lines);
    const char *d = strncmp(lines, "architecture", 12) == 0 ? lines + 12 : lines;
    d += strspn(d, " ");
    int residual = c.arch->readout == READOUT_RESIDUAL;
    char first[512];
    snprintf(first, sizeof first, "%.*s", (int)strcspn(d, "\n"), d); /* its first line */
    cJSON_AddStringToObject(o, "summary", c.arch->summary);
    cJSON_AddStringToObject(o, "description", first);
    cJSON_AddStringToObject(o, "readout", residual ? "residual" : "tanh");
    cJSON_AddNumberToObject(o, "d_model", c.row_dim);
    cJSON_AddNumberToObject(o, "d_mlp", residual ? c.hidden_dim : 0);
}

/* {"name","path","arch","params","vocab_size","vocab_hash", shape, kind} from the header alone, or NULL
 * when the file is not a storylm model. */
static cJSON *model_item(const char *path, const char *name) {
    SafeTensorsFile st;
    if (slm_safetensors_open(&st, path, NULL)) return NULL;
    const char *format = slm_metadata_get(&st.metadata, "format"), *arch = slm_metadata_get(&st.metadata, "arch"),
               *vocab = slm_metadata_get(&st.metadata, "vocab_size"), *pieces = slm_metadata_get(&st.metadata, "vocab");
    cJSON *o = NULL;
    if (format && strcmp(format, CHECKPOINT_FORMAT) == 0 && arch) {
        double params = 0;
        for (int i = 0; i < st.n_tensors; i++) params += (double)slm_safetensors_count(&st.tensors[i]);
        o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "name", name);
        cJSON_AddStringToObject(o, "path", path);
        cJSON_AddStringToObject(o, "arch", arch);
        cJSON_AddNumberToObject(o, "params", params);
        cJSON_AddNumberToObject(o, "vocab_size", vocab ? atof(vocab) : 0);
        if (pieces) { /* models compare guesses only with the same pieces (the page's baselines) */
            char hex[17];
            snprintf(hex, sizeof hex, "%016llx", (unsigned long long)slm_hash64(pieces, strlen(pieces), 0));
            cJSON_AddStringToObject(o, "vocab_hash", hex);
        }
        model_item_shape(o, &st.metadata, arch);
        model_item_kind(o, &st);
        /* the training run it comes from and its step: Secret 1 compares snapshots of the same run */
        const char *run = slm_metadata_get(&st.metadata, "trained_run"), *step = slm_metadata_get(&st.metadata, "step");
        if (run) cJSON_AddStringToObject(o, "run", run);
        if (step) cJSON_AddNumberToObject(o, "step", atof(step));
        char sae[PATH_MAX]; /* an SAE beside it: the page's Features panel */
        cJSON_AddBoolToObject(o, "sae", model_sae_dir(path, sae, sizeof sae) == 0);
    }
    slm_safetensors_close(&st);
    return o;
}

static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* The model files of one folder, sorted, into models: those a client may
 * name (a symlink out of the listed folders is left out). */
static void list_dir(const ModelDirs *d, const char *prefix, cJSON *models, const char *skip) {
    DIR *dir = opendir(prefix[0] ? prefix : ".");
    if (!dir) return;
    char *names[512];
    int n = 0;
    for (struct dirent *de; (de = readdir(dir)) && n < 512;)
        if (is_model_name(de->d_name)) names[n++] = strdup(de->d_name);
    closedir(dir);
    qsort(names, (size_t)n, sizeof *names, by_name);
    for (int i = 0; i < n; i++) {
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s%s", prefix, names[i] ? names[i] : "");
        char listed[PATH_MAX];
        int usable = names[i] && strcmp(path, skip) != 0 && model_resolve(d, path, listed, sizeof listed) == 0 &&
                     strcmp(listed, path) == 0;
        cJSON *o = usable ? model_item(path, names[i]) : NULL;
        if (o) cJSON_AddItemToArray(models, o);
        free(names[i]);
    }
}

cJSON *model_list(const ModelDirs *d) {
    cJSON *j = cJSON_CreateObject(), *models = cJSON_AddArrayToObject(j, "models");
    const char *slash = strrchr(d->default_model, '/');
    cJSON *def = model_item(d->default_model, slash ? slash + 1 : d->default_model);
    if (def) cJSON_AddItemToArray(models, def); /* first, wherever it lives */
    for (int i = 0; i < d->n; i++) list_dir(d, d->prefix[i], models, d->default_model);
    cJSON_AddStringToObject(j, "default", d->default_model);
    return j;
}

/* ---- the cache ------------------------------------------------------------------ */

int cache_init(ModelCache *c, int cap) {
    *c = (ModelCache){.cap = cap < 1 ? 1 : cap};
    c->entries = calloc((size_t)c->cap, sizeof *c->entries);
    if (!c->entries) return -1;
    pthread_mutex_init(&c->lock, NULL);
    pthread_mutex_init(&c->stories_lock, NULL);
    return 0;
}

static void entry_free(ModelEntry *m) {
    entry_runs_free(m); /* before the model their runners point to */
    pthread_mutex_destroy(&m->runs_lock);
    slm_probe_session_close(&m->ps);
    slm_names_free(&m->gen_names);
    free(m->mean[0]), free(m->mean[1]);
    free(m->kept_json);
    free(m->kept_key);
    pthread_mutex_destroy(&m->lock);
    free(m);
}

void cache_free(ModelCache *c) {
    for (int i = 0; i < c->n; i++) entry_free(c->entries[i]);
    free(c->entries);
    pthread_mutex_destroy(&c->lock);
    pthread_mutex_destroy(&c->stories_lock);
    *c = (ModelCache){0};
}

/* What tells a file's versions apart: a save renames a new file in (another
 * inode); one written in place within the same second with the same size
 * still has another mtime in nanoseconds. */
static void file_stamp(const struct stat *st, long long stamp[5]) {
    stamp[0] = (long long)st->st_dev;
    stamp[1] = (long long)st->st_ino;
    stamp[2] = (long long)st->st_size;
    stamp[3] = (long long)st->st_mtim.tv_sec;
    stamp[4] = (long long)st->st_mtim.tv_nsec;
}

static ModelEntry *entry_load(const char *path, const struct stat *st, Error *e) {
    ModelEntry *m = calloc(1, sizeof *m);
    if (!m) return FAIL(e, NULL, "out of memory loading '%s'", path), NULL;
    snprintf(m->path, sizeof m->path, "%s", path);
    ProbeOptions po = {.model = m->path, .n_test = STORIES_DEFAULT_TEST}; /* no ablation: each request sets its own */
    if (slm_probe_session_open(&m->ps, &po, "serve", NULL, 0, e)) {
        free(m);
        return NULL;
    }
    file_stamp(st, m->stamp);
    pthread_mutex_init(&m->lock, NULL);
    pthread_mutex_init(&m->runs_lock, NULL);
    return m;
}

/* Drops entry i when no request holds it. */
static void cache_drop(ModelCache *c, int i) {
    ModelEntry *m = c->entries[i];
    c->entries[i] = c->entries[--c->n];
    if (m->refs == 0)
        entry_free(m);
    else
        m->refs = -m->refs; /* orphaned: the last release frees it */
}

int cache_acquire(ModelCache *c, const char *path, ModelEntry **out, Error *e) {
    struct stat st;
    if (stat(path, &st) != 0) return FAIL(e, "pick a model from /api/models", "no model file '%s'", path);
    pthread_mutex_lock(&c->lock);
    for (int i = 0; i < c->n; i++) {
        ModelEntry *m = c->entries[i];
        if (strcmp(m->path, path) != 0) continue;
        long long stamp[5];
        file_stamp(&st, stamp);
        if (memcmp(stamp, m->stamp, sizeof stamp) == 0) {
            m->refs++;
            m->used = ++c->clock;
            pthread_mutex_unlock(&c->lock);
            *out = m;
            return 0;
        }
        cache_drop(c, i); /* rewritten (a training run saved it again) */
        break;
    }
    pthread_mutex_unlock(&c->lock);
    /* loaded outside the lock: other requests go on meanwhile (two may load the same file; one is kept) */
    ModelEntry *m = entry_load(path, &st, e);
    if (!m) return -1;
    pthread_mutex_lock(&c->lock);
    if (c->n == c->cap) {
        int oldest = 0;
        for (int i = 1; i < c->n; i++)
            if (c->entries[i]->used < c->entries[oldest]->used) oldest = i;
        cache_drop(c, oldest);
    }
    m->refs = 1;
    m->used = ++c->clock;
    c->entries[c->n++] = m;
    pthread_mutex_unlock(&c->lock);
    *out = m;
    return 0;
}

void cache_release(ModelCache *c, ModelEntry *m) {
    pthread_mutex_lock(&c->lock);
    int orphan = m->refs < 0;
    if (orphan)
        m->refs++;
    else
        m->refs--;
    int last = orphan && m->refs == 0;
    pthread_mutex_unlock(&c->lock);
    if (last) entry_free(m);
}

int cache_read_stories(ModelCache *c, ProbeSession *ps, int flags, Error *e) {
    pthread_mutex_lock(&c->stories_lock);
    int rc = slm_probe_session_stories(ps, STORIES_DEFAULT_TEST, flags, e);
    pthread_mutex_unlock(&c->stories_lock);
    return rc;
}

int entry_mean(ModelEntry *m, Kernels k, const char *stories_path, Error *e) {
    pthread_mutex_lock(&m->lock);
    int rc = 0;
    if (!m->mean[k]) {
        const ModelConfig *c = &m->ps.lm.model.cfg;
        Model on = m->ps.lm.model; /* the shared weights, the request's kernels */
        on.kernels = k;
        float *mean = xmalloc((size_t)slm_model_heads(c) * c->value_dim * sizeof(float), e); /* every layer's heads */
        rc = mean ? slm_probe_head_means(&on, &m->ps.stories, m->ps.stories.test, m->ps.stories.n_test, mean, e) : -1;
        /* the CLI's warning when these are not the stories the model was trained on (a file of its
         * held-out stories is not that file, but it is those stories) */
        (void)stories_path;
        if (!rc && !m->teach_all_test &&
            !slm_ablation_mean_stories(&m->ps.lm, m->teach, "mean ablation", m->mean_warning, sizeof m->mean_warning,
                                       e))
            rc = -1;
        if (rc)
            free(mean);
        else
            m->mean[k] = mean;
    }
    pthread_mutex_unlock(&m->lock);
    return rc;
}
