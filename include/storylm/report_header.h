/* A report's opening values, the same nested JSON keys in every verb
 * (docs/json.md): "model" {file, arch, parameters}, "stories" {file,
 * stories, test_stories} and "ablation" {text, heads, mode}. */
#ifndef STORYLM_REPORT_HEADER_H
#define STORYLM_REPORT_HEADER_H

#include "storylm/model.h"
#include "storylm/probe_session.h"
#include "storylm/report.h"

/* All three from a probe session (stories only when it read some). */
void slm_report_header_session(Report *r, const ProbeSession *ps);
/* Its parts, for verbs without a session (eval). */
void slm_report_header_model(Report *r, const Model *m, const char *path);
void slm_report_header_stories(Report *r, const char *path, int n_stories, int n_test);

#endif
