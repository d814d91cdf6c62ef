/* Repacked-weight matmul order (see forward_repack.h). */
#include "kernels/forward_repack.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/forward_math.h"
#include "kernels/quant_internal.h"
#include "kernels/quant_mxfp4.h"
#include "kernels/repack_mxfp4.h"
#include "gguf/tensor.h"

#ifdef QUANT_HAVE_AVX2
#define RP_AVX2 1
#endif
#if defined(RP_AVX2) && defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VNNI__)
#define RP_Q4K_GEMV_VNNI 1 /* one-token Q4_K rows: q4_K_gemv_4rows_vnni */
#endif

#ifdef RP_AVX2
/* Signed Q4_0 values (nibble - 8) of one block, in element order. */
static inline __m256i q4_0_values(const block_q4_0 *x)
{
    return _mm256_sub_epi8(nibbles32(x->qs), _mm256_set1_epi8(8));
}
#endif

/* Exact integer dot of one Q4_0 block (values nibble - 8) with a Q8_0 block. */
static inline int32_t isum_q4_0(const block_q4_0 *x, const block_q8_0 *y)
{
#ifdef RP_AVX2
    return hsum_epi32(dot_s8(q4_0_values(x), _mm256_loadu_si256((const __m256i *)y->qs)));
#else
    int32_t s = 0;
    for (int j = 0; j < 16; j++)
        s += ((x->qs[j] & 15) - 8) * y->qs[j] + ((x->qs[j] >> 4) - 8) * y->qs[j + 16];
    return s;
#endif
}

/* ---- F16 / F32 weights --------------------------------------------------
 * Decode steps (one token) go through ggml_vec_dot_{f16,f32}: per 64
 * elements four 16-lane FMA accumulators, folded 0+2, 1+3, 0+1 and reduced
 * like GCC's _mm512_reduce_add_ps; the tail is added (in double for F16).
 * Batches go through llamafile's tinyBLAS when the row length is a multiple
 * of 16 and the weight has a multiple of 4 rows (tinyblas_takes): one
 * 16-lane FMA accumulator, the same final reduction. */

static inline float ld(bool f16, const void *p, int64_t i)
{
    return f16 ? h2f(((const uint16_t *)p)[i]) : ((const float *)p)[i];
}

#if defined(__AVX512F__)
static inline __m512 ld16w(bool f16, const void *p, int64_t i)
{
    return f16 ? _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)((const uint16_t *)p + i)))
               : _mm512_loadu_ps((const float *)p + i);
}
#endif

#ifdef RP_AVX2
/* 16 lanes as two 8-wide halves: the same per-lane operations as AVX-512. */
static inline void ld16(bool f16, const void *p, int64_t i, __m256 *lo, __m256 *hi)
{
    if (f16) {
        const uint16_t *h = (const uint16_t *)p + i;
        *lo = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)h));
        *hi = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(h + 8)));
    } else {
        const float *f = (const float *)p + i;
        *lo = _mm256_loadu_ps(f);
        *hi = _mm256_loadu_ps(f + 8);
    }
}

#endif

/* The leftover loop of ggml_vec_dot_f32 (`sumf += x[i]*y[i]` after the
 * 64-wide part) as GCC vectorizes it in the reference build: with 16 or more
 * left, blocks of 16 and then one of 8 multiply in a vector (each product
 * rounded) and add the products to the sum one by one, in order; what is
 * left after that, or all of it when fewer than 16 are left, is a chain of
 * scalar FMAs. The split shows in the last bit of e.g. stories260K's
 * 172-wide ffn_down. */
static float mul_rounded(float x, float y)
{
    volatile float p = x * y; /* a store keeps the compiler from fusing it into the add */
    return p;
}

static float f32_tail(float sum, int64_t left, const float *w, const float *a)
{
    int64_t i = 0;
    if (left >= 16) {
        const int64_t n16 = left & ~(int64_t)15;
        int64_t n8 = (left - n16) >= 8 ? 8 : 0;
        for (; i < n16 + n8; i++)
            sum += mul_rounded(w[i], a[i]);
    }
    for (; i < left; i++)
        sum = fmaf(w[i], a[i], sum);
    return sum;
}

static inline __attribute__((always_inline)) float vecdot_float_k(bool wf16, bool af16, int64_t n, const void *w,
                                                                   const void *a)
{
    const int64_t np = n & ~(int64_t)63;
    float red = 0.0f; /* the 64-wide part, reduced */
    if (np > 0) {
#if defined(__AVX512F__)
        __m512 acc[4];
        for (int j = 0; j < 4; j++)
            acc[j] = _mm512_setzero_ps();
        for (int64_t i = 0; i < np; i += 64) {
            _Pragma("GCC unroll 4") for (int j = 0; j < 4; j++)
                acc[j] = _mm512_fmadd_ps(ld16w(wf16, w, i + 16 * j), ld16w(af16, a, i + 16 * j), acc[j]);
        }
        red = _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(acc[0], acc[2]), _mm512_add_ps(acc[1], acc[3])));
#elif defined(RP_AVX2)
        __m256 lo[4], hi[4];
        for (int j = 0; j < 4; j++)
            lo[j] = hi[j] = _mm256_setzero_ps();
        for (int64_t i = 0; i < np; i += 64)
            _Pragma("GCC unroll 4") for (int j = 0; j < 4; j++) {
                __m256 wl, wh, al, ah;
                ld16(wf16, w, i + 16 * j, &wl, &wh);
                ld16(af16, a, i + 16 * j, &al, &ah);
                lo[j] = _mm256_fmadd_ps(wl, al, lo[j]);
                hi[j] = _mm256_fmadd_ps(wh, ah, hi[j]);
            }
        const __m256 l = _mm256_add_ps(_mm256_add_ps(lo[0], lo[2]), _mm256_add_ps(lo[1], lo[3]));
        const __m256 h = _mm256_add_ps(_mm256_add_ps(hi[0], hi[2]), _mm256_add_ps(hi[1], hi[3]));
        red = red16_ps(l, h);
#else
        float acc[4][16];
        memset(acc, 0, sizeof acc);
        for (int64_t i = 0; i < np; i += 64)
            for (int j = 0; j < 4; j++)
                for (int l = 0; l < 16; l++)
                    acc[j][l] = fmaf(ld(wf16, w, i + 16 * j + l), ld(af16, a, i + 16 * j + l), acc[j][l]);
        float v[16];
        for (int l = 0; l < 16; l++)
            v[l] = (acc[0][l] + acc[2][l]) + (acc[1][l] + acc[3][l]);
        red = red16(v);
#endif
    }
    if (wf16) {
        double sum = red;
        for (int64_t i = np; i < n; i++)
            sum += (double)(ld(true, w, i) * ld(af16, a, i));
        return (float)sum;
    }
    return f32_tail(red, n - np, (const float *)w + np, (const float *)a + np);
}

/* One instance per pair of types, so that the flags are constants and the
 * eight AVX2 accumulator halves stay in registers (with the flags as
 * arguments GCC kept them on the stack, and F16 decoding ran at 0.7 of
 * llama.cpp on tiny-spm-f16). */
static float vecdot_float(bool wf16, bool af16, int64_t n, const void *w, const void *a)
{
    if (!wf16)
        return vecdot_float_k(false, false, n, w, a);
    return af16 ? vecdot_float_k(true, true, n, w, a) : vecdot_float_k(true, false, n, w, a);
}

float refdot_f32(int64_t n, const float *x, const float *y) { return vecdot_float(false, false, n, x, y); }

float refdot_f16(int64_t n, const uint16_t *x, const uint16_t *y) { return vecdot_float(true, true, n, x, y); }

static float tinyblas_float(bool f16, int64_t n, const void *w, const void *a)
{
#ifdef RP_AVX2
    __m256 lo = _mm256_setzero_ps(), hi = _mm256_setzero_ps();
    for (int64_t k = 0; k < n; k += 16) {
        __m256 wl, wh, al, ah;
        ld16(f16, w, k, &wl, &wh);
        ld16(false, a, k, &al, &ah);
        lo = _mm256_fmadd_ps(wl, al, lo);
        hi = _mm256_fmadd_ps(wh, ah, hi);
    }
    return red16_ps(lo, hi);
#else
    float acc[16] = {0};
    for (int64_t k = 0; k < n; k += 16)
        for (int l = 0; l < 16; l++)
            acc[l] = fmaf(ld(f16, w, k + l), ld(false, a, k + l), acc[l]);
    return red16(acc);
#endif
}

/* BF16 batches: llamafile's tinyBLAS<32, __m512, __m512bh> (AVX512-BF16)
 * keeps ONE 16-lane accumulator per output and feeds it 32 BF16 pairs per
 * vdpbf16ps, reduced with _mm512_reduce_add_ps in float; ggml_vec_dot_bf16
 * (single tokens) keeps two and adds them in double. vdpbf16ps adds a lane's
 * odd product first, then the even one, each rounded (products are exact). */
static float tinyblas_bf16(int64_t n, const uint16_t *w, const uint16_t *a)
{
#if defined(__AVX512BF16__) && defined(__AVX512F__)
    __m512 c = _mm512_setzero_ps();
    for (int64_t k = 0; k < n; k += 32)
        c = _mm512_dpbf16_ps(c, (__m512bh)_mm512_loadu_si512(w + k), (__m512bh)_mm512_loadu_si512(a + k));
    return _mm512_reduce_add_ps(c);
#else
    float acc[16] = {0};
    for (int64_t k = 0; k < n; k += 32)
        for (int l = 0; l < 16; l++) {
            const int64_t i = k + 2 * l;
            acc[l] += tensor_bf16_to_fp32(w[i + 1]) * tensor_bf16_to_fp32(a[i + 1]);
            acc[l] += tensor_bf16_to_fp32(w[i]) * tensor_bf16_to_fp32(a[i]);
        }
    return red16(acc);
#endif
}

/* llamafile_sgemm takes a batch (n_tok >= 2) only where tinyBLAS::matmul
 * accepts it: rows a multiple of KN long and, on AVX-512, a multiple of 4
 * rows (m % 4 != 0 returns false, and ggml runs vec_dot for every output).
 * A one-row weight such as qwen35moe's shared-expert gate is vec_dot's. */
static bool tinyblas_takes(const gguf_tensor *w, int n_tok, int64_t kn)
{
    return n_tok >= 2 && w->ne[0] % kn == 0 && w->ne[1] % 4 == 0;
}

bool refbf16_applies(const gguf_tensor *w, int n_tok)
{
    return w->type == TENSOR_TYPE_BF16 && tinyblas_takes(w, n_tok, 32);
}

bool reffloat_applies(const gguf_tensor *w)
{
    return w->type == TENSOR_TYPE_F16 || w->type == TENSOR_TYPE_F32;
}

#if defined(__AVX512F__)
/* _mm512_reduce_add_ps of a, b, c and d, side by side: GCC reduces by
 * adding the upper half to the lower one, 256, 128 bits, then lanes 2,3 to
 * 0,1 and lane 1 to lane 0. Here the same additions (each with the same two
 * operands) run on all four at once, a quarter of the vector each. */
static inline __m128 reduce4_ps(__m512 a, __m512 b, __m512 c, __m512 d)
{
    const __m512 ab = _mm512_add_ps(_mm512_shuffle_f32x4(a, b, 0x44), _mm512_shuffle_f32x4(a, b, 0xEE));
    const __m512 cd = _mm512_add_ps(_mm512_shuffle_f32x4(c, d, 0x44), _mm512_shuffle_f32x4(c, d, 0xEE));
    /* quarter i: the 8-lane sum's lanes 0-3 plus its lanes 4-7 */
    const __m512 q = _mm512_add_ps(_mm512_shuffle_f32x4(ab, cd, 0x88), _mm512_shuffle_f32x4(ab, cd, 0xDD));
    const __m512 p = _mm512_add_ps(q, _mm512_permute_ps(q, 0x4E));
    const __m512 r = _mm512_add_ps(p, _mm512_permute_ps(p, 0xB1));
    return _mm512_castps512_ps128(_mm512_permutexvar_ps(_mm512_setr_epi32(0, 4, 8, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0), r));
}

/* The weight kinds of the tinyBLAS tiles. */
enum tb_kind { TB_F32, TB_F16, TB_BF16 };

/* Weight row i, elements k..: F32 and F16 as 16 floats, BF16 as 32 raw halves. */
static inline __m512 tb_weights(enum tb_kind kind, const void *w, int64_t k)
{
    if (kind == TB_F16)
        return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)((const uint16_t *)w + k)));
    if (kind == TB_BF16)
        return _mm512_castsi512_ps(_mm512_loadu_si512((const uint16_t *)w + k));
    return _mm512_loadu_ps((const float *)w + k);
}

#if defined(__AVX512BF16__)
#define TB_DPBF16(acc, x, a) _mm512_dpbf16_ps(acc, (__m512bh)(x), (__m512bh)(a))
#else
#define TB_DPBF16(acc, x, a) (acc) /* never reached: refbf16_matmul takes the one-output path */
#endif

/* 4 weight rows x RN tokens of tinyBLAS: each output keeps its one 16-lane
 * accumulator (an FMA per 16 F32/F16 elements, a vdpbf16ps per 32 BF16
 * ones) and GCC's _mm512_reduce_add_ps; the tile only shares the loads and
 * the weights' conversion, and reduces four outputs at once. Activations
 * are F32 rows (F16-rounded values for F16 weights) or BF16 rows. `kind`
 * and RN are constants at every call, so the 24 accumulators stay in
 * registers. */
static inline __attribute__((always_inline)) void tinyblas_tile(enum tb_kind kind, int rn, int64_t n,
                                                                const uint8_t *w, size_t rb, const uint8_t *act,
                                                                size_t act_stride, float *out, int64_t out_stride)
{
    const int64_t step = kind == TB_BF16 ? 32 : 16;
    __m512 acc[4][6];
    _Pragma("GCC unroll 4") for (int i = 0; i < 4; i++)
        _Pragma("GCC unroll 6") for (int j = 0; j < rn; j++) acc[i][j] = _mm512_setzero_ps();
    for (int64_t k = 0; k < n; k += step) {
        __m512 x[4];
        _Pragma("GCC unroll 4") for (int i = 0; i < 4; i++) x[i] = tb_weights(kind, w + (size_t)i * rb, k);
        _Pragma("GCC unroll 6") for (int j = 0; j < rn; j++)
        {
            const uint8_t *aj = act + (size_t)j * act_stride;
            __m512 a = kind == TB_BF16 ? _mm512_castsi512_ps(_mm512_loadu_si512((const uint16_t *)(const void *)aj + k))
                                       : _mm512_loadu_ps((const float *)(const void *)aj + k);
            __asm__("" : "+v"(a)); /* one load, not one per FMA: the loads were the bottleneck */
            _Pragma("GCC unroll 4") for (int i = 0; i < 4; i++) acc[i][j] =
                kind == TB_BF16 ? TB_DPBF16(acc[i][j], x[i], a) : _mm512_fmadd_ps(x[i], a, acc[i][j]);
        }
    }
    _Pragma("GCC unroll 6") for (int j = 0; j < rn; j++)
        _mm_storeu_ps(out + (int64_t)j * out_stride, reduce4_ps(acc[0][j], acc[1][j], acc[2][j], acc[3][j]));
}

/* Rows [r, r + 4 * nb4) against every token: tiles of 6 tokens, then single
 * ones. Each 6-token tile runs over the nb4 blocks of 4 rows before the next
 * tile, so its activations (6 x n floats) are read from L2 once per 4 * nb4
 * rows rather than per 4: at TinyLlama's sizes (n up to 5632, 128 tokens)
 * the activations no longer fit in L2, and reading them again for every 4
 * rows held F16 prompts at 0.84 of llama.cpp. The rows' weights (4 * nb4 x n)
 * stay in L2 meanwhile. Tiles are computed as before, so the bits are too. */
static inline __attribute__((always_inline)) void tinyblas_rows(enum tb_kind kind, int64_t n, const uint8_t *w,
                                                                size_t rb, int nb4, const uint8_t *act,
                                                                size_t act_stride, int n_tok, float *out,
                                                                int64_t out_stride)
{
    int t = 0;
    for (; t + 6 <= n_tok; t += 6)
        for (int b = 0; b < nb4; b++)
            tinyblas_tile(kind, 6, n, w + (size_t)(4 * b) * rb, rb, act + (size_t)t * act_stride, act_stride,
                          out + (int64_t)t * out_stride + 4 * b, out_stride);
    for (; t < n_tok; t++)
        for (int b = 0; b < nb4; b++)
            tinyblas_tile(kind, 1, n, w + (size_t)(4 * b) * rb, rb, act + (size_t)t * act_stride, act_stride,
                          out + (int64_t)t * out_stride + 4 * b, out_stride);
}

/* Blocks of 4 rows that tinyblas_rows takes at once from row r on (TB_NB4
 * at most; 1, 4, 8 and 16 measured: 8 gave F16, F32 and BF16 prompts on
 * TinyLlama-1.1B shapes 10-20 % over 1); 0 when fewer than 4 rows are left. */
#define TB_NB4 8
static inline int tb_blocks(int64_t r, int64_t r1)
{
    const int64_t b = (r1 - r) / 4;
    return b < TB_NB4 ? (int)b : TB_NB4;
}

/* One instance per kind, so that `kind` is a constant in the tile. */
static void tinyblas_rows_f32(int64_t n, const uint8_t *w, size_t rb, int nb4, const uint8_t *act, size_t act_stride,
                              int n_tok, float *out, int64_t out_stride)
{
    tinyblas_rows(TB_F32, n, w, rb, nb4, act, act_stride, n_tok, out, out_stride);
}

static void tinyblas_rows_f16(int64_t n, const uint8_t *w, size_t rb, int nb4, const uint8_t *act, size_t act_stride,
                              int n_tok, float *out, int64_t out_stride)
{
    tinyblas_rows(TB_F16, n, w, rb, nb4, act, act_stride, n_tok, out, out_stride);
}

#if defined(__AVX512BF16__)
static void tinyblas_rows_bf16(int64_t n, const uint8_t *w, size_t rb, int nb4, const uint8_t *act, size_t act_stride,
                               int n_tok, float *out, int64_t out_stride)
{
    tinyblas_rows(TB_BF16, n, w, rb, nb4, act, act_stride, n_tok, out, out_stride);
}
#endif
#endif

#if !defined(__AVX512F__) && defined(RP_AVX2)
/* AVX2 has 16 registers of 8 lanes: each output's 16-lane tinyBLAS
 * accumulator is a pair of halves (lanes 0-7, 8-15), each half doing the
 * same FMA per lane as the AVX-512 register would. Loading and converting
 * each weight once for three tokens is what the one-output loop
 * (tinyblas_float) lacked: it ran the reference's F16 prompts at a quarter
 * of llama.cpp's speed here. */
static inline __m256 tb2_weights(bool f16, const uint8_t *w, int64_t k)
{
    return f16 ? _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)((const uint16_t *)(const void *)w + k)))
               : _mm256_loadu_ps((const float *)(const void *)w + k);
}

/* Two outputs' halves reduced side by side as red16_ps does (upper 8 onto
 * lower 8, 4 onto 4, then (0+2) + (1+3)), stored to out[0] and out[1]. */
static inline void tb2_store2(__m256 alo, __m256 ahi, __m256 blo, __m256 bhi, float *out)
{
    const __m256 sa = _mm256_add_ps(ahi, alo), sb = _mm256_add_ps(bhi, blo);
    const __m256 ab = _mm256_add_ps(_mm256_permute2f128_ps(sa, sb, 0x20), _mm256_permute2f128_ps(sa, sb, 0x31));
    const __m256 q = _mm256_add_ps(ab, _mm256_permute_ps(ab, 0x4E));
    const __m256 r = _mm256_add_ps(q, _mm256_permute_ps(q, 0xB1));
    _mm_storel_pi((__m64 *)(void *)out, _mm_unpacklo_ps(_mm256_castps256_ps128(r), _mm256_extractf128_ps(r, 1)));
}

/* A tile of 2 rows x 3 tokens holds its 12 halves, the two rows' weights
 * and one activation in the 16 registers. It runs over one k-block
 * [k0, k1): from zero on the first block, else from the accumulators `acc`
 * kept in memory; into `acc` again, or reduced to `out` after the last
 * block. Each lane's FMAs stay in the order one 16-lane register would do
 * them, so the bits do not depend on the blocking. */
static inline __attribute__((always_inline)) void tb2_tile(bool f16, int rn, int64_t k0, int64_t k1, int64_t n,
                                                           const uint8_t *w, size_t rb, const uint8_t *act,
                                                           size_t act_stride, __m256 acc[2][2][3], float *out,
                                                           int64_t out_stride)
{
    __m256 lo[2][3], hi[2][3];
    _Pragma("GCC unroll 3") for (int j = 0; j < rn; j++)
    {
        if (k0 == 0) {
            lo[0][j] = lo[1][j] = hi[0][j] = hi[1][j] = _mm256_setzero_ps();
        } else {
            lo[0][j] = acc[0][0][j], lo[1][j] = acc[0][1][j];
            hi[0][j] = acc[1][0][j], hi[1][j] = acc[1][1][j];
        }
    }
    for (int64_t k = k0; k < k1; k += 16) {
        __m256 x0 = tb2_weights(f16, w, k), x1 = tb2_weights(f16, w + rb, k);
        _Pragma("GCC unroll 3") for (int j = 0; j < rn; j++)
        {
            __m256 a = _mm256_loadu_ps((const float *)(const void *)(act + (size_t)j * act_stride) + k);
            __asm__("" : "+x"(a)); /* one load for both rows */
            lo[0][j] = _mm256_fmadd_ps(x0, a, lo[0][j]);
            lo[1][j] = _mm256_fmadd_ps(x1, a, lo[1][j]);
        }
        x0 = tb2_weights(f16, w, k + 8);
        x1 = tb2_weights(f16, w + rb, k + 8);
        _Pragma("GCC unroll 3") for (int j = 0; j < rn; j++)
        {
            __m256 a = _mm256_loadu_ps((const float *)(const void *)(act + (size_t)j * act_stride) + k + 8);
            __asm__("" : "+x"(a));
            hi[0][j] = _mm256_fmadd_ps(x0, a, hi[0][j]);
            hi[1][j] = _mm256_fmadd_ps(x1, a, hi[1][j]);
        }
    }
    _Pragma("GCC unroll 3") for (int j = 0; j < rn; j++)
    {
        if (k1 == n) {
            tb2_store2(lo[0][j], hi[0][j], lo[1][j], hi[1][j], out + (int64_t)j * out_stride);
        } else {
            acc[0][0][j] = lo[0][j], acc[0][1][j] = lo[1][j];
            acc[1][0][j] = hi[0][j], acc[1][1][j] = hi[1][j];
        }
    }
}

/* Rows up to TB2_KWHOLE long run whole (3 tokens' F32 activations, 24 KB,
 * stay in L1 across the row pairs); longer ones (FFN down: 5632 in
 * TinyLlama-1.1B) in k-blocks of TB2_KB, whose activations would otherwise
 * come from L2 for every row pair. Zen 3, one thread, 2048 x 5632 F16
 * weights x 512 tokens: 184-187 -> 157 ms (ggml_mul_mat 133-135). */
#define TB2_KWHOLE 2048
#define TB2_KB 1024
/* Row pairs per call: the activations are read once per 32 rows (as
 * tinyblas_rows); their accumulators between k-blocks take 6 KB. */
#define TB2_NB2 16

static inline __attribute__((always_inline)) void tb2_rows(bool f16, int64_t n, const uint8_t *w, size_t rb,
                                                           int nb2, const uint8_t *act, size_t act_stride,
                                                           int n_tok, float *out, int64_t out_stride)
{
    __m256 acc[TB2_NB2][2][2][3];
    const int64_t kb = n <= TB2_KWHOLE ? n : TB2_KB;
    for (int t = 0; t < n_tok; t += 3) {
        const int rn = n_tok - t < 3 ? n_tok - t : 3;
        const uint8_t *at = act + (size_t)t * act_stride;
        for (int64_t k0 = 0; k0 < n; k0 += kb) {
            const int64_t k1 = n - k0 < kb ? n : k0 + kb;
            for (int b = 0; b < nb2; b++) {
                const uint8_t *wp = w + (size_t)(2 * b) * rb;
                float *o = out + (int64_t)t * out_stride + 2 * b;
                if (rn == 3)
                    tb2_tile(f16, 3, k0, k1, n, wp, rb, at, act_stride, acc[b], o, out_stride);
                else if (rn == 2)
                    tb2_tile(f16, 2, k0, k1, n, wp, rb, at, act_stride, acc[b], o, out_stride);
                else
                    tb2_tile(f16, 1, k0, k1, n, wp, rb, at, act_stride, acc[b], o, out_stride);
            }
        }
    }
}

static void tb2_rows_f32(int64_t n, const uint8_t *w, size_t rb, int nb2, const uint8_t *act, size_t act_stride,
                         int n_tok, float *out, int64_t out_stride)
{
    tb2_rows(false, n, w, rb, nb2, act, act_stride, n_tok, out, out_stride);
}

static void tb2_rows_f16(int64_t n, const uint8_t *w, size_t rb, int nb2, const uint8_t *act, size_t act_stride,
                         int n_tok, float *out, int64_t out_stride)
{
    tb2_rows(true, n, w, rb, nb2, act, act_stride, n_tok, out, out_stride);
}
#endif

void refbf16_matmul(const gguf_tensor *w, int64_t n, int64_t r0, int64_t r1, const uint8_t *act, size_t act_stride,
                    int n_tok, float *out, int64_t out_stride)
{
    const size_t rb = (size_t)n * 2;
    int64_t r = r0;
#if defined(__AVX512BF16__) && defined(__AVX512F__)
    for (int nb4; (nb4 = tb_blocks(r, r1)) > 0; r += 4 * nb4)
        tinyblas_rows_bf16(n, (const uint8_t *)w->data + (size_t)r * rb, rb, nb4, act, act_stride, n_tok, out + r,
                           out_stride);
#endif
    for (; r < r1; r++) {
        const uint16_t *wr = (const uint16_t *)((const uint8_t *)w->data + (size_t)r * rb);
        for (int t = 0; t < n_tok; t++)
            out[(int64_t)t * out_stride + r] = tinyblas_bf16(n, wr, (const uint16_t *)(act + (size_t)t * act_stride));
    }
}

void reffloat_matmul(const gguf_tensor *w, int64_t n, int64_t r0, int64_t r1, const uint8_t *act, size_t act_stride,
                     int n_tok, float *out, int64_t out_stride)
{
    const bool f16 = w->type == TENSOR_TYPE_F16;
    const size_t rb = (size_t)n * (f16 ? 2 : 4);
    const bool tiny = tinyblas_takes(w, n_tok, 16);
    int64_t r = r0;
#if defined(__AVX512F__)
    if (tiny)
        for (int nb4; (nb4 = tb_blocks(r, r1)) > 0; r += 4 * nb4) {
            const uint8_t *wr = (const uint8_t *)w->data + (size_t)r * rb;
            if (f16)
                tinyblas_rows_f16(n, wr, rb, nb4, act, act_stride, n_tok, out + r, out_stride);
            else
                tinyblas_rows_f32(n, wr, rb, nb4, act, act_stride, n_tok, out + r, out_stride);
        }
#elif defined(RP_AVX2)
    if (tiny)
        for (int64_t nb2; (nb2 = (r1 - r) / 2 < TB2_NB2 ? (r1 - r) / 2 : TB2_NB2) > 0; r += 2 * nb2) {
            const uint8_t *wr = (const uint8_t *)w->data + (size_t)r * rb;
            if (f16)
                tb2_rows_f16(n, wr, rb, (int)nb2, act, act_stride, n_tok, out + r, out_stride);
            else
                tb2_rows_f32(n, wr, rb, (int)nb2, act, act_stride, n_tok, out + r, out_stride);
        }
#endif
    for (; r < r1; r++) {
        const uint8_t *wr = (const uint8_t *)w->data + (size_t)r * rb;
        for (int t = 0; t < n_tok; t++) {
            const uint8_t *a = act + (size_t)t * act_stride;
            out[(int64_t)t * out_stride + r] = tiny ? tinyblas_float(f16, n, wr, a) : vecdot_float(f16, false, n, wr, a);
        }
    }
}


#ifdef RP_AVX2
/* The 4 totals of 4 vectors of partial sums, in one vector. */
static inline __m128i hsum4_i32(__m256i a, __m256i b, __m256i c, __m256i d)
{
    const __m256i h = _mm256_hadd_epi32(_mm256_hadd_epi32(a, b), _mm256_hadd_epi32(c, d));
    return _mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
}

#endif


/* ---- K-quants ------------------------------------------------------------ */


/* Repacked Q4_K (ggml_gemv/gemm_q4_K_8x8_q8_K): exact integer sums of
 * scale * (q . a) and of min * bsum, FMA-accumulated with d_w * d_a
 * (dmin_w * d_a); the result is acc - acc_min. The single-row kernel (gemv)
 * converts once per super-block, the batched one (gemm, activation rows in
 * groups of 4) once per 64-element pair of sub-blocks. */
static float q4_K_repacked_dot(const void *w, const block_q8_K *y, int64_t nb, bool gemm)
{
    const block_q4_K *x = w;
    float acc = 0.0f, acc_min = 0.0f;
    for (int64_t b = 0; b < nb; b++) {
        int32_t isum = 0, imin = 0;
        for (int j = 0; j < 4; j++) {
            uint8_t sc0, m0, sc1, m1;
            quant_scale_min_k4(2 * j, x[b].scales, &sc0, &m0);
            quant_scale_min_k4(2 * j + 1, x[b].scales, &sc1, &m1);
            const uint8_t *q = x[b].qs + 32 * j;
            const int8_t *a = y[b].qs + 64 * j;
            int32_t s0 = 0, s1 = 0;
#ifdef RP_AVX2
            const __m256i raw = _mm256_loadu_si256((const __m256i *)q);
            const __m256i lo = _mm256_and_si256(raw, _mm256_set1_epi8(0x0F));
            const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(raw, 4), _mm256_set1_epi8(0x0F));
            const __m256i ones = _mm256_set1_epi16(1);
            __m256i p0 = _mm256_madd_epi16(_mm256_maddubs_epi16(lo, _mm256_loadu_si256((const __m256i *)a)), ones);
            __m256i p1 = _mm256_madd_epi16(_mm256_maddubs_epi16(hi, _mm256_loadu_si256((const __m256i *)(a + 32))), ones);
            s0 = hsum_epi32(p0);
            s1 = hsum_epi32(p1);
#else
            for (int l = 0; l < 32; l++) {
                s0 += (q[l] & 0xF) * a[l];
                s1 += (q[l] >> 4) * a[l + 32];
            }
#endif
            const int32_t b0 = y[b].bsums[4 * j] + y[b].bsums[4 * j + 1];
            const int32_t b1 = y[b].bsums[4 * j + 2] + y[b].bsums[4 * j + 3];
            if (gemm) {
                /* the batched kernel converts and FMAs each 64-element pair */
                const float da = y[b].d;
                acc = fmaf((float)(sc0 * s0 + sc1 * s1), h2f(x[b].d) * da, acc);
                acc_min = fmaf((float)(m0 * b0 + m1 * b1), h2f(x[b].dmin) * da, acc_min);
                continue;
            }
            isum += sc0 * s0 + sc1 * s1;
            imin += m0 * b0 + m1 * b1;
        }
        if (gemm)
            continue;
        const float da = y[b].d;
        acc = fmaf((float)isum, h2f(x[b].d) * da, acc);
        acc_min = fmaf((float)imin, h2f(x[b].dmin) * da, acc_min);
    }
    return acc - acc_min;
}

#ifdef RP_AVX2
/* The four activation rows of a 1x4 tile. */
static inline void tile_rows(const uint8_t *act, size_t act_stride, const block_q8_K *y[4])
{
    for (int k = 0; k < 4; k++)
        y[k] = (const block_q8_K *)(act + (size_t)k * act_stride);
}

/* Block b's d_w * d_a and dmin_w * d_a for the tile's four activation rows. */
static inline void tile_scales(uint16_t d, uint16_t dmin, const block_q8_K *const y[4], int64_t b, __m128 *dw,
                               __m128 *dm)
{
    const __m128 da = _mm_set_ps(y[3][b].d, y[2][b].d, y[1][b].d, y[0][b].d);
    *dw = _mm_mul_ps(_mm_set1_ps(h2f(d)), da);
    *dm = _mm_mul_ps(_mm_set1_ps(h2f(dmin)), da);
}
#endif

#ifdef RP_AVX2
/* Sub-blocks 2j (lo) and 2j + 1 (hi) of a Q4_K block's nibbles. */
static inline void q4_K_nibbles(const uint8_t *qs, int j, __m256i *lo, __m256i *hi)
{
    const __m256i raw = _mm256_loadu_si256((const __m256i *)(qs + 32 * j));
    *lo = _mm256_and_si256(raw, _mm256_set1_epi8(0x0F));
    *hi = _mm256_and_si256(_mm256_srli_epi16(raw, 4), _mm256_set1_epi8(0x0F));
}

/* lo . a[0..32) * s0 + hi . a[32..64) * s1: a sub-block pair's exact
 * integer sum against an activation row, as 8 partial int32 sums. */
static inline __m256i q4_K_pair_dot(__m256i lo, __m256i hi, const int8_t *a, __m256i s0, __m256i s1)
{
    return _mm256_add_epi32(
        _mm256_madd_epi16(_mm256_maddubs_epi16(lo, _mm256_loadu_si256((const __m256i *)a)), s0),
        _mm256_madd_epi16(_mm256_maddubs_epi16(hi, _mm256_loadu_si256((const __m256i *)(a + 32))), s1));
}
#endif

#ifdef RP_AVX2
/* The gemm order of q4_K_repacked_dot for one weight row and four
 * activation rows at once: the weight nibbles are unpacked once per pair of
 * sub-blocks, the four integer sums come out of one horizontal add, and each
 * output keeps its own fma chains in the same order. */
static void q4_K_tile_1x4(const void *w, const uint8_t *act, size_t act_stride, int64_t nb, float out[4])
{
    const block_q4_K *x = w;
    const block_q8_K *y[4];
    tile_rows(act, act_stride, y);
    __m128 acc = _mm_setzero_ps(), acc_min = _mm_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        __m128 dw, dm;
        tile_scales(x[b].d, x[b].dmin, y, b, &dw, &dm);
        for (int j = 0; j < 4; j++) {
            uint8_t sc0, m0, sc1, m1;
            quant_scale_min_k4(2 * j, x[b].scales, &sc0, &m0);
            quant_scale_min_k4(2 * j + 1, x[b].scales, &sc1, &m1);
            __m256i lo, hi;
            q4_K_nibbles(x[b].qs, j, &lo, &hi);
            const __m256i s0 = _mm256_set1_epi16((int16_t)sc0), s1 = _mm256_set1_epi16((int16_t)sc1);
            __m256i p[4];
            int32_t mins[4];
            _Pragma("GCC unroll 4") for (int k = 0; k < 4; k++)
            {
                p[k] = q4_K_pair_dot(lo, hi, y[k][b].qs + 64 * j, s0, s1);
                const int16_t *bs = y[k][b].bsums + 4 * j;
                mins[k] = m0 * (bs[0] + bs[1]) + m1 * (bs[2] + bs[3]);
            }
            acc = _mm_fmadd_ps(_mm_cvtepi32_ps(hsum4_i32(p[0], p[1], p[2], p[3])), dw, acc);
            /* built from registers: four scalar stores read back as one vector stall the load */
            const __m128i mv = _mm_setr_epi32(mins[0], mins[1], mins[2], mins[3]);
            acc_min = _mm_fmadd_ps(_mm_cvtepi32_ps(mv), dm, acc_min);
        }
    }
    _mm_storeu_ps(out, _mm_sub_ps(acc, acc_min));
}
#endif


#ifdef RP_AVX2
/* A Q4_K block's eight 6-bit scales (low 128 bits) and eight mins (high),
 * as 16-bit lanes: the reference's unpacking of the 12 scale bytes. */
static inline __m256i q4_K_scales_mins(const uint8_t *q)
{
    uint32_t u[4];
    memcpy(u, q, 12);
    const uint32_t km1 = 0x3f3f3f3f, km2 = 0x0f0f0f0f, km3 = 0x03030303;
    u[3] = ((u[2] >> 4) & km2) | (((u[1] >> 6) & km3) << 4);
    const uint32_t aux = u[1] & km1;
    u[1] = (u[2] & km2) | (((u[0] >> 6) & km3) << 4);
    u[2] = aux;
    u[0] &= km1;
    return _mm256_cvtepu8_epi16(_mm_set_epi32((int)u[3], (int)u[2], (int)u[1], (int)u[0]));
}

/* sum over the block of min * bsum for one activation row: the 16 bsums
 * paired into the 8 sub-blocks' sums (|.| <= 4096, exact in 16 bits), times
 * the 8 mins: 4 partial int32 sums */
static inline __m128i q4_K_min_dot(__m128i mins, const block_q8_K *y)
{
    const __m256i bs = _mm256_loadu_si256((const __m256i *)(const void *)y->bsums);
    const __m128i pair = _mm_hadd_epi16(_mm256_castsi256_si128(bs), _mm256_extracti128_si256(bs, 1));
    return _mm_madd_epi16(mins, pair);
}

/* The eight scales of q4_K_scales_mins in both 128-bit halves. */
static inline __m256i q4_K_scales_x2(__m256i sm)
{
    return _mm256_broadcastsi128_si256(_mm256_castsi256_si128(sm));
}

/* Scales 2j (s0) and 2j + 1 (s1) of q4_K_scales_x2 in every 16-bit lane. */
static inline void q4_K_scale_pair(__m256i sc, int j, __m256i *s0, __m256i *s1)
{
    *s0 = _mm256_shuffle_epi8(sc, _mm256_set1_epi16((short)(((4 * j + 1) << 8) | (4 * j))));
    *s1 = _mm256_shuffle_epi8(sc, _mm256_set1_epi16((short)(((4 * j + 3) << 8) | (4 * j + 2))));
}

/* The gemv order of q4_K_repacked_dot (one conversion per super-block) for
 * one weight row and four activation rows: the integer sums kept over the
 * block's eight sub-blocks (exact: |sum| < 2^31) and each output's two fma
 * chains fed once per block. What mul_mat_id gives each token (ggml runs it
 * gemv, a token at a time). The scales and mins unpack once per block in
 * vectors and the min * bsum sums come from one madd per token: done per
 * sub-block in scalars they were half of the tile's instructions. */
static void q4_K_gemv_tile_1x4(const void *w, const block_q8_K *const y[4], int64_t nb, float out[4])
{
    const block_q4_K *x = w;
    __m128 acc = _mm_setzero_ps(), acc_min = _mm_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        __m128 dw, dm;
        tile_scales(x[b].d, x[b].dmin, y, b, &dw, &dm);
        const __m256i sm = q4_K_scales_mins(x[b].scales);
        const __m256i sc = q4_K_scales_x2(sm);
        const __m128i mins = _mm256_extracti128_si256(sm, 1);
        __m256i p[4] = {_mm256_setzero_si256(), _mm256_setzero_si256(), _mm256_setzero_si256(),
                        _mm256_setzero_si256()};
        _Pragma("GCC unroll 4") for (int j = 0; j < 4; j++)
        {
            __m256i lo, hi, s0, s1;
            q4_K_nibbles(x[b].qs, j, &lo, &hi);
            q4_K_scale_pair(sc, j, &s0, &s1);
            _Pragma("GCC unroll 4") for (int k = 0; k < 4; k++)
                p[k] = _mm256_add_epi32(p[k], q4_K_pair_dot(lo, hi, y[k][b].qs + 64 * j, s0, s1));
        }
        acc = _mm_fmadd_ps(_mm_cvtepi32_ps(hsum4_i32(p[0], p[1], p[2], p[3])), dw, acc);
        const __m128i m01 = _mm_hadd_epi32(q4_K_min_dot(mins, &y[0][b]), q4_K_min_dot(mins, &y[1][b]));
        const __m128i m23 = _mm_hadd_epi32(q4_K_min_dot(mins, &y[2][b]), q4_K_min_dot(mins, &y[3][b]));
        acc_min = _mm_fmadd_ps(_mm_cvtepi32_ps(_mm_hadd_epi32(m01, m23)), dm, acc_min);
    }
    _mm_storeu_ps(out, _mm_sub_ps(acc, acc_min));
}
#endif

#if defined(RP_AVX2) && !defined(RP_Q4K_GEMV_VNNI)
/* The gemv order of q4_K_repacked_dot for four weight rows and one token:
 * per row and block the exact integer sums (scales and mins unpacked in
 * vectors, as in q4_K_gemv_tile_1x4), the four rows' totals from one
 * horizontal add, and each output's two fma chains fed once per block with
 * h2f(d) * d_a. One-token expert rows (MoE generation) ran
 * q4_K_repacked_dot, two horizontal adds and the scalar scale unpacking
 * per 64 weights. */
static void q4_K_gemv_4rows_avx2(const uint8_t *w, size_t rb, const block_q8_K *y, int64_t nb, float out[4],
                                 const char *pf, size_t pf_step)
{
    const block_q4_K *x[4];
    for (int r = 0; r < 4; r++)
        x[r] = (const block_q4_K *)(const void *)(w + (size_t)r * rb);
    __m128 acc = _mm_setzero_ps(), acc_min = _mm_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        quant_prefetch_step(pf, b, pf_step);
        __m256i sc[4];
        __m128i mn[4];
        _Pragma("GCC unroll 4") for (int r = 0; r < 4; r++)
        {
            const __m256i sm = q4_K_scales_mins(x[r][b].scales);
            sc[r] = q4_K_scales_x2(sm);
            mn[r] = q4_K_min_dot(_mm256_extracti128_si256(sm, 1), &y[b]);
        }
        const __m128i imin = _mm_hadd_epi32(_mm_hadd_epi32(mn[0], mn[1]), _mm_hadd_epi32(mn[2], mn[3]));
        __m256i p[4] = {_mm256_setzero_si256(), _mm256_setzero_si256(), _mm256_setzero_si256(),
                        _mm256_setzero_si256()};
        _Pragma("GCC unroll 4") for (int j = 0; j < 4; j++)
        {
            _Pragma("GCC unroll 4") for (int r = 0; r < 4; r++)
            {
                __m256i lo, hi, s0, s1;
                q4_K_nibbles(x[r][b].qs, j, &lo, &hi);
                q4_K_scale_pair(sc[r], j, &s0, &s1);
                p[r] = _mm256_add_epi32(p[r], q4_K_pair_dot(lo, hi, y[b].qs + 64 * j, s0, s1));
            }
        }
        const __m128 dw = quant_f16x4_mul(x[0][b].d, x[1][b].d, x[2][b].d, x[3][b].d, y[b].d);
        const __m128 dm = quant_f16x4_mul(x[0][b].dmin, x[1][b].dmin, x[2][b].dmin, x[3][b].dmin, y[b].d);
        acc = _mm_fmadd_ps(_mm_cvtepi32_ps(hsum4_i32(p[0], p[1], p[2], p[3])), dw, acc);
        acc_min = _mm_fmadd_ps(_mm_cvtepi32_ps(imin), dm, acc_min);
    }
    _mm_storeu_ps(out, _mm_sub_ps(acc, acc_min));
}
#endif

#ifdef RP_Q4K_GEMV_VNNI
/* q4_K_gemv_4rows_avx2 with AVX-512 VNNI: the same integers, the same two
 * fma chains per output. Per row and block the 128 quant bytes are two
 * 64-byte vectors; the low nibbles of the first are chunks 0 and 2
 * (elements 0-31, 64-95), its high nibbles chunks 1 and 3, the second
 * vector's chunks 4-7 alike; against the token's bytes in that
 * arrangement (two 32-byte halves each, shared by the four rows) one
 * vpdpbusd gives two chunks' 4-value sums (lanes 0-7, 8-15). Those fit 16
 * bits, so a low and a high chunk's sums go side by side as int16 pairs
 * (one shift, one blend) and one vpdpwssd against the scale pairs
 * (sc[2q], sc[2q + 1]) adds them scaled: 4 + 2 multiplies per row and
 * block where the AVX2 kernel has 8 maddubs and 8 madd. The four rows'
 * 16 lanes are added across as in gemm_kq4v.c (two unpack rounds, then
 * the 128-bit quarters). Measured by bench_gemm_kq q4_k_gemv at 1 token. */
static inline __m512i rp_dpbusd0(__m512i w, __m512i a)
{
    __m512i r;
    __asm__("vpxord %0, %0, %0\n\tvpdpbusd %2, %1, %0" : "=&v"(r) : "v"(w), "v"(a));
    return r;
}

static inline __m512i rp_cat256(const int8_t *lo, const int8_t *hi)
{
    return _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)(const void *)lo)),
                              _mm256_loadu_si256((const __m256i *)(const void *)hi), 1);
}

static void q4_K_gemv_4rows_vnni(const uint8_t *w, size_t rb, const block_q8_K *y, int64_t nb, float out[4],
                                 const char *pf, size_t pf_step)
{
    const block_q4_K *x[4];
    for (int r = 0; r < 4; r++)
        x[r] = (const block_q4_K *)(const void *)(w + (size_t)r * rb);
    const __m512i m4 = _mm512_set1_epi8(0x0F);
    const __m512i i01 = _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1);
    const __m512i i23 = _mm512_setr_epi32(2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3);
    __m128 acc = _mm_setzero_ps(), acc_min = _mm_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        /* into L2: the Qwen3-30B-A3B width's experts, one thread of an AMD
         * EPYC Zen 4, tg32 47.0-49.7 -> 55.8-56.4 tok/s (the AVX2 kernel:
         * no change either way; twice as far ahead: 53.6-54.8) */
        quant_prefetch_step_l2(pf, b, pf_step);
        /* the token: chunks (0, 2), (1, 3), (4, 6), (5, 7) */
        const int8_t *q8 = y[b].qs;
        const __m512i a0 = rp_cat256(q8, q8 + 64), a1 = rp_cat256(q8 + 32, q8 + 96);
        const __m512i a2 = rp_cat256(q8 + 128, q8 + 192), a3 = rp_cat256(q8 + 160, q8 + 224);
        __m512i p[4];
        __m128i mn[4];
        _Pragma("GCC unroll 4") for (int r = 0; r < 4; r++)
        {
            const __m256i sm = q4_K_scales_mins(x[r][b].scales);
            mn[r] = q4_K_min_dot(_mm256_extracti128_si256(sm, 1), &y[b]);
            /* the scale pairs (sc[2q], sc[2q + 1]) are sm's int32 lanes q */
            const __m512i smz = _mm512_castsi256_si512(sm);
            const __m512i s01 = _mm512_permutexvar_epi32(i01, smz), s23 = _mm512_permutexvar_epi32(i23, smz);
            const __m512i q0 = _mm512_loadu_si512(x[r][b].qs), q1 = _mm512_loadu_si512(x[r][b].qs + 64);
            const __m512i l0 = rp_dpbusd0(_mm512_and_si512(q0, m4), a0);
            const __m512i h0 = rp_dpbusd0(_mm512_and_si512(_mm512_srli_epi16(q0, 4), m4), a1);
            const __m512i l1 = rp_dpbusd0(_mm512_and_si512(q1, m4), a2);
            const __m512i h1 = rp_dpbusd0(_mm512_and_si512(_mm512_srli_epi16(q1, 4), m4), a3);
            /* int16 pairs (low chunk, high chunk) per lane */
            const __m512i pr0 = _mm512_mask_blend_epi16(0xAAAAAAAA, l0, _mm512_slli_epi32(h0, 16));
            const __m512i pr1 = _mm512_mask_blend_epi16(0xAAAAAAAA, l1, _mm512_slli_epi32(h1, 16));
            p[r] = _mm512_dpwssd_epi32(_mm512_madd_epi16(pr0, s01), pr1, s23);
        }
        const __m512i x01 = _mm512_add_epi32(_mm512_unpacklo_epi32(p[0], p[1]), _mm512_unpackhi_epi32(p[0], p[1]));
        const __m512i x23 = _mm512_add_epi32(_mm512_unpacklo_epi32(p[2], p[3]), _mm512_unpackhi_epi32(p[2], p[3]));
        const __m512i s4 = _mm512_add_epi32(_mm512_unpacklo_epi64(x01, x23), _mm512_unpackhi_epi64(x01, x23));
        const __m256i s2 = _mm256_add_epi32(_mm512_castsi512_si256(s4), _mm512_extracti64x4_epi64(s4, 1));
        const __m128i isum = _mm_add_epi32(_mm256_castsi256_si128(s2), _mm256_extracti128_si256(s2, 1));
        const __m128i imin = _mm_hadd_epi32(_mm_hadd_epi32(mn[0], mn[1]), _mm_hadd_epi32(mn[2], mn[3]));
        const __m128 dw = quant_f16x4_mul(x[0][b].d, x[1][b].d, x[2][b].d, x[3][b].d, y[b].d);
        const __m128 dm = quant_f16x4_mul(x[0][b].dmin, x[1][b].dmin, x[2][b].dmin, x[3][b].dmin, y[b].d);
        acc = _mm_fmadd_ps(_mm_cvtepi32_ps(isum), dw, acc);
        acc_min = _mm_fmadd_ps(_mm_cvtepi32_ps(imin), dm, acc_min);
    }
    _mm_storeu_ps(out, _mm_sub_ps(acc, acc_min));
}
#endif

void refk_matmul_gemv(const gguf_tensor *w, int64_t n, int64_t r0, int64_t r1, const uint8_t *act, size_t act_stride,
                      int n_tok, float *out, int64_t out_stride)
{
    int t0 = 0;
#ifdef RP_AVX2
    /* one token alone keeps refk_matmul's gemv (its prefetching matvec);
     * a last group of 1-3 tokens runs the 4-token tile with the last token
     * repeated, the extra outputs dropped: cheaper than a gemv per token */
    if (w->type == TENSOR_TYPE_Q4_K && n_tok >= 2) {
        const int64_t nb = n / 256;
        const size_t rb = (size_t)nb * sizeof(block_q4_K);
        t0 = n_tok;
        for (int64_t r = r0; r < r1; r++) {
            const uint8_t *x = (const uint8_t *)w->data + (size_t)r * rb;
            for (int t = 0; t < n_tok; t += 4) {
                const int nt = n_tok - t < 4 ? n_tok - t : 4;
                const block_q8_K *y[4];
                for (int k = 0; k < 4; k++)
                    y[k] = (const block_q8_K *)(act + (size_t)(t + (k < nt ? k : nt - 1)) * act_stride);
                float o[4];
                q4_K_gemv_tile_1x4(x, y, nb, o);
                for (int k = 0; k < nt; k++)
                    out[(int64_t)(t + k) * out_stride + r] = o[k];
            }
        }
    }
#endif
    for (int t = t0; t < n_tok; t++)
        refk_matmul(w, n, r0, r1, act + (size_t)t * act_stride, act_stride, 1, out + (int64_t)t * out_stride,
                    out_stride);
}

/* Repacked Q2_K (ggml_gemv/gemm_q2_K_8x8_q8_K): like Q4_K, exact integer
 * sums of scale * (q . a) and min * bsum per 16-element sub-block; the
 * single-row kernel converts once per super-block, the batched one once
 * per 128 elements (group g). Within group g, shift j covers activations
 * 128g + 32j .. +32 and sub-blocks 8g + 2j (first 16) and 8g + 2j + 1. */

#ifdef RP_AVX2
/* vpshufb controls for a block's scale bytes: entry 4g + j puts, as 16-bit
 * lanes, scale 8g + 2j in 128-bit lanes 0 and 2 and scale 8g + 2j + 1 in
 * lanes 1 and 3 (sub-blocks 8g + 2j and 8g + 2j + 1, as maddubs lays out
 * shift j of group g); 0x80 zeroes the high bytes. AVX2 code uses the
 * first 32 bytes of an entry (one row), the AVX-512 pair kernels all 64
 * (two rows, q2_K_scales2). */
#define Q2S_L(i) i, 0x80, i, 0x80, i, 0x80, i, 0x80, i, 0x80, i, 0x80, i, 0x80, i, 0x80
#define Q2S(i) {Q2S_L(i), Q2S_L((i) + 1), Q2S_L(i), Q2S_L((i) + 1)}
static const uint8_t q2_K_shuf[8][64] __attribute__((aligned(64))) = {Q2S(0), Q2S(2),  Q2S(4),  Q2S(6),
                                                                      Q2S(8), Q2S(10), Q2S(12), Q2S(14)};
#undef Q2S
#undef Q2S_L

/* A block's 16 scale bytes (low nibbles) in both 128-bit lanes. */
static inline __m256i q2_K_scales(const block_q2_K *x)
{
    return _mm256_and_si256(_mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)x->scales)),
                            _mm256_set1_epi8(0x0F));
}

/* Shift j of group g's two sub-block scales (i = 4g + j) as 16-bit lanes:
 * low half, high half. One shuffle (it was two broadcasts and an insert). */
static inline __m256i q2_K_scale_pair(__m256i scales, int i)
{
    return _mm256_shuffle_epi8(scales, _mm256_load_si256((const __m256i *)(const void *)q2_K_shuf[i]));
}

/* One group's weights: per shift j the 2-bit values (32 bytes) and the two
 * sub-block scales as 16-bit lanes (low half, high half). */
struct q2_K_group {
    __m256i v[4], s[4];
};

static inline void q2_K_group_load(const block_q2_K *x, int g, struct q2_K_group *q)
{
    const __m256i raw = _mm256_loadu_si256((const __m256i *)(x->qs + 32 * g));
    const __m256i scales = q2_K_scales(x);
    for (int j = 0; j < 4; j++) {
        q->v[j] = _mm256_and_si256(_mm256_srli_epi16(raw, 2 * j), _mm256_set1_epi8(3));
        q->s[j] = q2_K_scale_pair(scales, 4 * g + j);
    }
}

/* 8 int32 partial sums of the group's scale * (q . a); a = y->qs + 128g. */
static inline __m256i q2_K_group_dot(const struct q2_K_group *q, const int8_t *a)
{
    __m256i p = _mm256_setzero_si256();
    for (int j = 0; j < 4; j++)
        p = _mm256_add_epi32(
            p, _mm256_madd_epi16(_mm256_maddubs_epi16(q->v[j], _mm256_loadu_si256((const __m256i *)(a + 32 * j))),
                                 q->s[j]));
    return p;
}

/* min * bsum of both groups: lanes 0-3 hold group 0's, lanes 4-7 group 1's. */
static inline __m256i q2_K_min_dot(const block_q2_K *x, const block_q8_K *y)
{
    const __m256i mins = _mm256_cvtepu8_epi16(_mm_srli_epi16(_mm_loadu_si128((const __m128i *)x->scales), 4));
    const __m256i m = _mm256_and_si256(mins, _mm256_set1_epi16(0x0F));
    return _mm256_madd_epi16(m, _mm256_loadu_si256((const __m256i *)y->bsums));
}

static inline int32_t hsum_epi32_half(__m256i v, int hi)
{
    const __m128i h = hi ? _mm256_extracti128_si256(v, 1) : _mm256_castsi256_si128(v);
    const __m128i t = _mm_add_epi32(h, _mm_unpackhi_epi64(h, h));
    return _mm_cvtsi128_si32(_mm_add_epi32(t, _mm_shuffle_epi32(t, 1)));
}
#endif

static float q2_K_repacked_dot(const void *w, const block_q8_K *y, int64_t nb, bool gemm)
{
    const block_q2_K *x = w;
    float acc = 0.0f, acc_min = 0.0f;
    for (int64_t b = 0; b < nb; b++) {
        const float da = y[b].d, dw = h2f(x[b].d) * da, mw = h2f(x[b].dmin) * da;
        int32_t isum = 0, imin = 0;
#ifdef RP_AVX2
        const __m256i mins = q2_K_min_dot(&x[b], &y[b]);
#endif
        for (int g = 0; g < 2; g++) {
            int32_t gs = 0, gm = 0;
#ifdef RP_AVX2
            struct q2_K_group q;
            q2_K_group_load(&x[b], g, &q);
            gs = hsum_epi32(q2_K_group_dot(&q, y[b].qs + 128 * g));
            gm = hsum_epi32_half(mins, g);
#else
            for (int j = 0; j < 4; j++)
                for (int h = 0; h < 2; h++) {
                    const int si = 8 * g + 2 * j + h;
                    const uint8_t sc = x[b].scales[si];
                    const int8_t *a = y[b].qs + 128 * g + 32 * j + 16 * h;
                    const uint8_t *q = x[b].qs + 32 * g + 16 * h;
                    int32_t d = 0;
                    for (int l = 0; l < 16; l++)
                        d += ((q[l] >> (2 * j)) & 3) * a[l];
                    gs += (sc & 0xF) * d;
                    gm += (sc >> 4) * y[b].bsums[si];
                }
#endif
            if (gemm) {
                acc = fmaf((float)gs, dw, acc);
                acc_min = fmaf((float)gm, mw, acc_min);
            } else {
                isum += gs;
                imin += gm;
            }
        }
        if (!gemm) {
            acc = fmaf((float)isum, dw, acc);
            acc_min = fmaf((float)imin, mw, acc_min);
        }
    }
    return acc - acc_min;
}

#ifdef RP_AVX2
/* The gemm order of q2_K_repacked_dot for one weight row and four
 * activation rows: the weights are unpacked once per group, and each output
 * keeps its own fma chains. */
static void q2_K_tile_1x4(const void *w, const uint8_t *act, size_t act_stride, int64_t nb, float out[4])
{
    const block_q2_K *x = w;
    const block_q8_K *y[4];
    tile_rows(act, act_stride, y);
    __m128 acc = _mm_setzero_ps(), acc_min = _mm_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        __m128 dw, dm;
        tile_scales(x[b].d, x[b].dmin, y, b, &dw, &dm);
        __m256i mins[4];
        for (int k = 0; k < 4; k++)
            mins[k] = q2_K_min_dot(&x[b], &y[k][b]);
        for (int g = 0; g < 2; g++) {
            struct q2_K_group q;
            q2_K_group_load(&x[b], g, &q);
            __m256i p[4];
            _Pragma("GCC unroll 4") for (int k = 0; k < 4; k++) p[k] = q2_K_group_dot(&q, y[k][b].qs + 128 * g);
            acc = _mm_fmadd_ps(_mm_cvtepi32_ps(hsum4_i32(p[0], p[1], p[2], p[3])), dw, acc);
            const __m128i mv = _mm_setr_epi32(hsum_epi32_half(mins[0], g), hsum_epi32_half(mins[1], g),
                                              hsum_epi32_half(mins[2], g), hsum_epi32_half(mins[3], g));
            acc_min = _mm_fmadd_ps(_mm_cvtepi32_ps(mv), dm, acc_min);
        }
    }
    _mm_storeu_ps(out, _mm_sub_ps(acc, acc_min));
}
#endif

#if defined(RP_AVX2) && defined(__AVX512F__) && defined(__AVX512BW__)
/* The 16 scale bytes (low nibbles) of two rows' block: row 0's in 128-bit
 * lanes 0 and 1, row 1's in lanes 2 and 3. */
static inline __m512i q2_K_scales2(const block_q2_K *x0, const block_q2_K *x1)
{
    const __m128i s0 = _mm_loadu_si128((const __m128i *)x0->scales);
    const __m128i s1 = _mm_loadu_si128((const __m128i *)x1->scales);
    const __m512i s = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_set_m128i(s0, s0)), _mm256_set_m128i(s1, s1), 1);
    return _mm512_and_si512(s, _mm512_set1_epi8(0x0F));
}

/* q2_K_shuf's whole entry: both rows' scale pair */
static inline __m512i q2_K_scale(__m512i scales, int i)
{
    return _mm512_shuffle_epi8(scales, _mm512_load_si512(q2_K_shuf[i]));
}

#ifndef __AVX512VNNI__
/* q2_K_tile_1x4 for two weight rows at once, one per 256-bit half: the
 * integer group sums are exact whatever the order, and each of the 8
 * outputs (2 rows x 4 tokens) keeps its own fma chains in q2_K_tile_1x4's
 * order. Half the instructions per row for the integer work. */
static void q2_K_tile_2x4(const block_q2_K *x0, const block_q2_K *x1, const uint8_t *act, size_t act_stride,
                          int64_t nb, float out0[4], float out1[4])
{
    const block_q8_K *y[4];
    tile_rows(act, act_stride, y);
    __m256 acc = _mm256_setzero_ps(), acc_min = _mm256_setzero_ps(); /* lanes 0-3 row 0, 4-7 row 1 */
    for (int64_t b = 0; b < nb; b++) {
        const __m512i scales = q2_K_scales2(&x0[b], &x1[b]);
        __m128 dw0, dm0, dw1, dm1;
        tile_scales(x0[b].d, x0[b].dmin, y, b, &dw0, &dm0);
        tile_scales(x1[b].d, x1[b].dmin, y, b, &dw1, &dm1);
        const __m256 dw = _mm256_set_m128(dw1, dw0), dm = _mm256_set_m128(dm1, dm0);
        __m256i mins0[4], mins1[4];
        for (int k = 0; k < 4; k++) {
            mins0[k] = q2_K_min_dot(&x0[b], &y[k][b]);
            mins1[k] = q2_K_min_dot(&x1[b], &y[k][b]);
        }
        _Pragma("GCC unroll 2") for (int g = 0; g < 2; g++)
        {
            const __m512i raw = quant_pair256(x0[b].qs + 32 * g, x1[b].qs + 32 * g);
            __m512i v[4], sc[4];
            _Pragma("GCC unroll 4") for (int j = 0; j < 4; j++) /* unrolled: in registers, constant shifts */
            {
                v[j] = _mm512_and_si512(_mm512_srli_epi16(raw, 2 * j), _mm512_set1_epi8(3));
                sc[j] = q2_K_scale(scales, 4 * g + j);
            }
            __m512i p[4];
            _Pragma("GCC unroll 4") for (int k = 0; k < 4; k++)
            {
                const int8_t *a = y[k][b].qs + 128 * g;
                p[k] = _mm512_setzero_si512();
                _Pragma("GCC unroll 4") for (int j = 0; j < 4; j++)
                {
                    const __m512i av = quant_dup256(a + 32 * j);
                    p[k] = _mm512_add_epi32(p[k], _mm512_madd_epi16(_mm512_maddubs_epi16(v[j], av), sc[j]));
                }
            }
            const __m128i t0 = hsum4_i32(_mm512_castsi512_si256(p[0]), _mm512_castsi512_si256(p[1]),
                                         _mm512_castsi512_si256(p[2]), _mm512_castsi512_si256(p[3]));
            const __m128i t1 = hsum4_i32(_mm512_extracti64x4_epi64(p[0], 1), _mm512_extracti64x4_epi64(p[1], 1),
                                         _mm512_extracti64x4_epi64(p[2], 1), _mm512_extracti64x4_epi64(p[3], 1));
            acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_set_m128i(t1, t0)), dw, acc);
            const __m256i mv = _mm256_setr_epi32(hsum_epi32_half(mins0[0], g), hsum_epi32_half(mins0[1], g),
                                                 hsum_epi32_half(mins0[2], g), hsum_epi32_half(mins0[3], g),
                                                 hsum_epi32_half(mins1[0], g), hsum_epi32_half(mins1[1], g),
                                                 hsum_epi32_half(mins1[2], g), hsum_epi32_half(mins1[3], g));
            acc_min = _mm256_fmadd_ps(_mm256_cvtepi32_ps(mv), dm, acc_min);
        }
    }
    const __m256 r = _mm256_sub_ps(acc, acc_min);
    _mm_storeu_ps(out0, _mm256_castps256_ps128(r));
    _mm_storeu_ps(out1, _mm256_extractf128_ps(r, 1));
}
#endif

#ifdef __AVX512VNNI__
/* Per 128-bit lane q of four registers, the sums of their four int32 lanes:
 * lane q of the result holds (a, b, c, d)'s. Integers: any order is exact. */
static inline __m512i sum4x4_epi32(__m512i a, __m512i b, __m512i c, __m512i d)
{
    const __m512i ab = _mm512_add_epi32(_mm512_unpacklo_epi32(a, b), _mm512_unpackhi_epi32(a, b));
    const __m512i cd = _mm512_add_epi32(_mm512_unpacklo_epi32(c, d), _mm512_unpackhi_epi32(c, d));
    return _mm512_add_epi32(_mm512_unpacklo_epi64(ab, cd), _mm512_unpackhi_epi64(ab, cd));
}

/* q2_K_tile_2x4 with the weights' scales folded into them: a 2-bit value
 * times its sub-block's 4-bit scale is at most 45, a byte, so
 * scale * (q . a) of a sub-block is one VNNI dot of (q * scale) with the
 * activations. q * scale comes from a per-lane table [0, s, 2s, 3s] by
 * vpshufb, the table from the 16-bit scale by one multiply; all of it is
 * shared by the four tokens, which then cost one instruction per 32
 * weights of both rows. The integer sums are exact, so the group sums, the
 * mins and each output's fma chains are q2_K_tile_1x4's. */
static void q2_K_tile_2x4_vnni(const block_q2_K *x0, const block_q2_K *x1, const uint8_t *act, size_t act_stride,
                               int64_t nb, float out0[4], float out1[4])
{
    const block_q8_K *y[4];
    tile_rows(act, act_stride, y);
    /* words [s * 256, s * 770]: bytes 0, s, 2s, 3s */
    const __m512i tab_mul = _mm512_set1_epi32(256 | (770 << 16));
    __m256 acc = _mm256_setzero_ps(), acc_min = _mm256_setzero_ps(); /* lanes 0-3 row 0, 4-7 row 1 */
    for (int64_t b = 0; b < nb; b++) {
        const __m512i scales = q2_K_scales2(&x0[b], &x1[b]);
        __m128 dw0, dm0, dw1, dm1;
        tile_scales(x0[b].d, x0[b].dmin, y, b, &dw0, &dm0);
        tile_scales(x1[b].d, x1[b].dmin, y, b, &dw1, &dm1);
        const __m256 dw = _mm256_set_m128(dw1, dw0), dm = _mm256_set_m128(dm1, dm0);
        /* min * bsum: 128-bit lane 0 row 0's group 0, 1 its group 1, 2 and 3 row 1's */
        const __m256i m0 = _mm256_cvtepu8_epi16(_mm_srli_epi16(_mm_loadu_si128((const __m128i *)x0[b].scales), 4));
        const __m256i m1 = _mm256_cvtepu8_epi16(_mm_srli_epi16(_mm_loadu_si128((const __m128i *)x1[b].scales), 4));
        const __m512i mins = _mm512_and_si512(_mm512_inserti64x4(_mm512_castsi256_si512(m0), m1, 1),
                                              _mm512_set1_epi16(0x0F));
        __m512i mk[4];
        for (int k = 0; k < 4; k++)
            mk[k] = _mm512_madd_epi16(mins, quant_dup256(y[k][b].bsums));
        const __m512i msum = sum4x4_epi32(mk[0], mk[1], mk[2], mk[3]); /* lane q: tokens 0-3 */
        /* group g's mins: lanes g (row 0) and 2 + g (row 1) */
        const __m256i gmin[2] = {
            _mm512_castsi512_si256(_mm512_shuffle_i32x4(msum, msum, _MM_SHUFFLE(2, 0, 2, 0))),
            _mm512_castsi512_si256(_mm512_shuffle_i32x4(msum, msum, _MM_SHUFFLE(3, 1, 3, 1)))};
        _Pragma("GCC unroll 2") for (int g = 0; g < 2; g++)
        {
            const __m512i raw = quant_pair256(x0[b].qs + 32 * g, x1[b].qs + 32 * g);
            __m512i w[4];
            _Pragma("GCC unroll 4") for (int j = 0; j < 4; j++)
            {
                const __m512i v = _mm512_and_si512(_mm512_srli_epi16(raw, 2 * j), _mm512_set1_epi8(3));
                const __m512i tab = _mm512_mullo_epi16(q2_K_scale(scales, 4 * g + j), tab_mul);
                w[j] = _mm512_shuffle_epi8(tab, v);
            }
            __m512i p[4];
            _Pragma("GCC unroll 4") for (int k = 0; k < 4; k++)
            {
                const int8_t *a = y[k][b].qs + 128 * g;
                p[k] = _mm512_setzero_si512();
                _Pragma("GCC unroll 4") for (int j = 0; j < 4; j++) p[k] =
                    _mm512_dpbusd_epi32(p[k], w[j], quant_dup256(a + 32 * j));
            }
            /* lanes 0, 1: row 0's sub-blocks; 2, 3: row 1's */
            const __m512i s = sum4x4_epi32(p[0], p[1], p[2], p[3]);
            const __m512i rows = _mm512_add_epi32(s, _mm512_shuffle_i32x4(s, s, _MM_SHUFFLE(2, 3, 0, 1)));
            const __m256i gs = _mm512_castsi512_si256(_mm512_shuffle_i32x4(rows, rows, _MM_SHUFFLE(2, 0, 2, 0)));
            acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(gs), dw, acc);
            acc_min = _mm256_fmadd_ps(_mm256_cvtepi32_ps(gmin[g]), dm, acc_min);
        }
    }
    const __m256 r = _mm256_sub_ps(acc, acc_min);
    _mm_storeu_ps(out0, _mm256_castps256_ps128(r));
    _mm_storeu_ps(out1, _mm256_extractf128_ps(r, 1));
}
#endif

/* gemv's order (q2_K_repacked_dot with gemm false) for two rows and one
 * token: per super-block the exact integer sums of both groups, then one
 * fma each for the values and the mins. The integer work runs on both rows
 * at once (one per 256-bit half). pf: the bytes to prefetch meanwhile, the
 * same share of the rows that come next (quant_prefetch_step; step 0: none). */
static void q2_K_gemv_2rows(const block_q2_K *x0, const block_q2_K *x1, const block_q8_K *y, int64_t nb, float *out0,
                            float *out1, const char *pf, size_t pf_step)
{
    float acc0 = 0.0f, acc_min0 = 0.0f, acc1 = 0.0f, acc_min1 = 0.0f;
    for (int64_t b = 0; b < nb; b++) {
        quant_prefetch_step(pf, b, pf_step);
        const __m512i sc = q2_K_scales2(&x0[b], &x1[b]);
        __m512i p = _mm512_setzero_si512();
        for (int g = 0; g < 2; g++) {
            const __m512i raw = quant_pair256(x0[b].qs + 32 * g, x1[b].qs + 32 * g);
            const int8_t *a = y[b].qs + 128 * g;
            _Pragma("GCC unroll 4") for (int j = 0; j < 4; j++)
            {
                const __m512i v = _mm512_and_si512(_mm512_srli_epi16(raw, 2 * j), _mm512_set1_epi8(3));
                const __m512i av = quant_dup256(a + 32 * j);
                p = _mm512_add_epi32(
                    p, _mm512_madd_epi16(_mm512_maddubs_epi16(v, av), q2_K_scale(sc, 4 * g + j)));
            }
        }
        /* isum and imin of row 0 and row 1 */
        const __m128i t = hsum4_i32(_mm512_castsi512_si256(p), _mm512_extracti64x4_epi64(p, 1),
                                    q2_K_min_dot(&x0[b], &y[b]), q2_K_min_dot(&x1[b], &y[b]));
        const int32_t isum0 = _mm_extract_epi32(t, 0), isum1 = _mm_extract_epi32(t, 1);
        const int32_t imin0 = _mm_extract_epi32(t, 2), imin1 = _mm_extract_epi32(t, 3);
        const float da = y[b].d;
        acc0 = fmaf((float)isum0, h2f(x0[b].d) * da, acc0);
        acc_min0 = fmaf((float)imin0, h2f(x0[b].dmin) * da, acc_min0);
        acc1 = fmaf((float)isum1, h2f(x1[b].d) * da, acc1);
        acc_min1 = fmaf((float)imin1, h2f(x1[b].dmin) * da, acc_min1);
    }
    *out0 = acc0 - acc_min0;
    *out1 = acc1 - acc_min1;
}
#define RP_Q2K_PAIRS 1
#endif

#if defined(RP_AVX2) && !defined(RP_Q2K_PAIRS)
/* q2_K_tile_1x4 for two weight rows (CPUs without AVX-512): each
 * activation vector is loaded once for both rows, each shift's values and
 * scales are made as needed (two q2_K_groups would not fit the registers),
 * and the integer sums of both rows and four tokens come out of two
 * horizontal adds. The sums are exact, and each output keeps
 * q2_K_tile_1x4's fma chains: the same bits. */
static void q2_K_tile_2x4_avx2(const block_q2_K *x0, const block_q2_K *x1, const uint8_t *act, size_t act_stride,
                               int64_t nb, float out0[4], float out1[4])
{
    const block_q8_K *y[4];
    tile_rows(act, act_stride, y);
    __m128 acc0 = _mm_setzero_ps(), accm0 = _mm_setzero_ps(), acc1 = _mm_setzero_ps(), accm1 = _mm_setzero_ps();
    const __m256i lo2 = _mm256_set1_epi8(3);
    for (int64_t b = 0; b < nb; b++) {
        __m128 dw0, dm0, dw1, dm1;
        tile_scales(x0[b].d, x0[b].dmin, y, b, &dw0, &dm0);
        tile_scales(x1[b].d, x1[b].dmin, y, b, &dw1, &dm1);
        __m256i mins0[4], mins1[4];
        for (int k = 0; k < 4; k++) {
            mins0[k] = q2_K_min_dot(&x0[b], &y[k][b]);
            mins1[k] = q2_K_min_dot(&x1[b], &y[k][b]);
        }
        const __m256i s0 = q2_K_scales(&x0[b]), s1 = q2_K_scales(&x1[b]);
        for (int g = 0; g < 2; g++) {
            const __m256i raw0 = _mm256_loadu_si256((const __m256i *)(x0[b].qs + 32 * g));
            const __m256i raw1 = _mm256_loadu_si256((const __m256i *)(x1[b].qs + 32 * g));
            __m256i p0[4], p1[4];
            _Pragma("GCC unroll 4") for (int k = 0; k < 4; k++) p0[k] = p1[k] = _mm256_setzero_si256();
            _Pragma("GCC unroll 4") for (int j = 0; j < 4; j++)
            {
                const __m256i v0 = _mm256_and_si256(_mm256_srli_epi16(raw0, 2 * j), lo2);
                const __m256i v1 = _mm256_and_si256(_mm256_srli_epi16(raw1, 2 * j), lo2);
                const __m256i sc0 = q2_K_scale_pair(s0, 4 * g + j), sc1 = q2_K_scale_pair(s1, 4 * g + j);
                _Pragma("GCC unroll 4") for (int k = 0; k < 4; k++)
                {
                    const __m256i a = _mm256_loadu_si256((const __m256i *)(y[k][b].qs + 128 * g + 32 * j));
                    p0[k] = _mm256_add_epi32(p0[k], _mm256_madd_epi16(_mm256_maddubs_epi16(v0, a), sc0));
                    p1[k] = _mm256_add_epi32(p1[k], _mm256_madd_epi16(_mm256_maddubs_epi16(v1, a), sc1));
                }
            }
            acc0 = _mm_fmadd_ps(_mm_cvtepi32_ps(hsum4_i32(p0[0], p0[1], p0[2], p0[3])), dw0, acc0);
            acc1 = _mm_fmadd_ps(_mm_cvtepi32_ps(hsum4_i32(p1[0], p1[1], p1[2], p1[3])), dw1, acc1);
            const __m128i m0 = _mm_setr_epi32(hsum_epi32_half(mins0[0], g), hsum_epi32_half(mins0[1], g),
                                              hsum_epi32_half(mins0[2], g), hsum_epi32_half(mins0[3], g));
            const __m128i m1 = _mm_setr_epi32(hsum_epi32_half(mins1[0], g), hsum_epi32_half(mins1[1], g),
                                              hsum_epi32_half(mins1[2], g), hsum_epi32_half(mins1[3], g));
            accm0 = _mm_fmadd_ps(_mm_cvtepi32_ps(m0), dm0, accm0);
            accm1 = _mm_fmadd_ps(_mm_cvtepi32_ps(m1), dm1, accm1);
        }
    }
    _mm_storeu_ps(out0, _mm_sub_ps(acc0, accm0));
    _mm_storeu_ps(out1, _mm_sub_ps(acc1, accm1));
}

/* gemv's order (q2_K_repacked_dot with gemm false) for four rows and one
 * token (CPUs without AVX-512): each activation vector is loaded once for
 * the four rows, the values are shifted straight out of memory, and the
 * block's integer sums of all four rows (values and mins) come out of two
 * horizontal adds; the four rows' fma chains run side by side in one
 * vector, each lane the scalar fmaf of q2_K_repacked_dot: the same bits.
 * The one-row dot left the group loop rolled (its q2_K_group went through
 * the stack) and spent a third of its time on horizontal adds. pf, pf_step:
 * as q2_K_gemv_2rows. */
static void q2_K_gemv_4rows_avx2(const uint8_t *w, size_t rb, const block_q8_K *y, int64_t nb, float out[4],
                                 const char *pf, size_t pf_step)
{
    const block_q2_K *x[4];
    for (int r = 0; r < 4; r++)
        x[r] = (const block_q2_K *)(const void *)(w + (size_t)r * rb);
    const __m256i lo2 = _mm256_set1_epi8(3);
    __m128 acc = _mm_setzero_ps(), acc_min = _mm_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        quant_prefetch_step(pf, b, pf_step);
        __m256i s[4], p[4];
        _Pragma("GCC unroll 4") for (int r = 0; r < 4; r++)
        {
            s[r] = q2_K_scales(&x[r][b]);
            p[r] = _mm256_setzero_si256();
        }
        _Pragma("GCC unroll 2") for (int g = 0; g < 2; g++)
        {
            _Pragma("GCC unroll 4") for (int j = 0; j < 4; j++)
            {
                const __m256i a = _mm256_loadu_si256((const __m256i *)(y[b].qs + 128 * g + 32 * j));
                _Pragma("GCC unroll 4") for (int r = 0; r < 4; r++)
                {
                    const __m256i raw = _mm256_loadu_si256((const __m256i *)(x[r][b].qs + 32 * g));
                    const __m256i v = _mm256_and_si256(_mm256_srli_epi16(raw, 2 * j), lo2);
                    p[r] = _mm256_add_epi32(
                        p[r], _mm256_madd_epi16(_mm256_maddubs_epi16(v, a), q2_K_scale_pair(s[r], 4 * g + j)));
                }
            }
        }
        const __m128i isum = hsum4_i32(p[0], p[1], p[2], p[3]);
        const __m128i imin = hsum4_i32(q2_K_min_dot(x[0] + b, y + b), q2_K_min_dot(x[1] + b, y + b),
                                       q2_K_min_dot(x[2] + b, y + b), q2_K_min_dot(x[3] + b, y + b));
        const __m128 dw = quant_f16x4_mul(x[0][b].d, x[1][b].d, x[2][b].d, x[3][b].d, y[b].d);
        const __m128 dm = quant_f16x4_mul(x[0][b].dmin, x[1][b].dmin, x[2][b].dmin, x[3][b].dmin, y[b].d);
        acc = _mm_fmadd_ps(_mm_cvtepi32_ps(isum), dw, acc);
        acc_min = _mm_fmadd_ps(_mm_cvtepi32_ps(imin), dm, acc_min);
    }
    _mm_storeu_ps(out, _mm_sub_ps(acc, acc_min));
}
#define RP_Q2K_PAIRS_AVX2 1
#endif

bool refk_applies(const gguf_tensor *w)
{
    return (w->type == TENSOR_TYPE_Q4_K || w->type == TENSOR_TYPE_Q2_K) && w->ne[1] % 8 == 0;
}

void refk_matmul(const gguf_tensor *w, int64_t n, int64_t r0, int64_t r1, const uint8_t *act, size_t act_stride,
                 int n_tok, float *out, int64_t out_stride)
{
    const bool q2 = w->type == TENSOR_TYPE_Q2_K;
    const int64_t nb = n / 256;
    const size_t rb = (size_t)nb * (q2 ? sizeof(block_q2_K) : sizeof(block_q4_K));
    float (*dot)(const void *, const block_q8_K *, int64_t, bool) = q2 ? q2_K_repacked_dot : q4_K_repacked_dot;
#ifdef RP_AVX2
    void (*tile)(const void *, const uint8_t *, size_t, int64_t, float *) = q2 ? q2_K_tile_1x4 : q4_K_tile_1x4;
#endif
    /* tokens in complete groups of 4 go through the gemm kernel, the rest
     * through gemv */
    const int n_gemm = n_tok - n_tok % 4;
#ifdef RP_AVX2
    const int q4_rows = 4; /* one-token Q4_K rows through q4_K_gemv_4rows_{avx2,vnni} in fours */
#else
    const int q4_rows = 1;
#endif
#ifdef RP_Q2K_PAIRS
    const int max_rows = q2 ? 2 : q4_rows; /* Q2_K rows go through q2_K_tile_2x4 and q2_K_gemv_2rows in pairs */
#elif defined(RP_Q2K_PAIRS_AVX2)
    /* Q2_K rows: q2_K_tile_2x4_avx2 takes pairs, q2_K_gemv_4rows_avx2 fours */
    const int max_rows = q2 ? 4 : q4_rows;
#else
    const int max_rows = q4_rows;
#endif
#ifdef RP_AVX2
    const size_t pf_step = quant_prefetch_step_size(rb, max_rows, nb);
    /* one token, four rows: Q4_K's kernel, and Q2_K's where its pairs kernel is not built */
#ifdef RP_Q4K_GEMV_VNNI
    void (*gemv4)(const uint8_t *, size_t, const block_q8_K *, int64_t, float *, const char *, size_t) =
        q2 ? NULL : q4_K_gemv_4rows_vnni;
#else
    void (*gemv4)(const uint8_t *, size_t, const block_q8_K *, int64_t, float *, const char *, size_t) =
        q2 ? NULL : q4_K_gemv_4rows_avx2;
#endif
#ifdef RP_Q2K_PAIRS_AVX2
    if (q2)
        gemv4 = q2_K_gemv_4rows_avx2;
#endif
#endif
    for (int64_t r = r0; r < r1;) {
        int nr = max_rows;
        while (r + nr > r1)
            nr /= 2;
        const uint8_t *x = (const uint8_t *)w->data + (size_t)r * rb;
        int t = 0;
#ifdef RP_AVX2
        for (; t < n_gemm; t += 4) {
            float o[4][4];
#ifdef RP_Q2K_PAIRS
            if (q2 && nr == 2)
#ifdef __AVX512VNNI__
                q2_K_tile_2x4_vnni((const block_q2_K *)x, (const block_q2_K *)(x + rb),
                                   act + (size_t)t * act_stride, act_stride, nb, o[0], o[1]);
#else
                q2_K_tile_2x4((const block_q2_K *)x, (const block_q2_K *)(x + rb), act + (size_t)t * act_stride,
                              act_stride, nb, o[0], o[1]);
#endif
            else
#elif defined(RP_Q2K_PAIRS_AVX2)
            if (q2 && nr >= 2)
                for (int k = 0; k < nr; k += 2)
                    q2_K_tile_2x4_avx2((const block_q2_K *)(x + (size_t)k * rb), (const block_q2_K *)(x + (k + 1) * rb),
                                       act + (size_t)t * act_stride, act_stride, nb, o[k], o[k + 1]);
            else
#endif
                for (int k = 0; k < nr; k++)
                    tile(x + (size_t)k * rb, act + (size_t)t * act_stride, act_stride, nb, o[k]);
            for (int k = 0; k < nr; k++)
                for (int j = 0; j < 4; j++)
                    out[(int64_t)(t + j) * out_stride + r + k] = o[k][j];
        }
#endif
#ifdef RP_AVX2
        if (gemv4 && nr == 4)
            for (; t < n_tok; t++) { /* gemv; the first pass prefetches the next fours */
                float o[4];
                gemv4(x, rb, (const block_q8_K *)(act + (size_t)t * act_stride), nb, o,
                      (const char *)x + QUANT_PF_AHEAD * 4 * rb, t == 0 ? pf_step : 0);
                for (int k = 0; k < 4; k++)
                    out[(int64_t)t * out_stride + r + k] = o[k];
            }
#endif
#ifdef RP_Q2K_PAIRS
        if (q2 && nr == 2)
            for (; t < n_tok; t++) /* gemv; the first pass prefetches the next pairs */
                q2_K_gemv_2rows((const block_q2_K *)x, (const block_q2_K *)(x + rb),
                                (const block_q8_K *)(act + (size_t)t * act_stride), nb,
                                &out[(int64_t)t * out_stride + r], &out[(int64_t)t * out_stride + r + 1],
                                (const char *)x + QUANT_PF_AHEAD * 2 * rb, t == 0 ? pf_step : 0);
#endif
        for (; t < n_tok; t++)
            for (int k = 0; k < nr; k++)
                out[(int64_t)t * out_stride + r + k] =
                    dot(x + (size_t)k * rb, (const block_q8_K *)(act + (size_t)t * act_stride), nb, t < n_gemm);
        r += nr;
    }
}

bool repack_applies(const gguf_tensor *w)
{
    /* a portable build too follows what an AVX2 reference machine does;
     * MXFP4 (gpt-oss's experts) is repacked 8x8 on the same condition */
    return (w->type == TENSOR_TYPE_Q4_0 || w->type == TENSOR_TYPE_MXFP4) && w->ne[1] % 8 == 0 && w->ne[0] % 32 == 0;
}

/* One output of ggml_gemv/gemm_q4_0_8x8_q8_0: each block's exact integer
 * sum, FMA-accumulated with d_w * d_a in block order. */
static float q4_0_row_dot(const block_q4_0 *x, const block_q8_0 *y, int64_t nb)
{
    float acc = 0.0f;
    for (int64_t b = 0; b < nb; b++)
        acc = fmaf((float)isum_q4_0(&x[b], &y[b]), h2f(x[b].d) * h2f(y[b].d), acc);
    return acc;
}

#ifdef RP_AVX2

/* 8 int32 partial sums of qx . qy (maddubs on |qx| and qy with qx's sign). */
static inline __m256i q4_0_partial(__m256i ax, __m256i qx, const block_q8_0 *y)
{
    const __m256i qy = _mm256_loadu_si256((const __m256i *)y->qs);
    return _mm256_madd_epi16(_mm256_maddubs_epi16(ax, _mm256_sign_epi8(qy, qx)), _mm256_set1_epi16(1));
}

/* Two weight rows against four activation rows: every block's exact integer
 * sums for the 8 outputs at once, then per output the same
 * fma(isum, d_w * d_a, acc) chain in block order as q4_0_row_dot. */
static void q4_0_tile_2x4(const block_q4_0 *x0, const block_q4_0 *x1, const uint8_t *act, size_t act_stride, int64_t nb,
                          float o0[4], float o1[4])
{
    const block_q8_0 *y[4];
    for (int k = 0; k < 4; k++)
        y[k] = (const block_q8_0 *)(act + (size_t)k * act_stride);
    __m128 acc0 = _mm_setzero_ps(), acc1 = _mm_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        const __m256i qx0 = q4_0_values(&x0[b]), qx1 = q4_0_values(&x1[b]);
        const __m256i ax0 = _mm256_sign_epi8(qx0, qx0), ax1 = _mm256_sign_epi8(qx1, qx1);
        const __m128i s0 = hsum4_i32(q4_0_partial(ax0, qx0, &y[0][b]), q4_0_partial(ax0, qx0, &y[1][b]),
                                     q4_0_partial(ax0, qx0, &y[2][b]), q4_0_partial(ax0, qx0, &y[3][b]));
        const __m128i s1 = hsum4_i32(q4_0_partial(ax1, qx1, &y[0][b]), q4_0_partial(ax1, qx1, &y[1][b]),
                                     q4_0_partial(ax1, qx1, &y[2][b]), q4_0_partial(ax1, qx1, &y[3][b]));
        const __m128 da = _mm_set_ps(h2f(y[3][b].d), h2f(y[2][b].d), h2f(y[1][b].d), h2f(y[0][b].d));
        acc0 = _mm_fmadd_ps(_mm_cvtepi32_ps(s0), _mm_mul_ps(_mm_set1_ps(h2f(x0[b].d)), da), acc0);
        acc1 = _mm_fmadd_ps(_mm_cvtepi32_ps(s1), _mm_mul_ps(_mm_set1_ps(h2f(x1[b].d)), da), acc1);
    }
    _mm_storeu_ps(o0, acc0);
    _mm_storeu_ps(o1, acc1);
}
#endif


#ifdef RP_AVX2
/* Four weight rows against one activation row (the single-token gemv):
 * four integer block sums from one horizontal add, then per row the
 * fma(isum, d_w * d_a, acc) chain of q4_0_row_dot. */
static void q4_0_rows4(const block_q4_0 *const x[4], const block_q8_0 *y, int64_t nb, float out[4])
{
    __m128 acc = _mm_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        __m256i p[4];
        float dw[4];
        for (int k = 0; k < 4; k++) {
            const __m256i qx = q4_0_values(&x[k][b]);
            p[k] = q4_0_partial(_mm256_sign_epi8(qx, qx), qx, &y[b]);
            dw[k] = h2f(x[k][b].d);
        }
        const __m128 sc = _mm_mul_ps(_mm_loadu_ps(dw), _mm_set1_ps(h2f(y[b].d)));
        acc = _mm_fmadd_ps(_mm_cvtepi32_ps(hsum4_i32(p[0], p[1], p[2], p[3])), sc, acc);
    }
    _mm_storeu_ps(out, acc);
}
#endif

void repack_matmul(const gguf_tensor *w, int64_t n, int64_t r0, int64_t r1, const uint8_t *act, size_t act_stride,
                   int n_tok, float *out, int64_t out_stride)
{
    if (w->type == TENSOR_TYPE_MXFP4) {
        repack_mxfp4_matmul(w->data, n, r0, r1, act, act_stride, n_tok, out, out_stride);
        return;
    }
    const int64_t nb = n / 32;
    const size_t rb = (size_t)nb * sizeof(block_q4_0);
    int64_t r = r0;
#ifdef RP_AVX2
    const int n4 = n_tok & ~3;
    if (n4 > 0) {
        for (; r + 2 <= r1; r += 2) {
            const block_q4_0 *x0 = (const block_q4_0 *)((const uint8_t *)w->data + (size_t)r * rb);
            const block_q4_0 *x1 = (const block_q4_0 *)((const uint8_t *)x0 + rb);
            for (int t = 0; t < n4; t += 4) {
                float o0[4], o1[4];
                q4_0_tile_2x4(x0, x1, act + (size_t)t * act_stride, act_stride, nb, o0, o1);
                for (int k = 0; k < 4; k++) {
                    out[(int64_t)(t + k) * out_stride + r] = o0[k];
                    out[(int64_t)(t + k) * out_stride + r + 1] = o1[k];
                }
            }
            for (int t = n4; t < n_tok; t++) {
                const block_q8_0 *y = (const block_q8_0 *)(act + (size_t)t * act_stride);
                out[(int64_t)t * out_stride + r] = q4_0_row_dot(x0, y, nb);
                out[(int64_t)t * out_stride + r + 1] = q4_0_row_dot(x1, y, nb);
            }
        }
    }
    if (n_tok == 1)
        for (; r + 4 <= r1; r += 4) {
            const block_q4_0 *x[4];
            for (int k = 0; k < 4; k++)
                x[k] = (const block_q4_0 *)((const uint8_t *)w->data + (size_t)(r + k) * rb);
            q4_0_rows4(x, (const block_q8_0 *)act, nb, out + r);
        }
#endif
    for (; r < r1; r++) {
        const block_q4_0 *x = (const block_q4_0 *)((const uint8_t *)w->data + (size_t)r * rb);
        for (int t = 0; t < n_tok; t++)
            out[(int64_t)t * out_stride + r] = q4_0_row_dot(x, (const block_q8_0 *)(act + (size_t)t * act_stride), nb);
    }
}
