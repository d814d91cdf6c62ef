/* The IQ integer GEMM (see gemm_iq.h).
 *
 * Expanded layout: per weight row and super-block, 8 sub-blocks of 32 int16
 * (weight times its integer scale), each as two halves of 8 int16 pairs:
 * half A holds elements (4k, 4k+1), half B (4k+2, 4k+3), for the
 * reference lanes k in the order LANES = 0 1 4 5 2 3 6 7. A pair-summing
 * multiply (vpmaddwd, vpdpwssd) of half A plus half B against the same
 * arrangement of a token's bytes puts reference lane LANES[m] in int32
 * lane m, with nothing to fold; LANES is the order in which AVX2's
 * shuffle_ps takes every other pair out of two 8-pair halves, so a token's
 * bytes need two widenings and two shuffles per sub-block (AVX-512: two
 * widenings and two two-source permutes for a pair of tokens). The float
 * lanes stay in that order until the end, where they are put back for
 * hsum_float_8. */
#include "kernels/gemm_iq.h"

#include <stdlib.h>

#include "gguf/tensor.h"
#include "kernels/quant_internal.h"
#include "kernels/quant_iq2.h"
#include "kernels/quant_iq4.h"

/* int16 per super-block row in the expanded layout */
#define SB_W 256

/* Expands a row's nbl super-blocks: sub-block b of super-block i at
 * o + (8 * i + b) * sub_stride, its half B bstride after half A; d_w of
 * super-block i to dw[i]. */
typedef void (*expand_fn)(const void *row, int64_t nbl, int16_t *o, int sub_stride, int bstride, float *dw);

/* So half A holds the element pairs 0 2 8 10 4 6 12 14 (pair p: elements
 * 2p, 2p + 1; 2 * LANES), half B these plus 1. */

#if defined(QUANT_HAVE_AVX2)
/* One sub-block's 32 scaled weights, elements 0-15 in h0 and 16-31 in h1,
 * into halves A, B: every other int16 pair of h0 and h1 (shuffle_ps) is
 * exactly that pair order. */
static inline void put_sub(int16_t *o, int bstride, __m256i h0, __m256i h1)
{
    const __m256 f0 = _mm256_castsi256_ps(h0), f1 = _mm256_castsi256_ps(h1);
    _mm256_storeu_si256((__m256i *)o, _mm256_castps_si256(_mm256_shuffle_ps(f0, f1, 0x88)));
    _mm256_storeu_si256((__m256i *)(o + bstride), _mm256_castps_si256(_mm256_shuffle_ps(f0, f1, 0xDD)));
}

static void expand_iq4_xs(const void *row, int64_t nbl, int16_t *o, int sub_stride, int bstride, float *dw)
{
    const block_iq4_xs *x = row;
    const __m256i lut = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)quant_kvalues_iq4nl));
    for (int64_t i = 0; i < nbl; i++) {
        dw[i] = fp16_to_f32(x[i].d);
        for (int ib = 0; ib < QK_K / 32; ib++) {
            const __m256i ls = _mm256_set1_epi16((short)(quant_iq4_xs_scale(&x[i], ib) - 32));
            const __m256i q = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(x[i].qs + 16 * ib)));
            const __m256i nib =
                _mm256_and_si256(_mm256_srlv_epi64(q, _mm256_set_epi64x(4, 4, 0, 0)), _mm256_set1_epi8(0x0F));
            const __m256i v = _mm256_shuffle_epi8(lut, nib); /* elements 0-31 */
            const __m256i h0 = _mm256_mullo_epi16(_mm256_cvtepi8_epi16(_mm256_castsi256_si128(v)), ls);
            const __m256i h1 = _mm256_mullo_epi16(_mm256_cvtepi8_epi16(_mm256_extracti128_si256(v, 1)), ls);
            put_sub(o + (8 * i + ib) * sub_stride, bstride, h0, h1);
        }
    }
}

/* The IQ2 types through their shared decoding (quant_iq2.h): weight e is
 * +-grid byte times 2 * scale + 1 of its 16. */
static inline void expand_iq2(enum tensor_type type, const void *row, int64_t nbl, int16_t *o, int sub_stride,
                              int bstride, float *dw)
{
    struct iq2_groups g;
    for (int64_t i = 0; i < nbl; i++) {
        if (type == TENSOR_TYPE_IQ2_XXS) {
            const block_iq2_xxs *x = (const block_iq2_xxs *)row + i;
            dw[i] = fp16_to_f32(x->d);
            quant_iq2_xxs_groups(x, &g);
        } else if (type == TENSOR_TYPE_IQ2_XS) {
            const block_iq2_xs *x = (const block_iq2_xs *)row + i;
            dw[i] = fp16_to_f32(x->d);
            quant_iq2_xs_groups(x, &g);
        } else {
            const block_iq2_s *x = (const block_iq2_s *)row + i;
            dw[i] = fp16_to_f32(x->d);
            quant_iq2_s_groups(x, &g);
        }
        for (int ib = 0; ib < QK_K / 32; ib++) {
            const uint64_t *gr = g.grid + 4 * ib;
            const __m256i mag = _mm256_setr_epi64x((long long)gr[0], (long long)gr[1], (long long)gr[2], (long long)gr[3]);
            const __m256i neg = bits32(g.signs + 4 * ib); /* 0xFF: minus */
            const __m256i v = _mm256_sub_epi8(_mm256_xor_si256(mag, neg), neg);
            const __m256i h0 = _mm256_mullo_epi16(_mm256_cvtepi8_epi16(_mm256_castsi256_si128(v)),
                                                  _mm256_set1_epi16((short)(2 * g.scale[2 * ib] + 1)));
            const __m256i h1 = _mm256_mullo_epi16(_mm256_cvtepi8_epi16(_mm256_extracti128_si256(v, 1)),
                                                  _mm256_set1_epi16((short)(2 * g.scale[2 * ib + 1] + 1)));
            put_sub(o + (8 * i + ib) * sub_stride, bstride, h0, h1);
        }
    }
}

static void expand_iq2_xxs(const void *row, int64_t nbl, int16_t *o, int sub_stride, int bstride, float *dw)
{
    expand_iq2(TENSOR_TYPE_IQ2_XXS, row, nbl, o, sub_stride, bstride, dw);
}
static void expand_iq2_xs(const void *row, int64_t nbl, int16_t *o, int sub_stride, int bstride, float *dw)
{
    expand_iq2(TENSOR_TYPE_IQ2_XS, row, nbl, o, sub_stride, bstride, dw);
}
static void expand_iq2_s(const void *row, int64_t nbl, int16_t *o, int sub_stride, int bstride, float *dw)
{
    expand_iq2(TENSOR_TYPE_IQ2_S, row, nbl, o, sub_stride, bstride, dw);
}
#else
#define expand_iq4_xs NULL
#define expand_iq2_xxs NULL
#define expand_iq2_xs NULL
#define expand_iq2_s NULL
#endif

/* The type's expansion and the factor vec_dot applies to its sum. */
static bool type_info(enum tensor_type type, expand_fn *fn, float *scale)
{
    *scale = 0.125f;
    switch (type) {
    case TENSOR_TYPE_IQ4_XS:
        *fn = expand_iq4_xs;
        *scale = 1.0f; /* x * 1.0f is x: vec_dot's plain hsum */
        return true;
    case TENSOR_TYPE_IQ2_XXS:
        *fn = expand_iq2_xxs;
        return true;
    case TENSOR_TYPE_IQ2_XS:
        *fn = expand_iq2_xs;
        return true;
    case TENSOR_TYPE_IQ2_S:
        *fn = expand_iq2_s;
        return true;
    default:
        return false;
    }
}

bool gemm_iq_supports(enum tensor_type type)
{
    expand_fn fn;
    float scale;
    return type_info(type, &fn, &scale);
}

int gemm_iq_min_tok(enum tensor_type type)
{
    return type == TENSOR_TYPE_IQ4_XS ? 8 : 16;
}

bool gemm_iq_applies(const gguf_tensor *w, int n_tok)
{
#if defined(QUANT_HAVE_AVX2)
    const enum tensor_type type = (enum tensor_type)w->type;
    return gemm_iq_supports(type) && n_tok >= gemm_iq_min_tok(type) && w->ne[0] % QK_K == 0;
#else
    (void)w;
    (void)n_tok;
    return false;
#endif
}

#if defined(QUANT_HAVE_AVX2)
/* hsum_float_8 of 8 float lanes held in LANES order. */
static inline float lanes_hsum(__m256 acc)
{
    return hsum_ps(_mm256_permutevar8x32_ps(acc, _mm256_setr_epi32(0, 1, 4, 5, 2, 3, 6, 7)));
}

/* Scratch bytes a call may hold for its tokens' widened bytes; more
 * tokens go in several passes (each expanding the weights again). */
#define ACT_BYTES (6 << 20)
/* Expanded panel bytes: rows times this stay in L2 beside the tokens. */
#define PANEL_BYTES (192 * 1024)
#endif

#if defined(QUANT_HAVE_AVX2) && defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VNNI__)
/* AVX-512: rows in pairs, row 2q in int32 lanes 0-7 and row 2q + 1 in 8-15
 * of one register (the panel stores each pair's halves side by side), a
 * token's widened halves broadcast to both: no shuffle in the loop. The
 * tokens are widened once per call into LANES order (tok16). */
#define GEMM_IQ_512 1
#define TILE_T 4

/* Token bytes of nbl super-blocks to int16 halves A, B per sub-block. */
static void widen_token(const block_q8_K *y, int64_t nbl, int16_t *o)
{
    const __m512i idx = _mm512_setr_epi32(0, 2, 8, 10, 4, 6, 12, 14, 1, 3, 9, 11, 5, 7, 13, 15);
    for (int64_t i = 0; i < nbl; i++)
        for (int s = 0; s < QK_K / 32; s++) {
            const __m512i e = _mm512_cvtepi8_epi16(_mm256_loadu_si256((const __m256i *)(y[i].qs + 32 * s)));
            _mm512_storeu_si512(o + (8 * i + s) * 32, _mm512_permutexvar_epi32(idx, e));
        }
}

/* NP row pairs (wp: expanded pairs, dw: the 2 * NP rows' d_w) against 4
 * tokens (a: widened, y: their Q8_K rows for d_act): out[row][token].
 * Always inlined with a constant NP. */
static inline __attribute__((always_inline)) void tile512(int NP, const int16_t *const wp[2],
                                                         const float *const dw[4], const int16_t *const a[TILE_T],
                                                         const block_q8_K *const y[TILE_T], int64_t nbl,
                                                         float scale, float out[4][TILE_T])
{
    __m512 facc[2][TILE_T];
#pragma GCC unroll 2
    for (int j = 0; j < NP; j++)
#pragma GCC unroll 4
        for (int t = 0; t < TILE_T; t++)
            facc[j][t] = _mm512_setzero_ps();
    for (int64_t i = 0; i < nbl; i++) {
        __m512i acc[2][TILE_T];
#pragma GCC unroll 2
        for (int j = 0; j < NP; j++)
#pragma GCC unroll 4
            for (int t = 0; t < TILE_T; t++)
                acc[j][t] = _mm512_setzero_si512();
        for (int s = 0; s < QK_K / 32; s++) {
            __m512i wa[2], wb[2];
#pragma GCC unroll 2
            for (int j = 0; j < NP; j++) {
                wa[j] = _mm512_loadu_si512(wp[j] + (8 * i + s) * 64);
                wb[j] = _mm512_loadu_si512(wp[j] + (8 * i + s) * 64 + 32);
            }
#pragma GCC unroll 4
            for (int t = 0; t < TILE_T; t++) {
                const int16_t *at = a[t] + (8 * i + s) * 32;
                const __m512i aa = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)at));
                const __m512i ab = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(at + 16)));
#pragma GCC unroll 2
                for (int j = 0; j < NP; j++) {
                    acc[j][t] = _mm512_dpwssd_epi32(acc[j][t], wa[j], aa);
                    acc[j][t] = _mm512_dpwssd_epi32(acc[j][t], wb[j], ab);
                }
            }
        }
#pragma GCC unroll 2
        for (int j = 0; j < NP; j++) {
            /* d_w of row 2j in lanes 0-7, of row 2j + 1 in 8-15 */
            const __m512 dwv = _mm512_castpd_ps(_mm512_insertf64x4(_mm512_castps_pd(_mm512_set1_ps(dw[2 * j][i])),
                                                                   _mm256_castps_pd(_mm256_set1_ps(dw[2 * j + 1][i])), 1));
#pragma GCC unroll 4
            for (int t = 0; t < TILE_T; t++) /* d_w * d_act, as vec_dot's scalar product */
                facc[j][t] = _mm512_fmadd_ps(_mm512_mul_ps(dwv, _mm512_set1_ps(y[t][i].d)),
                                             _mm512_cvtepi32_ps(acc[j][t]), facc[j][t]);
        }
    }
#pragma GCC unroll 2
    for (int j = 0; j < NP; j++)
#pragma GCC unroll 4
        for (int t = 0; t < TILE_T; t++) {
            out[2 * j][t] = scale * lanes_hsum(_mm512_castps512_ps256(facc[j][t]));
            out[2 * j + 1][t] =
                scale * lanes_hsum(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(facc[j][t]), 1)));
        }
}

static void tile_pairs2(const int16_t *const wp[2], const float *const dw[4], const int16_t *const a[TILE_T],
                        const block_q8_K *const y[TILE_T], int64_t nbl, float scale, float out[4][TILE_T])
{
    tile512(2, wp, dw, a, y, nbl, scale, out);
}
static void tile_pairs1(const int16_t *const wp[2], const float *const dw[4], const int16_t *const a[TILE_T],
                        const block_q8_K *const y[TILE_T], int64_t nbl, float scale, float out[4][TILE_T])
{
    tile512(1, wp, dw, a, y, nbl, scale, out);
}

/* Rows [r0, r1) against tokens [0, n_tok), in passes of tokens whose
 * widened bytes fit ACT_BYTES; per pass, panels of row pairs expanded
 * once, tokens in blocks that stay in L2, 4 rows x 4 tokens per tile. */
static void matmul512(expand_fn expand, float scale, const uint8_t *wd, size_t rs, int64_t nbl, int64_t r0,
                      int64_t r1, const uint8_t *act, size_t act_stride, int n_tok, float *out, int64_t out_stride,
                      int16_t *w16, float *dw, int16_t *tok16, int64_t pr, int tc)
{
    const int64_t sb_pair = nbl * 2 * SB_W; /* int16 per expanded row pair */
    int tb = (int)((128 * 1024) / (nbl * SB_W * 2));
    tb = tb < TILE_T ? TILE_T : tb - tb % TILE_T;
#define ACT(t) ((const block_q8_K *)(const void *)(act + (size_t)(t)*act_stride))
    for (int c0 = 0; c0 < n_tok; c0 += tc) {
        const int cn = n_tok - c0 < tc ? n_tok - c0 : tc;
        for (int t = 0; t < cn; t++)
            widen_token(ACT(c0 + t), nbl, tok16 + (size_t)t * nbl * SB_W);
        for (int64_t p0 = r0; p0 < r1; p0 += pr) {
            const int64_t np = r1 - p0 < pr ? r1 - p0 : pr;
            for (int64_t k = 0; k < np + np % 2; k++) { /* an odd last row fills its pair's second half too */
                const int64_t kr = k < np ? k : np - 1;
                expand(wd + (size_t)(p0 + kr) * rs, nbl, w16 + (k / 2) * sb_pair + (k % 2) * 16, 64, 32,
                       dw + k * nbl);
            }
            for (int b0 = 0; b0 < cn; b0 += tb) {
                const int bn = cn - b0 < tb ? cn - b0 : tb;
                for (int64_t k = 0; k < np; k += 4) {
                    const int nr = np - k < 4 ? (int)(np - k) : 4;
                    const int16_t *wp[2] = {w16 + (k / 2) * sb_pair, w16 + (k / 2 + (nr > 2)) * sb_pair};
                    const float *dr[4];
                    for (int j = 0; j < 4; j++)
                        dr[j] = dw + (k + (j < nr + nr % 2 ? j : 0)) * nbl;
                    for (int t0 = b0; t0 < b0 + bn; t0 += TILE_T) {
                        const int nt = b0 + bn - t0 < TILE_T ? b0 + bn - t0 : TILE_T;
                        const int16_t *a[TILE_T];
                        const block_q8_K *y[TILE_T];
                        for (int j = 0; j < TILE_T; j++) {
                            const int tt = t0 + (j < nt ? j : nt - 1);
                            a[j] = tok16 + (size_t)tt * nbl * SB_W;
                            y[j] = ACT(c0 + tt);
                        }
                        float o[4][TILE_T];
                        if (nr > 2)
                            tile_pairs2(wp, dr, a, y, nbl, scale, o);
                        else
                            tile_pairs1(wp, dr, a, y, nbl, scale, o);
                        for (int j = 0; j < nr; j++)
                            for (int c = 0; c < nt; c++)
                                out[(int64_t)(c0 + t0 + c) * out_stride + p0 + k + j] = o[j][c];
                    }
                }
            }
        }
    }
#undef ACT
}
#elif defined(QUANT_HAVE_AVX2)
#define TILE_R 2
#define TILE_T 2

/* R rows against T tokens, vpmaddwd into one int32 vector per output. */
static inline __attribute__((always_inline)) void tile256(int R, int T, const int16_t *const w[TILE_R],
                                                         const float *const dw[TILE_R],
                                                         const block_q8_K *const y[TILE_T], int64_t nbl,
                                                         float scale, float out[TILE_R][TILE_T])
{
    __m256 facc[TILE_R][TILE_T];
#pragma GCC unroll 4
    for (int r = 0; r < R; r++)
#pragma GCC unroll 4
        for (int t = 0; t < T; t++)
            facc[r][t] = _mm256_setzero_ps();
    for (int64_t i = 0; i < nbl; i++) {
        __m256i acc[TILE_R][TILE_T];
#pragma GCC unroll 4
        for (int r = 0; r < R; r++)
#pragma GCC unroll 4
            for (int t = 0; t < T; t++)
                acc[r][t] = _mm256_setzero_si256();
        for (int s = 0; s < QK_K / 32; s++) {
            __m256i aa[TILE_T], ab[TILE_T];
#pragma GCC unroll 4
            for (int t = 0; t < T; t++) {
                const int8_t *q = y[t][i].qs + 32 * s;
                const __m256 h0 = _mm256_castsi256_ps(_mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)q)));
                const __m256 h1 =
                    _mm256_castsi256_ps(_mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(q + 16))));
                aa[t] = _mm256_castps_si256(_mm256_shuffle_ps(h0, h1, 0x88));
                ab[t] = _mm256_castps_si256(_mm256_shuffle_ps(h0, h1, 0xDD));
            }
#pragma GCC unroll 4
            for (int r = 0; r < R; r++) {
                const int16_t *ws = w[r] + i * SB_W + 32 * s;
                const __m256i wa = _mm256_loadu_si256((const __m256i *)ws);
                const __m256i wb = _mm256_loadu_si256((const __m256i *)(ws + 16));
#pragma GCC unroll 4
                for (int t = 0; t < T; t++)
                    acc[r][t] = _mm256_add_epi32(
                        acc[r][t], _mm256_add_epi32(_mm256_madd_epi16(wa, aa[t]), _mm256_madd_epi16(wb, ab[t])));
            }
        }
#pragma GCC unroll 4
        for (int r = 0; r < R; r++)
#pragma GCC unroll 4
            for (int t = 0; t < T; t++)
                facc[r][t] = _mm256_fmadd_ps(_mm256_set1_ps(dw[r][i] * y[t][i].d), _mm256_cvtepi32_ps(acc[r][t]),
                                             facc[r][t]);
    }
#pragma GCC unroll 4
    for (int r = 0; r < R; r++)
#pragma GCC unroll 4
        for (int t = 0; t < T; t++)
            out[r][t] = scale * lanes_hsum(facc[r][t]);
}

static void tile_full(int nt, const int16_t *const w[TILE_R], const float *const dw[TILE_R],
                      const block_q8_K *const y[TILE_T], int64_t nbl, float scale, float out[TILE_R][TILE_T])
{
    if (nt > 1)
        tile256(TILE_R, 2, w, dw, y, nbl, scale, out);
    else
        tile256(TILE_R, 1, w, dw, y, nbl, scale, out);
}
static void tile_one(int nt, const int16_t *const w[TILE_R], const float *const dw[TILE_R],
                     const block_q8_K *const y[TILE_T], int64_t nbl, float scale, float out[TILE_R][TILE_T])
{
    if (nt > 1)
        tile256(1, 2, w, dw, y, nbl, scale, out);
    else
        tile256(1, 1, w, dw, y, nbl, scale, out);
}

/* AVX2: panels of rows expanded once (one row per 256 int16 per
 * super-block), each tile widening its tokens' bytes as it goes. */
static void matmul256(expand_fn expand, float scale, const uint8_t *wd, size_t rs, int64_t nbl, int64_t r0,
                      int64_t r1, const uint8_t *act, size_t act_stride, int n_tok, float *out, int64_t out_stride,
                      int16_t *w16, float *dw, int64_t pr)
{
    for (int64_t p0 = r0; p0 < r1; p0 += pr) {
        const int64_t np = r1 - p0 < pr ? r1 - p0 : pr;
        for (int64_t k = 0; k < np; k++)
            expand(wd + (size_t)(p0 + k) * rs, nbl, w16 + k * nbl * SB_W, 32, 16, dw + k * nbl);
        for (int t0 = 0; t0 < n_tok; t0 += TILE_T) {
            const int nt = n_tok - t0 < TILE_T ? n_tok - t0 : TILE_T;
            const block_q8_K *y[TILE_T];
            for (int j = 0; j < TILE_T; j++)
                y[j] = (const block_q8_K *)(const void *)(act + (size_t)(t0 + (j < nt ? j : nt - 1)) * act_stride);
            for (int64_t k = 0; k < np;) {
                const int nr = np - k >= TILE_R ? TILE_R : 1;
                const int16_t *wr[TILE_R];
                const float *dr[TILE_R];
                for (int j = 0; j < TILE_R; j++) {
                    const int64_t kk = k + (j < nr ? j : 0);
                    wr[j] = w16 + kk * nbl * SB_W;
                    dr[j] = dw + kk * nbl;
                }
                float o[TILE_R][TILE_T];
                if (nr == TILE_R)
                    tile_full(nt, wr, dr, y, nbl, scale, o);
                else
                    tile_one(nt, wr, dr, y, nbl, scale, o);
                for (int j = 0; j < nr; j++)
                    for (int c = 0; c < nt; c++)
                        out[(int64_t)(t0 + c) * out_stride + p0 + k + j] = o[j][c];
                k += nr;
            }
        }
    }
}
#endif

void gemm_iq_matmul(const gguf_tensor *w, int64_t n, int64_t r0, int64_t r1, const uint8_t *act,
                    size_t act_stride, int n_tok, float *out, int64_t out_stride)
{
    const enum tensor_type type = (enum tensor_type)w->type;
    const size_t rs = tensor_row_size(type, n);
    const uint8_t *wd = w->data;
#if defined(QUANT_HAVE_AVX2)
    expand_fn expand;
    float scale;
    if (!type_info(type, &expand, &scale) || r0 >= r1 || n_tok < 1)
        return;
    const int64_t nbl = n / QK_K;
    int64_t pr = PANEL_BYTES / (nbl * SB_W * 2);
    pr = pr < 4 ? 4 : pr > 64 ? 64 : pr - pr % 4;
    if (pr > r1 - r0)
        pr = r1 - r0;
    const int64_t prp = pr + pr % 2; /* rows the panel holds: pairs on AVX-512 */
    int16_t *w16 = aligned_alloc(64, (size_t)prp * (size_t)nbl * SB_W * sizeof *w16);
    float *dw = malloc((size_t)prp * (size_t)nbl * sizeof *dw);
#ifdef GEMM_IQ_512
    int tc = (int)(ACT_BYTES / (nbl * SB_W * 2));
    tc = tc < TILE_T ? TILE_T : tc;
    if (tc > n_tok)
        tc = n_tok;
    int16_t *tok16 = aligned_alloc(64, (size_t)tc * (size_t)nbl * SB_W * sizeof *tok16);
#else
    int16_t *tok16 = w16; /* not used */
#endif
    if (!w16 || !dw || !tok16) { /* no scratch: vec_dot gives the same bits */
        for (int64_t r = r0; r < r1; r++)
            for (int t = 0; t < n_tok; t++)
                out[(int64_t)t * out_stride + r] =
                    tensor_vec_dot(type, n, wd + (size_t)r * rs, act + (size_t)t * act_stride);
    } else {
#ifdef GEMM_IQ_512
        matmul512(expand, scale, wd, rs, nbl, r0, r1, act, act_stride, n_tok, out, out_stride, w16, dw, tok16, pr,
                  tc);
#else
        matmul256(expand, scale, wd, rs, nbl, r0, r1, act, act_stride, n_tok, out, out_stride, w16, dw, pr);
#endif
    }
    if (tok16 != w16)
        free(tok16);
    free(w16);
    free(dw);
#else
    for (int64_t r = r0; r < r1; r++)
        for (int t = 0; t < n_tok; t++)
            out[(int64_t)t * out_stride + r] = tensor_vec_dot(type, n, wd + (size_t)r * rs, act + (size_t)t * act_stride);
#endif
}
