/* One-token matvecs for IQ2_XXS, IQ3_S and IQ4_XS on AVX-512 VBMI + VNNI (see
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
#include "kernels/quant_iq3.h"
#include "kernels/quant_iq4.h"
#include "kernels/quant_kfew.h"
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
 * 0, 1, 2 (byte j at bits 2j): 512 bytes, looked up in registers where
 * the 8-byte table would take gathers (which held this kernel to 1.3x the
 * AVX2 one). Generated from the grid;
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

/* Both rows' grid indices as bytes: 0-31 row A's groups, 32-63 row B's
 * (group g at byte 8 (g / 4) + g % 4 of a row's qs; B's qs are bytes
 * 64.. of vpermi2b's two tables). */
static const uint8_t xxs_idx_ctrl[64] __attribute__((aligned(64))) = {
    0,  1,  2,  3,  8,  9,  10, 11, 16, 17, 18, 19, 24, 25, 26, 27, 32, 33, 34, 35, 40, 41,
    42, 43, 48, 49, 50, 51, 56, 57, 58, 59, 64, 65, 66, 67, 72, 73, 74, 75, 80, 81, 82, 83,
    88, 89, 90, 91, 96, 97, 98, 99, 104, 105, 106, 107, 112, 113, 114, 115, 120, 121, 122, 123,
};

/* The codes of both rows' 32 groups, split in low and high bytes (byte g
 * as in xxs_idx_ctrl): the tables' bytes in 4 registers each, two 128-entry
 * lookups picked by index bit 7. One lookup for both rows: the byte tables
 * hold 64 entries a register where the word table held 32. */
static inline void xxs_codes2(__m512i qa, __m512i qb, const __m512i TL[4], const __m512i TH[4], __m512i *lo,
                              __m512i *hi)
{
    const __m512i idx = _mm512_permutex2var_epi8(qa, _mm512_load_si512(xxs_idx_ctrl), qb);
    const __mmask64 b7 = _mm512_movepi8_mask(idx);
    *lo = _mm512_mask_blend_epi8(b7, _mm512_permutex2var_epi8(TL[0], idx, TL[1]),
                                 _mm512_permutex2var_epi8(TL[2], idx, TL[3]));
    *hi = _mm512_mask_blend_epi8(b7, _mm512_permutex2var_epi8(TH[0], idx, TH[1]),
                                 _mm512_permutex2var_epi8(TH[2], idx, TH[3]));
}

/* One row's 8 lane sums of a block, sub-blocks 2p in lanes 0-7 and 2p + 1
 * in lanes 8-15 (their sum is the reference's sumi1 + sumi2); row is 0 or
 * 1, its codes' bytes in lo / hi as xxs_codes2 leaves them. Each
 * sub-block's u64: 4 grid indices, then 4 x 7 sign bits and the scale on
 * top. The activations get the weights' signs bytewise, 0 - q where
 * negative (-128 stays -128, as _mm256_sign_epi8 leaves it), against the
 * grid's unsigned bytes; maddubs pairs stay below 2 * 43 * 128. */
static inline __m512i xxs_block(__m512i q, int row, __m512i lo, __m512i hi, const __m512i a[4], __m512i ks_lo,
                                __m512i ks_hi)
{
    /* the 7-bit sign fields (bits 32 + 7l of each u64) to bytes 0-3, then
     * the 8-bit signs with their parity bit from ksigns_iq2xs */
    const __m512i s7 = _mm512_multishift_epi64_epi8(_mm512_set1_epi64(0x352E2720), q);
    const __m512i sgn = _mm512_permutex2var_epi8(ks_lo, s7, ks_hi);
    /* 2 ls + 1 in the low word of each u64 */
    const __m512i sc = _mm512_or_si512(_mm512_slli_epi64(_mm512_srli_epi64(q, 60), 1), _mm512_set1_epi64(1));
    /* code value -> grid byte; vpermb reads 6 bits, so a code's neighbours
     * in bits 2-5 do not matter */
    const __m512i vals = _mm512_set1_epi32(0x002b1908);
    const __m512i bit = _mm512_set1_epi64(0x8040201008040201LL);
    __m512i s = _mm512_setzero_si512();
#pragma GCC unroll 4
    for (int p = 0; p < 4; p++) {
        /* pair p's 8 codes, one per u64 (bytes 0 and 1 from lo and hi),
         * then byte j = bits 2j.. of it */
        const long long g = 32 * row + 8 * p;
        const __m512i cp = _mm512_maskz_permutex2var_epi8(
            0x0303030303030303ULL, lo,
            _mm512_set_epi64((g + 7) | (g + 71) << 8, (g + 6) | (g + 70) << 8, (g + 5) | (g + 69) << 8,
                             (g + 4) | (g + 68) << 8, (g + 3) | (g + 67) << 8, (g + 2) | (g + 66) << 8,
                             (g + 1) | (g + 65) << 8, g | (g + 64) << 8),
            hi);
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
    __m512i TL[4], TH[4];
    for (int t = 0; t < 4; t++) {
        const __m512i c0 = _mm512_load_si512(xxs_codes + 64 * t), c1 = _mm512_load_si512(xxs_codes + 64 * t + 32);
        TL[t] = _mm512_inserti64x4(_mm512_castsi256_si512(_mm512_cvtepi16_epi8(c0)), _mm512_cvtepi16_epi8(c1), 1);
        TH[t] = _mm512_inserti64x4(_mm512_castsi256_si512(_mm512_cvtepi16_epi8(_mm512_srli_epi16(c0, 8))),
                                   _mm512_cvtepi16_epi8(_mm512_srli_epi16(c1, 8)), 1);
    }
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
            const __m512i qa = _mm512_loadu_si512(xa[i].qs), qb = _mm512_loadu_si512(xb[i].qs);
            __m512i lo, hi;
            xxs_codes2(qa, qb, TL, TH, &lo, &hi);
            const __m512i sa = xxs_block(qa, 0, lo, hi, a, ks_lo, ks_hi), sb = xxs_block(qb, 1, lo, hi, a, ks_lo, ks_hi);
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

/* Rows in pairs side by side, prefetched: into L2, quant_prefetch_far_steps
 * ahead: two rows side by side are streams the hardware prefetcher does
 * not follow (without the prefetch the 4-layer IQ4_XS file's generation
 * ran at half speed). IQ2_XXS and IQ3_S, bound by their arithmetic, keep
 * QUANT_PF_AHEAD into L1 (8 pairs into L2: 104-108 and 103-104 tok/s
 * against 104-108 and 104-105). */
static void xs_pairs(int64_t nb, const void *w, size_t rs, int64_t rows, const struct iq4_act *prep, __m512i lut,
                     float *out)
{
    const size_t step = quant_prefetch_step_size(rs, 2, nb);
    const int64_t pairs = quant_prefetch_far_steps(2 * rs);
    for (int64_t r = 0; r < rows; r += 2) {
        const block_iq4_xs *xa = (const block_iq4_xs *)(const void *)((const char *)w + (size_t)r * rs);
        const block_iq4_xs *xb = r + 1 < rows ? (const block_iq4_xs *)(const void *)((const char *)xa + rs) : xa;
        const char *pf = (const char *)w + (size_t)(r + 2 * pairs) * rs;
        const bool prefetch = r + 2 * pairs + 2 <= rows;
        __m512 acc = _mm512_setzero_ps();
        for (int64_t i = 0; i < nb; i++) {
            if (prefetch)
                quant_prefetch_step_l2(pf, i, step);
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

/* One row alone, its blocks in turn: the same lanes as xs_pairs' row A
 * ([L, H] = lanes k 0-3, 4-7) and the same fma and hsum_float_8: the same
 * bits. One row after the other is one stream in address order, which the
 * hardware prefetchers follow without a software prefetch: on an AMD EPYC
 * Zen 5 (forty-second session) TinyLlama IQ4_XS's tg64 ran at 63.5-65.0
 * tok/s so against 56.4-59.5 in pairs, alternating (ik_llama.cpp 68-72). */
static inline __attribute__((always_inline)) float xs_row(int64_t nb, const block_iq4_xs *x, const struct iq4_act *prep, __m512i lut)
{
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < nb; i++) {
        __m512i l, h;
        xs_block(&x[i], &prep[i], lut, &l, &h);
        const __m512i t = fold2(l, h); /* [L02, L13, H02, H13] */
        const __m512i s = _mm512_add_epi32(t, _mm512_shuffle_i64x2(t, t, 0xB1));
        acc = _mm256_fmadd_ps(_mm256_set1_ps(fp16_to_f32(x[i].d) * prep[i].d),
                              _mm256_cvtepi32_ps(_mm512_castsi512_si256(_mm512_shuffle_i64x2(s, s, 0x08))), acc);
    }
    return hsum_ps(acc);
}

/* how the rows stream, measured per thread and row length (quant_kfew.h) */
static _Thread_local quant_kfew_tuners xs_tuners;

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
    const quant_kfew_call call = quant_kfew_start(&xs_tuners, nb, 1, 1, (size_t)rows * rs);
    if (call.way == QUANT_KFEW_STREAM_SEQ)
        for (int64_t r = 0; r < rows; r++)
            out[r] = xs_row(nb, (const block_iq4_xs *)(const void *)((const char *)w + (size_t)r * rs), prep, lut);
    else
        xs_pairs(nb, w, rs, rows, prep, lut, out);
    quant_kfew_end(&call);
}

/* ---- IQ3_S ---- */

/* quant_iq3s_grid with each byte (odd, 1..15) as a 3-bit code (b - 1) / 2,
 * byte j at bits 3j: 1 KiB, looked up in registers as low and high bytes
 * (generated from the grid; unit/test_matvec_iq reaches every
 * entry). */
static const uint16_t s3_codes[512] __attribute__((aligned(64))) = {
    0x000, 0x001, 0x002, 0x005, 0x007, 0x008, 0x009, 0x00a, 0x00c, 0x00e, 0x010, 0x011, 0x015, 0x01b,
    0x020, 0x022, 0x025, 0x027, 0x029, 0x02b, 0x030, 0x032, 0x039, 0x03c, 0x03f, 0x040, 0x041, 0x042,
    0x044, 0x048, 0x049, 0x04d, 0x050, 0x053, 0x057, 0x059, 0x05d, 0x064, 0x071, 0x075, 0x07a, 0x080,
    0x081, 0x085, 0x087, 0x088, 0x08b, 0x08e, 0x091, 0x095, 0x098, 0x09c, 0x0a2, 0x0a5, 0x0a7, 0x0a9,
    0x0ab, 0x0b8, 0x0bb, 0x0c3, 0x0c9, 0x0cd, 0x0d0, 0x0d2, 0x0d9, 0x0db, 0x0de, 0x0e4, 0x0e8, 0x0ea,
    0x0f7, 0x0f9, 0x0fd, 0x100, 0x10b, 0x10f, 0x111, 0x114, 0x11a, 0x120, 0x123, 0x129, 0x138, 0x142,
    0x144, 0x150, 0x152, 0x156, 0x15b, 0x161, 0x165, 0x167, 0x176, 0x17b, 0x186, 0x189, 0x18b, 0x199,
    0x1aa, 0x1b9, 0x1c0, 0x1c2, 0x1c4, 0x1d0, 0x1d2, 0x1d6, 0x1db, 0x1e8, 0x1ec, 0x200, 0x201, 0x202,
    0x204, 0x208, 0x209, 0x20b, 0x20d, 0x20f, 0x210, 0x212, 0x219, 0x21c, 0x21e, 0x22c, 0x22e, 0x231,
    0x23a, 0x240, 0x241, 0x243, 0x246, 0x248, 0x24c, 0x251, 0x258, 0x25b, 0x261, 0x268, 0x26a, 0x278,
    0x27e, 0x280, 0x28a, 0x28d, 0x28f, 0x290, 0x294, 0x29a, 0x2a0, 0x2a3, 0x2ad, 0x2b0, 0x2ba, 0x2c1,
    0x2c4, 0x2c7, 0x2c8, 0x2cb, 0x2d1, 0x2d7, 0x2d8, 0x2dc, 0x2e1, 0x2f2, 0x2f8, 0x303, 0x305, 0x30a,
    0x30c, 0x319, 0x31b, 0x322, 0x326, 0x328, 0x32c, 0x341, 0x348, 0x34b, 0x351, 0x358, 0x35a, 0x369,
    0x390, 0x394, 0x397, 0x3a4, 0x3a6, 0x3c1, 0x3c3, 0x3c8, 0x3ca, 0x3d1, 0x3dd, 0x3e1, 0x3f2, 0x3f8,
    0x400, 0x401, 0x403, 0x405, 0x407, 0x408, 0x40a, 0x40c, 0x40e, 0x411, 0x413, 0x417, 0x418, 0x41a,
    0x421, 0x423, 0x425, 0x428, 0x42a, 0x437, 0x438, 0x43b, 0x43d, 0x440, 0x442, 0x448, 0x44b, 0x44f,
    0x452, 0x455, 0x459, 0x45c, 0x462, 0x469, 0x481, 0x484, 0x487, 0x491, 0x493, 0x498, 0x49f, 0x4a1,
    0x4ab, 0x4af, 0x4b9, 0x4bc, 0x4c0, 0x4c2, 0x4c5, 0x4c9, 0x4d2, 0x4d4, 0x4d9, 0x4db, 0x4e2, 0x4e8,
    0x4f6, 0x501, 0x507, 0x510, 0x513, 0x51a, 0x51d, 0x521, 0x53a, 0x53d, 0x544, 0x549, 0x552, 0x55f,
    0x560, 0x56b, 0x578, 0x580, 0x582, 0x587, 0x591, 0x5ad, 0x5b1, 0x5c5, 0x5c9, 0x5d6, 0x5d8, 0x5e3,
    0x5e8, 0x602, 0x609, 0x60b, 0x60d, 0x60f, 0x612, 0x619, 0x61b, 0x61d, 0x622, 0x624, 0x627, 0x629,
    0x633, 0x639, 0x641, 0x643, 0x645, 0x64c, 0x651, 0x653, 0x660, 0x670, 0x67a, 0x67e, 0x680, 0x68a,
    0x690, 0x69a, 0x69c, 0x6a8, 0x6c1, 0x6c8, 0x6cc, 0x6d1, 0x6d3, 0x6d7, 0x6d8, 0x6e1, 0x6e3, 0x6e7,
    0x6ed, 0x6fb, 0x703, 0x709, 0x70e, 0x712, 0x719, 0x72a, 0x730, 0x734, 0x741, 0x748, 0x74a, 0x755,
    0x75a, 0x764, 0x76e, 0x77b, 0x78e, 0x7a1, 0x7c1, 0x7c3, 0x7d0, 0x7d2, 0x7dd, 0x800, 0x804, 0x80a,
    0x810, 0x814, 0x817, 0x81a, 0x821, 0x828, 0x838, 0x842, 0x847, 0x849, 0x84b, 0x852, 0x858, 0x85d,
    0x863, 0x869, 0x86d, 0x881, 0x883, 0x888, 0x88d, 0x891, 0x89b, 0x8a0, 0x8af, 0x8b2, 0x8b8, 0x8c4,
    0x8c9, 0x8cb, 0x8d0, 0x8d2, 0x8d9, 0x8dd, 0x900, 0x902, 0x914, 0x91f, 0x920, 0x939, 0x945, 0x947,
    0x951, 0x972, 0x98b, 0x99c, 0x9b0, 0x9c8, 0x9cd, 0x9d8, 0x9e3, 0x9e9, 0xa02, 0xa08, 0xa0c, 0xa12,
    0xa20, 0xa24, 0xa27, 0xa2a, 0xa36, 0xa3c, 0xa41, 0xa43, 0xa45, 0xa4a, 0xa51, 0xa5a, 0xa7a, 0xa80,
    0xa89, 0xa93, 0xa98, 0xa9e, 0xaab, 0xac2, 0xac7, 0xac8, 0xad7, 0xae4, 0xae9, 0xaf5, 0xafb, 0xb01,
    0xb04, 0xb10, 0xb1a, 0xb26, 0xb4a, 0xb56, 0xb69, 0xb6b, 0xba2, 0xbc2, 0xbc4, 0xbd2, 0xc09, 0xc0b,
    0xc0d, 0xc19, 0xc1b, 0xc30, 0xc40, 0xc50, 0xc57, 0xc74, 0xc8a, 0xc9c, 0xca2, 0xcad, 0xcb2, 0xcb8,
    0xcc0, 0xccc, 0xcd1, 0xce0, 0xd15, 0xd23, 0xd32, 0xd40, 0xd43, 0xd5c, 0xd70, 0xd85, 0xda0, 0xdc9,
    0xdcb, 0xe00, 0xe04, 0xe07, 0xe10, 0xe12, 0xe1e, 0xe20, 0xe2c, 0xe32, 0xe42, 0xe49, 0xe54, 0xe63,
    0xe65, 0xe81, 0xe84, 0xe88, 0xe8e, 0xe91, 0xe98, 0xea9, 0xec2, 0xeda, 0xedd, 0xeeb, 0xf01, 0xf05,
    0xf0b, 0xf10, 0xf28, 0xf52, 0xf62, 0xf82, 0xf99, 0xfc0,
};

/* One byte of the codes of a block's 64 groups: the byte table in 8
 * registers (T), four 128-entry lookups picked by index bit 7 (in the qs
 * byte) and bit 8 (qh, one bit a group). */
static inline __m512i s3_lookup(const __m512i T[8], __m512i idx, __mmask64 b7, __mmask64 b8)
{
    return _mm512_mask_blend_epi8(
        b8,
        _mm512_mask_blend_epi8(b7, _mm512_permutex2var_epi8(T[0], idx, T[1]), _mm512_permutex2var_epi8(T[2], idx, T[3])),
        _mm512_mask_blend_epi8(b7, _mm512_permutex2var_epi8(T[4], idx, T[5]), _mm512_permutex2var_epi8(T[6], idx, T[7])));
}

/* One row's lane sums of a block, as xxs_block's: sub-block 2p in lanes
 * 0-7, 2p + 1 in 8-15. Signs are stored one bit a weight, 64 of them a
 * pair's mask as they lie; maddubs pairs stay below 2 * 15 * 128. */
static inline __attribute__((always_inline)) __m512i s3_block(const block_iq3_s *x, const __m512i a[4], const __m512i TL[8], const __m512i TH[8])
{
    uint64_t qh, sc32 = 0;
    memcpy(&qh, x->qh, 8);
    memcpy(&sc32, x->scales, 4);
    /* scale bytes 2 ls + 1 (ls the nibbles, sub-block b's at nibble b) */
    const uint64_t ls = (_pdep_u64(sc32, 0x0F0F0F0F0F0F0F0FULL) << 1) | 0x0101010101010101ULL;
    const __m512i lsv = _mm512_set1_epi64((long long)ls);
    /* group g's code: byte g of lo (bits 0-7) and of hi (8-11) */
    const __m512i idx = _mm512_loadu_si512(x->qs);
    const __mmask64 b7 = _mm512_movepi8_mask(idx);
    const __m512i lo = s3_lookup(TL, idx, b7, qh), hi = s3_lookup(TH, idx, b7, qh);
    const __m512i vals = _mm512_set1_epi64(0x0F0D0B0907050301LL);
    __m512i s = _mm512_setzero_si512();
#pragma GCC unroll 4
    for (int p = 0; p < 4; p++) {
        /* groups 16p + 2G, 16p + 2G + 1 in u64 G (words 0 and 1), then
         * byte j = bits 3j (j < 4) or 16 + 3 (j - 4) of it */
        const long long g = 16 * p;
        const __m512i cp = _mm512_maskz_permutex2var_epi8(
            0x0F0F0F0F0F0F0F0FULL, lo,
            _mm512_set_epi64((g + 14) | (g + 78) << 8 | (g + 15) << 16 | (g + 79) << 24,
                             (g + 12) | (g + 76) << 8 | (g + 13) << 16 | (g + 77) << 24,
                             (g + 10) | (g + 74) << 8 | (g + 11) << 16 | (g + 75) << 24,
                             (g + 8) | (g + 72) << 8 | (g + 9) << 16 | (g + 73) << 24,
                             (g + 6) | (g + 70) << 8 | (g + 7) << 16 | (g + 71) << 24,
                             (g + 4) | (g + 68) << 8 | (g + 5) << 16 | (g + 69) << 24,
                             (g + 2) | (g + 66) << 8 | (g + 3) << 16 | (g + 67) << 24,
                             g | (g + 64) << 8 | (g + 1) << 16 | (g + 65) << 24),
            hi);
        const __m512i grid =
            _mm512_permutexvar_epi8(_mm512_multishift_epi64_epi8(_mm512_set1_epi64(0x1916131009060300LL), cp), vals);
        uint64_t neg;
        memcpy(&neg, x->signs + 8 * p, 8);
        const __m512i qs = _mm512_mask_sub_epi8(a[p], neg, _mm512_setzero_si512(), a[p]);
        /* words 0-15: byte 2p of ls, 16-31: byte 2p + 1 */
        const __m512i scale = _mm512_maskz_permutexvar_epi8(
            0x5555555555555555ULL,
            _mm512_mask_blend_epi16(0xFFFF0000u, _mm512_set1_epi16((short)(2 * p)), _mm512_set1_epi16((short)(2 * p + 1))),
            lsv);
        s = _mm512_dpwssd_epi32(s, _mm512_maddubs_epi16(grid, qs), scale);
    }
    return s;
}

void quant_avx512_matvec_iq3_s(int64_t n, const void *w, size_t rs, int64_t rows, const void *act, float *out)
{
    const block_q8_K *y = act;
    const int64_t nb = n / QK_K;
    __m512i TL[8], TH[8];
    for (int t = 0; t < 8; t++) {
        const __m512i c0 = _mm512_load_si512(s3_codes + 64 * t), c1 = _mm512_load_si512(s3_codes + 64 * t + 32);
        TL[t] = _mm512_inserti64x4(_mm512_castsi256_si512(_mm512_cvtepi16_epi8(c0)), _mm512_cvtepi16_epi8(c1), 1);
        TH[t] = _mm512_inserti64x4(_mm512_castsi256_si512(_mm512_cvtepi16_epi8(_mm512_srli_epi16(c0, 8))),
                                   _mm512_cvtepi16_epi8(_mm512_srli_epi16(c1, 8)), 1);
    }
    const size_t step = quant_prefetch_step_size(rs, 2, nb);
    for (int64_t r = 0; r < rows; r += 2) {
        const block_iq3_s *xa = (const block_iq3_s *)(const void *)((const char *)w + (size_t)r * rs);
        const block_iq3_s *xb = r + 1 < rows ? (const block_iq3_s *)(const void *)((const char *)xa + rs) : xa;
        const char *pf = (const char *)w + (size_t)(r + 2 * QUANT_PF_AHEAD) * rs;
        const bool prefetch = r + 2 * QUANT_PF_AHEAD + 2 <= rows;
        __m512 acc = _mm512_setzero_ps();
        for (int64_t i = 0; i < nb; i++) {
            if (prefetch)
                quant_prefetch_step(pf, i, step);
            const __m512i a[4] = {_mm512_loadu_si512(y[i].qs), _mm512_loadu_si512(y[i].qs + 64),
                                  _mm512_loadu_si512(y[i].qs + 128), _mm512_loadu_si512(y[i].qs + 192)};
            const __m512i sa = s3_block(&xa[i], a, TL, TH), sb = s3_block(&xb[i], a, TL, TH);
            acc = fma2(acc, fold2(sa, sb), fp16_to_f32(xa[i].d) * y[i].d, fp16_to_f32(xb[i].d) * y[i].d);
        }
        float oa, ob;
        hsum2(acc, &oa, &ob);
        out[r] = oa;
        if (r + 1 < rows)
            out[r + 1] = ob;
    }
}
#endif
