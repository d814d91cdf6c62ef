/* IQ3_XXS / IQ3_S blocks (see quant_iq3.h): dequantization and dot products
 * against Q8_K activations in the reference's generic and x86 orders, plus
 * the AVX2 kernels that give the x86 order's bits. Per super-block every
 * order's integer sums are exact; they differ in how the floats are added
 * and in the -128 activation under a negative sign (see quant_iq3.h). */
#include "kernels/quant_iq3.h"

#include <string.h>

#include "kernels/matvec_iq.h"
#include "kernels/quant_iq_signs.h"

static inline uint32_t le32(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

/* Byte j (0..3) of a grid entry: the magnitude of weight j of its group. */
static inline int grid_byte(uint32_t g, int j)
{
    return (int)(g >> (8 * j) & 0xFF);
}

/* ---- IQ3_XXS ---- */

/* Sub-block b's (signs, scale) word. */
static inline uint32_t xxs_aux(const block_iq3_xxs *x, int b)
{
    return le32(x->qs + QK_K / 4 + 4 * b);
}

/* Weight e (0..31) of sub-block b: magnitude and whether it is negative. */
static inline int xxs_mag(const block_iq3_xxs *x, int b, int e)
{
    return grid_byte(quant_iq3xxs_grid[x->qs[8 * b + e / 4]], e % 4);
}
static inline int xxs_neg(uint32_t aux, int e)
{
    return quant_ksigns_iq2xs[(aux >> (7 * (e / 8))) & 127] >> (e % 8) & 1;
}

void quant_dequantize_iq3_xxs(const void *src, float *dst, int64_t n)
{
    const block_iq3_xxs *x = src;
    for (int64_t i = 0; i < n / QK_K; i++) {
        const float d = fp16_to_f32(x[i].d);
        for (int b = 0; b < QK_K / 32; b++, dst += 32) {
            const uint32_t aux = xxs_aux(&x[i], b);
            const float db = d * (0.5f + (float)(aux >> 28)) * 0.5f;
            for (int e = 0; e < 32; e++)
                dst[e] = db * (float)xxs_mag(&x[i], b, e) * (xxs_neg(aux, e) ? -1.0f : 1.0f);
        }
    }
}

float quant_dot_iq3_xxs_scalar(int64_t n, const void *w, const void *act)
{
    const block_iq3_xxs *x = w;
    const block_q8_K *y = act;
    float sum = 0.0f;
    for (int64_t i = 0; i < n / QK_K; i++) {
        int32_t bsum = 0;
        for (int b = 0; b < QK_K / 32; b++) {
            const uint32_t aux = xxs_aux(&x[i], b);
            int32_t s = 0;
            for (int e = 0; e < 32; e++)
                s += xxs_mag(&x[i], b, e) * y[i].qs[32 * b + e] * (xxs_neg(aux, e) ? -1 : 1);
            bsum += s * (int32_t)(2 * (aux >> 28) + 1);
        }
        /* the product rounded, then added (the C as written) */
        volatile float p = fp16_to_f32(x[i].d) * y[i].d * (float)bsum;
        sum += p;
    }
    return 0.25f * sum;
}

float quant_dot_iq3_xxs_x86order(int64_t n, const void *w, const void *act)
{
    const block_iq3_xxs *x = w;
    const block_q8_K *y = act;
    float acc[8] = {0};
    for (int64_t i = 0; i < n / QK_K; i++) {
        int32_t lane[8] = {0};
        for (int b = 0; b < QK_K / 32; b++) {
            const uint32_t aux = xxs_aux(&x[i], b);
            const int32_t ls = (int32_t)(2 * (aux >> 28) + 1);
            for (int e = 0; e < 32; e++) {
                const int8_t q = y[i].qs[32 * b + e];
                lane[e / 4] += ls * xxs_mag(&x[i], b, e) * (xxs_neg(aux, e) ? quant_iq_neg_wrap(q) : q);
            }
        }
        const float d = fp16_to_f32(x[i].d) * y[i].d;
        for (int k = 0; k < 8; k++)
            acc[k] = fmaf(d, (float)lane[k], acc[k]);
    }
    return 0.25f * quant_iq_hsum8(acc);
}

/* ---- IQ3_S ---- */

static inline int s_mag(const block_iq3_s *x, int b, int e)
{
    const int g = e / 4;
    const int idx = x->qs[8 * b + g] | (x->qh[b] >> g & 1) << 8;
    return grid_byte(quant_iq3s_grid[idx], e % 4);
}
static inline int s_neg(const block_iq3_s *x, int b, int e)
{
    return x->signs[4 * b + e / 8] >> (e % 8) & 1;
}
static inline int s_scale(const block_iq3_s *x, int b)
{
    return 2 * (x->scales[b / 2] >> (4 * (b % 2)) & 0xF) + 1;
}

void quant_dequantize_iq3_s(const void *src, float *dst, int64_t n)
{
    const block_iq3_s *x = src;
    for (int64_t i = 0; i < n / QK_K; i++) {
        const float d = fp16_to_f32(x[i].d);
        for (int b = 0; b < QK_K / 32; b++, dst += 32) {
            const float db = d * (float)s_scale(&x[i], b);
            for (int e = 0; e < 32; e++)
                dst[e] = db * (float)s_mag(&x[i], b, e) * (s_neg(&x[i], b, e) ? -1.0f : 1.0f);
        }
    }
}

float quant_dot_iq3_s_scalar(int64_t n, const void *w, const void *act)
{
    const block_iq3_s *x = w;
    const block_q8_K *y = act;
    float sum = 0.0f;
    for (int64_t i = 0; i < n / QK_K; i++) {
        int32_t bsum = 0;
        for (int b = 0; b < QK_K / 32; b++) {
            int32_t s = 0;
            for (int e = 0; e < 32; e++)
                s += s_mag(&x[i], b, e) * y[i].qs[32 * b + e] * (s_neg(&x[i], b, e) ? -1 : 1);
            bsum += s * s_scale(&x[i], b);
        }
        volatile float p = fp16_to_f32(x[i].d) * y[i].d * (float)bsum;
        sum += p;
    }
    return sum;
}

float quant_dot_iq3_s_x86order(int64_t n, const void *w, const void *act)
{
    const block_iq3_s *x = w;
    const block_q8_K *y = act;
    float acc[8] = {0};
    for (int64_t i = 0; i < n / QK_K; i++) {
        int32_t lane[8] = {0};
        for (int b = 0; b < QK_K / 32; b++) {
            const int32_t ls = s_scale(&x[i], b);
            for (int e = 0; e < 32; e++) {
                const int8_t q = y[i].qs[32 * b + e];
                lane[e / 4] += ls * s_mag(&x[i], b, e) * (s_neg(&x[i], b, e) ? quant_iq_neg_wrap(q) : q);
            }
        }
        const float d = fp16_to_f32(x[i].d) * y[i].d;
        for (int k = 0; k < 8; k++)
            acc[k] = fmaf(d, (float)lane[k], acc[k]);
    }
    return quant_iq_hsum8(acc);
}

#if defined(QUANT_HAVE_AVX2)
/* Two sub-blocks' lanes (each: 8 x int32 of scale * 4-weight sums), the
 * magnitudes unsigned and the signs already on the activations: maddubs
 * pairs (|pair| <= 2 * 62 * 128, no saturation), then madd by the scale. */
static inline __m256i lanes_scaled(__m256i mag, __m256i q8s, int ls)
{
    return _mm256_madd_epi16(_mm256_maddubs_epi16(mag, q8s), _mm256_set1_epi16((int16_t)ls));
}

/* The 32 activations of a sub-block with the signs applied: (q ^ m) - m for
 * masks m of 0x00 / 0xff bytes, which wraps -(-128) to -128 as sign_epi8. */
static inline __m256i apply_signs(__m256i q8, __m256i m)
{
    return _mm256_sub_epi8(_mm256_xor_si256(q8, m), m);
}

static float dot_iq3_xxs_avx2(int64_t n, const void *w, const void *act)
{
    const block_iq3_xxs *x = w;
    const block_q8_K *y = act;
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / QK_K; i++) {
        const uint8_t *q3 = x[i].qs;
        const int8_t *q8 = y[i].qs;
        __m256i sumi = _mm256_setzero_si256();
/* unrolled whole, as GCC does with the reference kernels */
#pragma GCC unroll 8
        for (int b = 0; b < QK_K / 32; b++, q3 += 8, q8 += 32) {
            const uint32_t aux = xxs_aux(&x[i], b);
            const __m256i mag = _mm256_set_epi32(
                (int)quant_iq3xxs_grid[q3[7]], (int)quant_iq3xxs_grid[q3[6]], (int)quant_iq3xxs_grid[q3[5]],
                (int)quant_iq3xxs_grid[q3[4]], (int)quant_iq3xxs_grid[q3[3]], (int)quant_iq3xxs_grid[q3[2]],
                (int)quant_iq3xxs_grid[q3[1]], (int)quant_iq3xxs_grid[q3[0]]);
            const __m256i sg = _mm256_set_epi64x(
                (long long)quant_ksigns64[aux >> 21 & 127], (long long)quant_ksigns64[aux >> 14 & 127],
                (long long)quant_ksigns64[aux >> 7 & 127], (long long)quant_ksigns64[aux & 127]);
            const __m256i q8s = apply_signs(_mm256_loadu_si256((const __m256i *)q8), sg);
            sumi = _mm256_add_epi32(sumi, lanes_scaled(mag, q8s, (int)(2 * (aux >> 28) + 1)));
        }
        const float d = fp16_to_f32(x[i].d) * y[i].d;
        acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(sumi), acc);
    }
    return 0.25f * hsum_ps(acc);
}

static float dot_iq3_s_avx2(int64_t n, const void *w, const void *act)
{
    const block_iq3_s *x = w;
    const block_q8_K *y = act;
    /* byte e of a sub-block: its signs byte (e / 8) and its bit (e % 8) */
    const __m256i spread = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2,
                                            2, 2, 3, 3, 3, 3, 3, 3, 3, 3);
    const __m256i bit = _mm256_set1_epi64x(0x8040201008040201LL);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / QK_K; i++) {
        const uint8_t *qs = x[i].qs;
        const int8_t *q8 = y[i].qs;
        __m256i sumi = _mm256_setzero_si256();
/* unrolled whole, as GCC does with the reference kernels */
#pragma GCC unroll 8
        for (int b = 0; b < QK_K / 32; b++, qs += 8, q8 += 32) {
            const unsigned h = x[i].qh[b];
            const __m256i mag = _mm256_set_epi32(
                (int)quant_iq3s_grid[qs[7] | (h << 1 & 256)], (int)quant_iq3s_grid[qs[6] | (h << 2 & 256)],
                (int)quant_iq3s_grid[qs[5] | (h << 3 & 256)], (int)quant_iq3s_grid[qs[4] | (h << 4 & 256)],
                (int)quant_iq3s_grid[qs[3] | (h << 5 & 256)], (int)quant_iq3s_grid[qs[2] | (h << 6 & 256)],
                (int)quant_iq3s_grid[qs[1] | (h << 7 & 256)], (int)quant_iq3s_grid[qs[0] | (h << 8 & 256)]);
            const __m256i sb = _mm256_and_si256(
                _mm256_shuffle_epi8(_mm256_set1_epi32((int)le32(x[i].signs + 4 * b)), spread), bit);
            const __m256i q8s =
                apply_signs(_mm256_loadu_si256((const __m256i *)q8), _mm256_cmpeq_epi8(sb, bit));
            sumi = _mm256_add_epi32(sumi, lanes_scaled(mag, q8s, s_scale(&x[i], b)));
        }
        const float d = fp16_to_f32(x[i].d) * y[i].d;
        acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(sumi), acc);
    }
    return hsum_ps(acc);
}

/* One weight row against 4 activations, each with exactly the one-row
 * kernel's arithmetic (the prompt path): a super-block's magnitudes, sign
 * masks and scales are decoded once and used for all four. */
struct iq3_dec {
    __m256i mag[8], sgn[8];
    int ls[8];
};

static inline void dot4_block(const struct iq3_dec *dc, float dw, int64_t i, const void *const act[4],
                              __m256 acc[4])
{
    for (int c = 0; c < 4; c++) {
        const block_q8_K *y = (const block_q8_K *)act[c] + i;
        __m256i sumi = _mm256_setzero_si256();
#pragma GCC unroll 8
        for (int b = 0; b < QK_K / 32; b++) {
            const __m256i q8s =
                apply_signs(_mm256_loadu_si256((const __m256i *)(y->qs + 32 * b)), dc->sgn[b]);
            sumi = _mm256_add_epi32(sumi, lanes_scaled(dc->mag[b], q8s, dc->ls[b]));
        }
        acc[c] = _mm256_fmadd_ps(_mm256_set1_ps(dw * y->d), _mm256_cvtepi32_ps(sumi), acc[c]);
    }
}

static void dot4_iq3_xxs_avx2(int64_t n, const void *w, const void *const act[4], float out[4])
{
    const block_iq3_xxs *x = w;
    __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
    struct iq3_dec dc;
    for (int64_t i = 0; i < n / QK_K; i++) {
        const uint8_t *q3 = x[i].qs;
#pragma GCC unroll 8
        for (int b = 0; b < QK_K / 32; b++, q3 += 8) {
            const uint32_t aux = xxs_aux(&x[i], b);
            dc.mag[b] = _mm256_set_epi32((int)quant_iq3xxs_grid[q3[7]], (int)quant_iq3xxs_grid[q3[6]],
                                         (int)quant_iq3xxs_grid[q3[5]], (int)quant_iq3xxs_grid[q3[4]],
                                         (int)quant_iq3xxs_grid[q3[3]], (int)quant_iq3xxs_grid[q3[2]],
                                         (int)quant_iq3xxs_grid[q3[1]], (int)quant_iq3xxs_grid[q3[0]]);
            dc.sgn[b] = _mm256_set_epi64x(
                (long long)quant_ksigns64[aux >> 21 & 127], (long long)quant_ksigns64[aux >> 14 & 127],
                (long long)quant_ksigns64[aux >> 7 & 127], (long long)quant_ksigns64[aux & 127]);
            dc.ls[b] = (int)(2 * (aux >> 28) + 1);
        }
        dot4_block(&dc, fp16_to_f32(x[i].d), i, act, acc);
    }
    for (int c = 0; c < 4; c++)
        out[c] = 0.25f * hsum_ps(acc[c]);
}

static void dot4_iq3_s_avx2(int64_t n, const void *w, const void *const act[4], float out[4])
{
    const block_iq3_s *x = w;
    const __m256i spread = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2,
                                            2, 2, 3, 3, 3, 3, 3, 3, 3, 3);
    const __m256i bit = _mm256_set1_epi64x(0x8040201008040201LL);
    __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
    struct iq3_dec dc;
    for (int64_t i = 0; i < n / QK_K; i++) {
        const uint8_t *qs = x[i].qs;
#pragma GCC unroll 8
        for (int b = 0; b < QK_K / 32; b++, qs += 8) {
            const unsigned h = x[i].qh[b];
            dc.mag[b] = _mm256_set_epi32(
                (int)quant_iq3s_grid[qs[7] | (h << 1 & 256)], (int)quant_iq3s_grid[qs[6] | (h << 2 & 256)],
                (int)quant_iq3s_grid[qs[5] | (h << 3 & 256)], (int)quant_iq3s_grid[qs[4] | (h << 4 & 256)],
                (int)quant_iq3s_grid[qs[3] | (h << 5 & 256)], (int)quant_iq3s_grid[qs[2] | (h << 6 & 256)],
                (int)quant_iq3s_grid[qs[1] | (h << 7 & 256)], (int)quant_iq3s_grid[qs[0] | (h << 8 & 256)]);
            const __m256i sb = _mm256_and_si256(
                _mm256_shuffle_epi8(_mm256_set1_epi32((int)le32(x[i].signs + 4 * b)), spread), bit);
            dc.sgn[b] = _mm256_cmpeq_epi8(sb, bit);
            dc.ls[b] = s_scale(&x[i], b);
        }
        dot4_block(&dc, fp16_to_f32(x[i].d), i, act, acc);
    }
    for (int c = 0; c < 4; c++)
        out[c] = hsum_ps(acc[c]);
}
#endif

void quant_iq3_install(struct quant_kernels *xxs, struct quant_kernels *s)
{
#if defined(QUANT_HAVE_AVX2)
    xxs->vec_dot = dot_iq3_xxs_avx2;
    s->vec_dot = dot_iq3_s_avx2;
    xxs->dot4 = dot4_iq3_xxs_avx2;
    s->dot4 = dot4_iq3_s_avx2;
#if defined(QUANT_HAVE_MATVEC_IQ512)
    s->matvec = quant_avx512_matvec_iq3_s;
#endif
#else
    xxs->vec_dot = quant_dot_iq3_xxs_x86order;
    s->vec_dot = quant_dot_iq3_s_x86order;
#endif
}
