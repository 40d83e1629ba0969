/* Steering: directions added at hook points while generating (`generate
 * --steer DIR:LATENT:SCALE` adds an SAE latent's decoder row times SCALE).
 * Each addition is at one hook point (hooks.h's names) of one layer, the
 * same vector at every position, prompt included: what a forward pass with a
 * hook adding it at that point computes (sae_model.h's SITE_ADD). The
 * generators call slm_steer_rows where their step makes the point's numbers;
 * a batch without steering never reads more than its n. */
#ifndef STORYLM_STEER_H
#define STORYLM_STEER_H

#include <stddef.h>

#include "storylm/error.h"
#include "storylm/hooks.h"

#define STEER_MAX 8 /* additions a generation takes */

typedef struct SteerAdd {
    HookPoint point;
    int layer;        /* the block's, 0 for the points outside the blocks */
    int width;        /* numbers a position at the point */
    float *direction; /* (width), the scale applied */
} SteerAdd;

typedef struct Steering {
    int n;
    SteerAdd add[STEER_MAX];
} Steering;

/* Appends scale * direction (width) at point p of layer l; -1 when full or out of memory. */
int slm_steering_add(Steering *s, HookPoint p, int layer, const float *direction, int width, float scale, Error *e);
/* A deep copy of from into to (to's old contents not freed). */
int slm_steering_copy(Steering *to, const Steering *from, Error *e);
void slm_steering_free(Steering *s);

/* For j < k: the row base + which[j] * stride (which NULL: j) += every
 * direction s adds at point p of layer l. */
void slm_steer_rows(const Steering *s, HookPoint p, int l, float *base, size_t stride, const int *which, int k);

#endif
