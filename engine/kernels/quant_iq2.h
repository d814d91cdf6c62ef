/* The IQ2 block types (ggml types 16 IQ2_XXS, 17 IQ2_XS, 22 IQ2_S): 256
 * weights per super-block, one fp16 scale d, and groups of 8 weights whose
 * magnitudes come from a grid of 8-byte patterns (quant_iq2_grids.c) and
 * whose signs are stored per group. Activations are dotted as Q8_K.
 *
 *   IQ2_XXS (66 bytes): per 32 weights two uint32: the first holds four 8-bit
 *     grid indices (iq2xxs_grid, 256 entries), the second four 7-bit sign
 *     fields (bits 0-27, through ksigns_iq2xs) and a 4-bit scale (bits 28-31).
 *   IQ2_XS (74 bytes): per 8 weights a uint16: 9-bit index (iq2xs_grid, 512)
 *     and a 7-bit sign field; per 32 weights a byte of two 4-bit scales (low
 *     nibble: first 16 weights, high: the next 16).
 *   IQ2_S (82 bytes): per 8 weights a byte of index (low 8 bits of a 10-bit
 *     iq2s_grid index, 1024) and a full byte of signs (bit j: weight j); per
 *     32 weights a qh byte (2 high index bits per group of 8) and a scale byte
 *     as IQ2_XS.
 *
 * A 4-bit scale s means (2s + 1) / 8 in the dots (integer 2s + 1, the 1/8 in
 * a final 0.125f) and d * (0.5 + s) * 0.25 in dequantization. */
#ifndef TOKSCOPE_QUANT_IQ2_H
#define TOKSCOPE_QUANT_IQ2_H

#include <stdint.h>

#include "kernels/quant_internal.h"

typedef struct {
    uint16_t d;
    uint16_t qs[QK_K / 8];
} block_iq2_xxs;
_Static_assert(sizeof(block_iq2_xxs) == 66, "iq2_xxs size");

typedef struct {
    uint16_t d;
    uint16_t qs[QK_K / 8];
    uint8_t scales[QK_K / 32];
} block_iq2_xs;
_Static_assert(sizeof(block_iq2_xs) == 74, "iq2_xs size");

typedef struct {
    uint16_t d;
    uint8_t qs[QK_K / 4]; /* 32 grid index bytes, then 32 sign bytes */
    uint8_t qh[QK_K / 32];
    uint8_t scales[QK_K / 32];
} block_iq2_s;
_Static_assert(sizeof(block_iq2_s) == 82, "iq2_s size");

/* The grids, from the reference's ggml-common.h (quant_iq2_grids.c). */
extern const uint64_t quant_iq2xxs_grid[256];
extern const uint64_t quant_iq2xs_grid[512];
extern const uint64_t quant_iq2s_grid[1024];

/* One super-block taken apart: group g's (8 weights) grid entry and sign
 * byte (bit j set: weight 8g + j negative), and the 4-bit scale of each 16
 * weights. Every kernel below decodes through this, so the format is read
 * in one place. */
struct iq2_groups {
    uint64_t grid[QK_K / 8];
    uint8_t signs[QK_K / 8];
    uint8_t scale[QK_K / 16];
};
void quant_iq2_xxs_groups(const block_iq2_xxs *b, struct iq2_groups *g);
void quant_iq2_xs_groups(const block_iq2_xs *b, struct iq2_groups *g);
void quant_iq2_s_groups(const block_iq2_s *b, struct iq2_groups *g);

void quant_dequantize_iq2_xxs(const void *src, float *dst, int64_t n);
void quant_dequantize_iq2_xs(const void *src, float *dst, int64_t n);
void quant_dequantize_iq2_s(const void *src, float *dst, int64_t n);

/* ggml_vec_dot_iq2_*_q8_K_generic's order: per block the exact integer sum
 * (scale times the 32- or 16-weight sums), d_w * d_act times it added to one
 * float sum, times 0.125f at the end. */
float quant_dot_iq2_xxs_scalar(int64_t n, const void *w, const void *act);
float quant_dot_iq2_xs_scalar(int64_t n, const void *w, const void *act);
float quant_dot_iq2_s_scalar(int64_t n, const void *w, const void *act);

/* The reference's x86 order (its AVX-512 build runs the AVX2 code): per
 * block 8 integer lanes, lane k the scaled sums of elements 4k..4k+3 of all
 * eight 32-weight sub-blocks; acc[k] = fma(d_w * d_act, lane k, acc[k]) over
 * the blocks; 0.125f * hsum(acc). An activation byte -128 under a minus sign
 * stays -128 there (the byte negation wraps), so it does here. Portable C,
 * for the tests and for builds without AVX2. */
float quant_dot_iq2_xxs_x86order(int64_t n, const void *w, const void *act);
float quant_dot_iq2_xs_x86order(int64_t n, const void *w, const void *act);
float quant_dot_iq2_s_x86order(int64_t n, const void *w, const void *act);

/* Fills in the vec_dot (and, with AVX2, dot4) entries of the three types'
 * kernel tables (quant.c). */
void quant_iq2_install(enum tensor_type type, struct quant_kernels *k);

#endif
