/* Batched Q6_K matmul (a prompt's tokens against Q6_K rows) as an integer
 * GEMM with the reference's bits.
 *
 * The reference runs Q6_K through ggml_vec_dot_q6_K_q8_K, one (row, token)
 * at a time (its AVX2 body on AVX-512 machines too): per super-block 8
 * int32 lanes, lane k = sum over the eight 32-value chunks of sc * q * y over
 * elements 4k..4k+3 (q unsigned 0..63, sc the scale of that 16), less
 * 32 * (sc[2k] bsum[2k] + sc[2k+1] bsum[2k+1]); acc[k] = fma(d_act * d_w,
 * lane k, acc[k]); hsum_float_8. The lanes are exact integers, so any way
 * of forming them gives the same floats. Here a panel of rows is unpacked
 * once per call (6-bit values as bytes, scales as int16 pairs) and run
 * against every token: see gemm_kq6.c. Scratch (a panel of about 192 KB)
 * in the thread's kernel_scratch.h buffer, kept between calls: no second
 * copy of the model. */
#ifndef TOKSCOPE_GEMM_KQ6_H
#define TOKSCOPE_GEMM_KQ6_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gguf/gguf.h"

/* AVX-512 VNNI builds and AVX2 ones (gemm_kpanel.h) */
#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#define GEMM_KQ6 1
#endif

/* Below this many tokens the few-token kernels (quant_kfew.h, which unpack
 * each block once per 4 tokens) cost about what writing a panel does
 * (bench_gemm_kq q6_k, one thread: 8 tokens 2.2-2.6 vs 2.6-3.4 ns per row x
 * token x block, 16 tokens 2.2-2.3 vs 2.2). */
#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__) && defined(__AVX512VNNI__)
#define GEMM_KQ6_MIN_TOK 16
#else
/* AVX2: the 4-token vec_dot tiles are slower (bench_gemm_kq q6_k, AVX2
 * build: 8 tokens 4.0-5.0 vs 5.0 ns, 4 tokens even) */
#define GEMM_KQ6_MIN_TOK 8
#endif

/* True when this build has the GEMM, w is Q6_K and n_tok is a batch. */
bool gemm_kq6_applies(const gguf_tensor *w, int n_tok);

/* out[t * out_stride + r] for rows [r0, r1) of the Q6_K rows at w (rs
 * bytes apart, n columns) and tokens [0, n_tok): Q8_K activation rows
 * act_stride bytes apart; each output bit-identical to tensor_vec_dot.
 * Any n_tok >= 1. Single-threaded: callers split rows. Without GEMM_KQ6
 * it is tensor_vec_dot per output. */
void gemm_kq6_rows(int64_t n, const void *w, size_t rs, int64_t r0, int64_t r1, const void *act, size_t act_stride,
                   int n_tok, float *out, int64_t out_stride);

/* gemm_kq6_rows over packed_q6_K.h's re-encoded rows (AVX2 builds
 * without AVX-512, where PACKED_Q6_K is set); false when it did not run
 * (no scratch): the caller runs its own kernels then. */
bool gemm_kq6_encoded_rows(int64_t n, const void *w, size_t rs, int64_t r0, int64_t r1, const void *act,
                           size_t act_stride, int n_tok, float *out, int64_t out_stride);

#endif
