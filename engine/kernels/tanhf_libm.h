/* tanhf as the C library computes it, eight lanes at a time.
 *
 * ggml_tanh (Gemma's final logit soft-cap: tanh of every one of 262144
 * logits per generated token) calls the C library's tanhf per element, so
 * its bits are glibc's. glibc 2.36 (Debian 12) computes tanhf in single
 * precision with fdlibm's algorithm: 1 - 2 / (expm1f(2|x|) + 2) from |x| >= 1,
 * -t / (t + 2) with t = expm1f(-2|x|) below, x * (1 + x) for |x| < 2^-55, 1
 * from 22 on; expm1f (fdlibm's s_expm1f.c) reduces by k ln 2 in two parts
 * and corrects a rational approximation per k. This file repeats those
 * steps lane by lane, every branch computed and the lane's own picked, with
 * no fused operations (the library's x86-64 build has none; the file is
 * compiled with -ffp-contract=off). A scalar port of the same steps matched
 * the library on every float but NaNs (checked once, by hand, over all 2^32).
 *
 * tanhf_libm_exact() checks once, against the tanhf the program is linked
 * with, that the lanes agree on arguments spread over every branch; when
 * they do not (another C library or version), callers use tanhf. */
#ifndef TOKSCOPE_TANHF_LIBM_H
#define TOKSCOPE_TANHF_LIBM_H

#include <stdbool.h>
#include <stdint.h>

/* True when tanhf_libm_n gives the linked tanhf's bits (checked once, thread-safe). */
bool tanhf_libm_exact(void);

/* y[i] = tanhf(x[i] * s) * c for i < n (ggml_scale, ggml_tanh, ggml_scale:
 * each product rounded on its own); y may be x. Vector lanes when built for
 * AVX2, else the library call. */
void tanhf_libm_scaled(const float *x, float *y, int64_t n, float s, float c);

#endif
