/* The Q5_K integer GEMM (see gemm_kq5.h), on the driver gemm_kq6.c shares
 * (gemm_kpanel.h).
 *
 * A row's super-block is unpacked once per call into a panel, rows in
 * pairs: the 5-bit values 0..31 of each reference 32-value chunk j (the low
 * or high nibbles of qs[32(j/2)..], high bit j of qh) in their order
 * (unsigned: vpdpbusd's u8 operand, its products exact), the scales and
 * mins as int16 pairs. Per row, token and super-block the integer lanes
 * are the reference's: lane k = sum_j sc[j] * (the 4-value sum over
 * elements 4k..4k+3 of chunk j), each 4-value sum formed by one dot and
 * two chunks' sums scaled by one vpdpwssd (3 multiply instructions per
 * 128 values where the few-token kernels' maddubs + madd take 4). Then one
 * convert and one FMA with y.d * d_w, the reference's float step.
 *
 * AVX-512 VNNI: two tokens a register (the layout below: a row's chunk
 * against a token pair's); AVX2: a row's lanes a vector against one token
 * (gemm_kp_lanes256's order).
 *
 * The mins' integer of 2 rows x 4 tokens sits in the 8 int32 lanes of one
 * 256-bit register, [row A: tokens 0-3 | row B: tokens 0-3]: four vpdpwssd
 * of the panel's (min[2p], min[2p + 1]) pairs (one per row half) against
 * the tokens' (bsum[4p] + bsum[4p+1], bsum[4p+2] + bsum[4p+3]) pairs, the
 * reference's int16 hadd, made once per call (prep_tokens); then one FMA
 * with -y.d * dmin_w per lane: 8 of the reference's scalar summs steps at
 * once, in super-block order. At the end hsum_float_8 of each output's
 * lanes plus its summs. A tile is 2 row pairs x 4 tokens. */
#include "kernels/gemm_kq5.h"

#include <string.h>

#include "gguf/tensor.h"
#include "kernels/gemm_kpanel.h"
#include "kernels/quant_internal.h"

bool gemm_kq5_applies(const gguf_tensor *w, int n_tok)
{
#ifdef GEMM_KQ5
    return w->type == TENSOR_TYPE_Q5_K && n_tok >= GEMM_KQ5_MIN_TOK;
#else
    (void)w;
    (void)n_tok;
    return false;
#endif
}

#ifdef GEMM_KQ5
#define TILE_T GEMM_KP_TILE_T

/* Super-block x's 8 chunks of 32 5-bit values (the low nibbles of
 * qs[32q..32q+31] with high bit 2q of qh, then their high nibbles with bit
 * 2q + 1), in element order; the bytes 2 KB on, this row's or the next
 * (a panel's rows come from memory once per call, one after the other),
 * on their way. */
static inline __attribute__((always_inline)) void q5_K_chunks(const block_q5_K *x, __m256i c[8])
{
    const __m256i m4 = _mm256_set1_epi8(0x0F), bit = _mm256_set1_epi8(0x10);
    for (int l = 0; l < 192; l += 64)
        _mm_prefetch((const char *)x + 2048 + l, _MM_HINT_T0);
    __m256i hbits = _mm256_loadu_si256((const __m256i *)x->qh);
    for (int q = 0; q < 4; q++) {
        /* the high bits 2q and 2q + 1 of each byte to bit 4 */
        const __m256i q4 = _mm256_loadu_si256((const __m256i *)(x->qs + 32 * q));
        const __m256i h0 = _mm256_and_si256(_mm256_slli_epi16(hbits, 4), bit);
        const __m256i h1 = _mm256_and_si256(_mm256_slli_epi16(hbits, 3), bit);
        hbits = _mm256_srli_epi16(hbits, 2);
        c[2 * q] = _mm256_or_si256(_mm256_and_si256(q4, m4), h0);
        c[2 * q + 1] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(q4, 4), m4), h1);
    }
}

#ifdef GEMM_KPANEL_512
/* The 512-bit layout: two tokens a register. A token pair's chunk c (32
 * values) fills a register as [token 2P | token 2P + 1] (prep_tokens), a
 * row's as [the chunk | the chunk again] (the panel holds each row's
 * values twice: plain loads where the tokens' 256-bit broadcasts of a
 * two-row layout cost a third of a cycle each beside the multiplies on
 * AMD Zen 4). One vpdpbusd then gives the chunk's 4-value sums of the row
 * against both tokens: int32 lanes 0-7 token 2P's lanes k, 8-15 token
 * 2P + 1's. The sums of chunks 2q and 2q + 1 pair up in place as int16
 * (gemm_kp_pairs16: each fits, |.| <= 4 * 31 * 128) and one vpdpwssd
 * against the scale pair (sc[2q], sc[2q + 1]), broadcast from one dword,
 * adds both chunks, scaled: after the 4 chunk pairs the lanes are the
 * reference's, exact, with nothing to fold. Then one convert and one FMA
 * per row and token pair with d_w * y.d ([token 2P | token 2P + 1], from
 * prep), the reference's float step.
 *
 * Panel bytes per row pair and super-block: row h's chunk c twice at
 * 512 h + 64 c; its scale pairs, a dword per chunk pair, at OFF_SC + 16 h;
 * the mins pairs as gemm_kp_write_scales_mins lays them out at OFF_MIN;
 * d_w of A and B at OFF_DW; dmin_w of A four times, then of B, at OFF_DM. */
#define PAIR_SB 1280
#define OFF_SC 1024
#define OFF_MIN 1056
#define OFF_DW 1184
#define OFF_DM 1216
/* Token bytes per tile and super-block: token pair P's chunk c at 512 P +
 * 64 c; [y.d of token 2P x 8 | of 2P + 1 x 8] at TX_YD + 64 P; the mins'
 * part (gemm_kp_prep_mins) at TX_MINS. */
#define TX_YD 1024
#define TX_MINS 1152
#define TX_SB 1280

/* Row h (0, 1) of the pair at p: its nbl super-blocks as PAIR_SB blocks. */
static void write_pair_row(const void *row, int64_t nbl, uint8_t *p, int h)
{
    const block_q5_K *x = row;
    for (int64_t i = 0; i < nbl; i++, p += PAIR_SB) {
        __m256i c[8];
        q5_K_chunks(x + i, c);
        for (int j = 0; j < 8; j++)
            _mm512_store_si512(p + 512 * h + 64 * j, _mm512_broadcast_i64x4(c[j]));
        uint8_t sc[8], mn[8];
        for (int j = 0; j < 8; j++)
            quant_scale_min_k4(j, x[i].scales, &sc[j], &mn[j]);
        for (int q = 0; q < 4; q++) {
            const uint32_t s = (uint32_t)sc[2 * q] | (uint32_t)sc[2 * q + 1] << 16;
            const uint32_t m = (uint32_t)mn[2 * q] | (uint32_t)mn[2 * q + 1] << 16;
            memcpy(p + OFF_SC + 16 * h + 4 * q, &s, 4);
            _mm_storeu_si128((__m128i *)(void *)(p + OFF_MIN + 32 * q + 16 * h), _mm_set1_epi32((int)m));
        }
        const float dw = fp16_to_f32(x[i].d);
        memcpy(p + OFF_DW + 4 * h, &dw, 4);
        _mm_storeu_ps((float *)(void *)(p + OFF_DM + 16 * h), _mm_set1_ps(fp16_to_f32(x[i].dmin)));
    }
}

/* The 4 tokens' values as token pairs, their y.d pairs, then their side
 * of the mins and -y.d. */
static void prep_tokens(const block_q8_K *const y[TILE_T], int64_t nbl, uint8_t *tx)
{
    for (int64_t i = 0; i < nbl; i++) {
        uint8_t *xi = tx + i * TX_SB;
        for (int pp = 0; pp < 2; pp++) {
            for (int c = 0; c < 8; c++)
                _mm512_store_si512(xi + 512 * pp + 64 * c,
                                   _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256(
                                                          (const __m256i *)(y[2 * pp][i].qs + 32 * c))),
                                                      _mm256_loadu_si256((const __m256i *)(y[2 * pp + 1][i].qs + 32 * c)), 1));
            _mm512_store_ps(xi + TX_YD + 64 * pp,
                            _mm512_insertf32x8(_mm512_set1_ps(y[2 * pp][i].d), _mm256_set1_ps(y[2 * pp + 1][i].d), 1));
        }
    }
    gemm_kp_prep_mins(y, nbl, tx + TX_MINS, TX_SB, -1.0f);
}

/* NP row pairs (wp: their panels) against TILE_T tokens (tx: their
 * prep_tokens data), super-blocks [i0, i1): the float state goes on from
 * st (unset when i0 is 0) and back to st, or, when i1 is nbl, the outputs
 * to o[token * os + row]. facc[r][P]: row r's lanes for token pair P; macc[j]
 * pair j's mins, [row 2j: tokens | row 2j + 1: tokens]. Always inlined
 * with a constant NP. */
static inline __attribute__((always_inline)) void tile512(int NP, const uint8_t *const wp[2],
                                                          const block_q8_K *const y[TILE_T],
                                                          const uint8_t *tx, const float *yd, int64_t i0, int64_t i1,
                                                          int64_t nbl, __m512 *st, float *o, int64_t os)
{
    (void)y, (void)yd; /* the tokens' d are in tx, beside their values */
    __m512 facc[4][2];
    __m256 macc[2];
#pragma GCC unroll 4
    for (int r = 0; r < 2 * NP; r++)
#pragma GCC unroll 2
        for (int pp = 0; pp < 2; pp++)
            facc[r][pp] = i0 == 0 ? _mm512_setzero_ps() : st[2 * r + pp];
#pragma GCC unroll 2
    for (int j = 0; j < NP; j++)
        macc[j] = i0 == 0 ? _mm256_setzero_ps() : _mm512_castps512_ps256(st[8 + j]);
    for (int64_t i = i0; i < i1; i++) {
        const uint8_t *xi = tx + i * TX_SB;
        __m512i acc[4][2];
#pragma GCC unroll 4
        for (int r = 0; r < 2 * NP; r++)
#pragma GCC unroll 2
            for (int pp = 0; pp < 2; pp++)
                acc[r][pp] = _mm512_setzero_si512();
#pragma GCC unroll 4
        for (int q = 0; q < 4; q++) {
            __m512i w0[4], w1[4];
#pragma GCC unroll 4
            for (int r = 0; r < 2 * NP; r++) {
                const uint8_t *pb = wp[r / 2] + i * PAIR_SB + 512 * (r % 2) + 128 * q;
                w0[r] = _mm512_load_si512(pb);
                w1[r] = _mm512_load_si512(pb + 64);
                __asm__("" : "+v"(w0[r]), "+v"(w1[r]));
            }
#pragma GCC unroll 2
            for (int pp = 0; pp < 2; pp++) {
                const __m512i a0 = _mm512_load_si512(xi + 512 * pp + 128 * q);
                const __m512i a1 = _mm512_load_si512(xi + 512 * pp + 128 * q + 64);
#pragma GCC unroll 4
                for (int r = 0; r < 2 * NP; r++) {
                    int32_t s;
                    memcpy(&s, wp[r / 2] + i * PAIR_SB + OFF_SC + 16 * (r % 2) + 4 * q, 4);
                    acc[r][pp] = _mm512_dpwssd_epi32(acc[r][pp], _mm512_set1_epi32(s),
                                                     gemm_kp_pairs16(gemm_kp_dpbusd0(w0[r], a0), gemm_kp_dpbusd0(w1[r], a1)));
                }
            }
        }
#pragma GCC unroll 4
        for (int r = 0; r < 2 * NP; r++) {
            float dw;
            memcpy(&dw, wp[r / 2] + i * PAIR_SB + OFF_DW + 4 * (r % 2), 4);
#pragma GCC unroll 2
            for (int pp = 0; pp < 2; pp++)
                /* y.d * d_w, as vec_dot's scalar product */
                facc[r][pp] = _mm512_fmadd_ps(_mm512_mul_ps(_mm512_load_ps(xi + TX_YD + 64 * pp), _mm512_set1_ps(dw)),
                                              _mm512_cvtepi32_ps(acc[r][pp]), facc[r][pp]);
        }
        const __m256 nyd = _mm256_broadcast_ps((const __m128 *)(const void *)(xi + TX_MINS + GEMM_KP_OFF_YD));
#pragma GCC unroll 2
        for (int j = 0; j < NP; j++) {
            const uint8_t *pb = wp[j] + i * PAIR_SB;
            /* the mins: lane (row, token) = sum_p min pair p . bsum pair p */
            const __m256i tot = gemm_kp_mins_pair(pb + OFF_MIN, xi + TX_MINS);
            /* -y.d * dmin_w, as vec_dot's scalar product */
            macc[j] = _mm256_fmadd_ps(_mm256_mul_ps(_mm256_loadu_ps((const float *)(const void *)(pb + OFF_DM)), nyd),
                                      _mm256_cvtepi32_ps(tot), macc[j]);
        }
    }
    if (i1 < nbl) {
#pragma GCC unroll 4
        for (int r = 0; r < 2 * NP; r++)
#pragma GCC unroll 2
            for (int pp = 0; pp < 2; pp++)
                st[2 * r + pp] = facc[r][pp];
#pragma GCC unroll 2
        for (int j = 0; j < NP; j++)
            st[8 + j] = _mm512_castps256_ps512(macc[j]);
        return;
    }
    /* the 16 outputs' hsum_float_8 (f[2r + P]: row r, tokens 2P, 2P + 1) */
    __m512 f[8];
#pragma GCC unroll 8
    for (int k = 0; k < 8; k++)
        f[k] = k < 4 * NP ? facc[k / 2][k % 2] : _mm512_setzero_ps();
    /* lane 4t + r: row r's output for token t (token-major), plus the
     * summs (lane 4r + t of [macc[0] | macc[1]]) */
    const __m512 sm = _mm512_insertf32x8(_mm512_castps256_ps512(macc[0]), macc[NP - 1], 1);
    /* stored straight to the driver's token-major block (read back as
     * floats from a 512-bit store, they waited for it to commit: 2 % of a
     * Q5_K prompt) */
    store4x4_ps(_mm512_add_ps(hsum16_ps(f), transpose4x4_ps(sm)), o, os);
}

GEMM_KP_TILES(tile512)
#define N_ST 10
#else
/* Panel bytes per row pair and super-block: 4 chunk pairs of 2 x 64 value
 * bytes; 4 of 2 x 8 int16 scale pairs (sc[2q], sc[2q + 1]); 4 mins pairs p
 * of 2 x 4 int16 pairs (min[2p], min[2p + 1]); 2 x 8 float d_w; 2 x 4 float
 * dmin_w; padding to a cache line. */
#define PAIR_SB 1024
#define OFF_MIN 768
#define OFF_DW 896
#define OFF_DM 960
/* Token bytes per tile and super-block: the tokens' values
 * (gemm_kp_prep_values), then at TX_MINS per mins pair p the 4 tokens'
 * (bsum[4p] + bsum[4p+1], bsum[4p+2] + bsum[4p+3]) int16 pairs and the 4
 * tokens' -y.d. */
#define TX_SB 1152
#define TX_MINS GEMM_KP_TX_VALUES

/* Row h (0, 1) of the pair at p: its nbl super-blocks as PAIR_SB blocks. */
static void write_pair_row(const void *row, int64_t nbl, uint8_t *p, int h)
{
    const block_q5_K *x = row;
    for (int64_t i = 0; i < nbl; i++, p += PAIR_SB) {
        __m256i c[8];
        q5_K_chunks(x + i, c);
        for (int q = 0; q < 4; q++)
            gemm_kp_store_values(p + 128 * q, h, c[2 * q], c[2 * q + 1]);
        gemm_kp_write_scales_mins(x[i].scales, p, OFF_MIN, h);
        _mm256_storeu_ps((float *)(void *)(p + OFF_DW + 32 * h), _mm256_set1_ps(fp16_to_f32(x[i].d)));
        _mm_storeu_ps((float *)(void *)(p + OFF_DM + 16 * h), _mm_set1_ps(fp16_to_f32(x[i].dmin)));
    }
}

/* The 4 tokens' values in the AVX2 order, their side of the mins and -y.d
 * (gemm_kpanel.h). */
static void prep_tokens(const block_q8_K *const y[TILE_T], int64_t nbl, uint8_t *tx)
{
    gemm_kp_prep_values(y, nbl, tx, TX_SB);
    gemm_kp_prep_mins(y, nbl, tx + TX_MINS, TX_SB, -1.0f);
}

/* The AVX2 tile: 2 NP rows one after the other against TILE_T tokens, the
 * integer lanes as gemm_kq6.c's AVX2 tile (gemm_kp_lanes256: 3 multiply
 * instructions per 64 values where vec_dot takes 4), the FMA with y.d *
 * d_w per super-block; the mins' integers of the 4 tokens in the 4 int32
 * lanes of one 128-bit register (four madd of the row's mins pairs against
 * the tokens' bsum pairs), one FMA with -y.d * dmin_w: the 512-bit tile's
 * steps, a row at a time. Float state: st[4 r + t], the summs at st[16 + r]. */
static inline __attribute__((always_inline)) void tile256(int NP, const uint8_t *const wp[2],
                                                         const block_q8_K *const y[TILE_T], const uint8_t *tx,
                                                         const float *yd, int64_t i0, int64_t i1, int64_t nbl,
                                                         __m256 *st, float *o, int64_t os)
{
    (void)y;
#pragma GCC unroll 1
    for (int r = 0; r < 2 * NP; r++) {
        const uint8_t *pw = wp[r / 2] + 64 * (r % 2);
        const uint8_t *ps = wp[r / 2] + 32 * (r % 2), *pm = wp[r / 2] + 16 * (r % 2);
        __m256 facc[TILE_T];
        gemm_kp_st_load(st + TILE_T * r, i0, facc);
        __m128 macc = i0 == 0 ? _mm_setzero_ps() : _mm256_castps256_ps128(st[4 * TILE_T + r]);
        for (int64_t i = i0; i < i1; i++) {
            const uint8_t *pb = pw + i * PAIR_SB, *sb = ps + i * PAIR_SB, *mb = pm + i * PAIR_SB;
            const uint8_t *xt = tx + i * TX_SB, *xi = xt + TX_MINS;
            __m256i acc[TILE_T];
            gemm_kp_sb256(pb, NULL, sb + GEMM_KP_OFF_SC, xt, acc);
            float dw;
            memcpy(&dw, sb + OFF_DW, sizeof dw);
#pragma GCC unroll 4
            for (int t = 0; t < TILE_T; t++)
                /* y.d * d_w, as vec_dot's scalar product */
                facc[t] = _mm256_fmadd_ps(_mm256_set1_ps(dw * yd[4 * i + t]), _mm256_cvtepi32_ps(acc[t]), facc[t]);
            /* the mins: lane t = sum_p min pair p . token t's bsum pair p */
            __m128i tot = _mm_madd_epi16(_mm_loadu_si128((const __m128i *)(const void *)(mb + OFF_MIN)),
                                         _mm_loadu_si128((const __m128i *)(const void *)xi));
#pragma GCC unroll 3
            for (int p = 1; p < 4; p++)
                tot = _mm_add_epi32(tot, _mm_madd_epi16(
                                             _mm_loadu_si128((const __m128i *)(const void *)(mb + OFF_MIN + 32 * p)),
                                             _mm_loadu_si128((const __m128i *)(const void *)(xi + 16 * p))));
            /* -y.d * dmin_w, as vec_dot's scalar product */
            macc = _mm_fmadd_ps(_mm_mul_ps(_mm_loadu_ps((const float *)(const void *)(mb + OFF_DM)),
                                           _mm_loadu_ps((const float *)(const void *)(xi + GEMM_KP_OFF_YD))),
                                _mm_cvtepi32_ps(tot), macc);
        }
        if (i1 < nbl) {
#pragma GCC unroll 4
            for (int t = 0; t < TILE_T; t++)
                st[TILE_T * r + t] = facc[t];
            st[4 * TILE_T + r] = _mm256_castps128_ps256(macc);
            continue;
        }
        float sm[4];
        _mm_storeu_ps(sm, macc);
#pragma GCC unroll 4
        for (int t = 0; t < TILE_T; t++)
            o[t * os + r] = hsum_ps(facc[t]) + sm[t];
    }
}

GEMM_KP_TILES(tile256)
#define N_ST (4 * TILE_T + 4)
#endif

static const struct gemm_kp kq5 = {
    .pair_sb = PAIR_SB,
    .tx_bytes = TX_SB,
    .n_st = N_ST,
    .write_row = write_pair_row,
    .prep = prep_tokens,
    .tile2 = tile_pairs2,
    .tile1 = tile_pairs1,
#ifndef GEMM_KPANEL_512
    .side = GEMM_KP_SIDE_D, /* the AVX2 tile's d (the 512-bit one has them in its prep data) */
#endif
};
#endif

void gemm_kq5_rows(int64_t n, const void *w, size_t rs, int64_t r0, int64_t r1, const void *act,
                   size_t act_stride, int n_tok, float *out, int64_t out_stride)
{
    if (r0 >= r1 || n_tok < 1)
        return;
#ifdef GEMM_KQ5
    if (gemm_kp_rows(&kq5, n / QK_K, w, rs, r0, r1, act, act_stride, n_tok, out, out_stride))
        return;
#endif
    gemm_kq_dot_rows(TENSOR_TYPE_Q5_K, n, w, rs, r0, r1, act, act_stride, n_tok, out, out_stride);
}
