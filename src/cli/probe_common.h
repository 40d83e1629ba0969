/* What the probe verbs (attend, distances, trace, heads, swap, ablate,
 * pieces, stats) share, and head ablation for generate and eval too: the
 * common flags, loading a model with its stories and names, setting up
 * --ablate / --ablate-mode, and printing a report as text or JSON. */
#ifndef STORYLM_CLI_PROBE_COMMON_H
#define STORYLM_CLI_PROBE_COMMON_H

#include <stdbool.h>

#include "args.h"
#include "common.h"
#include "storylm/probes.h"
#include "storylm/report.h"
#include "storylm/ablation.h"      /* slm_ablation_setup: in the library */
#include "storylm/probe_session.h" /* ProbeSession, slm_probe_session_open: in the library */
#include "storylm/registry.h"      /* the shared options' help */
#include "storylm/views.h"

#define PROBE_OPTIONS_DEFAULT                                                                                          \
    { .ablate_mode = "zero", .n_test = STORIES_DEFAULT_TEST, .threads = cli_default_threads() }

/* The flags every probe takes, for its Option table. */
#define PROBE_COMMON_OPTIONS(o) PROBE_MODEL_OPTION(o), PROBE_SHARED_OPTIONS(o)
/* The same with --model repeatable into the StringList list, for probes run
 * on several models ("repeat for snapshots"). */
#define PROBE_MODELS_OPTIONS(o, list, repeat) PROBE_MODELS_OPTION(list, repeat), PROBE_SHARED_OPTIONS(o)
#define PROBE_MODELS_OPTION(list, repeat)                                                                              \
    {                                                                                                                  \
        "model", 'm', OPT_STRINGS, &(list), "FILE",                                                                    \
            "model file; " repeat " (default: ./" DEFAULT_MODEL_PATH ", else the shipped model)", 0, 0                 \
    }
/* --ablate and --ablate-mode, bound to two strings: every verb that switches
 * heads off declares them through this one entry, probes or not. */
#define ABLATE_OPTIONS(heads, mode)                                                                                    \
    {"ablate", 0, OPT_STRING, &(heads), "HEADS", VIEW_ABLATE_HELP, 0, 0}, {                                            \
        "ablate-mode", 0, OPT_STRING, &(mode), "MODE", VIEW_ABLATE_MODE_HELP, 0, 0                                     \
    }
#define PROBE_SHARED_OPTIONS(o) ABLATE_OPTIONS((o).ablate, (o).ablate_mode), PROBE_OUTPUT_OPTIONS(o)
#define PROBE_OUTPUT_OPTIONS(o)                                                                                        \
    {"json", 0, OPT_BOOL, &(o).json, NULL, "print JSON with the same numbers", 0, 0}, THREADS_OPTION((o).threads)
/* The same without --ablate, for probes whose numbers no switched-off head
 * changes (distances, heads, stats): they refuse it (probe_refuse_ablation). */
#define PROBE_MODEL_OPTION(o)                                                                                          \
    {                                                                                                                  \
        "model", 'm', OPT_STRING, &(o).model, "FILE",                                                                  \
            "model file (default: ./" DEFAULT_MODEL_PATH ", else the shipped model)", 0, 0                             \
    }
#define PROBE_SVG_OPTION(o)                                                                                            \
    {"svg",    0,      OPT_STRING,                                                                                     \
     &(o).svg, "FILE", "also draw the picture into FILE (SVG); a file of another kind there is kept",                  \
     0,        0},                                                                                                     \
        FORCE_OPTION((o).force)
#define PROBE_TEST_OPTION(o)                                                                                           \
    { "test-stories", 0, OPT_INT, &(o).n_test, "N", "held-out test stories (as in training)", 1, 100000 }
/* For verbs without a STORIES argument: where mean ablation finds its stories. */
#define PROBE_MEAN_STORIES_OPTION(o) ABLATE_STORIES_OPTION((o).mean_stories)
#define ABLATE_STORIES_OPTION(stories)                                                                                 \
    {                                                                                                                  \
        "stories", 0, OPT_STRING, &(stories), "FILE",                                                                  \
            "stories for --ablate-mode mean (needed for it; info names the training file)", 0, 0                       \
    }

/* Checks --ablate-mode after parsing: 0, or prints a usage error and returns 2. */
int probe_check_mode(const Command *cmd, const char *mode);

/* What every probe verb does before its work: parse the flags, check
 * --ablate-mode, set the threads. Returns -1 to go on, else the exit code
 * (0 after --help, 2 for a usage error). */
int probe_parse(const Command *cmd, int argc, char **argv, const Option *opts, int n_opts, ProbeOptions *po,
                const char **positional, int n_positional);

/* probe_parse's steps after args_parse: --ablate-mode checked, threads set,
 * the default model found. -1 to go on, else the exit code. */
int probe_after_parse(const Command *cmd, int argc, char **argv, const Option *opts, int n_opts, ProbeOptions *po);

/* Before parsing, for a verb without --ablate: when argv asks for --ablate
 * or --ablate-mode, prints why the verb has none (why: what its numbers
 * are) and returns 2; else 0. */
int probe_refuse_ablation(const Command *cmd, int argc, char **argv, const char *why);

/* storylm NAME for a view of the registry (view_runner.c): its options
 * parsed from the entry, its session opened, built, printed. Exit code. */
struct View;
int cli_run_view(const struct View *v, int argc, char **argv);

/* Prints r as text or JSON (o->json) on stdout. */
int probe_emit(const Report *r, const ProbeOptions *o, Error *e);

#endif
