/* ggml's one-chunk attention kernel over a quantized cache (K Q8_0 or Q4_0;
 * V Q8_0, Q4_0 or F16), for up to 16 queries that share a KV head at once:
 * generation's query heads, or a prompt's tokens and heads. llama.cpp runs
 * every query of such a cache through this kernel, prompts included, one
 * key at a time; here each step runs over a block of 64 keys for all the
 * queries, each query's numbers in the reference's order (forward_attn.h):
 *  - K.Q: Q quantized to Q8_0 (K's dot type), then per 32-element block the
 *    eight 4-product integer sums of ggml_vec_dot_q8_0_q8_0 /
 *    _q4_0_q8_0 (exact, by VNNI with K offset to unsigned and the offset
 *    taken back in the accumulator's start), times the block's scale
 *    product, FMA-chained over the blocks, then hsum_float_8: two keys per
 *    register, 16 keys' sums reduced together;
 *  - the running maximum and expf's arguments by a prefix scan, expf on
 *    vector lanes in glibc's order (kernels/expf_libm.h);
 *  - V dequantized once per block (exact: scale times small integer) and
 *    FMA'd into F32 accumulators, or an F16 V into F16 accumulators, S
 *    chained per key.
 * Keys outside a query's [lo, hi) are the reference's masked keys: skipped. */
#include "model/forward_attn.h"

#include <math.h>
#include <string.h>

#include "kernels/expf_libm.h"
#include "kernels/forward_math.h"
#include "kernels/quant_internal.h"
#include "model/attn_scan.h"

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VNNI__) && defined(FWD_F16C)
#define QATT_AVX512 1
#endif

enum { QB = 64, QMAX = ATTN_GROUP_MAX, NBLK_MAX = 8 };

/* scratch, in floats (64-byte aligned pieces, in this order) */
static size_t off_q(void) { return 0; }
static size_t off_qd(void) { return off_q() + (size_t)QMAX * NBLK_MAX * 32; } /* Q bytes + negated offsets */
static size_t off_k(void) { return off_qd() + (size_t)QMAX * NBLK_MAX; }      /* Q's block scales */
static size_t off_kd(void) { return off_k() + (size_t)(QB / 2) * NBLK_MAX * 16; } /* K pairs' bytes */
static size_t off_v(void) { return off_kd() + (size_t)(QB / 2) * NBLK_MAX * 16; } /* K pairs' scales */
static size_t off_sc(int hd) { return off_v() + (size_t)QB * (size_t)hd; }     /* V block as F32 */
static size_t off_acc(int hd) { return off_sc(hd) + (size_t)QMAX * QB; }

size_t attn_quant_scratch_floats(int hd) { return off_acc(hd) + (size_t)QMAX * (size_t)hd + 16; }

bool attn_quant_ok(const attn_kv *kv)
{
#ifdef QATT_AVX512
    const int kt = kv->k_type, vt = kv->v_type;
    return kv->generic && (kt == TENSOR_TYPE_Q8_0 || kt == TENSOR_TYPE_Q4_0) &&
           (vt == TENSOR_TYPE_Q8_0 || vt == TENSOR_TYPE_Q4_0 || vt == TENSOR_TYPE_F16) &&
           (kv->hd == 64 || kv->hd == 128 || kv->hd == 256) && expf_libm_exact();
#else
    (void)kv;
    return false;
#endif
}

#ifdef QATT_AVX512

static inline __m512 r16(__m512 x) { return _mm512_cvtph_ps(_mm512_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT)); }

/* A K row's block b as 32 signed bytes and its scale */
static inline __m256i k_block(int kt, const uint8_t *row, int b, float *d)
{
    if (kt == TENSOR_TYPE_Q8_0) {
        const block_q8_0 *x = (const block_q8_0 *)row + b;
        *d = h2f(x->d);
        return _mm256_loadu_si256((const __m256i *)x->qs);
    }
    const block_q4_0 *x = (const block_q4_0 *)row + b;
    *d = h2f(x->d);
    /* bytes_from_nibbles_32: element j in byte j, low nibbles first; minus 8 */
    const __m128i raw = _mm_loadu_si128((const __m128i *)x->qs);
    const __m256i nib = _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(raw, 4), raw), _mm256_set1_epi8(0x0F));
    return _mm256_sub_epi8(nib, _mm256_set1_epi8(8));
}

/* The next block's K and V rows on their way to L2 while this block's
 * accumulators run, a line at a time: at depth, generation finds the cache
 * in memory (a token's weights streamed through every cache level since
 * the layer's last visit). K's n rows from r0, then V's: row r's lines
 * from `line` up to `end`. */
typedef struct {
    int32_t r0;
    int n, r;
    uintptr_t line, end;
} rows_ahead;

/* the next line, false when every row's lines have gone. always_inline:
 * as a plain static inline function GCC counted no side effect in it and
 * dropped every call (the object had no prefetch instruction). */
static inline __attribute__((always_inline)) bool ahead_line(const attn_kv *kv, rows_ahead *a, size_t kb_row,
                                                             size_t vb_row)
{
    if (a->line >= a->end) {
        if (a->r >= 2 * a->n)
            return false;
        const bool isk = a->r < a->n;
        const uintptr_t s = (uintptr_t)(isk ? (const uint8_t *)kv->k + (size_t)(a->r0 + a->r) * kv->k_row
                                            : (const uint8_t *)kv->v + (size_t)(a->r0 + a->r - a->n) * kv->v_row);
        a->line = s & ~(uintptr_t)63;
        a->end = s + (isk ? kb_row : vb_row);
        a->r++;
    }
    _mm_prefetch((const char *)a->line, _MM_HINT_T1);
    a->line += 64;
    return true;
}

static inline __attribute__((always_inline)) void quant_queries_hd(const attn_kv *kv, const attn_query *qs, int nq,
                                                                   float *scratch, const int hd)
{
    const int nblk = hd / 32, W = hd / 16;
    const int kt = kv->k_type, vt = kv->v_type;
    const bool v16 = vt == TENSOR_TYPE_F16;
    uint8_t *qbuf = (uint8_t *)(void *)(scratch + off_q()); /* [query][block]: 64 Q bytes, 16 int32 offsets */
    float *qd = scratch + off_qd();                          /* [query][block] */
    uint8_t *kbuf = (uint8_t *)(void *)(scratch + off_k());  /* [pair][block]: 64 bytes */
    float *kd = scratch + off_kd();                          /* [pair][block]: 16 scales */
    float *vf = scratch + off_v();
    float *sc = scratch + off_sc(hd);
    uint16_t nm[QMAX * QB / 16];
    float *acc = scratch + off_acc(hd);
    float M[QMAX], S[QMAX];
    int32_t lo = INT32_MAX, hi = 0;
    for (int i = 0; i < nq; i++) {
        /* Q in K's dot type: quantize_row_q8_0 */
        block_q8_0 qq[NBLK_MAX];
        tensor_quantize_row(TENSOR_TYPE_Q8_0, qs[i].q, qq, hd);
        for (int b = 0; b < nblk; b++) {
            uint8_t *o = qbuf + ((size_t)i * NBLK_MAX + b) * 128;
            const __m256i qv = _mm256_loadu_si256((const __m256i *)qq[b].qs);
            _mm512_storeu_si512(o, _mm512_inserti64x4(_mm512_castsi256_si512(qv), qv, 1));
            /* K enters VNNI as unsigned (K + 128): take 128 * (Q's 4-byte sums) back */
            const __m512i sums = _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_set1_epi8(1),
                                                     _mm512_loadu_si512(o));
            _mm512_storeu_si512(o + 64, _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_slli_epi32(sums, 7)));
            qd[i * NBLK_MAX + b] = h2f(qq[b].d);
        }
        M[i] = -INFINITY;
        S[i] = 0.0f;
        memset(acc + (size_t)i * hd, 0, sizeof(float) * (size_t)hd);
        lo = qs[i].lo < lo ? qs[i].lo : lo;
        hi = qs[i].hi > hi ? qs[i].hi : hi;
    }
    const __m512 ninf = _mm512_set1_ps(-INFINITY), scale = _mm512_set1_ps(kv->scale);
    /* a K and a V row's bytes (the prefetch's) */
    const size_t kb_row = tensor_row_size((uint32_t)kt, hd), vb_row = tensor_row_size((uint32_t)vt, hd);
    for (int32_t kb = lo; kb < hi; kb += QB) {
        const int nb = hi - kb < QB ? hi - kb : QB;
        const int nb16 = (nb + 15) & ~15;
        /* K pairs: [key 2p | key 2p+1] bytes of block b, offset to unsigned, and their scales */
        for (int j = 0; j < nb16; j += 2)
            for (int b = 0; b < nblk; b++) {
                uint8_t *o = kbuf + ((size_t)(j / 2) * NBLK_MAX + b) * 64;
                float d0 = 0.0f, d1 = 0.0f;
                const __m256i k0 = j < nb ? k_block(kt, (const uint8_t *)kv->k + (size_t)(kb + j) * kv->k_row, b, &d0)
                                          : _mm256_setzero_si256();
                const __m256i k1 = j + 1 < nb
                                       ? k_block(kt, (const uint8_t *)kv->k + (size_t)(kb + j + 1) * kv->k_row, b, &d1)
                                       : _mm256_setzero_si256();
                const __m512i kk = _mm512_inserti64x4(_mm512_castsi256_si512(k0), k1, 1);
                _mm512_storeu_si512(o, _mm512_xor_si512(kk, _mm512_set1_epi8((char)0x80)));
                _mm512_storeu_ps(kd + ((size_t)(j / 2) * NBLK_MAX + b) * 16,
                                 _mm512_insertf32x8(_mm512_set1_ps(d0), _mm256_set1_ps(d1), 1));
            }
        /* V rows as F32 (exact) */
        if (!v16)
            for (int j = 0; j < nb; j++)
                tensor_dequantize_row((enum tensor_type)vt, (const uint8_t *)kv->v + (size_t)(kb + j) * kv->v_row,
                                      vf + (size_t)j * hd, hd);
        for (int i = 0; i < nq; i++) {
            float *si = sc + (size_t)i * QB;
            const int32_t qlo = qs[i].lo, qhi = qs[i].hi;
            __m512 Mv = _mm512_set1_ps(M[i]);
            for (int j = 0; j < nb16; j += 16) {
                __m512 v[8];
                for (int m = 0; m < 8; m++) {
                    const uint8_t *kp = kbuf + (size_t)((j + 2 * m) / 2) * NBLK_MAX * 64;
                    const float *kdp = kd + (size_t)((j + 2 * m) / 2) * NBLK_MAX * 16;
                    __m512 a = _mm512_setzero_ps();
                    for (int b = 0; b < nblk; b++) {
                        const uint8_t *qb = qbuf + ((size_t)i * NBLK_MAX + b) * 128;
                        const __m512i isum = _mm512_dpbusd_epi32(_mm512_loadu_si512(qb + 64),
                                                                 _mm512_loadu_si512(kp + (size_t)b * 64),
                                                                 _mm512_loadu_si512(qb));
                        const __m512 d = _mm512_mul_ps(_mm512_loadu_ps(kdp + (size_t)b * 16),
                                                       _mm512_set1_ps(qd[i * NBLK_MAX + b]));
                        a = _mm512_fmadd_ps(d, _mm512_cvtepi32_ps(isum), a);
                    }
                    v[m] = a;
                }
                __m512 s = _mm512_mul_ps(attn_reduce8x2(v), scale);
                /* keys outside [qlo, qhi) are masked: -inf, never a new maximum, skipped below */
                const int32_t k0 = kb + j;
                const int32_t a0 = qlo - k0, a1 = qhi - k0; /* visible lanes [a0, a1) */
                __mmask16 vis = a1 >= 16 ? (__mmask16)0xFFFF : a1 <= 0 ? 0 : (__mmask16)((1u << a1) - 1u);
                if (a0 > 0)
                    vis &= a0 >= 16 ? 0 : (__mmask16)~((1u << a0) - 1u);
                s = _mm512_mask_mov_ps(ninf, vis, s);
                nm[i * (QB / 16) + j / 16] = attn_scan16(s, ninf, &Mv, si + j);
            }
            M[i] = _mm512_cvtss_f32(Mv);
            expf_libm_n(si, si, nb16);
        }
        /* accumulators: up to 4 queries side by side over their visible keys */
        enum { W_MAX = 16 };
        const int P = W <= 4 ? 4 : W <= 8 ? 2 : 1;
        /* meanwhile the next block's K and V lines, spread evenly over the
         * keys and passes (one Zen 4 thread, 8 heads, depth 4096, cold:
         * over the first half 187 against 181 ns a key at hd 256; a row at
         * a time 192) */
        const int32_t kn = kb + QB;
        const int nn = kn < hi ? (hi - kn < QB ? hi - kn : QB) : 0;
        const int l_all = nn * (int)((kb_row + vb_row) / 64 + 2), iters = (nq + P - 1) / P * nb;
        rows_ahead ah = {kn, nn, 0, 0, 0};
        int pacc = 0;
        for (int i0 = 0; i0 < nq; i0 += P) {
            const int np = nq - i0 < P ? nq - i0 : P;
            __m512 A[4][W_MAX];
            float Sh[4];
            int j0[4], j1[4], jmin = nb, jmax = 0;
            _Pragma("GCC unroll 4") for (int p = 0; p < P; p++)
            {
                const int i = i0 + (p < np ? p : 0);
                j0[p] = qs[i].lo > kb ? qs[i].lo - kb : 0;
                j1[p] = qs[i].hi - kb < nb ? qs[i].hi - kb : nb;
                if (p >= np)
                    j1[p] = 0;
                jmin = j0[p] < jmin ? j0[p] : jmin;
                jmax = j1[p] > jmax ? j1[p] : jmax;
                Sh[p] = S[i];
                _Pragma("GCC unroll 16") for (int w = 0; w < W; w++) A[p][w] =
                    _mm512_loadu_ps(acc + (size_t)i * hd + 16 * w);
            }
            for (int j = jmin; j < jmax; j++) {
                for (pacc += l_all; pacc >= iters && ahead_line(kv, &ah, kb_row, vb_row); pacc -= iters)
                    ;
                __m512 V[W_MAX];
                if (v16) {
                    const fp16_t *vr = (const fp16_t *)((const uint8_t *)kv->v + (size_t)(kb + j) * kv->v_row);
                    _Pragma("GCC unroll 16") for (int w = 0; w < W; w++) V[w] =
                        _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(vr + 16 * w)));
                } else {
                    _Pragma("GCC unroll 16") for (int w = 0; w < W; w++) V[w] =
                        _mm512_loadu_ps(vf + (size_t)j * hd + 16 * w);
                }
                _Pragma("GCC unroll 4") for (int p = 0; p < P; p++)
                {
                    if (j < j0[p] || j >= j1[p])
                        continue;
                    const int i = i0 + p;
                    const float e = sc[(size_t)i * QB + j];
                    float vs = e;
                    if (nm[i * (QB / 16) + j / 16] >> (j & 15) & 1) {
                        const __m512 ms = _mm512_set1_ps(e);
                        if (v16) {
                            _Pragma("GCC unroll 16") for (int w = 0; w < W; w++) A[p][w] =
                                r16(_mm512_mul_ps(A[p][w], ms));
                        } else {
                            _Pragma("GCC unroll 16") for (int w = 0; w < W; w++) A[p][w] = _mm512_mul_ps(A[p][w], ms);
                        }
                        Sh[p] = fmaf(Sh[p], e, 1.0f);
                        vs = 1.0f;
                    } else {
                        Sh[p] += e; /* fma(S, 1, vs) */
                    }
                    const __m512 vv = _mm512_set1_ps(vs);
                    if (v16) {
                        _Pragma("GCC unroll 16") for (int w = 0; w < W; w++) A[p][w] =
                            r16(_mm512_fmadd_ps(V[w], vv, A[p][w]));
                    } else {
                        _Pragma("GCC unroll 16") for (int w = 0; w < W; w++) A[p][w] =
                            _mm512_fmadd_ps(V[w], vv, A[p][w]);
                    }
                }
            }
            _Pragma("GCC unroll 4") for (int p = 0; p < P; p++)
            {
                if (p >= np)
                    break;
                _Pragma("GCC unroll 16") for (int w = 0; w < W; w++)
                    _mm512_storeu_ps(acc + (size_t)(i0 + p) * hd + 16 * w, A[p][w]);
                S[i0 + p] = Sh[p];
            }
        }
    }
    for (int i = 0; i < nq; i++) {
        const float inv = S[i] == 0.0f ? 0.0f : 1.0f / S[i];
        for (int d = 0; d < hd; d++)
            qs[i].out[d] = acc[(size_t)i * hd + d] * inv;
    }
}

void attn_quant_queries(const attn_kv *kv, const attn_query *qs, int nq, float *scratch)
{
    switch (kv->hd) {
    case 64:
        quant_queries_hd(kv, qs, nq, scratch, 64);
        break;
    case 128:
        quant_queries_hd(kv, qs, nq, scratch, 128);
        break;
    default: /* attn_quant_ok */
        quant_queries_hd(kv, qs, nq, scratch, 256);
        break;
    }
}

#else

void attn_quant_queries(const attn_kv *kv, const attn_query *qs, int nq, float *scratch)
{
    (void)kv, (void)qs, (void)nq, (void)scratch;
}

#endif
