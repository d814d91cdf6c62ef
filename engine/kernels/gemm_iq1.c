/* IQ1_M as an integer GEMM (see gemm_iq1.h, gemm_iq.h).
 *
 * The reference (ggml_vec_dot_iq1_m_q8_K's AVX2 branch; quant_iq1.c's
 * dot_iq1_m_avx2) keeps per super-block two int32 x 8 vectors: sumi1, lane
 * k the sum over the 8 sub-blocks of (scale of the 16) * (grid . q over the
 * sub-block's elements 4k..4k+3), and sumi2 the same with the group's delta
 * sign (+-1) in place of the grid values; then d = y.d * fp16(d_w),
 * accum1 = fma(d, cvt(sumi1), accum1), accum2 = fma(d, cvt(sumi2), accum2),
 * and at the end hsum_float_8(accum1) + 1/8 * hsum_float_8(accum2). The
 * lanes are exact integers, formed here in other ways; the float steps of
 * each output are those.
 *
 * sumi1: a grid value (-1, 0, +1) times its scale (1..15) fits a byte, so
 * the panel holds the products and vpdpbusd accumulates the lanes as they
 * are (no per-sub-block scale multiply as in gemm_iq.c): a token's bytes
 * enter as q + 128 (unsigned), and 128 * (the lane's weight sum) is taken
 * off before the float step.
 * sumi2: a delta sign covers 8 weights, so lane k of a sub-block is
 * scale * sign * (q[4k] + ... + q[4k+3]). The tokens' 4-sums are made once
 * per call (int16), and vpdpwssd of (scale * sign) int16 pairs of two
 * sub-blocks against the two sub-blocks' 4-sums forms the lanes: 4
 * instructions per super-block where the bytes would take 8.
 *
 * Layout as gemm_iq.c's AVX-512 panel: rows in pairs (row 2j in dword
 * lanes 0-7 of a zmm, row 2j + 1 in 8-15), a token's 32 bytes broadcast to
 * both halves; a tile is 2 row pairs x 4 tokens, a super-block's grid lanes
 * then its delta lanes in the same 8 accumulators, so that the 16 float
 * accumulators can stay in registers (2 x 8 tokens spilled them: 10 %
 * slower).
 *
 * Activation bytes are taken as -127..127 (what quantize_row_q8_K writes):
 * a -128 would differ from the reference's sign_epi8, which leaves -(-128)
 * at -128. */
#include "kernels/gemm_iq1.h"

#include <string.h>

#include "kernels/kernel_scratch.h"
#include "kernels/quant_internal.h"
#include "kernels/quant_iq1.h"

#if defined(QUANT_HAVE_AVX2) && defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VNNI__)
#define GEMM_IQ1 1
#endif

bool gemm_iq1_supports(enum tensor_type type)
{
#ifdef GEMM_IQ1
    return type == TENSOR_TYPE_IQ1_M;
#else
    (void)type;
    return false;
#endif
}

#ifdef GEMM_IQ1
#define TILE_T 4
/* Scratch for the tokens' bytes a pass may hold; more go in several passes. */
#define ACT_BYTES (6 << 20)
/* Panel bytes: rows times this stay in L2 beside a block of tokens. */
#define PANEL_BYTES (192 * 1024)
/* Panel bytes per row pair and super-block: 8 sub-blocks of 2 x 32 weight
 * bytes (grid value times scale) from 0, 4 sub-block pairs of 2 x 16 int16
 * delta weights (scale times sign) from P_D, 2 x 8 int32 offset
 * corrections (-128 x the lanes' weight sums: the grid lanes' start) from
 * P_C. */
#define P_D 512
#define P_C 768
#define PAIR_SB 832
/* Token bytes per super-block: 256 bytes q + 128, then from T_S4 4 x 16
 * int16 4-sums (sub-block pair m: lane k's sums of sub-blocks 2m, 2m + 1). */
#define T_S4 256
#define TOK_SB 384

/* Row h (0, 1) of the pair at p: its super-blocks as PAIR_SB blocks. */
static void write_pair_row(const block_iq1_m *x, int64_t nbl, uint8_t *p, int h, float *dw)
{
    const __m256i ones8 = _mm256_set1_epi8(1), ones16 = _mm256_set1_epi16(1);
    for (int64_t i = 0; i < nbl; i++, p += PAIR_SB) {
        uint16_t sc[4];
        memcpy(sc, x[i].scales, 8);
        dw[i] = fp16_to_f32(quant_iq1m_d(&x[i]));
        __m256i corr = _mm256_setzero_si256();
        for (int m = 0; m < QK_K / 64; m++) {
            /* pk[l]: group l's delta weight (scale times sign) of sub-block
             * 2m in the low int16, of 2m + 1 in the high */
            uint32_t pk[4] = {0, 0, 0, 0};
            for (int e = 0; e < 2; e++) {
                const int b = 2 * m + e;
                /* the scales of elements 0-15 and 16-31 (quant_iq1.h) */
                const int s0 = 2 * (sc[m] >> (6 * e) & 7) + 1, s1 = 2 * (sc[m] >> (6 * e + 3) & 7) + 1;
                const uint8_t *qs = x[i].qs + 4 * b;
                const unsigned q0 = x[i].qh[2 * b], q1 = x[i].qh[2 * b + 1];
                const unsigned nib[4] = {q0 & 15, q0 >> 4, q1 & 15, q1 >> 4};
                const __m256i g = _mm256_setr_epi64x((long long)quant_iq1s_grid[qs[0] | (nib[0] & 7) << 8],
                                                     (long long)quant_iq1s_grid[qs[1] | (nib[1] & 7) << 8],
                                                     (long long)quant_iq1s_grid[qs[2] | (nib[2] & 7) << 8],
                                                     (long long)quant_iq1s_grid[qs[3] | (nib[3] & 7) << 8]);
                const __m256i gs =
                    _mm256_sign_epi8(_mm256_setr_m128i(_mm_set1_epi8((char)s0), _mm_set1_epi8((char)s1)), g);
                _mm256_storeu_si256((__m256i *)(p + 64 * b + 32 * h), gs);
                /* the lanes' weight sums (exact: 1 * w pairs, then pairs) */
                corr = _mm256_add_epi32(corr, _mm256_madd_epi16(_mm256_maddubs_epi16(ones8, gs), ones16));
                for (int l = 0; l < 4; l++) {
                    const int neg = -(int)(nib[l] >> 3);
                    pk[l] |= (uint32_t)(uint16_t)(((l < 2 ? s0 : s1) ^ neg) - neg) << 16 * e;
                }
            }
            /* int32 lane k (elements 4k..4k+3) is in group k / 2 */
            const __m128i v = _mm_loadu_si128((const __m128i *)pk);
            _mm256_storeu_si256((__m256i *)(p + P_D + 64 * m + 32 * h),
                                _mm256_setr_m128i(_mm_unpacklo_epi32(v, v), _mm_unpackhi_epi32(v, v)));
        }
        /* minus 128 * the weight sums: the accumulators' start */
        _mm256_storeu_si256((__m256i *)(p + P_C + 32 * h),
                            _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_slli_epi32(corr, 7)));
    }
}

/* A token's bytes plus 128 and its 4-sums, TOK_SB bytes per super-block. */
static void prep_token(const block_q8_K *y, int64_t nbl, uint8_t *o)
{
    const __m512i m80 = _mm512_set1_epi8((char)0x80);
    const __m256i ones8 = _mm256_set1_epi8(1), ones16 = _mm256_set1_epi16(1),
                  lo16 = _mm256_set1_epi32(0xffff);
    for (int64_t i = 0; i < nbl; i++, o += TOK_SB) {
        for (int s = 0; s < QK_K / 64; s++)
            _mm512_storeu_si512(o + 64 * s, _mm512_xor_si512(_mm512_loadu_si512(y[i].qs + 64 * s), m80));
        for (int m = 0; m < QK_K / 64; m++) {
            /* |4-sum| <= 508: int16 */
            const __m256i a = _mm256_madd_epi16(
                _mm256_maddubs_epi16(ones8, _mm256_loadu_si256((const __m256i *)(y[i].qs + 64 * m))), ones16);
            const __m256i b = _mm256_madd_epi16(
                _mm256_maddubs_epi16(ones8, _mm256_loadu_si256((const __m256i *)(y[i].qs + 64 * m + 32))),
                ones16);
            _mm256_storeu_si256((__m256i *)(o + T_S4 + 32 * m),
                                _mm256_or_si256(_mm256_and_si256(a, lo16), _mm256_slli_epi32(b, 16)));
        }
    }
}

/* d_w of row 2j in lanes 0-7, of row 2j + 1 in 8-15 */
static inline __m512 pair_d(float d0, float d1)
{
    return _mm512_castpd_ps(
        _mm512_insertf64x4(_mm512_castps_pd(_mm512_set1_ps(d0)), _mm256_castps_pd(_mm256_set1_ps(d1)), 1));
}

/* A super-block's grid lanes (vpdpbusd, 8 sub-blocks) or delta lanes
 * (vpdpwssd, 4 sub-block pairs) of 2 row pairs (w0, w1: their panel blocks
 * at the part) against 4 tokens st bytes apart from p0 (their prepared
 * bytes at the part): one asm loop, as gemm_iq.c's (GCC 12 copied each
 * accumulator after its intrinsic and spilled some). */
// clang-format off
#define IQ1_STEP(op, addr, t)                                                                                 \
    "vbroadcasti64x4 " addr ", %%zmm30\n\t"                                                                    \
    op " %%zmm28, %%zmm30, %[c0" #t "]\n\t"                                                                    \
    op " %%zmm29, %%zmm30, %[c1" #t "]\n\t"
#define IQ1_ZERO(t) "vpxord %[c0" #t "], %[c0" #t "], %[c0" #t "]\n\tvpxord %[c1" #t "], %[c1" #t "], %[c1" #t "]\n\t"
#define IQ1_LOAD(t) "vmovdqu64 (%[k0]), %[c0" #t "]\n\tvmovdqu64 (%[k1]), %[c1" #t "]\n\t"
#define IQ1_SB_2X4(name, op, init, steps)                                                                     \
    static inline __attribute__((always_inline)) void name(const uint8_t *w0, const uint8_t *w1,               \
                                                           const uint8_t *k0, const uint8_t *k1,               \
                                                           const uint8_t *p0, size_t st, __m512i acc[2][TILE_T]) \
    {                                                                                                         \
        const uint8_t *p3 = p0 + 3 * st;                                                                      \
        int cnt;                                                                                              \
        __asm__(init(0) init(1) init(2) init(3)                                                               \
                "mov $" #steps ", %[cnt]\n"                                                                   \
                "1:\n\t"                                                                                       \
                "vmovdqu64 (%[w0]), %%zmm28\n\t"                                                               \
                "vmovdqu64 (%[w1]), %%zmm29\n\t"                                                               \
                IQ1_STEP(op, "(%[p0])", 0)                                                                    \
                IQ1_STEP(op, "(%[p0],%[st],1)", 1)                                                            \
                IQ1_STEP(op, "(%[p0],%[st],2)", 2)                                                            \
                IQ1_STEP(op, "(%[p3])", 3)                                                                    \
                "add $64, %[w0]\n\t"                                                                           \
                "add $64, %[w1]\n\t"                                                                           \
                "add $32, %[p0]\n\t"                                                                           \
                "add $32, %[p3]\n\t"                                                                           \
                "dec %[cnt]\n\t"                                                                               \
                "jnz 1b"                                                                                      \
                : [c00] "=&v"(acc[0][0]), [c10] "=&v"(acc[1][0]), [c01] "=&v"(acc[0][1]),                     \
                  [c11] "=&v"(acc[1][1]), [c02] "=&v"(acc[0][2]), [c12] "=&v"(acc[1][2]),                     \
                  [c03] "=&v"(acc[0][3]), [c13] "=&v"(acc[1][3]),                                             \
                  [cnt] "=&r"(cnt), [w0] "+r"(w0), [w1] "+r"(w1), [p0] "+r"(p0), [p3] "+r"(p3)                 \
                : [st] "r"(st), [k0] "r"(k0), [k1] "r"(k1)                                                    \
                : "xmm28", "xmm29", "xmm30", "cc", "memory");                                                \
    }
// clang-format on
/* the grid lanes from their offset corrections (k0, k1), the delta lanes from zero */
IQ1_SB_2X4(grid_2x4, "vpdpbusd", IQ1_LOAD, 8)
IQ1_SB_2X4(delta_2x4, "vpdpwssd", IQ1_ZERO, 4)

/* NP row pairs (wp: their panel blocks, dw: the 2 * NP rows' d_w) against
 * NT tokens (a: their prepared bytes, y: their Q8_K rows for d_act):
 * out[token][row]. Always inlined with constant NP, NT. */
static inline __attribute__((always_inline)) void
tile512(int NP, int NT, const uint8_t *const wp[2], const float *const dw[4], const uint8_t *const a[TILE_T],
        const block_q8_K *const y[TILE_T], int64_t nbl, float out[TILE_T][4])
{
    __m512 f1[2][TILE_T], f2[2][TILE_T];
#pragma GCC unroll 2
    for (int j = 0; j < NP; j++)
#pragma GCC unroll 4
        for (int t = 0; t < NT; t++)
            f1[j][t] = f2[j][t] = _mm512_setzero_ps();
    /* the asm loops want the tokens evenly spaced */
    const size_t st = (size_t)(a[1] - a[0]);
    bool even = NP == 2 && NT == 4;
    for (int t = 2; t < NT; t++)
        even = even && a[t] == a[0] + (size_t)t * st;
    for (int64_t i = 0; i < nbl; i++) {
        __m512i acc[2][TILE_T], w[2];
        __m512 dwv[2];
#pragma GCC unroll 2
        for (int j = 0; j < NP; j++)
            dwv[j] = pair_d(dw[2 * j][i], dw[2 * j + 1][i]);
        if (even)
            grid_2x4(wp[0] + i * PAIR_SB, wp[1] + i * PAIR_SB, wp[0] + i * PAIR_SB + P_C,
                     wp[1] + i * PAIR_SB + P_C, a[0] + TOK_SB * i, st, acc);
        else {
#pragma GCC unroll 2
            for (int j = 0; j < NP; j++) {
                const __m512i start = _mm512_loadu_si512(wp[j] + i * PAIR_SB + P_C);
#pragma GCC unroll 4
                for (int t = 0; t < NT; t++)
                    acc[j][t] = start;
            }
            for (int b = 0; b < QK_K / 32; b++) {
#pragma GCC unroll 2
                for (int j = 0; j < NP; j++)
                    w[j] = _mm512_loadu_si512(wp[j] + i * PAIR_SB + 64 * b);
#pragma GCC unroll 4
                for (int t = 0; t < NT; t++) {
                    const __m512i at = _mm512_broadcast_i64x4(
                        _mm256_loadu_si256((const __m256i *)(a[t] + TOK_SB * i + 32 * b)));
#pragma GCC unroll 2
                    for (int j = 0; j < NP; j++)
                        acc[j][t] = _mm512_dpbusd_epi32(acc[j][t], at, w[j]);
                }
            }
        }
#pragma GCC unroll 2
        for (int j = 0; j < NP; j++)
#pragma GCC unroll 4
            for (int t = 0; t < NT; t++) { /* d = d_act * d_w, one product as vec_dot's */
                f1[j][t] = _mm512_fmadd_ps(_mm512_mul_ps(dwv[j], _mm512_set1_ps(y[t][i].d)),
                                           _mm512_cvtepi32_ps(acc[j][t]), f1[j][t]);
                acc[j][t] = _mm512_setzero_si512();
            }
        if (even)
            delta_2x4(wp[0] + i * PAIR_SB + P_D, wp[1] + i * PAIR_SB + P_D, NULL, NULL,
                      a[0] + TOK_SB * i + T_S4, st, acc);
        else
            for (int m = 0; m < QK_K / 64; m++) {
#pragma GCC unroll 2
                for (int j = 0; j < NP; j++)
                    w[j] = _mm512_loadu_si512(wp[j] + i * PAIR_SB + P_D + 64 * m);
#pragma GCC unroll 4
                for (int t = 0; t < NT; t++) {
                    const __m512i st = _mm512_broadcast_i64x4(
                        _mm256_loadu_si256((const __m256i *)(a[t] + TOK_SB * i + T_S4 + 32 * m)));
#pragma GCC unroll 2
                    for (int j = 0; j < NP; j++)
                        acc[j][t] = _mm512_dpwssd_epi32(acc[j][t], st, w[j]);
                }
            }
#pragma GCC unroll 2
        for (int j = 0; j < NP; j++)
#pragma GCC unroll 4
            for (int t = 0; t < NT; t++)
                f2[j][t] = _mm512_fmadd_ps(_mm512_mul_ps(dwv[j], _mm512_set1_ps(y[t][i].d)),
                                           _mm512_cvtepi32_ps(acc[j][t]), f2[j][t]);
    }
#pragma GCC unroll 2
    for (int j = 0; j < NP; j++)
#pragma GCC unroll 4
        for (int t = 0; t < NT; t++) {
            const __m256 a1 = _mm512_castps512_ps256(f1[j][t]), a2 = _mm512_castps512_ps256(f2[j][t]);
            const __m256 b1 = _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(f1[j][t]), 1));
            const __m256 b2 = _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(f2[j][t]), 1));
            out[t][2 * j] = hsum_ps(a1) + QUANT_IQ1_DELTA * hsum_ps(a2);
            out[t][2 * j + 1] = hsum_ps(b1) + QUANT_IQ1_DELTA * hsum_ps(b2);
        }
}

typedef void (*tile_fn)(const uint8_t *const wp[2], const float *const dw[4], const uint8_t *const a[TILE_T],
                        const block_q8_K *const y[TILE_T], int64_t nbl, float out[TILE_T][4]);
#define TILE_FN(np, nt)                                                                                      \
    static void tile_##np##_##nt(const uint8_t *const wp[2], const float *const dw[4],                       \
                                 const uint8_t *const a[TILE_T], const block_q8_K *const y[TILE_T],          \
                                 int64_t nbl, float out[TILE_T][4])                                          \
    {                                                                                                        \
        tile512(np, nt, wp, dw, a, y, nbl, out);                                                             \
    }
TILE_FN(1, 1)
TILE_FN(1, 2)
TILE_FN(1, 3)
TILE_FN(1, 4)
TILE_FN(2, 1)
TILE_FN(2, 2)
TILE_FN(2, 3)
TILE_FN(2, 4)
/* [row pairs - 1][tokens - 1] */
static const tile_fn tiles[2][TILE_T] = {
    {tile_1_1, tile_1_2, tile_1_3, tile_1_4},
    {tile_2_1, tile_2_2, tile_2_3, tile_2_4},
};

/* Rows [r0, r1) against tokens [0, n_tok), as gemm_iq.c's matmul512: in
 * passes of tokens whose bytes fit tc; per pass, panels of pr rows (in
 * pairs) written once, tokens in blocks that stay in L2, 4 rows x 4 tokens
 * a tile. */
static void matmul512(const uint8_t *wd, size_t rs, int64_t nbl, int64_t r0, int64_t r1, const uint8_t *act,
                      size_t act_stride, int n_tok, float *out, int64_t out_stride, uint8_t *panel, float *dw,
                      uint8_t *tok, int64_t pr, int tc)
{
    const size_t pair_bytes = (size_t)nbl * PAIR_SB, tok_bytes = (size_t)nbl * TOK_SB;
    int tb = (int)((256 * 1024) / (size_t)tok_bytes);
    tb = tb < TILE_T ? TILE_T : tb - tb % TILE_T;
#define ACT(t) ((const block_q8_K *)(const void *)(act + (size_t)(t)*act_stride))
    for (int c0 = 0; c0 < n_tok; c0 += tc) {
        const int cn = n_tok - c0 < tc ? n_tok - c0 : tc;
        for (int t = 0; t < cn; t++)
            prep_token(ACT(c0 + t), nbl, tok + (size_t)t * tok_bytes);
        for (int64_t p0 = r0; p0 < r1; p0 += pr) {
            const int64_t np = r1 - p0 < pr ? r1 - p0 : pr;
            for (int64_t k = 0; k < np + np % 2; k++) { /* an odd last row fills its pair's second half too */
                const int64_t kr = k < np ? k : np - 1;
                write_pair_row((const block_iq1_m *)(const void *)(wd + (size_t)(p0 + kr) * rs), nbl,
                               panel + (size_t)(k / 2) * pair_bytes, (int)(k % 2), dw + k * nbl);
            }
            for (int b0 = 0; b0 < cn; b0 += tb) {
                const int bn = cn - b0 < tb ? cn - b0 : tb;
                for (int64_t k = 0; k < np; k += 4) {
                    const int nr = np - k < 4 ? (int)(np - k) : 4;
                    const uint8_t *wp[2] = {panel + (size_t)(k / 2) * pair_bytes,
                                            panel + (size_t)(k / 2 + (nr > 2)) * pair_bytes};
                    const float *dr[4];
                    for (int j = 0; j < 4; j++)
                        dr[j] = dw + (k + (j < nr + nr % 2 ? j : 0)) * nbl;
                    for (int t0 = b0; t0 < b0 + bn; t0 += TILE_T) {
                        const int nt = b0 + bn - t0 < TILE_T ? b0 + bn - t0 : TILE_T;
                        const uint8_t *a[TILE_T];
                        const block_q8_K *y[TILE_T];
                        for (int j = 0; j < TILE_T; j++) {
                            const int tt = t0 + (j < nt ? j : nt - 1);
                            a[j] = tok + (size_t)tt * tok_bytes;
                            y[j] = ACT(c0 + tt);
                        }
                        float o[TILE_T][4];
                        tiles[nr > 2][nt - 1](wp, dr, a, y, nbl, o);
                        for (int c = 0; c < nt; c++) { /* a token's 4 rows are adjacent */
                            float *oc = out + (int64_t)(c0 + t0 + c) * out_stride + p0 + k;
                            if (nr == 4)
                                _mm_storeu_ps(oc, _mm_loadu_ps(o[c]));
                            else
                                for (int j = 0; j < nr; j++)
                                    oc[j] = o[c][j];
                        }
                    }
                }
            }
        }
    }
#undef ACT
}
#endif

bool gemm_iq1_matmul(enum tensor_type type, const uint8_t *wd, size_t rs, int64_t nbl, int64_t r0, int64_t r1,
                     const uint8_t *act, size_t act_stride, int n_tok, float *out, int64_t out_stride)
{
#ifdef GEMM_IQ1
    if (!gemm_iq1_supports(type))
        return false;
    if (r0 >= r1 || n_tok < 1)
        return true;
    const size_t row_sb = PAIR_SB / 2;
    int64_t pr = PANEL_BYTES / ((int64_t)row_sb * nbl);
    pr = pr < 4 ? 4 : pr > 64 ? 64 : pr - pr % 4;
    if (pr > r1 - r0)
        pr = r1 - r0;
    const int64_t prp = pr + pr % 2; /* rows the panel holds: pairs */
    const size_t panel_bytes = ((size_t)prp * (size_t)nbl * row_sb + 63) & ~(size_t)63;
    const size_t dw_bytes = ((size_t)prp * (size_t)nbl * sizeof(float) + 63) & ~(size_t)63;
    int tc = (int)(ACT_BYTES / (nbl * TOK_SB));
    tc = tc < TILE_T ? TILE_T : tc;
    if (tc > n_tok)
        tc = n_tok;
    uint8_t *scr = kernel_scratch_get(panel_bytes + dw_bytes + (size_t)tc * (size_t)nbl * TOK_SB);
    if (!scr)
        return false;
    matmul512(wd, rs, nbl, r0, r1, act, act_stride, n_tok, out, out_stride, scr,
              (float *)(void *)(scr + panel_bytes), scr + panel_bytes + dw_bytes, pr, tc);
    return true;
#else
    (void)type, (void)wd, (void)rs, (void)nbl, (void)r0, (void)r1, (void)act, (void)act_stride, (void)n_tok;
    (void)out, (void)out_stride;
    return false;
#endif
}
