/* Training's matrix products in BF16 (src/model/bf16.c): `train --precision
 * bf16`. Each operand is rounded to bfloat16 (8 bits of mantissa, round to
 * nearest even), the products are summed in FP32 with avx512_bf16's
 * dot-product instruction (VDPBF16PS: two products a step, each add rounded
 * to FP32), and the weights, gradients and Adam stay FP32. The order of the
 * sums is fixed (k = 0, 1, ... in pairs) whatever the blocking or threads,
 * so the same inputs give the same bits; slm_matmul_bf16_emulated computes
 * the same bits in plain C, the reference the tests hold the kernel to. */
#ifndef STORYLM_BF16_H
#define STORYLM_BF16_H

#include <stdint.h>

#include "storylm/error.h"

typedef enum Precision { PRECISION_FP32 = 0, PRECISION_BF16 = 1 } Precision;

/* "fp32" or "bf16". */
const char *slm_precision_name(Precision p);
/* name -> *p; -1 with e set (naming the choices) for anything else. */
int slm_precision_parse(const char *name, Precision *p, Error *e);
/* 1 when this CPU runs avx512_bf16's instructions (checked at run time). */
int slm_bf16_supported(void);
/* 0 when p can run on this CPU; -1 with e set (BF16 on a CPU without avx512_bf16). */
int slm_precision_check(Precision p, Error *e);

/* x -> bfloat16 bits as the CPU's conversion gives them: round to nearest
 * even, denormals to signed zero, NaN stays NaN (quiet). */
uint16_t slm_bf16_from_float(float x);
static inline float slm_bf16_to_float(uint16_t b) {
    union {
        uint32_t u;
        float f;
    } v = {.u = (uint32_t)b << 16};
    return v.f;
}

/* Row x (n floats, contiguous) -> pairs (ceil(n/2)) of (x[2i] low,
 * x[2i+1] high) as bfloat16, an odd n's last padded with 0: what VDPBF16PS
 * reads. Needs avx512_bf16. */
void slm_bf16_pack_row(const float *x, int n, uint32_t *pairs);

/* C (M, N) = op(A) op(B) + beta C, row-major, as slm_matmul (layers.h) but
 * with A and B rounded to BF16 and FP32 sums; beta is 0 or 1. Needs
 * avx512_bf16 (slm_precision_check). Threads over blocks of rows when
 * called outside a parallel region; the bits do not depend on them. */
void slm_matmul_bf16(int trans_a, int trans_b, int M, int N, int K, const float *A, int lda, const float *B, int ldb,
                     float beta, float *C, int ldc);
/* op(B) (K, N) packed as slm_matmul_bf16 reads it: pairs along k in panels
 * of 16 columns, (ceil(N/16), ceil(K/2), 16), columns past N 0. Packed
 * once, it serves every product with that B (the output layer's weights,
 * chunk after chunk of a step). */
typedef struct Bf16Panels {
    uint32_t *pairs;
    int K, N;
} Bf16Panels;
/* op(B) -> p (free with slm_bf16_panels_free); -1 (p->pairs NULL) out of
 * memory. Needs avx512_bf16. */
int slm_bf16_panels_pack(Bf16Panels *p, int trans_b, int K, int N, const float *B, int ldb);
void slm_bf16_panels_free(Bf16Panels *p);
/* C (M, B->N) = op(A) (M, B->K) times the packed B + beta C: the bits of
 * slm_matmul_bf16; -1 with C untouched when out of memory. */
int slm_matmul_bf16_panels(int trans_a, int M, const float *A, int lda, const Bf16Panels *B, float beta, float *C,
                           int ldc);
/* The same bits in plain C, one element at a time (slow: tests only). */
void slm_matmul_bf16_emulated(int trans_a, int trans_b, int M, int N, int K, const float *A, int lda, const float *B,
                              int ldb, float beta, float *C, int ldc);

#endif
