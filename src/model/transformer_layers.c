/* The transformer's own kernels, forward and backward side by side:
 * LayerNorm, the MLP's activations and bias rows. The products are
 * layers.h's slm_matmul (OpenBLAS), the attention is attention.h's kernel.
 * Every sum runs over positions in order, so the bits do not depend on threads. */
#include "storylm/transformer_layers.h"

#include <math.h>
#include <string.h>

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

/* gelu: x Phi(x) with the exact normal CDF (PyTorch's F.gelu); gelu_new:
 * GPT-2's tanh approximation; relu. */
void slm_act_forward(ActFn act, const float *pre, int n, float *post) {
    for (int i = 0; i < n; i++) {
        float x = pre[i];
        if (act == ACT_GELU)
            post[i] = 0.5f * x * (1.0f + erff(x * SQRT_HALF));
        else if (act == ACT_GELU_NEW)
            post[i] = 0.5f * x * (1.0f + tanhf(SQRT_2_OVER_PI * (x + GELU_NEW_C * x * x * x)));
        else
            post[i] = x > 0 ? x : 0.0f;
    }
}

/* gelu's Phi(x) is post/x, the forward's own value, away from 0: one
 * division instead of a second erff (the most expensive call of a step). */
void slm_act_backward(ActFn act, const float *pre, const float *post, int n, float *d) {
    for (int i = 0; i < n; i++) {
        float x = pre[i], g;
        if (act == ACT_GELU) {
            float cdf = fabsf(x) > 1e-3f ? post[i] / x : 0.5f * (1.0f + erff(x * SQRT_HALF));
            float pdf = expf(-0.5f * x * x) * 0.3989422804014327f; /* 1/sqrt(2 pi) */
            g = cdf + x * pdf;
        } else if (act == ACT_GELU_NEW) {
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
