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

#include <math.h>

const int8_t quant_kvalues_iq4nl[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};

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
    return _mm256_shuffle_epi8(lut, nibbles32(qs));
}

static inline __m256i load32(const int8_t *p)
{
    return _mm256_loadu_si256((const __m256i *)(const void *)p);
}

/* The 4 totals of 4 vectors of 8 int32 sums (exact in any order). */
static inline __m128i hsum4x8_i32(__m256i a, __m256i b, __m256i c, __m256i d)
{
    const __m256i ab = _mm256_hadd_epi32(a, b), cd = _mm256_hadd_epi32(c, d);
    const __m256i abcd = _mm256_hadd_epi32(ab, cd);
    return _mm_add_epi32(_mm256_castsi256_si128(abcd), _mm256_extracti128_si256(abcd, 1));
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
        volatile float p = nl_scale(&x[i], &y[i]) * (float)hsum_epi32(dot_s8(iq4_values_avx2(x[i].qs), load32(y[i].qs)));
        sum += p;
    }
    return sum;
}

/* One weight row against 4 activation rows in tinyBLAS's order: each
 * output its own 8-lane accumulator, the row's values decoded once. */
static void nl_tinyblas_1x4(const block_iq4_nl *x, const block_q8_0 *const y[4], int64_t nb, float out[4])
{
    __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
    for (int64_t b = 0; b < nb; b++) {
        const __m256i v = iq4_values_avx2(x[b].qs);
        const __m256i av = _mm256_sign_epi8(v, v);
        float ds[4]; /* d_a * d_w: tinyBLAS's d_w * d_a, the same products */
        _mm_storeu_ps(ds, quant_f16x4_mul(y[0][b].d, y[1][b].d, y[2][b].d, y[3][b].d, fp16_to_f32(x[b].d)));
        _Pragma("GCC unroll 4") for (int c = 0; c < 4; c++)
        {
            const __m256i p = dpbusd(_mm256_setzero_si256(), av, _mm256_sign_epi8(load32(y[c][b].qs), v));
            const __m256 d = _mm256_set1_ps(ds[c]);
            acc[c] = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(p), acc[c]);
        }
    }
    for (int c = 0; c < 4; c++)
        out[c] = hsum_ps(acc[c]);
}

static float dot_iq4_nl_tinyblas_avx2(const block_iq4_nl *x, const block_q8_0 *y, int64_t nb)
{
    __m256 acc = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        const __m256i p = dot_s8(iq4_values_avx2(x[b].qs), load32(y[b].qs));
        acc = _mm256_fmadd_ps(_mm256_set1_ps(fp16_to_f32(x[b].d) * fp16_to_f32(y[b].d)), _mm256_cvtepi32_ps(p), acc);
    }
    return hsum_ps(acc);
}

/* Repacked order, one weight row against 4 activation rows: the four
 * block sums from one horizontal add, then per output the scalar
 * fma(isum, d_w * d_a, acc) of quant_dot_iq4_nl_repacked, side by side. */
static void nl_repacked_1x4(const block_iq4_nl *x, const block_q8_0 *const y[4], int64_t nb, float out[4])
{
    __m128 acc = _mm_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        const __m256i v = iq4_values_avx2(x[b].qs);
        const __m256i av = _mm256_sign_epi8(v, v);
        __m256i p[4];
        for (int c = 0; c < 4; c++)
            p[c] = dpbusd(_mm256_setzero_si256(), av, _mm256_sign_epi8(load32(y[c][b].qs), v));
        const __m128 ds = quant_f16x4_mul(y[0][b].d, y[1][b].d, y[2][b].d, y[3][b].d, fp16_to_f32(x[b].d));
        acc = _mm_fmadd_ps(_mm_cvtepi32_ps(hsum4x8_i32(p[0], p[1], p[2], p[3])), ds, acc);
    }
    _mm_storeu_ps(out, acc);
}

/* Repacked order, 4 weight rows against one activation row (gemv). */
static void nl_repacked_4x1(const block_iq4_nl *const x[4], const block_q8_0 *y, int64_t nb, float out[4])
{
    __m128 acc = _mm_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        const __m256i a = load32(y[b].qs);
        __m256i p[4];
        for (int r = 0; r < 4; r++)
            p[r] = dot_s8(iq4_values_avx2(x[r][b].qs), a);
        const __m128 ds = quant_f16x4_mul(x[0][b].d, x[1][b].d, x[2][b].d, x[3][b].d, fp16_to_f32(y[b].d));
        acc = _mm_fmadd_ps(_mm_cvtepi32_ps(hsum4x8_i32(p[0], p[1], p[2], p[3])), ds, acc);
    }
    _mm_storeu_ps(out, acc);
}

/* IQ4_XS: per super-block the 8 lanes of ls-weighted sums. */
static float dot_iq4_xs_avx2(int64_t n, const void *w, const void *act)
{
    const block_iq4_xs *x = w;
    const block_q8_K *y = act;
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / QK_K; i++) {
        __m256i s = _mm256_setzero_si256();
        _Pragma("GCC unroll 8") for (int ib = 0; ib < QK_K / 32; ib++)
        {
            const __m256i v = iq4_values_avx2(x[i].qs + 16 * ib);
            const __m256i p16 = _mm256_maddubs_epi16(_mm256_sign_epi8(v, v), _mm256_sign_epi8(load32(y[i].qs + 32 * ib), v));
            const __m256i ls = _mm256_set1_epi16((short)(quant_iq4_xs_scale(&x[i], ib) - 32));
            s = _mm256_add_epi32(s, _mm256_madd_epi16(p16, ls));
        }
        acc = _mm256_fmadd_ps(_mm256_set1_ps(fp16_to_f32(x[i].d) * y[i].d), _mm256_cvtepi32_ps(s), acc);
    }
    return hsum_ps(acc);
}

/* IQ4_XS, one row against nt (<= 4) activations: vec_dot's arithmetic for
 * each, the row's values and scales decoded once. */
static void iq4_xs_rows(int64_t n, const void *w, const void *const act[4], int nt, float out[4])
{
    const block_iq4_xs *x = w;
    __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
    for (int64_t i = 0; i < n / QK_K; i++) {
        __m256i s[4] = {_mm256_setzero_si256(), _mm256_setzero_si256(), _mm256_setzero_si256(), _mm256_setzero_si256()};
        for (int ib = 0; ib < QK_K / 32; ib++) {
            const __m256i v = iq4_values_avx2(x[i].qs + 16 * ib);
            const __m256i av = _mm256_sign_epi8(v, v);
            const __m256i ls = _mm256_set1_epi16((short)(quant_iq4_xs_scale(&x[i], ib) - 32));
            for (int c = 0; c < nt; c++) {
                const block_q8_K *y = (const block_q8_K *)act[c] + i;
                const __m256i p16 = _mm256_maddubs_epi16(av, _mm256_sign_epi8(load32(y->qs + 32 * ib), v));
                s[c] = _mm256_add_epi32(s[c], _mm256_madd_epi16(p16, ls));
            }
        }
        const float dx = fp16_to_f32(x[i].d);
        for (int c = 0; c < nt; c++) {
            const block_q8_K *y = (const block_q8_K *)act[c] + i;
            acc[c] = _mm256_fmadd_ps(_mm256_set1_ps(dx * y->d), _mm256_cvtepi32_ps(s[c]), acc[c]);
        }
    }
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
#define ROW(r) ((const block_iq4_nl *)(const void *)(wd + (size_t)(r) * rb))
#define ACT(t) ((const block_q8_0 *)(const void *)(act + (size_t)(t) * act_stride))
#define OUT(t, r) out[(int64_t)(t) * out_stride + (r)]
    int64_t r = r0;
#if defined(QUANT_HAVE_AVX2)
    const int n4 = n_tok & ~3;
    if (n_tok == 1 && repacked)
        for (; r + 4 <= r1; r += 4) {
            const block_iq4_nl *x[4] = {ROW(r), ROW(r + 1), ROW(r + 2), ROW(r + 3)};
            nl_repacked_4x1(x, ACT(0), nb, out + r);
        }
    for (; r < r1; r++) {
        int t = 0;
        for (; t < n4; t += 4) {
            const block_q8_0 *y[4] = {ACT(t), ACT(t + 1), ACT(t + 2), ACT(t + 3)};
            float o[4];
            if (repacked)
                nl_repacked_1x4(ROW(r), y, nb, o);
            else
                nl_tinyblas_1x4(ROW(r), y, nb, o);
            for (int c = 0; c < 4; c++)
                OUT(t + c, r) = o[c];
        }
        for (; t < n_tok; t++)
            OUT(t, r) = repacked ? quant_dot_iq4_nl_repacked(n, ROW(r), ACT(t))
                                 : dot_iq4_nl_tinyblas_avx2(ROW(r), ACT(t), nb);
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
