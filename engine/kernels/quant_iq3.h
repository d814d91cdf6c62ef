/* IQ3_XXS (ggml type 18) and IQ3_S (type 21): "importance" 3-bit super-blocks
 * of 256 weights, dotted against Q8_K activations (as ggml does).
 *
 * Both cut a block into 8 sub-blocks of 32 weights, each with a 4-bit scale
 * (weight scale 2 * s + 1), and into groups of 4 weights that take their
 * unsigned magnitudes from one grid entry (a uint32, byte j = weight j);
 * signs come one bit per weight.
 *  - IQ3_XXS: qs[0..63] are 8-bit grid indices (8 per sub-block); then one
 *    uint32 per sub-block: 4 x 7 bits of signs (one 7-bit code per 8 weights,
 *    the 8th sign makes the count of minus signs even: quant_ksigns_iq2xs),
 *    and the scale in bits 28..31. Values carry an extra factor 1/4.
 *  - IQ3_S: 9-bit grid indices (qs: low 8 bits, qh[sub-block] bit g: bit 8 of
 *    group g), all 8 signs stored (signs[4 * sub-block + e / 8] bit e % 8),
 *    scales[k]: sub-block 2k in the low nibble, 2k + 1 in the high. */
#ifndef TOKSCOPE_QUANT_IQ3_H
#define TOKSCOPE_QUANT_IQ3_H

#include <stdint.h>

#include "kernels/quant_internal.h"

typedef struct {
    uint16_t d;               /* fp16 super-block scale */
    uint8_t qs[3 * QK_K / 8]; /* 64 grid indices, then 8 x (signs, scale) uint32 */
} block_iq3_xxs;
_Static_assert(sizeof(block_iq3_xxs) == 98, "iq3_xxs size");

typedef struct {
    uint16_t d;
    uint8_t qs[QK_K / 4];    /* grid index, low 8 bits */
    uint8_t qh[QK_K / 32];   /* grid index bit 8, one bit per group of 4 */
    uint8_t signs[QK_K / 8]; /* one bit per weight, set = negative */
    uint8_t scales[QK_K / 64];
} block_iq3_s;
_Static_assert(sizeof(block_iq3_s) == 110, "iq3_s size");

extern const uint32_t quant_iq3xxs_grid[256];
extern const uint32_t quant_iq3s_grid[512];

/* ggml's dequantize_row_iq3_xxs / _iq3_s (same float operations). */
void quant_dequantize_iq3_xxs(const void *src, float *dst, int64_t n);
void quant_dequantize_iq3_s(const void *src, float *dst, int64_t n);

/* The _generic order: per super-block one exact integer sum of
 * scale * (grid value * sign * activation), times d_w * d_act (rounded:
 * the reference's compiler does not contract this one), added to one float;
 * IQ3_XXS's total times 0.25. test_iq3 holds these to the reference's
 * ggml_vec_dot_iq3_*_q8_K_generic bit for bit. */
float quant_dot_iq3_xxs_scalar(int64_t n, const void *w, const void *act);
float quant_dot_iq3_s_scalar(int64_t n, const void *w, const void *act);

/* The reference's x86 (AVX2) order, portable C: 8 integer lanes per
 * super-block (lane k: weights 4k..4k+3 of every sub-block, times their
 * scales), converted and FMA'd with d_w * d_act into 8 float accumulators,
 * reduced as hsum_float_8 at the end (IQ3_XXS: then times 0.25). Signs are
 * applied to the activation bytes with 8-bit wrap-around, as
 * _mm256_sign_epi8 does: a negative sign leaves an activation of -128 at
 * -128 (the generic code would use +128). */
float quant_dot_iq3_xxs_x86order(int64_t n, const void *w, const void *act);
float quant_dot_iq3_s_x86order(int64_t n, const void *w, const void *act);

/* Fills in the table entries (quant.c): the AVX2 kernels where the build has
 * them, else the x86order ones (the reference machine's bits everywhere). */
void quant_iq3_install(struct quant_kernels *xxs, struct quant_kernels *s);

/* hsum_float_8's order: (x[k] + x[k + 4]), then (0 + 2) + (1 + 3). */
static inline float quant_iq_hsum8(const float x[8])
{
    float r[4];
    for (int k = 0; k < 4; k++)
        r[k] = x[k + 4] + x[k];
    return (r[0] + r[2]) + (r[1] + r[3]);
}

/* -a with _mm256_sign_epi8's wrap-around: -(-128) stays -128. */
static inline int quant_iq_neg_wrap(int8_t a)
{
    return a == -128 ? -128 : -a;
}

#endif
