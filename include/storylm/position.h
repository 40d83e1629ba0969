/* How the network knows where each token stands (issue 12, the seed's
 * section 8): the position schemes of `--pos`, their parameters and their
 * passes. The chapter's own scheme, a learned score per head per distance
 * back (`distance`), is the default and leaves today's network bit for bit.
 *
 *   distance    s_u += D_h[t-u]                 D: (H, W) learned ("distance")
 *   none        nothing: attention is order-blind (the seed's "dog bites man")
 *   absolute    r_t = E[x_t] + P[min(t, W-1)]   P: (W, D) learned ("position")
 *   sinusoidal  r_t = E[x_t] + PE(t)            fixed clock tags, no parameters
 *   rope        q_t, k_u turned by t, u         fixed turns, no parameters
 *   alibi       s_u -= m_h (t-u)                fixed slopes m_h = 2^(-8(h+1)/H)
 *   t5          s_u += B_h[bucket(t-u)]         B: (H, 32) learned ("distance_bucket")
 *
 * t is the position in the story (0 = the opening [EOS]), also when a long
 * story runs as pieces (BatchPiece.offset), so a piece computes what the
 * whole story would. See docs/variants.md for the table of tensors. */
#ifndef STORYLM_POSITION_H
#define STORYLM_POSITION_H

#include <stdint.h>

#include "storylm/error.h"
#include "storylm/model_types.h" /* PosScheme, the model */

#define T5_MAX_DISTANCE 128 /* T5's max_distance: farther keys share the last bucket */
#define ROPE_BASE 10000.0   /* pair i of a query turns by t * ROPE_BASE^(-2i/kd) */

const char *slm_pos_name(PosScheme pos);
int slm_pos_parse(const char *name, PosScheme *pos, Error *e);
/* "distance|none|..." for --help. */
const char *slm_pos_names(void);

/* T5's logarithmic bucket of a distance back (0..T5_BUCKETS-1): distances
 * 0..15 their own bucket, then log-spaced up to T5_MAX_DISTANCE, beyond it
 * the last bucket. */
int slm_t5_bucket(int distance);
/* ALiBi's slope of head h of H: 2^(-8(h+1)/H) (1/2, 1/4, ..., 1/256 for 8). */
float slm_alibi_slope(int h, int H);
/* tag (D) = the sinusoidal tag of position t: (sin w0 t, cos w0 t, sin w1 t,
 * cos w1 t, ...), w_i = 10000^(-2i/D) (the seed's clock hands). */
void slm_sinusoid_tag(int t, int D, float *tag);
/* x (kd) turned pair by pair by position t: pair i by angle t*theta_i;
 * sign -1 turns back (the backward pass of a turn is the turn back). */
void slm_rope_turn(int kd, int t, int sign, float *x);

/* Does the scheme add a score per distance (distance, alibi, t5)? */
int slm_pos_scores_distance(PosScheme pos);

/* Head h's score added at distance d back (0 where the scheme adds none). */
float slm_position_distance_score(const struct Model *m, int h, int d);
/* table (H, W) = each head's score added at each distance back, for any
 * scheme (0 where it adds none). */
void slm_position_distance_table(const struct Model *m, float *table);
/* The table attention reads: m's own "distance" tensor for `distance`, else
 * `table` filled by slm_position_distance_table. */
const float *slm_position_table_for(const struct Model *m, float *table);
/* d_table (H, W) -> grads of the scheme's learned scores +=. For `distance`
 * the attention wrote straight into the gradient of "distance". */
void slm_position_distance_backward(const struct Model *m, const float *d_table, float *grads);
/* Where attention's backward should add d table: grads of "distance"
 * (distance), or d_table zeroed first (every other scheme). */
float *slm_position_table_grad(const struct Model *m, float *grads, float *d_table);

/* rows (N, D) at row stride ld += the position's row or tag (absolute,
 * sinusoidal; nothing for the others), position of row p = story_pos[p]. */
void slm_position_rows_forward(const struct Model *m, const int *story_pos, int N, float *rows, int ld);
/* d_rows (N, D) -> grads of "position" += (absolute only). */
void slm_position_rows_backward(const struct Model *m, const int *story_pos, int N, const float *d_rows, int ld,
                                float *grads);
/* row (D) += the tag of position t (absolute, sinusoidal): generation's hook. */
void slm_position_row_add(const struct Model *m, int t, float *row);

/* rope: qkv's query and key rows (QKV, ld) turned in place by each
 * position's story_pos (sign 1), or their gradients turned back (sign -1). */
void slm_rope_forward(const struct ModelConfig *c, const int *story_pos, int N, float *qkv, int ld, int sign);

#endif
