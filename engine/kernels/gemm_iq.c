/* The IQ integer GEMM (see gemm_iq.h).
 *
 * A row's super-block is decoded once per call (decode_fn: its 256 signed
 * values, natural order, and the integer scale of each 16) and written into
 * a panel in the layout of this build's tile:
 *
 * AVX-512 VNNI (int8): rows in pairs, one sub-block of 32 bytes per 256-bit
 * half, so that vpdpbusd's 4-byte lane sums are the reference's lanes k
 * (elements 4k..4k+3) of both rows at once, against a token's 32 bytes
 * broadcast to both halves. vpdpbusd wants one operand unsigned: the token
 * bytes enter as a + 128, and the surplus 128 * (the row's lane sums),
 * times the scales, is kept per pair and super-block and taken off before
 * the float step. Each sub-block's lanes are multiplied by their scale
 * (vpmulld) and summed: the exact lanes of vec_dot. A tile is 2 row pairs
 * x 8 tokens (16 accumulators); a full one runs each super-block's 8
 * sub-blocks as one asm loop (GCC 12 spilled the scales and copied the
 * accumulators around the intrinsics), the last tiles of a call (fewer
 * rows or tokens) the same steps in C. That loop issues 2 multiplies per
 * vpdpbusd (it and vpmulld), about as fast as this Zen 5 retires them; it
 * stays for IQ4_XS. The IQ2 and IQ3 types take the packed-scale panel
 * (write_pair_row_pk): their exact 4-value sums fit an int16, so two
 * sub-blocks' sums share a dword and one vpdpwssd applies both scales
 * (3 multiplies per 2 vpdpbusd; vpslld and vpblendmw run beside them on
 * this CPU, measured; vpermt2w and vpshldd do not); a full tile of them
 * runs all its super-blocks, float steps included, as one asm statement
 * (tile_pk_2x8_asm). The float step forms d_w * d_act for 4 tokens in one
 * multiply (the driver keeps the tokens' d side by side: yq) and gives
 * each token its own by vshufps, which runs beside the multiplies where a
 * vmulps per output took their pipes. Exact alternatives measured no
 * faster (2026-12-02/03, docs/speed-ik.md, docs/speed-iq.md): int16
 * weights x scales in vpdpwssd (two per 64 products), the surplus taken off
 * in wrapping int16 arithmetic after the pack, a 2 x 4 tile with its float
 * lanes in registers, one multiply for a pair's 16 d_w x d_act products
 * (spread by permutes), slices of super-blocks; the whole-tile asm for
 * IQ4_XS (its loop's multiplies dominate: 2026-12-06, level).
 *
 * AVX2 (int16): per row 8 sub-blocks of 32 int16 (value times scale), each
 * as two halves of 8 int16 pairs: half A holds elements (4k, 4k+1), half B
 * (4k+2, 4k+3), for the lanes k in the order LANES = 0 1 4 5 2 3 6 7.
 * vpmaddwd of half A plus half B against the same arrangement of a token's
 * bytes puts lane LANES[m] in int32 lane m; LANES is the order in which
 * shuffle_ps takes every other pair out of two 8-pair halves, so a token's
 * bytes need two widenings and two shuffles per sub-block (done once per
 * tile of 4 tokens, widen_token, for every row of the panel).
 *
 * Either way each output's 8 float lanes (acc[k] = fma(d_w * d_act, lane k,
 * acc[k]) per super-block) and their hsum_float_8 are vec_dot's. The
 * scratch (panel, d_w, token bytes) is per thread and kept between calls;
 * on AVX-512 the tokens' bytes and d come prepared once per matmul for
 * every thread where the caller has them (gemm_iq_prep_tokens).
 * On AVX-512 the rows, tokens and super-blocks are cut by the driver
 * gemm_iq1.c's IQ1_M GEMM shares (gemm_iq_drive.h); this file gives it the
 * types' panels, token bytes and tiles. */
#include "kernels/gemm_iq.h"

#include <stdlib.h>
#include <string.h>

#include "gguf/tensor.h"
#include "kernels/gemm_iq1.h"
#include "kernels/gemm_iq_drive.h"
#include "kernels/gemm_kpanel.h"
#include "kernels/kernel_scratch.h"
#include "kernels/quant_internal.h"
#include "kernels/quant_iq2.h"
#include "kernels/quant_iq3.h"
#include "kernels/quant_iq4.h"
#include "kernels/quant_iq_signs.h"

/* AVX2 builds run the IQ2 and IQ3 types through the offset GEMM below (on
 * gemm_kpanel.h's driver), IQ4_XS through the int16 tiles. */
#if defined(QUANT_HAVE_AVX2) && !defined(GEMM_IQ_DRIVE) && defined(GEMM_KPANEL) && !defined(GEMM_KPANEL_512)
#define GEMM_IQ_OFS256 1
#endif

/* Super-block i of a row: v[b] its sub-block b's 32 values (bytes, natural
 * order), ls[h] the integer scale of elements 16h..16h+15, *d its d_w. */
typedef void (*decode_fn)(const void *row, int64_t i, int8_t v[QK_K], int ls[QK_K / 16], float *d);

#if defined(QUANT_HAVE_AVX2)
static void decode_iq4_xs(const void *row, int64_t i, int8_t v[QK_K], int ls[QK_K / 16], float *d)
{
    const block_iq4_xs *x = (const block_iq4_xs *)row + i;
    const __m256i lut = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)quant_kvalues_iq4nl));
    *d = fp16_to_f32(x->d);
    for (int ib = 0; ib < QK_K / 32; ib++) {
        ls[2 * ib] = ls[2 * ib + 1] = quant_iq4_xs_scale(x, ib) - 32;
        /* low nibbles (elements 0-15) in the lower half, high in the upper */
        const __m256i q = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(x->qs + 16 * ib)));
        const __m256i nib = _mm256_and_si256(_mm256_srlv_epi64(q, _mm256_set_epi64x(4, 4, 0, 0)), _mm256_set1_epi8(0x0F));
        _mm256_storeu_si256((__m256i *)(v + 32 * ib), _mm256_shuffle_epi8(lut, nib));
    }
}

/* The IQ2 types through their shared decoding (quant_iq2.h): weight e is
 * +-grid byte, its scale 2 * s + 1 of its 16. */
static inline void decode_iq2(const struct iq2_groups *g, int8_t v[QK_K], int ls[QK_K / 16])
{
    for (int ib = 0; ib < QK_K / 32; ib++) {
        const uint64_t *gr = g->grid + 4 * ib;
        const __m256i mag = _mm256_setr_epi64x((long long)gr[0], (long long)gr[1], (long long)gr[2], (long long)gr[3]);
        const __m256i neg = bits32(g->signs + 4 * ib); /* 0xFF: minus */
        _mm256_storeu_si256((__m256i *)(v + 32 * ib), _mm256_sub_epi8(_mm256_xor_si256(mag, neg), neg));
    }
    for (int h = 0; h < QK_K / 16; h++)
        ls[h] = 2 * g->scale[h] + 1;
}

static void decode_iq2_xxs(const void *row, int64_t i, int8_t v[QK_K], int ls[QK_K / 16], float *d)
{
    const block_iq2_xxs *x = (const block_iq2_xxs *)row + i;
    struct iq2_groups g;
    *d = fp16_to_f32(x->d);
    quant_iq2_xxs_groups(x, &g);
    decode_iq2(&g, v, ls);
}
static void decode_iq2_xs(const void *row, int64_t i, int8_t v[QK_K], int ls[QK_K / 16], float *d)
{
    const block_iq2_xs *x = (const block_iq2_xs *)row + i;
    struct iq2_groups g;
    *d = fp16_to_f32(x->d);
    quant_iq2_xs_groups(x, &g);
    decode_iq2(&g, v, ls);
}
static void decode_iq2_s(const void *row, int64_t i, int8_t v[QK_K], int ls[QK_K / 16], float *d)
{
    const block_iq2_s *x = (const block_iq2_s *)row + i;
    struct iq2_groups g;
    *d = fp16_to_f32(x->d);
    quant_iq2_s_groups(x, &g);
    decode_iq2(&g, v, ls);
}
/* IQ3_S: groups of 4 magnitudes from a 9-bit grid index, every sign
 * stored, 2 * s + 1 per sub-block. */
static void decode_iq3_s(const void *row, int64_t i, int8_t v[QK_K], int ls[QK_K / 16], float *d)
{
    const block_iq3_s *x = (const block_iq3_s *)row + i;
    *d = fp16_to_f32(x->d);
    for (int ib = 0; ib < QK_K / 32; ib++) {
        /* the 8 grid indices, qs byte k with bit k of qh above it, gathered */
        const __m256i lo = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(x->qs + 8 * ib)));
        const __m256i hi = _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32(x->qh[ib]), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7)),
                                            _mm256_set1_epi32(1));
        const __m256i mag = _mm256_i32gather_epi32((const int *)quant_iq3s_grid, _mm256_or_si256(lo, _mm256_slli_epi32(hi, 8)), 4);
        const __m256i neg = bits32(x->signs + 4 * ib);
        _mm256_storeu_si256((__m256i *)(v + 32 * ib), _mm256_sub_epi8(_mm256_xor_si256(mag, neg), neg));
        ls[2 * ib] = ls[2 * ib + 1] = 2 * ((x->scales[ib / 2] >> 4 * (ib % 2)) & 15) + 1;
    }
}

/* IQ3_XXS: 8-bit grid indices, a 7-bit sign code per 8 weights and the
 * scale in one uint32 per sub-block. */
static void decode_iq3_xxs(const void *row, int64_t i, int8_t v[QK_K], int ls[QK_K / 16], float *d)
{
    const block_iq3_xxs *x = (const block_iq3_xxs *)row + i;
    *d = fp16_to_f32(x->d);
    for (int ib = 0; ib < QK_K / 32; ib++) {
        uint32_t aux;
        memcpy(&aux, x->qs + QK_K / 4 + 4 * ib, 4);
        uint8_t sg[4];
        for (int k = 0; k < 4; k++)
            sg[k] = quant_ksigns_iq2xs[(aux >> 7 * k) & 127];
        const __m256i mag = _mm256_i32gather_epi32(
            (const int *)quant_iq3xxs_grid, _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(x->qs + 8 * ib))), 4);
        const __m256i neg = bits32(sg);
        _mm256_storeu_si256((__m256i *)(v + 32 * ib), _mm256_sub_epi8(_mm256_xor_si256(mag, neg), neg));
        ls[2 * ib] = ls[2 * ib + 1] = 2 * (int)(aux >> 28) + 1;
    }
}
#else
#define decode_iq4_xs NULL
#define decode_iq2_xxs NULL
#define decode_iq2_xs NULL
#define decode_iq2_s NULL
#define decode_iq3_s NULL
#define decode_iq3_xxs NULL
#endif

/* The type's decoding and the factor vec_dot applies to its sum; *pk:
 * a lane's 4-value sum (|a| <= 128 times the type's largest magnitude, 4
 * times) fits an int16, so the AVX-512 panel takes the packed-scale layout
 * (IQ2: 43, IQ3_S: 15, IQ3_XXS: 62; IQ4_XS's 127 does not fit). */
static bool type_info(enum tensor_type type, decode_fn *fn, float *scale, bool *pk)
{
    *scale = 0.125f;
    *pk = type != TENSOR_TYPE_IQ4_XS;
    switch (type) {
    case TENSOR_TYPE_IQ4_XS:
        *fn = decode_iq4_xs;
        *scale = 1.0f; /* x * 1.0f is x: vec_dot's plain hsum */
        return true;
    case TENSOR_TYPE_IQ2_XXS:
        *fn = decode_iq2_xxs;
        return true;
    case TENSOR_TYPE_IQ2_XS:
        *fn = decode_iq2_xs;
        return true;
    case TENSOR_TYPE_IQ2_S:
        *fn = decode_iq2_s;
        return true;
    case TENSOR_TYPE_IQ3_S:
        *fn = decode_iq3_s;
        *scale = 1.0f;
        return true;
    case TENSOR_TYPE_IQ3_XXS:
        *fn = decode_iq3_xxs;
        *scale = 0.25f;
        return true;
    default:
        return false;
    }
}

bool gemm_iq_supports(enum tensor_type type)
{
    decode_fn fn;
    float scale;
    bool pk;
    return type_info(type, &fn, &scale, &pk) || gemm_iq1_supports(type);
}

/* Where each build's GEMM overtakes the vec_dot tiles, per type
 * (bench_gemm_iq TOKENS 0.3 TYPE, one layer's matmuls, one thread of an AMD
 * EPYC Zen 4, GEMM / tiles):
 * - AVX2 (the offset tiles; IQ4_XS the int16 ones): IQ2_XXS 0.95x at 16
 *   tokens, 1.07x at 20; IQ2_XS 1.02x at 16, 1.14x at 20; IQ2_S 0.94x at
 *   20, 1.03x at 24; IQ3_S 1.17x at 8; IQ3_XXS 1.01x at 12; IQ4_XS 0.83x at
 *   8, 0.96x at 10, 1.02x at 16, 1.08x at 20; IQ1_M 0.95x at 6, 1.22x at 8.
 *   (With the signs on the tokens' bytes it had taken 32 tokens for
 *   IQ2_XXS, 16 for IQ3_S.)
 * - AVX-512 VNNI: IQ2_XXS 1.10x at 10, 1.11x at 12; IQ2_XS 0.90x at 8,
 *   1.11x at 12; IQ2_S 0.93x at 12; IQ3_S 1.02x at 5, 1.19x at 6; IQ3_XXS
 *   0.76x at 8, 1.01x at 12, 1.27x at 16; IQ4_XS 1.01x at 8; IQ1_M 1.05x
 *   at 6, 1.21x at 8. */
int gemm_iq_min_tok(enum tensor_type type)
{
    switch (type) {
#ifdef GEMM_IQ_OFS256
    case TENSOR_TYPE_IQ2_XXS:
    case TENSOR_TYPE_IQ2_XS:
        return 20;
    case TENSOR_TYPE_IQ2_S:
        return 24;
    case TENSOR_TYPE_IQ3_XXS:
    case TENSOR_TYPE_IQ4_XS:
        return 16;
#elif defined(GEMM_IQ_DRIVE)
    case TENSOR_TYPE_IQ2_XXS:
    case TENSOR_TYPE_IQ2_XS:
        return 12;
    case TENSOR_TYPE_IQ2_S:
    case TENSOR_TYPE_IQ3_XXS:
        return 16;
    case TENSOR_TYPE_IQ3_S:
        return 6;
#endif
    default: /* the rest, and every type where a build has no GEMM for it */
        return type == TENSOR_TYPE_IQ4_XS || type == TENSOR_TYPE_IQ3_S || type == TENSOR_TYPE_IQ3_XXS ||
                       type == TENSOR_TYPE_IQ1_M
                   ? 8
                   : 16;
    }
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

#ifdef GEMM_IQ_DRIVE
#define GEMM_IQ_512 1
#define TILE_T 8
/* Panel bytes per row pair and super-block: 8 sub-blocks of 2 x 32 value
 * bytes, 8 of 2 x 8 int32 lane scales, 2 x 8 int32 offset corrections
 * (negated: the lanes start from them). */
#define PAIR_SB (8 * 64 + 8 * 64 + 64)

/* Row h (0, 1) of the pair at p: its super-blocks as PAIR_SB blocks. */
static void write_pair_row(decode_fn decode, const void *row, int64_t nbl, uint8_t *p, int h, float *dw)
{
    int8_t v[QK_K];
    int ls[QK_K / 16];
    for (int64_t i = 0; i < nbl; i++, p += PAIR_SB) {
        decode(row, i, v, ls, &dw[i]);
        __m256i corr = _mm256_setzero_si256();
        for (int b = 0; b < QK_K / 32; b++) {
            const __m256i vb = _mm256_loadu_si256((const __m256i *)(v + 32 * b));
            _mm256_storeu_si256((__m256i *)(p + 64 * b + 32 * h), vb);
            /* lanes 0-3: elements 0-15, 4-7: 16-31 */
            const __m256i l = _mm256_set_m128i(_mm_set1_epi32(ls[2 * b + 1]), _mm_set1_epi32(ls[2 * b]));
            _mm256_storeu_si256((__m256i *)(p + 512 + 64 * b + 32 * h), l);
            /* the lanes' value sums (exact: 1 * v pairs, then pairs) */
            const __m256i w4 =
                _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_set1_epi8(1), vb), _mm256_set1_epi16(1));
            corr = _mm256_add_epi32(corr, _mm256_mullo_epi32(w4, l));
        }
        _mm256_storeu_si256((__m256i *)(p + 1024 + 32 * h),
                            _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_slli_epi32(corr, 7)));
    }
}

/* The packed-scale panel (type_info's pk): per row pair and super-block 4
 * chunks of PK_CHUNK bytes, chunk m for sub-blocks 2m and 2m + 1: their
 * value bytes (64 each, as above), their lanes' starting values (2 x 8
 * int32 each, -128 x the lane's value sum, so that vpdpbusd from there
 * leaves the exact 4-value sums, which fit an int16), and their scales
 * as int16 pairs (dword lane k: sub-block 2m's scale of lane k low, 2m +
 * 1's high). Two sub-blocks' sums packed into one dword (shift, word
 * blend: neither on the multiply pipes) then take one vpdpwssd where
 * each took a vpmulld. */
#define PK_CHUNK (5 * 64)
#define STR(x) #x
#define XSTR(x) STR(x)
#define PAIR_SB_PK (4 * PK_CHUNK)

static void write_pair_row_pk(decode_fn decode, const void *row, int64_t nbl, uint8_t *p, int h, float *dw)
{
    int8_t v[QK_K];
    int ls[QK_K / 16];
    for (int64_t i = 0; i < nbl; i++, p += PAIR_SB_PK) {
        decode(row, i, v, ls, &dw[i]);
        for (int m = 0; m < QK_K / 64; m++) {
            uint8_t *c = p + m * PK_CHUNK;
            for (int e = 0; e < 2; e++) {
                const int b = 2 * m + e;
                const __m256i vb = _mm256_loadu_si256((const __m256i *)(v + 32 * b));
                _mm256_storeu_si256((__m256i *)(c + 64 * e + 32 * h), vb);
                const __m256i w4 =
                    _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_set1_epi8(1), vb), _mm256_set1_epi16(1));
                _mm256_storeu_si256((__m256i *)(c + 128 + 64 * e + 32 * h),
                                    _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_slli_epi32(w4, 7)));
            }
            /* lanes 0-3: elements 0-15 of a sub-block, 4-7: 16-31 */
            const int lo = ls[4 * m] | ls[4 * m + 2] << 16, hi = ls[4 * m + 1] | ls[4 * m + 3] << 16;
            _mm256_storeu_si256((__m256i *)(c + 256 + 32 * h), _mm256_set_m128i(_mm_set1_epi32(hi), _mm_set1_epi32(lo)));
        }
    }
}

/* A token's bytes plus 128 (unsigned for vpdpbusd). */
static void offset_token(const block_q8_K *y, int64_t nbl, uint8_t *o)
{
    const __m512i m = _mm512_set1_epi8((char)0x80);
    for (int64_t i = 0; i < nbl; i++)
        for (int s = 0; s < QK_K / 64; s++)
            _mm512_storeu_si512(o + QK_K * i + 64 * s,
                                _mm512_xor_si512(_mm512_loadu_si512(y[i].qs + 64 * s), m));
}

/* (a + 128) . w lane sums of 4 bytes, from zero. An asm statement: GCC 12
 * copied accumulators around its intrinsic and reloaded operands. */
static inline __m512i dpbusd0(__m512i a, __m512i w)
{
    __m512i r;
    __asm__("vpxord %0, %0, %0\n\tvpdpbusd %2, %1, %0" : "=&v"(r) : "v"(a), "v"(w));
    return r;
}

/* A super-block of 2 row pairs (w0, w1: their panel blocks) against 6 or
 * 8 tokens st bytes apart from p0 (their offset bytes), the C tile's steps
 * in one asm loop over the 8 sub-blocks: GCC 12 spilled the scales and
 * copied accumulators around the intrinsics (8 % slower). acc[j][t] are
 * the lanes, each started from its pair's starting value (s0, s1: register
 * copies). */
#define SB_HEAD                                                                                                \
    "mov $8, %[cnt]\n"                                                                                         \
    "1:\n\t"                                                                                                   \
    "vmovdqu64 (%[w0]), %%zmm26\n\t"                                                                         \
    "vmovdqu64 512(%[w0]), %%zmm27\n\t"                                                                      \
    "vmovdqu64 (%[w1]), %%zmm28\n\t"                                                                         \
    "vmovdqu64 512(%[w1]), %%zmm29\n\t"
#define SB_TAIL                                                                                                \
    "add $64, %[w0]\n\t"                                                                                      \
    "add $64, %[w1]\n\t"                                                                                      \
    "add $32, %[p0]\n\t"                                                                                      \
    "add $32, %[p3]\n\t"                                                                                      \
    "add $32, %[p6]\n\t"                                                                                      \
    "dec %[cnt]\n\t"                                                                                          \
    "jnz 1b\n\t"
#define SB_STEP0 \
    "vbroadcasti64x4 (%[p0]), %%zmm30\n\t" \
    "vpxord %%zmm31, %%zmm31, %%zmm31\n\t" \
    "vpdpbusd %%zmm26, %%zmm30, %%zmm31\n\t" \
    "vpxord %%zmm25, %%zmm25, %%zmm25\n\t" \
    "vpdpbusd %%zmm28, %%zmm30, %%zmm25\n\t" \
    "vpmulld %%zmm27, %%zmm31, %%zmm31\n\t" \
    "vpmulld %%zmm29, %%zmm25, %%zmm25\n\t" \
    "vpaddd %%zmm31, %[c00], %[c00]\n\t" \
    "vpaddd %%zmm25, %[c10], %[c10]\n\t"
#define SB_STEP1 \
    "vbroadcasti64x4 (%[p0],%[st],1), %%zmm30\n\t" \
    "vpxord %%zmm31, %%zmm31, %%zmm31\n\t" \
    "vpdpbusd %%zmm26, %%zmm30, %%zmm31\n\t" \
    "vpxord %%zmm25, %%zmm25, %%zmm25\n\t" \
    "vpdpbusd %%zmm28, %%zmm30, %%zmm25\n\t" \
    "vpmulld %%zmm27, %%zmm31, %%zmm31\n\t" \
    "vpmulld %%zmm29, %%zmm25, %%zmm25\n\t" \
    "vpaddd %%zmm31, %[c01], %[c01]\n\t" \
    "vpaddd %%zmm25, %[c11], %[c11]\n\t"
#define SB_STEP2 \
    "vbroadcasti64x4 (%[p0],%[st],2), %%zmm30\n\t" \
    "vpxord %%zmm31, %%zmm31, %%zmm31\n\t" \
    "vpdpbusd %%zmm26, %%zmm30, %%zmm31\n\t" \
    "vpxord %%zmm25, %%zmm25, %%zmm25\n\t" \
    "vpdpbusd %%zmm28, %%zmm30, %%zmm25\n\t" \
    "vpmulld %%zmm27, %%zmm31, %%zmm31\n\t" \
    "vpmulld %%zmm29, %%zmm25, %%zmm25\n\t" \
    "vpaddd %%zmm31, %[c02], %[c02]\n\t" \
    "vpaddd %%zmm25, %[c12], %[c12]\n\t"
#define SB_STEP3 \
    "vbroadcasti64x4 (%[p3]), %%zmm30\n\t" \
    "vpxord %%zmm31, %%zmm31, %%zmm31\n\t" \
    "vpdpbusd %%zmm26, %%zmm30, %%zmm31\n\t" \
    "vpxord %%zmm25, %%zmm25, %%zmm25\n\t" \
    "vpdpbusd %%zmm28, %%zmm30, %%zmm25\n\t" \
    "vpmulld %%zmm27, %%zmm31, %%zmm31\n\t" \
    "vpmulld %%zmm29, %%zmm25, %%zmm25\n\t" \
    "vpaddd %%zmm31, %[c03], %[c03]\n\t" \
    "vpaddd %%zmm25, %[c13], %[c13]\n\t"
#define SB_STEP4 \
    "vbroadcasti64x4 (%[p3],%[st],1), %%zmm30\n\t" \
    "vpxord %%zmm31, %%zmm31, %%zmm31\n\t" \
    "vpdpbusd %%zmm26, %%zmm30, %%zmm31\n\t" \
    "vpxord %%zmm25, %%zmm25, %%zmm25\n\t" \
    "vpdpbusd %%zmm28, %%zmm30, %%zmm25\n\t" \
    "vpmulld %%zmm27, %%zmm31, %%zmm31\n\t" \
    "vpmulld %%zmm29, %%zmm25, %%zmm25\n\t" \
    "vpaddd %%zmm31, %[c04], %[c04]\n\t" \
    "vpaddd %%zmm25, %[c14], %[c14]\n\t"
#define SB_STEP5 \
    "vbroadcasti64x4 (%[p3],%[st],2), %%zmm30\n\t" \
    "vpxord %%zmm31, %%zmm31, %%zmm31\n\t" \
    "vpdpbusd %%zmm26, %%zmm30, %%zmm31\n\t" \
    "vpxord %%zmm25, %%zmm25, %%zmm25\n\t" \
    "vpdpbusd %%zmm28, %%zmm30, %%zmm25\n\t" \
    "vpmulld %%zmm27, %%zmm31, %%zmm31\n\t" \
    "vpmulld %%zmm29, %%zmm25, %%zmm25\n\t" \
    "vpaddd %%zmm31, %[c05], %[c05]\n\t" \
    "vpaddd %%zmm25, %[c15], %[c15]\n\t"
#define SB_STEP6 \
    "vbroadcasti64x4 (%[p6]), %%zmm30\n\t" \
    "vpxord %%zmm31, %%zmm31, %%zmm31\n\t" \
    "vpdpbusd %%zmm26, %%zmm30, %%zmm31\n\t" \
    "vpxord %%zmm25, %%zmm25, %%zmm25\n\t" \
    "vpdpbusd %%zmm28, %%zmm30, %%zmm25\n\t" \
    "vpmulld %%zmm27, %%zmm31, %%zmm31\n\t" \
    "vpmulld %%zmm29, %%zmm25, %%zmm25\n\t" \
    "vpaddd %%zmm31, %[c06], %[c06]\n\t" \
    "vpaddd %%zmm25, %[c16], %[c16]\n\t"
#define SB_STEP7 \
    "vbroadcasti64x4 (%[p6],%[st],1), %%zmm30\n\t" \
    "vpxord %%zmm31, %%zmm31, %%zmm31\n\t" \
    "vpdpbusd %%zmm26, %%zmm30, %%zmm31\n\t" \
    "vpxord %%zmm25, %%zmm25, %%zmm25\n\t" \
    "vpdpbusd %%zmm28, %%zmm30, %%zmm25\n\t" \
    "vpmulld %%zmm27, %%zmm31, %%zmm31\n\t" \
    "vpmulld %%zmm29, %%zmm25, %%zmm25\n\t" \
    "vpaddd %%zmm31, %[c07], %[c07]\n\t" \
    "vpaddd %%zmm25, %[c17], %[c17]\n\t"

static inline __attribute__((always_inline)) void superblock_2x6(const uint8_t *w0, const uint8_t *w1,
                                                                const uint8_t *p0, size_t st, __m512i s0, __m512i s1,
                                                                __m512i acc[2][TILE_T])
{
    const uint8_t *p3 = p0 + 3 * st, *p6 = p0 + 6 * st;
    int cnt;
    __asm__("vmovdqa64 %[s0], %[c00]\n\t" "vmovdqa64 %[s1], %[c10]\n\t" "vmovdqa64 %[c00], %[c01]\n\t" "vmovdqa64 %[c10], %[c11]\n\t" "vmovdqa64 %[c00], %[c02]\n\t" "vmovdqa64 %[c10], %[c12]\n\t" "vmovdqa64 %[c00], %[c03]\n\t" "vmovdqa64 %[c10], %[c13]\n\t" "vmovdqa64 %[c00], %[c04]\n\t" "vmovdqa64 %[c10], %[c14]\n\t" "vmovdqa64 %[c00], %[c05]\n\t" "vmovdqa64 %[c10], %[c15]\n\t" SB_HEAD SB_STEP0 SB_STEP1 SB_STEP2 SB_STEP3 SB_STEP4 SB_STEP5 SB_TAIL
            : [c00] "=&v"(acc[0][0]), [c10] "=&v"(acc[1][0]), [c01] "=&v"(acc[0][1]), [c11] "=&v"(acc[1][1]), [c02] "=&v"(acc[0][2]), [c12] "=&v"(acc[1][2]), [c03] "=&v"(acc[0][3]), [c13] "=&v"(acc[1][3]), [c04] "=&v"(acc[0][4]), [c14] "=&v"(acc[1][4]), [c05] "=&v"(acc[0][5]), [c15] "=&v"(acc[1][5]), [cnt] "=&r"(cnt), [w0] "+r"(w0), [w1] "+r"(w1), [p0] "+r"(p0), [p3] "+r"(p3), [p6] "+r"(p6)
            : [st] "r"(st), [s0] "v"(s0), [s1] "v"(s1)
            : "xmm25", "xmm26", "xmm27", "xmm28", "xmm29", "xmm30", "xmm31", "cc", "memory");
}

static inline __attribute__((always_inline)) void superblock_2x8(const uint8_t *w0, const uint8_t *w1,
                                                                const uint8_t *p0, size_t st, __m512i s0, __m512i s1,
                                                                __m512i acc[2][TILE_T])
{
    const uint8_t *p3 = p0 + 3 * st, *p6 = p0 + 6 * st;
    int cnt;
    __asm__("vmovdqa64 %[s0], %[c00]\n\t" "vmovdqa64 %[s1], %[c10]\n\t" "vmovdqa64 %[c00], %[c01]\n\t" "vmovdqa64 %[c10], %[c11]\n\t" "vmovdqa64 %[c00], %[c02]\n\t" "vmovdqa64 %[c10], %[c12]\n\t" "vmovdqa64 %[c00], %[c03]\n\t" "vmovdqa64 %[c10], %[c13]\n\t" "vmovdqa64 %[c00], %[c04]\n\t" "vmovdqa64 %[c10], %[c14]\n\t" "vmovdqa64 %[c00], %[c05]\n\t" "vmovdqa64 %[c10], %[c15]\n\t" "vmovdqa64 %[c00], %[c06]\n\t" "vmovdqa64 %[c10], %[c16]\n\t" "vmovdqa64 %[c00], %[c07]\n\t" "vmovdqa64 %[c10], %[c17]\n\t" SB_HEAD SB_STEP0 SB_STEP1 SB_STEP2 SB_STEP3 SB_STEP4 SB_STEP5 SB_STEP6 SB_STEP7 SB_TAIL
            : [c00] "=&v"(acc[0][0]), [c10] "=&v"(acc[1][0]), [c01] "=&v"(acc[0][1]), [c11] "=&v"(acc[1][1]), [c02] "=&v"(acc[0][2]), [c12] "=&v"(acc[1][2]), [c03] "=&v"(acc[0][3]), [c13] "=&v"(acc[1][3]), [c04] "=&v"(acc[0][4]), [c14] "=&v"(acc[1][4]), [c05] "=&v"(acc[0][5]), [c15] "=&v"(acc[1][5]), [c06] "=&v"(acc[0][6]), [c16] "=&v"(acc[1][6]), [c07] "=&v"(acc[0][7]), [c17] "=&v"(acc[1][7]), [cnt] "=&r"(cnt), [w0] "+r"(w0), [w1] "+r"(w1), [p0] "+r"(p0), [p3] "+r"(p3), [p6] "+r"(p6)
            : [st] "r"(st), [s0] "v"(s0), [s1] "v"(s1)
            : "xmm25", "xmm26", "xmm27", "xmm28", "xmm29", "xmm30", "xmm31", "cc", "memory");
}

/* One token's step of the packed-scale loop (PAIR_SB_PK panel; 2 row pairs,
 * a sub-block pair a pass): per pair two vpdpbusd from the starting values
 * (zmm22-25) of the pair's two sub-blocks (zmm18-21), the second shifted
 * into the high words and blended over the first's (k1: the odd words),
 * one vpdpwssd by the scale pairs (zmm26-27) into the lanes c0 (pair 0)
 * and c1 (pair 1), exact. Token bytes in zmm28-29, zmm30-31 the sums. */
#define PK_TOK(a0, a1, c0, c1)                                                                                 \
    "vbroadcasti64x4 " a0 ", %%zmm28\n\t"                                                                     \
    "vbroadcasti64x4 " a1 ", %%zmm29\n\t"                                                                     \
    "vmovdqa64 %%zmm22, %%zmm30\n\t"                                                                          \
    "vpdpbusd %%zmm18, %%zmm28, %%zmm30\n\t"                                                                  \
    "vmovdqa64 %%zmm23, %%zmm31\n\t"                                                                          \
    "vpdpbusd %%zmm19, %%zmm29, %%zmm31\n\t"                                                                  \
    "vpslld $16, %%zmm31, %%zmm31\n\t"                                                                        \
    "vpblendmw %%zmm31, %%zmm30, %%zmm30%{%%k1%}\n\t"                                                         \
    "vpdpwssd %%zmm26, %%zmm30, " c0 "\n\t"                                                                \
    "vmovdqa64 %%zmm24, %%zmm30\n\t"                                                                          \
    "vpdpbusd %%zmm20, %%zmm28, %%zmm30\n\t"                                                                  \
    "vmovdqa64 %%zmm25, %%zmm31\n\t"                                                                          \
    "vpdpbusd %%zmm21, %%zmm29, %%zmm31\n\t"                                                                  \
    "vpslld $16, %%zmm31, %%zmm31\n\t"                                                                        \
    "vpblendmw %%zmm31, %%zmm30, %%zmm30%{%%k1%}\n\t"                                                         \
    "vpdpwssd %%zmm27, %%zmm30, " c1 "\n\t"

/* A full packed-scale tile over super-blocks [i0, i1) as one asm
 * statement: per super-block the lanes in zmm0-7 (pair 0, tokens 0-7)
 * and zmm8-15 (pair 1) by PK_TOK's steps, then the float step
 * of vec_dot into the 16 float accumulators at fa (fa[8 j + t]): d =
 * d_w * d_act for 4 tokens a multiply (the rows' d_w from dq, spaced ds
 * bytes, the tokens' side by side from yq), spread by vshufps, f =
 * fma(d, float(lanes), f). In C, GCC moved the 16 lanes between
 * registers after the loop and spilled the float accumulators around
 * it. */
#define PK_FMA(imm, dreg, t)                                                                                   \
    "vshufps $" #imm ", %%zmm" #dreg ", %%zmm" #dreg ", %%zmm24\n\t"                                          \
    "vcvtdq2ps %%zmm" #t ", %%zmm" #t "\n\t"                                                                  \
    "vfmadd213ps " #t "*64(%[fa]), %%zmm24, %%zmm" #t "\n\t"                                                   \
    "vmovups %%zmm" #t ", " #t "*64(%[fa])\n\t"
static inline __attribute__((always_inline)) void tile_pk_2x8_asm(const uint8_t *w0, const uint8_t *w1,
                                                                 const uint8_t *p0, size_t st, const float *dq,
                                                                 size_t ds, const float *yq, int64_t nb,
                                                                 float fa[16][16])
{
    const uint8_t *p3 = p0 + 3 * st, *p6 = p0 + 6 * st;
    const float *dq3 = (const float *)(const void *)((const char *)dq + 3 * ds);
    int cnt;
    __asm__ volatile(
        "mov $0xAAAAAAAA, %k[cnt]\n\t"
        "kmovd %k[cnt], %%k1\n"
        "3:\n\t"
        "vpxord %%zmm0, %%zmm0, %%zmm0\n\t" "vpxord %%zmm1, %%zmm1, %%zmm1\n\t"
        "vpxord %%zmm2, %%zmm2, %%zmm2\n\t" "vpxord %%zmm3, %%zmm3, %%zmm3\n\t"
        "vpxord %%zmm4, %%zmm4, %%zmm4\n\t" "vpxord %%zmm5, %%zmm5, %%zmm5\n\t"
        "vpxord %%zmm6, %%zmm6, %%zmm6\n\t" "vpxord %%zmm7, %%zmm7, %%zmm7\n\t"
        "vpxord %%zmm8, %%zmm8, %%zmm8\n\t" "vpxord %%zmm9, %%zmm9, %%zmm9\n\t"
        "vpxord %%zmm10, %%zmm10, %%zmm10\n\t" "vpxord %%zmm11, %%zmm11, %%zmm11\n\t"
        "vpxord %%zmm12, %%zmm12, %%zmm12\n\t" "vpxord %%zmm13, %%zmm13, %%zmm13\n\t"
        "vpxord %%zmm14, %%zmm14, %%zmm14\n\t" "vpxord %%zmm15, %%zmm15, %%zmm15\n\t"
        "mov $4, %[cnt]\n"
        "1:\n\t"
        "vmovdqu64 (%[w0]), %%zmm18\n\t"
        "vmovdqu64 64(%[w0]), %%zmm19\n\t"
        "vmovdqu64 128(%[w0]), %%zmm22\n\t"
        "vmovdqu64 192(%[w0]), %%zmm23\n\t"
        "vmovdqu64 256(%[w0]), %%zmm26\n\t"
        "vmovdqu64 (%[w1]), %%zmm20\n\t"
        "vmovdqu64 64(%[w1]), %%zmm21\n\t"
        "vmovdqu64 128(%[w1]), %%zmm24\n\t"
        "vmovdqu64 192(%[w1]), %%zmm25\n\t"
        "vmovdqu64 256(%[w1]), %%zmm27\n\t"
        PK_TOK("(%[p0])", "32(%[p0])", "%%zmm0", "%%zmm8")
        PK_TOK("(%[p0],%[st],1)", "32(%[p0],%[st],1)", "%%zmm1", "%%zmm9")
        PK_TOK("(%[p0],%[st],2)", "32(%[p0],%[st],2)", "%%zmm2", "%%zmm10")
        PK_TOK("(%[p3])", "32(%[p3])", "%%zmm3", "%%zmm11")
        PK_TOK("(%[p3],%[st],1)", "32(%[p3],%[st],1)", "%%zmm4", "%%zmm12")
        PK_TOK("(%[p3],%[st],2)", "32(%[p3],%[st],2)", "%%zmm5", "%%zmm13")
        PK_TOK("(%[p6])", "32(%[p6])", "%%zmm6", "%%zmm14")
        PK_TOK("(%[p6],%[st],1)", "32(%[p6],%[st],1)", "%%zmm7", "%%zmm15")
        "add $" XSTR(PK_CHUNK) ", %[w0]\n\t"
        "add $" XSTR(PK_CHUNK) ", %[w1]\n\t"
        "add $64, %[p0]\n\t"
        "add $64, %[p3]\n\t"
        "add $64, %[p6]\n\t"
        "dec %[cnt]\n\t"
        "jnz 1b\n\t"
        /* d_w of the pairs (row 2j in lanes 0-7, 2j + 1 in 8-15) */
        "vbroadcastss (%[dq]), %%zmm16\n\t"
        "vbroadcastss (%[dq],%[ds],1), %%ymm18\n\t"
        "vinsertf64x4 $1, %%ymm18, %%zmm16, %%zmm16\n\t"
        "vbroadcastss (%[dq],%[ds],2), %%zmm17\n\t"
        "vbroadcastss (%[dq3]), %%ymm18\n\t"
        "vinsertf64x4 $1, %%ymm18, %%zmm17, %%zmm17\n\t"
        "vbroadcastf32x4 (%[yq]), %%zmm18\n\t"
        "vbroadcastf32x4 16(%[yq]), %%zmm19\n\t"
        "vmulps %%zmm18, %%zmm16, %%zmm20\n\t"
        "vmulps %%zmm19, %%zmm16, %%zmm21\n\t"
        "vmulps %%zmm18, %%zmm17, %%zmm22\n\t"
        "vmulps %%zmm19, %%zmm17, %%zmm23\n\t"
        PK_FMA(0x00, 20, 0) PK_FMA(0x55, 20, 1) PK_FMA(0xAA, 20, 2) PK_FMA(0xFF, 20, 3)
        PK_FMA(0x00, 21, 4) PK_FMA(0x55, 21, 5) PK_FMA(0xAA, 21, 6) PK_FMA(0xFF, 21, 7)
        PK_FMA(0x00, 22, 8) PK_FMA(0x55, 22, 9) PK_FMA(0xAA, 22, 10) PK_FMA(0xFF, 22, 11)
        PK_FMA(0x00, 23, 12) PK_FMA(0x55, 23, 13) PK_FMA(0xAA, 23, 14) PK_FMA(0xFF, 23, 15)
        "add $4, %[dq]\n\t"
        "add $4, %[dq3]\n\t"
        "add $32, %[yq]\n\t"
        "dec %[nb]\n\t"
        "jnz 3b\n\t"
        : [cnt] "=&r"(cnt), [nb] "+r"(nb), [w0] "+r"(w0), [w1] "+r"(w1), [p0] "+r"(p0), [p3] "+r"(p3),
          [p6] "+r"(p6), [dq] "+r"(dq), [dq3] "+r"(dq3), [yq] "+r"(yq)
        : [st] "r"(st), [ds] "r"(ds), [fa] "r"(fa)
        : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11", "xmm12",
          "xmm13", "xmm14", "xmm15", "xmm16", "xmm17", "xmm18", "xmm19", "xmm20", "xmm21", "xmm22", "xmm23", "xmm24",
          "xmm25", "xmm26", "xmm27", "xmm28", "xmm29", "xmm30", "xmm31", "k1", "cc", "memory");
}
#undef PK_FMA

/* The 32 outputs of a full tile (2 row pairs x 8 tokens): each row's
 * hsum_float_8 times scale, 16 at once (hsum16_ps). Token t's 4 rows go to
 * o + t * stride. */
static inline __attribute__((always_inline)) void hsum_2x8(const __m512 facc[2][TILE_T], float scale, float *o,
                                                          int64_t stride)
{
#pragma GCC unroll 2
    for (int h = 0; h < 2; h++) { /* tokens 4h .. 4h + 3: lane 4r + t row r's for token 4h + t */
        __m512 f[8];
#pragma GCC unroll 4
        for (int m = 0; m < 4; m++) {
            f[2 * m] = facc[0][4 * h + m];
            f[2 * m + 1] = facc[1][4 * h + m];
        }
        store4x4_ps(transpose4x4_ps(_mm512_mul_ps(hsum16_ps(f), _mm512_set1_ps(scale))), o + 4 * h * stride, stride);
    }
}

/* Float e (a constant) of each 128-bit block of v in all four of its
 * lanes. vshufps in asm: GCC 12 makes _mm512_shuffle_ps(v, v, .) a
 * vpermilps, which shares the multiply pipes part of the time on the Zen 5
 * (4 beside 8 vpdpbusd: 1.2x their time; vshufps 1.0x). */
#define SPREAD4(imm)                                                                                            \
    __asm__("vshufps $" #imm ", %1, %1, %0" : "=v"(r) : "v"(v));                                                \
    return r
static inline __attribute__((always_inline)) __m512 spread4_ps(__m512 v, int e)
{
    __m512 r;
    switch (e) {
    case 0:
        SPREAD4(0x00);
    case 1:
        SPREAD4(0x55);
    case 2:
        SPREAD4(0xAA);
    default:
        SPREAD4(0xFF);
    }
}
#undef SPREAD4

/* NP row pairs (wp: their panel blocks, dw: the 2 * NP rows' d_w) against NT
 * tokens (a: offset bytes, yq: their d side by side, gemm_iq_drive.h): out[token][row],
 * from the PAIR_SB panel or (PK) the packed-scale one. Lanes 0-7 of a
 * register: row 2j, 8-15: row 2j + 1. Always inlined with constant PK,
 * NP, NT. */
static inline __attribute__((always_inline)) void tile512(int PK, int NP, int NT, const uint8_t *const wp[2],
                                                         const float *const dw[4], const uint8_t *const a[TILE_T],
                                                         const float *yq, int64_t i0, int64_t i1,
                                                         float fs[16][16], float *o, int64_t stride, int nr,
                                                         float scale)
{
    const size_t sbb = PK ? PAIR_SB_PK : PAIR_SB;
    __m512 facc[2][TILE_T];
    /* the asm loops want the tokens evenly spaced (and the whole tile's,
     * the rows' d_w too) */
    const size_t st = (size_t)(a[1] - a[0]);
    bool even = true;
    for (int t = 2; t < NT; t++)
        even = even && a[t] == a[0] + (size_t)t * st;
    int64_t i = i0;
    if (PK && NP == 2 && NT == 8 && even && i1 > i0 && dw[2] - dw[1] == dw[1] - dw[0] && dw[3] - dw[2] == dw[1] - dw[0]) {
        if (i0 == 0)
            for (int k = 0; k < 16; k++)
                _mm512_storeu_ps(fs[k], _mm512_setzero_ps());
        tile_pk_2x8_asm(wp[0] + i0 * sbb, wp[1] + i0 * sbb, a[0] + QK_K * i0, st, dw[0] + i0,
                        (size_t)((const char *)dw[1] - (const char *)dw[0]), yq + TILE_T * i0, i1 - i0, fs);
        if (!o)
            return;
        i = i1; /* the outputs from the state, below */
    }
#pragma GCC unroll 2
    for (int j = 0; j < NP; j++)
#pragma GCC unroll 8
        for (int t = 0; t < NT; t++)
            facc[j][t] = i == 0 ? _mm512_setzero_ps() : _mm512_loadu_ps(fs[8 * j + t]);
    for (; i < i1; i++) {
        /* the lanes start at minus the offset correction (the PAIR_SB
         * panel's; the PK lanes are exact from zero), so the float step
         * converts them as they end */
        __m512i acc[2][TILE_T];
#pragma GCC unroll 2
        for (int j = 0; j < NP; j++) {
            const __m512i start = PK ? _mm512_setzero_si512() : _mm512_loadu_si512(wp[j] + i * sbb + 1024);
#pragma GCC unroll 8
            for (int t = 0; t < NT; t++)
                acc[j][t] = start;
        }
        if (!PK && NP == 2 && NT == 6 && even) {
            superblock_2x6(wp[0] + i * sbb, wp[1] + i * sbb, a[0] + QK_K * i, st, acc[0][0], acc[1][0], acc);
            goto epilogue;
        }
        if (!PK && NP == 2 && NT == 8 && even) {
            superblock_2x8(wp[0] + i * sbb, wp[1] + i * sbb, a[0] + QK_K * i, st, acc[0][0], acc[1][0], acc);
            goto epilogue;
        }
        if (PK) {
            for (int m = 0; m < QK_K / 64; m++) {
                __m512i w0[2], w1[2], c0[2], c1[2], l[2];
#pragma GCC unroll 2
                for (int j = 0; j < NP; j++) {
                    const uint8_t *c = wp[j] + i * sbb + m * PK_CHUNK;
                    w0[j] = _mm512_loadu_si512(c);
                    w1[j] = _mm512_loadu_si512(c + 64);
                    c0[j] = _mm512_loadu_si512(c + 128);
                    c1[j] = _mm512_loadu_si512(c + 192);
                    l[j] = _mm512_loadu_si512(c + 256);
                }
#pragma GCC unroll 8
                for (int t = 0; t < NT; t++) {
                    const uint8_t *at = a[t] + QK_K * i + 64 * m;
                    const __m512i a0 = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)at));
                    const __m512i a1 = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(at + 32)));
#pragma GCC unroll 2
                    for (int j = 0; j < NP; j++) {
                        const __m512i x = _mm512_dpbusd_epi32(c0[j], a0, w0[j]);
                        const __m512i x1 = _mm512_slli_epi32(_mm512_dpbusd_epi32(c1[j], a1, w1[j]), 16);
                        acc[j][t] = _mm512_dpwssd_epi32(acc[j][t], _mm512_mask_blend_epi16(0xAAAAAAAAu, x, x1), l[j]);
                    }
                }
            }
            goto epilogue;
        }
        for (int s = 0; s < QK_K / 32; s++) {
            __m512i w[2], l[2];
#pragma GCC unroll 2
            for (int j = 0; j < NP; j++) {
                w[j] = _mm512_loadu_si512(wp[j] + i * sbb + 64 * s);
                l[j] = _mm512_loadu_si512(wp[j] + i * sbb + 512 + 64 * s);
                /* held in registers: GCC otherwise loads them again per token */
                __asm__("" : "+v"(w[j]), "+v"(l[j]));
            }
#pragma GCC unroll 8
            for (int t = 0; t < NT; t++) {
                const __m512i at = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(a[t] + QK_K * i + 32 * s)));
#pragma GCC unroll 2
                for (int j = 0; j < NP; j++)
                    acc[j][t] = _mm512_add_epi32(acc[j][t], _mm512_mullo_epi32(dpbusd0(at, w[j]), l[j]));
            }
        }
    epilogue:
#pragma GCC unroll 2
        for (int j = 0; j < NP; j++) {
            /* d_w of row 2j in lanes 0-7, of row 2j + 1 in 8-15 */
            const __m512 dwv = _mm512_castpd_ps(_mm512_insertf64x4(_mm512_castps_pd(_mm512_set1_ps(dw[2 * j][i])),
                                                                   _mm256_castps_pd(_mm256_set1_ps(dw[2 * j + 1][i])), 1));
#pragma GCC unroll 2
            for (int h = 0; h < (NT + 3) / 4; h++) {
                /* d_w * d_act, vec_dot's scalar product, for 4 tokens at
                 * once (float e of each 128-bit block: token 4h + e), then
                 * token t's spread by vshufps, which runs beside the
                 * multiplies where a vmulps each took their pipes */
                const __m512 d4 = _mm512_mul_ps(dwv, _mm512_broadcast_f32x4(_mm_loadu_ps(yq + TILE_T * i + 4 * h)));
#pragma GCC unroll 4
                for (int e = 0; e < 4; e++) {
                    const int t = 4 * h + e;
                    if (t < NT)
                        facc[j][t] =
                            _mm512_fmadd_ps(spread4_ps(d4, e), _mm512_cvtepi32_ps(acc[j][t]), facc[j][t]);
                }
            }
        }
    }
    if (!o) {
#pragma GCC unroll 2
        for (int j = 0; j < NP; j++)
#pragma GCC unroll 8
            for (int t = 0; t < NT; t++)
                _mm512_storeu_ps(fs[8 * j + t], facc[j][t]);
        return;
    }
    /* the outputs: hsum_float_8 of each row's 8 float lanes times the
     * type's factor, as vec_dot */
    if (NP == 2 && NT == 8 && nr == 4) {
        hsum_2x8(facc, scale, o, stride);
        return;
    }
#pragma GCC unroll 8
    for (int t = 0; t < NT; t++) {
        float v[4];
#pragma GCC unroll 2
        for (int j = 0; j < NP; j++) {
            v[2 * j] = scale * hsum_ps(_mm512_castps512_ps256(facc[j][t]));
            v[2 * j + 1] = scale * hsum_ps(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(facc[j][t]), 1)));
        }
        if (NP == 2 && nr == 4)
            _mm_storeu_ps(o + t * stride, _mm_loadu_ps(v));
        else
            for (int r = 0; r < nr; r++)
                o[t * stride + r] = v[r];
    }
}

#define TILE_FN(pk, np, nt)                                                                                       \
    static void tile_##pk##_##np##_##nt(const uint8_t *const wp[2], const float *const dw[4],                    \
                                        const uint8_t *const a[TILE_T], const float *yq, int64_t i0, int64_t i1, \
                                        float fs[16][16], float *o, int64_t stride, int nr, float scale)          \
    {                                                                                                             \
        tile512(pk, np, nt, wp, dw, a, yq, i0, i1, fs, o, stride, nr, scale);                                      \
    }
#define TILE_FNS(pk)                                                                                              \
    TILE_FN(pk, 1, 1) TILE_FN(pk, 1, 2) TILE_FN(pk, 1, 3) TILE_FN(pk, 1, 4) TILE_FN(pk, 1, 5) TILE_FN(pk, 1, 6)  \
    TILE_FN(pk, 1, 7) TILE_FN(pk, 1, 8) TILE_FN(pk, 2, 1) TILE_FN(pk, 2, 2) TILE_FN(pk, 2, 3) TILE_FN(pk, 2, 4)  \
    TILE_FN(pk, 2, 5) TILE_FN(pk, 2, 6) TILE_FN(pk, 2, 7) TILE_FN(pk, 2, 8)
TILE_FNS(0)
TILE_FNS(1)
#define TILE_ROW(pk, np)                                                                                          \
    {tile_##pk##_##np##_1, tile_##pk##_##np##_2, tile_##pk##_##np##_3, tile_##pk##_##np##_4,                      \
     tile_##pk##_##np##_5, tile_##pk##_##np##_6, tile_##pk##_##np##_7, tile_##pk##_##np##_8}
/* [packed-scale panel][row pairs - 1][tokens - 1] */
static const gemm_iq_tile_fn tiles[2][2][TILE_T] = {
    {TILE_ROW(0, 1), TILE_ROW(0, 2)},
    {TILE_ROW(1, 1), TILE_ROW(1, 2)},
};

/* Super-blocks a slice (gemm_iq_drive.h): a row group's panel stays in
 * L1 while a block's tiles run over it. */
#ifndef SB_SLICE
#define SB_SLICE 0
#endif
#elif defined(QUANT_HAVE_AVX2)
/* Panel bytes: rows times this stay in L2 beside the tokens. */
#define PANEL_BYTES (192 * 1024)
#define TILE_R 2
#define TILE_T 4
/* int16 per row and super-block in the AVX2 panel */
#define SB_W 256

/* hsum_float_8 of 8 float lanes held in LANES order. */
static inline float lanes_hsum(__m256 acc)
{
    return hsum_ps(_mm256_permutevar8x32_ps(acc, _mm256_setr_epi32(0, 1, 4, 5, 2, 3, 6, 7)));
}

/* A row's super-blocks as int16 (value times scale) in halves A, B. */
static void write_row16(decode_fn decode, const void *row, int64_t nbl, int16_t *o, float *dw)
{
    int8_t v[QK_K];
    int ls[QK_K / 16];
    for (int64_t i = 0; i < nbl; i++) {
        decode(row, i, v, ls, &dw[i]);
        for (int b = 0; b < QK_K / 32; b++) {
            const __m256i vb = _mm256_loadu_si256((const __m256i *)(v + 32 * b));
            const __m256 h0 = _mm256_castsi256_ps(
                _mm256_mullo_epi16(_mm256_cvtepi8_epi16(_mm256_castsi256_si128(vb)), _mm256_set1_epi16((short)ls[2 * b])));
            const __m256 h1 = _mm256_castsi256_ps(_mm256_mullo_epi16(_mm256_cvtepi8_epi16(_mm256_extracti128_si256(vb, 1)),
                                                                     _mm256_set1_epi16((short)ls[2 * b + 1])));
            /* every other int16 pair of h0 and h1: pairs 0 2 8 10 4 6 12 14 (2 * LANES), then those plus 1 */
            int16_t *ob = o + i * SB_W + 32 * b;
            _mm256_storeu_si256((__m256i *)ob, _mm256_castps_si256(_mm256_shuffle_ps(h0, h1, 0x88)));
            _mm256_storeu_si256((__m256i *)(ob + 16), _mm256_castps_si256(_mm256_shuffle_ps(h0, h1, 0xDD)));
        }
    }
}

/* A token's bytes widened once for a tile of tokens, in the panel's pair
 * order: per sub-block of 32, the int16 pairs 0 2 8 10 4 6 12 14 (2 *
 * LANES) of its two halves, then those plus 1. */
static void widen_token(const block_q8_K *y, int64_t nbl, int16_t *o)
{
    for (int64_t i = 0; i < nbl; i++)
        for (int s = 0; s < QK_K / 32; s++) {
            const int8_t *q = y[i].qs + 32 * s;
            const __m256 h0 = _mm256_castsi256_ps(_mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)q)));
            const __m256 h1 = _mm256_castsi256_ps(_mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(q + 16))));
            int16_t *os = o + i * SB_W + 32 * s;
            _mm256_storeu_si256((__m256i *)os, _mm256_castps_si256(_mm256_shuffle_ps(h0, h1, 0x88)));
            _mm256_storeu_si256((__m256i *)(os + 16), _mm256_castps_si256(_mm256_shuffle_ps(h0, h1, 0xDD)));
        }
}

/* R rows against T tokens (widened once, tw), vpmaddwd into one int32
 * vector per output and super-block, then vec_dot's float step. A row's
 * int16 sit in registers for a sub-block, the tokens' come from L1 as
 * memory operands: 2 rows x 4 tokens read 16 bytes of panel (from L2) per
 * row x token x 32 values where 2 x 2 tiles read 32 and widened their
 * tokens' bytes in every tile, and the L2 reads bounded them at half the
 * multiplies' speed. The float accumulators wait in facc between
 * super-blocks (8 int32 vectors and the rows fill the registers). */
static inline __attribute__((always_inline)) void tile256(int R, int T, const int16_t *const w[TILE_R],
                                                         const float *const dw[TILE_R], const int16_t *tw,
                                                         const float *yq, int64_t nbl, float scale,
                                                         float out[TILE_R][TILE_T])
{
    __m256 facc[TILE_R][TILE_T];
#pragma GCC unroll 4
    for (int r = 0; r < R; r++)
#pragma GCC unroll 4
        for (int t = 0; t < T; t++)
            facc[r][t] = _mm256_setzero_ps();
    const size_t ts = (size_t)nbl * SB_W;
    for (int64_t i = 0; i < nbl; i++) {
        __m256i acc[TILE_R][TILE_T];
#pragma GCC unroll 4
        for (int r = 0; r < R; r++)
#pragma GCC unroll 4
            for (int t = 0; t < T; t++)
                acc[r][t] = _mm256_setzero_si256();
        if (R == 2 && T == 4) {
            /* the full tile in asm: GCC kept two of the 8 sums on the
             * stack (a load and a store each per sub-block) */
            const uint8_t *w0 = (const uint8_t *)(w[0] + i * SB_W), *w1 = (const uint8_t *)(w[1] + i * SB_W);
            const uint8_t *p0 = (const uint8_t *)(tw + (size_t)i * SB_W), *p3 = p0 + 3 * 2 * ts;
            const size_t st = 2 * ts;
            int64_t cnt = QK_K / 32;
#define IQ16_TOK(A, B, C0, C1)                                                                                     \
    "vpmaddwd " A ", %%ymm0, %%ymm4\n\tvpmaddwd " B ", %%ymm1, %%ymm5\n\t"                                        \
    "vpaddd %%ymm4, " C0 ", " C0 "\n\tvpaddd %%ymm5, " C0 ", " C0 "\n\t"                                          \
    "vpmaddwd " A ", %%ymm2, %%ymm6\n\tvpmaddwd " B ", %%ymm3, %%ymm7\n\t"                                        \
    "vpaddd %%ymm6, " C1 ", " C1 "\n\tvpaddd %%ymm7, " C1 ", " C1 "\n\t"
            __asm__ volatile("1:\n\t"
                             "vmovdqu (%[w0]), %%ymm0\n\tvmovdqu 32(%[w0]), %%ymm1\n\t"
                             "vmovdqu (%[w1]), %%ymm2\n\tvmovdqu 32(%[w1]), %%ymm3\n\t"
                             IQ16_TOK("(%[p0])", "32(%[p0])", "%[a0]", "%[c0]")
                             IQ16_TOK("(%[p0],%[st],1)", "32(%[p0],%[st],1)", "%[a1]", "%[c1]")
                             IQ16_TOK("(%[p0],%[st],2)", "32(%[p0],%[st],2)", "%[a2]", "%[c2]")
                             IQ16_TOK("(%[p3])", "32(%[p3])", "%[a3]", "%[c3]")
                             "add $64, %[w0]\n\tadd $64, %[w1]\n\tadd $64, %[p0]\n\tadd $64, %[p3]\n\t"
                             "dec %[cnt]\n\tjnz 1b"
                             : [a0] "+x"(acc[0][0]), [a1] "+x"(acc[0][1]), [a2] "+x"(acc[0][2]),
                               [a3] "+x"(acc[0][3]), [c0] "+x"(acc[1][0]), [c1] "+x"(acc[1][1]),
                               [c2] "+x"(acc[1][2]), [c3] "+x"(acc[1][3]), [w0] "+r"(w0), [w1] "+r"(w1),
                               [p0] "+r"(p0), [p3] "+r"(p3), [cnt] "+r"(cnt)
                             : [st] "r"(st)
                             : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "memory", "cc");
#undef IQ16_TOK
        } else
#pragma GCC unroll 1
        for (int s = 0; s < QK_K / 32; s++) {
            const int16_t *q = tw + (size_t)i * SB_W + 32 * s;
#pragma GCC unroll 4
            for (int r = 0; r < R; r++) {
                const int16_t *ws = w[r] + i * SB_W + 32 * s;
                __m256i wa = _mm256_loadu_si256((const __m256i *)ws);
                __m256i wb = _mm256_loadu_si256((const __m256i *)(ws + 16));
                __asm__("" : "+x"(wa), "+x"(wb));
#pragma GCC unroll 4
                for (int t = 0; t < T; t++)
                    acc[r][t] = _mm256_add_epi32(
                        acc[r][t],
                        _mm256_add_epi32(
                            _mm256_madd_epi16(wa, _mm256_load_si256((const __m256i *)(const void *)(q + t * ts))),
                            _mm256_madd_epi16(wb, _mm256_load_si256((const __m256i *)(const void *)(q + t * ts + 16)))));
            }
        }
        /* d_w * d_act for the 4 tokens in one multiply per row (float t
         * of each half: token t), token t's spread by vshufps, which runs
         * beside the multiplies where a scalar product each took their
         * pipes */
        const __m256 y4 = _mm256_broadcast_ps((const __m128 *)(const void *)(yq + TILE_T * i));
#pragma GCC unroll 4
        for (int r = 0; r < R; r++) {
            __m256 d[4];
            spread4_ps256(_mm256_mul_ps(_mm256_set1_ps(dw[r][i]), y4), d);
#pragma GCC unroll 4
            for (int t = 0; t < T; t++)
                facc[r][t] = _mm256_fmadd_ps(d[t], _mm256_cvtepi32_ps(acc[r][t]), facc[r][t]);
        }
    }
#pragma GCC unroll 4
    for (int r = 0; r < R; r++)
#pragma GCC unroll 4
        for (int t = 0; t < T; t++)
            out[r][t] = scale * lanes_hsum(facc[r][t]);
}

#define TILE_RT(r, t)                                                                                              \
    static void tile_##r##_##t(const int16_t *const w[TILE_R], const float *const dw[TILE_R], const int16_t *tw,   \
                               const float *yq, int64_t nbl, float scale, float out[TILE_R][TILE_T])                \
    {                                                                                                              \
        tile256(r, t, w, dw, tw, yq, nbl, scale, out);                                                             \
    }
TILE_RT(2, 4)
TILE_RT(2, 3)
TILE_RT(2, 2)
TILE_RT(2, 1)
TILE_RT(1, 4)
TILE_RT(1, 3)
TILE_RT(1, 2)
TILE_RT(1, 1)
typedef void (*tile256_fn)(const int16_t *const w[TILE_R], const float *const dw[TILE_R], const int16_t *tw,
                           const float *yq, int64_t nbl, float scale, float out[TILE_R][TILE_T]);
/* [rows - 1][tokens - 1] */
static const tile256_fn tiles256[TILE_R][TILE_T] = {{tile_1_1, tile_1_2, tile_1_3, tile_1_4},
                                                    {tile_2_1, tile_2_2, tile_2_3, tile_2_4}};

/* AVX2: panels of rows written once; each tile of tokens widened once
 * and run against every row of the panel. */
static void matmul256(decode_fn decode, float scale, const uint8_t *wd, size_t rs, int64_t nbl, int64_t r0,
                      int64_t r1, const uint8_t *act, size_t act_stride, int n_tok, float *out, int64_t out_stride,
                      int16_t *w16, float *dw, int16_t *tw, float *yq, int64_t pr)
{
    for (int64_t p0 = r0; p0 < r1; p0 += pr) {
        const int64_t np = r1 - p0 < pr ? r1 - p0 : pr;
        for (int64_t k = 0; k < np; k++)
            write_row16(decode, wd + (size_t)(p0 + k) * rs, nbl, w16 + k * nbl * SB_W, dw + k * nbl);
        for (int t0 = 0; t0 < n_tok; t0 += TILE_T) {
            const int nt = n_tok - t0 < TILE_T ? n_tok - t0 : TILE_T;
            const block_q8_K *y[TILE_T];
            for (int j = 0; j < TILE_T; j++) {
                y[j] = (const block_q8_K *)(const void *)(act + (size_t)(t0 + (j < nt ? j : nt - 1)) * act_stride);
                if (j < nt)
                    widen_token(y[j], nbl, tw + (size_t)j * (size_t)nbl * SB_W);
                for (int64_t i = 0; i < nbl; i++) /* the tokens' d side by side per super-block */
                    yq[TILE_T * i + j] = y[j][i].d;
            }
            for (int64_t k = 0; k < np;) {
                const int nr = np - k >= TILE_R ? TILE_R : (int)(np - k);
                const int16_t *wr[TILE_R];
                const float *dr[TILE_R];
                for (int j = 0; j < TILE_R; j++) {
                    const int64_t kk = k + (j < nr ? j : 0);
                    wr[j] = w16 + kk * nbl * SB_W;
                    dr[j] = dw + kk * nbl;
                }
                float o[TILE_R][TILE_T];
                tiles256[nr - 1][nt - 1](wr, dr, tw, yq, nbl, scale, o);
                for (int j = 0; j < nr; j++)
                    for (int c = 0; c < nt; c++)
                        out[(int64_t)(t0 + c) * out_stride + p0 + k + j] = o[j][c];
                k += nr;
            }
        }
    }
}
#endif

#ifdef GEMM_IQ_OFS256
/* The AVX2 GEMM of the IQ2 and IQ3 types (those whose 4-value sums fit an
 * int16, type_info's pk) on the K-quant driver (gemm_kpanel.h): a row's
 * decoded values (signed, |v| <= 62) in the panel's AVX2 order against the
 * tokens' bytes plus 128 (maddubs' unsigned operand), and per chunk pair
 * the row's surplus (128 x each lane's 4-value sum, int16) that the
 * offset adds, so that two maddubs added as int16, less the surplus, give
 * the exact 4-value sums of two 32-value chunks side by side (the offset
 * sums wrap in 16 bits; the exact ones fit) and one madd against the
 * lanes' scale pairs adds both, scaled: 3 multiply instructions per 64
 * values where the int16 tiles take 4, and no sign steps (gemm_kp_lanes256
 * with co). Then vec_dot's float steps: fma(d_w * y.d, lanes, acc) per
 * super-block, scale * hsum_float_8. */
#define OG_PAIR_SB 1088
#define OG_OFF_CO 512  /* per chunk pair and row the surplus, 16 int16 */
#define OG_OFF_SC 768  /* per chunk pair and row the 8 lanes' scale pairs */
#define OG_OFF_DW 1024 /* per row d_w, 8 copies */
#define OG_T GEMM_KP_TILE_T

static inline __attribute__((always_inline)) void write_ofs_row(decode_fn decode, const void *row, int64_t nbl,
                                                                 uint8_t *p, int h)
{
    int8_t v[QK_K];
    int ls[QK_K / 16];
    float d;
    const __m256i m128 = _mm256_set1_epi8((char)0x80);
    for (int64_t i = 0; i < nbl; i++, p += OG_PAIR_SB) {
        decode(row, i, v, ls, &d);
        for (int q = 0; q < 4; q++) {
            const __m256i c0 = _mm256_loadu_si256((const __m256i *)(const void *)(v + 64 * q));
            const __m256i c1 = _mm256_loadu_si256((const __m256i *)(const void *)(v + 64 * q + 32));
            uint8_t *pv = p + 128 * q;
            gemm_kp_store_values(pv, h, c0, c1);
            /* the surplus: the tile's own steps against a token of zeros */
            const __m256i wa = _mm256_loadu_si256((const __m256i *)(const void *)(pv + 64 * h));
            const __m256i wb = _mm256_loadu_si256((const __m256i *)(const void *)(pv + 64 * h + 32));
            _mm256_storeu_si256((__m256i *)(void *)(p + OG_OFF_CO + 64 * q + 32 * h),
                                _mm256_add_epi16(_mm256_maddubs_epi16(m128, wa), _mm256_maddubs_epi16(m128, wb)));
            /* lane k: (scale of its 16 in chunk 2q, in chunk 2q + 1) */
            int16_t sc[16];
            for (int k = 0; k < 8; k++) {
                sc[2 * k] = (int16_t)ls[4 * q + (k >= 4)];
                sc[2 * k + 1] = (int16_t)ls[4 * q + 2 + (k >= 4)];
            }
            memcpy(p + OG_OFF_SC + 64 * q + 32 * h, sc, sizeof sc);
        }
        _mm256_storeu_ps((float *)(void *)(p + OG_OFF_DW + 32 * h), _mm256_set1_ps(d));
    }
}

/* each type's panel writer, and its tiles (gemm_kp_tile256 with the
 * surplus) per vec_dot factor */
#define OG_WRITE(T)                                                                                                \
    static void write_ofs_##T(const void *row, int64_t nbl, uint8_t *p, int h)                                   \
    {                                                                                                              \
        write_ofs_row(decode_##T, row, nbl, p, h);                                                                \
    }
OG_WRITE(iq2_xxs)
OG_WRITE(iq2_xs)
OG_WRITE(iq2_s)
OG_WRITE(iq3_s)
OG_WRITE(iq3_xxs)
#define OG_TILES(N, SCALE)                                                                                         \
    static void og_tile2_##N(const uint8_t *const wp[2], const block_q8_K *const y[OG_T], const uint8_t *tx,     \
                             const float *yd, int64_t i0, int64_t i1, int64_t nbl, __m256 *st, float *o,       \
                             int64_t os)                                                                       \
    {                                                                                                              \
        (void)y;                                                                                                   \
        gemm_kp_tile256(2, wp, tx, yd, i0, i1, nbl, st, o, os, OG_PAIR_SB, OG_OFF_SC, OG_OFF_CO, 0, OG_OFF_DW, SCALE); \
    }                                                                                                              \
    static void og_tile1_##N(const uint8_t *const wp[2], const block_q8_K *const y[OG_T], const uint8_t *tx,     \
                             const float *yd, int64_t i0, int64_t i1, int64_t nbl, __m256 *st, float *o,       \
                             int64_t os)                                                                       \
    {                                                                                                              \
        (void)y;                                                                                                   \
        gemm_kp_tile256(1, wp, tx, yd, i0, i1, nbl, st, o, os, OG_PAIR_SB, OG_OFF_SC, OG_OFF_CO, 0, OG_OFF_DW, SCALE); \
    }
OG_TILES(eighth, 0.125f)
OG_TILES(quarter, 0.25f)
OG_TILES(one, 1.0f)
#define OG_KIND(T, N)                                                                                              \
    {                                                                                                              \
        .pair_sb = OG_PAIR_SB, .tx_bytes = GEMM_KP_TX_VALUES, .n_st = 4 * OG_T, .write_row = write_ofs_##T,       \
        .prep = gemm_kp_prep_tokens_offset, .tile2 = og_tile2_##N, .tile1 = og_tile1_##N, .side = GEMM_KP_SIDE_D,  \
    }
static const struct gemm_kp og_iq2_xxs = OG_KIND(iq2_xxs, eighth), og_iq2_xs = OG_KIND(iq2_xs, eighth),
                             og_iq2_s = OG_KIND(iq2_s, eighth), og_iq3_s = OG_KIND(iq3_s, one),
                             og_iq3_xxs = OG_KIND(iq3_xxs, quarter);

/* The offset GEMM's kind for type, NULL for IQ4_XS (the int16 tiles). */
static const struct gemm_kp *ofs_kind(enum tensor_type type)
{
    switch (type) {
    case TENSOR_TYPE_IQ2_XXS:
        return &og_iq2_xxs;
    case TENSOR_TYPE_IQ2_XS:
        return &og_iq2_xs;
    case TENSOR_TYPE_IQ2_S:
        return &og_iq2_s;
    case TENSOR_TYPE_IQ3_S:
        return &og_iq3_s;
    case TENSOR_TYPE_IQ3_XXS:
        return &og_iq3_xxs;
    default:
        return NULL;
    }
}
#elif defined(QUANT_HAVE_AVX2) && !defined(GEMM_IQ_512)
/* no offset GEMM in this build: the int16 tiles take every type */
#define ofs_kind(type) ((void)(type), (const struct gemm_kp *)NULL)
#endif

/* The AVX2 GEMM (int16 panels, AVX2 tiles); false when no scratch. */
#if defined(QUANT_HAVE_AVX2) && !defined(GEMM_IQ_512)
static bool matmul_avx2(decode_fn decode, float scale, const uint8_t *wd, size_t rs, int64_t nbl, int64_t r0,
                        int64_t r1, const uint8_t *act, size_t act_stride, int n_tok, float *out, int64_t out_stride)
{
    const size_t row_sb = SB_W * sizeof(int16_t);
    int64_t pr = PANEL_BYTES / ((int64_t)row_sb * nbl);
    pr = pr < 4 ? 4 : pr > 64 ? 64 : pr - pr % 4;
    if (pr > r1 - r0)
        pr = r1 - r0;
    const size_t panel_bytes = ((size_t)pr * (size_t)nbl * row_sb + 63) & ~(size_t)63;
    const size_t dw_bytes = ((size_t)pr * (size_t)nbl * sizeof(float) + 63) & ~(size_t)63;
    const size_t tw_bytes = (size_t)TILE_T * (size_t)nbl * row_sb;
    const size_t yq_bytes = (size_t)TILE_T * (size_t)nbl * sizeof(float);
    uint8_t *scr = kernel_scratch_get(panel_bytes + dw_bytes + tw_bytes + yq_bytes);
    if (!scr)
        return false;
    matmul256(decode, scale, wd, rs, nbl, r0, r1, act, act_stride, n_tok, out, out_stride, (int16_t *)(void *)scr,
              (float *)(void *)(scr + panel_bytes), (int16_t *)(void *)(scr + panel_bytes + dw_bytes),
              (float *)(void *)(scr + panel_bytes + dw_bytes + tw_bytes), pr);
    return true;
}
#endif

#ifdef GEMM_IQ_512
/* The driver's kind for type: IQ1_M's (gemm_iq1.c), or the others' filled
 * into *kk; NULL for a type without the GEMM. */
static const struct gemm_iq_kind *kind_of(enum tensor_type type, struct gemm_iq_kind *kk)
{
    const struct gemm_iq_kind *k = gemm_iq1_kind(type);
    bool pk;
    if (k || !type_info(type, &kk->decode, &kk->scale, &pk))
        return k;
    kk->tile_t = TILE_T;
    kk->pair_sb = pk ? PAIR_SB_PK : PAIR_SB;
    kk->tok_sb = QK_K;
    kk->tok_blk = 0;
    kk->sb_slice = SB_SLICE;
    kk->write_row = pk ? write_pair_row_pk : write_pair_row;
    kk->prep = offset_token;
    kk->tiles = tiles[pk];
    return kk;
}
#endif

size_t gemm_iq_tok_bytes(const gguf_tensor *w, int n_tok)
{
#ifdef GEMM_IQ_512
    struct gemm_iq_kind kk;
    const struct gemm_iq_kind *k = kind_of((enum tensor_type)w->type, &kk);
    if (k && gemm_iq_applies(w, n_tok))
        return gemm_iq_drive_tok_rec(k, w->ne[0] / QK_K);
#else
    (void)w;
    (void)n_tok;
#endif
    return 0;
}

size_t gemm_iq_tok_bytes_max(int64_t n)
{
#ifdef GEMM_IQ_512
    struct gemm_iq_kind kk;
    const struct gemm_iq_kind *k = kind_of(TENSOR_TYPE_IQ4_XS, &kk), *k1 = gemm_iq1_kind(TENSOR_TYPE_IQ1_M);
    const size_t a = gemm_iq_drive_tok_rec(k, n / QK_K), b = k1 ? gemm_iq_drive_tok_rec(k1, n / QK_K) : 0;
    return a > b ? a : b;
#else
    (void)n;
    return 0;
#endif
}

void gemm_iq_prep_tokens(const gguf_tensor *w, const uint8_t *act, size_t act_stride, int n_tok, uint8_t *dst)
{
#ifdef GEMM_IQ_512
    struct gemm_iq_kind kk;
    const struct gemm_iq_kind *k = kind_of((enum tensor_type)w->type, &kk);
    if (k)
        gemm_iq_drive_prep(k, act, act_stride, n_tok, w->ne[0] / QK_K, dst);
#else
    (void)w;
    (void)act;
    (void)act_stride;
    (void)n_tok;
    (void)dst;
#endif
}

void gemm_iq_matmul(const gguf_tensor *w, int64_t n, int64_t r0, int64_t r1, const uint8_t *act,
                    size_t act_stride, const uint8_t *tok, int n_tok, float *out, int64_t out_stride)
{
    const enum tensor_type type = (enum tensor_type)w->type;
    const size_t rs = tensor_row_size(type, n);
    const uint8_t *wd = w->data;
    if (r0 >= r1 || n_tok < 1 || !gemm_iq_supports(type))
        return;
    bool done = false;
#if defined(QUANT_HAVE_AVX2)
    const int64_t nbl = n / QK_K;
#endif
#ifdef GEMM_IQ_512
    struct gemm_iq_kind kk;
    const struct gemm_iq_kind *k = kind_of(type, &kk);
    done = k && gemm_iq_drive(k, wd, rs, nbl, r0, r1, act, act_stride, tok, n_tok, out, out_stride);
#elif defined(QUANT_HAVE_AVX2)
    (void)tok; /* gemm_iq_tok_bytes is 0 in this build */
    decode_fn decode;
    float scale;
    bool pk;
    const struct gemm_kp *sk = ofs_kind(type);
    if (sk)
        done = gemm_kp_rows(sk, nbl, wd, rs, r0, r1, act, act_stride, n_tok, out, out_stride);
    else if (type == TENSOR_TYPE_IQ1_M)
        done = gemm_iq1_matmul256(type, wd, rs, nbl, r0, r1, act, act_stride, n_tok, out, out_stride);
    else if (type_info(type, &decode, &scale, &pk))
        done = matmul_avx2(decode, scale, wd, rs, nbl, r0, r1, act, act_stride, n_tok, out, out_stride);
#endif
    if (!done) /* no scratch (or no GEMM in this build): vec_dot gives the same bits */
        for (int64_t r = r0; r < r1; r++)
            for (int t = 0; t < n_tok; t++)
                out[(int64_t)t * out_stride + r] =
                    tensor_vec_dot(type, n, wd + (size_t)r * rs, act + (size_t)t * act_stride);
}
