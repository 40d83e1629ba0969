/* Head lists: see head_list.h. */
#include "storylm/head_list.h"

#include <stdio.h>

#include "storylm/parse.h"

/* "3,5" or "1:3,2:5" -> the set of heads numbered over `layers` layers of n_heads
 * (plain H: the first layer's). */
static int parse_heads(const char *list, int layers, int n_heads, HeadSet *set, Error *e) {
    *set = (HeadSet){0};
    const char *p = list;
    const char *hint =
        layers > 1 ? "give heads like 1:3,2:5 (layer:head; a plain 3 is layer 1's)" : "give head numbers like 3,5";
    if (!*p) return FAIL(e, hint, "empty head list");
    while (*p) {
        const char *end;
        long long l = 1, h = -1;
        /* out of int's range reads as out of range, below */
        if (slm_parse_integer_prefix(p, &end, -1000000, 1000000, &h) == PARSE_OUT_OF_RANGE) h = 1000000;
        if (end != p && *end == ':') {
            const char *at = end + 1;
            l = h;
            if (slm_parse_integer_prefix(at, &end, -1000000, 1000000, &h) == PARSE_OUT_OF_RANGE) h = 1000000;
            if (end == at) end = p; /* "2:" reads as nothing */
        }
        if (end == p || (*end && *end != ','))
            return FAIL(e, layers > 1 ? hint : "give head numbers separated by commas, like 3,5",
                        "cannot read head list '%s'", list);
        if (l < 1 || l > layers)
            return FAIL(e, "layers are numbered from 1", "layer %lld is out of range: this model has %s %d", l,
                        layers > 1 ? "layers 1 to" : "only layer", layers);
        if (h < 0 || h >= n_heads)
            return FAIL(e, "heads are numbered from 0", "head %lld is out of range: this model has heads 0 to %d", h,
                        n_heads - 1);
        slm_head_set_add(set, (int)(l - 1) * n_heads + (int)h);
        p = *end ? end + 1 : end;
    }
    return 0;
}

int slm_head_list_parse(const char *list, const ModelConfig *c, HeadSet *set, Error *e) {
    return parse_heads(list, slm_model_layers(c), c->n_heads, set, e);
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
