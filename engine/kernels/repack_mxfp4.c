/* MXFP4 matmuls in the repacked order, tiled (see repack_mxfp4.h). */
#include "kernels/repack_mxfp4.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/forward_packed.h"
#include "kernels/gemm_mxfp4.h"
#include "kernels/kernel_scratch.h"
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

/* quant_e8m0_to_fp32_half of four scale bytes at once (e0 in lane 0). */
static inline __m128 mx_e8m0_half4(uint8_t e0, uint8_t e1, uint8_t e2, uint8_t e3)
{
    const __m128i e = _mm_cvtepu8_epi32(_mm_cvtsi32_si128((int)((uint32_t)e0 | (uint32_t)e1 << 8 |
                                                                (uint32_t)e2 << 16 | (uint32_t)e3 << 24)));
    const __m128i normal = _mm_slli_epi32(_mm_sub_epi32(e, _mm_set1_epi32(1)), 23);
    const __m128i tiny = _mm_sllv_epi32(_mm_set1_epi32(0x00200000), e); /* e < 2: a subnormal half */
    return _mm_castsi128_ps(_mm_blendv_epi8(normal, tiny, _mm_cmpgt_epi32(_mm_set1_epi32(2), e)));
}

/* The sum of each block's bytes, per token (the kernels take QUANT_MX_OFF times
 * it back off). */
static void mx_offsets(const uint8_t *act, size_t act_stride, int n_tok, int64_t nb, int32_t *off)
{
    const __m256i one8 = _mm256_set1_epi8(1), one16 = _mm256_set1_epi16(1);
    for (int t = 0; t < n_tok; t++) {
        const block_q8_0 *y = (const block_q8_0 *)(act + (size_t)t * act_stride);
        for (int64_t b = 0; b < nb; b++) {
            const __m256i q = _mm256_loadu_si256((const __m256i *)y[b].qs);
            off[t * nb + b] = hsum_epi32(_mm256_madd_epi16(_mm256_maddubs_epi16(one8, q), one16));
        }
    }
}

/* Four weight rows against one token row (the gemv): out[r]. Per row and
 * block the values come offset by QUANT_MX_OFF (unsigned, so maddubs takes them
 * without the sign steps; the token's QUANT_MX_OFF * sum of its block's bytes,
 * off[b] from mx_offsets once per call, comes back off: the same exact
 * integer),
 * from one broadcast load, a per-half shift, a mask and one table lookup;
 * the four scales convert in one vector. Each block step also prefetches
 * its share (step bytes) of the rows at pf: the four rows are four short
 * streams the Zen 3's hardware prefetcher keeps losing (see
 * quant_prefetch_step). Decoded per row with sign steps and a scalar scale
 * conversion this ran at 0.4 of the reference's repacked gemv. */
static void mx_rows4(const block_mxfp4 *const x[4], const block_q8_0 *y, const int32_t *off, int64_t nb,
                     float out[4], const char *pf, size_t step)
{
    const __m256i lut = _mm256_broadcastsi128_si256(quant_mx_lut_off());
    const __m256i m4 = _mm256_set1_epi8(0x0F), sh = _mm256_setr_epi64x(0, 0, 4, 4);
    const __m256i ones = _mm256_set1_epi16(1);
    __m128 acc = _mm_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        quant_prefetch_step(pf, b, step);
        const __m256i q = _mm256_loadu_si256((const __m256i *)y[b].qs);
        __m256i p[4];
        _Pragma("GCC unroll 4") for (int k = 0; k < 4; k++)
        {
            const __m256i raw = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)x[k][b].qs));
            const __m256i u = _mm256_shuffle_epi8(lut, _mm256_and_si256(_mm256_srlv_epi64(raw, sh), m4));
            p[k] = _mm256_madd_epi16(_mm256_maddubs_epi16(u, q), ones);
        }
        const __m128i isum = _mm_sub_epi32(mx_hsum4(p[0], p[1], p[2], p[3]), _mm_set1_epi32(QUANT_MX_OFF * off[b]));
        const __m128 sc = _mm_mul_ps(mx_e8m0_half4(x[0][b].e, x[1][b].e, x[2][b].e, x[3][b].e),
                                     _mm_set1_ps(fp16_to_f32(y[b].d)));
        acc = _mm_fmadd_ps(_mm_cvtepi32_ps(isum), sc, acc);
    }
    _mm_storeu_ps(out, acc);
}
/* ---- many tokens: 8 rows decoded once, interleaved ---------------------------
 * For a group of 8 rows every block is decoded once into 8 vectors; vector
 * k holds elements 4k..4k+3 of each row (row j in bytes 4j..4j+3), as the
 * reference's 8x8 repacking lays them out. Against a token's bytes 4k..4k+3
 * broadcast, maddubs then gives row j's products in lanes 2j and 2j+1, so
 * the 8 rows' block sums come out in the 8 lanes with no horizontal sums.
 * The values are stored plus 12 (0..24, unsigned for maddubs); the token's
 * 12 * (sum of its block's bytes) is taken back off. Bounds: a pair is at
 * most 2 * 24 * 127 = 6096, four vectors' pairs add up to at most 24384 in
 * the int16 lanes, so every sum is exact. The AVX2 build's path: with
 * AVX-512 VNNI, gemm_mxfp4.h's panels of 16 rows take the calls (this one
 * only where its scratch could not be had). */

/* from this many tokens on, decoding 8 rows into a buffer pays */
#define MX_MANY 4

typedef struct {
    __m256i v[8];
} mx_ilv_block;

/* Rows x[0..7] (nb blocks each) into dst[nb] and their half scales. */
static void mx_interleave8(const block_mxfp4 *const x[8], int64_t nb, mx_ilv_block *dst, float *dw)
{
    const __m128i lut = quant_mx_lut_off(), m4 = _mm_set1_epi8(0x0F);
    for (int64_t b = 0; b < nb; b++) {
        __m256i r[8];
        for (int j = 0; j < 8; j++) {
            r[j] = mx_values(&x[j][b], lut, m4);
            dw[b * 8 + j] = quant_e8m0_to_fp32_half(x[j][b].e);
        }
        /* an 8x8 transpose of 32-bit groups: out k, lane j = r[j] lane k */
        const __m256i t0 = _mm256_unpacklo_epi32(r[0], r[1]), t1 = _mm256_unpackhi_epi32(r[0], r[1]);
        const __m256i t2 = _mm256_unpacklo_epi32(r[2], r[3]), t3 = _mm256_unpackhi_epi32(r[2], r[3]);
        const __m256i t4 = _mm256_unpacklo_epi32(r[4], r[5]), t5 = _mm256_unpackhi_epi32(r[4], r[5]);
        const __m256i t6 = _mm256_unpacklo_epi32(r[6], r[7]), t7 = _mm256_unpackhi_epi32(r[6], r[7]);
        const __m256i u0 = _mm256_unpacklo_epi64(t0, t2), u1 = _mm256_unpackhi_epi64(t0, t2);
        const __m256i u2 = _mm256_unpacklo_epi64(t1, t3), u3 = _mm256_unpackhi_epi64(t1, t3);
        const __m256i u4 = _mm256_unpacklo_epi64(t4, t6), u5 = _mm256_unpackhi_epi64(t4, t6);
        const __m256i u6 = _mm256_unpacklo_epi64(t5, t7), u7 = _mm256_unpackhi_epi64(t5, t7);
        /* u0: lanes k=0 (rows 0-3) | k=4 (rows 0-3) ... */
        dst[b].v[0] = _mm256_permute2x128_si256(u0, u4, 0x20);
        dst[b].v[1] = _mm256_permute2x128_si256(u1, u5, 0x20);
        dst[b].v[2] = _mm256_permute2x128_si256(u2, u6, 0x20);
        dst[b].v[3] = _mm256_permute2x128_si256(u3, u7, 0x20);
        dst[b].v[4] = _mm256_permute2x128_si256(u0, u4, 0x31);
        dst[b].v[5] = _mm256_permute2x128_si256(u1, u5, 0x31);
        dst[b].v[6] = _mm256_permute2x128_si256(u2, u6, 0x31);
        dst[b].v[7] = _mm256_permute2x128_si256(u3, u7, 0x31);
    }
}

/* The 8 rows' integer block sums for one token (before the offset); the
 * token's dwords spread over the lanes by quant_spread4. */
static inline __m256i mx_ilv_isum(const mx_ilv_block *w, const int8_t *q, __m256i ones)
{
    __m256i a[4];
    quant_spread4(q, a);
    __m256i lo = _mm256_maddubs_epi16(w->v[0], a[0]);
    lo = _mm256_add_epi16(lo, _mm256_maddubs_epi16(w->v[1], a[1]));
    lo = _mm256_add_epi16(lo, _mm256_maddubs_epi16(w->v[2], a[2]));
    lo = _mm256_add_epi16(lo, _mm256_maddubs_epi16(w->v[3], a[3]));
    quant_spread4(q + 16, a);
    __m256i hi = _mm256_maddubs_epi16(w->v[4], a[0]);
    hi = _mm256_add_epi16(hi, _mm256_maddubs_epi16(w->v[5], a[1]));
    hi = _mm256_add_epi16(hi, _mm256_maddubs_epi16(w->v[6], a[2]));
    hi = _mm256_add_epi16(hi, _mm256_maddubs_epi16(w->v[7], a[3]));
    return _mm256_add_epi32(_mm256_madd_epi16(lo, ones), _mm256_madd_epi16(hi, ones));
}

/* 8 interleaved rows against 2 tokens: out0[0..7], out1[0..7] (the lanes
 * keep sets). */
static inline void mx_ilv_2(const mx_ilv_block *w, const float *dw, const block_q8_0 *y0, const block_q8_0 *y1,
                     const int32_t *off0, const int32_t *off1, int64_t nb, float *out0, float *out1, __m256i keep)
{
    const __m256i ones = _mm256_set1_epi16(1);
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        const __m256 d = _mm256_loadu_ps(dw + b * 8);
        const __m256i s0 = _mm256_sub_epi32(mx_ilv_isum(&w[b], y0[b].qs, ones), _mm256_set1_epi32(QUANT_MX_OFF * off0[b]));
        const __m256i s1 = _mm256_sub_epi32(mx_ilv_isum(&w[b], y1[b].qs, ones), _mm256_set1_epi32(QUANT_MX_OFF * off1[b]));
        acc0 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s0), _mm256_mul_ps(d, _mm256_set1_ps(fp16_to_f32(y0[b].d))), acc0);
        acc1 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s1), _mm256_mul_ps(d, _mm256_set1_ps(fp16_to_f32(y1[b].d))), acc1);
    }
    _mm256_maskstore_ps(out0, keep, acc0);
    _mm256_maskstore_ps(out1, keep, acc1);
}


static void mx_ilv_1(const mx_ilv_block *w, const float *dw, const block_q8_0 *y0, const int32_t *off0, int64_t nb,
                     float *out0, __m256i keep)
{
    const __m256i ones = _mm256_set1_epi16(1);
    __m256 acc0 = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        const __m256 d = _mm256_loadu_ps(dw + b * 8);
        const __m256i s0 = _mm256_sub_epi32(mx_ilv_isum(&w[b], y0[b].qs, ones), _mm256_set1_epi32(QUANT_MX_OFF * off0[b]));
        acc0 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s0), _mm256_mul_ps(d, _mm256_set1_ps(fp16_to_f32(y0[b].d))), acc0);
    }
    _mm256_maskstore_ps(out0, keep, acc0);
}

/* Rows [r, r1) in groups of 8 against every token; returns the first row
 * not done (false: no memory, nothing done). */
static int64_t mx_many(const void *w, int64_t nb, size_t rb, int64_t r, int64_t r1, const uint8_t *act,
                       size_t act_stride, int n_tok, float *out, int64_t out_stride)
{
    if (r1 - r < 8)
        return r;
    mx_ilv_block *ilv = aligned_alloc(32, (size_t)nb * sizeof *ilv);
    float *dw = malloc((size_t)nb * 8 * sizeof *dw);
    int32_t *off = malloc((size_t)n_tok * (size_t)nb * sizeof *off);
    if (!ilv || !dw || !off) {
        free(ilv);
        free(dw);
        free(off);
        return r;
    }
    mx_offsets(act, act_stride, n_tok, nb, off);
    const __m256i all = _mm256_set1_epi32(-1);
    for (; r + 8 <= r1; r += 8) {
        const block_mxfp4 *x[8];
        for (int k = 0; k < 8; k++)
            x[k] = (const block_mxfp4 *)((const uint8_t *)w + (size_t)(r + k) * rb);
        mx_interleave8(x, nb, ilv, dw);
        /* the next group's 8 rows are fetched while these run against the
         * tokens: decoding them straight from memory stalls on every line */
        const char *next = (const char *)w + (size_t)(r + 8) * rb;
        const int64_t n_lines = r + 16 <= r1 ? (int64_t)(8 * rb + 63) / 64 : 0;
        const int64_t per_pair = (n_lines + n_tok / 2) / (n_tok / 2 + 1) + 1;
        int64_t line = 0;
        int t = 0;
        for (; t + 2 <= n_tok; t += 2) {
            for (int64_t e = line + per_pair; line < e && line < n_lines; line++)
                _mm_prefetch(next + line * 64, _MM_HINT_T0);
            mx_ilv_2(ilv, dw, (const block_q8_0 *)(act + (size_t)t * act_stride),
                     (const block_q8_0 *)(act + (size_t)(t + 1) * act_stride), off + t * nb, off + (t + 1) * nb, nb,
                     out + (int64_t)t * out_stride + r, out + (int64_t)(t + 1) * out_stride + r, all);
        }
        for (; line < n_lines; line++)
            _mm_prefetch(next + line * 64, _MM_HINT_T0);
        for (; t < n_tok; t++)
            mx_ilv_1(ilv, dw, (const block_q8_0 *)(act + (size_t)t * act_stride), off + t * nb, nb,
                     out + (int64_t)t * out_stride + r, all);
    }
    free(ilv);
    free(dw);
    free(off);
    return r;
}
/* Half h (rows 8h..8h+7) of a packed group (forward_packed.h's MXFP4
 * layout: per block 4 vectors of 64 bytes, row r's qs bytes 4j..4j+3 at
 * 64j + 4r; the 16 scale bytes of each block at packed_scale_at): its
 * low nibbles of vector j are elements 4j..4j+3 of every row, its high
 * ones 16 + 4j.., as mx_interleave8 lays a block out. */
static void mx_unpack_half(const uint8_t *pw, int64_t nb, int h, mx_ilv_block *dst, float *dw)
{
    const __m256i lut = _mm256_broadcastsi128_si256(quant_mx_lut_off()), m4 = _mm256_set1_epi8(0x0F);
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *nib = pw + packed_mxfp4_q(b),
                      *e = pw + packed_mxfp4_sc(b) + 8 * h;
        for (int j = 0; j < 4; j++) {
            const __m256i p = _mm256_loadu_si256((const __m256i *)(const void *)(nib + 64 * j + 32 * h));
            dst[b].v[j] = _mm256_shuffle_epi8(lut, _mm256_and_si256(p, m4));
            dst[b].v[j + 4] = _mm256_shuffle_epi8(lut, _mm256_and_si256(_mm256_srli_epi16(p, 4), m4));
        }
        _mm256_storeu_ps(dw + b * 8, quant_e8m0_half8(_mm_loadl_epi64((const __m128i *)e)));
    }
}

bool repack_mxfp4_packed_group(const uint8_t *pw, int64_t nb, const uint8_t *act, size_t act_stride,
                               const int32_t *sums, int n_tok, float *out, int64_t out_stride, int lo, int hi)
{
    const size_t half = (size_t)nb * (sizeof(mx_ilv_block) + 8 * sizeof(float));
    uint8_t *scr = kernel_scratch_get(2 * half);
    if (!scr)
        return false;
    mx_ilv_block *ilv[2];
    float *dw[2];
    __m256i keep[2];
    bool any[2];
    for (int h = 0; h < 2; h++) {
        ilv[h] = (mx_ilv_block *)(void *)(scr + h * half);
        dw[h] = (float *)(void *)(ilv[h] + nb);
        keep[h] = quant_lanes_in(lo - 8 * h, hi - 8 * h);
        any[h] = lo < 8 * h + 8 && hi > 8 * h;
        if (any[h])
            mx_unpack_half(pw, nb, h, ilv[h], dw[h]);
    }
    /* both halves against a pair of tokens while its bytes are in L1; the
     * next group's lines fetched a few per pair (decoding it straight from
     * memory would stall on every line, as mx_many found) */
    const size_t gb = packed_group_size(nb, PACKED_MXFP4_NIB, PACKED_MXFP4_SC);
    const char *next = (const char *)pw + gb;
    const int64_t n_lines = (int64_t)(gb + 63) / 64, per_pair = n_lines / (n_tok / 2 + 1) + 1;
    int64_t line = 0;
    int t = 0;
    for (; t + 2 <= n_tok; t += 2) {
        for (int64_t e = line + per_pair; line < e && line < n_lines; line++)
            _mm_prefetch(next + line * 64, _MM_HINT_T0);
        for (int h = 0; h < 2; h++)
            if (any[h])
                mx_ilv_2(ilv[h], dw[h], (const block_q8_0 *)(act + (size_t)t * act_stride),
                         (const block_q8_0 *)(act + (size_t)(t + 1) * act_stride), sums + (int64_t)t * nb,
                         sums + (int64_t)(t + 1) * nb, nb, out + (int64_t)t * out_stride + 8 * h,
                         out + (int64_t)(t + 1) * out_stride + 8 * h, keep[h]);
    }
    if (t < n_tok)
        for (int h = 0; h < 2; h++)
            if (any[h])
                mx_ilv_1(ilv[h], dw[h], (const block_q8_0 *)(act + (size_t)t * act_stride), sums + (int64_t)t * nb,
                         nb, out + (int64_t)t * out_stride + 8 * h, keep[h]);
    return true;
}
#endif

void repack_mxfp4_matmul(const void *w, int64_t n, int64_t r0, int64_t r1, const uint8_t *act, size_t act_stride,
                         int n_tok, float *out, int64_t out_stride)
{
#if defined(GEMM_MXFP4)
    /* AVX-512 VNNI: 16-row panels against tiles of up to 8 tokens (gemm_mxfp4.h) */
    if (n_tok >= GEMM_MXFP4_MIN_TOK && gemm_mxfp4_matmul(w, n, r0, r1, act, act_stride, n_tok, out, out_stride))
        return;
#endif
    const int64_t nb = n / QK_MXFP4;
    const size_t rb = (size_t)nb * sizeof(block_mxfp4);
    int64_t r = r0;
#if defined(QUANT_HAVE_AVX2)
    const size_t step = quant_prefetch_step_size(rb, 4, nb);
    if (n_tok >= MX_MANY)
        r = mx_many(w, nb, rb, r, r1, act, act_stride, n_tok, out, out_stride);
    /* the tokens past the 4x4 tiles go through mx_rows4: their offsets once
     * for every group of rows (without memory, the rows go the scalar way) */
    const int n4 = n_tok & ~3;
    int32_t *off = n_tok > n4 && r + 4 <= r1 ? malloc((size_t)(n_tok - n4) * (size_t)nb * sizeof *off) : NULL;
    if (off)
        mx_offsets(act + (size_t)n4 * act_stride, act_stride, n_tok - n4, nb, off);
    const int64_t r4 = off || n_tok == n4 ? r1 : r;
    for (; r + 4 <= r4; r += 4) {
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
        /* the first pass over the rows prefetches the group QUANT_PF_AHEAD on */
        const char *pf = (const char *)x[0] + (size_t)QUANT_PF_AHEAD * 4 * rb;
        const bool ahead = r + 4 * (QUANT_PF_AHEAD + 1) <= r1;
        for (int t0 = t; t < n_tok; t++)
            mx_rows4(x, (const block_q8_0 *)(act + (size_t)t * act_stride), off + (t - n4) * nb, nb,
                     out + (int64_t)t * out_stride + r, pf, ahead && t == t0 ? step : 0);
    }
    free(off);
#endif
    for (; r < r1; r++)
        for (int t = 0; t < n_tok; t++)
            out[(int64_t)t * out_stride + r] =
                quant_dot_mxfp4_repacked(n, (const uint8_t *)w + (size_t)r * rb, act + (size_t)t * act_stride);
}
