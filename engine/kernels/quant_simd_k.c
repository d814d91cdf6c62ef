/* AVX2 dots of the K-quants against Q8_K activations, in ggml's x86
 * vec_dot order (lanes, accumulators and where the min terms go), as
 * 1-row x 4-activation tiles for Q3_K..Q6_K whose 1-activation instance is
 * vec_dot (on AVX-512 the Q5_K and Q6_K matvecs and batches run through
 * quant_kfew.h instead). The forward pass runs Q6_K through these: the
 * reference does not repack it. */
#include "kernels/quant_internal.h"
#include "kernels/quant_kfew.h"
#include "kernels/packed_q6_K.h"

#if defined(QUANT_HAVE_AVX2)

/* ---- K-quants against Q8_K ---- */

/* The 8 scales (bytes 0-7) and 8 mins (bytes 8-15) of a q4_K/q5_K block,
 * unpacked from get_scale_min_k4's layout four at a time. */
static inline __m128i k4_scales_mins(const uint8_t *s)
{
    uint32_t u[3], a[4];
    memcpy(u, s, 12);
    const uint32_t kmask1 = 0x3f3f3f3f, kmask2 = 0x0f0f0f0f, kmask3 = 0x03030303;
    a[0] = u[0] & kmask1;                                         /* scales 0-3 */
    a[1] = (u[2] & kmask2) | (((u[0] >> 6) & kmask3) << 4);        /* scales 4-7 */
    a[2] = u[1] & kmask1;                                         /* mins 0-3 */
    a[3] = ((u[2] >> 4) & kmask2) | (((u[1] >> 6) & kmask3) << 4); /* mins 4-7 */
    return _mm_loadu_si128((const __m128i *)a);
}

/* sum_j mins[j] * (bsums[2j] + bsums[2j+1]) as 4 int32 partial sums. */
static inline __m128i k4_min_sums(__m128i scales_mins, const int16_t *bsums)
{
    __m256i b = _mm256_loadu_si256((const __m256i *)bsums);
    __m128i pairs = _mm_hadd_epi16(_mm256_castsi256_si128(b), _mm256_extracti128_si256(b, 1));
    __m128i mins16 = _mm_cvtepu8_epi16(_mm_srli_si128(scales_mins, 8));
    return _mm_madd_epi16(mins16, pairs);
}

/* u8 x s8 dot of 32 elements times a 16-bit scale, as 8 int32 partial sums:
 * maddubs pairs (|sum| <= 2 * 31 * 127 fits 16 bits), madd with the scale. */
static inline __m256i dot32_scaled(__m256i u, const int8_t *q8, int scale)
{
    __m256i p16 = _mm256_maddubs_epi16(u, _mm256_loadu_si256((const __m256i *)q8));
    return _mm256_madd_epi16(p16, _mm256_set1_epi16((short)scale));
}

/* Byte shuffles that spread scale bytes 2k and 2k+1 over 8 bytes each. */
static const uint8_t k_scale_pair_shuffle[8][16] = {
    {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1},
    {2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3},
    {4, 4, 4, 4, 4, 4, 4, 4, 5, 5, 5, 5, 5, 5, 5, 5},
    {6, 6, 6, 6, 6, 6, 6, 6, 7, 7, 7, 7, 7, 7, 7, 7},
    {8, 8, 8, 8, 8, 8, 8, 8, 9, 9, 9, 9, 9, 9, 9, 9},
    {10, 10, 10, 10, 10, 10, 10, 10, 11, 11, 11, 11, 11, 11, 11, 11},
    {12, 12, 12, 12, 12, 12, 12, 12, 13, 13, 13, 13, 13, 13, 13, 13},
    {14, 14, 14, 14, 14, 14, 14, 14, 15, 15, 15, 15, 15, 15, 15, 15},
};

/* 16-bit scale vector for chunk k: signed scale bytes 2k (low half), 2k+1 (high half). */
static inline __m256i scale_pair_s8(__m128i scales, int k)
{
    return _mm256_cvtepi8_epi16(_mm_shuffle_epi8(scales, _mm_loadu_si128((const __m128i *)k_scale_pair_shuffle[k])));
}

/* sc * (q * y) per byte pair with the unsigned quants (0..63), summed to 8
 * lanes as the reference forms them; q6_offset then takes 32 * sc * bsum off
 * each lane. The lanes (not just the total) match, so the float sums match. */
static inline __m256i q6_chunk(__m256i q, const int8_t *q8, __m256i scv)
{
    __m256i y8 = _mm256_loadu_si256((const __m256i *)q8);
    return _mm256_madd_epi16(scv, _mm256_maddubs_epi16(q, y8));
}

/* 32 * (sc[2m] * bsum[2m] + sc[2m+1] * bsum[2m+1]) in lane m. */
static inline __m256i q6_offset(__m128i scales, const int16_t *bsums)
{
    const __m256i b = _mm256_loadu_si256((const __m256i *)bsums);
    return _mm256_slli_epi32(_mm256_madd_epi16(b, _mm256_cvtepi8_epi16(scales)), 5);
}

float quant_avx2_dot_q2_K(int64_t n, const void *w, const void *act)
{
    const block_q2_K *x = w;
    const block_q8_K *y = act;
    const __m256i m3 = _mm256_set1_epi8(3);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / QK_K; i++) {
        const uint8_t *sc = x[i].scales;
        const float d = y[i].d * fp16_to_f32(x[i].d), dmin = -y[i].d * fp16_to_f32(x[i].dmin);
        __m128i sc8 = _mm_loadu_si128((const __m128i *)sc);
        __m128i scales4 = _mm_and_si128(sc8, _mm_set1_epi8(0x0F));
        __m256i mins16 = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(sc8, 4), _mm_set1_epi8(0x0F)));
        __m256i prod = _mm256_madd_epi16(mins16, _mm256_loadu_si256((const __m256i *)y[i].bsums));
        /* mins first, into the same accumulator, as the reference does */
        acc = _mm256_fmadd_ps(_mm256_set1_ps(dmin), _mm256_cvtepi32_ps(prod), acc);
        __m256i sumi = _mm256_setzero_si256();
        for (int h = 0; h < 2; h++) {
            __m256i q2 = _mm256_loadu_si256((const __m256i *)(x[i].qs + 32 * h));
            const int8_t *q8 = y[i].qs + 128 * h;
            for (int j = 0; j < 4; j++) {
                __m256i q = _mm256_and_si256(q2, m3);
                q2 = _mm256_srli_epi16(q2, 2);
                __m256i p16 = _mm256_maddubs_epi16(q, _mm256_loadu_si256((const __m256i *)(q8 + 32 * j)));
                sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(scale_pair_s8(scales4, 4 * h + j), p16));
            }
        }
        acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(sumi), acc);
    }
    return hsum_ps(acc);
}

/* One weight row against nt (1 or 4) activations, in ggml's vec_dot order
 * for each: the row's values are built once per block and used nt times.
 * vec_dot is the nt = 1 instance, so the tiles cannot drift from it. The
 * same holds for q5_K_rows, q3_K_rows and q6_K_rows below. */
static inline __attribute__((always_inline)) void q4_K_rows(int64_t n, const void *w, const void *const act[4],
                                                          int nt, float out[4])
{
    const block_q4_K *x = w;
    const block_q8_K *y[4] = {act[0], act[1], act[2], act[3]};
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    __m256 acc[4];
    __m128 accm[4];
    for (int c = 0; c < nt; c++) {
        acc[c] = _mm256_setzero_ps();
        accm[c] = _mm_setzero_ps();
    }
    for (int64_t i = 0; i < n / QK_K; i++) {
        const __m128i sm = k4_scales_mins(x[i].scales);
        uint8_t sc[16];
        _mm_storeu_si128((__m128i *)sc, sm);
        const float xd = fp16_to_f32(x[i].d), xdmin = fp16_to_f32(x[i].dmin);
        __m256i lo[4], hi[4];
        for (int k = 0; k < 4; k++) {
            __m256i q4 = _mm256_loadu_si256((const __m256i *)(x[i].qs + 32 * k));
            lo[k] = _mm256_and_si256(q4, m4);
            hi[k] = _mm256_and_si256(_mm256_srli_epi16(q4, 4), m4);
        }
        _Pragma("GCC unroll 4") for (int c = 0; c < nt; c++)
        {
            const block_q8_K *yc = y[c] + i;
            const float d = yc->d * xd, dmin = yc->d * xdmin;
            accm[c] = _mm_fmadd_ps(_mm_set1_ps(dmin), _mm_cvtepi32_ps(k4_min_sums(sm, yc->bsums)), accm[c]);
            __m256i sumi = _mm256_setzero_si256();
            for (int k = 0; k < 4; k++) {
                sumi = _mm256_add_epi32(sumi, dot32_scaled(lo[k], yc->qs + 64 * k, sc[2 * k]));
                sumi = _mm256_add_epi32(sumi, dot32_scaled(hi[k], yc->qs + 64 * k + 32, sc[2 * k + 1]));
            }
            acc[c] = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(sumi), acc[c]);
        }
    }
    for (int c = 0; c < nt; c++) {
        __m128 m = _mm_add_ps(accm[c], _mm_movehl_ps(accm[c], accm[c]));
        m = _mm_add_ss(m, _mm_movehdup_ps(m));
        out[c] = hsum_ps(acc[c]) - _mm_cvtss_f32(m);
    }
}

QUANT_ROWS_KERNELS(q4_K)

/* vpshufb indices that spread 16-bit scale s (of 8, in both 128-bit
 * halves) over all 16 words: ggml's get_scale_shuffle_k4(s). */
static const uint8_t k_k4_scale_shuffle[8][32] = {
#define K4S(s) 2 * (s), 2 * (s) + 1, 2 * (s), 2 * (s) + 1, 2 * (s), 2 * (s) + 1, 2 * (s), 2 * (s) + 1, \
                2 * (s), 2 * (s) + 1, 2 * (s), 2 * (s) + 1, 2 * (s), 2 * (s) + 1, 2 * (s), 2 * (s) + 1
    {K4S(0), K4S(0)}, {K4S(1), K4S(1)}, {K4S(2), K4S(2)}, {K4S(3), K4S(3)},
    {K4S(4), K4S(4)}, {K4S(5), K4S(5)}, {K4S(6), K4S(6)}, {K4S(7), K4S(7)},
#undef K4S
};

/* Q5_K (ggml_vec_dot_q5_K_q8_K's AVX2 body): chunk pair by chunk pair, the
 * row's two 5-bit vectors and their scale vectors are built once and used
 * for every token, scales by vpshufb as the reference (GCC kept 8 scalar
 * broadcasts and the accumulators in memory when all 8 chunks were held
 * at once: a third of the Q6_K loop's speed). Each token's lanes, its min
 * total ((p0 + p1) + (p2 + p3), exact) and its scalar chain summs =
 * fma(dmin, total, summs) are the reference's; the 4 tokens' chains run in
 * the 4 lanes of one register. */
static inline __attribute__((always_inline)) void q5_K_rows_pf(int64_t n, const void *w, const void *const act[4],
                                                             int nt, float out[4], const char *pf, size_t pf_step)
{
    const block_q5_K *x = w;
    const block_q8_K *y[4] = {act[0], act[1], act[2], act[3]};
    const __m256i m4 = _mm256_set1_epi8(0x0F), bit = _mm256_set1_epi8(0x10);
    __m256 acc[4];
    __m128 summs = _mm_setzero_ps();
    _Pragma("GCC unroll 4") for (int c = 0; c < nt; c++) acc[c] = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / QK_K; i++) {
        quant_prefetch_step(pf, i, pf_step);
        const __m128i sm = k4_scales_mins(x[i].scales);
        const __m256i sc16 = _mm256_cvtepu8_epi16(sm); /* words 0-7 scales, 8-15 mins */
        const __m256i scales = _mm256_permute2x128_si256(sc16, sc16, 0x00);
        const float xd = fp16_to_f32(x[i].d), xdmin = fp16_to_f32(x[i].dmin);
        __m256i hbits = _mm256_loadu_si256((const __m256i *)x[i].qh);
        __m256i sumi[4];
        _Pragma("GCC unroll 4") for (int c = 0; c < nt; c++) sumi[c] = _mm256_setzero_si256();
        _Pragma("GCC unroll 4") for (int k = 0; k < 4; k++)
        {
            const __m256i q4 = _mm256_loadu_si256((const __m256i *)(x[i].qs + 32 * k));
            const __m256i lo = _mm256_or_si256(_mm256_and_si256(q4, m4), _mm256_and_si256(_mm256_slli_epi16(hbits, 4), bit));
            const __m256i hi = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(q4, 4), m4),
                                               _mm256_and_si256(_mm256_slli_epi16(hbits, 3), bit));
            hbits = _mm256_srli_epi16(hbits, 2);
            const __m256i s0 = _mm256_shuffle_epi8(scales, _mm256_loadu_si256((const __m256i *)k_k4_scale_shuffle[2 * k]));
            const __m256i s1 =
                _mm256_shuffle_epi8(scales, _mm256_loadu_si256((const __m256i *)k_k4_scale_shuffle[2 * k + 1]));
            _Pragma("GCC unroll 4") for (int c = 0; c < nt; c++)
            {
                const int8_t *q8 = y[c][i].qs + 64 * k;
                const __m256i p0 = _mm256_madd_epi16(s0, _mm256_maddubs_epi16(lo, _mm256_loadu_si256((const __m256i *)q8)));
                const __m256i p1 =
                    _mm256_madd_epi16(s1, _mm256_maddubs_epi16(hi, _mm256_loadu_si256((const __m256i *)(q8 + 32))));
                sumi[c] = _mm256_add_epi32(sumi[c], _mm256_add_epi32(p0, p1));
            }
        }
        /* the min totals of the nt tokens side by side: lane c is token c's,
         * lanes past nt unread (zeros: formed for token 0 they took a third
         * of a one-token matvec's instructions besides the unpacking); one
         * token's alone without the hadds (with zeros in them 4 % slower) */
        __m128i tot;
        if (nt == 1) {
            const __m128i p = k4_min_sums(sm, y[0][i].bsums);
            const __m128i h = _mm_add_epi32(p, _mm_unpackhi_epi64(p, p));
            tot = _mm_add_epi32(h, _mm_shuffle_epi32(h, 1));
        } else {
            __m128i prod[4];
            _Pragma("GCC unroll 4") for (int c = 0; c < 4; c++) prod[c] =
                c < nt ? k4_min_sums(sm, y[c][i].bsums) : _mm_setzero_si128();
            tot = _mm_hadd_epi32(_mm_hadd_epi32(prod[0], prod[1]), _mm_hadd_epi32(prod[2], prod[3]));
        }
        const __m128 yd = _mm_setr_ps(y[0][i].d, y[nt > 1 ? 1 : 0][i].d, y[nt > 2 ? 2 : 0][i].d, y[nt > 3 ? 3 : 0][i].d);
        /* dmin = -y.d * x.dmin, as the reference's scalar */
        const __m128 dmin = _mm_mul_ps(_mm_xor_ps(yd, _mm_set1_ps(-0.0f)), _mm_set1_ps(xdmin));
        summs = _mm_fmadd_ps(dmin, _mm_cvtepi32_ps(tot), summs);
        _Pragma("GCC unroll 4") for (int c = 0; c < nt; c++)
        {
            const float d = y[c][i].d * xd;
            acc[c] = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(sumi[c]), acc[c]);
        }
    }
    float sm4[4];
    _mm_storeu_ps(sm4, summs);
    _Pragma("GCC unroll 4") for (int c = 0; c < nt; c++) out[c] = hsum_ps(acc[c]) + sm4[c];
}

static inline __attribute__((always_inline)) void q5_K_rows(int64_t n, const void *w, const void *const act[4],
                                                          int nt, float out[4])
{
    q5_K_rows_pf(n, w, act, nt, out, NULL, 0);
}

QUANT_ROWS_KERNELS(q5_K)

/* Q3_K: values, high-bit offsets and scale vectors are built once per
 * half block. */
static inline __attribute__((always_inline)) void q3_K_rows(int64_t n, const void *w, const void *const act[4],
                                                          int nt, float out[4])
{
    const block_q3_K *x = w;
    const block_q8_K *y[4] = {act[0], act[1], act[2], act[3]};
    const __m256i m3 = _mm256_set1_epi8(3), zero = _mm256_setzero_si256(), four = _mm256_set1_epi8(4);
    __m256 acc[4];
    for (int c = 0; c < nt; c++)
        acc[c] = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / QK_K; i++) {
        int8_t sc[16];
        quant_q3k_scales(x[i].scales, sc);
        const __m128i scales = _mm_loadu_si128((const __m128i *)sc);
        const __m256i hm = _mm256_loadu_si256((const __m256i *)x[i].hmask);
        __m256i sumi[4];
        for (int c = 0; c < nt; c++)
            sumi[c] = _mm256_setzero_si256();
        for (int h = 0; h < 2; h++) {
            __m256i q2 = _mm256_loadu_si256((const __m256i *)(x[i].qs + 32 * h));
            __m256i lo[4], hb[4], scv[4];
            _Pragma("GCC unroll 4") for (int j = 0; j < 4; j++)
            {
                lo[j] = _mm256_and_si256(q2, m3);
                q2 = _mm256_srli_epi16(q2, 2);
                const __m256i b = _mm256_and_si256(hm, _mm256_set1_epi8((char)(1 << (4 * h + j))));
                hb[j] = _mm256_and_si256(_mm256_cmpeq_epi8(b, zero), four);
                scv[j] = scale_pair_s8(scales, 4 * h + j);
            }
            _Pragma("GCC unroll 4") for (int c = 0; c < nt; c++)
            {
                const int8_t *q8 = y[c][i].qs + 128 * h;
                _Pragma("GCC unroll 4") for (int j = 0; j < 4; j++)
                {
                    const __m256i y8 = _mm256_loadu_si256((const __m256i *)(q8 + 32 * j));
                    const __m256i p16 =
                        _mm256_sub_epi16(_mm256_maddubs_epi16(lo[j], y8), _mm256_maddubs_epi16(hb[j], y8));
                    sumi[c] = _mm256_add_epi32(sumi[c], _mm256_madd_epi16(scv[j], p16));
                }
            }
        }
        for (int c = 0; c < nt; c++)
            acc[c] = _mm256_fmadd_ps(_mm256_set1_ps(y[c][i].d * fp16_to_f32(x[i].d)), _mm256_cvtepi32_ps(sumi[c]),
                                     acc[c]);
    }
    for (int c = 0; c < nt; c++)
        out[c] = hsum_ps(acc[c]);
}

QUANT_ROWS_KERNELS(q3_K)

/* pshufb masks for Q6_K's scale vectors: in each 128-bit lane of a vector
 * holding a half block's 8 scales as int16, chunk k's scale 2k (low lane)
 * or 2k+1 (high lane) spread over the lane, as scale_pair_s8 gives it from
 * bytes. Widening the 16 scales once per block and shuffling once per chunk
 * replaced a loop that rebuilt each vector from bytes and passed it through
 * the stack (the matvec ran at 10 GB/s on one core out of memory, 47 % of a
 * Qwen3-0.6B token); integer lanes and float steps are unchanged. */
static const uint8_t k_q6_scale16[4][32] = {
#define Q6S(a) a, a + 1, a, a + 1, a, a + 1, a, a + 1, a, a + 1, a, a + 1, a, a + 1, a, a + 1
    {Q6S(0), Q6S(2)},
    {Q6S(4), Q6S(6)},
    {Q6S(8), Q6S(10)},
    {Q6S(12), Q6S(14)},
#undef Q6S
};

/* Q6_K: the unsigned 6-bit values and scale vectors are built once per
 * half block; q6_offset takes 32 * sc * bsum off each lane. enc: the rows
 * are packed_q6_K.h's re-encoded ones (the same lanes, fewer operations). */
static inline __attribute__((always_inline)) void q6_rows_any(int64_t n, const void *w, const void *const act[4],
                                                            int nt, float out[4], const char *pf, size_t pf_step,
                                                            bool enc)
{
    const block_q6_K *x = w;
    const block_q8_K *y[4] = {act[0], act[1], act[2], act[3]};
    __m256 acc[4];
    _Pragma("GCC unroll 4") for (int c = 0; c < nt; c++) acc[c] = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / QK_K; i++) {
        quant_prefetch_step_l2(pf, i, pf_step);
        const __m128i scales = _mm_loadu_si128((const __m128i *)x[i].scales);
        const __m256i sc16 = _mm256_cvtepi8_epi16(scales);
        const float xd = fp16_to_f32(x[i].d);
        __m256i sumi[4];
        _Pragma("GCC unroll 4") for (int c = 0; c < nt; c++) sumi[c] = _mm256_setzero_si256();
        _Pragma("GCC unroll 2") for (int h = 0; h < 2; h++)
        {
            const __m256i ss = h ? _mm256_permute2x128_si256(sc16, sc16, 0x11)
                                 : _mm256_permute2x128_si256(sc16, sc16, 0x00);
            /* chunk by chunk: one value and one scale vector live at a time
             * (all four of each for four tokens spilled: 0.67x ik's AVX2
             * prompt speed); the lanes' integer sums are exact in any order */
            _Pragma("GCC unroll 4") for (int k = 0; k < 4; k++)
            {
                const __m256i q = q6_K_chunk((const uint8_t *)&x[i], h, k, enc);
                const __m256i scv = _mm256_shuffle_epi8(ss, _mm256_loadu_si256((const __m256i *)k_q6_scale16[k]));
                _Pragma("GCC unroll 4") for (int c = 0; c < nt; c++) sumi[c] =
                    _mm256_add_epi32(sumi[c], q6_chunk(q, y[c][i].qs + 128 * h + 32 * k, scv));
            }
        }
        _Pragma("GCC unroll 4") for (int c = 0; c < nt; c++)
        {
            sumi[c] = _mm256_sub_epi32(sumi[c], q6_offset(scales, y[c][i].bsums));
            acc[c] = _mm256_fmadd_ps(_mm256_set1_ps(y[c][i].d * xd), _mm256_cvtepi32_ps(sumi[c]), acc[c]);
        }
    }
    _Pragma("GCC unroll 4") for (int c = 0; c < nt; c++) out[c] = hsum_ps(acc[c]);
}

/* T##_rows_pf and T##_rows over the file's rows (ENC false) or
 * packed_q6_K.h's re-encoded ones (q6_Kx), and their vec_dot / dot4 */
#define Q6_ROWS(T, ENC)                                                                                               \
    static inline __attribute__((always_inline)) void T##_rows_pf(int64_t n, const void *w, const void *const act[4], \
                                                                  int nt, float out[4], const char *pf,              \
                                                                  size_t pf_step)                                     \
    {                                                                                                                 \
        q6_rows_any(n, w, act, nt, out, pf, pf_step, ENC);                                                            \
    }                                                                                                                 \
    static inline __attribute__((always_inline)) void T##_rows(int64_t n, const void *w, const void *const act[4],    \
                                                               int nt, float out[4])                                  \
    {                                                                                                                 \
        T##_rows_pf(n, w, act, nt, out, NULL, 0);                                                                     \
    }                                                                                                                 \
    QUANT_ROWS_KERNELS(T)
Q6_ROWS(q6_K, false)
#ifdef PACKED_Q6_K
Q6_ROWS(q6_Kx, true)
#endif

/* One token's dot through the rows bodies, for QUANT_MATVEC_PF: the same
 * body as quant_avx2_dot_q6_K / _q5_K, so the same bits. */
#define K_DOT1_PF(T)                                                                                              \
    static inline __attribute__((always_inline)) float T##_dot1_pf(int64_t n, const void *w, const void *act,    \
                                                                    const char *pf, size_t step)                  \
    {                                                                                                             \
        const void *const a[4] = {act, act, act, act};                                                            \
        float o[4];                                                                                               \
        T##_rows_pf(n, w, a, 1, o, pf, step);                                                                     \
        return o[0];                                                                                              \
    }
K_DOT1_PF(q6_K)
K_DOT1_PF(q5_K)

/* Q6_K's rows prefetch into L2 (q6_K_rows_pf), quant_prefetch_far_steps
 * ahead: the Qwen3-30B-A3B width's Q6_K output head, AVX2 build, one
 * thread of an AMD EPYC Zen 4, tg32 47.1-48.5 tok/s with 2 rows into L1,
 * 49.7-51.4 with 16 rows into L2, 50.0-50.1 with 8. */
QUANT_MATVEC_PF(, quant_avx2_matvec_q6_K, q6_K_dot1_pf, quant_prefetch_far_steps(rs))
QUANT_MATVEC_PF(, quant_avx2_matvec_q5_K, q5_K_dot1_pf, QUANT_PF_AHEAD)

#if defined(__AVX512F__) && defined(__AVX512BW__)
/* One token through the few-token kernels (quant_kfew.h): row pairs, each
 * block unpacked once, the rows two pairs ahead prefetched. Their batches
 * go there from tensor_matmul. */
void quant_avx512_matvec_q6_K(int64_t n, const void *w, size_t rs, int64_t rows, const void *act, float *out)
{
    quant_q6_K_few(n, w, rs, rows, act, 0, 1, out, 1, 1);
}

void quant_avx512_matvec_q5_K(int64_t n, const void *w, size_t rs, int64_t rows, const void *act, float *out)
{
    quant_q5_K_few(n, w, rs, rows, act, 0, 1, out, 1, 1);
}
#endif

#endif /* QUANT_HAVE_AVX2 */
