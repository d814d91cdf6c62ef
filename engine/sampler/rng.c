#include "sampler/rng.h"

#include <math.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

void rng_seed(rng *r, uint32_t seed)
{
    r->mt[0] = seed;
    for (int32_t i = 1; i < RNG_MT_N; i++)
        r->mt[i] = 1812433253u * (r->mt[i - 1] ^ (r->mt[i - 1] >> 30)) + (uint32_t)i;
    r->idx = RNG_MT_N;
}

uint32_t rng_seed_value(uint32_t seed)
{
    if (seed != RNG_SEED_RANDOM)
        return seed;
    uint32_t v = 0;
    FILE *f = fopen("/dev/urandom", "rb");
    if (f) {
        size_t n = fread(&v, sizeof v, 1, f);
        fclose(f);
        if (n == 1)
            return v;
    }
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t x = ((uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec) ^ ((uint64_t)getpid() << 16) ^
                 (uint64_t)(uintptr_t)&v;
    return (uint32_t)(x ^ (x >> 32));
}

static void rng_twist(rng *r)
{
    uint32_t *mt = r->mt;
    for (int32_t i = 0; i < RNG_MT_N; i++) {
        uint32_t y = (mt[i] & 0x80000000u) | (mt[(i + 1) % RNG_MT_N] & 0x7fffffffu);
        mt[i] = mt[(i + 397) % RNG_MT_N] ^ (y >> 1) ^ ((y & 1u) ? 0x9908b0dfu : 0u);
    }
    r->idx = 0;
}

uint32_t rng_next(rng *r)
{
    if (r->idx >= RNG_MT_N)
        rng_twist(r);
    uint32_t y = r->mt[r->idx++];
    y ^= y >> 11;
    y ^= (y << 7) & 0x9d2c5680u;
    y ^= (y << 15) & 0xefc60000u;
    y ^= y >> 18;
    return y;
}

double rng_uniform(rng *r)
{
    /* generate_canonical<double, 53>: ceil(53 / 32) = 2 outputs */
    double sum = (double)rng_next(r);
    sum += (double)rng_next(r) * 4294967296.0;
    double v = sum / 18446744073709551616.0;
    return v >= 1.0 ? nextafter(1.0, 0.0) : v;
}

float rng_uniform_float(rng *r)
{
    /* generate_canonical<float, 24>: one output, rounded to float first */
    float v = (float)rng_next(r) / 4294967296.0f;
    return v >= 1.0f ? nextafterf(1.0f, 0.0f) : v;
}
