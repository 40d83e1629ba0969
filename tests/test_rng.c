/* The seeded generator: slm_splitmix64's published first outputs, xoshiro256**
 * outputs as an independent re-implementation gives them, the same seed the
 * same numbers, and uniform and normal draws with the right mean and spread. */
#include <math.h>

#include "check.h"
#include "storylm/rng.h"

int main(void) {
    uint64_t x = 0;
    CHECK(slm_splitmix64(&x) == 0xe220a8397b1dcdafULL);
    CHECK(slm_splitmix64(&x) == 0x6e789e6aa1b965f4ULL);
    Rng r, same, other;
    slm_rng_seed(&r, 0);
    CHECK(slm_rng_next(&r) == 0x99ec5f36cb75f2b4ULL);
    CHECK(slm_rng_next(&r) == 0xbf6e1f784956452aULL);
    CHECK(slm_rng_next(&r) == 0x1a5f849d4933e6e0ULL);
    slm_rng_seed(&same, 42), slm_rng_seed(&other, 43), slm_rng_seed(&r, 42);
    int equal = 1, differ = 0;
    for (int i = 0; i < 100; i++) {
        uint64_t a = slm_rng_next(&r), b = slm_rng_next(&same);
        equal &= a == b;
        differ += a != slm_rng_next(&other);
    }
    CHECK(equal && differ == 100);
    double sum = 0, sum2 = 0, nsum = 0, nsum2 = 0;
    int n = 200000, below_ok = 1, counts[7] = {0};
    for (int i = 0; i < n; i++) {
        double u = slm_rng_uniform(&r), g = slm_rng_normal(&r), v = slm_rng_range(&r, -2, 3);
        uint64_t k = slm_rng_below(&r, 7);
        sum += u, sum2 += u * u, nsum += g, nsum2 += g * g;
        below_ok &= u >= 0 && u < 1 && v >= -2 && v < 3 && k < 7;
        counts[k < 7 ? k : 0]++;
    }
    CHECK(below_ok);
    CHECK_CLOSE(sum / n, 0.5, 0, 0.005);
    CHECK_CLOSE(sum2 / n - (sum / n) * (sum / n), 1.0 / 12, 0, 0.002);
    CHECK_CLOSE(nsum / n, 0.0, 0, 0.01);
    CHECK_CLOSE(nsum2 / n, 1.0, 0, 0.015);
    for (int k = 0; k < 7; k++) CHECK_CLOSE(counts[k], n / 7.0, 0.03, 0);
    return check_report();
}
