/* MXFP4 (OCP microscaling FP4, ggml type 39): 32 elements share one E8M0
 * power-of-two scale; each element is a 4-bit E2M1 float. gpt-oss stores its
 * expert matrices in it. Activations are dotted as Q8_0 (as ggml does).
 *
 * ggml keeps the E2M1 values doubled as integers (kvalues_mxfp4: 0, 1, 2, 3,
 * 4, 6, 8, 12 and their negatives; nibble bit 3 is the sign) and halves the
 * scale instead (GGML_E8M0_TO_FP32_HALF: 2^(e - 128)), so that the dot
 * products stay integer per block. Element j of a block is the low nibble of
 * qs[j], element j + 16 the high nibble (like Q4_0). */
#ifndef TOKSCOPE_QUANT_MXFP4_H
#define TOKSCOPE_QUANT_MXFP4_H

#include <stdint.h>
#include <string.h>

#include "kernels/quant_internal.h"

#define QK_MXFP4 32

typedef struct {
    uint8_t e;                /* E8M0 exponent: the scale is 2^(e - 127) */
    uint8_t qs[QK_MXFP4 / 2]; /* element j low nibble of qs[j], j + 16 high */
} block_mxfp4;
_Static_assert(sizeof(block_mxfp4) == 17, "mxfp4 size");

/* The E2M1 values, doubled (ggml's kvalues_mxfp4). */
extern const int8_t quant_kvalues_mxfp4[16];

/* Half the E8M0 scale, 2^(e - 128), exactly as ggml builds it: e 0 and 1 are
 * the subnormals 2^-128 and 2^-127; e = 255, NaN in the spec, gives 2^127
 * (ggml does not special-case it). */
static inline float quant_e8m0_to_fp32_half(uint8_t e)
{
    const uint32_t bits = e < 2 ? 0x00200000u << e : (uint32_t)(e - 1) << 23;
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

/* The offset that makes the doubled E2M1 values (-12..12) unsigned (0..24)
 * for maddubs' u8 operand: the kernels take QUANT_MX_OFF times each token
 * block's byte sum back off the integer sums. */
#define QUANT_MX_OFF 12

#ifdef QUANT_HAVE_AVX2
/* The value table with QUANT_MX_OFF added (0..24). */
static inline __m128i quant_mx_lut_off(void)
{
    return _mm_add_epi8(_mm_loadu_si128((const __m128i *)quant_kvalues_mxfp4), _mm_set1_epi8(QUANT_MX_OFF));
}

/* quant_e8m0_to_fp32_half of the 8 low bytes of e, one per float lane:
 * (e - 1) << 23, or the subnormal 0x00200000 << e for e < 2. */
static inline __m256 quant_e8m0_half8(__m128i e8)
{
    const __m256i e = _mm256_cvtepu8_epi32(e8);
    const __m256i normal = _mm256_slli_epi32(_mm256_sub_epi32(e, _mm256_set1_epi32(1)), 23);
    const __m256i tiny = _mm256_sllv_epi32(_mm256_set1_epi32(0x00200000), e);
    return _mm256_castsi256_ps(_mm256_blendv_epi8(normal, tiny, _mm256_cmpgt_epi32(_mm256_set1_epi32(2), e)));
}
#endif

void quant_dequantize_mxfp4(const void *src, float *dst, int64_t n);
/* ggml's quantize_row_mxfp4_ref (for tests: the files come quantized). */
void quant_quantize_mxfp4(const float *src, void *dst, int64_t n);
/* ggml_vec_dot_mxfp4_q8_0_generic's order: per block an integer sum, times
 * d_act * d_w, added to one float sum. */
float quant_dot_mxfp4_scalar(int64_t n, const void *w, const void *act);
/* The reference's x86 order (its AVX-512 build runs the AVX2 code): blocks
 * alternate between two 8-lane FMA accumulators (lane k: elements 4k..4k+3
 * of the block, low nibbles 0-15 then high 16-31), added and reduced; an odd
 * last block is added as in the scalar loop. Portable C, used by the SIMD
 * kernel's tests and by builds without AVX2 that still want those bits. */
float quant_dot_mxfp4_x86order(int64_t n, const void *w, const void *act);
/* The reference's repacked (8-row interleaved, AVX2 ggml_gemv/gemm_mxfp4_8x8)
 * order, used when a matrix has a multiple of 8 rows: per block the exact
 * integer sum, acc = fma(isum, d_w * d_act, acc), blocks in order. */
float quant_dot_mxfp4_repacked(int64_t n, const void *w, const void *act);

/* Fills in the MXFP4 entry of the kernel table (quant.c). */
void quant_mxfp4_install(struct quant_kernels *k);

#endif
