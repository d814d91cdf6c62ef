/* The MXFP4 prompt GEMM (see gemm_mxfp4.h). */
#include "kernels/gemm_mxfp4.h"

/* tile bytes a pass may hold: more tokens go in several passes, each
 * writing the panels again (512 tokens of n = 5632 take 3.6 MB; passes
 * that fit L2 measured 5-25 % slower than one: the panel writes cost more
 * than the tiles' trips to L3) */
size_t gemm_mxfp4_pass_bytes = 32 << 20;

#if defined(GEMM_MXFP4)
#include <math.h>
#include <string.h>

#include "kernels/forward_packed.h"
#include "kernels/kernel_scratch.h"
#include "kernels/quant_internal.h"
#include "kernels/quant_mxfp4.h"

/* rows per panel (a zmm's dword lanes) and tokens per tile: 8
 * accumulators, 8 float sums and 8 tokens' first 16 bytes in registers */
#define GR 16
#define TT 8
/* panel bytes per block: 8 vectors (elements 4k..4k+3 of the 16 rows),
 * then the 16 rows' half scales */
#define PB (8 * 64 + 64)
/* tile bytes per block: the TT tokens' 32 bytes, their -QUANT_MX_OFF * (sum of
 * the bytes) as int32, their d_a as float */
#define TB_Q 0
#define TB_OFF (TT * 32)
#define TB_DA (TT * 32 + TT * 4)
#define TB (TT * 32 + TT * 4 + TT * 4) /* a multiple of 32: the tokens' aligned stores */
/* tiles a pass holds at most (4096 tokens) */
#define MAX_PASS_TILES 512
/* d_w * d_a as an exponent add (tile_run) is exact where d_a is a nonzero
 * finite F16 (2^-24 <= |d_a| < 2^16) and every scale byte e of the
 * panel's block is in [E_LO, E_HI]: d_w = 2^(e - 128) then moves d_a's
 * exponent field to 1..254, a normal float, which is the product vmulps
 * rounds to (it is exact) */
#define E_LO 26
#define E_HI 240

/* Rows r .. r + nr - 1 (nr <= 16; the lanes past them repeat the last row)
 * into the panel p: per block the 8 vectors and the half scales. The next
 * panel's n_pf rows (from pf on) are fetched meanwhile, a line per row
 * every 3 blocks: sixteen streams the hardware prefetcher does not keep
 * up with. Written out (no arrays of vectors): GCC 12 kept those on the
 * stack. True where every scale byte is in [E_LO, E_HI]. */
static bool panel_write(const uint8_t *w, size_t rb, int64_t r, int nr, int64_t nb, uint8_t *p, const uint8_t *pf,
                        int n_pf)
{
    __mmask16 in_range = 0xFFFF;
    const __m512i lut = _mm512_broadcast_i32x4(
        quant_mx_lut_off());
    const __m512i m4 = _mm512_set1_epi8(0x0F);
    /* byte offsets of the 16 rows (the last repeated) from row r */
    int32_t ro[GR];
    for (int j = 0; j < GR; j++)
        ro[j] = (int32_t)((size_t)(j < nr ? j : nr - 1) * rb);
    const __m512i e_idx = _mm512_loadu_si512(ro);
    const uint8_t *x0 = w + (size_t)r * rb;
#define MXG_ROW(j) _mm_loadu_si128((const __m128i *)(x0 + ro[j] + 1))
#define MXG_Z(q)                                                                                                   \
    _mm512_inserti32x4(                                                                                            \
        _mm512_inserti32x4(_mm512_inserti32x4(_mm512_castsi128_si512(MXG_ROW(q)), MXG_ROW(4 + q), 1), MXG_ROW(8 + q), \
                           2),                                                                                     \
        MXG_ROW(12 + q), 3)
    for (int64_t b = 0; b < nb; b++, p += PB, x0 += sizeof(block_mxfp4)) {
        if (b % 3 == 0)
            for (int j = 0; j < n_pf; j++)
                _mm_prefetch((const char *)pf + (size_t)j * rb + (size_t)b * sizeof(block_mxfp4), _MM_HINT_T0);
        /* zq: 128-bit lane i = the 16 bytes of row 4i + q */
        const __m512i z0 = MXG_Z(0), z1 = MXG_Z(1), z2 = MXG_Z(2), z3 = MXG_Z(3);
        /* a 4x4 dword transpose in each 128-bit lane: dk lane 4i + q = row
         * 4i + q's bytes 4k..4k+3 */
        const __m512i t0 = _mm512_unpacklo_epi32(z0, z1), t1 = _mm512_unpackhi_epi32(z0, z1);
        const __m512i t2 = _mm512_unpacklo_epi32(z2, z3), t3 = _mm512_unpackhi_epi32(z2, z3);
        const __m512i d0 = _mm512_unpacklo_epi64(t0, t2), d1 = _mm512_unpackhi_epi64(t0, t2);
        const __m512i d2 = _mm512_unpacklo_epi64(t1, t3), d3 = _mm512_unpackhi_epi64(t1, t3);
        /* low nibbles: elements 4k..4k+3; high nibbles: 16 + 4k.. */
#define MXG_LO(d) _mm512_shuffle_epi8(lut, _mm512_and_si512(d, m4))
#define MXG_HI(d) _mm512_shuffle_epi8(lut, _mm512_and_si512(_mm512_srli_epi16(d, 4), m4))
        _mm512_store_si512(p + 0 * 64, MXG_LO(d0));
        _mm512_store_si512(p + 1 * 64, MXG_LO(d1));
        _mm512_store_si512(p + 2 * 64, MXG_LO(d2));
        _mm512_store_si512(p + 3 * 64, MXG_LO(d3));
        _mm512_store_si512(p + 4 * 64, MXG_HI(d0));
        _mm512_store_si512(p + 5 * 64, MXG_HI(d1));
        _mm512_store_si512(p + 6 * 64, MXG_HI(d2));
        _mm512_store_si512(p + 7 * 64, MXG_HI(d3));
#undef MXG_LO
#undef MXG_HI
        /* the scale bytes (offset 0 of each block), gathered */
        const __m512i e =
            _mm512_and_si512(_mm512_i32gather_epi32(e_idx, (const void *)x0, 1), _mm512_set1_epi32(0xFF));
        const __m512i normal = _mm512_slli_epi32(_mm512_sub_epi32(e, _mm512_set1_epi32(1)), 23);
        const __m512i tiny = _mm512_sllv_epi32(_mm512_set1_epi32(0x00200000), e); /* e < 2: a subnormal half */
        _mm512_store_si512(p + 8 * 64,
                           _mm512_mask_blend_epi32(_mm512_cmplt_epu32_mask(e, _mm512_set1_epi32(2)), normal, tiny));
        in_range &= _mm512_cmplt_epu32_mask(_mm512_sub_epi32(e, _mm512_set1_epi32(E_LO)),
                                            _mm512_set1_epi32(E_HI - E_LO + 1));
    }
#undef MXG_Z
#undef MXG_ROW
    return in_range == 0xFFFF;
}

/* The panel of packed group pg (forward_packed.h's MXFP4 layout: per
 * block 4 nibble vectors whose dword lane j holds row j's qs bytes
 * 4k..4k+3, and 16 scale bytes at packed_scale_at): the same panel panel_write
 * makes from the file, without its transpose and gather. The next group
 * (pf, gb bytes) is fetched meanwhile. True where every scale byte of the
 * lanes in `valid` is in [E_LO, E_HI] (the padding rows past a tensor's
 * end are zeros). */
static bool panel_from_packed(const uint8_t *pg, int64_t nb, uint8_t *p, const uint8_t *pf, size_t pf_step,
                              __mmask16 valid)
{
    __mmask16 in_range = 0xFFFF;
    const __m512i lut = _mm512_broadcast_i32x4(
        quant_mx_lut_off());
    const __m512i m4 = _mm512_set1_epi8(0x0F);
    for (int64_t b = 0; b < nb; b++, p += PB) {
        quant_prefetch_step((const char *)pf, b, pf_step);
        const uint8_t *nib = pg + packed_mxfp4_q(b);
#pragma GCC unroll 4
        for (int k = 0; k < 4; k++) {
            const __m512i d = _mm512_loadu_si512(nib + 64 * k);
            _mm512_store_si512(p + k * 64, _mm512_shuffle_epi8(lut, _mm512_and_si512(d, m4)));
            _mm512_store_si512(p + (4 + k) * 64,
                               _mm512_shuffle_epi8(lut, _mm512_and_si512(_mm512_srli_epi16(d, 4), m4)));
        }
        const __m512i e = _mm512_cvtepu8_epi32(
            _mm_loadu_si128((const __m128i *)(pg + packed_mxfp4_sc(b))));
        const __m512i normal = _mm512_slli_epi32(_mm512_sub_epi32(e, _mm512_set1_epi32(1)), 23);
        const __m512i tiny = _mm512_sllv_epi32(_mm512_set1_epi32(0x00200000), e); /* e < 2: a subnormal half */
        _mm512_store_si512(p + 8 * 64,
                           _mm512_mask_blend_epi32(_mm512_cmplt_epu32_mask(e, _mm512_set1_epi32(2)), normal, tiny));
        in_range &= _mm512_cmplt_epu32_mask(_mm512_sub_epi32(e, _mm512_set1_epi32(E_LO)),
                                            _mm512_set1_epi32(E_HI - E_LO + 1)) |
                    (__mmask16)~valid;
    }
    return in_range == 0xFFFF;
}

/* Tokens t0 .. t0 + nt - 1 (nt <= TT; the slots past them repeat the last
 * token) into the tile o: per block their bytes, offsets and d_a. True
 * where every d_a is nonzero and finite. */
static bool tile_write(const uint8_t *act, size_t st, int t0, int nt, int64_t nb, uint8_t *o)
{
    bool in_range = true;
    const __m256i one8 = _mm256_set1_epi8(1), one16 = _mm256_set1_epi16(1);
    for (int t = 0; t < TT; t++) {
        const block_q8_0 *y = (const block_q8_0 *)(const void *)(act + (size_t)(t0 + (t < nt ? t : nt - 1)) * st);
        uint8_t *ot = o;
        for (int64_t b = 0; b < nb; b++, ot += TB) {
            const __m256i q = _mm256_loadu_si256((const __m256i *)y[b].qs);
            _mm256_store_si256((__m256i *)(ot + TB_Q + 32 * t), q);
            const int32_t off = -QUANT_MX_OFF * hsum_epi32(_mm256_madd_epi16(_mm256_maddubs_epi16(one8, q), one16));
            const float da = fp16_to_f32(y[b].d);
            memcpy(ot + TB_OFF + 4 * t, &off, 4);
            memcpy(ot + TB_DA + 4 * t, &da, 4);
            in_range = in_range && da != 0.0f && isfinite(da);
        }
    }
    return in_range;
}

static inline __m512i bcast32(const uint8_t *p)
{
    int32_t v;
    memcpy(&v, p, 4);
    return _mm512_set1_epi32(v);
}

static inline __m512 bcastf(const uint8_t *p)
{
    float v;
    memcpy(&v, p, 4);
    return _mm512_set1_ps(v);
}

/* The panel p (16 rows) against the tile a's first NT tokens over nb
 * blocks: out[(t) * out_stride + j] for the rows j set in mask. Always
 * inlined with constant NT and EXP. Per block and token: the lane sums
 * from -offset, 8 vpdpbusd (k outer, tokens inner: NT chains in flight),
 * then acc = fma(convert(isum), d_w * d_a, acc) per lane.
 *
 * The loop runs at two limits of Zen 5 at once (measured): about 2 loads a
 * cycle, and 2 multiply pipes that vpdpbusd, vmulps and the fma share. So
 * the token's bytes 0..15 come as one 128-bit broadcast, dword k picked by
 * vpshufd (its own pipes), 16..31 as 4-byte broadcasts; and with EXP
 * (ranges checked by the caller, see E_LO) d_w * d_a is d_a's bits plus
 * (e - 128) << 23, an integer add. Each alone measured no faster, both
 * together 5 % (bench_mxfp4). */
static inline __attribute__((always_inline)) void tile_run(int NT, bool EXP, const uint8_t *p, const uint8_t *a,
                                                          int64_t nb, float *out, int64_t out_stride, __mmask16 mask)
{
    __m512 facc[TT];
#pragma GCC unroll 8
    for (int t = 0; t < NT; t++)
        facc[t] = _mm512_setzero_ps();
    for (int64_t b = 0; b < nb; b++, p += PB, a += TB) {
        __m512i acc[TT], qlo[TT];
#pragma GCC unroll 8
        for (int t = 0; t < NT; t++) {
            acc[t] = bcast32(a + TB_OFF + 4 * t);
            qlo[t] = _mm512_broadcast_i32x4(_mm_load_si128((const __m128i *)(a + TB_Q + 32 * t)));
        }
#define MXG_KS(k, imm)                                                                                             \
    do {                                                                                                           \
        const __m512i wk = _mm512_load_si512(p + 64 * (k));                                                        \
        _Pragma("GCC unroll 8") for (int t = 0; t < NT; t++) acc[t] =                                              \
            _mm512_dpbusd_epi32(acc[t], wk, _mm512_shuffle_epi32(qlo[t], imm));                                    \
    } while (0)
        MXG_KS(0, 0x00);
        MXG_KS(1, 0x55);
        MXG_KS(2, 0xAA);
        MXG_KS(3, 0xFF);
#undef MXG_KS
#pragma GCC unroll 4
        for (int k = 4; k < 8; k++) {
            const __m512i wk = _mm512_load_si512(p + 64 * k);
#pragma GCC unroll 8
            for (int t = 0; t < NT; t++)
                acc[t] = _mm512_dpbusd_epi32(acc[t], wk, bcast32(a + TB_Q + 32 * t + 4 * k));
        }
        const __m512 dw = _mm512_load_ps(p + 8 * 64);
        if (EXP) {
            const __m512i kx = _mm512_sub_epi32(_mm512_castps_si512(dw), _mm512_set1_epi32(127 << 23));
#pragma GCC unroll 8
            for (int t = 0; t < NT; t++)
                facc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(acc[t]),
                                          _mm512_castsi512_ps(_mm512_add_epi32(kx, bcast32(a + TB_DA + 4 * t))),
                                          facc[t]);
        } else {
#pragma GCC unroll 8
            for (int t = 0; t < NT; t++)
                facc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(acc[t]), _mm512_mul_ps(dw, bcastf(a + TB_DA + 4 * t)),
                                          facc[t]);
        }
    }
#pragma GCC unroll 8
    for (int t = 0; t < NT; t++)
        _mm512_mask_storeu_ps(out + (int64_t)t * out_stride, mask, facc[t]);
}

typedef void (*tile_fn)(const uint8_t *p, const uint8_t *a, int64_t nb, float *out, int64_t out_stride,
                        __mmask16 mask);
#define TILE_FN(nt)                                                                                               \
    static void tile_##nt(const uint8_t *p, const uint8_t *a, int64_t nb, float *out, int64_t out_stride,        \
                          __mmask16 mask)                                                                         \
    {                                                                                                             \
        tile_run(nt, false, p, a, nb, out, out_stride, mask);                                                     \
    }                                                                                                             \
    static void tile_exp_##nt(const uint8_t *p, const uint8_t *a, int64_t nb, float *out, int64_t out_stride,    \
                              __mmask16 mask)                                                                     \
    {                                                                                                             \
        tile_run(nt, true, p, a, nb, out, out_stride, mask);                                                      \
    }
TILE_FN(1)
TILE_FN(2)
TILE_FN(3)
TILE_FN(4)
TILE_FN(5)
TILE_FN(6)
TILE_FN(7)
TILE_FN(8)
/* [exponent add][tokens - 1] */
static const tile_fn tiles[2][TT] = {
    {tile_1, tile_2, tile_3, tile_4, tile_5, tile_6, tile_7, tile_8},
    {tile_exp_1, tile_exp_2, tile_exp_3, tile_exp_4, tile_exp_5, tile_exp_6, tile_exp_7, tile_exp_8},
};

/* Where a call's rows come from: the file's rows (w, rb bytes each) or
 * packed groups (packed, gb bytes each). */
struct mx_src {
    const uint8_t *w;
    size_t rb;
    const uint8_t *packed;
    size_t gb;
};

static bool mx_run(const struct mx_src *src, int64_t nb, int64_t r0, int64_t r1, const uint8_t *act,
                   size_t act_stride, int n_tok, float *out, int64_t out_stride)
{
    /* tokens per pass: whole tiles within gemm_mxfp4_pass_bytes */
    int64_t tiles_pass = (int64_t)(gemm_mxfp4_pass_bytes / ((size_t)nb * TB));
    if (tiles_pass < 1)
        tiles_pass = 1;
    const int64_t n_tiles = (n_tok + TT - 1) / TT;
    if (tiles_pass > n_tiles)
        tiles_pass = n_tiles;
    if (tiles_pass > MAX_PASS_TILES)
        tiles_pass = MAX_PASS_TILES;
    const size_t panel_bytes = (size_t)nb * PB;
    uint8_t *scr = kernel_scratch_get(panel_bytes + (size_t)tiles_pass * (size_t)nb * TB);
    if (!scr)
        return false;
    uint8_t *panel = scr, *tok = scr + panel_bytes;
    const int pass_tok = (int)(tiles_pass * TT);
    /* packed rows go by whole groups, the lanes before r0 masked off */
    const int64_t r_first = src->packed ? r0 - r0 % GR : r0;
    const size_t pf_step = src->packed ? quant_prefetch_step_size(src->gb, 1, nb) : 0;
    for (int c0 = 0; c0 < n_tok; c0 += pass_tok) {
        const int cn = n_tok - c0 < pass_tok ? n_tok - c0 : pass_tok;
        /* the pass's tokens in tiles of even sizes (10: 5 + 5, not 8 + 2:
         * a small tile has fewer chains in flight per weight load) */
        const int nti = (cn + TT - 1) / TT, base = cn / nti, extra = cn % nti;
#define TILE_T0(i) ((i) * base + ((i) < extra ? (i) : extra))
        bool tok_in_range[MAX_PASS_TILES];
        for (int i = 0; i < nti; i++)
            tok_in_range[i] =
                tile_write(act, act_stride, c0 + TILE_T0(i), base + (i < extra), nb, tok + (size_t)i * nb * TB);
        for (int64_t r = r_first; r < r1; r += GR) {
            const int nr = r1 - r < GR ? (int)(r1 - r) : GR;
            const int skip = r < r0 ? (int)(r0 - r) : 0;
            const __mmask16 mask = (__mmask16)(((1u << nr) - 1) & ~((1u << skip) - 1));
            bool w_in_range;
            if (src->packed) {
                const uint8_t *pg = src->packed + (size_t)(r / GR) * src->gb;
                w_in_range = panel_from_packed(pg, nb, panel, pg + src->gb, r + GR < r1 ? pf_step : 0, mask);
            } else {
                const int64_t rn = r + GR < r1 ? r + GR : r1; /* the next panel's rows */
                const int n_pf = r1 - rn < GR ? (int)(r1 - rn) : GR;
                w_in_range = panel_write(src->w, src->rb, r, nr, nb, panel, src->w + (size_t)rn * src->rb, n_pf);
            }
            for (int i = 0; i < nti; i++) {
                const tile_fn fn = tiles[w_in_range && tok_in_range[i]][base + (i < extra) - 1];
                fn(panel, tok + (size_t)i * nb * TB, nb, out + (int64_t)(c0 + TILE_T0(i)) * out_stride + r, out_stride,
                   mask);
            }
        }
#undef TILE_T0
    }
    return true;
}

bool gemm_mxfp4_matmul(const void *w, int64_t n, int64_t r0, int64_t r1, const uint8_t *act, size_t act_stride,
                       int n_tok, float *out, int64_t out_stride)
{
    if (r0 >= r1 || n_tok < 1 || n % QK_MXFP4 != 0)
        return r0 >= r1 || n_tok < 1;
    const int64_t nb = n / QK_MXFP4;
    const struct mx_src src = {w, (size_t)nb * sizeof(block_mxfp4), NULL, 0};
    return mx_run(&src, nb, r0, r1, act, act_stride, n_tok, out, out_stride);
}

bool gemm_mxfp4_packed_matmul(const uint8_t *packed, int64_t nb, int64_t r0, int64_t r1, const uint8_t *act,
                              size_t act_stride, int n_tok, float *out, int64_t out_stride)
{
    if (r0 >= r1 || n_tok < 1)
        return true;
    const struct mx_src src = {NULL, 0, packed, packed_group_size(nb, PACKED_MXFP4_NIB, PACKED_MXFP4_SC)};
    return mx_run(&src, nb, r0, r1, act, act_stride, n_tok, out, out_stride);
}
#else
bool gemm_mxfp4_matmul(const void *w, int64_t n, int64_t r0, int64_t r1, const uint8_t *act, size_t act_stride,
                       int n_tok, float *out, int64_t out_stride)
{
    (void)w;
    (void)n;
    (void)r0;
    (void)r1;
    (void)act;
    (void)act_stride;
    (void)n_tok;
    (void)out;
    (void)out_stride;
    return false;
}

bool gemm_mxfp4_packed_matmul(const uint8_t *packed, int64_t nb, int64_t r0, int64_t r1, const uint8_t *act,
                              size_t act_stride, int n_tok, float *out, int64_t out_stride)
{
    (void)packed;
    (void)nb;
    (void)r0;
    (void)r1;
    (void)act;
    (void)act_stride;
    (void)n_tok;
    (void)out;
    (void)out_stride;
    return false;
}
#endif
