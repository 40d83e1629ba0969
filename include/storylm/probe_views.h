/* What the probe and interpretability views (src/views/view_*.c, entries
 * of registry.h) share beyond the registry: a text and a token as the user
 * names them, the keys of a JSON a verb builds itself, the stories verb's
 * work, and views over several models. Writes only to a FILE it is given. */
#ifndef STORYLM_PROBE_VIEWS_H
#define STORYLM_PROBE_VIEWS_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "storylm/error.h"
#include "storylm/registry.h"
#include "storylm/report.h"
#include "storylm/probe_session.h"

/* What the interpretability views share: a text as the network reads it,
 * and a token named by the user. */
/* [EOS] and the pieces of text into ids (cleared first). */
int slm_view_encode(const ProbeSession *ps, const char *text, IntVec *ids, Error *e);
/* ids as "[EOS] lily went ##s" into buf (size), cut with "..." when long. */
void slm_view_ids_text(const ProbeSession *ps, const int32_t *ids, int n, char *buf, size_t size);
/* The id of the vocabulary piece text ("max", "##ark", "[EOS]"); flag names
 * the option for the message when it is not one. */
int slm_view_token_id(const ProbeSession *ps, const char *text, const char *flag, int32_t *id, Error *e);
/* The most likely token at position p after a run, leaving out skip (-1: none). */
int32_t slm_view_top_guess(const Activations *a, int p, int32_t skip);

/* JSON a view builds itself, with the keys of docs/json.md that reports get
 * from slm_report_header_model and slm_report_header_stories (report_header.h): */
/* {"command": verb}, the start of every verb's JSON (NULL when out of memory). */
cJSON *slm_view_json_begin(const char *verb);
/* j["model"] = {"file": path, "arch", "parameters"}. */
void slm_view_json_model(cJSON *j, const Model *m, const char *path);
/* j["stories"] = {"file": path, "stories", "test_stories"}. */
void slm_view_json_stories(cJSON *j, const char *path, const Stories *s);

/* stories: a stories file read as training reads it, with the vocabulary
 * of vocab (a vocab.txt) or else of lm (kept by the caller); n_test held out. */
typedef struct ViewStories {
    const char *vocab, *path;
    const LoadedModel *lm; /* the caller's (NULL with vocab) */
    Tokenizer own;         /* vocab's */
    Stories stories;
} ViewStories;
int slm_view_stories_open(ViewStories *vs, const LoadedModel *lm, const char *vocab, const char *path, int n_test,
                          Error *e);
void slm_view_stories_close(ViewStories *vs);
/* Counts, skips and the held-out stories, as text or JSON (NULL when out of memory). */
void slm_view_stories_print(const ViewStories *vs, FILE *out);
cJSON *slm_view_stories_json(const ViewStories *vs);
/* The token ids of split's stories (test, train or all), one story a line. */
int slm_view_stories_ids(const ViewStories *vs, const char *split, FILE *out, Error *e);

/* A view over several models (detect, icl: training snapshots side by
 * side): on the command line a session on each of models in turn (none
 * given: the default model) with the call's other options and stories, and
 * add called with it (k: its index); in the server its one session. */
typedef int (*ViewModelFn)(ViewCall *c, const ProbeSession *ps, int k, Error *e);
int slm_view_each_model(ViewCall *c, const StringList *models, const char *stories, int flags, ViewModelFn add,
                        Error *e);
/* Their --model FILE, repeatable into the StringList field of T (repeat: "repeat to compare"). */
#define VIEW_PARAM_MODELS(T, field, repeat)                                                                            \
    {                                                                                                                  \
        .name = "model", .short_name = 'm', .type = PARAM_STRINGS, .offset = offsetof(T, field), .meta = "FILE",       \
        .help = "model file; " repeat " (default: ./" DEFAULT_MODEL_PATH ", else the shipped model)",                  \
        .flags = PARAM_SERVED                                                                                          \
    }

#endif
