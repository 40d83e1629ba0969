/* exp and tanh in double from IEEE operations alone (src/base/fixed_math.c):
 * the same bits with every C library and compiler, where libm's last bit
 * differs (glibc's against the WebAssembly build's musl), within about 2
 * units in the last place of the true values. The probes that compute in
 * double (patch, attribute, circuits) use them, so that the native build's
 * --kernels portable numbers are the WebAssembly build's bit for bit. */
#ifndef STORYLM_FIXED_MATH_H
#define STORYLM_FIXED_MATH_H

/* e^x: +inf past 709.78, 0 below -745.13, NaN for NaN. */
double slm_exp_fixed(double x);
/* tanh x: +-1 past 22 in size, NaN for NaN. */
double slm_tanh_fixed(double x);

#endif
