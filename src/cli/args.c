/* Command-line flags: see args.h. */
#include "args.h"

#include <errno.h>
#include <math.h>
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

static void print_default(const Option *o) {
    switch (o->kind) {
    case OPT_INT: printf(" (default %d)", *(int *)o->target); break;
    case OPT_DOUBLE: printf(" (default %g)", *(double *)o->target); break;
    case OPT_STRING: {
        const char *s = *(const char **)o->target;
        if (s) printf(" (default %s)", s);
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
        if (o->kind != OPT_BOOL && n < (int)sizeof left) snprintf(left + n, sizeof left - n, " %s", o->meta ? o->meta : "X");
        printf("  %-28s %s", left, o->help);
        print_default(o);
        printf("\n");
    }
    printf("  %-28s %s\n", "-h, --help", "show this help");
}

static const Option *find_option(const Option *opts, int n, const char *arg) {
    if (arg[1] != '-') {
        for (int i = 0; i < n; i++)
            if (arg[1] && !arg[2] && opts[i].short_name == arg[1]) return &opts[i];
        return NULL;
    }
    const char *name = arg + 2;
    size_t len = strcspn(name, "=");
    for (int i = 0; i < n; i++)
        if (strlen(opts[i].name) == len && strncmp(opts[i].name, name, len) == 0) return &opts[i];
    return NULL;
}

static int in_range(const Option *o, double x) { return o->min == o->max || (x >= o->min && x <= o->max); }

static int set_value(const Command *cmd, const Option *o, const char *value) {
    char *end;
    errno = 0;
    switch (o->kind) {
    case OPT_INT: {
        long x = strtol(value, &end, 10);
        if (*value == '\0' || *end || errno) return args_usage_error(cmd, "--%s wants a whole number, not '%s'", o->name, value);
        if (!in_range(o, (double)x))
            return args_usage_error(cmd, "--%s %ld is out of range (%g to %g)", o->name, x, o->min, o->max);
        *(int *)o->target = (int)x;
        return 0;
    }
    case OPT_DOUBLE: {
        double x = strtod(value, &end);
        if (*value == '\0' || *end || errno || !isfinite(x))
            return args_usage_error(cmd, "--%s wants a number, not '%s'", o->name, value);
        if (!in_range(o, x)) return args_usage_error(cmd, "--%s %g is out of range (%g to %g)", o->name, x, o->min, o->max);
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
        const Option *o = find_option(opts, n_opts, arg);
        if (!o) {
            args_usage_error(cmd, "unknown option '%s'", arg);
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
        const char *value = eq ? eq + 1 : (i + 1 < argc ? argv[++i] : NULL);
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
        if (short_name && a[0] == '-' && a[1] == short_name && a[2] == '\0') return true;
    }
    return false;
}
