/* fixed_math.c: exp and tanh from IEEE operations alone, within 2 units in
 * the last place of libm's over their ranges (libm itself is within about 1
 * of the truth), exact at the points where the answer is known, and the
 * edges: overflow, underflow, NaN, the sign of zero. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "storylm/fixed_math.h"

/* Units in the last place between a and b (finite, same sign). */
static double ulps(double a, double b) {
    if (a == b) return 0;
    double scale = fmax(fabs(a), fabs(b));
    int e;
    frexp(scale, &e);
    return fabs(a - b) / ldexp(1.0, e - 53);
}

/* x from lo to hi in n steps, plus an irregular offset so that the points are
 * not all on a grid. */
static double worst(double (*mine)(double), double (*libm)(double), double lo, double hi, int n) {
    double w = 0;
    for (int i = 0; i <= n; i++) {
        double x = lo + (hi - lo) * ((i + 0.37 * (i % 7) / 7.0) / n);
        double u = ulps(mine(x), libm(x));
        if (u > w) w = u;
    }
    return w;
}

int main(void) {
    double w = worst(slm_exp_fixed, exp, -700, 700, 200000);
    CHECK(w <= 2);
    w = worst(slm_exp_fixed, exp, -1, 1, 200000);
    CHECK(w <= 2);
    w = worst(slm_tanh_fixed, tanh, -25, 25, 200000);
    CHECK(w <= 2);
    w = worst(slm_tanh_fixed, tanh, -0.6, 0.6, 200000);
    CHECK(w <= 2);
    w = worst(slm_tanh_fixed, tanh, -1e-6, 1e-6, 20000);
    CHECK(w <= 2);
    CHECK(slm_exp_fixed(0) == 1.0);
    CHECK(ulps(slm_exp_fixed(1), exp(1.0)) <= 1);
    CHECK(isinf(slm_exp_fixed(710)) && slm_exp_fixed(-746) == 0.0);
    CHECK(slm_exp_fixed(709.7) < INFINITY && slm_exp_fixed(709.7) > 1e308);
    CHECK(slm_exp_fixed(-740) > 0 && ulps(slm_exp_fixed(-700), exp(-700)) <= 2);
    CHECK(isnan(slm_exp_fixed(NAN)) && isnan(slm_tanh_fixed(NAN)));
    CHECK(slm_exp_fixed(-INFINITY) == 0.0 && isinf(slm_exp_fixed(INFINITY)));
    CHECK(slm_tanh_fixed(0.0) == 0.0 && !signbit(slm_tanh_fixed(0.0)) && signbit(slm_tanh_fixed(-0.0)));
    CHECK(slm_tanh_fixed(30) == 1.0 && slm_tanh_fixed(-30) == -1.0 && slm_tanh_fixed(INFINITY) == 1.0);
    CHECK(slm_tanh_fixed(-0.3) == -slm_tanh_fixed(0.3));
    return check_report();
}
