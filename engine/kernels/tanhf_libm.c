/* tanhf in glibc 2.36's steps, eight lanes at a time (see tanhf_libm.h). */
#include "kernels/tanhf_libm.h"
#include "kernels/libm_lanes.h"

#include <math.h>
#include <pthread.h>
#include <string.h>

#if defined(__AVX2__)
#include <immintrin.h>
#define TANHF_AVX2 1

#define F(v) _mm256_set1_ps(v)
#define I(v) _mm256_set1_epi32((int)(v))
#define AS_F(v) _mm256_castsi256_ps(v)
#define AS_I(v) _mm256_castps_si256(v)
/* a where m (all ones per lane), else b */
#define PICK(m, a, b) _mm256_blendv_ps((b), (a), AS_F(m))

/* s_expm1f.c's constants */
static const float ln2_hi = 6.9313812256e-01f, ln2_lo = 9.0580006145e-06f, invln2 = 1.4426950216e+00f;
static const float Q1 = -3.3333335072e-02f, Q2 = 1.5873016091e-03f, Q3 = -7.9365076090e-05f, Q4 = 4.0082177293e-06f,
                   Q5 = -2.0109921195e-07f;

/* expm1f(y) for the arguments tanhf gives it: |y| in [2^-54, 44) (so no
 * overflow, no -1 saturation, k in -3..64). Each lane takes the branch of
 * its own |y| and k. */
static inline __m256 expm1f8(__m256 y)
{
    const __m256i hy = AS_I(y), hx = _mm256_and_si256(hy, I(0x7fffffff));
    const __m256i neg = _mm256_srai_epi32(hy, 31); /* all ones where y < 0 */
    /* argument reduction: |y| in (0.5 ln2, 1.5 ln2) takes k = +-1 */
    const __m256i red = _mm256_cmpgt_epi32(hx, I(0x3eb17218));
    const __m256i near1 = _mm256_and_si256(red, _mm256_cmpgt_epi32(I(0x3F851592), hx));
    const __m256i kf = _mm256_cvttps_epi32(_mm256_add_ps(_mm256_mul_ps(F(invln2), y), PICK(neg, F(-0.5f), F(0.5f))));
    __m256i k = AS_I(PICK(near1, AS_F(_mm256_or_si256(neg, I(1))), AS_F(kf))); /* -1 | 1 = -1, 0 | 1 = 1 */
    k = _mm256_and_si256(k, red);                                       /* k = 0 without reduction */
    const __m256 t = _mm256_cvtepi32_ps(k);
    /* near1: hi = y -+ ln2_hi, lo = +-ln2_lo; else hi = y - t ln2_hi, lo = t ln2_lo */
    const __m256 hi = PICK(near1, _mm256_sub_ps(y, PICK(neg, F(-ln2_hi), F(ln2_hi))),
                           _mm256_sub_ps(y, _mm256_mul_ps(t, F(ln2_hi))));
    const __m256 lo = PICK(near1, PICK(neg, F(-ln2_lo), F(ln2_lo)), _mm256_mul_ps(t, F(ln2_lo)));
    const __m256 xr = PICK(red, _mm256_sub_ps(hi, lo), y);
    const __m256 c = PICK(red, _mm256_sub_ps(_mm256_sub_ps(hi, xr), lo), F(0.0f));
    /* the primary range */
    const __m256 hfx = _mm256_mul_ps(F(0.5f), xr);
    const __m256 hxs = _mm256_mul_ps(xr, hfx);
    __m256 r1 = _mm256_add_ps(F(Q4), _mm256_mul_ps(hxs, F(Q5)));
    r1 = _mm256_add_ps(F(Q3), _mm256_mul_ps(hxs, r1));
    r1 = _mm256_add_ps(F(Q2), _mm256_mul_ps(hxs, r1));
    r1 = _mm256_add_ps(F(Q1), _mm256_mul_ps(hxs, r1));
    r1 = _mm256_add_ps(F(1.0f), _mm256_mul_ps(hxs, r1));
    const __m256 tt = _mm256_sub_ps(F(3.0f), _mm256_mul_ps(r1, hfx));
    __m256 e = _mm256_mul_ps(hxs, _mm256_div_ps(_mm256_sub_ps(r1, tt), _mm256_sub_ps(F(6.0f), _mm256_mul_ps(xr, tt))));
    /* k == 0: x - (x e - hxs) */
    const __m256 r_k0 = _mm256_sub_ps(xr, _mm256_sub_ps(_mm256_mul_ps(xr, e), hxs));
    e = _mm256_sub_ps(_mm256_mul_ps(xr, _mm256_sub_ps(e, c)), c);
    e = _mm256_sub_ps(e, hxs);
    /* k == -1: 0.5 (x - e) - 0.5 */
    const __m256 r_km1 = _mm256_sub_ps(_mm256_mul_ps(F(0.5f), _mm256_sub_ps(xr, e)), F(0.5f));
    /* k == 1: x < -0.25 ? -2 (e - (x + 0.5)) : 1 + 2 (x - e) */
    const __m256 r_k1 = PICK(AS_I(_mm256_cmp_ps(xr, F(-0.25f), _CMP_LT_OQ)),
                             _mm256_mul_ps(F(-2.0f), _mm256_sub_ps(e, _mm256_add_ps(xr, F(0.5f)))),
                             _mm256_add_ps(F(1.0f), _mm256_mul_ps(F(2.0f), _mm256_sub_ps(xr, e))));
    const __m256i k23 = _mm256_slli_epi32(k, 23);
    /* k <= -2 or k > 56: (1 - (e - x)) * 2^k - 1 */
    const __m256 r_far = _mm256_sub_ps(AS_F(_mm256_add_epi32(AS_I(_mm256_sub_ps(F(1.0f), _mm256_sub_ps(e, xr))), k23)),
                                       F(1.0f));
    /* 2 <= k < 23: ((1 - 2^-k) - (e - x)) * 2^k */
    const __m256 t_lo = AS_F(_mm256_sub_epi32(I(0x3f800000), _mm256_srlv_epi32(I(0x1000000), k)));
    const __m256 r_mid = AS_F(_mm256_add_epi32(AS_I(_mm256_sub_ps(t_lo, _mm256_sub_ps(e, xr))), k23));
    /* 23 <= k <= 56: ((x - (e + 2^-k)) + 1) * 2^k */
    const __m256 t_hi = AS_F(_mm256_slli_epi32(_mm256_sub_epi32(I(0x7f), k), 23));
    const __m256 r_big =
        AS_F(_mm256_add_epi32(AS_I(_mm256_add_ps(_mm256_sub_ps(xr, _mm256_add_ps(e, t_hi)), F(1.0f))), k23));
    __m256 r = PICK(_mm256_cmpgt_epi32(k, I(22)), r_big, r_mid);
    r = PICK(_mm256_or_si256(_mm256_cmpgt_epi32(I(-1), k), _mm256_cmpgt_epi32(k, I(56))), r_far, r);
    r = PICK(_mm256_cmpeq_epi32(k, I(1)), r_k1, r);
    r = PICK(_mm256_cmpeq_epi32(k, I(-1)), r_km1, r);
    r = PICK(_mm256_cmpeq_epi32(k, I(0)), r_k0, r);
    /* |y| < 2^-25: y itself */
    return PICK(_mm256_cmpgt_epi32(I(0x33000000), hx), y, r);
}

static inline __m256 tanhf8(__m256 x)
{
    const __m256i jx = AS_I(x), ix = _mm256_and_si256(jx, I(0x7fffffff));
    const __m256 ax = AS_F(ix);
    const __m256i ge1 = _mm256_cmpgt_epi32(ix, I(0x3f7fffff));
    /* |x| >= 1: expm1f(2|x|); below: expm1f(-2|x|) */
    const __m256 arg = PICK(ge1, _mm256_mul_ps(F(2.0f), ax), _mm256_mul_ps(F(-2.0f), ax));
    const __m256 t = expm1f8(arg);
    const __m256 z_ge1 = _mm256_sub_ps(F(1.0f), _mm256_div_ps(F(2.0f), _mm256_add_ps(t, F(2.0f))));
    const __m256 z_lt1 = _mm256_div_ps(_mm256_sub_ps(F(0.0f), t), _mm256_add_ps(t, F(2.0f)));
    __m256 z = PICK(ge1, z_ge1, z_lt1);
    z = PICK(_mm256_cmpgt_epi32(ix, I(0x41afffff)), F(1.0f), z); /* |x| >= 22 (and inf): 1 - tiny */
    /* the sign of x on z */
    z = AS_F(_mm256_or_si256(AS_I(z), _mm256_and_si256(jx, I(0x80000000))));
    /* |x| < 2^-55: x (1 + x), zeros included */
    z = PICK(_mm256_cmpgt_epi32(I(0x24000000), ix), _mm256_mul_ps(x, _mm256_add_ps(F(1.0f), x)), z);
    /* NaN: x + x, as the library's 1/x + 1 keeps the payload */
    return PICK(_mm256_cmpgt_epi32(ix, I(0x7f800000)), _mm256_add_ps(x, x), z);
}
#endif

void tanhf_libm_scaled(const float *x, float *y, int64_t n, float s, float c)
{
    int64_t i = 0;
#ifdef TANHF_AVX2
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(y + i, _mm256_mul_ps(tanhf8(_mm256_mul_ps(_mm256_loadu_ps(x + i), F(s))), F(c)));
#endif
    for (; i < n; i++)
        y[i] = tanhf(x[i] * s) * c;
}

static bool exact;
static pthread_once_t exact_once = PTHREAD_ONCE_INIT;

/* Bit patterns spread over every branch (both signs, |x| from 2^-60 to
 * past 22, infinities), low bits varying: a different algorithm or rounding
 * shows within a few. */
static void check_exact(void)
{
#ifdef TANHF_AVX2
    /* a build that fused two steps (-ffp-contract) differed on 150744 of
     * the 2^32 floats, 1 in 28000: enough samples to see that (2 ms, once) */
    enum { N = 1 << 18 };
    static float x[N], y[N];
    int n = 0;
    const float edges[] = {-0.0f, 0.0f, 1.0f, -1.0f, 0.99999994f, 22.0f, -21.999998f, INFINITY, -INFINITY,
                           0.34657359f, 0.51986039f, 19.6f, 9.36f, 1e-17f, -3e-8f};
    for (size_t k = 0; k < sizeof edges / sizeof edges[0]; k++)
        x[n++] = edges[k];
    for (uint32_t k = 0; n < N; k++, n++) {
        /* 0x21000000 (2^-61) to 0x42000000 (32) */
        const uint32_t bits = (k & 1u ? 0x80000000u : 0u) | (0x21000000u + (uint32_t)((uint64_t)k * 0x21000000u / N) +
                                                           (k * 2654435761u >> 12));
        memcpy(&x[n], &bits, sizeof bits);
    }
    tanhf_libm_scaled(x, y, N, 1.0f, 1.0f);
    exact = libm_lanes_agree(x, y, N, tanhf);
#endif
}

bool tanhf_libm_exact(void)
{
    pthread_once(&exact_once, check_exact);
    return exact;
}
