/* SIMD kernels (AVX2 + FMA + F16C, with AVX-512 VNNI / AVX-VNNI dot
 * instructions where present), selected at compile time: this file has the
 * F32/F16/BF16 dots, the activation quantizers and the table hook; the block
 * dots are in quant_simd_legacy.c and quant_simd_k.c. Each computes the same
 * integer sums as its scalar twin in quant_fp.c / quant_legacy.c /
 * quant_k.c, in ggml's x86 float order; activation quantizers are
 * bit-identical to the scalar ones. Without AVX2 (NATIVE=0) nothing is
 * installed and the scalar kernels run. */
#include "kernels/quant_internal.h"

#if defined(QUANT_HAVE_AVX2)

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
/* The reference machine's vdpbf16ps order without the instruction: per
 * 32-bit lane, the odd element's product is added first, then the even
 * one's, each an exact product rounded once (an FMA). Two 16-lane
 * accumulators over 64 elements, reduced like _mm512_reduce_add_ps into a
 * double, the rest added in double, as dot_bf16_avx512bf16. (The
 * instruction also flushes subnormals; BF16 weights practically have none.) */
static inline void bf16_pairs(__m256 acc[2], const uint16_t *x, const uint16_t *y)
{
    const __m256i hi = _mm256_set1_epi32((int)0xFFFF0000u);
    for (int h = 0; h < 2; h++) {
        const __m256i xw = _mm256_loadu_si256((const __m256i *)(x + 16 * h));
        const __m256i yw = _mm256_loadu_si256((const __m256i *)(y + 16 * h));
        acc[h] = _mm256_fmadd_ps(_mm256_castsi256_ps(_mm256_and_si256(xw, hi)),
                                 _mm256_castsi256_ps(_mm256_and_si256(yw, hi)), acc[h]);
        acc[h] = _mm256_fmadd_ps(_mm256_castsi256_ps(_mm256_slli_epi32(xw, 16)),
                                 _mm256_castsi256_ps(_mm256_slli_epi32(yw, 16)), acc[h]);
    }
}

static float dot_bf16_avx2(int64_t n, const void *w, const void *act)
{
    const uint16_t *x = w, *y = act;
    __m256 c1[2] = {_mm256_setzero_ps(), _mm256_setzero_ps()}, c2[2] = {_mm256_setzero_ps(), _mm256_setzero_ps()};
    int64_t i = 0;
    for (; i + 64 <= n; i += 64) {
        bf16_pairs(c1, x + i, y + i);
        bf16_pairs(c2, x + i + 32, y + i + 32);
    }
    double sumf = 0;
    sumf += (double)red16_ps(c1[0], c1[1]);
    sumf += (double)red16_ps(c2[0], c2[1]);
    for (; i < n; i++)
        sumf += (double)(bf16_to_f32(x[i]) * bf16_to_f32(y[i]));
    return (float)sumf;
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
        /* the first element of largest magnitude gives the sign (8 at a
         * time: element by element the search took a third of this
         * function) */
        float max = 0;
        const __m256 am = _mm256_set1_ps(amax), absm = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
        for (int j = 0; j < QK_K; j += 8) {
            const __m256 x = _mm256_loadu_ps(src + j);
            const int hit = _mm256_movemask_ps(_mm256_cmp_ps(_mm256_and_ps(x, absm), am, _CMP_EQ_OQ));
            if (hit) {
                max = src[j + __builtin_ctz((unsigned)hit)];
                break;
            }
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

#endif /* QUANT_HAVE_AVX2 */

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
        k->vec_dot = quant_avx2_dot_q8_0;
        k->matvec = quant_avx2_matvec_q8_0;
        k->dequantize = quant_avx2_dequantize_q8_0;
        k->dot4 = quant_avx2_dot4_q8_0;
        k->dot4x4 = quant_avx2_dot4x4_q8_0;
        k->quantize = quantize_q8_0_avx2;
        break;
    case TENSOR_TYPE_Q8_1:
        k->quantize = quantize_q8_1_avx2;
        break;
    case TENSOR_TYPE_Q8_K:
        k->quantize = quantize_q8_K_avx2;
        break;
    case TENSOR_TYPE_Q4_0:
        k->vec_dot = quant_avx2_dot_q4_0;
        k->matvec = quant_avx2_matvec_q4_0;
        k->dequantize = quant_avx2_dequantize_q4_0;
        k->dot4 = quant_avx2_dot4_q4_0;
        k->dot4x4 = quant_avx2_dot4x4_q4_0;
        break;
    case TENSOR_TYPE_Q4_1:
        k->vec_dot = quant_avx2_dot_q4_1;
        k->dot4 = quant_avx2_dot4_q4_1;
        break;
    case TENSOR_TYPE_Q5_0:
        k->vec_dot = quant_avx2_dot_q5_0;
        k->dot4 = quant_avx2_dot4_q5_0;
#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VNNI__)
        k->dot4x4 = quant_avx512_dot4x4_q5_0;
        k->matvec = quant_avx512_matvec_q5_0;
#endif
        break;
    case TENSOR_TYPE_Q5_1:
        k->vec_dot = quant_avx2_dot_q5_1;
        k->dot4 = quant_avx2_dot4_q5_1;
        break;
    case TENSOR_TYPE_Q2_K:
        k->vec_dot = quant_avx2_dot_q2_K;
        break;
    case TENSOR_TYPE_Q3_K:
        k->vec_dot = quant_avx2_dot_q3_K;
        k->dot4 = quant_avx2_dot4_q3_K;
        break;
    case TENSOR_TYPE_Q4_K:
        k->vec_dot = quant_avx2_dot_q4_K;
        k->dot4 = quant_avx2_dot4_q4_K;
        break;
    case TENSOR_TYPE_Q5_K:
        k->vec_dot = quant_avx2_dot_q5_K;
        k->dot4 = quant_avx2_dot4_q5_K;
#if defined(__AVX512F__) && defined(__AVX512BW__)
        k->matvec = quant_avx512_matvec_q5_K;
#else
        k->matvec = quant_avx2_matvec_q5_K;
#endif
        break;
    case TENSOR_TYPE_Q6_K:
        k->vec_dot = quant_avx2_dot_q6_K;
        k->dot4 = quant_avx2_dot4_q6_K;
#if defined(__AVX512F__) && defined(__AVX512BW__)
        k->matvec = quant_avx512_matvec_q6_K;
#else
        k->matvec = quant_avx2_matvec_q6_K;
#endif
        break;
    default:
        break;
    }
#else
    (void)type;
    (void)k;
#endif
}
