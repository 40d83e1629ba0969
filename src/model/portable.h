/* The portable kernels' twins of layers.c's and attention.c's functions.
 * layers_portable.c and attention_portable.c compile those two files a
 * second time with SLM_PORTABLE: contraction of a*b+c into FMAs off, no
 * AVX-512 paths, storylm's own products (gemm_portable.c) in place of
 * OpenBLAS, every sum in a fixed order. Included before them, this header
 * renames each public function of theirs to its _portable twin; included
 * alone (SLM_PORTABLE unset), it declares the twins the dispatchers call
 * (slm_matmul_at and the others when a pass's kernels are portable). */
#ifndef STORYLM_MODEL_PORTABLE_H
#define STORYLM_MODEL_PORTABLE_H

#ifdef SLM_PORTABLE
#define slm_exp_one slm_exp_one_portable
#define slm_exp_inplace slm_exp_inplace_portable
#define slm_exp_sum_inplace slm_exp_sum_inplace_portable
#define slm_softmax_inplace slm_softmax_inplace_portable
#define slm_softmax_max_inplace slm_softmax_max_inplace_portable
#define slm_softmax_weights slm_softmax_weights_portable
#define slm_softmax_weights_max slm_softmax_weights_max_portable
#define slm_exp_sum_keep slm_exp_sum_keep_portable
#define slm_tanh_inplace slm_tanh_inplace_portable
#define slm_matmul slm_matmul_portable
#define slm_column_sums slm_column_sums_portable
#define slm_matmul_at slm_matmul_at_portable
#define slm_alloc_floats slm_alloc_floats_portable
#define slm_embedding_forward slm_embedding_forward_portable
#define slm_embedding_backward slm_embedding_backward_portable
#define slm_window_forward slm_window_forward_portable
#define slm_window_backward slm_window_backward_portable
#define slm_dense_tanh_forward_at slm_dense_tanh_forward_at_portable
#define slm_dense_tanh_backward_at slm_dense_tanh_backward_at_portable
#define slm_output_forward slm_output_forward_portable
#define slm_output_log_prob slm_output_log_prob_portable
#define slm_output_backward slm_output_backward_portable
#define slm_output_loss slm_output_loss_portable
#define slm_attention_row_stride slm_attention_row_stride_portable
#define slm_attention_forward slm_attention_forward_portable
#define slm_attention_backward slm_attention_backward_portable
#define slm_qkv_rows slm_qkv_rows_portable
#define slm_qkv_stride slm_qkv_stride_portable
#define slm_pack_qkv slm_pack_qkv_portable
#define slm_unpack_qkv_grads slm_unpack_qkv_grads_portable
#else
#include "storylm/attention.h"
#include "storylm/layers.h"

void slm_matmul_portable(int trans_a, int trans_b, int M, int N, int K, const float *A, int lda, const float *B,
                         int ldb, float beta, float *C, int ldc);
void slm_column_sums_portable(const float *A, int rows, int cols, int lda, const float *ones, float *sums);
void slm_dense_tanh_forward_at_portable(Compute p, const float *W, const float *bias, const float *x, int n, int in,
                                        int out, float *y);
void slm_dense_tanh_backward_at_portable(Compute p, const float *W, const float *x, const float *y, float *d_y, int n,
                                         int in, int out, float *dW, float *d_bias, float *d_x, const float *ones);
void slm_output_forward_portable(Kernels k, const float *W, const float *bias, const float *y, int n, int Hd, int V,
                                 float *logits, const int32_t *target, float *lse, float *loss, uint8_t *correct);
void slm_output_backward_portable(Kernels k, const float *W, const float *y, float *logits, const int32_t *target,
                                  const float *lse, float scale, int n, int Hd, int V, float *dW, float *d_bias,
                                  float *d_y, const float *ones);
void slm_output_loss_portable(const OutputLoss *o);
void slm_exp_inplace_portable(float *x, int n, float shift);
float slm_softmax_inplace_portable(float *x, int n);
float slm_softmax_max_inplace_portable(float *x, int n, float mx);
float slm_exp_sum_keep_portable(const float *x, int n, float scale, float shift, float keep, float *kept, int32_t *ids,
                                int *k);
void slm_attention_forward_portable(Kernels k, const ModelConfig *c, const float *qkv, int ld, const float *distance,
                                    const int *first_key, int N, float *att, float *out, int out_ld,
                                    const AttentionScratch *s);
void slm_attention_backward_portable(Kernels k, const ModelConfig *c, const float *qkv, int ld, const float *att,
                                     const int *first_key, int N, const float *d_out, int out_ld, uint32_t skip_heads,
                                     float *d_qkv, float *d_distance, const AttentionScratch *s);
#endif

/* C (M, N) = op(A) op(B) + beta C for C's column panels [p0, p1) of
 * SLM_GEMM_PANEL columns (gemm_portable.c): each element is
 * ((beta C + a_0 b_0) + a_1 b_1) + ... in k order, whatever the panels, the
 * threads or the vector width. The panel is two of the target's widest
 * vectors (16 floats with AVX-512, 8 with AVX, else 4: SSE), four of wasm
 * SIMD128's, so that a tile's sums fit in its registers; it changes no bit. */
#if defined(__AVX512F__)
#define SLM_GEMM_WIDTH 16
#elif defined(__AVX__)
#define SLM_GEMM_WIDTH 8
#else
#define SLM_GEMM_WIDTH 4
#endif
#if defined(__wasm_simd128__) /* four: 2 rows of 16 columns ran faster in node than 4 of 8 (gemm_portable.c's MR) */
#define SLM_GEMM_PANEL (4 * SLM_GEMM_WIDTH)
#else
#define SLM_GEMM_PANEL (2 * SLM_GEMM_WIDTH)
#endif
void slm_gemm_portable(int trans_a, int trans_b, int M, int N, int K, const float *A, int lda, const float *B, int ldb,
                       float beta, float *C, int ldc, int p0, int p1);

#endif
