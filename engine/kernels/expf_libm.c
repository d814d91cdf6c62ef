/* expf in glibc's order, eight lanes at a time (see expf_libm.h). */
#include "kernels/expf_libm.h"
#include "kernels/libm_lanes.h"

#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#if defined(__AVX512F__) && defined(__AVX512VL__) && defined(__FMA__)
#include <immintrin.h>
#define EXPF_AVX512 1
#elif defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#define EXPF_AVX2 1
#endif

#if defined(EXPF_AVX512) || defined(EXPF_AVX2)

/* glibc's __exp2f_data (ARM optimized-routines, MIT): tab[i] is the bits of
 * 2^(i/32) minus i << 47, then 32/ln 2, the cubic's coefficients scaled for
 * it, and the round-to-integer shift 1.5 * 2^52 */
static const uint64_t tab[32] = {
    0x3ff0000000000000, 0x3fefd9b0d3158574, 0x3fefb5586cf9890f, 0x3fef9301d0125b51, 0x3fef72b83c7d517b,
    0x3fef54873168b9aa, 0x3fef387a6e756238, 0x3fef1e9df51fdee1, 0x3fef06fe0a31b715, 0x3feef1a7373aa9cb,
    0x3feedea64c123422, 0x3feece086061892d, 0x3feebfdad5362a27, 0x3feeb42b569d4f82, 0x3feeab07dd485429,
    0x3feea47eb03a5585, 0x3feea09e667f3bcd, 0x3fee9f75e8ec5f74, 0x3feea11473eb0187, 0x3feea589994cce13,
    0x3feeace5422aa0db, 0x3feeb737b0cdc5e5, 0x3feec49182a3f090, 0x3feed503b23e255d, 0x3feee89f995ad3ad,
    0x3feeff76f2fb5e47, 0x3fef199bdd85529c, 0x3fef3720dcef9069, 0x3fef5818dcfba487, 0x3fef7c97337b9b5f,
    0x3fefa4afa2a490da, 0x3fefd0765b6e4540,
};
static const uint64_t c_invln2n = 0x40471547652b82fe, c_shift = 0x4338000000000000;
static const uint64_t c_poly[3] = {0x3ebc6af84b912394, 0x3f2ebfce50fac4f3, 0x3f962e42ff0c52d6};

#ifdef EXPF_AVX2
static inline __m256d bcast4(uint64_t bits) { return _mm256_castsi256_pd(_mm256_set1_epi64x((long long)bits)); }

/* Four lanes of the same steps (AVX2: the table through a gather). */
static inline __m128 expf4(__m128 x)
{
    const __m256d xd = _mm256_cvtps_pd(x);
    const __m256d invln2n = bcast4(c_invln2n), shift = bcast4(c_shift);
    const __m256d kd = _mm256_fmadd_pd(invln2n, xd, shift);
    const __m256i ki = _mm256_castpd_si256(kd);
    const __m256d r = _mm256_fmsub_pd(invln2n, xd, _mm256_sub_pd(kd, shift));
    __m256i t = _mm256_i64gather_epi64((const long long *)(const void *)tab,
                                       _mm256_and_si256(ki, _mm256_set1_epi64x(31)), 8);
    t = _mm256_add_epi64(t, _mm256_slli_epi64(ki, 47));
    const __m256d z = _mm256_fmadd_pd(bcast4(c_poly[0]), r, bcast4(c_poly[1]));
    const __m256d r2 = _mm256_mul_pd(r, r);
    __m256d y = _mm256_fmadd_pd(r, bcast4(c_poly[2]), _mm256_set1_pd(1.0));
    y = _mm256_fmadd_pd(z, r2, y);
    y = _mm256_mul_pd(y, _mm256_castsi256_pd(t));
    return _mm256_cvtpd_ps(y);
}
#endif

#ifdef EXPF_AVX512
static inline __m512d bcast(uint64_t bits) { return _mm512_castsi512_pd(_mm512_set1_epi64((long long)bits)); }

/* Eight lanes of __expf_fma's main path, operation for operation:
 *   kd = fma(32/ln2, x, shift); r = fma(32/ln2, x, -(kd - shift));
 *   s = tab[ki % 32] + (ki << 47) as a double;
 *   y = fma(fma(C0, r, C1), r*r, fma(r, C2, 1)) * s, rounded to float. */
static inline __m256 expf8(__m256 x, const __m512i t0, const __m512i t1, const __m512i t2, const __m512i t3)
{
    const __m512d xd = _mm512_cvtps_pd(x);
    const __m512d invln2n = bcast(c_invln2n), shift = bcast(c_shift);
    const __m512d kd = _mm512_fmadd_pd(invln2n, xd, shift);
    const __m512i ki = _mm512_castpd_si512(kd);
    const __m512d r = _mm512_fmsub_pd(invln2n, xd, _mm512_sub_pd(kd, shift));
    /* tab[ki & 31]: the low 4 bits pick within a half, bit 4 the half */
    const __m512i lo = _mm512_permutex2var_epi64(t0, ki, t1);
    const __m512i hi = _mm512_permutex2var_epi64(t2, ki, t3);
    const __mmask8 upper = _mm512_test_epi64_mask(ki, _mm512_set1_epi64(16));
    __m512i t = _mm512_mask_blend_epi64(upper, lo, hi);
    t = _mm512_add_epi64(t, _mm512_slli_epi64(ki, 47));
    const __m512d z = _mm512_fmadd_pd(bcast(c_poly[0]), r, bcast(c_poly[1]));
    const __m512d r2 = _mm512_mul_pd(r, r);
    __m512d y = _mm512_fmadd_pd(r, bcast(c_poly[2]), _mm512_set1_pd(1.0));
    y = _mm512_fmadd_pd(z, r2, y);
    y = _mm512_mul_pd(y, _mm512_castsi512_pd(t));
    return _mm512_cvtpd_ps(y);
}
#endif
#endif

void expf_libm_n(const float *x, float *y, int n)
{
    int i = 0;
#ifdef EXPF_AVX512
    const __m512i t0 = _mm512_loadu_si512(tab), t1 = _mm512_loadu_si512(tab + 8);
    const __m512i t2 = _mm512_loadu_si512(tab + 16), t3 = _mm512_loadu_si512(tab + 24);
    for (; i + 8 <= n; i += 8) {
        const __m256 v = _mm256_loadu_ps(x + i);
        /* |x| >= 88 (top 12 bits at least 0x42b), inf, NaN: the library's own paths */
        const __m256i abs = _mm256_and_si256(_mm256_castps_si256(v), _mm256_set1_epi32(0x7fffffff));
        const __mmask8 big = _mm256_cmpgt_epi32_mask(abs, _mm256_set1_epi32(0x42afffff));
        if (big) {
            /* -inf gives 0 and NaN x + x, as the library does; other
             * large arguments (overflow, underflow, errno) are its own */
            const __mmask8 ninf = _mm256_cmpeq_epi32_mask(_mm256_castps_si256(v), _mm256_set1_epi32((int)0xff800000));
            const __mmask8 nan = _mm256_cmpgt_epi32_mask(abs, _mm256_set1_epi32(0x7f800000));
            if (big & ~(ninf | nan)) {
                for (int k = 0; k < 8; k++)
                    y[i + k] = expf(x[i + k]);
                continue;
            }
            __m256 r = expf8(_mm256_mask_mov_ps(v, big, _mm256_setzero_ps()), t0, t1, t2, t3);
            r = _mm256_mask_mov_ps(r, ninf, _mm256_setzero_ps());
            r = _mm256_mask_add_ps(r, nan, v, v);
            _mm256_storeu_ps(y + i, r);
            continue;
        }
        _mm256_storeu_ps(y + i, expf8(v, t0, t1, t2, t3));
    }
#elif defined(EXPF_AVX2)
    for (; i + 8 <= n; i += 8) {
        const __m256 v = _mm256_loadu_ps(x + i);
        /* |x| >= 88, inf, NaN: the library itself, lane by lane */
        const __m256i abs = _mm256_and_si256(_mm256_castps_si256(v), _mm256_set1_epi32(0x7fffffff));
        if (!_mm256_testz_si256(_mm256_cmpgt_epi32(abs, _mm256_set1_epi32(0x42afffff)), _mm256_set1_epi32(-1))) {
            for (int k = 0; k < 8; k++)
                y[i + k] = expf(x[i + k]);
            continue;
        }
        _mm_storeu_ps(y + i, expf4(_mm256_castps256_ps128(v)));
        _mm_storeu_ps(y + i + 4, expf4(_mm256_extractf128_ps(v, 1)));
    }
#endif
    for (; i < n; i++)
        y[i] = expf(x[i]);
}

static bool exact;
static pthread_once_t exact_once = PTHREAD_ONCE_INIT;

/* Bit patterns spread evenly over [-104, 104] (positive and negative, with
 * low bits that vary) and the edges of the lanes' range: a different
 * algorithm or rounding shows within a few. */
static void check_exact(void)
{
#if defined(EXPF_AVX512) || defined(EXPF_AVX2)
    enum { N = 4096 };
    static float x[N], y[N];
    int n = 0;
    const float edges[] = {-0.0f, 0.0f, -87.99999f, 87.99999f, -88.0f, 88.0f, -1e-30f, 1e-30f};
    for (size_t k = 0; k < sizeof edges / sizeof edges[0]; k++)
        x[n++] = edges[k];
    for (uint32_t k = 0; n < N; k++, n++) {
        /* 0x42d00000 is 104.0f */
        const uint32_t bits = (k & 1u ? 0x80000000u : 0u) | (uint32_t)((uint64_t)k * 0x42d00000u / N + (k * 2654435761u >> 20));
        memcpy(&x[n], &bits, sizeof bits);
    }
    expf_libm_n(x, y, N);
    exact = libm_lanes_agree(x, y, N, expf);
#endif
}

bool expf_libm_exact(void)
{
    pthread_once(&exact_once, check_exact);
    return exact;
}
