/* What the server's files share (see server.h for the files). */
#ifndef STORYLM_SERVER_INTERNAL_H
#define STORYLM_SERVER_INTERNAL_H

#include <cjson/cJSON.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>

#include "server.h"
#include "storylm/ablation.h"
#include "storylm/data_files.h"
#include "storylm/params.h"
#include "storylm/probe_session.h"
#include "storylm/sae_features_json.h"
#include "storylm/train.h"
#include "storylm/views.h"

#define SERVER_MAX_BODY (256 * 1024)         /* bytes of a request body */
#define SERVER_MAX_DROPPED (16u << 20)       /* bytes of a body too large read (to answer 413); more: closed */
#define SERVER_MAX_UPLOAD (20 * 1024 * 1024) /* bytes of a stories file sent to /api/upload */
#define SERVER_MAX_TEXT (64 * 1024)          /* bytes of a text or prompt */
#define SERVER_MAX_TOKENS 4096 /* tokens of a text: bounds a request's memory (activations grow with it) */
#define SERVER_MAX_BATCH 16    /* views in one /api/batch */
/* bytes of the texts a request's head fields make of numbers and lists ("ablate": [3, "2:5"]):
 * every head of the largest model, named "8:31" */
#define SERVER_HEADS_TEXT (STORYLM_MAX_ALL_HEADS * 16)

/* The core (every file but server.c, guard.c, metrics.c, sse_http.c, upload.c
 * and openai*.c) answers a request without a socket: what only
 * libmicrohttpd's front end does (a stream sent as it is made, the
 * connections' counts) it reaches through the Server's hooks below. */
struct MHD_Response;
struct MHD_Daemon;
struct Sse;

/* ---- answers ------------------------------------------------------------------ */

/* What a handler answers: a status and a body it owns. */
typedef struct Reply {
    int status;
    char *body;
    const char *mime;
    struct MHD_Response *response; /* set instead of body for streams */
    const char *timing;            /* Server-Timing header, or NULL */
} Reply;

/* {"error": message, "hint": hint}; returns status. */
int reply_error(Reply *r, int status, const char *message, const char *hint);
int reply_failure(Reply *r, int status, const Error *e);
/* Takes j (deleted here). */
int reply_json(Reply *r, int status, cJSON *j);
/* A report as the CLI's --json prints it. */
int reply_report(Reply *r, const Report *rep);

/* ---- models ------------------------------------------------------------------- */

typedef struct KeptRun KeptRun;
#define RUNS_BUDGET ((size_t)16 << 20) /* bytes of kept runs a model (runs.c): three of a 256-token story */

/* A loaded model, shared by requests; the stories and names it reads them
 * with load once, on first need. */
typedef struct ModelEntry {
    char path[PATH_MAX];    /* as listed */
    ProbeSession ps;        /* no ablation: each request sets its own on a copy */
    int stories_loaded;     /* 1: ps.stories and ps.names hold its teaching stories (teach.c) */
    char teach[PATH_MAX];   /* their file (set with stories_loaded) */
    int teach_all_test;     /* 1: a file of held-out stories only, every one a test story */
    float *mean[2];         /* (H, vd) heads' mean outputs over the test stories on each Kernels' passes (indexed
                             * by Kernels, whose two values a request's "kernels" choice holds), or NULL */
    char mean_warning[400]; /* how the server's stories differ from the model's record, as the CLI warns; "" */
    char *kept_json;        /* the last answer of a view marked keep (heads: seconds to make), and */
    char *kept_key;         /* the request that made it (api.c's kept_key) */
    NameList gen_names;     /* the names generation capitalises (slm_view_generate_names), learnt at the first */
    int gen_names_tried;
    long long stamp[5]; /* the file's device, inode, size, mtime s and ns when loaded: a changed file is loaded again */
    unsigned long used;
    int refs;
    pthread_mutex_t lock; /* stories, names and mean */
    KeptRun *runs;        /* texts run whole lately (runs.c) */
    size_t runs_bytes;
    unsigned long runs_clock;
    pthread_mutex_t runs_lock;
} ModelEntry;

typedef struct ModelCache {
    pthread_mutex_t lock;
    pthread_mutex_t stories_lock; /* one stories file read at a time: the token cache's temporary file is per process */
    ModelEntry **entries;
    int n, cap;
    unsigned long clock;
} ModelCache;

/* The folders models are listed from ("", "models/", "models/snapshots/",
 * the training folder) and their real paths. */
typedef struct ModelDirs {
    char prefix[6][PATH_MAX]; /* ., models/, models/snapshots/, the training folder, the default model's folder and its
                                 snapshots/ */
    char real[6][PATH_MAX];
    int n;
    char default_model[PATH_MAX];
} ModelDirs;

int model_dirs_init(ModelDirs *d, const char *train_dir, const char *default_model, Error *e);
/* The listed path of a model file given by a client, or -1 (404) when it is
 * not one of the listed files. */
int model_resolve(const ModelDirs *d, const char *given, char *out, size_t size);
/* {"models": [...], "default": path} */
cJSON *model_list(const ModelDirs *d);

int cache_init(ModelCache *c, int cap);
void cache_free(ModelCache *c);
/* The entry of path (loaded when new or changed); release it after use. */
int cache_acquire(ModelCache *c, const char *path, ModelEntry **out, Error *e);
void cache_release(ModelCache *c, ModelEntry *m);
/* slm_probe_session_stories under the cache's stories lock. */
int cache_read_stories(ModelCache *c, ProbeSession *ps, int flags, Error *e);
/* teach.c: loads m's teaching stories (teach_load; stories_path when it has none) and names once. */
int entry_stories(ModelCache *c, ModelEntry *m, const char *stories_path, Error *e);
/* Each head's mean output over m's test stories on kernels k's passes (the
 * request's: a mean of the other kernels' differs in its last bits), once
 * for each (after entry_stories). */
int entry_mean(ModelEntry *m, Kernels k, const char *stories_path, Error *e);
_Static_assert(KERNELS_BLAS < 2 && KERNELS_PORTABLE < 2, "ModelEntry's mean holds one per Kernels");

/* The run of text through m with ps's ablation (ps: a session on m), whole,
 * from the kept runs or run now and kept: *vt a copy reading it at pos
 * (checked), valid until entry_run_release(held). */
int entry_run(ModelEntry *m, const ProbeSession *ps, const char *text, int pos, ViewText *vt, KeptRun **held, Error *e);
void entry_run_release(ModelEntry *m, KeptRun *held); /* held may be NULL */
void entry_runs_free(ModelEntry *m);

/* ---- the training job --------------------------------------------------------- */

typedef struct TrainJob TrainJob;
int train_job_create(TrainJob **out, const char *train_dir, Error *e);
void train_job_free(TrainJob *j); /* stops a running job first, saving */
/* 0 started (*id), with every file of the run claimed (slm_train_claim_outputs);
 * 1 one is running already; 2 no run number could be claimed (e says why); -1 error.
 * from: the model to fine-tune (its path), or NULL to train from scratch;
 * steps 0: fitted to the corpus as storylm train fits them; eval_every 0:
 * about 20 evaluations in the run. */
int train_job_start(TrainJob *j, const char *stories, const char *from, int steps, uint64_t seed, int eval_every,
                    double lr, int *id, Error *e);
cJSON *train_job_status(TrainJob *j);
/* 1 when a running job was asked to stop. */
int train_job_stop(TrainJob *j);
/* What the page draws of a run, shared with the static site's training
 * (wasm/train_web.c): a point of the loss curve, {"step", "train_loss",
 * "test_loss" (null unless evaluated), "test_loss_per_char"}; and
 * {"step", "mass": [[6 shares] x heads]}, where each head's weight goes by
 * distance back in the model file at path on s's first 20 test stories
 * (NULL when it cannot be read). */
cJSON *train_loss_point(const TrainProgress *p);
cJSON *train_heads_point(const char *model, const Stories *s, int step);

typedef struct Guard Guard; /* guard.h: the connections of libmicrohttpd's front end */

/* ---- the server ----------------------------------------------------------------- */

struct Server {
    ServerOptions o;
    struct MHD_Daemon *daemon;
    Guard *guard;
    int port;
    ModelDirs dirs;
    ModelCache cache;
    TrainJob *train;
    char data_real[SERVER_MAX_DATA_DIRS][PATH_MAX]; /* real paths of the --data-dir folders */
    int n_data;
    char default_stories_real[PATH_MAX];        /* the server's --stories file, always allowed */
    pthread_mutex_t lock;                       /* the stories list and the stream counts below */
    char *stories_json;                         /* /api/stories, built once */
    int streams, streams_done, streams_stopped; /* generations streaming now, finished, cut off by the client */
    struct Metrics *metrics;                    /* --metrics: what GET /metrics says (metrics.c), else NULL */
    /* The front end's part of an answer; NULL (no socket: the page's worker)
     * gathers a stream's events into one body and counts no connections. */
    int (*stream)(struct Sse *sse, Reply *r); /* sends the events as they are made */
    void (*health)(Server *s, cJSON *j);      /* adds /api/health's "connections" */
};

/* The parts of a server every front end has (app.c): the folders, the
 * model cache, the training job; server_core_free undoes it. */
int server_core_init(Server *s, const ServerOptions *o, Error *e);
void server_core_free(Server *s);
/* A request's fields as one JSON object: a POST's body (len bytes, UTF-8, a
 * JSON object) or, for a GET, its query's strings (query: an object of
 * strings, or NULL); NULL with r filled (400) otherwise. openai: the hint
 * shows an OpenAI request's body. */
cJSON *request_fields(int get, const char *data, size_t len, const cJSON *query, int openai, Reply *r);

/* ---- requests ------------------------------------------------------------------- */

/* Reads a request's fields (body, a JSON object) into params (defaults set
 * first) with the route's table t: each field of a parameter a request
 * takes, with its type and range (a request's bound, served_max), its texts
 * at most SERVER_MAX_TEXT bytes (else 413) and other strings PATH_MAX, every
 * string UTF-8; PARAM_SERVED ones left to the session. A field of no
 * parameter, a value of the wrong type or out of range: 400 naming it (and
 * for an unknown field the nearest name and the route's fields), -1.
 * scratch (size) holds texts made while reading ("ablate": [3, 5]). */
int request_read(const ParamTable *t, const cJSON *body, void *params, ParamsGiven *given, char *scratch, size_t size,
                 Reply *r);
/* The same for the few fields of t a reader of its own takes (the
 * session's model and ablation), other fields passed over. */
int request_read_some(const ParamTable *t, const cJSON *body, void *params, char *scratch, size_t size, Reply *r);
/* A body's strings hold no NUL (escaped as \u0000, which cJSON would cut
 * the string at, or raw) and are UTF-8, and so is the whole body (its
 * fields' names): else 400 with the message slm_utf8_validate gives (that of
 * storylm tokenize, naming the field), -1. Before parsing. */
int body_check_strings(const char *data, size_t len, Reply *r);
/* The same for a URL's arguments (query: a JSON object of strings), names and values. */
int query_check_strings(const cJSON *query, Reply *r);
/* A stories path a client named: under a --data-dir folder, or the default
 * stories; 403 otherwise (.. and symlinks resolved first). */
int server_allowed_stories(const Server *s, const char *given, char *out, size_t size, Reply *r);

/* The fields a request to url sends (body; a GET's query as strings)
 * checked with its route's table, as the route reads them, no model or
 * server needed (a batch's requests too, depth 0); 0, or -1 with r filled.
 * What the fuzz target fuzz/fuzz_request.c drives. */
int api_check_fields(const char *url, int get, const cJSON *body, int depth, Reply *r);
/* The endpoints (api.c, stream.c). method is "GET" or "POST". */
int api_handle(Server *s, const char *method, const char *url, const cJSON *body, Reply *r);
int api_generate(Server *s, const cJSON *body, Reply *r);
/* The names m's generations capitalise, learnt once (the CLI's file: views.h); NULL: none. */
const NameList *entry_generate_names(ModelEntry *m);
/* openai.c: the OpenAI-compatible routes (/v1/..., /tokenize, /detokenize,
 * /metrics); errors in OpenAI's shape (openai_error_shape rewrites the
 * server's own); their fields checked as openai_handle reads them (fuzz_request). */
int openai_owns(const char *url);
int openai_handle(Server *s, int get, const char *url, const cJSON *body, Reply *r);
void openai_error_shape(Reply *r);
int openai_check_fields(const char *url, int get, const cJSON *body, Reply *r);
/* upload.c: a stories file (its name the query's "name", data the body)
 * into the training folder; a listed model file (the query's "model") sent
 * whole. query: the URL's arguments as a JSON object of strings. */
int api_upload(Server *s, const cJSON *query, const char *data, size_t len, Reply *r);
int api_download(Server *s, const cJSON *query, Reply *r);
/* ---- a request's session (session.c) ---- */

/* A request's view of a cached model: the entry's session with the
 * request's own ablation (and stories, for views that read them). */
typedef struct Session {
    ModelEntry *entry;
    ProbeSession ps;
    KeptRun *run; /* the text's run the request reads, or NULL */
    Server *server;
    ModelEntry *other[4]; /* other models a view opened (swap's baseline), held until session_release */
    int n_other;
    int status; /* a view's error's status when not 400 (an unknown baseline: 404) */
} Session;

enum { NEED_STORIES = 1 }; /* the server's stories (and names) loaded into the entry */

/* The model the request names ("model", else the default) from the cache, with the request's
 * ablation ("ablate", "ablate_mode"), and the stories when need has NEED_STORIES; 4xx on r. */
int session_open(Server *s, const cJSON *body, int need, Session *ss, Reply *r);
/* The model path a request names in "model" (else the server's default): one of /api/models, or 404. */
int request_model(Server *s, const cJSON *body, char *path, size_t size, Reply *r);
void session_release(Server *s, Session *ss);

/* /api/sae/features (sae_route.c): sae features --json for the model's MODEL.sae/; its fields. */
typedef struct SaeFeatureFields {
    ProbeOptions po;
    SaeFeatureParams fp;
} SaeFeatureFields;
extern const ParamTable sae_features_fields;
int api_sae_features(Server *s, const cJSON *body, Reply *r);
/* The SAE folder beside a model file, MODEL.sae for MODEL.safetensors, into dir: 0 when it holds a cfg.json. */
int model_sae_dir(const char *model, char *dir, size_t size);
/* The model a request names, held (cache_release it), with the request's ablation. */
int session_model_ablation(Server *s, const cJSON *body, ModelEntry **entry, Ablation *ab, Reply *r);

#endif
