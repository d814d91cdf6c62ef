/* Ternary block types (ggml types 34 and 35): 256 weights per block, each
 * -1, 0 or +1, times one fp16 scale. Activations are dotted as Q8_K, as
 * ggml does.
 *
 * TQ2_0 stores each trit as 2 bits (0, 1, 2 meaning -1, 0, +1): element
 * 128 * h + 32 * l + m is bits 2l..2l+1 of qs[32 * h + m].
 *
 * TQ1_0 packs 5 trits per byte as a fixed-point fraction of 3^5 = 243: a
 * byte b holds trits t0..t4 (t0 most significant) as
 * b = ceil((t0 * 81 + t1 * 27 + t2 * 9 + t3 * 3 + t4) * 256 / 243), and trit
 * n comes back as the top "digit" of (b * 3^n mod 256) * 3, i.e.
 * ((uint8_t)(b * 3^n) * 3) >> 8. Elements 0..159: trit n of qs[m] (m < 32)
 * is element 32 * n + m; 160..239: trit n of qs[32 + m] (m < 16) is element
 * 160 + 16 * n + m; 240..255: trit n (n < 4) of qh[j] is 240 + 4 * n + j. */
#ifndef TOKSCOPE_QUANT_TQ_H
#define TOKSCOPE_QUANT_TQ_H

#include <stdint.h>

#include "kernels/quant_internal.h"

typedef struct {
    uint8_t qs[48]; /* 5 trits per byte */
    uint8_t qh[4];  /* 4 trits per byte */
    uint16_t d;     /* fp16 scale */
} block_tq1_0;
_Static_assert(sizeof(block_tq1_0) == 54, "tq1_0 size");

typedef struct {
    uint8_t qs[QK_K / 4]; /* 2 bits per trit */
    uint16_t d;
} block_tq2_0;
_Static_assert(sizeof(block_tq2_0) == 66, "tq2_0 size");

/* Trit n (0..4) of a TQ1_0 byte as 0, 1 or 2 (ggml's ((uint16_t)q * 3) >> 8). */
static inline int quant_tq1_trit(uint8_t b, int n)
{
    static const uint8_t pow3[5] = {1, 3, 9, 27, 81};
    const uint8_t q = (uint8_t)(b * pow3[n]);
    return ((uint16_t)q * 3) >> 8;
}

/* Every element's trit (0, 1, 2) of one block, in element order. */
void quant_tq1_0_trits(const block_tq1_0 *x, uint8_t t[QK_K]);
void quant_tq2_0_trits(const block_tq2_0 *x, uint8_t t[QK_K]);

void quant_dequantize_tq1_0(const void *src, float *dst, int64_t n);
void quant_dequantize_tq2_0(const void *src, float *dst, int64_t n);
/* ggml's quantize_row_tq{1,2}_0_ref (tests; the files come quantized). */
void quant_quantize_tq1_0(const float *src, void *dst, int64_t n);
void quant_quantize_tq2_0(const float *src, void *dst, int64_t n);

/* The reference's generic C order: per block the exact integer sum, then
 * sumf += (float)sum * (d_w * d_act). */
float quant_dot_tq1_0_scalar(int64_t n, const void *w, const void *act);
float quant_dot_tq2_0_scalar(int64_t n, const void *w, const void *act);
/* The reference's x86 (AVX2) order, which its AVX-512 build runs too: per
 * block, 8 int32 lanes (lane L: the trit * act products of the elements e
 * with e % 32 in 4L..4L+3, minus the Q8_K bsums of elements 32L..32L+31),
 * each FMA'd as float times d_act * d_w into an 8-lane float accumulator;
 * hsum at the end. Portable C: the tests' model of the AVX2 kernels and the
 * kernel of builds without AVX2 (the same bits on every CPU). */
float quant_dot_tq1_0_x86order(int64_t n, const void *w, const void *act);
float quant_dot_tq2_0_x86order(int64_t n, const void *w, const void *act);

/* Fills in the TQ1_0 / TQ2_0 entries' fastest vec_dot (quant.c). */
void quant_tq_install(struct quant_kernels *tq1, struct quant_kernels *tq2);

#endif
