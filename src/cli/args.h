/* Command-line flags: each verb's parameters are one table (storylm/params.h)
 * bound to a struct of the verb's; parsing reads argv into it with the
 * table's types and ranges and marks what was given, and --help is printed
 * from the same table with the defaults read from the struct as filled
 * before parsing (slm_params_init, then the front end's own: --threads'
 * core count). */
#ifndef STORYLM_CLI_ARGS_H
#define STORYLM_CLI_ARGS_H

#include <stdbool.h>

#include "storylm/params.h"

typedef struct Command {
    const char *name;
    const char *summary;     /* one line for `storylm --help` */
    const char *usage;       /* "storylm vocab STORIES [options]" */
    const char *description; /* a paragraph or two for `storylm VERB --help` */
    int (*run)(int argc, char **argv);
} Command;

/* Parses argv (argv[0] is the verb) into params with t: options by name,
 * then the other arguments into t's positional parameters in order (the
 * required ones must be there). given (may be NULL) marks each parameter
 * argv set, by its index in slm_params_list(t). Returns 0 on success, 1 when
 * --help was printed (the caller exits 0), -1 after printing a usage error. */
int args_parse(const Command *cmd, int argc, char **argv, const ParamTable *t, void *params, ParamsGiven *given);

/* Prints "storylm VERB: error: ..." and a pointer to --help; returns 2. */
int args_usage_error(const Command *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A usage error naming e's parameter in the command line's words; returns 2. */
int args_param_error(const Command *cmd, const Error *e);

#endif
