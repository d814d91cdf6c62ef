/* The repacked orders' GEMMs with the tokens in the lanes (see
 * gemm_tlanes.h): Q4_K (the gemm's order and the gemv's), then Q4_0 and
 * MXFP4, on one driver (tl_rows).
 *
 * Per call: the tokens transposed, 8 a vector (for each super-block, dword
 * k of the 8 tokens' 256 values in one 32-byte vector, then the 8 tokens'
 * bsum pairs of each sub-block pair and their y.d); rows unpacked in
 * panels of up to 64 (per super-block 256 value bytes in element order,
 * the scales and mins as int16 pairs, d and dmin as floats). A tile is 2
 * rows against 2 token vectors, super-blocks in slices that keep the
 * tokens' bytes in L1 (the float chains wait in st between slices). The
 * inner loop is bound by loads (a broadcast per row and 4 values, a load
 * per token vector): one row against 3 token vectors, each token vector
 * loaded once per row, ran 0.28-0.32 ns per row x token x 32 values
 * (bench_packed, AVX2 build, one layer, 512 tokens), 2 x 2 with each load
 * serving both rows 0.25; 2 x 3 spills (0.26). */
#include "kernels/gemm_tlanes.h"

#ifdef GEMM_TLANES
#include <immintrin.h>
#include <string.h>

#include "kernels/forward_packed.h"
#include "kernels/kernel_scratch.h"
#include "kernels/quant_internal.h"
#include "kernels/quant_mxfp4.h"

/* Panel bytes per row and super-block: 256 values, 8 scale pairs (int32
 * lanes sc | sc << 16), 4 mins pairs (min 2j | min 2j+1 << 16), d, dmin. */
#define PSB 320
#define P_SC 256
#define P_MIN 288
#define P_D 304
#define P_DM 308
/* Token bytes per vector of 8 tokens and super-block: 64 dword vectors, 4
 * bsum-pair vectors, the y.d vector. */
#define XSB (64 * 32 + 4 * 32 + 32)
#define X_BS (64 * 32)
#define X_D (64 * 32 + 4 * 32)
/* rows and token vectors a tile, super-blocks a slice (2 x 4 x 2208
 * bytes: L1) */
#define TR 2
#define TV 2
#define KS 4
/* panel bytes (L2) */
#define PANEL_BYTES (192 * 1024)

/* Row l (0-15) of the packed group g, nbl super-blocks, into its panel p. */
static void write_row(const uint8_t *g, int64_t nbl, int l, uint8_t *p)
{
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    for (int64_t i = 0; i < nbl; i++, p += PSB) {
        const uint8_t *nib = g + packed_q4_K_q(i),
                      *sc = g + packed_q4_K_sc(i);
        for (int j = 0; j < 4; j++) {
            /* dword q of pair j: row l's bytes 32j + 4q.. at 512j + 64q + 4l */
            const __m256i q4 = _mm256_i32gather_epi32((const int *)(const void *)(nib + 512 * j + 4 * l),
                                                      _mm256_setr_epi32(0, 16, 32, 48, 64, 80, 96, 112), 4);
            _mm256_storeu_si256((__m256i *)(void *)(p + 64 * j), _mm256_and_si256(q4, m4));
            _mm256_storeu_si256((__m256i *)(void *)(p + 64 * j + 32), _mm256_and_si256(_mm256_srli_epi16(q4, 4), m4));
            const uint8_t *h = sc + 64 + 64 * j;
            const uint32_t s0 = h[l], s1 = h[16 + l];
            const uint32_t sp[2] = {s0 | s0 << 16, s1 | s1 << 16};
            const uint32_t mp = (uint32_t)h[32 + 2 * l] | (uint32_t)h[32 + 2 * l + 1] << 16;
            memcpy(p + P_SC + 8 * j, sp, 8);
            memcpy(p + P_MIN + 4 * j, &mp, 4);
        }
        uint16_t d, dm;
        memcpy(&d, sc + 2 * l, 2);
        memcpy(&dm, sc + 32 + 2 * l, 2);
        const float f[2] = {fp16_to_f32(d), fp16_to_f32(dm)};
        memcpy(p + P_D, f, 8);
    }
}

/* The same panel from a plain Q4_K row (a MoE expert's, never packed):
 * row at g, l unused. */
static void write_row_plain(const uint8_t *g, int64_t nbl, int l, uint8_t *p)
{
    (void)l;
    const block_q4_K *x = (const block_q4_K *)(const void *)g;
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    for (int64_t i = 0; i < nbl; i++, p += PSB) {
        /* the rows come from memory once per call, one after the other:
         * the bytes 2 KB on (this row's or the next) on their way */
        for (int b = 0; b < 144; b += 64)
            _mm_prefetch((const char *)(x + i) + 2048 + b, _MM_HINT_T0);
        uint32_t sp[8], mp[4];
        for (int j = 0; j < 4; j++) {
            const __m256i q4 = _mm256_loadu_si256((const __m256i *)(const void *)(x[i].qs + 32 * j));
            _mm256_storeu_si256((__m256i *)(void *)(p + 64 * j), _mm256_and_si256(q4, m4));
            _mm256_storeu_si256((__m256i *)(void *)(p + 64 * j + 32), _mm256_and_si256(_mm256_srli_epi16(q4, 4), m4));
            uint8_t sc[2], mn[2];
            quant_scale_min_k4(2 * j, x[i].scales, &sc[0], &mn[0]);
            quant_scale_min_k4(2 * j + 1, x[i].scales, &sc[1], &mn[1]);
            sp[2 * j] = (uint32_t)sc[0] | (uint32_t)sc[0] << 16;
            sp[2 * j + 1] = (uint32_t)sc[1] | (uint32_t)sc[1] << 16;
            mp[j] = (uint32_t)mn[0] | (uint32_t)mn[1] << 16;
        }
        memcpy(p + P_SC, sp, sizeof sp);
        memcpy(p + P_MIN, mp, sizeof mp);
        const float f[2] = {fp16_to_f32(x[i].d), fp16_to_f32(x[i].dmin)};
        memcpy(p + P_D, f, 8);
    }
}

/* 8 x 8 dwords: v[k] holds token k's dwords 0-7; afterwards v[k] holds
 * dword k of tokens 0-7. */
static inline void transpose8(__m256i v[8])
{
    __m256i a[8], b[8];
    for (int k = 0; k < 8; k += 2) {
        a[k] = _mm256_unpacklo_epi32(v[k], v[k + 1]);
        a[k + 1] = _mm256_unpackhi_epi32(v[k], v[k + 1]);
    }
    for (int k = 0; k < 8; k += 4) {
        b[k] = _mm256_unpacklo_epi64(a[k], a[k + 2]);
        b[k + 1] = _mm256_unpackhi_epi64(a[k], a[k + 2]);
        b[k + 2] = _mm256_unpacklo_epi64(a[k + 1], a[k + 3]);
        b[k + 3] = _mm256_unpackhi_epi64(a[k + 1], a[k + 3]);
    }
    for (int k = 0; k < 4; k++) {
        v[k] = _mm256_permute2x128_si256(b[k], b[k + 4], 0x20);
        v[k + 4] = _mm256_permute2x128_si256(b[k], b[k + 4], 0x31);
    }
}

/* Tokens t0..t0+7 (past n_tok the last one again) into x, XSB bytes a
 * super-block. */
static void write_tokens(const uint8_t *act, size_t act_stride, int n_tok, int t0, int64_t nbl, uint8_t *x)
{
    const block_q8_K *y[8];
    for (int t = 0; t < 8; t++)
        y[t] = (const block_q8_K *)(const void *)(act + (size_t)(t0 + t < n_tok ? t0 + t : n_tok - 1) * act_stride);
    for (int64_t i = 0; i < nbl; i++, x += XSB) {
        for (int c = 0; c < 8; c++) { /* dwords 8c..8c+7 */
            __m256i v[8];
            for (int t = 0; t < 8; t++)
                v[t] = _mm256_loadu_si256((const __m256i *)(const void *)(y[t][i].qs + 32 * c));
            transpose8(v);
            for (int k = 0; k < 8; k++)
                _mm256_storeu_si256((__m256i *)(void *)(x + 32 * (8 * c + k)), v[k]);
        }
        uint32_t bp[4][8];
        float d[8];
        for (int t = 0; t < 8; t++) {
            const int16_t *b = y[t][i].bsums;
            for (int j = 0; j < 4; j++)
                bp[j][t] = (uint32_t)(uint16_t)(b[4 * j] + b[4 * j + 1]) |
                           (uint32_t)(uint16_t)(b[4 * j + 2] + b[4 * j + 3]) << 16;
            d[t] = y[t][i].d;
        }
        memcpy(x + X_BS, bp, sizeof bp);
        memcpy(x + X_D, d, sizeof d);
    }
}

static inline __m256i bcast32(const uint8_t *p)
{
    int32_t v;
    memcpy(&v, p, 4);
    return _mm256_set1_epi32(v);
}

/* Block i's panel rows (psb bytes a block) and token vectors (xsb). */
static inline __attribute__((always_inline)) void block_ptrs(int NR, int NV, const uint8_t *const pw[TR],
                                                             const uint8_t *const x[TV], int64_t i, size_t psb,
                                                             size_t xsb, const uint8_t *pb[TR], const uint8_t *xb[TV])
{
#pragma GCC unroll 2
    for (int r = 0; r < NR; r++)
        pb[r] = pw[r] + (size_t)i * psb;
#pragma GCC unroll 2
    for (int v = 0; v < NV; v++)
        xb[v] = x[v] + (size_t)i * xsb;
}

/* NR rows (their panels pw[r]) against NV token vectors (x[v]),
 * super-blocks [i0, i1): the chains from st (row r's at st + 2 TV r; zero
 * when i0 is 0) back to st, or when i1 is nbl the outputs to o[r][v] (acc
 * - acc_min per token). GV: the gemv's order (gemm_kq4v.h), the sub-block
 * pairs' integers added up and one FMA each a super-block; else the
 * gemm's, one a pair. Always inlined with constant NR, NV and GV. */
static inline __attribute__((always_inline)) void tile_q4_K(int NR, int NV, int GV, const uint8_t *const pw[TR],
                                                            const uint8_t *const x[TV], int64_t i0, int64_t i1,
                                                            int64_t nbl, __m256 *st, __m256 o[TR][TV])
{
    __m256 acc[TR][TV], accm[TR][TV];
#pragma GCC unroll 2
    for (int r = 0; r < NR; r++)
#pragma GCC unroll 2
        for (int v = 0; v < NV; v++) {
            acc[r][v] = i0 == 0 ? _mm256_setzero_ps() : st[2 * TV * r + 2 * v];
            accm[r][v] = i0 == 0 ? _mm256_setzero_ps() : st[2 * TV * r + 2 * v + 1];
        }
    for (int64_t i = i0; i < i1; i++) {
        const uint8_t *pb[TR], *xb[TV];
        block_ptrs(NR, NV, pw, x, i, PSB, XSB, pb, xb);
        /* d_w * y.d and dmin_w * y.d, the reference's products, once a
         * super-block (multiplies share the pipes with the maddubs) */
        __m256 dd[TR][TV], dmd[TR][TV];
#pragma GCC unroll 2
        for (int r = 0; r < NR; r++) {
            const __m256 dw = _mm256_broadcast_ss((const float *)(const void *)(pb[r] + P_D));
            const __m256 dm = _mm256_broadcast_ss((const float *)(const void *)(pb[r] + P_DM));
#pragma GCC unroll 2
            for (int v = 0; v < NV; v++) {
                const __m256 da = _mm256_loadu_ps((const float *)(const void *)(xb[v] + X_D));
                dd[r][v] = _mm256_mul_ps(dw, da);
                dmd[r][v] = _mm256_mul_ps(dm, da);
            }
        }
        __m256i isum[TR][TV], imin[TR][TV]; /* GV: the super-block's integers */
#pragma GCC unroll 1
        for (int j = 0; j < 4; j++) {
            __m256i s0[TR][TV], s1[TR][TV];
#pragma GCC unroll 2
            for (int r = 0; r < NR; r++)
#pragma GCC unroll 2
                for (int v = 0; v < NV; v++)
                    s0[r][v] = s1[r][v] = _mm256_setzero_si256();
#pragma GCC unroll 8
            for (int q = 0; q < 8; q++) {
#pragma GCC unroll 2
                for (int h = 0; h < 2; h++) { /* sub-block 2j + h */
                    __m256i w[TR];
#pragma GCC unroll 2
                    for (int r = 0; r < NR; r++)
                        w[r] = bcast32(pb[r] + 64 * j + 32 * h + 4 * q);
#pragma GCC unroll 2
                    for (int v = 0; v < NV; v++) {
                        __m256i a =
                            _mm256_loadu_si256((const __m256i *)(const void *)(xb[v] + 32 * (16 * j + 8 * h + q)));
                        if (NR > 1) /* one load for both rows */
                            __asm__("" : "+x"(a));
#pragma GCC unroll 2
                        for (int r = 0; r < NR; r++) {
                            __m256i *s = h ? &s1[r][v] : &s0[r][v];
                            *s = _mm256_add_epi16(*s, _mm256_maddubs_epi16(w[r], a));
                            /* in registers, step by step: GCC otherwise
                             * runs all the maddubs first and spills their
                             * results */
                            __asm__("" : "+x"(*s));
                        }
                    }
                }
            }
#pragma GCC unroll 2
            for (int r = 0; r < NR; r++) {
                const __m256i sc0 = bcast32(pb[r] + P_SC + 8 * j), sc1 = bcast32(pb[r] + P_SC + 8 * j + 4);
                const __m256i mn = bcast32(pb[r] + P_MIN + 4 * j);
#pragma GCC unroll 2
                for (int v = 0; v < NV; v++) {
                    const __m256i is =
                        _mm256_add_epi32(_mm256_madd_epi16(s0[r][v], sc0), _mm256_madd_epi16(s1[r][v], sc1));
                    const __m256i im = _mm256_madd_epi16(
                        mn, _mm256_loadu_si256((const __m256i *)(const void *)(xb[v] + X_BS + 32 * j)));
                    if (GV) {
                        isum[r][v] = j ? _mm256_add_epi32(isum[r][v], is) : is;
                        imin[r][v] = j ? _mm256_add_epi32(imin[r][v], im) : im;
                    } else {
                        acc[r][v] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(is), dd[r][v], acc[r][v]);
                        accm[r][v] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(im), dmd[r][v], accm[r][v]);
                    }
                }
            }
        }
        if (GV)
#pragma GCC unroll 2
            for (int r = 0; r < NR; r++)
#pragma GCC unroll 2
                for (int v = 0; v < NV; v++) {
                    acc[r][v] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[r][v]), dd[r][v], acc[r][v]);
                    accm[r][v] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(imin[r][v]), dmd[r][v], accm[r][v]);
                }
    }
#pragma GCC unroll 2
    for (int r = 0; r < NR; r++)
#pragma GCC unroll 2
        for (int v = 0; v < NV; v++) {
            if (i1 < nbl) {
                st[2 * TV * r + 2 * v] = acc[r][v];
                st[2 * TV * r + 2 * v + 1] = accm[r][v];
            } else
                o[r][v] = _mm256_sub_ps(acc[r][v], accm[r][v]);
        }
}

typedef void (*tile_fn)(const uint8_t *const[TR], const uint8_t *const[TV], int64_t, int64_t, int64_t, __m256 *,
                        __m256[TR][TV]);
/* The tile callbacks of a type: NAME##_NR_NV, each its own copy of the
 * always-inlined BODY with the counts and its variant ARG folded in. */
#define TILE_FN(NAME, BODY, ARG, NR, NV)                                                                            \
    static void NAME##_##NR##_##NV(const uint8_t *const pw[TR], const uint8_t *const x[TV], int64_t i0, int64_t i1, \
                                   int64_t nbl, __m256 *st, __m256 o[TR][TV])                                      \
    {                                                                                                              \
        BODY(NR, NV, ARG, pw, x, i0, i1, nbl, st, o);                                                              \
    }
#define TILE_FNS(NAME, BODY, ARG)                                                                                   \
    TILE_FN(NAME, BODY, ARG, 1, 1) TILE_FN(NAME, BODY, ARG, 1, 2) TILE_FN(NAME, BODY, ARG, 2, 1)                   \
        TILE_FN(NAME, BODY, ARG, 2, 2)
TILE_FNS(tile, tile_q4_K, 0)
TILE_FNS(tilev, tile_q4_K, 1)

/* Q4_0: per block of 32 a row's panel holds its 32 values (0-15) in
 * element order and d_w; a token vector its 8 dwords, -8 x each token's
 * sum (the offset of the nibbles, as forward_packed.c's tile takes it off)
 * and y.d. */
#define PSB0 64
#define P0_D 32
#define XSB0 (8 * 32 + 32 + 32)
#define X0_BASE (8 * 32)
#define X0_D (8 * 32 + 32)
/* blocks a slice (2 x 32 x 320 bytes: L1) */
#define KS0 32

static void write_row0(const uint8_t *g, int64_t nbl, int l, uint8_t *p)
{
    const __m128i m4 = _mm_set1_epi8(0x0F), idx = _mm_setr_epi32(0, 16, 32, 48);
    for (int64_t i = 0; i < nbl; i++, p += PSB0) {
        /* dword j of row l at 64j + 4l: elements 4j.. (low nibbles), 16 + 4j.. (high) */
        const __m128i b = _mm_i32gather_epi32(
            (const int *)(const void *)(g + packed_q4_0_q(i) + 4 * l), idx, 4);
        _mm_storeu_si128((__m128i *)(void *)p, _mm_and_si128(b, m4));
        _mm_storeu_si128((__m128i *)(void *)(p + 16), _mm_and_si128(_mm_srli_epi16(b, 4), m4));
        uint16_t d;
        memcpy(&d, g + packed_q4_0_sc(i) + 2 * l, 2);
        const float f = fp16_to_f32(d);
        memcpy(p + P0_D, &f, 4);
    }
}

/* MXFP4 (packed by forward_packed.c as Q4_0 is, the 16 rows' E8M0 bytes
 * where packed_scale_at says, 16 a block): the same panel with the doubled E2M1
 * values plus QUANT_MX_OFF (0..24) and d_w the half scale. */
static void write_row_mx(const uint8_t *g, int64_t nbl, int l, uint8_t *p)
{
    const __m128i m4 = _mm_set1_epi8(0x0F), idx = _mm_setr_epi32(0, 16, 32, 48), lut = quant_mx_lut_off();
    for (int64_t i = 0; i < nbl; i++, p += PSB0) {
        const __m128i b = _mm_i32gather_epi32(
            (const int *)(const void *)(g + packed_mxfp4_q(i) + 4 * l), idx, 4);
        _mm_storeu_si128((__m128i *)(void *)p, _mm_shuffle_epi8(lut, _mm_and_si128(b, m4)));
        _mm_storeu_si128((__m128i *)(void *)(p + 16), _mm_shuffle_epi8(lut, _mm_and_si128(_mm_srli_epi16(b, 4), m4)));
        const float f = quant_e8m0_to_fp32_half(g[packed_mxfp4_sc(i) + l]);
        memcpy(p + P0_D, &f, 4);
    }
}

/* Tokens t0..t0+7 (past n_tok the last again), Q8_0, into x, XSB0 bytes a
 * block; off: the weights' offset (8, QUANT_MX_OFF) times each token's
 * block sum is taken back off. */
static inline __attribute__((always_inline)) void write_tokens_b32(const uint8_t *act, size_t act_stride, int n_tok,
                                                                   int t0, int64_t nbl, uint8_t *x, int off)
{
    const block_q8_0 *y[8];
    for (int t = 0; t < 8; t++)
        y[t] = (const block_q8_0 *)(const void *)(act + (size_t)(t0 + t < n_tok ? t0 + t : n_tok - 1) * act_stride);
    const __m256i ones8 = _mm256_set1_epi8(1), ones16 = _mm256_set1_epi16(1);
    for (int64_t i = 0; i < nbl; i++, x += XSB0) {
        __m256i v[8];
        float d[8];
        for (int t = 0; t < 8; t++) {
            v[t] = _mm256_loadu_si256((const __m256i *)(const void *)y[t][i].qs);
            d[t] = fp16_to_f32(y[t][i].d);
        }
        transpose8(v);
        __m256i sum = _mm256_setzero_si256(); /* each token's sum, a lane each */
        for (int k = 0; k < 8; k++) {
            _mm256_storeu_si256((__m256i *)(void *)(x + 32 * k), v[k]);
            sum = _mm256_add_epi32(sum, _mm256_madd_epi16(_mm256_maddubs_epi16(ones8, v[k]), ones16));
        }
        _mm256_storeu_si256((__m256i *)(void *)(x + X0_BASE), _mm256_mullo_epi32(sum, _mm256_set1_epi32(-off)));
        memcpy(x + X0_D, d, sizeof d);
    }
}

static void write_tokens0(const uint8_t *act, size_t act_stride, int n_tok, int t0, int64_t nbl, uint8_t *x)
{
    write_tokens_b32(act, act_stride, n_tok, t0, nbl, x, 8);
}

static void write_tokens_mx(const uint8_t *act, size_t act_stride, int n_tok, int t0, int64_t nbl, uint8_t *x)
{
    write_tokens_b32(act, act_stride, n_tok, t0, nbl, x, QUANT_MX_OFF);
}

/* The Q4_0 tile (as tile's): per output acc = fma(sum + base, d_w * y.d,
 * acc) a block, forward_packed.c's q4_0_half per lane; its state in st[2 v]
 * of each row. MX: MXFP4's values (up to 24) in two int16 sums of 16
 * products, each at most 16 x 24 x 127. */
static inline __attribute__((always_inline)) void tile_b32(int NR, int NV, int MX, const uint8_t *const pw[TR],
                                                           const uint8_t *const x[TV], int64_t i0, int64_t i1,
                                                           int64_t nbl, __m256 *st, __m256 o[TR][TV])
{
    const __m256i ones = _mm256_set1_epi16(1);
    __m256 acc[TR][TV];
#pragma GCC unroll 2
    for (int r = 0; r < NR; r++)
#pragma GCC unroll 2
        for (int v = 0; v < NV; v++)
            acc[r][v] = i0 == 0 ? _mm256_setzero_ps() : st[2 * TV * r + 2 * v];
    for (int64_t i = i0; i < i1; i++) {
        const uint8_t *pb[TR], *xb[TV];
        block_ptrs(NR, NV, pw, x, i, PSB0, XSB0, pb, xb);
        __m256i s[2][TR][TV];
#pragma GCC unroll 2
        for (int h = 0; h <= MX; h++)
#pragma GCC unroll 2
            for (int r = 0; r < NR; r++)
#pragma GCC unroll 2
                for (int v = 0; v < NV; v++)
                    s[h][r][v] = _mm256_setzero_si256();
#pragma GCC unroll 8
        for (int q = 0; q < 8; q++) {
            const int h = MX ? q / 4 : 0;
            __m256i w[TR];
#pragma GCC unroll 2
            for (int r = 0; r < NR; r++)
                w[r] = bcast32(pb[r] + 4 * q);
#pragma GCC unroll 2
            for (int v = 0; v < NV; v++) {
                __m256i a = _mm256_loadu_si256((const __m256i *)(const void *)(xb[v] + 32 * q));
                if (NR > 1) /* one load for both rows */
                    __asm__("" : "+x"(a));
#pragma GCC unroll 2
                for (int r = 0; r < NR; r++) {
                    /* Q4_0: 16 products an int16 at most: |.| <= 16 x 15 x 127 */
                    s[h][r][v] = _mm256_add_epi16(s[h][r][v], _mm256_maddubs_epi16(w[r], a));
                    __asm__("" : "+x"(s[h][r][v]));
                }
            }
        }
#pragma GCC unroll 2
        for (int r = 0; r < NR; r++) {
            const __m256 dw = _mm256_broadcast_ss((const float *)(const void *)(pb[r] + P0_D));
#pragma GCC unroll 2
            for (int v = 0; v < NV; v++) {
                __m256i is = _mm256_add_epi32(_mm256_madd_epi16(s[0][r][v], ones),
                                              _mm256_loadu_si256((const __m256i *)(const void *)(xb[v] + X0_BASE)));
                if (MX)
                    is = _mm256_add_epi32(is, _mm256_madd_epi16(s[1][r][v], ones));
                const __m256 da = _mm256_loadu_ps((const float *)(const void *)(xb[v] + X0_D));
                acc[r][v] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(is), _mm256_mul_ps(dw, da), acc[r][v]);
            }
        }
    }
#pragma GCC unroll 2
    for (int r = 0; r < NR; r++)
#pragma GCC unroll 2
        for (int v = 0; v < NV; v++) {
            if (i1 < nbl)
                st[2 * TV * r + 2 * v] = acc[r][v];
            else
                o[r][v] = acc[r][v];
        }
}

TILE_FNS(tile0, tile_b32, 0)
TILE_FNS(tile_mx, tile_b32, 1)

/* What a type brings to the driver below. */
struct tl_kind {
    size_t psb, xsb; /* panel bytes a row and block, token bytes a vector and block */
    int64_t ks;      /* blocks a slice */
    void (*write_row)(const uint8_t *g, int64_t nbl, int l, uint8_t *p);
    void (*write_tokens)(const uint8_t *act, size_t act_stride, int n_tok, int t0, int64_t nbl, uint8_t *x);
    tile_fn tiles[TR][TV]; /* [rows - 1][token vectors - 1] */
};

static const struct tl_kind kind_q4_K = {PSB, XSB, KS, write_row, write_tokens,
                                         {{tile_1_1, tile_1_2}, {tile_2_1, tile_2_2}}};
static const struct tl_kind kind_q4_K_gemv = {PSB, XSB, KS, write_row_plain, write_tokens,
                                              {{tilev_1_1, tilev_1_2}, {tilev_2_1, tilev_2_2}}};
static const struct tl_kind kind_q4_0 = {PSB0, XSB0, KS0, write_row0, write_tokens0,
                                         {{tile0_1_1, tile0_1_2}, {tile0_2_1, tile0_2_2}}};
static const struct tl_kind kind_mxfp4 = {PSB0, XSB0, KS0, write_row_mx, write_tokens_mx,
                                          {{tile_mx_1_1, tile_mx_1_2}, {tile_mx_2_1, tile_mx_2_2}}};

/* Rows [r0, r1) of the matrix at packed, gr rows a group of gb bytes (a
 * plain matrix: 1 row, its size), against tokens [0, n_tok). */
static bool tl_rows(const struct tl_kind *k, const uint8_t *packed, int64_t nbl, int gr, size_t gb, int64_t r0,
                    int64_t r1, const uint8_t *act, size_t act_stride, int n_tok, float *out, int64_t out_stride)
{
    if (r0 >= r1 || n_tok < 1)
        return true;
    const int ntv = (n_tok + 7) / 8;
    int64_t pr = PANEL_BYTES / (nbl * (int64_t)k->psb);
    pr = pr < 4 ? 4 : pr > 64 ? 64 : pr;
    if (pr > r1 - r0)
        pr = r1 - r0;
    const size_t x_bytes = (size_t)ntv * (size_t)nbl * k->xsb, p_bytes = (size_t)pr * (size_t)nbl * k->psb;
    const size_t st_bytes = (size_t)(pr + TR) * TV * 2 * sizeof(__m256);
    uint8_t *scr = kernel_scratch_get(x_bytes + p_bytes + st_bytes);
    if (!scr)
        return false;
    uint8_t *xs = scr, *panel = scr + x_bytes;
    __m256 *st = (__m256 *)(void *)(scr + x_bytes + p_bytes);
    for (int v = 0; v < ntv; v++)
        k->write_tokens(act, act_stride, n_tok, 8 * v, nbl, xs + (size_t)v * (size_t)nbl * k->xsb);
    for (int64_t c0 = r0; c0 < r1; c0 += pr) {
        const int64_t nr = r1 - c0 < pr ? r1 - c0 : pr;
        for (int64_t r = 0; r < nr; r++)
            k->write_row(packed + (size_t)((c0 + r) / gr) * gb, nbl, (int)((c0 + r) % gr),
                         panel + (size_t)r * (size_t)nbl * k->psb);
        for (int v0 = 0; v0 < ntv; v0 += TV) {
            const int nv = ntv - v0 < TV ? ntv - v0 : TV;
            const uint8_t *x[TV];
            for (int v = 0; v < TV; v++)
                x[v] = xs + (size_t)(v0 + (v < nv ? v : 0)) * (size_t)nbl * k->xsb;
            for (int64_t i0 = 0; i0 < nbl; i0 += k->ks) {
                const int64_t i1 = nbl - i0 < k->ks ? nbl : i0 + k->ks;
                for (int64_t r = 0; r < nr; r += TR) {
                    const int mr = nr - r < TR ? (int)(nr - r) : TR;
                    const uint8_t *pw[TR];
                    for (int j = 0; j < TR; j++)
                        pw[j] = panel + (size_t)(r + (j < mr ? j : 0)) * (size_t)nbl * k->psb;
                    __m256 o[TR][TV];
                    k->tiles[mr - 1][nv - 1](pw, x, i0, i1, nbl, st + 2 * TV * r, o);
                    if (i1 < nbl)
                        continue;
                    for (int j = 0; j < mr; j++)
                        for (int v = 0; v < nv; v++) {
                            float f[8];
                            _mm256_storeu_ps(f, o[j][v]);
                            const int t0 = 8 * (v0 + v), nt = n_tok - t0 < 8 ? n_tok - t0 : 8;
                            for (int t = 0; t < nt; t++)
                                out[(int64_t)(t0 + t) * out_stride + c0 + r + j] = f[t];
                        }
                }
            }
        }
    }
    return true;
}
bool gemm_tlanes_q4_K(const uint8_t *packed, int64_t nbl, size_t gb, int64_t r0, int64_t r1, const void *act,
                      size_t act_stride, int n_tok, float *out, int64_t out_stride)
{
    return tl_rows(&kind_q4_K, packed, nbl, PACKED_ROWS, gb, r0, r1, (const uint8_t *)act, act_stride, n_tok, out,
                   out_stride);
}

bool gemm_tlanes_q4_0(const uint8_t *packed, int64_t nbl, size_t gb, int64_t r0, int64_t r1, const void *act,
                      size_t act_stride, int n_tok, float *out, int64_t out_stride)
{
    return tl_rows(&kind_q4_0, packed, nbl, PACKED_ROWS, gb, r0, r1, (const uint8_t *)act, act_stride, n_tok, out,
                   out_stride);
}

bool gemm_tlanes_mxfp4(const uint8_t *packed, int64_t nbl, size_t gb, int64_t r0, int64_t r1, const void *act,
                       size_t act_stride, int n_tok, float *out, int64_t out_stride)
{
    return tl_rows(&kind_mxfp4, packed, nbl, PACKED_ROWS, gb, r0, r1, (const uint8_t *)act, act_stride, n_tok, out,
                   out_stride);
}

bool gemm_tlanes_q4_K_gemv(const void *w, int64_t nbl, size_t rs, int64_t r0, int64_t r1, const void *act,
                           size_t act_stride, int n_tok, float *out, int64_t out_stride)
{
    return tl_rows(&kind_q4_K_gemv, (const uint8_t *)w, nbl, 1, rs, r0, r1, (const uint8_t *)act, act_stride, n_tok,
                   out, out_stride);
}
#else
bool gemm_tlanes_q4_K(const uint8_t *packed, int64_t nbl, size_t gb, int64_t r0, int64_t r1, const void *act,
                      size_t act_stride, int n_tok, float *out, int64_t out_stride)
{
    (void)packed, (void)nbl, (void)gb, (void)r0, (void)r1, (void)act, (void)act_stride, (void)n_tok, (void)out,
        (void)out_stride;
    return false;
}

bool gemm_tlanes_q4_0(const uint8_t *packed, int64_t nbl, size_t gb, int64_t r0, int64_t r1, const void *act,
                      size_t act_stride, int n_tok, float *out, int64_t out_stride)
{
    return gemm_tlanes_q4_K(packed, nbl, gb, r0, r1, act, act_stride, n_tok, out, out_stride);
}

bool gemm_tlanes_mxfp4(const uint8_t *packed, int64_t nbl, size_t gb, int64_t r0, int64_t r1, const void *act,
                       size_t act_stride, int n_tok, float *out, int64_t out_stride)
{
    return gemm_tlanes_q4_K(packed, nbl, gb, r0, r1, act, act_stride, n_tok, out, out_stride);
}

bool gemm_tlanes_q4_K_gemv(const void *w, int64_t nbl, size_t rs, int64_t r0, int64_t r1, const void *act,
                           size_t act_stride, int n_tok, float *out, int64_t out_stride)
{
    return gemm_tlanes_q4_K((const uint8_t *)w, nbl, rs, r0, r1, act, act_stride, n_tok, out, out_stride);
}
#endif
