/* The run-time check that vector lanes repeating a C library function give
 * its bits (expf_libm.c, tanhf_libm.c): shared by their one-time checks. */
#ifndef TOKSCOPE_LIBM_LANES_H
#define TOKSCOPE_LIBM_LANES_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

/* True when y[k] has the bits of lib(x[k]) for every k < n. */
static inline bool libm_lanes_agree(const float *x, const float *y, int n, float (*lib)(float))
{
    for (int k = 0; k < n; k++) {
        const float want = lib(x[k]);
        uint32_t a, b;
        memcpy(&a, &want, sizeof a);
        memcpy(&b, &y[k], sizeof b);
        if (a != b)
            return false;
    }
    return true;
}

#endif
