/* Q6_K rows against 1-4 tokens (quant_kfew.h).
 *
 * The reference (ggml_vec_dot_q6_K_q8_K, AVX2 body) forms per block 8 int32
 * lanes: lane m sums sc * q * y over bytes 4m..4m+3 of each 32-value chunk
 * (q unsigned, 0..63), less 32 * (sc[2m] bsum[2m] + sc[2m+1] bsum[2m+1]);
 * then acc[m] = fma(y.d * x.d, (float)lane[m], acc[m]) and hsum_float_8.
 * The integer lanes are exact, so any grouping of their terms gives them.
 *
 * Here one register holds a chunk pair of one row (64 values: int32 lane j
 * feeds the reference's lane j % 8), unpacked once per block and pass with
 * the 6-bit bits, its scales widened by one vpermw; per token a maddubs and
 * a vpdpwssd (the scale's madd and the add in one) per chunk pair. Per row
 * pair and token the 16-lane sums fold to [row A's 8 lanes | row B's 8],
 * take the offset in one vpdpwssd against the bsums, and go through one
 * convert and one FMA for both rows. The row-pair tile this replaced
 * (q6_K_rows2) rebuilt a scale vector per chunk and row from bytes
 * (shuffle, widen, insert), took the offset and float steps per row, and
 * did not prefetch: 4 tokens against the output matrix from memory ran at
 * 15 ns per row x token x block, now 3.7 (docs/speculative.md). */
#include "kernels/quant_kfew.h"

#ifdef QUANT_HAVE_KFEW
#include "kernels/quant_internal.h"

#if defined(__AVX512VNNI__)
#define Q6F_DPWSSD(acc, a, b) _mm512_dpwssd_epi32((acc), (a), (b))
#else
#define Q6F_DPWSSD(acc, a, b) _mm512_add_epi32((acc), _mm512_madd_epi16((a), (b)))
#endif

/* vpermw indices: chunk pair p (0..3) of a block covers sub-blocks
 * 4p..4p+3, one per 128-bit lane. */
static const int16_t k_q6f_sidx[4][32] = {
#define Q6F_L(s) s, s, s, s, s, s, s, s
    {Q6F_L(0), Q6F_L(1), Q6F_L(2), Q6F_L(3)},
    {Q6F_L(4), Q6F_L(5), Q6F_L(6), Q6F_L(7)},
    {Q6F_L(8), Q6F_L(9), Q6F_L(10), Q6F_L(11)},
    {Q6F_L(12), Q6F_L(13), Q6F_L(14), Q6F_L(15)},
#undef Q6F_L
};

/* a in the low 256-bit half's words, b in the high half's */
static inline __m512i q6f_shifts(int a, int b)
{
    return _mm512_inserti64x4(_mm512_set1_epi16((short)a), _mm256_set1_epi16((short)b), 1);
}

/* (a & 0x0F) | b, b already masked to bits 4-5 */
#define Q6F_OR_LO(a, b, m4) _mm512_ternarylogic_epi32((a), (b), (m4), 0xEC)

/* A block's 16 scales widened to words (the low 256 bits) */
static inline __attribute__((always_inline)) __m512i q6f_scales(const block_q6_K *x)
{
    return _mm512_castsi256_si512(_mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)x->scales)));
}

/* Chunk pair p (0, 1) of a half's 64 values: l its ql bytes, hh its 32 qh
 * bytes in both 256-bit halves. Chunk 0 takes qh << 4, chunk 1 qh << 2
 * (low / high half); chunk 2 qh, chunk 3 qh >> 2. */
static inline __attribute__((always_inline)) __m512i q6f_unpack(__m512i l, __m512i hh, int p)
{
    const __m512i m4 = _mm512_set1_epi8(0x0F), m2 = _mm512_set1_epi8(0x30);
    if (p == 0)
        return Q6F_OR_LO(l, _mm512_and_si512(_mm512_sllv_epi16(hh, q6f_shifts(4, 2)), m2), m4);
    return Q6F_OR_LO(_mm512_srli_epi16(l, 4), _mm512_and_si512(_mm512_srlv_epi16(hh, q6f_shifts(0, 2)), m2),
                     m4);
}

/* One block's float step for a row pair and one token: the 16-lane sums
 * folded to [row A's 8 | row B's 8], the offset taken against the token's
 * bsums (off: -32 x both rows' scales, |32 sc| <= 4096 fits 16 bits; lane
 * m gets sub-blocks 2m, 2m+1, as the reference), one convert and one FMA
 * with both rows' d (xd) */
static inline __attribute__((always_inline)) __m512 q6f_step(__m512 acc, __m512i ia, __m512i ib, __m512i off,
                                                             __m512 xd, const block_q8_K *y)
{
    __m512i s = _mm512_add_epi32(_mm512_shuffle_i64x2(ia, ib, 0x44), _mm512_shuffle_i64x2(ia, ib, 0xEE));
    s = Q6F_DPWSSD(s, off, _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)y->bsums)));
    return _mm512_fmadd_ps(_mm512_mul_ps(xd, _mm512_set1_ps(y->d)), _mm512_cvtepi32_ps(s), acc);
}

/* off and xd of q6f_step for block pair xa, xb (their scales sa, sb) */
static inline __attribute__((always_inline)) __m512i q6f_off(__m512i sa, __m512i sb)
{
    return _mm512_mullo_epi16(_mm512_inserti64x4(sa, _mm512_castsi512_si256(sb), 1), _mm512_set1_epi16(-32));
}
static inline __attribute__((always_inline)) __m512 q6f_xd(const block_q6_K *xa, const block_q6_K *xb)
{
    return _mm512_insertf32x8(_mm512_set1_ps(fp16_to_f32(xa->d)), _mm256_set1_ps(fp16_to_f32(xb->d)), 1);
}

static inline __attribute__((always_inline)) void q6f_pass(int64_t nb, const block_q6_K *xa,
                                                           const block_q6_K *xb, const uint8_t *act,
                                                           size_t act_stride, int nt, float *oa, float *ob,
                                                           int64_t out_stride, const char *pf, size_t pf_step)
{
    const block_q8_K *y[QUANT_KFEW_MAX];
    __m512 acc[QUANT_KFEW_MAX];
    for (int t = 0; t < QUANT_KFEW_MAX; t++) {
        y[t] = (const block_q8_K *)(const void *)(act + (size_t)(t < nt ? t : 0) * act_stride);
        acc[t] = _mm512_setzero_ps();
    }
    for (int64_t i = 0; i < nb; i++) {
        quant_prefetch_step_l2(pf, i, pf_step);
        const __m512i sa = q6f_scales(&xa[i]), sb = q6f_scales(&xb[i]);
        __m512i ia[QUANT_KFEW_MAX], ib[QUANT_KFEW_MAX];
        for (int t = 0; t < nt; t++)
            ia[t] = ib[t] = _mm512_setzero_si512();
        _Pragma("GCC unroll 2") for (int h = 0; h < 2; h++)
        {
            const __m512i la = _mm512_loadu_si512(xa[i].ql + 64 * h),
                          lb = _mm512_loadu_si512(xb[i].ql + 64 * h);
            const __m512i ha =
                _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(xa[i].qh + 32 * h)));
            const __m512i hb =
                _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(xb[i].qh + 32 * h)));
            _Pragma("GCC unroll 2") for (int p = 0; p < 2; p++)
            {
                const __m512i qa = q6f_unpack(la, ha, p), qb = q6f_unpack(lb, hb, p);
                const __m512i idx = _mm512_loadu_si512(k_q6f_sidx[2 * h + p]);
                const __m512i ca = _mm512_permutexvar_epi16(idx, sa), cb = _mm512_permutexvar_epi16(idx, sb);
                _Pragma("GCC unroll 4") for (int t = 0; t < nt; t++)
                {
                    const __m512i yv = _mm512_loadu_si512(y[t][i].qs + 128 * h + 64 * p);
                    ia[t] = Q6F_DPWSSD(ia[t], ca, _mm512_maddubs_epi16(qa, yv));
                    ib[t] = Q6F_DPWSSD(ib[t], cb, _mm512_maddubs_epi16(qb, yv));
                }
            }
        }
        const __m512i off = q6f_off(sa, sb);
        const __m512 xd = q6f_xd(&xa[i], &xb[i]);
        _Pragma("GCC unroll 4") for (int t = 0; t < nt; t++)
        {
            acc[t] = q6f_step(acc[t], ia[t], ib[t], off, xd, &y[t][i]);
        }
    }
    for (int t = 0; t < nt; t++) {
        oa[t * out_stride] = hsum_ps(_mm512_castps512_ps256(acc[t]));
        if (ob)
            ob[t * out_stride] = hsum_ps(_mm512_extractf32x8_ps(acc[t], 1));
    }
}

/* One row's block against one token: the 16 int32 lanes q6f_pass keeps
 * per row before its fold, the same integer terms. */
static inline __attribute__((always_inline)) __m512i q6f_block(const block_q6_K *x, const block_q8_K *y)
{
    const __m512i sc = q6f_scales(x);
    __m512i acc = _mm512_setzero_si512();
    _Pragma("GCC unroll 2") for (int h = 0; h < 2; h++)
    {
        const __m512i l = _mm512_loadu_si512(x->ql + 64 * h);
        const __m512i hh = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(x->qh + 32 * h)));
        _Pragma("GCC unroll 2") for (int p = 0; p < 2; p++)
        {
            const __m512i c = _mm512_permutexvar_epi16(_mm512_loadu_si512(k_q6f_sidx[2 * h + p]), sc);
            acc = Q6F_DPWSSD(
                acc, c,
                _mm512_maddubs_epi16(q6f_unpack(l, hh, p), _mm512_loadu_si512(y->qs + 128 * h + 64 * p)));
        }
    }
    return acc;
}

/* One token against one row, its blocks in turn: q6f_block's lanes
 * folded to the reference's 8 and taken through q6f_step's float
 * operations for that row (the same integers, the same products and FMAs
 * in the same order: the same bits). The sequential way runs the rows
 * through it one after the other: one stream in address order, which the
 * hardware prefetchers follow without a software prefetch. The way it
 * replaced read the rows in pairs, row A's lanes kept on the stack until
 * row B's: on an AMD EPYC Zen 5 (forty-second session, two threads, the
 * Qwen3.5 width's 417 MB output head, alternating in one process) it
 * streamed at 0.42 of a plain read where this reads at 0.88 and the
 * prefetched pairs at 0.74; in the cache all three run at 48-53 GB/s a
 * thread. */
static inline __attribute__((always_inline)) float q6f_row(int64_t nb, const block_q6_K *x, const block_q8_K *y)
{
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < nb; i++) {
        const __m512i l = q6f_block(&x[i], &y[i]);
        __m256i s = _mm256_add_epi32(_mm512_castsi512_si256(l), _mm512_extracti64x4_epi64(l, 1));
        const __m256i off = _mm256_mullo_epi16(_mm512_castsi512_si256(q6f_scales(&x[i])), _mm256_set1_epi16(-32));
        s = _mm256_add_epi32(s, _mm256_madd_epi16(off, _mm256_loadu_si256((const __m256i *)y[i].bsums)));
        acc = _mm256_fmadd_ps(_mm256_set1_ps(fp16_to_f32(x[i].d) * y[i].d), _mm256_cvtepi32_ps(s), acc);
    }
    return hsum_ps(acc);
}

static _Thread_local quant_kfew_tuners q6f_tuners;

/* nt as a constant in each instance: the token loops unroll and the
 * accumulators stay in registers. */
static inline __attribute__((always_inline)) void q6f_rows(int64_t n, const void *w, size_t rs, int64_t rows,
                                                           const void *act, size_t act_stride, int nt,
                                                           float *out, int64_t out_stride, int pf)
{
    const int64_t nb = n / QK_K;
    const size_t step = pf ? quant_prefetch_step_size(rs, 2, nb) : 0;
    const int64_t ahead_pairs = quant_prefetch_far_steps(2 * rs); /* into L2 (q6f_pass) */
    const quant_kfew_call call = quant_kfew_start(&q6f_tuners, nb, nt, pf, (size_t)rows * rs);
    if (call.way == QUANT_KFEW_STREAM_SEQ) {
        for (int64_t r = 0; r < rows; r++)
            out[r] = q6f_row(nb, (const block_q6_K *)(const void *)((const char *)w + (size_t)r * rs),
                             (const block_q8_K *)act);
    } else {
        for (int64_t r = 0; r < rows; r += 2) {
            const block_q6_K *xa = (const block_q6_K *)(const void *)((const char *)w + (size_t)r * rs);
            const bool pair = r + 1 < rows;
            const block_q6_K *xb = pair ? (const block_q6_K *)(const void *)((const char *)xa + rs) : xa;
            const bool ahead = pf && r + 2 * ahead_pairs + 1 < rows; /* no prefetch past the matrix */
            q6f_pass(nb, xa, xb, act, act_stride, nt, out + r, pair ? out + r + 1 : NULL, out_stride,
                     ahead ? (const char *)xa + 2 * ahead_pairs * rs : NULL, ahead ? step : 0);
        }
    }
    quant_kfew_end(&call);
}

void quant_q6_K_few(int64_t n, const void *w, size_t rs, int64_t rows, const void *act, size_t act_stride,
                    int nt, float *out, int64_t out_stride, int pf)
{
    switch (nt) {
    case 1:
        q6f_rows(n, w, rs, rows, act, act_stride, 1, out, out_stride, pf);
        break;
    case 2:
        q6f_rows(n, w, rs, rows, act, act_stride, 2, out, out_stride, pf);
        break;
    case 3:
        q6f_rows(n, w, rs, rows, act, act_stride, 3, out, out_stride, pf);
        break;
    default:
        q6f_rows(n, w, rs, rows, act, act_stride, 4, out, out_stride, pf);
        break;
    }
}
#endif
