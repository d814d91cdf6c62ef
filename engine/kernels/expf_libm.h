/* expf as the C library computes it, eight lanes at a time.
 *
 * ggml's one-chunk attention kernel calls the C library's expf once per key
 * (the online softmax's rescale or weight), so its bits are glibc's. glibc
 * 2.27 and later compute expf in double precision from a 32-entry table of
 * 2^(i/32) and a cubic; on a CPU with FMA it runs its FMA build of that code
 * (__expf_fma), whose fused operations this file repeats lane by lane, so
 * each lane gives the library's bits. Arguments the library treats apart
 * (|x| >= 88, infinities, NaN) go to the library itself.
 *
 * expf_libm_exact() checks once, against the expf the program is linked
 * with, that the lanes agree on arguments spread over the whole range; when
 * they do not (another C library, a CPU without FMA), callers use expf. */
#ifndef TOKSCOPE_EXPF_LIBM_H
#define TOKSCOPE_EXPF_LIBM_H

#include <stdbool.h>

/* True when expf_libm_n gives the linked expf's bits (checked once, thread-safe). */
bool expf_libm_exact(void);

/* y[i] = expf(x[i]) for i < n; y may be x. Vector lanes when built for
 * AVX-512 or AVX2 with FMA (the table through a gather there), else the
 * library call. */
void expf_libm_n(const float *x, float *y, int n);

#endif
