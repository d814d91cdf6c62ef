/* Small fast PRNG for sampling: xoshiro256** seeded through splitmix64, so
 * any 64-bit seed (including 0) gives a well-mixed state and the same seed
 * always gives the same sequence on every platform. */
#ifndef TOKSCOPE_RNG_H
#define TOKSCOPE_RNG_H

#include <stdint.h>

typedef struct rng {
    uint64_t s[4];
} rng;

void rng_seed(rng *r, uint64_t seed);
/* A seed from /dev/urandom (falls back to time and address bits). */
uint64_t rng_random_seed(void);
uint64_t rng_next(rng *r);
/* Uniform double in [0, 1) with 53 random bits. */
double rng_uniform(rng *r);

#endif
