/* Q4_K, Q4_0 and MXFP4 prompt batches (and a MoE expert's Q4_K batch in
 * the gemv order) on AVX2 (and AVX-512 without VNNI) with the tokens in
 * the lanes, in the reference's repacked orders, bit for bit.
 *
 * The reference repacks Q4_K (q4_K 8x8) and runs its gemm over complete
 * groups of 4 tokens: per output, per pair j of 32-value sub-blocks, one
 * exact integer is = sc[2j] * (q . y over sub-block 2j) + sc[2j+1] * (...)
 * and im = min[2j] * (bsum 4j + 4j+1) + min[2j+1] * (bsum 4j+2 + 4j+3),
 * then acc = fma(is, d_w * y.d, acc), acc_min = fma(im, dmin_w * y.d,
 * acc_min); the output acc - acc_min. forward_packed.c's AVX2 tile keeps 8
 * rows in a register's lanes, so every 4 activation bytes are spread over
 * the lanes (a shuffle) and every packed nibble vector is split again for
 * every token. Here a lane is a token: a row's 4 value bytes are one
 * broadcast from a panel unpacked once per call, 8 tokens' matching bytes
 * one load from the tokens transposed once per call, and one maddubs + one
 * add per 32 products is all the inner loop does (the int16 sums of a
 * sub-block stay below 16 x 15 x 127). The integers are exact, so the
 * floats are the reference's. Scratch in the thread's kernel_scratch.h
 * buffer: no second copy of the model. */
#ifndef TOKSCOPE_GEMM_TLANES_H
#define TOKSCOPE_GEMM_TLANES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__) &&                                              \
    !(defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VNNI__))
#define GEMM_TLANES 1
#endif

/* Tokens from which the GEMMs replace forward_packed.c's tiles (Q4_K: its
 * gemm groups of 4; the panels and the transposed tokens are made once a
 * call, so few tokens do not pay for them). bench_packed, AVX2 build, one
 * TinyLlama layer, ns per row x token x block, tile vs GEMM: Q4_K 16 tokens
 * 0.35 vs 0.34; Q4_0 16 0.34 vs 0.37, 24 0.34 vs 0.34, 32 0.34 vs 0.31.
 * Again on one thread of an AMD EPYC Zen 4 (2026-12-05): Q4_K 16 0.42 vs
 * 0.41; Q4_0 16 0.45 vs 0.48, 24 0.44-0.46 vs 0.43, 28 0.44-0.45 vs
 * 0.43-0.44, 32 0.45 vs 0.38. */
#define GEMM_TLANES_MIN_TOK_Q4_K 16
#define GEMM_TLANES_MIN_TOK_Q4_0 24
/* MXFP4 (against forward_packed.c's decoding of a group into 8-row
 * interleaved blocks, repack_mxfp4.c): 2048 x 2048, 32 tokens 0.338 vs
 * 0.356, 40 0.336 vs 0.342, 48 0.334 vs 0.317, 64 0.33-0.34 vs 0.299, 512
 * 0.337 vs 0.263 (each row's panel unpacked by a gather costs the few-token
 * calls). On the Zen 4: 32 tokens 0.40-0.41 vs 0.38-0.39, 36 0.40 vs
 * 0.41-0.42 (4 whole token vectors and a part), so it stays. */
#define GEMM_TLANES_MIN_TOK_MXFP4 40

/* out[t * out_stride + r] for rows [r0, r1) of a Q4_K matrix packed by
 * forward_packed.c (16-row groups of gb bytes at packed, nbl super-blocks a
 * row) and tokens [0, n_tok) (Q8_K rows act_stride bytes apart), each in
 * the reference's gemm order. False, having written nothing, without
 * GEMM_TLANES or when its scratch could not be had. */
bool gemm_tlanes_q4_K(const uint8_t *packed, int64_t nbl, size_t gb, int64_t r0, int64_t r1, const void *act,
                      size_t act_stride, int n_tok, float *out, int64_t out_stride);

/* The same for a packed Q4_0 matrix (nbl blocks of 32 a row) against Q8_0
 * rows: per output one float lane, a block's exact sum then one FMA with
 * d_w * y.d, the chain of the reference's repacked q4_0 8x8 kernels (gemm
 * and gemv alike). */
bool gemm_tlanes_q4_0(const uint8_t *packed, int64_t nbl, size_t gb, int64_t r0, int64_t r1, const void *act,
                      size_t act_stride, int n_tok, float *out, int64_t out_stride);

/* The same for a packed MXFP4 matrix (nbl blocks of 32 a row) against Q8_0
 * rows: the chain of the reference's repacked mxfp4 8x8 kernels
 * (repack_mxfp4.h), a block's exact sum then one FMA with d_w * y.d, as
 * Q4_0's. */
bool gemm_tlanes_mxfp4(const uint8_t *packed, int64_t nbl, size_t gb, int64_t r0, int64_t r1, const void *act,
                       size_t act_stride, int n_tok, float *out, int64_t out_stride);

/* The same for plain Q4_K rows (rs bytes apart; a MoE expert's, which the
 * reference never packs) in the repacked gemv's order that its mul_mat_id
 * keeps (gemm_kq4v.h): per output and super-block the sub-block pairs'
 * integers added up, one FMA with d_w * y.d and one with dmin_w * y.d. */
bool gemm_tlanes_q4_K_gemv(const void *w, int64_t nbl, size_t rs, int64_t r0, int64_t r1, const void *act,
                           size_t act_stride, int n_tok, float *out, int64_t out_stride);

#endif
