/* SIMD kernels (AVX2 + FMA + F16C, with AVX-512 VNNI / AVX-VNNI dot
 * instructions where present), selected at compile time. Each computes the
 * same integer sums as its scalar twin in quant_fp.c / quant_legacy.c /
 * quant_k.c; only the order of the float summation differs. Activation
 * quantizers are bit-identical to the scalar ones. Without AVX2 (NATIVE=0)
 * nothing is installed and the scalar kernels run. */
#include "quant_internal.h"

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#include <immintrin.h>

#define QUANT_HAVE_AVX2 1

/* ---- helpers ---- */

static inline float hsum_ps(__m256 v)
{
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

static inline int hsum_epi32(__m256i v)
{
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_unpackhi_epi64(s, s));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(2, 3, 0, 1)));
    return _mm_cvtsi128_si32(s);
}

/* acc + sums of 4 adjacent u8*s8 products. The maddubs fallback saturates at
 * 16 bits; every caller keeps pair sums below 2^15 (|u| <= 128, |s| <= 127). */
static inline __m256i dpbusd(__m256i acc, __m256i u, __m256i s)
{
#if defined(__AVX512VNNI__) && defined(__AVX512VL__)
    return _mm256_dpbusd_epi32(acc, u, s);
#elif defined(__AVXVNNI__)
    return _mm256_dpbusd_avx_epi32(acc, u, s);
#else
    return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1)));
#endif
}

/* 8 partial sums of x*y for signed bytes x, y (|x| <= 128, |y| <= 127). */
static inline __m256i dot_s8(__m256i x, __m256i y)
{
    return dpbusd(_mm256_setzero_si256(), _mm256_sign_epi8(x, x), _mm256_sign_epi8(y, x));
}

/* 32 nibbles of 16 bytes: low nibbles to bytes 0-15, high nibbles to 16-31. */
static inline __m256i nibbles32(const uint8_t *p)
{
    __m128i t = _mm_loadu_si128((const __m128i *)p);
    __m256i b = _mm256_inserti128_si256(_mm256_castsi128_si256(t), _mm_srli_epi16(t, 4), 1);
    return _mm256_and_si256(b, _mm256_set1_epi8(0x0F));
}

/* 32 bits to 32 bytes: 0xFF where the bit is set. */
static inline __m256i bits32(const uint8_t *p)
{
    uint32_t x;
    memcpy(&x, p, 4);
    const __m256i shuf = _mm256_set_epi64x(0x0303030303030303, 0x0202020202020202, 0x0101010101010101, 0);
    __m256i b = _mm256_shuffle_epi8(_mm256_set1_epi32((int)x), shuf);
    b = _mm256_or_si256(b, _mm256_set1_epi64x(0x7fbfdfeff7fbfdfe));
    return _mm256_cmpeq_epi8(b, _mm256_set1_epi64x(-1));
}

/* ---- F32 / F16 / BF16 ---- */

static float dot_f32_avx2(int64_t n, const void *w, const void *act)
{
    const float *x = w, *y = act;
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    int64_t i = 0;
    for (; i + 32 <= n; i += 32) {
        a0 = _mm256_fmadd_ps(_mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i), a0);
        a1 = _mm256_fmadd_ps(_mm256_loadu_ps(x + i + 8), _mm256_loadu_ps(y + i + 8), a1);
        a2 = _mm256_fmadd_ps(_mm256_loadu_ps(x + i + 16), _mm256_loadu_ps(y + i + 16), a2);
        a3 = _mm256_fmadd_ps(_mm256_loadu_ps(x + i + 24), _mm256_loadu_ps(y + i + 24), a3);
    }
    for (; i + 8 <= n; i += 8)
        a0 = _mm256_fmadd_ps(_mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i), a0);
    float sum = hsum_ps(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)));
    for (; i < n; i++)
        sum += x[i] * y[i];
    return sum;
}

static inline __m256 load_f16(const uint16_t *p)
{
    return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p));
}

static float dot_f16_avx2(int64_t n, const void *w, const void *act)
{
    const uint16_t *x = w, *y = act;
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    int64_t i = 0;
    for (; i + 32 <= n; i += 32) {
        a0 = _mm256_fmadd_ps(load_f16(x + i), load_f16(y + i), a0);
        a1 = _mm256_fmadd_ps(load_f16(x + i + 8), load_f16(y + i + 8), a1);
        a2 = _mm256_fmadd_ps(load_f16(x + i + 16), load_f16(y + i + 16), a2);
        a3 = _mm256_fmadd_ps(load_f16(x + i + 24), load_f16(y + i + 24), a3);
    }
    for (; i + 8 <= n; i += 8)
        a0 = _mm256_fmadd_ps(load_f16(x + i), load_f16(y + i), a0);
    float sum = hsum_ps(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)));
    for (; i < n; i++)
        sum += fp16_to_f32(x[i]) * fp16_to_f32(y[i]);
    return sum;
}

static void dequantize_f16_avx2(const void *src, float *dst, int64_t n)
{
    const uint16_t *x = src;
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(dst + i, load_f16(x + i));
    for (; i < n; i++)
        dst[i] = fp16_to_f32(x[i]);
}

static void quantize_f16_avx2(const float *src, void *dst, int64_t n)
{
    uint16_t *y = dst;
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm_storeu_si128((__m128i *)(y + i), _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT));
    for (; i < n; i++)
        y[i] = f32_to_fp16(src[i]);
}

static inline __m256 load_bf16(const uint16_t *p)
{
    __m256i v = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)p));
    return _mm256_castsi256_ps(_mm256_slli_epi32(v, 16));
}

#if !(defined(__AVX512BF16__) && defined(__AVX512F__))
static float dot_bf16_avx2(int64_t n, const void *w, const void *act)
{
    const uint16_t *x = w, *y = act;
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    int64_t i = 0;
    for (; i + 32 <= n; i += 32) {
        a0 = _mm256_fmadd_ps(load_bf16(x + i), load_bf16(y + i), a0);
        a1 = _mm256_fmadd_ps(load_bf16(x + i + 8), load_bf16(y + i + 8), a1);
        a2 = _mm256_fmadd_ps(load_bf16(x + i + 16), load_bf16(y + i + 16), a2);
        a3 = _mm256_fmadd_ps(load_bf16(x + i + 24), load_bf16(y + i + 24), a3);
    }
    for (; i + 8 <= n; i += 8)
        a0 = _mm256_fmadd_ps(load_bf16(x + i), load_bf16(y + i), a0);
    float sum = hsum_ps(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)));
    for (; i < n; i++)
        sum += bf16_to_f32(x[i]) * bf16_to_f32(y[i]);
    return sum;
}
#endif

#if defined(__AVX512BF16__) && defined(__AVX512F__)
/* With AVX512-BF16 the reference multiplies BF16 rows with vdpbf16ps, two
 * 32-pair accumulators over 64 elements, each reduced with
 * _mm512_reduce_add_ps into a double, leftovers added in double. The same
 * instructions give the same bits (the instruction's own rounding rules
 * included). */
static float dot_bf16_avx512bf16(int64_t n, const void *w, const void *act)
{
    const uint16_t *x = w, *y = act;
    int64_t i = 0;
    double sumf = 0;
    __m512 c1 = _mm512_setzero_ps(), c2 = _mm512_setzero_ps();
    for (; i + 64 <= n; i += 64) {
        c1 = _mm512_dpbf16_ps(c1, (__m512bh)_mm512_loadu_si512(x + i), (__m512bh)_mm512_loadu_si512(y + i));
        c2 = _mm512_dpbf16_ps(c2, (__m512bh)_mm512_loadu_si512(x + i + 32), (__m512bh)_mm512_loadu_si512(y + i + 32));
    }
    sumf += (double)_mm512_reduce_add_ps(c1);
    sumf += (double)_mm512_reduce_add_ps(c2);
    for (; i < n; i++)
        sumf += (double)(bf16_to_f32(x[i]) * bf16_to_f32(y[i]));
    return (float)sumf;
}
#endif

static void dequantize_bf16_avx2(const void *src, float *dst, int64_t n)
{
    const uint16_t *x = src;
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(dst + i, load_bf16(x + i));
    for (; i < n; i++)
        dst[i] = bf16_to_f32(x[i]);
}

/* ---- Q8_0 / Q8_1 activations ---- */

/* 32 floats times id, rounded half to even, packed to bytes in order. */
static inline __m256i round_pack32(const float *x, __m256 mul)
{
    __m256i i0 = _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(_mm256_loadu_ps(x), mul), _MM_FROUND_TO_NEAREST_INT));
    __m256i i1 = _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(_mm256_loadu_ps(x + 8), mul), _MM_FROUND_TO_NEAREST_INT));
    __m256i i2 = _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(_mm256_loadu_ps(x + 16), mul), _MM_FROUND_TO_NEAREST_INT));
    __m256i i3 = _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(_mm256_loadu_ps(x + 24), mul), _MM_FROUND_TO_NEAREST_INT));
    i0 = _mm256_packs_epi32(i0, i1);
    i2 = _mm256_packs_epi32(i2, i3);
    i0 = _mm256_packs_epi16(i0, i2);
    /* the packs work per 128-bit lane; restore element order */
    return _mm256_permutevar8x32_epi32(i0, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

static inline float absmax32(const float *x)
{
    const __m256 sign = _mm256_set1_ps(-0.0f);
    __m256 m = _mm256_andnot_ps(sign, _mm256_loadu_ps(x));
    m = _mm256_max_ps(m, _mm256_andnot_ps(sign, _mm256_loadu_ps(x + 8)));
    m = _mm256_max_ps(m, _mm256_andnot_ps(sign, _mm256_loadu_ps(x + 16)));
    m = _mm256_max_ps(m, _mm256_andnot_ps(sign, _mm256_loadu_ps(x + 24)));
    __m128 s = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
    s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    s = _mm_max_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

static void quantize_q8_0_avx2(const float *src, void *dst, int64_t n)
{
    block_q8_0 *y = dst;
    for (int64_t i = 0; i < n / QK8_0; i++, src += QK8_0) {
        float amax = absmax32(src);
        float d = amax / 127.f;
        float id = amax != 0.0f ? 127.f / amax : 0.0f;
        y[i].d = f32_to_fp16(d);
        _mm256_storeu_si256((__m256i *)y[i].qs, round_pack32(src, _mm256_set1_ps(id)));
    }
}

static void quantize_q8_1_avx2(const float *src, void *dst, int64_t n)
{
    block_q8_1 *y = dst;
    for (int64_t i = 0; i < n / QK8_1; i++, src += QK8_1) {
        float amax = absmax32(src);
        float d = amax / 127.f;
        float id = amax != 0.0f ? 127.f / amax : 0.0f;
        y[i].d = f32_to_fp16(d);
        __m256i q = round_pack32(src, _mm256_set1_ps(id));
        _mm256_storeu_si256((__m256i *)y[i].qs, q);
        int sum = hsum_epi32(_mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_set1_epi8(1), q), _mm256_set1_epi16(1)));
        y[i].s = f32_to_fp16(d * (float)sum);
    }
}

/* ---- Q8_K activations (ggml's quantize_row_q8_K_ref, vectorized) ---- */

static void quantize_q8_K_avx2(const float *src, void *dst, int64_t n)
{
    block_q8_K *y = dst;
    for (int64_t i = 0; i < n / QK_K; i++, src += QK_K) {
        float amax = 0;
        for (int j = 0; j < QK_K; j += 32)
            amax = fmaxf(amax, absmax32(src + j));
        if (amax == 0) {
            memset(&y[i], 0, sizeof y[i]);
            continue;
        }
        /* the first element of largest magnitude gives the sign */
        float max = 0;
        for (int j = 0; j < QK_K; j++)
            if (fabsf(src[j]) == amax) {
                max = src[j];
                break;
            }
        const float iscale = -127.f / max;
        const __m256 mul = _mm256_set1_ps(iscale);
        for (int j = 0; j < QK_K; j += 32) {
            /* v = iscale * x can be +128 (x = -max); ggml clamps to 127 */
            __m256i q = round_pack32(src + j, mul);
            q = _mm256_min_epi8(q, _mm256_set1_epi8(127));
            _mm256_storeu_si256((__m256i *)(y[i].qs + j), q);
            __m256i s16 = _mm256_maddubs_epi16(_mm256_set1_epi8(1), q); /* pairs */
            /* sums of 16: horizontal adds of adjacent pairs within each 16 */
            __m256i s32 = _mm256_madd_epi16(s16, _mm256_set1_epi16(1)); /* 8 sums of 4 */
            __m256i h = _mm256_hadd_epi32(s32, s32);                    /* sums of 8 */
            h = _mm256_hadd_epi32(h, h);                                /* sums of 16 */
            y[i].bsums[j / 16] = (int16_t)_mm256_extract_epi32(h, 0);
            y[i].bsums[j / 16 + 1] = (int16_t)_mm256_extract_epi32(h, 4);
        }
        y[i].d = 1 / iscale;
    }
}

/* ---- legacy blocks against Q8_0 / Q8_1 ---- */

static float dot_q8_0_avx2(int64_t n, const void *w, const void *act)
{
    const block_q8_0 *x = w, *y = act;
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / QK8_0; i++) {
        __m256i p = dot_s8(_mm256_loadu_si256((const __m256i *)x[i].qs), _mm256_loadu_si256((const __m256i *)y[i].qs));
        acc = _mm256_fmadd_ps(_mm256_set1_ps(fp16_to_f32(x[i].d) * fp16_to_f32(y[i].d)), _mm256_cvtepi32_ps(p), acc);
    }
    return hsum_ps(acc);
}

static float dot_q4_0_avx2(int64_t n, const void *w, const void *act)
{
    const block_q4_0 *x = w;
    const block_q8_0 *y = act;
    const __m256i off = _mm256_set1_epi8(8);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / QK4_0; i++) {
        __m256i q = _mm256_sub_epi8(nibbles32(x[i].qs), off);
        __m256i p = dot_s8(q, _mm256_loadu_si256((const __m256i *)y[i].qs));
        acc = _mm256_fmadd_ps(_mm256_set1_ps(fp16_to_f32(x[i].d) * fp16_to_f32(y[i].d)), _mm256_cvtepi32_ps(p), acc);
    }
    return hsum_ps(acc);
}

/* Several rows against one activation: the activation block, its scale and
 * its partial sums are loaded once per block for 4 rows. The weights enter
 * the u8 x s8 dot as unsigned (q4: nibble, q8: x + 128) and the offset comes
 * back through the activation sums: sum (u - off) y = sum u y - off sum y. */
#define MV_ROWS 4

static inline __m256i act_sums4(__m256i y) /* 8 lanes: sums of 4 activation bytes */
{
    return dpbusd(_mm256_setzero_si256(), _mm256_set1_epi8(1), y);
}

static void matvec_q4_0_avx2(int64_t n, const void *w, size_t rs, int64_t rows, const void *act, float *out)
{
    const block_q8_0 *y = act;
    const int64_t nb = n / QK4_0;
    int64_t r = 0;
    for (; r + MV_ROWS <= rows; r += MV_ROWS) {
        const block_q4_0 *x[MV_ROWS];
        __m256 acc[MV_ROWS];
        for (int k = 0; k < MV_ROWS; k++) {
            x[k] = (const block_q4_0 *)((const char *)w + (size_t)(r + k) * rs);
            acc[k] = _mm256_setzero_ps();
        }
        for (int64_t i = 0; i < nb; i++) {
            __m256i yv = _mm256_loadu_si256((const __m256i *)y[i].qs);
            __m256i base = _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_slli_epi32(act_sums4(yv), 3));
            float dy = fp16_to_f32(y[i].d);
            _Pragma("GCC unroll 4") for (int k = 0; k < MV_ROWS; k++) {
                __m256i p = dpbusd(base, nibbles32(x[k][i].qs), yv);
                acc[k] = _mm256_fmadd_ps(_mm256_set1_ps(fp16_to_f32(x[k][i].d) * dy), _mm256_cvtepi32_ps(p), acc[k]);
            }
        }
        for (int k = 0; k < MV_ROWS; k++)
            out[r + k] = hsum_ps(acc[k]);
    }
    for (; r < rows; r++)
        out[r] = dot_q4_0_avx2(n, (const char *)w + (size_t)r * rs, act);
}

static void matvec_q8_0_avx2(int64_t n, const void *w, size_t rs, int64_t rows, const void *act, float *out)
{
    const block_q8_0 *y = act;
    const int64_t nb = n / QK8_0;
    const __m256i flip = _mm256_set1_epi8((char)0x80);
    int64_t r = 0;
    for (; r + MV_ROWS <= rows; r += MV_ROWS) {
        const block_q8_0 *x[MV_ROWS];
        __m256 acc[MV_ROWS];
        for (int k = 0; k < MV_ROWS; k++) {
            x[k] = (const block_q8_0 *)((const char *)w + (size_t)(r + k) * rs);
            acc[k] = _mm256_setzero_ps();
        }
        for (int64_t i = 0; i < nb; i++) {
            __m256i yv = _mm256_loadu_si256((const __m256i *)y[i].qs);
            __m256i base = _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_slli_epi32(act_sums4(yv), 7));
            float dy = fp16_to_f32(y[i].d);
            _Pragma("GCC unroll 4") for (int k = 0; k < MV_ROWS; k++) {
                __m256i u = _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)x[k][i].qs), flip);
                __m256i p = dpbusd(base, u, yv);
                acc[k] = _mm256_fmadd_ps(_mm256_set1_ps(fp16_to_f32(x[k][i].d) * dy), _mm256_cvtepi32_ps(p), acc[k]);
            }
        }
        for (int k = 0; k < MV_ROWS; k++)
            out[r + k] = hsum_ps(acc[k]);
    }
    for (; r < rows; r++)
        out[r] = dot_q8_0_avx2(n, (const char *)w + (size_t)r * rs, act);
}

static float dot_q4_1_avx2(int64_t n, const void *w, const void *act)
{
    const block_q4_1 *x = w;
    const block_q8_1 *y = act;
    __m256 acc = _mm256_setzero_ps();
    float summs = 0;
    for (int64_t i = 0; i < n / QK4_1; i++) {
        const float d0 = fp16_to_f32(x[i].d), d1 = fp16_to_f32(y[i].d);
        summs = fmaf(fp16_to_f32(x[i].m), fp16_to_f32(y[i].s), summs); /* fused, as GCC builds the reference */
        /* unsigned nibbles straight into the u8 x s8 dot */
        __m256i p = dpbusd(_mm256_setzero_si256(), nibbles32(x[i].qs), _mm256_loadu_si256((const __m256i *)y[i].qs));
        acc = _mm256_fmadd_ps(_mm256_set1_ps(d0 * d1), _mm256_cvtepi32_ps(p), acc);
    }
    return hsum_ps(acc) + summs;
}

static float dot_q5_0_avx2(int64_t n, const void *w, const void *act)
{
    const block_q5_0 *x = w;
    const block_q8_0 *y = act;
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / QK5_0; i++) {
        /* q - 16 = nibble | (bit ? 0x10 : 0) - 16 = nibble - (bit ? 0 : 16) */
        __m256i hb = _mm256_andnot_si256(bits32(x[i].qh), _mm256_set1_epi8((char)0xF0));
        __m256i q = _mm256_or_si256(nibbles32(x[i].qs), hb); /* 0xF0 | nibble = nibble - 16 as int8 */
        __m256i p = dot_s8(q, _mm256_loadu_si256((const __m256i *)y[i].qs));
        acc = _mm256_fmadd_ps(_mm256_set1_ps(fp16_to_f32(x[i].d) * fp16_to_f32(y[i].d)), _mm256_cvtepi32_ps(p), acc);
    }
    return hsum_ps(acc);
}

static float dot_q5_1_avx2(int64_t n, const void *w, const void *act)
{
    const block_q5_1 *x = w;
    const block_q8_1 *y = act;
    __m256 acc = _mm256_setzero_ps();
    float summs = 0;
    for (int64_t i = 0; i < n / QK5_1; i++) {
        const float dx = fp16_to_f32(x[i].d);
        summs = fmaf(fp16_to_f32(x[i].m), fp16_to_f32(y[i].s), summs); /* fused, as GCC builds the reference */
        __m256i hb = _mm256_and_si256(bits32(x[i].qh), _mm256_set1_epi8(0x10));
        __m256i q = _mm256_or_si256(nibbles32(x[i].qs), hb);
        __m256i p = dpbusd(_mm256_setzero_si256(), q, _mm256_loadu_si256((const __m256i *)y[i].qs));
        acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), _mm256_set1_ps(dx * fp16_to_f32(y[i].d)), acc);
    }
    return hsum_ps(acc) + summs;
}

/* ---- K-quants against Q8_K ---- */

/* The 8 scales (bytes 0-7) and 8 mins (bytes 8-15) of a q4_K/q5_K block,
 * unpacked from get_scale_min_k4's layout four at a time. */
static inline __m128i k4_scales_mins(const uint8_t *s)
{
    uint32_t u[3], a[4];
    memcpy(u, s, 12);
    const uint32_t kmask1 = 0x3f3f3f3f, kmask2 = 0x0f0f0f0f, kmask3 = 0x03030303;
    a[0] = u[0] & kmask1;                                         /* scales 0-3 */
    a[1] = (u[2] & kmask2) | (((u[0] >> 6) & kmask3) << 4);        /* scales 4-7 */
    a[2] = u[1] & kmask1;                                         /* mins 0-3 */
    a[3] = ((u[2] >> 4) & kmask2) | (((u[1] >> 6) & kmask3) << 4); /* mins 4-7 */
    return _mm_loadu_si128((const __m128i *)a);
}

/* sum_j mins[j] * (bsums[2j] + bsums[2j+1]) as 4 int32 partial sums. */
static inline __m128i k4_min_sums(__m128i scales_mins, const int16_t *bsums)
{
    __m256i b = _mm256_loadu_si256((const __m256i *)bsums);
    __m128i pairs = _mm_hadd_epi16(_mm256_castsi256_si128(b), _mm256_extracti128_si256(b, 1));
    __m128i mins16 = _mm_cvtepu8_epi16(_mm_srli_si128(scales_mins, 8));
    return _mm_madd_epi16(mins16, pairs);
}

/* u8 x s8 dot of 32 elements times a 16-bit scale, as 8 int32 partial sums:
 * maddubs pairs (|sum| <= 2 * 31 * 127 fits 16 bits), madd with the scale. */
static inline __m256i dot32_scaled(__m256i u, const int8_t *q8, int scale)
{
    __m256i p16 = _mm256_maddubs_epi16(u, _mm256_loadu_si256((const __m256i *)q8));
    return _mm256_madd_epi16(p16, _mm256_set1_epi16((short)scale));
}

static float dot_q4_K_avx2(int64_t n, const void *w, const void *act)
{
    const block_q4_K *x = w;
    const block_q8_K *y = act;
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    __m256 acc = _mm256_setzero_ps();
    __m128 accm = _mm_setzero_ps();
    for (int64_t i = 0; i < n / QK_K; i++) {
        __m128i sm = k4_scales_mins(x[i].scales);
        uint8_t sc[16];
        _mm_storeu_si128((__m128i *)sc, sm);
        const float d = y[i].d * fp16_to_f32(x[i].d), dmin = y[i].d * fp16_to_f32(x[i].dmin);
        accm = _mm_fmadd_ps(_mm_set1_ps(dmin), _mm_cvtepi32_ps(k4_min_sums(sm, y[i].bsums)), accm);
        __m256i sumi = _mm256_setzero_si256();
        for (int c = 0; c < 4; c++) {
            __m256i q4 = _mm256_loadu_si256((const __m256i *)(x[i].qs + 32 * c));
            __m256i lo = _mm256_and_si256(q4, m4), hi = _mm256_and_si256(_mm256_srli_epi16(q4, 4), m4);
            sumi = _mm256_add_epi32(sumi, dot32_scaled(lo, y[i].qs + 64 * c, sc[2 * c]));
            sumi = _mm256_add_epi32(sumi, dot32_scaled(hi, y[i].qs + 64 * c + 32, sc[2 * c + 1]));
        }
        acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(sumi), acc);
    }
    accm = _mm_add_ps(accm, _mm_movehl_ps(accm, accm));
    accm = _mm_add_ss(accm, _mm_movehdup_ps(accm));
    return hsum_ps(acc) - _mm_cvtss_f32(accm);
}

static float dot_q5_K_avx2(int64_t n, const void *w, const void *act)
{
    const block_q5_K *x = w;
    const block_q8_K *y = act;
    const __m256i m4 = _mm256_set1_epi8(0x0F), bit = _mm256_set1_epi8(0x10);
    __m256 acc = _mm256_setzero_ps();
    float summs = 0;
    for (int64_t i = 0; i < n / QK_K; i++) {
        __m128i sm = k4_scales_mins(x[i].scales);
        uint8_t sc[16];
        _mm_storeu_si128((__m128i *)sc, sm);
        const float d = y[i].d * fp16_to_f32(x[i].d), dmin = -y[i].d * fp16_to_f32(x[i].dmin);
        __m128i prod = k4_min_sums(sm, y[i].bsums);
        prod = _mm_hadd_epi32(_mm_hadd_epi32(prod, _mm_setzero_si128()), _mm_setzero_si128());
        summs = fmaf(dmin, (float)_mm_cvtsi128_si32(prod), summs);
        __m256i hbits = _mm256_loadu_si256((const __m256i *)x[i].qh);
        __m256i sumi = _mm256_setzero_si256();
        for (int c = 0; c < 4; c++) {
            __m256i q4 = _mm256_loadu_si256((const __m256i *)(x[i].qs + 32 * c));
            /* bit 2c of qh -> bit 4 of the low half, bit 2c+1 -> high half */
            __m256i h0 = _mm256_and_si256(_mm256_slli_epi16(hbits, 4), bit);
            __m256i h1 = _mm256_and_si256(_mm256_slli_epi16(hbits, 3), bit);
            hbits = _mm256_srli_epi16(hbits, 2);
            __m256i lo = _mm256_or_si256(_mm256_and_si256(q4, m4), h0);
            __m256i hi = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(q4, 4), m4), h1);
            sumi = _mm256_add_epi32(sumi, dot32_scaled(lo, y[i].qs + 64 * c, sc[2 * c]));
            sumi = _mm256_add_epi32(sumi, dot32_scaled(hi, y[i].qs + 64 * c + 32, sc[2 * c + 1]));
        }
        acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(sumi), acc);
    }
    return hsum_ps(acc) + summs;
}


/* Byte shuffles that spread scale bytes 2k and 2k+1 over 8 bytes each. */
static const uint8_t k_scale_pair_shuffle[8][16] = {
    {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1},
    {2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3},
    {4, 4, 4, 4, 4, 4, 4, 4, 5, 5, 5, 5, 5, 5, 5, 5},
    {6, 6, 6, 6, 6, 6, 6, 6, 7, 7, 7, 7, 7, 7, 7, 7},
    {8, 8, 8, 8, 8, 8, 8, 8, 9, 9, 9, 9, 9, 9, 9, 9},
    {10, 10, 10, 10, 10, 10, 10, 10, 11, 11, 11, 11, 11, 11, 11, 11},
    {12, 12, 12, 12, 12, 12, 12, 12, 13, 13, 13, 13, 13, 13, 13, 13},
    {14, 14, 14, 14, 14, 14, 14, 14, 15, 15, 15, 15, 15, 15, 15, 15},
};

/* 16-bit scale vector for chunk k: signed scale bytes 2k (low half), 2k+1 (high half). */
static inline __m256i scale_pair_s8(__m128i scales, int k)
{
    return _mm256_cvtepi8_epi16(_mm_shuffle_epi8(scales, _mm_loadu_si128((const __m128i *)k_scale_pair_shuffle[k])));
}

/* sc * ((q - 32) * y) per byte pair, summed to 8 lanes as the reference
 * forms it: the lanes (not just the total) match, so the float sums match. */
static inline __m256i q6_chunk(__m256i q, const int8_t *q8, __m256i scv)
{
    __m256i y8 = _mm256_loadu_si256((const __m256i *)q8);
    __m256i p16 = _mm256_sub_epi16(_mm256_maddubs_epi16(q, y8), _mm256_maddubs_epi16(_mm256_set1_epi8(32), y8));
    return _mm256_madd_epi16(scv, p16);
}

static float dot_q6_K_avx2(int64_t n, const void *w, const void *act)
{
    const block_q6_K *x = w;
    const block_q8_K *y = act;
    const __m256i m4 = _mm256_set1_epi8(0x0F), m2 = _mm256_set1_epi8(0x30);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / QK_K; i++) {
        const __m128i scales = _mm_loadu_si128((const __m128i *)x[i].scales);
        __m256i sumi = _mm256_setzero_si256();
        for (int h = 0; h < 2; h++) {
            const uint8_t *ql = x[i].ql + 64 * h, *qhp = x[i].qh + 32 * h;
            const int8_t *q8 = y[i].qs + 128 * h;
            __m256i l0 = _mm256_loadu_si256((const __m256i *)ql);
            __m256i l1 = _mm256_loadu_si256((const __m256i *)(ql + 32));
            __m256i qh = _mm256_loadu_si256((const __m256i *)qhp);
            __m256i q0 = _mm256_or_si256(_mm256_and_si256(l0, m4), _mm256_and_si256(_mm256_slli_epi16(qh, 4), m2));
            __m256i q1 = _mm256_or_si256(_mm256_and_si256(l1, m4), _mm256_and_si256(_mm256_slli_epi16(qh, 2), m2));
            __m256i q2 = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), m4), _mm256_and_si256(qh, m2));
            __m256i q3 = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), m4),
                                         _mm256_and_si256(_mm256_srli_epi16(qh, 2), m2));
            __m256i p0 = q6_chunk(q0, q8, scale_pair_s8(scales, 4 * h + 0));
            __m256i p1 = q6_chunk(q1, q8 + 32, scale_pair_s8(scales, 4 * h + 1));
            __m256i p2 = q6_chunk(q2, q8 + 64, scale_pair_s8(scales, 4 * h + 2));
            __m256i p3 = q6_chunk(q3, q8 + 96, scale_pair_s8(scales, 4 * h + 3));
            sumi = _mm256_add_epi32(sumi, _mm256_add_epi32(_mm256_add_epi32(p0, p1), _mm256_add_epi32(p2, p3)));
        }
        acc = _mm256_fmadd_ps(_mm256_set1_ps(y[i].d * fp16_to_f32(x[i].d)), _mm256_cvtepi32_ps(sumi), acc);
    }
    return hsum_ps(acc);
}

static float dot_q2_K_avx2(int64_t n, const void *w, const void *act)
{
    const block_q2_K *x = w;
    const block_q8_K *y = act;
    const __m256i m3 = _mm256_set1_epi8(3);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / QK_K; i++) {
        const uint8_t *sc = x[i].scales;
        const float d = y[i].d * fp16_to_f32(x[i].d), dmin = -y[i].d * fp16_to_f32(x[i].dmin);
        __m128i sc8 = _mm_loadu_si128((const __m128i *)sc);
        __m128i scales4 = _mm_and_si128(sc8, _mm_set1_epi8(0x0F));
        __m256i mins16 = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(sc8, 4), _mm_set1_epi8(0x0F)));
        __m256i prod = _mm256_madd_epi16(mins16, _mm256_loadu_si256((const __m256i *)y[i].bsums));
        /* mins first, into the same accumulator, as the reference does */
        acc = _mm256_fmadd_ps(_mm256_set1_ps(dmin), _mm256_cvtepi32_ps(prod), acc);
        __m256i sumi = _mm256_setzero_si256();
        for (int h = 0; h < 2; h++) {
            __m256i q2 = _mm256_loadu_si256((const __m256i *)(x[i].qs + 32 * h));
            const int8_t *q8 = y[i].qs + 128 * h;
            for (int j = 0; j < 4; j++) {
                __m256i q = _mm256_and_si256(q2, m3);
                q2 = _mm256_srli_epi16(q2, 2);
                __m256i p16 = _mm256_maddubs_epi16(q, _mm256_loadu_si256((const __m256i *)(q8 + 32 * j)));
                sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(scale_pair_s8(scales4, 4 * h + j), p16));
            }
        }
        acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(sumi), acc);
    }
    return hsum_ps(acc);
}

static float dot_q3_K_avx2(int64_t n, const void *w, const void *act)
{
    const block_q3_K *x = w;
    const block_q8_K *y = act;
    const __m256i m3 = _mm256_set1_epi8(3), zero = _mm256_setzero_si256(), four = _mm256_set1_epi8(4);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / QK_K; i++) {
        int8_t sc[16];
        quant_q3k_scales(x[i].scales, sc);
        const __m128i scales = _mm_loadu_si128((const __m128i *)sc);
        __m256i hm = _mm256_loadu_si256((const __m256i *)x[i].hmask);
        __m256i sumi = _mm256_setzero_si256();
        for (int h = 0; h < 2; h++) {
            __m256i q2 = _mm256_loadu_si256((const __m256i *)(x[i].qs + 32 * h));
            const int8_t *q8 = y[i].qs + 128 * h;
            for (int j = 0; j < 4; j++) {
                __m256i lo = _mm256_and_si256(q2, m3);
                q2 = _mm256_srli_epi16(q2, 2);
                /* 4 where hmask bit (4h + j) is clear: q = lo - that, formed
                 * per byte pair as lo*y - 4*y like the reference */
                __m256i hb = _mm256_and_si256(hm, _mm256_set1_epi8((char)(1 << (4 * h + j))));
                hb = _mm256_and_si256(_mm256_cmpeq_epi8(hb, zero), four);
                __m256i y8 = _mm256_loadu_si256((const __m256i *)(q8 + 32 * j));
                __m256i p16 = _mm256_sub_epi16(_mm256_maddubs_epi16(lo, y8), _mm256_maddubs_epi16(hb, y8));
                sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(scale_pair_s8(scales, 4 * h + j), p16));
            }
        }
        acc = _mm256_fmadd_ps(_mm256_set1_ps(y[i].d * fp16_to_f32(x[i].d)), _mm256_cvtepi32_ps(sumi), acc);
    }
    return hsum_ps(acc);
}

/* ---- one weight row x 4 activations (prompt batches) ----
 * Per (row, activation) pair the arithmetic is exactly vec_dot's; the row's
 * blocks are decoded once and used four times. */

/* acc + vec_dot's step for one block pair: signed bytes via the sign trick. */
static inline __m256 dot4_step(__m256 acc, __m256i ax, __m256i qx, float dx, const block_q8_0 *y)
{
    __m256i p = dpbusd(_mm256_setzero_si256(), ax, _mm256_sign_epi8(_mm256_loadu_si256((const __m256i *)y->qs), qx));
    return _mm256_fmadd_ps(_mm256_set1_ps(dx * fp16_to_f32(y->d)), _mm256_cvtepi32_ps(p), acc);
}

static void dot4_q8_0_avx2(int64_t n, const void *w, const void *const act[4], float out[4])
{
    const block_q8_0 *x = w;
    const block_q8_0 *y0 = act[0], *y1 = act[1], *y2 = act[2], *y3 = act[3];
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    for (int64_t i = 0; i < n / QK8_0; i++) {
        const __m256i qx = _mm256_loadu_si256((const __m256i *)x[i].qs);
        const __m256i ax = _mm256_sign_epi8(qx, qx);
        const float dx = fp16_to_f32(x[i].d);
        a0 = dot4_step(a0, ax, qx, dx, y0 + i);
        a1 = dot4_step(a1, ax, qx, dx, y1 + i);
        a2 = dot4_step(a2, ax, qx, dx, y2 + i);
        a3 = dot4_step(a3, ax, qx, dx, y3 + i);
    }
    out[0] = hsum_ps(a0);
    out[1] = hsum_ps(a1);
    out[2] = hsum_ps(a2);
    out[3] = hsum_ps(a3);
}

static void dot4_q4_0_avx2(int64_t n, const void *w, const void *const act[4], float out[4])
{
    const block_q4_0 *x = w;
    const block_q8_0 *y0 = act[0], *y1 = act[1], *y2 = act[2], *y3 = act[3];
    const __m256i off = _mm256_set1_epi8(8);
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    for (int64_t i = 0; i < n / QK4_0; i++) {
        const __m256i qx = _mm256_sub_epi8(nibbles32(x[i].qs), off);
        const __m256i ax = _mm256_sign_epi8(qx, qx);
        const float dx = fp16_to_f32(x[i].d);
        a0 = dot4_step(a0, ax, qx, dx, y0 + i);
        a1 = dot4_step(a1, ax, qx, dx, y1 + i);
        a2 = dot4_step(a2, ax, qx, dx, y2 + i);
        a3 = dot4_step(a3, ax, qx, dx, y3 + i);
    }
    out[0] = hsum_ps(a0);
    out[1] = hsum_ps(a1);
    out[2] = hsum_ps(a2);
    out[3] = hsum_ps(a3);
}

/* 4 rows x 4 activations for Q8_0-activation blocks: weights enter the u8 x s8
 * dot as unsigned bytes (q8: x ^ 0x80 = x + 128, q4: the raw nibble) and the
 * offset returns through per-lane activation sums computed once per block,
 * so each of the 16 pairs costs one dot, one convert, one multiply, one FMA.
 * Lane integers and float steps are those of vec_dot. */
static inline void mm4x4_q8act(int64_t nb, const void *w, size_t rs, const void *const act[4], float out[4][4],
                               int q4)
{
    const block_q8_0 *y[4] = {act[0], act[1], act[2], act[3]};
    const int off_shift = q4 ? 3 : 7; /* offset 8 or 128 */
    __m256 acc[4][4];
    for (int r = 0; r < 4; r++)
        for (int c = 0; c < 4; c++)
            acc[r][c] = _mm256_setzero_ps();
    for (int64_t i = 0; i < nb; i++) {
        __m256i yv[4], base[4];
        __m256 dy[4];
        for (int c = 0; c < 4; c++) {
            yv[c] = _mm256_loadu_si256((const __m256i *)y[c][i].qs);
            base[c] = _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_slli_epi32(act_sums4(yv[c]), off_shift));
            dy[c] = _mm256_set1_ps(fp16_to_f32(y[c][i].d));
        }
        _Pragma("GCC unroll 4") for (int r = 0; r < 4; r++)
        {
            __m256i u;
            __m256 dx;
            if (q4) {
                const block_q4_0 *x = (const block_q4_0 *)((const char *)w + (size_t)r * rs) + i;
                u = nibbles32(x->qs);
                dx = _mm256_set1_ps(fp16_to_f32(x->d));
            } else {
                const block_q8_0 *x = (const block_q8_0 *)((const char *)w + (size_t)r * rs) + i;
                u = _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)x->qs), _mm256_set1_epi8((char)0x80));
                dx = _mm256_set1_ps(fp16_to_f32(x->d));
            }
            _Pragma("GCC unroll 4") for (int c = 0; c < 4; c++)
            {
                __m256i p = dpbusd(base[c], u, yv[c]);
                acc[r][c] = _mm256_fmadd_ps(_mm256_mul_ps(dx, dy[c]), _mm256_cvtepi32_ps(p), acc[r][c]);
            }
        }
    }
    for (int r = 0; r < 4; r++)
        for (int c = 0; c < 4; c++)
            out[c][r] = hsum_ps(acc[r][c]);
}

static void dot4x4_q8_0_avx2(int64_t n, const void *w, size_t rs, const void *const act[4], float out[4][4])
{
    mm4x4_q8act(n / QK8_0, w, rs, act, out, 0);
}

static void dot4x4_q4_0_avx2(int64_t n, const void *w, size_t rs, const void *const act[4], float out[4][4])
{
    mm4x4_q8act(n / QK4_0, w, rs, act, out, 1);
}

static void dot4_q4_K_avx2(int64_t n, const void *w, const void *const act[4], float out[4])
{
    const block_q4_K *x = w;
    const block_q8_K *y[4] = {act[0], act[1], act[2], act[3]};
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    __m256 acc[4];
    __m128 accm[4];
    for (int c = 0; c < 4; c++) {
        acc[c] = _mm256_setzero_ps();
        accm[c] = _mm_setzero_ps();
    }
    for (int64_t i = 0; i < n / QK_K; i++) {
        const __m128i sm = k4_scales_mins(x[i].scales);
        uint8_t sc[16];
        _mm_storeu_si128((__m128i *)sc, sm);
        const float xd = fp16_to_f32(x[i].d), xdmin = fp16_to_f32(x[i].dmin);
        __m256i lo[4], hi[4];
        for (int k = 0; k < 4; k++) {
            __m256i q4 = _mm256_loadu_si256((const __m256i *)(x[i].qs + 32 * k));
            lo[k] = _mm256_and_si256(q4, m4);
            hi[k] = _mm256_and_si256(_mm256_srli_epi16(q4, 4), m4);
        }
        _Pragma("GCC unroll 4") for (int c = 0; c < 4; c++)
        {
            const block_q8_K *yc = y[c] + i;
            const float d = yc->d * xd, dmin = yc->d * xdmin;
            accm[c] = _mm_fmadd_ps(_mm_set1_ps(dmin), _mm_cvtepi32_ps(k4_min_sums(sm, yc->bsums)), accm[c]);
            __m256i sumi = _mm256_setzero_si256();
            for (int k = 0; k < 4; k++) {
                sumi = _mm256_add_epi32(sumi, dot32_scaled(lo[k], yc->qs + 64 * k, sc[2 * k]));
                sumi = _mm256_add_epi32(sumi, dot32_scaled(hi[k], yc->qs + 64 * k + 32, sc[2 * k + 1]));
            }
            acc[c] = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(sumi), acc[c]);
        }
    }
    for (int c = 0; c < 4; c++) {
        __m128 m = _mm_add_ps(accm[c], _mm_movehl_ps(accm[c], accm[c]));
        m = _mm_add_ss(m, _mm_movehdup_ps(m));
        out[c] = hsum_ps(acc[c]) - _mm_cvtss_f32(m);
    }
}

static void dot4_q6_K_avx2(int64_t n, const void *w, const void *const act[4], float out[4])
{
    const block_q6_K *x = w;
    const block_q8_K *y[4] = {act[0], act[1], act[2], act[3]};
    const __m256i m4 = _mm256_set1_epi8(0x0F), m2 = _mm256_set1_epi8(0x30);
    __m256 acc[4];
    for (int c = 0; c < 4; c++)
        acc[c] = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / QK_K; i++) {
        const __m128i scales = _mm_loadu_si128((const __m128i *)x[i].scales);
        const float xd = fp16_to_f32(x[i].d);
        __m256i sumi[4] = {_mm256_setzero_si256(), _mm256_setzero_si256(), _mm256_setzero_si256(),
                           _mm256_setzero_si256()};
        for (int h = 0; h < 2; h++) {
            const uint8_t *ql = x[i].ql + 64 * h, *qhp = x[i].qh + 32 * h;
            __m256i l0 = _mm256_loadu_si256((const __m256i *)ql);
            __m256i l1 = _mm256_loadu_si256((const __m256i *)(ql + 32));
            __m256i qh = _mm256_loadu_si256((const __m256i *)qhp);
            __m256i q[4], scv[4];
            q[0] = _mm256_or_si256(_mm256_and_si256(l0, m4), _mm256_and_si256(_mm256_slli_epi16(qh, 4), m2));
            q[1] = _mm256_or_si256(_mm256_and_si256(l1, m4), _mm256_and_si256(_mm256_slli_epi16(qh, 2), m2));
            q[2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), m4), _mm256_and_si256(qh, m2));
            q[3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), m4),
                                   _mm256_and_si256(_mm256_srli_epi16(qh, 2), m2));
            for (int k = 0; k < 4; k++)
                scv[k] = scale_pair_s8(scales, 4 * h + k);
            _Pragma("GCC unroll 4") for (int c = 0; c < 4; c++)
            {
                const int8_t *q8 = y[c][i].qs + 128 * h;
                __m256i p0 = q6_chunk(q[0], q8, scv[0]);
                __m256i p1 = q6_chunk(q[1], q8 + 32, scv[1]);
                __m256i p2 = q6_chunk(q[2], q8 + 64, scv[2]);
                __m256i p3 = q6_chunk(q[3], q8 + 96, scv[3]);
                sumi[c] = _mm256_add_epi32(sumi[c], _mm256_add_epi32(_mm256_add_epi32(p0, p1), _mm256_add_epi32(p2, p3)));
            }
        }
        for (int c = 0; c < 4; c++)
            acc[c] = _mm256_fmadd_ps(_mm256_set1_ps(y[c][i].d * xd), _mm256_cvtepi32_ps(sumi[c]), acc[c]);
    }
    for (int c = 0; c < 4; c++)
        out[c] = hsum_ps(acc[c]);
}

static void quantize_bf16_avx2(const float *src, void *dst, int64_t n)
{
    uint16_t *y = dst;
    const __m256i bias = _mm256_set1_epi32(0x7fff), one = _mm256_set1_epi32(1);
    const __m256i absmask = _mm256_set1_epi32(0x7fffffff), inf = _mm256_set1_epi32(0x7f800000);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256i u = _mm256_loadu_si256((const __m256i *)(src + i));
        /* round to nearest even: add 0x7fff + lowest kept bit */
        __m256i r = _mm256_add_epi32(u, _mm256_add_epi32(bias, _mm256_and_si256(_mm256_srli_epi32(u, 16), one)));
        r = _mm256_srli_epi32(r, 16);
        /* NaN: truncate and set the quiet bit */
        __m256i isnan = _mm256_cmpgt_epi32(_mm256_and_si256(u, absmask), inf);
        __m256i qn = _mm256_or_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(64));
        r = _mm256_blendv_epi8(r, qn, isnan);
        __m128i packed = _mm_packus_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1));
        _mm_storeu_si128((__m128i *)(y + i), packed);
    }
    for (; i < n; i++)
        y[i] = f32_to_bf16(src[i]);
}

#endif /* AVX2 */

void quant_simd_install(enum tensor_type type, struct quant_kernels *k)
{
#ifdef QUANT_HAVE_AVX2
    switch (type) {
    case TENSOR_TYPE_F32:
        k->vec_dot = dot_f32_avx2;
        break;
    case TENSOR_TYPE_F16:
        k->vec_dot = dot_f16_avx2;
        k->quantize = quantize_f16_avx2;
        k->dequantize = dequantize_f16_avx2;
        break;
    case TENSOR_TYPE_BF16:
#if defined(__AVX512BF16__) && defined(__AVX512F__)
        k->vec_dot = dot_bf16_avx512bf16;
#else
        k->vec_dot = dot_bf16_avx2;
#endif
        k->quantize = quantize_bf16_avx2;
        k->dequantize = dequantize_bf16_avx2;
        break;
    case TENSOR_TYPE_Q8_0:
        k->vec_dot = dot_q8_0_avx2;
        k->matvec = matvec_q8_0_avx2;
        k->dot4 = dot4_q8_0_avx2;
        k->dot4x4 = dot4x4_q8_0_avx2;
        k->quantize = quantize_q8_0_avx2;
        break;
    case TENSOR_TYPE_Q8_1:
        k->quantize = quantize_q8_1_avx2;
        break;
    case TENSOR_TYPE_Q8_K:
        k->quantize = quantize_q8_K_avx2;
        break;
    case TENSOR_TYPE_Q4_0:
        k->vec_dot = dot_q4_0_avx2;
        k->matvec = matvec_q4_0_avx2;
        k->dot4 = dot4_q4_0_avx2;
        k->dot4x4 = dot4x4_q4_0_avx2;
        break;
    case TENSOR_TYPE_Q4_1:
        k->vec_dot = dot_q4_1_avx2;
        break;
    case TENSOR_TYPE_Q5_0:
        k->vec_dot = dot_q5_0_avx2;
        break;
    case TENSOR_TYPE_Q5_1:
        k->vec_dot = dot_q5_1_avx2;
        break;
    case TENSOR_TYPE_Q2_K:
        k->vec_dot = dot_q2_K_avx2;
        break;
    case TENSOR_TYPE_Q3_K:
        k->vec_dot = dot_q3_K_avx2;
        break;
    case TENSOR_TYPE_Q4_K:
        k->vec_dot = dot_q4_K_avx2;
        k->dot4 = dot4_q4_K_avx2;
        break;
    case TENSOR_TYPE_Q5_K:
        k->vec_dot = dot_q5_K_avx2;
        break;
    case TENSOR_TYPE_Q6_K:
        k->vec_dot = dot_q6_K_avx2;
        k->dot4 = dot4_q6_K_avx2;
        break;
    default:
        break;
    }
#else
    (void)type;
    (void)k;
#endif
}
