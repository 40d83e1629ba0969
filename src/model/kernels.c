/* The kernel choice's names: see include/storylm/kernels.h. */
#include "storylm/kernels.h"

#include <string.h>

const char *slm_kernels_name(Kernels k) { return k == KERNELS_PORTABLE ? "portable" : "blas"; }

int slm_kernels_parse(const char *name, Kernels *k, Error *e) {
    if (name && strcmp(name, "blas") == 0)
        *k = KERNELS_BLAS;
    else if (name && strcmp(name, "portable") == 0)
        *k = KERNELS_PORTABLE;
    else
        return FAIL(e, "give --kernels blas (the default) or portable", "unknown kernels '%.40s' (blas or portable)",
                    name ? name : "");
    return 0;
}

int slm_kernels_check(Kernels k, Precision p, Error *e) {
#ifdef __EMSCRIPTEN__
    if (k == KERNELS_BLAS)
        return FAIL(e, "leave out --kernels (portable is the default here)",
                    "--kernels blas: this WebAssembly build has no OpenBLAS, only the portable kernels");
#endif
    if (k == KERNELS_PORTABLE && p != PRECISION_FP32)
        return FAIL(e, "leave out --precision bf16 with --kernels portable",
                    "--kernels portable computes in fp32 only (BF16 products need avx512_bf16)");
    return 0;
}
