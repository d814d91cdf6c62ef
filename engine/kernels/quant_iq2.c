/* IQ2_XXS, IQ2_XS and IQ2_S blocks (see quant_iq2.h): dequantization and
 * dot products against Q8_K activations in the reference's two float orders
 * (generic C, and the x86 vec_dot its AVX-512 build runs), plus AVX2
 * kernels in the x86 order. Each block's integer sums are exact (grid bytes
 * <= 43, |act| <= 128, scales <= 31), so the orders differ only in how the
 * per-block floats are added up, and in one integer detail: the x86 code
 * negates activation bytes in 8 bits, so -128 stays -128 under a minus. */
#include "kernels/quant_iq2.h"

#include "kernels/matvec_iq.h"
#include "kernels/quant_iq_signs.h"

/* ---- the formats, read in one place ---- */

void quant_iq2_xxs_groups(const block_iq2_xxs *b, struct iq2_groups *g)
{
    for (int sb = 0; sb < QK_K / 32; sb++) {
        uint32_t idx, sgn; /* four grid indices; four 7-bit sign fields + scale */
        memcpy(&idx, b->qs + 4 * sb, 4);
        memcpy(&sgn, b->qs + 4 * sb + 2, 4);
        for (int l = 0; l < 4; l++) {
            g->grid[4 * sb + l] = quant_iq2xxs_grid[(idx >> 8 * l) & 255];
            g->signs[4 * sb + l] = quant_ksigns_iq2xs[(sgn >> 7 * l) & 127];
        }
        g->scale[2 * sb] = g->scale[2 * sb + 1] = (uint8_t)(sgn >> 28);
    }
}

void quant_iq2_xs_groups(const block_iq2_xs *b, struct iq2_groups *g)
{
    for (int k = 0; k < QK_K / 8; k++) {
        g->grid[k] = quant_iq2xs_grid[b->qs[k] & 511];
        g->signs[k] = quant_ksigns_iq2xs[b->qs[k] >> 9];
    }
    for (int sb = 0; sb < QK_K / 32; sb++) {
        g->scale[2 * sb] = b->scales[sb] & 15;
        g->scale[2 * sb + 1] = b->scales[sb] >> 4;
    }
}

void quant_iq2_s_groups(const block_iq2_s *b, struct iq2_groups *g)
{
    for (int k = 0; k < QK_K / 8; k++) {
        /* group k's two high index bits: bits 2(k%4), 2(k%4)+1 of qh[k/4] */
        const int hi = (b->qh[k / 4] >> 2 * (k % 4)) & 3;
        g->grid[k] = quant_iq2s_grid[b->qs[k] | hi << 8];
        g->signs[k] = b->qs[QK_K / 8 + k];
    }
    for (int sb = 0; sb < QK_K / 32; sb++) {
        g->scale[2 * sb] = b->scales[sb] & 15;
        g->scale[2 * sb + 1] = b->scales[sb] >> 4;
    }
}

/* Block i of a row of `type`, taken apart; returns its d. */
static float block_groups(enum tensor_type type, const void *row, int64_t i, struct iq2_groups *g)
{
    switch (type) {
    case TENSOR_TYPE_IQ2_XXS: {
        const block_iq2_xxs *b = (const block_iq2_xxs *)row + i;
        quant_iq2_xxs_groups(b, g);
        return fp16_to_f32(b->d);
    }
    case TENSOR_TYPE_IQ2_XS: {
        const block_iq2_xs *b = (const block_iq2_xs *)row + i;
        quant_iq2_xs_groups(b, g);
        return fp16_to_f32(b->d);
    }
    default: {
        const block_iq2_s *b = (const block_iq2_s *)row + i;
        quant_iq2_s_groups(b, g);
        return fp16_to_f32(b->d);
    }
    }
}

/* ---- dequantization: dequantize_row_iq2_*'s float ops ---- */

static void dequantize(enum tensor_type type, const void *src, float *y, int64_t n)
{
    struct iq2_groups g;
    for (int64_t i = 0; i < n / QK_K; i++) {
        const float d = block_groups(type, src, i, &g);
        for (int k = 0; k < QK_K / 8; k++, y += 8) {
            const int half = k / 2; /* the 16 weights group k is in */
            const float db = d * (0.5f + (float)g.scale[half]) * 0.25f;
            for (int j = 0; j < 8; j++) {
                const float mag = (float)(uint8_t)(g.grid[k] >> 8 * j);
                y[j] = db * mag * (g.signs[k] >> j & 1 ? -1.0f : 1.0f);
            }
        }
    }
}

void quant_dequantize_iq2_xxs(const void *src, float *dst, int64_t n) { dequantize(TENSOR_TYPE_IQ2_XXS, src, dst, n); }
void quant_dequantize_iq2_xs(const void *src, float *dst, int64_t n) { dequantize(TENSOR_TYPE_IQ2_XS, src, dst, n); }
void quant_dequantize_iq2_s(const void *src, float *dst, int64_t n) { dequantize(TENSOR_TYPE_IQ2_S, src, dst, n); }

/* ---- the generic order ---- */

/* Weight e's signed magnitude times activation byte q, the integer way. */
static inline int term(const struct iq2_groups *g, int e, int q)
{
    const int mag = (uint8_t)(g->grid[e / 8] >> 8 * (e % 8));
    return (g->signs[e / 8] >> (e % 8) & 1 ? -mag : mag) * q;
}

static float dot_scalar(enum tensor_type type, int64_t n, const void *w, const void *act)
{
    const block_q8_K *y = act;
    struct iq2_groups g;
    float sum = 0.0f;
    for (int64_t i = 0; i < n / QK_K; i++) {
        const float d = block_groups(type, w, i, &g) * y[i].d;
        int32_t bsum = 0;
        for (int h = 0; h < QK_K / 16; h++) {
            int32_t s = 0;
            for (int e = 16 * h; e < 16 * h + 16; e++)
                s += term(&g, e, y[i].qs[e]);
            bsum += s * (2 * g.scale[h] + 1);
        }
        /* the product rounded, then added: the C as written */
        volatile float p = d * (float)bsum;
        sum += p;
    }
    return 0.125f * sum;
}

float quant_dot_iq2_xxs_scalar(int64_t n, const void *w, const void *act) { return dot_scalar(TENSOR_TYPE_IQ2_XXS, n, w, act); }
float quant_dot_iq2_xs_scalar(int64_t n, const void *w, const void *act) { return dot_scalar(TENSOR_TYPE_IQ2_XS, n, w, act); }
float quant_dot_iq2_s_scalar(int64_t n, const void *w, const void *act) { return dot_scalar(TENSOR_TYPE_IQ2_S, n, w, act); }

/* ---- the x86 order, portable ---- */

static float dot_x86order(enum tensor_type type, int64_t n, const void *w, const void *act)
{
    const block_q8_K *y = act;
    struct iq2_groups g;
    float acc[8] = {0};
    for (int64_t i = 0; i < n / QK_K; i++) {
        const float d = block_groups(type, w, i, &g) * y[i].d;
        for (int k = 0; k < 8; k++) {
            int32_t lane = 0;
            for (int sb = 0; sb < QK_K / 32; sb++) {
                int32_t s = 0;
                for (int e = 32 * sb + 4 * k; e < 32 * sb + 4 * k + 4; e++) {
                    const int8_t q = y[i].qs[e];
                    /* the byte negation of _mm256_sign_epi8: -(-128) is -128 */
                    const int8_t neg = (int8_t)(uint8_t)(0u - (uint8_t)q);
                    s += (int)(uint8_t)(g.grid[e / 8] >> 8 * (e % 8)) * (g.signs[e / 8] >> (e % 8) & 1 ? neg : q);
                }
                lane += s * (2 * g.scale[2 * sb + k / 4] + 1);
            }
            acc[k] = fmaf(d, (float)lane, acc[k]);
        }
    }
    /* hsum_float_8 */
    float r[4];
    for (int k = 0; k < 4; k++)
        r[k] = acc[k + 4] + acc[k];
    return 0.125f * ((r[0] + r[2]) + (r[1] + r[3]));
}

float quant_dot_iq2_xxs_x86order(int64_t n, const void *w, const void *act) { return dot_x86order(TENSOR_TYPE_IQ2_XXS, n, w, act); }
float quant_dot_iq2_xs_x86order(int64_t n, const void *w, const void *act) { return dot_x86order(TENSOR_TYPE_IQ2_XS, n, w, act); }
float quant_dot_iq2_s_x86order(int64_t n, const void *w, const void *act) { return dot_x86order(TENSOR_TYPE_IQ2_S, n, w, act); }

/* ---- AVX2 ---- */

#if defined(QUANT_HAVE_AVX2)
#define IQ2_INLINE static inline __attribute__((always_inline))

/* What a block's sub-blocks share, prepared once per block: for IQ2_XS and
 * IQ2_S the 16 multipliers 2s + 1 as int16 (lanes 0-7: the low nibbles of
 * scales[0..7], i.e. each sub-block's first 16 weights; lanes 8-15: the high
 * nibbles), and the 32 groups' sign bytes (IQ2_XS: the 7 stored bits plus
 * the parity bit; IQ2_S stores them whole). */
struct iq2_prep {
    __m256i scales;
    const uint8_t *signs;
    uint8_t buf[32];
    __m256i xxs_signs[2], xxs_scales[2]; /* IQ2_XXS: xxs_prep's */
};

/* ---- IQ2_XXS: the sign/scale words in whole registers ----
 * Each sub-block's 8 bytes are 4 grid indices and a word of 4 x 7 sign bits
 * and the 4-bit scale. The reference looks each 7-bit group up in a table
 * of full sign bytes (the 8th bit is the 7's parity) and assembles them
 * scalar, which with the grid's lookups held one row at 66 cycles a
 * super-block. Here the 8 words of a super-block are taken apart at once:
 * the 7-bit groups spread to bytes, the parity bit from a nibble table, the
 * multipliers 2s + 1 as int16 pairs; each 128-bit lane then holds four
 * sub-blocks' (lane 0: sub-blocks 0, 1, 4, 5; lane 1: 2, 3, 6, 7), both
 * halves of xxs_signs[l] and xxs_scales[l] a copy of lane l, so that one
 * in-lane pshufb serves a sub-block. The same integers as the table's. */
static const uint8_t xxs_rep[4][32] __attribute__((aligned(32))) = {
#define XXS_R8(b) b, b, b, b, b, b, b, b
#define XXS_REP(d) {XXS_R8(4 * d), XXS_R8(4 * d + 1), XXS_R8(4 * d + 2), XXS_R8(4 * d + 3)}
    XXS_REP(0), XXS_REP(1), XXS_REP(2), XXS_REP(3),
#undef XXS_REP
#undef XXS_R8
};

IQ2_INLINE void xxs_prep(const block_iq2_xxs *b, struct iq2_prep *p)
{
    const __m256i lo = _mm256_loadu_si256((const __m256i *)b->qs), hi = _mm256_loadu_si256((const __m256i *)(b->qs + 16));
    /* the odd dwords: lane 0 sub-blocks 0, 1, 4, 5, lane 1 2, 3, 6, 7 */
    const __m256i w = _mm256_castps_si256(_mm256_shuffle_ps(_mm256_castsi256_ps(lo), _mm256_castsi256_ps(hi), 0xDD));
    const __m256i m7 = _mm256_set1_epi32(0x7F);
    __m256i e = _mm256_or_si256(_mm256_and_si256(w, m7), _mm256_and_si256(_mm256_slli_epi32(w, 1), _mm256_slli_epi32(m7, 8)));
    e = _mm256_or_si256(e, _mm256_and_si256(_mm256_slli_epi32(w, 2), _mm256_slli_epi32(m7, 16)));
    e = _mm256_or_si256(e, _mm256_and_si256(_mm256_slli_epi32(w, 3), _mm256_slli_epi32(m7, 24)));
    /* bit 7 of a byte: the parity of its low 7 (folded to a nibble) */
    const __m256i parity = _mm256_setr_epi8(0, -128, -128, 0, -128, 0, 0, -128, -128, 0, 0, -128, 0, -128, -128, 0, 0,
                                            -128, -128, 0, -128, 0, 0, -128, -128, 0, 0, -128, 0, -128, -128, 0);
    const __m256i fold = _mm256_and_si256(_mm256_xor_si256(e, _mm256_srli_epi32(e, 4)), _mm256_set1_epi8(0x0F));
    const __m256i s = _mm256_or_si256(e, _mm256_shuffle_epi8(parity, fold));
    /* (w >> 27) | 1 = 2 s + 1 whatever sign bit 27 is */
    const __m256i sc = _mm256_or_si256(_mm256_srli_epi32(w, 27), _mm256_set1_epi32(1));
    const __m256i sc16 = _mm256_or_si256(sc, _mm256_slli_epi32(sc, 16));
    p->xxs_signs[0] = _mm256_permute2x128_si256(s, s, 0x00);
    p->xxs_signs[1] = _mm256_permute2x128_si256(s, s, 0x11);
    p->xxs_scales[0] = _mm256_permute2x128_si256(sc16, sc16, 0x00);
    p->xxs_scales[1] = _mm256_permute2x128_si256(sc16, sc16, 0x11);
}

/* Sub-block sb: its grid bytes, its sign bytes as 0xff / 0 masks and its
 * multiplier in every int16 lane. */
IQ2_INLINE void xxs_sub(const block_iq2_xxs *b, const struct iq2_prep *p, int sb, __m256i *grid, __m256i *sign,
                        __m256i *scale)
{
    const int l = (sb >> 1) & 1, dw = 2 * (sb >> 2) + (sb & 1);
    *sign = bits_masks(p->xxs_signs[l], _mm256_load_si256((const __m256i *)xxs_rep[dw]));
    *scale = quant_dword_bcast(p->xxs_scales[l], dw);
    uint32_t idx;
    memcpy(&idx, b->qs + 4 * sb, 4);
    const uint64_t *G = quant_iq2xxs_grid;
    *grid = _mm256_set_epi64x((long long)G[idx >> 24], (long long)G[(idx >> 16) & 255], (long long)G[(idx >> 8) & 255],
                              (long long)G[idx & 255]);
}

IQ2_INLINE __m256i scales16(const uint8_t sc[8])
{
    uint64_t v;
    memcpy(&v, sc, 8);
    const __m128i m4 = _mm_set1_epi8(0x0F);
    const __m128i nib = _mm_and_si128(_mm_set_epi64x((long long)(v >> 4), (long long)v), m4);
    return _mm256_cvtepu8_epi16(_mm_add_epi8(_mm_add_epi8(nib, nib), _mm_set1_epi8(1)));
}

/* IQ2_XS: 16 groups' uint16 codes -> their full sign bytes in the low byte
 * of each 16-bit lane: bits 9-15, and bit 7 set when those 7 have odd parity
 * (folded to a nibble, looked up). */
IQ2_INLINE __m256i xs_sign_lanes(const uint16_t *q)
{
    const __m256i parity = _mm256_setr_epi8(0, -128, -128, 0, -128, 0, 0, -128, -128, 0, 0, -128, 0, -128, -128, 0, 0,
                                            -128, -128, 0, -128, 0, 0, -128, -128, 0, 0, -128, 0, -128, -128, 0);
    const __m256i s7 = _mm256_srli_epi16(_mm256_loadu_si256((const __m256i *)q), 9);
    const __m256i fold = _mm256_xor_si256(s7, _mm256_srli_epi16(s7, 4)); /* < 128: pshufb reads bits 0-3 */
    return _mm256_or_si256(s7, _mm256_shuffle_epi8(parity, fold));
}

IQ2_INLINE void prep_block(enum tensor_type type, const void *blk, struct iq2_prep *p)
{
    if (type == TENSOR_TYPE_IQ2_XXS) {
        xxs_prep(blk, p);
    } else if (type == TENSOR_TYPE_IQ2_XS) {
        const block_iq2_xs *b = blk;
        p->scales = scales16(b->scales);
        /* the low bytes of groups 0-15 and 16-31, packed to 32 bytes in order */
        const __m256i lo = xs_sign_lanes(b->qs), hi = xs_sign_lanes(b->qs + 16);
        const __m256i m = _mm256_set1_epi16(0xFF);
        const __m256i packed = _mm256_packus_epi16(_mm256_and_si256(lo, m), _mm256_and_si256(hi, m));
        _mm256_storeu_si256((__m256i *)p->buf, _mm256_permute4x64_epi64(packed, _MM_SHUFFLE(3, 1, 2, 0)));
        p->signs = p->buf;
    } else if (type == TENSOR_TYPE_IQ2_S) {
        const block_iq2_s *b = blk;
        p->scales = scales16(b->scales);
        p->signs = b->qs + QK_K / 8;
    }
}

/* Sub-block sb (32 weights) of a block: the grid bytes, the sign bytes
 * (0xff: negative) and the 16 int16 multipliers 2s + 1 (lanes 0-7: the
 * first 16 weights, 8-15: the next 16), as madd wants them. */
struct iq2_sub {
    __m256i grid, sign, scale;
};

/* Int16 lanes 0-7 from lane sb of the scales' low half, 8-15 from lane sb
 * of the high half (pshufb works per 128 bits). */
IQ2_INLINE __m256i pick_scale(__m256i scales, int sb)
{
    return _mm256_shuffle_epi8(scales, _mm256_set1_epi16((short)(2 * sb | (2 * sb + 1) << 8)));
}

IQ2_INLINE struct iq2_sub decode_sub(enum tensor_type type, const void *blk, const struct iq2_prep *p, int sb)
{
    struct iq2_sub s;
    if (type == TENSOR_TYPE_IQ2_XXS) {
        xxs_sub(blk, p, sb, &s.grid, &s.sign, &s.scale);
        return s;
    }
    if (type == TENSOR_TYPE_IQ2_XS) {
        const block_iq2_xs *b = blk;
        const uint16_t *q = b->qs + 4 * sb;
        const uint64_t *G = quant_iq2xs_grid;
        s.grid = _mm256_set_epi64x((long long)G[q[3] & 511], (long long)G[q[2] & 511], (long long)G[q[1] & 511],
                                   (long long)G[q[0] & 511]);
    } else {
        const block_iq2_s *b = blk;
        const uint8_t *q = b->qs + 4 * sb;
        const unsigned h = b->qh[sb];
        const uint64_t *G = quant_iq2s_grid;
        s.grid = _mm256_set_epi64x((long long)G[q[3] | (h << 2 & 0x300)], (long long)G[q[2] | (h << 4 & 0x300)],
                                   (long long)G[q[1] | (h << 6 & 0x300)], (long long)G[q[0] | (h << 8 & 0x300)]);
    }
    s.sign = bits32(p->signs + 4 * sb);
    s.scale = pick_scale(p->scales, sb);
    return s;
}

/* The sub-block's 8 lanes of scaled 4-weight sums with 32 activation bytes:
 * the activations negated bytewise where the sign says (x ^ s) - s, as
 * _mm256_sign_epi8 would, then unsigned grid x signed activations (pair sums
 * <= 2 * 43 * 128, no saturation), then times the scales. */
IQ2_INLINE __m256i sub_lanes(const struct iq2_sub *s, const int8_t *q8)
{
    const __m256i q = _mm256_loadu_si256((const __m256i *)q8);
    const __m256i qs = _mm256_sub_epi8(_mm256_xor_si256(q, s->sign), s->sign);
    return _mm256_madd_epi16(_mm256_maddubs_epi16(s->grid, qs), s->scale);
}

/* One weight row against nt (1..4) activations, each with vec_dot's bits.
 * The token loops unrolled and the sub-blocks two at a time: rolled, or
 * unrolled by 8, gcc kept the sums in memory (a store and a reload per add). */
IQ2_INLINE void iq2_rows(enum tensor_type type, int64_t n, const void *w, const void *const act[4], int nt,
                         float out[4])
{
    const size_t bs = type == TENSOR_TYPE_IQ2_XXS ? sizeof(block_iq2_xxs)
                      : type == TENSOR_TYPE_IQ2_XS ? sizeof(block_iq2_xs)
                                                   : sizeof(block_iq2_s);
    __m256 acc[4];
#pragma GCC unroll 4
    for (int c = 0; c < nt; c++)
        acc[c] = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / QK_K; i++) {
        const void *blk = (const char *)w + (size_t)i * bs;
        const float dw = fp16_to_f32(*(const uint16_t *)blk);
        struct iq2_prep p;
        prep_block(type, blk, &p);
        __m256i sumi[4];
#pragma GCC unroll 4
        for (int c = 0; c < nt; c++)
            sumi[c] = _mm256_setzero_si256();
#pragma GCC unroll 2
        for (int sb = 0; sb < QK_K / 32; sb++) {
            const struct iq2_sub s = decode_sub(type, blk, &p, sb);
#pragma GCC unroll 4
            for (int c = 0; c < nt; c++)
                sumi[c] = _mm256_add_epi32(sumi[c], sub_lanes(&s, ((const block_q8_K *)act[c])[i].qs + 32 * sb));
        }
#pragma GCC unroll 4
        for (int c = 0; c < nt; c++) {
            const float d = dw * ((const block_q8_K *)act[c])[i].d;
            acc[c] = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(sumi[c]), acc[c]);
        }
    }
#pragma GCC unroll 4
    for (int c = 0; c < nt; c++)
        out[c] = 0.125f * hsum_ps(acc[c]);
}

/* IQ2_XXS, one row and one activation: iq2_rows' arithmetic with the
 * sub-blocks unrolled by 8 (constant places in the prepared words), which
 * with four activations would spill; with pf set, each block step
 * prefetches step bytes of the row ahead. */
IQ2_INLINE float xxs_dot_body(int64_t n, const void *w, const void *act, const char *pf, size_t step)
{
    const block_iq2_xxs *x = w;
    const block_q8_K *y = act;
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / QK_K; i++) {
        quant_prefetch_step(pf, i, step);
        struct iq2_prep p;
        xxs_prep(&x[i], &p);
        __m256i sumi = _mm256_setzero_si256();
#pragma GCC unroll 8
        for (int sb = 0; sb < QK_K / 32; sb++) {
            __m256i grid, sign, scale;
            xxs_sub(&x[i], &p, sb, &grid, &sign, &scale);
            const __m256i q = _mm256_loadu_si256((const __m256i *)(y[i].qs + 32 * sb));
            const __m256i qs = _mm256_sub_epi8(_mm256_xor_si256(q, sign), sign);
            sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(_mm256_maddubs_epi16(grid, qs), scale));
        }
        acc = _mm256_fmadd_ps(_mm256_set1_ps(fp16_to_f32(x[i].d) * y[i].d), _mm256_cvtepi32_ps(sumi), acc);
    }
    return 0.125f * hsum_ps(acc);
}

static float dot_iq2_xxs_avx2(int64_t n, const void *w, const void *act)
{
    return xxs_dot_body(n, w, act, NULL, 0);
}

#if !defined(QUANT_HAVE_MATVEC_IQ512)
QUANT_MATVEC_PF(static, matvec_iq2_xxs_avx2, xxs_dot_body, QUANT_PF_AHEAD)
#endif

#define IQ2_KERNELS(T, TYPE)                                                                                  \
    static float dot_##T##_avx2(int64_t n, const void *w, const void *act)                                    \
    {                                                                                                         \
        const void *const a[4] = {act, act, act, act};                                                        \
        float o[4];                                                                                           \
        iq2_rows(TYPE, n, w, a, 1, o);                                                                        \
        return o[0];                                                                                          \
    }                                                                                                         \
    static void dot4_##T##_avx2(int64_t n, const void *w, const void *const act[4], float out[4])             \
    {                                                                                                         \
        iq2_rows(TYPE, n, w, act, 4, out);                                                                    \
    }

static void dot4_iq2_xxs_avx2(int64_t n, const void *w, const void *const act[4], float out[4])
{
    iq2_rows(TENSOR_TYPE_IQ2_XXS, n, w, act, 4, out);
}
IQ2_KERNELS(iq2_xs, TENSOR_TYPE_IQ2_XS)
IQ2_KERNELS(iq2_s, TENSOR_TYPE_IQ2_S)
#endif

void quant_iq2_install(enum tensor_type type, struct quant_kernels *k)
{
#if defined(QUANT_HAVE_AVX2)
    switch (type) {
    case TENSOR_TYPE_IQ2_XXS:
        k->vec_dot = dot_iq2_xxs_avx2;
        k->dot4 = dot4_iq2_xxs_avx2;
#if defined(QUANT_HAVE_MATVEC_IQ512)
        k->matvec = quant_avx512_matvec_iq2_xxs;
#else
        k->matvec = matvec_iq2_xxs_avx2;
#endif
        break;
    case TENSOR_TYPE_IQ2_XS:
        k->vec_dot = dot_iq2_xs_avx2;
        k->dot4 = dot4_iq2_xs_avx2;
        break;
    default:
        k->vec_dot = dot_iq2_s_avx2;
        k->dot4 = dot4_iq2_s_avx2;
        break;
    }
#else
    /* a portable build gives the reference machine's bits too */
    k->vec_dot = type == TENSOR_TYPE_IQ2_XXS ? quant_dot_iq2_xxs_x86order
                 : type == TENSOR_TYPE_IQ2_XS ? quant_dot_iq2_xs_x86order
                                              : quant_dot_iq2_s_x86order;
#endif
}
