/* exp and tanh in double: see include/storylm/fixed_math.h. Only +, -, *, /,
 * floor, fabs and copysign (each exact or correctly rounded by IEEE 754, so
 * the same everywhere); this file is compiled without contraction into FMAs
 * (CMakeLists.txt), which some CPUs have and others not. */
#include "storylm/fixed_math.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

/* ln 2 in two parts, fdlibm's: the first has 32 zero bits at its end, so
 * k times it is exact for any k exp meets. */
#define LN2_HI 6.93147180369123816490e-01
#define LN2_LO 1.90821492927058770002e-10

/* 2^k for k in [-1022, 1023], from its bits. */
static double pow2(int k) {
    uint64_t bits = (uint64_t)(k + 1023) << 52;
    double d;
    memcpy(&d, &bits, sizeof d);
    return d;
}

/* e^r for |r| <= 0.35 by its Taylor series to r^13 (the rest below 1e-17 of
 * it), in Horner's order. */
static double exp_reduced(double r) {
    static const double inv_fact[] = {1.0 / 6227020800.0,
                                      1.0 / 479001600.0,
                                      1.0 / 39916800.0,
                                      1.0 / 3628800.0,
                                      1.0 / 362880.0,
                                      1.0 / 40320.0,
                                      1.0 / 5040.0,
                                      1.0 / 720.0,
                                      1.0 / 120.0,
                                      1.0 / 24.0,
                                      1.0 / 6.0,
                                      0.5,
                                      1.0,
                                      1.0};
    double p = inv_fact[0];
    for (int i = 1; i < 14; i++) p = p * r + inv_fact[i];
    return p;
}

double slm_exp_fixed(double x) {
    if (x != x) return x;
    if (x > 709.782712893384) return INFINITY;
    if (x < -745.1332191019412) return 0.0;
    double k = floor(x * 1.4426950408889634 + 0.5); /* the nearest whole number to x / ln 2 */
    double r = (x - k * LN2_HI) - k * LN2_LO;
    int n = (int)k, half = n / 2; /* 2^n in two factors, each a normal number (n from -1075 to 1024) */
    return exp_reduced(r) * pow2(half) * pow2(n - half);
}

/* tanh a for 0 <= a < 0.55 by its Taylor series to a^41 (the rest below
 * 1e-18 of it): a + a (a^2 (c1 + a^2 (c2 + ...))), c_k its coefficients,
 * (-1)^k T_k / (2k+1)! with T_k the tangent numbers. */
static double tanh_series(double a) {
    static const double c[] = {
        -0.3333333333333333,     0.13333333333333333,    -0.05396825396825397,    0.021869488536155203,
        -0.008863235529902197,   0.003592128036572481,   -0.0014558343870513183,  0.000590027440945586,
        -0.00023912911424355248, 9.691537956929451e-05,  -3.927832388331683e-05,  1.5918905069328964e-05,
        -6.451689215655431e-06,  2.6147711512907546e-06, -1.0597268320104654e-06, 4.294911078273806e-07,
        -1.7406618963571648e-07, 7.054636946400968e-08,  -2.859136662305254e-08,  1.1587644432798853e-08};
    double s = a * a, p = c[19];
    for (int k = 18; k >= 0; k--) p = p * s + c[k];
    return a + a * (s * p);
}

double slm_tanh_fixed(double x) {
    double a = fabs(x);
    if (a != a) return x;
    if (a > 22.0) return copysign(1.0, x); /* 1 - tanh 22 is below half of 1's last place */
    /* past 0.55, 1 - 2 / (e^2a + 1) loses no digit to the subtraction (2 / (e^2a + 1) < 1/2) */
    double t = a < 0.55 ? tanh_series(a) : 1.0 - 2.0 / (slm_exp_fixed(2.0 * a) + 1.0);
    return copysign(t, x);
}
