/* Which kernels compute the passes (src/model/kernels.c): OpenBLAS's products
 * with the build's vector code (the default), or storylm's own portable
 * kernels (`--kernels portable`): every product and sum in a fixed order,
 * compiled without contracted multiply-adds, so one seed gives the same bits
 * on any x86-64 CPU, at any -march and thread count (docs/kernels.md). The
 * choice travels with the pass, like Precision: a field, never a global. */
#ifndef STORYLM_KERNELS_H
#define STORYLM_KERNELS_H

#include "storylm/bf16.h"
#include "storylm/error.h"

/* The WebAssembly build has only the portable kernels (no OpenBLAS, no
 * vector code of its own): there they are the default, value 0, which a
 * pass's zeroed context holds, and blas is refused (kernels.c). */
#ifdef __EMSCRIPTEN__
typedef enum Kernels { KERNELS_PORTABLE = 0, KERNELS_BLAS = 1 } Kernels;
#define SLM_KERNELS_DEFAULT "portable"
#define SLM_KERNELS_CHOICES "portable,blas" /* Kernels' order, for a PARAM_CHOICE */
#else
typedef enum Kernels { KERNELS_BLAS = 0, KERNELS_PORTABLE = 1 } Kernels;
#define SLM_KERNELS_DEFAULT "blas"
#define SLM_KERNELS_CHOICES "blas,portable"
#endif

/* How one pass computes its products: at which precision, with which kernels. */
typedef struct Compute {
    Precision precision;
    Kernels kernels;
} Compute;

/* "blas" or "portable". */
const char *slm_kernels_name(Kernels k);
/* name -> *k; -1 with e set (naming the choices) for anything else. */
int slm_kernels_parse(const char *name, Kernels *k, Error *e);
/* 0 when p and k go together; -1 with e set (BF16 products have no portable
 * kernels; the WebAssembly build has no blas). */
int slm_kernels_check(Kernels k, Precision p, Error *e);

#endif
