/* Attention kernels in the reference's float order (see forward_attn.h). */
#include "model/forward_attn.h"

#include <math.h>
#include <string.h>

#include "gguf/tensor.h"
#include "kernels/forward_math.h"
#include "kernels/forward_repack.h"
#include "model/attn_scan.h"

/* Whole 64-byte lines: the tiled kernel's 512-bit loads from its K and V
 * tiles cost a third more when they straddle lines (an n_ctx of 4609). */
static size_t line_floats(size_t n) { return (n + 15) & ~(size_t)15; }

/* With AVX-512, four queries go through a tile at once (tile_queries4);
 * without, all of them phase by phase (tile_phased), CQ queries side by
 * side over slices SW wide: 12 accumulators, 2 slice registers and a
 * broadcast; their query rows copied QROW floats apart (a constant offset
 * per query). */
#if defined(__AVX512F__) && defined(FWD_F16C)
#define ATTN_AVX512 1
#endif
enum { CQ = 6, SW = 16, QROW = 512 };

/* tile_phased's scratch: scores (CQ rows past the last query for a last
 * group), query numbers, CQ query rows, the outputs of missing queries */
static size_t attn_tile_phase_floats(int nq)
{
#ifdef ATTN_AVX512
    (void)nq;
    return 0;
#else
    return ((size_t)nq + CQ) * ATTN_TILE + (size_t)nq + (size_t)CQ * QROW + SW;
#endif
}

size_t attn_scratch_floats(int hd, uint32_t n_ctx, int n_heads)
{
    /* scores, part | kt, vt, krow | vkq, M, S per query | tile_phased's */
    const size_t nq = (size_t)n_heads * ATTN_TILE;
    return line_floats(n_ctx) + line_floats((size_t)hd) + 2u * ATTN_TILE * (size_t)hd + (size_t)hd +
           nq * ((size_t)hd + 2u) + attn_tile_phase_floats((int)nq);
}

void attn_scratch_init(attn_scratch *s, float *buf, uint16_t *half, int hd, uint32_t n_ctx)
{
    s->scores = buf;
    s->part = buf + line_floats(n_ctx);
    s->tile = s->part + line_floats((size_t)hd);
    s->half = half;
}

int32_t attn_kv_view(int32_t last_pos)
{
    const int32_t used = last_pos + 1;
    const int32_t pad = (used + 255) / 256 * 256;
    return pad > 256 ? pad : 256;
}

bool attn_use_tiled(int n_tok, int hd) { return n_tok >= ATTN_TILE && hd % 16 == 0; }

/* ---- one chunk ------------------------------------------------------------- */

/* s[i] = ggml_vec_dot_f16(key k0 + i, q) * scale for keys [k0, k1). Heads shorter
 * than 64 are all "tail": one double chain per key, in element order. Four
 * keys run side by side, one per double lane, which keeps every key's chain
 * in its own order while the adds overlap. */
static void kq_scores_f16(const fp16_t *kc, int64_t stride, int32_t k0, int32_t k1, const fp16_t *q, int hd,
                          float scale, float *s)
{
    int32_t ic = k0;
#ifdef FWD_F16C
    if (hd < 64) {
        const int h4 = hd & ~3;
        for (; ic + 4 <= k1; ic += 4) {
            const fp16_t *kr0 = kc + (int64_t)ic * stride;
            __m256d sum = _mm256_setzero_pd();
            for (int i = 0; i < h4; i += 4) {
                const __m128 qv = _mm_cvtph_ps(_mm_loadl_epi64((const __m128i *)(q + i)));
                __m256d p[4];
                for (int k = 0; k < 4; k++) {
                    const __m128 kv = _mm_cvtph_ps(_mm_loadl_epi64((const __m128i *)(kr0 + k * stride + i)));
                    p[k] = _mm256_cvtps_pd(_mm_mul_ps(kv, qv));
                }
                /* transpose: element i + j of the 4 keys, for j = 0..3 */
                const __m256d a = _mm256_unpacklo_pd(p[0], p[1]), b = _mm256_unpackhi_pd(p[0], p[1]);
                const __m256d c = _mm256_unpacklo_pd(p[2], p[3]), d = _mm256_unpackhi_pd(p[2], p[3]);
                sum = _mm256_add_pd(sum, _mm256_permute2f128_pd(a, c, 0x20));
                sum = _mm256_add_pd(sum, _mm256_permute2f128_pd(b, d, 0x20));
                sum = _mm256_add_pd(sum, _mm256_permute2f128_pd(a, c, 0x31));
                sum = _mm256_add_pd(sum, _mm256_permute2f128_pd(b, d, 0x31));
            }
            double r[4];
            _mm256_storeu_pd(r, sum);
            for (int k = 0; k < 4; k++) {
                const fp16_t *kr = kr0 + k * stride;
                for (int i = h4; i < hd; i++)
                    r[k] += (double)(h2f(kr[i]) * h2f(q[i]));
                s[ic - k0 + k] = (float)r[k] * scale;
            }
        }
    }
#endif
    for (; ic < k1; ic++)
        s[ic - k0] = refdot_f16(hd, kc + (int64_t)ic * stride, q) * scale;
}

/* acc = acc * ms (F16 accumulator). */
static void acc16_scale(fp16_t *acc, int hd, float ms)
{
    int i = 0;
#ifdef FWD_F16C
    const __m256 vm = _mm256_set1_ps(ms);
    for (; i + 8 <= hd; i += 8) {
        const __m256 a = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(acc + i)));
        _mm_storeu_si128((__m128i *)(acc + i), _mm256_cvtps_ph(_mm256_mul_ps(a, vm), _MM_FROUND_TO_NEAREST_INT));
    }
#endif
    for (; i < hd; i++)
        acc[i] = f2h(h2f(acc[i]) * ms);
}

/* acc = fma(v, vs, acc), rounded to F16 (ggml_vec_mad_f16). */
static void acc16_mad(fp16_t *acc, const fp16_t *v, int hd, float vs)
{
    int i = 0;
#ifdef FWD_F16C
    const __m256 vv = _mm256_set1_ps(vs);
    for (; i + 8 <= hd; i += 8) {
        const __m256 a = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(acc + i)));
        const __m256 x = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(v + i)));
        _mm_storeu_si128((__m128i *)(acc + i), _mm256_cvtps_ph(_mm256_fmadd_ps(x, vv, a), _MM_FROUND_TO_NEAREST_INT));
    }
#endif
    for (; i < hd; i++)
        acc[i] = f2h(fmaf(h2f(v[i]), vs, h2f(acc[i])));
}

/* The F16 cache's key loop of one_chunk. With reg8 (an 8-wide head, F16C)
 * one register holds the accumulator, rounded through vcvtps2ph and back
 * exactly where acc16_scale / acc16_mad store it: the same values without a
 * store and reload per key, which made the per-key chain twice as long
 * (stories260K's 8-wide heads, where this loop is most of a prompt). */
static inline __attribute__((always_inline)) void keys_f16(const float *scores, int32_t k0, int32_t k1,
                                                           const fp16_t *vc, int64_t stride, int hd, fp16_t *acc,
                                                           bool reg8, float *M_io, float *S_io)
{
    float M = *M_io, S = *S_io;
#ifdef FWD_F16C
    __m256 a = _mm256_setzero_ps(); /* acc starts at 0 */
#else
    (void)reg8;
#endif
    for (int32_t ic = k0; ic < k1; ic++) {
        const float s = scores[ic - k0];
        const fp16_t *v = vc + (int64_t)ic * stride;
        float ms = 1.0f, vs = 1.0f;
        if (s > M) {
            const float Mold = M;
            M = s;
            ms = expf(Mold - M);
#ifdef FWD_F16C
            if (reg8)
                a = _mm256_cvtph_ps(_mm256_cvtps_ph(_mm256_mul_ps(a, _mm256_set1_ps(ms)), _MM_FROUND_TO_NEAREST_INT));
            else
#endif
                acc16_scale(acc, hd, ms);
        } else {
            vs = expf(s - M);
        }
#ifdef FWD_F16C
        if (reg8)
            a = _mm256_cvtph_ps(_mm256_cvtps_ph(
                _mm256_fmadd_ps(_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)v)), _mm256_set1_ps(vs), a),
                _MM_FROUND_TO_NEAREST_INT));
        else
#endif
            acc16_mad(acc, v, hd, vs);
        S = fmaf(S, ms, vs); /* the reference compiles this to an FMA */
    }
#ifdef FWD_F16C
    if (reg8) /* a holds F16 values: exact */
        _mm_storeu_si128((__m128i *)acc, _mm256_cvtps_ph(a, _MM_FROUND_TO_NEAREST_INT));
#endif
    *M_io = M;
    *S_io = S;
}

/* ggml's one-chunk online softmax over keys [k0, k1): vkq (F32, not yet
 * divided by S), M and S. Q is rounded to the cache type first. */
static void one_chunk(const attn_kv *kv, const float *q, int32_t k0, int32_t k1, const attn_scratch *sc, float *vkq,
                      float *M_out, float *S_out)
{
    const int hd = kv->hd;
    float *scores = sc->scores;
    float S = 0.0f, M = -INFINITY;
    if (kv->f16) {
        fp16_t *qh = sc->half;
        fp16_t *acc = qh + hd;
        for (int i = 0; i < hd; i++) {
            qh[i] = f2h(q[i]);
            acc[i] = 0;
        }
        const fp16_t *kc = kv->k, *vc = kv->v;
        kq_scores_f16(kc, kv->stride, k0, k1, qh, hd, kv->scale, scores);
#ifdef FWD_F16C
        if (hd == 8)
            keys_f16(scores, k0, k1, vc, kv->stride, hd, acc, true, &M, &S);
        else
#endif
            keys_f16(scores, k0, k1, vc, kv->stride, hd, acc, false, &M, &S);
        for (int i = 0; i < hd; i++)
            vkq[i] = h2f(acc[i]);
    } else {
        const float *kc = kv->k, *vc = kv->v;
        for (int i = 0; i < hd; i++)
            vkq[i] = 0.0f;
        for (int32_t ic = k0; ic < k1; ic++) {
            const float s = refdot_f32(hd, kc + (int64_t)ic * kv->stride, q) * kv->scale;
            const float *vr = vc + (int64_t)ic * kv->stride;
            float ms = 1.0f, vs = 1.0f;
            if (s > M) {
                const float Mold = M;
                M = s;
                ms = expf(Mold - M);
                for (int i = 0; i < hd; i++)
                    vkq[i] *= ms;
            } else {
                vs = expf(s - M);
            }
            for (int i = 0; i < hd; i++)
                vkq[i] = fmaf(vr[i], vs, vkq[i]);
            S = fmaf(S, ms, vs);
        }
    }
    *M_out = M;
    *S_out = S;
}

/* y = fma(v, s, y), lane by lane (ggml_vec_mad_f32: one rounding per
 * element, so any vector width gives the same bits; vec_scale, its
 * partner, is forward_math.h's); GCC's -O2 leaves this loop scalar for a
 * runtime hd */
static void vec_mad(float *y, const float *v, int n, float s)
{
    int i = 0;
#ifdef FWD_F16C
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(y + i, _mm256_fmadd_ps(_mm256_loadu_ps(v + i), _mm256_set1_ps(s), _mm256_loadu_ps(y + i)));
#endif
    for (; i < n; i++)
        y[i] = fmaf(v[i], s, y[i]);
}

/* The sink logit joined to a finished online softmax (M, S, the F32 sums
 * vkq), as ggml's flash-attention kernels do it after their key loops:
 * `S = S*ms + vs`, which the reference compiles to an FMA. */
void attn_apply_sink(float sink, float *M, float *S, float *vkq, int hd)
{
    float ms = 1.0f, vs = 1.0f;
    if (sink > *M) {
        ms = expf(*M - sink);
        *M = sink;
        vec_scale(vkq, hd, ms);
    } else {
        vs = expf(sink - *M);
    }
    *S = fmaf(*S, ms, vs);
}

/* ggml's one-chunk kernel for the other cache types (attn_kv.generic):
 * s = vec_dot(K row, Q in K's dot type) * scale; V accumulated in F16
 * when V is F16 (as above), else in F32 after converting the row. ggml
 * runs each query head alone; here the nh heads that share this KV head
 * (queries q + h * hd, sums vkq + h * hd, M[h], S[h]) go through the keys
 * together, so a key's rows are read, and V converted, once for all of
 * them, and each head's numbers keep their order. */
static void chunk_generic(const attn_kv *kv, const float *q, int nh, int32_t k0, int32_t k1, float *tile,
                          float *vkq, float *M, float *S)
{
    const int hd = kv->hd;
    const enum tensor_type kt = (enum tensor_type)kv->k_type, vt = (enum tensor_type)kv->v_type;
    const bool v16 = vt == TENSOR_TYPE_F16;
    /* tile: each head's Q in K's dot type, a V row, each head's F16 sums */
    const size_t qrow = kt == TENSOR_TYPE_F32 ? (size_t)hd * sizeof(float)
                        : kt == TENSOR_TYPE_F16 ? (size_t)hd * sizeof(fp16_t)
                                                : tensor_row_size(tensor_dot_type(kt), hd);
    const size_t qstep = (qrow + 63) / 64 * 16; /* floats, whole cache lines */
    uint8_t *qd = (uint8_t *)tile;
    float *vrow = tile + (size_t)nh * qstep;
    fp16_t *acc = (fp16_t *)(vrow + ((size_t)hd + 15) / 16 * 16);
    for (int h = 0; h < nh; h++) {
        uint8_t *qh = qd + (size_t)h * qstep * sizeof(float);
        const float *qf = q + (size_t)h * hd;
        /* Q in K's dot type (ggml's from_float of that type) */
        if (kt == TENSOR_TYPE_F32)
            memcpy(qh, qf, sizeof(float) * (size_t)hd);
        else if (kt == TENSOR_TYPE_F16)
            for (int i = 0; i < hd; i++)
                ((fp16_t *)qh)[i] = f2h(qf[i]);
        else
            tensor_quantize_row(tensor_dot_type(kt), qf, qh, hd);
        for (int i = 0; i < hd; i++) {
            vkq[(size_t)h * hd + i] = 0.0f;
            acc[(size_t)h * hd + i] = 0;
        }
        S[h] = 0.0f;
        M[h] = -INFINITY;
    }
    for (int32_t ic = k0; ic < k1; ic++) {
        const uint8_t *kr = (const uint8_t *)kv->k + (size_t)ic * kv->k_row;
        const uint8_t *vr = (const uint8_t *)kv->v + (size_t)ic * kv->v_row;
        if (!v16)
            tensor_dequantize_row(vt, vr, vrow, hd);
        for (int h = 0; h < nh; h++) {
            const uint8_t *qh = qd + (size_t)h * qstep * sizeof(float);
            fp16_t *ah = acc + (size_t)h * hd;
            float *yh = vkq + (size_t)h * hd;
            /* ggml_vec_dot_f16 / _f32 for float keys, the block type's vec_dot otherwise */
            const float s = (kt == TENSOR_TYPE_F16 ? refdot_f16(hd, (const fp16_t *)kr, (const fp16_t *)qh)
                             : kt == TENSOR_TYPE_F32
                                 ? refdot_f32(hd, (const float *)(const void *)kr, (const float *)(const void *)qh)
                                 : tensor_vec_dot(kt, hd, kr, qh)) *
                            kv->scale;
            float ms = 1.0f, vs = 1.0f;
            if (s > M[h]) {
                const float Mold = M[h];
                M[h] = s;
                ms = expf(Mold - M[h]);
                if (v16)
                    acc16_scale(ah, hd, ms);
                else
                    vec_scale(yh, hd, ms);
            } else {
                vs = expf(s - M[h]);
            }
            if (v16)
                acc16_mad(ah, (const fp16_t *)vr, hd, vs);
            else
                vec_mad(yh, vrow, hd, vs);
            S[h] = fmaf(S[h], ms, vs);
        }
    }
    if (v16)
        for (size_t i = 0; i < (size_t)nh * hd; i++)
            vkq[i] = h2f(acc[i]);
}

size_t attn_generic_tile_floats(int hd, int nh)
{
    const size_t qstep = ((size_t)hd * sizeof(float) + 63) / 64 * 16; /* F32 keys' Q, the widest */
    return (size_t)nh * qstep + ((size_t)hd + 15) / 16 * 16 + ((size_t)nh * hd + 1) / 2;
}

void attn_rows_generic(const attn_kv *kv, const float *q, int nh, int32_t n_kv, attn_scratch *s, float *out)
{
    float M[ATTN_GROUP_MAX], S[ATTN_GROUP_MAX];
    const int32_t k0 = kv->window > 0 && n_kv > kv->window ? n_kv - kv->window : 0;
    chunk_generic(kv, q, nh, k0, n_kv, s->tile, out, M, S);
    if (kv->sinks)
        for (int h = 0; h < nh; h++)
            attn_apply_sink(kv->sinks[h], &M[h], &S[h], out + (size_t)h * kv->hd, kv->hd);
    for (int h = 0; h < nh; h++) {
        const float inv = S[h] == 0.0f ? 0.0f : 1.0f / S[h];
        for (int i = 0; i < kv->hd; i++)
            out[(size_t)h * kv->hd + i] *= inv;
    }
}

void attn_row(const attn_kv *kv, const float *q, int32_t n_kv, attn_scratch *s, float *out)
{
    float M, S;
    if (kv->generic) {
        attn_rows_generic(kv, q, 1, n_kv, s, out);
        return;
    }
    /* masked keys are skipped by the reference, so leaving them out is the same */
    const int32_t k0 = kv->window > 0 && n_kv > kv->window ? n_kv - kv->window : 0;
    one_chunk(kv, q, k0, n_kv, s, out, &M, &S);
    if (kv->sinks)
        attn_apply_sink(kv->sinks[0], &M, &S, out, kv->hd);
    const float inv = S == 0.0f ? 0.0f : 1.0f / S;
    for (int i = 0; i < kv->hd; i++)
        out[i] *= inv;
}

/* ---- split KV --------------------------------------------------------------- */

void attn_row_split(const attn_kv *kv, const float *q, int32_t n_kv, int32_t n_view, int n_split, attn_scratch *s,
                    float *out)
{
    const int hd = kv->hd;
    const int32_t chunk = (n_view + n_split - 1) / n_split;
    float *part = s->part;
    float M = -INFINITY, S = 0.0f;
    for (int i = 0; i < hd; i++)
        out[i] = 0.0f;
    const int32_t lo = kv->window > 0 && n_kv > kv->window ? n_kv - kv->window : 0;
    for (int c = 0; c < n_split; c++) {
        const int32_t k0 = c * chunk > lo ? c * chunk : lo;
        int32_t k1 = (c + 1) * chunk < n_view ? (c + 1) * chunk : n_view;
        if (k1 > n_kv)
            k1 = n_kv; /* keys past the query's position are masked */
        const bool sink = kv->sinks && c == 0; /* the reference's first chunk carries the sink */
        if (k0 >= k1 && !sink)
            continue; /* nothing visible: S = 0, skipped by the merge */
        float Mc = -INFINITY, Sc = 0.0f;
        if (k0 < k1)
            one_chunk(kv, q, k0, k1, s, part, &Mc, &Sc);
        else
            for (int i = 0; i < hd; i++)
                part[i] = 0.0f;
        if (sink)
            attn_apply_sink(kv->sinks[0], &Mc, &Sc, part, hd);
        if (Sc == 0.0f)
            continue;
        /* ggml_flash_attn_ext_reduce_partials, as GCC contracts it */
        const float Mn = fmaxf(M, Mc);
        const float so = expf(M - Mn), sn = expf(Mc - Mn);
        for (int i = 0; i < hd; i++)
            out[i] = fmaf(out[i], so, part[i] * sn);
        S = fmaf(S, so, Sc * sn);
        M = Mn;
    }
    if (S != 0.0f) {
        const float inv = 1.0f / S;
        for (int i = 0; i < hd; i++)
            out[i] *= inv;
    }
}

/* ---- tiled ----------------------------------------------------------------- */


/* One cache row as F32 (F16 converted, exactly). */
static void kv_row_f32(const attn_kv *kv, const void *base, int64_t row, float *dst)
{
    const int hd = kv->hd;
    int d = 0;
    if (!kv->f16) {
        memcpy(dst, (const float *)base + row, sizeof(float) * (size_t)hd);
        return;
    }
    const fp16_t *src = (const fp16_t *)base + row;
#ifdef FWD_F16C
    for (; d + 8 <= hd; d += 8)
        _mm256_storeu_ps(dst + d, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(src + d))));
#endif
    for (; d < hd; d++)
        dst[d] = h2f(src[d]);
}

/* The first key a query at pos sees. */
static inline int32_t window_lo(const attn_kv *kv, int32_t pos)
{
    return kv->window > 0 && pos >= kv->window ? pos - kv->window + 1 : 0;
}

/* The tiled kernels' running maximum, fmaxf(m, t) without the libm call
 * GCC makes of fmaxf: neither is a NaN (t is the maximum of a tile with a
 * visible key), and the sign of a zero maximum changes no result (x - 0
 * and x + 0 are x; exp(+-0) is 1). */
static inline float tile_max(float m, float t) { return t > m ? t : m; }

/* True when a query at pos sees a key of the tile starting at ic. */
static inline bool tile_visible(const attn_kv *kv, int32_t ic, int32_t pos)
{
    return ic <= pos && ic + ATTN_TILE > window_lo(kv, pos);
}

#ifdef ATTN_AVX512
/* Bit l: key k0 + l lies in [lo, pos], the keys a query at pos sees. */
static inline __mmask16 keys16_visible(int32_t k0, int32_t lo, int32_t pos)
{
    const int32_t room = pos - k0 + 1; /* keys of the group up to pos */
    __mmask16 vis = room >= 16 ? (__mmask16)0xFFFF : room <= 0 ? (__mmask16)0 : (__mmask16)((1u << room) - 1u);
    const int32_t below = lo - k0; /* keys of the group before the window */
    if (below > 0)
        vis &= below >= 16 ? (__mmask16)0 : (__mmask16)~((1u << below) - 1u);
    return vis;
}
#endif

#if defined(ATTN_AVX512) || defined(FWD_F16C)
/* The K and V rows of the tile at ic (up to key last) on their way to L2
 * while the tile before runs: one cache row apart (512 bytes on
 * TinyLlama), read when needed they came from L3 or memory a few at a
 * time. */
static void tile_prefetch(const attn_kv *kv, int32_t ic, int32_t last)
{
    const size_t esz = kv->f16 ? 2 : 4, rb = esz * (size_t)kv->hd;
    for (int32_t j = ic; j < ic + ATTN_TILE && j <= last; j++) {
        const size_t row = (size_t)j * (size_t)kv->stride * esz;
        for (size_t o = 0; o < rb; o += 64) {
            _mm_prefetch((const char *)kv->k + row + o, _MM_HINT_T1);
            _mm_prefetch((const char *)kv->v + row + o, _MM_HINT_T1);
        }
    }
}
#endif

#if !defined(ATTN_AVX512) && defined(FWD_F16C)
/* r[0..8) transposed in place (r[i] lane j becomes r[j] lane i). */
static inline __attribute__((always_inline)) void tr8x8(__m256 r[8])
{
    __m256 t[8], u[8];
    for (int i = 0; i < 4; i++) {
        t[2 * i] = _mm256_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm256_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    /* per 128-bit half h, u[4g + c] = column 4h + c of rows 4g..4g+3 */
    for (int g = 0; g < 2; g++) {
        u[4 * g] = _mm256_shuffle_ps(t[4 * g], t[4 * g + 2], 0x44);
        u[4 * g + 1] = _mm256_shuffle_ps(t[4 * g], t[4 * g + 2], 0xEE);
        u[4 * g + 2] = _mm256_shuffle_ps(t[4 * g + 1], t[4 * g + 3], 0x44);
        u[4 * g + 3] = _mm256_shuffle_ps(t[4 * g + 1], t[4 * g + 3], 0xEE);
    }
    for (int c = 0; c < 4; c++) {
        r[c] = _mm256_permute2f128_ps(u[c], u[4 + c], 0x20);
        r[4 + c] = _mm256_permute2f128_ps(u[c], u[4 + c], 0x31);
    }
}

/* The K tile transposed (tile_kt's 8-lane form): 8 x 8 blocks through
 * registers, where a row converted and stored element by element cost 64
 * scalar stores a cache line apart per key. */
static void tile_kt(const attn_kv *kv, int32_t ic, int nk, float *kt)
{
    enum { T = ATTN_TILE };
    const int hd = kv->hd;
    for (int j0 = 0; j0 < T; j0 += 8)
        for (int d0 = 0; d0 < hd; d0 += 8) {
            __m256 r[8];
            for (int j = 0; j < 8; j++) {
                const int64_t row = (int64_t)(ic + j0 + j) * kv->stride + d0;
                if (j0 + j >= nk)
                    r[j] = _mm256_setzero_ps();
                else if (kv->f16)
                    r[j] = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)((const fp16_t *)kv->k + row)));
                else
                    r[j] = _mm256_loadu_ps((const float *)kv->k + row);
            }
            tr8x8(r);
            for (int d = 0; d < 8; d++)
                _mm256_storeu_ps(kt + (size_t)(d0 + d) * T + j0, r[d]);
        }
}
#endif

#ifndef ATTN_AVX512
/* The online softmax step of one query (row at position pos) for the tile
 * of keys from ic: masks keys outside [lo, pos], rescales the accumulator when the
 * maximum grows, and turns kq into exp(kq - M) (ggml_vec_soft_max_f32:
 * 8-lane exp, each group of 16 reduced in float and summed in double;
 * tile_queries4 is the AVX-512 form). False when every key is masked. */
static bool tile_softmax(float *kq, int32_t ic, int32_t lo, int32_t pos, float *acc, int hd, float *M, float *S)
{
    enum { T = ATTN_TILE };
    float tmax = -INFINITY;
#ifdef FWD_F16C
    if (ic + T - 1 <= pos && ic >= lo) { /* no key masked (most tiles): the maximum 8 lanes wide */
        __m256 m = _mm256_loadu_ps(kq);
        for (int j = 8; j < T; j += 8)
            m = _mm256_max_ps(m, _mm256_loadu_ps(kq + j));
        __m128 h = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
        h = _mm_max_ps(h, _mm_movehl_ps(h, h));
        tmax = _mm_cvtss_f32(_mm_max_ss(h, _mm_movehdup_ps(h)));
    } else
#endif
        for (int j = 0; j < T; j++) {
            if (ic + j > pos || ic + j < lo)
                kq[j] = -INFINITY;
            tmax = tmax > kq[j] ? tmax : kq[j];
        }
    if (tmax == -INFINITY)
        return false;
    const float Mold = *M, Mnew = tile_max(Mold, tmax);
    if (Mnew > Mold) {
        const float ms = expf(Mold - Mnew);
        vec_scale(acc, hd, ms);
        *S *= ms;
    }
    *M = Mnew;
    double sum = 0.0;
    _Pragma("GCC unroll 4") for (int j = 0; j < T; j += 16)
    {
#ifdef FWD_F16C
        _mm256_storeu_ps(kq + j, v_expf8(_mm256_sub_ps(_mm256_loadu_ps(kq + j), _mm256_set1_ps(Mnew))));
        _mm256_storeu_ps(kq + j + 8, v_expf8(_mm256_sub_ps(_mm256_loadu_ps(kq + j + 8), _mm256_set1_ps(Mnew))));
#else
        for (int l = 0; l < 16; l++)
            kq[j + l] = v_expf(kq[j + l] - Mnew);
#endif
        sum += (double)red16(kq + j);
    }
    *S = (float)((double)*S + sum);
    return true;
}

/* Without AVX-512 a tile runs in three phases over the queries that see
 * it: K.Q, the softmax step, P.V. In each product phase CQ queries go side
 * by side over the tile, a slice of SW keys or head elements at a time:
 * every slice row loaded is used CQ times (12 FMAs per 2 loads and 6
 * broadcasts). One query at a time read the whole F32 tiles (32 KB each
 * at hd = 128) from L2 for every query, a load per FMA: 8.8 ns a query x
 * key (bench_attn: hd 128, 8 heads, depth 8192, one thread), half the FMA
 * rate; this way 5.8, the chains at the FMA rate and three quarters of the
 * time. Each output is the same FMA chain as before, in the same order:
 * K.Q over the head's elements from 0, times the scale (simd_gemm's
 * kq_tile); P.V over the tile's keys from the accumulator.
 *
 * For k < CQ and x < SW: c[k][x] = the chain over r in [0, nr) of
 * fma(m[r * ms + x], b[k * bk + r], .), from c[k][x] (acc_in) or 0, then
 * times scale (do_scale). bk is a constant at every call: each query's
 * operand an offset from one pointer (a pointer per query left too few
 * general registers: in an AVX-512 trial with 12 queries GCC reloaded
 * them from the stack inside the loop). */
static inline __attribute__((always_inline)) void tile_chains(const float *m, size_t ms, int nr, const float *b,
                                                              size_t bk, float *const c[CQ], bool acc_in,
                                                              bool do_scale, float scale)
{
    /* every loop over the registers unrolled: rolled, GCC kept the
     * accumulators on the stack, a store per FMA */
#ifdef FWD_F16C
    __m256 a[CQ][2];
    _Pragma("GCC unroll 6") for (int k = 0; k < CQ; k++)
    {
        a[k][0] = acc_in ? _mm256_loadu_ps(c[k]) : _mm256_setzero_ps();
        a[k][1] = acc_in ? _mm256_loadu_ps(c[k] + 8) : _mm256_setzero_ps();
    }
    for (int r = 0; r < nr; r++) {
        const __m256 m0 = _mm256_loadu_ps(m + (size_t)r * ms), m1 = _mm256_loadu_ps(m + (size_t)r * ms + 8);
        _Pragma("GCC unroll 6") for (int k = 0; k < CQ; k++)
        {
            const __m256 bv = _mm256_broadcast_ss(b + (size_t)k * bk + r);
            a[k][0] = _mm256_fmadd_ps(m0, bv, a[k][0]);
            a[k][1] = _mm256_fmadd_ps(m1, bv, a[k][1]);
        }
    }
    const __m256 vs = _mm256_set1_ps(scale);
    _Pragma("GCC unroll 6") for (int k = 0; k < CQ; k++)
    {
        _mm256_storeu_ps(c[k], do_scale ? _mm256_mul_ps(a[k][0], vs) : a[k][0]);
        _mm256_storeu_ps(c[k] + 8, do_scale ? _mm256_mul_ps(a[k][1], vs) : a[k][1]);
    }
#else
    for (int k = 0; k < CQ; k++)
        for (int x = 0; x < SW; x++) {
            float a = acc_in ? c[k][x] : 0.0f;
            for (int r = 0; r < nr; r++)
                a = fmaf(m[(size_t)r * ms + x], b[(size_t)k * bk + r], a);
            c[k][x] = do_scale ? a * scale : a;
        }
#endif
}

/* The queries of attn_tile (query i: head i / n_rows, row i % n_rows)
 * against the tile at ic (kt transposed, vt); ph holds
 * attn_tile_phase_floats(nq). */
static void tile_phased(const attn_kv *kv, const float *q, int64_t q_stride, int n_rows, int32_t pos0, int32_t ic,
                        const float *kt, const float *vt, int nq, float *ph, float *vkq, float *Ms, float *Ss)
{
    enum { T = ATTN_TILE };
    const int hd = kv->hd;
    float *kq = ph, *qc = kq + ((size_t)nq + CQ) * T, *drop = qc + (size_t)CQ * QROW;
    int *live = (int *)(drop + SW);
    float *c[CQ];
    int n = 0;
    for (int i = 0; i < nq; i++)
        if (tile_visible(kv, ic, pos0 + i % n_rows))
            live[n++] = i;
    /* K.Q: kq row j is query live[j]'s; the rows of a group copied QROW
     * apart, head elements [d0, d0 + QROW) at a time */
    for (int g = 0; g < n; g += CQ) {
        const int ng = n - g < CQ ? n - g : CQ;
        for (int d0 = 0; d0 < hd; d0 += QROW) {
            const int len = hd - d0 < QROW ? hd - d0 : QROW;
            for (int k = 0; k < CQ; k++) {
                const int i = live[g + (k < ng ? k : 0)];
                memcpy(qc + (size_t)k * QROW, q + (int64_t)(i % n_rows) * q_stride + (int64_t)(i / n_rows) * hd + d0,
                       sizeof(float) * (size_t)len);
            }
            for (int x0 = 0; x0 < T; x0 += SW) {
                for (int k = 0; k < CQ; k++)
                    c[k] = kq + (size_t)(g + k) * T + x0;
                tile_chains(kt + (size_t)d0 * T + x0, T, len, qc, QROW, c, d0 > 0, d0 + len == hd, kv->scale);
            }
        }
    }
    /* the softmax step, query by query; one whose keys are all masked
     * drops out (none does: tile_visible) */
    int m = 0;
    for (int j = 0; j < n; j++) {
        const int i = live[j];
        const int32_t pos = pos0 + i % n_rows;
        if (!tile_softmax(kq + (size_t)j * T, ic, window_lo(kv, pos), pos, vkq + (size_t)i * hd, hd, &Ms[i], &Ss[i]))
            continue;
        if (m < j)
            memcpy(kq + (size_t)m * T, kq + (size_t)j * T, sizeof(float) * T);
        live[m++] = i;
    }
    /* P.V; the rows after the last query weigh nothing, their outputs dropped */
    memset(kq + (size_t)m * T, 0, sizeof(float) * T * CQ);
    for (int g = 0; g < m; g += CQ)
        for (int d0 = 0; d0 < hd; d0 += SW) {
            for (int k = 0; k < CQ; k++)
                c[k] = g + k < m ? vkq + (size_t)live[g + k] * hd + d0 : drop;
            tile_chains(vt + d0, (size_t)hd, T, kq + (size_t)g * T, T, c, true, false, 1.0f);
        }
}
#endif

#ifdef ATTN_AVX512
/* P.V of four queries for the head elements [d, d + 16 * w): 4 * w chains
 * over the tile's keys side by side, each in key order; a NULL acc is a
 * missing query (its chains run on a copy of another's p and are dropped). */
static inline __attribute__((always_inline)) void pv_queries4(float *const acc[4], const float *const p[4],
                                                              const float *vt, int hd, int d, int w)
{
    __m512 o[4][4];
    for (int k = 0; k < 4; k++)
        _Pragma("GCC unroll 4") for (int c = 0; c < w; c++)
            o[k][c] = acc[k] ? _mm512_loadu_ps(acc[k] + d + 16 * c) : _mm512_setzero_ps();
    for (int j = 0; j < ATTN_TILE; j++) {
        __m512 v[4];
        _Pragma("GCC unroll 4") for (int c = 0; c < w; c++)
        {
            v[c] = _mm512_loadu_ps(vt + (size_t)j * hd + d + 16 * c);
            __asm__("" : "+v"(v[c])); /* loaded once, not once per query */
        }
        _Pragma("GCC unroll 4") for (int k = 0; k < 4; k++)
        {
            const __m512 pj = _mm512_set1_ps(p[k][j]);
            _Pragma("GCC unroll 4") for (int c = 0; c < w; c++)
                o[k][c] = _mm512_fmadd_ps(v[c], pj, o[k][c]);
        }
    }
    for (int k = 0; k < 4; k++)
        if (acc[k])
            for (int c = 0; c < w; c++)
                _mm512_storeu_ps(acc[k] + d + 16 * c, o[k][c]);
}

/* r[0..16) transposed in place (r[i] lane j becomes r[j] lane i). */
static inline __attribute__((always_inline)) void tr16x16(__m512 r[16])
{
    __m512 t[16];
    for (int i = 0; i < 8; i++) {
        t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    /* per 128-bit lane L, r[4g + c] = column 4L + c of rows 4g..4g+3 */
    for (int g = 0; g < 4; g++) {
        r[4 * g] = _mm512_shuffle_ps(t[4 * g], t[4 * g + 2], 0x44);
        r[4 * g + 1] = _mm512_shuffle_ps(t[4 * g], t[4 * g + 2], 0xEE);
        r[4 * g + 2] = _mm512_shuffle_ps(t[4 * g + 1], t[4 * g + 3], 0x44);
        r[4 * g + 3] = _mm512_shuffle_ps(t[4 * g + 1], t[4 * g + 3], 0xEE);
    }
    for (int c = 0; c < 4; c++) {
        t[c] = _mm512_shuffle_f32x4(r[c], r[4 + c], 0x88);
        t[4 + c] = _mm512_shuffle_f32x4(r[c], r[4 + c], 0xDD);
        t[8 + c] = _mm512_shuffle_f32x4(r[8 + c], r[12 + c], 0x88);
        t[12 + c] = _mm512_shuffle_f32x4(r[8 + c], r[12 + c], 0xDD);
    }
    for (int c = 0; c < 4; c++) {
        r[c] = _mm512_shuffle_f32x4(t[c], t[8 + c], 0x88);
        r[4 + c] = _mm512_shuffle_f32x4(t[4 + c], t[12 + c], 0x88);
        r[8 + c] = _mm512_shuffle_f32x4(t[c], t[8 + c], 0xDD);
        r[12 + c] = _mm512_shuffle_f32x4(t[4 + c], t[12 + c], 0xDD);
    }
}

/* The K tile transposed, kt[d][j] = key ic + j's element d in F32 (exact),
 * keys from nk on zeros: 16 x 16 blocks through registers, where a row
 * converted and stored element by element (64 scalar stores a cache line
 * apart) cost 3 % of the attention at depth 8192 with one query head a KV
 * head (the tile serves 64 queries), more while other work filled the
 * memory system. */
static void tile_kt(const attn_kv *kv, int32_t ic, int nk, float *kt)
{
    enum { T = ATTN_TILE };
    const int hd = kv->hd;
    for (int j0 = 0; j0 < T; j0 += 16)
        for (int d0 = 0; d0 < hd; d0 += 16) {
            __m512 r[16];
            for (int j = 0; j < 16; j++) {
                const int64_t row = (int64_t)(ic + j0 + j) * kv->stride + d0;
                if (j0 + j >= nk)
                    r[j] = _mm512_setzero_ps();
                else if (kv->f16)
                    r[j] = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)((const fp16_t *)kv->k + row)));
                else
                    r[j] = _mm512_loadu_ps((const float *)kv->k + row);
            }
            tr16x16(r);
            for (int d = 0; d < 16; d++)
                _mm512_storeu_ps(kt + (size_t)(d0 + d) * T + j0, r[d]);
        }
}

/* Up to four queries (numbers idx[0..n)) against one tile, with the steps
 * of tile_phased for each (K.Q chains, softmax, P.V chains): the queries' chains run
 * side by side (16 keys or head elements per register), which keeps every
 * chain's order. Every listed query sees a key of the tile (tile_visible), so
 * none is fully masked. Missing queries repeat the last one; their results
 * are dropped. Needs hd % 16 == 0 (attn_use_tiled). */
static void tile_queries4(const attn_kv *kv, const float *q, int64_t q_stride, int n_rows, int32_t pos0, int32_t ic,
                          const float *kt, const float *vt, const int *idx, int n, float *vkq, float *Ms, float *Ss)
{
    enum { T = ATTN_TILE, C = T / 16 };
    const int hd = kv->hd;
    float kq[4][T] __attribute__((aligned(64)));
    const float *qr[4];
    for (int k = 0; k < 4; k++) {
        const int i = idx[k < n ? k : n - 1];
        qr[k] = q + (int64_t)(i % n_rows) * q_stride + (int64_t)(i / n_rows) * hd;
    }
    __m512 a[4][C];
    for (int k = 0; k < 4; k++)
        for (int c = 0; c < C; c++)
            a[k][c] = _mm512_setzero_ps();
    for (int d = 0; d < hd; d++) {
        /* unrolled, or GCC copies the tile row through the stack in halves
         * and reloads it whole (a store-forwarding stall per row) */
        __m512 kd[C];
        _Pragma("GCC unroll 4") for (int c = 0; c < C; c++)
        {
            kd[c] = _mm512_loadu_ps(kt + (size_t)d * T + 16 * c);
            /* in a register: folded into each FMA, every row was loaded
             * four times, and the loads, not the FMAs, set the pace */
            __asm__("" : "+v"(kd[c]));
        }
        _Pragma("GCC unroll 4") for (int k = 0; k < 4; k++)
        {
            const __m512 qd = _mm512_set1_ps(qr[k][d]);
            _Pragma("GCC unroll 4") for (int c = 0; c < C; c++) a[k][c] = _mm512_fmadd_ps(kd[c], qd, a[k][c]);
        }
    }
    /* tile_softmax for the four queries side by side: their 16 groups'
     * sums in one reduction tree (lane 4k + c: query k's group c, each in
     * _mm512_reduce_add_ps's order) and the double sums on four lanes */
    const __m512 scale = _mm512_set1_ps(kv->scale), ninf = _mm512_set1_ps(-INFINITY);
    __m512 e[4 * C];
    for (int k = 0; k < 4; k++) {
        const int i = idx[k < n ? k : n - 1];
        const int32_t pos = pos0 + i % n_rows, lo = window_lo(kv, pos);
        __m512 s[C];
        for (int c = 0; c < C; c++)
            s[c] = _mm512_mul_ps(a[k][c], scale);
        if (ic + T - 1 > pos || ic < lo) /* keys past pos or before the window: -inf */
            for (int c = 0; c < C; c++) {
                s[c] = _mm512_mask_mov_ps(ninf, keys16_visible(ic + 16 * c, lo, pos), s[c]);
            }
        /* tile_visible: a key is seen, so the maximum is finite */
        const float tmax = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_max_ps(s[0], s[1]), _mm512_max_ps(s[2], s[3])));
        const float Mold = Ms[i], Mnew = tile_max(Mold, tmax);
        if (k < n) {
            if (Mnew > Mold) {
                const float ms = expf(Mold - Mnew);
                vec_scale(vkq + (size_t)i * hd, hd, ms);
                Ss[i] *= ms;
            }
            Ms[i] = Mnew;
        }
        /* unrolled: the four exps' chains side by side (rolled, 4 % of
         * the attention at depth 8192 went to waiting on them) */
        _Pragma("GCC unroll 4") for (int c = 0; c < C; c++) {
            e[C * k + c] = v_expf16(_mm512_sub_ps(s[c], _mm512_set1_ps(Mnew)));
            _mm512_store_ps(kq[k] + 16 * c, e[C * k + c]);
        }
    }
    const __m512 r = attn_reduce16(e);
    __m256d sum = _mm256_setzero_pd();
    for (int c = 0; c < C; c++) /* group c of the four queries: lanes c, 4 + c, 8 + c, 12 + c */
        sum = _mm256_add_pd(sum, _mm256_cvtps_pd(_mm512_castps512_ps128(
                                     _mm512_permutexvar_ps(_mm512_setr_epi32(c, 4 + c, 8 + c, 12 + c, 0, 0, 0, 0, 0, 0,
                                                                             0, 0, 0, 0, 0, 0),
                                                           r))));
    double sums[4];
    _mm256_storeu_pd(sums, sum);
    for (int k = 0; k < n; k++)
        Ss[idx[k]] = (float)((double)Ss[idx[k]] + sums[k]);
    float *acc[4];
    const float *p[4];
    for (int k = 0; k < 4; k++) {
        acc[k] = k < n ? vkq + (size_t)idx[k] * hd : NULL;
        p[k] = kq[k < n ? k : 0];
    }
    int d = 0;
    for (; d + 64 <= hd; d += 64)
        pv_queries4(acc, p, vt, hd, d, 4);
    for (; d + 32 <= hd; d += 32)
        pv_queries4(acc, p, vt, hd, d, 2);
    for (; d < hd; d += 16)
        pv_queries4(acc, p, vt, hd, d, 1);
}
#endif

void attn_tile(const attn_kv *kv, const float *q, int64_t q_stride, int n_heads, int n_rows, int32_t pos0,
               attn_scratch *s, float *out, int64_t out_stride)
{
    enum { T = ATTN_TILE };
    const int hd = kv->hd;
    const int nq = n_heads * n_rows; /* query (head g, row r) is number g * n_rows + r */
    float *kt = s->tile, *vt = kt + (size_t)T * hd, *krow = vt + (size_t)T * hd;
    float *vkq = krow + hd, *Ms = vkq + (size_t)nq * hd, *Ss = Ms + nq;
#ifndef ATTN_AVX512
    float *ph = Ss + nq;
#endif
    for (int i = 0; i < nq; i++) {
        Ms[i] = -INFINITY;
        Ss[i] = 0.0f;
    }
    memset(vkq, 0, sizeof(float) * (size_t)nq * hd);
    const int32_t last = pos0 + n_rows - 1;
    /* tiles before the first row's window are masked for every row (the
     * reference skips them) */
    for (int32_t ic = window_lo(kv, pos0) / T * T; ic <= last; ic += T) {
        /* K tile transposed (kt[d][j]) and V tile (vt[j][d]) in F32, once for
         * every query head that shares this KV head; keys past the last query
         * are masked for every row and read as zeros */
        const int nk = last - ic + 1 < T ? last - ic + 1 : T;
        for (int j = 0; j < nk; j++)
            kv_row_f32(kv, kv->v, (int64_t)(ic + j) * kv->stride, vt + (size_t)j * hd);
        for (int j = nk; j < T; j++)
            memset(vt + (size_t)j * hd, 0, sizeof(float) * (size_t)hd);
#if defined(ATTN_AVX512) || defined(FWD_F16C)
        tile_kt(kv, ic, nk, kt);
        tile_prefetch(kv, ic + T, last);
#else
        for (int j = 0; j < nk; j++) {
            kv_row_f32(kv, kv->k, (int64_t)(ic + j) * kv->stride, krow);
            for (int d = 0; d < hd; d++)
                kt[(size_t)d * T + j] = krow[d];
        }
        for (int j = nk; j < T; j++)
            for (int d = 0; d < hd; d++)
                kt[(size_t)d * T + j] = 0.0f;
#endif
#ifdef ATTN_AVX512
        /* four queries at a time: their K.Q and P.V chains interleave (the
         * P.V chains alone were bound by FMA latency), each in its order */
        for (int i = 0; i < nq;) {
            int idx[4], n4 = 0;
            for (; i < nq && n4 < 4; i++)
                if (tile_visible(kv, ic, pos0 + i % n_rows))
                    idx[n4++] = i;
            if (n4 > 0)
                tile_queries4(kv, q, q_stride, n_rows, pos0, ic, kt, vt, idx, n4, vkq, Ms, Ss);
        }
#else
        tile_phased(kv, q, q_stride, n_rows, pos0, ic, kt, vt, nq, ph, vkq, Ms, Ss);
#endif
    }
    if (kv->sinks)
        for (int i = 0; i < nq; i++)
            attn_apply_sink(kv->sinks[i / n_rows], &Ms[i], &Ss[i], vkq + (size_t)i * hd, hd);
    for (int i = 0; i < nq; i++) {
        const int g = i / n_rows, r = i % n_rows;
        const float inv = Ss[i] == 0.0f ? 0.0f : 1.0f / Ss[i];
        float *o = out + (int64_t)r * out_stride + (int64_t)g * hd;
        for (int d = 0; d < hd; d++)
            o[d] = vkq[(size_t)i * hd + d] * inv;
    }
}
