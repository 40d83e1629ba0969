/* xoshiro256** (Blackman and Vigna) seeded by slm_splitmix64: see include/storylm/rng.h. */
#include "storylm/rng.h"

#include <math.h>

uint64_t slm_splitmix64(uint64_t *x) {
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

void slm_rng_seed(Rng *r, uint64_t seed) {
    uint64_t x = seed;
    for (int i = 0; i < 4; i++) r->s[i] = slm_splitmix64(&x);
    r->has_spare = 0;
    r->spare = 0.0;
}

static inline uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t slm_rng_next(Rng *r) {
    uint64_t *s = r->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

double slm_rng_uniform(Rng *r) { return (double)(slm_rng_next(r) >> 11) * 0x1.0p-53; }

double slm_rng_range(Rng *r, double lo, double hi) { return lo + (hi - lo) * slm_rng_uniform(r); }

uint64_t slm_rng_below(Rng *r, uint64_t n) {
    /* rejection keeps every value equally likely */
    uint64_t limit = UINT64_MAX - UINT64_MAX % n;
    uint64_t x;
    do x = slm_rng_next(r);
    while (x >= limit);
    return x % n;
}

double slm_rng_normal(Rng *r) {
    if (r->has_spare) {
        r->has_spare = 0;
        return r->spare;
    }
    double u1 = 1.0 - slm_rng_uniform(r); /* in (0, 1]: log never sees 0 */
    double u2 = slm_rng_uniform(r);
    double radius = sqrt(-2.0 * log(u1)), angle = 6.283185307179586476925 * u2;
    r->spare = radius * sin(angle);
    r->has_spare = 1;
    return radius * cos(angle);
}
