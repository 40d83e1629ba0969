/* The CBLAS calls of the library on storylm's portable products, for the
 * WebAssembly build (see include/cblas.h). The products keep the portable
 * kernels' order: each element's sum in k order (gemm_portable.c). */
#include "cblas.h"

#include <stddef.h>

#include "portable.h"

void cblas_sgemm(enum CBLAS_ORDER order, enum CBLAS_TRANSPOSE ta, enum CBLAS_TRANSPOSE tb, int M, int N, int K,
                 float alpha, const float *A, int lda, const float *B, int ldb, float beta, float *C, int ldc) {
    (void)order, (void)alpha; /* row-major, alpha 1: the library's only calls */
    if (M <= 0 || N <= 0) return;
    int panels = (N + SLM_GEMM_PANEL - 1) / SLM_GEMM_PANEL;
    slm_gemm_portable(ta == CblasTrans, tb == CblasTrans, M, N, K, A, lda, B, ldb, beta, C, ldc, 0, panels);
}

void cblas_sgemv(enum CBLAS_ORDER order, enum CBLAS_TRANSPOSE ta, int M, int N, float alpha, const float *A, int lda,
                 const float *x, int incx, float beta, float *y, int incy) {
    (void)order, (void)ta, (void)alpha; /* row-major A^T x, alpha 1: the column sums' only call */
    for (int j = 0; j < N; j++) y[(size_t)j * incy] = beta == 0.0f ? 0.0f : beta * y[(size_t)j * incy];
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) y[(size_t)j * incy] += A[(size_t)i * lda + j] * x[(size_t)i * incx];
}

int openblas_get_num_threads(void) { return 1; }

void openblas_set_num_threads(int n) { (void)n; }

char *openblas_get_config(void) {
    static char config[] = "no OpenBLAS (WebAssembly): storylm's portable products";
    return config;
}
