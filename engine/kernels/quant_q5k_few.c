/* Q5_K rows against 1-4 tokens (quant_kfew.h).
 *
 * The reference (ggml_vec_dot_q5_K_q8_K, AVX2 body) forms per block 8 int32
 * lanes: lane m sums sc[j] * q * y over bytes 4m..4m+3 of each 32-value
 * chunk j (q = 4 low bits | high bit j << 4, 0..31); then
 * acc[m] = fma(y.d * x.d, (float)lane[m], acc[m]), and per block one
 * integer, sum_j min[j] * (bsum[2j] + bsum[2j+1]), goes into a scalar
 * summs = fma(-y.d * x.dmin, (float)total, summs); the result is
 * hsum_float_8(acc) + summs. The integers are exact, so any grouping of
 * their terms gives them.
 *
 * As quant_q6k_few.c: one register holds chunks 2k and 2k+1 of a row
 * (the 4 low bits from one 32-byte load in both halves, shifted 0 or 4;
 * the high bits from qh shifted per half), its scales widened by one
 * vpermw; per token a maddubs and a vpdpwssd per chunk pair; per row pair
 * and token the 16 lanes fold to [row A's 8 | row B's 8] for one convert
 * and one FMA. The min totals of 2 rows x 4 tokens sit in one register's
 * 8 lanes, so their 8 scalar FMAs are one. */
#include "kernels/quant_kfew.h"

#ifdef QUANT_HAVE_KFEW
#include <string.h>

#include "kernels/quant_internal.h"

#if defined(__AVX512VNNI__)
#define Q5F_DPWSSD(acc, a, b) _mm512_dpwssd_epi32((acc), (a), (b))
#define Q5F_DPWSSD256(acc, a, b) _mm256_dpwssd_epi32((acc), (a), (b))
#else
#define Q5F_DPWSSD(acc, a, b) _mm512_add_epi32((acc), _mm512_madd_epi16((a), (b)))
#define Q5F_DPWSSD256(acc, a, b) _mm256_add_epi32((acc), _mm256_madd_epi16((a), (b)))
#endif

/* The 8 scales (bytes 0-7) and 8 mins (bytes 8-15) of a block, from
 * get_scale_min_k4's layout, as the reference's utmp. */
static inline __m128i q5f_scales_mins(const uint8_t *s)
{
    uint32_t u[3], a[4];
    memcpy(u, s, 12);
    const uint32_t kmask1 = 0x3f3f3f3f, kmask2 = 0x0f0f0f0f, kmask3 = 0x03030303;
    a[0] = u[0] & kmask1;
    a[1] = (u[2] & kmask2) | (((u[0] >> 6) & kmask3) << 4);
    a[2] = u[1] & kmask1;
    a[3] = ((u[2] >> 4) & kmask2) | (((u[1] >> 6) & kmask3) << 4);
    return _mm_loadu_si128((const __m128i *)a);
}

/* vpermw indices: chunk pair k takes scale word 2k (low half), 2k+1 (high) */
static const int16_t k_q5f_sidx[4][32] = {
#define Q5F_H(s) s, s, s, s, s, s, s, s, s, s, s, s, s, s, s, s
    {Q5F_H(0), Q5F_H(1)},
    {Q5F_H(2), Q5F_H(3)},
    {Q5F_H(4), Q5F_H(5)},
    {Q5F_H(6), Q5F_H(7)},
#undef Q5F_H
};

/* A 256-bit value in both halves, shifted by a (low half) and b (high). */
static inline __m512i q5f_shifts(int a, int b)
{
    return _mm512_inserti64x4(_mm512_set1_epi16((short)a), _mm256_set1_epi16((short)b), 1);
}

/* Chunk pair k (0-3) of a block's 4-bit values (l: its 32 qs bytes in
 * both 256-bit halves, shifted 0 or 4) with their high bits (h: the 32 qh
 * bytes in both halves; high bit j to bit 4: chunks 0/1 qh << 4 / << 3,
 * 2/3 << 2 / << 1, 4/5 >> 0 / >> 1, 6/7 >> 2 / >> 3) */
static inline __attribute__((always_inline)) __m512i q5f_unpack(__m512i l, __m512i h, int k)
{
    const __m512i hs = k == 0   ? q5f_shifts(4, 3)
                       : k == 1 ? q5f_shifts(2, 1)
                       : k == 2 ? q5f_shifts(0, 1)
                                : q5f_shifts(2, 3);
    const __m512i hb = k < 2 ? _mm512_sllv_epi16(h, hs) : _mm512_srlv_epi16(h, hs);
    /* (low bits) | (high bit & 0x10) */
    return _mm512_ternarylogic_epi32(
        _mm512_and_si512(_mm512_srlv_epi16(l, q5f_shifts(0, 4)), _mm512_set1_epi8(0x0F)), hb,
        _mm512_set1_epi8(0x10), 0xF8);
}

/* One block's float step for a row pair and one token: the 16-lane sums
 * folded to [row A's 8 | row B's 8], one convert and one FMA with both
 * rows' d (q5f_xd) */
static inline __attribute__((always_inline)) __m512 q5f_step(__m512 acc, __m512i ia, __m512i ib, __m512 xd,
                                                             const block_q8_K *y)
{
    const __m512i s =
        _mm512_add_epi32(_mm512_shuffle_i64x2(ia, ib, 0x44), _mm512_shuffle_i64x2(ia, ib, 0xEE));
    return _mm512_fmadd_ps(_mm512_mul_ps(xd, _mm512_set1_ps(y->d)), _mm512_cvtepi32_ps(s), acc);
}

static inline __attribute__((always_inline)) __m512 q5f_xd(const block_q5_K *xa, const block_q5_K *xb)
{
    return _mm512_insertf32x8(_mm512_set1_ps(fp16_to_f32(xa->d)), _mm256_set1_ps(fp16_to_f32(xb->d)), 1);
}

/* One block's min totals of both rows and 4 tokens in 8 lanes, into summs:
 * dword pair jp of each row's mins (min 2jp, 2jp+1; the rows' scale and
 * min words sma, smb) against the tokens' bsum pair sums v, as laid out by
 * q5f_act */
static inline __attribute__((always_inline)) __m256
q5f_mins(__m256 summs, __m256i sma, __m256i smb, const __m256i *v, const block_q5_K *xa, const block_q5_K *xb)
{
    const __m256i mins = _mm256_permute2x128_si256(sma, smb, 0x31);
    __m256i tot = _mm256_madd_epi16(_mm256_shuffle_epi32(mins, 0x00), v[0]);
    tot = Q5F_DPWSSD256(tot, _mm256_shuffle_epi32(mins, 0x55), v[1]);
    tot = Q5F_DPWSSD256(tot, _mm256_shuffle_epi32(mins, 0xAA), v[2]);
    tot = Q5F_DPWSSD256(tot, _mm256_shuffle_epi32(mins, 0xFF), v[3]);
    const __m256 dmin =
        _mm256_mul_ps(_mm256_castsi256_ps(v[4]), _mm256_insertf128_ps(_mm256_set1_ps(fp16_to_f32(xa->dmin)),
                                                                      _mm_set1_ps(fp16_to_f32(xb->dmin)), 1));
    return _mm256_fmadd_ps(dmin, _mm256_cvtepi32_ps(tot), summs);
}

static inline __attribute__((always_inline)) void
q5f_pass(int64_t nb, const block_q5_K *xa, const block_q5_K *xb, const __m256i *mv, const uint8_t *act,
         size_t act_stride, int nt, float *oa, float *ob, int64_t out_stride, const char *pf, size_t pf_step)
{
    const block_q8_K *y[QUANT_KFEW_MAX];
    __m512 acc[QUANT_KFEW_MAX];
    __m256 summs = _mm256_setzero_ps(); /* lanes: row A tokens 0-3, row B tokens 0-3 */
    for (int t = 0; t < QUANT_KFEW_MAX; t++) {
        y[t] = (const block_q8_K *)(const void *)(act + (size_t)(t < nt ? t : 0) * act_stride);
        acc[t] = _mm512_setzero_ps();
    }
    for (int64_t i = 0; i < nb; i++) {
        quant_prefetch_step(pf, i, pf_step);
        const __m256i sma = _mm256_cvtepu8_epi16(q5f_scales_mins(xa[i].scales));
        const __m256i smb = _mm256_cvtepu8_epi16(q5f_scales_mins(xb[i].scales));
        const __m512i sa = _mm512_castsi256_si512(sma), sb = _mm512_castsi256_si512(smb);
        const __m512i ha = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)xa[i].qh));
        const __m512i hb = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)xb[i].qh));
        __m512i ia[QUANT_KFEW_MAX], ib[QUANT_KFEW_MAX];
        for (int t = 0; t < nt; t++)
            ia[t] = ib[t] = _mm512_setzero_si512();
        _Pragma("GCC unroll 4") for (int k = 0; k < 4; k++)
        {
            const __m512i la =
                _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(xa[i].qs + 32 * k)));
            const __m512i lb =
                _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(xb[i].qs + 32 * k)));
            const __m512i qa = q5f_unpack(la, ha, k), qb = q5f_unpack(lb, hb, k);
            const __m512i idx = _mm512_loadu_si512(k_q5f_sidx[k]);
            const __m512i ca = _mm512_permutexvar_epi16(idx, sa), cb = _mm512_permutexvar_epi16(idx, sb);
            _Pragma("GCC unroll 4") for (int t = 0; t < nt; t++)
            {
                const __m512i yv = _mm512_loadu_si512(y[t][i].qs + 64 * k);
                ia[t] = Q5F_DPWSSD(ia[t], ca, _mm512_maddubs_epi16(qa, yv));
                ib[t] = Q5F_DPWSSD(ib[t], cb, _mm512_maddubs_epi16(qb, yv));
            }
        }
        const __m512 xd = q5f_xd(&xa[i], &xb[i]);
        _Pragma("GCC unroll 4") for (int t = 0; t < nt; t++)
        {
            acc[t] = q5f_step(acc[t], ia[t], ib[t], xd, &y[t][i]);
        }
        summs = q5f_mins(summs, sma, smb, mv + 5 * i, &xa[i], &xb[i]);
    }
    float sm[8];
    _mm256_storeu_ps(sm, summs);
    for (int t = 0; t < nt; t++) {
        oa[t * out_stride] = hsum_ps(_mm512_castps512_ps256(acc[t])) + sm[t];
        if (ob)
            ob[t * out_stride] = hsum_ps(_mm512_extractf32x8_ps(acc[t], 1)) + sm[4 + t];
    }
}

/* Per block, the tokens' side of the min totals, shared by every row pair:
 * v[jp] (jp < 4) holds in lane t and 4 + t the words bsum[4jp] +
 * bsum[4jp+1], bsum[4jp+2] + bsum[4jp+3] of token t (the reference's
 * hadd), v[4] holds -y.d of token t as floats (tokens past nt repeat token
 * 0; their lanes are not read). */
static void q5f_act(int64_t nb, const uint8_t *act, size_t act_stride, int nt, __m256i *mv)
{
    for (int64_t i = 0; i < nb; i++) {
        __m128i q[4];
        float nyd[4];
        for (int t = 0; t < 4; t++) {
            const block_q8_K *y =
                (const block_q8_K *)(const void *)(act + (size_t)(t < nt ? t : 0) * act_stride) + i;
            const __m256i bs = _mm256_loadu_si256((const __m256i *)y->bsums);
            q[t] = _mm_hadd_epi16(_mm256_castsi256_si128(bs), _mm256_extracti128_si256(bs, 1));
            nyd[t] = -y->d;
        }
        /* 4 x 4 dword transpose: lane t of v[jp] = dword jp of token t */
        const __m128i a = _mm_unpacklo_epi32(q[0], q[1]), b = _mm_unpacklo_epi32(q[2], q[3]);
        const __m128i c = _mm_unpackhi_epi32(q[0], q[1]), d = _mm_unpackhi_epi32(q[2], q[3]);
        const __m128i v[4] = {_mm_unpacklo_epi64(a, b), _mm_unpackhi_epi64(a, b), _mm_unpacklo_epi64(c, d),
                              _mm_unpackhi_epi64(c, d)};
        for (int jp = 0; jp < 4; jp++)
            mv[5 * i + jp] = _mm256_broadcastsi128_si256(v[jp]);
        mv[5 * i + 4] = _mm256_castps_si256(_mm256_broadcast_ps((const __m128 *)(const void *)nyd));
    }
}

/* One row's block against one token: the 16 int32 lanes q5f_pass keeps per
 * row before its fold (the same integer terms), and the block's scales and
 * mins widened to words (*sm). */
static inline __attribute__((always_inline)) __m512i q5f_block(const block_q5_K *x, const block_q8_K *y,
                                                               __m256i *sm)
{
    *sm = _mm256_cvtepu8_epi16(q5f_scales_mins(x->scales));
    const __m512i sc = _mm512_castsi256_si512(*sm);
    const __m512i h = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)x->qh));
    __m512i acc = _mm512_setzero_si512();
    _Pragma("GCC unroll 4") for (int k = 0; k < 4; k++)
    {
        const __m512i l = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(x->qs + 32 * k)));
        const __m512i c = _mm512_permutexvar_epi16(_mm512_loadu_si512(k_q5f_sidx[k]), sc);
        acc =
            Q5F_DPWSSD(acc, c, _mm512_maddubs_epi16(q5f_unpack(l, h, k), _mm512_loadu_si512(y->qs + 64 * k)));
    }
    return acc;
}

/* One token against one row, its blocks in turn (as quant_q6k_few.c's
 * q6f_row, whose comment says why): q5f_block's lanes folded to the
 * reference's 8 through q5f_step's float operations for that row, and the
 * min total of each block (the reference's hadd of the bsums, madd with
 * the mins, horizontal sum) through q5f_mins' FMA: the same bits. */
static inline __attribute__((always_inline)) float q5f_row(int64_t nb, const block_q5_K *x, const block_q8_K *y)
{
    __m256 acc = _mm256_setzero_ps();
    __m128 summs = _mm_setzero_ps();
    for (int64_t i = 0; i < nb; i++) {
        __m256i sm;
        const __m512i l = q5f_block(&x[i], &y[i], &sm);
        const __m256i s = _mm256_add_epi32(_mm512_castsi512_si256(l), _mm512_extracti64x4_epi64(l, 1));
        acc = _mm256_fmadd_ps(_mm256_set1_ps(fp16_to_f32(x[i].d) * y[i].d), _mm256_cvtepi32_ps(s), acc);
        const __m256i bs = _mm256_loadu_si256((const __m256i *)y[i].bsums);
        __m128i t = _mm_madd_epi16(_mm256_extracti128_si256(sm, 1),
                                   _mm_hadd_epi16(_mm256_castsi256_si128(bs), _mm256_extracti128_si256(bs, 1)));
        t = _mm_add_epi32(t, _mm_unpackhi_epi64(t, t));
        t = _mm_add_epi32(t, _mm_shuffle_epi32(t, 1));
        const __m128 dmin = _mm_set_ss(-y[i].d * fp16_to_f32(x[i].dmin));
        summs = _mm_fmadd_ss(dmin, _mm_cvtepi32_ps(t), summs);
    }
    return hsum_ps(acc) + _mm_cvtss_f32(summs);
}

static _Thread_local quant_kfew_tuners q5f_tuners;

static inline __attribute__((always_inline)) void q5f_rows(int64_t n, const void *w, size_t rs, int64_t rows,
                                                           const void *act, size_t act_stride, int nt,
                                                           float *out, int64_t out_stride, int pf)
{
    const int64_t nb = n / QK_K;
    const size_t step = pf ? quant_prefetch_step_size(rs, 2, nb) : 0;
    const quant_kfew_call call = quant_kfew_start(&q5f_tuners, nb, nt, pf, (size_t)rows * rs);
    if (call.way == QUANT_KFEW_STREAM_SEQ) {
        for (int64_t r = 0; r < rows; r++)
            out[r] = q5f_row(nb, (const block_q5_K *)(const void *)((const char *)w + (size_t)r * rs),
                             (const block_q8_K *)act);
    } else {
        __m256i mv[5 * nb]; /* 160 bytes a block */
        q5f_act(nb, act, act_stride, nt, mv);
        for (int64_t r = 0; r < rows; r += 2) {
            const block_q5_K *xa = (const block_q5_K *)(const void *)((const char *)w + (size_t)r * rs);
            const bool pair = r + 1 < rows;
            const block_q5_K *xb = pair ? (const block_q5_K *)(const void *)((const char *)xa + rs) : xa;
            const bool ahead = pf && r + 2 * QUANT_PF_AHEAD + 1 < rows; /* no prefetch past the matrix */
            q5f_pass(nb, xa, xb, mv, act, act_stride, nt, out + r, pair ? out + r + 1 : NULL, out_stride,
                     ahead ? (const char *)xa + 2 * QUANT_PF_AHEAD * rs : NULL, ahead ? step : 0);
        }
    }
    quant_kfew_end(&call);
}

void quant_q5_K_few(int64_t n, const void *w, size_t rs, int64_t rows, const void *act, size_t act_stride,
                    int nt, float *out, int64_t out_stride, int pf)
{
    switch (nt) {
    case 1:
        q5f_rows(n, w, rs, rows, act, act_stride, 1, out, out_stride, pf);
        break;
    case 2:
        q5f_rows(n, w, rs, rows, act, act_stride, 2, out, out_stride, pf);
        break;
    case 3:
        q5f_rows(n, w, rs, rows, act, act_stride, 3, out, out_stride, pf);
        break;
    default:
        q5f_rows(n, w, rs, rows, act, act_stride, 4, out, out_stride, pf);
        break;
    }
}
#endif
