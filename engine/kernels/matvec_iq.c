/* One-token matvecs for IQ2_XXS and IQ4_XS on AVX-512 VBMI + VNNI (see
 * matvec_iq.h). The AVX2 vec_dots these replace spend most of their time
 * taking each 32-weight sub-block apart in scalar code (grid and sign
 * table lookups, scale bits) and lookups 16 bytes wide; here a super-block
 * is taken apart in a few whole-register steps and the integer dots run
 * 64 weights at a time. Two rows share the activation loads and the float
 * steps (one fma for both rows' 8 lanes: lanes 0-7 row A, 8-15 row B,
 * independent as the reference's 8 lanes are). */
#include "kernels/matvec_iq.h"

#if defined(QUANT_HAVE_MATVEC_IQ512)
#include <stdbool.h>
#include <string.h>

#include "kernels/quant_iq2.h"
#include "kernels/quant_iq4.h"
#include "kernels/quant_iq_signs.h"

/* The per-block float step of the reference for two rows: the 8 lane sums
 * of row A (lanes 0-7 of t) and row B (8-15) converted, times d_w * d_a,
 * added to the lanes' accumulators with one rounding (its fmadd). */
static inline __m512 fma2(__m512 acc, __m512i t, float da, float db)
{
    const __m512 d = _mm512_mask_blend_ps(0xFF00, _mm512_set1_ps(da), _mm512_set1_ps(db));
    return _mm512_fmadd_ps(d, _mm512_cvtepi32_ps(t), acc);
}

/* hsum_float_8 of each half. */
static inline void hsum2(__m512 acc, float *a, float *b)
{
    *a = hsum_ps(_mm512_castps512_ps256(acc));
    *b = hsum_ps(_mm512_extractf32x8_ps(acc, 1));
}

/* ---- IQ2_XXS ---- */

/* Per pair of sub-blocks p (64 weights): the source bytes of each weight's
 * group sign byte (sub-block 2p + e / 32, group (e % 32) / 8 of its 4) in
 * the block's sign bytes, laid out 8 per sub-block. */
static const uint8_t xxs_sign_ctrl[4][64] __attribute__((aligned(64))) = {
    {0, 0, 0, 0, 0, 0, 0, 0, 1,  1,  1,  1,  1,  1,  1,  1,  2,  2,  2,  2,  2,  2,
     2, 2, 3, 3, 3, 3, 3, 3, 3,  3,  8,  8,  8,  8,  8,  8,  8,  8,  9,  9,  9,  9,
     9, 9, 9, 9, 10, 10, 10, 10, 10, 10, 10, 10, 11, 11, 11, 11, 11, 11, 11, 11},
    {16, 16, 16, 16, 16, 16, 16, 16, 17, 17, 17, 17, 17, 17, 17, 17, 18, 18, 18, 18, 18, 18,
     18, 18, 19, 19, 19, 19, 19, 19, 19, 19, 24, 24, 24, 24, 24, 24, 24, 24, 25, 25, 25, 25,
     25, 25, 25, 25, 26, 26, 26, 26, 26, 26, 26, 26, 27, 27, 27, 27, 27, 27, 27, 27},
    {32, 32, 32, 32, 32, 32, 32, 32, 33, 33, 33, 33, 33, 33, 33, 33, 34, 34, 34, 34, 34, 34,
     34, 34, 35, 35, 35, 35, 35, 35, 35, 35, 40, 40, 40, 40, 40, 40, 40, 40, 41, 41, 41, 41,
     41, 41, 41, 41, 42, 42, 42, 42, 42, 42, 42, 42, 43, 43, 43, 43, 43, 43, 43, 43},
    {48, 48, 48, 48, 48, 48, 48, 48, 49, 49, 49, 49, 49, 49, 49, 49, 50, 50, 50, 50, 50, 50,
     50, 50, 51, 51, 51, 51, 51, 51, 51, 51, 56, 56, 56, 56, 56, 56, 56, 56, 57, 57, 57, 57,
     57, 57, 57, 57, 58, 58, 58, 58, 58, 58, 58, 58, 59, 59, 59, 59, 59, 59, 59, 59},
};

/* The 8 grid indices of a pair of sub-blocks as dwords (bytes 4j of the
 * result; the others are masked to zero), from 32 bytes holding 4
 * sub-blocks: pair 0 of them, then pair 1. */
static const uint8_t xxs_gidx_ctrl[2][32] __attribute__((aligned(32))) = {
    {0, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 8, 0, 0, 0, 9, 0, 0, 0, 10, 0, 0, 0, 11, 0, 0, 0},
    {16, 0, 0, 0, 17, 0, 0, 0, 18, 0, 0, 0, 19, 0, 0, 0, 24, 0, 0, 0, 25, 0, 0, 0, 26, 0, 0, 0, 27, 0, 0, 0},
};

/* One row's 8 lane sums of a block, sub-blocks 2p in lanes 0-7 and 2p + 1
 * in lanes 8-15 (their sum is the reference's sumi1 + sumi2). Each
 * sub-block's u64: 4 grid indices, then 4 x 7 sign bits and the scale on
 * top. The activations get the weights' signs bytewise, 0 - q where
 * negative (-128 stays -128, as _mm256_sign_epi8 leaves it), against the
 * grid's unsigned bytes; maddubs pairs stay below 2 * 43 * 128. */
static inline __m512i xxs_block(const block_iq2_xxs *x, const __m512i a[4], __m512i ks_lo, __m512i ks_hi)
{
    const __m512i q = _mm512_loadu_si512(x->qs);
    /* the 7-bit sign fields (bits 32 + 7l of each u64) to bytes 0-3, then
     * the 8-bit signs with their parity bit from ksigns_iq2xs */
    const __m512i s7 = _mm512_multishift_epi64_epi8(_mm512_set1_epi64(0x352E2720), q);
    const __m512i sgn = _mm512_permutex2var_epi8(ks_lo, s7, ks_hi);
    /* 2 ls + 1 in the low word of each u64 */
    const __m512i sc = _mm512_or_si512(_mm512_slli_epi64(_mm512_srli_epi64(q, 60), 1), _mm512_set1_epi64(1));
    const __m256i qlo = _mm512_castsi512_si256(q), qhi = _mm512_extracti64x4_epi64(q, 1);
    const __m256i c0 = _mm256_load_si256((const __m256i *)xxs_gidx_ctrl[0]),
                  c1 = _mm256_load_si256((const __m256i *)xxs_gidx_ctrl[1]);
    const __m256i gi[4] = {_mm256_maskz_permutexvar_epi8(0x11111111, c0, qlo),
                           _mm256_maskz_permutexvar_epi8(0x11111111, c1, qlo),
                           _mm256_maskz_permutexvar_epi8(0x11111111, c0, qhi),
                           _mm256_maskz_permutexvar_epi8(0x11111111, c1, qhi)};
    const __m512i bit = _mm512_set1_epi64(0x8040201008040201LL);
    __m512i s = _mm512_setzero_si512();
#pragma GCC unroll 4
    for (int p = 0; p < 4; p++) {
        const __m512i grid = _mm512_i32gather_epi64(gi[p], (const void *)quant_iq2xxs_grid, 8);
        const __mmask64 neg =
            _mm512_test_epi8_mask(_mm512_permutexvar_epi8(_mm512_load_si512(xxs_sign_ctrl[p]), sgn), bit);
        const __m512i qs = _mm512_mask_sub_epi8(a[p], neg, _mm512_setzero_si512(), a[p]);
        /* words 0-15: sub-block 2p's scale, 16-31: 2p + 1's */
        const __m512i scale = _mm512_permutexvar_epi16(
            _mm512_mask_blend_epi16(0xFFFF0000u, _mm512_set1_epi16((short)(8 * p)), _mm512_set1_epi16((short)(8 * p + 4))),
            sc);
        s = _mm512_dpwssd_epi32(s, _mm512_maddubs_epi16(grid, qs), scale);
    }
    return s;
}

/* Two rows' lane sums (each: lanes 0-7 + 8-15) side by side. */
static inline __m512i fold2(__m512i a, __m512i b)
{
    return _mm512_add_epi32(_mm512_shuffle_i64x2(a, b, 0x44), _mm512_shuffle_i64x2(a, b, 0xEE));
}

void quant_avx512_matvec_iq2_xxs(int64_t n, const void *w, size_t rs, int64_t rows, const void *act, float *out)
{
    const block_q8_K *y = act;
    const int64_t nb = n / QK_K;
    const __m512i ks_lo = _mm512_loadu_si512(quant_ksigns_iq2xs), ks_hi = _mm512_loadu_si512(quant_ksigns_iq2xs + 64);
    const size_t step = quant_prefetch_step_size(rs, 2, nb);
    for (int64_t r = 0; r < rows; r += 2) {
        const block_iq2_xxs *xa = (const block_iq2_xxs *)(const void *)((const char *)w + (size_t)r * rs);
        const block_iq2_xxs *xb = r + 1 < rows ? (const block_iq2_xxs *)(const void *)((const char *)xa + rs) : xa;
        const char *pf = (const char *)w + (size_t)(r + 2 * QUANT_PF_AHEAD) * rs;
        const bool prefetch = r + 2 * QUANT_PF_AHEAD + 2 <= rows;
        __m512 acc = _mm512_setzero_ps();
        for (int64_t i = 0; i < nb; i++) {
            if (prefetch)
                quant_prefetch_step(pf, i, step);
            const __m512i a[4] = {_mm512_loadu_si512(y[i].qs), _mm512_loadu_si512(y[i].qs + 64),
                                  _mm512_loadu_si512(y[i].qs + 128), _mm512_loadu_si512(y[i].qs + 192)};
            const __m512i sa = xxs_block(&xa[i], a, ks_lo, ks_hi), sb = xxs_block(&xb[i], a, ks_lo, ks_hi);
            acc = fma2(acc, fold2(sa, sb), fp16_to_f32(xa[i].d) * y[i].d, fp16_to_f32(xb[i].d) * y[i].d);
        }
        float oa, ob;
        hsum2(acc, &oa, &ob);
        out[r] = 0.125f * oa;
        if (r + 1 < rows)
            out[r + 1] = 0.125f * ob;
    }
}

/* ---- IQ4_XS ---- */

/* The activations of a super-block rearranged to meet the weights as they
 * load: 64 qs bytes hold 4 sub-blocks, the low nibbles their weights 0-15,
 * the high ones 16-31; al[h] / ah[h] hold those activations of sub-blocks
 * 4h..4h + 3 (16 bytes each), nl / nh -128 times their 4-byte sums. The
 * weights enter the dot unsigned, as table value + 128 (1..241), and nl /
 * nh take the offset back: exact, as no activation is -128 (the Q8_K
 * quantizer stays within -127..127, see quant_iq4.c). */
struct iq4_act {
    __m512i al[2], ah[2], nl[2], nh[2];
    float d;
};

/* Above this many super-blocks per row the prepared activations would not
 * fit the stack budget; such rows take the AVX2 vec_dot. */
#define IQ4_XS_MAX_NB 128

static void iq4_prepare(const block_q8_K *y, int64_t nb, struct iq4_act *p)
{
    const __m512i off = _mm512_set1_epi8((char)0x80);
    for (int64_t i = 0; i < nb; i++) {
        for (int h = 0; h < 2; h++) {
            const __m512i x0 = _mm512_loadu_si512(y[i].qs + 128 * h), x1 = _mm512_loadu_si512(y[i].qs + 128 * h + 64);
            p[i].al[h] = _mm512_shuffle_i64x2(x0, x1, 0x88);
            p[i].ah[h] = _mm512_shuffle_i64x2(x0, x1, 0xDD);
            p[i].nl[h] = _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_dpbusd_epi32(_mm512_setzero_si512(), off, p[i].al[h]));
            p[i].nh[h] = _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_dpbusd_epi32(_mm512_setzero_si512(), off, p[i].ah[h]));
        }
        p[i].d = y[i].d;
    }
}

/* Sub-block 4h + c's scale ls - 32 into int32 lanes 4c..4c + 3. */
static const uint8_t xs_scale_ctrl[2][64] __attribute__((aligned(64))) = {
    {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0,
     2, 0, 0, 0, 2, 0, 0, 0, 2, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 3, 0, 0, 0, 3, 0, 0, 0, 3, 0, 0, 0},
    {4, 0, 0, 0, 4, 0, 0, 0, 4, 0, 0, 0, 4, 0, 0, 0, 5, 0, 0, 0, 5, 0, 0, 0, 5, 0, 0, 0, 5, 0, 0, 0,
     6, 0, 0, 0, 6, 0, 0, 0, 6, 0, 0, 0, 6, 0, 0, 0, 7, 0, 0, 0, 7, 0, 0, 0, 7, 0, 0, 0, 7, 0, 0, 0},
};

/* One row's block as two vectors of 16 lane sums: lo from the weights
 * 0-15 of each sub-block (the reference's lanes k 0-3), hi from 16-31
 * (lanes 4-7); quarter c of each holds sub-blocks c and 4 + c. */
static inline void xs_block(const block_iq4_xs *x, const struct iq4_act *a, __m512i lut, __m512i *lo, __m512i *hi)
{
    uint64_t hdr;
    memcpy(&hdr, x, 8); /* d, scales_h, scales_l */
    /* the 8 six-bit scales as bytes: low nibbles from scales_l, bits 4-5
     * from scales_h's pairs */
    const uint64_t ls = _pdep_u64(hdr >> 32, 0x0F0F0F0F0F0F0F0FULL) | _pdep_u64(hdr >> 16 & 0xFFFF, 0x3030303030303030ULL);
    const __m512i lsv = _mm512_set1_epi64((long long)ls), m32 = _mm512_set1_epi32(32);
    __m512i sl = _mm512_setzero_si512(), sh = _mm512_setzero_si512();
#pragma GCC unroll 2
    for (int h = 0; h < 2; h++) {
        const __m512i scale = _mm512_sub_epi32(
            _mm512_maskz_permutexvar_epi8(0x1111111111111111ULL, _mm512_load_si512(xs_scale_ctrl[h]), lsv), m32);
        const __m512i q = _mm512_loadu_si512(x->qs + 64 * h);
        /* vpermb reads 6 bits: the table repeats every 16, so the other
         * nibble's low bits in bits 4-5 do not matter */
        const __m512i ul = _mm512_permutexvar_epi8(q, lut), uh = _mm512_permutexvar_epi8(_mm512_srli_epi16(q, 4), lut);
        sl = _mm512_add_epi32(sl, _mm512_mullo_epi32(_mm512_dpbusd_epi32(a->nl[h], ul, a->al[h]), scale));
        sh = _mm512_add_epi32(sh, _mm512_mullo_epi32(_mm512_dpbusd_epi32(a->nh[h], uh, a->ah[h]), scale));
    }
    *lo = sl;
    *hi = sh;
}

void quant_avx512_matvec_iq4_xs(int64_t n, const void *w, size_t rs, int64_t rows, const void *act, float *out)
{
    const int64_t nb = n / QK_K;
    if (nb > IQ4_XS_MAX_NB) {
        const quant_vec_dot_fn dot = quant_kernels_get(TENSOR_TYPE_IQ4_XS)->vec_dot;
        for (int64_t r = 0; r < rows; r++)
            out[r] = dot(n, (const char *)w + (size_t)r * rs, act);
        return;
    }
    struct iq4_act prep[IQ4_XS_MAX_NB] __attribute__((aligned(64)));
    iq4_prepare(act, nb, prep);
    uint8_t t[64];
    for (int e = 0; e < 64; e++)
        t[e] = (uint8_t)(quant_kvalues_iq4nl[e & 15] + 128);
    const __m512i lut = _mm512_loadu_si512(t);
    const size_t step = quant_prefetch_step_size(rs, 2, nb);
    for (int64_t r = 0; r < rows; r += 2) {
        const block_iq4_xs *xa = (const block_iq4_xs *)(const void *)((const char *)w + (size_t)r * rs);
        const block_iq4_xs *xb = r + 1 < rows ? (const block_iq4_xs *)(const void *)((const char *)xa + rs) : xa;
        const char *pf = (const char *)w + (size_t)(r + 2 * QUANT_PF_AHEAD) * rs;
        const bool prefetch = r + 2 * QUANT_PF_AHEAD + 2 <= rows;
        __m512 acc = _mm512_setzero_ps();
        for (int64_t i = 0; i < nb; i++) {
            if (prefetch)
                quant_prefetch_step(pf, i, step);
            __m512i la, ha, lb, hb;
            xs_block(&xa[i], &prep[i], lut, &la, &ha);
            xs_block(&xb[i], &prep[i], lut, &lb, &hb);
            /* per row: quarters [L0 + L2, L1 + L3, H0 + H2, H1 + H3], then
             * both rows' [L, H] = lanes k 0-3, 4-7 */
            const __m512i ta = fold2(la, ha), tb = fold2(lb, hb);
            const __m512i tt = _mm512_add_epi32(_mm512_shuffle_i64x2(ta, tb, 0x88), _mm512_shuffle_i64x2(ta, tb, 0xDD));
            acc = fma2(acc, tt, fp16_to_f32(xa[i].d) * prep[i].d, fp16_to_f32(xb[i].d) * prep[i].d);
        }
        float oa, ob;
        hsum2(acc, &oa, &ob);
        out[r] = oa;
        if (r + 1 < rows)
            out[r + 1] = ob;
    }
}
#endif
