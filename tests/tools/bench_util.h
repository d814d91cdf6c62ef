/* What the kernel microbenchmarks (bench_*.c) share: CPU time, which a
 * shared 2-core machine disturbs less than wall time, and a reproducible
 * uniform value in [-1, 1) for random weights and activations. */
#ifndef TOKSCOPE_BENCH_UTIL_H
#define TOKSCOPE_BENCH_UTIL_H

#include <stdint.h>
#include <time.h>

static inline double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The fastest of 5 stretches of secs / 5 CPU seconds each, calling
 * run(arg) over and over: seconds per call */
static inline double bench_best(void (*run)(void *), void *arg, double secs)
{
    double best = 1e30;
    for (int rep = 0; rep < 5; rep++) {
        int iters = 0;
        double el, t0 = now();
        do {
            run(arg);
            iters++;
        } while ((el = now() - t0) < secs / 5);
        best = el / iters < best ? el / iters : best;
    }
    return best;
}

static uint32_t rng = 12345;
static inline float rndf(void)
{
    rng = rng * 1664525u + 1013904223u;
    return (float)(rng >> 8) / 16777216.0f * 2.0f - 1.0f;
}

#endif
