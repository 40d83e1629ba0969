/* storylm: the command-line front end. A verb that is not a view lives in
 * src/cli/cmd_VERB.c and defines `const Command command_VERB` (CMake lists
 * them in verbs.inc); the views come from the registry (storylm/registry.h)
 * and all run through cli_run_view. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "args.h"
#include "probe_common.h"
#include "storylm/registry.h"

#define VERB(name) extern const Command command_##name;
#include "verbs.inc"
#undef VERB

static const Command *const verbs[] = {
#define VERB(name) &command_##name,
#include "verbs.inc"
#undef VERB
};
#define N_VERBS ((int)(sizeof verbs / sizeof verbs[0]))

/* Every verb and view, by name: the two sorted lists merged. */
static void print_usage(FILE *out) {
    fprintf(out, "storylm %s: a tiny story language model you can train, sample and take apart\n\n", STORYLM_VERSION);
    fprintf(out, "usage: storylm VERB [options]   (storylm help VERB, or storylm VERB --help, for each)\n");
    fprintf(out, "In usage lines, WORDS in capitals are required, [brackets] optional; each option's default\n"
                 "is in the verb's help.\n\nverbs:\n");
    const char *names[N_VERBS + 256], *summaries[N_VERBS + 256];
    int n = 0;
    for (int i = 0; i < N_VERBS; i++) names[n] = verbs[i]->name, summaries[n++] = verbs[i]->summary;
    for (int i = 0; i < slm_view_count() && n < N_VERBS + 256; i++)
        names[n] = slm_view_at(i)->name, summaries[n++] = slm_view_at(i)->summary;
    for (int i = 1; i < n; i++) /* insertion sort: a few dozen names */
        for (int j = i; j > 0 && strcmp(names[j - 1], names[j]) > 0; j--) {
            const char *a = names[j], *b = summaries[j];
            names[j] = names[j - 1], summaries[j] = summaries[j - 1];
            names[j - 1] = a, summaries[j - 1] = b;
        }
    for (int i = 0; i < n; i++) fprintf(out, "  %-10s %s\n", names[i], summaries[i]);
}

/* A verb's output is only delivered once stdout is flushed and closed: a full
 * disk or a closed pipe shows up here (printf's own errors are sticky in
 * ferror), and a verb that printed into the void must not exit 0. */
static int finish_stdout(int rc) {
    int bad = ferror(stdout);
    errno = 0;
    bad |= fflush(stdout) != 0;
    int err = errno;
    bad |= fclose(stdout) != 0;
    if (!err) err = errno;
    if (!bad) return rc;
    fprintf(stderr,
            "storylm: error: cannot write the output: %s\n---> HINT: check free space on the disk or "
            "file that standard output goes to\n",
            err ? strerror(err) : "write error");
    return rc ? rc : 1;
}

/* The verb called name, or NULL. */
static const Command *find_verb(const char *name) {
    for (int i = 0; i < N_VERBS; i++)
        if (strcmp(name, verbs[i]->name) == 0) return verbs[i];
    return NULL;
}

static int unknown_verb(const char *name) {
    const char *names[N_VERBS + 256];
    int n = 0;
    for (int i = 0; i < N_VERBS; i++) names[n++] = verbs[i]->name;
    for (int i = 0; i < slm_view_count() && n < N_VERBS + 256; i++) names[n++] = slm_view_at(i)->name;
    const char *near = slm_nearest_name(name, names, n);
    if (near)
        fprintf(stderr, "storylm: error: unknown verb '%s'; did you mean '%s'?\n", name, near);
    else
        fprintf(stderr, "storylm: error: unknown verb '%s'\n---> HINT: run 'storylm --help' for the list\n", name);
    return 2;
}

/* The verb or view called argv[0], run with argv. */
static int run_verb(int argc, char **argv) {
    const Command *c = find_verb(argv[0]);
    if (c) return c->run(argc, argv);
    const View *v = slm_view_find(argv[0]);
    return v ? cli_run_view(v, argc, argv) : unknown_verb(argv[0]);
}

static int run(int argc, char **argv) {
    bool help =
        argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "help") == 0);
    if (help && argc >= 3) { /* storylm help VERB: that verb's --help */
        char *args[] = {argv[2], "--help", NULL};
        return run_verb(2, args);
    }
    if (argc < 2 || help) {
        print_usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    if (strcmp(argv[1], "--version") == 0) {
        printf("storylm %s\n", STORYLM_VERSION);
        return 0;
    }
    return run_verb(argc - 1, argv + 1);
}

int main(int argc, char **argv) { return finish_stdout(run(argc, argv)); }
