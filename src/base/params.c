/* Parameters declared once: see params.h. */
#include "storylm/params.h"

#include <ctype.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "storylm/parse.h"

/* ---- the table, its groups opened ---- */

static void list_into(const ParamTable *t, size_t base, ParamList *out) {
    for (int i = 0; i < t->n && out->n < PARAMS_MAX; i++) {
        const Param *p = &t->params[i];
        if (p->type == PARAM_GROUP)
            list_into(p->group, base + p->offset, out);
        else
            out->at[out->n++] = (ParamRef){p, base + p->offset};
    }
}

void slm_params_list(const ParamTable *t, ParamList *out) {
    out->n = 0;
    list_into(t, 0, out);
}

void *slm_param_field(const ParamRef *r, void *params) { return (char *)params + r->offset; }

int slm_params_find(const ParamList *l, const char *name) {
    for (int i = 0; i < l->n; i++)
        if (strcmp(l->at[i].p->name, name) == 0) return i;
    return -1;
}

void slm_params_mark(ParamsGiven *g, int i) {
    if (g && i >= 0 && i < PARAMS_MAX) g->bits[i / 64] |= (uint64_t)1 << (i % 64);
}

bool slm_params_marked(const ParamsGiven *g, int i) {
    return g && i >= 0 && i < PARAMS_MAX && (g->bits[i / 64] >> (i % 64) & 1);
}

bool slm_params_given(const ParamsGiven *g, const ParamList *l, const char *name) {
    return slm_params_marked(g, slm_params_find(l, name));
}

bool slm_param_from(const Param *p, ParamFront front) {
    int f = p->flags;
    switch (front) {
        case PARAM_FROM_CLI: return !(f & PARAM_REQUEST_ONLY);
        case PARAM_FROM_REQUEST: return !(f & (PARAM_CLI_ONLY | PARAM_NO_REQUEST));
        case PARAM_FROM_PYTHON: return !(f & (PARAM_CLI_ONLY | PARAM_REQUEST_ONLY | PARAM_NO_PYTHON));
    }
    return false;
}

const char *slm_param_key(const Param *p, char *buf, size_t size) {
    if (p->key) return p->key;
    size_t n = 0;
    for (; p->name[n] && n + 1 < size; n++) /* a positional's "TEXT" is "text" */
        buf[n] = p->name[n] == '-' ? '_' : (char)tolower((unsigned char)p->name[n]);
    buf[n] = '\0';
    return buf;
}

/* ---- choices ---- */

int slm_param_choice(const Param *p, const char *s) {
    if (!s) return -1;
    if (!p->choices) return p->type == PARAM_CHOICE ? -1 : 0;
    size_t n = strlen(s);
    int i = 0;
    for (const char *c = p->choices; *c; i++) {
        size_t len = strcspn(c, ",");
        if (len == n && strncmp(c, s, n) == 0) return i;
        c += len + (c[len] == ',');
    }
    return -1;
}

const char *slm_param_choice_name(const Param *p, int i, char *buf, size_t size) {
    buf[0] = '\0';
    const char *c = p->choices;
    for (int k = 0; c && *c; k++) {
        size_t len = strcspn(c, ",");
        if (k == i) {
            snprintf(buf, size, "%.*s", (int)len, c);
            break;
        }
        c += len + (c[len] == ',');
    }
    return buf;
}

void slm_param_choices_text(const Param *p, char *buf, size_t size) {
    size_t used = 0;
    buf[0] = '\0';
    for (const char *c = p->choices; c && *c && used < size;) {
        size_t len = strcspn(c, ",");
        const char *sep = used == 0 ? "" : c[len] ? ", " : " or ";
        used += (size_t)snprintf(buf + used, size - used, "%s%.*s", sep, (int)len, c);
        c += len + (c[len] == ',');
    }
}

/* ---- defaults ---- */

static void init_field(const ParamRef *r, void *params) {
    const Param *p = r->p;
    void *t = slm_param_field(r, params);
    switch (p->type) {
        case PARAM_BOOL: *(bool *)t = p->def != 0; break;
        case PARAM_INT: *(int *)t = (int)p->def; break;
        case PARAM_DOUBLE: *(double *)t = p->def; break;
        case PARAM_STRING:
        case PARAM_HEADS: *(const char **)t = p->def_string; break;
        case PARAM_STRINGS: ((StringList *)t)->count = 0; break;
        case PARAM_CHOICE: { /* the enum's value of the default's name: the first choice when none is named */
            int i = p->def_string ? slm_param_choice(p, p->def_string) : 0;
            *(int *)t = i < 0 ? 0 : i;
            break;
        }
        case PARAM_GROUP: break;
    }
}

void slm_params_init(const ParamTable *t, void *params) {
    ParamList l;
    slm_params_list(t, &l);
    for (int i = 0; i < l.n; i++) init_field(&l.at[i], params);
}

void slm_param_default_text(const ParamRef *r, const void *params, char *buf, size_t size) {
    const void *t = (const char *)params + r->offset;
    buf[0] = '\0';
    switch (r->p->type) {
        case PARAM_INT: snprintf(buf, size, "%d", *(const int *)t); break;
        case PARAM_DOUBLE: snprintf(buf, size, "%g", *(const double *)t); break;
        case PARAM_STRING:
        case PARAM_HEADS:
            if (*(const char *const *)t) snprintf(buf, size, "%s", *(const char *const *)t);
            break;
        case PARAM_CHOICE: slm_param_choice_name(r->p, *(const int *)t, buf, size); break;
        default: break;
    }
}

/* ---- errors that name the parameter ---- */

int slm_param_fail(Error *e, const Param *p, ErrorParamKind kind, const char *value, bool text, const char *hint,
                   const char *fmt, ...) {
    if (!e) return -1;
    char msg[sizeof e->message], key[64];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    FAIL(e, hint, "%s", msg);
    slm_error_set_param(e, kind, p->name, slm_param_key(p, key, sizeof key), value, text,
                        (p->flags & PARAM_POSITIONAL) != 0);
    return -1;
}

/* The range a front end allows: [*lo, *hi] (a request's hi may be served_max). */
static void range_of(const Param *p, ParamFront front, double *lo, double *hi) {
    int any = p->min == p->max;
    *lo = any ? (p->type == PARAM_INT ? INT_MIN : -INFINITY) : p->min;
    *hi = any ? (p->type == PARAM_INT ? INT_MAX : INFINITY) : p->max;
    if (front == PARAM_FROM_REQUEST && p->served_max != 0 && p->served_max < *hi) *hi = p->served_max;
}

static int out_of_range(Error *e, const Param *p, const char *value, double lo, double hi) {
    if (p->type == PARAM_INT)
        return slm_param_fail(e, p, ERROR_PARAM_VALUE, value, false, NULL, "is out of range (%d to %d)", (int)lo,
                              (int)hi);
    return slm_param_fail(e, p, ERROR_PARAM_VALUE, value, false, NULL, "is out of range (%g to %g)", lo, hi);
}

static int not_a_choice(Error *e, const Param *p, const char *value) {
    char choices[160];
    slm_param_choices_text(p, choices, sizeof choices);
    return slm_param_fail(e, p, ERROR_PARAM_VALUE, value, true, NULL, "is not %s", choices);
}

static int empty_text(Error *e, const Param *p) {
    return slm_param_fail(e, p, ERROR_PARAM_VALUE, "", true, NULL, "is empty: give a text of one character or more");
}

/* A string value checked against p's choices and, when it must not be, emptiness. */
static int check_string(const Param *p, const char *s, Error *e) {
    if ((p->flags & PARAM_NONEMPTY) && s && !s[0]) return empty_text(e, p);
    if (p->choices && s && slm_param_choice(p, s) < 0) return not_a_choice(e, p, s);
    return 0;
}

static int add_to_list(const Param *p, StringList *l, const char *s, Error *e) {
    if (l->count == STRING_LIST_MAX)
        return slm_param_fail(e, p, ERROR_PARAM_VALUE, NULL, false, NULL, "is given more than %d times",
                              STRING_LIST_MAX);
    if (check_string(p, s, e)) return -1;
    l->items[l->count++] = s;
    return 0;
}

/* ---- from the command line's text ---- */

int slm_param_set_text(const ParamRef *r, void *params, const char *text, Error *e) {
    const Param *p = r->p;
    void *t = slm_param_field(r, params);
    double lo, hi;
    range_of(p, PARAM_FROM_CLI, &lo, &hi);
    switch (p->type) {
        case PARAM_INT: { /* through parse.h: no overflow, no wrap */
            int x = 0, rc = slm_parse_int(text, (int)lo, (int)hi, &x);
            if (rc == PARSE_NOT_NUMBER)
                return slm_param_fail(e, p, ERROR_PARAM_TYPE, text, true, NULL, "is not a whole number");
            if (rc == PARSE_OUT_OF_RANGE) return out_of_range(e, p, text, lo, hi);
            *(int *)t = x;
            return 0;
        }
        case PARAM_DOUBLE: {
            double x = 0;
            int rc = slm_parse_double(text, lo, hi, &x);
            if (rc == PARSE_NOT_NUMBER)
                return slm_param_fail(e, p, ERROR_PARAM_TYPE, text, true, NULL, "is not a number");
            if (rc == PARSE_OUT_OF_RANGE) return out_of_range(e, p, text, lo, hi);
            *(double *)t = x;
            return 0;
        }
        case PARAM_CHOICE: {
            int i = slm_param_choice(p, text);
            if (i < 0) return not_a_choice(e, p, text);
            *(int *)t = i;
            return 0;
        }
        case PARAM_STRING:
        case PARAM_HEADS:
            if (check_string(p, text, e)) return -1;
            *(const char **)t = text;
            return 0;
        case PARAM_STRINGS: return add_to_list(p, t, text, e);
        case PARAM_BOOL: *(bool *)t = true; return 0;
        case PARAM_GROUP: break;
    }
    return 0;
}

/* ---- from a JSON object (a request, or Python's keywords) ---- */

/* At most max bytes of s into buf (size), cut at a character, "..." after a cut. */
static void cut_text(char *buf, size_t size, const char *s, size_t max) {
    size_t n = strlen(s), cut = n > max ? max : n;
    while (cut > 0 && cut < n && ((unsigned char)s[cut] & 0xC0) == 0x80) cut--;
    snprintf(buf, size, "%.*s%s", (int)cut, s, cut < n ? "..." : "");
}

/* A JSON value as text, for a message: a number as written, a string as it is. */
static void json_value_text(const cJSON *v, char *buf, size_t size, bool *text) {
    *text = false;
    if (cJSON_IsString(v)) {
        cut_text(buf, size, v->valuestring, 80);
        *text = true;
    } else if (cJSON_IsNumber(v)) {
        double x = v->valuedouble;
        if (x == floor(x) && fabs(x) < 1e15)
            snprintf(buf, size, "%.0f", x);
        else
            snprintf(buf, size, "%.15g", x);
    } else { /* a list or an object: its first 80 bytes */
        char *s = cJSON_PrintUnformatted(v);
        cut_text(buf, size, s ? s : "?", 80);
        free(s);
    }
}

static int wrong_type(Error *e, const Param *p, const cJSON *v, const char *want) {
    char value[96];
    bool text;
    json_value_text(v, value, sizeof value, &text);
    return slm_param_fail(e, p, ERROR_PARAM_TYPE, value, text, NULL, "is not %s", want);
}

static int read_number(const Param *p, ParamFront front, const cJSON *v, void *t, Error *e) {
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble))
        return wrong_type(e, p, v, p->type == PARAM_INT ? "a whole number" : "a number");
    double x = v->valuedouble, lo, hi;
    range_of(p, front, &lo, &hi);
    char value[96];
    bool text;
    json_value_text(v, value, sizeof value, &text);
    if (p->type == PARAM_INT && x != floor(x)) return wrong_type(e, p, v, "a whole number");
    if (x < lo || x > hi) return out_of_range(e, p, value, lo, hi);
    if (p->type == PARAM_INT)
        *(int *)t = (int)x;
    else
        *(double *)t = x;
    return 0;
}

static int read_string(const Param *p, const ParamRead *how, const cJSON *v, void *t, Error *e) {
    if (cJSON_IsNull(v)) return 0; /* as if left out */
    if (!cJSON_IsString(v)) return wrong_type(e, p, v, "a string");
    size_t n = strlen(v->valuestring), max = p->flags & PARAM_TEXT ? how->max_text : how->max_string;
    if (max && n > max)
        return slm_param_fail(e, p, ERROR_PARAM_TOO_LONG, NULL, false, "send a shorter text",
                              "is %zu bytes; the limit is %zu", n, max);
    char key[64];
    if (how->check_text && how->check_text(v->valuestring, n, slm_param_key(p, key, sizeof key), e)) return -1;
    if (p->type == PARAM_CHOICE) {
        int i = slm_param_choice(p, v->valuestring);
        if (i < 0) return not_a_choice(e, p, v->valuestring);
        *(int *)t = i;
        return 0;
    }
    if (check_string(p, v->valuestring, e)) return -1;
    *(const char **)t = v->valuestring;
    return 0;
}

/* The heads' text a request or Python makes of a number or a list ([3, "2:5"]
 * as "3,2:5"), each after the last in the reader's scratch (*used bytes of it
 * taken): the head reader (head_list.h) reads it as it reads --ablate's. */
#define HEADS_WANT "a head or a list of heads (like 3, \"2:3\", [3, 5] or \"1:3,2:5\")"
static int read_heads(const Param *p, const ParamRead *how, size_t *used, const cJSON *v, void *t, Error *e) {
    if (cJSON_IsNull(v) || cJSON_IsString(v)) return read_string(p, how, v, t, e);
    if (!cJSON_IsNumber(v) && !cJSON_IsArray(v)) return wrong_type(e, p, v, HEADS_WANT);
    char *buf = how->scratch ? how->scratch + *used : NULL;
    size_t size = how->scratch ? how->scratch_size - *used : 0, n = 0;
    const cJSON *one = cJSON_IsNumber(v) ? v : NULL, *h;
    char key[64];
    for (h = one ? one : v->child; h; h = one ? NULL : h->next) {
        const char *sep = n ? "," : "";
        char *at = buf && n < size ? buf + n : NULL; /* past the scratch: counted, not written */
        size_t room = at ? size - n : 0;
        if (cJSON_IsNumber(h) && h->valuedouble == floor(h->valuedouble) && fabs(h->valuedouble) <= 1e6)
            n += (size_t)snprintf(at, room, "%s%d", sep, (int)h->valuedouble);
        else if (cJSON_IsString(h) && !(how->check_text && how->check_text(h->valuestring, strlen(h->valuestring),
                                                                           slm_param_key(p, key, sizeof key), e)))
            n += (size_t)snprintf(at, room, "%s%s", sep, h->valuestring);
        else
            return cJSON_IsString(h) ? -1 : wrong_type(e, p, v, HEADS_WANT);
    }
    if (n && n >= size) return slm_param_fail(e, p, ERROR_PARAM_VALUE, NULL, false, NULL, "lists too many heads");
    *(const char **)t = n ? buf : NULL;
    *used += n ? n + 1 : 0;
    return 0;
}

/* "a" or ["a", "b"]: each item a string (of the list's kind), at most STRING_LIST_MAX. */
static int read_list(const Param *p, const ParamRead *how, const cJSON *v, StringList *l, Error *e) {
    if (cJSON_IsNull(v)) return 0;
    if (!cJSON_IsString(v) && !cJSON_IsArray(v)) return wrong_type(e, p, v, "a string or a list of strings");
    const cJSON *item, *one = cJSON_IsString(v) ? v : NULL;
    for (item = one ? one : v->child; item; item = one ? NULL : item->next) {
        const char *s = NULL;
        if (!cJSON_IsString(item)) return wrong_type(e, p, v, "a string or a list of strings");
        if (read_string(p, how, item, &s, e) || add_to_list(p, l, s, e)) return -1;
    }
    return 0;
}

/* used: bytes of how->scratch taken by the values read before. */
static int read_value(const Param *p, const ParamRead *how, size_t *used, const cJSON *v, void *t, Error *e) {
    switch (p->type) {
        case PARAM_BOOL:
            if (!cJSON_IsBool(v)) return wrong_type(e, p, v, "true or false");
            *(bool *)t = cJSON_IsTrue(v);
            return 0;
        case PARAM_INT:
        case PARAM_DOUBLE: return read_number(p, how->front, v, t, e);
        case PARAM_HEADS: return read_heads(p, how, used, v, t, e);
        case PARAM_STRING:
        case PARAM_CHOICE: return read_string(p, how, v, t, e);
        case PARAM_STRINGS: ((StringList *)t)->count = 0; return read_list(p, how, v, t, e);
        case PARAM_GROUP: break;
    }
    return 0;
}

/* The parameter of l a field named key is (its key or alias, among front's), or -1. */
static int param_of_key(const ParamList *l, ParamFront front, const char *key) {
    char buf[64];
    for (int i = 0; i < l->n; i++) {
        const Param *p = l->at[i].p;
        if (slm_param_from(p, front) &&
            (strcmp(slm_param_key(p, buf, sizeof buf), key) == 0 || (p->alias && strcmp(p->alias, key) == 0)))
            return i;
    }
    return -1;
}

/* "unknown field", with the nearest of front's keys when key is a typo of one. */
static int unknown_field(const ParamList *l, ParamFront front, const char *key, Error *e) {
    char keys[PARAMS_MAX][64];
    const char *names[PARAMS_MAX];
    int n = 0;
    for (int i = 0; i < l->n; i++)
        if (slm_param_from(l->at[i].p, front)) names[n++] = slm_param_key(l->at[i].p, keys[i], sizeof keys[i]);
    const char *near = slm_nearest_name(key, names, n);
    FAIL(e, NULL, "is not a parameter");
    slm_error_set_param(e, ERROR_PARAM_UNKNOWN, key, key, NULL, 0, 0);
    if (e && near) snprintf(e->param.near, sizeof e->param.near, "%s", near); /* a name of the table: short */
    return -1;
}

int slm_params_read_json(const ParamTable *t, const cJSON *obj, const ParamRead *how, void *params, ParamsGiven *given,
                         Error *e) {
    ParamList l;
    slm_params_list(t, &l);
    if (!cJSON_IsObject(obj)) return FAIL(e, NULL, "the parameters are not a JSON object");
    const cJSON *v;
    size_t used = 0;
    cJSON_ArrayForEach(v, obj) {
        int i = v->string ? param_of_key(&l, how->front, v->string) : -1;
        if (i < 0 && how->allow_unknown) continue;
        if (i < 0) return unknown_field(&l, how->front, v->string ? v->string : "", e);
        const Param *p = l.at[i].p;
        if (how->skip_served && (p->flags & PARAM_SERVED)) continue;
        if (read_value(p, how, &used, v, slm_param_field(&l.at[i], params), e)) return -1;
        if (!cJSON_IsNull(v)) slm_params_mark(given, i);
    }
    for (int i = 0; i < l.n; i++) {
        const Param *p = l.at[i].p;
        char key[64];
        if ((p->flags & PARAM_REQUIRED) && slm_param_from(p, how->front) &&
            !(how->skip_served && (p->flags & PARAM_SERVED)) && !(p->flags & PARAM_STORIES) &&
            !cJSON_GetObjectItemCaseSensitive(obj, slm_param_key(p, key, sizeof key)) &&
            !(p->alias && cJSON_GetObjectItemCaseSensitive(obj, p->alias)))
            return slm_param_fail(e, p, ERROR_PARAM_MISSING, NULL, false, NULL, "is missing");
    }
    return 0;
}

/* ---- a filled struct checked ---- */

static int check_field(const ParamRef *r, const void *params, ParamFront front, Error *e) {
    const Param *p = r->p;
    const void *t = (const char *)params + r->offset;
    char value[64];
    double lo, hi, x;
    switch (p->type) {
        case PARAM_INT:
        case PARAM_DOUBLE:
            if (strcmp(p->name, "threads") == 0) return 0; /* 0: the front end's default, every core */
            x = p->type == PARAM_INT ? *(const int *)t : *(const double *)t;
            range_of(p, front, &lo, &hi);
            snprintf(value, sizeof value, "%.15g", x);
            return x >= lo && x <= hi ? 0 : out_of_range(e, p, value, lo, hi);
        case PARAM_STRING:
        case PARAM_HEADS: {
            const char *s = *(const char *const *)t;
            if ((p->flags & PARAM_REQUIRED) && !s)
                return slm_param_fail(e, p, ERROR_PARAM_MISSING, NULL, false, NULL, "is missing");
            return check_string(p, s, e);
        }
        case PARAM_CHOICE: {
            int i = *(const int *)t;
            char name[64];
            snprintf(value, sizeof value, "%d", i);
            return slm_param_choice_name(p, i, name, sizeof name)[0] ? 0 : not_a_choice(e, p, value);
        }
        case PARAM_STRINGS: {
            const StringList *l = t;
            for (int k = 0; k < l->count; k++)
                if (check_string(p, l->items[k], e)) return -1;
            return 0;
        }
        default: return 0;
    }
}

int slm_params_check_part(const ParamTable *t, const void *params, size_t from, size_t to, ParamFront front, Error *e) {
    ParamList l;
    slm_params_list(t, &l);
    for (int i = 0; i < l.n; i++)
        if (slm_param_from(l.at[i].p, front) && l.at[i].offset >= from && l.at[i].offset < to &&
            check_field(&l.at[i], params, front, e))
            return -1;
    return 0;
}

int slm_params_check(const ParamTable *t, const void *params, ParamFront front, Error *e) {
    return slm_params_check_part(t, params, 0, (size_t)-1, front, e);
}

/* ---- described ---- */

static const char *type_name(ParamType t) {
    static const char *const names[] = {"bool", "int", "number", "string", "strings", "string", "heads", "group"};
    return names[t];
}

/* See params.h. */
const char *slm_param_help(const Param *p, char *buf, size_t size) {
    int n = snprintf(buf, size, "%s", p->help ? p->help : "");
    if (p->help_more && n >= 0 && (size_t)n + 1 < size) {
        if (n > 0) buf[n++] = ' ', buf[n] = '\0';
        p->help_more(buf + n, size - (size_t)n);
    }
    return buf;
}

static cJSON *describe_param(const ParamRef *r, const void *defaults) {
    const Param *p = r->p;
    const void *t = (const char *)defaults + r->offset;
    char key[64], def[128];
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "name", p->name);
    /* STORIES: "stories", the server's own --stories unless a request names a file under --data-dir */
    if (!(p->flags & (PARAM_CLI_ONLY | PARAM_STORIES)))
        cJSON_AddStringToObject(j, "key", slm_param_key(p, key, sizeof key));
    if (p->alias) cJSON_AddStringToObject(j, "alias", p->alias);
    cJSON_AddStringToObject(j, "type", type_name(p->type));
    char help[1024];
    cJSON_AddStringToObject(j, "help", slm_param_help(p, help, sizeof help));
    switch (p->type) {
        case PARAM_BOOL: cJSON_AddBoolToObject(j, "default", *(const bool *)t); break;
        case PARAM_INT:
        case PARAM_DOUBLE:
            if (strcmp(p->name, "threads") == 0)
                cJSON_AddNullToObject(j, "default"); /* one per core of the machine it runs on */
            else
                cJSON_AddNumberToObject(j, "default", p->type == PARAM_INT ? *(const int *)t : *(const double *)t);
            if (p->min != p->max) {
                cJSON_AddNumberToObject(j, "min", p->min);
                cJSON_AddNumberToObject(j, "max", p->max);
            }
            if (p->served_max) cJSON_AddNumberToObject(j, "served_max", p->served_max);
            break;
        default: /* a string, a choice, a list (none given) */
            slm_param_default_text(r, defaults, def, sizeof def);
            if (def[0] || p->type == PARAM_CHOICE)
                cJSON_AddStringToObject(j, "default", def);
            else
                cJSON_AddNullToObject(j, "default");
            break;
    }
    if (p->choices) cJSON_AddStringToObject(j, "choices", p->choices);
    cJSON_AddBoolToObject(j, "positional", (p->flags & PARAM_POSITIONAL) != 0);
    cJSON_AddBoolToObject(j, "required", (p->flags & PARAM_REQUIRED) != 0);
    cJSON_AddBoolToObject(j, "cli_only", (p->flags & PARAM_CLI_ONLY) != 0);
    cJSON_AddBoolToObject(j, "request_only", (p->flags & PARAM_REQUEST_ONLY) != 0);
    return j;
}

cJSON *slm_params_describe(const ParamTable *t, const void *defaults, int front) {
    ParamList l;
    slm_params_list(t, &l);
    void *own = NULL;
    if (!defaults) { /* the table's own defaults, in a struct as large as its fields reach */
        size_t size = 0;
        for (int i = 0; i < l.n; i++)
            if (l.at[i].offset + sizeof(StringList) > size) size = l.at[i].offset + sizeof(StringList);
        own = calloc(1, size);
        if (!own) return NULL;
        slm_params_init(t, own);
        defaults = own;
    }
    cJSON *list = cJSON_CreateArray();
    for (int i = 0; list && i < l.n; i++)
        if (!front || slm_param_from(l.at[i].p, (ParamFront)front))
            cJSON_AddItemToArray(list, describe_param(&l.at[i], defaults));
    free(own);
    return list;
}

/* ---- names ---- */

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

const char *slm_nearest_name(const char *word, const char *const *names, int n) {
    const char *best = NULL;
    int best_d = 1000;
    for (int i = 0; i < n; i++) {
        int d = edit_distance(word, names[i]);
        if (d < best_d) best_d = d, best = names[i];
    }
    /* a typo, not another word: at most 2 edits, and fewer than half the letters */
    return best && best_d <= 2 && 2 * best_d < (int)strlen(word) ? best : NULL;
}
