/* The transformer's own kernels, forward and backward side by side:
 * LayerNorm, the MLP's activations and bias rows. The products are
 * layers.h's slm_matmul (OpenBLAS), the attention is attention.h's kernel.
 * Every sum runs over positions in order, so the bits do not depend on threads. */
#include "transformer_layers.h"

#include <math.h>

#include "storylm/layers.h"

/* ---- LayerNorm ------------------------------------------------------------ */

/* x (n, D) -> y (n, D) = (x - mean) * rstd * w + b, rstd = 1/sqrt(var + eps),
 * var the mean of squared deviations (PyTorch's LayerNorm, TransformerLens's
 * LN); mean, rstd (n) kept for the backward. Sums in double: D is small. */
void slm_layernorm_forward(const float *x, const float *w, const float *b, int n, int D, float *y, float *mean,
                           float *rstd) {
    for (int p = 0; p < n; p++) {
        const float *xp = x + (size_t)p * D;
        double s = 0, ss = 0;
        for (int i = 0; i < D; i++) s += xp[i];
        double mu = s / D;
        for (int i = 0; i < D; i++) ss += (xp[i] - mu) * (xp[i] - mu);
        float r = (float)(1.0 / sqrt(ss / D + TF_LN_EPS));
        mean[p] = (float)mu, rstd[p] = r;
        float *yp = y + (size_t)p * D;
        for (int i = 0; i < D; i++) yp[i] = (xp[i] - (float)mu) * r * w[i] + b[i];
    }
}

/* d_y (n, D) -> d_x (n, D) +=, d_w, d_b (D) +=. With xh = (x - mean) rstd
 * and g = d_y w: d_x = rstd (g - mean(g) - xh mean(g xh)). */
void slm_layernorm_backward(const float *x, const float *w, const float *mean, const float *rstd, const float *d_y,
                            int n, int D, float *d_x, float *d_w, float *d_b) {
    for (int p = 0; p < n; p++) {
        const float *xp = x + (size_t)p * D, *gy = d_y + (size_t)p * D;
        float *dx = d_x + (size_t)p * D, r = rstd[p], mu = mean[p];
        double sg = 0, sgx = 0;
        for (int i = 0; i < D; i++) {
            float xh = (xp[i] - mu) * r, g = gy[i] * w[i];
            d_w[i] += gy[i] * xh;
            d_b[i] += gy[i];
            sg += g;
            sgx += g * xh;
        }
        float mg = (float)(sg / D), mgx = (float)(sgx / D);
        for (int i = 0; i < D; i++) {
            float xh = (xp[i] - mu) * r;
            dx[i] += r * (gy[i] * w[i] - mg - xh * mgx);
        }
    }
}

/* ---- the MLP's activation ------------------------------------------------- */

#define SQRT_2_OVER_PI 0.7978845608028654f
#define GELU_NEW_C 0.044715f
#define SQRT_HALF 0.7071067811865476f

/* erf(x), vectorizable (libm's erff is a call an element, the most expensive
 * part of a transformer step): a rational fit in x^2 (Eigen's), within 4e-7
 * of erf, x clamped to [-4, 4] where erf is +-1 to float precision. */
static inline float erf_fast(float x) {
    x = x < -4.0f ? -4.0f : x > 4.0f ? 4.0f : x;
    float x2 = x * x, p = -2.72614225801306e-10f, q = -1.45660718464996e-05f;
    p = p * x2 + 2.77068142495902e-08f;
    p = p * x2 + -2.10102402082508e-06f;
    p = p * x2 + -5.69250639462346e-05f;
    p = p * x2 + -7.34990630326855e-04f;
    p = p * x2 + -2.95459980854025e-03f;
    p = p * x2 + -1.60960333262415e-02f;
    q = q * x2 + -2.13374055278905e-04f;
    q = q * x2 + -1.68282697438203e-03f;
    q = q * x2 + -7.37332916720468e-03f;
    q = q * x2 + -1.42647390514189e-02f;
    return x * p / q;
}

/* gelu: x Phi(x) with the normal CDF through erf (PyTorch's F.gelu, to
 * erf_fast's 4e-7); gelu_new: GPT-2's tanh approximation; relu. */
void slm_act_forward(ActFn act, const float *pre, int n, float *post) {
    if (act == ACT_GELU) {
#pragma omp simd
        for (int i = 0; i < n; i++) post[i] = 0.5f * pre[i] * (1.0f + erf_fast(pre[i] * SQRT_HALF));
        return;
    }
    for (int i = 0; i < n; i++) {
        float x = pre[i];
        if (act == ACT_GELU_NEW)
            post[i] = 0.5f * x * (1.0f + tanhf(SQRT_2_OVER_PI * (x + GELU_NEW_C * x * x * x)));
        else
            post[i] = x > 0 ? x : 0.0f;
    }
}

/* gelu's derivative Phi(x) + x phi(x): 256 elements at a time, phi's
 * exponentials by layers.c's vectorized exp with kernels k. */
static void gelu_backward(Kernels k, const float *pre, int n, float *d) {
    float e[256];
    for (int at = 0; at < n; at += 256) {
        int len = n - at < 256 ? n - at : 256;
        const float *x = pre + at;
#pragma omp simd
        for (int i = 0; i < len; i++) e[i] = -0.5f * x[i] * x[i];
        slm_exp_inplace_at(k, e, len, 0.0f);
#pragma omp simd
        for (int i = 0; i < len; i++)
            d[at + i] *=
                0.5f * (1.0f + erf_fast(x[i] * SQRT_HALF)) + x[i] * e[i] * 0.3989422804014327f; /* 1/sqrt(2 pi) */
    }
}

void slm_act_backward(Kernels k, ActFn act, const float *pre, const float *post, int n, float *d) {
    (void)post;
    if (act == ACT_GELU) {
        gelu_backward(k, pre, n, d);
        return;
    }
    for (int i = 0; i < n; i++) {
        float x = pre[i], g;
        if (act == ACT_GELU_NEW) {
            float t = tanhf(SQRT_2_OVER_PI * (x + GELU_NEW_C * x * x * x));
            g = 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * SQRT_2_OVER_PI * (1.0f + 3.0f * GELU_NEW_C * x * x);
        } else {
            g = x > 0 ? 1.0f : 0.0f;
        }
        d[i] *= g;
    }
}

/* ---- bias rows ------------------------------------------------------------ */

void slm_add_bias_rows(float *y, int n, int cols, int ld, const float *bias) {
    for (int p = 0; p < n; p++) {
        float *row = y + (size_t)p * ld;
        for (int i = 0; i < cols; i++) row[i] += bias[i];
    }
}
