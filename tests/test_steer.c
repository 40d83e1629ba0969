/* Steering (steer.h): for every architecture and every hook point its
 * generator steers at, a generator adding a direction there gives, token by
 * token, the logits of the forward pass with a hook adding the same
 * direction at that point at every position; the direction changes them; a
 * point the generator does not steer at is refused naming it. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "storylm/arch.h"
#include "storylm/batch.h"
#include "storylm/generate.h"
#include "storylm/hooks.h"
#include "storylm/model.h"
#include "storylm/rng.h"
#include "storylm/sae_model.h"
#include "storylm/steer.h"

#define V 40
#define T 12 /* past the small window: the caches wrap */

static ModelConfig small_config(const Architecture *a) {
    ModelConfig c = a->config_default(V);
    c.row_dim = 8, c.n_heads = 2, c.key_dim = 4, c.value_dim = 4, c.window = 6, c.context = 3;
    c.hidden_dim = c.hidden_dim > 0 ? 12 : 0;
    if (a->max_layers > 1) c.n_layers = 2;
    return c;
}

/* The forward's hook: direction added at point, the logits (T, V) kept. */
typedef struct AddHook {
    const char *point;
    const float *direction;
    int width;
    float logits[T * V];
} AddHook;

static int add_hook(void *ctx, const char *name, float *data, int ndim, const int *shape, int writable) {
    AddHook *h = ctx;
    (void)ndim, (void)writable;
    int changed = 0;
    if (strcmp(name, h->point) == 0) {
        for (int t = 0; t < shape[0]; t++)
            for (int i = 0; i < h->width; i++) data[(size_t)t * h->width + i] += h->direction[i];
        changed = 1;
    }
    if (strcmp(name, "hook_logits") == 0) memcpy(h->logits, data, sizeof h->logits);
    return changed;
}

/* name -> *p, *layer; -1 when no point has that name. */
static int point_of(const char *name, HookPoint *p, int *layer) {
    char buf[96];
    for (int q = 0; q < HOOK_COUNT; q++)
        for (int l = 0; l < 4; l++) {
            slm_hook_name((HookPoint)q, l, buf, sizeof buf);
            if (strcmp(buf, name) == 0) return *p = (HookPoint)q, *layer = l, 0;
        }
    return -1;
}

/* The forward's logits (T, V) of ids with direction (NULL: none) added at point. */
static void forward_logits(const Model *m, const int32_t *ids, const char *point, const float *direction, int width,
                           AddHook *h) {
    Error e = {0};
    Activations a;
    Batch b;
    const char *names[2] = {point, "hook_logits"};
    *h = (AddHook){.point = direction ? point : "", .direction = direction, .width = width};
    ForwardHooks hooks = {.fn = add_hook, .ctx = h, .names = names, .n_names = 2};
    CHECK(slm_activations_init(&a, &m->cfg, T, &e) == 0 && slm_batch_init(&b, T, 1, &e) == 0 &&
          slm_batch_add(&b, ids, T, &e) == 0);
    a.hooks = &hooks;
    CHECK(slm_model_forward(m, &a, &b, NULL, NULL, &e) == 0);
    slm_hooks_free(&hooks);
    slm_batch_free(&b);
    slm_activations_free(&a);
}

/* Point name of m steered with a random direction: the generator's logits
 * at each step are the forward's with the hook adding it. */
static void steered_generator_is_the_hooked_forward(const Model *m, const char *name, int width, HookPoint p, int l) {
    Error e = {0};
    Rng r;
    slm_rng_seed(&r, 11);
    float direction[512];
    int32_t ids[T];
    for (int i = 0; i < width; i++) direction[i] = 2.0f * slm_rng_uniform(&r) - 1.0f;
    for (int t = 0; t < T; t++) ids[t] = (int32_t)slm_rng_below(&r, V);
    Steering s = {0};
    Generator g;
    CHECK(slm_steering_add(&s, p, l, direction, width, 1.0f, &e) == 0);
    CHECK(slm_generator_init(&g, m, NULL, &e) == 0 && slm_generator_batch_steer(&g.batch, &s, &e) == 0);
    AddHook *hooked = malloc(sizeof *hooked), *clean = malloc(sizeof *clean);
    forward_logits(m, ids, name, direction, width, hooked);
    forward_logits(m, ids, name, NULL, width, clean);
    double worst = 0, moved = 0;
    for (int t = 0; t < T; t++) {
        const float *logits = slm_generator_feed(&g, ids[t]);
        for (int v = 0; v < V; v++) {
            worst = fmax(worst, fabs(logits[v] - hooked->logits[t * V + v]) / (1 + fabs(hooked->logits[t * V + v])));
            moved = fmax(moved, fabs(logits[v] - clean->logits[t * V + v]));
        }
    }
    if (!CHECK(worst < 1e-4 && moved > 1e-3))
        fprintf(stderr, "  %s %s: generator vs hooked forward %.3g, moved %.3g\n", m->cfg.arch->name, name, worst,
                moved);
    slm_generator_free(&g);
    slm_steering_free(&s);
    free(hooked), free(clean);
}

/* Every point of a's model with a row a position: steered as the forward, or refused naming it. */
static void every_point_steers_or_is_refused(const Architecture *a) {
    ModelConfig c = small_config(a);
    Error e = {0};
    Model m;
    if (!CHECK(slm_model_init(&m, &c, &e) == 0)) return;
    slm_model_randomize(&m, 3);
    char *list = slm_hook_names(&c, &e);
    int steered = 0;
    for (char *name = strtok(list, "\n"); name; name = strtok(NULL, "\n")) {
        SaeSite site;
        HookPoint p;
        int l;
        if (slm_sae_site(&m, name, &site, &e) || point_of(name, &p, &l)) continue; /* no row a position */
        if (a->generator->steer_points & (1u << p)) {
            steered_generator_is_the_hooked_forward(&m, name, site.d_in, p, l), steered++;
            continue;
        }
        float zeros[512] = {0};
        Steering s = {0};
        Generator g;
        CHECK(slm_steering_add(&s, p, l, zeros, site.d_in, 1.0f, &e) == 0 && slm_generator_init(&g, &m, NULL, &e) == 0);
        CHECK(slm_generator_batch_steer(&g.batch, &s, &e) == -1 && strstr(e.message, name) != NULL);
        slm_generator_free(&g);
        slm_steering_free(&s);
    }
    CHECK(steered >= 3);
    free(list);
    slm_model_free(&m);
}

int main(void) {
    for (int i = 0; i < slm_arch_count(); i++) every_point_steers_or_is_refused(slm_arch_at(i));
    return check_report();
}
