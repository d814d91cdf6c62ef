/* The Q6_K integer GEMM (see gemm_kq6.h); its driver and integer lanes
 * are shared with gemm_kq5.c (gemm_kpanel.h).
 *
 * A row's super-block is unpacked once per call into a panel, rows in
 * pairs: per chunk pair q (elements 64q..64q+63, the reference's 32-value
 * chunks 2q and 2q + 1) 64 bytes of chunk 2q (row A's 32, row B's 32), then
 * 64 of chunk 2q + 1, the 6-bit values 0..63 in their order
 * (gemm_kp_store_values). Each chunk of a token, broadcast to both
 * halves, goes through vpdpbusd with the weights as the unsigned operand
 * (the reference's own split: q unsigned times y, the -32 taken apart
 * through the bsums), so int32 lane j of the result is the 4-value sum
 * over elements 4j..4j+3 of that chunk: lanes 0-7 row A's lanes k, 8-15 row
 * B's, before their scales. Such a sum fits 16 bits (|.| <= 4 * 63 * 128),
 * so a shift and a word blend put the two chunks side by side as int16
 * pairs ([A lane k: chunk 2q, 2q + 1 | B lane k: ...]) and one vpdpwssd
 * against the pairs of their scales (int16 pairs in the panel) adds both,
 * scaled, to the lane: 3 multiply instructions per row pair, token and 128
 * values where the few-token kernels' maddubs + madd take 4.
 * After the four chunk pairs one vpdpwssd of -32 * sc against the token's
 * bsums takes the offset in the reference's grouping (lane k: sub-blocks
 * 2k, 2k + 1), then one convert and one FMA with d_act * d_w per half, the
 * reference's float step; hsum_float_8 per half at the end. A tile is 2 row
 * pairs x 4 tokens: 8 integer and 8 float accumulators. */
#include "kernels/gemm_kq6.h"

#include "gguf/tensor.h"
#include "kernels/gemm_kpanel.h"
#include "kernels/packed_q6_K.h"
#include "kernels/quant_internal.h"

bool gemm_kq6_applies(const gguf_tensor *w, int n_tok)
{
#ifdef GEMM_KQ6
    return w->type == TENSOR_TYPE_Q6_K && n_tok >= GEMM_KQ6_MIN_TOK;
#else
    (void)w;
    (void)n_tok;
    return false;
#endif
}

#ifdef GEMM_KQ6
#define TILE_T GEMM_KP_TILE_T
/* Panel bytes per row pair and super-block: 4 chunk pairs of 2 x 64 value
 * bytes, 4 of 2 x 8 int16 scale pairs, 2 x 16 int16 offset scales (-32 sc),
 * 2 x 8 float d_w. */
#define PAIR_SB (8 * 64 + 4 * 64 + 64 + 64)
#define OFF_OFF 768
#define OFF_DW 832

/* Row h (0, 1) of the pair at p: its nbl super-blocks as PAIR_SB blocks;
 * enc: the row is packed_q6_K.h's re-encoding. */
static inline __attribute__((always_inline)) void write_pair_any(const void *row, int64_t nbl, uint8_t *p, int h,
                                                                 bool enc)
{
    const block_q6_K *x = row;
    for (int64_t i = 0; i < nbl; i++, p += PAIR_SB) {
        /* the weights come from memory once per call, rows one after the
         * other: the bytes 2 KB on (this row's or the next) on their way */
        for (int l = 0; l < 256; l += 64)
            _mm_prefetch((const char *)(x + i) + 2048 + l, _MM_HINT_T0);
        for (int j = 0; j < 2; j++) {
            __m256i q[4];
            for (int k = 0; k < 4; k++)
                q[k] = q6_K_chunk((const uint8_t *)&x[i], j, k, enc);
            /* chunks 4j + m: pairs (4j, 4j + 1), (4j + 2, 4j + 3) */
            gemm_kp_store_values(p + 128 * (2 * j), h, q[0], q[1]);
            gemm_kp_store_values(p + 128 * (2 * j + 1), h, q[2], q[3]);
        }
        const __m128i s8 = _mm_loadu_si128((const __m128i *)x[i].scales);
        const __m256i s16 = _mm256_cvtepi8_epi16(s8);
        /* chunk pair (2q, 2q + 1): int16 pair k = (scale of lane k in chunk
         * 2q, in chunk 2q + 1): sc[4q], sc[4q + 2] for lanes 0-3, sc[4q + 1],
         * sc[4q + 3] for 4-7 */
        for (int q = 0; q < 4; q++) {
            const __m128i idx = _mm_add_epi8(_mm_setr_epi8(0, 2, 0, 2, 0, 2, 0, 2, 1, 3, 1, 3, 1, 3, 1, 3),
                                             _mm_set1_epi8((char)(4 * q)));
            _mm256_storeu_si256((__m256i *)(p + GEMM_KP_OFF_SC + 64 * q + 32 * h),
                                _mm256_cvtepi8_epi16(_mm_shuffle_epi8(s8, idx)));
        }
        _mm256_storeu_si256((__m256i *)(p + OFF_OFF + 32 * h), _mm256_mullo_epi16(s16, _mm256_set1_epi16(-32)));
        _mm256_storeu_ps((float *)(void *)(p + OFF_DW + 32 * h), _mm256_set1_ps(fp16_to_f32(x[i].d)));
    }
}

static void write_pair_row(const void *row, int64_t nbl, uint8_t *p, int h)
{
    write_pair_any(row, nbl, p, h, false);
}

#ifdef PACKED_Q6_K
static void write_pair_row_x(const void *row, int64_t nbl, uint8_t *p, int h)
{
    write_pair_any(row, nbl, p, h, true);
}
#endif

#ifdef GEMM_KPANEL_512
/* NP row pairs (wp: their panels) against TILE_T tokens (y: their Q8_K
 * rows), super-blocks [i0, i1): the float lanes go on from st (zero when
 * i0 is 0) and back to st, or, when i1 is nbl, their sums to o[token * os + row].
 * Lanes 0-7 of an accumulator: row 2j's lanes k, 8-15: row 2j + 1's. Always
 * inlined with a constant NP. */
static inline __attribute__((always_inline)) void tile512(int NP, const uint8_t *const wp[2],
                                                         const block_q8_K *const y[TILE_T], const float *yd,
                                                         int64_t i0, int64_t i1, int64_t nbl, __m512 *st, float *o,
                                                         int64_t os)
{
    __m512 facc[2][TILE_T];
#pragma GCC unroll 2
    for (int j = 0; j < NP; j++)
#pragma GCC unroll 8
        for (int t = 0; t < TILE_T; t++)
            facc[j][t] = i0 == 0 ? _mm512_setzero_ps() : st[j * TILE_T + t];
    for (int64_t i = i0; i < i1; i++) {
        __m512i acc[2][TILE_T];
        gemm_kp_lanes(NP, wp, PAIR_SB, y, i, acc);
#pragma GCC unroll 2
        for (int j = 0; j < NP; j++) {
            const __m512i off = _mm512_loadu_si512(wp[j] + i * PAIR_SB + OFF_OFF);
            const __m512 dwv = _mm512_loadu_ps(wp[j] + i * PAIR_SB + OFF_DW);
#pragma GCC unroll 8
            for (int t = 0; t < TILE_T; t++) {
                const __m512i bs = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)y[t][i].bsums));
                /* d_act * d_w, as vec_dot's scalar product */
                facc[j][t] = _mm512_fmadd_ps(_mm512_mul_ps(dwv, _mm512_set1_ps(yd[4 * i + t])),
                                             _mm512_cvtepi32_ps(_mm512_dpwssd_epi32(acc[j][t], off, bs)), facc[j][t]);
            }
        }
    }
    if (i1 < nbl) {
#pragma GCC unroll 2
        for (int j = 0; j < NP; j++)
#pragma GCC unroll 8
            for (int t = 0; t < TILE_T; t++)
                st[j * TILE_T + t] = facc[j][t];
        return;
    }
    /* the outputs' hsum_float_8: f[2t + j] rows 2j, 2j + 1 for token t, so
     * that lane 4r + t is row r's for token t; token-major, quarter t to o */
    __m512 f[8];
#pragma GCC unroll 8
    for (int k = 0; k < 8; k++)
        f[k] = k % 2 < NP ? facc[k % 2][k / 2] : _mm512_setzero_ps();
    store4x4_ps(transpose4x4_ps(hsum16_ps(f)), o, os);
}

/* the driver's tile signature (kq6 has no token prep data) */
#define TILE6(NP, wp, y, tx, yd, i0, i1, nbl, st, o, os) ((void)(tx), tile512(NP, wp, y, yd, i0, i1, nbl, st, o, os))
GEMM_KP_TILES(TILE6)

static const struct gemm_kp kq6 = {
    .pair_sb = PAIR_SB,
    .n_st = 2 * TILE_T,
    .write_row = write_pair_row,
    .tile2 = tile_pairs2,
    .tile1 = tile_pairs1,
    .side = GEMM_KP_SIDE_D, /* its tokens' bytes and bsums come from the rows, d from the driver */
};
#else
/* The AVX2 tile: gemm_kp_tile256 (gemm_kpanel.h's AVX2 value order, the
 * tokens' values in the same order, made once per call by
 * gemm_kp_prep_values): per row and token 8 int32 lanes, the reference's
 * lane k, at 3 multiply instructions per 64 values where vec_dot takes 4;
 * the offset as one madd of the bsums against -32 sc, then vec_dot's
 * convert and FMA with y.d * d_w; hsum_float_8 at the end. */
#define tile256(NP, wp, y, tx, yd, i0, i1, nbl, st, o, os)                                                           \
    ((void)(y),                                                                                                      \
     gemm_kp_tile256(NP, wp, tx, yd, i0, i1, nbl, st, o, os, PAIR_SB, GEMM_KP_OFF_SC, 0, OFF_OFF, OFF_DW, 1.0f))

GEMM_KP_TILES(tile256)

/* the driver's callbacks, with the file's rows or re-encoded ones */
#define KQ6_256(WRITE)                                                                                                \
    {                                                                                                                  \
        .pair_sb = PAIR_SB, .tx_bytes = GEMM_KP_TX_VALUES, .n_st = 4 * TILE_T, .write_row = WRITE,                     \
        .prep = gemm_kp_prep_tokens, .tile2 = tile_pairs2, .tile1 = tile_pairs1, .side = GEMM_KP_SIDE_D_BSUMS,         \
    }
static const struct gemm_kp kq6 = KQ6_256(write_pair_row);
#ifdef PACKED_Q6_K
static const struct gemm_kp kq6x = KQ6_256(write_pair_row_x);

bool gemm_kq6_encoded_rows(int64_t n, const void *w, size_t rs, int64_t r0, int64_t r1, const void *act,
                           size_t act_stride, int n_tok, float *out, int64_t out_stride)
{
    return gemm_kp_rows(&kq6x, n / QK_K, w, rs, r0, r1, act, act_stride, n_tok, out, out_stride);
}
#endif
#endif
#endif

void gemm_kq6_rows(int64_t n, const void *w, size_t rs, int64_t r0, int64_t r1, const void *act, size_t act_stride,
                   int n_tok, float *out, int64_t out_stride)
{
    if (r0 >= r1 || n_tok < 1)
        return;
#ifdef GEMM_KQ6
    if (gemm_kp_rows(&kq6, n / QK_K, w, rs, r0, r1, act, act_stride, n_tok, out, out_stride))
        return;
#endif
    gemm_kq_dot_rows(TENSOR_TYPE_Q6_K, n, w, rs, r0, r1, act, act_stride, n_tok, out, out_stride);
}
