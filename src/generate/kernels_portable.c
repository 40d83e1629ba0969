/* Generation's kernels on the portable kernels (kernels_portable.h):
 * kernels16.c compiled again without contraction into FMAs (its vectors are
 * GCC/Clang vector extensions, each lane rounding as a scalar, so the
 * vector width changes no bit), and the two functions of other files the
 * generators call that are not yet twins. */
#define SLM_PORTABLE 1
#include "kernels_portable.h"

#include "kernels16.c"

#include "storylm/dense_bf16.h"
#include "storylm/kernels.h"

/* y of sample which[j] (f->rows) = W x + bias, j < k: FP32 only (bf16 is
 * refused by slm_precision_check_portable), so b and in are NULL. */
void slm_dense_at(const Dense16 *f, const DenseBf16 *b, const Bf16Inputs *in, const float *bias, const float *x,
                  size_t x_step, const int *which, int k, float *y, size_t y_step) {
    (void)b, (void)in;
    slm_dense16(f, bias, x, x_step, which, k, y, y_step);
}

/* The portable kernels compute in FP32 alone (slm_kernels_check). */
int slm_precision_check(Precision p, Error *e) { return slm_kernels_check(KERNELS_PORTABLE, p, e); }
