/* The probe session: everything a probe or a view works on (the loaded
 * model, its stories and names, head ablation), opened from the options the
 * CLI's flags or the server's parameters give. Shared by the command-line
 * verbs and the server (src/server), so both build their reports from the
 * same loaded state. Never prints. */
#ifndef STORYLM_PROBE_SESSION_H
#define STORYLM_PROBE_SESSION_H

#include <stdbool.h>
#include <stdint.h>

#include "storylm/error.h"
#include "storylm/loaded_model.h"
#include "storylm/model.h"
#include "storylm/probes.h"
#include "storylm/stories.h"

/* What a probe session is opened with (the CLI fills it from its flags). */
typedef struct ProbeOptions {
    const char *model;        /* NULL: ./model.safetensors (the CLI resolves its default first) */
    const char *ablate;       /* the heads to switch off, "3,5" (NULL: none) */
    AblationMode ablate_mode; /* zero (the default) or mean */
    const char *mean_stories; /* --stories: where mean ablation's test stories come from */
    const char *svg;          /* picture to write, or NULL */
    const char *out;          /* activations to write (cache), or NULL */
    bool force;               /* replace an output that holds another kind of file (outputs.h) */
    bool json;
    int threads, n_test;
    int kernels; /* Kernels of the passes (--kernels): set on the loaded model */
} ProbeOptions;

enum {
    PROBE_HEADS = 1,       /* the verb reads heads: refuse a model without any (window8), saying why */
    PROBE_NAMES = 2,       /* learn names from the stories' training text */
    PROBE_ALL_STORIES = 16 /* the verb may read every story (eval --all): a file with none to hold out is no error */
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

/* The files a probe writes (o->svg, o->out) checked against what it reads
 * (the model, the stories, o->mean_stories, other_input) and what they hold
 * (outputs.h), before any work. slm_probe_session_open calls it. */
int slm_probe_session_check_outputs(const ProbeOptions *o, const char *model_path, const char *stories_path,
                                    const char *other_input, Error *e);
/* Loads the model (o->model, or ./model.safetensors), the stories (when
 * stories_path), the names (PROBE_NAMES) and the ablation. On failure
 * everything is freed. */
int slm_probe_session_open(ProbeSession *ps, const ProbeOptions *o, const char *what, const char *stories_path,
                           int flags, Error *e);
void slm_probe_session_close(ProbeSession *ps);
/* Loads the stories of ps->stories_path (n_test held out) with ps's
 * tokenizer and, with PROBE_NAMES in flags, learns the names. */
int slm_probe_session_stories(ProbeSession *ps, int n_test, int flags, Error *e);
/* Opens a second model for comparison (swap's --baseline), checking that it
 * uses the same vocabulary. */
int slm_probe_session_load_other(const ProbeSession *ps, const char *path, LoadedModel *other, Error *e);

/* Names from "a,b,c" (or, list NULL, swap's default set) into out (max);
 * returns how many, -1 on error. */
int slm_probe_session_swap_names(const ProbeSession *ps, const char *list, SwapName *out, int max, Error *e);

/* A token's text for tables and pictures ("[EOS]", "lily", "##ark"). */
const char *slm_probe_session_token(const ProbeSession *ps, int32_t id);

#endif
