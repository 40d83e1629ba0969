/* What the probe verbs (attend, distances, trace, heads, swap, ablate,
 * pieces, stats) share, and head ablation for generate and eval too: the
 * steps after parsing the shared options (storylm/registry.h's groups),
 * and printing a report as text or JSON. */
#ifndef STORYLM_CLI_PROBE_COMMON_H
#define STORYLM_CLI_PROBE_COMMON_H

#include <stdbool.h>

#include "args.h"
#include "common.h"
#include "storylm/probes.h"
#include "storylm/report.h"
#include "storylm/ablation.h"      /* slm_ablation_setup: in the library */
#include "storylm/probe_session.h" /* ProbeSession, slm_probe_session_open: in the library */
#include "storylm/registry.h"      /* the shared options */
#include "storylm/views.h"

/* After a verb's table (its ProbeOptions first) was parsed into po: a
 * --ablate-mode without --ablate HEADS refused (ablate's own --heads
 * aside), threads set, the default model found (and said on stderr).
 * Returns -1 to go on, else the exit code (2 for a usage error). */
int probe_after_parse(const Command *cmd, const ParamTable *t, const ParamsGiven *given, ProbeOptions *po);

/* storylm NAME for a view of the registry (view_runner.c): its options
 * parsed from the entry, its session opened, built, printed. Exit code. */
struct View;
int cli_run_view(const struct View *v, int argc, char **argv);

/* Prints r as text or JSON (o->json) on stdout. */
int probe_emit(const Report *r, const ProbeOptions *o, Error *e);

#endif
