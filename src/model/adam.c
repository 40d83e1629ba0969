/* Adam and AdamW: see include/storylm/adam.h. */
#include "storylm/adam.h"

#include <math.h>
#include <stdlib.h>

int slm_adam_init(Adam *a, size_t n, Error *e) {
    *a = (Adam){.n = n, .beta1 = 0.9f, .beta2 = 0.999f, .eps = 1e-8f, .weight_decay = 0.0f};
    a->m = xcalloc(n, sizeof(float), e);
    a->v = xcalloc(n, sizeof(float), e);
    if (!a->m || !a->v) {
        slm_adam_free(a);
        return -1;
    }
    return 0;
}

void slm_adam_free(Adam *a) {
    free(a->m);
    free(a->v);
    *a = (Adam){0};
}

/* params (n), grads (n): m, v updated in place; PyTorch's order of operations
 * (step size lr / (1 - beta1^t), denominator sqrt(v) / sqrt(1 - beta2^t) + eps). */
void slm_adam_update(Adam *a, float *params, const float *grads, float lr) {
    a->step++;
    double t = (double)a->step;
    float step_size = (float)(lr / (1.0 - pow(a->beta1, t)));
    float bc2_sqrt = (float)sqrt(1.0 - pow(a->beta2, t));
    float b1 = a->beta1, b2 = a->beta2, eps = a->eps;
    float decay = 1.0f - lr * a->weight_decay;
    float *m = a->m, *v = a->v;
    const uint8_t *mask = a->decay_mask;
    long n = (long)a->n;
#pragma omp parallel for simd schedule(static)
    for (long i = 0; i < n; i++) {
        float g = grads[i];
        m[i] = b1 * m[i] + (1.0f - b1) * g;
        v[i] = b2 * v[i] + (1.0f - b2) * g * g;
        float denom = sqrtf(v[i]) / bc2_sqrt + eps;
        float keep = mask && !mask[i] ? 1.0f : decay; /* 1: a parameter that does not decay */
        params[i] = params[i] * keep - step_size * m[i] / denom;
    }
}
