/* A seeded random number generator: xoshiro256** seeded through slm_splitmix64,
 * with uniform and normal (Box-Muller) draws. A value, never global state:
 * the model's init, the batch order and the sampler each own one. */
#ifndef STORYLM_RNG_H
#define STORYLM_RNG_H

#include <stdint.h>

typedef struct Rng {
    uint64_t s[4];
    int has_spare; /* Box-Muller makes normals in pairs; the second waits here */
    double spare;
} Rng;

/* The same seed gives the same sequence on every machine. */
void slm_rng_seed(Rng *r, uint64_t seed);
uint64_t slm_rng_next(Rng *r);
/* Uniform in [0, 1), 53 random bits. */
double slm_rng_uniform(Rng *r);
/* Uniform in [lo, hi). */
double slm_rng_range(Rng *r, double lo, double hi);
/* Uniform integer in [0, n), unbiased (n > 0). */
uint64_t slm_rng_below(Rng *r, uint64_t n);
/* Standard normal N(0, 1). */
double slm_rng_normal(Rng *r);
/* One slm_splitmix64 step: a well-mixed 64-bit value from x (also for deriving seeds). */
uint64_t slm_splitmix64(uint64_t *x);

#endif
