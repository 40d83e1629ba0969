/* Adam (Kingma and Ba), as the chapter trains with it, with an optional
 * decoupled weight decay (AdamW; 0 by default, so plain Adam). The update is
 * PyTorch's torch.optim.Adam/AdamW formula, so the two agree step by step. */
#ifndef STORYLM_ADAM_H
#define STORYLM_ADAM_H

#include <stddef.h>
#include <stdint.h>

#include "storylm/error.h"

typedef struct Adam {
    size_t n;                  /* number of parameters */
    float *m;                  /* (n) running mean of the gradients */
    float *v;                  /* (n) running mean of the squared gradients */
    int64_t step;              /* updates done so far (the bias correction needs it) */
    float beta1;               /* 0.9 */
    float beta2;               /* 0.999 */
    float eps;                 /* 1e-8 */
    float weight_decay;        /* 0: plain Adam; > 0: AdamW's decoupled decay */
    const uint8_t *decay_mask; /* (n) or NULL: which parameters decay (1) and which not (0);
                                * NULL: all of them. Not owned (slm_model_decay_mask fills one). */
} Adam;

/* Zeroed state for n parameters with the defaults above. */
int slm_adam_init(Adam *a, size_t n, Error *e);
void slm_adam_free(Adam *a);

/* One step: params (n) -= lr * Adam direction of grads (n). Elementwise, so
 * the result does not depend on the thread count. */
void slm_adam_update(Adam *a, float *params, const float *grads, float lr);

#endif
