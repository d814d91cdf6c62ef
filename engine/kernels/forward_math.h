/* Scalar and 8-lane helpers shared by the forward pass and its attention
 * kernels: F16 conversion and exp the way ggml's AVX-512 build computes it,
 * elementwise row operations. */
#ifndef TOKSCOPE_FORWARD_MATH_H
#define TOKSCOPE_FORWARD_MATH_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "gguf/tensor.h"

#if defined(__F16C__) && defined(__FMA__) && defined(__AVX2__)
#include <immintrin.h>
#define FWD_F16C 1
#endif

typedef uint16_t fp16_t;

static inline float h2f(fp16_t h)
{
#ifdef FWD_F16C
    return _cvtsh_ss(h);
#else
    return tensor_fp16_to_fp32(h);
#endif
}

static inline fp16_t f2h(float f)
{
#ifdef FWD_F16C
    return _cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT);
#else
    return tensor_fp32_to_fp16(f);
#endif
}

/* y = y * s, y = y + v, y = y * v, lane by lane (ggml_vec_scale_f32 and
 * ggml's elementwise add and mul: one rounding per element, so any vector
 * width gives the same bits); GCC 12 at -O2 leaves these loops scalar for
 * a runtime n. y and v are the same row or rows that do not overlap. */
static inline void vec_scale(float *y, int64_t n, float s)
{
    int64_t i = 0;
#ifdef FWD_F16C
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(y + i, _mm256_mul_ps(_mm256_loadu_ps(y + i), _mm256_set1_ps(s)));
#endif
    for (; i < n; i++)
        y[i] *= s;
}

static inline void vec_add(float *y, const float *v, int64_t n)
{
    int64_t i = 0;
#ifdef FWD_F16C
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(y + i, _mm256_add_ps(_mm256_loadu_ps(y + i), _mm256_loadu_ps(v + i)));
#endif
    for (; i < n; i++)
        y[i] += v[i];
}

static inline void vec_mul(float *y, const float *v, int64_t n)
{
    int64_t i = 0;
#ifdef FWD_F16C
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(y + i, _mm256_mul_ps(_mm256_loadu_ps(y + i), _mm256_loadu_ps(v + i)));
#endif
    for (; i < n; i++)
        y[i] *= v[i];
}

/* RoPE's rotation of a head's first n_rot values by cs (each pair's cos
 * and sin side by side, mscale in them): adjacent pairs (neox false, NORM)
 * or x[i] with x[i + n_rot / 2] (NEOX). With FMA each output is one fused
 * step over one rounded product, the contraction GCC made of the scalar
 * form that matches the reference's goldens: x0 c - x1 s as fma(x0, c,
 * -(x1 s)) and x0 s + x1 c as fma(x0, s, x1 c); a different fusion changes
 * bits (test_attn's rope cases). 8 values a step: GCC 12 at -O2 left the
 * loops scalar; rope_pair is one pair (the tails) in that form. */
static inline void rope_pair(float *a, float *b, float c, float s)
{
    const float x0 = *a, x1 = *b;
#ifdef FWD_F16C
    *a = fmaf(x0, c, -(x1 * s));
    *b = fmaf(x0, s, x1 * c);
#else
    *a = x0 * c - x1 * s;
    *b = x0 * s + x1 * c;
#endif
}

static inline void rope_rotate(float *x, const float *cs, uint32_t n_rot, int neox)
{
    const uint32_t half = n_rot / 2;
    uint32_t i = 0;
    if (neox) {
#ifdef FWD_F16C
        for (; i + 8 <= half; i += 8) {
            /* cs[2i..2i+15]: cos in the even floats, sin in the odd */
            const __m256 a = _mm256_loadu_ps(cs + 2 * i), b = _mm256_loadu_ps(cs + 2 * i + 8);
            const __m256i order = _mm256_setr_epi32(0, 1, 4, 5, 2, 3, 6, 7);
            const __m256 c = _mm256_permutevar8x32_ps(_mm256_shuffle_ps(a, b, _MM_SHUFFLE(2, 0, 2, 0)), order);
            const __m256 s = _mm256_permutevar8x32_ps(_mm256_shuffle_ps(a, b, _MM_SHUFFLE(3, 1, 3, 1)), order);
            const __m256 x0 = _mm256_loadu_ps(x + i), x1 = _mm256_loadu_ps(x + i + half);
            _mm256_storeu_ps(x + i, _mm256_fmsub_ps(x0, c, _mm256_mul_ps(x1, s)));
            _mm256_storeu_ps(x + i + half, _mm256_fmadd_ps(x0, s, _mm256_mul_ps(x1, c)));
        }
#endif
        for (; i < half; i++)
            rope_pair(x + i, x + i + half, cs[2 * i], cs[2 * i + 1]);
        return;
    }
#ifdef FWD_F16C
    /* fmaddsub: even lanes x0 c - (x1 s), odd lanes x0 s + (x1 c), from
     * x0 in both lanes of a pair, (c, s) and x1 (s, c) */
    for (; 2 * i + 8 <= n_rot; i += 4) {
        const __m256 v = _mm256_loadu_ps(x + 2 * i), t = _mm256_loadu_ps(cs + 2 * i);
        const __m256 x1t = _mm256_mul_ps(_mm256_movehdup_ps(v), _mm256_permute_ps(t, _MM_SHUFFLE(2, 3, 0, 1)));
        _mm256_storeu_ps(x + 2 * i, _mm256_fmaddsub_ps(_mm256_moveldup_ps(v), t, x1t));
    }
#endif
    for (; i < half; i++)
        rope_pair(x + 2 * i, x + 2 * i + 1, cs[2 * i], cs[2 * i + 1]);
}

/* 16 floats reduced the way GCC's _mm512_reduce_add_ps does: halves of 8,
 * then 4, then (0+2) + (1+3). */
static inline float red16(const float v[16])
{
    float t8[8], t4[4];
    for (int l = 0; l < 8; l++)
        t8[l] = v[8 + l] + v[l];
    for (int l = 0; l < 4; l++)
        t4[l] = t8[4 + l] + t8[l];
    return (t4[0] + t4[2]) + (t4[1] + t4[3]);
}

/* exp as ggml's AVX-512 ggml_v_expf computes it (ARM optimized-routines
 * polynomial, scaled by 2^n), one lane at a time: the same operations in the
 * same order give the same bits, which matters because SwiGLU's output is
 * rounded to F16 / Q8 before the next matmul and softmax weights feed V. */
static inline float v_expf(float x)
{
    const float r = 0x1.8p23f;
    const float z = fmaf(x, 0x1.715476p+0f, r);
    const float n = z - r;
    const float b = fmaf(-n, 0x1.7f7d1cp-20f, fmaf(-n, 0x1.62e4p-1f, x));
    if (!(fabsf(n) <= 192.0f)) /* NaN too (a NaN x): (int)n below would be undefined */
        return n != n ? x : n <= 0.0f ? 0.0f : INFINITY;
    const float u = b * b;
    const float j = fmaf(fmaf(fmaf(0x1.0e4020p-7f, b, 0x1.573e2ep-5f), u, fmaf(0x1.555e66p-3f, b, 0x1.fffdb6p-2f)), u,
                         fmaf(0x1.ffffecp-1f, b, 1.0f));
    /* j * 2^n, correctly rounded either way: while 2^n is a normal float
     * one multiply gives ldexpf's bits (a subnormal or infinite result
     * included), without the libm call that took 3-4 % of a Qwen3.5 prompt
     * (the DeltaNet SiLU runs this per element) */
    if (n >= -126.0f && n <= 127.0f) {
        const uint32_t e = (uint32_t)((int)n + 127) << 23;
        float p2;
        memcpy(&p2, &e, sizeof p2);
        return j * p2;
    }
    return ldexpf(j, (int)n);
}

#ifdef FWD_F16C
/* 2^n for whole floats n in [-126, 127], as float bits */
static inline __m256 pow2_8(__m256 n)
{
    return _mm256_castsi256_ps(
        _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23));
}

/* v_expf on 8 lanes. While |n| <= 126, 2^n is a normal float and j * 2^n
 * rounds once, exactly like _mm512_scalef_ps. Lanes with 126 < |n| <= 192
 * (a result that underflows or overflows, v_expf's ldexpf) scale in two
 * steps, j * 2^(n - s) exact and then * 2^s (s = -100 or 100) rounding
 * once, which is ldexpf's correctly rounded result; lanes beyond (-inf
 * among them) and NaNs take v_expf's values. Those lanes went through
 * v_expf one at a time, a libm call each: 4 % of a prompt at depth 8192
 * whose scores spread far below the maximum. */
static inline __m256 v_expf8(__m256 x)
{
    const __m256 r = _mm256_set1_ps(0x1.8p23f);
    const __m256 z = _mm256_fmadd_ps(x, _mm256_set1_ps(0x1.715476p+0f), r);
    const __m256 n = _mm256_sub_ps(z, r);
    const __m256 b = _mm256_fnmadd_ps(n, _mm256_set1_ps(0x1.7f7d1cp-20f),
                                      _mm256_fnmadd_ps(n, _mm256_set1_ps(0x1.62e4p-1f), x));
    const __m256 u = _mm256_mul_ps(b, b);
    const __m256 j = _mm256_fmadd_ps(
        _mm256_fmadd_ps(_mm256_fmadd_ps(_mm256_set1_ps(0x1.0e4020p-7f), b, _mm256_set1_ps(0x1.573e2ep-5f)), u,
                        _mm256_fmadd_ps(_mm256_set1_ps(0x1.555e66p-3f), b, _mm256_set1_ps(0x1.fffdb6p-2f))),
        u, _mm256_fmadd_ps(_mm256_set1_ps(0x1.ffffecp-1f), b, _mm256_set1_ps(1.0f)));
    const __m256 absn = _mm256_andnot_ps(_mm256_set1_ps(-0.0f), n);
    if (_mm256_movemask_ps(_mm256_cmp_ps(absn, _mm256_set1_ps(126.0f), _CMP_NLE_UQ)) == 0)
        return _mm256_mul_ps(j, pow2_8(n));
    const __m256 zero = _mm256_setzero_ps();
    const __m256 s = _mm256_blendv_ps(_mm256_blendv_ps(zero, _mm256_set1_ps(100.0f),
                                                       _mm256_cmp_ps(n, _mm256_set1_ps(126.0f), _CMP_GT_OQ)),
                                      _mm256_set1_ps(-100.0f), _mm256_cmp_ps(n, _mm256_set1_ps(-126.0f), _CMP_LT_OQ));
    const __m256 big = _mm256_cmp_ps(absn, _mm256_set1_ps(192.0f), _CMP_NLE_UQ); /* NaN too */
    const __m256 ns = _mm256_blendv_ps(_mm256_sub_ps(n, s), zero, big);       /* keep the exponents sane */
    const __m256 res = _mm256_mul_ps(_mm256_mul_ps(j, pow2_8(ns)), pow2_8(_mm256_blendv_ps(s, zero, big)));
    /* beyond 192: NaN stays x, else 0 below and inf above */
    const __m256 alt = _mm256_blendv_ps(_mm256_blendv_ps(_mm256_set1_ps(INFINITY), zero,
                                                         _mm256_cmp_ps(n, zero, _CMP_LE_OQ)),
                                        x, _mm256_cmp_ps(n, n, _CMP_UNORD_Q));
    return _mm256_blendv_ps(res, alt, big);
}
#endif

#if defined(__AVX512F__) && defined(FWD_F16C)
/* ggml_v_expf's AVX-512 form itself, 16 lanes: 2^n by scalef, and lanes
 * with |n| > 192 (-inf, overflow) set to 0 or inf in the vector. */
static inline __m512 v_expf16(__m512 x)
{
    const __m512 r = _mm512_set1_ps(0x1.8p23f);
    const __m512 z = _mm512_fmadd_ps(x, _mm512_set1_ps(0x1.715476p+0f), r);
    const __m512 n = _mm512_sub_ps(z, r);
    const __m512 b = _mm512_fnmadd_ps(n, _mm512_set1_ps(0x1.7f7d1cp-20f),
                                      _mm512_fnmadd_ps(n, _mm512_set1_ps(0x1.62e4p-1f), x));
    const __mmask16 d = _mm512_cmp_ps_mask(_mm512_abs_ps(n), _mm512_set1_ps(192), _CMP_GT_OQ);
    const __m512 u = _mm512_mul_ps(b, b);
    const __m512 j = _mm512_fmadd_ps(
        _mm512_fmadd_ps(_mm512_fmadd_ps(_mm512_set1_ps(0x1.0e4020p-7f), b, _mm512_set1_ps(0x1.573e2ep-5f)), u,
                        _mm512_fmadd_ps(_mm512_set1_ps(0x1.555e66p-3f), b, _mm512_set1_ps(0x1.fffdb6p-2f))),
        u, _mm512_fmadd_ps(_mm512_set1_ps(0x1.ffffecp-1f), b, _mm512_set1_ps(1.0f)));
    const __m512 res = _mm512_scalef_ps(j, n);
    if (_mm512_kortestz(d, d))
        return res;
    const __m512 zero = _mm512_setzero_ps();
    const __m512 alt = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(n, zero, _CMP_LE_OQ), _mm512_set1_ps(INFINITY), zero);
    return _mm512_mask_blend_ps(d, res, alt);
}
#endif

#endif
