/* Repacked-weight matmul order (see forward_repack.h). */
#include "forward_repack.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "forward_math.h"
#include "tensor.h"

#if defined(__AVX2__) && defined(__F16C__)
#include <immintrin.h>
#define RP_AVX2 1
#endif

typedef struct {
    uint16_t d;
    uint8_t qs[16];
} rp_q4_0;

typedef struct {
    uint16_t d;
    int8_t qs[32];
} rp_q8_0;

/* Exact integer dot of one Q4_0 block (values nibble - 8) with a Q8_0 block. */
static inline int32_t isum_q4_0(const rp_q4_0 *x, const rp_q8_0 *y)
{
#ifdef RP_AVX2
    const __m128i raw = _mm_loadu_si128((const __m128i *)x->qs);
    const __m256i nib = _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(raw, 4), raw), _mm256_set1_epi8(0x0F));
    const __m256i qx = _mm256_sub_epi8(nib, _mm256_set1_epi8(8));
    const __m256i qy = _mm256_loadu_si256((const __m256i *)y->qs);
    const __m256i p16 = _mm256_maddubs_epi16(_mm256_sign_epi8(qx, qx), _mm256_sign_epi8(qy, qx));
    const __m256i p32 = _mm256_madd_epi16(p16, _mm256_set1_epi16(1));
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(p32), _mm256_extracti128_si256(p32, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xB1));
    return _mm_cvtsi128_si32(s);
#else
    int32_t s = 0;
    for (int j = 0; j < 16; j++)
        s += ((x->qs[j] & 15) - 8) * y->qs[j] + ((x->qs[j] >> 4) - 8) * y->qs[j + 16];
    return s;
#endif
}

/* ggml's hsum_float_8: the reduction at the end of its 8-lane dot products. */
static inline float hsum8(const float a[8])
{
    const float r0 = a[4] + a[0], r1 = a[5] + a[1], r2 = a[6] + a[2], r3 = a[7] + a[3];
    return (r0 + r2) + (r1 + r3);
}



/* ---- F16 / F32 weights --------------------------------------------------
 * Decode steps (one token) go through ggml_vec_dot_{f16,f32}: per 64
 * elements four 16-lane FMA accumulators, folded 0+2, 1+3, 0+1 and reduced
 * like GCC's _mm512_reduce_add_ps; the tail is added (in double for F16).
 * Batches go through llamafile's tinyBLAS when the row length is a multiple
 * of 16: one 16-lane FMA accumulator, the same final reduction. */

static inline float ld(bool f16, const void *p, int64_t i)
{
    return f16 ? h2f(((const uint16_t *)p)[i]) : ((const float *)p)[i];
}

#ifdef RP_AVX2
/* 16 lanes as two 8-wide halves: the same per-lane operations as AVX-512. */
static inline void ld16(bool f16, const void *p, int64_t i, __m256 *lo, __m256 *hi)
{
    if (f16) {
        const uint16_t *h = (const uint16_t *)p + i;
        *lo = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)h));
        *hi = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(h + 8)));
    } else {
        const float *f = (const float *)p + i;
        *lo = _mm256_loadu_ps(f);
        *hi = _mm256_loadu_ps(f + 8);
    }
}

static inline float red16v(__m256 lo, __m256 hi)
{
    float v[16];
    _mm256_storeu_ps(v, lo);
    _mm256_storeu_ps(v + 8, hi);
    return red16(v);
}
#endif

/* The leftover loop of ggml_vec_dot_f32 (`sumf += x[i]*y[i]` after the
 * 64-wide part) as GCC vectorizes it in the reference build: with 16 or more
 * left, blocks of 16 and then one of 8 multiply in a vector (each product
 * rounded) and add the products to the sum one by one, in order; what is
 * left after that, or all of it when fewer than 16 are left, is a chain of
 * scalar FMAs. The split shows in the last bit of e.g. stories260K's
 * 172-wide ffn_down. */
static float mul_rounded(float x, float y)
{
    volatile float p = x * y; /* a store keeps the compiler from fusing it into the add */
    return p;
}

static float f32_tail(float sum, int64_t left, const float *w, const float *a)
{
    int64_t i = 0;
    if (left >= 16) {
        const int64_t n16 = left & ~(int64_t)15;
        int64_t n8 = (left - n16) >= 8 ? 8 : 0;
        for (; i < n16 + n8; i++)
            sum += mul_rounded(w[i], a[i]);
    }
    for (; i < left; i++)
        sum = fmaf(w[i], a[i], sum);
    return sum;
}

static float vecdot_float(bool f16, int64_t n, const void *w, const void *a)
{
    const int64_t np = n & ~(int64_t)63;
    float v[16] = {0};
    if (np > 0) {
#ifdef RP_AVX2
        __m256 lo[4], hi[4];
        for (int j = 0; j < 4; j++)
            lo[j] = hi[j] = _mm256_setzero_ps();
        for (int64_t i = 0; i < np; i += 64)
            for (int j = 0; j < 4; j++) {
                __m256 wl, wh, al, ah;
                ld16(f16, w, i + 16 * j, &wl, &wh);
                ld16(f16, a, i + 16 * j, &al, &ah);
                lo[j] = _mm256_fmadd_ps(wl, al, lo[j]);
                hi[j] = _mm256_fmadd_ps(wh, ah, hi[j]);
            }
        const __m256 l = _mm256_add_ps(_mm256_add_ps(lo[0], lo[2]), _mm256_add_ps(lo[1], lo[3]));
        const __m256 h = _mm256_add_ps(_mm256_add_ps(hi[0], hi[2]), _mm256_add_ps(hi[1], hi[3]));
        _mm256_storeu_ps(v, l);
        _mm256_storeu_ps(v + 8, h);
#else
        float acc[4][16];
        memset(acc, 0, sizeof acc);
        for (int64_t i = 0; i < np; i += 64)
            for (int j = 0; j < 4; j++)
                for (int l = 0; l < 16; l++)
                    acc[j][l] = fmaf(ld(f16, w, i + 16 * j + l), ld(f16, a, i + 16 * j + l), acc[j][l]);
        for (int l = 0; l < 16; l++)
            v[l] = (acc[0][l] + acc[2][l]) + (acc[1][l] + acc[3][l]);
#endif
    }
    if (f16) {
        double sum = np > 0 ? (double)red16(v) : 0.0;
        for (int64_t i = np; i < n; i++)
            sum += (double)(ld(true, w, i) * ld(true, a, i));
        return (float)sum;
    }
    float sum = np > 0 ? red16(v) : 0.0f;
    return f32_tail(sum, n - np, (const float *)w + np, (const float *)a + np);
}

float refdot_f32(int64_t n, const float *x, const float *y) { return vecdot_float(false, n, x, y); }

float refdot_f16(int64_t n, const uint16_t *x, const uint16_t *y) { return vecdot_float(true, n, x, y); }

static float tinyblas_float(bool f16, int64_t n, const void *w, const void *a)
{
#ifdef RP_AVX2
    __m256 lo = _mm256_setzero_ps(), hi = _mm256_setzero_ps();
    for (int64_t k = 0; k < n; k += 16) {
        __m256 wl, wh, al, ah;
        ld16(f16, w, k, &wl, &wh);
        ld16(f16, a, k, &al, &ah);
        lo = _mm256_fmadd_ps(wl, al, lo);
        hi = _mm256_fmadd_ps(wh, ah, hi);
    }
    return red16v(lo, hi);
#else
    float acc[16] = {0};
    for (int64_t k = 0; k < n; k += 16)
        for (int l = 0; l < 16; l++)
            acc[l] = fmaf(ld(f16, w, k + l), ld(f16, a, k + l), acc[l]);
    return red16(acc);
#endif
}

/* BF16 batches: llamafile's tinyBLAS<32, __m512, __m512bh> (AVX512-BF16)
 * keeps ONE 16-lane accumulator per output and feeds it 32 BF16 pairs per
 * vdpbf16ps, reduced with _mm512_reduce_add_ps in float; ggml_vec_dot_bf16
 * (single tokens) keeps two and adds them in double. vdpbf16ps adds a lane's
 * odd product first, then the even one, each rounded (products are exact). */
static float tinyblas_bf16(int64_t n, const uint16_t *w, const uint16_t *a)
{
#if defined(__AVX512BF16__) && defined(__AVX512F__)
    __m512 c = _mm512_setzero_ps();
    for (int64_t k = 0; k < n; k += 32)
        c = _mm512_dpbf16_ps(c, (__m512bh)_mm512_loadu_si512(w + k), (__m512bh)_mm512_loadu_si512(a + k));
    return _mm512_reduce_add_ps(c);
#else
    float acc[16] = {0};
    for (int64_t k = 0; k < n; k += 32)
        for (int l = 0; l < 16; l++) {
            const int64_t i = k + 2 * l;
            acc[l] += tensor_bf16_to_fp32(w[i + 1]) * tensor_bf16_to_fp32(a[i + 1]);
            acc[l] += tensor_bf16_to_fp32(w[i]) * tensor_bf16_to_fp32(a[i]);
        }
    return red16(acc);
#endif
}

bool refbf16_applies(const gguf_tensor *w, int n_tok)
{
    return w->type == TENSOR_TYPE_BF16 && n_tok >= 2 && w->ne[0] % 32 == 0;
}

void refbf16_matmul(const gguf_tensor *w, int64_t n, int64_t r0, int64_t r1, const uint8_t *act, size_t act_stride,
                    int n_tok, float *out, int64_t out_stride)
{
    for (int64_t r = r0; r < r1; r++) {
        const uint16_t *wr = (const uint16_t *)w->data + (size_t)r * (size_t)n;
        for (int t = 0; t < n_tok; t++)
            out[(int64_t)t * out_stride + r] = tinyblas_bf16(n, wr, (const uint16_t *)(act + (size_t)t * act_stride));
    }
}

bool reffloat_applies(const gguf_tensor *w)
{
    return w->type == TENSOR_TYPE_F16 || w->type == TENSOR_TYPE_F32;
}

#if defined(__AVX512F__)
static inline __m512 ld16z(bool f16, const void *p, int64_t i)
{
    return f16 ? _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)((const uint16_t *)p + i)))
               : _mm512_loadu_ps((const float *)p + i);
}

/* tinyblas_float for 2 weight rows x 4 activation rows: each output keeps
 * its one 16-lane FMA accumulator and GCC's _mm512_reduce_add_ps, as in
 * tinyBLAS; the tile only shares the loads and conversions. */
static inline __attribute__((always_inline)) void tinyblas_tile_2x4(bool f16, int64_t n, const void *w0,
                                                                    const void *w1, const uint8_t *act,
                                                                    size_t act_stride, float o0[4], float o1[4])
{
    __m512 acc[2][4];
    for (int c = 0; c < 4; c++)
        acc[0][c] = acc[1][c] = _mm512_setzero_ps();
    for (int64_t k = 0; k < n; k += 16) {
        const __m512 x0 = ld16z(f16, w0, k), x1 = ld16z(f16, w1, k);
        _Pragma("GCC unroll 4") for (int c = 0; c < 4; c++)
        {
            const __m512 a = ld16z(f16, act + (size_t)c * act_stride, k);
            acc[0][c] = _mm512_fmadd_ps(x0, a, acc[0][c]);
            acc[1][c] = _mm512_fmadd_ps(x1, a, acc[1][c]);
        }
    }
    for (int c = 0; c < 4; c++) {
        o0[c] = _mm512_reduce_add_ps(acc[0][c]);
        o1[c] = _mm512_reduce_add_ps(acc[1][c]);
    }
}
#endif

void reffloat_matmul(const gguf_tensor *w, int64_t n, int64_t r0, int64_t r1, const uint8_t *act, size_t act_stride,
                     int n_tok, float *out, int64_t out_stride)
{
    const bool f16 = w->type == TENSOR_TYPE_F16;
    const size_t rb = (size_t)n * (f16 ? 2 : 4);
    const bool tiny = n_tok >= 2 && n % 16 == 0;
    int64_t r = r0;
#if defined(__AVX512F__)
    if (tiny && n_tok >= 4)
        for (; r + 2 <= r1; r += 2) {
            const uint8_t *w0 = (const uint8_t *)w->data + (size_t)r * rb;
            int t = 0;
            for (; t + 4 <= n_tok; t += 4) {
                float o0[4], o1[4];
                if (f16) /* separate instances keep the accumulators in registers */
                    tinyblas_tile_2x4(true, n, w0, w0 + rb, act + (size_t)t * act_stride, act_stride, o0, o1);
                else
                    tinyblas_tile_2x4(false, n, w0, w0 + rb, act + (size_t)t * act_stride, act_stride, o0, o1);
                for (int c = 0; c < 4; c++) {
                    out[(int64_t)(t + c) * out_stride + r] = o0[c];
                    out[(int64_t)(t + c) * out_stride + r + 1] = o1[c];
                }
            }
            for (; t < n_tok; t++)
                for (int i = 0; i < 2; i++)
                    out[(int64_t)t * out_stride + r + i] =
                        tinyblas_float(f16, n, w0 + (size_t)i * rb, act + (size_t)t * act_stride);
        }
#endif
    for (; r < r1; r++) {
        const uint8_t *wr = (const uint8_t *)w->data + (size_t)r * rb;
        for (int t = 0; t < n_tok; t++) {
            const uint8_t *a = act + (size_t)t * act_stride;
            out[(int64_t)t * out_stride + r] = tiny ? tinyblas_float(f16, n, wr, a) : vecdot_float(f16, n, wr, a);
        }
    }
}


#ifdef RP_AVX2
/* The 4 totals of 4 vectors of partial sums, in one vector. */
static inline __m128i hsum4_i32(__m256i a, __m256i b, __m256i c, __m256i d)
{
    const __m256i h = _mm256_hadd_epi32(_mm256_hadd_epi32(a, b), _mm256_hadd_epi32(c, d));
    return _mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
}

static inline int32_t hsum_i32(__m256i v)
{
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xB1));
    return _mm_cvtsi128_si32(s);
}
#endif


/* ---- K-quants ------------------------------------------------------------ */

typedef struct {
    uint16_t d, dmin;
    uint8_t scales[12];
    uint8_t qs[128];
} rp_q4_K;

typedef struct {
    uint8_t ql[128];
    uint8_t qh[64];
    int8_t scales[16];
    uint16_t d;
} rp_q6_K;

typedef struct {
    float d;
    int8_t qs[256];
    int16_t bsums[16];
} rp_q8_K;

static inline void scale_min_k4(int j, const uint8_t *q, int *d, int *m)
{
    if (j < 4) {
        *d = q[j] & 63;
        *m = q[j + 4] & 63;
    } else {
        *d = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
        *m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
    }
}

/* Repacked Q4_K (ggml_gemv/gemm_q4_K_8x8_q8_K): exact integer sums of
 * scale * (q . a) and of min * bsum, FMA-accumulated with d_w * d_a
 * (dmin_w * d_a); the result is acc - acc_min. The single-row kernel (gemv)
 * converts once per super-block, the batched one (gemm, activation rows in
 * groups of 4) once per 64-element pair of sub-blocks. */
static float q4_K_repacked_dot(const rp_q4_K *x, const rp_q8_K *y, int64_t nb, bool gemm)
{
    float acc = 0.0f, acc_min = 0.0f;
    for (int64_t b = 0; b < nb; b++) {
        int32_t isum = 0, imin = 0;
        for (int j = 0; j < 4; j++) {
            int sc0, m0, sc1, m1;
            scale_min_k4(2 * j, x[b].scales, &sc0, &m0);
            scale_min_k4(2 * j + 1, x[b].scales, &sc1, &m1);
            const uint8_t *q = x[b].qs + 32 * j;
            const int8_t *a = y[b].qs + 64 * j;
            int32_t s0 = 0, s1 = 0;
#ifdef RP_AVX2
            const __m256i raw = _mm256_loadu_si256((const __m256i *)q);
            const __m256i lo = _mm256_and_si256(raw, _mm256_set1_epi8(0x0F));
            const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(raw, 4), _mm256_set1_epi8(0x0F));
            const __m256i ones = _mm256_set1_epi16(1);
            __m256i p0 = _mm256_madd_epi16(_mm256_maddubs_epi16(lo, _mm256_loadu_si256((const __m256i *)a)), ones);
            __m256i p1 = _mm256_madd_epi16(_mm256_maddubs_epi16(hi, _mm256_loadu_si256((const __m256i *)(a + 32))), ones);
            s0 = hsum_i32(p0);
            s1 = hsum_i32(p1);
#else
            for (int l = 0; l < 32; l++) {
                s0 += (q[l] & 0xF) * a[l];
                s1 += (q[l] >> 4) * a[l + 32];
            }
#endif
            const int32_t b0 = y[b].bsums[4 * j] + y[b].bsums[4 * j + 1];
            const int32_t b1 = y[b].bsums[4 * j + 2] + y[b].bsums[4 * j + 3];
            if (gemm) {
                /* the batched kernel converts and FMAs each 64-element pair */
                const float da = y[b].d;
                acc = fmaf((float)(sc0 * s0 + sc1 * s1), h2f(x[b].d) * da, acc);
                acc_min = fmaf((float)(m0 * b0 + m1 * b1), h2f(x[b].dmin) * da, acc_min);
                continue;
            }
            isum += sc0 * s0 + sc1 * s1;
            imin += m0 * b0 + m1 * b1;
        }
        if (gemm)
            continue;
        const float da = y[b].d;
        acc = fmaf((float)isum, h2f(x[b].d) * da, acc);
        acc_min = fmaf((float)imin, h2f(x[b].dmin) * da, acc_min);
    }
    return acc - acc_min;
}

#ifdef RP_AVX2
/* The gemm order of q4_K_repacked_dot for one weight row and four
 * activation rows at once: the weight nibbles are unpacked once per pair of
 * sub-blocks, the four integer sums come out of one horizontal add, and each
 * output keeps its own fma chains in the same order. */
static void q4_K_tile_1x4(const rp_q4_K *x, const uint8_t *act, size_t act_stride, int64_t nb, float out[4])
{
    const rp_q8_K *y[4];
    for (int k = 0; k < 4; k++)
        y[k] = (const rp_q8_K *)(act + (size_t)k * act_stride);
    __m128 acc = _mm_setzero_ps(), acc_min = _mm_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        const __m128 da = _mm_set_ps(y[3][b].d, y[2][b].d, y[1][b].d, y[0][b].d);
        const __m128 dw = _mm_mul_ps(_mm_set1_ps(h2f(x[b].d)), da);
        const __m128 dm = _mm_mul_ps(_mm_set1_ps(h2f(x[b].dmin)), da);
        for (int j = 0; j < 4; j++) {
            int sc0, m0, sc1, m1;
            scale_min_k4(2 * j, x[b].scales, &sc0, &m0);
            scale_min_k4(2 * j + 1, x[b].scales, &sc1, &m1);
            const __m256i raw = _mm256_loadu_si256((const __m256i *)(x[b].qs + 32 * j));
            const __m256i lo = _mm256_and_si256(raw, _mm256_set1_epi8(0x0F));
            const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(raw, 4), _mm256_set1_epi8(0x0F));
            const __m256i s0 = _mm256_set1_epi16((int16_t)sc0), s1 = _mm256_set1_epi16((int16_t)sc1);
            __m256i p[4];
            int32_t mins[4];
            _Pragma("GCC unroll 4") for (int k = 0; k < 4; k++)
            {
                const int8_t *a = y[k][b].qs + 64 * j;
                p[k] = _mm256_add_epi32(
                    _mm256_madd_epi16(_mm256_maddubs_epi16(lo, _mm256_loadu_si256((const __m256i *)a)), s0),
                    _mm256_madd_epi16(_mm256_maddubs_epi16(hi, _mm256_loadu_si256((const __m256i *)(a + 32))), s1));
                const int16_t *bs = y[k][b].bsums + 4 * j;
                mins[k] = m0 * (bs[0] + bs[1]) + m1 * (bs[2] + bs[3]);
            }
            acc = _mm_fmadd_ps(_mm_cvtepi32_ps(hsum4_i32(p[0], p[1], p[2], p[3])), dw, acc);
            /* built from registers: four scalar stores read back as one vector stall the load */
            const __m128i mv = _mm_setr_epi32(mins[0], mins[1], mins[2], mins[3]);
            acc_min = _mm_fmadd_ps(_mm_cvtepi32_ps(mv), dm, acc_min);
        }
    }
    _mm_storeu_ps(out, _mm_sub_ps(acc, acc_min));
}
#endif


#ifdef RP_AVX2
/* The 128 6-bit values of one half of a Q6_K block (unsigned, 0..63), in
 * four vectors of 32 elements. */
static inline void q6_K_unpack128(const uint8_t *ql, const uint8_t *qh, __m256i q[4])
{
    const __m256i m4 = _mm256_set1_epi8(0x0F), m2 = _mm256_set1_epi8(3);
    const __m256i l0 = _mm256_loadu_si256((const __m256i *)ql);
    const __m256i l1 = _mm256_loadu_si256((const __m256i *)(ql + 32));
    const __m256i h = _mm256_loadu_si256((const __m256i *)qh);
    q[0] = _mm256_or_si256(_mm256_and_si256(l0, m4), _mm256_slli_epi16(_mm256_and_si256(h, m2), 4));
    q[1] = _mm256_or_si256(_mm256_and_si256(l1, m4),
                           _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(h, 2), m2), 4));
    q[2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), m4),
                           _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(h, 4), m2), 4));
    q[3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), m4),
                           _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(h, 6), m2), 4));
}
#endif

/* ggml_vec_dot_q6_K_q8_K (AVX2): lane k of each super-block holds the
 * scaled sums of the unsigned quants (0..63) times the activations over
 * elements 4k..4k+3 of every 32-element chunk, minus 32 * the scaled
 * activation block sums of sub-blocks 2k and 2k+1 (elements 32k..32k+31).
 * The total is the same integer either way, but the per-lane split decides
 * how the FMA with d and hsum_float_8 round, so it must be the reference's. */
static float q6_K_dot(const rp_q6_K *x, const rp_q8_K *y, int64_t nb)
{
#ifdef RP_AVX2
    __m256 acc = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        __m256i sumi = _mm256_setzero_si256();
        for (int g = 0; g < 2; g++) {
            const uint8_t *ql = x[b].ql + 64 * g, *qh = x[b].qh + 32 * g;
            const int8_t *sc = x[b].scales + 8 * g;
            const int8_t *a = y[b].qs + 128 * g;
            __m256i q[4];
            q6_K_unpack128(ql, qh, q);
            for (int c = 0; c < 4; c++) {
                const __m256i av = _mm256_loadu_si256((const __m256i *)(a + 32 * c));
                const __m256i p16 = _mm256_maddubs_epi16(q[c], av);
                const __m256i scl = _mm256_set_m128i(_mm_set1_epi16(sc[2 * c + 1]), _mm_set1_epi16(sc[2 * c]));
                sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(scl, p16));
            }
        }
        const __m256i bsums = _mm256_loadu_si256((const __m256i *)y[b].bsums);
        const __m256i sc16 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)x[b].scales));
        sumi = _mm256_sub_epi32(sumi, _mm256_slli_epi32(_mm256_madd_epi16(bsums, sc16), 5));
        const float d = y[b].d * h2f(x[b].d);
        acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(sumi), acc);
    }
    float a8[8];
    _mm256_storeu_ps(a8, acc);
    return hsum8(a8);
#else
    float acc[8] = {0};
    for (int64_t b = 0; b < nb; b++) {
        int32_t lane[8] = {0};
        for (int g = 0; g < 2; g++) {
            const uint8_t *ql = x[b].ql + 64 * g, *qh = x[b].qh + 32 * g;
            const int8_t *sc = x[b].scales + 8 * g;
            const int8_t *a = y[b].qs + 128 * g;
            for (int c = 0; c < 4; c++) /* chunk c: elements 32c..32c+31 of this 128 */
                for (int e = 0; e < 32; e++) {
                    int q;
                    switch (c) {
                    case 0: q = (ql[e] & 0xF) | (((qh[e] >> 0) & 3) << 4); break;
                    case 1: q = (ql[e + 32] & 0xF) | (((qh[e] >> 2) & 3) << 4); break;
                    case 2: q = (ql[e] >> 4) | (((qh[e] >> 4) & 3) << 4); break;
                    default: q = (ql[e + 32] >> 4) | (((qh[e] >> 6) & 3) << 4); break;
                    }
                    lane[e / 4] += sc[(32 * c + e) / 16] * (q * a[32 * c + e]);
                }
        }
        for (int k = 0; k < 8; k++)
            lane[k] -= 32 * (y[b].bsums[2 * k] * x[b].scales[2 * k] + y[b].bsums[2 * k + 1] * x[b].scales[2 * k + 1]);
        const float d = y[b].d * h2f(x[b].d);
        for (int k = 0; k < 8; k++)
            acc[k] = fmaf(d, (float)lane[k], acc[k]);
    }
    return hsum8(acc);
#endif
}

#ifdef RP_AVX2
/* q6_K_dot for one weight row and four activation rows: the 6-bit unpack
 * and the scale vectors are shared, every output keeps its own lanes and
 * FMA chain. */
static void q6_K_tile_1x4(const rp_q6_K *x, const uint8_t *act, size_t act_stride, int64_t nb, float out[4])
{
    const rp_q8_K *y[4];
    for (int k = 0; k < 4; k++)
        y[k] = (const rp_q8_K *)(act + (size_t)k * act_stride);
    __m256 acc[4];
    for (int k = 0; k < 4; k++)
        acc[k] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        __m256i sumi[4];
        for (int k = 0; k < 4; k++)
            sumi[k] = _mm256_setzero_si256();
        for (int g = 0; g < 2; g++) {
            const uint8_t *ql = x[b].ql + 64 * g, *qh = x[b].qh + 32 * g;
            const int8_t *sc = x[b].scales + 8 * g;
            __m256i q[4], scl[4];
            q6_K_unpack128(ql, qh, q);
            for (int c = 0; c < 4; c++)
                scl[c] = _mm256_set_m128i(_mm_set1_epi16(sc[2 * c + 1]), _mm_set1_epi16(sc[2 * c]));
            _Pragma("GCC unroll 4") for (int k = 0; k < 4; k++)
            {
                const int8_t *a = y[k][b].qs + 128 * g;
                for (int c = 0; c < 4; c++) {
                    const __m256i p16 = _mm256_maddubs_epi16(q[c], _mm256_loadu_si256((const __m256i *)(a + 32 * c)));
                    sumi[k] = _mm256_add_epi32(sumi[k], _mm256_madd_epi16(scl[c], p16));
                }
            }
        }
        const __m256i sc16 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)x[b].scales));
        const float xd = h2f(x[b].d);
        for (int k = 0; k < 4; k++) {
            const __m256i bsums = _mm256_loadu_si256((const __m256i *)y[k][b].bsums);
            sumi[k] = _mm256_sub_epi32(sumi[k], _mm256_slli_epi32(_mm256_madd_epi16(bsums, sc16), 5));
            acc[k] = _mm256_fmadd_ps(_mm256_set1_ps(y[k][b].d * xd), _mm256_cvtepi32_ps(sumi[k]), acc[k]);
        }
    }
    for (int k = 0; k < 4; k++) {
        float a8[8];
        _mm256_storeu_ps(a8, acc[k]);
        out[k] = hsum8(a8);
    }
}
#endif

#if defined(__AVX512BW__) && defined(RP_AVX2)
#define RP_512 1
static inline __m512i pair256(const void *lo, const void *hi)
{
    return _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)lo)),
                              _mm256_loadu_si256((const __m256i *)hi), 1);
}

/* q6_K_dot for two weight rows and nt <= 4 activation rows, one row per
 * 256-bit half of each register: row 0's eight lanes below, row 1's above.
 * The lane sums and FMA chains are q6_K_dot's, the activations are loaded
 * once for both rows. */
static inline __attribute__((always_inline)) void q6_K_tile_2xt(const rp_q6_K *x0, const rp_q6_K *x1,
                                                                 const uint8_t *act, size_t act_stride, int nt,
                                                                 int64_t nb, float o0[4], float o1[4])
{
    const __m512i m4 = _mm512_set1_epi8(0x0F), m2 = _mm512_set1_epi8(3);
    __m512 acc[4];
    for (int k = 0; k < 4; k++)
        acc[k] = _mm512_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        __m512i sumi[4];
        for (int k = 0; k < 4; k++)
            sumi[k] = _mm512_setzero_si512();
        for (int g = 0; g < 2; g++) {
            const __m512i l0 = pair256(x0[b].ql + 64 * g, x1[b].ql + 64 * g);
            const __m512i l1 = pair256(x0[b].ql + 64 * g + 32, x1[b].ql + 64 * g + 32);
            const __m512i h = pair256(x0[b].qh + 32 * g, x1[b].qh + 32 * g);
            __m512i q[4], scl[4];
            q[0] = _mm512_or_si512(_mm512_and_si512(l0, m4), _mm512_slli_epi16(_mm512_and_si512(h, m2), 4));
            q[1] = _mm512_or_si512(_mm512_and_si512(l1, m4),
                                   _mm512_slli_epi16(_mm512_and_si512(_mm512_srli_epi16(h, 2), m2), 4));
            q[2] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(l0, 4), m4),
                                   _mm512_slli_epi16(_mm512_and_si512(_mm512_srli_epi16(h, 4), m2), 4));
            q[3] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(l1, 4), m4),
                                   _mm512_slli_epi16(_mm512_and_si512(_mm512_srli_epi16(h, 6), m2), 4));
            const int8_t *s0 = x0[b].scales + 8 * g, *s1 = x1[b].scales + 8 * g;
            for (int c = 0; c < 4; c++)
                scl[c] = _mm512_inserti64x4(
                    _mm512_castsi256_si512(_mm256_set_m128i(_mm_set1_epi16(s0[2 * c + 1]), _mm_set1_epi16(s0[2 * c]))),
                    _mm256_set_m128i(_mm_set1_epi16(s1[2 * c + 1]), _mm_set1_epi16(s1[2 * c])), 1);
            _Pragma("GCC unroll 4") for (int k = 0; k < nt; k++)
            {
                const int8_t *a = ((const rp_q8_K *)(act + (size_t)k * act_stride))[b].qs + 128 * g;
                for (int c = 0; c < 4; c++) {
                    const __m512i av = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(a + 32 * c)));
                    sumi[k] = _mm512_add_epi32(sumi[k], _mm512_madd_epi16(scl[c], _mm512_maddubs_epi16(q[c], av)));
                }
            }
        }
        const __m512i sc16 = _mm512_inserti64x4(
            _mm512_castsi256_si512(_mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)x0[b].scales))),
            _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)x1[b].scales)), 1);
        const __m512 xd = _mm512_insertf32x8(_mm512_set1_ps(h2f(x0[b].d)), _mm256_set1_ps(h2f(x1[b].d)), 1);
        for (int k = 0; k < nt; k++) {
            const rp_q8_K *y = (const rp_q8_K *)(act + (size_t)k * act_stride) + b;
            const __m512i bsums = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)y->bsums));
            sumi[k] = _mm512_sub_epi32(sumi[k], _mm512_slli_epi32(_mm512_madd_epi16(bsums, sc16), 5));
            acc[k] = _mm512_fmadd_ps(_mm512_mul_ps(_mm512_set1_ps(y->d), xd), _mm512_cvtepi32_ps(sumi[k]), acc[k]);
        }
    }
    for (int k = 0; k < nt; k++) {
        float a16[16];
        _mm512_storeu_ps(a16, acc[k]);
        o0[k] = hsum8(a16);
        o1[k] = hsum8(a16 + 8);
    }
}

/* Two Q6_K rows against n_tok tokens, in groups of 4. */
static void q6_K_rows2(const rp_q6_K *x0, const rp_q6_K *x1, const uint8_t *act, size_t act_stride, int n_tok,
                       int64_t nb, float *out, int64_t out_stride)
{
    for (int t = 0; t < n_tok; t += 4) {
        float o0[4], o1[4];
        const uint8_t *a = act + (size_t)t * act_stride;
        const int nt = n_tok - t < 4 ? n_tok - t : 4;
        if (nt == 4)
            q6_K_tile_2xt(x0, x1, a, act_stride, 4, nb, o0, o1);
        else if (nt == 1) /* decode: a constant count keeps the sums in registers */
            q6_K_tile_2xt(x0, x1, a, act_stride, 1, nb, o0, o1);
        else
            q6_K_tile_2xt(x0, x1, a, act_stride, nt, nb, o0, o1);
        for (int k = 0; k < nt; k++) {
            out[(int64_t)(t + k) * out_stride] = o0[k];
            out[(int64_t)(t + k) * out_stride + 1] = o1[k];
        }
    }
}
#endif

typedef struct {
    uint8_t scales[16];
    uint8_t qs[64];
    uint16_t d, dmin;
} rp_q2_K;

/* Repacked Q2_K (ggml_gemv/gemm_q2_K_8x8_q8_K): like Q4_K, exact integer
 * sums of scale * (q . a) and min * bsum per 16-element sub-block; the
 * single-row kernel converts once per super-block, the batched one once
 * per 128 elements. */
static float q2_K_repacked_dot(const rp_q2_K *x, const rp_q8_K *y, int64_t nb, bool gemm)
{
    float acc = 0.0f, acc_min = 0.0f;
    for (int64_t b = 0; b < nb; b++) {
        const float da = y[b].d, dw = h2f(x[b].d) * da, mw = h2f(x[b].dmin) * da;
        int32_t isum = 0, imin = 0;
        for (int g = 0; g < 2; g++) {
            int32_t gs = 0, gm = 0;
            for (int j = 0; j < 4; j++)
                for (int h = 0; h < 2; h++) {
                    const int si = 8 * g + 2 * j + h;
                    const uint8_t sc = x[b].scales[si];
                    const int8_t *a = y[b].qs + 128 * g + 32 * j + 16 * h;
                    const uint8_t *q = x[b].qs + 32 * g + 16 * h;
                    int32_t d = 0;
                    for (int l = 0; l < 16; l++)
                        d += ((q[l] >> (2 * j)) & 3) * a[l];
                    gs += (sc & 0xF) * d;
                    gm += (sc >> 4) * y[b].bsums[si];
                }
            if (gemm) {
                acc = fmaf((float)gs, dw, acc);
                acc_min = fmaf((float)gm, mw, acc_min);
            } else {
                isum += gs;
                imin += gm;
            }
        }
        if (!gemm) {
            acc = fmaf((float)isum, dw, acc);
            acc_min = fmaf((float)imin, mw, acc_min);
        }
    }
    return acc - acc_min;
}

bool refk_applies(const gguf_tensor *w)
{
    if (w->type == TENSOR_TYPE_Q2_K && w->ne[1] % 8 == 0)
        return true;
    return (w->type == TENSOR_TYPE_Q4_K && w->ne[1] % 8 == 0) || (w->type == TENSOR_TYPE_Q6_K);
}

void refk_matmul(const gguf_tensor *w, int64_t n, int64_t r0, int64_t r1, const uint8_t *act, size_t act_stride,
                 int n_tok, float *out, int64_t out_stride)
{
    const int64_t nb = n / 256;
    const bool q4 = w->type == TENSOR_TYPE_Q4_K;
    if (w->type == TENSOR_TYPE_Q2_K) {
        const size_t rb2 = (size_t)nb * sizeof(rp_q2_K);
        for (int64_t r = r0; r < r1; r++)
            for (int t = 0; t < n_tok; t++)
                out[(int64_t)t * out_stride + r] =
                    q2_K_repacked_dot((const rp_q2_K *)((const uint8_t *)w->data + (size_t)r * rb2),
                                      (const rp_q8_K *)(act + (size_t)t * act_stride), nb, t < n_tok - n_tok % 4);
        return;
    }
    const size_t rb = (size_t)nb * (q4 ? sizeof(rp_q4_K) : sizeof(rp_q6_K));
    int64_t r = r0;
#ifdef RP_512
    if (!q4)
        for (; r + 2 <= r1; r += 2) {
            const uint8_t *wr = (const uint8_t *)w->data + (size_t)r * rb;
            q6_K_rows2((const rp_q6_K *)wr, (const rp_q6_K *)(wr + rb), act, act_stride, n_tok, nb, out + r,
                       out_stride);
        }
#endif
    for (; r < r1; r++) {
        const uint8_t *wr = (const uint8_t *)w->data + (size_t)r * rb;
        int t = 0;
#ifdef RP_AVX2
        /* tokens in complete groups of 4 go through the tiles (Q4_K: the gemm
         * kernel; Q6_K: vec_dot, whose order does not depend on the batch) */
        for (; t + 4 <= n_tok - n_tok % 4; t += 4) {
            float o[4];
            if (q4)
                q4_K_tile_1x4((const rp_q4_K *)wr, act + (size_t)t * act_stride, act_stride, nb, o);
            else
                q6_K_tile_1x4((const rp_q6_K *)wr, act + (size_t)t * act_stride, act_stride, nb, o);
            for (int k = 0; k < 4; k++)
                out[(int64_t)(t + k) * out_stride + r] = o[k];
        }
#endif
        for (; t < n_tok; t++) {
            const rp_q8_K *y = (const rp_q8_K *)(act + (size_t)t * act_stride);
            /* rows in complete groups of 4 go through the gemm kernel */
            const bool gemm = t < n_tok - n_tok % 4;
            out[(int64_t)t * out_stride + r] =
                q4 ? q4_K_repacked_dot((const rp_q4_K *)wr, y, nb, gemm) : q6_K_dot((const rp_q6_K *)wr, y, nb);
        }
    }
}

bool repack_applies(const gguf_tensor *w)
{
#if defined(__AVX2__)
    return w->type == TENSOR_TYPE_Q4_0 && w->ne[1] % 8 == 0 && w->ne[0] % 32 == 0;
#else
    /* A portable build still follows what an AVX2 reference machine does. */
    return w->type == TENSOR_TYPE_Q4_0 && w->ne[1] % 8 == 0 && w->ne[0] % 32 == 0;
#endif
}

/* One output of ggml_gemv/gemm_q4_0_8x8_q8_0: each block's exact integer
 * sum, FMA-accumulated with d_w * d_a in block order. */
static float q4_0_row_dot(const rp_q4_0 *x, const rp_q8_0 *y, int64_t nb)
{
    float acc = 0.0f;
    for (int64_t b = 0; b < nb; b++)
        acc = fmaf((float)isum_q4_0(&x[b], &y[b]), h2f(x[b].d) * h2f(y[b].d), acc);
    return acc;
}

#ifdef RP_AVX2
/* Signed Q4_0 values (nibble - 8) of one block, in element order. */
static inline __m256i q4_0_values(const rp_q4_0 *x)
{
    const __m128i raw = _mm_loadu_si128((const __m128i *)x->qs);
    const __m256i nib = _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(raw, 4), raw), _mm256_set1_epi8(0x0F));
    return _mm256_sub_epi8(nib, _mm256_set1_epi8(8));
}

/* 8 int32 partial sums of qx . qy (maddubs on |qx| and qy with qx's sign). */
static inline __m256i q4_0_partial(__m256i ax, __m256i qx, const rp_q8_0 *y)
{
    const __m256i qy = _mm256_loadu_si256((const __m256i *)y->qs);
    return _mm256_madd_epi16(_mm256_maddubs_epi16(ax, _mm256_sign_epi8(qy, qx)), _mm256_set1_epi16(1));
}

/* Two weight rows against four activation rows: every block's exact integer
 * sums for the 8 outputs at once, then per output the same
 * fma(isum, d_w * d_a, acc) chain in block order as q4_0_row_dot. */
static void q4_0_tile_2x4(const rp_q4_0 *x0, const rp_q4_0 *x1, const uint8_t *act, size_t act_stride, int64_t nb,
                          float o0[4], float o1[4])
{
    const rp_q8_0 *y[4];
    for (int k = 0; k < 4; k++)
        y[k] = (const rp_q8_0 *)(act + (size_t)k * act_stride);
    __m128 acc0 = _mm_setzero_ps(), acc1 = _mm_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        const __m256i qx0 = q4_0_values(&x0[b]), qx1 = q4_0_values(&x1[b]);
        const __m256i ax0 = _mm256_sign_epi8(qx0, qx0), ax1 = _mm256_sign_epi8(qx1, qx1);
        const __m128i s0 = hsum4_i32(q4_0_partial(ax0, qx0, &y[0][b]), q4_0_partial(ax0, qx0, &y[1][b]),
                                     q4_0_partial(ax0, qx0, &y[2][b]), q4_0_partial(ax0, qx0, &y[3][b]));
        const __m128i s1 = hsum4_i32(q4_0_partial(ax1, qx1, &y[0][b]), q4_0_partial(ax1, qx1, &y[1][b]),
                                     q4_0_partial(ax1, qx1, &y[2][b]), q4_0_partial(ax1, qx1, &y[3][b]));
        const __m128 da = _mm_set_ps(h2f(y[3][b].d), h2f(y[2][b].d), h2f(y[1][b].d), h2f(y[0][b].d));
        acc0 = _mm_fmadd_ps(_mm_cvtepi32_ps(s0), _mm_mul_ps(_mm_set1_ps(h2f(x0[b].d)), da), acc0);
        acc1 = _mm_fmadd_ps(_mm_cvtepi32_ps(s1), _mm_mul_ps(_mm_set1_ps(h2f(x1[b].d)), da), acc1);
    }
    _mm_storeu_ps(o0, acc0);
    _mm_storeu_ps(o1, acc1);
}
#endif


#ifdef RP_AVX2
/* Four weight rows against one activation row (the single-token gemv):
 * four integer block sums from one horizontal add, then per row the
 * fma(isum, d_w * d_a, acc) chain of q4_0_row_dot. */
static void q4_0_rows4(const rp_q4_0 *const x[4], const rp_q8_0 *y, int64_t nb, float out[4])
{
    __m128 acc = _mm_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        __m256i p[4];
        float dw[4];
        for (int k = 0; k < 4; k++) {
            const __m256i qx = q4_0_values(&x[k][b]);
            p[k] = q4_0_partial(_mm256_sign_epi8(qx, qx), qx, &y[b]);
            dw[k] = h2f(x[k][b].d);
        }
        const __m128 sc = _mm_mul_ps(_mm_loadu_ps(dw), _mm_set1_ps(h2f(y[b].d)));
        acc = _mm_fmadd_ps(_mm_cvtepi32_ps(hsum4_i32(p[0], p[1], p[2], p[3])), sc, acc);
    }
    _mm_storeu_ps(out, acc);
}
#endif

void repack_matmul(const gguf_tensor *w, int64_t n, int64_t r0, int64_t r1, const uint8_t *act, size_t act_stride,
                   int n_tok, float *out, int64_t out_stride)
{
    const int64_t nb = n / 32;
    const size_t rb = (size_t)nb * sizeof(rp_q4_0);
    int64_t r = r0;
#ifdef RP_AVX2
    const int n4 = n_tok & ~3;
    if (n4 > 0) {
        for (; r + 2 <= r1; r += 2) {
            const rp_q4_0 *x0 = (const rp_q4_0 *)((const uint8_t *)w->data + (size_t)r * rb);
            const rp_q4_0 *x1 = (const rp_q4_0 *)((const uint8_t *)x0 + rb);
            for (int t = 0; t < n4; t += 4) {
                float o0[4], o1[4];
                q4_0_tile_2x4(x0, x1, act + (size_t)t * act_stride, act_stride, nb, o0, o1);
                for (int k = 0; k < 4; k++) {
                    out[(int64_t)(t + k) * out_stride + r] = o0[k];
                    out[(int64_t)(t + k) * out_stride + r + 1] = o1[k];
                }
            }
            for (int t = n4; t < n_tok; t++) {
                const rp_q8_0 *y = (const rp_q8_0 *)(act + (size_t)t * act_stride);
                out[(int64_t)t * out_stride + r] = q4_0_row_dot(x0, y, nb);
                out[(int64_t)t * out_stride + r + 1] = q4_0_row_dot(x1, y, nb);
            }
        }
    }
    if (n_tok == 1)
        for (; r + 4 <= r1; r += 4) {
            const rp_q4_0 *x[4];
            for (int k = 0; k < 4; k++)
                x[k] = (const rp_q4_0 *)((const uint8_t *)w->data + (size_t)(r + k) * rb);
            q4_0_rows4(x, (const rp_q8_0 *)act, nb, out + r);
        }
#endif
    for (; r < r1; r++) {
        const rp_q4_0 *x = (const rp_q4_0 *)((const uint8_t *)w->data + (size_t)r * rb);
        for (int t = 0; t < n_tok; t++)
            out[(int64_t)t * out_stride + r] = q4_0_row_dot(x, (const rp_q8_0 *)(act + (size_t)t * act_stride), nb);
    }
}
