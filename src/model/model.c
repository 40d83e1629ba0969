/* The model's generic entry points: init, the initial values and the passes,
 * each calling through the model's architecture (arch.h), and what every
 * architecture's passes share after them (the losses checked and averaged).
 * See include/storylm/model.h for the network and the layouts. */
#include "storylm/model.h"

#include <cblas.h>
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "storylm/arch.h"

/* OpenBLAS's own: stops its thread pool (it runs it around fork). Weak: a
 * BLAS without a pool (a serial build) has none, and it is then NULL. */
int blas_thread_shutdown_(void) __attribute__((weak));

void slm_model_threads_setup(int n_threads) {
    if (n_threads > 0) omp_set_num_threads(n_threads);
    /* Set only when it changes: setting it starts again a pool that was stopped. */
    if (openblas_get_num_threads() != 1) openblas_set_num_threads(1);
    /* A pthread OpenBLAS starts a thread per core when it loads, and one with
     * no work spins about 0.1 s before it sleeps: in a short run (a story
     * takes 5 ms) that doubles the CPU time. Single-threaded, it never needs
     * them, so they are stopped (a second call finds none: a no-op). */
    if (blas_thread_shutdown_) blas_thread_shutdown_();
}

/* ---- init ---------------------------------------------------------------- */

ModelConfig slm_model_config_default(const Architecture *arch, int vocab_size) {
    return arch->config_default(vocab_size);
}

/* The table for cfg (and n_params), without allocating: the architecture's. */
static void layout(Model *m, const ModelConfig *cfg) {
    m->cfg = *cfg;
    m->n_params = 0;
    m->n_tensors = 0;
    cfg->arch->layout(m);
}

size_t slm_model_param_count(const ModelConfig *cfg) {
    Model m = {0};
    layout(&m, cfg);
    return m.n_params;
}

int slm_model_init(Model *m, const ModelConfig *cfg, Error *e) {
    *m = (Model){0};
    if (!cfg->arch) return FAIL(e, NULL, "the model's configuration names no architecture");
    if (cfg->arch->config_check(cfg, e)) return -1;
    layout(m, cfg);
    m->params = xcalloc(m->n_params, sizeof(float), e);
    if (!m->params) return -1;
    cfg->arch->bind_views(m);
    return 0;
}

void slm_model_free(Model *m) {
    free(m->params);
    *m = (Model){0};
}

void slm_model_randomize(Model *m, uint64_t seed) { m->cfg.arch->randomize(m, seed); }

/* ---- the passes ------------------------------------------------------------------ */

/* a->mean_loss and *mean_loss (may be NULL) from the positions' losses. */
static void mean_of_losses(Activations *a, float *mean_loss) {
    double sum = 0.0;
    for (int p = 0; p < a->n_positions; p++) sum += a->loss[p];
    a->mean_loss = a->n_predicted > 0 ? sum / a->n_predicted : 0.0;
    if (mean_loss) *mean_loss = (float)a->mean_loss;
}

/* Every position's log-sum-exp and loss must be finite: finite weights can
 * still overflow (logits past 3.4e38), and a NaN mean loss must never be
 * delivered as a result. Names the first bad position. */
static int check_losses(const Activations *a, const Batch *b, Error *e) {
    for (int p = 0; p < a->n_positions; p++) {
        if (isfinite(a->lse[p]) && isfinite(a->loss[p])) continue;
        int i = 0;
        while (i + 1 < b->n_stories && b->starts[i + 1] <= p) i++;
        return FAIL(e, "the model's weights are too large to compute with; train or save it again",
                    "the %s overflows at position %d of story %d of the batch (token id %d): its logits are not finite",
                    isfinite(a->lse[p]) ? "loss" : "log-sum-exp of the logits", p - b->starts[i] + b->piece[i].offset,
                    i, b->tokens[p]);
    }
    return 0;
}

int slm_model_forward_heads(const Model *m, Activations *a, const Batch *b, const Ablation *ablation, Error *e) {
    return m->cfg.arch->forward(m, a, b, ablation, 0, e);
}

int slm_model_forward(const Model *m, Activations *a, const Batch *b, const Ablation *ablation, float *mean_loss,
                      Error *e) {
    if (m->cfg.arch->forward(m, a, b, ablation, 1, e) || check_losses(a, b, e)) return -1;
    mean_of_losses(a, mean_loss);
    return 0;
}

void slm_model_zero_grad(const Model *m, float *grads) { memset(grads, 0, m->n_params * sizeof(float)); }

void slm_model_backward(const Model *m, Activations *a, const Batch *b, float *grads) {
    if (a->n_predicted < 1) return; /* no target: the loss depends on nothing */
    m->cfg.arch->backward(m, a, b, grads);
}

int slm_model_loss_and_grad(const Model *m, Activations *a, const Batch *b, const Ablation *ablation, float scale,
                            float *grads, Error *e) {
    if (m->cfg.arch->loss_and_grad(m, a, b, ablation, scale, grads, e) || check_losses(a, b, e)) return -1;
    mean_of_losses(a, NULL);
    return 0;
}
