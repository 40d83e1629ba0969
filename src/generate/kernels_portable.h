/* Generation on the portable kernels (generate --kernels portable): every
 * sum in one fixed order on every target, so a seeded generate's tokens and
 * log-probabilities are the same bits natively at any -march and in the
 * WebAssembly build (docs/kernels.md). kernels_portable.c compiles
 * kernels16.c again without contraction into FMAs; an architecture's
 * generator is compiled again (src/arch: readout_generate_portable.c,
 * transformer/transformer_generate_portable.c) with this header
 * first, which renames each kernel it calls to its _portable twin: the
 * products of kernels16.c, the softmax and tanh of src/model/layers.c's
 * portable twin, and a precision check that refuses bf16. */
#ifndef STORYLM_GENERATE_KERNELS_PORTABLE_H
#define STORYLM_GENERATE_KERNELS_PORTABLE_H

#define slm_dense16 slm_dense16_portable
#define slm_row_times_matrix slm_row_times_matrix_portable
#define slm_query_key_scores slm_query_key_scores_portable
#define slm_query_key_row_scores slm_query_key_row_scores_portable
#define slm_blend_values slm_blend_values_portable
#define slm_blend_value_rows slm_blend_value_rows_portable
#define slm_blend_value_rows4 slm_blend_value_rows4_portable
#define slm_blend_values_by_slot slm_blend_values_by_slot_portable
#define slm_additive_scores_cached slm_additive_scores_cached_portable
#define slm_dense_at slm_dense_at_portable
#define slm_softmax_weights slm_softmax_weights_portable
#define slm_softmax_weights_max slm_softmax_weights_max_portable
#define slm_tanh_inplace slm_tanh_inplace_portable
#define slm_precision_check slm_precision_check_portable

#endif
