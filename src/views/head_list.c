/* Heads as the user names them: see head_list.h. */
#include "storylm/head_list.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "storylm/parse.h"

/* One head as written (layer from 1). */
typedef struct HeadItem {
    long long layer, head;
    int named; /* 1: "L:H"; 0: a plain H of the caller's layer, which the caller checks */
} HeadItem;

/* One "H" or "L:H" at p (a plain H: head H of layer `layer`) into *it, *end
 * past it: 0, or -1 when p does not start with one. */
static int read_item(const char *p, int layer, HeadItem *it, const char **end) {
    long long a, b;
    /* a number past int's range reads as out of range, not as unreadable */
    if (slm_parse_integer_prefix(p, end, -1000000, 1000000, &a) == PARSE_OUT_OF_RANGE) a = 1000000;
    if (*end == p) return -1;
    *it = (HeadItem){.layer = layer, .head = a};
    if (**end == ':') {
        const char *at = *end + 1;
        if (slm_parse_integer_prefix(at, end, -1000000, 1000000, &b) == PARSE_OUT_OF_RANGE) b = 1000000;
        if (*end == at) return -1; /* "2:" names no head */
        it->layer = a, it->head = b, it->named = 1;
    }
    return 0;
}

/* The heads c has, in the words a head is named in: "heads 0 to 7", or
 * "layers 1 to 2 of heads 0 to 7 (L:H, e.g. 2:7)". */
static void head_range(const ModelConfig *c, char *buf, size_t size) {
    int L = slm_model_layers(c), H = c->n_heads;
    if (L == 1)
        snprintf(buf, size, "heads 0 to %d", H - 1);
    else
        snprintf(buf, size, "layers 1 to %d of heads 0 to %d (L:H, e.g. %d:%d)", L, H - 1, L, H - 1);
}

/* 1 when s is a whole number as written ("8", "-1"): a value shown bare, not as a text. */
static int whole_number(const char *s) {
    s += *s == '-';
    if (!*s) return 0;
    while (*s >= '0' && *s <= '9') s++;
    return !*s;
}

/* Fails with the message of fmt after the parameter param and its value
 * (Error.param: each front end says them in its own words). */
__attribute__((format(printf, 5, 6))) static int fail_value(Error *e, const char *param, const char *value,
                                                            const char *hint, const char *fmt, ...) {
    char msg[sizeof e->message];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    FAIL(e, hint, "%s", msg);
    slm_error_set_param(e, ERROR_PARAM_VALUE, param, param, value, !whole_number(value), 0);
    return -1;
}

/* it checked against c (all: head -1 is every head of the layer); value is
 * one head (the message names it once) or a list (then the head in it too). */
static int check_item(const HeadItem *it, const ModelConfig *c, int all, int list, const char *param, const char *value,
                      Error *e) {
    int L = slm_model_layers(c);
    int layer_ok = !it->named || (it->layer >= 1 && it->layer <= L),
        head_ok = it->head >= (all ? -1 : 0) && it->head < c->n_heads;
    if (layer_ok && head_ok) return 0;
    char range[96], hint[160];
    head_range(c, range, sizeof range);
    if (L == 1)
        snprintf(hint, sizeof hint, "heads are numbered from 0%s", all ? "; -1 is all of them" : "");
    else
        snprintf(hint, sizeof hint, "name a head L:H, layers from 1 and heads from 0%s",
                 all ? "; L:-1 is all of layer L's" : "");
    const char *kind = layer_ok ? "head" : "layer";
    long long n = layer_ok ? it->head : it->layer;
    if (!list) return fail_value(e, param, value, hint, "is out of range: this model has %s", range);
    /* ':' joins the message to the list: "--ablate 3,12: head 12 is out of range" */
    return fail_value(e, param, value, hint, ": %s %lld is out of range: this model has %s", kind, n, range);
}

/* How heads are written, for a value that names none (c NULL: the model is not known yet). */
static const char *form_hint(const ModelConfig *c, int list) {
    if (c && slm_model_layers(c) == 1) return list ? "give head numbers like 3,5" : "give a head number like 3";
    return list ? "give heads like 3,5 or 1:3,2:5 (layer:head, layers from 1; a plain 3 is layer 1's)"
                : "give a head like 3 or 2:3 (layer:head, layers from 1)";
}

int slm_head_parse(const char *name, const ModelConfig *c, int layer, int all, const char *param, int *out_layer,
                   int *out_head, Error *e) {
    HeadItem it;
    const char *end;
    if (read_item(name, layer, &it, &end) || *end) return fail_value(e, param, name, form_hint(c, 0), "names no head");
    if (c && check_item(&it, c, all, 0, param, name, e)) return -1;
    *out_layer = (int)it.layer, *out_head = (int)it.head;
    return 0;
}

int slm_head_list_parse(const char *list, const ModelConfig *c, const char *param, HeadSet *set, Error *e) {
    *set = (HeadSet){0};
    if (!*list) return fail_value(e, param, list, form_hint(c, 1), "names no head");
    for (const char *p = list; *p;) {
        HeadItem it;
        const char *end;
        if (read_item(p, 1, &it, &end) || (*end && *end != ','))
            return fail_value(e, param, list, form_hint(c, 1), "is not a list of heads separated by commas");
        if (check_item(&it, c, 0, 1, param, list, e)) return -1;
        slm_head_set_add(set, (int)(it.layer - 1) * c->n_heads + (int)it.head);
        p = *end ? end + 1 : end;
    }
    return 0;
}

void slm_head_list_text(const HeadSet *set, const ModelConfig *c, char *buf, size_t size) {
    size_t used = 0;
    buf[0] = '\0';
    for (int g = 0; g < slm_model_heads(c) && used < size; g++) {
        char name[16];
        slm_head_name(c, g, name, sizeof name);
        if (slm_head_set_has(set, g)) used += (size_t)snprintf(buf + used, size - used, "%s%s", used ? "," : "", name);
    }
    if (!used) snprintf(buf, size, "none");
}
