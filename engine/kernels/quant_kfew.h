/* K-quant weight rows against a few Q8_K activations (1-4 tokens a pass) on
 * AVX-512: each block of a row pair is unpacked once per pass and used for
 * every token; each (row, token) output keeps the reference's vec_dot lanes
 * and float order (llama.cpp 34af94cd's AVX2 bodies of
 * ggml_vec_dot_q6_K_q8_K and ggml_vec_dot_q5_K_q8_K, which its AVX-512 build
 * runs), so it equals tensor_vec_dot bit for bit. */
#ifndef TOKSCOPE_QUANT_KFEW_H
#define TOKSCOPE_QUANT_KFEW_H

#include <stddef.h>
#include <stdint.h>

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#define QUANT_HAVE_KFEW 1

/* Tokens one pass takes: the integer lanes of 2 rows x 4 tokens, the float
 * lanes of 4 tokens and an unpacked chunk pair fill the 32 registers. */
#define QUANT_KFEW_MAX 4

/* out[t * out_stride + r] = W row r . act token t for r < rows, t < nt
 * (1 <= nt <= QUANT_KFEW_MAX); W rows rs bytes apart, n a multiple of 256;
 * token t's Q8_K row at act + t * act_stride. With pf set, each block step
 * prefetches the rows two pairs ahead (a matvec streaming from memory).
 * quant_q6k_few.c and quant_q5k_few.c. */
void quant_q6_K_few(int64_t n, const void *w, size_t rs, int64_t rows, const void *act, size_t act_stride, int nt,
                    float *out, int64_t out_stride, int pf);
void quant_q5_K_few(int64_t n, const void *w, size_t rs, int64_t rows, const void *act, size_t act_stride, int nt,
                    float *out, int64_t out_stride, int pf);
#endif

#endif
