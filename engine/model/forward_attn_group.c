/* The one-chunk kernel for the query heads that share a KV head, one query
 * each (forward_attn.h, attn_group_*): generation's attention.
 *
 * ggml runs each query head alone, one key at a time: K.Q (ggml_vec_dot_f16),
 * then expf for the online softmax, then the F16 accumulator's rescale and
 * multiply-add. Here every step runs over a block of keys for all the heads
 * of the group, and each head's numbers stay in the reference's order:
 *  - K.Q: a key's four 16-lane accumulators, combined (0+2)+(1+3) and then
 *    reduced as _mm512_reduce_add_ps does, for 16 keys at once (their trees
 *    interleaved by shuffles). Products of two F16 values are exact in F32,
 *    so for 64-wide heads "acc0 + acc2" is one FMA.
 *  - the running maximum, each key's "new maximum?" and expf's argument for
 *    16 keys by a prefix-max scan; expf itself in glibc's order on vector
 *    lanes (kernels/expf_libm.h).
 *  - the accumulator: each head's F16 values held as floats in registers,
 *    rounded to F16 after every multiply and multiply-add as ggml stores
 *    them; the sum S = fma(S, ms, vs) key by key.
 * K and V rows are read once per block for the whole group; with
 * AVX-512 and heads of 128 or more, the next block's K.Q runs inside this
 * block's accumulator loop (FMAs beside the conversions that bound it). Without
 * AVX-512 (AVX2, F16C, FMA) the same steps run on 8-lane registers (the
 * second half of this file). */
#include "model/forward_attn.h"

#include <math.h>
#include <string.h>

#include "kernels/expf_libm.h"
#include "kernels/forward_math.h"
#include "model/attn_scan.h"

#if defined(__AVX512F__) && defined(FWD_F16C)
#define GROUP_AVX512 1
#endif

enum { GB = 64 }; /* keys per block */
/* AVX-512: the next block's K rows as floats and its K.Q lanes (16 a key
 * and head), made while this block's accumulators run */
#if defined(__AVX512F__) && defined(FWD_F16C)
#define ATTN_GROUP_NEXT_FLOATS(hd) ((size_t)GB * (size_t)(hd) + (size_t)ATTN_GROUP_MAX * GB * 16)
#else
#define ATTN_GROUP_NEXT_FLOATS(hd) ((size_t)0)
#endif

size_t attn_group_scratch_floats(int hd)
{
    /* Q as rounded floats (16 heads), K block as floats, scores/expf per
     * head and block, one split chunk's results */
    return (size_t)ATTN_GROUP_MAX * (size_t)hd + (size_t)GB * (size_t)hd + (size_t)ATTN_GROUP_MAX * GB +
           ATTN_GROUP_NEXT_FLOATS(hd) + (size_t)ATTN_GROUP_MAX * ((size_t)hd + 2) + 64;
}

bool attn_group_ok(const attn_kv *kv)
{
#ifdef FWD_F16C /* AVX-512 or AVX2 */
    return kv->f16 && !kv->generic && (kv->hd == 64 || kv->hd == 128 || kv->hd == 256 || kv->hd == 512) &&
           expf_libm_exact();
#else
    (void)kv;
    return false;
#endif
}

#ifdef FWD_F16C
/* Key j's step for one head's accumulator, from its exp e and new-maximum
 * bit: on a new maximum the accumulator is rescaled by e (the caller does
 * it, its vectors) and the key weighs 1, S = fma(S, e, 1); else the key
 * weighs e, S = fma(S, 1, e). S advances only in a head's first pass over
 * its elements. Returns the key's weight. */
static inline float key_step(bool new_max, float e, bool first, float *S)
{
    if (new_max) {
        if (first)
            *S = fmaf(*S, e, 1.0f);
        return 1.0f;
    }
    if (first)
        *S += e;
    return e;
}

/* Cache rows the next blocks will convert, fetched while this block's
 * accumulators run: at depth generation finds K and V in memory (the
 * token's weights streamed through every cache level since the layer's
 * last visit), and the hardware prefetcher alone left the conversions
 * waiting on it. Rows [k0, k0 + nk) of K, then [v0, v0 + nv) of V. */
typedef struct {
    int32_t k0, nk, v0, nv;
} kv_ahead;

/* lines [q0, q1) of the rows in a (hd / 32 lines a row) into L2 (T0 and
 * T2 measured the same) */
static inline __attribute__((always_inline)) void ahead_fetch(const attn_kv *kv, const kv_ahead *a, int q0, int q1,
                                                              const int hd)
{
    const int lpr = hd / 32; /* 64-byte lines in an F16 row */
    for (int q = q0; q < q1; q++) {
        const int r = q / lpr, l = q % lpr;
        const fp16_t *row = r < a->nk ? (const fp16_t *)kv->k + (int64_t)(a->k0 + r) * kv->stride
                                      : (const fp16_t *)kv->v + (int64_t)(a->v0 + r - a->nk) * kv->stride;
        _mm_prefetch((const char *)(row + 32 * l), _MM_HINT_T1);
    }
}
#endif

#ifdef GROUP_AVX512

/* an F32 value rounded to F16 and back, as ggml's F16 stores and loads do */
static inline __m512 r16(__m512 x) { return _mm512_cvtph_ps(_mm512_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT)); }

/* ggml_vec_dot_f16's 16 lanes before the horizontal sum, for one key:
 * four accumulators over the head's 64-wide steps, then (0+2) + (1+3) */
static inline __attribute__((always_inline)) __m512 dot_lanes(const float *k, const float *q, int hd)
{
    if (hd == 64) {
        /* acc_j is one exact product, so acc0 + acc2 = fma(k2, q2, acc0) */
        const __m512 z = _mm512_setzero_ps();
        const __m512 a0 = _mm512_fmadd_ps(_mm512_loadu_ps(k), _mm512_loadu_ps(q), z);
        const __m512 a1 = _mm512_fmadd_ps(_mm512_loadu_ps(k + 16), _mm512_loadu_ps(q + 16), z);
        const __m512 a02 = _mm512_fmadd_ps(_mm512_loadu_ps(k + 32), _mm512_loadu_ps(q + 32), a0);
        const __m512 a13 = _mm512_fmadd_ps(_mm512_loadu_ps(k + 48), _mm512_loadu_ps(q + 48), a1);
        return _mm512_add_ps(a02, a13);
    }
    /* named accumulators: as an array, GCC kept a group's 16 keys' sums in
     * memory for 128- and 256-wide heads (6x the 64-wide cost per element) */
    __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    for (int i = 0; i < hd; i += 64) {
        a0 = _mm512_fmadd_ps(_mm512_loadu_ps(k + i), _mm512_loadu_ps(q + i), a0);
        a1 = _mm512_fmadd_ps(_mm512_loadu_ps(k + i + 16), _mm512_loadu_ps(q + i + 16), a1);
        a2 = _mm512_fmadd_ps(_mm512_loadu_ps(k + i + 32), _mm512_loadu_ps(q + i + 32), a2);
        a3 = _mm512_fmadd_ps(_mm512_loadu_ps(k + i + 48), _mm512_loadu_ps(q + i + 48), a3);
    }
    return _mm512_add_ps(_mm512_add_ps(a0, a2), _mm512_add_ps(a1, a3));
}

/* n cache rows from row r0 on as floats, hd each, into dst (a block's K
 * rows, then its V rows over them) */
static inline void rows_f32(const fp16_t *c, int64_t stride, int32_t r0, int n, int hd, float *dst)
{
    for (int j = 0; j < n; j++) {
        const fp16_t *r = c + (int64_t)(r0 + j) * stride;
        for (int d = 0; d < hd; d += 16)
            _mm512_storeu_ps(dst + (size_t)j * hd + d, _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(r + d))));
    }
}

/* K.Q lanes of the block whose K rows are kf (nb keys), for the
 * (head, key) pairs t in [t0, t1), t = head * nb16 + key: into ln[t] (16
 * floats each; zero past nb) */
static inline __attribute__((always_inline)) void block_dots(const float *kf, const float *qf, int nb, int t0,
                                                             int t1, float *ln, const int hd)
{
    const int nb16 = (nb + 15) & ~15;
    for (int t = t0; t < t1; t++) {
        const int h = t / nb16, j = t % nb16;
        _mm512_storeu_ps(ln + (size_t)t * 16, j < nb ? dot_lanes(kf + (size_t)j * hd, qf + (size_t)h * hd, hd)
                                                     : _mm512_setzero_ps());
    }
}

/* The block's scores, each key's new-maximum bit and exp (sc[h][j]; bit j
 * of nm[h][j / 16]), with the running maxima M: from its K.Q lanes ln
 * (block_dots), or (direct) from its K rows as floats in kf, 16 keys' lanes
 * in registers at a time */
static inline __attribute__((always_inline)) void block_scores(const attn_kv *kv, const float *qf, int nh, int nb,
                                                               const float *kf, const float *ln, float *sc,
                                                               uint16_t *nm, float *M, const bool direct,
                                                               const int hd)
{
    const int nb16 = (nb + 15) & ~15;
    const __m512 ninf = _mm512_set1_ps(-INFINITY), scale = _mm512_set1_ps(kv->scale);
    for (int h = 0; h < nh; h++) {
        const float *qh = qf + (size_t)h * hd;
        float *sh = sc + (size_t)h * GB;
        __m512 Mv = _mm512_set1_ps(M[h]);
        for (int j = 0; j < nb16; j += 16) {
            __m512 v[16];
            if (!direct) {
                _Pragma("GCC unroll 16") for (int l = 0; l < 16; l++)
                    v[l] = _mm512_loadu_ps(ln + ((size_t)h * nb16 + j + l) * 16);
            } else if (nb - j >= 16) {
                /* whole groups unrolled: the 16 sums stay in registers */
                _Pragma("GCC unroll 16") for (int l = 0; l < 16; l++)
                    v[l] = dot_lanes(kf + (size_t)(j + l) * hd, qh, hd);
            } else {
                for (int l = 0; l < 16; l++)
                    v[l] = j + l < nb ? dot_lanes(kf + (size_t)(j + l) * hd, qh, hd) : _mm512_setzero_ps();
            }
            __m512 s = _mm512_mul_ps(attn_reduce16(v), scale);
            if (nb - j < 16) /* keys past the block: -inf, never a new maximum */
                s = _mm512_mask_mov_ps(ninf, (__mmask16)((1u << (nb - j)) - 1u), s);
            /* s > M: M = s, ms = expf(Mold - s); else vs = expf(s - M) */
            nm[h * (GB / 16) + j / 16] = attn_scan16(s, ninf, &Mv, sh + j);
        }
        M[h] = _mm512_cvtss_f32(Mv);
        expf_libm_n(sh, sh, nb16);
    }
}

/* The accumulators and sums of one block of keys [kb, kb + nb) of a
 * chunk, all heads, from its scores (block_scores). Meanwhile the next
 * block's K.Q lanes (nb2 keys, K rows as floats in kf2; none when nb2 is
 * 0) into ln, a few a key: the lanes are FMAs, the accumulators wait on
 * the F16 conversions, so the two share the core. */
static inline __attribute__((always_inline)) void block_acc(const attn_kv *kv, const float *qf, int nh, int32_t kb,
                                                            int nb, float *kf, const float *sc, const uint16_t *nm,
                                                            float *acc, float *S, const float *kf2, int nb2,
                                                            float *ln, const kv_ahead *ah, const int hd)
{
    const fp16_t *vc = (const fp16_t *)kv->v;
    /* the accumulators, up to 4 heads side by side (independent chains) */
    enum { W_MAX = 8 };
    /* heads wider than 128 in passes of 128, two heads at a time (a pass of
     * 256 held 16 accumulators and 16 V vectors, and spilled): each
     * output's chain over the keys is its own, so the passes are the same
     * numbers; the sums S advance in the first */
    const int W = hd / 16 < W_MAX ? hd / 16 : W_MAX;
    const int P = W <= 4 ? 4 : 2;
    /* more heads than one pass takes: the block's V rows as floats, over
     * its K rows (done with), which each pass loads from L1. Converted
     * per pass, they were a fifth of the accumulators' time at 8 heads
     * (the F16 round trips are the rest, and bound the loop); at one pass
     * the copy costs more than it saves. */
    const bool vf = nh > P;
    if (vf)
        rows_f32(vc, kv->stride, kb, nb, hd, kf);
    /* the next block's lanes: `per` a key and pass, the rest at the end */
    const int t_all = nh * ((nb2 + 15) & ~15), iters = (hd / (16 * W)) * ((nh + P - 1) / P) * nb;
    const int per = (t_all + iters - 1) / iters;
    int t = 0;
    /* and the rows ahead, `pper` lines a key and pass */
    const int q_all = (ah->nk + ah->nv) * (hd / 32), pper = (q_all + iters - 1) / iters;
    int q = 0;
    for (int d0 = 0; d0 < hd; d0 += 16 * W) {
        const bool first = d0 == 0;
        for (int h0 = 0; h0 < nh; h0 += P) {
            const int np = nh - h0 < P ? nh - h0 : P;
            __m512 A[4][W_MAX];
            float Sh[4];
            _Pragma("GCC unroll 4") for (int p = 0; p < P; p++)
                _Pragma("GCC unroll 8") for (int w = 0; w < W; w++)
                    A[p][w] = p < np ? _mm512_loadu_ps(acc + (size_t)(h0 + p) * hd + d0 + 16 * w) : _mm512_setzero_ps();
            for (int p = 0; p < np; p++)
                Sh[p] = S[h0 + p];
            for (int j = 0; j < nb; j++) {
                __m512 V[W_MAX];
                if (vf) {
                    const float *vr = kf + (size_t)j * hd + d0;
                    _Pragma("GCC unroll 8") for (int w = 0; w < W; w++)
                        V[w] = _mm512_loadu_ps(vr + 16 * w);
                } else {
                    const fp16_t *vr = vc + (int64_t)(kb + j) * kv->stride + d0;
                    _Pragma("GCC unroll 8") for (int w = 0; w < W; w++)
                        V[w] = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(vr + 16 * w)));
                }
                _Pragma("GCC unroll 4") for (int p = 0; p < P; p++) {
                    if (p >= np)
                        break;
                    const int h = h0 + p;
                    const float e = sc[(size_t)h * GB + j];
                    const bool nw = nm[h * (GB / 16) + j / 16] >> (j & 15) & 1;
                    if (nw) {
                        const __m512 ms = _mm512_set1_ps(e);
                        _Pragma("GCC unroll 8") for (int w = 0; w < W; w++)
                            A[p][w] = r16(_mm512_mul_ps(A[p][w], ms));
                    }
                    const __m512 vv = _mm512_set1_ps(key_step(nw, e, first, &Sh[p]));
                    _Pragma("GCC unroll 8") for (int w = 0; w < W; w++)
                        A[p][w] = r16(_mm512_fmadd_ps(V[w], vv, A[p][w]));
                }
                if (t < t_all) {
                    const int t1 = t + per < t_all ? t + per : t_all;
                    block_dots(kf2, qf, nb2, t, t1, ln, hd);
                    t = t1;
                }
                if (q < q_all) {
                    const int q1 = q + pper < q_all ? q + pper : q_all;
                    ahead_fetch(kv, ah, q, q1, hd);
                    q = q1;
                }
            }
            _Pragma("GCC unroll 4") for (int p = 0; p < P; p++) {
                if (p >= np)
                    break;
                _Pragma("GCC unroll 8") for (int w = 0; w < W; w++)
                    _mm512_storeu_ps(acc + (size_t)(h0 + p) * hd + d0 + 16 * w, A[p][w]);
                S[h0 + p] = Sh[p];
            }
        }
    }
    block_dots(kf2, qf, nb2, t, t_all, ln, hd);
}

/* the width's pieces for the shared chunk driver below */
typedef uint16_t nm_t; /* new-maximum bits of 16 keys */
static inline void round_q(const float *q, float *qf, int hd)
{
    for (int d = 0; d < hd; d += 16)
        _mm512_storeu_ps(qf + d, r16(_mm512_loadu_ps(q + d)));
}

#elif defined(FWD_F16C)

/* Without AVX-512 (AVX2, F16C, FMA): the same steps on 8-lane registers.
 * A key's 16 K.Q lanes are two registers, reduced as _mm512_reduce_add_ps
 * does (the halves, then 4 + 4, 2 + 2, 1 + 1) for 8 keys at once; the
 * running maximum by an 8-lane prefix scan; expf on vector lanes in
 * glibc's order (expf_libm_n); the accumulators of four heads side by side,
 * 16 elements a pass, rounded to F16 after every multiply and multiply-add
 * as ggml stores them. */

static inline __m256 r16x8(__m256 x) { return _mm256_cvtph_ps(_mm256_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT)); }

/* ggml_vec_dot_f16's 16 lanes for one key (lo: lanes 0-7, hi: 8-15),
 * then the first step of the reduction: lo + hi. */
static inline __attribute__((always_inline)) __m256 dot_lanes8(const float *k, const float *q, int hd)
{
#define L(p) _mm256_loadu_ps(p)
    if (hd == 64) {
        /* acc_j is one exact product, so acc0 + acc2 = fma(k2, q2, acc0) */
        const __m256 a0l = _mm256_mul_ps(L(k), L(q)), a0h = _mm256_mul_ps(L(k + 8), L(q + 8));
        const __m256 a1l = _mm256_mul_ps(L(k + 16), L(q + 16)), a1h = _mm256_mul_ps(L(k + 24), L(q + 24));
        const __m256 a02l = _mm256_fmadd_ps(L(k + 32), L(q + 32), a0l), a02h = _mm256_fmadd_ps(L(k + 40), L(q + 40), a0h);
        const __m256 a13l = _mm256_fmadd_ps(L(k + 48), L(q + 48), a1l), a13h = _mm256_fmadd_ps(L(k + 56), L(q + 56), a1h);
        return _mm256_add_ps(_mm256_add_ps(a02l, a13l), _mm256_add_ps(a02h, a13h));
    }
    __m256 a0l = _mm256_setzero_ps(), a0h = a0l, a1l = a0l, a1h = a0l, a2l = a0l, a2h = a0l, a3l = a0l, a3h = a0l;
    for (int i = 0; i < hd; i += 64) {
        a0l = _mm256_fmadd_ps(L(k + i), L(q + i), a0l);
        a0h = _mm256_fmadd_ps(L(k + i + 8), L(q + i + 8), a0h);
        a1l = _mm256_fmadd_ps(L(k + i + 16), L(q + i + 16), a1l);
        a1h = _mm256_fmadd_ps(L(k + i + 24), L(q + i + 24), a1h);
        a2l = _mm256_fmadd_ps(L(k + i + 32), L(q + i + 32), a2l);
        a2h = _mm256_fmadd_ps(L(k + i + 40), L(q + i + 40), a2h);
        a3l = _mm256_fmadd_ps(L(k + i + 48), L(q + i + 48), a3l);
        a3h = _mm256_fmadd_ps(L(k + i + 56), L(q + i + 56), a3h);
    }
#undef L
    const __m256 vl = _mm256_add_ps(_mm256_add_ps(a0l, a2l), _mm256_add_ps(a1l, a3l));
    const __m256 vh = _mm256_add_ps(_mm256_add_ps(a0h, a2h), _mm256_add_ps(a1h, a3h));
    return _mm256_add_ps(vl, vh);
}

/* The rest of _mm512_reduce_add_ps for 8 keys (t[k]: key k's 8 lanes after
 * lo + hi): lane k of the result is key k's sum (lanes i + 4, then i + 2,
 * then i + 1 added). */
static inline __attribute__((always_inline)) __m256 reduce8x8(const __m256 t[8])
{
    __m256 x[4], y[2];
    _Pragma("GCC unroll 4") for (int m = 0; m < 4; m++) /* [key 2m's 4 sums | key 2m+1's] */
        x[m] = _mm256_add_ps(_mm256_permute2f128_ps(t[2 * m], t[2 * m + 1], 0x20),
                             _mm256_permute2f128_ps(t[2 * m], t[2 * m + 1], 0x31));
    _Pragma("GCC unroll 2") for (int m = 0; m < 2; m++) /* 128-bit half h: keys 4m + h, 4m + 2 + h, two sums each */
        y[m] = _mm256_add_ps(_mm256_shuffle_ps(x[2 * m], x[2 * m + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                             _mm256_shuffle_ps(x[2 * m], x[2 * m + 1], _MM_SHUFFLE(3, 2, 3, 2)));
    /* half h: keys h, 2 + h, 4 + h, 6 + h */
    const __m256 z = _mm256_add_ps(_mm256_shuffle_ps(y[0], y[1], _MM_SHUFFLE(2, 0, 2, 0)),
                                   _mm256_shuffle_ps(y[0], y[1], _MM_SHUFFLE(3, 1, 3, 1)));
    return _mm256_permutevar8x32_ps(z, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

/* lane i gets v[i - k], lanes below k get fill (k a constant: the
 * permutation from up8_idx + 7 - k, the blend's immediate) */
static const int32_t up8_idx[15] = {0, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7};
#define UP8(v, fill, k)                                                                                            \
    _mm256_blend_ps(_mm256_permutevar8x32_ps((v), _mm256_loadu_si256((const __m256i *)(up8_idx + 7 - (k)))),       \
                    (fill), (1 << (k)) - 1)

/* attn_scan16's steps for 8 scores: the exp arguments to arg, the new
 * maximum bits returned, *Mv the maximum after them (every lane). */
static inline __attribute__((always_inline)) int scan8(__m256 s, __m256 ninf, __m256 *Mv, float *arg)
{
    /* no score above the running maximum (most groups once it has
     * settled): every maximum before a key is M itself, the steps below
     * would give s - M and no bits (a NaN score is never above it) */
    if (_mm256_movemask_ps(_mm256_cmp_ps(s, *Mv, _CMP_GT_OQ)) == 0) {
        _mm256_storeu_ps(arg, _mm256_sub_ps(s, *Mv));
        return 0;
    }
    __m256 p = _mm256_max_ps(s, UP8(s, ninf, 1));
    p = _mm256_max_ps(p, UP8(p, ninf, 2));
    p = _mm256_max_ps(p, UP8(p, ninf, 4));
    p = _mm256_max_ps(p, *Mv);
    const __m256 before = UP8(p, *Mv, 1);
    const __m256 nw = _mm256_cmp_ps(s, before, _CMP_GT_OQ);
    _mm256_storeu_ps(arg, _mm256_blendv_ps(_mm256_sub_ps(s, before), _mm256_sub_ps(before, s), nw));
    *Mv = _mm256_permutevar8x32_ps(p, _mm256_set1_epi32(7));
    return _mm256_movemask_ps(nw);
}

/* group_block's steps on 8 lanes: key j's new-maximum bit is bit j % 8 of
 * nm[h][j / 8]. */
static inline __attribute__((always_inline)) void group_block(const attn_kv *kv, const float *qf, int nh, int32_t kb,
                                                              int nb, float *kf, float *sc, uint8_t *nm, float *acc,
                                                              float *M, float *S, const kv_ahead *ah, const int hd)
{
    const fp16_t *kc = (const fp16_t *)kv->k, *vc = (const fp16_t *)kv->v;
    const int nb8 = (nb + 7) & ~7;
    for (int j = 0; j < nb; j++) {
        const fp16_t *kr = kc + (int64_t)(kb + j) * kv->stride;
        for (int d = 0; d < hd; d += 8)
            _mm256_storeu_ps(kf + (size_t)j * hd + d, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(kr + d))));
    }
    const __m256 ninf = _mm256_set1_ps(-INFINITY), scale = _mm256_set1_ps(kv->scale);
    for (int h = 0; h < nh; h++) {
        const float *qh = qf + (size_t)h * hd;
        float *sh = sc + (size_t)h * GB;
        __m256 Mv = _mm256_set1_ps(M[h]);
        for (int j = 0; j < nb8; j += 8) {
            __m256 t[8];
            if (nb - j >= 8) {
                /* whole groups unrolled: the 8 sums stay in registers (a
                 * rolled loop kept them on the stack, and reduce8x8 read
                 * them back from it) */
                _Pragma("GCC unroll 8") for (int l = 0; l < 8; l++)
                    t[l] = dot_lanes8(kf + (size_t)(j + l) * hd, qh, hd);
            } else {
                for (int l = 0; l < 8; l++)
                    t[l] = j + l < nb ? dot_lanes8(kf + (size_t)(j + l) * hd, qh, hd) : _mm256_setzero_ps();
            }
            __m256 s = _mm256_mul_ps(reduce8x8(t), scale);
            if (nb - j < 8) /* keys past the block: -inf, never a new maximum */
                s = _mm256_blendv_ps(ninf, s, _mm256_castsi256_ps(_mm256_cmpgt_epi32(
                                                  _mm256_set1_epi32(nb - j), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7))));
            nm[h * (GB / 8) + j / 8] = (uint8_t)scan8(s, ninf, &Mv, sh + j);
        }
        M[h] = _mm256_cvtss_f32(Mv);
        expf_libm_n(sh, sh, nb8);
    }
    /* four heads' accumulators, 16 elements a pass: each V conversion
     * serves four heads (two: 3 % slower; the F16 round trips after every
     * multiply-add bound this loop) */
    enum { W = 2, P = 4 };
    /* the rows ahead, `pper` lines a group of 8 keys and pass */
    const int iters = (hd / (8 * W)) * ((nh + P - 1) / P) * ((nb + 7) / 8);
    const int q_all = (ah->nk + ah->nv) * (hd / 32), pper = (q_all + iters - 1) / iters;
    int q = 0;
    for (int d0 = 0; d0 < hd; d0 += 8 * W) {
        const bool first = d0 == 0; /* the sums S advance in the first pass */
        for (int h0 = 0; h0 < nh; h0 += P) {
            const int np = nh - h0 < P ? nh - h0 : P;
            __m256 A[P][W];
            float Sh[P];
            _Pragma("GCC unroll 4") for (int p = 0; p < P; p++) {
                Sh[p] = p < np ? S[h0 + p] : 0.0f;
                _Pragma("GCC unroll 4") for (int w = 0; w < W; w++)
                    A[p][w] = p < np ? _mm256_loadu_ps(acc + (size_t)(h0 + p) * hd + d0 + 8 * w) : _mm256_setzero_ps();
            }
            for (int g = 0; g < nb; g += 8) {
                if (q < q_all) {
                    const int q1 = q + pper < q_all ? q + pper : q_all;
                    ahead_fetch(kv, ah, q, q1, hd);
                    q = q1;
                }
                unsigned any_new = 0;
                for (int p = 0; p < np; p++)
                    any_new |= nm[(h0 + p) * (GB / 8) + g / 8];
                if (any_new == 0 && nb - g >= 8) {
                    /* no new maximum for these heads in 8 keys (most
                     * groups): each key weighs its exp, S += e */
                    for (int j = g; j < g + 8; j++) {
                        const fp16_t *vr = vc + (int64_t)(kb + j) * kv->stride + d0;
                        __m256 V[W];
                        _Pragma("GCC unroll 4") for (int w = 0; w < W; w++)
                            V[w] = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(vr + 8 * w)));
                        _Pragma("GCC unroll 4") for (int p = 0; p < P; p++) {
                            if (p >= np)
                                break;
                            const float *e = sc + (size_t)(h0 + p) * GB + j;
                            const __m256 vv = _mm256_broadcast_ss(e);
                            if (first)
                                Sh[p] += *e;
                            _Pragma("GCC unroll 4") for (int w = 0; w < W; w++)
                                A[p][w] = r16x8(_mm256_fmadd_ps(V[w], vv, A[p][w]));
                        }
                    }
                    continue;
                }
                for (int j = g; j < nb && j < g + 8; j++) {
                    const fp16_t *vr = vc + (int64_t)(kb + j) * kv->stride + d0;
                    __m256 V[W];
                    _Pragma("GCC unroll 4") for (int w = 0; w < W; w++)
                        V[w] = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(vr + 8 * w)));
                    _Pragma("GCC unroll 4") for (int p = 0; p < P; p++) {
                        if (p >= np)
                            break;
                        const int h = h0 + p;
                        const float e = sc[(size_t)h * GB + j];
                        const bool nw = nm[h * (GB / 8) + j / 8] >> (j & 7) & 1;
                        if (nw) {
                            const __m256 ms = _mm256_set1_ps(e);
                            _Pragma("GCC unroll 4") for (int w = 0; w < W; w++)
                                A[p][w] = r16x8(_mm256_mul_ps(A[p][w], ms));
                        }
                        const __m256 vv = _mm256_set1_ps(key_step(nw, e, first, &Sh[p]));
                        _Pragma("GCC unroll 4") for (int w = 0; w < W; w++)
                            A[p][w] = r16x8(_mm256_fmadd_ps(V[w], vv, A[p][w]));
                    }
                }
            }
            _Pragma("GCC unroll 4") for (int p = 0; p < P; p++) {
                if (p >= np)
                    break;
                _Pragma("GCC unroll 4") for (int w = 0; w < W; w++)
                    _mm256_storeu_ps(acc + (size_t)(h0 + p) * hd + d0 + 8 * w, A[p][w]);
                if (first)
                    S[h0 + p] = Sh[p];
            }
        }
    }
}

typedef uint8_t nm_t; /* new-maximum bits of 8 keys */
static inline void round_q(const float *q, float *qf, int hd)
{
    for (int d = 0; d < hd; d += 8)
        _mm256_storeu_ps(qf + d, r16x8(_mm256_loadu_ps(q + d)));
}

#endif

#ifdef FWD_F16C

static inline __attribute__((always_inline)) void group_chunk_hd(const attn_kv *kv, const float *q, int nh,
                                                                 int32_t k0, int32_t k1, float *scratch, float *vkq,
                                                                 float *M, float *S, const int hd)
{
    float *qf = scratch, *kf = qf + (size_t)ATTN_GROUP_MAX * hd, *sc = kf + (size_t)GB * hd;
    nm_t nm[ATTN_GROUP_MAX * GB / (8 * sizeof(nm_t))];
    for (int h = 0; h < nh; h++) {
        /* Q rounded to F16 (ggml converts it to the cache type) */
        round_q(q + (size_t)h * hd, qf + (size_t)h * hd, hd);
        M[h] = -INFINITY;
        S[h] = 0.0f;
    }
    memset(vkq, 0, sizeof(float) * (size_t)nh * hd);
    /* the block's K rows as floats stay in L1 (48 KB here) for all the
     * heads: 64 keys up to 128-wide heads, 32 of 256, 16 of 512 */
    const int gb = hd <= 128 ? GB : GB * 128 / hd;
#ifdef GROUP_AVX512
    /* block b's accumulators with block b + 1's K.Q lanes (block_acc),
     * then b + 1's scores: every head's numbers in the same order. One
     * Zen 4 thread, depth 4096, 8 heads, ns a key (bench_attn HD 8 4096 1
     * one): hd 128 113 -> 108, 256 252-256 -> 206-210, 512 513-524 ->
     * 471-478. The first block's scores, and every block's for 64-wide
     * heads (where the lanes' trip through memory cost more than the
     * overlap gave: 61 against 57 ns a key for 8 heads), come straight
     * from registers. */
    const fp16_t *kc = (const fp16_t *)kv->k;
    float *kf2 = sc + (size_t)ATTN_GROUP_MAX * GB, *ln = kf2 + (size_t)GB * hd;
    const bool pipe = hd >= 128; /* known per instance: each loop keeps one way to its scores */
    if (pipe && k0 < k1) {
        const int nb = k1 - k0 < gb ? k1 - k0 : gb;
        rows_f32(kc, kv->stride, k0, nb, hd, kf);
        block_scores(kv, qf, nh, nb, kf, ln, sc, nm, M, true, hd);
    }
    for (int32_t kb = k0; kb < k1; kb += gb) {
        const int nb = k1 - kb < gb ? k1 - kb : gb;
        if (!pipe) {
            rows_f32(kc, kv->stride, kb, nb, hd, kf);
            block_scores(kv, qf, nh, nb, kf, ln, sc, nm, M, true, hd);
        }
        const int32_t kb2 = kb + gb;
        const int nb2 = pipe && kb2 < k1 ? (k1 - kb2 < gb ? k1 - kb2 : gb) : 0;
        if (nb2)
            rows_f32(kc, kv->stride, kb2, nb2, hd, kf2);
        /* ahead: the next block's V, and the K of the block after it (of
         * the next block when its K.Q comes first, !pipe) */
        const int32_t kn = kb + gb, kn2 = pipe ? kn + gb : kn;
        const kv_ahead ah = {kn2, kn2 < k1 ? (k1 - kn2 < gb ? k1 - kn2 : gb) : 0, kn,
                             kn < k1 ? (k1 - kn < gb ? k1 - kn : gb) : 0};
        block_acc(kv, qf, nh, kb, nb, kf, sc, nm, vkq, S, kf2, nb2, ln, &ah, hd);
        if (nb2)
            block_scores(kv, qf, nh, nb2, kf2, ln, sc, nm, M, false, hd);
    }
#else
    for (int32_t kb = k0; kb < k1; kb += gb) {
        const int nb = k1 - kb < gb ? k1 - kb : gb;
        /* ahead: the next block's K and V */
        const int32_t kn = kb + gb;
        const int nn = kn < k1 ? (k1 - kn < gb ? k1 - kn : gb) : 0;
        const kv_ahead ah = {kn, nn, kn, nn};
        group_block(kv, qf, nh, kb, nb, kf, sc, nm, vkq, M, S, &ah, hd);
    }
#endif
}

void attn_group_chunk(const attn_kv *kv, const float *q, int nh, int32_t k0, int32_t k1, float *scratch, float *vkq,
                      float *M, float *S)
{
    switch (kv->hd) {
    case 64:
        group_chunk_hd(kv, q, nh, k0, k1, scratch, vkq, M, S, 64);
        break;
    case 128:
        group_chunk_hd(kv, q, nh, k0, k1, scratch, vkq, M, S, 128);
        break;
    case 256:
        group_chunk_hd(kv, q, nh, k0, k1, scratch, vkq, M, S, 256);
        break;
    default: /* attn_group_ok */
        group_chunk_hd(kv, q, nh, k0, k1, scratch, vkq, M, S, 512);
        break;
    }
}

#else

void attn_group_chunk(const attn_kv *kv, const float *q, int nh, int32_t k0, int32_t k1, float *scratch, float *vkq,
                      float *M, float *S)
{
    (void)kv, (void)q, (void)nh, (void)k0, (void)k1, (void)scratch, (void)vkq, (void)M, (void)S;
}

#endif

void attn_group_row(const attn_kv *kv, const float *q, int nh, int32_t n_kv, float *scratch, float *out)
{
    const int hd = kv->hd;
    const int32_t k0 = kv->window > 0 && n_kv > kv->window ? n_kv - kv->window : 0;
    float M[ATTN_GROUP_MAX], S[ATTN_GROUP_MAX];
    attn_group_chunk(kv, q, nh, k0, n_kv, scratch, out, M, S);
    for (int h = 0; h < nh; h++) {
        if (kv->sinks)
            attn_apply_sink(kv->sinks[h], &M[h], &S[h], out + (size_t)h * hd, hd);
        const float inv = S[h] == 0.0f ? 0.0f : 1.0f / S[h];
        for (int i = 0; i < hd; i++)
            out[(size_t)h * hd + i] *= inv;
    }
}

size_t attn_group_part_floats(int nh, int hd) { return (size_t)nh * ((size_t)hd + 2); }

bool attn_group_part(const attn_kv *kv, const float *q, int nh, int32_t n_kv, int32_t n_view, int n_split, int c,
                     float *scratch, float *pc)
{
    const int hd = kv->hd;
    const int32_t chunk = (n_view + n_split - 1) / n_split;
    float *Mc = pc + (size_t)nh * hd, *Sc = Mc + nh;
    const int32_t lo = kv->window > 0 && n_kv > kv->window ? n_kv - kv->window : 0;
    const int32_t k0 = c * chunk > lo ? c * chunk : lo;
    int32_t k1 = (c + 1) * chunk < n_view ? (c + 1) * chunk : n_view;
    if (k1 > n_kv)
        k1 = n_kv; /* keys past the query's position are masked */
    const bool sink = kv->sinks && c == 0; /* the reference's first chunk carries the sink */
    if (k0 < k1) {
        attn_group_chunk(kv, q, nh, k0, k1, scratch, pc, Mc, Sc);
    } else {
        /* nothing visible: S = 0, skipped by the merge (unless the sink) */
        memset(pc, 0, sizeof(float) * (size_t)nh * hd);
        for (int h = 0; h < nh; h++) {
            Mc[h] = -INFINITY;
            Sc[h] = 0.0f;
        }
    }
    if (sink)
        for (int h = 0; h < nh; h++)
            attn_apply_sink(kv->sinks[h], &Mc[h], &Sc[h], pc + (size_t)h * hd, hd);
    return k0 < k1 || sink;
}

/* one chunk's head into the running (o, M, S): ggml_flash_attn_ext_reduce_partials,
 * as GCC contracts it */
static void merge_step(int hd, const float *pc, float Mc, float Sc, float *o, float *M, float *S)
{
    if (Sc == 0.0f)
        return;
    const float Mn = fmaxf(*M, Mc);
    const float so = expf(*M - Mn), sn = expf(Mc - Mn);
    for (int i = 0; i < hd; i++)
        o[i] = fmaf(o[i], so, pc[i] * sn);
    *S = fmaf(*S, so, Sc * sn);
    *M = Mn;
}

static void normalise(int hd, float S, float *o)
{
    if (S != 0.0f) {
        const float inv = 1.0f / S;
        for (int i = 0; i < hd; i++)
            o[i] *= inv;
    }
}

void attn_group_merge(int nh, int hd, int n_split, const float *parts, int h, float *out)
{
    float M = -INFINITY, S = 0.0f;
    memset(out, 0, sizeof(float) * (size_t)hd);
    for (int c = 0; c < n_split; c++) {
        const float *pc = parts + (size_t)c * attn_group_part_floats(nh, hd);
        merge_step(hd, pc + (size_t)h * hd, pc[(size_t)nh * hd + h], pc[(size_t)nh * hd + nh + h], out, &M, &S);
    }
    normalise(hd, S, out);
}

void attn_group_split(const attn_kv *kv, const float *q, int nh, int32_t n_kv, int32_t n_view, int n_split,
                      float *scratch, float *out)
{
    const int hd = kv->hd;
    float *part = scratch + attn_group_scratch_floats(hd) - (size_t)ATTN_GROUP_MAX * ((size_t)hd + 2) - 64;
    float M[ATTN_GROUP_MAX], S[ATTN_GROUP_MAX];
    for (int h = 0; h < nh; h++) {
        M[h] = -INFINITY;
        S[h] = 0.0f;
    }
    memset(out, 0, sizeof(float) * (size_t)nh * hd);
    for (int c = 0; c < n_split; c++) {
        if (!attn_group_part(kv, q, nh, n_kv, n_view, n_split, c, scratch, part))
            continue;
        for (int h = 0; h < nh; h++)
            merge_step(hd, part + (size_t)h * hd, part[(size_t)nh * hd + h], part[(size_t)nh * hd + nh + h],
                       out + (size_t)h * hd, &M[h], &S[h]);
    }
    for (int h = 0; h < nh; h++)
        normalise(hd, S[h], out + (size_t)h * hd);
}
