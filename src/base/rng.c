/* Deterministic random numbers: splitmix64 streams and Box-Muller normals. */
#include <math.h>

#include "base/internal.h"

uint64_t vp__rng_next(uint64_t *state) {
    uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

uint64_t vp__rng_key(uint64_t seed, uint64_t a, uint64_t b) {
    uint64_t s = seed;
    uint64_t k = vp__rng_next(&s) ^ a;
    k = vp__rng_next(&k) ^ b;
    return vp__rng_next(&k);
}

/* uniform in (0, 1], 53 bits */
static double uniform(uint64_t *state) {
    return ((vp__rng_next(state) >> 11) + 1.0) * 0x1.0p-53;
}

void vp__rng_normal(uint64_t *state, float *out, int64_t n, float std) {
    for (int64_t i = 0; i < n; i += 2) {
        double r = sqrt(-2.0 * log(uniform(state))), th = 6.283185307179586 * uniform(state);
        out[i] = (float)(r * cos(th)) * std;
        if (i + 1 < n)
            out[i + 1] = (float)(r * sin(th)) * std;
    }
}
