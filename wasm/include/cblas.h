/* The WebAssembly build's cblas.h (wasm/cblas.c): there is no OpenBLAS in
 * the browser, so the few CBLAS calls of the library go to storylm's own
 * portable products. Only what the library calls: row-major, alpha 1. */
#ifndef STORYLM_WASM_CBLAS_H
#define STORYLM_WASM_CBLAS_H

enum CBLAS_ORDER { CblasRowMajor = 101, CblasColMajor = 102 };
enum CBLAS_TRANSPOSE { CblasNoTrans = 111, CblasTrans = 112 };

/* C (M, N) = alpha op(A) op(B) + beta C; row-major, alpha 1 only. */
void cblas_sgemm(enum CBLAS_ORDER order, enum CBLAS_TRANSPOSE ta, enum CBLAS_TRANSPOSE tb, int M, int N, int K,
                 float alpha, const float *A, int lda, const float *B, int ldb, float beta, float *C, int ldc);
/* y (N) = alpha A^T x + beta y for A (M, N); row-major, transposed, alpha 1 only. */
void cblas_sgemv(enum CBLAS_ORDER order, enum CBLAS_TRANSPOSE ta, int M, int N, float alpha, const float *A, int lda,
                 const float *x, int incx, float beta, float *y, int incy);

/* OpenBLAS's own: one thread, no pool, a config naming the stand-in. */
int openblas_get_num_threads(void);
void openblas_set_num_threads(int n);
char *openblas_get_config(void);

#endif
