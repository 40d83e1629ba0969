/* A tiny test harness: see check.h. The failure count is file-local state of
 * the test program, not of the library. */
#include "check.h"

#include <math.h>
#include <stdlib.h>
#include <sys/stat.h>

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
