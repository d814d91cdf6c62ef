/* One-token matvecs for IQ2_XXS and IQ4_XS on AVX-512 VBMI + VNNI (see
 * matvec_iq.h). The AVX2 vec_dots these replace spend most of their time
 * taking each 32-weight sub-block apart in scalar code (grid and sign
 * table lookups, scale bits) and lookups 16 bytes wide; here a super-block
 * is taken apart in a few whole-register steps and the integer dots run
 * 64 weights at a time. Two rows share the activation loads and the float
 * steps (one fma for both rows' 8 lanes: lanes 0-7 row A, 8-15 row B,
 * independent as the reference's 8 lanes are). */
#include "kernels/matvec_iq.h"

#if defined(QUANT_HAVE_MATVEC_IQ512)
#include <stdbool.h>
#include <string.h>

#include "kernels/quant_iq2.h"
#include "kernels/quant_iq4.h"
#include "kernels/quant_iq_signs.h"

/* The per-block float step of the reference for two rows: the 8 lane sums
 * of row A (lanes 0-7 of t) and row B (8-15) converted, times d_w * d_a,
 * added to the lanes' accumulators with one rounding (its fmadd). */
static inline __m512 fma2(__m512 acc, __m512i t, float da, float db)
{
    const __m512 d = _mm512_mask_blend_ps(0xFF00, _mm512_set1_ps(da), _mm512_set1_ps(db));
    return _mm512_fmadd_ps(d, _mm512_cvtepi32_ps(t), acc);
}

/* hsum_float_8 of each half. */
static inline void hsum2(__m512 acc, float *a, float *b)
{
    *a = hsum_ps(_mm512_castps512_ps256(acc));
    *b = hsum_ps(_mm512_extractf32x8_ps(acc, 1));
}

/* ---- IQ2_XXS ---- */

/* Per pair of sub-blocks p (64 weights): the source bytes of each weight's
 * group sign byte (sub-block 2p + e / 32, group (e % 32) / 8 of its 4) in
 * the block's sign bytes, laid out 8 per sub-block. */
static const uint8_t xxs_sign_ctrl[4][64] __attribute__((aligned(64))) = {
    {0, 0, 0, 0, 0, 0, 0, 0, 1,  1,  1,  1,  1,  1,  1,  1,  2,  2,  2,  2,  2,  2,
     2, 2, 3, 3, 3, 3, 3, 3, 3,  3,  8,  8,  8,  8,  8,  8,  8,  8,  9,  9,  9,  9,
     9, 9, 9, 9, 10, 10, 10, 10, 10, 10, 10, 10, 11, 11, 11, 11, 11, 11, 11, 11},
    {16, 16, 16, 16, 16, 16, 16, 16, 17, 17, 17, 17, 17, 17, 17, 17, 18, 18, 18, 18, 18, 18,
     18, 18, 19, 19, 19, 19, 19, 19, 19, 19, 24, 24, 24, 24, 24, 24, 24, 24, 25, 25, 25, 25,
     25, 25, 25, 25, 26, 26, 26, 26, 26, 26, 26, 26, 27, 27, 27, 27, 27, 27, 27, 27},
    {32, 32, 32, 32, 32, 32, 32, 32, 33, 33, 33, 33, 33, 33, 33, 33, 34, 34, 34, 34, 34, 34,
     34, 34, 35, 35, 35, 35, 35, 35, 35, 35, 40, 40, 40, 40, 40, 40, 40, 40, 41, 41, 41, 41,
     41, 41, 41, 41, 42, 42, 42, 42, 42, 42, 42, 42, 43, 43, 43, 43, 43, 43, 43, 43},
    {48, 48, 48, 48, 48, 48, 48, 48, 49, 49, 49, 49, 49, 49, 49, 49, 50, 50, 50, 50, 50, 50,
     50, 50, 51, 51, 51, 51, 51, 51, 51, 51, 56, 56, 56, 56, 56, 56, 56, 56, 57, 57, 57, 57,
     57, 57, 57, 57, 58, 58, 58, 58, 58, 58, 58, 58, 59, 59, 59, 59, 59, 59, 59, 59},
};

/* quant_iq2xxs_grid with each byte (0x08, 0x19 or 0x2b) as a 2-bit code
 * 0, 1, 2 (byte j at bits 2j): 512 bytes, 8 registers, looked up 32 at a
 * time with vpermi2w where the 8-byte table would take gathers (which held
 * this kernel to 1.3x the AVX2 one). Generated from the grid;
 * unit/test_matvec_iq reaches every entry. */
static const uint16_t xxs_codes[256] __attribute__((aligned(64))) = {
    0x0000, 0x0002, 0x0005, 0x0008, 0x000a, 0x0011, 0x0014, 0x0020, 0x0022, 0x0028, 0x002a, 0x0041,
    0x0044, 0x0050, 0x0058, 0x0061, 0x0064, 0x0080, 0x0082, 0x008a, 0x00a2, 0x0101, 0x0104, 0x0110,
    0x0115, 0x0140, 0x0184, 0x0198, 0x0200, 0x0202, 0x0222, 0x0282, 0x0401, 0x0404, 0x0410, 0x0421,
    0x0424, 0x0440, 0x0442, 0x0448, 0x0460, 0x0481, 0x0484, 0x0490, 0x04a4, 0x0500, 0x0502, 0x0508,
    0x0520, 0x0546, 0x0569, 0x0580, 0x0591, 0x0609, 0x0610, 0x0640, 0x0684, 0x06a4, 0x0800, 0x0805,
    0x0808, 0x0814, 0x0828, 0x0841, 0x0844, 0x0850, 0x0852, 0x0888, 0x0904, 0x0940, 0x0a02, 0x0a14,
    0x1001, 0x1004, 0x1010, 0x1021, 0x1040, 0x1060, 0x1084, 0x1090, 0x1095, 0x1100, 0x1108, 0x1120,
    0x1150, 0x115a, 0x1180, 0x1224, 0x1245, 0x1400, 0x1408, 0x1420, 0x1425, 0x1449, 0x1480, 0x1518,
    0x1562, 0x1600, 0x1616, 0x1801, 0x1804, 0x1810, 0x1840, 0x1881, 0x1900, 0x1905, 0x19a0, 0x1a51,
    0x2000, 0x2002, 0x200a, 0x2044, 0x2061, 0x2080, 0x2082, 0x2129, 0x2148, 0x2200, 0x2202, 0x2401,
    0x2404, 0x2410, 0x2440, 0x2456, 0x2500, 0x2541, 0x2564, 0x2690, 0x2808, 0x2820, 0x2894, 0x2a44,
    0x4001, 0x4004, 0x4010, 0x4018, 0x4021, 0x4024, 0x4040, 0x4048, 0x4056, 0x4060, 0x4081, 0x4084,
    0x4090, 0x4100, 0x4120, 0x4161, 0x4180, 0x4185, 0x4201, 0x4210, 0x4248, 0x4256, 0x4268, 0x4400,
    0x4408, 0x4420, 0x4480, 0x4499, 0x4512, 0x4524, 0x4600, 0x4801, 0x4804, 0x4810, 0x4840, 0x4845,
    0x4900, 0x4958, 0x4961, 0x4982, 0x4a45, 0x4a90, 0x5000, 0x5008, 0x5011, 0x5019, 0x5020, 0x5080,
    0x5088, 0x5104, 0x5142, 0x51a4, 0x5291, 0x5490, 0x5492, 0x550a, 0x5601, 0x5654, 0x5800, 0x5811,
    0x5819, 0x5864, 0x5940, 0x5a08, 0x6004, 0x6010, 0x6040, 0x6068, 0x6100, 0x6155, 0x6218, 0x6260,
    0x6400, 0x6405, 0x6510, 0x6512, 0x6584, 0x6842, 0x8000, 0x8002, 0x800a, 0x8041, 0x8082, 0x8104,
    0x8118, 0x8140, 0x8211, 0x8401, 0x8404, 0x8410, 0x8415, 0x8440, 0x8460, 0x8500, 0x8546, 0x8594,
    0x8609, 0x8640, 0x8660, 0x8802, 0x8904, 0x8a11, 0x9004, 0x9010, 0x9024, 0x9040, 0x90a1, 0x9116,
    0x9180, 0x9245, 0x9400, 0x9422, 0x9444, 0x9551, 0x9881, 0x9920, 0xa002, 0xa050, 0xa085, 0xa109,
    0xa200, 0xa418, 0xa850, 0xa904,
};

/* Group g's grid index (byte 8 (g / 4) + g % 4 of qs) into word g. */
static const uint8_t xxs_idx_ctrl[64] __attribute__((aligned(64))) = {
    0,  0, 1,  0, 2,  0, 3,  0, 8,  0, 9,  0, 10, 0, 11, 0, 16, 0, 17, 0, 18, 0, 19, 0, 24, 0, 25, 0, 26, 0, 27, 0,
    32, 0, 33, 0, 34, 0, 35, 0, 40, 0, 41, 0, 42, 0, 43, 0, 48, 0, 49, 0, 50, 0, 51, 0, 56, 0, 57, 0, 58, 0, 59, 0,
};

/* One row's 8 lane sums of a block, sub-blocks 2p in lanes 0-7 and 2p + 1
 * in lanes 8-15 (their sum is the reference's sumi1 + sumi2). Each
 * sub-block's u64: 4 grid indices, then 4 x 7 sign bits and the scale on
 * top. The activations get the weights' signs bytewise, 0 - q where
 * negative (-128 stays -128, as _mm256_sign_epi8 leaves it), against the
 * grid's unsigned bytes; maddubs pairs stay below 2 * 43 * 128. */
static inline __m512i xxs_block(const block_iq2_xxs *x, const __m512i a[4], __m512i ks_lo, __m512i ks_hi)
{
    const __m512i q = _mm512_loadu_si512(x->qs);
    /* the 7-bit sign fields (bits 32 + 7l of each u64) to bytes 0-3, then
     * the 8-bit signs with their parity bit from ksigns_iq2xs */
    const __m512i s7 = _mm512_multishift_epi64_epi8(_mm512_set1_epi64(0x352E2720), q);
    const __m512i sgn = _mm512_permutex2var_epi8(ks_lo, s7, ks_hi);
    /* 2 ls + 1 in the low word of each u64 */
    const __m512i sc = _mm512_or_si512(_mm512_slli_epi64(_mm512_srli_epi64(q, 60), 1), _mm512_set1_epi64(1));
    /* the 32 groups' codes, word g: four 64-entry lookups, picked by
     * index bits 6 and 7 */
    const __m512i idx = _mm512_maskz_permutexvar_epi8(0x5555555555555555ULL, _mm512_load_si512(xxs_idx_ctrl), q);
    const __m512i *T = (const __m512i *)(const void *)xxs_codes;
    const __mmask32 b6 = _mm512_test_epi16_mask(idx, _mm512_set1_epi16(0x40)),
                    b7 = _mm512_test_epi16_mask(idx, _mm512_set1_epi16(0x80));
    const __m512i code = _mm512_mask_blend_epi16(
        b7,
        _mm512_mask_blend_epi16(b6, _mm512_permutex2var_epi16(T[0], idx, T[1]),
                                _mm512_permutex2var_epi16(T[2], idx, T[3])),
        _mm512_mask_blend_epi16(b6, _mm512_permutex2var_epi16(T[4], idx, T[5]),
                                _mm512_permutex2var_epi16(T[6], idx, T[7])));
    /* code value -> grid byte; vpermb reads 6 bits, so a code's neighbours
     * in bits 2-5 do not matter */
    const __m512i vals = _mm512_set1_epi32(0x002b1908);
    const __m512i bit = _mm512_set1_epi64(0x8040201008040201LL);
    __m512i s = _mm512_setzero_si512();
#pragma GCC unroll 4
    for (int p = 0; p < 4; p++) {
        /* pair p's 8 codes, one per u64, then byte j = bits 2j.. of it */
        const __m512i cp = _mm512_maskz_permutexvar_epi16(
            0x11111111u, _mm512_set_epi64(8 * p + 7, 8 * p + 6, 8 * p + 5, 8 * p + 4, 8 * p + 3, 8 * p + 2, 8 * p + 1, 8 * p),
            code);
        const __m512i grid = _mm512_permutexvar_epi8(
            _mm512_multishift_epi64_epi8(_mm512_set1_epi64(0x0E0C0A0806040200LL), cp), vals);
        const __mmask64 neg =
            _mm512_test_epi8_mask(_mm512_permutexvar_epi8(_mm512_load_si512(xxs_sign_ctrl[p]), sgn), bit);
        const __m512i qs = _mm512_mask_sub_epi8(a[p], neg, _mm512_setzero_si512(), a[p]);
        /* words 0-15: sub-block 2p's scale, 16-31: 2p + 1's */
        const __m512i scale = _mm512_permutexvar_epi16(
            _mm512_mask_blend_epi16(0xFFFF0000u, _mm512_set1_epi16((short)(8 * p)), _mm512_set1_epi16((short)(8 * p + 4))),
            sc);
        s = _mm512_dpwssd_epi32(s, _mm512_maddubs_epi16(grid, qs), scale);
    }
    return s;
}

/* Two rows' lane sums (each: lanes 0-7 + 8-15) side by side. */
static inline __m512i fold2(__m512i a, __m512i b)
{
    return _mm512_add_epi32(_mm512_shuffle_i64x2(a, b, 0x44), _mm512_shuffle_i64x2(a, b, 0xEE));
}

void quant_avx512_matvec_iq2_xxs(int64_t n, const void *w, size_t rs, int64_t rows, const void *act, float *out)
{
    const block_q8_K *y = act;
    const int64_t nb = n / QK_K;
    const __m512i ks_lo = _mm512_loadu_si512(quant_ksigns_iq2xs), ks_hi = _mm512_loadu_si512(quant_ksigns_iq2xs + 64);
    const size_t step = quant_prefetch_step_size(rs, 2, nb);
    for (int64_t r = 0; r < rows; r += 2) {
        const block_iq2_xxs *xa = (const block_iq2_xxs *)(const void *)((const char *)w + (size_t)r * rs);
        const block_iq2_xxs *xb = r + 1 < rows ? (const block_iq2_xxs *)(const void *)((const char *)xa + rs) : xa;
        const char *pf = (const char *)w + (size_t)(r + 2 * QUANT_PF_AHEAD) * rs;
        const bool prefetch = r + 2 * QUANT_PF_AHEAD + 2 <= rows;
        __m512 acc = _mm512_setzero_ps();
        for (int64_t i = 0; i < nb; i++) {
            if (prefetch)
                quant_prefetch_step(pf, i, step);
            const __m512i a[4] = {_mm512_loadu_si512(y[i].qs), _mm512_loadu_si512(y[i].qs + 64),
                                  _mm512_loadu_si512(y[i].qs + 128), _mm512_loadu_si512(y[i].qs + 192)};
            const __m512i sa = xxs_block(&xa[i], a, ks_lo, ks_hi), sb = xxs_block(&xb[i], a, ks_lo, ks_hi);
            acc = fma2(acc, fold2(sa, sb), fp16_to_f32(xa[i].d) * y[i].d, fp16_to_f32(xb[i].d) * y[i].d);
        }
        float oa, ob;
        hsum2(acc, &oa, &ob);
        out[r] = 0.125f * oa;
        if (r + 1 < rows)
            out[r + 1] = 0.125f * ob;
    }
}

/* ---- IQ4_XS ---- */

/* The activations of a super-block rearranged to meet the weights as they
 * load: 64 qs bytes hold 4 sub-blocks, the low nibbles their weights 0-15,
 * the high ones 16-31; al[h] / ah[h] hold those activations of sub-blocks
 * 4h..4h + 3 (16 bytes each), nl / nh -128 times their 4-byte sums. The
 * weights enter the dot unsigned, as table value + 128 (1..241), and nl /
 * nh take the offset back: exact, as no activation is -128 (the Q8_K
 * quantizer stays within -127..127, see quant_iq4.c). */
struct iq4_act {
    __m512i al[2], ah[2], nl[2], nh[2];
    float d;
};

/* Above this many super-blocks per row the prepared activations would not
 * fit the stack budget; such rows take the AVX2 vec_dot. */
#define IQ4_XS_MAX_NB 128

static void iq4_prepare(const block_q8_K *y, int64_t nb, struct iq4_act *p)
{
    const __m512i off = _mm512_set1_epi8((char)0x80);
    for (int64_t i = 0; i < nb; i++) {
        for (int h = 0; h < 2; h++) {
            const __m512i x0 = _mm512_loadu_si512(y[i].qs + 128 * h), x1 = _mm512_loadu_si512(y[i].qs + 128 * h + 64);
            p[i].al[h] = _mm512_shuffle_i64x2(x0, x1, 0x88);
            p[i].ah[h] = _mm512_shuffle_i64x2(x0, x1, 0xDD);
            p[i].nl[h] = _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_dpbusd_epi32(_mm512_setzero_si512(), off, p[i].al[h]));
            p[i].nh[h] = _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_dpbusd_epi32(_mm512_setzero_si512(), off, p[i].ah[h]));
        }
        p[i].d = y[i].d;
    }
}

/* Sub-block 4h + c's scale ls - 32 into int32 lanes 4c..4c + 3. */
static const uint8_t xs_scale_ctrl[2][64] __attribute__((aligned(64))) = {
    {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0,
     2, 0, 0, 0, 2, 0, 0, 0, 2, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 3, 0, 0, 0, 3, 0, 0, 0, 3, 0, 0, 0},
    {4, 0, 0, 0, 4, 0, 0, 0, 4, 0, 0, 0, 4, 0, 0, 0, 5, 0, 0, 0, 5, 0, 0, 0, 5, 0, 0, 0, 5, 0, 0, 0,
     6, 0, 0, 0, 6, 0, 0, 0, 6, 0, 0, 0, 6, 0, 0, 0, 7, 0, 0, 0, 7, 0, 0, 0, 7, 0, 0, 0, 7, 0, 0, 0},
};

/* One row's block as two vectors of 16 lane sums: lo from the weights
 * 0-15 of each sub-block (the reference's lanes k 0-3), hi from 16-31
 * (lanes 4-7); quarter c of each holds sub-blocks c and 4 + c. */
static inline void xs_block(const block_iq4_xs *x, const struct iq4_act *a, __m512i lut, __m512i *lo, __m512i *hi)
{
    uint64_t hdr;
    memcpy(&hdr, x, 8); /* d, scales_h, scales_l */
    /* the 8 six-bit scales as bytes: low nibbles from scales_l, bits 4-5
     * from scales_h's pairs */
    const uint64_t ls = _pdep_u64(hdr >> 32, 0x0F0F0F0F0F0F0F0FULL) | _pdep_u64(hdr >> 16 & 0xFFFF, 0x3030303030303030ULL);
    const __m512i lsv = _mm512_set1_epi64((long long)ls), m32 = _mm512_set1_epi32(32);
    __m512i sl = _mm512_setzero_si512(), sh = _mm512_setzero_si512();
#pragma GCC unroll 2
    for (int h = 0; h < 2; h++) {
        const __m512i scale = _mm512_sub_epi32(
            _mm512_maskz_permutexvar_epi8(0x1111111111111111ULL, _mm512_load_si512(xs_scale_ctrl[h]), lsv), m32);
        const __m512i q = _mm512_loadu_si512(x->qs + 64 * h);
        /* vpermb reads 6 bits: the table repeats every 16, so the other
         * nibble's low bits in bits 4-5 do not matter */
        const __m512i ul = _mm512_permutexvar_epi8(q, lut), uh = _mm512_permutexvar_epi8(_mm512_srli_epi16(q, 4), lut);
        sl = _mm512_add_epi32(sl, _mm512_mullo_epi32(_mm512_dpbusd_epi32(a->nl[h], ul, a->al[h]), scale));
        sh = _mm512_add_epi32(sh, _mm512_mullo_epi32(_mm512_dpbusd_epi32(a->nh[h], uh, a->ah[h]), scale));
    }
    *lo = sl;
    *hi = sh;
}

void quant_avx512_matvec_iq4_xs(int64_t n, const void *w, size_t rs, int64_t rows, const void *act, float *out)
{
    const int64_t nb = n / QK_K;
    if (nb > IQ4_XS_MAX_NB) {
        const quant_vec_dot_fn dot = quant_kernels_get(TENSOR_TYPE_IQ4_XS)->vec_dot;
        for (int64_t r = 0; r < rows; r++)
            out[r] = dot(n, (const char *)w + (size_t)r * rs, act);
        return;
    }
    struct iq4_act prep[IQ4_XS_MAX_NB] __attribute__((aligned(64)));
    iq4_prepare(act, nb, prep);
    uint8_t t[64];
    for (int e = 0; e < 64; e++)
        t[e] = (uint8_t)(quant_kvalues_iq4nl[e & 15] + 128);
    const __m512i lut = _mm512_loadu_si512(t);
    const size_t step = quant_prefetch_step_size(rs, 2, nb);
    for (int64_t r = 0; r < rows; r += 2) {
        const block_iq4_xs *xa = (const block_iq4_xs *)(const void *)((const char *)w + (size_t)r * rs);
        const block_iq4_xs *xb = r + 1 < rows ? (const block_iq4_xs *)(const void *)((const char *)xa + rs) : xa;
        const char *pf = (const char *)w + (size_t)(r + 2 * QUANT_PF_AHEAD) * rs;
        const bool prefetch = r + 2 * QUANT_PF_AHEAD + 2 <= rows;
        __m512 acc = _mm512_setzero_ps();
        for (int64_t i = 0; i < nb; i++) {
            if (prefetch)
                quant_prefetch_step(pf, i, step);
            __m512i la, ha, lb, hb;
            xs_block(&xa[i], &prep[i], lut, &la, &ha);
            xs_block(&xb[i], &prep[i], lut, &lb, &hb);
            /* per row: quarters [L0 + L2, L1 + L3, H0 + H2, H1 + H3], then
             * both rows' [L, H] = lanes k 0-3, 4-7 */
            const __m512i ta = fold2(la, ha), tb = fold2(lb, hb);
            const __m512i tt = _mm512_add_epi32(_mm512_shuffle_i64x2(ta, tb, 0x88), _mm512_shuffle_i64x2(ta, tb, 0xDD));
            acc = fma2(acc, tt, fp16_to_f32(xa[i].d) * prep[i].d, fp16_to_f32(xb[i].d) * prep[i].d);
        }
        float oa, ob;
        hsum2(acc, &oa, &ob);
        out[r] = oa;
        if (r + 1 < rows)
            out[r + 1] = ob;
    }
}
#endif
