/* Parameters, declared once: a verb's table of parameters (name, type,
 * range, default, help), each bound to a field of the verb's own struct by
 * its offset. From the one table the command line parses its options and
 * prints --help (src/cli/args.c), the server reads a request's JSON fields
 * (src/server), Python checks its keywords (src/api/pyapi.c), the library
 * checks values it is handed (the sampler's settings), and /api/views and
 * docs/cli.md describe them. Tables compose: an entry of type PARAM_GROUP
 * brings a shared group (the model, the ablation, the sampler's settings)
 * at the offset of the struct it fills, so each group is written once.
 *
 * A value out of its table is refused with an Error that names the
 * parameter and the value given (Error.param), which each front end says in
 * its own words: `--temperature 200` on the command line, `temperature=200`
 * in Python, `"temperature": 200` in a request. Never prints. */
#ifndef STORYLM_PARAMS_H
#define STORYLM_PARAMS_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "storylm/error.h"

/* A repeatable string option (--model A --model B), or a request's list of strings. */
#define STRING_LIST_MAX 64
typedef struct StringList {
    const char *items[STRING_LIST_MAX];
    int count;
} StringList;

typedef enum {
    PARAM_BOOL,    /* bool: a flag on the command line, true or false in JSON */
    PARAM_INT,     /* int in min..max (min == max: any) */
    PARAM_DOUBLE,  /* double in min..max (min == max: any finite) */
    PARAM_STRING,  /* const char *, among choices when given */
    PARAM_STRINGS, /* StringList: a repeated option, a request's string or list of strings */
    PARAM_CHOICE,  /* int (an enum): the index of the value among choices ("zero,mean": zero 0, mean 1) */
    PARAM_HEADS,   /* const char *: heads named as head_list.h reads them ("3", "2:3", "1:3,2:5"); a request and
                    * Python may send a number or a list of numbers and names ([3, "2:5"]), read as that text */
    PARAM_GROUP    /* the parameters of group, filling the struct at offset */
} ParamType;

/* Param.flags */
enum {
    PARAM_POSITIONAL = 1,    /* a positional argument of the command line (in table order), not --name */
    PARAM_REQUIRED = 2,      /* must be given */
    PARAM_CLI_ONLY = 4,      /* the command line only: a file to write, how to print, threads */
    PARAM_SERVED = 8,        /* a request's field that another reader takes (the session's model and ablation) */
    PARAM_TEXT = 16,         /* a text to run: a request's is bounded (64 KiB, 4096 tokens) */
    PARAM_REQUEST_ONLY = 32, /* a request's field only: another name the page uses */
    PARAM_STORIES = 64,      /* the STORIES file a view's session reads (the server: its own --stories) */
    PARAM_NO_REQUEST = 128,  /* the command line and Python, not a request (the server has its own) */
    PARAM_NO_PYTHON = 256,   /* the command line and a request, not a Python keyword */
    PARAM_NONEMPTY = 512     /* a text (each text of a list) of one byte or more */
};

/* Who gives the values: the front ends, each taking the parameters its flags allow. */
typedef enum { PARAM_FROM_CLI = 1, PARAM_FROM_REQUEST = 2, PARAM_FROM_PYTHON = 4 } ParamFront;

struct ParamTable;

/* One parameter: an option ("--up-to D") or positional argument of the
 * command line, a request's field ("up_to") and a Python keyword (up_to). */
typedef struct Param {
    const char *name; /* the command line's long name, "up-to" (a positional's name in usage: "TEXT") */
    char short_name;  /* 'm', or 0 */
    ParamType type;
    size_t offset;    /* of its field in the struct the table fills (a group: of the group's struct) */
    const char *meta; /* the value's placeholder in --help: "N" */
    const char *help;
    double min, max;        /* the range of a number (min == max: any) */
    double def;             /* the default of a number (a bool: 0) */
    const char *def_string; /* the default of a string or a choice (NULL: none; a choice: its first) */
    int flags;              /* PARAM_* */
    const char *key;        /* the request's field and Python's keyword when not the name with '-' as '_' (NULL) */
    const char *alias;      /* another field name a request may use, an older one (NULL) */
    const char *choices;    /* a string's or choice's values, "zero,mean" (NULL: any string) */
    double served_max;      /* a request's largest value when below max (the server bounds its work; 0: max) */
    const struct ParamTable *group; /* PARAM_GROUP: its table */
    /* What help goes on to list that is known only at run time (the registry's
     * architectures), into buf (size); NULL: help says it all. */
    void (*help_more)(char *buf, size_t size);
} Param;

typedef struct ParamTable {
    const char *name; /* "sampling", "generate": what the table is of */
    const Param *params;
    int n;
} ParamTable;

#define PARAMS_COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))
/* A group: the parameters of table, filling the struct at offset_. */
#define PARAM_GROUP_AT(offset_, table)                                                                                 \
    { .name = #table, .type = PARAM_GROUP, .offset = (offset_), .group = &(table) }
/* The same filling the member field of T. */
#define PARAM_GROUP_OF(T, field, table) PARAM_GROUP_AT(offsetof(T, field), table)

/* ---- a table with its groups opened: each parameter and where its field is ---- */

#define PARAMS_MAX 128
typedef struct ParamRef {
    const Param *p;
    size_t offset; /* of its field in the struct the whole table fills */
} ParamRef;
typedef struct ParamList {
    ParamRef at[PARAMS_MAX];
    int n;
} ParamList;
/* Which parameters were given (by a command line or a request), by index in a ParamList. */
typedef struct ParamsGiven {
    uint64_t bits[PARAMS_MAX / 64];
} ParamsGiven;

/* t's parameters in order, each group's in its place (at most PARAMS_MAX). */
void slm_params_list(const ParamTable *t, ParamList *out);
/* The field of r in params. */
void *slm_param_field(const ParamRef *r, void *params);
/* The parameter of l called name (its command-line name), or -1. */
int slm_params_find(const ParamList *l, const char *name);
/* name (the command-line name) was given. */
bool slm_params_given(const ParamsGiven *g, const ParamList *l, const char *name);
void slm_params_mark(ParamsGiven *g, int i);
bool slm_params_marked(const ParamsGiven *g, int i);

/* p is a parameter of front (its flags allow it). */
bool slm_param_from(const Param *p, ParamFront front);
/* p's request field and Python keyword: key, else name in lower case with '-' as '_' ("TEXT" is "text"). */
const char *slm_param_key(const Param *p, char *buf, size_t size);

/* p's help with what help_more adds, into buf (size): what --help, /api/views and docs/cli.md say. */
const char *slm_param_help(const Param *p, char *buf, size_t size);

/* Fills t's fields of params with their defaults (the rest of params is left as it is). */
void slm_params_init(const ParamTable *t, void *params);

/* The index of s among p's choices, or -1 (s NULL: -1). A string parameter
 * without choices takes any string (0). */
int slm_param_choice(const Param *p, const char *s);
/* Choice i of p into buf (size), "" when there is none. */
const char *slm_param_choice_name(const Param *p, int i, char *buf, size_t size);
/* p's choices in words, "zero or mean", into buf (size). */
void slm_param_choices_text(const Param *p, char *buf, size_t size);
/* The default of r as --help says it, from the field in params (filled:
 * "(default: 0.8)" reads it); "" when there is none to say (bools, lists,
 * strings that are NULL). */
void slm_param_default_text(const ParamRef *r, const void *params, char *buf, size_t size);

/* The command line's value text for r (a number parsed and range-checked,
 * a choice found, a string taken, a list's next item), into params. */
int slm_param_set_text(const ParamRef *r, void *params, const char *text, Error *e);

/* How slm_params_read_json reads an object. */
typedef struct ParamRead {
    ParamFront front;   /* PARAM_FROM_REQUEST or PARAM_FROM_PYTHON: which parameters, which range */
    bool skip_served;   /* PARAM_SERVED fields are known but left to their own reader */
    bool allow_unknown; /* fields of no parameter of the table are passed over (a reader of a few fields) */
    size_t max_text;    /* bytes of a PARAM_TEXT string (0: any) */
    size_t max_string;  /* bytes of any other string (0: any) */
    char *scratch; /* room for texts made while reading ([3, "2:5"] becomes "3,2:5"), one after another; NULL: none */
    size_t scratch_size;
    /* checks each string (len bytes, named what): UTF-8 without NUL (slm_utf8_validate); NULL: none */
    int (*check_text)(const char *text, size_t len, const char *what, Error *e);
} ParamRead;
/* Reads obj's fields (a JSON object) into params (their defaults set
 * first by the caller), each with its parameter's type, range (served_max
 * for a request) and choices; marks those given. A field of no parameter,
 * a value of the wrong type or out of range, and a missing required field
 * are refused (-1 with e naming it: Error.param). A string may be null (as
 * if left out); a number may not (a page's empty box sends null, which is
 * not the default its user asked for). Strings point into obj. */
int slm_params_read_json(const ParamTable *t, const cJSON *obj, const ParamRead *how, void *params, ParamsGiven *given,
                         Error *e);

/* Checks a filled params struct against t: numbers in range, strings among
 * their choices, required ones given (front's parameters only). The
 * library's own check of values handed to it (the sampler's settings). */
int slm_params_check(const ParamTable *t, const void *params, ParamFront front, Error *e);

/* The same for the parameters whose fields lie in [from, to) of params only
 * (a part of the struct, such as the options handed to the generator). */
int slm_params_check_part(const ParamTable *t, const void *params, size_t from, size_t to, ParamFront front, Error *e);

/* The parameters of t that front takes, as JSON: [{"name", "key", "type",
 * "help", "default", "min", "max", "choices", "positional", "required",
 * "cli_only", "request_only"}] with the defaults read from defaults (a
 * struct t filled; NULL: the table's). What /api/views lists and Python
 * reads. front 0: every parameter. NULL when out of memory. */
cJSON *slm_params_describe(const ParamTable *t, const void *defaults, int front);

/* Fails naming r's parameter (value: as given, text: it is a text) with the
 * message that follows it ("is out of range (0 to 100)"). */
int slm_param_fail(Error *e, const Param *p, ErrorParamKind kind, const char *value, bool text, const char *hint,
                   const char *fmt, ...) __attribute__((format(printf, 7, 8)));

/* The name of names[0..n) that word is most likely a typo of (at most 2
 * edits, fewer than half its letters), or NULL. */
const char *slm_nearest_name(const char *word, const char *const *names, int n);

/* --kernels, the same flag in every verb that takes it (train, eval); the includer
 * has kernels.h's SLM_KERNELS_DEFAULT and SLM_KERNELS_CHOICES. */
#define KERNELS_PARAM(T, field, help_)                                                                                 \
    {                                                                                                                  \
        .name = "kernels", .type = PARAM_CHOICE, .offset = offsetof(T, field), .meta = "K", .help = help_,             \
        .def_string = SLM_KERNELS_DEFAULT, .choices = SLM_KERNELS_CHOICES /* Kernels' order (kernels.h) */             \
    }

#endif
