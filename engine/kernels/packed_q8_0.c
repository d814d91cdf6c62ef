/* Packed Q8_0 kernels (packed_q8_0.h): AVX-512 VNNI, and AVX2. */
#include "kernels/packed_q8_0.h"

#include <string.h>

#include "kernels/forward_math.h"
#include "kernels/forward_packed.h"
#include "kernels/kernel_scratch.h"

/* packed_q8_0_q(b), packed_q8_0_sc(b): block b's quants and scales in a group */
PACKED_BLOCK_AT(q8_0, PACKED_Q8_0_QS, PACKED_Q8_0_SC)

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VNNI__) && defined(__F16C__)
#define Q8_0_VNNI 1
/* VNNI: a block's 32 bytes as they are, then its 8 lanes' starting values
 * (int32, -128 x the sum of the lane's four bytes); the weights' bytes
 * offset to unsigned (w + 128: VNNI's unsigned operand) */
#define Q8_0_ACT_QB 64
#define Q8_0_ACT_RAW 0
#define Q8_0_W_XOR 0x80
#else
/* without VNNI: per lane l (bytes 4l..4l+3 = a0..a3) the int16 pairs
 * (a0, a2) and (a1, a3), 64 bytes a block, for the token pairs' tiles
 * (q8_0_tile2); after all blocks' pairs their 32 bytes as they are, for
 * the one-token pass (q8_0_tile1). One region each: with a block's bytes
 * beside its pairs the tiles read 96-byte strides, 10 % slower. */
#define Q8_0_ACT_QB 64
#define Q8_0_ACT_RAW 32
#define Q8_0_W_XOR 0 /* the weights' bytes as they are */
#endif

/* where a token's side data keeps the scales */
static inline size_t q8_0_act_d(int64_t nb)
{
    return (size_t)nb * (Q8_0_ACT_QB + Q8_0_ACT_RAW);
}

size_t packed_q8_0_act_bytes(int64_t nb)
{
    return (q8_0_act_d(nb) + (size_t)nb * 4 + 63) & ~(size_t)63;
}

void packed_q8_0_act(const block_q8_0 *y, int64_t nb, uint8_t *dst)
{
    float *d = (float *)(void *)(dst + q8_0_act_d(nb));
    for (int64_t b = 0; b < nb; b++) {
        uint8_t *q = dst + (size_t)b * Q8_0_ACT_QB;
#ifdef Q8_0_VNNI
        memcpy(q, y[b].qs, 32);
        for (int l = 0; l < 8; l++) {
            const int32_t s = -128 * (y[b].qs[4 * l] + y[b].qs[4 * l + 1] + y[b].qs[4 * l + 2] + y[b].qs[4 * l + 3]);
            memcpy(q + 32 + 4 * l, &s, 4);
        }
        d[b] = h2f(y[b].d);
#else
        for (int l = 0; l < 8; l++) {
            const int16_t v[4] = {y[b].qs[4 * l], y[b].qs[4 * l + 2], y[b].qs[4 * l + 1], y[b].qs[4 * l + 3]};
            memcpy(q + 8 * l, v, sizeof v);
        }
        memcpy(dst + (size_t)nb * Q8_0_ACT_QB + (size_t)b * 32, y[b].qs, 32);
        d[b] = h2f(y[b].d) * (1.0f / 256); /* exact: the lanes come 256 times too large (q8_0_w) */
#endif
    }
}

void packed_q8_0_pack_row(const block_q8_0 *x, int64_t nb, int r, uint8_t *o)
{
    for (int64_t b = 0; b < nb; b++) {
        uint8_t *q = o + packed_q8_0_q(b) + 4 * r;
        for (int l = 0; l < 8; l++)
            for (int i = 0; i < 4; i++)
                q[64 * l + i] = (uint8_t)x[b].qs[4 * l + i] ^ Q8_0_W_XOR;
        memcpy(o + packed_q8_0_sc(b) + 2 * r, &x[b].d, 2);
    }
}

#ifdef Q8_0_VNNI
#include <immintrin.h>

static inline int32_t ld32(const void *p)
{
    int32_t v;
    memcpy(&v, p, 4);
    return v;
}

/* One group against nt <= 3 tokens (a constant after inlining: the 8 * nt
 * accumulators stay in registers), reduced into out. Per weight vector (w +
 * 128, loaded once for the nt tokens) and token one VNNI dot from the
 * token's starting value for the lane (-128 x its four bytes' sum, a
 * broadcast load) against the token's four bytes (a broadcast): the exact
 * sum of the lane's products, then the reference's FMA. A tile runs over
 * the whole row: on the Zen 4 passes of 32 blocks (the pass's weights kept
 * in L1 for the next tiles, the accumulators spilled between passes) were
 * 8 % slower at 512 tokens. No software prefetch: forward_packed.c's
 * PK_AVX512 kernels say why. */
static inline __attribute__((always_inline)) void q8_0_tile(const uint8_t *pw, int64_t nb, const uint8_t *act,
                                                           size_t act_bytes, int nt, float *out, int64_t out_stride,
                                                           __mmask16 keep)
{
    __m512 acc[3][8];
    for (int k = 0; k < nt; k++)
        for (int l = 0; l < 8; l++)
            acc[k][l] = _mm512_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *q = pw + packed_q8_0_q(b);
        const __m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(pw + packed_q8_0_sc(b))));
        __m512 sc[3];
        _Pragma("GCC unroll 3") for (int k = 0; k < nt; k++)
        {
            const float *da = (const float *)(const void *)(act + (size_t)k * act_bytes + q8_0_act_d(nb));
            sc[k] = _mm512_mul_ps(dw, _mm512_set1_ps(da[b]));
        }
        _Pragma("GCC unroll 8") for (int l = 0; l < 8; l++)
        {
            __m512i w = _mm512_loadu_si512(q + 64 * l);
            /* w in a register: GCC would fold the load into each token's dot */
            __asm__("" : "+v"(w));
            _Pragma("GCC unroll 3") for (int k = 0; k < nt; k++)
            {
                const uint8_t *a = act + (size_t)k * act_bytes + (size_t)b * Q8_0_ACT_QB;
                const __m512i s =
                    _mm512_dpbusd_epi32(_mm512_set1_epi32(ld32(a + 32 + 4 * l)), w, _mm512_set1_epi32(ld32(a + 4 * l)));
                acc[k][l] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s), sc[k], acc[k][l]);
            }
        }
    }
    /* hsum_float_8's order per row: ((l0 + l4) + (l2 + l6)) + ((l1 + l5) + (l3 + l7)) */
    for (int k = 0; k < nt; k++) {
        const __m512 a = _mm512_add_ps(_mm512_add_ps(acc[k][0], acc[k][4]), _mm512_add_ps(acc[k][2], acc[k][6]));
        const __m512 c = _mm512_add_ps(_mm512_add_ps(acc[k][1], acc[k][5]), _mm512_add_ps(acc[k][3], acc[k][7]));
        _mm512_mask_storeu_ps(out + (int64_t)k * out_stride, keep, _mm512_add_ps(a, c));
    }
}

void packed_q8_0_group(const uint8_t *pw, int64_t nb, const uint8_t *act, size_t act_bytes, int n_tok, float *out,
                       int64_t out_stride, int lo, int hi)
{
    const __mmask16 keep = (__mmask16)(((1u << hi) - 1u) & ~((1u << lo) - 1u));
    int t = 0;
    for (; t + 3 <= n_tok; t += 3)
        q8_0_tile(pw, nb, act + (size_t)t * act_bytes, act_bytes, 3, out + (int64_t)t * out_stride, out_stride, keep);
    if (t + 2 == n_tok)
        q8_0_tile(pw, nb, act + (size_t)t * act_bytes, act_bytes, 2, out + (int64_t)t * out_stride, out_stride, keep);
    else if (t < n_tok)
        q8_0_tile(pw, nb, act + (size_t)t * act_bytes, act_bytes, 1, out + (int64_t)t * out_stride, out_stride, keep);
}

#define PACKED_Q8_0_KERNELS 1
#elif defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#include <immintrin.h>

/* AVX2: the same layout, a group as two halves of 8 rows (bytes 0-31 and
 * 32-63 of each weight vector), each lane l of 8 rows a ymm. No VNNI, and
 * the reference's own sign trick (maddubs(|w|, sign(a, w)), madd by ones)
 * puts four multiply-pipe instructions on each row x token x lane with its
 * FMA (vpsignb is one on AMD Zen 4): here each dword lane's four products
 * are two madds of int16 pairs, three multiply-pipe instructions with the
 * FMA. The weight's bytes 1 and 3 stay where they are with the low bytes
 * masked off (256 b1, 256 b3 as int16) and bytes 0 and 2 shift up into
 * their place (256 b0, 256 b2); against the token's pairs (a1, a3) and (a0,
 * a2) (the side data, packed_q8_0_act) the two madds give 256 times the
 * lane's exact integer, |256 lane| <= 256 * 4 * 128 * 127 < 2^24, so its
 * convert is 256 times the reference's, exactly, and the token's scale
 * comes divided by 256 (exact): the FMA's product, and so its rounding, is
 * the reference's. Shifting back down (sign-extending) took two shifts on
 * the pipes the converts use, and those bounded the tile. */
static inline __attribute__((always_inline)) __m256 q8_0_step(__m256 acc, __m256i we, __m256i wo, const uint8_t *a,
                                                              __m256 sc)
{
    int32_t e, o;
    memcpy(&e, a, 4);
    memcpy(&o, a + 4, 4);
    const __m256i s = _mm256_add_epi32(_mm256_madd_epi16(we, _mm256_set1_epi32(e)),
                                       _mm256_madd_epi16(wo, _mm256_set1_epi32(o)));
    return _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), sc, acc);
}

/* Weight vector l at q, in a register (GCC would fold it into each use as
 * a memory operand, one more load per token) */
static inline __m256i q8_0_wraw(const uint8_t *q, int l)
{
    __m256i w = _mm256_loadu_si256((const __m256i *)(const void *)(q + 64 * l));
    __asm__("" : "+x"(w));
    return w;
}

/* ... as int16 pairs, 256 times bytes 0 and 2 of each dword (*we) and 1
 * and 3 (*wo). */
static inline __attribute__((always_inline)) void q8_0_w(const uint8_t *q, int l, __m256i *we, __m256i *wo)
{
    const __m256i w = q8_0_wraw(q, l);
    *we = _mm256_slli_epi16(w, 8);
    *wo = _mm256_and_si256(w, _mm256_set1_epi16((short)0xFF00));
}

/* One token: the reference's own sign trick per 4-byte lane on the raw
 * bytes (maddubs(|w|, sign(a, w)), madd by ones), the lane's integer
 * itself: the pairs' madds took more instructions per weight vector than
 * one token shares (TinyLlama Q8_0 generation 5 % slower, one thread of an
 * AMD EPYC Zen 4), and generation is bound by reading the weights. */
static inline __attribute__((always_inline)) __m256 q8_0_step1(__m256 acc, __m256i w, __m256i aw, const uint8_t *a,
                                                               __m256 sc)
{
    int32_t v;
    memcpy(&v, a, 4);
    const __m256i sa = _mm256_sign_epi8(_mm256_set1_epi32(v), w);
    const __m256i s = _mm256_madd_epi16(_mm256_maddubs_epi16(aw, sa), _mm256_set1_epi16(1));
    return _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), sc, acc);
}

/* 8 rows' scales (sc) of block b times the token's, which the side data
 * holds divided by 256 (times 256 again: exact, the reference's product) */
static inline __m256 q8_0_scale1(const uint8_t *sc, const uint8_t *act, int64_t nb, int64_t b)
{
    const float *da = (const float *)(const void *)(act + q8_0_act_d(nb));
    return _mm256_mul_ps(_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)sc)),
                         _mm256_set1_ps(da[b] * 256.0f));
}

/* The 8 lanes of both halves in one pass, named (an array of
 * accumulators was stored back every block: the token bytes' loads may
 * alias it): a token's matvec streams the group's lines in order. Two
 * passes of 4 lanes (16 accumulators spill) read every other 256 bytes, and
 * the hardware prefetcher lost the stream: TinyLlama Q8_0 tg64 at
 * 0.85-0.93x the unpacked vec_dot (with the scales after the group's quants
 * and the next group prefetched), against 1.05-1.13x for this one. */
static void q8_0_tile1(const uint8_t *pw, int64_t nb, const uint8_t *act, __m256 res[16])
{
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
    __m256 c0 = a0, c1 = a0, c2 = a0, c3 = a0, c4 = a0, c5 = a0, c6 = a0, c7 = a0;
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *q = pw + packed_q8_0_q(b), *a = act + (size_t)nb * Q8_0_ACT_QB + (size_t)b * 32;
        const uint8_t *sc = pw + packed_q8_0_sc(b);
        const __m256 s0 = q8_0_scale1(sc, act, nb, b), s1 = q8_0_scale1(sc + 16, act, nb, b);
        __m256i w, v;
#define Q8_0_L(l, x, y)                                                                                                \
    (w = q8_0_wraw(q, l), v = q8_0_wraw(q + 32, l), x = q8_0_step1(x, w, _mm256_sign_epi8(w, w), a + 4 * (l), s0),    \
     y = q8_0_step1(y, v, _mm256_sign_epi8(v, v), a + 4 * (l), s1))
        Q8_0_L(0, a0, c0), Q8_0_L(1, a1, c1), Q8_0_L(2, a2, c2), Q8_0_L(3, a3, c3);
        Q8_0_L(4, a4, c4), Q8_0_L(5, a5, c5), Q8_0_L(6, a6, c6), Q8_0_L(7, a7, c7);
#undef Q8_0_L
    }
    res[0] = a0, res[1] = a1, res[2] = a2, res[3] = a3, res[4] = a4, res[5] = a5, res[6] = a6, res[7] = a7;
    res[8] = c0, res[9] = c1, res[10] = c2, res[11] = c3, res[12] = c4, res[13] = c5, res[14] = c6, res[15] = c7;
}

/* Two tokens (act and act + ab), 4 lanes from lb of a half group, blocks
 * [b0, b1): block b's quants of the half at q[b - b0], its 8 rows' scales
 * as floats at dw + 8 (b - b0) (made once per pass: converting them in
 * every tile took a sixth of its time). The accumulators start at zero
 * (b0 == 0) or from st, and go back to st. */
static void q8_0_tile2(const uint8_t *const *q, const float *dw, int64_t nb, int64_t b0, int64_t b1,
                       const uint8_t *act, size_t ab, int lb, __m256 st[8])
{
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, c0 = a0, c1 = a0, c2 = a0, c3 = a0;
    if (b0 > 0)
        a0 = st[0], a1 = st[1], a2 = st[2], a3 = st[3], c0 = st[4], c1 = st[5], c2 = st[6], c3 = st[7];
    const float *da0 = (const float *)(const void *)(act + q8_0_act_d(nb)),
                *da1 = (const float *)(const void *)(act + ab + q8_0_act_d(nb));
    for (int64_t b = b0; b < b1; b++) {
        const uint8_t *qw = q[b - b0] + 64 * lb, *a = act + (size_t)b * Q8_0_ACT_QB + 8 * lb;
        const __m256 w = _mm256_loadu_ps(dw + 8 * (b - b0));
        const __m256 s0 = _mm256_mul_ps(w, _mm256_broadcast_ss(&da0[b])), s1 = _mm256_mul_ps(w, _mm256_broadcast_ss(&da1[b]));
        __m256i we, wo;
#define Q8_0_L(l, x, y)                                                                                                \
    (q8_0_w(qw, l, &we, &wo), x = q8_0_step(x, we, wo, a + 8 * (l), s0), y = q8_0_step(y, we, wo, a + ab + 8 * (l), s1))
        Q8_0_L(0, a0, c0), Q8_0_L(1, a1, c1), Q8_0_L(2, a2, c2), Q8_0_L(3, a3, c3);
#undef Q8_0_L
    }
    st[0] = a0, st[1] = a1, st[2] = a2, st[3] = a3, st[4] = c0, st[5] = c1, st[6] = c2, st[7] = c3;
}

/* Blocks per pass of the token pairs over a half group: the pass's weights
 * (16 x 544 bytes) stay in L1 from one pair to the next, where the whole
 * group (35-96 KB on TinyLlama's shapes) came from L2 for every pair
 * (bench_packed 512 q8_0, AVX2 build, one thread of an AMD EPYC Zen 4:
 * the tile at 2.96 cycles per row x token x block with 64 blocks, 2.57 with
 * 8). The accumulators wait in memory between passes. */
#define Q8_0_PASS256 32

/* hsum_float_8's order per row: ((l0 + l4) + (l2 + l6)) + ((l1 + l5) + (l3 + l7)) */
static inline void q8_0_out256(const __m256 *l, float *out, __m256i keep)
{
    const __m256 a = _mm256_add_ps(_mm256_add_ps(l[0], l[4]), _mm256_add_ps(l[2], l[6]));
    const __m256 c = _mm256_add_ps(_mm256_add_ps(l[1], l[5]), _mm256_add_ps(l[3], l[7]));
    _mm256_maskstore_ps(out, keep, _mm256_add_ps(a, c));
}

void packed_q8_0_group(const uint8_t *pw, int64_t nb, const uint8_t *act, size_t act_bytes, int n_tok, float *out,
                       int64_t out_stride, int lo, int hi)
{
    const __m256i keep[2] = {quant_lanes_in(lo, hi), quant_lanes_in(lo - 8, hi - 8)};
    __m256 st[PACKED_Q8_0_TILE / 2][16]; /* per token pair: lanes 0-3, then 4-7 */
    for (int h = 0; h < 2 && n_tok >= 2; h++) {
        if (hi <= 8 * h || lo >= 8 * h + 8)
            continue;
        for (int64_t b0 = 0; b0 < nb; b0 += Q8_0_PASS256) {
            const int64_t b1 = nb - b0 < Q8_0_PASS256 ? nb : b0 + Q8_0_PASS256;
            const uint8_t *qb[Q8_0_PASS256];
            float dw[Q8_0_PASS256 * 8] __attribute__((aligned(32)));
            for (int64_t b = b0; b < b1; b++) {
                qb[b - b0] = pw + packed_q8_0_q(b) + 32 * h;
                _mm256_store_ps(dw + 8 * (b - b0), _mm256_cvtph_ps(_mm_loadu_si128(
                                                       (const __m128i *)(const void *)(pw + packed_q8_0_sc(b) + 16 * h))));
            }
            for (int t = 0; t + 2 <= n_tok; t += 2) {
                __m256 *lo4 = st[t / 2], *hi4 = st[t / 2] + 8;
                q8_0_tile2(qb, dw, nb, b0, b1, act + (size_t)t * act_bytes, act_bytes, 0, lo4);
                q8_0_tile2(qb, dw, nb, b0, b1, act + (size_t)t * act_bytes, act_bytes, 4, hi4);
                if (b1 < nb)
                    continue;
                for (int k = 0; k < 2; k++) {
                    const __m256 l[8] = {lo4[4 * k], lo4[4 * k + 1], lo4[4 * k + 2], lo4[4 * k + 3],
                                         hi4[4 * k], hi4[4 * k + 1], hi4[4 * k + 2], hi4[4 * k + 3]};
                    q8_0_out256(l, out + (int64_t)(t + k) * out_stride + 8 * h, keep[h]);
                }
            }
        }
    }
    if (n_tok % 2) { /* the last token against both halves */
        const int t = n_tok - 1;
        __m256 all[16];
        q8_0_tile1(pw, nb, act + (size_t)t * act_bytes, all);
        q8_0_out256(all, out + (int64_t)t * out_stride, keep[0]);
        q8_0_out256(all + 8, out + (int64_t)t * out_stride + 8, keep[1]);
    }
}

#define PACKED_Q8_0_KERNELS 1
#endif

#ifdef PACKED_Q8_0_KERNELS
bool packed_q8_0_rows(const void *w, size_t rs, int64_t nb, int64_t r0, int64_t r1, const uint8_t *act,
                      size_t act_stride, int n_tok, float *out, int64_t out_stride)
{
    if (r0 >= r1 || n_tok < 1)
        return true;
    const size_t gb = packed_group_size(nb, PACKED_Q8_0_QS, PACKED_Q8_0_SC), ab = packed_q8_0_act_bytes(nb);
    /* one group and every token's side data; the group's next one is
     * packed only after the tokens ran against it */
    uint8_t *scr = kernel_scratch_get(gb + (size_t)n_tok * ab); /* gb: whole lines (packed_group_size) */
    if (!scr)
        return false;
    uint8_t *side = scr + gb;
    for (int t = 0; t < n_tok; t++)
        packed_q8_0_act((const block_q8_0 *)(const void *)(act + (size_t)t * act_stride), nb, side + (size_t)t * ab);
    for (int64_t base = r0; base < r1; base += 16) {
        const int rows = r1 - base < 16 ? (int)(r1 - base) : 16;
        for (int r = 0; r < 16; r++) /* past r1: the last row again, its outputs masked off */
            packed_q8_0_pack_row((const block_q8_0 *)(const void *)((const uint8_t *)w +
                                                                     (size_t)(base + (r < rows ? r : rows - 1)) * rs),
                                 nb, r, scr);
        for (int t0 = 0; t0 < n_tok; t0 += PACKED_Q8_0_TILE)
            packed_q8_0_group(scr, nb, side + (size_t)t0 * ab, ab,
                              n_tok - t0 < PACKED_Q8_0_TILE ? n_tok - t0 : PACKED_Q8_0_TILE,
                              out + (int64_t)t0 * out_stride + base, out_stride, 0, rows);
    }
    return true;
}
#else
bool packed_q8_0_rows(const void *w, size_t rs, int64_t nb, int64_t r0, int64_t r1, const uint8_t *act,
                      size_t act_stride, int n_tok, float *out, int64_t out_stride)
{
    (void)w;
    (void)rs;
    (void)nb;
    (void)r0;
    (void)r1;
    (void)act;
    (void)act_stride;
    (void)n_tok;
    (void)out;
    (void)out_stride;
    return false;
}
#endif
