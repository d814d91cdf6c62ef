/* The reference's random numbers: std::mt19937 (32-bit Mersenne Twister,
 * the standard's seeding) and libstdc++'s generate_canonical, which
 * std::uniform_real_distribution<double/float>(0, 1) and
 * std::discrete_distribution draw through. llama.cpp 34af94cd's samplers
 * use exactly these, so the same seed gives the same tokens. */
#ifndef TOKSCOPE_RNG_H
#define TOKSCOPE_RNG_H

#include <stdint.h>

#define RNG_MT_N 624
/* llama.cpp's LLAMA_DEFAULT_SEED: this seed value means "pick a random one" */
#define RNG_SEED_RANDOM 0xFFFFFFFFu

typedef struct rng {
    uint32_t mt[RNG_MT_N];
    int32_t idx;
} rng;

/* std::mt19937::seed(seed) */
void rng_seed(rng *r, uint32_t seed);
/* llama.cpp's get_rng_seed: the seed itself, or for RNG_SEED_RANDOM one from
 * /dev/urandom (falls back to time and address bits). */
uint32_t rng_seed_value(uint32_t seed);
/* One std::mt19937 output. */
uint32_t rng_next(rng *r);
/* std::uniform_real_distribution<double>(0, 1) under libstdc++: two outputs,
 * low word first, (lo + hi * 2^32) / 2^64 rounded to double, below 1. */
double rng_uniform(rng *r);
/* std::uniform_real_distribution<float>(0, 1): one output, float(x) / 2^32. */
float rng_uniform_float(rng *r);

#endif
