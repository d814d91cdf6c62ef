/* The Q4_K gemv-order integer GEMM (see gemm_kq4v.h), on the driver the
 * K-quant GEMMs share (gemm_kpanel.h); in AVX2 builds 16+ tokens go to
 * gemm_tlanes.c's form of the same order, and the panel tile below is the
 * 512-bit one or, on AVX2, tile256 (a row at a time).
 *
 * A row's super-block is unpacked once per call into a panel, rows in
 * pairs, as gemm_kq5.c lays it out less the high bits: per chunk pair q
 * (elements 64q..64q+63: the low and high nibbles of qs[32q..32q+31]) the
 * value bytes 0..15 of both rows (gemm_kp_store_values), the scale pairs (sc[2q],
 * sc[2q + 1]) and the mins pairs. gemm_kp_lanes gives each (row, token)
 * 8 exact int32 lanes of scale-weighted sums; the gemv order wants their
 * total, one integer per super-block, so the lanes of 2 row pairs x 4
 * tokens are added across in three steps (unpack + add twice within
 * 128-bit lanes, then one 128-bit shuffle pair + add) into one vector
 * [pair 0: row A tokens 0-3, row B tokens 0-3 | pair 1: the same]. The
 * mins' integers come in the same lane order (gemm_kq5.c's vpdpwssd of the
 * mins pairs against the tokens' bsum pairs). Then per super-block one
 * convert and one FMA with d_w * y.d for all 16 outputs and the same for
 * the mins with dmin_w * y.d: the reference's two chains, and at the end
 * acc - acc_min. */
#include "kernels/gemm_kq4v.h"

#include <string.h>

#include "kernels/gemm_tlanes.h"

#include "gguf/tensor.h"
#include "kernels/gemm_kpanel.h"
#include "kernels/quant_internal.h"

bool gemm_kq4v_applies(const gguf_tensor *w, int n_tok)
{
#ifdef GEMM_KQ4V
    return w->type == TENSOR_TYPE_Q4_K && n_tok >= GEMM_KQ4V_MIN_TOK;
#else
    (void)w;
    (void)n_tok;
    return false;
#endif
}

#ifdef GEMM_KQ4V
#define TILE_T GEMM_KP_TILE_T
/* Panel bytes per row pair and super-block: 4 chunk pairs of 2 x 64 value
 * bytes; 4 of 2 x 8 int16 scale pairs; 4 mins pairs of 2 x 4 int16 pairs;
 * [row A x 4 | row B x 4] float d_w, the same for dmin_w. */
#define PAIR_SB 960
#define OFF_MIN 768
#define OFF_DW 896
#define OFF_DM 928
/* Token bytes per tile and super-block: gemm_kp_prep_mins' bsum pairs,
 * then the 4 tokens' y.d; for the AVX2 tile the tokens' values before them
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
    const block_q4_K *x = row;
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    for (int64_t i = 0; i < nbl; i++, p += PAIR_SB) {
        /* the weights come from memory once per call, rows one after the
         * other: the bytes 2 KB on (this row's or the next) on their way */
        for (int l = 0; l < 144; l += 64)
            _mm_prefetch((const char *)(x + i) + 2048 + l, _MM_HINT_T0);
        for (int q = 0; q < 4; q++) {
            const __m256i q4 = _mm256_loadu_si256((const __m256i *)(x[i].qs + 32 * q));
            gemm_kp_store_values(p + 128 * q, h, _mm256_and_si256(q4, m4),
                                 _mm256_and_si256(_mm256_srli_epi16(q4, 4), m4));
        }
        gemm_kp_write_scales_mins(x[i].scales, p, OFF_MIN, h);
        _mm_storeu_ps((float *)(void *)(p + OFF_DW + 16 * h), _mm_set1_ps(fp16_to_f32(x[i].d)));
        _mm_storeu_ps((float *)(void *)(p + OFF_DM + 16 * h), _mm_set1_ps(fp16_to_f32(x[i].dmin)));
    }
}

static void prep_tokens(const block_q8_K *const y[TILE_T], int64_t nbl, uint8_t *tx)
{
#ifndef GEMM_KPANEL_512
    gemm_kp_prep_values(y, nbl, tx, TX_SB);
#endif
    gemm_kp_prep_mins(y, nbl, tx + TX_MINS, TX_SB, 1.0f);
}

#ifdef GEMM_KPANEL_512

/* The 4 tokens' lanes of one row pair (l[t]: row A in lanes 0-7, B in
 * 8-15) added across within each 128-bit lane: lane 4c + t holds token t's
 * sum of lanes 4c..4c+3. */
static inline __m512i sum4(const __m512i l[TILE_T])
{
    const __m512i x01 = _mm512_add_epi32(_mm512_unpacklo_epi32(l[0], l[1]), _mm512_unpackhi_epi32(l[0], l[1]));
    const __m512i x23 = _mm512_add_epi32(_mm512_unpacklo_epi32(l[2], l[3]), _mm512_unpackhi_epi32(l[2], l[3]));
    return _mm512_add_epi32(_mm512_unpacklo_epi64(x01, x23), _mm512_unpackhi_epi64(x01, x23));
}

static inline __m512 pair_floats(const uint8_t *p0, const uint8_t *p1, int off)
{
    return _mm512_insertf32x8(_mm512_castps256_ps512(_mm256_loadu_ps((const float *)(const void *)(p0 + off))),
                              _mm256_loadu_ps((const float *)(const void *)(p1 + off)), 1);
}

/* NP row pairs (wp: their panels; with one, its lanes fill both halves)
 * against TILE_T tokens, super-blocks [i0, i1): the two chains go on from
 * st (zero when i0 is 0) and back to st, or, when i1 is nbl, the outputs to
 * o[token * os + row]. Always inlined with a constant NP. */
static inline __attribute__((always_inline)) void tile512(int NP, const uint8_t *const wp[2],
                                                          const block_q8_K *const y[TILE_T],
                                                          const uint8_t *tx, const float *ydr, int64_t i0, int64_t i1,
                                                          int64_t nbl, __m512 *st, float *o, int64_t os)
{
    (void)ydr; /* the prep data holds the tokens' d (with their mins sums) */
    __m512 acc = i0 == 0 ? _mm512_setzero_ps() : st[0];
    __m512 accm = i0 == 0 ? _mm512_setzero_ps() : st[1];
    const uint8_t *w1 = wp[NP - 1];
    for (int64_t i = i0; i < i1; i++) {
        __m512i lanes[2][TILE_T];
        gemm_kp_lanes(NP, wp, PAIR_SB, y, i, lanes);
        const __m512i s0 = sum4(lanes[0]), s1 = NP > 1 ? sum4(lanes[NP - 1]) : s0;
        /* [pair 0 A | pair 0 B | pair 1 A | pair 1 B], tokens 0-3 in each */
        const __m512i isum = _mm512_add_epi32(_mm512_shuffle_i32x4(s0, s1, _MM_SHUFFLE(2, 0, 2, 0)),
                                              _mm512_shuffle_i32x4(s0, s1, _MM_SHUFFLE(3, 1, 3, 1)));
        const uint8_t *xi = tx + i * TX_SB, *b0 = wp[0] + i * PAIR_SB, *b1 = w1 + i * PAIR_SB;
        const __m256i m0 = gemm_kp_mins_pair(b0 + OFF_MIN, xi);
        const __m512i imin = _mm512_inserti64x4(_mm512_castsi256_si512(m0), NP > 1 ? gemm_kp_mins_pair(b1 + OFF_MIN, xi) : m0, 1);
        const __m512 yd = _mm512_broadcast_f32x4(_mm_loadu_ps((const float *)(const void *)(xi + GEMM_KP_OFF_YD)));
        /* d_w * y.d and dmin_w * y.d, as the gemv's products */
        acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum), _mm512_mul_ps(pair_floats(b0, b1, OFF_DW), yd), acc);
        accm = _mm512_fmadd_ps(_mm512_cvtepi32_ps(imin), _mm512_mul_ps(pair_floats(b0, b1, OFF_DM), yd), accm);
    }
    if (i1 < nbl) {
        st[0] = acc;
        st[1] = accm;
        return;
    }
    float f[16];
    _mm512_storeu_ps(f, _mm512_sub_ps(acc, accm));
#pragma GCC unroll 2
    for (int j = 0; j < NP; j++)
#pragma GCC unroll 4
        for (int t = 0; t < TILE_T; t++) {
            o[t * os + 2 * j] = f[8 * j + t];
            o[t * os + 2 * j + 1] = f[8 * j + 4 + t];
        }
}

GEMM_KP_TILES(tile512)
#define N_ST 2
#else
/* The 4 tokens' lanes of one row (l[t]: 8 int32 lanes) added across:
 * lane t holds token t's total. */
static inline __m128i sum4_256(const __m256i l[TILE_T])
{
    const __m256i x01 = _mm256_add_epi32(_mm256_unpacklo_epi32(l[0], l[1]), _mm256_unpackhi_epi32(l[0], l[1]));
    const __m256i x23 = _mm256_add_epi32(_mm256_unpacklo_epi32(l[2], l[3]), _mm256_unpackhi_epi32(l[2], l[3]));
    const __m256i s = _mm256_add_epi32(_mm256_unpacklo_epi64(x01, x23), _mm256_unpackhi_epi64(x01, x23));
    return _mm_add_epi32(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
}

/* The AVX2 tile: 2 NP rows one after the other against TILE_T tokens. A
 * row's integer lanes as gemm_kq5.c's AVX2 tile (gemm_kp_lanes256), added
 * across into one integer per token (sum4_256), the mins' integers of the
 * 4 tokens in the 4 lanes of one 128-bit register (gemm_kq5.c's); then the
 * gemv's two chains, 4 tokens a vector: one FMA with d_w * y.d, one with
 * dmin_w * y.d, and at the end acc - acc_min. Float state: st[2 r] and
 * st[2 r + 1] (their low halves). */
static inline __attribute__((always_inline)) void tile256(int NP, const uint8_t *const wp[2],
                                                         const block_q8_K *const y[TILE_T], const uint8_t *tx,
                                                         const float *ydr, int64_t i0, int64_t i1, int64_t nbl,
                                                         __m256 *st, float *o, int64_t os)
{
    (void)ydr;
    (void)y;
#pragma GCC unroll 1
    for (int r = 0; r < 2 * NP; r++) {
        const uint8_t *pw = wp[r / 2] + 64 * (r % 2);
        const uint8_t *ps = wp[r / 2] + 32 * (r % 2), *pm = wp[r / 2] + 16 * (r % 2);
        __m128 acc = i0 == 0 ? _mm_setzero_ps() : _mm256_castps256_ps128(st[2 * r]);
        __m128 accm = i0 == 0 ? _mm_setzero_ps() : _mm256_castps256_ps128(st[2 * r + 1]);
        for (int64_t i = i0; i < i1; i++) {
            const uint8_t *pb = pw + i * PAIR_SB, *sb = ps + i * PAIR_SB, *mb = pm + i * PAIR_SB;
            const uint8_t *xt = tx + i * TX_SB, *xi = xt + TX_MINS;
            __m256i lanes[TILE_T];
            gemm_kp_sb256(pb, NULL, sb + GEMM_KP_OFF_SC, xt, lanes);
            const __m128i isum = sum4_256(lanes);
            /* the mins: lane t = sum_p min pair p . token t's bsum pair p */
            __m128i imin = _mm_madd_epi16(_mm_loadu_si128((const __m128i *)(const void *)(mb + OFF_MIN)),
                                          _mm_loadu_si128((const __m128i *)(const void *)xi));
#pragma GCC unroll 3
            for (int p = 1; p < 4; p++)
                imin = _mm_add_epi32(
                    imin, _mm_madd_epi16(_mm_loadu_si128((const __m128i *)(const void *)(mb + OFF_MIN + 32 * p)),
                                         _mm_loadu_si128((const __m128i *)(const void *)(xi + 16 * p))));
            const __m128 yd = _mm_loadu_ps((const float *)(const void *)(xi + GEMM_KP_OFF_YD));
            /* d_w * y.d and dmin_w * y.d, as the gemv's products */
            acc = _mm_fmadd_ps(_mm_cvtepi32_ps(isum),
                               _mm_mul_ps(_mm_loadu_ps((const float *)(const void *)(mb + OFF_DW)), yd), acc);
            accm = _mm_fmadd_ps(_mm_cvtepi32_ps(imin),
                                _mm_mul_ps(_mm_loadu_ps((const float *)(const void *)(mb + OFF_DM)), yd), accm);
        }
        if (i1 < nbl) {
            st[2 * r] = _mm256_castps128_ps256(acc);
            st[2 * r + 1] = _mm256_castps128_ps256(accm);
            continue;
        }
        float f[4];
        _mm_storeu_ps(f, _mm_sub_ps(acc, accm));
#pragma GCC unroll 4
        for (int t = 0; t < TILE_T; t++)
            o[t * os + r] = f[t];
    }
}

GEMM_KP_TILES(tile256)
#define N_ST 8 /* 2 per row */
#endif

static const struct gemm_kp kq4v = {
    .pair_sb = PAIR_SB,
    .tx_bytes = TX_SB,
    .n_st = N_ST,
    .write_row = write_pair_row,
    .prep = prep_tokens,
    .tile2 = tile_pairs2,
    .tile1 = tile_pairs1,
};
#endif

bool gemm_kq4v_rows(int64_t n, const void *w, size_t rs, int64_t r0, int64_t r1, const void *act,
                    size_t act_stride, int n_tok, float *out, int64_t out_stride)
{
    if (r0 >= r1 || n_tok < 1)
        return true;
#ifdef GEMM_KQ4V
#ifdef GEMM_TLANES
    if (n_tok >= GEMM_KQ4V_TLANES_MIN_TOK &&
        gemm_tlanes_q4_K_gemv(w, n / QK_K, rs, r0, r1, act, act_stride, n_tok, out, out_stride))
        return true;
#endif
    return gemm_kp_rows(&kq4v, n / QK_K, w, rs, r0, r1, act, act_stride, n_tok, out, out_stride);
#else
    (void)n;
    (void)w;
    (void)rs;
    (void)act;
    (void)act_stride;
    (void)out;
    (void)out_stride;
    return false;
#endif
}
