/* Command-line flags: see args.h. */
#include "args.h"

#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "storylm/parse.h"

int args_usage_error(const Command *cmd, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "storylm %s: error: ", cmd->name);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n---> HINT: see 'storylm %s --help'\n", cmd->name);
    va_end(ap);
    return 2;
}

static void print_default(const Option *o) {
    switch (o->kind) {
        case OPT_INT: printf(" (default: %d)", *(int *)o->target); break;
        case OPT_DOUBLE: printf(" (default: %g)", *(double *)o->target); break;
        case OPT_STRING: {
            const char *s = *(const char **)o->target;
            if (s) printf(" (default: %s)", s);
            break;
        }
        default: break;
    }
}

void args_print_help(const Command *cmd, const Option *opts, int n_opts) {
    printf("usage: %s\n\n%s\n", cmd->usage, cmd->description);
    printf("\noptions:\n");
    for (int i = 0; i < n_opts; i++) {
        const Option *o = &opts[i];
        char left[64];
        int n = o->short_name ? snprintf(left, sizeof left, "-%c, --%s", o->short_name, o->name)
                              : snprintf(left, sizeof left, "    --%s", o->name);
        if (o->kind != OPT_BOOL && n < (int)sizeof left)
            snprintf(left + n, sizeof left - n, " %s", o->meta ? o->meta : "X");
        printf("  %-28s %s", left, o->help);
        print_default(o);
        printf("\n");
    }
    printf("  %-28s %s\n", "-h, --help", "show this help");
}

/* Edit distance (insertions, deletions, substitutions) of a and b, both
 * under 64 characters; larger for longer words, which no suggestion needs. */
static int edit_distance(const char *a, const char *b) {
    size_t la = strlen(a), lb = strlen(b);
    if (la >= 64 || lb >= 64) return 1000;
    int row[64];
    for (size_t j = 0; j <= lb; j++) row[j] = (int)j;
    for (size_t i = 1; i <= la; i++) {
        int diag = row[0];
        row[0] = (int)i;
        for (size_t j = 1; j <= lb; j++) {
            int up = row[j], best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best) best = up + 1;
            if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
            diag = up;
            row[j] = best;
        }
    }
    return row[lb];
}

const char *args_nearest(const char *word, const char *const *names, int n) {
    const char *best = NULL;
    int best_d = 1000;
    for (int i = 0; i < n; i++) {
        int d = edit_distance(word, names[i]);
        if (d < best_d) best_d = d, best = names[i];
    }
    /* a typo, not another word: at most 2 edits, and fewer than half the letters */
    return best && best_d <= 2 && 2 * best_d < (int)strlen(word) ? best : NULL;
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

/* The option an alias names in cmd (n characters of name), or NULL. */
static const Option *find_alias(const Command *cmd, const Option *opts, int n, const char *name, size_t len) {
    for (size_t a = 0; a < sizeof option_aliases / sizeof option_aliases[0]; a++) {
        const OptionAlias *al = &option_aliases[a];
        if ((al->verb && strcmp(al->verb, cmd->name) != 0) || strlen(al->old_name) != len ||
            strncmp(al->old_name, name, len) != 0)
            continue;
        for (int i = 0; i < n; i++)
            if (strcmp(opts[i].name, al->name) == 0) {
                if (al->warned)
                    fprintf(stderr, "storylm %s: warning: --%s is now --%s; the old name goes in the next release\n",
                            cmd->name, al->old_name, al->name);
                return &opts[i];
            }
    }
    return NULL;
}

/* The option arg names: "-n", "-n10" (a short option with its value
 * attached: *attached points at "10"), "--name" or "--name=value". */
static const Option *find_option(const Command *cmd, const Option *opts, int n, const char *arg,
                                 const char **attached) {
    *attached = NULL;
    if (arg[1] != '-') {
        for (int i = 0; i < n; i++)
            if (opts[i].short_name == arg[1] && (!arg[2] || opts[i].kind != OPT_BOOL)) {
                if (arg[2]) *attached = arg + 2;
                return &opts[i];
            }
        return NULL;
    }
    const char *name = arg + 2;
    size_t len = strcspn(name, "=");
    for (int i = 0; i < n; i++)
        if (strlen(opts[i].name) == len && strncmp(opts[i].name, name, len) == 0) return &opts[i];
    return find_alias(cmd, opts, n, name, len);
}

/* "unknown option '--stpes'", with the nearest long name when it is a typo. */
static void unknown_option(const Command *cmd, const Option *opts, int n, const char *arg) {
    const char *names[128];
    int k = 0;
    for (int i = 0; i < n && k < 128; i++) names[k++] = opts[i].name;
    char word[64];
    snprintf(word, sizeof word, "%.*s", (int)strcspn(arg + strspn(arg, "-"), "="), arg + strspn(arg, "-"));
    const char *near = args_nearest(word, names, k);
    if (near)
        args_usage_error(cmd, "unknown option '%s'; did you mean --%s?", arg, near);
    else
        args_usage_error(cmd, "unknown option '%s'", arg);
}

/* Every number a flag takes goes through parse.h: no overflow, no wrap. */
static int set_value(const Command *cmd, const Option *o, const char *value) {
    switch (o->kind) {
        case OPT_INT: {
            int any = o->min == o->max, x = 0;
            int min = any ? INT_MIN : (int)o->min, max = any ? INT_MAX : (int)o->max;
            int rc = slm_parse_int(value, min, max, &x);
            if (rc == PARSE_NOT_NUMBER)
                return args_usage_error(cmd, "--%s wants a whole number, not '%s'", o->name, value);
            if (rc == PARSE_OUT_OF_RANGE)
                return args_usage_error(cmd, "--%s %s is out of range (%d to %d)", o->name, value, min, max);
            *(int *)o->target = x;
            return 0;
        }
        case OPT_DOUBLE: {
            double x = 0;
            int rc = slm_parse_double(value, o->min == o->max ? -INFINITY : o->min,
                                      o->min == o->max ? INFINITY : o->max, &x);
            if (rc == PARSE_NOT_NUMBER) return args_usage_error(cmd, "--%s wants a number, not '%s'", o->name, value);
            if (rc == PARSE_OUT_OF_RANGE)
                return args_usage_error(cmd, "--%s %s is out of range (%g to %g)", o->name, value, o->min, o->max);
            *(double *)o->target = x;
            return 0;
        }
        case OPT_STRING: *(const char **)o->target = value; return 0;
        case OPT_STRINGS: {
            StringList *l = o->target;
            if (l->count == (int)(sizeof l->items / sizeof l->items[0]))
                return args_usage_error(cmd, "too many --%s options", o->name);
            l->items[l->count++] = value;
            return 0;
        }
        case OPT_BOOL: *(bool *)o->target = true; return 0;
    }
    return 0;
}

int args_parse(const Command *cmd, int argc, char **argv, const Option *opts, int n_opts, const char **positional,
               int min_positional, int max_positional, int *n_positional) {
    int np = 0, only_positional = 0;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        int is_flag = !only_positional && arg[0] == '-' && arg[1] != '\0' && !(arg[1] >= '0' && arg[1] <= '9');
        if (!only_positional && strcmp(arg, "--") == 0) {
            only_positional = 1;
            continue;
        }
        if (is_flag && (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0)) {
            args_print_help(cmd, opts, n_opts);
            return 1;
        }
        if (!is_flag) {
            if (np >= max_positional) {
                args_usage_error(cmd, "unexpected argument '%s'", arg);
                return -1;
            }
            positional[np++] = arg;
            continue;
        }
        const char *attached;
        const Option *o = find_option(cmd, opts, n_opts, arg, &attached);
        if (!o) {
            unknown_option(cmd, opts, n_opts, arg);
            return -1;
        }
        const char *eq = arg[1] == '-' ? strchr(arg, '=') : NULL;
        if (o->kind == OPT_BOOL) {
            if (eq) {
                args_usage_error(cmd, "--%s takes no value", o->name);
                return -1;
            }
            set_value(cmd, o, NULL);
            continue;
        }
        const char *value = eq ? eq + 1 : attached ? attached : (i + 1 < argc ? argv[++i] : NULL);
        if (!value) {
            args_usage_error(cmd, "--%s needs a value (%s)", o->name, o->meta ? o->meta : "X");
            return -1;
        }
        if (set_value(cmd, o, value)) return -1;
    }
    if (np < min_positional) {
        args_usage_error(cmd, "missing argument; usage: %s", cmd->usage);
        return -1;
    }
    *n_positional = np;
    return 0;
}

bool args_given(int argc, char **argv, const char *name, char short_name) {
    size_t n = strlen(name);
    for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++) {
        const char *a = argv[i];
        if (a[0] == '-' && a[1] == '-' && strncmp(a + 2, name, n) == 0 && (a[2 + n] == '\0' || a[2 + n] == '='))
            return true;
        if (short_name && a[0] == '-' && a[1] == short_name) return true; /* "-s 5" or "-s5" */
    }
    return false;
}
