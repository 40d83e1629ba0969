/* storylm's own matrix product for --kernels portable (portable.h). The sum of
 * each element runs over k in order from beta C, one rounded multiply and one
 * rounded add a step (this file is compiled without contraction into FMAs),
 * so the vector width, the panels, the tiles and the threads change only how
 * many elements are computed at once, never an element's bits.
 *
 * Layout: C is cut in panels of SLM_GEMM_PANEL columns; op(B)'s rows are
 * copied KC at a time into a (KC, PANEL) block that stays in L1, and tiles of
 * MR rows of C keep their MR x PANEL sums in vector registers over that block;
 * C holds the running sums between blocks (a float stored and loaded again is
 * the same float, so the order of the adds does not change). */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("fp-contract=off", "vect-cost-model=dynamic")
#endif
#include <string.h>

#include "portable.h"

#define PANEL SLM_GEMM_PANEL
#define KC 128 /* rows of op(B) a block: (KC, PANEL) floats, at most 16 KB */
/* Rows of C a tile. wasm engines keep 15 vectors in registers: a tile of 2 rows of 4 vectors (the
 * panel of portable.h) ran the output layer's three products 5-15% faster in node than 4 rows of 2
 * (a microbenchmark of the three shapes, twice, each variant in turn); 6 rows of 2 and 3 of 4 slower. */
#ifdef __wasm_simd128__
#define MR 2
#else
#define MR 4
#endif

/* op(B) rows [k0, k0 + kc), columns [j0, j0 + nb) -> block (kc, PANEL), zeros past nb. */
static void pack_block(int tb, const float *B, int ldb, int k0, int kc, int j0, int nb, float *block) {
    if (nb < PANEL) memset(block, 0, (size_t)kc * PANEL * sizeof(float));
    if (tb) {
        for (int j = 0; j < nb; j++)
            for (int k = 0; k < kc; k++) block[k * PANEL + j] = B[(size_t)(j0 + j) * ldb + k0 + k];
        return;
    }
    if (nb == PANEL) /* a whole row: a copy of known size, inlined (wasm otherwise calls memcpy per row) */
        for (int k = 0; k < kc; k++) memcpy(block + k * PANEL, B + (size_t)(k0 + k) * ldb + j0, PANEL * sizeof(float));
    else
        for (int k = 0; k < kc; k++) memcpy(block + k * PANEL, B + (size_t)(k0 + k) * ldb + j0, nb * sizeof(float));
}

/* A vector of W floats (GCC/Clang vector extensions; W in portable.h). Each
 * lane rounds on its own, so the width changes how many sums run at once,
 * never a bit. */
#define W SLM_GEMM_WIDTH
typedef float fw __attribute__((vector_size(W * 4)));
#define VECS (PANEL / W)

static inline fw loadw(const float *x) {
    fw v;
    memcpy(&v, x, sizeof v);
    return v;
}

/* acc (MR, PANEL) += a_r[k * step] * block's row k, k = 0 .. kc - 1 in
 * order: op(A)'s MR rows start at a_r and step along k by `step` (1, or lda
 * transposed: a constant in each inlined copy, so the addresses are one add
 * a row). The sums stay in registers over the block. */
static inline __attribute__((always_inline)) void tile_block(const float *const a_r[MR], const size_t step, int kc,
                                                             const float *block, fw acc[MR][VECS]) {
    for (int k = 0; k < kc; k++) {
        fw b[VECS];
        size_t at = (size_t)k * step;
#pragma GCC unroll 8
        for (int v = 0; v < VECS; v++) b[v] = loadw(block + k * PANEL + W * v);
#pragma GCC unroll 8
        for (int r = 0; r < MR; r++) {
            float a = a_r[r][at];
#pragma GCC unroll 8
            for (int v = 0; v < VECS; v++) acc[r][v] += a * b[v];
        }
    }
}

/* Rows [i, i + MR) of C's panel at j0 (nb columns) over one block: the sums
 * start from beta C at the first block (0 when beta is 0: C is not read) and
 * from C after it, and stay in registers over the block's k, in order. Rows
 * past M repeat row M - 1, and are not stored. */
static void tile_rows(int ta, const float *A, int lda, int M, int i, int k0, int kc, const float *block, float beta,
                      float *C, int ldc, int j0, int nb) {
    const float *a_r[MR];
    fw acc[MR][VECS];
    for (int r = 0; r < MR; r++) {
        int row = i + r < M ? i + r : M - 1;
        a_r[r] = ta ? A + (size_t)k0 * lda + row : A + (size_t)row * lda + k0;
        const float *c = C + (size_t)row * ldc + j0;
        float start[PANEL];
        if (nb == PANEL && k0 > 0) /* the running sums: whole vectors */
            for (int v = 0; v < VECS; v++) acc[r][v] = loadw(c + W * v);
        else {
            for (int j = 0; j < PANEL; j++)
                start[j] = j >= nb || (k0 == 0 && beta == 0.0f) ? 0.0f : k0 == 0 ? beta * c[j] : c[j];
            for (int v = 0; v < VECS; v++) acc[r][v] = loadw(start + W * v);
        }
    }
    if (ta)
        tile_block(a_r, (size_t)lda, kc, block, acc);
    else
        tile_block(a_r, 1, kc, block, acc);
    for (int r = 0; r < MR && i + r < M; r++)
        if (nb == PANEL) /* a whole panel: a copy of known size, inlined */
            memcpy(C + (size_t)(i + r) * ldc + j0, acc[r], PANEL * sizeof(float));
        else
            memcpy(C + (size_t)(i + r) * ldc + j0, acc[r], nb * sizeof(float));
}

void slm_gemm_portable(int trans_a, int trans_b, int M, int N, int K, const float *A, int lda, const float *B, int ldb,
                       float beta, float *C, int ldc, int p0, int p1) {
    float block[KC * PANEL];
    for (int p = p0; p < p1; p++) {
        int j0 = p * PANEL, nb = N - j0 < PANEL ? N - j0 : PANEL;
        if (K == 0) { /* no products: C = beta C */
            for (int i = 0; i < M; i++)
                for (int j = 0; j < nb; j++) {
                    float *c = C + (size_t)i * ldc + j0 + j;
                    *c = beta == 0.0f ? 0.0f : beta * *c;
                }
            continue;
        }
        for (int k0 = 0; k0 < K; k0 += KC) {
            int kc = K - k0 < KC ? K - k0 : KC;
            pack_block(trans_b, B, ldb, k0, kc, j0, nb, block);
            for (int i = 0; i < M; i += MR) tile_rows(trans_a, A, lda, M, i, k0, kc, block, beta, C, ldc, j0, nb);
        }
    }
}
