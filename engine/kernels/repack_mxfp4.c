/* MXFP4 matmuls in the repacked order, tiled (see repack_mxfp4.h). */
#include "kernels/repack_mxfp4.h"

#include "kernels/quant_internal.h"
#include "kernels/quant_mxfp4.h"

#if defined(QUANT_HAVE_AVX2)

/* The 32 doubled E2M1 values of a block, in element order (low nibbles are
 * elements 0-15, high nibbles 16-31), through the value table. */
static inline __m256i mx_values(const block_mxfp4 *x, __m128i lut, __m128i m4)
{
    const __m128i q = _mm_loadu_si128((const __m128i *)x->qs);
    const __m128i lo = _mm_shuffle_epi8(lut, _mm_and_si128(q, m4));
    const __m128i hi = _mm_shuffle_epi8(lut, _mm_and_si128(_mm_srli_epi16(q, 4), m4));
    return _mm256_inserti128_si256(_mm256_castsi128_si256(lo), hi, 1);
}

/* 8 int32 partial sums of w . y: |w| <= 12 and |y| <= 127, so maddubs'
 * int16 pair sums (at most 3048) never saturate and the sums are exact. */
static inline __m256i mx_partial(__m256i aw, __m256i w, __m256i y, __m256i ones)
{
    return _mm256_madd_epi16(_mm256_maddubs_epi16(aw, _mm256_sign_epi8(y, w)), ones);
}

/* The 4 totals of 4 vectors of partial sums, in one vector. */
static inline __m128i mx_hsum4(__m256i a, __m256i b, __m256i c, __m256i d)
{
    const __m256i h = _mm256_hadd_epi32(_mm256_hadd_epi32(a, b), _mm256_hadd_epi32(c, d));
    return _mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
}

/* The F16 scales of four Q8_0 blocks as floats (exact conversions). */
static inline __m128 mx_da4(const block_q8_0 *a, const block_q8_0 *b, const block_q8_0 *c, const block_q8_0 *d)
{
    return _mm_cvtph_ps(_mm_setr_epi16((short)a->d, (short)b->d, (short)c->d, (short)d->d, 0, 0, 0, 0));
}

/* Four weight rows against four token rows: o[r][t]. Per block one decoding
 * of each row for the four tokens, one horizontal sum per row giving the
 * four tokens' integer sums, and per output the chain's
 * fma(isum, d_w * d_a, acc). */
static void mx_tile_4x4(const block_mxfp4 *const x[4], const block_q8_0 *const y[4], int64_t nb, float o[4][4])
{
    const __m128i lut = _mm_loadu_si128((const __m128i *)quant_kvalues_mxfp4), m4 = _mm_set1_epi8(0x0F);
    const __m256i ones = _mm256_set1_epi16(1);
    __m128 acc0 = _mm_setzero_ps(), acc1 = _mm_setzero_ps(), acc2 = _mm_setzero_ps(), acc3 = _mm_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        const __m256i q0 = _mm256_loadu_si256((const __m256i *)y[0][b].qs);
        const __m256i q1 = _mm256_loadu_si256((const __m256i *)y[1][b].qs);
        const __m256i q2 = _mm256_loadu_si256((const __m256i *)y[2][b].qs);
        const __m256i q3 = _mm256_loadu_si256((const __m256i *)y[3][b].qs);
        const __m128 da = mx_da4(&y[0][b], &y[1][b], &y[2][b], &y[3][b]);
#define MX_ROW(k, acc)                                                                                                 \
    do {                                                                                                               \
        const __m256i w = mx_values(&x[k][b], lut, m4), aw = _mm256_sign_epi8(w, w);                                   \
        const __m128i s = mx_hsum4(mx_partial(aw, w, q0, ones), mx_partial(aw, w, q1, ones),                           \
                                   mx_partial(aw, w, q2, ones), mx_partial(aw, w, q3, ones));                          \
        const __m128 sc = _mm_mul_ps(_mm_set1_ps(quant_e8m0_to_fp32_half(x[k][b].e)), da);                             \
        acc = _mm_fmadd_ps(_mm_cvtepi32_ps(s), sc, acc);                                                               \
    } while (0)
        MX_ROW(0, acc0);
        MX_ROW(1, acc1);
        MX_ROW(2, acc2);
        MX_ROW(3, acc3);
#undef MX_ROW
    }
    _mm_storeu_ps(o[0], acc0);
    _mm_storeu_ps(o[1], acc1);
    _mm_storeu_ps(o[2], acc2);
    _mm_storeu_ps(o[3], acc3);
}

/* Four weight rows against one token row (the gemv): out[r]. */
static void mx_rows4(const block_mxfp4 *const x[4], const block_q8_0 *y, int64_t nb, float out[4])
{
    const __m128i lut = _mm_loadu_si128((const __m128i *)quant_kvalues_mxfp4), m4 = _mm_set1_epi8(0x0F);
    const __m256i ones = _mm256_set1_epi16(1);
    __m128 acc = _mm_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        const __m256i q = _mm256_loadu_si256((const __m256i *)y[b].qs);
        __m256i p[4];
        float dw[4];
        for (int k = 0; k < 4; k++) {
            const __m256i w = mx_values(&x[k][b], lut, m4);
            p[k] = mx_partial(_mm256_sign_epi8(w, w), w, q, ones);
            dw[k] = quant_e8m0_to_fp32_half(x[k][b].e);
        }
        const __m128 sc = _mm_mul_ps(_mm_loadu_ps(dw), _mm_set1_ps(fp16_to_f32(y[b].d)));
        acc = _mm_fmadd_ps(_mm_cvtepi32_ps(mx_hsum4(p[0], p[1], p[2], p[3])), sc, acc);
    }
    _mm_storeu_ps(out, acc);
}
#endif

void repack_mxfp4_matmul(const void *w, int64_t n, int64_t r0, int64_t r1, const uint8_t *act, size_t act_stride,
                         int n_tok, float *out, int64_t out_stride)
{
    const int64_t nb = n / QK_MXFP4;
    const size_t rb = (size_t)nb * sizeof(block_mxfp4);
    int64_t r = r0;
#if defined(QUANT_HAVE_AVX2)
    for (; r + 4 <= r1; r += 4) {
        const block_mxfp4 *x[4];
        for (int k = 0; k < 4; k++)
            x[k] = (const block_mxfp4 *)((const uint8_t *)w + (size_t)(r + k) * rb);
        int t = 0;
        for (; t + 4 <= n_tok; t += 4) {
            const block_q8_0 *y[4];
            for (int j = 0; j < 4; j++)
                y[j] = (const block_q8_0 *)(act + (size_t)(t + j) * act_stride);
            float o[4][4];
            mx_tile_4x4(x, y, nb, o);
            for (int j = 0; j < 4; j++)
                for (int k = 0; k < 4; k++)
                    out[(int64_t)(t + j) * out_stride + r + k] = o[k][j];
        }
        for (; t < n_tok; t++)
            mx_rows4(x, (const block_q8_0 *)(act + (size_t)t * act_stride), nb, out + (int64_t)t * out_stride + r);
    }
#endif
    for (; r < r1; r++)
        for (int t = 0; t < n_tok; t++)
            out[(int64_t)t * out_stride + r] =
                quant_dot_mxfp4_repacked(n, (const uint8_t *)w + (size_t)r * rb, act + (size_t)t * act_stride);
}
