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
