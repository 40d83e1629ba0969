/* An attribution's result, allocated and freed (probe_attribute.h): apart
 * from both attributions, the attention network's (probe_attribute.c) and
 * the transformer's (probe_attribute_tf.c), which both fill one, so that
 * neither file calls back into the other. */
#include <stdlib.h>

#include "storylm/probe_attribute.h"

int slm_attribute_result_alloc(AttributeResult *r, int n_parts, int T, Error *e) {
    r->grad_x_act = xmalloc((size_t)n_parts * sizeof(double), e);
    r->zero_effect = r->grad_x_act ? xmalloc((size_t)n_parts * sizeof(double), e) : NULL;
    r->mean_effect = r->zero_effect ? xmalloc((size_t)n_parts * sizeof(double), e) : NULL;
    r->norm = r->mean_effect ? xmalloc((size_t)n_parts * sizeof(double), e) : NULL;
    r->surprisal = r->norm ? xmalloc((size_t)T * sizeof(double), e) : NULL;
    r->names = r->surprisal ? xcalloc((size_t)n_parts, sizeof *r->names, e) : NULL;
    r->n_parts = n_parts;
    return r->names ? 0 : -1;
}

void slm_attribute_result_free(AttributeResult *r) {
    free(r->grad_x_act);
    free(r->zero_effect);
    free(r->mean_effect);
    free(r->norm);
    free(r->surprisal);
    free(r->names);
    *r = (AttributeResult){0};
}
