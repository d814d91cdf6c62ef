/* IQ1_S (ggml type 19) and IQ1_M (type 29): ~1.5-bit "importance"
 * super-blocks of 256 weights, dotted against Q8_K activations (as ggml does).
 *
 * Both take groups of 8 weights from one entry of a 2048-entry grid of
 * -1 / 0 / +1 bytes (quant_iq1s_grid, 11-bit index: qs byte + 3 high bits),
 * and shift each group by +-1/8 (IQ1S_DELTA = IQ1M_DELTA = 0.125): a weight
 * is dl * (grid + delta), dl = d * (2 * s + 1) for a 3-bit scale s.
 *  - IQ1_S: fp16 d; qh[sub-block] (uint16): bits 3l..3l+2 the high index
 *    bits of group l, bits 12..14 the sub-block's scale, bit 15 its delta's
 *    sign (set: -1/8), one scale and delta per 32 weights.
 *  - IQ1_M: no d field: the fp16 d is spread over the top nibbles of the four
 *    uint16 scales (sc[k] >> 12 is its bits 4k..4k+3); sc[b / 2] bits
 *    6 (b % 2) + 0..2 scale weights 0..15 of sub-block b, + 3..5 weights
 *    16..31; qh[2b + l / 2] nibble l % 2: bits 0..2 the high index bits of
 *    group l, bit 3 its delta's sign (one delta per 8 weights). */
#ifndef TOKSCOPE_QUANT_IQ1_H
#define TOKSCOPE_QUANT_IQ1_H

#include <stdint.h>

#include "kernels/quant_internal.h"

typedef struct {
    uint16_t d;
    uint8_t qs[QK_K / 8];
    uint16_t qh[QK_K / 32];
} block_iq1_s;
_Static_assert(sizeof(block_iq1_s) == 50, "iq1_s size");

typedef struct {
    uint8_t qs[QK_K / 8];
    uint8_t qh[QK_K / 16];
    uint8_t scales[QK_K / 32]; /* 4 x uint16, little endian */
} block_iq1_m;
_Static_assert(sizeof(block_iq1_m) == 56, "iq1_m size");

#define QUANT_IQ1_DELTA 0.125f

extern const uint64_t quant_iq1s_grid[2048];

/* IQ1_M's super-block scale: the fp16 in the scales' top nibbles. */
static inline uint16_t quant_iq1m_d(const block_iq1_m *x)
{
    uint16_t sc[4];
    memcpy(sc, x->scales, 8);
    return (uint16_t)((sc[0] >> 12) | ((sc[1] >> 8) & 0x00f0) | ((sc[2] >> 4) & 0x0f00) | (sc[3] & 0xf000));
}

/* Its inverse, the scales' low nibbles kept (for blocks written by hand:
 * the tests' random ones). */
static inline void quant_iq1m_set_d(block_iq1_m *x, uint16_t d)
{
    for (int k = 0; k < 4; k++)
        x->scales[2 * k + 1] = (uint8_t)((x->scales[2 * k + 1] & 0x0F) | ((d >> (4 * k)) & 15) << 4);
}

/* ggml's dequantize_row_iq1_s / _iq1_m (same float operations). */
void quant_dequantize_iq1_s(const void *src, float *dst, int64_t n);
void quant_dequantize_iq1_m(const void *src, float *dst, int64_t n);

/* The _generic order, with the reference build's float operations: per
 * super-block exact integer sums of scale * grid * activation and of scale *
 * delta sign * activation, sum = fma(d_w * d_act, sum + 1/8 * delta sum,
 * sum) (its compiler contracts that line; test_iq1 holds these to the
 * reference's ggml_vec_dot_iq1_*_q8_K_generic bit for bit). */
float quant_dot_iq1_s_scalar(int64_t n, const void *w, const void *act);
float quant_dot_iq1_m_scalar(int64_t n, const void *w, const void *act);

/* The reference's x86 (AVX2) order, portable C (the BMI2 and plain AVX2
 * index decodings give the same integers). Grid and delta signs go onto the
 * activation bytes as _mm256_sign_epi8 does: -(-128) stays -128.
 *  - IQ1_S: the grid part in 8 integer lanes per super-block (lane k:
 *    weights 4k..4k+3 of each sub-block, times its scale), FMA'd with
 *    d_act * d_w into 8 float accumulators; the delta part one integer per
 *    super-block (from the Q8_K bsums, exact), FMA'd into one float; at the
 *    end hsum_float_8(grid) + 1/8 * delta.
 *  - IQ1_M: grid and delta parts both in 8 lanes and 8 accumulators,
 *    hsum_float_8(grid) + 1/8 * hsum_float_8(delta). */
float quant_dot_iq1_s_x86order(int64_t n, const void *w, const void *act);
float quant_dot_iq1_m_x86order(int64_t n, const void *w, const void *act);

/* Fills in the table entries (quant.c): the AVX2 kernels where the build has
 * them, else the x86order ones. */
void quant_iq1_install(struct quant_kernels *s, struct quant_kernels *m);

#endif
