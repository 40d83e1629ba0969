/* The C network against the PyTorch reference (scripts/torch_reference.py):
 * on the committed fixtures, the loss to 1e-5 relative, every gradient to
 * 1e-4 of its tensor's largest value, the parameters after 3 Adam steps to
 * 1e-5 (see compare_after_adam), for both architectures and two head
 * ablations, through slm_model_forward/slm_model_backward and through training's
 * path (stories split over threads, the output layer in chunks), at 1 and at
 * 2 threads; and Adam alone at every size of gradient. */
#include <cjson/cJSON.h>
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "archs.h"
#include "check.h"
#include "storylm/adam.h"
#include "storylm/fileio.h"
#include "storylm/model.h"
#include "storylm/shards.h"

typedef struct Fixture {
    cJSON *index;
    char *data;
    size_t len;
} Fixture;

/* The array called name, checked to lie inside the file; NULL if absent. */
static const void *array(const Fixture *f, const char *name, size_t *count) {
    cJSON *a = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(f->index, "arrays"), name);
    if (!a) return NULL;
    size_t n = 1;
    cJSON *dim;
    cJSON_ArrayForEach(dim, cJSON_GetObjectItemCaseSensitive(a, "shape")) n *= (size_t)dim->valuedouble;
    size_t offset = (size_t)cJSON_GetObjectItemCaseSensitive(a, "offset")->valuedouble;
    if (offset > f->len || n * 4 > f->len - offset) return NULL;
    *count = n;
    return f->data + offset;
}

static double number(const Fixture *f, const char *cas, const char *key) {
    cJSON *c = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(f->index, "cases"), cas);
    return cJSON_GetObjectItemCaseSensitive(c, key)->valuedouble;
}

/* Copies the fixture's "prefix/NAME" tensors into the model (shapes must agree with its table). */
static int load_params(const Fixture *f, Model *m, const char *prefix) {
    for (int i = 0; i < m->n_tensors; i++) {
        char name[128];
        size_t n = 0;
        snprintf(name, sizeof name, "%s/%s", prefix, m->tensors[i].name);
        const float *src = array(f, name, &n);
        if (!CHECK(src && n == m->tensors[i].size)) return -1;
        memcpy(m->params + m->tensors[i].offset, src, n * sizeof(float));
    }
    return 0;
}

/* max |got - want| over n values, and max |want| */
static void max_diff(const float *got, const float *want, size_t n, double *diff, double *scale) {
    *diff = 0.0;
    *scale = 0.0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)got[i] - want[i]);
        *diff = d > *diff || isnan(d) ? d : *diff;
        *scale = fabs(want[i]) > *scale ? fabs(want[i]) : *scale;
    }
}

/* grads against "prefix/NAME" for every tensor the fixture has under prefix. */
static double compare_grads(const Fixture *f, const Model *m, const float *grads, const char *prefix) {
    double worst = 0.0;
    for (int i = 0; i < m->n_tensors; i++) {
        char name[128];
        size_t n = 0;
        snprintf(name, sizeof name, "%s/%s", prefix, m->tensors[i].name);
        const float *want = array(f, name, &n);
        if (!want) continue;
        double diff, scale;
        max_diff(grads + m->tensors[i].offset, want, n, &diff, &scale);
        if (!CHECK(diff <= 1e-4 * scale)) fprintf(stderr, "  %s: diff %.3g, max %.3g\n", name, diff, scale);
        worst = fmax(worst, diff / scale);
    }
    return worst;
}

static void make_batch(const Fixture *f, Batch *b) {
    size_t n = 0;
    const int32_t *tokens = array(f, "tokens", &n);
    cJSON *len;
    Error e;
    CHECK(slm_batch_init(b, (int)n, 8, &e) == 0);
    size_t at = 0;
    cJSON_ArrayForEach(len, cJSON_GetObjectItemCaseSensitive(f->index, "lengths")) {
        CHECK(slm_batch_add(b, tokens + at, (int)len->valuedouble, &e) == 0);
        at += (size_t)len->valuedouble;
    }
    CHECK(at == n && b->n_stories == 3);
}

/* Loss, per-position losses and gradients of one architecture. */
static void check_loss_and_grads(const Fixture *f, Model *m, Activations *a, const Batch *b, float *grads,
                                 const char *arch) {
    char name[128];
    float loss;
    Error e;
    CHECK(slm_model_forward(m, a, b, NULL, &loss, &e) == 0);
    CHECK_CLOSE(a->mean_loss, number(f, arch, "loss"), 1e-5, 0);
    size_t n = 0;
    snprintf(name, sizeof name, "%s/position_loss", arch);
    const float *want = array(f, name, &n);
    double diff, scale;
    max_diff(a->loss, want, n, &diff, &scale);
    CHECK(n == (size_t)b->n_tokens && diff < 1e-5 * scale);
    slm_model_zero_grad(m, grads);
    slm_model_backward(m, a, b, grads);
    snprintf(name, sizeof name, "%s/grads", arch);
    double worst = compare_grads(f, m, grads, name);
    printf("%s: loss %.9f (reference %.9f), worst gradient %.2e of its tensor's max\n", arch, a->mean_loss,
           number(f, arch, "loss"), worst);
}

/* Adam divides each gradient by its own size, so where the reference's
 * gradient is within float32's noise of 0 (under 1e-5 of its tensor's
 * largest), any float32 code lands anywhere an Adam step can reach. Those few
 * parameters are held only to that reach (and counted); every other to 1e-5.
 * adam_alone below pins Adam itself down at every gradient size. */
static void compare_after_adam(const Fixture *f, const Model *m, const char *arch, int steps, float lr, double *worst,
                               size_t *loose) {
    for (int t = 0; t < m->n_tensors; t++) {
        char name[128], gname[128];
        size_t n = 0, ng = 0;
        snprintf(name, sizeof name, "%s/adam/%s", arch, m->tensors[t].name);
        snprintf(gname, sizeof gname, "%s/grads/%s", arch, m->tensors[t].name);
        const float *want = array(f, name, &n), *g = array(f, gname, &ng);
        if (!CHECK(want && g && n == m->tensors[t].size && ng == n)) continue;
        double gmax = 0.0, diff = 0.0;
        for (size_t i = 0; i < n; i++) gmax = fmax(gmax, fabs(g[i]));
        size_t bad = 0;
        for (size_t i = 0; i < n; i++) {
            double d = fabs((double)m->params[m->tensors[t].offset + i] - want[i]);
            int tiny = fabs(g[i]) < 1e-5 * gmax;
            if (d > 1e-5 && tiny) (*loose)++;
            bad += d > (tiny ? steps * lr * 1.01 : 1e-5) || isnan(d);
            if (!tiny) diff = fmax(diff, d);
        }
        if (!CHECK(bad == 0) || getenv("VERBOSE")) fprintf(stderr, "  %s: %zu off, diff %.3g\n", name, bad, diff);
        *worst = fmax(*worst, diff);
    }
}

/* Three plain Adam steps on the same batch, then every parameter. */
static void check_adam(const Fixture *f, Model *m, Activations *a, const Batch *b, float *grads, const char *arch) {
    Adam opt;
    Error e;
    CHECK(slm_adam_init(&opt, m->n_params, &e) == 0);
    int steps = (int)cJSON_GetObjectItemCaseSensitive(f->index, "adam_steps")->valuedouble;
    float lr = (float)cJSON_GetObjectItemCaseSensitive(f->index, "lr")->valuedouble;
    for (int step = 0; step < steps; step++) {
        CHECK(slm_model_forward(m, a, b, NULL, NULL, &e) == 0);
        slm_model_zero_grad(m, grads);
        slm_model_backward(m, a, b, grads);
        slm_adam_update(&opt, m->params, grads, lr);
    }
    double worst = 0.0;
    size_t loose = 0;
    compare_after_adam(f, m, arch, steps, lr, &worst, &loose);
    CHECK(loose < m->n_params / 1000);
    printf("%s: after %d Adam steps, worst parameter difference %.2e (%zu parameters with a gradient at float "
           "noise level off by more than 1e-5)\n",
           arch, steps, worst, loose);
    slm_adam_free(&opt);
}

/* Adam alone, given the reference's gradients from 1e-12 to 1: every step. */
static void check_adam_alone(const Fixture *f) {
    size_t n = 0, ng = 0, na = 0;
    const float *p0 = array(f, "adam_alone/params", &n), *g = array(f, "adam_alone/grads", &ng);
    const float *after = array(f, "adam_alone/after", &na);
    Adam opt;
    Error e;
    if (!CHECK(p0 && g && after && ng == na && ng % n == 0 && slm_adam_init(&opt, n, &e) == 0)) return;
    float *p = malloc(n * sizeof(float));
    memcpy(p, p0, n * sizeof(float));
    double worst = 0.0;
    for (size_t step = 0; step < ng / n; step++) {
        slm_adam_update(&opt, p, g + step * n, 1e-3f);
        for (size_t i = 0; i < n; i++) worst = fmax(worst, fabs((double)p[i] - after[step * n + i]));
    }
    CHECK(worst < 1e-6); /* float32 rounding of values up to ~4; a misplaced eps moves some by ~1e-4 */
    printf("adam alone: worst difference %.2e over %zu steps\n", worst, ng / n);
    free(p);
    slm_adam_free(&opt);
}

static void check_arch(const Fixture *f, const Architecture *arch, const Batch *b) {
    const char *name = arch->name;
    ModelConfig cfg = slm_model_config_default(arch, 2000);
    Model m;
    Activations a;
    Error e;
    CHECK(slm_model_init(&m, &cfg, &e) == 0);
    CHECK(slm_activations_init(&a, &cfg, b->n_tokens, &e) == 0);
    float *grads = calloc(m.n_params, sizeof(float));
    char prefix[64];
    snprintf(prefix, sizeof prefix, "%s/params", name);
    if (load_params(f, &m, prefix) == 0) {
        check_loss_and_grads(f, &m, &a, b, grads, name);
        check_adam(f, &m, &a, b, grads, name);
    }
    free(grads);
    slm_activations_free(&a);
    slm_model_free(&m);
}

/* Training's path (shards.h, slm_model_loss_and_grad): the batch's 3 stories
 * dealt to the threads, each shard's output layer in cached chunks. */
static void check_training_path(const Fixture *f, const Architecture *arch, const Batch *b) {
    const char *name = arch->name;
    ModelConfig cfg = slm_model_config_default(arch, 2000);
    Model m;
    Shards sh;
    Error e;
    StoryRef stories[8];
    int longest = 0, predicted = 0;
    for (int i = 0; i < b->n_stories; i++) {
        stories[i] = (StoryRef){b->tokens + b->starts[i], b->starts[i + 1] - b->starts[i]};
        longest = stories[i].len > longest ? stories[i].len : longest;
        predicted += stories[i].len - 1;
    }
    CHECK(slm_model_init(&m, &cfg, &e) == 0);
    CHECK(slm_shards_init(&sh, &m, omp_get_max_threads(), longest, b->n_stories, &e) == 0);
    float *grads = calloc(m.n_params, sizeof(float));
    char prefix[64];
    snprintf(prefix, sizeof prefix, "%s/params", name);
    double loss = 0;
    long long correct = 0;
    if (load_params(f, &m, prefix) == 0 &&
        CHECK(slm_shards_run(&sh, stories, b->n_stories, NULL, 1.0f / predicted, grads, &loss, &correct, &e) == 0)) {
        CHECK_CLOSE(loss / predicted, number(f, name, "loss"), 1e-5, 0);
        snprintf(prefix, sizeof prefix, "%s/grads", name);
        double worst = compare_grads(f, &m, grads, prefix);
        printf("%s, training's path: loss %.9f, worst gradient %.2e of its tensor's max\n", name, loss / predicted,
               worst);
    }
    free(grads);
    slm_shards_free(&sh);
    slm_model_free(&m);
}

/* Heads switched off inside the forward pass: loss and the small tensors' gradients. */
static void check_ablation(const Fixture *f, const Batch *b, const char *cas) {
    ModelConfig cfg = slm_model_config_default(&slm_attention_arch, 2000);
    Model m;
    Activations a;
    Error e;
    size_t n = 0;
    CHECK(slm_model_init(&m, &cfg, &e) == 0);
    CHECK(slm_activations_init(&a, &cfg, b->n_tokens, &e) == 0);
    float *grads = calloc(m.n_params, sizeof(float));
    cJSON *c = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(f->index, "cases"), cas), *h;
    Ablation ab = {.mode = strcmp(cJSON_GetObjectItemCaseSensitive(c, "mode")->valuestring, "mean") == 0 ? ABLATE_MEAN
                                                                                                         : ABLATE_ZERO,
                   .mean = array(f, "head_mean", &n)};
    cJSON_ArrayForEach(h, cJSON_GetObjectItemCaseSensitive(c, "heads"))
        slm_head_set_add(&ab.heads, (int)h->valuedouble);
    if (load_params(f, &m, "attention/params") == 0) {
        CHECK(slm_model_forward(&m, &a, b, &ab, NULL, &e) == 0);
        CHECK_CLOSE(a.mean_loss, number(f, cas, "loss"), 1e-5, 0);
        slm_model_zero_grad(&m, grads);
        slm_model_backward(&m, &a, b, grads);
        char prefix[128];
        snprintf(prefix, sizeof prefix, "ablation/%s/grads", cas);
        double worst = compare_grads(f, &m, grads, prefix);
        printf("ablation %s: loss %.9f (reference %.9f), worst gradient %.2e\n", cas, a.mean_loss,
               number(f, cas, "loss"), worst);
    }
    free(grads);
    slm_activations_free(&a);
    slm_model_free(&m);
}

int main(void) {
    Fixture f = {0};
    Error e;
    char *json;
    size_t json_len;
    if (!CHECK(slm_file_read_all(check_source_path("tests/fixtures/reference.json"), 0, &json, &json_len, &e) == 0 &&
               slm_file_read_all(check_source_path("tests/fixtures/reference.bin"), 0, &f.data, &f.len, &e) == 0)) {
        fprintf(stderr, "%s\n", e.message);
        return check_report();
    }
    f.index = cJSON_Parse(json);
    uint32_t one = 1;
    CHECK(f.index && *(uint8_t *)&one == 1); /* the fixtures are little-endian */
    CHECK(f.len == (size_t)cJSON_GetObjectItemCaseSensitive(f.index, "bytes")->valuedouble);
    Batch b;
    make_batch(&f, &b);
    for (int threads = 1; threads <= 2; threads++) { /* products split over OpenMP's threads, or not */
        slm_model_threads_setup(threads);
        printf("-- %d thread%s\n", threads, threads > 1 ? "s" : "");
        check_arch(&f, &slm_attention_arch, &b);
        check_arch(&f, &slm_window8_arch, &b);
        check_ablation(&f, &b, "zero_2_5");
        check_ablation(&f, &b, "mean_0_7");
        check_training_path(&f, &slm_attention_arch, &b);
        check_training_path(&f, &slm_window8_arch, &b);
    }
    check_adam_alone(&f);
    slm_batch_free(&b);
    cJSON_Delete(f.index);
    free(json);
    free(f.data);
    return check_report();
}
