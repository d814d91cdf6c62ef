/* TQ1_0 / TQ2_0 blocks (see quant_tq.h): dequantization, the reference
 * quantizers, and dot products against Q8_K activations in the reference's
 * generic and x86 float orders. Each block's integer sums are exact (trits
 * 0..2 times |act| <= 128), so the orders differ only in how the per-block
 * floats are added up. */
#include "kernels/quant_tq.h"

#include <math.h>

void quant_tq1_0_trits(const block_tq1_0 *x, uint8_t t[QK_K])
{
    for (int n = 0; n < 5; n++)
        for (int m = 0; m < 32; m++)
            t[32 * n + m] = (uint8_t)quant_tq1_trit(x->qs[m], n);
    for (int n = 0; n < 5; n++)
        for (int m = 0; m < 16; m++)
            t[160 + 16 * n + m] = (uint8_t)quant_tq1_trit(x->qs[32 + m], n);
    for (int n = 0; n < 4; n++)
        for (int j = 0; j < 4; j++)
            t[240 + 4 * n + j] = (uint8_t)quant_tq1_trit(x->qh[j], n);
}

void quant_tq2_0_trits(const block_tq2_0 *x, uint8_t t[QK_K])
{
    for (int h = 0; h < 2; h++)
        for (int l = 0; l < 4; l++)
            for (int m = 0; m < 32; m++)
                t[128 * h + 32 * l + m] = (x->qs[32 * h + m] >> (2 * l)) & 3;
}

void quant_dequantize_tq1_0(const void *src, float *dst, int64_t n)
{
    const block_tq1_0 *x = src;
    uint8_t t[QK_K];
    for (int64_t i = 0; i < n / QK_K; i++, dst += QK_K) {
        const float d = fp16_to_f32(x[i].d);
        quant_tq1_0_trits(&x[i], t);
        for (int e = 0; e < QK_K; e++)
            dst[e] = (float)(t[e] - 1) * d;
    }
}

void quant_dequantize_tq2_0(const void *src, float *dst, int64_t n)
{
    const block_tq2_0 *x = src;
    uint8_t t[QK_K];
    for (int64_t i = 0; i < n / QK_K; i++, dst += QK_K) {
        const float d = fp16_to_f32(x[i].d);
        quant_tq2_0_trits(&x[i], t);
        for (int e = 0; e < QK_K; e++)
            dst[e] = (float)(t[e] - 1) * d;
    }
}

/* Per block: d = amax; each element rounded to -1, 0, 1 of d (lroundf). */
static float tq_scale(const float *x, float *id)
{
    float amax = 0.0f;
    for (int j = 0; j < QK_K; j++)
        amax = fmaxf(amax, fabsf(x[j]));
    *id = amax != 0.0f ? 1.0f / amax : 0.0f;
    return amax;
}

static int tq_trit_of(float v, float id)
{
    return (int)lroundf(v * id) + 1;
}

/* Trits t0..t4 (t0 most significant) as ceil(value * 256 / 243). */
static uint8_t tq1_pack(const int *tr, int count)
{
    unsigned q = 0;
    for (int k = 0; k < count; k++)
        q = q * 3 + (unsigned)tr[k];
    for (int k = count; k < 5; k++)
        q *= 3;
    return (uint8_t)((q * 256 + 242) / 243);
}

void quant_quantize_tq1_0(const float *src, void *dst, int64_t n)
{
    block_tq1_0 *y = dst;
    for (int64_t i = 0; i < n / QK_K; i++, src += QK_K) {
        float id;
        y[i].d = f32_to_fp16(tq_scale(src, &id));
        int tr[5];
        for (int m = 0; m < 32; m++) {
            for (int k = 0; k < 5; k++)
                tr[k] = tq_trit_of(src[32 * k + m], id);
            y[i].qs[m] = tq1_pack(tr, 5);
        }
        for (int m = 0; m < 16; m++) {
            for (int k = 0; k < 5; k++)
                tr[k] = tq_trit_of(src[160 + 16 * k + m], id);
            y[i].qs[32 + m] = tq1_pack(tr, 5);
        }
        for (int j = 0; j < 4; j++) {
            for (int k = 0; k < 4; k++)
                tr[k] = tq_trit_of(src[240 + 4 * k + j], id);
            y[i].qh[j] = tq1_pack(tr, 4);
        }
    }
}

void quant_quantize_tq2_0(const float *src, void *dst, int64_t n)
{
    block_tq2_0 *y = dst;
    for (int64_t i = 0; i < n / QK_K; i++, src += QK_K) {
        float id;
        y[i].d = f32_to_fp16(tq_scale(src, &id));
        for (int h = 0; h < 2; h++)
            for (int m = 0; m < 32; m++) {
                unsigned q = 0;
                for (int l = 0; l < 4; l++)
                    q |= (unsigned)(tq_trit_of(src[128 * h + 32 * l + m], id) & 3) << (2 * l);
                y[i].qs[32 * h + m] = (uint8_t)q;
            }
    }
}

/* sum over the block of (trit - 1) * act */
static int isum_block(const uint8_t t[QK_K], const block_q8_K *y)
{
    int s = 0;
    for (int e = 0; e < QK_K; e++)
        s += (t[e] - 1) * y->qs[e];
    return s;
}

float quant_dot_tq1_0_scalar(int64_t n, const void *w, const void *act)
{
    const block_tq1_0 *x = w;
    const block_q8_K *y = act;
    uint8_t t[QK_K];
    float sum = 0.0f;
    for (int64_t i = 0; i < n / QK_K; i++) {
        quant_tq1_0_trits(&x[i], t);
        volatile float p = (float)isum_block(t, &y[i]) * (fp16_to_f32(x[i].d) * y[i].d);
        sum += p;
    }
    return sum;
}

float quant_dot_tq2_0_scalar(int64_t n, const void *w, const void *act)
{
    const block_tq2_0 *x = w;
    const block_q8_K *y = act;
    uint8_t t[QK_K];
    float sum = 0.0f;
    for (int64_t i = 0; i < n / QK_K; i++) {
        quant_tq2_0_trits(&x[i], t);
        volatile float p = (float)isum_block(t, &y[i]) * (y[i].d * fp16_to_f32(x[i].d));
        sum += p;
    }
    return sum;
}

/* One block into the 8 lanes (see quant_tq.h): the lane integers are what
 * the reference's 16-bit maddubs sums, less bsums, widened pairwise give. */
static void lanes_fma(const uint8_t t[QK_K], const block_q8_K *y, float d, float acc[8])
{
    for (int L = 0; L < 8; L++) {
        int s = 0;
        for (int base = 0; base < QK_K; base += 32)
            for (int e = base + 4 * L; e < base + 4 * L + 4; e++)
                s += t[e] * y->qs[e];
        s -= y->bsums[2 * L] + y->bsums[2 * L + 1];
        acc[L] = fmaf((float)s, d, acc[L]);
    }
}

/* hsum_float_8: halves added, then pairs, then the last two. */
static float hsum8(const float a[8])
{
    float r[4];
    for (int k = 0; k < 4; k++)
        r[k] = a[k + 4] + a[k];
    return (r[0] + r[2]) + (r[1] + r[3]);
}

float quant_dot_tq1_0_x86order(int64_t n, const void *w, const void *act)
{
    const block_tq1_0 *x = w;
    const block_q8_K *y = act;
    uint8_t t[QK_K];
    float acc[8] = {0};
    for (int64_t i = 0; i < n / QK_K; i++) {
        quant_tq1_0_trits(&x[i], t);
        lanes_fma(t, &y[i], y[i].d * fp16_to_f32(x[i].d), acc);
    }
    return hsum8(acc);
}

float quant_dot_tq2_0_x86order(int64_t n, const void *w, const void *act)
{
    const block_tq2_0 *x = w;
    const block_q8_K *y = act;
    uint8_t t[QK_K];
    float acc[8] = {0};
    for (int64_t i = 0; i < n / QK_K; i++) {
        quant_tq2_0_trits(&x[i], t);
        lanes_fma(t, &y[i], y[i].d * fp16_to_f32(x[i].d), acc);
    }
    return hsum8(acc);
}

#if defined(QUANT_HAVE_AVX2)
/* Trits of 32 bytes, byte k scaled by the 16-bit lane multiplier m (mod
 * 256) first: ((uint8_t)(b * m) * 3) >> 8 per byte, even and odd bytes
 * through 16-bit multiplies (the even byte in the low half, the odd one in
 * the high half, so that mulhi by 3 * 256 resp. 3 leaves the top digit). */
static inline __m256i tq1_trits(__m256i v, __m256i m)
{
    const __m256i lo8 = _mm256_set1_epi16(0x00FF);
    const __m256i even = _mm256_and_si256(_mm256_mullo_epi16(_mm256_and_si256(v, lo8), m), lo8);
    const __m256i odd = _mm256_mullo_epi16(_mm256_andnot_si256(lo8, v), m);
    const __m256i te = _mm256_mulhi_epu16(even, _mm256_set1_epi16(3 << 8));
    const __m256i to = _mm256_mulhi_epu16(odd, _mm256_set1_epi16(3));
    return _mm256_or_si256(te, _mm256_slli_epi16(to, 8));
}

/* 16-bit lane sums of trit * act for 32 trits against act[0..31]. */
static inline __m256i tq_madd(__m256i trits, const int8_t *a)
{
    return _mm256_maddubs_epi16(trits, _mm256_loadu_si256((const __m256i *)a));
}

/* The 8 int32 lanes from the 16-bit sums, less bsums; FMA'd into acc. */
static inline __m256 tq_finish(__m256i s16, const block_q8_K *y, float d, __m256 acc)
{
    s16 = _mm256_sub_epi16(s16, _mm256_loadu_si256((const __m256i *)y->bsums));
    const __m256i s32 = _mm256_madd_epi16(s16, _mm256_set1_epi16(1));
    return _mm256_fmadd_ps(_mm256_cvtepi32_ps(s32), _mm256_set1_ps(d), acc);
}

static float dot_tq1_0_avx2(int64_t n, const void *w, const void *act)
{
    const block_tq1_0 *x = w;
    const block_q8_K *y = act;
    __m256 acc = _mm256_setzero_ps();
    const __m256i p3[5] = {_mm256_set1_epi16(1), _mm256_set1_epi16(3), _mm256_set1_epi16(9),
                           _mm256_set1_epi16(27), _mm256_set1_epi16(81)};
    /* qs[32..47] twice: digits (0, 1), (2, 3), (4, qh) */
    const __m256i m01 = _mm256_setr_epi16(1, 1, 1, 1, 1, 1, 1, 1, 3, 3, 3, 3, 3, 3, 3, 3);
    const __m256i m23 = _mm256_setr_epi16(9, 9, 9, 9, 9, 9, 9, 9, 27, 27, 27, 27, 27, 27, 27, 27);
    const __m256i m4h = _mm256_setr_epi16(81, 81, 81, 81, 81, 81, 81, 81, 1, 1, 3, 3, 9, 9, 27, 27);
    for (int64_t i = 0; i < n / QK_K; i++) {
        const int8_t *a = y[i].qs;
        const __m256i v = _mm256_loadu_si256((const __m256i *)x[i].qs);
        __m256i s = tq_madd(tq1_trits(v, p3[0]), a), s1 = tq_madd(tq1_trits(v, p3[1]), a + 32);
        s = _mm256_add_epi16(s, tq_madd(tq1_trits(v, p3[2]), a + 64));
        s1 = _mm256_add_epi16(s1, tq_madd(tq1_trits(v, p3[3]), a + 96));
        s = _mm256_add_epi16(s, tq_madd(tq1_trits(v, p3[4]), a + 128));
        const __m128i tail = _mm_loadu_si128((const __m128i *)(x[i].qs + 32));
        int32_t qh;
        memcpy(&qh, x[i].qh, 4);
        const __m256i tt = _mm256_broadcastsi128_si256(tail);
        const __m256i th = _mm256_inserti128_si256(tt, _mm_set1_epi32(qh), 1);
        s1 = _mm256_add_epi16(s1, tq_madd(tq1_trits(tt, m01), a + 160));
        s = _mm256_add_epi16(s, tq_madd(tq1_trits(tt, m23), a + 192));
        s1 = _mm256_add_epi16(s1, tq_madd(tq1_trits(th, m4h), a + 224));
        acc = tq_finish(_mm256_add_epi16(s, s1), &y[i], y[i].d * fp16_to_f32(x[i].d), acc);
    }
    return hsum_ps(acc);
}

static float dot_tq2_0_avx2(int64_t n, const void *w, const void *act)
{
    const block_tq2_0 *x = w;
    const block_q8_K *y = act;
    const __m256i m3 = _mm256_set1_epi8(3);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / QK_K; i++) {
        const int8_t *a = y[i].qs;
        /* two independent 16-bit sums (exact either way) for the adds to overlap */
        __m256i s0 = _mm256_setzero_si256(), s1 = _mm256_setzero_si256();
#pragma GCC unroll 2
        for (int h = 0; h < 2; h++) {
            const __m256i v = _mm256_loadu_si256((const __m256i *)(x[i].qs + 32 * h));
            const int8_t *ah = a + 128 * h;
            s0 = _mm256_add_epi16(s0, tq_madd(_mm256_and_si256(v, m3), ah));
            s1 = _mm256_add_epi16(s1, tq_madd(_mm256_and_si256(_mm256_srli_epi16(v, 2), m3), ah + 32));
            s0 = _mm256_add_epi16(s0, tq_madd(_mm256_and_si256(_mm256_srli_epi16(v, 4), m3), ah + 64));
            s1 = _mm256_add_epi16(s1, tq_madd(_mm256_and_si256(_mm256_srli_epi16(v, 6), m3), ah + 96));
        }
        acc = tq_finish(_mm256_add_epi16(s0, s1), &y[i], y[i].d * fp16_to_f32(x[i].d), acc);
    }
    return hsum_ps(acc);
}
#endif

void quant_tq_install(struct quant_kernels *tq1, struct quant_kernels *tq2)
{
#if defined(QUANT_HAVE_AVX2)
    tq1->vec_dot = dot_tq1_0_avx2;
    tq2->vec_dot = dot_tq2_0_avx2;
#else
    /* a portable build gives the reference machine's bits too */
    tq1->vec_dot = quant_dot_tq1_0_x86order;
    tq2->vec_dot = quant_dot_tq2_0_x86order;
#endif
}
