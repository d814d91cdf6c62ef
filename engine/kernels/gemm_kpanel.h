/* The driver the K-quant integer GEMMs share (gemm_kq6.c, gemm_kq5.c,
 * gemm_kq4v.c; in AVX2 builds also gemm_iq1.c's IQ1_M tile):
 * panels of row pairs written once per call, tokens in blocks that stay in
 * L2, super-blocks in slices that keep a tile's panel rows and tokens in
 * L1, 2 row pairs x 4 tokens a tile. What a row's panel holds and what a
 * tile computes is the type's own (the callbacks); the driver only cuts
 * rows, tokens and super-blocks, and every output's float steps stay in
 * super-block order inside the tile (its float lanes wait in st between
 * slices). AVX-512 VNNI builds run 512-bit tiles (2 rows' lanes a
 * vector; gemm_kq5.c's 2 tokens' lanes of one row), AVX2 builds 256-bit
 * ones (a row's lanes a vector, the rows of a tile one after the other).
 * Internal to the kernels. */
#ifndef TOKSCOPE_GEMM_KPANEL_H
#define TOKSCOPE_GEMM_KPANEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "gguf/tensor.h"
#include "kernels/quant_internal.h"

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__) && defined(__AVX512VNNI__) &&     \
    defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#define GEMM_KPANEL 1
/* the tiles' float state: 512-bit vectors (2 rows' 8 lanes) */
#define GEMM_KPANEL_512 1
typedef __m512 gemm_kp_st;
#elif defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#define GEMM_KPANEL 1
/* the AVX2 tiles': one row's 8 lanes a vector */
typedef __m256 gemm_kp_st;
#endif

#ifdef GEMM_KPANEL

/* tokens per tile */
#define GEMM_KP_TILE_T 4

/* Row h (0, 1) of a pair: the row's nbl super-blocks into the pair's panel
 * at p, pair_sb bytes a super-block. */
typedef void (*gemm_kp_write_fn)(const void *row, int64_t nbl, uint8_t *p, int h);

/* The token side a tile wants besides the Q8_K rows (NULL when none): for
 * the 4 tokens y (the last repeated past the batch), tx_bytes per
 * super-block into tx. */
typedef void (*gemm_kp_prep_fn)(const block_q8_K *const y[GEMM_KP_TILE_T], int64_t nbl, uint8_t *tx);

/* 1 or 2 row pairs (wp: their panels; with one, wp[1] == wp[0]) against 4
 * tokens (y; tx their prep data; yd what the kind's side copies out of
 * their rows), super-blocks [i0, i1): the float state
 * goes on from st (n_st vectors; unset when i0 is 0) and back to st, or,
 * when i1 is nbl, the outputs to o[token * os + row] (all 4 tokens and the
 * tile's 2 or 4 rows, those past the batch or the rows too: o has room). */
typedef void (*gemm_kp_tile_fn)(const uint8_t *const wp[2], const block_q8_K *const y[GEMM_KP_TILE_T],
                                const uint8_t *tx, const float *yd, int64_t i0, int64_t i1, int64_t nbl,
                                gemm_kp_st *st, float *o, int64_t os);

/* The tile2 and tile1 callbacks (tile_pairs2, tile_pairs1) of a type whose
 * tile is one always-inlined function TILE(NP, wp, y, tx, yd, i0, i1, nbl,
 * st, o, os) with a constant NP: each its own copy with NP folded in. */
#define GEMM_KP_TILES(TILE)                                                                                          \
    static void tile_pairs2(const uint8_t *const wp[2], const block_q8_K *const y[GEMM_KP_TILE_T],                 \
                            const uint8_t *tx, const float *yd, int64_t i0, int64_t i1, int64_t nbl, gemm_kp_st *st, \
                            float *o, int64_t os)                                                                  \
    {                                                                                                              \
        TILE(2, wp, y, tx, yd, i0, i1, nbl, st, o, os);                                                                \
    }                                                                                                              \
    static void tile_pairs1(const uint8_t *const wp[2], const block_q8_K *const y[GEMM_KP_TILE_T],                 \
                            const uint8_t *tx, const float *yd, int64_t i0, int64_t i1, int64_t nbl, gemm_kp_st *st, \
                            float *o, int64_t os)                                                                  \
    {                                                                                                              \
        TILE(1, wp, y, tx, yd, i0, i1, nbl, st, o, os);                                                                \
    }

/* What the driver copies out of the tokens' Q8_K rows for a tile (its yd):
 * nothing (the kind's prep data holds what its tile needs), their d (4 per
 * super-block, yd[4 i + t]), or their d and then their bsums
 * (gemm_kp_bsums). Tiles that take the tokens' bytes from prep data read
 * these from the rows otherwise, a cache line of its own per token and
 * super-block: 8 % of an AVX2 IQ2_XXS GEMM, 9 % of the AVX2 Q6_K one. */
enum gemm_kp_side { GEMM_KP_SIDE_NONE, GEMM_KP_SIDE_D, GEMM_KP_SIDE_D_BSUMS };

struct gemm_kp {
    size_t pair_sb;  /* panel bytes per row pair and super-block */
    size_t tx_bytes; /* prep bytes per tile and super-block (0: no prep) */
    int n_st;        /* float state vectors per tile */
    gemm_kp_write_fn write_row;
    gemm_kp_prep_fn prep;
    gemm_kp_tile_fn tile2, tile1; /* 2 row pairs, 1 */
    enum gemm_kp_side side; /* what the tile reads from yd */
};

/* Token t's bsums of super-block i, from a tile's yd when its kind's side
 * is GEMM_KP_SIDE_D_BSUMS: after the nbl x 4 d, 16 int16 a token and
 * super-block. */
static inline const int16_t *gemm_kp_bsums(const float *yd, int64_t nbl, int64_t i, int t)
{
    return (const int16_t *)(const void *)(yd + GEMM_KP_TILE_T * nbl) + 16 * (GEMM_KP_TILE_T * i + t);
}

/* out[t * out_stride + r] for rows [r0, r1) of the rows at w (rs bytes
 * apart, nbl super-blocks) and tokens [0, n_tok) (Q8_K rows act_stride
 * bytes apart). False, having written nothing, when scratch could not be
 * had. */
bool gemm_kp_rows(const struct gemm_kp *k, int64_t nbl, const void *w, size_t rs, int64_t r0, int64_t r1,
                  const void *act, size_t act_stride, int n_tok, float *out, int64_t out_stride);

/* The 64 values of chunk pair q (chunks c0 = 2q, c1 = 2q + 1, 32 unsigned
 * bytes each, in element order) of row h (0, 1) of a pair into its panel at
 * pq (the pair's chunk pair q), where the tiles read them: for the 512-bit
 * tiles both rows' c0, then both rows' c1 ([A c0 | B c0], [A c1 | B c1]: a
 * vpdpbusd against a chunk broadcast to both halves gives one chunk of both
 * rows, and the two chunks' sums pair up in place, gemm_kp_pairs16); for
 * the AVX2 tiles row h's 64 bytes at pq + 64h, 16-bit interleaved
 * (gemm_kp_lanes256): A = per 4-byte group k (c0 bytes 4k, 4k+1, c1 bytes
 * 4k, 4k+1), then B = (c0 bytes 4k+2, 4k+3, c1 bytes 4k+2, 4k+3). */
static inline void gemm_kp_store_values(uint8_t *pq, int h, __m256i c0, __m256i c1)
{
#ifdef GEMM_KPANEL_512
    _mm256_storeu_si256((__m256i *)(void *)(pq + 32 * h), c0);
    _mm256_storeu_si256((__m256i *)(void *)(pq + 64 + 32 * h), c1);
#else
    uint8_t *p = pq + 64 * h;
    _mm256_storeu_si256((__m256i *)(void *)p, _mm256_blend_epi16(c0, _mm256_slli_epi32(c1, 16), 0xAA));
    _mm256_storeu_si256((__m256i *)(void *)(p + 32), _mm256_blend_epi16(_mm256_srli_epi32(c0, 16), c1, 0xAA));
#endif
}

#ifdef GEMM_KPANEL_512
/* w . a lane sums of 4 bytes (w unsigned), from zero. An asm statement, as
 * gemm_iq.c's: GCC copies accumulators around its intrinsic. */
static inline __m512i gemm_kp_dpbusd0(__m512i w, __m512i a)
{
    __m512i r;
    __asm__("vpxord %0, %0, %0\n\tvpdpbusd %2, %1, %0" : "=&v"(r) : "v"(w), "v"(a));
    return r;
}

/* Two rows' lane sums of one 64-value chunk pair as int16 pairs, for one
 * vpdpwssd against their scale pairs: x0 holds in int32 lanes 0-7 row A's
 * 4-value sums of the first chunk, in 8-15 row B's, x1 the same of the
 * second chunk (each fits 16 bits); int32 lane m of the result is (x0 lane
 * m, x1 lane m). A shift and a word blend: on AMD Zen 4 both run beside
 * the multiplies (2 vpdpbusd + these + vpdpwssd: 3 cycles a step in a
 * microbenchmark), where the cross-lane vpermt2w this replaced took a
 * multiply pipe's cycle (4). */
static inline __m512i gemm_kp_pairs16(__m512i x0, __m512i x1)
{
    return _mm512_mask_blend_epi16((__mmask32)0xAAAAAAAAu, x0, _mm512_slli_epi32(x1, 16));
}
#endif /* GEMM_KPANEL_512 */

/* The types' panels begin alike: per chunk pair q (64 values) the 128
 * value bytes of both rows at 128q (unsigned, so vpdpbusd's u8 operand; as
 * gemm_kp_store_values lays them out), the two chunks' int16 scale pairs
 * at GEMM_KP_OFF_SC + 64q (8 int32 lanes of row A, 8 of B). */
#define GEMM_KP_OFF_SC 512

/* Row h (0, 1) of a pair, one Q4_K/Q5_K super-block's scales and mins
 * (the 12 packed bytes): per chunk pair q the scale pair (sc[2q],
 * sc[2q + 1]) in 8 int32 lanes at GEMM_KP_OFF_SC + 64q + 32h, the mins
 * pair (min[2q], min[2q + 1]) in 4 at off_min + 32q + 16h. */
static inline void gemm_kp_write_scales_mins(const uint8_t *scales, uint8_t *p, int off_min, int h)
{
    /* quant_scale_min_k4 of all 8 at once, in 32-bit words (the reference's
     * utmp form): bytes 0-7 the scales, 8-15 the mins */
    uint32_t u[4];
    memcpy(u, scales, 12);
    const uint32_t km1 = 0x3f3f3f3f, km2 = 0x0f0f0f0f, km3 = 0x03030303;
    u[3] = ((u[2] >> 4) & km2) | (((u[1] >> 6) & km3) << 4);
    const uint32_t mins_lo = u[1] & km1;
    u[1] = (u[2] & km2) | (((u[0] >> 6) & km3) << 4);
    u[2] = mins_lo;
    u[0] &= km1;
    /* as int16: int32 lane q (0-3) the scale pair (sc[2q], sc[2q + 1]),
     * lane 4 + q the mins pair */
    const __m256i w = _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)(const void *)u));
    for (int q = 0; q < 4; q++) {
        _mm256_storeu_si256((__m256i *)(void *)(p + GEMM_KP_OFF_SC + 64 * q + 32 * h),
                            _mm256_permutevar8x32_epi32(w, _mm256_set1_epi32(q)));
        _mm_storeu_si128((__m128i *)(void *)(p + off_min + 32 * q + 16 * h),
                         _mm256_castsi256_si128(_mm256_permutevar8x32_epi32(w, _mm256_set1_epi32(4 + q))));
    }
}

#ifdef GEMM_KPANEL_512
/* The mins' integers of one row pair (its mins pairs at pm, as
 * gemm_kp_write_scales_mins lays them out) against 4 tokens (their bsum
 * pairs at xm, gemm_kp_prep_mins): [row A: tokens 0-3 | row B: tokens
 * 0-3], the sum over the 4 mins pairs p of min pair p . bsum pair p. */
static inline __m256i gemm_kp_mins_pair(const uint8_t *pm, const uint8_t *xm)
{
    __m256i tot = _mm256_madd_epi16(_mm256_loadu_si256((const __m256i *)(const void *)pm),
                                    _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(const void *)xm)));
#pragma GCC unroll 3
    for (int p = 1; p < 4; p++)
        tot = _mm256_dpwssd_epi32(
            tot, _mm256_loadu_si256((const __m256i *)(const void *)(pm + 32 * p)),
            _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(const void *)(xm + 16 * p))));
    return tot;
}
#endif

/* Token bytes per tile and super-block of gemm_kp_prep_mins: per mins pair
 * p the 4 tokens' bsum pairs (64 bytes), then the 4 tokens' sign * y.d at
 * GEMM_KP_OFF_YD. */
#define GEMM_KP_TX_MINS 80
#define GEMM_KP_OFF_YD 64

/* The 4 tokens' side of the mins, GEMM_KP_TX_MINS bytes a super-block: per
 * mins pair p (bsum[4p] + bsum[4p+1], bsum[4p+2] + bsum[4p+3]) as int16
 * (as the reference's _mm_hadd_epi16 wraps), token-major; then sign * y.d
 * (sign 1 or -1: exact). Super-blocks stride bytes apart (GEMM_KP_TX_MINS
 * when nothing else goes with them). */
void gemm_kp_prep_mins(const block_q8_K *const y[GEMM_KP_TILE_T], int64_t nbl, uint8_t *tx, size_t stride,
                       float sign);

#ifndef GEMM_KPANEL_512
/* Token bytes per tile and super-block of gemm_kp_prep_values: the 4
 * tokens' 256 values, token after token, in the panel's AVX2 order. */
#define GEMM_KP_TX_VALUES 1024

/* The 4 tokens' values as gemm_kp_store_values lays out a row's (so that
 * one maddubs pairs them), stride bytes a super-block. */
void gemm_kp_prep_values(const block_q8_K *const y[GEMM_KP_TILE_T], int64_t nbl, uint8_t *tx, size_t stride);
/* The same, GEMM_KP_TX_VALUES a super-block: the prep of the tiles that
 * want nothing else (Q6_K). */
void gemm_kp_prep_tokens(const block_q8_K *const y[GEMM_KP_TILE_T], int64_t nbl, uint8_t *tx);
/* ... with each byte plus 128 (maddubs' unsigned operand: the IQ sign
 * GEMM, gemm_kp_lanes256 with co). */
void gemm_kp_prep_tokens_offset(const block_q8_K *const y[GEMM_KP_TILE_T], int64_t nbl, uint8_t *tx);

/* One chunk pair of one row (its values at pw, A then B; its scale pairs
 * at sc) against 4 tokens (their values at xt, 256 bytes apart, A then B):
 * acc[t] += the reference's 8 lanes of the two chunks, scaled. The two
 * maddubs sums added as int16 are the 4-value sums of both chunks side by
 * side (each |.| <= 4 * 63 * 128), the madd scales and adds them. With co
 * (the IQ offset GEMM) pw holds signed values (|v| <= 62), the tokens' bytes
 * come offset by 128 (gemm_kp_prep_tokens_offset: maddubs' unsigned
 * operand; a pair's products <= 2 * 255 * 62, no saturation) and co holds
 * the row's surplus, 128 x each lane's 4-value sum, as int16: the sums
 * with the offset wrap in 16 bits, but less the surplus they are the
 * exact 4-value sums again, which fit. The Q8_K tokens are never -128
 * (quantize_row_q8_K_ref's -127 / max), where vec_dot's vpsignb would keep
 * -128 under a minus. Six instructions a token where carrying the values'
 * signs onto the token's bytes took nine ((y ^ m) - m per chunk; AMD Zen
 * 4's four vector pipes run all of them, 2.31 cycles a step). NULL (a
 * constant: always inlined) for the unsigned K-quant values against the
 * tokens as they are. */
static inline __attribute__((always_inline)) void gemm_kp_lanes256(const uint8_t *pw, const uint8_t *co,
                                                                   const uint8_t *sc, const uint8_t *xt,
                                                                   __m256i acc[GEMM_KP_TILE_T])
{
    const __m256i wa = _mm256_loadu_si256((const __m256i *)(const void *)pw);
    const __m256i wb = _mm256_loadu_si256((const __m256i *)(const void *)(pw + 32));
    const __m256i s = _mm256_loadu_si256((const __m256i *)(const void *)sc);
    __m256i c = _mm256_setzero_si256();
    if (co)
        c = _mm256_loadu_si256((const __m256i *)(const void *)co);
#pragma GCC unroll 4
    for (int t = 0; t < GEMM_KP_TILE_T; t++) {
        const uint8_t *a = xt + 256 * t;
        const __m256i ya = _mm256_loadu_si256((const __m256i *)(const void *)a);
        const __m256i yb = _mm256_loadu_si256((const __m256i *)(const void *)(a + 32));
        __m256i p;
        if (co)
            p = _mm256_sub_epi16(_mm256_add_epi16(_mm256_maddubs_epi16(ya, wa), _mm256_maddubs_epi16(yb, wb)), c);
        else
            p = _mm256_add_epi16(_mm256_maddubs_epi16(wa, ya), _mm256_maddubs_epi16(wb, yb));
        acc[t] = _mm256_add_epi32(acc[t], _mm256_madd_epi16(p, s));
        __asm__("" : "+x"(acc[t]));
    }
}

/* acc[t] = one super-block's 8 lanes of a row against the 4 tokens:
 * gemm_kp_lanes256 over its 4 chunk pairs (values from pw, 128 bytes a
 * pair; the signed values' surplus from co or NULL, 64; scale pairs from
 * sc, 64; the tokens' bytes from xt, 64). */
static inline __attribute__((always_inline)) void gemm_kp_sb256(const uint8_t *pw, const uint8_t *co,
                                                                const uint8_t *sc, const uint8_t *xt,
                                                                __m256i acc[GEMM_KP_TILE_T])
{
#pragma GCC unroll 4
    for (int t = 0; t < GEMM_KP_TILE_T; t++)
        acc[t] = _mm256_setzero_si256();
#pragma GCC unroll 4
    for (int q = 0; q < 4; q++)
        gemm_kp_lanes256(pw + 128 * q, co ? co + 64 * q : NULL, sc + 64 * q, xt + 64 * q, acc);
}

/* A 256-bit tile row's float lanes for its 4 tokens: from the state st
 * (the slice before's), or zeros in the first slice (i0 0). */
static inline __attribute__((always_inline)) void gemm_kp_st_load(const __m256 *st, int64_t i0,
                                                                  __m256 f[GEMM_KP_TILE_T])
{
#pragma GCC unroll 4
    for (int t = 0; t < GEMM_KP_TILE_T; t++)
        f[t] = i0 == 0 ? _mm256_setzero_ps() : st[t];
}

/* The AVX2 tile of the panels whose float step is one FMA per super-block
 * (Q6_K, the IQ2/IQ3 offset GEMM of gemm_iq.c): 2 NP rows, one after the
 * other, against the 4 tokens (their bytes in tx, GEMM_KP_TX_VALUES a
 * super-block), super-blocks [i0, i1). Per super-block and token the lanes
 * (gemm_kp_sb256), plus, with off_off, a madd of the token's bsums against
 * the row's int16 there (Q6_K's -32 sc), then one convert and one FMA with
 * y.d * d_w (vec_dot's scalar product); at the end scale * hsum_float_8 (x
 * * 1.0f is x). In a pair's super-block row h's values are at 64h, its
 * signed values' surplus per chunk pair q at off_co + 64q + 32h (with
 * off_co: the IQ offset GEMM, tokens offset), its scale pairs at off_sc +
 * 32h, its offsets at off_off + 32h, its d_w at off_dw + 32h. Float state
 * st[4 r + t]. Always inlined with constant offsets. */
static inline __attribute__((always_inline)) void gemm_kp_tile256(int NP, const uint8_t *const wp[2],
                                                                  const uint8_t *tx, const float *yd, int64_t i0,
                                                                  int64_t i1, int64_t nbl, __m256 *st,
                                                                  float *o, int64_t os, size_t pair_sb,
                                                                  size_t off_sc, size_t off_co, size_t off_off,
                                                                  size_t off_dw, float scale)
{
#pragma GCC unroll 1
    for (int r = 0; r < 2 * NP; r++) {
        const uint8_t *pw = wp[r / 2] + 64 * (r % 2), *ps = wp[r / 2] + 32 * (r % 2);
        __m256 facc[GEMM_KP_TILE_T];
        gemm_kp_st_load(st + GEMM_KP_TILE_T * r, i0, facc);
        for (int64_t i = i0; i < i1; i++) {
            const uint8_t *pb = pw + i * pair_sb, *sb = ps + i * pair_sb;
            __m256i acc[GEMM_KP_TILE_T];
            gemm_kp_sb256(pb, off_co ? sb + off_co : NULL, sb + off_sc, tx + i * GEMM_KP_TX_VALUES, acc);
            float dw;
            memcpy(&dw, sb + off_dw, sizeof dw);
#pragma GCC unroll 4
            for (int t = 0; t < GEMM_KP_TILE_T; t++) {
                if (off_off)
                    acc[t] = _mm256_add_epi32(
                        acc[t],
                        _mm256_madd_epi16(
                            _mm256_loadu_si256((const __m256i *)(const void *)gemm_kp_bsums(yd, nbl, i, t)),
                            _mm256_loadu_si256((const __m256i *)(const void *)(sb + off_off))));
                facc[t] = _mm256_fmadd_ps(_mm256_set1_ps(yd[GEMM_KP_TILE_T * i + t] * dw), _mm256_cvtepi32_ps(acc[t]),
                                          facc[t]);
            }
        }
#pragma GCC unroll 4
        for (int t = 0; t < GEMM_KP_TILE_T; t++) {
            if (i1 < nbl)
                st[GEMM_KP_TILE_T * r + t] = facc[t];
            else
                o[t * os + r] = scale * hsum_ps(facc[t]);
        }
    }
}
#endif

#ifdef GEMM_KPANEL_512
/* Super-block i of NP row pairs (their panel blocks at wp[j] + i * pair_sb)
 * against 4 tokens: acc[j][t] = the reference's scaled int32 lanes, row A's
 * lanes k in 0-7, B's in 8-15. Per token and chunk pair two vpdpbusd give
 * both rows' 4-value sums of each chunk (lanes 0-7 row A, 8-15 row B; each
 * fits 16 bits), gemm_kp_pairs16 puts them side by side and one vpdpwssd
 * against the scale pairs adds both chunks, scaled. */
static inline __attribute__((always_inline)) void gemm_kp_lanes(int NP, const uint8_t *const wp[2],
                                                                size_t pair_sb,
                                                                const block_q8_K *const y[GEMM_KP_TILE_T],
                                                                int64_t i, __m512i acc[2][GEMM_KP_TILE_T])
{
#pragma GCC unroll 2
    for (int j = 0; j < NP; j++)
#pragma GCC unroll 8
        for (int t = 0; t < GEMM_KP_TILE_T; t++)
            acc[j][t] = _mm512_setzero_si512();
#pragma GCC unroll 4
    for (int q = 0; q < 4; q++) {
        __m512i w0[2], w1[2], l[2];
#pragma GCC unroll 2
        for (int j = 0; j < NP; j++) {
            w0[j] = _mm512_loadu_si512(wp[j] + i * pair_sb + 128 * q);
            w1[j] = _mm512_loadu_si512(wp[j] + i * pair_sb + 128 * q + 64);
            l[j] = _mm512_loadu_si512(wp[j] + i * pair_sb + GEMM_KP_OFF_SC + 64 * q);
            __asm__("" : "+v"(w0[j]), "+v"(w1[j]), "+v"(l[j]));
        }
#pragma GCC unroll 8
        for (int t = 0; t < GEMM_KP_TILE_T; t++) {
            /* each chunk of the token in both halves */
            const __m512i a0 = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(y[t][i].qs + 64 * q)));
            const __m512i a1 =
                _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(y[t][i].qs + 64 * q + 32)));
#pragma GCC unroll 2
            for (int j = 0; j < NP; j++) {
                const __m512i x0 = gemm_kp_dpbusd0(w0[j], a0), x1 = gemm_kp_dpbusd0(w1[j], a1);
                acc[j][t] = _mm512_dpwssd_epi32(acc[j][t], l[j], gemm_kp_pairs16(x0, x1));
            }
        }
    }
}

#endif /* GEMM_KPANEL_512 */
#endif /* GEMM_KPANEL */

/* What a K-quant GEMM falls back to without scratch (or in a build without
 * it): tensor_vec_dot per output, which gives the same bits. */
static inline void gemm_kq_dot_rows(enum tensor_type type, int64_t n, const void *w, size_t rs, int64_t r0,
                                    int64_t r1, const void *act, size_t act_stride, int n_tok, float *out,
                                    int64_t out_stride)
{
    for (int64_t r = r0; r < r1; r++)
        for (int t = 0; t < n_tok; t++)
            out[(int64_t)t * out_stride + r] = tensor_vec_dot(type, n, (const uint8_t *)w + (size_t)r * rs,
                                                             (const uint8_t *)act + (size_t)t * act_stride);
}

#endif
