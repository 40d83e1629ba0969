/* Gradient checks: slm_model_backward (and training's slm_model_loss_and_grad)
 * against central finite differences, in
 * double, of a plain re-statement of the network (loops straight from SPEC
 * section 4, nothing shared with src/), on a tiny configuration: vocabulary 11,
 * window 4, a story longer than the window and two shorter ones. Every
 * parameter of every tensor, both architectures, with and without ablation. */
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "archs.h"
#include "check.h"
#include "storylm/adam.h"
#include "storylm/model.h"
#include "storylm/rng.h"

static const ModelConfig TINY = {.arch = &slm_attention_arch,
                                 .vocab_size = 11,
                                 .row_dim = 5,
                                 .n_heads = 3,
                                 .key_dim = 2,
                                 .value_dim = 3,
                                 .window = 4,
                                 .hidden_dim = 6,
                                 .context = 3};
/* The real heads' sizes (8, 16), which run the unrolled kernels, in a small model. */
static const ModelConfig SMALL_REAL_HEADS = {.arch = &slm_attention_arch,
                                             .vocab_size = 11,
                                             .row_dim = 6,
                                             .n_heads = 2,
                                             .key_dim = 8,
                                             .value_dim = 16,
                                             .window = 5,
                                             .hidden_dim = 6,
                                             .context = 3};

/* The model's parameters in double, viewed by tensor name. */
typedef struct Ref {
    const Model *m;
    const double *p;
    const Dropout *drop; /* fixed masks (NULL: no dropout), indexed by packed position */
    int base;            /* packed position of the story's first token */
    int N;               /* positions of the batch */
} Ref;

/* The fixed masks' factor for number i of z at position p, and for key u of p in head h. */
static double z_keep(const Ref *r, int p, int i) {
    const Dropout *d = r->drop;
    if (!d || !d->hidden_mask) return 1.0;
    return d->hidden_mask[(size_t)p * slm_model_hidden_input_dim(&r->m->cfg) + i] ? 1.0 / (1.0 - d->hidden) : 0.0;
}
static double weight_keep(const Ref *r, int h, int p, int u) {
    size_t N = (size_t)r->N;
    const Dropout *d = r->drop;
    if (!d || !d->attention_mask) return 1.0;
    return d->attention_mask[((size_t)h * N + p) * N + u] ? 1.0 / (1.0 - d->attention) : 0.0;
}

static const double *tensor(const Ref *r, const char *name) { return r->p + slm_model_tensor(r->m, name)->offset; }

/* z (Z) for position t of a story (ids, T) in the attention network. */
static void ref_attention_z(const Ref *r, const int32_t *ids, int t, const Ablation *ab, double *z) {
    const ModelConfig *c = &r->m->cfg;
    int D = c->row_dim, kd = c->key_dim, vd = c->value_dim, lo = t - c->window + 1 > 0 ? t - c->window + 1 : 0;
    const double *E = tensor(r, "embedding"), *Wq = tensor(r, "query"), *Wk = tensor(r, "key");
    const double *Wv = tensor(r, "value"), *dist = tensor(r, "distance");
    for (int i = 0; i < D; i++) z[i] = E[ids[t] * D + i];
    for (int h = 0; h < c->n_heads; h++) {
        double s[64], q[8], mx = -1e300, sum = 0.0, *o = z + D + h * vd;
        for (int i = 0; i < kd; i++) {
            q[i] = 0.0;
            for (int j = 0; j < D; j++) q[i] += E[ids[t] * D + j] * Wq[(h * D + j) * kd + i];
        }
        for (int u = lo; u <= t; u++) {
            double dot = 0.0;
            for (int i = 0; i < kd; i++)
                for (int j = 0; j < D; j++) dot += q[i] * E[ids[u] * D + j] * Wk[(h * D + j) * kd + i];
            s[u - lo] = dot / sqrt(kd) + dist[h * c->window + (t - u)];
            mx = fmax(mx, s[u - lo]);
        }
        for (int u = lo; u <= t; u++) sum += exp(s[u - lo] - mx);
        for (int i = 0; i < vd; i++) o[i] = 0.0;
        for (int u = lo; u <= t; u++)
            for (int i = 0; i < vd; i++)
                for (int j = 0; j < D; j++)
                    o[i] += exp(s[u - lo] - mx) / sum * weight_keep(r, h, r->base + t, r->base + u) *
                            E[ids[u] * D + j] * Wv[(h * D + j) * vd + i];
        if (ab && slm_head_set_has(&ab->heads, h))
            for (int i = 0; i < vd; i++) o[i] = ab->mode == ABLATE_MEAN ? ab->mean[h * vd + i] : 0.0;
    }
}

/* z (C*D) for position t in window8: rows of ids[t-C+1 .. t], ids[0]'s row before the start. */
static void ref_window_z(const Ref *r, const int32_t *ids, int t, double *z) {
    const ModelConfig *c = &r->m->cfg;
    const double *E = tensor(r, "embedding");
    for (int s = 0; s < c->context; s++) {
        int u = t - c->context + 1 + s;
        for (int i = 0; i < c->row_dim; i++) z[s * c->row_dim + i] = E[ids[u < 0 ? 0 : u] * c->row_dim + i];
    }
}

/* -log p(next) at position t given z. */
static double ref_position_loss(const Ref *r, const double *z, int next) {
    const ModelConfig *c = &r->m->cfg;
    int Z = slm_model_hidden_input_dim(c), Hd = c->hidden_dim, V = c->vocab_size;
    const double *W1 = tensor(r, "hidden.weight"), *b1 = tensor(r, "hidden.bias");
    const double *W2 = tensor(r, "output.weight"), *b2 = tensor(r, "output.bias");
    return check_ref_output_loss(W1, b1, W2, b2, Z, Hd, V, z, next);
}

/* Mean loss over every predicted position of the batch. */
static double ref_loss(const Ref *ref, const Batch *b, const Ablation *ab) {
    double total = 0.0, z[256];
    int n = 0, Z = slm_model_hidden_input_dim(&ref->m->cfg);
    Ref story = *ref, *r = &story;
    story.N = b->n_tokens;
    for (int s = 0; s < b->n_stories; s++) {
        const int32_t *ids = b->tokens + b->starts[s];
        int T = b->starts[s + 1] - b->starts[s];
        story.base = b->starts[s];
        for (int t = 0; t + 1 < T; t++, n++) {
            if (r->m->cfg.arch == &slm_attention_arch)
                ref_attention_z(r, ids, t, ab, z);
            else
                ref_window_z(r, ids, t, z);
            for (int i = 0; i < Z; i++) z[i] *= z_keep(r, r->base + t, i);
            total += ref_position_loss(r, z, ids[t + 1]);
        }
    }
    return total / n;
}

/* Weights large enough that attention is far from even and tanh bends. */
static void random_params(Model *m, Rng *rng) {
    for (size_t i = 0; i < m->n_params; i++) m->params[i] = (float)(slm_rng_normal(rng) * 0.7);
}

/* Analytic against numerical gradients for every parameter, tensor by tensor;
 * with drop (NULL: none), training's dropout with its fixed masks; the passes
 * with kernels k (kernels.h). */
static void gradcheck_with(const ModelConfig *base, const Architecture *arch, const Ablation *ab, const Dropout *drop,
                           Kernels k, const char *what) {
    ModelConfig cfg = *base;
    cfg.arch = arch;
    Model m;
    Activations a;
    Batch b;
    Error e;
    Rng rng;
    slm_rng_seed(&rng, 42);
    CHECK(slm_model_init(&m, &cfg, &e) == 0);
    CHECK(slm_activations_init(&a, &cfg, 32, &e) == 0);
    check_tiny_batch(&b, TINY.vocab_size, &rng);
    random_params(&m, &rng);
    float *grads = malloc(m.n_params * sizeof(float));
    double *p = malloc(m.n_params * sizeof(double));
    for (size_t i = 0; i < m.n_params; i++) p[i] = m.params[i];
    Ref ref = {&m, p, drop, 0, 0};

    float loss;
    if (drop) a.dropout = *drop;
    a.kernels = k;
    CHECK(slm_model_forward(&m, &a, &b, ab, &loss, &e) == 0);
    CHECK_CLOSE(a.mean_loss, ref_loss(&ref, &b, ab), 1e-6, 0); /* the same function */
    slm_model_zero_grad(&m, grads);
    slm_model_backward(&m, &a, &b, grads);
    float *fused = calloc(m.n_params, sizeof(float)); /* and training's path */
    CHECK(slm_model_loss_and_grad(&m, &a, &b, ab, 1.0f / a.n_predicted, fused, &e) == 0);
    CHECK_CLOSE(a.mean_loss, loss, 1e-6, 0);

    double worst = 0.0, h = 1e-5;
    for (int t = 0; t < m.n_tensors; t++) {
        const ParamTensor *pt = &m.tensors[t];
        double max_diff = 0.0, max_grad = 0.0;
        for (size_t i = pt->offset; i < pt->offset + pt->size; i++) {
            double saved = p[i];
            p[i] = saved + h;
            double up = ref_loss(&ref, &b, ab);
            p[i] = saved - h;
            double down = ref_loss(&ref, &b, ab);
            p[i] = saved;
            double numeric = (up - down) / (2 * h);
            max_diff = fmax(max_diff, fmax(fabs(numeric - grads[i]), fabs(numeric - fused[i])));
            max_grad = fmax(max_grad, fabs(numeric));
        }
        int ok = CHECK(max_grad > 0 ? max_diff <= 1e-4 * max_grad : max_diff == 0.0);
        if (!ok) fprintf(stderr, "  %s %s: diff %.3g, max %.3g\n", what, pt->name, max_diff, max_grad);
        if (max_grad > 0) worst = fmax(worst, max_diff / max_grad);
    }
    printf("%-28s loss %.6f, worst gradient %.2e of its tensor's max\n", what, loss, worst);
    free(p);
    free(fused);
    free(grads);
    slm_batch_free(&b);
    slm_activations_free(&a);
    slm_model_free(&m);
}

static void gradcheck(const ModelConfig *base, const Architecture *arch, const Ablation *ab, const char *what) {
    gradcheck_with(base, arch, ab, NULL, KERNELS_BLAS, what);
}

/* Dropout with fixed masks (P 0.3 on z, 0.25 on the attention weights, a
 * quarter of the entries dropped at random): the reference multiplies by the
 * same masks, so the gradients are of the dropped network. */
static void gradcheck_dropout(const ModelConfig *cfg, const Architecture *arch, int hidden, int attention,
                              const char *what) {
    enum { N = 15 }; /* tiny_batch's 9 + 4 + 2 positions */
    static uint8_t zmask[N * 256], amask[8 * N * N];
    Rng rng;
    slm_rng_seed(&rng, 99);
    for (size_t i = 0; i < sizeof zmask; i++) zmask[i] = slm_rng_uniform(&rng) >= 0.25;
    for (size_t i = 0; i < sizeof amask; i++) amask[i] = slm_rng_uniform(&rng) >= 0.25;
    Dropout d = {.hidden = hidden ? 0.3f : 0.0f,
                 .attention = attention ? 0.25f : 0.0f,
                 .hidden_mask = hidden ? zmask : NULL,
                 .attention_mask = attention ? amask : NULL};
    gradcheck_with(cfg, arch, NULL, &d, KERNELS_BLAS, what);
}

/* A switched-off head's weights get no gradient at all; the others do. */
static void ablated_head_gets_nothing(void) {
    Model m;
    Activations a;
    Batch b;
    Error e;
    Rng rng;
    slm_rng_seed(&rng, 7);
    CHECK(slm_model_init(&m, &TINY, &e) == 0);
    CHECK(slm_activations_init(&a, &TINY, 32, &e) == 0);
    check_tiny_batch(&b, TINY.vocab_size, &rng);
    random_params(&m, &rng);
    float *grads = calloc(m.n_params, sizeof(float));
    Ablation ab = {.heads = check_heads(1u << 1), .mode = ABLATE_ZERO};
    CHECK(slm_model_forward(&m, &a, &b, &ab, NULL, &e) == 0);
    slm_model_backward(&m, &a, &b, grads);
    const ParamTensor *dist = slm_model_tensor(&m, "distance");
    double head0 = 0, head1 = 0;
    for (int d = 0; d < TINY.window; d++) {
        head0 += fabs(grads[dist->offset + d]);
        head1 += fabs(grads[dist->offset + TINY.window + d]);
    }
    CHECK(head1 == 0.0 && head0 > 0.0);
    for (int i = 0; i < 4; i++) /* and the slot the hidden layer read is 0 */
        CHECK(slm_activations_head_output(&a, 1, i)[0] == 0.0f && slm_activations_head_output(&a, 0, i)[0] != 0.0f);
    free(grads);
    slm_batch_free(&b);
    slm_activations_free(&a);
    slm_model_free(&m);
}

/* The real sizes, 3 stories (one past the window), random ids. */
static void real_case(const Architecture *arch, Model *m, Activations *a, Batch *b) {
    ModelConfig cfg = slm_model_config_default(arch, 2000);
    Error e;
    Rng rng;
    slm_rng_seed(&rng, 3);
    CHECK(slm_model_init(m, &cfg, &e) == 0);
    slm_model_randomize(m, 11);
    CHECK(slm_batch_init(b, 700, 4, &e) == 0);
    int32_t ids[300];
    for (int s = 0; s < 3; s++) {
        int len = s == 0 ? 300 : 100 + 50 * s;
        for (int t = 0; t < len; t++) ids[t] = t ? (int32_t)slm_rng_below(&rng, 2000) : 1;
        CHECK(slm_batch_add(b, ids, len, &e) == 0);
    }
    CHECK(slm_activations_init(a, &cfg, b->n_tokens, &e) == 0);
}

/* grads += one forward and backward pass. */
static void step(const Model *m, Activations *a, const Batch *b, float *grads) {
    Error e;
    CHECK(slm_model_forward(m, a, b, NULL, NULL, &e) == 0);
    slm_model_backward(m, a, b, grads);
}

/* Backward adds to the gradients (+=), and a step repeats bit for bit. */
static void backward_accumulates_and_repeats(const Architecture *arch) {
    Model m;
    Activations a;
    Batch b;
    real_case(arch, &m, &a, &b);
    float *once = calloc(m.n_params, sizeof(float)), *twice = calloc(m.n_params, sizeof(float));
    float *again = calloc(m.n_params, sizeof(float));
    step(&m, &a, &b, once);
    step(&m, &a, &b, twice);
    step(&m, &a, &b, twice);
    step(&m, &a, &b, again);
    size_t differ = 0, not_double = 0;
    float largest = 0.0f;
    for (size_t i = 0; i < m.n_params; i++) largest = fmaxf(largest, fabsf(once[i]));
    for (size_t i = 0; i < m.n_params; i++) {
        differ += memcmp(&once[i], &again[i], sizeof(float)) != 0;
        not_double += fabsf(twice[i] - 2 * once[i]) > 1e-5f * largest;
    }
    CHECK(differ == 0);
    CHECK(not_double == 0);
    free(once), free(twice), free(again);
    slm_batch_free(&b), slm_activations_free(&a), slm_model_free(&m);
}

/* Products threaded by OpenBLAS, or split over OpenMP's threads after
 * slm_model_threads_setup: the same gradients, and the split ones repeat bit for bit. */
static void threading_modes_agree(void) {
    Model m;
    Activations a;
    Batch b;
    real_case(&slm_attention_arch, &m, &a, &b);
    float *blas = calloc(m.n_params, sizeof(float)), *split = calloc(m.n_params, sizeof(float));
    float *again = calloc(m.n_params, sizeof(float));
    step(&m, &a, &b, blas);
    slm_model_threads_setup(2);
    step(&m, &a, &b, split);
    step(&m, &a, &b, again);
    double largest = 0, diff = 0;
    for (size_t i = 0; i < m.n_params; i++) {
        largest = fmax(largest, fabs(blas[i]));
        diff = fmax(diff, fabs((double)blas[i] - split[i]));
    }
    CHECK(diff <= 1e-5 * largest);
    CHECK(memcmp(split, again, m.n_params * sizeof(float)) == 0);
    free(blas), free(split), free(again);
    slm_batch_free(&b), slm_activations_free(&a), slm_model_free(&m);
}

static double seconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

/* Not a check: with STORYLM_BENCH=STEPS in the environment, times training
 * steps (forward, backward, Adam) on 8 stories of 200 to 312 random ids and
 * prints tokens per second, the mean and the best step (the best is what the
 * code does on a machine nobody else is using). */
static void bench(const Architecture *arch, int steps) {
    ModelConfig cfg = slm_model_config_default(arch, 2000);
    Model m;
    Activations a;
    Batch b;
    Adam opt;
    Error e;
    Rng r;
    slm_rng_seed(&r, 7);
    CHECK(slm_model_init(&m, &cfg, &e) == 0 && slm_batch_init(&b, 4096, 8, &e) == 0);
    slm_model_randomize(&m, 1);
    int32_t ids[400];
    for (int s = 0; s < 8; s++) {
        int len = 200 + (int)slm_rng_below(&r, 113);
        for (int t = 0; t < len; t++) ids[t] = t ? (int32_t)slm_rng_below(&r, 2000) : 1;
        CHECK(slm_batch_add(&b, ids, len, &e) == 0);
    }
    CHECK(slm_activations_init(&a, &cfg, b.n_tokens, &e) == 0 && slm_adam_init(&opt, m.n_params, &e) == 0);
    float *grads = calloc(m.n_params, sizeof(float));
    double total = 0, best = 1e9;
    for (int i = -2; i < steps; i++) { /* two to warm up */
        double t0 = seconds();
        CHECK(slm_model_forward(&m, &a, &b, NULL, NULL, &e) == 0);
        slm_model_zero_grad(&m, grads);
        slm_model_backward(&m, &a, &b, grads);
        slm_adam_update(&opt, m.params, grads, 1e-3f);
        double dt = seconds() - t0;
        if (i >= 0) total += dt, best = fmin(best, dt);
    }
    printf("bench %s, %d threads, %d tokens a step: mean %.0f tokens/s, best step %.1f ms = %.0f tokens/s\n",
           arch->name, omp_get_max_threads(), b.n_tokens, b.n_tokens * steps / total, best * 1e3, b.n_tokens / best);
    free(grads), slm_adam_free(&opt), slm_batch_free(&b), slm_activations_free(&a), slm_model_free(&m);
}

int main(void) {
    float mean[3 * 3] = {0.3f, -0.2f, 0.5f, -0.4f, 0.1f, 0.2f, 0.6f, -0.5f, 0.05f};
    Ablation zero1 = {.heads = check_heads(1u << 1), .mode = ABLATE_ZERO};
    Ablation mean02 = {.heads = check_heads(1u << 0 | 1u << 2), .mode = ABLATE_MEAN, .mean = mean};
    Ablation zero0 = {.heads = check_heads(1u << 0), .mode = ABLATE_ZERO};
    threading_modes_agree(); /* first: it starts from OpenBLAS's own threading */
    for (int threads = 1; threads <= 2; threads++) {
        slm_model_threads_setup(threads);
        printf("-- %d thread%s\n", threads, threads > 1 ? "s" : "");
        gradcheck(&TINY, &slm_attention_arch, NULL, "attention");
        gradcheck(&TINY, &slm_attention_arch, &zero1, "attention, head 1 zeroed");
        gradcheck(&TINY, &slm_attention_arch, &mean02, "attention, heads 0,2 at mean");
        gradcheck(&TINY, &slm_window8_arch, NULL, "window8 (context 3)");
        gradcheck(&SMALL_REAL_HEADS, &slm_attention_arch, NULL, "attention, heads of 8 and 16");
        gradcheck(&SMALL_REAL_HEADS, &slm_attention_arch, &zero0, "  the same, head 0 zeroed");
        gradcheck_dropout(&TINY, &slm_attention_arch, 1, 0, "attention, dropout on z");
        gradcheck_dropout(&TINY, &slm_attention_arch, 0, 1, "attention, attention dropout");
        gradcheck_dropout(&SMALL_REAL_HEADS, &slm_attention_arch, 1, 1, "heads of 8 and 16, both dropouts");
        gradcheck_dropout(&TINY, &slm_window8_arch, 1, 0, "window8, dropout on z");
        ablated_head_gets_nothing();
        backward_accumulates_and_repeats(&slm_attention_arch);
        backward_accumulates_and_repeats(&slm_window8_arch);
    }
    printf("-- portable kernels, 2 threads\n");
    gradcheck_with(&TINY, &slm_attention_arch, NULL, NULL, KERNELS_PORTABLE, "attention");
    gradcheck_with(&TINY, &slm_attention_arch, &mean02, NULL, KERNELS_PORTABLE, "attention, heads 0,2 at mean");
    gradcheck_with(&TINY, &slm_window8_arch, NULL, NULL, KERNELS_PORTABLE, "window8 (context 3)");
    gradcheck_with(&SMALL_REAL_HEADS, &slm_attention_arch, NULL, NULL, KERNELS_PORTABLE,
                   "attention, heads of 8 and 16");
    if (getenv("STORYLM_BENCH")) {
        int steps = atoi(getenv("STORYLM_BENCH"));
        bench(&slm_attention_arch, steps > 0 ? steps : 50);
        bench(&slm_window8_arch, steps > 0 ? steps : 50);
    }
    return check_report();
}
