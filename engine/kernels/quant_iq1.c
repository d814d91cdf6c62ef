/* IQ1_S / IQ1_M blocks (see quant_iq1.h): dequantization and dot products
 * against Q8_K activations in the reference's generic and x86 orders, plus
 * the AVX2 kernels that give the x86 order's bits. */
#include "kernels/quant_iq1.h"

#include <string.h>

#include "kernels/quant_iq3.h" /* quant_iq_hsum8, quant_iq_neg_wrap */

/* Byte j (0..7) of grid entry idx: -1, 0 or +1. */
static inline int grid_val(int idx, int j)
{
    return (int8_t)(quant_iq1s_grid[idx] >> (8 * j) & 0xFF);
}

/* g * q as the x86 code forms it: |g| times q with g's sign applied by
 * sign_epi8 (-(-128) stays -128). */
static inline int mul_sign(int g, int8_t q)
{
    return g == 0 ? 0 : g > 0 ? q : quant_iq_neg_wrap(q);
}

/* ---- IQ1_S ---- */

/* Grid index of group l (0..3) of sub-block b. */
static inline int s_idx(const block_iq1_s *x, int b, int l)
{
    return x->qs[4 * b + l] | ((x->qh[b] >> (3 * l)) & 7) << 8;
}
static inline int s_scale(const block_iq1_s *x, int b)
{
    return 2 * ((x->qh[b] >> 12) & 7) + 1;
}

void quant_dequantize_iq1_s(const void *src, float *dst, int64_t n)
{
    const block_iq1_s *x = src;
    for (int64_t i = 0; i < n / QK_K; i++) {
        const float d = fp16_to_f32(x[i].d);
        for (int b = 0; b < QK_K / 32; b++) {
            const float dl = d * (float)s_scale(&x[i], b);
            const float delta = x[i].qh[b] & 0x8000 ? -QUANT_IQ1_DELTA : QUANT_IQ1_DELTA;
            for (int l = 0; l < 4; l++, dst += 8)
                for (int j = 0; j < 8; j++)
                    dst[j] = dl * ((float)grid_val(s_idx(&x[i], b, l), j) + delta);
        }
    }
}

/* Sub-block b's delta part: scale * delta sign * (sum of its 32 activations). */
static inline int s_delta_sum(const block_iq1_s *x, const block_q8_K *y, int b)
{
    /* the sign by arithmetic: a branch on it mispredicts half the time */
    const int ls = s_scale(x, b) * (1 - (int)(x->qh[b] >> 14 & 2));
    return ls * (y->bsums[2 * b] + y->bsums[2 * b + 1]);
}

float quant_dot_iq1_s_scalar(int64_t n, const void *w, const void *act)
{
    const block_iq1_s *x = w;
    const block_q8_K *y = act;
    float sum = 0.0f;
    for (int64_t i = 0; i < n / QK_K; i++) {
        int sumi = 0, sumi1 = 0;
        for (int b = 0; b < QK_K / 32; b++) {
            int lsum = 0;
            for (int e = 0; e < 32; e++)
                lsum += y[i].qs[32 * b + e] * grid_val(s_idx(&x[i], b, e / 8), e % 8);
            sumi += s_scale(&x[i], b) * lsum;
            sumi1 += s_delta_sum(&x[i], &y[i], b);
        }
        /* `sumf += d_w * d_act * (sumi + 1/8 * sumi1)`: an FMA as the
         * reference's compiler built its generic kernel (vfmadd231ss) */
        sum = fmaf(fp16_to_f32(x[i].d) * y[i].d, (float)sumi + QUANT_IQ1_DELTA * (float)sumi1, sum);
    }
    return sum;
}

float quant_dot_iq1_s_x86order(int64_t n, const void *w, const void *act)
{
    const block_iq1_s *x = w;
    const block_q8_K *y = act;
    float acc[8] = {0}, acc_delta = 0.0f;
    for (int64_t i = 0; i < n / QK_K; i++) {
        int32_t lane[8] = {0};
        int sumi1 = 0;
        for (int b = 0; b < QK_K / 32; b++) {
            const int ls = s_scale(&x[i], b);
            for (int e = 0; e < 32; e++)
                lane[e / 4] += ls * mul_sign(grid_val(s_idx(&x[i], b, e / 8), e % 8), y[i].qs[32 * b + e]);
            sumi1 += s_delta_sum(&x[i], &y[i], b);
        }
        const float d = y[i].d * fp16_to_f32(x[i].d);
        for (int k = 0; k < 8; k++)
            acc[k] = fmaf(d, (float)lane[k], acc[k]);
        /* `accum1 += d * sumi1`: an FMA in the reference's build (its
         * disassembly: vfmadd231ss) */
        acc_delta = fmaf(d, (float)sumi1, acc_delta);
    }
    return quant_iq_hsum8(acc) + QUANT_IQ1_DELTA * acc_delta;
}

/* ---- IQ1_M ---- */

/* The four uint16 scales. */
static inline void m_sc(const block_iq1_m *x, uint16_t sc[4])
{
    memcpy(sc, x->scales, 8);
}

/* Group l (0..3) of sub-block b: its qh nibble (index bits 0..2, delta sign
 * bit 3), its grid index, the scale of its half. */
static inline int m_nib(const block_iq1_m *x, int b, int l)
{
    return x->qh[2 * b + l / 2] >> (4 * (l % 2)) & 15;
}
static inline int m_idx(const block_iq1_m *x, int b, int l)
{
    return x->qs[4 * b + l] | (m_nib(x, b, l) & 7) << 8;
}
static inline int m_scale(const uint16_t sc[4], int b, int half)
{
    return 2 * ((sc[b / 2] >> (6 * (b % 2) + 3 * half)) & 7) + 1;
}

void quant_dequantize_iq1_m(const void *src, float *dst, int64_t n)
{
    const block_iq1_m *x = src;
    for (int64_t i = 0; i < n / QK_K; i++) {
        uint16_t sc[4];
        m_sc(&x[i], sc);
        const float d = fp16_to_f32(quant_iq1m_d(&x[i]));
        for (int b = 0; b < QK_K / 32; b++) {
            const float dl[2] = {d * (float)m_scale(sc, b, 0), d * (float)m_scale(sc, b, 1)};
            for (int l = 0; l < 4; l++, dst += 8) {
                const float delta = m_nib(&x[i], b, l) & 8 ? -QUANT_IQ1_DELTA : QUANT_IQ1_DELTA;
                for (int j = 0; j < 8; j++)
                    dst[j] = dl[l / 2] * ((float)grid_val(m_idx(&x[i], b, l), j) + delta);
            }
        }
    }
}

float quant_dot_iq1_m_scalar(int64_t n, const void *w, const void *act)
{
    const block_iq1_m *x = w;
    const block_q8_K *y = act;
    float sum = 0.0f;
    for (int64_t i = 0; i < n / QK_K; i++) {
        uint16_t sc[4];
        m_sc(&x[i], sc);
        int sumi1 = 0, sumi2 = 0;
        for (int b = 0; b < QK_K / 32; b++)
            for (int half = 0; half < 2; half++) {
                int s1 = 0, s2 = 0;
                for (int e = 16 * half; e < 16 * half + 16; e++) {
                    const int8_t q = y[i].qs[32 * b + e];
                    s1 += q * grid_val(m_idx(&x[i], b, e / 8), e % 8);
                    s2 += m_nib(&x[i], b, e / 8) & 8 ? -q : q;
                }
                sumi1 += s1 * m_scale(sc, b, half);
                sumi2 += s2 * m_scale(sc, b, half);
            }
        sum = fmaf(fp16_to_f32(quant_iq1m_d(&x[i])) * y[i].d, (float)sumi1 + QUANT_IQ1_DELTA * (float)sumi2,
                   sum);
    }
    return sum;
}

float quant_dot_iq1_m_x86order(int64_t n, const void *w, const void *act)
{
    const block_iq1_m *x = w;
    const block_q8_K *y = act;
    float acc1[8] = {0}, acc2[8] = {0};
    for (int64_t i = 0; i < n / QK_K; i++) {
        uint16_t sc[4];
        m_sc(&x[i], sc);
        int32_t lane1[8] = {0}, lane2[8] = {0};
        for (int b = 0; b < QK_K / 32; b++)
            for (int e = 0; e < 32; e++) {
                const int ls = m_scale(sc, b, e / 16);
                const int8_t q = y[i].qs[32 * b + e];
                lane1[e / 4] += ls * mul_sign(grid_val(m_idx(&x[i], b, e / 8), e % 8), q);
                lane2[e / 4] += ls * (m_nib(&x[i], b, e / 8) & 8 ? quant_iq_neg_wrap(q) : q);
            }
        const float d = y[i].d * fp16_to_f32(quant_iq1m_d(&x[i]));
        for (int k = 0; k < 8; k++) {
            acc1[k] = fmaf(d, (float)lane1[k], acc1[k]);
            acc2[k] = fmaf(d, (float)lane2[k], acc2[k]);
        }
    }
    return quant_iq_hsum8(acc1) + QUANT_IQ1_DELTA * quant_iq_hsum8(acc2);
}

#if defined(QUANT_HAVE_AVX2)
/* Lanes of scale * (4-weight sums) for 32 grid bytes g (-1/0/+1) and
 * activations. The reference's maddubs takes |g| times q with g's sign; |g|
 * is 0 only where that signed q is 0 already, so ones give the same pair
 * sums (and neither can saturate) without the sign step, which shares the
 * multiply pipes on a Zen 5. */
static inline __m256i grid_lanes(__m256i g, __m256i q8, __m256i scale)
{
    return _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_set1_epi8(1), _mm256_sign_epi8(q8, g)), scale);
}

/* The four grid entries of one sub-block: qs[0..3] and 4 x 3 high index
 * bits taken from hi at bits 0-2, 3-5, 6-8, 9-11 (IQ1_S) or 0-2, 4-6, 8-10,
 * 12-14 (IQ1_M: hi & 0x7777), spread to 16-bit indices with pdep where the
 * build has BMI2 (as the reference's build does; same indices). */
static inline __m256i grid4(const uint8_t *qs, unsigned hi, int m)
{
#if defined(__BMI2__)
    uint32_t q;
    memcpy(&q, qs, 4);
    const uint64_t p =
        _pdep_u64(q, 0x00ff00ff00ff00ffULL) |
        (m ? _pdep_u64(hi & 0x7777, 0x0f000f000f000f00ULL) : _pdep_u64(hi, 0x0700070007000700ULL));
    return _mm256_set_epi64x(
        (long long)quant_iq1s_grid[p >> 48], (long long)quant_iq1s_grid[p >> 32 & 0xffff],
        (long long)quant_iq1s_grid[p >> 16 & 0xffff], (long long)quant_iq1s_grid[p & 0xffff]);
#else
    const int s1 = m ? 4 : 3, s2 = m ? 8 : 6, s3 = m ? 12 : 9;
    return _mm256_set_epi64x((long long)quant_iq1s_grid[qs[3] | (hi >> s3 & 7) << 8],
                             (long long)quant_iq1s_grid[qs[2] | (hi >> s2 & 7) << 8],
                             (long long)quant_iq1s_grid[qs[1] | (hi >> s1 & 7) << 8],
                             (long long)quant_iq1s_grid[qs[0] | (hi & 7) << 8]);
#endif
}

/* The super-block's delta part, sum over sub-blocks b of (+-)(2 s_b + 1) *
 * (bsums[2b] + bsums[2b + 1]), all 8 at once: the same integer as the
 * reference's scalar sum (|each product| < 2^15 * 15, madd pairs exact). */
static inline int delta_sum_avx2(const block_iq1_s *x, const block_q8_K *y)
{
    const __m128i h = _mm_loadu_si128((const __m128i *)x->qh);
    const __m128i ls =
        _mm_or_si128(_mm_and_si128(_mm_srli_epi16(h, 11), _mm_set1_epi16(14)), _mm_set1_epi16(1));
    const __m128i sg = _mm_srai_epi16(h, 15); /* -1 where the delta is negative */
    const __m128i lss = _mm_sub_epi16(_mm_xor_si128(ls, sg), sg);
    const __m256i ls2 = _mm256_setr_m128i(_mm_unpacklo_epi16(lss, lss), _mm_unpackhi_epi16(lss, lss));
    return hsum_epi32(_mm256_madd_epi16(_mm256_loadu_si256((const __m256i *)y->bsums), ls2));
}

static float dot_iq1_s_avx2(int64_t n, const void *w, const void *act)
{
    const block_iq1_s *x = w;
    const block_q8_K *y = act;
    __m256 acc = _mm256_setzero_ps();
    float acc_delta = 0.0f;
    for (int64_t i = 0; i < n / QK_K; i++) {
        const uint8_t *qs = x[i].qs;
        const int8_t *q8 = y[i].qs;
        __m256i sumi = _mm256_setzero_si256();
/* unrolled whole, as GCC does with the reference kernels */
#pragma GCC unroll 8
        for (int b = 0; b < QK_K / 32; b += 2, qs += 8, q8 += 64) {
            const unsigned h1 = x[i].qh[b], h2 = x[i].qh[b + 1];
            const int ls1 = 2 * (h1 >> 12 & 7) + 1, ls2 = 2 * (h2 >> 12 & 7) + 1;
            const __m256i p1 = grid_lanes(grid4(qs, h1, 0), _mm256_loadu_si256((const __m256i *)q8),
                                          _mm256_set1_epi16((int16_t)ls1));
            const __m256i p2 =
                grid_lanes(grid4(qs + 4, h2, 0), _mm256_loadu_si256((const __m256i *)(q8 + 32)),
                           _mm256_set1_epi16((int16_t)ls2));
            sumi = _mm256_add_epi32(sumi, _mm256_add_epi32(p1, p2));
        }
        const int sumi1 = delta_sum_avx2(&x[i], &y[i]);
        const float d = y[i].d * fp16_to_f32(x[i].d);
        acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(sumi), acc);
        acc_delta = fmaf(d, (float)sumi1, acc_delta);
    }
    return hsum_ps(acc) + QUANT_IQ1_DELTA * acc_delta;
}

/* 32 bytes of the delta signs of two groups' qh bytes h (bit 3: group 0,
 * bit 7: group 1; two bytes = 4 groups of 8 weights): +1, or -1 where set. */
static inline __m256i delta4(unsigned h)
{
#if defined(__BMI2__)
    /* each sign bit to bit 7 of its byte: 0x80 | 1 is negative for sign_epi8 */
    const uint64_t s = _pdep_u64(h & 0x8888, 0xf0f0f0f0ULL);
    return _mm256_or_si256(_mm256_set1_epi8(1), _mm256_cvtepi8_epi64(_mm_cvtsi32_si128((int)s)));
#else
    const long long pos = 0x0101010101010101LL;
    return _mm256_set_epi64x(pos | -(long long)(h >> 15 & 1), pos | -(long long)(h >> 11 & 1),
                             pos | -(long long)(h >> 7 & 1), pos | -(long long)(h >> 3 & 1));
#endif
}

/* The 16 3-bit scales of an IQ1_M super-block as 2 s + 1 in 16-bit lanes:
 * lanes 0-3 sc[k] bits 0-2, 4-7 bits 6-8 (low 128 bits: weights 0..15 of
 * sub-blocks 2k, 2k + 1), 8-11 bits 3-5, 12-15 bits 9-11 (weights 16..31). */
static inline __m256i iq1m_scales_avx2(const block_iq1_m *x)
{
    uint64_t sc64;
    memcpy(&sc64, x->scales, 8);
    const __m256i sh = _mm256_srlv_epi64(_mm256_set1_epi64x((long long)sc64), _mm256_set_epi64x(9, 3, 6, 0));
    return _mm256_add_epi16(_mm256_slli_epi16(_mm256_and_si256(sh, _mm256_set1_epi16(7)), 1),
                            _mm256_set1_epi16(1));
}

static float dot_iq1_m_avx2(int64_t n, const void *w, const void *act)
{
    const block_iq1_m *x = w;
    const block_q8_K *y = act;
    const __m256i ones = _mm256_set1_epi8(1);
    __m256 acc1 = _mm256_setzero_ps(), acc2 = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / QK_K; i++) {
        const __m256i sc = iq1m_scales_avx2(&x[i]);
        const uint8_t *qs = x[i].qs, *qh = x[i].qh;
        const int8_t *q8 = y[i].qs;
        /* byte pairs selecting 16-bit lane k (sub-block 2k) and k + 4 (2k + 1) */
        __m256i sel1 = _mm256_set1_epi16(0x0100), sel2 = _mm256_set1_epi16(0x0908);
        __m256i sumi1 = _mm256_setzero_si256(), sumi2 = _mm256_setzero_si256();
/* unrolled whole, as GCC does with the reference kernels */
#pragma GCC unroll 8
        for (int b = 0; b < QK_K / 32; b += 2, qs += 8, qh += 4, q8 += 64) {
            uint16_t hh[2];
            memcpy(hh, qh, 4);
            const __m256i s1 = _mm256_shuffle_epi8(sc, sel1), s2 = _mm256_shuffle_epi8(sc, sel2);
            sel1 = _mm256_add_epi8(sel1, _mm256_set1_epi8(2));
            sel2 = _mm256_add_epi8(sel2, _mm256_set1_epi8(2));
            const __m256i qa = _mm256_loadu_si256((const __m256i *)q8);
            const __m256i qb = _mm256_loadu_si256((const __m256i *)(q8 + 32));
            sumi1 = _mm256_add_epi32(sumi1, _mm256_add_epi32(grid_lanes(grid4(qs, hh[0], 1), qa, s1),
                                                             grid_lanes(grid4(qs + 4, hh[1], 1), qb, s2)));
            const __m256i da = _mm256_maddubs_epi16(ones, _mm256_sign_epi8(qa, delta4(hh[0])));
            const __m256i db = _mm256_maddubs_epi16(ones, _mm256_sign_epi8(qb, delta4(hh[1])));
            sumi2 = _mm256_add_epi32(sumi2,
                                     _mm256_add_epi32(_mm256_madd_epi16(da, s1), _mm256_madd_epi16(db, s2)));
        }
        const __m256 d = _mm256_set1_ps(y[i].d * fp16_to_f32(quant_iq1m_d(&x[i])));
        acc1 = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(sumi1), acc1);
        acc2 = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(sumi2), acc2);
    }
    return hsum_ps(acc1) + QUANT_IQ1_DELTA * hsum_ps(acc2);
}

/* One weight row against 4 activations, each with exactly the one-row
 * kernel's arithmetic (the prompt path): a super-block's grid bytes, scales
 * (and IQ1_M's delta signs) are decoded once and used for all four. */
static void dot4_iq1_s_avx2(int64_t n, const void *w, const void *const act[4], float out[4])
{
    const block_iq1_s *x = w;
    __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
    float acc_delta[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    __m256i g[8], ls[8];
    for (int64_t i = 0; i < n / QK_K; i++) {
#pragma GCC unroll 8
        for (int b = 0; b < QK_K / 32; b++) {
            const unsigned h = x[i].qh[b];
            g[b] = grid4(x[i].qs + 4 * b, h, 0);
            ls[b] = _mm256_set1_epi16((int16_t)(2 * (h >> 12 & 7) + 1));
        }
        const float dw = fp16_to_f32(x[i].d);
        for (int c = 0; c < 4; c++) {
            const block_q8_K *y = (const block_q8_K *)act[c] + i;
            __m256i sumi = _mm256_setzero_si256();
#pragma GCC unroll 8
            for (int b = 0; b < QK_K / 32; b++)
                sumi = _mm256_add_epi32(
                    sumi, grid_lanes(g[b], _mm256_loadu_si256((const __m256i *)(y->qs + 32 * b)), ls[b]));
            const float d = y->d * dw;
            acc[c] = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(sumi), acc[c]);
            acc_delta[c] = fmaf(d, (float)delta_sum_avx2(&x[i], y), acc_delta[c]);
        }
    }
    for (int c = 0; c < 4; c++)
        out[c] = hsum_ps(acc[c]) + QUANT_IQ1_DELTA * acc_delta[c];
}

static void dot4_iq1_m_avx2(int64_t n, const void *w, const void *const act[4], float out[4])
{
    const block_iq1_m *x = w;
    const __m256i ones = _mm256_set1_epi8(1);
    __m256 acc1[4], acc2[4];
    for (int c = 0; c < 4; c++)
        acc1[c] = acc2[c] = _mm256_setzero_ps();
    __m256i g[8], dl[8], scl[8];
    for (int64_t i = 0; i < n / QK_K; i++) {
        const __m256i sc = iq1m_scales_avx2(&x[i]);
        __m256i sel1 = _mm256_set1_epi16(0x0100), sel2 = _mm256_set1_epi16(0x0908);
#pragma GCC unroll 8
        for (int b = 0; b < QK_K / 32; b += 2) {
            uint16_t hh[2];
            memcpy(hh, x[i].qh + 2 * b, 4);
            g[b] = grid4(x[i].qs + 4 * b, hh[0], 1);
            g[b + 1] = grid4(x[i].qs + 4 * b + 4, hh[1], 1);
            dl[b] = delta4(hh[0]);
            dl[b + 1] = delta4(hh[1]);
            scl[b] = _mm256_shuffle_epi8(sc, sel1);
            scl[b + 1] = _mm256_shuffle_epi8(sc, sel2);
            sel1 = _mm256_add_epi8(sel1, _mm256_set1_epi8(2));
            sel2 = _mm256_add_epi8(sel2, _mm256_set1_epi8(2));
        }
        const float dw = fp16_to_f32(quant_iq1m_d(&x[i]));
        for (int c = 0; c < 4; c++) {
            const block_q8_K *y = (const block_q8_K *)act[c] + i;
            __m256i sumi1 = _mm256_setzero_si256(), sumi2 = _mm256_setzero_si256();
#pragma GCC unroll 8
            for (int b = 0; b < QK_K / 32; b++) {
                const __m256i q = _mm256_loadu_si256((const __m256i *)(y->qs + 32 * b));
                sumi1 = _mm256_add_epi32(sumi1, grid_lanes(g[b], q, scl[b]));
                sumi2 = _mm256_add_epi32(
                    sumi2, _mm256_madd_epi16(_mm256_maddubs_epi16(ones, _mm256_sign_epi8(q, dl[b])), scl[b]));
            }
            const __m256 d = _mm256_set1_ps(y->d * dw);
            acc1[c] = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(sumi1), acc1[c]);
            acc2[c] = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(sumi2), acc2[c]);
        }
    }
    for (int c = 0; c < 4; c++)
        out[c] = hsum_ps(acc1[c]) + QUANT_IQ1_DELTA * hsum_ps(acc2[c]);
}
#endif

#if defined(QUANT_HAVE_AVX2)
/* IQ1_M against one activation for many rows (generation): the delta part
 * of every row is a sum over 4-weight groups of the activation, signed by
 * the group's delta bit and scaled, so the 4-element sums of the activation
 * (and their negations as the reference computes them: sign_epi8 leaves a
 * -128 at -128, so a negated group sum is -sum - 256 * (count of -128)) are
 * made once per call. Per row and pair of sub-blocks the delta part is then a
 * blend and one madd whose 32-bit lanes hold exactly the reference's
 * p3 + p4 lanes (lane k: sub-block 1's group k times its scale plus
 * sub-block 2's), so sumi2, and with it every float, is the same. */
#define IQ1M_MV_MAX_SB 256
static void matvec_iq1_m_avx2(int64_t n, const void *w, size_t rs, int64_t rows, const void *act, float *out)
{
    const int64_t nb = n / QK_K;
    if (nb > IQ1M_MV_MAX_SB) {
        for (int64_t r = 0; r < rows; r++)
            out[r] = dot_iq1_m_avx2(n, (const char *)w + (size_t)r * rs, act);
        return;
    }
    const block_q8_K *y = act;
    const __m256i ones8 = _mm256_set1_epi8(1), ones16 = _mm256_set1_epi16(1), m16 = _mm256_set1_epi32(0xffff);
    __m256i pre[2 * 4 * IQ1M_MV_MAX_SB]; /* per super-block and sub-block pair: sums, negated sums */
    for (int64_t i = 0; i < nb; i++)
        for (int p = 0; p < 4; p++) {
            __m256i sum[2], alt[2];
            for (int h = 0; h < 2; h++) {
                const __m256i q = _mm256_loadu_si256((const __m256i *)(y[i].qs + 64 * p + 32 * h));
                sum[h] = _mm256_madd_epi16(_mm256_maddubs_epi16(ones8, q), ones16);
                const __m256i negcnt = _mm256_madd_epi16(
                    _mm256_maddubs_epi16(ones8, _mm256_cmpeq_epi8(q, _mm256_set1_epi8(-128))), ones16);
                alt[h] = _mm256_add_epi32(_mm256_sub_epi32(_mm256_setzero_si256(), sum[h]),
                                          _mm256_slli_epi32(negcnt, 8));
            }
            pre[8 * i + 2 * p] =
                _mm256_or_si256(_mm256_and_si256(sum[0], m16), _mm256_slli_epi32(sum[1], 16));
            pre[8 * i + 2 * p + 1] =
                _mm256_or_si256(_mm256_and_si256(alt[0], m16), _mm256_slli_epi32(alt[1], 16));
        }
    /* 16-bit lanes 2k / 2k + 1: sub-block 1 / 2 of the pair, group k / 2 */
    const __m256i bits = _mm256_setr_epi16(8, 8, 8, 8, 128, 128, 128, 128, 2048, 2048, 2048, 2048, -32768,
                                           -32768, -32768, -32768);
    for (int64_t r = 0; r < rows; r++) {
        const block_iq1_m *x = (const block_iq1_m *)((const char *)w + (size_t)r * rs);
        __m256 acc1 = _mm256_setzero_ps(), acc2 = _mm256_setzero_ps();
        for (int64_t i = 0; i < nb; i++) {
            const __m256i sc = iq1m_scales_avx2(&x[i]);
            const uint8_t *qs = x[i].qs, *qh = x[i].qh;
            const int8_t *q8 = y[i].qs;
            __m256i sel1 = _mm256_set1_epi16(0x0100), sel2 = _mm256_set1_epi16(0x0908);
            __m256i sumi1 = _mm256_setzero_si256(), sumi2 = _mm256_setzero_si256();
#pragma GCC unroll 4
            for (int p = 0; p < 4; p++, qs += 8, qh += 4, q8 += 64) {
                uint16_t hh[2];
                uint32_t h32;
                memcpy(hh, qh, 4);
                memcpy(&h32, qh, 4);
                const __m256i s1 = _mm256_shuffle_epi8(sc, sel1), s2 = _mm256_shuffle_epi8(sc, sel2);
                sel1 = _mm256_add_epi8(sel1, _mm256_set1_epi8(2));
                sel2 = _mm256_add_epi8(sel2, _mm256_set1_epi8(2));
                const __m256i qa = _mm256_loadu_si256((const __m256i *)q8);
                const __m256i qb = _mm256_loadu_si256((const __m256i *)(q8 + 32));
                sumi1 =
                    _mm256_add_epi32(sumi1, _mm256_add_epi32(grid_lanes(grid4(qs, hh[0], 1), qa, s1),
                                                             grid_lanes(grid4(qs + 4, hh[1], 1), qb, s2)));
                /* even 16-bit lanes: qh[0..1] (sub-block 1), odd: qh[2..3] */
                const __m256i neg =
                    _mm256_cmpeq_epi16(_mm256_and_si256(_mm256_set1_epi32((int)h32), bits), bits);
                const __m256i v = _mm256_blendv_epi8(pre[8 * i + 2 * p], pre[8 * i + 2 * p + 1], neg);
                sumi2 = _mm256_add_epi32(sumi2, _mm256_madd_epi16(v, _mm256_blend_epi16(s1, s2, 0xAA)));
            }
            const __m256 d = _mm256_set1_ps(y[i].d * fp16_to_f32(quant_iq1m_d(&x[i])));
            acc1 = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(sumi1), acc1);
            acc2 = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(sumi2), acc2);
        }
        out[r] = hsum_ps(acc1) + QUANT_IQ1_DELTA * hsum_ps(acc2);
    }
}
#endif

void quant_iq1_install(struct quant_kernels *s, struct quant_kernels *m)
{
#if defined(QUANT_HAVE_AVX2)
    s->vec_dot = dot_iq1_s_avx2;
    m->vec_dot = dot_iq1_m_avx2;
    s->dot4 = dot4_iq1_s_avx2;
    m->dot4 = dot4_iq1_m_avx2;
    m->matvec = matvec_iq1_m_avx2;
#else
    s->vec_dot = quant_dot_iq1_s_x86order;
    m->vec_dot = quant_dot_iq1_m_x86order;
#endif
}
