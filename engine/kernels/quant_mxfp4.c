/* MXFP4 blocks (see quant_mxfp4.h): dequantization, the reference
 * quantizer, and dot products against Q8_0 activations in the three float
 * orders the reference uses (generic C, x86 vec_dot, repacked 8x8). Each
 * block's integer sum is exact (|value| <= 12, |act| <= 128, 32 terms), so
 * the orders differ only in how the per-block floats are added up. */
#include "kernels/quant_mxfp4.h"

#include <math.h>

const int8_t quant_kvalues_mxfp4[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

void quant_dequantize_mxfp4(const void *src, float *dst, int64_t n)
{
    const block_mxfp4 *x = src;
    for (int64_t i = 0; i < n / QK_MXFP4; i++, dst += QK_MXFP4) {
        const float d = quant_e8m0_to_fp32_half(x[i].e);
        for (int j = 0; j < QK_MXFP4 / 2; j++) {
            dst[j] = (float)quant_kvalues_mxfp4[x[i].qs[j] & 0x0F] * d;
            dst[j + QK_MXFP4 / 2] = (float)quant_kvalues_mxfp4[x[i].qs[j] >> 4] * d;
        }
    }
}

/* The nearest value (first of equals) of the 16, scaled by d. */
static int best_index(float x, float d)
{
    int best = 0;
    float best_err = fabsf((float)quant_kvalues_mxfp4[0] * d - x);
    for (int i = 1; i < 16; i++) {
        const float err = fabsf((float)quant_kvalues_mxfp4[i] * d - x);
        if (err < best_err) {
            best = i;
            best_err = err;
        }
    }
    return best;
}

void quant_quantize_mxfp4(const float *src, void *dst, int64_t n)
{
    block_mxfp4 *y = dst;
    for (int64_t i = 0; i < n / QK_MXFP4; i++, src += QK_MXFP4) {
        float amax = 0.0f;
        for (int j = 0; j < QK_MXFP4; j++)
            if (amax < fabsf(src[j]))
                amax = fabsf(src[j]);
        /* the largest value lands in 4..8 (doubled: 8..16, so 8 or 12) */
        const uint8_t e = amax > 0.0f ? (uint8_t)(int)(floorf(log2f(amax)) - 2 + 127) : 0;
        const float d = quant_e8m0_to_fp32_half(e);
        y[i].e = e;
        for (int j = 0; j < QK_MXFP4 / 2; j++)
            y[i].qs[j] = (uint8_t)(best_index(src[j], d) | best_index(src[j + QK_MXFP4 / 2], d) << 4);
    }
}

/* Block i's integer sum with the Q8_0 activation block. */
static inline int isum_block(const block_mxfp4 *x, const block_q8_0 *y)
{
    int s1 = 0, s2 = 0;
    for (int j = 0; j < QK_MXFP4 / 2; j++) {
        s1 += y->qs[j] * quant_kvalues_mxfp4[x->qs[j] & 0x0F];
        s2 += y->qs[j + QK_MXFP4 / 2] * quant_kvalues_mxfp4[x->qs[j] >> 4];
    }
    return s1 + s2;
}

/* d_act * d_w, in the reference's operand order (the product is the same
 * either way; written as it reads). */
static inline float block_scale(const block_mxfp4 *x, const block_q8_0 *y)
{
    return fp16_to_f32(y->d) * quant_e8m0_to_fp32_half(x->e);
}

float quant_dot_mxfp4_scalar(int64_t n, const void *w, const void *act)
{
    const block_mxfp4 *x = w;
    const block_q8_0 *y = act;
    float sum = 0.0f;
    for (int64_t i = 0; i < n / QK_MXFP4; i++) {
        /* the product rounded, then added: the C as written, whatever the
         * compiler would contract */
        volatile float p = block_scale(&x[i], &y[i]) * (float)isum_block(&x[i], &y[i]);
        sum += p;
    }
    return sum;
}

float quant_dot_mxfp4_x86order(int64_t n, const void *w, const void *act)
{
    const block_mxfp4 *x = w;
    const block_q8_0 *y = act;
    const int64_t nb = n / QK_MXFP4;
    float acc[2][8] = {{0}};
    int64_t i = 0;
    for (; i + 1 < nb; i += 2)
        for (int a = 0; a < 2; a++) {
            const block_mxfp4 *b = &x[i + a];
            const block_q8_0 *q = &y[i + a];
            const float d = block_scale(b, q);
            for (int k = 0; k < 8; k++) {
                int lane = 0;
                for (int e = 4 * k; e < 4 * k + 4; e++) {
                    const int v = e < 16 ? quant_kvalues_mxfp4[b->qs[e] & 0x0F] : quant_kvalues_mxfp4[b->qs[e - 16] >> 4];
                    lane += v * q->qs[e];
                }
                acc[a][k] = fmaf(d, (float)lane, acc[a][k]);
            }
        }
    /* hsum_float_8(accum1 + accum2) */
    float t[8], r[4];
    for (int k = 0; k < 8; k++)
        t[k] = acc[0][k] + acc[1][k];
    for (int k = 0; k < 4; k++)
        r[k] = t[k + 4] + t[k];
    float sum = (r[0] + r[2]) + (r[1] + r[3]);
    /* the odd last block: `sumf += d * (sumi1 + sumi2)`, which GCC contracts
     * to an FMA in the reference's -march build */
    for (; i < nb; i++)
        sum = fmaf(block_scale(&x[i], &y[i]), (float)isum_block(&x[i], &y[i]), sum);
    return sum;
}

#if defined(QUANT_HAVE_AVX2)
/* The 32 signed values of a block: low nibbles then high nibbles, through
 * the value table (pshufb), as the reference's kernel does. */
static inline __m256i mxfp4_values(const block_mxfp4 *x)
{
    const __m128i lut = _mm_loadu_si128((const __m128i *)quant_kvalues_mxfp4);
    const __m128i m4 = _mm_set1_epi8(0x0F);
    const __m128i q = _mm_loadu_si128((const __m128i *)x->qs);
    const __m128i lo = _mm_shuffle_epi8(lut, _mm_and_si128(q, m4));
    const __m128i hi = _mm_shuffle_epi8(lut, _mm_and_si128(_mm_srli_epi16(q, 4), m4));
    return _mm256_inserti128_si256(_mm256_castsi128_si256(lo), hi, 1);
}

/* 8 lanes of 4-element integer sums (dot_s8: |values| <= 12, exact). */
static inline __m256 mxfp4_lanes(const block_mxfp4 *x, const block_q8_0 *y)
{
    return _mm256_cvtepi32_ps(dot_s8(mxfp4_values(x), _mm256_loadu_si256((const __m256i *)y->qs)));
}

/* The block's integer sum, all 32 products at once (exact). */
static inline int isum_block_avx2(const block_mxfp4 *x, const block_q8_0 *y)
{
    return hsum_epi32(dot_s8(mxfp4_values(x), _mm256_loadu_si256((const __m256i *)y->qs)));
}

static float dot_mxfp4_avx2(int64_t n, const void *w, const void *act)
{
    const block_mxfp4 *x = w;
    const block_q8_0 *y = act;
    const int64_t nb = n / QK_MXFP4;
    __m256 acc1 = _mm256_setzero_ps(), acc2 = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 1 < nb; i += 2) {
        acc1 = _mm256_fmadd_ps(_mm256_set1_ps(block_scale(&x[i], &y[i])), mxfp4_lanes(&x[i], &y[i]), acc1);
        acc2 = _mm256_fmadd_ps(_mm256_set1_ps(block_scale(&x[i + 1], &y[i + 1])), mxfp4_lanes(&x[i + 1], &y[i + 1]),
                               acc2);
    }
    float sum = hsum_ps(_mm256_add_ps(acc1, acc2));
    for (; i < nb; i++)
        sum = fmaf(block_scale(&x[i], &y[i]), (float)isum_block(&x[i], &y[i]), sum);
    return sum;
}
#endif

float quant_dot_mxfp4_repacked(int64_t n, const void *w, const void *act)
{
    const block_mxfp4 *x = w;
    const block_q8_0 *y = act;
    float acc = 0.0f;
    for (int64_t i = 0; i < n / QK_MXFP4; i++) {
#if defined(QUANT_HAVE_AVX2)
        const int s = isum_block_avx2(&x[i], &y[i]);
#else
        const int s = isum_block(&x[i], &y[i]);
#endif
        acc = fmaf((float)s, quant_e8m0_to_fp32_half(x[i].e) * fp16_to_f32(y[i].d), acc);
    }
    return acc;
}

void quant_mxfp4_install(struct quant_kernels *k)
{
#if defined(QUANT_HAVE_AVX2)
    k->vec_dot = dot_mxfp4_avx2;
#else
    /* a portable build gives the reference machine's bits too */
    k->vec_dot = quant_dot_mxfp4_x86order;
#endif
}
