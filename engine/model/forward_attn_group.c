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
 * K and V rows are read once per block for the whole group. */
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

size_t attn_group_scratch_floats(int hd)
{
    /* Q as rounded floats (16 heads), K block as floats, scores/expf per
     * head and block, one split chunk's results */
    return (size_t)ATTN_GROUP_MAX * (size_t)hd + (size_t)GB * (size_t)hd + (size_t)ATTN_GROUP_MAX * GB +
           (size_t)ATTN_GROUP_MAX * ((size_t)hd + 2) + 64;
}

bool attn_group_ok(const attn_kv *kv)
{
#ifdef GROUP_AVX512
    return kv->f16 && !kv->generic && (kv->hd == 64 || kv->hd == 128 || kv->hd == 256 || kv->hd == 512) &&
           expf_libm_exact();
#else
    (void)kv;
    return false;
#endif
}

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

/* One block of keys [kb, kb + nb) of a chunk, all heads: the scores, each
 * key's new-maximum bit and exp (sc[h][j]; bit j of nm[h][j / 16]), with
 * the running maxima M; then the accumulators and sums. */
static inline __attribute__((always_inline)) void group_block(const attn_kv *kv, const float *qf, int nh, int32_t kb,
                                                              int nb, float *kf, float *sc, uint16_t *nm, float *acc,
                                                              float *M, float *S, const int hd)
{
    const fp16_t *kc = (const fp16_t *)kv->k, *vc = (const fp16_t *)kv->v;
    const int nb16 = (nb + 15) & ~15;
    for (int j = 0; j < nb; j++) {
        const fp16_t *kr = kc + (int64_t)(kb + j) * kv->stride;
        for (int d = 0; d < hd; d += 16)
            _mm512_storeu_ps(kf + (size_t)j * hd + d, _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(kr + d))));
    }
    const __m512 ninf = _mm512_set1_ps(-INFINITY), scale = _mm512_set1_ps(kv->scale);
    for (int h = 0; h < nh; h++) {
        const float *qh = qf + (size_t)h * hd;
        float *sh = sc + (size_t)h * GB;
        __m512 Mv = _mm512_set1_ps(M[h]);
        for (int j = 0; j < nb16; j += 16) {
            __m512 v[16];
            if (nb - j >= 16) {
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
    /* the accumulators, up to 4 heads side by side (independent chains) */
    enum { W_MAX = 8 };
    /* heads wider than 128 in passes of 128, two heads at a time (a pass of
     * 256 held 16 accumulators and 16 V vectors, and spilled): each
     * output's chain over the keys is its own, so the passes are the same
     * numbers; the sums S advance in the first */
    const int W = hd / 16 < W_MAX ? hd / 16 : W_MAX;
    const int P = W <= 4 ? 4 : 2;
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
                const fp16_t *vr = vc + (int64_t)(kb + j) * kv->stride + d0;
                __m512 V[W_MAX];
                _Pragma("GCC unroll 8") for (int w = 0; w < W; w++)
                    V[w] = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(vr + 16 * w)));
                _Pragma("GCC unroll 4") for (int p = 0; p < P; p++) {
                    if (p >= np)
                        break;
                    const int h = h0 + p;
                    const float e = sc[(size_t)h * GB + j];
                    float vs = e;
                    if (nm[h * (GB / 16) + j / 16] >> (j & 15) & 1) {
                        const __m512 ms = _mm512_set1_ps(e);
                        _Pragma("GCC unroll 8") for (int w = 0; w < W; w++)
                            A[p][w] = r16(_mm512_mul_ps(A[p][w], ms));
                        if (first)
                            Sh[p] = fmaf(Sh[p], e, 1.0f);
                        vs = 1.0f;
                    } else if (first) {
                        Sh[p] += e; /* fma(S, 1, vs) */
                    }
                    const __m512 vv = _mm512_set1_ps(vs);
                    _Pragma("GCC unroll 8") for (int w = 0; w < W; w++)
                        A[p][w] = r16(_mm512_fmadd_ps(V[w], vv, A[p][w]));
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
}

static inline __attribute__((always_inline)) void group_chunk_hd(const attn_kv *kv, const float *q, int nh,
                                                                 int32_t k0, int32_t k1, float *scratch, float *vkq,
                                                                 float *M, float *S, const int hd)
{
    float *qf = scratch, *kf = qf + (size_t)ATTN_GROUP_MAX * hd, *sc = kf + (size_t)GB * hd;
    uint16_t nm[ATTN_GROUP_MAX * GB / 16];
    for (int h = 0; h < nh; h++) {
        /* Q rounded to F16 (ggml converts it to the cache type) */
        for (int d = 0; d < hd; d += 16)
            _mm512_storeu_ps(qf + (size_t)h * hd + d, r16(_mm512_loadu_ps(q + (size_t)h * hd + d)));
        M[h] = -INFINITY;
        S[h] = 0.0f;
    }
    memset(vkq, 0, sizeof(float) * (size_t)nh * hd);
    /* the block's K rows as floats stay in L1 (48 KB here) for all the
     * heads: 64 keys up to 128-wide heads, 32 of 256, 16 of 512 */
    const int gb = hd <= 128 ? GB : GB * 128 / hd;
    for (int32_t kb = k0; kb < k1; kb += gb) {
        const int nb = k1 - kb < gb ? k1 - kb : gb;
        group_block(kv, qf, nh, kb, nb, kf, sc, nm, vkq, M, S, hd);
    }
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

void attn_group_split(const attn_kv *kv, const float *q, int nh, int32_t n_kv, int32_t n_view, int n_split,
                      float *scratch, float *out)
{
    const int hd = kv->hd;
    const int32_t chunk = (n_view + n_split - 1) / n_split;
    float *part = scratch + attn_group_scratch_floats(hd) - (size_t)ATTN_GROUP_MAX * ((size_t)hd + 2) - 64;
    float *Mc = part + (size_t)ATTN_GROUP_MAX * hd, *Sc = Mc + ATTN_GROUP_MAX;
    float M[ATTN_GROUP_MAX], S[ATTN_GROUP_MAX];
    for (int h = 0; h < nh; h++) {
        M[h] = -INFINITY;
        S[h] = 0.0f;
    }
    memset(out, 0, sizeof(float) * (size_t)nh * hd);
    const int32_t lo = kv->window > 0 && n_kv > kv->window ? n_kv - kv->window : 0;
    for (int c = 0; c < n_split; c++) {
        const int32_t k0 = c * chunk > lo ? c * chunk : lo;
        int32_t k1 = (c + 1) * chunk < n_view ? (c + 1) * chunk : n_view;
        if (k1 > n_kv)
            k1 = n_kv; /* keys past the query's position are masked */
        const bool sink = kv->sinks && c == 0; /* the reference's first chunk carries the sink */
        if (k0 >= k1 && !sink)
            continue; /* nothing visible: S = 0, skipped by the merge */
        if (k0 < k1) {
            attn_group_chunk(kv, q, nh, k0, k1, scratch, part, Mc, Sc);
        } else {
            memset(part, 0, sizeof(float) * (size_t)nh * hd);
            for (int h = 0; h < nh; h++) {
                Mc[h] = -INFINITY;
                Sc[h] = 0.0f;
            }
        }
        for (int h = 0; h < nh; h++) {
            if (sink)
                attn_apply_sink(kv->sinks[h], &Mc[h], &Sc[h], part + (size_t)h * hd, hd);
            if (Sc[h] == 0.0f)
                continue;
            /* ggml_flash_attn_ext_reduce_partials, as GCC contracts it */
            const float Mn = fmaxf(M[h], Mc[h]);
            const float so = expf(M[h] - Mn), sn = expf(Mc[h] - Mn);
            float *o = out + (size_t)h * hd;
            const float *pc = part + (size_t)h * hd;
            for (int i = 0; i < hd; i++)
                o[i] = fmaf(o[i], so, pc[i] * sn);
            S[h] = fmaf(S[h], so, Sc[h] * sn);
            M[h] = Mn;
        }
    }
    for (int h = 0; h < nh; h++)
        if (S[h] != 0.0f) {
            const float inv = 1.0f / S[h];
            for (int i = 0; i < hd; i++)
                out[(size_t)h * hd + i] *= inv;
        }
}
