/* The Q5_K integer GEMM (see gemm_kq5.h), on the driver gemm_kq6.c shares
 * (gemm_kpanel.h).
 *
 * A row's super-block is unpacked once per call into a panel, rows in
 * pairs: per chunk pair q (elements 64q..64q+63, the reference's 32-value
 * chunks 2q and 2q + 1: the low and high nibbles of qs[32q..32q+31], high
 * bits 2q and 2q + 1 of qh) as gemm_kp_store_values lays them out, the 5-bit
 * values 0..31 in their order (unsigned: vpdpbusd's u8 operand, its
 * products exact), and the scale pairs (sc[2q], sc[2q + 1]): the integer
 * lanes are gemm_kp_lanes' (3 multiply instructions per row pair, token
 * and chunk pair, where the few-token kernels' maddubs + madd take 4).
 * Then one convert and one FMA with y.d * d_w per half, the
 * reference's float step.
 *
 * The mins' integer of 2 rows x 4 tokens sits in the 8 int32 lanes of one
 * 256-bit register, [row A: tokens 0-3 | row B: tokens 0-3]: four vpdpwssd
 * of the panel's (min[2p], min[2p + 1]) pairs (one per row half) against
 * the tokens' (bsum[4p] + bsum[4p+1], bsum[4p+2] + bsum[4p+3]) pairs, the
 * reference's int16 hadd, made once per call (prep_tokens); then one FMA
 * with -y.d * dmin_w per lane: 8 of the reference's scalar summs steps at
 * once, in super-block order. At the end hsum_float_8 of each output's
 * lanes plus its summs. A tile is 2 row pairs x 4 tokens: 8 integer and 8
 * float accumulators, and 2 summs registers. */
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
/* Panel bytes per row pair and super-block: 4 chunk pairs of 2 x 64 value
 * bytes; 4 of 2 x 8 int16 scale pairs (sc[2q], sc[2q + 1]); 4 mins pairs p
 * of 2 x 4 int16 pairs (min[2p], min[2p + 1]); 2 x 8 float d_w; 2 x 4 float
 * dmin_w; padding to a cache line. */
#define PAIR_SB 1024
#define OFF_MIN 768
#define OFF_DW 896
#define OFF_DM 960
/* Token bytes per tile and super-block: per mins pair p the 4 tokens'
 * (bsum[4p] + bsum[4p+1], bsum[4p+2] + bsum[4p+3]) int16 pairs, then the 4
 * tokens' -y.d; for the AVX2 tile the tokens' values before them
 * (gemm_kp_prep_values), the mins' part at TX_MINS. */
#ifdef GEMM_KPANEL_512
#define TX_SB GEMM_KP_TX_MINS
#define TX_MINS 0
#else
#define TX_SB 1152
#define TX_MINS GEMM_KP_TX_VALUES
#endif

/* Row h (0, 1) of the pair at p: its nbl super-blocks as PAIR_SB blocks. */
static void write_pair_row(const void *row, int64_t nbl, uint8_t *p, int h)
{
    const block_q5_K *x = row;
    const __m256i m4 = _mm256_set1_epi8(0x0F), bit = _mm256_set1_epi8(0x10);
    for (int64_t i = 0; i < nbl; i++, p += PAIR_SB) {
        /* the weights come from memory once per call, rows one after the
         * other: the bytes 2 KB on (this row's or the next) on their way */
        for (int l = 0; l < 192; l += 64)
            _mm_prefetch((const char *)(x + i) + 2048 + l, _MM_HINT_T0);
        __m256i hbits = _mm256_loadu_si256((const __m256i *)x[i].qh);
        for (int q = 0; q < 4; q++) {
            /* the high bits 2q and 2q + 1 of each byte to bit 4 */
            const __m256i q4 = _mm256_loadu_si256((const __m256i *)(x[i].qs + 32 * q));
            const __m256i h0 = _mm256_and_si256(_mm256_slli_epi16(hbits, 4), bit);
            const __m256i h1 = _mm256_and_si256(_mm256_slli_epi16(hbits, 3), bit);
            hbits = _mm256_srli_epi16(hbits, 2);
            gemm_kp_store_values(p + 128 * q, h, _mm256_or_si256(_mm256_and_si256(q4, m4), h0),
                                 _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(q4, 4), m4), h1));
        }
        gemm_kp_write_scales_mins(x[i].scales, p, OFF_MIN, h);
        _mm256_storeu_ps((float *)(void *)(p + OFF_DW + 32 * h), _mm256_set1_ps(fp16_to_f32(x[i].d)));
        _mm_storeu_ps((float *)(void *)(p + OFF_DM + 16 * h), _mm_set1_ps(fp16_to_f32(x[i].dmin)));
    }
}

/* The 4 tokens' side of the mins, -y.d after them (gemm_kpanel.h). */
static void prep_tokens(const block_q8_K *const y[TILE_T], int64_t nbl, uint8_t *tx)
{
#ifndef GEMM_KPANEL_512
    gemm_kp_prep_values(y, nbl, tx, TX_SB);
#endif
    gemm_kp_prep_mins(y, nbl, tx + TX_MINS, TX_SB, -1.0f);
}

#ifdef GEMM_KPANEL_512

/* NP row pairs (wp: their panels) against TILE_T tokens (y: their Q8_K
 * rows, tx: their prep_tokens data), super-blocks [i0, i1): the float
 * lanes go on from st (zero when i0 is 0) and back to st, or, when i1 is
 * nbl, the outputs to out[row][token]. Lanes 0-7 of an accumulator: row
 * 2j's lanes k, 8-15: row 2j + 1's; summs lanes [2j: tokens | 2j + 1:
 * tokens]. Always inlined with a constant NP. */
static inline __attribute__((always_inline)) void tile512(int NP, const uint8_t *const wp[2],
                                                          const block_q8_K *const y[TILE_T],
                                                          const uint8_t *tx, int64_t i0, int64_t i1,
                                                          int64_t nbl, __m512 *st, float out[4][TILE_T])
{
    __m512 facc[2][TILE_T];
    __m256 macc[2];
#pragma GCC unroll 2
    for (int j = 0; j < NP; j++) {
#pragma GCC unroll 8
        for (int t = 0; t < TILE_T; t++)
            facc[j][t] = i0 == 0 ? _mm512_setzero_ps() : st[j * TILE_T + t];
        macc[j] = i0 == 0  ? _mm256_setzero_ps()
                  : j == 0 ? _mm512_castps512_ps256(st[2 * TILE_T])
                           : _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(st[2 * TILE_T]), 1));
    }
    for (int64_t i = i0; i < i1; i++) {
        __m512i acc[2][TILE_T];
        gemm_kp_lanes(NP, wp, PAIR_SB, y, i, acc);
        const uint8_t *xi = tx + i * TX_SB;
        const __m256 nyd = _mm256_broadcast_ps((const __m128 *)(const void *)(xi + GEMM_KP_OFF_YD));
#pragma GCC unroll 2
        for (int j = 0; j < NP; j++) {
            const uint8_t *pb = wp[j] + i * PAIR_SB;
            const __m512 dwv = _mm512_loadu_ps(pb + OFF_DW);
#pragma GCC unroll 8
            for (int t = 0; t < TILE_T; t++)
                /* y.d * d_w, as vec_dot's scalar product */
                facc[j][t] = _mm512_fmadd_ps(_mm512_mul_ps(dwv, _mm512_set1_ps(y[t][i].d)),
                                             _mm512_cvtepi32_ps(acc[j][t]), facc[j][t]);
            /* the mins: lane (row, token) = sum_p min pair p . bsum pair p */
            __m256i tot =
                _mm256_madd_epi16(_mm256_loadu_si256((const __m256i *)(pb + OFF_MIN)),
                                  _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)xi)));
#pragma GCC unroll 3
            for (int p = 1; p < 4; p++)
                tot = _mm256_dpwssd_epi32(
                    tot, _mm256_loadu_si256((const __m256i *)(pb + OFF_MIN + 32 * p)),
                    _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(xi + 16 * p))));
            /* -y.d * dmin_w, as vec_dot's scalar product */
            macc[j] = _mm256_fmadd_ps(
                _mm256_mul_ps(_mm256_loadu_ps((const float *)(const void *)(pb + OFF_DM)), nyd),
                _mm256_cvtepi32_ps(tot), macc[j]);
        }
    }
    if (i1 < nbl) {
#pragma GCC unroll 2
        for (int j = 0; j < NP; j++)
#pragma GCC unroll 8
            for (int t = 0; t < TILE_T; t++)
                st[j * TILE_T + t] = facc[j][t];
        st[2 * TILE_T] = _mm512_insertf32x8(_mm512_castps256_ps512(macc[0]), NP > 1 ? macc[1] : macc[0], 1);
        return;
    }
#pragma GCC unroll 2
    for (int j = 0; j < NP; j++) {
        float sm[8];
        _mm256_storeu_ps(sm, macc[j]);
#pragma GCC unroll 8
        for (int t = 0; t < TILE_T; t++) {
            out[2 * j][t] = hsum_ps(_mm512_castps512_ps256(facc[j][t])) + sm[t];
            out[2 * j + 1][t] =
                hsum_ps(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(facc[j][t]), 1))) +
                sm[4 + t];
        }
    }
}

GEMM_KP_TILES(tile512)
#define N_ST (2 * TILE_T + 1)
#else
/* The AVX2 tile: 2 NP rows one after the other against TILE_T tokens, the
 * integer lanes as gemm_kq6.c's AVX2 tile (gemm_kp_lanes256: 3 multiply
 * instructions per 64 values where vec_dot takes 4), the FMA with y.d *
 * d_w per super-block; the mins' integers of the 4 tokens in the 4 int32
 * lanes of one 128-bit register (four madd of the row's mins pairs against
 * the tokens' bsum pairs), one FMA with -y.d * dmin_w: the 512-bit tile's
 * steps, a row at a time. Float state: st[4 r + t], the summs at st[16 + r]. */
static inline __attribute__((always_inline)) void tile256(int NP, const uint8_t *const wp[2],
                                                         const block_q8_K *const y[TILE_T], const uint8_t *tx,
                                                         int64_t i0, int64_t i1, int64_t nbl, __m256 *st,
                                                         float out[4][TILE_T])
{
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
                facc[t] = _mm256_fmadd_ps(_mm256_set1_ps(dw * y[t][i].d), _mm256_cvtepi32_ps(acc[t]), facc[t]);
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
            out[r][t] = hsum_ps(facc[t]) + sm[t];
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
