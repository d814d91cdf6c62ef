/* Batched matmul of the IQ block types dotted against Q8_K (IQ4_XS, IQ3_S,
 * IQ3_XXS, IQ2_XXS, IQ2_XS, IQ2_S; IQ1_M in gemm_iq1.c) as
 * an integer GEMM, with the reference's bits.
 *
 * The reference runs these types through vec_dot, one (row, token) at a
 * time, in the x86 order of quant_iq4.h, quant_iq3.h, quant_iq2.h: per
 * super-block of 256 weights 8 int32 lanes, lane k the scale-weighted sums
 * of elements 4k..4k+3 of the eight 32-weight sub-blocks; acc[k] =
 * fma(d_w * d_act, lane k, acc[k]) over the super-blocks; hsum_float_8
 * (times 0.125f for IQ2, 0.25f for IQ3_XXS). The lanes are exact integers,
 * so any way of forming them gives the same floats. Here a panel of weight
 * rows is decoded once per batch and run against every token: as bytes in
 * vpdpbusd with the sub-block scales applied to the int32 lanes (AVX-512
 * VNNI), or as int16 (value times scale) in vpmaddwd (AVX2), with each
 * output's 8 float lanes and their horizontal sum kept exactly as vec_dot
 * has them. The panel (about 200 KB) and the tokens' bytes (up to 6 MB,
 * AVX-512) are per-thread scratch, kept between calls (freed when the
 * thread exits): no second copy of the model.
 *
 * Activation bytes are taken as -127..127 (what quantize_row_q8_K writes);
 * a -128 would differ from vec_dot's byte negation in the IQ2, IQ3 and IQ1
 * types. */
#ifndef TOKSCOPE_GEMM_IQ_H
#define TOKSCOPE_GEMM_IQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gguf/gguf.h"
#include "gguf/tensor.h"

/* Below this many tokens writing the panels costs more than the tiles
 * save and the batch goes to vec_dot tiles (tensor_matmul): measured with
 * bench_gemm_iq on the TinyLlama shapes, one thread (IQ4_XS 1.07x at 8
 * tokens, IQ3_S 1.05x; IQ2_XXS 0.87x at 8, 1.46x at 16; IQ1_M 0.60x at 4,
 * 1.11x at 8, 1.91x at 16). */
int gemm_iq_min_tok(enum tensor_type type);

/* True when this build has the GEMM for w's type and n_tok is a batch. */
bool gemm_iq_applies(const gguf_tensor *w, int n_tok);

/* true when the GEMM exists for this type in this build (any batch size). */
bool gemm_iq_supports(enum tensor_type type);

/* Bytes a token of the tokens w's GEMM prepares (AVX-512 VNNI: the Q8_K
 * bytes plus 128, for IQ1_M their 4-sums too), so that the threads of one
 * matmul can share them (gemm_iq_prep_tokens once, then gemm_iq_matmul's
 * tok): 0 where they cannot (AVX2 builds prepare them per tile of tokens;
 * no GEMM for this type or batch). Each thread had prepared every token
 * itself: 2 % of a native IQ3_S prompt. */
size_t gemm_iq_tok_bytes(const gguf_tensor *w, int n_tok);
/* The most gemm_iq_tok_bytes takes for weights n elements wide. */
size_t gemm_iq_tok_bytes_max(int64_t n);
/* Q8_K rows [0, n_tok) of act (act_stride bytes apart) prepared for w's
 * GEMM into dst, gemm_iq_tok_bytes(w, .) bytes apart. */
void gemm_iq_prep_tokens(const gguf_tensor *w, const uint8_t *act, size_t act_stride, int n_tok, uint8_t *dst);

/* out[t * out_stride + r] for rows [r0, r1) and tokens [0, n_tok): rows of
 * w (n columns) against Q8_K activation rows act_stride bytes apart, each
 * output bit-identical to tensor_vec_dot. tok: NULL, or those tokens
 * prepared by gemm_iq_prep_tokens (where gemm_iq_tok_bytes is not 0). Any
 * n_tok >= 1 (the tests run small ones); gemm_iq_supports(w->type) must
 * hold. Single-threaded: callers split rows. */
void gemm_iq_matmul(const gguf_tensor *w, int64_t n, int64_t r0, int64_t r1, const uint8_t *act,
                    size_t act_stride, const uint8_t *tok, int n_tok, float *out, int64_t out_stride);

#endif
