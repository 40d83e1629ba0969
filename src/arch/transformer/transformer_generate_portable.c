/* transformer_generate.c compiled again on generation's portable kernels
 * (src/generate/kernels_portable.h, whose renames come first, alone in
 * their block, so that they apply to all of it): the transformer's
 * generator for generate --kernels portable. Its shared parts (tf_parts.h)
 * get _portable twins too; attn-only's generator keeps the default ones. */
#include "../../generate/kernels_portable.h"
#define slm_tf_generator_init slm_tf_generator_init_portable
#define slm_tf_generator_free slm_tf_generator_free_portable
#define slm_tf_generator_copy slm_tf_generator_copy_portable
#define slm_tf_generator_set_precision slm_tf_generator_set_precision_portable
#define slm_tf_gen_embed slm_tf_gen_embed_portable
#define slm_tf_gen_steer_resid slm_tf_gen_steer_resid_portable
#define slm_tf_gen_attn slm_tf_gen_attn_portable
#define slm_tf_gen_mlp slm_tf_gen_mlp_portable
#define slm_tf_gen_final slm_tf_gen_final_portable
#define slm_transformer_generator slm_transformer_generator_portable

#include "transformer_generate.c"
