/* Adam and AdamW: see include/storylm/adam.h. */
#include "storylm/adam.h"

#ifdef __AVX512F__
#include <immintrin.h>
#endif
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

/* The constants of one step, broadcast to every element. */
typedef struct {
    float b1, b2, one_b1, one_b2, bc2_sqrt, eps, step_size, decay;
} AdamStep;

/* page: adam step */
/* params, grads, m, v (n) from i on, element by element: the update in
 * PyTorch's order (each product and sum rounded on its own, no FMA), which
 * the vector loop below repeats lane by lane, so both give the same bits. */
static void adam_scalar(const AdamStep *k, const uint8_t *mask, float *params, const float *grads, float *m, float *v,
                        long i, long n) {
    for (; i < n; i++) {
        float g = grads[i];
        m[i] = k->b1 * m[i] + k->one_b1 * g;
        v[i] = k->b2 * v[i] + k->one_b2 * g * g;
        float denom = sqrtf(v[i]) / k->bc2_sqrt + k->eps;
        float keep = mask && !mask[i] ? 1.0f : k->decay; /* 1: a parameter that does not decay */
        params[i] = params[i] * keep - k->step_size * m[i] / denom;
    }
}
/* page: end */

#ifdef __AVX512F__
static inline __m512 mul(__m512 a, __m512 b) { return _mm512_mul_ps(a, b); }

/* adam_scalar over [i, end), 16 elements at a time (end - i a multiple of
 * 16): the compiler leaves the scalar loop unvectorized (sqrtf's errno, the
 * mask), and a training step's update reads 1.4 MB four times. */
static void adam_vector(const AdamStep *k, const uint8_t *mask, float *params, const float *grads, float *m, float *v,
                        long i, long end) {
    __m512 b1 = _mm512_set1_ps(k->b1), b2 = _mm512_set1_ps(k->b2), one_b1 = _mm512_set1_ps(k->one_b1),
           one_b2 = _mm512_set1_ps(k->one_b2), bc2 = _mm512_set1_ps(k->bc2_sqrt), eps = _mm512_set1_ps(k->eps),
           step = _mm512_set1_ps(k->step_size), decay = _mm512_set1_ps(k->decay), one = _mm512_set1_ps(1.0f);
    for (; i < end; i += 16) {
        __m512 g = _mm512_loadu_ps(grads + i);
        __m512 mi = _mm512_add_ps(mul(b1, _mm512_loadu_ps(m + i)), mul(one_b1, g));
        __m512 vi = _mm512_add_ps(mul(b2, _mm512_loadu_ps(v + i)), mul(mul(one_b2, g), g));
        _mm512_storeu_ps(m + i, mi);
        _mm512_storeu_ps(v + i, vi);
        __m512 denom = _mm512_add_ps(_mm512_div_ps(_mm512_sqrt_ps(vi), bc2), eps);
        __m512 keep = decay;
        if (mask) { /* lanes whose mask byte is 0 keep their weight */
            __mmask16 off = _mm_cmpeq_epi8_mask(_mm_loadu_si128((const __m128i *)(mask + i)), _mm_setzero_si128());
            keep = _mm512_mask_blend_ps(off, decay, one);
        }
        __m512 p = mul(_mm512_loadu_ps(params + i), keep);
        _mm512_storeu_ps(params + i, _mm512_sub_ps(p, _mm512_div_ps(mul(step, mi), denom)));
    }
}
#endif

/* page: adam step */
/* params (n), grads (n): m, v updated in place; PyTorch's order of operations
 * (step size lr / (1 - beta1^t), denominator sqrt(v) / sqrt(1 - beta2^t) + eps).
 * Threads take blocks of 1,024 elements; each element's update is on its own,
 * so the bits do not depend on the split. */
void slm_adam_update(Adam *a, float *params, const float *grads, float lr) {
    a->step++;
    double t = (double)a->step;
    AdamStep k = {.b1 = a->beta1,
                  .b2 = a->beta2,
                  .one_b1 = 1.0f - a->beta1,
                  .one_b2 = 1.0f - a->beta2,
                  .bc2_sqrt = (float)sqrt(1.0 - pow(a->beta2, t)),
                  .eps = a->eps,
                  .step_size = (float)(lr / (1.0 - pow(a->beta1, t))),
                  .decay = 1.0f - lr * a->weight_decay};
    float *m = a->m, *v = a->v;
    const uint8_t *mask = a->decay_mask;
    long n = (long)a->n, blocks = (n + 1023) / 1024;
#pragma omp parallel for schedule(static)
    for (long b = 0; b < blocks; b++) {
        long i = b * 1024, end = i + 1024 < n ? i + 1024 : n;
#ifdef __AVX512F__
        long whole = i + (end - i) / 16 * 16;
        adam_vector(&k, mask, params, grads, m, v, i, whole);
        i = whole;
#endif
        adam_scalar(&k, mask, params, grads, m, v, i, end);
    }
}
/* page: end */
