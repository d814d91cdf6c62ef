/* Batched Q5_K matmul (a prompt's tokens against Q5_K rows) as an integer
 * GEMM with the reference's bits.
 *
 * The reference runs Q5_K through ggml_vec_dot_q5_K_q8_K, one (row, token)
 * at a time (its AVX2 body on AVX-512 machines too): per super-block 8
 * int32 lanes, lane k = sum over the eight 32-value chunks j of sc[j] * the
 * 4-value sum q * y over elements 4k..4k+3 of the chunk (q unsigned 0..31);
 * acc[k] = fma(y.d * d_w, lane k, acc[k]); beside them one integer per
 * super-block, sum_j min[j] * (bsum[2j] + bsum[2j+1]), goes into a scalar
 * summs = fma(-y.d * dmin_w, total, summs); the result is hsum_float_8(acc)
 * + summs. The integers are exact, so any way of forming them gives the
 * same floats. Here a panel of rows is unpacked once per call (5-bit values
 * as bytes, scales and mins as int16 pairs) and run against every token:
 * see gemm_kq5.c. Scratch (a panel of about 192 KB, 20 bytes per token and
 * super-block) in the thread's kernel_scratch.h buffer, kept between
 * calls: no second copy of the model. */
#ifndef TOKSCOPE_GEMM_KQ5_H
#define TOKSCOPE_GEMM_KQ5_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gguf/gguf.h"

/* AVX-512 VNNI builds and AVX2 ones (gemm_kpanel.h) */
#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#define GEMM_KQ5 1
#endif

/* Below this many tokens the few-token kernels (quant_kfew.h) cost about
 * what writing a panel does (bench_gemm_kq q5_k, one thread). */
#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__) && defined(__AVX512VNNI__)
#define GEMM_KQ5_MIN_TOK 16
#else
/* AVX2: the 4-token vec_dot tiles are slower (bench_gemm_kq q5_k, AVX2
 * build: 8 tokens 4.0-5.0 vs 5.0 ns, 4 tokens even) */
#define GEMM_KQ5_MIN_TOK 8
#endif

/* True when this build has the GEMM, w is Q5_K and n_tok is a batch. */
bool gemm_kq5_applies(const gguf_tensor *w, int n_tok);

/* out[t * out_stride + r] for rows [r0, r1) of the Q5_K rows at w (rs
 * bytes apart, n columns) and tokens [0, n_tok): Q8_K activation rows
 * act_stride bytes apart; each output bit-identical to tensor_vec_dot.
 * Any n_tok >= 1. Single-threaded: callers split rows. Without GEMM_KQ5
 * it is tensor_vec_dot per output. */
void gemm_kq5_rows(int64_t n, const void *w, size_t rs, int64_t r0, int64_t r1, const void *act,
                   size_t act_stride, int n_tok, float *out, int64_t out_stride);

#endif
