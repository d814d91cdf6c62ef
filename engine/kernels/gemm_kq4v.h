/* Batched Q4_K matmul in the reference's repacked gemv order (a prompt's
 * tokens routed to one expert) as an integer GEMM with the reference's
 * bits.
 *
 * On the reference's AVX-512 machine Q4_K weights are repacked
 * (ggml-cpu/repack.cpp, q4_K 8x8) and ggml_mul_mat_id runs their gemv, one
 * token at a time, never the gemm: per super-block one exact integer
 * isum = sum_j sc[j] * (q . y over chunk j) and one imin = sum_j min[j] *
 * (bsum[2j] + bsum[2j+1]); acc = fma(isum, d_w * y.d, acc), acc_min =
 * fma(imin, dmin_w * y.d, acc_min); the result acc - acc_min
 * (forward_repack.h's refk_matmul_gemv). The integers are exact, so any way
 * of forming them gives the same floats. Here a panel of rows is unpacked
 * once per call (4-bit values as bytes, scales and mins as int16 pairs) and
 * run against every token: see gemm_kq4v.c. Scratch in the thread's
 * kernel_scratch.h buffer, kept between calls: no second copy of the
 * model. AVX-512 VNNI builds pack Q4_K experts at load instead
 * (forward_packed.h: the 512-bit kernel's gemv form runs every token, no
 * panel per call), so there this runs only experts that stay unpacked
 * (rows not a multiple of 16); AVX2 builds run every expert batch here. */
#ifndef TOKSCOPE_GEMM_KQ4V_H
#define TOKSCOPE_GEMM_KQ4V_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gguf/gguf.h"

/* AVX-512 VNNI builds and AVX2 ones (gemm_kpanel.h) */
#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#define GEMM_KQ4V 1
#endif

/* From this many tokens on the GEMM outruns refk_matmul_gemv's 1x4 tiles
 * (each block unpacked once per 4 tokens). bench_gemm_kq q4_k_gemv, one
 * thread, the weights from memory (128-256 experts), ns per row x token x
 * block, gemv vs GEMM, once the panel's scales and mins were decoded in
 * 32-bit words: 2048 x 512, 2 tokens 8.6-8.8 vs 7.6, 3 5.8 vs 5.3, 4 4.3
 * vs 3.9, 8 3.2 (the GEMM before that decoding) vs 2.6; 2048 x 768, 2
 * tokens 10.7 vs 9.0, 5 9.4 vs 5.0; 2816 x 1408, 2 tokens 8.3 vs 7.6, 5
 * 7.9 vs 4.6. One token stays the gemv's (5.6 vs 15). */
#if defined(__AVX512VNNI__) && defined(__AVX512BW__) && defined(__AVX512VL__)
#define GEMM_KQ4V_MIN_TOK 2
#else
/* AVX2 (the 256-bit tile, each row's lanes added across per super-block),
 * the same bench, 2048 x 768 and 768 x 2048, 64 experts: 4 tokens 4.6-5.0
 * vs 4.7-5.3, 5 7.4-7.5 vs 5.7-6.3, 8 4.7-4.9 vs 3.5-3.9, 32 4.7-4.9 vs
 * 2.7-2.8 (the gemv's 1x4 tiles fit 4 tokens exactly). */
#define GEMM_KQ4V_MIN_TOK 5
#endif

/* Where the tokens-in-lanes GEMM (gemm_tlanes.h; AVX2 builds) takes over
 * from the panel tile: one row's 4 value bytes a broadcast against 8
 * tokens' bytes a load, 9.5 multiply instructions per row x token x
 * super-block where the panel tile's maddubs pairs take 12, once the tokens
 * fill its 2 x 8 lanes. The same bench, 2048 x 768 (768 x 2048): 12
 * tokens 3.2-3.3 vs 3.3-3.4, 16 3.0-3.2 vs 2.5-2.6 (3.1-3.2 vs 2.6-2.7), 32
 * 2.7-2.8 vs 2.1-2.2 (2.8-2.9 vs 2.3), 48 2.6 vs 2.0. */
#define GEMM_KQ4V_TLANES_MIN_TOK 16

/* True when this build has the GEMM, w is Q4_K and n_tok is a batch. */
bool gemm_kq4v_applies(const gguf_tensor *w, int n_tok);

/* out[t * out_stride + r] for rows [r0, r1) of the Q4_K rows at w (rs
 * bytes apart, n columns) and tokens [0, n_tok): Q8_K activation rows
 * act_stride bytes apart; each output bit-identical to refk_matmul_gemv
 * (the repacked gemv, a token at a time). Any n_tok >= 1. Single-threaded:
 * callers split rows. False, having written nothing, without GEMM_KQ4V or
 * when its scratch could not be had: the caller runs refk_matmul_gemv. */
bool gemm_kq4v_rows(int64_t n, const void *w, size_t rs, int64_t r0, int64_t r1, const void *act,
                    size_t act_stride, int n_tok, float *out, int64_t out_stride);

#endif
