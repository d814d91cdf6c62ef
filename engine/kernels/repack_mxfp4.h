/* MXFP4 weights in the reference's repacked order (ggml_gemv/gemm_mxfp4_8x8_q8_0),
 * many rows and tokens at once.
 *
 * Every output (row r, token t) is the chain quant_dot_mxfp4_repacked gives
 * one row at a time: per block the exact integer sum of the doubled E2M1
 * values with the Q8_0 activation bytes, then acc = fma(isum, d_w * d_a,
 * acc) in block order. The reference's gemv (one token) and gemm (four
 * tokens) both end in that chain, so how rows and tokens are tiled here
 * changes no bit: the tiles only share the decoding of a weight block
 * between tokens and the horizontal sums between outputs. */
#ifndef TOKSCOPE_REPACK_MXFP4_H
#define TOKSCOPE_REPACK_MXFP4_H

#include <stddef.h>
#include <stdint.h>

/* out[t * out_stride + r] for rows [r0, r1) of the MXFP4 matrix w (rows of
 * n elements, n a multiple of 32) and tokens [0, n_tok) of Q8_0 activations
 * (row t at act + t * act_stride). */
void repack_mxfp4_matmul(const void *w, int64_t n, int64_t r0, int64_t r1, const uint8_t *act, size_t act_stride,
                         int n_tok, float *out, int64_t out_stride);

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#include <stdbool.h>
/* AVX2: rows [lo, hi) of a packed MXFP4 group of 16 (forward_packed.c's
 * layout, nb blocks a row) against n_tok Q8_0 tokens (act_stride apart;
 * sums: each token's block byte sums, sums[t * nb + b]) into out[t *
 * out_stride + r], the same chain per output; false (nothing written)
 * without scratch. */
bool repack_mxfp4_packed_group(const uint8_t *pw, int64_t nb, const uint8_t *act, size_t act_stride,
                               const int32_t *sums, int n_tok, float *out, int64_t out_stride, int lo, int hi);
#endif

#endif
