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

typedef void (*expand_fn)(const void *row, int64_t nbl, int16_t *w16, float *dw);

/* Element pairs of half A in lane order (pair p: elements 2p, 2p + 1):
 * 2 * LANES; half B's are these plus 1. */
static const uint8_t pair_a[8] = {0, 2, 8, 10, 4, 6, 12, 14};

/* One sub-block's 32 scaled weights v (natural order) into halves A, B. */
static inline void put_sub(int16_t *o, const int16_t v[32])
{
    for (int m = 0; m < 8; m++) {
        const int pa = 2 * pair_a[m], pb = pa + 2;
        o[2 * m] = v[pa];
        o[2 * m + 1] = v[pa + 1];
        o[16 + 2 * m] = v[pb];
        o[16 + 2 * m + 1] = v[pb + 1];
    }
}

static void expand_iq4_xs(const void *row, int64_t nbl, int16_t *w16, float *dw)
{
    const block_iq4_xs *x = row;
    for (int64_t i = 0; i < nbl; i++) {
        dw[i] = fp16_to_f32(x[i].d);
        for (int ib = 0; ib < QK_K / 32; ib++) {
            const int ls = quant_iq4_xs_scale(&x[i], ib) - 32;
            const uint8_t *qs = x[i].qs + 16 * ib;
            int16_t v[32];
            for (int j = 0; j < 16; j++) {
                v[j] = (int16_t)(ls * quant_kvalues_iq4nl[qs[j] & 0x0F]);
                v[j + 16] = (int16_t)(ls * quant_kvalues_iq4nl[qs[j] >> 4]);
            }
            put_sub(w16 + i * SB_W + ib * 32, v);
        }
    }
}

/* The IQ2 types through their shared decoding (quant_iq2.h): weight e is
 * +-grid byte times 2 * scale + 1 of its 16. */
static inline void expand_iq2(enum tensor_type type, const void *row, int64_t nbl, int16_t *w16, float *dw)
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
            int16_t v[32];
            for (int j = 0; j < 32; j++) {
                const int e = 32 * ib + j;
                const int mag = (uint8_t)(g.grid[e / 8] >> 8 * (e % 8));
                const int s = 2 * g.scale[e / 16] + 1;
                v[j] = (int16_t)((g.signs[e / 8] >> (e % 8) & 1 ? -mag : mag) * s);
            }
            put_sub(w16 + i * SB_W + ib * 32, v);
        }
    }
}

static void expand_iq2_xxs(const void *row, int64_t nbl, int16_t *w16, float *dw)
{
    expand_iq2(TENSOR_TYPE_IQ2_XXS, row, nbl, w16, dw);
}
static void expand_iq2_xs(const void *row, int64_t nbl, int16_t *w16, float *dw)
{
    expand_iq2(TENSOR_TYPE_IQ2_XS, row, nbl, w16, dw);
}
static void expand_iq2_s(const void *row, int64_t nbl, int16_t *w16, float *dw)
{
    expand_iq2(TENSOR_TYPE_IQ2_S, row, nbl, w16, dw);
}

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

bool gemm_iq_applies(const gguf_tensor *w, int n_tok)
{
#if defined(QUANT_HAVE_AVX2)
    return n_tok >= GEMM_IQ_MIN_TOK && gemm_iq_supports((enum tensor_type)w->type) && w->ne[0] % QK_K == 0;
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
#endif

#if defined(QUANT_HAVE_AVX2) && defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VNNI__)
#define GEMM_IQ_512 1
/* Rows per tile and tokens per tile (two pairs, one per 256-bit half). */
#define TILE_R 4
#define TILE_T 4

/* R rows (w, dw) against P token pairs y[2p], y[2p + 1]: out[r][t]. Per
 * sub-block a token pair's bytes are widened and permuted into halves A, B
 * (lanes 0-7 token 2p, 8-15 token 2p + 1), a row's halves broadcast to
 * both 256-bit halves. Always inlined with constant R, P. */
static inline __attribute__((always_inline)) void tile512(int R, int P, const int16_t *const w[TILE_R],
                                                         const float *const dw[TILE_R],
                                                         const block_q8_K *const y[TILE_T], int64_t nbl,
                                                         float scale, float out[TILE_R][TILE_T])
{
    const __m512i ia = _mm512_setr_epi32(0, 2, 8, 10, 4, 6, 12, 14, 16, 18, 24, 26, 20, 22, 28, 30);
    const __m512i ib = _mm512_add_epi32(ia, _mm512_set1_epi32(1));
    __m512 facc[TILE_R][TILE_T / 2];
    #pragma GCC unroll 4
    for (int r = 0; r < R; r++)
        #pragma GCC unroll 4
        for (int p = 0; p < P; p++)
            facc[r][p] = _mm512_setzero_ps();
    for (int64_t i = 0; i < nbl; i++) {
        __m512i acc[TILE_R][TILE_T / 2];
        #pragma GCC unroll 4
        for (int r = 0; r < R; r++)
            #pragma GCC unroll 4
            for (int p = 0; p < P; p++)
                acc[r][p] = _mm512_setzero_si512();
#pragma GCC unroll 2
        for (int s = 0; s < QK_K / 32; s++) {
            __m512i aa[TILE_T / 2], ab[TILE_T / 2];
            #pragma GCC unroll 4
            for (int p = 0; p < P; p++) {
                const __m512i e0 = _mm512_cvtepi8_epi16(_mm256_loadu_si256((const __m256i *)(y[2 * p][i].qs + 32 * s)));
                const __m512i e1 =
                    _mm512_cvtepi8_epi16(_mm256_loadu_si256((const __m256i *)(y[2 * p + 1][i].qs + 32 * s)));
                aa[p] = _mm512_permutex2var_epi32(e0, ia, e1);
                ab[p] = _mm512_permutex2var_epi32(e0, ib, e1);
            }
            #pragma GCC unroll 4
            for (int r = 0; r < R; r++) {
                const int16_t *ws = w[r] + i * SB_W + 32 * s;
                const __m512i wa = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)ws));
                const __m512i wb = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(ws + 16)));
                #pragma GCC unroll 4
                for (int p = 0; p < P; p++) {
                    acc[r][p] = _mm512_dpwssd_epi32(acc[r][p], wa, aa[p]);
                    acc[r][p] = _mm512_dpwssd_epi32(acc[r][p], wb, ab[p]);
                }
            }
        }
        #pragma GCC unroll 4
        for (int p = 0; p < P; p++) {
            /* d_act of token 2p in lanes 0-7, of token 2p + 1 in 8-15 */
            const __m512 da = _mm512_castpd_ps(_mm512_insertf64x4(
                _mm512_castps_pd(_mm512_set1_ps(y[2 * p][i].d)),
                _mm256_castps_pd(_mm256_set1_ps(y[2 * p + 1][i].d)), 1));
            #pragma GCC unroll 4
            for (int r = 0; r < R; r++) /* d_w * d_act, as vec_dot's scalar product */
                facc[r][p] = _mm512_fmadd_ps(_mm512_mul_ps(_mm512_set1_ps(dw[r][i]), da),
                                             _mm512_cvtepi32_ps(acc[r][p]), facc[r][p]);
        }
    }
    #pragma GCC unroll 4
    for (int r = 0; r < R; r++)
        #pragma GCC unroll 4
        for (int p = 0; p < P; p++) {
            out[r][2 * p] = scale * lanes_hsum(_mm512_castps512_ps256(facc[r][p]));
            out[r][2 * p + 1] =
                scale * lanes_hsum(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(facc[r][p]), 1)));
        }
}

/* nt tokens (1..4; missing ones repeat the last, their outputs unused). */
static inline __attribute__((always_inline)) void tile_run(int R, int nt, const int16_t *const w[TILE_R],
                                                          const float *const dw[TILE_R],
                                                          const block_q8_K *const y[TILE_T], int64_t nbl,
                                                          float scale, float out[TILE_R][TILE_T])
{
    if (nt > 2)
        tile512(R, 2, w, dw, y, nbl, scale, out);
    else
        tile512(R, 1, w, dw, y, nbl, scale, out);
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
#pragma GCC unroll 2
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

static inline __attribute__((always_inline)) void tile_run(int R, int nt, const int16_t *const w[TILE_R],
                                                          const float *const dw[TILE_R],
                                                          const block_q8_K *const y[TILE_T], int64_t nbl,
                                                          float scale, float out[TILE_R][TILE_T])
{
    if (nt > 1)
        tile256(R, 2, w, dw, y, nbl, scale, out);
    else
        tile256(R, 1, w, dw, y, nbl, scale, out);
}
#endif

#if defined(QUANT_HAVE_AVX2)
static void tile_full(int nt, const int16_t *const w[TILE_R], const float *const dw[TILE_R],
                      const block_q8_K *const y[TILE_T], int64_t nbl, float scale, float out[TILE_R][TILE_T])
{
    tile_run(TILE_R, nt, w, dw, y, nbl, scale, out);
}
static void tile_one(int nt, const int16_t *const w[TILE_R], const float *const dw[TILE_R],
                     const block_q8_K *const y[TILE_T], int64_t nbl, float scale, float out[TILE_R][TILE_T])
{
    tile_run(1, nt, w, dw, y, nbl, scale, out);
}

/* Expanded panel bytes: rows times this stay in L2 beside the tokens. */
#define PANEL_BYTES (192 * 1024)
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
    if (!type_info(type, &expand, &scale) || r0 >= r1)
        return;
    const int64_t nbl = n / QK_K;
    int64_t pr = PANEL_BYTES / (nbl * SB_W * 2);
    pr = pr < TILE_R ? TILE_R : pr > 64 ? 64 : pr - pr % TILE_R;
    if (pr > r1 - r0)
        pr = r1 - r0;
    int16_t *w16 = aligned_alloc(64, (size_t)pr * (size_t)nbl * SB_W * sizeof *w16);
    float *dw = malloc((size_t)pr * (size_t)nbl * sizeof *dw);
    if (!w16 || !dw) { /* no scratch: vec_dot gives the same bits */
        free(w16);
        free(dw);
        for (int64_t r = r0; r < r1; r++)
            for (int t = 0; t < n_tok; t++)
                out[(int64_t)t * out_stride + r] = tensor_vec_dot(type, n, wd + (size_t)r * rs, act + (size_t)t * act_stride);
        return;
    }
    for (int64_t p0 = r0; p0 < r1; p0 += pr) {
        const int64_t np = r1 - p0 < pr ? r1 - p0 : pr;
        for (int64_t k = 0; k < np; k++)
            expand(wd + (size_t)(p0 + k) * rs, nbl, w16 + k * nbl * SB_W, dw + k * nbl);
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
    free(w16);
    free(dw);
#else
    for (int64_t r = r0; r < r1; r++)
        for (int t = 0; t < n_tok; t++)
            out[(int64_t)t * out_stride + r] = tensor_vec_dot(type, n, wd + (size_t)r * rs, act + (size_t)t * act_stride);
#endif
}
