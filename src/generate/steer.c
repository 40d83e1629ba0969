/* Steering's additions (steer.h). */
#include "storylm/steer.h"

#include <stdlib.h>
#include <string.h>

int slm_steering_add(Steering *s, HookPoint p, int layer, const float *direction, int width, float scale, Error *e) {
    if (s->n == STEER_MAX) return FAIL(e, "steer with fewer latents", "more than %d steering directions", STEER_MAX);
    float *d = xmalloc((size_t)width * sizeof(float), e);
    if (!d) return -1;
    for (int i = 0; i < width; i++) d[i] = scale * direction[i];
    s->add[s->n++] = (SteerAdd){.point = p, .layer = layer, .width = width, .direction = d};
    return 0;
}

int slm_steering_copy(Steering *to, const Steering *from, Error *e) {
    *to = (Steering){0};
    for (int i = 0; i < from->n; i++) {
        const SteerAdd *a = &from->add[i];
        if (slm_steering_add(to, a->point, a->layer, a->direction, a->width, 1.0f, e)) {
            slm_steering_free(to);
            return -1;
        }
    }
    return 0;
}

void slm_steering_free(Steering *s) {
    for (int i = 0; i < s->n; i++) free(s->add[i].direction);
    *s = (Steering){0};
}

void slm_steer_rows(const Steering *s, HookPoint p, int l, float *base, size_t stride, const int *which, int k) {
    for (int a = 0; a < s->n; a++) {
        const SteerAdd *add = &s->add[a];
        if (add->point != p || add->layer != l) continue;
        for (int j = 0; j < k; j++) {
            float *row = base + (size_t)(which ? which[j] : j) * stride;
            for (int i = 0; i < add->width; i++) row[i] += add->direction[i];
        }
    }
}
