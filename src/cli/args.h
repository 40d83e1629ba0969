/* Command-line flags: each verb declares a table of options bound to its
 * variables; parsing checks types and ranges, and --help is printed from the
 * same table with the defaults taken from the variables' initial values. */
#ifndef STORYLM_CLI_ARGS_H
#define STORYLM_CLI_ARGS_H

#include <stdbool.h>

typedef enum { OPT_BOOL, OPT_INT, OPT_DOUBLE, OPT_STRING, OPT_STRINGS } OptionKind;

typedef struct Option {
    const char *name; /* long name without dashes: "steps" */
    char short_name;  /* 'n', or 0 */
    OptionKind kind;
    void *target;     /* bool*, int*, double*, const char**, or StringList* */
    const char *meta; /* value placeholder in help: "N" */
    const char *help;
    double min, max; /* accepted range for numbers (min == max: any) */
} Option;

/* StringList, a repeatable string option's target (--model A --model B): in the registry's header. */
#include "storylm/registry.h"

typedef struct Command {
    const char *name;
    const char *summary;     /* one line for `storylm --help` */
    const char *usage;       /* "storylm vocab STORIES [options]" */
    const char *description; /* a paragraph or two for `storylm VERB --help` */
    int (*run)(int argc, char **argv);
} Command;

/* Parses argv (argv[0] is the verb) against opts. Positional arguments are
 * gathered into positional (at most max_positional). Returns 0 on success,
 * 1 when --help was printed (the caller exits 0), -1 after printing an error. */
int args_parse(const Command *cmd, int argc, char **argv, const Option *opts, int n_opts, const char **positional,
               int min_positional, int max_positional, int *n_positional);

/* Did argv (argv[0] the verb) set the option called name (long) or short_name
 * (0: none), as "--name V", "--name=V" or "-c V"? For flags whose value
 * matters only when given (a resume refuses contradicting ones). */
bool args_given(int argc, char **argv, const char *name, char short_name);

void args_print_help(const Command *cmd, const Option *opts, int n_opts);

/* The name of names[0..n) that word is most likely a typo of (at most 2
 * edits away), or NULL. */
const char *args_nearest(const char *word, const char *const *names, int n);

/* Prints "storylm VERB: error: ..." and a pointer to --help; returns 2. */
int args_usage_error(const Command *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* --threads, the same in every verb that computes: the default (the
 * variable's initial value) is cli_default_threads(), one per core. */
#define THREADS_OPTION(n)                                                                                              \
    { "threads", 0, OPT_INT, &(n), "N", "threads, by default one per core", 1, 256 }
/* Training's matrix products (storylm/bf16.h), a string for slm_precision_parse. */
#define PRECISION_OPTION(name)                                                                                         \
    {                                                                                                                  \
        "precision", 0, OPT_STRING, &(name), "P",                                                                      \
            "matrix products: fp32, or bf16 (operands rounded to bfloat16, FP32 sums; avx512_bf16; "                   \
            "docs/performance.md)",                                                                                    \
            0, 0                                                                                                       \
    }

/* --force, the same in every verb that writes files: an output that already
 * holds a model, stories or anything not of the verb's own kind is kept
 * unless it is given (docs/files.md). */
#define FORCE_OPTION(b)                                                                                                \
    {                                                                                                                  \
        "force", 0, OPT_BOOL, &(b), NULL,                                                                              \
            "replace an output file that holds a model, stories or other data (kept otherwise)", 0, 0                  \
    }

#define N_OPTIONS(a) ((int)(sizeof(a) / sizeof((a)[0])))

#endif
