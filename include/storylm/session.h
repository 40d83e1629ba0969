/* Sessions: a model file loaded with its tokenizer, and everything a probe
 * or a view works on (the model, its stories and names, head ablation).
 * Shared by the command-line verbs and the server (src/server), so both
 * build their reports from the same loaded state. Never prints. */
#ifndef STORYLM_SESSION_H
#define STORYLM_SESSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "storylm/error.h"
#include "storylm/model.h"
#include "storylm/probes.h"
#include "storylm/report.h"
#include "storylm/safetensors.h"
#include "storylm/stories.h"
#include "storylm/tokenizer.h"

#define DEFAULT_MODEL_PATH "model.safetensors"
/* The model shipped in the source tree's models/ directory. */
#define SHIPPED_MODEL_NAME "tinystories.safetensors"
#define SHIPPED_MODEL_REL "models/" SHIPPED_MODEL_NAME

/* true when path is a regular file. */
bool slm_session_file_exists(const char *path);
/* A file of the source tree, rel ("data/stories.txt"), looked for in order:
 * beside the executable as in the source tree, <exe dir>/../rel
 * (build/storylm) or <exe dir>/rel; in the installed data folder seen from
 * the executable, <exe dir>/../share/storylm/rel (an install moved to another
 * prefix); in the data folder compiled in (<prefix>/share/storylm/rel).
 * Writes the path into buf; false when none exists. */
bool slm_session_source_file(const char *rel, char *buf, size_t size);
/* Those places for rel, ", "-separated into buf (size), for error messages. */
void slm_session_source_places(const char *rel, char *buf, size_t size);
/* The shipped model, models/tinystories.safetensors, found that way. */
bool slm_session_shipped_model(char *buf, size_t size);

/* A model file with its tokenizer (from the vocabulary stored in it). */
typedef struct LoadedModel {
    Model model;
    Tokenizer tokenizer;
    Metadata meta;
    char *vocab;
    const char *path;
} LoadedModel;

int slm_cli_load_model(LoadedModel *lm, const char *path, Error *e);
/* The error for a model file path that does not exist (returns -1); for
 * ./model.safetensors, the default, it names where the shipped model was
 * looked for too. */
int slm_session_no_model(const char *path, Error *e);
void slm_cli_free_model(LoadedModel *lm);

/* "3,5" -> bit mask of heads; fails for numbers outside 0..n_heads-1. */
int slm_cli_parse_heads(const char *list, int n_heads, uint32_t *mask, Error *e);
/* The same for c's heads over all its layers: "L:H" (layer from 1) or a
 * plain "H" (the first layer's), e.g. "1:3,2:5"; bit (L-1)*n_heads + H. */
int slm_cli_parse_model_heads(const char *list, const ModelConfig *c, uint32_t *mask, Error *e);

/* What a probe session is opened with (the CLI fills it from its flags). */
typedef struct ProbeOptions {
    const char *model;                /* NULL: ./model.safetensors (the CLI resolves its default first) */
    const char *ablate, *ablate_mode; /* "3,5"; "zero" or "mean" */
    const char *mean_stories;         /* --stories: where mean ablation's test stories come from */
    const char *svg;                  /* picture to write, or NULL */
    const char *out;                  /* activations to write (cache), or NULL */
    bool force;                       /* replace an output that holds another kind of file (outputs.h) */
    bool json;
    int threads, n_test;
} ProbeOptions;

/* The stories file a verb that reads none of its own averages over (what:
 * "--ablate-mode mean"): given (--stories), whose size and hash are checked
 * against the model's record (record.h), warning (size) then saying how it
 * differs ("" when it does not, or the record cannot tell). A model file
 * holds no path to fall back on: given NULL fails, the hint naming the file
 * the model was trained on. NULL on failure. */
const char *slm_session_mean_stories(const LoadedModel *lm, const char *given, const char *what, char *warning,
                                     size_t size, Error *e);

/* --ablate and --ablate-mode for a loaded model: fills ab (heads, mode) and,
 * for mean, *mean (caller frees) averaged over the held-out test stories of
 * s (read from stories_path), or when s is NULL of the file stories_path
 * (slm_session_mean_stories: needed, and checked against the model's record).
 * desc (size) says what was done, for reports ("" when nothing), with a
 * warning when stories_path is not the model's training file. */
int slm_cli_setup_ablation(const LoadedModel *lm, const char *ablate, const char *mode, const Stories *s,
                           const char *stories_path, int n_test, Ablation *ab, float **mean, char *desc, size_t size,
                           Error *e);

/* " (warning: WARNING)" after desc (size bytes), as far as it fits; nothing for an empty warning. */
void slm_session_add_warning(char *desc, size_t size, const char *warning);

/* The same with each head's mean output (H, vd) already at hand (mean NULL
 * in mean mode: checks the heads only); mean_from names its stories in desc. */
int slm_session_ablation(const LoadedModel *lm, const char *ablate, const char *mode, const float *mean,
                         const char *mean_from, Ablation *ab, char *desc, size_t size, Error *e);

enum {
    PROBE_ATTENTION_ONLY = 1, /* refuse window8 models, and models of several layers unless PROBE_LAYERS */
    PROBE_NAMES = 2,          /* learn names from the stories' training text */
    PROBE_LAYERS = 4,         /* with PROBE_ATTENTION_ONLY: the verb reads every layer's heads (--layers) */
    PROBE_TRANSFORMER = 8     /* with PROBE_ATTENTION_ONLY: the verb reads a transformer's heads too */
};

/* Everything a probe works on. */
typedef struct ProbeSession {
    LoadedModel lm;
    const char *model_path;
    const char *stories_path; /* NULL when the verb reads no stories */
    Stories stories;
    NameList names;
    int names_from_all; /* 1 when the names came from every story (could not tell test ones apart) */
    Ablation ablation;
    float *mean;
    char ablation_desc[512]; /* room for a warning about the stories averaged over */
    char shipped[4096];      /* the shipped model's path, when o->model was NULL and it is used */
} ProbeSession;

/* Loads the model (o->model, or ./model.safetensors), the stories (when
 * stories_path), the names (PROBE_NAMES) and the ablation. On failure
 * everything is freed. */
/* The files a probe writes (o->svg, o->out) checked against what it reads
 * (the model, the stories, o->mean_stories, other_input) and what they hold
 * (outputs.h), before any work. slm_probe_session_open calls it. */
int slm_probe_check_outputs(const ProbeOptions *o, const char *model_path, const char *stories_path,
                            const char *other_input, Error *e);
int slm_probe_session_open(ProbeSession *ps, const ProbeOptions *o, const char *what, const char *stories_path,
                           int flags, Error *e);
void slm_probe_session_close(ProbeSession *ps);
/* Loads the stories of ps->stories_path (n_test held out) with ps's
 * tokenizer and, with PROBE_NAMES in flags, learns the names. */
int slm_probe_session_stories(ProbeSession *ps, int n_test, int flags, Error *e);
/* Opens a second model for comparison (swap's --baseline), checking that it
 * uses the same vocabulary. */
int slm_probe_load_other(const ProbeSession *ps, const char *path, LoadedModel *other, Error *e);

/* The report's opening values: model, stories and test count, ablation. */
void slm_probe_report_header(Report *r, const ProbeSession *ps);
/* Its parts, for verbs without a session (eval): in JSON the objects
 * "model" {file, arch, parameters}, "stories" {file, stories, test_stories}
 * and "ablation" {text, heads, mode} of docs/json.md. */
void slm_report_model(Report *r, const Model *m, const char *path);
void slm_report_stories(Report *r, const char *path, int n_stories, int n_test);
/* ablation.heads: the heads switched off, numbered over all layers; on a
 * model of several layers also ablation.names, "1:3,2:5". */
void slm_report_ablation(Report *r, const Ablation *ab, const ModelConfig *c, const char *desc);

/* Names from "a,b,c" (or, list NULL, swap's default set) into out (max);
 * returns how many, -1 on error. */
int slm_cli_swap_names(const ProbeSession *ps, const char *list, SwapName *out, int max, Error *e);

/* A token's text for tables and pictures ("[EOS]", "lily", "##ark"). */
const char *slm_probe_token(const ProbeSession *ps, int32_t id);

#endif
