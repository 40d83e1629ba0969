/* A stories file sent from the page (POST /api/upload?name=FILE, the text as
 * body) stored in the training folder for /api/train, and a listed model file
 * sent back whole (GET /api/download?model=PATH). */
#define _XOPEN_SOURCE 700 /* realpath */
#include <fcntl.h>
#include <microhttpd.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "server_internal.h"
#include "storylm/fileio.h"
#include "storylm/stories.h"
#include "storylm/text.h"

/* The file name an upload is stored under: the given name's last part kept
 * to letters, digits, '-', '_' and '.', ending in .txt. A name with a '/'
 * or "..", or nothing left, is refused (-1): the file lands in the training
 * folder and nowhere else. A name ending in .vocab.txt is refused (-2): the
 * training runs keep the vocabularies they learn under such names there, and
 * would take the upload for one. */
static int upload_name(const char *given, char *out, size_t size) {
    if (!given || !given[0] || strchr(given, '/') || strchr(given, '\\') || strstr(given, "..") || given[0] == '.')
        return -1;
    size_t n = 0;
    for (const char *c = given; *c && n + 5 < size && n < 100; c++) {
        int ok = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || strchr("-_.", *c);
        out[n++] = ok ? *c : '_';
    }
    out[n] = '\0';
    if (n < 4 || strcmp(out + n - 4, ".txt") != 0) strcat(out, ".txt");
    n = strlen(out);
    return n >= 10 && strcmp(out + n - 10, ".vocab.txt") == 0 ? -2 : 0;
}

/* Name k of an upload called name: dir/name, then dir/stem-2.txt, ... */
static void candidate(const char *dir, const char *name, int k, char *path, size_t size) {
    if (k == 1)
        snprintf(path, size, "%s/%s", dir, name);
    else
        snprintf(path, size, "%s/%.*s-%d.txt", dir, (int)(strlen(name) - 4), name, k);
}

static int is_folder(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Saves data as train_dir/name, or train_dir/stem-2.txt .. when taken (by a
 * file or a folder): each name is tried with an exclusive create
 * (slm_atomic_commit_new), so an upload never replaces a file, not even one
 * of an upload of the same name at the same moment. 0 with the name in path;
 * 1 when every name is taken; -1. */
static int save_new(const char *dir, const char *name, const char *data, size_t len, char *path, size_t size,
                    Error *e) {
    AtomicFile a;
    int k = 1;
    for (candidate(dir, name, k, path, size); is_folder(path) && k < 1000;) /* the temporary file goes beside a file */
        candidate(dir, name, ++k, path, size);
    if (slm_atomic_open(&a, path, e)) return -1;
    int rc = slm_atomic_write(&a, data, len, e) ? -1 : 1;
    while (rc == 1 && k <= 1000)
        if ((rc = slm_atomic_commit_new(&a, path, e)) == 1) candidate(dir, name, ++k, path, size);
    if (rc && a.temp_path) slm_atomic_abort(&a);
    return rc;
}

static int training(Server *s) {
    cJSON *st = train_job_status(s->train);
    const cJSON *state = cJSON_GetObjectItemCaseSensitive(st, "state");
    int running = cJSON_IsString(state) && strcmp(state->valuestring, "running") == 0;
    cJSON_Delete(st);
    return running;
}

/* The stories' tokens with the default model's vocabulary (a model trained
 * on them learns its own, of about as many tokens). */
static long long count_tokens(Server *s, const char *text, const StorySpan *spans, int n, Error *e) {
    ModelEntry *m;
    if (cache_acquire(&s->cache, s->dirs.default_model, &m, e)) return -1;
    long long tokens = 0;
    IntVec ids = {0};
    for (int i = 0; i < n && tokens >= 0; i++) {
        ids.len = 0;
        if (slm_tokenizer_encode(&m->ps.lm.tokenizer, text + spans[i].offset, spans[i].len, &ids, e))
            tokens = -1;
        else
            tokens += (long long)ids.len + 2; /* [EOS] at both ends, as storylm stories counts */
    }
    slm_intvec_free(&ids);
    cache_release(&s->cache, m);
    return tokens;
}

/* The query of an upload (?name=FILE.txt) and of a download (?model=PATH). */
typedef struct FileQuery {
    const char *name, *model;
} FileQuery;
static const Param upload_param[] = {
    {.name = "name", .type = PARAM_STRING, .offset = offsetof(FileQuery, name), .help = "the file's name, FILE.txt"}};
static const ParamTable upload_fields = {"upload", upload_param, PARAMS_COUNT(upload_param)};
static const Param download_param[] = {
    {.name = "model", .type = PARAM_STRING, .offset = offsetof(FileQuery, model), .help = "a model /api/models lists"}};
static const ParamTable download_fields = {"download", download_param, PARAMS_COUNT(download_param)};

int api_upload(Server *s, const cJSON *query, const char *data, size_t len, Reply *r) {
    char name[128], path[PATH_MAX];
    FileQuery q = {0};
    if (request_read(&upload_fields, query, &q, NULL, NULL, 0, r)) return r->status;
    const char *given = q.name;
    int named = upload_name(given, name, sizeof name);
    if (named == -2)
        return reply_error(r, 400, "a name ending in .vocab.txt is kept for the vocabularies training runs learn",
                           "give the stories another name, like /api/upload?name=my-stories.txt");
    if (named)
        return reply_error(r, 400, "give ?name=FILE.txt: a file name without '/' or '..'",
                           "like /api/upload?name=my-stories.txt");
    if (len == 0)
        return reply_error(r, 400, "the file is empty", "send a text file of stories, blank lines between them");
    if (training(s))
        return reply_error(r, 409, "a training run is going on", "upload once it is done, or POST /api/train/stop");
    Error e = {0};
    StorySpan *spans = NULL;
    StorySkips skips = {0};
    int n = 0;
    /* the rules of storylm stories: the same reader, its checks first */
    if (slm_utf8_validate(data, len, name, &e) || slm_stories_split(data, len, name, &spans, &n, &skips, &e)) {
        free(spans);
        return reply_failure(r, 400, &e);
    }
    long long tokens = count_tokens(s, data, spans, n, &e);
    free(spans);
    if (tokens < 0) return reply_failure(r, 500, &e);
    int saved = save_new(s->o.train_dir, name, data, len, path, sizeof path, &e);
    if (saved > 0) return reply_error(r, 409, "too many uploads of that name", "give the file another name");
    if (saved < 0) return reply_failure(r, 500, &e);
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "stories", path);
    cJSON_AddNumberToObject(j, "stories_count", n);
    cJSON_AddNumberToObject(j, "tokens", (double)tokens);
    cJSON_AddNumberToObject(j, "bytes", (double)len);
    return reply_json(r, 201, j);
}

int api_download(Server *s, const cJSON *query, Reply *r) {
    char path[PATH_MAX];
    FileQuery q = {0};
    if (request_read(&download_fields, query, &q, NULL, NULL, 0, r)) return r->status;
    const char *given = q.model;
    if (!given || model_resolve(&s->dirs, given, path, sizeof path) != 0)
        return reply_error(r, 404, "no such model", "name one of the models GET /api/models lists, as ?model=PATH");
    int fd = open(path, O_RDONLY);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        if (fd >= 0) close(fd);
        return reply_error(r, 500, "cannot read the model file", NULL);
    }
    r->response = MHD_create_response_from_fd((uint64_t)st.st_size, fd); /* closes fd when sent */
    if (!r->response) {
        close(fd);
        return reply_error(r, 500, "out of memory", NULL);
    }
    const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    char disposition[300];
    snprintf(disposition, sizeof disposition, "attachment; filename=\"%.200s\"", base);
    MHD_add_response_header(r->response, MHD_HTTP_HEADER_CONTENT_TYPE, "application/octet-stream");
    MHD_add_response_header(r->response, "Content-Disposition", disposition);
    r->status = 200;
    return 200;
}
