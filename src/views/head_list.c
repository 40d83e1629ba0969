/* Head lists: see head_list.h. */
#include "storylm/head_list.h"

#include "storylm/parse.h"

/* "3,5" or "1:3,2:5" -> mask of heads numbered over `layers` layers of n_heads
 * (plain H: the first layer's). */
static int parse_heads(const char *list, int layers, int n_heads, uint32_t *mask, Error *e) {
    *mask = 0;
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
        *mask |= 1u << ((l - 1) * n_heads + h);
        p = *end ? end + 1 : end;
    }
    return 0;
}

int slm_head_list_parse(const char *list, const ModelConfig *c, uint32_t *mask, Error *e) {
    return parse_heads(list, slm_model_layers(c), c->n_heads, mask, e);
}
