/* One optimizer step: see slm_train_step in include/storylm/train.h. */
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <string.h>

#include "storylm/train.h"
#include "train_testing.h"

/* By the exponent bits (all ones: inf or NaN), ORed, which vectorises; a
 * float sum of x * 0 was one dependent add an element. */
int train_all_finite(const float *x, size_t n) {
    uint32_t bad = 0;
#pragma omp simd reduction(| : bad)
    for (size_t i = 0; i < n; i++) {
        uint32_t bits;
        memcpy(&bits, &x[i], sizeof bits);
        bad |= (bits & 0x7f800000u) == 0x7f800000u;
    }
    return !bad;
}

int train_step_overflowing(const TrainStep *t, const StoryRef *refs, int n, float lr, bool overflow, TrainStepResult *r,
                           Error *e) {
    *r = (TrainStepResult){0};
    for (int i = 0; i < n; i++) r->positions += refs[i].len - 1;
    double loss_sum = 0;
    long long correct = 0;
    slm_model_zero_grad(t->model, t->grads);
    float scale = r->positions > 0 ? 1.0f / (float)r->positions : 0.0f;
    if (slm_shards_run(t->shards, refs, n, NULL, scale, t->grads, &loss_sum, &correct, e)) return -1;
    r->loss = loss_sum / (double)r->positions;
    if (overflow) t->grads[0] = INFINITY;
    if (!isfinite(r->loss) || !train_all_finite(t->grads, t->model->n_params)) {
        r->not_finite = isfinite(r->loss) ? "gradient" : "loss";
        return 0;
    }
    /* Adam is elementwise and cheap: on this thread alone, so that no OpenMP
     * team is left busy-waiting beside the shards' threads. */
    int threads = omp_get_max_threads();
    omp_set_num_threads(1);
    slm_adam_update(t->adam, t->model->params, t->grads, lr);
    omp_set_num_threads(threads);
    return 0;
}

int slm_train_step(const TrainStep *t, const StoryRef *refs, int n, float lr, TrainStepResult *r, Error *e) {
    return train_step_overflowing(t, refs, n, lr, false, r, e);
}
