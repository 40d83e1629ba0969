/* The public training step (slm_train_step, what slm_train_run and storylm bench
 * both take): its loss is the evaluation's of the same stories before the
 * update, the update is Adam's on d mean loss / d params, and a step whose
 * gradient is not finite stops before touching the weights. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "archs.h"
#include "check.h"
#include "storylm/rng.h"
#include "storylm/train.h"
#include "../src/train/train_testing.h" /* the overflow seam */

enum { V = 30, N = 4 };

/* The gradient's check finds one inf or NaN wherever it sits (in the
 * vectors or the tail), and passes the largest finite floats, -0 and
 * subnormals. */
static void finite_check_finds_every_place(void) {
    float x[67];
    int wrong = 0;
    for (int n = 1; n <= 67; n++)
        for (int at = 0; at < n; at++)
            for (int k = 0; k < 3; k++) {
                for (int i = 0; i < n; i++) x[i] = i % 3 == 0 ? FLT_MAX : i % 3 == 1 ? -0.0f : 1e-40f;
                x[at] = k == 0 ? INFINITY : k == 1 ? -INFINITY : NAN;
                wrong += train_all_finite(x, (size_t)n);
                x[at] = -FLT_MAX;
                wrong += !train_all_finite(x, (size_t)n);
            }
    CHECK(wrong == 0 && train_all_finite(x, 0));
}

int main(void) {
    finite_check_finds_every_place();
    Error e = {0};
    ModelConfig cfg = slm_model_config_default(&slm_attention_arch, V);
    Model m, before;
    CHECK(slm_model_init(&m, &cfg, &e) == 0 && slm_model_init(&before, &cfg, &e) == 0);
    slm_model_randomize(&m, 9);
    int32_t ids[N][40];
    StoryRef refs[N];
    Rng r;
    slm_rng_seed(&r, 2);
    for (int i = 0; i < N; i++) {
        int len = 10 + 10 * i;
        ids[i][0] = 1;
        for (int t = 1; t < len; t++) ids[i][t] = 2 + (int)slm_rng_below(&r, V - 2);
        refs[i] = (StoryRef){ids[i], len};
    }
    Shards sh;
    Adam adam, copy;
    float *grads = malloc(m.n_params * sizeof(float)), *want = malloc(m.n_params * sizeof(float));
    CHECK(slm_shards_init(&sh, &m, 2, 64, N, &e) == 0 && slm_adam_init(&adam, m.n_params, &e) == 0 &&
          slm_adam_init(&copy, m.n_params, &e) == 0);
    TrainStep step = {.shards = &sh, .model = &m, .adam = &adam, .grads = grads};

    /* the gradient by hand: slm_shards_run of scale 1/positions, then Adam at the same lr */
    memcpy(before.params, m.params, m.n_params * sizeof(float));
    double loss_sum = 0;
    long long correct = 0, positions = 10 + 20 + 30 + 40 - N;
    slm_model_zero_grad(&m, want);
    CHECK(slm_shards_run(&sh, refs, N, NULL, 1.0f / (float)positions, want, &loss_sum, &correct, &e) == 0);
    slm_adam_update(&copy, before.params, want, 1e-2f);

    TrainStepResult res;
    CHECK(slm_train_step(&step, refs, N, 1e-2f, &res, &e) == 0);
    CHECK(res.not_finite == NULL && res.positions == positions);
    CHECK(res.loss == loss_sum / (double)positions);
    CHECK_CLOSE(res.loss, log(V), 0.2, 0);
    CHECK(memcmp(m.params, before.params, m.n_params * sizeof(float)) == 0); /* bit for bit */
    CHECK(adam.step == 1);

    /* a step whose gradient overflows: named, nothing updated */
    CHECK(train_step_overflowing(&step, refs, N, 1e-2f, true, &res, &e) == 0);
    CHECK(res.not_finite && strcmp(res.not_finite, "gradient") == 0);
    CHECK(memcmp(m.params, before.params, m.n_params * sizeof(float)) == 0 && adam.step == 1);

    free(grads), free(want);
    slm_adam_free(&adam), slm_adam_free(&copy), slm_shards_free(&sh);
    slm_model_free(&m), slm_model_free(&before);
    return check_report();
}
