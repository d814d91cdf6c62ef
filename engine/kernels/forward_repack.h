/* Matmuls in the float order of the reference's repacked weights.
 *
 * The reference CPU backend repacks some weight types at load time (Q4_0,
 * MXFP4 and Q4_K with a multiple of 8 rows, on AVX2 machines) and multiplies them with
 * kernels whose float accumulation differs from the plain dot products:
 * every block's exact integer dot is scaled and FMA-accumulated in block
 * order. Matching that order keeps the last bits equal, which the F16 KV
 * cache and the Q8 activations would otherwise amplify. */
#ifndef TOKSCOPE_FORWARD_REPACK_H
#define TOKSCOPE_FORWARD_REPACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gguf/gguf.h"

/* True when the reference would repack this weight. */
bool repack_applies(const gguf_tensor *w);

/* out[t * out_stride + r] for rows [r0, r1) and tokens [0, n_tok): weight
 * rows of w (repack_applies) against activations in its dot type. */
void repack_matmul(const gguf_tensor *w, int64_t n, int64_t r0, int64_t r1, const uint8_t *act, size_t act_stride,
                   int n_tok, float *out, int64_t out_stride);

/* F16 / F32 weights: ggml's vec_dot order for single tokens, tinyBLAS's
 * for batches (rows a multiple of 16 long). Activations are F32 rows in
 * both cases; for F16 weights their values must already be F16-rounded
 * (the dot type), which keeps every product the reference computes. */
bool reffloat_applies(const gguf_tensor *w);
void reffloat_matmul(const gguf_tensor *w, int64_t n, int64_t r0, int64_t r1, const uint8_t *act, size_t act_stride,
                     int n_tok, float *out, int64_t out_stride);

/* ggml_vec_dot_f32 / ggml_vec_dot_f16 on the reference build (AVX-512
 * lanes; GCC's F32 tail, the F16 tail summed in double). */
float refdot_f32(int64_t n, const float *x, const float *y);
float refdot_f16(int64_t n, const uint16_t *x, const uint16_t *y);

/* BF16 weights in a batch (n_tok >= 2): tinyBLAS's vdpbf16ps order. */
bool refbf16_applies(const gguf_tensor *w, int n_tok);
void refbf16_matmul(const gguf_tensor *w, int64_t n, int64_t r0, int64_t r1, const uint8_t *act, size_t act_stride,
                    int n_tok, float *out, int64_t out_stride);

/* Q4_K and Q2_K the reference repacks (8x8 kernels; Q6_K keeps vec_dot
 * order and runs through tensor_matmul). */
bool refk_applies(const gguf_tensor *w);
void refk_matmul(const gguf_tensor *w, int64_t n, int64_t r0, int64_t r1, const uint8_t *act, size_t act_stride,
                 int n_tok, float *out, int64_t out_stride);
/* Every token in the gemv order refk_matmul gives a single token (what
 * ggml's repacked mul_mat_id computes), Q4_K four tokens at a time. */
void refk_matmul_gemv(const gguf_tensor *w, int64_t n, int64_t r0, int64_t r1, const uint8_t *act, size_t act_stride,
                      int n_tok, float *out, int64_t out_stride);

#endif
