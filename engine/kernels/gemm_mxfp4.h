/* The MXFP4 prompt GEMM on AVX-512 VNNI: many tokens against MXFP4 rows
 * with the bits of the repacked chain (repack_mxfp4.h).
 *
 * Every output (row r, token t) is, per 32-element block b in order,
 * acc = fma((float)isum_b, d_w * d_a, acc) from 0, isum_b the exact integer
 * sum of the doubled E2M1 values times the Q8_0 bytes. Here 16 rows are
 * written once per call into a panel (per block 8 vectors, dword lane j =
 * row j's elements 4k..4k+3, plus 12 so that vpdpbusd takes them as
 * unsigned, and the 16 half scales) and run against tiles of up to 8 tokens
 * whose 4-byte groups enter vpdpbusd as broadcasts from memory: one zmm of
 * 16 rows per token, no shuffles. Each lane's int32 starts at the token's
 * -12 * (sum of its block's bytes), so it ends as the exact isum_b; the
 * float steps per lane are the chain's (convert, d_w * d_a rounded, fma;
 * the product as an exponent add where that is exact, see gemm_mxfp4.c).
 * Scratch (the panel, the tokens' bytes, offsets and scales) in the
 * thread's kernel_scratch.h buffer. */
#ifndef TOKSCOPE_GEMM_MXFP4_H
#define TOKSCOPE_GEMM_MXFP4_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__) && defined(__AVX512VNNI__) &&     \
    defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#define GEMM_MXFP4 1

/* The same outputs from forward_packed.h's MXFP4 groups (packed: group 0
 * of the matrix, nb blocks per row; any r0, r1): the panels come from the
 * groups without a transpose. False as above. */
bool gemm_mxfp4_packed_matmul(const uint8_t *packed, int64_t nb, int64_t r0, int64_t r1, const uint8_t *act,
                              size_t act_stride, int n_tok, float *out, int64_t out_stride);

#endif

/* From this many tokens the GEMM takes a call (fewer: the row kernels). */
#define GEMM_MXFP4_MIN_TOK 2

/* Tile bytes one pass over the rows may hold (32 MB); more tokens go in
 * several passes. A variable for the tests, which make passes small. */
extern size_t gemm_mxfp4_pass_bytes;

/* out[t * out_stride + r] for rows [r0, r1) of the MXFP4 matrix w (rows of
 * n elements, n a multiple of 32) and Q8_0 tokens [0, n_tok) (row t at act
 * + t * act_stride). False, with nothing written, where this build has no
 * GEMM or no scratch could be had: the caller's kernels give the same bits. */
bool gemm_mxfp4_matmul(const void *w, int64_t n, int64_t r0, int64_t r1, const uint8_t *act, size_t act_stride,
                       int n_tok, float *out, int64_t out_stride);

/* The same outputs from forward_packed.h's MXFP4 groups (packed: group 0
 * of the matrix, nb blocks per row; any r0, r1): the panels come from the
 * groups without a transpose. False as above. */
bool gemm_mxfp4_packed_matmul(const uint8_t *packed, int64_t nb, int64_t r0, int64_t r1, const uint8_t *act,
                              size_t act_stride, int n_tok, float *out, int64_t out_stride);

#endif
