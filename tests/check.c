/* A tiny test harness: see check.h. The failure count is file-local state of
 * the test program, not of the library. */
#include "check.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "storylm/fileio.h"
#include "storylm/model.h"
#include "storylm/rng.h"

static int n_checks, n_failed;

int check_at(int ok, const char *expr, const char *file, int line) {
    n_checks++;
    if (!ok) {
        n_failed++;
        fprintf(stderr, "FAILED %s:%d: %s\n", file, line, expr);
    }
    return ok;
}

int check_close_at(double got, double want, double rel, double abs_tol, const char *expr, const char *file, int line) {
    double diff = fabs(got - want);
    int ok = isfinite(got) && (diff <= abs_tol || diff <= rel * fabs(want));
    if (!ok) fprintf(stderr, "  got %.9g, want %.9g (diff %.3g)\n", got, want, diff);
    return check_at(ok, expr, file, line);
}

int check_report(void) {
    printf("%d checks, %d failed\n", n_checks, n_failed);
    return n_failed ? 1 : 0;
}

const char *check_tmpdir(void) {
    const char *d = getenv("STORYLM_TEST_TMP");
    if (!d) d = "/tmp";
    mkdir(d, 0755);
    return d;
}

const char *check_source_path(const char *rel) {
    static char buf[4096];
    const char *root = getenv("STORYLM_SOURCE_DIR");
    snprintf(buf, sizeof buf, "%s/%s", root ? root : "..", rel);
    return buf;
}

double check_ref_output_loss(const double *W1, const double *b1, const double *W2, const double *b2, int Z, int Hd,
                             int V, const double *z, int next) {
    double y[64], logit[64], mx = -1e300, sum = 0.0;
    for (int j = 0; j < Hd; j++) {
        double a = b1[j];
        for (int i = 0; i < Z; i++) a += W1[j * Z + i] * z[i];
        y[j] = tanh(a);
    }
    for (int v = 0; v < V; v++) {
        logit[v] = b2[v];
        for (int j = 0; j < Hd; j++) logit[v] += W2[v * Hd + j] * y[j];
        mx = fmax(mx, logit[v]);
    }
    for (int v = 0; v < V; v++) sum += exp(logit[v] - mx);
    return mx + log(sum) - logit[next];
}

/* ---- PyTorch fixtures ------------------------------------------------------ */

static cJSON *item(const cJSON *o, const char *key) { return cJSON_GetObjectItemCaseSensitive(o, key); }

/* The fixture's tensors into m; the table must name the same tensors, shapes and order. */
int check_fixture_tensors(const cJSON *cas, Model *m) {
    const cJSON *t;
    int i = 0;
    cJSON_ArrayForEach(t, item(cas, "tensors")) {
        const ParamTensor *pt = i < m->n_tensors ? &m->tensors[i] : NULL;
        if (!CHECK(pt && strcmp(pt->name, item(t, "name")->valuestring) == 0 &&
                   (size_t)cJSON_GetArraySize(item(t, "value")) == pt->size))
            return -1;
        const cJSON *x;
        size_t j = 0;
        cJSON_ArrayForEach(x, item(t, "value")) m->params[pt->offset + j++] = (float)x->valuedouble;
        i++;
    }
    return CHECK(i == m->n_tensors) ? 0 : -1;
}

/* Worst gradient difference over the tensors, each relative to its largest. */
double check_fixture_grads(const cJSON *cas, const Model *m, const float *grads, const char *what) {
    const cJSON *t;
    double worst = 0.0;
    int i = 0;
    cJSON_ArrayForEach(t, item(cas, "tensors")) {
        const ParamTensor *pt = &m->tensors[i++];
        double max_diff = 0.0, max_grad = 0.0;
        const cJSON *g;
        size_t j = 0;
        cJSON_ArrayForEach(g, item(t, "grad")) {
            max_diff = fmax(max_diff, fabs(g->valuedouble - grads[pt->offset + j++]));
            max_grad = fmax(max_grad, fabs(g->valuedouble));
        }
        if (!CHECK(max_grad > 1e-9 ? max_diff <= 1e-4 * max_grad : max_diff <= 1e-6))
            fprintf(stderr, "  %s %s: diff %.3g of max %.3g\n", what, pt->name, max_diff, max_grad);
        if (max_grad > 1e-9) worst = fmax(worst, max_diff / max_grad);
    }
    return worst;
}

void check_fixture_case(const ModelConfig *cfg, const cJSON *cas, const Batch *b, const char *what) {
    Model m;
    Activations a;
    Error e;
    if (!CHECK(slm_model_init(&m, cfg, &e) == 0 && slm_activations_init(&a, cfg, b->n_tokens, &e) == 0)) return;
    if (check_fixture_tensors(cas, &m) == 0) {
        float loss, *grads = calloc(m.n_params, sizeof(float)), *fused = calloc(m.n_params, sizeof(float));
        double want = cJSON_GetObjectItemCaseSensitive(cas, "loss")->valuedouble;
        CHECK(slm_model_forward(&m, &a, b, NULL, &loss, &e) == 0);
        if (!CHECK_CLOSE(a.mean_loss, want, 1e-5, 0)) fprintf(stderr, "  %s: loss differs\n", what);
        slm_model_backward(&m, &a, b, grads);
        double worst = check_fixture_grads(cas, &m, grads, what);
        CHECK(slm_model_loss_and_grad(&m, &a, b, NULL, 1.0f / a.n_predicted, fused, &e) == 0);
        worst = fmax(worst, check_fixture_grads(cas, &m, fused, what));
        printf("%-36s loss %.9f (PyTorch %.9f), worst gradient %.2e\n", what, a.mean_loss, want, worst);
        free(grads);
        free(fused);
    }
    slm_activations_free(&a);
    slm_model_free(&m);
}

void check_tiny_batch(Batch *b, int vocab_size, Rng *rng) {
    static const int lengths[3] = {9, 4, 2};
    int32_t ids[16];
    Error e;
    CHECK(slm_batch_init(b, 32, 4, &e) == 0);
    for (int s = 0; s < 3; s++) {
        ids[0] = 1; /* [EOS] */
        for (int t = 1; t < lengths[s]; t++) ids[t] = (int32_t)slm_rng_below(rng, (uint64_t)vocab_size);
        CHECK(slm_batch_add(b, ids, lengths[s], &e) == 0);
    }
}

cJSON *check_fixture_load(const char *rel, Batch *b) {
    char *json;
    size_t len;
    Error e;
    if (!CHECK(slm_file_read_all(check_source_path(rel), 0, &json, &len, &e) == 0)) {
        fprintf(stderr, "%s\n", e.message);
        return NULL;
    }
    cJSON *fixture = cJSON_Parse(json);
    free(json);
    if (!CHECK(fixture != NULL)) return NULL;
    CHECK(slm_batch_init(b, 64, 4, &e) == 0);
    const cJSON *story, *id;
    cJSON_ArrayForEach(story, cJSON_GetObjectItemCaseSensitive(fixture, "stories")) {
        int32_t ids[64];
        int n = 0;
        cJSON_ArrayForEach(id, story) if (n < 64) ids[n++] = id->valueint;
        CHECK(cJSON_GetArraySize(story) <= 64 && slm_batch_add(b, ids, n, &e) == 0);
    }
    return fixture;
}

/* ---- a fixture's hook points ------------------------------------------------ */

typedef struct HookCheck {
    const cJSON *want; /* {"name": [floats or null]} */
    int seen, missing;
    double worst;
} HookCheck;

static int compare_hook(void *ctx, const char *name, float *data, int ndim, const int *shape, int writable) {
    (void)writable;
    HookCheck *hc = ctx;
    const cJSON *w = item(hc->want, name), *x;
    size_t n = 1, i = 0;
    for (int d = 0; d < ndim; d++) n *= (size_t)shape[d];
    if (!w || (size_t)cJSON_GetArraySize(w) != n) {
        fprintf(stderr, "  hook %s: %s\n", name, w ? "another size than PyTorch's" : "not in the fixture");
        hc->missing++;
        return 0;
    }
    double largest = 0, diff = 0;
    cJSON_ArrayForEach(x, w) {
        float got = data[i++];
        if (cJSON_IsNull(x)) { /* a masked attention score: -inf in both */
            if (!CHECK(isinf(got) && got < 0)) fprintf(stderr, "  hook %s: %g where PyTorch masks\n", name, got);
            continue;
        }
        largest = fmax(largest, fabs(x->valuedouble));
        diff = fmax(diff, fabs(got - x->valuedouble));
    }
    double ratio = diff / fmax(largest, 1e-6);
    if (!CHECK(ratio < 1e-4)) fprintf(stderr, "  hook %s differs from PyTorch's by %.2e of its largest\n", name, ratio);
    hc->worst = fmax(hc->worst, ratio);
    hc->seen++;
    return 0;
}

void check_first_story(const Model *m, const Batch *all, const char *const *names, int n_names, HookFn fn, void *ctx,
                       const Ablation *ab, float *logits) {
    Batch b;
    Activations a;
    Error e = {0};
    int T = all->starts[1];
    ForwardHooks hooks = {.fn = fn, .ctx = ctx, .names = names, .n_names = n_names};
    CHECK(slm_batch_init(&b, T, 1, &e) == 0 && slm_batch_add(&b, all->tokens, T, &e) == 0);
    CHECK(slm_activations_init(&a, &m->cfg, T, &e) == 0);
    a.hooks = fn ? &hooks : NULL;
    CHECK(slm_model_forward(m, &a, &b, ab, NULL, &e) == 0);
    memcpy(logits, a.logits, (size_t)T * m->cfg.vocab_size * sizeof(float));
    slm_hooks_free(&hooks);
    slm_activations_free(&a);
    slm_batch_free(&b);
}

/* Whether name is one of the lines of declared. */
static int declared_point(const char *declared, const char *name) {
    size_t n = strlen(name);
    for (const char *p = declared; p && (p = strstr(p, name)); p += n)
        if ((p == declared || p[-1] == '\n') && (p[n] == '\n' || p[n] == '\0')) return 1;
    return 0;
}

void check_fixture_hooks(const Model *m, const cJSON *cas, const Batch *b, const char *what) {
    Error e = {0};
    HookCheck hc = {.want = item(cas, "hooks")};
    char *declared = slm_hook_names(&m->cfg, &e);
    const char *names[128];
    int n = 0;
    const cJSON *x;
    cJSON_ArrayForEach(x, hc.want) {
        if (!CHECK(declared_point(declared, x->string))) fprintf(stderr, "  hook %s is not declared\n", x->string);
        if (CHECK(n < 128)) names[n++] = x->string;
    }
    float *logits = malloc((size_t)b->starts[1] * m->cfg.vocab_size * sizeof(float));
    check_first_story(m, b, names, n, compare_hook, &hc, NULL, logits);
    CHECK(hc.missing == 0 && hc.seen == cJSON_GetArraySize(hc.want) && hc.seen == n);
    printf("%-36s %d hooks, worst %.2e of their largest\n", what, hc.seen, hc.worst);
    free(logits);
    free(declared);
}
