/* Incremental inference: see include/storylm/generate.h. The batch, its
 * threads and the one-story generator, written once over the model's
 * architecture's generator (generator_batch.h's GeneratorOps, src/arch). */
#include "storylm/generate.h"

#include <string.h>

#include "storylm/arch.h"

int slm_generator_batch_init(GeneratorBatch *g, const Model *m, const Ablation *ablation, int n, Error *e) {
    return slm_generator_batch_init_at(g, (Kernels)0, m, ablation, n, e); /* the build's default kernels */
}

int slm_generator_batch_init_at(GeneratorBatch *g, Kernels k, const Model *m, const Ablation *ablation, int n,
                                Error *e) {
    const Architecture *arch = m->cfg.arch;
    *g = (GeneratorBatch){0};
    /* An architecture without portable twins (attn-only) generates on its own kernels where
     * they are the build's default (WebAssembly's), and refuses to be asked for them elsewhere. */
    if (k == KERNELS_PORTABLE && !arch->generator_portable && k != (Kernels)0)
        return FAIL(e, "leave out --kernels portable: it generates on the default kernels (docs/kernels.md)",
                    "a%s %s model has no portable generator", strchr("aeiou", arch->name[0]) ? "n" : "", arch->name);
    const GeneratorOps *ops =
        k == KERNELS_PORTABLE && arch->generator_portable ? arch->generator_portable : arch->generator;
    if (!ops) return FAIL(e, NULL, "a %s model has no generator", arch->name);
    if (slm_kernels_check(k, PRECISION_FP32, e)) return -1;
    if (ops->init(g, m, ablation, n, e)) return -1;
    g->ops = ops;
    return 0;
}

void slm_generator_batch_free(GeneratorBatch *g) {
    Steering steer = g->steer; /* the architecture's free zeroes g */
    if (g->ops) g->ops->free(g);
    slm_steering_free(&steer);
    *g = (GeneratorBatch){0};
}

int slm_generator_batch_steer(GeneratorBatch *g, const Steering *s, Error *e) {
    for (int i = 0; i < s->n; i++) {
        char name[64];
        slm_hook_name(s->add[i].point, s->add[i].layer, name, sizeof name);
        if (!(g->ops->steer_points & (1u << s->add[i].point)))
            return FAIL(e, "steer at a residual stream, hook_z, hook_hidden or hook_hidden_in",
                        "a %s model's generator cannot add at %s", g->model->cfg.arch->name, name);
    }
    Steering copy;
    if (slm_steering_copy(&copy, s, e)) return -1;
    slm_steering_free(&g->steer);
    g->steer = copy;
    return 0;
}

void slm_generator_batch_copy(GeneratorBatch *g, int from, int to) { g->ops->copy(g, from, to); }

const float *slm_generator_batch_logits(const GeneratorBatch *g, int s) {
    return g->logits + (size_t)s * g->model->cfg.vocab_size;
}

int slm_generator_batch_set_precision(GeneratorBatch *g, Precision p, Error *e) {
    return g->ops->set_precision(g, p, e);
}

typedef struct FeedJob {
    GeneratorBatch *g;
    const int *which;
    const int32_t *tokens;
    int k;
} FeedJob;

/* Thread t of n takes the samples which[k*t/n .. k*(t+1)/n). */
static void feed_job(void *arg, int t, int n) {
    FeedJob *f = arg;
    int j0 = f->k * t / n, j1 = f->k * (t + 1) / n;
    if (j1 <= j0) return;
    f->g->ops->feed(f->g, f->which + j0, f->tokens + j0, j1 - j0, j0); /* each sample's scratch its own */
}

void slm_generator_batch_feed(GeneratorBatch *g, const int *which, const int32_t *tokens, int k) {
    if (g->ops->prepare) g->ops->prepare(g, which, tokens, k);
    if (!g->workers || g->workers->n < 2 || k < 2) {
        g->ops->feed(g, which, tokens, k, 0);
        return;
    }
    FeedJob f = {g, which, tokens, k};
    slm_workers_run(g->workers, feed_job, &f);
}

void slm_generator_batch_use_workers(GeneratorBatch *g, Workers *w) { g->workers = w; }

int slm_generator_init(Generator *g, const Model *m, const Ablation *ablation, Error *e) {
    return slm_generator_batch_init(&g->batch, m, ablation, 1, e);
}

void slm_generator_free(Generator *g) { slm_generator_batch_free(&g->batch); }

const float *slm_generator_feed(Generator *g, int32_t token) {
    static const int first = 0; /* constant: the batch's only sample */
    slm_generator_batch_feed(&g->batch, &first, &token, 1);
    return g->batch.logits;
}
