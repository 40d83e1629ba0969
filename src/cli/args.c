/* Command-line flags: see args.h. */
#include "args.h"

#include "storylm/registry.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int args_usage_error(const Command *cmd, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "storylm %s: error: ", cmd->name);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n---> HINT: see 'storylm %s --help'\n", cmd->name);
    va_end(ap);
    return 2;
}

int args_param_error(const Command *cmd, const Error *e) {
    char text[sizeof e->message + 300];
    return args_usage_error(cmd, "%s", slm_error_text(e, ERROR_STYLE_CLI, text, sizeof text));
}

/* --help: usage, description, and each option of t with its default as params holds it. */
static void args_print_help(const Command *cmd, const ParamTable *t, const void *params) {
    ParamList l;
    slm_params_list(t, &l);
    printf("usage: %s\n\n%s\n", cmd->usage, cmd->description);
    printf("\noptions:\n");
    for (int i = 0; i < l.n; i++) {
        const Param *p = l.at[i].p;
        if (!slm_param_from(p, PARAM_FROM_CLI) || (p->flags & PARAM_POSITIONAL)) continue;
        char left[64], def[160], help[1024];
        int n = p->short_name ? snprintf(left, sizeof left, "-%c, --%s", p->short_name, p->name)
                              : snprintf(left, sizeof left, "    --%s", p->name);
        if (p->type != PARAM_BOOL && n < (int)sizeof left)
            snprintf(left + n, sizeof left - n, " %s", p->meta ? p->meta : "X");
        slm_param_default_text(&l.at[i], params, def, sizeof def);
        printf("  %-28s %s", left, slm_param_help(p, help, sizeof help));
        if (def[0]) printf(" (default: %s)", def);
        printf("\n");
    }
    printf("  %-28s %s\n", "-h, --help", "show this help");
}

/* Long names that mean another option: the spelling other tools use, or an
 * older one of storylm's (--top became --top-k). A warned one goes in the
 * next release: its verb (NULL: any) says so each time it is used. */
typedef struct OptionAlias {
    const char *verb, *old_name, *name;
    bool warned;
} OptionAlias;
static const OptionAlias option_aliases[] = {
    {NULL, "output", "out", false},
    {NULL, "top", "top-k", false},
    {NULL, "temp", "temperature", false},
    /* --pos is a token position in attend, trace and attribute */
    {"train", "pos", "position-scheme", true},
    {"bench", "pos", "position-scheme", true},
    /* --tokens is a count of new tokens in generate and bench */
    {"circuits", "tokens", "token-list", true},
};

/* The command line's parameters of l: options, not positionals. */
static bool is_option(const ParamList *l, int i) {
    const Param *p = l->at[i].p;
    return slm_param_from(p, PARAM_FROM_CLI) && !(p->flags & PARAM_POSITIONAL);
}

/* The option an alias names in cmd (len characters of name), or -1. */
static int find_alias(const Command *cmd, const ParamList *l, const char *name, size_t len) {
    for (size_t a = 0; a < sizeof option_aliases / sizeof option_aliases[0]; a++) {
        const OptionAlias *al = &option_aliases[a];
        if ((al->verb && strcmp(al->verb, cmd->name) != 0) || strlen(al->old_name) != len ||
            strncmp(al->old_name, name, len) != 0)
            continue;
        int i = slm_params_find(l, al->name);
        if (i < 0 || !is_option(l, i)) continue;
        if (al->warned)
            fprintf(stderr, "storylm %s: warning: --%s is now --%s; the old name goes in the next release\n", cmd->name,
                    al->old_name, al->name);
        return i;
    }
    return -1;
}

/* The option arg names: "-n", "-n10" (a short option with its value
 * attached: *attached points at "10"), "--name" or "--name=value"; -1 for none. */
static int find_option(const Command *cmd, const ParamList *l, const char *arg, const char **attached) {
    *attached = NULL;
    if (arg[1] != '-') {
        for (int i = 0; i < l->n; i++)
            if (is_option(l, i) && l->at[i].p->short_name == arg[1] && (!arg[2] || l->at[i].p->type != PARAM_BOOL)) {
                if (arg[2]) *attached = arg + 2;
                return i;
            }
        return -1;
    }
    const char *name = arg + 2;
    size_t len = strcspn(name, "=");
    for (int i = 0; i < l->n; i++)
        if (is_option(l, i) && strlen(l->at[i].p->name) == len && strncmp(l->at[i].p->name, name, len) == 0) return i;
    return find_alias(cmd, l, name, len);
}

/* "unknown option '--stpes'", with the nearest long name when it is a typo;
 * --ablate in a verb without it, with why it has none. */
static void unknown_option(const Command *cmd, const ParamList *l, const char *arg) {
    const char *names[PARAMS_MAX];
    int k = 0;
    for (int i = 0; i < l->n; i++)
        if (is_option(l, i)) names[k++] = l->at[i].p->name;
    char word[64];
    snprintf(word, sizeof word, "%.*s", (int)strcspn(arg + strspn(arg, "-"), "="), arg + strspn(arg, "-"));
    const View *v = slm_view_find(cmd->name); /* a view without --ablate says why it has none */
    if (v && v->no_ablation && arg[1] == '-' && (strcmp(word, "ablate") == 0 || strcmp(word, "ablate-mode") == 0)) {
        args_usage_error(cmd,
                         "--%s changes nothing %s shows (%s); switch heads off in ablate, eval, generate, attend, "
                         "trace or swap",
                         word, cmd->name, v->no_ablation);
        return;
    }
    const char *near = slm_nearest_name(word, names, k);
    if (near)
        args_usage_error(cmd, "unknown option '%s'; did you mean --%s?", arg, near);
    else
        args_usage_error(cmd, "unknown option '%s'", arg);
}

/* Sets option i from arg (and argv[*at + 1] when its value is the next argument). */
static int set_option(const Command *cmd, const ParamList *l, int i, int argc, char **argv, int *at, void *params,
                      const char *attached) {
    const Param *p = l->at[i].p;
    const char *arg = argv[*at];
    const char *eq = arg[1] == '-' ? strchr(arg, '=') : NULL;
    Error e = {0};
    if (p->type == PARAM_BOOL) {
        if (eq) return args_usage_error(cmd, "--%s takes no value", p->name), -1;
        return slm_param_set_text(&l->at[i], params, NULL, &e);
    }
    const char *value = eq ? eq + 1 : attached ? attached : (*at + 1 < argc ? argv[++*at] : NULL);
    if (!value) return args_usage_error(cmd, "--%s needs a value (%s)", p->name, p->meta ? p->meta : "X"), -1;
    if (slm_param_set_text(&l->at[i], params, value, &e)) return args_param_error(cmd, &e), -1;
    return 0;
}

/* A text of several words given unquoted (storylm generate Lily found a):
 * the shell made each word an argument; say how to quote them. */
static void unquoted_text(const Command *cmd, const Param *p, const char **words, int n) {
    fprintf(stderr, "storylm %s: error: unexpected argument '%s' after %s '%s'\n", cmd->name, words[1], p->name,
            words[0]);
    fprintf(stderr, "---> HINT: a %s of several words goes in quotes: storylm %s \"", p->name, cmd->name);
    for (int i = 0; i < n; i++) fprintf(stderr, "%s%s", i ? " " : "", words[i]);
    fprintf(stderr, "\"\n");
}

/* The other arguments into the positional parameters, in order. */
static int set_positionals(const Command *cmd, const ParamList *l, const char **args, int n, void *params,
                           ParamsGiven *given) {
    int k = 0;
    const Param *last = NULL; /* the last positional given */
    for (int i = 0; i < l->n; i++) {
        const Param *p = l->at[i].p;
        if (!(p->flags & PARAM_POSITIONAL) || !slm_param_from(p, PARAM_FROM_CLI)) continue;
        if (k == n) {
            if (p->flags & PARAM_REQUIRED) return args_usage_error(cmd, "missing argument; usage: %s", cmd->usage), -1;
            continue;
        }
        Error e = {0};
        if (slm_param_set_text(&l->at[i], params, args[k++], &e)) return args_param_error(cmd, &e), -1;
        slm_params_mark(given, i);
        last = p;
    }
    if (k < n && last && ((last->flags & PARAM_TEXT) || !strcmp(last->name, "TEXT")))
        return unquoted_text(cmd, last, args + k - 1, n - k + 1), -1;
    if (k < n) return args_usage_error(cmd, "unexpected argument '%s'", args[k]), -1;
    return 0;
}

int args_parse(const Command *cmd, int argc, char **argv, const ParamTable *t, void *params, ParamsGiven *given) {
    ParamList l;
    slm_params_list(t, &l);
    if (given) *given = (ParamsGiven){0};
    const char **args = malloc(sizeof *args * (argc > 0 ? (size_t)argc : 1));
    if (!args) return fprintf(stderr, "storylm %s: out of memory\n", cmd->name), -1;
    int n = 0, only_args = 0, rc = 0;
    for (int i = 1; i < argc && !rc; i++) {
        const char *arg = argv[i];
        int is_flag = !only_args && arg[0] == '-' && arg[1] != '\0' && !(arg[1] >= '0' && arg[1] <= '9');
        if (!only_args && strcmp(arg, "--") == 0) {
            only_args = 1;
        } else if (is_flag && (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0)) {
            args_print_help(cmd, t, params);
            rc = 1;
        } else if (!is_flag) {
            args[n++] = arg;
        } else {
            const char *attached;
            int o = find_option(cmd, &l, arg, &attached);
            if (o < 0)
                unknown_option(cmd, &l, arg), rc = -1;
            else if (set_option(cmd, &l, o, argc, argv, &i, params, attached))
                rc = -1;
            else
                slm_params_mark(given, o);
        }
    }
    if (!rc) rc = set_positionals(cmd, &l, args, n, params, given);
    free(args);
    return rc;
}
