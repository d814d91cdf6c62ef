/* IQ4_NL (ggml type 20) and IQ4_XS (type 23): 4-bit indices into one fixed
 * non-linear table of 16 signed values (kvalues_iq4nl, -127..113).
 *
 * IQ4_NL: blocks of 32 with one F16 scale, element j in the low nibble of
 * qs[j], j + 16 in the high nibble (like Q4_0); dotted against Q8_0.
 * IQ4_XS: super-blocks of 256 with one F16 scale d and eight 6-bit
 * sub-block scales ls (value d * (ls - 32)): the low 4 bits of sub-block
 * ib's in scales_l[ib / 2] (low nibble for even ib, high for odd), the top
 * 2 bits at bits 2 * ib of scales_h; each sub-block of 32 lays out its qs
 * like an IQ4_NL block. Dotted against Q8_K.
 *
 * The reference computes the IQ4_NL dot in four float orders, all with the
 * same exact per-block integer sums (|value| <= 127, |act| <= 127):
 * - generic C (ggml_vec_dot_iq4_nl_q8_0_generic): the spec;
 * - x86 vec_dot (its AVX-512 build runs the AVX2 code): blocks alternate
 *   between two 8-lane FMA accumulators (lane k: elements 4k..4k+3), added
 *   and reduced; an odd last block's product then added (not fused). One
 *   token;
 * - tinyBLAS_Q0_AVX (llamafile sgemm): one 8-lane FMA accumulator per
 *   output, reduced. Batches of 2 or more tokens with a row count that is
 *   not a multiple of 8;
 * - repacked 8x8 (ggml_gemv/gemm_iq4_nl_8x8_q8_0, row count a multiple of
 *   8, any batch): acc = fma(isum, d_w * d_a, acc), blocks in order.
 * IQ4_XS has no repacked or tinyBLAS kernel: vec_dot per (row, token). */
#ifndef TOKSCOPE_QUANT_IQ4_H
#define TOKSCOPE_QUANT_IQ4_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gguf/gguf.h"
#include "kernels/quant_internal.h"

#define QK4_NL 32

typedef struct {
    uint16_t d;             /* fp16 scale */
    uint8_t qs[QK4_NL / 2]; /* element j low nibble of qs[j], j + 16 high */
} block_iq4_nl;

typedef struct {
    uint16_t d;                  /* fp16 super-block scale */
    uint16_t scales_h;           /* top 2 bits of sub-block ib's scale at bit 2 * ib */
    uint8_t scales_l[QK_K / 64]; /* low 4 bits: ib even low nibble, odd high */
    uint8_t qs[QK_K / 2];        /* 8 sub-blocks of 16 bytes, laid out as IQ4_NL */
} block_iq4_xs;

_Static_assert(sizeof(block_iq4_nl) == 18, "iq4_nl size");
_Static_assert(sizeof(block_iq4_xs) == 136, "iq4_xs size");

/* ggml-common.h's kvalues_iq4nl. */
extern const int8_t quant_kvalues_iq4nl[16];

/* Sub-block ib's 6-bit scale (0..63; the multiplier is this minus 32). */
static inline int quant_iq4_xs_scale(const block_iq4_xs *x, int ib)
{
    return ((x->scales_l[ib / 2] >> (4 * (ib % 2))) & 0xF) | (((x->scales_h >> (2 * ib)) & 3) << 4);
}

void quant_dequantize_iq4_nl(const void *src, float *dst, int64_t n);
void quant_dequantize_iq4_xs(const void *src, float *dst, int64_t n);

/* IQ4_NL x Q8_0 in the four orders above. */
float quant_dot_iq4_nl_scalar(int64_t n, const void *w, const void *act);
float quant_dot_iq4_nl_x86order(int64_t n, const void *w, const void *act);
float quant_dot_iq4_nl_tinyblas(int64_t n, const void *w, const void *act);
float quant_dot_iq4_nl_repacked(int64_t n, const void *w, const void *act);

/* IQ4_XS x Q8_K: generic C (per sub-block sumf += d * ls * isum) and the
 * x86 AVX2 order (per super-block 8 integer lanes of ls-weighted sums, one
 * FMA accumulator, reduced at the end). */
float quant_dot_iq4_xs_scalar(int64_t n, const void *w, const void *act);
float quant_dot_iq4_xs_x86order(int64_t n, const void *w, const void *act);

/* Fills in the fast entries of IQ4_NL's / IQ4_XS's kernel table (quant.c). */
void quant_iq4_install(enum tensor_type type, struct quant_kernels *k);

/* The batched IQ4_NL orders of forward_matmul: true when the reference
 * would not run this weight through vec_dot for a batch of n_tok tokens
 * (repacked: rows a multiple of 8; tinyBLAS: otherwise, n_tok >= 2). */
bool quant_iq4_nl_batch_applies(const gguf_tensor *w, int n_tok);
/* out[t * out_stride + r] for rows [r0, r1) and tokens [0, n_tok): rows
 * of w against Q8_0 activation rows act_stride bytes apart, in the order
 * the reference picks (quant_iq4_nl_batch_applies must hold). */
void quant_iq4_nl_batch_matmul(const gguf_tensor *w, int64_t n, int64_t r0, int64_t r1, const uint8_t *act,
                               size_t act_stride, int n_tok, float *out, int64_t out_stride);

#endif
