/* The probe and interpretability verbs' reports as views: each builds its
 * Report from a session and its parameters (the table, --json) and draws
 * its picture from that Report alone (--svg), so that the CLI and the
 * server give the same numbers. Never prints. */
#ifndef STORYLM_PROBE_VIEWS_H
#define STORYLM_PROBE_VIEWS_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "storylm/error.h"
#include "storylm/probe_icl.h"
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

/* detect: per head, the previous-token, duplicate-token and induction
 * scores on the test stories and on n_random sequences of length random
 * tokens (seed) repeated twice, with the induction loss. The tables, then
 * one slm_view_detect_add per model (training snapshots: every model must
 * have as many layers as the first). */
typedef struct DetectParams {
    int n_random, length, seed;
} DetectParams;
typedef struct ViewDetect {
    DetectParams p;
    ReportTable *heads, *models;
    int layers; /* the first model's: heads are named "L:H" when more than 1 */
} ViewDetect;
void slm_view_detect_begin(Report *r, const ProbeSession *ps, const DetectParams *dp, ViewDetect *vd);
int slm_view_detect_add(ViewDetect *vd, const ProbeSession *ps, Error *e);
/* One model: the scores as bars per head; several: curves across training. */
int slm_view_detect_draw(const Report *r, const char *path, Error *e);

/* icl: the in-context-learning score (the loss at o.late minus at o.early)
 * and the mean loss at every position (a table by bins of bin positions
 * too), side by side for several models: the tables, one slm_view_icl_add
 * per model (at most VIEW_ICL_MAX_MODELS), then slm_view_icl_end; the
 * results are kept until slm_view_icl_free. */
#define VIEW_ICL_MAX_MODELS 32
typedef struct IclParams {
    IclOptions o;
    int bin;
} IclParams;
typedef struct ViewIcl {
    IclParams p;
    ReportTable *scores;
    IclResult res[VIEW_ICL_MAX_MODELS];
    int n;
} ViewIcl;
void slm_view_icl_begin(Report *r, const ProbeSession *ps, const IclParams *ip, ViewIcl *vi);
int slm_view_icl_add(ViewIcl *vi, Report *r, const ProbeSession *ps, Error *e);
void slm_view_icl_end(ViewIcl *vi, Report *r);
void slm_view_icl_free(ViewIcl *vi);
/* The loss by position (a moving mean over band), one curve per model. */
int slm_view_icl_draw(const Report *r, const char *path, Error *e);

/* JSON a view builds itself, with the keys of docs/json.md that reports get
 * from slm_report_header_model and slm_report_header_stories (report_header.h): */
/* {"command": verb}, the start of every verb's JSON (NULL when out of memory). */
cJSON *slm_view_json_begin(const char *verb);
/* j["model"] = {"file": path, "arch", "parameters"}. */
void slm_view_json_model(cJSON *j, const Model *m, const char *path);
/* j["stories"] = {"file": path, "stories", "test_stories"}. */
void slm_view_json_stories(cJSON *j, const char *path, const Stories *s);

/* info: a model file, validated fully, with the optimizer state beside it
 * (MODEL.adam.safetensors, or the ".next" one that pairs). Its own JSON
 * (every tensor's sum and FNV-1a 64 checksum) and text, which a Report
 * would print otherwise. */
typedef struct OptimizerInfo {
    char *path;
    bool present, readable, pairs;
    uint64_t step;
    Error error;
} OptimizerInfo;
typedef struct ViewInfo {
    const char *path;
    long long file_bytes;
    Model model;
    Metadata meta;
    OptimizerInfo optimizer;
    int loaded;
} ViewInfo;
int slm_view_info_open(ViewInfo *vi, const char *path, Error *e);
/* NULL when out of memory. */
cJSON *slm_view_info_json(const ViewInfo *vi);
void slm_view_info_print(const ViewInfo *vi, FILE *out);
void slm_view_info_close(ViewInfo *vi);

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

#endif
