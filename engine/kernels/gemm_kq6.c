/* The Q6_K integer GEMM (see gemm_kq6.h).
 *
 * A row's super-block is unpacked once per call into a panel, rows in
 * pairs: per chunk pair q (elements 64q..64q+63, the reference's 32-value
 * chunks 2q and 2q + 1) 64 bytes of row A then 64 of row B, the 6-bit
 * values 0..63 in their order. A token's 64 bytes of the chunk pair go
 * through vpdpbusd with the weights as the unsigned operand (the
 * reference's own split: q unsigned times y, the -32 taken apart through
 * the bsums), so int32 lane j of the result is the 4-value sum over
 * elements 4j..4j+3: lanes 0-7 the reference's lanes k of chunk 2q, 8-15 of
 * chunk 2q + 1, before their scales. Such a sum fits 16 bits (|.| <= 4 * 63
 * * 128), so one vpermt2w puts rows A's and B's two chunks side by side as
 * int16 pairs ([A lane k: chunk 2q, 2q + 1 | B lane k: ...]) and one
 * vpdpwssd against the pairs of their scales (int16 pairs in the panel)
 * adds both, scaled, to the lane: 3 multiply instructions per row pair,
 * token and 128 values where the few-token kernels' maddubs + madd take 4.
 * After the four chunk pairs one vpdpwssd of -32 * sc against the token's
 * bsums takes the offset in the reference's grouping (lane k: sub-blocks
 * 2k, 2k + 1), then one convert and one FMA with d_act * d_w per half, the
 * reference's float step; hsum_float_8 per half at the end. A tile is 2 row
 * pairs x 4 tokens: 8 integer and 8 float accumulators. */
#include "kernels/gemm_kq6.h"

#include <stdlib.h>
#include <string.h>

#include "gguf/tensor.h"
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
#ifndef TILE_T
#define TILE_T 4
#endif
/* Panel bytes per row pair and super-block: 4 chunk pairs of 2 x 64 value
 * bytes, 4 of 2 x 8 int16 scale pairs, 2 x 16 int16 offset scales (-32 sc),
 * 2 x 8 float d_w. */
#define PAIR_SB (8 * 64 + 4 * 64 + 64 + 64)
#define OFF_SC 512
#define OFF_OFF 768
#define OFF_DW 832
/* Panel bytes: the panel stays in L2 beside a block of tokens. */
#define PANEL_BYTES (192 * 1024)
/* Token bytes (their Q8_K rows) a block of tokens holds, also in L2. */
#define TOK_BYTES (256 * 1024)
/* Super-blocks per slice: 4 panel rows (14 KB) and 4 tokens (9 KB) stay in L1. */
#ifndef KC
#define KC 8
#endif

/* Row h (0, 1) of the pair at p: its nbl super-blocks as PAIR_SB blocks. */
static void write_pair_row(const block_q6_K *x, int64_t nbl, uint8_t *p, int h)
{
    const __m256i m4 = _mm256_set1_epi8(0x0F), m3 = _mm256_set1_epi8(3);
    for (int64_t i = 0; i < nbl; i++, p += PAIR_SB) {
        /* the weights come from memory once per call, rows one after the
         * other: the bytes 2 KB on (this row's or the next) on their way */
        for (int l = 0; l < 256; l += 64)
            _mm_prefetch((const char *)(x + i) + 2048 + l, _MM_HINT_T0);
        for (int j = 0; j < 2; j++) {
            const __m256i l0 = _mm256_loadu_si256((const __m256i *)(x[i].ql + 64 * j));
            const __m256i l1 = _mm256_loadu_si256((const __m256i *)(x[i].ql + 64 * j + 32));
            const __m256i qh = _mm256_loadu_si256((const __m256i *)(x[i].qh + 32 * j));
            const __m256i q[4] = {
                _mm256_or_si256(_mm256_and_si256(l0, m4), _mm256_slli_epi16(_mm256_and_si256(qh, m3), 4)),
                _mm256_or_si256(_mm256_and_si256(l1, m4),
                                _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2), m3), 4)),
                _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), m4),
                                _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 4), m3), 4)),
                _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), m4),
                                _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 6), m3), 4)),
            };
            for (int m = 0; m < 4; m++)
                _mm256_storeu_si256((__m256i *)(p + 128 * ((4 * j + m) / 2) + 64 * h + 32 * (m % 2)), q[m]);
        }
        const __m256i s16 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)x[i].scales));
        /* chunk pair (2q, 2q + 1): int16 pair k = (scale of lane k in chunk
         * 2q, in chunk 2q + 1): sc[4q], sc[4q + 2] for lanes 0-3, sc[4q + 1],
         * sc[4q + 3] for 4-7 */
        for (int q = 0; q < 4; q++) {
            const __m256i idx = _mm256_add_epi16(_mm256_set_epi16(3, 1, 3, 1, 3, 1, 3, 1, 2, 0, 2, 0, 2, 0, 2, 0),
                                                 _mm256_set1_epi16((short)(4 * q)));
            _mm256_storeu_si256((__m256i *)(p + OFF_SC + 64 * q + 32 * h), _mm256_permutexvar_epi16(idx, s16));
        }
        _mm256_storeu_si256((__m256i *)(p + OFF_OFF + 32 * h), _mm256_mullo_epi16(s16, _mm256_set1_epi16(-32)));
        _mm256_storeu_ps((float *)(void *)(p + OFF_DW + 32 * h), _mm256_set1_ps(fp16_to_f32(x[i].d)));
    }
}

/* w . a lane sums of 4 bytes (w unsigned), from zero. An asm statement, as
 * gemm_iq.c's: GCC copies accumulators around its intrinsic. */
static inline __m512i dpbusd0(__m512i w, __m512i a)
{
    __m512i r;
    __asm__("vpxord %0, %0, %0\n\tvpdpbusd %2, %1, %0" : "=&v"(r) : "v"(w), "v"(a));
    return r;
}

/* NP row pairs (wp: their panels) against TILE_T tokens (y: their Q8_K
 * rows), super-blocks [i0, i1): the float lanes go on from st (zero when
 * i0 is 0) and back to st, or, when i1 is nbl, their sums to out[row][token].
 * Lanes 0-7 of an accumulator: row 2j's lanes k, 8-15: row 2j + 1's. Always
 * inlined with a constant NP. */
static inline __attribute__((always_inline)) void tile512(int NP, const uint8_t *const wp[2],
                                                         const block_q8_K *const y[TILE_T], int64_t i0, int64_t i1,
                                                         int64_t nbl, __m512 *st, float out[4][TILE_T])
{
    __m512 facc[2][TILE_T];
    /* int32 lane m < 8: row A's (lane m, lane m + 8); m >= 8: row B's */
    const __m512i nidx = _mm512_set_epi16(62, 46, 60, 44, 58, 42, 56, 40, 54, 38, 52, 36, 50, 34, 48, 32, /* B */
                                          30, 14, 28, 12, 26, 10, 24, 8, 22, 6, 20, 4, 18, 2, 16, 0); /* A */
#pragma GCC unroll 2
    for (int j = 0; j < NP; j++)
#pragma GCC unroll 8
        for (int t = 0; t < TILE_T; t++)
            facc[j][t] = i0 == 0 ? _mm512_setzero_ps() : st[j * TILE_T + t];
    for (int64_t i = i0; i < i1; i++) {
        __m512i acc[2][TILE_T];
#pragma GCC unroll 2
        for (int j = 0; j < NP; j++)
#pragma GCC unroll 8
            for (int t = 0; t < TILE_T; t++)
                acc[j][t] = _mm512_setzero_si512();
#pragma GCC unroll 4
        for (int q = 0; q < 4; q++) {
            __m512i wa[2], wb[2], l[2];
#pragma GCC unroll 2
            for (int j = 0; j < NP; j++) {
                wa[j] = _mm512_loadu_si512(wp[j] + i * PAIR_SB + 128 * q);
                wb[j] = _mm512_loadu_si512(wp[j] + i * PAIR_SB + 128 * q + 64);
                l[j] = _mm512_loadu_si512(wp[j] + i * PAIR_SB + OFF_SC + 64 * q);
                __asm__("" : "+v"(wa[j]), "+v"(wb[j]), "+v"(l[j]));
            }
#pragma GCC unroll 8
            for (int t = 0; t < TILE_T; t++) {
                const __m512i a = _mm512_loadu_si512(y[t][i].qs + 64 * q);
#pragma GCC unroll 2
                for (int j = 0; j < NP; j++) {
                    const __m512i xa = dpbusd0(wa[j], a), xb = dpbusd0(wb[j], a);
                    acc[j][t] = _mm512_dpwssd_epi32(acc[j][t], l[j], _mm512_permutex2var_epi16(xa, nidx, xb));
                }
            }
        }
#pragma GCC unroll 2
        for (int j = 0; j < NP; j++) {
            const __m512i off = _mm512_loadu_si512(wp[j] + i * PAIR_SB + OFF_OFF);
            const __m512 dwv = _mm512_loadu_ps(wp[j] + i * PAIR_SB + OFF_DW);
#pragma GCC unroll 8
            for (int t = 0; t < TILE_T; t++) {
                const __m512i bs = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)y[t][i].bsums));
                /* d_act * d_w, as vec_dot's scalar product */
                facc[j][t] = _mm512_fmadd_ps(_mm512_mul_ps(dwv, _mm512_set1_ps(y[t][i].d)),
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
#pragma GCC unroll 2
    for (int j = 0; j < NP; j++)
#pragma GCC unroll 8
        for (int t = 0; t < TILE_T; t++) {
            out[2 * j][t] = hsum_ps(_mm512_castps512_ps256(facc[j][t]));
            out[2 * j + 1][t] = hsum_ps(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(facc[j][t]), 1)));
        }
}

static void tile_pairs2(const uint8_t *const wp[2], const block_q8_K *const y[TILE_T], int64_t i0, int64_t i1,
                        int64_t nbl, __m512 *st, float out[4][TILE_T])
{
    tile512(2, wp, y, i0, i1, nbl, st, out);
}
static void tile_pairs1(const uint8_t *const wp[2], const block_q8_K *const y[TILE_T], int64_t i0, int64_t i1,
                        int64_t nbl, __m512 *st, float out[4][TILE_T])
{
    tile512(1, wp, y, i0, i1, nbl, st, out);
}

/* Rows [r0, r1) against tokens [0, n_tok): panels of pr rows written once;
 * per block of tokens, the super-blocks in slices of KC so that a tile's
 * 4 panel rows and 4 tokens stay in L1 (the float lanes wait in st between
 * slices, the super-blocks still in order); 4 rows x 4 tokens per tile. */
static void matmul512(const uint8_t *wd, size_t rs, int64_t nbl, int64_t r0, int64_t r1, const uint8_t *act,
                      size_t act_stride, int n_tok, float *out, int64_t out_stride, uint8_t *panel, int64_t pr,
                      __m512 *st, float *ob, int tb)
{
    const size_t pair_bytes = (size_t)nbl * PAIR_SB;
#define ACT(t) ((const block_q8_K *)(const void *)(act + (size_t)(t)*act_stride))
    for (int64_t p0 = r0; p0 < r1; p0 += pr) {
        const int64_t np = r1 - p0 < pr ? r1 - p0 : pr;
        for (int64_t k = 0; k < np + np % 2; k++) { /* an odd last row fills its pair's second half too */
            const int64_t kr = k < np ? k : np - 1;
            write_pair_row((const block_q6_K *)(const void *)(wd + (size_t)(p0 + kr) * rs), nbl,
                           panel + (size_t)(k / 2) * pair_bytes, (int)(k % 2));
        }
        for (int b0 = 0; b0 < n_tok; b0 += tb) {
            const int bn = n_tok - b0 < tb ? n_tok - b0 : tb;
            const int ntile = (bn + TILE_T - 1) / TILE_T;
            for (int64_t i0 = 0; i0 < nbl; i0 += KC) {
                const int64_t i1 = nbl - i0 < KC ? nbl : i0 + KC;
                for (int64_t k = 0; k < np; k += 4) {
                    const int nr = np - k < 4 ? (int)(np - k) : 4;
                    const uint8_t *wp[2] = {panel + (size_t)(k / 2) * pair_bytes,
                                            panel + (size_t)(k / 2 + (nr > 2)) * pair_bytes};
                    for (int t0 = b0; t0 < b0 + bn; t0 += TILE_T) {
                        const int nt = b0 + bn - t0 < TILE_T ? b0 + bn - t0 : TILE_T;
                        const block_q8_K *y[TILE_T];
                        for (int j = 0; j < TILE_T; j++)
                            y[j] = ACT(t0 + (j < nt ? j : nt - 1));
                        __m512 *s = st + ((k / 4) * ntile + (t0 - b0) / TILE_T) * 2 * TILE_T;
                        float o[4][TILE_T];
                        if (nr > 2)
                            tile_pairs2(wp, y, i0, i1, nbl, s, o);
                        else
                            tile_pairs1(wp, y, i0, i1, nbl, s, o);
                        if (i1 < nbl)
                            continue;
                        for (int j = 0; j < nr; j++)
                            for (int c = 0; c < nt; c++)
                                ob[(t0 - b0 + c) * pr + k + j] = o[j][c];
                    }
                }
            }
            /* each token's outputs of the panel in one piece: stores of 4
             * rows a token went to a cache line per token */
            for (int c = 0; c < bn; c++)
                memcpy(out + (int64_t)(b0 + c) * out_stride + p0, ob + (int64_t)c * pr, (size_t)np * sizeof(float));
        }
    }
#undef ACT
}
#endif

void gemm_kq6_rows(int64_t n, const void *w, size_t rs, int64_t r0, int64_t r1, const void *act, size_t act_stride,
                   int n_tok, float *out, int64_t out_stride)
{
    if (r0 >= r1 || n_tok < 1)
        return;
#ifdef GEMM_KQ6
    const int64_t nbl = n / QK_K;
    int64_t pr = PANEL_BYTES / ((int64_t)(PAIR_SB / 2) * nbl);
    pr = pr < 4 ? 4 : pr > 64 ? 64 : pr - pr % 4;
    if (pr > r1 - r0)
        pr = r1 - r0;
    const int64_t prp = pr + pr % 2; /* rows the panel holds: pairs */
    int tb = (int)(TOK_BYTES / ((size_t)(nbl < KC ? nbl : KC) * sizeof(block_q8_K)));
    tb = tb < TILE_T ? TILE_T : tb - tb % TILE_T;
    if (tb > n_tok)
        tb = n_tok;
    uint8_t *panel = aligned_alloc(64, ((size_t)prp * (size_t)nbl * (PAIR_SB / 2) + 63) & ~(size_t)63);
    /* float lanes of every tile of a token block: 2 pairs x TILE_T per tile */
    const size_t n_st = (size_t)((prp + 3) / 4) * (size_t)((tb + TILE_T - 1) / TILE_T) * 2 * TILE_T;
    __m512 *st = aligned_alloc(64, n_st * sizeof(__m512));
    float *ob = malloc((size_t)tb * (size_t)pr * sizeof(float));
    if (panel && st && ob) {
        matmul512((const uint8_t *)w, rs, nbl, r0, r1, (const uint8_t *)act, act_stride, n_tok, out, out_stride,
                  panel, pr, st, ob, tb);
        free(panel);
        free(st);
        free(ob);
        return;
    }
    free(panel);
    free(st);
    free(ob);
#endif
    /* no scratch (or no GEMM in this build): vec_dot gives the same bits */
    for (int64_t r = r0; r < r1; r++)
        for (int t = 0; t < n_tok; t++)
            out[(int64_t)t * out_stride + r] = tensor_vec_dot(TENSOR_TYPE_Q6_K, n, (const uint8_t *)w + (size_t)r * rs,
                                                             (const uint8_t *)act + (size_t)t * act_stride);
}
