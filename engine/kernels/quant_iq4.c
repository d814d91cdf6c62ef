/* IQ4_NL and IQ4_XS blocks (see quant_iq4.h): dequantization and the dot
 * products in each float order the reference uses, as portable C (the
 * specs, used by tests and by builds without AVX2, so that every CPU gives
 * the reference machine's bits) and as AVX2 kernels with the same bits.
 *
 * The integer parts are exact in every order: the reference multiplies
 * with the sign trick (|w| times act with w's sign, maddubs pairs), which
 * is exact here because no operand is -128 (table values are -127..113,
 * the Q8_0 / Q8_K quantizers stay within -127..127) and a pair of products
 * stays below 2 * 127 * 127 < 2^15. So only the float steps need care. */
#include "kernels/quant_iq4.h"

#include "kernels/kernel_scratch.h"

#include "kernels/matvec_iq.h"

#include <math.h>

const int8_t quant_kvalues_iq4nl[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                        1,    13,   25,  38,  53,  69,  89,  113};

/* ---- dequantization (ggml-quants.c: one multiply per element) ---- */

void quant_dequantize_iq4_nl(const void *src, float *dst, int64_t n)
{
    const block_iq4_nl *x = src;
    for (int64_t i = 0; i < n / QK4_NL; i++, dst += QK4_NL) {
        const float d = fp16_to_f32(x[i].d);
        for (int j = 0; j < QK4_NL / 2; j++) {
            dst[j] = d * (float)quant_kvalues_iq4nl[x[i].qs[j] & 0x0F];
            dst[j + QK4_NL / 2] = d * (float)quant_kvalues_iq4nl[x[i].qs[j] >> 4];
        }
    }
}

void quant_dequantize_iq4_xs(const void *src, float *dst, int64_t n)
{
    const block_iq4_xs *x = src;
    for (int64_t i = 0; i < n / QK_K; i++) {
        const float d = fp16_to_f32(x[i].d);
        for (int ib = 0; ib < QK_K / 32; ib++, dst += 32) {
            const float dl = d * (float)(quant_iq4_xs_scale(&x[i], ib) - 32);
            const uint8_t *qs = x[i].qs + 16 * ib;
            for (int j = 0; j < 16; j++) {
                dst[j] = dl * (float)quant_kvalues_iq4nl[qs[j] & 0x0F];
                dst[j + 16] = dl * (float)quant_kvalues_iq4nl[qs[j] >> 4];
            }
        }
    }
}

/* ---- integer parts ---- */

/* Element e (0..31) of a 16-byte IQ4_NL-layout nibble array. */
static inline int iq4_value(const uint8_t *qs, int e)
{
    return quant_kvalues_iq4nl[e < 16 ? qs[e] & 0x0F : qs[e - 16] >> 4];
}

/* Lane k (0..7) of the reference's 8-lane sums: elements 4k..4k+3. */
static inline int iq4_lane(const uint8_t *qs, const int8_t *y, int k)
{
    int s = 0;
    for (int e = 4 * k; e < 4 * k + 4; e++)
        s += iq4_value(qs, e) * y[e];
    return s;
}

/* The whole 32-element integer dot. */
static inline int iq4_isum(const uint8_t *qs, const int8_t *y)
{
    int s = 0;
    for (int e = 0; e < 32; e++)
        s += iq4_value(qs, e) * y[e];
    return s;
}

/* hsum_float_8: (hi + lo), then (0 + 2) + (1 + 3). */
static inline float hsum8_c(const float a[8])
{
    float r[4];
    for (int k = 0; k < 4; k++)
        r[k] = a[k + 4] + a[k];
    return (r[0] + r[2]) + (r[1] + r[3]);
}

/* d_act * d_w of an IQ4_NL block (the reference's operand order). */
static inline float nl_scale(const block_iq4_nl *x, const block_q8_0 *y)
{
    return fp16_to_f32(y->d) * fp16_to_f32(x->d);
}

/* ---- IQ4_NL x Q8_0, portable ---- */

float quant_dot_iq4_nl_scalar(int64_t n, const void *w, const void *act)
{
    const block_iq4_nl *x = w;
    const block_q8_0 *y = act;
    float sum = 0.0f;
    for (int64_t i = 0; i < n / QK4_NL; i++) {
        /* the product rounded, then added: the C as written */
        volatile float p = nl_scale(&x[i], &y[i]) * (float)iq4_isum(x[i].qs, y[i].qs);
        sum += p;
    }
    return sum;
}

float quant_dot_iq4_nl_x86order(int64_t n, const void *w, const void *act)
{
    const block_iq4_nl *x = w;
    const block_q8_0 *y = act;
    const int64_t nb = n / QK4_NL;
    float acc[2][8] = {{0}};
    int64_t i = 0;
    for (; i + 1 < nb; i += 2)
        for (int a = 0; a < 2; a++) {
            const float d = nl_scale(&x[i + a], &y[i + a]);
            for (int k = 0; k < 8; k++)
                acc[a][k] = fmaf(d, (float)iq4_lane(x[i + a].qs, y[i + a].qs, k), acc[a][k]);
        }
    float t[8];
    for (int k = 0; k < 8; k++)
        t[k] = acc[0][k] + acc[1][k];
    float sum = hsum8_c(t);
    /* the odd last block: `sumf += d * (sumi1 + sumi2)`, which the
     * reference's GCC build leaves a multiply and an add (vmulss, vaddss in
     * its libggml-cpu; the reference dumps of test_iq4 show it too) */
    for (; i < nb; i++) {
        volatile float p = nl_scale(&x[i], &y[i]) * (float)iq4_isum(x[i].qs, y[i].qs);
        sum += p;
    }
    return sum;
}

float quant_dot_iq4_nl_tinyblas(int64_t n, const void *w, const void *act)
{
    const block_iq4_nl *x = w;
    const block_q8_0 *y = act;
    float acc[8] = {0};
    for (int64_t i = 0; i < n / QK4_NL; i++) {
        /* unhalf(A.d) * unhalf(B.d): weight times activation scale */
        const float d = fp16_to_f32(x[i].d) * fp16_to_f32(y[i].d);
        for (int k = 0; k < 8; k++)
            acc[k] = fmaf(d, (float)iq4_lane(x[i].qs, y[i].qs, k), acc[k]);
    }
    return hsum8_c(acc);
}

float quant_dot_iq4_nl_repacked(int64_t n, const void *w, const void *act)
{
    const block_iq4_nl *x = w;
    const block_q8_0 *y = act;
    float acc = 0.0f;
    for (int64_t i = 0; i < n / QK4_NL; i++)
        acc = fmaf((float)iq4_isum(x[i].qs, y[i].qs), fp16_to_f32(x[i].d) * fp16_to_f32(y[i].d), acc);
    return acc;
}

/* ---- IQ4_XS x Q8_K, portable ---- */

float quant_dot_iq4_xs_scalar(int64_t n, const void *w, const void *act)
{
    const block_iq4_xs *x = w;
    const block_q8_K *y = act;
    float sum = 0.0f;
    for (int64_t i = 0; i < n / QK_K; i++) {
        const float d4d8 = fp16_to_f32(x[i].d) * y[i].d;
        for (int ib = 0; ib < QK_K / 32; ib++) {
            const float dl = d4d8 * (float)(quant_iq4_xs_scale(&x[i], ib) - 32);
            volatile float p = dl * (float)iq4_isum(x[i].qs + 16 * ib, y[i].qs + 32 * ib);
            sum += p;
        }
    }
    return sum;
}

/* Lane k of a super-block: the ls-weighted lane-k sums of its 8 sub-blocks. */
static inline int xs_lane(const block_iq4_xs *x, const block_q8_K *y, int k)
{
    int s = 0;
    for (int ib = 0; ib < QK_K / 32; ib++)
        s += (quant_iq4_xs_scale(x, ib) - 32) * iq4_lane(x->qs + 16 * ib, y->qs + 32 * ib, k);
    return s;
}

float quant_dot_iq4_xs_x86order(int64_t n, const void *w, const void *act)
{
    const block_iq4_xs *x = w;
    const block_q8_K *y = act;
    float acc[8] = {0};
    for (int64_t i = 0; i < n / QK_K; i++) {
        const float d = fp16_to_f32(x[i].d) * y[i].d;
        for (int k = 0; k < 8; k++)
            acc[k] = fmaf(d, (float)xs_lane(&x[i], &y[i], k), acc[k]);
    }
    return hsum8_c(acc);
}

/* ---- AVX2 ---- */

#if defined(QUANT_HAVE_AVX2)
/* The 32 signed values of 16 nibble bytes: low nibbles (elements 0-15)
 * then high (16-31), through the table in both 128-bit lanes. */
static inline __m256i iq4_values_avx2(const uint8_t *qs)
{
    const __m256i lut = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)quant_kvalues_iq4nl));
    /* the 16 bytes in both halves, the upper half shifted by 4: a
     * broadcast load and a variable shift keep the insert (a shuffle-port
     * instruction, next to pshufb) out of the loop */
    const __m256i q = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)qs));
    const __m256i nib =
        _mm256_and_si256(_mm256_srlv_epi64(q, _mm256_set_epi64x(4, 4, 0, 0)), _mm256_set1_epi8(0x0F));
    return _mm256_shuffle_epi8(lut, nib);
}

static inline __m256i load32(const int8_t *p)
{
    return _mm256_loadu_si256((const __m256i *)(const void *)p);
}

/* The totals of 8 vectors of 8 int32 sums, in one vector (lane i: vector
 * i's); exact in any order. */
static inline __m256i hsum8x8_i32(__m256i a, __m256i b, __m256i c, __m256i d, __m256i e, __m256i f, __m256i g,
                                  __m256i h)
{
    const __m256i abcd = _mm256_hadd_epi32(_mm256_hadd_epi32(a, b), _mm256_hadd_epi32(c, d));
    const __m256i efgh = _mm256_hadd_epi32(_mm256_hadd_epi32(e, f), _mm256_hadd_epi32(g, h));
    /* 128-bit lane 0 of abcd holds a..d's low halves, lane 1 their high ones */
    return _mm256_add_epi32(_mm256_permute2x128_si256(abcd, efgh, 0x20),
                            _mm256_permute2x128_si256(abcd, efgh, 0x31));
}

static float dot_iq4_nl_avx2(int64_t n, const void *w, const void *act)
{
    const block_iq4_nl *x = w;
    const block_q8_0 *y = act;
    const int64_t nb = n / QK4_NL;
    __m256 acc1 = _mm256_setzero_ps(), acc2 = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 1 < nb; i += 2) {
        const __m256i p1 = dot_s8(iq4_values_avx2(x[i].qs), load32(y[i].qs));
        const __m256i p2 = dot_s8(iq4_values_avx2(x[i + 1].qs), load32(y[i + 1].qs));
        acc1 = _mm256_fmadd_ps(_mm256_set1_ps(nl_scale(&x[i], &y[i])), _mm256_cvtepi32_ps(p1), acc1);
        acc2 = _mm256_fmadd_ps(_mm256_set1_ps(nl_scale(&x[i + 1], &y[i + 1])), _mm256_cvtepi32_ps(p2), acc2);
    }
    float sum = hsum_ps(_mm256_add_ps(acc1, acc2));
    for (; i < nb; i++) { /* rounded product, then the add (see the x86 order) */
        volatile float p =
            nl_scale(&x[i], &y[i]) * (float)hsum_epi32(dot_s8(iq4_values_avx2(x[i].qs), load32(y[i].qs)));
        sum += p;
    }
    return sum;
}

/* x . y for the 4 activation blocks ya..yd against one block's values v
 * (|v| precomputed as av): 4 vectors of 8 lane sums (elements 4k..4k+3). */
#define IQ4_DOT4(v, av, ya, yb, yc, yd, p)                                                                   \
    do {                                                                                                     \
        p[0] = dpbusd(_mm256_setzero_si256(), av, _mm256_sign_epi8(load32((ya)->qs), v));                    \
        p[1] = dpbusd(_mm256_setzero_si256(), av, _mm256_sign_epi8(load32((yb)->qs), v));                    \
        p[2] = dpbusd(_mm256_setzero_si256(), av, _mm256_sign_epi8(load32((yc)->qs), v));                    \
        p[3] = dpbusd(_mm256_setzero_si256(), av, _mm256_sign_epi8(load32((yd)->qs), v));                    \
    } while (0)

/* One weight row against 4 activation rows in tinyBLAS's order: each
 * output its own 8-lane accumulator, the row's values decoded once. */
static void nl_tinyblas_1x4(const block_iq4_nl *x, const block_q8_0 *y0, const block_q8_0 *y1,
                            const block_q8_0 *y2, const block_q8_0 *y3, int64_t nb, float out[4])
{
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps(), acc2 = _mm256_setzero_ps(),
           acc3 = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        const __m256i v = iq4_values_avx2(x[b].qs);
        const __m256i av = _mm256_sign_epi8(v, v);
        __m256i p[4];
        IQ4_DOT4(v, av, &y0[b], &y1[b], &y2[b], &y3[b], p);
        /* d_a * d_w: tinyBLAS's d_w * d_a, the same products */
        const __m128 ds = quant_f16x4_mul(y0[b].d, y1[b].d, y2[b].d, y3[b].d, fp16_to_f32(x[b].d));
        const __m256 d2 = _mm256_set_m128(ds, ds);
        acc0 = _mm256_fmadd_ps(_mm256_permute_ps(d2, 0x00), _mm256_cvtepi32_ps(p[0]), acc0);
        acc1 = _mm256_fmadd_ps(_mm256_permute_ps(d2, 0x55), _mm256_cvtepi32_ps(p[1]), acc1);
        acc2 = _mm256_fmadd_ps(_mm256_permute_ps(d2, 0xAA), _mm256_cvtepi32_ps(p[2]), acc2);
        acc3 = _mm256_fmadd_ps(_mm256_permute_ps(d2, 0xFF), _mm256_cvtepi32_ps(p[3]), acc3);
    }
    out[0] = hsum_ps(acc0);
    out[1] = hsum_ps(acc1);
    out[2] = hsum_ps(acc2);
    out[3] = hsum_ps(acc3);
}

static float dot_iq4_nl_tinyblas_avx2(const block_iq4_nl *x, const block_q8_0 *y, int64_t nb)
{
    __m256 acc = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        const __m256i p = dot_s8(iq4_values_avx2(x[b].qs), load32(y[b].qs));
        acc = _mm256_fmadd_ps(_mm256_set1_ps(fp16_to_f32(x[b].d) * fp16_to_f32(y[b].d)),
                              _mm256_cvtepi32_ps(p), acc);
    }
    return hsum_ps(acc);
}

/* Repacked order, one row and one token (rows left over from the tiles). */
static float dot_iq4_nl_repacked_avx2(const block_iq4_nl *x, const block_q8_0 *y, int64_t nb)
{
    float acc = 0.0f;
    for (int64_t b = 0; b < nb; b++)
        acc = fmaf((float)hsum_epi32(dot_s8(iq4_values_avx2(x[b].qs), load32(y[b].qs))),
                   fp16_to_f32(x[b].d) * fp16_to_f32(y[b].d), acc);
    return acc;
}

/* Repacked order, two weight rows against 4 activation rows: the eight
 * block sums from one reduction, then per output the scalar
 * fma(isum, d_w * d_a, acc) of quant_dot_iq4_nl_repacked, side by side
 * (lanes 0-3: row 0's tokens, 4-7: row 1's). */
static void nl_repacked_2x4(const block_iq4_nl *x0, const block_iq4_nl *x1, const block_q8_0 *y0,
                            const block_q8_0 *y1, const block_q8_0 *y2, const block_q8_0 *y3, int64_t nb,
                            float out0[4], float out1[4])
{
    __m256 acc = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        const __m256i v0 = iq4_values_avx2(x0[b].qs), v1 = iq4_values_avx2(x1[b].qs);
        const __m256i av0 = _mm256_sign_epi8(v0, v0), av1 = _mm256_sign_epi8(v1, v1);
        __m256i p[4], q[4];
        IQ4_DOT4(v0, av0, &y0[b], &y1[b], &y2[b], &y3[b], p);
        IQ4_DOT4(v1, av1, &y0[b], &y1[b], &y2[b], &y3[b], q);
        const __m256 ds = _mm256_mul_ps(
            _mm256_set_m128(_mm_set1_ps(fp16_to_f32(x1[b].d)), _mm_set1_ps(fp16_to_f32(x0[b].d))),
            _mm256_cvtph_ps(_mm_set1_epi64x((long long)((uint64_t)y0[b].d | (uint64_t)y1[b].d << 16 |
                                                        (uint64_t)y2[b].d << 32 | (uint64_t)y3[b].d << 48))));
        acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(hsum8x8_i32(p[0], p[1], p[2], p[3], q[0], q[1], q[2], q[3])),
                              ds, acc);
    }
    _mm_storeu_ps(out0, _mm256_castps256_ps128(acc));
    _mm_storeu_ps(out1, _mm256_extractf128_ps(acc, 1));
}

/* Repacked order, 8 weight rows against one activation row (gemv). Rows
 * go in pairs, one per 128-bit half: the low nibbles of both (elements
 * 0-15) in one vector, the high ones (16-31) in another, against the
 * activations' halves duplicated; the sign trick runs the other way round
 * (|a|, shared by all rows, unsigned; the values with a's signs), the same
 * exact products. A pair's sums land 4 lanes per row, which halves the
 * horizontal work; each row's block total, and so every bit, is the same. */
static void nl_repacked_8x1(const uint8_t *w, size_t rb, const block_q8_0 *y, int64_t nb, float out[8])
{
    const __m256i lut = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)quant_kvalues_iq4nl));
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        const __m128i a0 = _mm_loadu_si128((const __m128i *)y[b].qs),
                      a1 = _mm_loadu_si128((const __m128i *)y[b].qs + 1);
        const __m256i alo = _mm256_set_m128i(a0, a0), ahi = _mm256_set_m128i(a1, a1);
        const __m256i aalo = _mm256_sign_epi8(alo, alo), aahi = _mm256_sign_epi8(ahi, ahi);
        const block_iq4_nl *x[8];
        __m256i p[4];
        _Pragma("GCC unroll 4") for (int k = 0; k < 4; k++)
        {
            x[2 * k] = (const block_iq4_nl *)(const void *)(w + (size_t)(2 * k) * rb) + b;
            x[2 * k + 1] = (const block_iq4_nl *)(const void *)(w + (size_t)(2 * k + 1) * rb) + b;
            const __m256i q = _mm256_set_m128i(_mm_loadu_si128((const __m128i *)x[2 * k + 1]->qs),
                                               _mm_loadu_si128((const __m128i *)x[2 * k]->qs));
            const __m256i vlo = _mm256_shuffle_epi8(lut, _mm256_and_si256(q, m4));
            const __m256i vhi = _mm256_shuffle_epi8(lut, _mm256_and_si256(_mm256_srli_epi16(q, 4), m4));
            p[k] = dpbusd(dpbusd(_mm256_setzero_si256(), aalo, _mm256_sign_epi8(vlo, alo)), aahi,
                          _mm256_sign_epi8(vhi, ahi));
        }
        /* lanes 0-3 of p[k]: row 2k, 4-7: row 2k + 1 */
        const __m256i h = _mm256_hadd_epi32(_mm256_hadd_epi32(p[0], p[1]), _mm256_hadd_epi32(p[2], p[3]));
        /* h: 128-bit half 0 rows 0, 2, 4, 6; half 1 rows 1, 3, 5, 7 */
        const __m256i isum = _mm256_permutevar8x32_epi32(h, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
        /* the scales as two 64-bit words (eight 16-bit stores read back as
         * one vector would stall store forwarding) */
        const float da = fp16_to_f32(y[b].d);
        const __m256 ds = _mm256_set_m128(quant_f16x4_mul(x[4]->d, x[5]->d, x[6]->d, x[7]->d, da),
                                          quant_f16x4_mul(x[0]->d, x[1]->d, x[2]->d, x[3]->d, da));
        acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), ds, acc);
    }
    _mm256_storeu_ps(out, acc);
}

/* IQ4_XS: per super-block the 8 lanes of ls-weighted sums. Not
 * iq4_xs_rows with nt = 1: one row wants its sub-blocks unrolled by 8,
 * which with four activations spills the sums (one row through
 * iq4_xs_rows measured 0.80x the reference's vec_dot, this 1.1x). With pf
 * set, each block step prefetches step bytes of the rows ahead
 * (quant_prefetch_step); the matvec below runs the same lanes faster. */
static inline __attribute__((always_inline)) float iq4_xs_dot_body(int64_t n, const void *w, const void *act,
                                                                    const char *pf, size_t step)
{
    const block_iq4_xs *x = w;
    const block_q8_K *y = act;
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / QK_K; i++) {
        quant_prefetch_step(pf, i, step);
        __m256i s = _mm256_setzero_si256();
        _Pragma("GCC unroll 8") for (int ib = 0; ib < QK_K / 32; ib++)
        {
            const __m256i v = iq4_values_avx2(x[i].qs + 16 * ib), a = load32(y[i].qs + 32 * ib);
            const __m256i p16 = _mm256_maddubs_epi16(_mm256_sign_epi8(v, v), _mm256_sign_epi8(a, v));
            const __m256i ls = _mm256_set1_epi16((short)(quant_iq4_xs_scale(&x[i], ib) - 32));
            s = _mm256_add_epi32(s, _mm256_madd_epi16(p16, ls));
        }
        acc = _mm256_fmadd_ps(_mm256_set1_ps(fp16_to_f32(x[i].d) * y[i].d), _mm256_cvtepi32_ps(s), acc);
    }
    return hsum_ps(acc);
}

static float dot_iq4_xs_avx2(int64_t n, const void *w, const void *act)
{
    return iq4_xs_dot_body(n, w, act, NULL, 0);
}

#if !defined(QUANT_HAVE_MATVEC_IQ512)
/* The one-token matvec: vec_dot's lanes with fewer instructions. The token
 * comes reordered once per call, each pair of sub-blocks as [2p: 0-15 |
 * 2p+1: 0-15] [2p: 16-31 | 2p+1: 16-31], so that one 32-byte load of the
 * pair's nibbles gives both sub-blocks' values with an and, a shift and two
 * pshufbs, where vec_dot broadcasts each sub-block's 16 bytes and shifts
 * them apart. Lanes 0-3 of the first product then hold lanes 0-3 of
 * sub-block 2p, lanes 4-7 lanes 0-3 of 2p + 1; the second product the
 * lanes 4-7; two accumulators keep them apart and two permutes per
 * super-block put each of vec_dot's 8 lane sums back in its lane. The 8
 * scales are formed per super-block in one register, ordered [0 2 4 6 | 1
 * 3 5 7] so that one in-lane pshufb gives a pair's multipliers. The
 * integers are vec_dot's, so are the float steps. */
/* a (n bytes) into the pair order above, and |a| the same way */
static void xs_pair_token(const block_q8_K *y, int64_t n, int8_t *ar, uint8_t *aar)
{
    for (int64_t i = 0; i < n / QK_K; i++)
        for (int k = 0; k < QK_K; k += 64) {
            const int8_t *a = y[i].qs + k;
            int8_t *o = ar + i * QK_K + k;
            uint8_t *oa = aar + i * QK_K + k;
            const __m256i a0 = load32(a), a1 = load32(a + 32);
            const __m256i r0 = _mm256_permute2x128_si256(a0, a1, 0x20), r1 = _mm256_permute2x128_si256(a0, a1, 0x31);
            _mm256_storeu_si256((__m256i *)o, r0);
            _mm256_storeu_si256((__m256i *)(o + 32), r1);
            _mm256_storeu_si256((__m256i *)oa, _mm256_sign_epi8(r0, r0));
            _mm256_storeu_si256((__m256i *)(oa + 32), _mm256_sign_epi8(r1, r1));
        }
}

static inline __attribute__((always_inline)) float iq4_xs_pair_body(int64_t n, const block_iq4_xs *x,
                                                                     const block_q8_K *y, const int8_t *ar,
                                                                     const uint8_t *aar, const char *pf, size_t step)
{
    const __m256i lut = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)quant_kvalues_iq4nl));
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / QK_K; i++) {
        quant_prefetch_step(pf, i, step);
        uint32_t sl;
        memcpy(&sl, x[i].scales_l, 4);
        const uint32_t sh = x[i].scales_h;
        /* dword lanes [s0 s2 s4 s6 | s1 s3 s5 s7], each as two int16 */
        const __m256i lo = _mm256_and_si256(
            _mm256_srlv_epi32(_mm256_set1_epi32((int)sl), _mm256_setr_epi32(0, 8, 16, 24, 4, 12, 20, 28)),
            _mm256_set1_epi32(0xF));
        const __m256i hi = _mm256_and_si256(
            _mm256_srlv_epi32(_mm256_set1_epi32((int)sh), _mm256_setr_epi32(0, 4, 8, 12, 2, 6, 10, 14)),
            _mm256_set1_epi32(3));
        const __m256i u = _mm256_or_si256(lo, _mm256_slli_epi32(hi, 4));
        const __m256i ls = _mm256_sub_epi16(_mm256_or_si256(u, _mm256_slli_epi32(u, 16)), _mm256_set1_epi16(32));
        const int8_t *a = ar + i * QK_K;
        const uint8_t *aa = aar + i * QK_K;
        __m256i s0 = _mm256_setzero_si256(), s1 = _mm256_setzero_si256();
        _Pragma("GCC unroll 4") for (int p = 0; p < 4; p++)
        {
            const __m256i q = _mm256_loadu_si256((const __m256i *)(x[i].qs + 32 * p));
            const __m256i v0 = _mm256_shuffle_epi8(lut, _mm256_and_si256(q, m4));
            const __m256i v1 = _mm256_shuffle_epi8(lut, _mm256_and_si256(_mm256_srli_epi16(q, 4), m4));
            const __m256i p0 = _mm256_maddubs_epi16(load32((const int8_t *)aa + 64 * p), _mm256_sign_epi8(v0, load32(a + 64 * p)));
            const __m256i p1 =
                _mm256_maddubs_epi16(load32((const int8_t *)aa + 64 * p + 32), _mm256_sign_epi8(v1, load32(a + 64 * p + 32)));
            const __m256i sc = quant_dword_bcast(ls, p);
            s0 = _mm256_add_epi32(s0, _mm256_madd_epi16(p0, sc));
            s1 = _mm256_add_epi32(s1, _mm256_madd_epi16(p1, sc));
        }
        const __m256i sum = _mm256_add_epi32(_mm256_permute2x128_si256(s0, s1, 0x20), _mm256_permute2x128_si256(s0, s1, 0x31));
        acc = _mm256_fmadd_ps(_mm256_set1_ps(fp16_to_f32(x[i].d) * y[i].d), _mm256_cvtepi32_ps(sum), acc);
    }
    return hsum_ps(acc);
}

static void matvec_iq4_xs_avx2(int64_t n, const void *w, size_t rs, int64_t rows, const void *act, float *out)
{
    int8_t *ar = kernel_scratch_get(2 * (size_t)n); /* a matvec runs inside no GEMM */
    uint8_t *aar = (uint8_t *)ar + n;
    const size_t step = quant_prefetch_step_size(rs, 1, n / QK_K);
    if (ar)
        xs_pair_token(act, n, ar, aar);
    for (int64_t r = 0; r < rows; r++) {
        const char *x = (const char *)w + (size_t)r * rs;
        const bool ahead = r + QUANT_PF_AHEAD < rows; /* no prefetch past the matrix */
        const char *pf = ahead ? x + QUANT_PF_AHEAD * rs : NULL;
        /* without scratch memory, vec_dot's own body */
        out[r] = ar ? iq4_xs_pair_body(n, (const block_iq4_xs *)x, act, ar, aar, pf, ahead ? step : 0)
                    : iq4_xs_dot_body(n, x, act, pf, ahead ? step : 0);
    }
}
#endif

/* IQ4_XS, one row against nt (<= 4) activations: vec_dot's arithmetic for
 * each, the row's values and scales decoded once. Always inlined with a
 * constant nt: with nt a run-time bound gcc kept the four sums in memory,
 * each add waiting on a store (93 % of an IQ4_XS prompt went there, at the
 * reference's speed). */
static inline __attribute__((always_inline)) void iq4_xs_rows(int64_t n, const void *w, const void *const act[4],
                                                             int nt, float out[4])
{
    const block_iq4_xs *x = w;
    __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
    for (int64_t i = 0; i < n / QK_K; i++) {
        __m256i s[4] = {_mm256_setzero_si256(), _mm256_setzero_si256(), _mm256_setzero_si256(),
                        _mm256_setzero_si256()};
        for (int ib = 0; ib < QK_K / 32; ib++) {
            const __m256i v = iq4_values_avx2(x[i].qs + 16 * ib);
            const __m256i av = _mm256_sign_epi8(v, v);
            const __m256i ls = _mm256_set1_epi16((short)(quant_iq4_xs_scale(&x[i], ib) - 32));
#pragma GCC unroll 4
            for (int c = 0; c < nt; c++) {
                const block_q8_K *y = (const block_q8_K *)act[c] + i;
                const __m256i p16 = _mm256_maddubs_epi16(av, _mm256_sign_epi8(load32(y->qs + 32 * ib), v));
                s[c] = _mm256_add_epi32(s[c], _mm256_madd_epi16(p16, ls));
            }
        }
        const float dx = fp16_to_f32(x[i].d);
#pragma GCC unroll 4
        for (int c = 0; c < nt; c++) {
            const block_q8_K *y = (const block_q8_K *)act[c] + i;
            acc[c] = _mm256_fmadd_ps(_mm256_set1_ps(dx * y->d), _mm256_cvtepi32_ps(s[c]), acc[c]);
        }
    }
#pragma GCC unroll 4
    for (int c = 0; c < nt; c++)
        out[c] = hsum_ps(acc[c]);
}

static void dot4_iq4_xs_avx2(int64_t n, const void *w, const void *const act[4], float out[4])
{
    iq4_xs_rows(n, w, act, 4, out);
}
#endif

void quant_iq4_install(enum tensor_type type, struct quant_kernels *k)
{
#if defined(QUANT_HAVE_AVX2)
    if (type == TENSOR_TYPE_IQ4_NL)
        k->vec_dot = dot_iq4_nl_avx2;
    if (type == TENSOR_TYPE_IQ4_XS) {
        k->vec_dot = dot_iq4_xs_avx2;
        k->dot4 = dot4_iq4_xs_avx2;
#if defined(QUANT_HAVE_MATVEC_IQ512)
        k->matvec = quant_avx512_matvec_iq4_xs;
#else
        k->matvec = matvec_iq4_xs_avx2;
#endif
    }
#else
    /* a portable build gives the reference machine's bits too */
    if (type == TENSOR_TYPE_IQ4_NL)
        k->vec_dot = quant_dot_iq4_nl_x86order;
    if (type == TENSOR_TYPE_IQ4_XS)
        k->vec_dot = quant_dot_iq4_xs_x86order;
#endif
}

/* ---- IQ4_NL batches (forward_matmul) ---- */

bool quant_iq4_nl_batch_applies(const gguf_tensor *w, int n_tok)
{
    /* ggml_repack_get_optimal_repack_type: IQ4_NL with ne[1] % 8 == 0 on
     * AVX2 machines; otherwise llamafile_sgemm takes batches (n >= 2) */
    return w->type == TENSOR_TYPE_IQ4_NL && (w->ne[1] % 8 == 0 || n_tok >= 2);
}

void quant_iq4_nl_batch_matmul(const gguf_tensor *w, int64_t n, int64_t r0, int64_t r1, const uint8_t *act,
                               size_t act_stride, int n_tok, float *out, int64_t out_stride)
{
    const bool repacked = w->ne[1] % 8 == 0;
    const int64_t nb = n / QK4_NL;
    const size_t rb = (size_t)nb * sizeof(block_iq4_nl);
    const uint8_t *wd = w->data;
#define ROW(r) ((const block_iq4_nl *)(const void *)(wd + (size_t)(r)*rb))
#define ACT(t) ((const block_q8_0 *)(const void *)(act + (size_t)(t)*act_stride))
#define OUT(t, r) out[(int64_t)(t)*out_stride + (r)]
    int64_t r = r0;
#if defined(QUANT_HAVE_AVX2)
    const int n4 = n_tok & ~3;
    if (n_tok == 1 && repacked)
        for (; r + 8 <= r1; r += 8)
            nl_repacked_8x1(wd + (size_t)r * rb, rb, ACT(0), nb, out + r);
    for (; r < r1;) {
        const int nr = repacked && r + 2 <= r1 ? 2 : 1; /* the repacked tile takes row pairs */
        int t = 0;
        for (; t < n4; t += 4) {
            float o[2][4];
            if (nr == 2)
                nl_repacked_2x4(ROW(r), ROW(r + 1), ACT(t), ACT(t + 1), ACT(t + 2), ACT(t + 3), nb, o[0],
                                o[1]);
            else if (repacked)
                for (int c = 0; c < 4; c++)
                    o[0][c] = dot_iq4_nl_repacked_avx2(ROW(r), ACT(t + c), nb);
            else
                nl_tinyblas_1x4(ROW(r), ACT(t), ACT(t + 1), ACT(t + 2), ACT(t + 3), nb, o[0]);
            for (int k = 0; k < nr; k++)
                for (int c = 0; c < 4; c++)
                    OUT(t + c, r + k) = o[k][c];
        }
        for (; t < n_tok; t++)
            for (int k = 0; k < nr; k++)
                OUT(t, r + k) = repacked ? dot_iq4_nl_repacked_avx2(ROW(r + k), ACT(t), nb)
                                         : dot_iq4_nl_tinyblas_avx2(ROW(r + k), ACT(t), nb);
        r += nr;
    }
#else
    for (; r < r1; r++)
        for (int t = 0; t < n_tok; t++)
            OUT(t, r) = repacked ? quant_dot_iq4_nl_repacked(n, ROW(r), ACT(t))
                                 : quant_dot_iq4_nl_tinyblas(n, ROW(r), ACT(t));
#endif
#undef ROW
#undef ACT
#undef OUT
}
