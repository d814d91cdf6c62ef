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
 * Rows, tokens and super-blocks are cut by the driver gemm_iq.c's GEMM
 * shares (gemm_iq_drive.h: slices of SB_SLICE super-blocks, blocks of 64
 * tokens); this file is the type's part (panel, token bytes, tiles,
 * outputs). Layout as gemm_iq.c's AVX-512 panel: rows in pairs (row 2j in dword
 * lanes 0-7 of a zmm, row 2j + 1 in 8-15), a token's 32 bytes broadcast to
 * both halves. A tile is 2 row pairs x 4 tokens, a super-block's grid lanes
 * then its delta lanes in the same 8 accumulators, so that the 16 float
 * accumulators stay in registers (2 x 8 tokens spilled them: 10 % slower);
 * a full tile is one asm loop (tile_2x4_asm), the others the same steps in
 * C. Per (row pair, token, super-block) that is 8 vpdpbusd + 4 vpdpwssd
 * and the float steps (2 x cvt, 2 x fma, and 1/2 mul: d for 4 tokens a
 * multiply, spread by vshufps); a test build of the C
 * tiles without the dot products still took half the time (float steps,
 * panels, token bytes, output stores), and the float steps are the
 * reference's.
 *
 * Activation bytes are taken as -127..127 (what quantize_row_q8_K writes):
 * a -128 would differ from the reference's sign_epi8, which leaves -(-128)
 * at -128. */
#include "kernels/gemm_iq1.h"

#include <math.h>
#include <string.h>

#include "kernels/gemm_iq_drive.h"
#include "kernels/gemm_kpanel.h"
#include "kernels/quant_internal.h"
#include "kernels/quant_iq1.h"

#ifdef GEMM_IQ_DRIVE
#define GEMM_IQ1 1
#elif defined(GEMM_KPANEL) && !defined(GEMM_KPANEL_512)
/* AVX2: the same panel and token bytes on the K-quant driver
 * (gemm_kpanel.h), with a tile of maddubs and madd (see tile256) */
#define GEMM_IQ1 1
#define GEMM_IQ1_256 1
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
/* Panel bytes per row pair and super-block: 8 sub-blocks of 2 x 32 weight
 * bytes (grid value times scale) from 0, 4 sub-block pairs of 2 x 16 int16
 * delta weights (scale times sign) from P_D, the offset corrections from
 * P_C (-128 x the weight sums, the grid lanes' start: 2 x 8 int32 lanes
 * on AVX-512; on AVX2 2 x 16 int16, one per byte pair of a sub-block,
 * summed over the 8), 2 x 8 copies of the row's d_w from P_W. */
#define P_D 512
#define P_C 768
#define P_W 832
#define PAIR_SB 896
#define Q8K_BYTES 292 /* sizeof(block_q8_K), for the asm */
/* Token bytes per super-block: 256 bytes q + 128, then from T_S4 4 x 16
 * int16 4-sums (sub-block pair m: lane k's sums of sub-blocks 2m, 2m + 1). */
#define T_S4 256
#define TOK_SB 384
#define STR(x) #x
#define XSTR(x) STR(x)

/* Row h (0, 1) of the pair at p: its super-blocks as PAIR_SB blocks (and
 * their d_w to dw unless NULL). */
static void write_row(const void *row, int64_t nbl, uint8_t *p, int h, float *dw)
{
    const block_iq1_m *x = row;
    const __m256i ones8 = _mm256_set1_epi8(1);
    for (int64_t i = 0; i < nbl; i++, p += PAIR_SB) {
        uint16_t sc[4];
        memcpy(sc, x[i].scales, 8);
        const float d = fp16_to_f32(quant_iq1m_d(&x[i]));
        if (dw)
            dw[i] = d;
        _mm256_storeu_ps((float *)(void *)(p + P_W + 32 * h), _mm256_set1_ps(d));
        __m256i w2sum = _mm256_setzero_si256(); /* per byte pair, over the 8 sub-blocks: |.| <= 240 */
        for (int m = 0; m < QK_K / 64; m++) {
            /* int32 l: group l's delta weight (scale times sign) of
             * sub-block 2m in the low int16, of 2m + 1 in the high (in a
             * register: as a uint32_t[4] loaded whole, GCC stored it as two
             * halves, a store-forwarding stall: 28 % of this function) */
            __m128i pk = _mm_setzero_si128();
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
                /* the weights' sums per byte pair (exact: 1 * w pairs) */
                w2sum = _mm256_add_epi16(w2sum, _mm256_maddubs_epi16(ones8, gs));
                /* group l's sign: bit 3 of nib[l] (bits 3, 7 of q0, q1) */
                const __m128i neg = _mm_sub_epi32(
                    _mm_setzero_si128(),
                    _mm_and_si128(_mm_srlv_epi32(_mm_setr_epi32((int)q0, (int)q0, (int)q1, (int)q1), _mm_setr_epi32(3, 7, 3, 7)),
                                  _mm_set1_epi32(1)));
                const __m128i sv = _mm_setr_epi32(s0, s0, s1, s1);
                const __m128i dv = _mm_and_si128(_mm_sub_epi32(_mm_xor_si128(sv, neg), neg), _mm_set1_epi32(0xFFFF));
                pk = _mm_or_si128(pk, e ? _mm_slli_epi32(dv, 16) : dv);
            }
            /* int32 lane k (elements 4k..4k+3) is in group k / 2 */
            _mm256_storeu_si256((__m256i *)(p + P_D + 64 * m + 32 * h),
                                _mm256_setr_m128i(_mm_unpacklo_epi32(pk, pk), _mm_unpackhi_epi32(pk, pk)));
        }
        /* minus 128 * the weight sums: the accumulators' start, per byte
         * pair (AVX2: |128 x 240| fits an int16) or per lane (the pairs'
         * sums, madd by ones: exact) */
#ifdef GEMM_IQ1_256
        const __m256i start = _mm256_sub_epi16(_mm256_setzero_si256(), _mm256_slli_epi16(w2sum, 7));
#else
        const __m256i start = _mm256_sub_epi32(
            _mm256_setzero_si256(), _mm256_slli_epi32(_mm256_madd_epi16(w2sum, _mm256_set1_epi16(1)), 7));
#endif
        _mm256_storeu_si256((__m256i *)(p + P_C + 32 * h), start);
    }
}

/* A token's bytes plus 128 and its 4-sums, TOK_SB bytes per super-block,
 * super-blocks stride bytes apart. */
static void prep_token_to(const block_q8_K *y, int64_t nbl, uint8_t *o, size_t stride)
{
    const __m256i m80 = _mm256_set1_epi8((char)0x80);
    const __m256i ones8 = _mm256_set1_epi8(1), ones16 = _mm256_set1_epi16(1),
                  lo16 = _mm256_set1_epi32(0xffff);
    for (int64_t i = 0; i < nbl; i++, o += stride) {
        for (int s = 0; s < QK_K / 32; s++)
            _mm256_storeu_si256((__m256i *)(void *)(o + 32 * s),
                                _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)(const void *)(y[i].qs + 32 * s)),
                                                 m80));
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

#ifdef GEMM_IQ_DRIVE
static void write_pair_row(gemm_iq_decode_fn decode, const void *row, int64_t nbl, uint8_t *p, int h, float *dw)
{
    (void)decode;
    write_row(row, nbl, p, h, dw);
}

static void prep_token(const block_q8_K *y, int64_t nbl, uint8_t *o)
{
    prep_token_to(y, nbl, o, TOK_SB);
}

/* d_w of row 2j in lanes 0-7, of row 2j + 1 in 8-15 */
static inline __m512 pair_d(float d0, float d1)
{
    return _mm512_castpd_ps(
        _mm512_insertf64x4(_mm512_castps_pd(_mm512_set1_ps(d0)), _mm256_castps_pd(_mm256_set1_ps(d1)), 1));
}

/* A full tile, 2 row pairs (w0, w1: their panels) against 4 tokens st
 * bytes apart from p0 (their prepared bytes) whose d are side by side at
 * yq (4 a super-block), over all nbl super-blocks, as one asm statement: per
 * super-block the grid lanes (vpdpbusd over the 8 sub-blocks, from the
 * offset corrections) in zmm0-7 (pair 0's token t in zmm t, pair 1's in
 * zmm 4 + t), their float step into zmm8-15, the delta lanes (vpdpwssd
 * over the 4 sub-block pairs, from zero) in zmm0-7 again, their float step
 * into zmm16-23; the step is vec_dot's, d = d_act (broadcast) * d_w (the
 * pair's, zmm24-25) and f = fma(d, float(lanes), f), from fi's 16 float
 * accumulators (the slice before's, or zeros). fo gets the 16 float
 * accumulators (grid pair 0 tokens 0-3, pair 1, then delta). GCC 12 copied
 * each accumulator after its dot-product intrinsic and spilled the float
 * ones (and an asm statement takes at most 30 operands). */
// clang-format off
#define IQ1_DOT(op, addr, t, u)                                                                           \
    "vbroadcasti64x4 " addr ", %%zmm30\n\t"                                                              \
    op " %%zmm28, %%zmm30, %%zmm" #t "\n\t"                                                               \
    op " %%zmm29, %%zmm30, %%zmm" #u "\n\t"
#define IQ1_LOOP(op, n, label)                                                                            \
    "mov $" #n ", %[cnt]\n"                                                                               \
    label ":\n\t"                                                                                         \
    "vmovdqu64 (%[w0]), %%zmm28\n\t"                                                                      \
    "vmovdqu64 (%[w1]), %%zmm29\n\t"                                                                      \
    IQ1_DOT(op, "(%[p0])", 0, 4)                                                                          \
    IQ1_DOT(op, "(%[p0],%[st],1)", 1, 5)                                                                  \
    IQ1_DOT(op, "(%[p0],%[st],2)", 2, 6)                                                                  \
    IQ1_DOT(op, "(%[p3])", 3, 7)                                                                          \
    "add $64, %[w0]\n\t"                                                                                  \
    "add $64, %[w1]\n\t"                                                                                  \
    "add $32, %[p0]\n\t"                                                                                  \
    "add $32, %[p3]\n\t"                                                                                  \
    "dec %[cnt]\n\t"                                                                                      \
    "jnz " label "b\n\t"
/* d of the 4 tokens: pair 0's in zmm24, pair 1's in zmm25 (float t of
 * each 128-bit block: token t), from the tokens' d side by side at yq */
#define IQ1_D4                                                                                            \
    "vbroadcastf32x4 (%[yq]), %%zmm26\n\t"                                                                \
    "vmulps %%zmm26, %%zmm24, %%zmm24\n\t"                                                                \
    "vmulps %%zmm26, %%zmm25, %%zmm25\n\t"
/* token t's d spread from them (vshufps runs beside the multiplies) */
#define IQ1_FMA(imm, t, u, ft, fu)                                                                        \
    "vshufps $" #imm ", %%zmm24, %%zmm24, %%zmm26\n\t"                                                   \
    "vshufps $" #imm ", %%zmm25, %%zmm25, %%zmm27\n\t"                                                   \
    "vmovaps %%zmm26, " #t "*128(%[ds])\n\t"                                                              \
    "vmovaps %%zmm27, " #t "*128+64(%[ds])\n\t"                                                           \
    "vcvtdq2ps %%zmm" #t ", %%zmm" #t "\n\t"                                                              \
    "vcvtdq2ps %%zmm" #u ", %%zmm" #u "\n\t"                                                              \
    "vfmadd231ps %%zmm" #t ", %%zmm26, %%zmm" #ft "\n\t"                                                  \
    "vfmadd231ps %%zmm" #u ", %%zmm27, %%zmm" #fu "\n\t"
/* the delta lanes' step with the d the grid lanes' step kept at ds */
#define IQ1_FMA_D(t, u, ft, fu)                                                                           \
    "vcvtdq2ps %%zmm" #t ", %%zmm" #t "\n\t"                                                              \
    "vcvtdq2ps %%zmm" #u ", %%zmm" #u "\n\t"                                                              \
    "vfmadd231ps " #t "*128(%[ds]), %%zmm" #t ", %%zmm" #ft "\n\t"                                        \
    "vfmadd231ps " #t "*128+64(%[ds]), %%zmm" #u ", %%zmm" #fu "\n\t"
#define IQ1_ZERO2(a, b) "vpxord %%zmm" #a ", %%zmm" #a ", %%zmm" #a "\n\tvpxord %%zmm" #b ", %%zmm" #b ", %%zmm" #b "\n\t"
#define IQ1_START(c, a, b, d)                                                                             \
    "vmovdqu64 " XSTR(P_C) "(%[" c "]), %%zmm" #a "\n\t"                                                 \
    "vmovdqa64 %%zmm" #a ", %%zmm" #b "\n\t"                                                              \
    "vmovdqa64 %%zmm" #a ", %%zmm" #d "\n\t"
static void tile_2x4_asm(const uint8_t *w0, const uint8_t *w1, const uint8_t *p0, size_t st, const float *yq,
                         int64_t nbl, const float fi[16][16], float fo[16][16])
{
    const uint8_t *p3 = p0 + 3 * st;
    int cnt;
    __attribute__((aligned(64))) float ds[8][16]; /* d of pair j, token t at 2 t + j */
    __asm__ volatile("vmovups (%[fi]), %%zmm8\n\t"
            "vmovups 64(%[fi]), %%zmm9\n\t"
            "vmovups 128(%[fi]), %%zmm10\n\t"
            "vmovups 192(%[fi]), %%zmm11\n\t"
            "vmovups 256(%[fi]), %%zmm12\n\t"
            "vmovups 320(%[fi]), %%zmm13\n\t"
            "vmovups 384(%[fi]), %%zmm14\n\t"
            "vmovups 448(%[fi]), %%zmm15\n\t"
            "vmovups 512(%[fi]), %%zmm16\n\t"
            "vmovups 576(%[fi]), %%zmm17\n\t"
            "vmovups 640(%[fi]), %%zmm18\n\t"
            "vmovups 704(%[fi]), %%zmm19\n\t"
            "vmovups 768(%[fi]), %%zmm20\n\t"
            "vmovups 832(%[fi]), %%zmm21\n\t"
            "vmovups 896(%[fi]), %%zmm22\n\t"
            "vmovups 960(%[fi]), %%zmm23\n\t"
            "3:\n\t"
            IQ1_START("w0", 0, 1, 2) "vmovdqa64 %%zmm0, %%zmm3\n\t"
            IQ1_START("w1", 4, 5, 6) "vmovdqa64 %%zmm4, %%zmm7\n\t"
            "vmovups " XSTR(P_W) "(%[w0]), %%zmm24\n\t"
            "vmovups " XSTR(P_W) "(%[w1]), %%zmm25\n\t"
            IQ1_LOOP("vpdpbusd", 8, "1")
            IQ1_D4
            IQ1_FMA(0x00, 0, 4, 8, 12)
            IQ1_FMA(0x55, 1, 5, 9, 13)
            IQ1_FMA(0xAA, 2, 6, 10, 14)
            IQ1_FMA(0xFF, 3, 7, 11, 15)
            /* w0, w1 are at P_D now, p0, p3 at T_S4 */
            IQ1_ZERO2(0, 1) IQ1_ZERO2(2, 3) IQ1_ZERO2(4, 5) IQ1_ZERO2(6, 7)
            IQ1_LOOP("vpdpwssd", 4, "2")
            IQ1_FMA_D(0, 4, 16, 20)
            IQ1_FMA_D(1, 5, 17, 21)
            IQ1_FMA_D(2, 6, 18, 22)
            IQ1_FMA_D(3, 7, 19, 23)
            /* the next super-block: w0, w1 at P_C now, p0, p3 at the next one */
            "add $" XSTR(PAIR_SB - P_C) ", %[w0]\n\t"
            "add $" XSTR(PAIR_SB - P_C) ", %[w1]\n\t"
            "add $16, %[yq]\n\t"
            "dec %[nb]\n\t"
            "jnz 3b\n\t"
            "vmovups %%zmm8, (%[fo])\n\t"
            "vmovups %%zmm9, 64(%[fo])\n\t"
            "vmovups %%zmm10, 128(%[fo])\n\t"
            "vmovups %%zmm11, 192(%[fo])\n\t"
            "vmovups %%zmm12, 256(%[fo])\n\t"
            "vmovups %%zmm13, 320(%[fo])\n\t"
            "vmovups %%zmm14, 384(%[fo])\n\t"
            "vmovups %%zmm15, 448(%[fo])\n\t"
            "vmovups %%zmm16, 512(%[fo])\n\t"
            "vmovups %%zmm17, 576(%[fo])\n\t"
            "vmovups %%zmm18, 640(%[fo])\n\t"
            "vmovups %%zmm19, 704(%[fo])\n\t"
            "vmovups %%zmm20, 768(%[fo])\n\t"
            "vmovups %%zmm21, 832(%[fo])\n\t"
            "vmovups %%zmm22, 896(%[fo])\n\t"
            "vmovups %%zmm23, 960(%[fo])\n\t"
            : [cnt] "=&r"(cnt), [nb] "+r"(nbl), [w0] "+r"(w0), [w1] "+r"(w1), [p0] "+r"(p0), [p3] "+r"(p3),
              [yq] "+r"(yq)
            : [st] "r"(st), [fi] "r"(fi), [fo] "r"(fo), [ds] "r"(ds)
            : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11",
              "xmm12", "xmm13", "xmm14", "xmm15", "xmm16", "xmm17", "xmm18", "xmm19", "xmm20", "xmm21", "xmm22",
              "xmm23", "xmm24", "xmm25", "xmm26", "xmm27", "xmm28", "xmm29", "xmm30", "cc", "memory");
}
// clang-format on

/* Row r, token t's output from a tile's accumulators: hsum_float_8(grid)
 * + 1/8 hsum_float_8(delta), as vec_dot (whose compiler, like the
 * reference's, makes that sum one fma). */
static inline float finish_one(float fs[16][16], int r, int t)
{
    return fmaf(hsum_ps(_mm256_loadu_ps(fs[8 + 4 * (r / 2) + t] + 8 * (r % 2))), QUANT_IQ1_DELTA,
                hsum_ps(_mm256_loadu_ps(fs[4 * (r / 2) + t] + 8 * (r % 2))));
}

/* hsum_float_8 of the two rows' 8 lanes in each of 4 vectors (pair 0,
 * pair 1 of one token: fs[t], fs[4 + t]), 16 sums at once in hsum_ps's
 * order: s_i = v_i + v_{i+4}, then (s_0 + s_2) + (s_1 + s_3), the token's
 * row r in float 4 r of the result. */
static inline __m512 hsum4x4(const float *f0, const float *f1)
{
    const __m512 a = _mm512_loadu_ps(f0), b = _mm512_loadu_ps(f1);
    /* each 128-bit block: s of its row (blocks 0, 1: row 2j; 2, 3: 2j + 1) */
    const __m512 sa = _mm512_add_ps(a, _mm512_shuffle_f32x4(a, a, _MM_SHUFFLE(2, 3, 0, 1)));
    const __m512 sb = _mm512_add_ps(b, _mm512_shuffle_f32x4(b, b, _MM_SHUFFLE(2, 3, 0, 1)));
    const __m512 y = _mm512_shuffle_f32x4(sa, sb, _MM_SHUFFLE(2, 0, 2, 0)); /* rows 0, 1, 2, 3 */
    const __m512 y2 = _mm512_add_ps(y, _mm512_permute_ps(y, _MM_SHUFFLE(1, 0, 3, 2)));
    return _mm512_add_ps(y2, _mm512_permute_ps(y2, _MM_SHUFFLE(2, 3, 0, 1)));
}

/* A full tile's 4 rows x 4 tokens of outputs (finish_one's, 16 at once),
 * token t's at o + t * stride. */
static inline void finish_full(float fs[16][16], float *o, int64_t stride)
{
    const __m512i pick = _mm512_setr_epi32(0, 4, 8, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
    for (int t = 0; t < TILE_T; t++) {
        const __m512 g = hsum4x4(fs[t], fs[4 + t]), dl = hsum4x4(fs[8 + t], fs[12 + t]);
        const __m512 r = _mm512_fmadd_ps(dl, _mm512_set1_ps(QUANT_IQ1_DELTA), g);
        _mm_storeu_ps(o + t * stride, _mm512_castps512_ps128(_mm512_permutexvar_ps(pick, r)));
    }
}

/* A tile's outputs (finish_full for a full one) */
static void finish(float fs[16][16], int nr, int nt, float *o, int64_t stride)
{
    if (nt == TILE_T && nr == 4)
        finish_full(fs, o, stride);
    else
        for (int c = 0; c < nt; c++)
            for (int r = 0; r < nr; r++)
                o[c * stride + r] = finish_one(fs, r, c);
}

/* NP row pairs (wp: their panels, dw: the 2 * NP rows' d_w) against NT
 * tokens (a: their prepared bytes, yq: their d side by side), super-
 * blocks [i0, i1): the float accumulators come from fs and go back there
 * (fs[4 j + t]: pair j, token t's grid lanes; fs[8 + 4 j + t] its delta
 * lanes; row 2j in floats 0-7, 2j + 1 in 8-15), so that a tile can run in
 * chunks of super-blocks that stay in L1. Always inlined with constant NP,
 * NT. */
static inline __attribute__((always_inline)) void
tile512(int NP, int NT, const uint8_t *const wp[2], const float *const dw[4], const uint8_t *const a[GEMM_IQ_TILE_MAX],
        const float *yq, int64_t i0, int64_t i1, float fs[16][16], float *o, int64_t stride, int nr)
{
    /* the first slice's state: zeros (loads from a constant, where a memset
     * of fs just before would stall their store forwarding) */
    static const float zero[16][16] __attribute__((aligned(64)));
    const float(*fi)[16] = i0 == 0 ? zero : (const float(*)[16])fs;
    /* the asm tile wants the tokens evenly spaced */
    const size_t st = (size_t)(a[1] - a[0]);
    bool even = NP == 2 && NT == 4;
    for (int t = 2; t < NT; t++)
        even = even && a[t] == a[0] + (size_t)t * st;
    if (even) {
        tile_2x4_asm(wp[0] + i0 * PAIR_SB, wp[1] + i0 * PAIR_SB, a[0] + TOK_SB * i0, st, yq + TILE_T * i0, i1 - i0,
                     fi, fs);
        if (o)
            finish(fs, nr, NT, o, stride);
        return;
    }
    __m512 f1[2][TILE_T], f2[2][TILE_T];
#pragma GCC unroll 2
    for (int j = 0; j < NP; j++)
#pragma GCC unroll 4
        for (int t = 0; t < NT; t++) {
            f1[j][t] = _mm512_loadu_ps(fi[4 * j + t]);
            f2[j][t] = _mm512_loadu_ps(fi[8 + 4 * j + t]);
        }
    for (int64_t i = i0; i < i1; i++) {
        __m512i acc[2][TILE_T], w[2];
        __m512 dwv[2];
#pragma GCC unroll 2
        for (int j = 0; j < NP; j++) {
            dwv[j] = pair_d(dw[2 * j][i], dw[2 * j + 1][i]);
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
                const __m512i at =
                    _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(a[t] + TOK_SB * i + 32 * b)));
#pragma GCC unroll 2
                for (int j = 0; j < NP; j++)
                    acc[j][t] = _mm512_dpbusd_epi32(acc[j][t], at, w[j]);
            }
        }
#pragma GCC unroll 2
        for (int j = 0; j < NP; j++)
#pragma GCC unroll 4
            for (int t = 0; t < NT; t++) { /* d = d_act * d_w, one product as vec_dot's */
                f1[j][t] = _mm512_fmadd_ps(_mm512_mul_ps(dwv[j], _mm512_set1_ps(yq[TILE_T * i + t])),
                                           _mm512_cvtepi32_ps(acc[j][t]), f1[j][t]);
                acc[j][t] = _mm512_setzero_si512();
            }
        for (int m = 0; m < QK_K / 64; m++) {
#pragma GCC unroll 2
            for (int j = 0; j < NP; j++)
                w[j] = _mm512_loadu_si512(wp[j] + i * PAIR_SB + P_D + 64 * m);
#pragma GCC unroll 4
            for (int t = 0; t < NT; t++) {
                const __m512i s4 = _mm512_broadcast_i64x4(
                    _mm256_loadu_si256((const __m256i *)(a[t] + TOK_SB * i + T_S4 + 32 * m)));
#pragma GCC unroll 2
                for (int j = 0; j < NP; j++)
                    acc[j][t] = _mm512_dpwssd_epi32(acc[j][t], s4, w[j]);
            }
        }
#pragma GCC unroll 2
        for (int j = 0; j < NP; j++)
#pragma GCC unroll 4
            for (int t = 0; t < NT; t++)
                f2[j][t] = _mm512_fmadd_ps(_mm512_mul_ps(dwv[j], _mm512_set1_ps(yq[TILE_T * i + t])),
                                           _mm512_cvtepi32_ps(acc[j][t]), f2[j][t]);
    }
#pragma GCC unroll 2
    for (int j = 0; j < NP; j++)
#pragma GCC unroll 4
        for (int t = 0; t < NT; t++) {
            _mm512_storeu_ps(fs[4 * j + t], f1[j][t]);
            _mm512_storeu_ps(fs[8 + 4 * j + t], f2[j][t]);
        }
    if (o)
        finish(fs, nr, NT, o, stride);
}

#define TILE_FN(np, nt)                                                                                      \
    static void tile_##np##_##nt(const uint8_t *const wp[2], const float *const dw[4],                       \
                                 const uint8_t *const a[GEMM_IQ_TILE_MAX], const float *yq, int64_t i0,      \
                                 int64_t i1, float fs[16][16], float *o, int64_t stride, int nr, float scale) \
    {                                                                                                        \
        (void)scale;                                                                                         \
        tile512(np, nt, wp, dw, a, yq, i0, i1, fs, o, stride, nr);                                           \
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
static const gemm_iq_tile_fn tiles[2][GEMM_IQ_TILE_MAX] = {
    {tile_1_1, tile_1_2, tile_1_3, tile_1_4},
    {tile_2_1, tile_2_2, tile_2_3, tile_2_4},
};

/* Slices of SB_SLICE super-blocks keep a row group's panel (14 KB a slice)
 * in L1 while a block's tiles of 4 rows x 4 tokens run over it: 22
 * super-blocks a row (2048 x 5632) did not fit, 10 % slower. */
#define SB_SLICE 8

static const struct gemm_iq_kind iq1_m_kind = {
    .tile_t = TILE_T,
    .pair_sb = PAIR_SB,
    .tok_sb = TOK_SB,
    .tok_blk = 64,
    .sb_slice = SB_SLICE,
    .write_row = write_pair_row,
    .prep = prep_token,
    .tiles = tiles,
};
#endif /* GEMM_IQ_DRIVE */

#ifdef GEMM_IQ1_256
/* The tile's token bytes: its 4 tokens' TOK_SB bytes per super-block. */
#define TX_SB (4 * TOK_SB)

static void write_pair_row256(const void *row, int64_t nbl, uint8_t *p, int h)
{
    write_row(row, nbl, p, h, NULL);
}

static void prep_tokens256(const block_q8_K *const y[TILE_T], int64_t nbl, uint8_t *tx)
{
    for (int t = 0; t < TILE_T; t++)
        prep_token_to(y[t], nbl, tx + TOK_SB * t, TX_SB);
}

/* 2 NP rows against TILE_T tokens, super-blocks [i0, i1): a token pair
 * against a row pair at a time (both row pairs of the tile take a token
 * pair's bytes while they are in L1), the 4 grid float accumulators of 2
 * rows x 2 tokens in registers through the super-blocks (in st between
 * slices), where every tile's float state was read and written per
 * super-block: gemm_iq_matmul 2048 x 2048, 512 tokens, 15.8 -> 15.3
 * cycles a row x token x super-block. The 4 delta accumulators wait in
 * memory (ev, one load, fma and store each a super-block) so that a
 * sub-block's weights fit the registers: loaded once for both tokens
 * where each maddubs took them as a memory operand (the loads bounded the
 * tile: 11.1 -> 10.0 cycles with its data in L1, 1.5-2.5 % in the GEMM).
 * Per super-block one asm statement (IQ1_SB; GCC passed
 * int16 sums through the stack): the delta lanes, a madd of the row's
 * (scale * sign) int16 pairs against the token's 4-sums per sub-block
 * pair, as the 512-bit tile's vpdpwssd; the grid lanes, maddubs of a
 * token's bytes + 128 (unsigned) against the row's weight bytes (signed,
 * |.| <= 15: a pair's sum |.| <= 7650), the int16 sums of all 8 sub-blocks added
 * from the row's start (-128 x its weight sums per byte pair): the offset
 * sums wrap in 16 bits, the exact ones (|.| <= 8 x 2 x 127 x 15 = 30480)
 * fit, so after the 8th they are exact; then one madd by ones to the int32
 * lanes: 8 maddubs, 8 adds and 1 madd a super-block where vec_dot takes 8
 * x (maddubs, madd). Then vec_dot's float steps, d = y.d * d_w (the
 * panel's 8 copies of d_w times the token's y.d: the same product) from a
 * small buffer. */
// clang-format off
#define IQ1_G(B)                                                                                                  \
    "vmovdqu 32*" #B "(%[x0]), %%ymm13\n\tvmovdqu 32*" #B "(%[x1]), %%ymm14\n\t"                                  \
    "vmovdqu 64*" #B "(%[pb]), %%ymm15\n\t"                                                                       \
    "vpmaddubsw %%ymm15, %%ymm13, %%ymm8\n\tvpaddw %%ymm8, %%ymm9, %%ymm9\n\t"                                    \
    "vpmaddubsw %%ymm15, %%ymm14, %%ymm15\n\tvpaddw %%ymm15, %%ymm11, %%ymm11\n\t"                                \
    "vmovdqu 64*" #B "+32(%[pb]), %%ymm15\n\t"                                                                    \
    "vpmaddubsw %%ymm15, %%ymm13, %%ymm8\n\tvpaddw %%ymm8, %%ymm10, %%ymm10\n\t"                                   \
    "vpmaddubsw %%ymm15, %%ymm14, %%ymm15\n\tvpaddw %%ymm15, %%ymm12, %%ymm12\n\t"
/* one token's delta lanes of both rows into ymm R0, R1 (m = 0 sets them) */
#define IQ1_D(X, R0, R1)                                                                                          \
    "vmovdqu " XSTR(T_S4) "(%[" X "]), %%ymm13\n\t"                                                               \
    "vpmaddwd " XSTR(P_D) "(%[pb]), %%ymm13, %%ymm" R0 "\n\t"                                                    \
    "vpmaddwd " XSTR(P_D) "+32(%[pb]), %%ymm13, %%ymm" R1 "\n\t"                                                 \
    IQ1_DM2(1, X, R0, R1) IQ1_DM2(2, X, R0, R1) IQ1_DM2(3, X, R0, R1)
#define IQ1_DM2(M, X, R0, R1)                                                                                     \
    "vmovdqu " XSTR(T_S4) "+32*" #M "(%[" X "]), %%ymm13\n\t"                                                    \
    "vpmaddwd " XSTR(P_D) "+64*" #M "(%[pb]), %%ymm13, %%ymm15\n\tvpaddd %%ymm15, %%ymm" R0 ", %%ymm" R0 "\n\t" \
    "vpmaddwd " XSTR(P_D) "+64*" #M "+32(%[pb]), %%ymm13, %%ymm15\n\tvpaddd %%ymm15, %%ymm" R1 ", %%ymm" R1 "\n\t"
/* a delta float accumulator (in ev) gets its fma */
#define IQ1_E(O, R)                                                                                               \
    "vmovaps " #O "(%[e]), %%ymm13\n\tvfmadd231ps " #O "(%[d]), %%ymm" R ", %%ymm13\n\t"                          \
    "vmovaps %%ymm13, " #O "(%[e])\n\t"
#define IQ1_SB                                                                                                    \
    IQ1_D("x0", "9", "10") IQ1_D("x1", "11", "12")                                                                \
    "vcvtdq2ps %%ymm9, %%ymm9\n\tvcvtdq2ps %%ymm10, %%ymm10\n\tvcvtdq2ps %%ymm11, %%ymm11\n\t"                    \
    "vcvtdq2ps %%ymm12, %%ymm12\n\t"                                                                              \
    IQ1_E(0, "9") IQ1_E(32, "10") IQ1_E(64, "11") IQ1_E(96, "12")                                               \
    "vmovdqu " XSTR(P_C) "(%[pb]), %%ymm9\n\tvmovdqu " XSTR(P_C) "+32(%[pb]), %%ymm10\n\t"                        \
    "vmovdqa %%ymm9, %%ymm11\n\tvmovdqa %%ymm10, %%ymm12\n\t"                                                    \
    IQ1_G(0) IQ1_G(1) IQ1_G(2) IQ1_G(3) IQ1_G(4) IQ1_G(5) IQ1_G(6) IQ1_G(7)                                       \
    "vpmaddwd %[ones], %%ymm9, %%ymm9\n\tvpmaddwd %[ones], %%ymm10, %%ymm10\n\t"                                 \
    "vpmaddwd %[ones], %%ymm11, %%ymm11\n\tvpmaddwd %[ones], %%ymm12, %%ymm12\n\t"                               \
    "vcvtdq2ps %%ymm9, %%ymm9\n\tvcvtdq2ps %%ymm10, %%ymm10\n\tvcvtdq2ps %%ymm11, %%ymm11\n\t"                    \
    "vcvtdq2ps %%ymm12, %%ymm12\n\t"                                                                              \
    "vfmadd231ps (%[d]), %%ymm9, %[g00]\n\tvfmadd231ps 32(%[d]), %%ymm10, %[g10]\n\t"                            \
    "vfmadd231ps 64(%[d]), %%ymm11, %[g01]\n\tvfmadd231ps 96(%[d]), %%ymm12, %[g11]\n\t"
// clang-format on

static inline __attribute__((always_inline)) void tile256(int NP, const uint8_t *const wp[2],
                                                         const block_q8_K *const y[TILE_T], const uint8_t *tx,
                                                         const float *yd, int64_t i0, int64_t i1, int64_t nbl,
                                                         __m256 *st, float *o, int64_t os)
{
    (void)y;
    const __m256i ones16 = _mm256_set1_epi16(1);
    __m256 dv[4] __attribute__((aligned(32))); /* d of (row h, token c) at 2c + h */
#pragma GCC unroll 1
    for (int u = 0; u < TILE_T; u += 2)
#pragma GCC unroll 1
        for (int p = 0; p < NP; p++) {
            /* st: grid lanes of row r, token t at 4 r + t, delta lanes at 16 + 4 r + t */
            __m256 *sg = st + TILE_T * 2 * p + u, *se = sg + 4 * TILE_T;
            /* the delta lanes' accumulators in memory (ev: rows 0, 1 of
             * token 0, then of token 1), so that the weights fit the
             * registers */
            __m256 g00, g10, g01, g11, ev[4] __attribute__((aligned(32)));
            if (i0 == 0) {
                g00 = g10 = g01 = g11 = ev[0] = ev[1] = ev[2] = ev[3] = _mm256_setzero_ps();
            } else {
                g00 = sg[0], g01 = sg[1], g10 = sg[TILE_T], g11 = sg[TILE_T + 1];
                ev[0] = se[0], ev[2] = se[1], ev[1] = se[TILE_T], ev[3] = se[TILE_T + 1];
            }
            for (int64_t i = i0; i < i1; i++) {
                const uint8_t *pb = wp[p] + i * PAIR_SB, *x0 = tx + i * TX_SB + TOK_SB * u, *x1 = x0 + TOK_SB;
                /* the 4 products d_act * d_w in one multiply (float 2c + h
                 * of each 128-bit half: token c, row h), each then spread
                 * to its 8 lanes by a vshufps, which runs beside the
                 * multiplies where a vmulps each took their pipes */
                const __m256 y2 = _mm256_castpd_ps(_mm256_broadcast_sd((const double *)(const void *)(yd + TILE_T * i + u)));
                const __m256 d4 = _mm256_mul_ps(
                    _mm256_unpacklo_ps(y2, y2),
                    _mm256_unpacklo_ps(_mm256_loadu_ps((const float *)(const void *)(pb + P_W)),
                                       _mm256_loadu_ps((const float *)(const void *)(pb + P_W + 32))));
                spread4_ps256(d4, dv);
                __asm__(IQ1_SB
                        : [g00] "+x"(g00), [g10] "+x"(g10), [g01] "+x"(g01), [g11] "+x"(g11)
                        : [pb] "r"(pb), [x0] "r"(x0), [x1] "r"(x1), [d] "r"(dv), [e] "r"(ev), [ones] "m"(ones16)
                        : "xmm8", "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15", "memory");
            }
            if (i1 < nbl) {
                sg[0] = g00, sg[1] = g01, sg[TILE_T] = g10, sg[TILE_T + 1] = g11;
                se[0] = ev[0], se[1] = ev[2], se[TILE_T] = ev[1], se[TILE_T + 1] = ev[3];
                continue;
            }
            /* hsum_float_8(grid) + 1/8 hsum_float_8(delta), one fma as vec_dot's */
            const int r = 2 * p;
            o[u * os + r] = fmaf(hsum_ps(ev[0]), QUANT_IQ1_DELTA, hsum_ps(g00));
            o[u * os + r + 1] = fmaf(hsum_ps(ev[1]), QUANT_IQ1_DELTA, hsum_ps(g10));
            o[(u + 1) * os + r] = fmaf(hsum_ps(ev[2]), QUANT_IQ1_DELTA, hsum_ps(g01));
            o[(u + 1) * os + r + 1] = fmaf(hsum_ps(ev[3]), QUANT_IQ1_DELTA, hsum_ps(g11));
        }
}

GEMM_KP_TILES(tile256)
#undef IQ1_DM2
#undef IQ1_D
#undef IQ1_G
#undef IQ1_SB

static const struct gemm_kp iq1_m_kp = {
    .pair_sb = PAIR_SB,
    .tx_bytes = TX_SB,
    .n_st = 8 * TILE_T,
    .write_row = write_pair_row256,
    .prep = prep_tokens256,
    .tile2 = tile_pairs2,
    .tile1 = tile_pairs1,
    .side = GEMM_KP_SIDE_D,
};
#endif /* GEMM_IQ1_256 */
#endif /* GEMM_IQ1 */

const struct gemm_iq_kind *gemm_iq1_kind(enum tensor_type type)
{
#ifdef GEMM_IQ_DRIVE
    return type == TENSOR_TYPE_IQ1_M ? &iq1_m_kind : NULL;
#else
    (void)type;
    return NULL;
#endif
}

bool gemm_iq1_matmul256(enum tensor_type type, const uint8_t *wd, size_t rs, int64_t nbl, int64_t r0, int64_t r1,
                        const uint8_t *act, size_t act_stride, int n_tok, float *out, int64_t out_stride)
{
#ifdef GEMM_IQ1_256
    return type == TENSOR_TYPE_IQ1_M &&
           gemm_kp_rows(&iq1_m_kp, nbl, wd, rs, r0, r1, act, act_stride, n_tok, out, out_stride);
#else
    (void)type, (void)wd, (void)rs, (void)nbl, (void)r0, (void)r1, (void)act, (void)act_stride, (void)n_tok;
    (void)out, (void)out_stride;
    return false;
#endif
}
