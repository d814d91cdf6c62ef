/* Packed Q4_0 / Q4_K weights, 16 rows in the lanes (see forward_packed.h).
 *
 * One group of 16 rows, for a tensor of nb blocks per row, per block (in
 * the units of forward_packed.h's packed_quant_at / packed_scale_at: the
 * scales of 2 blocks (Q4_0, Q8_0), 4 (MXFP4) or 1 (Q4_K) on a line, then
 * those blocks' quants):
 *   Q4_0: 256 bytes of nibbles and 16 fp16 scales.
 *         Nibble vector j (0..3) of a block holds, in dword lane r, bytes
 *         4j..4j+3 of row r's qs: its low nibbles are elements 4j..4j+3,
 *         its high nibbles elements 16+4j..16+4j+3 - the block's own pairing.
 *   Q4_K: 2048 bytes of nibbles and 320 bytes of scales.
 *         For each pair j (0..3) of 32-element sub-blocks, nibble vector q
 *         (0..7) holds in dword lane r bytes 32j+4q..+3 of row r's qs (low
 *         nibbles: sub-block 2j, high: 2j+1). The scales: 16 fp16 d, 16 fp16
 *         dmin, then per pair j 16 scales of sub-block 2j, 16 of 2j+1 and
 *         16 (min 2j, min 2j+1) byte pairs, all decoded from the 6-bit form.
 *   MXFP4: 256 bytes of nibbles in Q4_0's order (qs pairs element i with
 *         16 + i as Q4_0 does) and 16 scale bytes (E8M0), as many bytes as
 *         the 16 rows.
 *   Q8_0: 512 bytes of quants and 16 fp16 scales. Vector l (0..7) of a
 *         block holds in dword lane r bytes 4l..4l+3 of row r, signed as in
 *         the file (the activations take VNNI's unsigned side,
 *         packed_q8_0.h).
 * Rows past the tensor's end (the last group of a 8-mod-16 row count) are
 * zeros; their lanes are never stored. */
#include "kernels/forward_packed.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/forward_math.h"
#include "kernels/forward_repack.h"
#include "kernels/gemm_tlanes.h"
#include "kernels/gemm_mxfp4.h"
#include "kernels/packed_q6_K.h"
#include "kernels/packed_q8_0.h"
#include "kernels/quant_batch.h"
#include "kernels/quant_internal.h"
#include "kernels/quant_mxfp4.h"
#include "kernels/repack_mxfp4.h"
#include "gguf/tensor.h"

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VNNI__) && defined(__F16C__)
#include <immintrin.h>
#define PK_AVX512 1
#elif defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
/* AVX2 without AVX-512 VNNI (AMD Zen 2/3, older Intel, Skylake-SP): the
 * same layouts, a 256-bit half (8 rows) at a time */
#include <immintrin.h>
#define PK_AVX2 1
#endif

enum {
    Q4_0_NIB = PACKED_Q4_0_NIB, /* nibble bytes per block of a group */
    Q4_0_SC = PACKED_Q4_0_SC,   /* 16 fp16 scales */
    Q4_K_NIB = PACKED_Q4_K_NIB,
    Q4_K_SC = PACKED_Q4_K_SC,
    MXFP4_NIB = PACKED_MXFP4_NIB,
    MXFP4_SC = PACKED_MXFP4_SC, /* 16 scale bytes */
    MXFP4_REG_TOK = 8,         /* MXFP4 tokens decoded in registers; more go to the GEMM */
};

static bool is_q4_K(const gguf_tensor *w)
{
    return w->type == TENSOR_TYPE_Q4_K;
}

/* rows of all matrices of w (experts: ne[2] matrices of ne[1] rows, one
 * after the other in the file) */
static int64_t all_rows(const gguf_tensor *w)
{
    return w->ne[1] * (w->ne[2] > 0 ? w->ne[2] : 1);
}

int64_t packed_groups(const gguf_tensor *w)
{
    return (all_rows(w) + PACKED_ROWS - 1) / PACKED_ROWS;
}

static int64_t blocks_per_row(const gguf_tensor *w)
{
    return w->ne[0] / (is_q4_K(w) || w->type == TENSOR_TYPE_Q6_K ? QK_K : QK4_0);
}

static size_t group_bytes(const gguf_tensor *w)
{
    const int64_t nb = blocks_per_row(w);
    return w->type == TENSOR_TYPE_Q6_K     ? (size_t)PACKED_ROWS * (size_t)nb * sizeof(block_q6_K)
           : is_q4_K(w)                    ? packed_group_size(nb, Q4_K_NIB, Q4_K_SC)
           : w->type == TENSOR_TYPE_Q8_0  ? packed_group_size(nb, PACKED_Q8_0_QS, PACKED_Q8_0_SC)
           : w->type == TENSOR_TYPE_MXFP4 ? packed_group_size(nb, MXFP4_NIB, MXFP4_SC)
                                          : packed_group_size(nb, Q4_0_NIB, Q4_0_SC);
}


/* Q4_0 the reference repacks */
static inline bool is_q4_0_repacked(const gguf_tensor *w)
{
    return w->type == TENSOR_TYPE_Q4_0 && repack_applies(w);
}

/* MXFP4 the reference repacks (8x8, the same chain per output as
 * repack_mxfp4.h) */
static inline bool is_mxfp4_repacked(const gguf_tensor *w)
{
    return w->type == TENSOR_TYPE_MXFP4 && repack_applies(w);
}

/* Experts (3-D weights) are packed as MXFP4 and Q8_0 (the kernels the
 * reference's mul_mat_id orders agree with: the repacked gemv chain and
 * vec_dot's lanes, for any number of tokens) and, on AVX-512, as Q4_K
 * (every token in the repacked gemv order: q4_K_gemv_tokens) with whole
 * groups per expert, so that expert e's rows start at group e * ne[1] / 16. */
static inline bool is_2d(const gguf_tensor *w)
{
    return w->ne[2] <= 1 && w->ne[3] <= 1;
}

/* Q4_K experts the reference repacks: their groups are 2.8 % larger than
 * the rows (the scales as bytes), and with them the 512-bit Q4_K kernel
 * runs their batches, where gemm_kq4v.c unpacked each expert's rows into
 * panels of its own for every call (a prompt's ~16 tokens an expert). */
static inline bool is_q4_K_expert_packed(const gguf_tensor *w)
{
#ifdef PK_AVX512
    return is_q4_K(w) && w->ne[0] % QK_K == 0 && refk_applies(w);
#else
    (void)w;
    return false;
#endif
}

/* Q6_K matrices and experts, re-encoded row by row in AVX2 builds without
 * AVX-512 (packed_q6_K.h): a "group" is 16 rows in file order */
static inline bool is_q6_K_packed(const gguf_tensor *w)
{
#ifdef PACKED_Q6_K
    return w->type == TENSOR_TYPE_Q6_K && w->ne[0] % QK_K == 0;
#else
    (void)w;
    return false;
#endif
}

size_t packed_bytes(const gguf_tensor *w)
{
#if defined(PK_AVX512) || defined(PK_AVX2)
    if (!is_2d(w))
        return (is_mxfp4_repacked(w) || (w->type == TENSOR_TYPE_Q8_0 && w->ne[0] % QK8_0 == 0) ||
                is_q6_K_packed(w) || is_q4_K_expert_packed(w)) &&
                       w->ne[3] <= 1 && w->ne[1] % PACKED_ROWS == 0
                   ? (size_t)packed_groups(w) * group_bytes(w)
                   : 0;
#else
    if (!is_2d(w))
        return 0;
#endif
#ifdef PK_AVX512
    if (is_q4_0_repacked(w) || is_mxfp4_repacked(w) || (is_q4_K(w) && refk_applies(w)) ||
        (w->type == TENSOR_TYPE_Q8_0 && w->ne[0] % QK8_0 == 0))
        return (size_t)packed_groups(w) * group_bytes(w);
#elif defined(PK_AVX2)
    if (is_q4_0_repacked(w) || is_mxfp4_repacked(w) || (is_q4_K(w) && refk_applies(w)) ||
        (w->type == TENSOR_TYPE_Q8_0 && w->ne[0] % QK8_0 == 0) || is_q6_K_packed(w))
        return (size_t)packed_groups(w) * group_bytes(w);
#else
    (void)w;
#endif
    return 0;
}

static void pack_row_q4_0(const block_q4_0 *x, int64_t nb, int r, uint8_t *o)
{
    for (int64_t b = 0; b < nb; b++) {
        for (int j = 0; j < 4; j++)
            memcpy(o + packed_q4_0_q(b) + 64 * j + 4 * r, x[b].qs + 4 * j, 4);
        memcpy(o + packed_q4_0_sc(b) + 2 * r, &x[b].d, 2);
    }
}

static void pack_row_mxfp4(const block_mxfp4 *x, int64_t nb, int r, uint8_t *o)
{
    for (int64_t b = 0; b < nb; b++) {
        for (int j = 0; j < 4; j++)
            memcpy(o + packed_mxfp4_q(b) + 64 * j + 4 * r, x[b].qs + 4 * j, 4);
        o[packed_mxfp4_sc(b) + r] = x[b].e;
    }
}

static void pack_row_q4_K(const block_q4_K *x, int64_t nb, int r, uint8_t *o)
{
    for (int64_t b = 0; b < nb; b++) {
        uint8_t *nib = o + packed_q4_K_q(b), *sc = o + packed_q4_K_sc(b);
        for (int j = 0; j < 4; j++)
            for (int q = 0; q < 8; q++)
                memcpy(nib + 512 * j + 64 * q + 4 * r, x[b].qs + 32 * j + 4 * q, 4);
        memcpy(sc + 2 * r, &x[b].d, 2);
        memcpy(sc + 32 + 2 * r, &x[b].dmin, 2);
        for (int j = 0; j < 4; j++) {
            uint8_t *p = sc + 64 + 64 * j;
            quant_scale_min_k4(2 * j, x[b].scales, &p[r], &p[32 + 2 * r]);
            quant_scale_min_k4(2 * j + 1, x[b].scales, &p[16 + r], &p[32 + 2 * r + 1]);
        }
    }
}

void packed_build(const gguf_tensor *w, uint8_t *dst, int64_t g0, int64_t g1)
{
    const int64_t nb = blocks_per_row(w);
    const size_t gb = group_bytes(w), rb = tensor_row_size((enum tensor_type)w->type, w->ne[0]);
    for (int64_t g = g0; g < g1; g++) {
        uint8_t *o = dst + (size_t)g * gb;
        if ((g + 1) * PACKED_ROWS > all_rows(w)) /* full groups are written whole */
            memset(o, 0, gb);
        for (int r = 0; r < PACKED_ROWS && g * PACKED_ROWS + r < all_rows(w); r++) {
            const uint8_t *row = (const uint8_t *)w->data + (size_t)(g * PACKED_ROWS + r) * rb;
            if (w->type == TENSOR_TYPE_Q6_K)
                packed_q6_K_encode(row, o + (size_t)r * rb, nb);
            else if (is_q4_K(w))
                pack_row_q4_K((const block_q4_K *)row, nb, r, o);
            else if (w->type == TENSOR_TYPE_Q8_0)
                packed_q8_0_pack_row((const block_q8_0 *)row, nb, r, o);
            else if (w->type == TENSOR_TYPE_MXFP4)
                pack_row_mxfp4((const block_mxfp4 *)row, nb, r, o);
            else
                pack_row_q4_0((const block_q4_0 *)row, nb, r, o);
        }
    }
}

#if defined(PK_AVX512) || defined(PK_AVX2)
/* 4 bytes of activations, for a broadcast */
static inline int32_t ld32(const void *p)
{
    int32_t v;
    memcpy(&v, p, 4);
    return v;
}
#endif

#ifdef PK_AVX512
/* No packed kernel prefetches in software: a thread's groups are one
 * linear stream (forward_packed.h), which the hardware prefetcher follows.
 * With the scales after all of a group's quants the kernels prefetched the
 * next group themselves (Zen 5: Q4_0 decode 36.6 -> 65 tok/s); with them in
 * the stream, dropping those prefetches took TinyLlama-shape decode on one
 * thread of an AMD EPYC Zen 4 from 21 to 27-28.6 tok/s (Q8_0), 42-43 to
 * 50-53 (Q4_0), 43 to 56-57 (MXFP4), 40-41 to 43-45 (Q4_K_M). */
/* One group against nt <= 8 tokens, q4_0_row_dot's steps per lane: the
 * unsigned nibbles meet the signed activations in VNNI dots, straight from
 * the activation buffer (broadcast loads), and 8 * sum(a) comes back off,
 * which gives each block's exact sum of (nibble - 8) * a; that is
 * FMA-accumulated with d_w * d_a. ys: token 0's block sums, nb per token. */
static inline __attribute__((always_inline)) void
q4_0_group(const uint8_t *pw, int64_t nb, const uint8_t *act, size_t act_stride, const int32_t *ys, int nt,
           float *out, int64_t out_stride, __mmask16 keep)
{
    const __m512i m4 = _mm512_set1_epi8(0x0F);
    __m512 acc[8];
    for (int k = 0; k < 8; k++)
        acc[k] = _mm512_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *nib = (pw + packed_q4_0_q(b));
        __m512i v[8];
        _Pragma("GCC unroll 4") for (int j = 0; j < 4; j++)
        {
            const __m512i p = _mm512_loadu_si512(nib + 64 * j);
            v[j] = _mm512_and_si512(p, m4);
            v[j + 4] = _mm512_and_si512(_mm512_srli_epi16(p, 4), m4);
        }
        const __m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(pw + packed_q4_0_sc(b))));
        _Pragma("GCC unroll 8") for (int k = 0; k < nt; k++)
        {
            const block_q8_0 *y = (const block_q8_0 *)(act + (size_t)k * act_stride) + b;
            /* two chains of four dots (exact integers: any order), so a
             * block's sum waits for 4 dependent dots rather than 8 */
            __m512i s = _mm512_set1_epi32(-8 * ys[(int64_t)k * nb + b]), s1 = _mm512_setzero_si512();
            _Pragma("GCC unroll 4") for (int j = 0; j < 8; j += 2)
            {
                s = _mm512_dpbusd_epi32(s, v[j], _mm512_set1_epi32(ld32(y->qs + 4 * j)));
                s1 = _mm512_dpbusd_epi32(s1, v[j + 1], _mm512_set1_epi32(ld32(y->qs + 4 * j + 4)));
            }
            s = _mm512_add_epi32(s, s1);
            acc[k] =
                _mm512_fmadd_ps(_mm512_cvtepi32_ps(s), _mm512_mul_ps(dw, _mm512_set1_ps(h2f(y->d))), acc[k]);
        }
    }
    for (int k = 0; k < nt; k++)
        _mm512_mask_storeu_ps(out + (int64_t)k * out_stride, keep, acc[k]);
}

/* One MXFP4 group against nt <= 8 tokens in the repacked chain per lane
 * (repack_mxfp4.h): the nibbles become the doubled E2M1 values plus 12
 * through one table lookup (unsigned, for VNNI), meet the signed
 * activations in VNNI dots straight from the activation buffer, and
 * QUANT_MX_OFF * sum(a) comes back off: each block's exact integer sum, then
 * acc = fma(isum, d_w * d_a, acc) with d_w the scale byte's half
 * (quant_e8m0_to_fp32_half). Bounds: 32 products of at most 24 * 127. */
static inline __attribute__((always_inline)) void
mxfp4_group(const uint8_t *pw, int64_t nb, const uint8_t *act, size_t act_stride, const int32_t *ys, int nt,
            float *out, int64_t out_stride, __mmask16 keep)
{
    const __m512i m4 = _mm512_set1_epi8(0x0F);
    const __m512i lut = _mm512_broadcast_i32x4(
        quant_mx_lut_off());
    __m512 acc[8];
    for (int k = 0; k < 8; k++)
        acc[k] = _mm512_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *nib = (pw + packed_mxfp4_q(b));
        __m512i v[8];
        _Pragma("GCC unroll 4") for (int j = 0; j < 4; j++)
        {
            const __m512i p = _mm512_loadu_si512(nib + 64 * j);
            v[j] = _mm512_shuffle_epi8(lut, _mm512_and_si512(p, m4));
            v[j + 4] = _mm512_shuffle_epi8(lut, _mm512_and_si512(_mm512_srli_epi16(p, 4), m4));
        }
        /* the 16 scale bytes as halves of 2^(e - 127): (e - 1) << 23, or a
         * subnormal for e < 2 */
        const __m512i e = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(pw + packed_mxfp4_sc(b))));
        const __m512i normal = _mm512_slli_epi32(_mm512_sub_epi32(e, _mm512_set1_epi32(1)), 23);
        const __m512i tiny = _mm512_sllv_epi32(_mm512_set1_epi32(0x00200000), e);
        const __m512 dw = _mm512_castsi512_ps(
            _mm512_mask_blend_epi32(_mm512_cmplt_epu32_mask(e, _mm512_set1_epi32(2)), normal, tiny));
        _Pragma("GCC unroll 8") for (int k = 0; k < nt; k++)
        {
            const block_q8_0 *y = (const block_q8_0 *)(act + (size_t)k * act_stride) + b;
            /* low nibbles meet bytes 0..15, high nibbles bytes 16..31 */
            __m512i s = _mm512_set1_epi32(-QUANT_MX_OFF * ys[(int64_t)k * nb + b]), s1 = _mm512_setzero_si512();
            _Pragma("GCC unroll 4") for (int j = 0; j < 4; j++)
            {
                s = _mm512_dpbusd_epi32(s, v[j], _mm512_set1_epi32(ld32(y->qs + 4 * j)));
                s1 = _mm512_dpbusd_epi32(s1, v[j + 4], _mm512_set1_epi32(ld32(y->qs + 16 + 4 * j)));
            }
            s = _mm512_add_epi32(s, s1);
            acc[k] =
                _mm512_fmadd_ps(_mm512_cvtepi32_ps(s), _mm512_mul_ps(dw, _mm512_set1_ps(h2f(y->d))), acc[k]);
        }
    }
    for (int k = 0; k < nt; k++)
        _mm512_mask_storeu_ps(out + (int64_t)k * out_stride, keep, acc[k]);
}

/* Tokens in groups of 8, then the rest (generation: one token, the group's
 * bytes read once). */
static void mxfp4_tokens(const uint8_t *pw, int64_t nb, const uint8_t *act, size_t act_stride, const int32_t *ys,
                         int n_tok, float *out, int64_t out_stride, __mmask16 keep)
{
    int t = 0;
    for (; t + 8 <= n_tok; t += 8)
        mxfp4_group(pw, nb, act + (size_t)t * act_stride, act_stride, ys + (int64_t)t * nb, 8,
                    out + (int64_t)t * out_stride, out_stride, keep);
    if (t == n_tok)
        return;
    if (n_tok - t == 1) /* a constant count: generation's own copy of the loop */
        mxfp4_group(pw, nb, act + (size_t)t * act_stride, act_stride, ys + (int64_t)t * nb, 1,
                    out + (int64_t)t * out_stride, out_stride, keep);
    else
        mxfp4_group(pw, nb, act + (size_t)t * act_stride, act_stride, ys + (int64_t)t * nb, n_tok - t,
                    out + (int64_t)t * out_stride, out_stride, keep);
}

/* One group against nt tokens in q4_K_repacked_dot's order per lane: each
 * pair of sub-blocks gives exact sums scale * (q . a) and min * bsum; gemm
 * (nt <= 8) FMA-accumulates them per pair, gemv (nt <= 4) per super-block. */
static inline __attribute__((always_inline)) void
q4_K_group(const uint8_t *pw, int64_t nb, const uint8_t *act, size_t act_stride, int nt, bool gemm,
           float *out, int64_t out_stride, __mmask16 keep)
{
    const __m512i m4 = _mm512_set1_epi8(0x0F);
    __m512 acc[8], accm[8];
    for (int k = 0; k < 8; k++)
        acc[k] = accm[k] = _mm512_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *nib = (pw + packed_q4_K_q(b)), *sc = (pw + packed_q4_K_sc(b));
        const __m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)sc));
        const __m512 dm = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(sc + 32)));
        __m512i isum[4], imin[4];
        for (int k = 0; k < 4; k++)
            isum[k] = imin[k] = _mm512_setzero_si512();
        for (int j = 0; j < 4; j++) {
            const uint8_t *h = sc + 64 + 64 * j;
            const __m512i sc0 = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)h));
            const __m512i sc1 = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(h + 16)));
            const __m512i mins = _mm512_cvtepu8_epi16(_mm256_loadu_si256((const __m256i *)(h + 32)));
            __m512i lo[8], hi[8];
            _Pragma("GCC unroll 8") for (int q = 0; q < 8; q++)
            {
                const __m512i p = _mm512_loadu_si512(nib + 512 * j + 64 * q);
                lo[q] = _mm512_and_si512(p, m4);
                hi[q] = _mm512_and_si512(_mm512_srli_epi16(p, 4), m4);
            }
            _Pragma("GCC unroll 8") for (int k = 0; k < nt; k++)
            {
                const block_q8_K *y = (const block_q8_K *)(act + (size_t)k * act_stride) + b;
                const int8_t *a = y->qs + 64 * j;
                __m512i s0 = _mm512_setzero_si512(), s1 = _mm512_setzero_si512();
                _Pragma("GCC unroll 8") for (int q = 0; q < 8; q++)
                {
                    s0 = _mm512_dpbusd_epi32(s0, lo[q], _mm512_set1_epi32(ld32(a + 4 * q)));
                    s1 = _mm512_dpbusd_epi32(s1, hi[q], _mm512_set1_epi32(ld32(a + 32 + 4 * q)));
                }
                const __m512i is = _mm512_add_epi32(_mm512_mullo_epi32(s0, sc0), _mm512_mullo_epi32(s1, sc1));
                const int16_t *bs = y->bsums + 4 * j;
                const int32_t bpair = (int32_t)((uint32_t)(uint16_t)(bs[0] + bs[1]) |
                                                ((uint32_t)(uint16_t)(bs[2] + bs[3]) << 16));
                const __m512i im = _mm512_madd_epi16(mins, _mm512_set1_epi32(bpair));
                if (gemm) {
                    const __m512 da = _mm512_set1_ps(y->d);
                    acc[k] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(is), _mm512_mul_ps(dw, da), acc[k]);
                    accm[k] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(im), _mm512_mul_ps(dm, da), accm[k]);
                } else {
                    isum[k & 3] = _mm512_add_epi32(isum[k & 3], is);
                    imin[k & 3] = _mm512_add_epi32(imin[k & 3], im);
                }
            }
        }
        if (!gemm)
            for (int k = 0; k < nt; k++) {
                const __m512 da = _mm512_set1_ps(((const block_q8_K *)(act + (size_t)k * act_stride) + b)->d);
                acc[k] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum[k & 3]), _mm512_mul_ps(dw, da), acc[k]);
                accm[k] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(imin[k & 3]), _mm512_mul_ps(dm, da), accm[k]);
            }
    }
    for (int k = 0; k < nt; k++)
        _mm512_mask_storeu_ps(out + (int64_t)k * out_stride, keep, _mm512_sub_ps(acc[k], accm[k]));
}

/* Tokens in groups of 8 (a constant count keeps the accumulators in
 * registers), then the rest. */
static void q4_0_tokens(const uint8_t *pw, int64_t nb, const uint8_t *act, size_t act_stride,
                        const int32_t *ys, int n_tok, float *out, int64_t out_stride, __mmask16 keep)
{
    int t = 0;
    for (; t + 8 <= n_tok; t += 8)
        q4_0_group(pw, nb, act + (size_t)t * act_stride, act_stride, ys + (int64_t)t * nb, 8,
                   out + (int64_t)t * out_stride, out_stride, keep);
    if (t < n_tok)
        q4_0_group(pw, nb, act + (size_t)t * act_stride, act_stride, ys + (int64_t)t * nb, n_tok - t,
                   out + (int64_t)t * out_stride, out_stride, keep);
}

/* Tokens in the repacked gemv's order, 4 a pass: every token of a MoE
 * expert (the reference's mul_mat_id runs each through the gemv) and the
 * last 1-3 of a dense batch (q4_K_tokens). Inlined into both: as a call
 * of its own, a dense batch of 5 or 7 tokens ran 4 % slower. */
static inline __attribute__((always_inline)) void q4_K_gemv_tokens(const uint8_t *pw, int64_t nb, const uint8_t *act,
                                                                    size_t act_stride, int n_tok, float *out,
                                                                    int64_t out_stride, __mmask16 keep)
{
    int t = 0;
    for (; t + 4 <= n_tok; t += 4)
        q4_K_group(pw, nb, act + (size_t)t * act_stride, act_stride, 4, false, out + (int64_t)t * out_stride,
                   out_stride, keep);
    if (n_tok - t == 1) /* a constant count: generation's own copy, its accumulators in registers */
        q4_K_group(pw, nb, act + (size_t)t * act_stride, act_stride, 1, false, out + (int64_t)t * out_stride,
                   out_stride, keep);
    else if (t < n_tok)
        q4_K_group(pw, nb, act + (size_t)t * act_stride, act_stride, n_tok - t, false,
                   out + (int64_t)t * out_stride, out_stride, keep);
}

/* The reference runs tokens in complete groups of 4 through its gemm
 * kernel and the rest (fewer than 4), one by one, through gemv. */
static void q4_K_tokens(const uint8_t *pw, int64_t nb, const uint8_t *act, size_t act_stride, int n_tok,
                        float *out, int64_t out_stride, __mmask16 keep)
{
    const int n_gemm = n_tok - n_tok % 4;
    int t = 0;
    for (; t + 8 <= n_gemm; t += 8)
        q4_K_group(pw, nb, act + (size_t)t * act_stride, act_stride, 8, true, out + (int64_t)t * out_stride,
                   out_stride, keep);
    if (t < n_gemm)
        q4_K_group(pw, nb, act + (size_t)t * act_stride, act_stride, 4, true, out + (int64_t)t * out_stride,
                   out_stride, keep);
    if (n_gemm < n_tok)
        q4_K_gemv_tokens(pw, nb, act + (size_t)n_gemm * act_stride, act_stride, n_tok - n_gemm,
                         out + (int64_t)n_gemm * out_stride, out_stride, keep);
}

/* The rows of group g that [r0, r1) holds, as lanes of its 16. */
static inline __mmask16 group_keep(int64_t g, int64_t r0, int64_t r1)
{
    const int64_t base = g * PACKED_ROWS;
    const int lo = r0 > base ? (int)(r0 - base) : 0;
    const int hi = r1 - base < PACKED_ROWS ? (int)(r1 - base) : PACKED_ROWS;
    return (__mmask16)(((1u << hi) - 1u) & ~((1u << lo) - 1u));
}
#endif

#ifdef PK_AVX2
/* One half of a group (rows 8h..8h+7: the 256-bit half h of each of the
 * layout's 64-byte vectors) against nt <= 4 tokens, q4_0_row_dot's steps
 * per lane. Without VNNI the unsigned nibbles meet the signed activations in
 * maddubs: a pair's sum is within [-3840, 3810], so the block's 16 pairs per
 * lane add up in 16 bits without overflow (|sum| <= 30720) and one madd
 * widens them; 8 * sum(a) comes back off, which leaves each block's exact
 * sum of (nibble - 8) * a, FMA-accumulated with d_w * d_a as the reference
 * does. No software prefetch (see PK_AVX512's kernels): on one thread of
 * an AMD EPYC Zen 4, TinyLlama-shape Q4_0 decode 44-50 tok/s with it, 48-52
 * without; Q8_0 21-22.7 and 26.9-27.7. */
static inline __attribute__((always_inline)) void
q4_0_half(const uint8_t *pw, int64_t nb, int h, const uint8_t *act, size_t act_stride, const int32_t *ys, int nt,
          float *out, int64_t out_stride, __m256i keep)
{
    const __m256i m4 = _mm256_set1_epi8(0x0F), ones = _mm256_set1_epi16(1);
    __m256 acc[4];
    for (int k = 0; k < 4; k++)
        acc[k] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *nib = (pw + packed_q4_0_q(b)) + 32 * h;
        __m256i v[8];
        _Pragma("GCC unroll 4") for (int j = 0; j < 4; j++)
        {
            const __m256i p = _mm256_loadu_si256((const __m256i *)(nib + 64 * j));
            v[j] = _mm256_and_si256(p, m4);
            v[j + 4] = _mm256_and_si256(_mm256_srli_epi16(p, 4), m4);
        }
        const __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)((pw + packed_q4_0_sc(b)) + 16 * h)));
        _Pragma("GCC unroll 4") for (int k = 0; k < nt; k++)
        {
            const block_q8_0 *y = (const block_q8_0 *)(act + (size_t)k * act_stride) + b;
            __m256i ya[4]; /* the activation dwords over the lanes */
            quant_spread4(y->qs, ya);
            __m256i s0 = _mm256_maddubs_epi16(v[0], ya[0]);
            __m256i s1 = _mm256_maddubs_epi16(v[1], ya[1]);
            s0 = _mm256_add_epi16(s0, _mm256_maddubs_epi16(v[2], ya[2]));
            s1 = _mm256_add_epi16(s1, _mm256_maddubs_epi16(v[3], ya[3]));
            quant_spread4(y->qs + 16, ya);
            _Pragma("GCC unroll 2") for (int j = 4; j < 8; j += 2)
            {
                s0 = _mm256_add_epi16(s0, _mm256_maddubs_epi16(v[j], ya[j - 4]));
                s1 = _mm256_add_epi16(s1, _mm256_maddubs_epi16(v[j + 1], ya[j - 3]));
            }
            const __m256i s = _mm256_add_epi32(_mm256_madd_epi16(_mm256_add_epi16(s0, s1), ones),
                                               _mm256_set1_epi32(-8 * ys[(int64_t)k * nb + b]));
            acc[k] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), _mm256_mul_ps(dw, _mm256_set1_ps(h2f(y->d))), acc[k]);
        }
    }
    for (int k = 0; k < nt; k++)
        _mm256_maskstore_ps(out + (int64_t)k * out_stride + 8 * h, keep, acc[k]);
}

/* A whole group against one token (generation): both halves in one pass
 * over the group's bytes, the same steps per lane as q4_0_half. */
static void q4_0_gemv(const uint8_t *pw, int64_t nb, const block_q8_0 *y, const int32_t *ys, float *out,
                      const __m256i keep[2])
{
    const __m256i m4 = _mm256_set1_epi8(0x0F), ones = _mm256_set1_epi16(1);
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *nib = (pw + packed_q4_0_q(b));
        __m256i s0 = _mm256_setzero_si256(), s1 = _mm256_setzero_si256();
        _Pragma("GCC unroll 4") for (int j = 0; j < 4; j++)
        {
            const __m256i alo = _mm256_set1_epi32(ld32(y[b].qs + 4 * j)), ahi = _mm256_set1_epi32(ld32(y[b].qs + 16 + 4 * j));
            const __m256i p0 = _mm256_loadu_si256((const __m256i *)(nib + 64 * j));
            const __m256i p1 = _mm256_loadu_si256((const __m256i *)(nib + 64 * j + 32));
            s0 = _mm256_add_epi16(s0, _mm256_maddubs_epi16(_mm256_and_si256(p0, m4), alo));
            s1 = _mm256_add_epi16(s1, _mm256_maddubs_epi16(_mm256_and_si256(p1, m4), alo));
            s0 = _mm256_add_epi16(s0, _mm256_maddubs_epi16(_mm256_and_si256(_mm256_srli_epi16(p0, 4), m4), ahi));
            s1 = _mm256_add_epi16(s1, _mm256_maddubs_epi16(_mm256_and_si256(_mm256_srli_epi16(p1, 4), m4), ahi));
        }
        const __m256i base = _mm256_set1_epi32(-8 * ys[b]);
        const __m256 da = _mm256_set1_ps(h2f(y[b].d));
        const __m128i dh = _mm_loadu_si128((const __m128i *)(pw + packed_q4_0_sc(b)));
        const __m128i dh1 = _mm_loadu_si128((const __m128i *)((pw + packed_q4_0_sc(b)) + 16));
        acc0 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_add_epi32(_mm256_madd_epi16(s0, ones), base)),
                               _mm256_mul_ps(_mm256_cvtph_ps(dh), da), acc0);
        acc1 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_add_epi32(_mm256_madd_epi16(s1, ones), base)),
                               _mm256_mul_ps(_mm256_cvtph_ps(dh1), da), acc1);
    }
    _mm256_maskstore_ps(out, keep[0], acc0);
    _mm256_maskstore_ps(out + 8, keep[1], acc1);
}

/* A whole MXFP4 group against one token (generation), both halves in one
 * pass over its bytes, in the repacked chain per lane (repack_mxfp4.h):
 * the nibbles through the value table plus 12 (0..24, maddubs' unsigned
 * operand), a block's low and high nibbles' pair sums apart in 16 bits
 * (each at most 4 x 2 x 24 x 127 = 24384), QUANT_MX_OFF * sum(a) back off, then
 * fma(isum, d_w * d_a, acc) with d_w the scale byte's half. Unpacked, a
 * token's rows went through repack_mxfp4.c's 4-row tiles (a horizontal sum
 * per row and block): 58 % of a 4-layer MXFP4 file's generation for 40 %
 * of its bytes. */
static void mxfp4_gemv(const uint8_t *pw, int64_t nb, const block_q8_0 *y, const int32_t *ys, float *out,
                       const __m256i keep[2])
{
    const __m256i m4 = _mm256_set1_epi8(0x0F), ones = _mm256_set1_epi16(1);
    const __m256i lut = _mm256_broadcastsi128_si256(
        quant_mx_lut_off());
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *nib = (pw + packed_mxfp4_q(b));
        __m256i s0 = _mm256_setzero_si256(), s1 = s0, s2 = s0, s3 = s0;
        _Pragma("GCC unroll 4") for (int j = 0; j < 4; j++)
        {
            const __m256i alo = _mm256_set1_epi32(ld32(y[b].qs + 4 * j)), ahi = _mm256_set1_epi32(ld32(y[b].qs + 16 + 4 * j));
            const __m256i p0 = _mm256_loadu_si256((const __m256i *)(nib + 64 * j));
            const __m256i p1 = _mm256_loadu_si256((const __m256i *)(nib + 64 * j + 32));
            s0 = _mm256_add_epi16(s0, _mm256_maddubs_epi16(_mm256_shuffle_epi8(lut, _mm256_and_si256(p0, m4)), alo));
            s1 = _mm256_add_epi16(s1, _mm256_maddubs_epi16(_mm256_shuffle_epi8(lut, _mm256_and_si256(p1, m4)), alo));
            s2 = _mm256_add_epi16(
                s2, _mm256_maddubs_epi16(_mm256_shuffle_epi8(lut, _mm256_and_si256(_mm256_srli_epi16(p0, 4), m4)), ahi));
            s3 = _mm256_add_epi16(
                s3, _mm256_maddubs_epi16(_mm256_shuffle_epi8(lut, _mm256_and_si256(_mm256_srli_epi16(p1, 4), m4)), ahi));
        }
        const __m256i base = _mm256_set1_epi32(-QUANT_MX_OFF * ys[b]);
        const __m256 da = _mm256_set1_ps(h2f(y[b].d));
        const __m128i eb = _mm_loadu_si128((const __m128i *)(pw + packed_mxfp4_sc(b)));
        const __m256 dw[2] = {quant_e8m0_half8(eb), quant_e8m0_half8(_mm_srli_si128(eb, 8))};
        const __m256i i0 = _mm256_add_epi32(_mm256_add_epi32(_mm256_madd_epi16(s0, ones), _mm256_madd_epi16(s2, ones)), base);
        const __m256i i1 = _mm256_add_epi32(_mm256_add_epi32(_mm256_madd_epi16(s1, ones), _mm256_madd_epi16(s3, ones)), base);
        acc0 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(i0), _mm256_mul_ps(dw[0], da), acc0);
        acc1 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(i1), _mm256_mul_ps(dw[1], da), acc1);
    }
    _mm256_maskstore_ps(out, keep[0], acc0);
    _mm256_maskstore_ps(out + 8, keep[1], acc1);
}

/* MXFP4 groups: one token through mxfp4_gemv; more, the group decoded once
 * (repack_mxfp4_packed_group: 8 rows interleaved per half, as
 * repack_mxfp4.c's prompt tiles take them) for every token. */
static void mxfp4_tokens256(const uint8_t *packed, int64_t nb, size_t gb, int64_t r0, int64_t r1, const uint8_t *act,
                            size_t act_stride, const int32_t *ys, int n_tok, float *out, int64_t out_stride)
{
    /* a batch with the tokens in the lanes (gemm_tlanes.h) */
    if (n_tok >= GEMM_TLANES_MIN_TOK_MXFP4 &&
        gemm_tlanes_mxfp4(packed, nb, gb, r0, r1, act, act_stride, n_tok, out, out_stride))
        return;
    for (int64_t g = r0 / PACKED_ROWS; g * PACKED_ROWS < r1; g++) {
        const int64_t base = g * PACKED_ROWS;
        const int lo = r0 > base ? (int)(r0 - base) : 0;
        const int hi = r1 - base < PACKED_ROWS ? (int)(r1 - base) : PACKED_ROWS;
        const uint8_t *pw = packed + (size_t)g * gb;
        if (n_tok > 1 &&
            repack_mxfp4_packed_group(pw, nb, act, act_stride, ys, n_tok, out + base, out_stride, lo, hi))
            continue;
        /* one token, or no scratch: the same bits a token at a time */
        const __m256i keep[2] = {quant_lanes_in(lo, hi), quant_lanes_in(lo - 8, hi - 8)};
        for (int t = 0; t < n_tok; t++)
            mxfp4_gemv(pw, nb, (const block_q8_0 *)(act + (size_t)t * act_stride), ys + (int64_t)t * nb,
                       out + (int64_t)t * out_stride + base, keep);
    }
}

/* Q4_K: one pair j of sub-blocks of a super-block, half h of the group,
 * against the activations a (the pair's 64 quants): the exact sums
 * scale * (q . a) of both sub-blocks per lane. The 16-bit sums of a
 * sub-block stay below 30720 in magnitude as for Q4_0, and madd with the
 * scale in both 16-bit halves of a lane multiplies and widens at once. */
static inline __attribute__((always_inline)) __m256i q4_K_pair(const uint8_t *nib, int h, const int8_t *a,
                                                                 __m256i sc0, __m256i sc1)
{
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    __m256i s0 = _mm256_setzero_si256(), s1 = _mm256_setzero_si256();
    _Pragma("GCC unroll 2") for (int g = 0; g < 2; g++)
    {
        __m256i a0[4], a1[4]; /* the activation dwords over the lanes */
        quant_spread4(a + 16 * g, a0);
        quant_spread4(a + 32 + 16 * g, a1);
        _Pragma("GCC unroll 4") for (int q = 0; q < 4; q++)
        {
            const __m256i p = _mm256_loadu_si256((const __m256i *)(nib + 64 * (4 * g + q) + 32 * h));
            s0 = _mm256_add_epi16(s0, _mm256_maddubs_epi16(_mm256_and_si256(p, m4), a0[q]));
            s1 = _mm256_add_epi16(s1, _mm256_maddubs_epi16(_mm256_and_si256(_mm256_srli_epi16(p, 4), m4), a1[q]));
        }
    }
    return _mm256_add_epi32(_mm256_madd_epi16(s0, sc0), _mm256_madd_epi16(s1, sc1));
}

/* A lane's u8 scale in both of its 16-bit halves (for madd). */
static inline __m256i q4_K_scale16(const uint8_t *p)
{
    const __m256i v = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)p));
    return _mm256_or_si256(v, _mm256_slli_epi32(v, 16));
}

/* min(2j) * (bsums 0 + 1) + min(2j+1) * (bsums 2 + 3) per lane */
static inline __m256i q4_K_mins(const uint8_t *h, int half, const block_q8_K *y, int j)
{
    const __m256i mins = _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)(h + 32 + 16 * half)));
    const int16_t *bs = y->bsums + 4 * j;
    const int32_t bpair =
        (int32_t)((uint32_t)(uint16_t)(bs[0] + bs[1]) | ((uint32_t)(uint16_t)(bs[2] + bs[3]) << 16));
    return _mm256_madd_epi16(mins, _mm256_set1_epi32(bpair));
}

/* Half h of a group against nt <= 4 tokens in the reference's gemm order
 * (q4_K_group's with gemm: a float step per pair of sub-blocks). */
static inline __attribute__((always_inline)) void
q4_K_half_gemm(const uint8_t *pw, int64_t nb, int h, const uint8_t *act, size_t act_stride, int nt, float *out,
               int64_t out_stride, __m256i keep, const uint8_t *pf, size_t pf_step)
{
    __m256 acc[4], accm[4];
    for (int k = 0; k < 4; k++)
        acc[k] = accm[k] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *nib = (pw + packed_q4_K_q(b)), *sc = (pw + packed_q4_K_sc(b));
        const __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(sc + 16 * h)));
        const __m256 dm = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(sc + 32 + 16 * h)));
        for (int j = 0; j < 4; j++) {
            quant_prefetch_part((const char *)pf, b, pf_step, j, 4);
            const uint8_t *hd = sc + 64 + 64 * j;
            const __m256i sc0 = q4_K_scale16(hd + 8 * h), sc1 = q4_K_scale16(hd + 16 + 8 * h);
            _Pragma("GCC unroll 4") for (int k = 0; k < nt; k++)
            {
                const block_q8_K *y = (const block_q8_K *)(act + (size_t)k * act_stride) + b;
                const __m256i is = q4_K_pair(nib + 512 * j, h, y->qs + 64 * j, sc0, sc1);
                const __m256i im = q4_K_mins(hd, h, y, j);
                const __m256 da = _mm256_set1_ps(y->d);
                acc[k] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(is), _mm256_mul_ps(dw, da), acc[k]);
                accm[k] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(im), _mm256_mul_ps(dm, da), accm[k]);
            }
        }
    }
    for (int k = 0; k < nt; k++)
        _mm256_maskstore_ps(out + (int64_t)k * out_stride + 8 * h, keep, _mm256_sub_ps(acc[k], accm[k]));
}

/* A whole group against one token in the reference's gemv order (integer
 * sums over the super-block, then one float step): both halves in one pass. */
static void q4_K_gemv(const uint8_t *pw, int64_t nb, const block_q8_K *y, float *out, const __m256i keep[2],
                      const uint8_t *pf, size_t pf_step)
{
    __m256 acc[2], accm[2];
    for (int h = 0; h < 2; h++)
        acc[h] = accm[h] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *nib = (pw + packed_q4_K_q(b)), *sc = (pw + packed_q4_K_sc(b));
        __m256i isum[2], imin[2];
        for (int h = 0; h < 2; h++)
            isum[h] = imin[h] = _mm256_setzero_si256();
        for (int j = 0; j < 4; j++) {
            const uint8_t *hd = sc + 64 + 64 * j;
            _Pragma("GCC unroll 2") for (int h = 0; h < 2; h++)
            {
                quant_prefetch_part((const char *)pf, b, pf_step, 2 * j + h, 8);
                isum[h] = _mm256_add_epi32(isum[h], q4_K_pair(nib + 512 * j, h, y[b].qs + 64 * j,
                                                              q4_K_scale16(hd + 8 * h), q4_K_scale16(hd + 16 + 8 * h)));
                imin[h] = _mm256_add_epi32(imin[h], q4_K_mins(hd, h, &y[b], j));
            }
        }
        const __m256 da = _mm256_set1_ps(y[b].d);
        _Pragma("GCC unroll 2") for (int h = 0; h < 2; h++)
        {
            const __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(sc + 16 * h)));
            const __m256 dm = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(sc + 32 + 16 * h)));
            acc[h] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[h]), _mm256_mul_ps(dw, da), acc[h]);
            accm[h] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(imin[h]), _mm256_mul_ps(dm, da), accm[h]);
        }
    }
    for (int h = 0; h < 2; h++)
        _mm256_maskstore_ps(out + 8 * h, keep[h], _mm256_sub_ps(acc[h], accm[h]));
}

/* The reference runs tokens in complete groups of 4 through its gemm
 * kernel and the rest, one by one, through gemv. Q4_K alone still
 * prefetches the next group (into L2, spread over the pairs): on one thread
 * of an AMD EPYC Zen 4, TinyLlama Q4_K_M decode 39-41 tok/s with it, 33
 * without, 20-25 with the lines sent to L1. */
static void q4_K_tokens(const uint8_t *pw, int64_t nb, const uint8_t *act, size_t act_stride, int n_tok,
                        float *out, int64_t out_stride, const __m256i keep[2], size_t gb)
{
    size_t step = quant_prefetch_step_size(gb, 1, nb);
    const int n_gemm = n_tok - n_tok % 4;
    for (int h = 0; h < 2 && n_gemm > 0; h++) {
        if (_mm256_testz_si256(keep[h], keep[h]))
            continue; /* no row of this half is wanted */
        for (int t = 0; t < n_gemm; t += 4)
            q4_K_half_gemm(pw, nb, h, act + (size_t)t * act_stride, act_stride, 4, out + (int64_t)t * out_stride,
                           out_stride, keep[h], pw + gb, t == 0 ? step : 0);
        step = 0; /* the first pass prefetches */
    }
    for (int t = n_gemm; t < n_tok; t++, step = 0)
        q4_K_gemv(pw, nb, (const block_q8_K *)(act + (size_t)t * act_stride), out + (int64_t)t * out_stride, keep,
                  pw + gb, step);
}

/* Tokens in groups of 4 (a constant count keeps the accumulators in
 * registers), then the rest; each half of the group in turn. */
static void q4_0_tokens(const uint8_t *pw, int64_t nb, const uint8_t *act, size_t act_stride, const int32_t *ys,
                        int n_tok, float *out, int64_t out_stride, const __m256i keep[2])
{
    if (n_tok == 1) {
        q4_0_gemv(pw, nb, (const block_q8_0 *)act, ys, out, keep);
        return;
    }
    for (int h = 0; h < 2; h++) {
        if (_mm256_testz_si256(keep[h], keep[h]))
            continue; /* no row of this half is wanted */
        int t = 0;
        for (; t + 4 <= n_tok; t += 4)
            q4_0_half(pw, nb, h, act + (size_t)t * act_stride, act_stride, ys + (int64_t)t * nb, 4,
                      out + (int64_t)t * out_stride, out_stride, keep[h]);
        if (t < n_tok)
            q4_0_half(pw, nb, h, act + (size_t)t * act_stride, act_stride, ys + (int64_t)t * nb, n_tok - t,
                      out + (int64_t)t * out_stride, out_stride, keep[h]);
    }
}
#endif

size_t packed_act_bytes(const gguf_tensor *w)
{
    if (packed_bytes(w) == 0)
        return 0;
    if (w->type == TENSOR_TYPE_Q4_0 || w->type == TENSOR_TYPE_MXFP4)
        return (size_t)blocks_per_row(w) * sizeof(int32_t);
    if (w->type == TENSOR_TYPE_Q8_0)
        return packed_q8_0_act_bytes(blocks_per_row(w));
    return 0;
}

size_t packed_act_bytes_max(int64_t n)
{
    const size_t q4_0 = (size_t)(n / QK8_0) * sizeof(int32_t), q8_0 = packed_q8_0_act_bytes(n / QK8_0);
    return q4_0 > q8_0 ? q4_0 : q8_0;
}

void packed_act_prepare(const gguf_tensor *w, const uint8_t *act, size_t act_stride, int n_tok, uint8_t *dst)
{
    const int64_t nb = w->ne[0] / QK8_0;
    const size_t bytes = packed_act_bytes(w);
    for (int t = 0; t < n_tok; t++) {
        const block_q8_0 *y = (const block_q8_0 *)(act + (size_t)t * act_stride);
        if (w->type == TENSOR_TYPE_Q8_0) {
            packed_q8_0_act(y, nb, dst + (size_t)t * bytes);
            continue;
        }
        int32_t *sums = (int32_t *)(void *)(dst + (size_t)t * bytes);
        for (int64_t b = 0; b < nb; b++) {
#if defined(PK_AVX512) || defined(PK_AVX2)
            const __m256i q = _mm256_loadu_si256((const __m256i *)y[b].qs);
            sums[b] = hsum_epi32(_mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_set1_epi8(1), q), _mm256_set1_epi16(1)));
#else
            int32_t sum = 0;
            for (int i = 0; i < QK8_0; i++)
                sum += y[b].qs[i];
            sums[b] = sum;
#endif
        }
    }
}

#if defined(PK_AVX512) || defined(PK_AVX2)
/* Q8_0: tokens in tiles whose side data (act_extra) stays in the L2 cache
 * while the tile meets every group of [r0, r1): 64 tokens of 36 bytes per
 * block, 405 KB for TinyLlama's widest rows (5632); each tile streams the
 * weights once, so 64 read them half as often as 32 (8 % faster on one
 * layer's matmuls, AVX-512). */
static void q8_0_tiles(const uint8_t *packed, int64_t nb, size_t gb, int64_t r0, int64_t r1,
                       const uint8_t *act_extra, int n_tok, float *out, int64_t out_stride)
{
    const size_t ab = packed_q8_0_act_bytes(nb);
    const int tile = PACKED_Q8_0_TILE;
    for (int t0 = 0; t0 < n_tok; t0 += tile)
        for (int64_t g = r0 / PACKED_ROWS; g * PACKED_ROWS < r1; g++) {
            const int64_t base = g * PACKED_ROWS;
            packed_q8_0_group(packed + (size_t)g * gb, nb, act_extra + (size_t)t0 * ab, ab,
                              n_tok - t0 < tile ? n_tok - t0 : tile, out + (int64_t)t0 * out_stride + base,
                              out_stride, r0 > base ? (int)(r0 - base) : 0,
                              r1 - base < PACKED_ROWS ? (int)(r1 - base) : PACKED_ROWS);
        }
}
#endif

void packed_matmul(const gguf_tensor *w, const uint8_t *packed, int64_t r0, int64_t r1, const uint8_t *act,
                   size_t act_stride, const uint8_t *act_extra, int n_tok, float *out, int64_t out_stride)
{
    const int32_t *act_sums = (const int32_t *)(const void *)act_extra;
#ifdef PK_AVX512
    const int64_t nb = blocks_per_row(w);
    const size_t gb = group_bytes(w);
    if (w->type == TENSOR_TYPE_Q8_0) {
        q8_0_tiles(packed, nb, gb, r0, r1, act_extra, n_tok, out, out_stride);
        return;
    }
    /* MXFP4 prompts: the 16-row panels of gemm_mxfp4.h, written from the
     * groups once for all tiles of 8 tokens; up to 8 tokens decode each
     * group in registers instead (one tile: a panel would be written and
     * read back once) */
    if (w->type == TENSOR_TYPE_MXFP4 && n_tok > MXFP4_REG_TOK &&
        gemm_mxfp4_packed_matmul(packed, nb, r0, r1, act, act_stride, n_tok, out, out_stride))
        return;
    for (int64_t g = r0 / PACKED_ROWS; g * PACKED_ROWS < r1; g++) {
        const int64_t base = g * PACKED_ROWS;
        const __mmask16 keep = group_keep(g, r0, r1);
        if (w->type == TENSOR_TYPE_MXFP4)
            mxfp4_tokens(packed + (size_t)g * gb, nb, act, act_stride, act_sums, n_tok, out + base, out_stride,
                         keep);
        else if (is_q4_K(w))
            q4_K_tokens(packed + (size_t)g * gb, nb, act, act_stride, n_tok, out + base, out_stride, keep);
        else
            q4_0_tokens(packed + (size_t)g * gb, nb, act, act_stride, act_sums, n_tok, out + base, out_stride,
                        keep);
    }
#else
#ifdef PK_AVX2
#ifdef PACKED_Q6_K
    if (packed && w->type == TENSOR_TYPE_Q6_K) {
        packed_q6_K_matmul(w->ne[0], packed, tensor_row_size(TENSOR_TYPE_Q6_K, w->ne[0]), r0, r1, act, act_stride,
                           n_tok, out, out_stride);
        return;
    }
#endif
    if (packed && w->type == TENSOR_TYPE_Q8_0) {
        q8_0_tiles(packed, blocks_per_row(w), group_bytes(w), r0, r1, act_extra, n_tok, out, out_stride);
        return;
    }
    if (packed && w->type == TENSOR_TYPE_MXFP4) {
        mxfp4_tokens256(packed, blocks_per_row(w), group_bytes(w), r0, r1, act, act_stride, act_sums, n_tok, out,
                        out_stride);
        return;
    }
    if (packed) { /* Q4_0 or Q4_K */
        const int64_t nb = blocks_per_row(w);
        const size_t gb = group_bytes(w);
        /* batches with the tokens in the lanes: Q4_0's every token, Q4_K's
         * gemm groups of 4 (the rest, gemv order, below) */
        if (w->type == TENSOR_TYPE_Q4_0 && n_tok >= GEMM_TLANES_MIN_TOK_Q4_0 &&
            gemm_tlanes_q4_0(packed, nb, gb, r0, r1, act, act_stride, n_tok, out, out_stride))
            return;
        const int n_gemm = n_tok - n_tok % 4;
        if (is_q4_K(w) && n_gemm >= GEMM_TLANES_MIN_TOK_Q4_K &&
            gemm_tlanes_q4_K(packed, nb, gb, r0, r1, act, act_stride, n_gemm, out, out_stride)) {
            act += (size_t)n_gemm * act_stride;
            out += (int64_t)n_gemm * out_stride;
            n_tok -= n_gemm;
            if (n_tok == 0)
                return;
        }
        for (int64_t g = r0 / PACKED_ROWS; g * PACKED_ROWS < r1; g++) {
            const int64_t base = g * PACKED_ROWS;
            const int lo = r0 > base ? (int)(r0 - base) : 0;
            const int hi = r1 - base < PACKED_ROWS ? (int)(r1 - base) : PACKED_ROWS;
            const __m256i keep[2] = {quant_lanes_in(lo, hi), quant_lanes_in(lo - 8, hi - 8)};
            if (is_q4_K(w))
                q4_K_tokens(packed + (size_t)g * gb, nb, act, act_stride, n_tok, out + base, out_stride, keep, gb);
            else
                q4_0_tokens(packed + (size_t)g * gb, nb, act, act_stride, act_sums, n_tok, out + base, out_stride,
                            keep);
        }
        return;
    }
#endif
    /* not packed in this build: the same results from the original */
    (void)packed;
    (void)act_sums;
    if (is_q4_K(w))
        refk_matmul(w, w->ne[0], r0, r1, act, act_stride, n_tok, out, out_stride);
    else if (w->type == TENSOR_TYPE_Q8_0)
        tensor_matmul(TENSOR_TYPE_Q8_0, w->ne[0],
                      (const uint8_t *)w->data + (size_t)r0 * tensor_row_size(w->type, w->ne[0]), r1 - r0,
                      act, n_tok, act_stride, out + r0, out_stride);
    else
        repack_matmul(w, w->ne[0], r0, r1, act, act_stride, n_tok, out, out_stride);
#endif
}

void packed_expert_matmul(const gguf_tensor *w, const uint8_t *packed, int32_t e, int64_t r0, int64_t r1,
                          const uint8_t *act, size_t act_stride, int n_tok, float *out, int64_t out_stride)
{
    /* expert e's matrix as a 2-D weight, its groups from e * ne[1] / 16 on */
    const gguf_tensor v = gguf_tensor_matrix(w, e);
    const uint8_t *pe = packed + (size_t)e * (size_t)(w->ne[1] / PACKED_ROWS) * group_bytes(w);
#ifdef PK_AVX512
    /* MXFP4 prompts: the GEMM makes its own token data, so the side data
     * below is made only where it does not run (few tokens, no scratch) */
    if (v.type == TENSOR_TYPE_MXFP4 && n_tok > MXFP4_REG_TOK &&
        gemm_mxfp4_packed_matmul(pe, blocks_per_row(&v), r0, r1, act, act_stride, n_tok, out, out_stride))
        return;
    if (v.type == TENSOR_TYPE_Q4_K) { /* packed on AVX-512 only (is_q4_K_expert_packed) */
        const int64_t nb = blocks_per_row(&v);
        const size_t gb = group_bytes(&v);
        for (int64_t g = r0 / PACKED_ROWS; g * PACKED_ROWS < r1; g++)
            q4_K_gemv_tokens(pe + (size_t)g * gb, nb, act, act_stride, n_tok, out + g * PACKED_ROWS, out_stride,
                             group_keep(g, r0, r1));
        return;
    }
#endif
    const size_t eb = packed_act_bytes(&v) * (size_t)n_tok;
    uint8_t stack[4096] __attribute__((aligned(64)));
    uint8_t *extra = eb > sizeof stack ? aligned_alloc(64, (eb + 63) & ~(size_t)63) : stack;
    if (!extra) { /* no memory: the same bits from the file's rows */
        if (v.type == TENSOR_TYPE_Q8_0)
            tensor_matmul(TENSOR_TYPE_Q8_0, v.ne[0], (const uint8_t *)v.data + (size_t)r0 * (v.nbytes / (size_t)v.ne[1]),
                          r1 - r0, act, n_tok, act_stride, out + r0, out_stride);
        else
            repack_matmul(&v, v.ne[0], r0, r1, act, act_stride, n_tok, out, out_stride);
        return;
    }
    if (eb)
        packed_act_prepare(&v, act, act_stride, n_tok, extra);
    packed_matmul(&v, pe, r0, r1, act, act_stride, extra, n_tok, out, out_stride);
    if (extra != stack)
        free(extra);
}
