/* The architecture interface's contracts (arch.h), for every registered
 * architecture, asked only through the interface: its default config passes
 * its check, its table lays out one buffer, its initial values follow the
 * seed, its passes agree with each other and with the loss's numerical
 * gradient, the hook points it declares are the ones its pass reaches, what
 * the probes read of it agrees with its run, and the registry finds each by
 * name and refuses others listing the names. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "storylm/arch.h"
#include "storylm/batch.h"
#include "storylm/hooks.h"
#include "storylm/model.h"
#include "storylm/position.h"
#include "storylm/rng.h"

#define V 40

/* A, small enough to check every gradient: its default shrunk, two layers where it has layers. */
static ModelConfig small_config(const Architecture *a) {
    ModelConfig c = a->config_default(V);
    c.row_dim = 8, c.n_heads = 2, c.key_dim = 4, c.value_dim = 4, c.window = 6, c.context = 3;
    c.hidden_dim = c.hidden_dim > 0 ? 12 : 0; /* none where it has none (attn-only's blocks) */
    if (a->max_layers > 1) c.n_layers = 2;
    return c;
}

static void registry_finds_every_architecture_by_name(void) {
    CHECK(slm_arch_count() >= 3);
    CHECK(slm_arch_default() == slm_arch_at(0));
    for (int i = 0; i < slm_arch_count(); i++) {
        const Architecture *a = slm_arch_at(i);
        Error e = {0};
        CHECK(a && a->name && a->summary && slm_arch_find(a->name, &e) == a);
        for (int j = 0; j < i; j++) CHECK(strcmp(slm_arch_at(j)->name, a->name) != 0);
    }
    Error e = {0};
    CHECK(slm_arch_find("lstm", &e) == NULL);
    CHECK(strstr(e.message, "unknown architecture 'lstm'") != NULL);
    char names[256] = "use ";
    slm_arch_names(names + 4, sizeof names - 4);
    CHECK(strstr(e.hint, "attention, window8, transformer") != NULL && strcmp(e.hint, names) == 0);
    CHECK(slm_arch_at(slm_arch_count()) == NULL && slm_arch_at(-1) == NULL);
}

/* Every operation a caller may call is there (window8 has no heads to read). */
static void every_operation_is_there(const Architecture *a) {
    CHECK(a->config_default && a->config_check && a->config_write && a->config_read && a->describe);
    CHECK(a->layers && a->heads_per_layer && a->context_needed && a->layout && a->bind_views && a->randomize);
    CHECK(a->activations_init && a->activations_free && a->forward && a->loss_and_grad && a->backward);
    CHECK(a->hook_points && a->hook_move && a->generator && a->max_layers >= 1);
    ModelConfig c = a->config_default(V);
    int heads = a->heads_per_layer(&c) > 0;
    CHECK(!heads || (a->layer_qkv && a->layer_attention && a->head_output));
    const ProbeOps *o = a->probes;
    CHECK(heads == (o != NULL)); /* what the probes read: every model with heads, none without */
    if (!o) return;
    CHECK(o->layer_view && o->position_score && o->trace_layer);
    CHECK(o->circuit_scratch && o->circuit_qk && o->circuit_ov && o->circuit_note);
    int residual = a->readout == READOUT_RESIDUAL; /* its attribution's parts are the architecture's */
    CHECK(residual == (o->n_resid_parts && o->resid_parts && o->unembed));
}

static void config_default_passes_its_check(const Architecture *a) {
    ModelConfig c = a->config_default(V), s = small_config(a);
    Error e = {0};
    CHECK(c.arch == a && a->config_check(&c, &e) == 0);
    CHECK(a->config_check(&s, &e) == 0);
    if (e.message[0]) fprintf(stderr, "  %s: %s\n", a->name, e.message);
    char lines[512];
    a->describe(&c, lines, sizeof lines);
    CHECK(strncmp(lines, "architecture  ", 14) == 0 && strstr(lines, a->name) != NULL);
}

/* One buffer: the tensors follow each other, their sizes their shapes', and
 * the count slm_model_param_count gives without allocating. */
static void layout_is_one_buffer(const Architecture *a) {
    ModelConfig c = small_config(a);
    Model m;
    Error e = {0};
    if (!CHECK(slm_model_init(&m, &c, &e) == 0)) return;
    size_t at = 0;
    for (int i = 0; i < m.n_tensors; i++) {
        const ParamTensor *t = &m.tensors[i];
        size_t n = 1;
        for (int d = 0; d < t->ndim; d++) n *= (size_t)t->shape[d];
        CHECK(t->offset == at && t->size == n && n > 0);
        CHECK(slm_model_tensor(&m, t->name) == t); /* names are unique */
        at += t->size;
    }
    CHECK(m.n_tensors > 0 && at == m.n_params && slm_model_param_count(&c) == m.n_params);
    CHECK(m.embedding != NULL); /* every architecture's rows */
    slm_model_free(&m);
}

static void randomize_follows_the_seed(const Architecture *a) {
    ModelConfig c = small_config(a);
    Model x, y;
    Error e = {0};
    if (!CHECK(slm_model_init(&x, &c, &e) == 0 && slm_model_init(&y, &c, &e) == 0)) return;
    slm_model_randomize(&x, 7);
    slm_model_randomize(&y, 7);
    CHECK(memcmp(x.params, y.params, x.n_params * sizeof(float)) == 0);
    slm_model_randomize(&y, 8);
    CHECK(memcmp(x.params, y.params, x.n_params * sizeof(float)) != 0);
    slm_model_free(&x);
    slm_model_free(&y);
}

/* The names a pass reached, "\n"-joined. */
typedef struct Seen {
    char names[4096];
    size_t used;
} Seen;

static int record(void *ctx, const char *name, float *data, int ndim, const int *shape, int writable) {
    (void)data, (void)ndim, (void)shape, (void)writable;
    Seen *s = ctx;
    s->used += (size_t)snprintf(s->names + s->used, sizeof s->names - s->used, "%s%s", s->used ? "\n" : "", name);
    return 0;
}

/* A small model of a's with random weights, a batch of three stories and activations. */
static int setup(const Architecture *a, Model *m, Activations *acts, Batch *b) {
    ModelConfig c = small_config(a);
    Error e = {0};
    Rng rng;
    slm_rng_seed(&rng, 5);
    if (!CHECK(slm_model_init(m, &c, &e) == 0)) return -1;
    slm_model_randomize(m, 3);
    if (!CHECK(slm_activations_init(acts, &c, 32, &e) == 0)) return -1;
    check_tiny_batch(b, V, &rng);
    return 0;
}

static void cleanup(Model *m, Activations *acts, Batch *b) {
    slm_batch_free(b);
    slm_activations_free(acts);
    slm_model_free(m);
}

/* The forward with every hook point asked reaches the points the
 * architecture declares, each once and in the declared order. */
static void hook_points_declared_are_the_ones_reached(const Architecture *a) {
    Model m;
    Activations acts;
    Batch b;
    Error e = {0};
    if (setup(a, &m, &acts, &b)) return;
    Seen seen = {0};
    ForwardHooks hooks = {.fn = record, .ctx = &seen};
    acts.hooks = &hooks;
    float loss;
    CHECK(slm_model_forward(&m, &acts, &b, NULL, &loss, &e) == 0);
    char *declared = slm_hook_names(&m.cfg, &e);
    if (CHECK(declared != NULL) && !CHECK(strcmp(declared, seen.names) == 0))
        fprintf(stderr, "  %s declares\n%s\n  and reaches\n%s\n", a->name, declared, seen.names);
    free(declared);
    slm_hooks_free(&hooks);
    acts.hooks = NULL;
    cleanup(&m, &acts, &b);
}

/* The forward and training's pass give the same losses, and training's
 * gradient is the backward's. */
static void forward_and_loss_and_grad_agree(const Architecture *a) {
    Model m;
    Activations acts;
    Batch b;
    Error e = {0};
    if (setup(a, &m, &acts, &b)) return;
    float loss;
    float *grads = calloc(m.n_params, sizeof(float)), *fused = calloc(m.n_params, sizeof(float));
    CHECK(slm_model_forward(&m, &acts, &b, NULL, &loss, &e) == 0);
    double forward_loss = acts.mean_loss;
    slm_model_backward(&m, &acts, &b, grads);
    CHECK(slm_model_loss_and_grad(&m, &acts, &b, NULL, 1.0f / acts.n_predicted, fused, &e) == 0);
    CHECK_CLOSE(acts.mean_loss, forward_loss, 1e-6, 0);
    double worst = 0;
    for (size_t i = 0; i < m.n_params; i++) worst = fmax(worst, fabs(grads[i] - fused[i]));
    CHECK(worst < 1e-5);
    free(grads);
    free(fused);
    cleanup(&m, &acts, &b);
}

/* The backward's gradient against the forward's loss moved by +-h, for
 * every tensor (every third number of the large ones). */
static void gradient_is_the_loss_slope(const Architecture *a) {
    Model m;
    Activations acts;
    Batch b;
    Error e = {0};
    if (setup(a, &m, &acts, &b)) return;
    float loss, *grads = calloc(m.n_params, sizeof(float));
    CHECK(slm_model_forward(&m, &acts, &b, NULL, &loss, &e) == 0);
    slm_model_backward(&m, &acts, &b, grads);
    const float h = 1e-2f;
    double worst = 0;
    for (int t = 0; t < m.n_tensors; t++) {
        const ParamTensor *pt = &m.tensors[t];
        double max_diff = 0, max_grad = 0;
        size_t step = pt->size > 200 ? 3 : 1;
        for (size_t i = pt->offset; i < pt->offset + pt->size; i += step) {
            float saved = m.params[i];
            m.params[i] = saved + h;
            CHECK(slm_model_forward(&m, &acts, &b, NULL, NULL, &e) == 0);
            double up = acts.mean_loss;
            m.params[i] = saved - h;
            CHECK(slm_model_forward(&m, &acts, &b, NULL, NULL, &e) == 0);
            double down = acts.mean_loss;
            m.params[i] = saved;
            double numeric = (up - down) / (2.0 * h);
            max_diff = fmax(max_diff, fabs(numeric - grads[i]));
            max_grad = fmax(max_grad, fabs(grads[i]));
        }
        double ratio = max_grad > 1e-6 ? max_diff / max_grad : max_diff;
        if (!CHECK(ratio < 2e-2)) fprintf(stderr, "  %s %s: %.3g of its largest\n", a->name, pt->name, ratio);
        worst = fmax(worst, ratio);
    }
    printf("%-12s %d tensors, worst gradient %.2e of its tensor's largest\n", a->name, m.n_tensors, worst);
    free(grads);
    cleanup(&m, &acts, &b);
}

/* What a model file holds of its config, written and read back by the architecture. */
typedef struct Keys {
    char key[32][32], value[32][64];
    int n;
} Keys;

static int put(void *ctx, const char *key, const char *value, Error *e) {
    Keys *k = ctx;
    if (k->n == 32) return FAIL(e, NULL, "too many keys");
    snprintf(k->key[k->n], sizeof k->key[0], "%s", key);
    snprintf(k->value[k->n++], sizeof k->value[0], "%s", value);
    return 0;
}

static const char *get(void *ctx, const char *key) {
    Keys *k = ctx;
    for (int i = 0; i < k->n; i++)
        if (strcmp(k->key[i], key) == 0) return k->value[i];
    return NULL;
}

static void config_keys_round_trip(const Architecture *a) {
    ModelConfig c = small_config(a), back = a->config_default(V);
    Keys k = {0};
    Error e = {0};
    CHECK(a->config_write(&c, put, &k, &e) == 0);
    for (int i = 0; i < k.n; i++) { /* each key it writes is one the file format reserves */
        int listed = 0;
        for (const char *const *key = a->config_keys; key && *key; key++) listed |= strcmp(*key, k.key[i]) == 0;
        CHECK(listed);
    }
    back.row_dim = c.row_dim, back.n_heads = c.n_heads, back.key_dim = c.key_dim, back.value_dim = c.value_dim;
    back.window = c.window, back.hidden_dim = c.hidden_dim, back.context = c.context; /* the sizes: the file's own */
    CHECK(a->config_read(&back, get, &k, &e) == 0);
    CHECK(back.pos == c.pos && back.score == c.score && back.act == c.act);
    CHECK(a->layers(&back) == a->layers(&c));
}

/* What the probes read agrees with the model: each layer's view reads its
 * scores per distance back as position_score gives them, and a residual
 * readout's parts add up to the stream whose logits the run gave. */
static void probe_ops_agree_with_the_run(const Architecture *a) {
    Model m, view;
    Activations acts;
    Batch b;
    Error e = {0};
    const ProbeOps *o = a->probes;
    if (!o || setup(a, &m, &acts, &b)) return;
    float loss, *table = calloc((size_t)m.cfg.n_heads * m.cfg.window, sizeof(float));
    CHECK(slm_model_forward(&m, &acts, &b, NULL, &loss, &e) == 0);
    for (int l = 0; l < slm_model_layers(&m.cfg); l++) {
        o->layer_view(&m, l, &view, table);
        for (int h = 0; h < m.cfg.n_heads; h++)
            for (int d = 0; d < m.cfg.window; d++)
                CHECK(slm_position_distance_score(&view, h, d) == o->position_score(&m, l, h, d));
    }
    if (o->resid_parts) {
        int P = o->n_resid_parts(&m.cfg), D = m.cfg.row_dim, p = acts.n_positions - 1, Vs = m.cfg.vocab_size;
        double *parts = calloc((size_t)P * D, sizeof(double)), *x = calloc((size_t)D, sizeof(double)), mean = 0,
               var = 0;
        char(*names)[24] = calloc((size_t)P, sizeof *names);
        Unembed u;
        o->resid_parts(&m, &acts, p, parts, names);
        o->unembed(&m, &acts, p, &u);
        for (int k = 0; k < P; k++) {
            CHECK(names[k][0] != '\0');
            for (int i = 0; i < D; i++) x[i] += parts[(size_t)k * D + i];
        }
        for (int i = 0; i < D; i++) mean += x[i] / D;
        for (int i = 0; i < D; i++) var += (x[i] - mean) * (x[i] - mean) / D;
        CHECK_CLOSE(1 / sqrt(var + u.eps), u.rstd, 1e-4, 1e-4);
        for (int t = 0; t < Vs; t++) {
            double logit = u.b_U[t];
            for (int i = 0; i < D; i++)
                logit += ((x[i] - mean) * u.rstd * u.ln_w[i] + u.ln_b[i]) * u.W_U[(size_t)i * Vs + t];
            CHECK_CLOSE(logit, acts.logits[(size_t)p * Vs + t], 1e-4, 1e-4);
        }
        free(parts);
        free(x);
        free(names);
    }
    free(table);
    cleanup(&m, &acts, &b);
}

int main(void) {
    registry_finds_every_architecture_by_name();
    for (int i = 0; i < slm_arch_count(); i++) {
        const Architecture *a = slm_arch_at(i);
        every_operation_is_there(a);
        config_default_passes_its_check(a);
        layout_is_one_buffer(a);
        randomize_follows_the_seed(a);
        config_keys_round_trip(a);
        hook_points_declared_are_the_ones_reached(a);
        forward_and_loss_and_grad_agree(a);
        gradient_is_the_loss_slope(a);
        probe_ops_agree_with_the_run(a);
    }
    return check_report();
}
