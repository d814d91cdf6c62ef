/* Gated DeltaNet (qwen35's linear-attention layers), the way llama.cpp's
 * CPU build computes it with its fused ops (fused_gdn_ar / fused_gdn_ch are
 * on for the CPU, for prompts and single tokens alike):
 *
 *  1. ggml_ssm_conv: each channel of the Q|K|V projection convolved over
 *     its last ssm.conv_kernel inputs (the first ones from the state), a
 *     chain of FMAs from 0 in tap order; then SiLU (ggml_vec_silu_f32: the
 *     vector exp on 16-lane groups of a row, libm expf on its tail). The
 *     state keeps the last conv_kernel - 1 inputs.
 *  2. per value head h (key head h % key heads, as the op's broadcast
 *     takes it): q and k L2-normalised (sum of squares in double,
 *     1 / max(sqrtf, eps)); beta = sigmoid; g = softplus(alpha + dt) * a;
 *  3. ggml_gated_delta_net, token by token: S *= expf(g); for each value
 *     column j: sk = sum_i S[i][j] k[i] (ggml_vec_dot_f32's order, see
 *     coldot; for 32: rounded products summed in order from 0), delta =
 *     (v[j] - sk) * beta;
 *     S[i][j] = fma(k[i], delta, S[i][j]) (ggml_vec_mad_f32); out[j] =
 *     (sum_i S[i][j] q[i]) / sqrt(state_size), the same dot.
 *  4. RMS norm of each head's output times ssm_norm, times SiLU(z).
 *
 * The state is kept as S[i][j] (key index i, value index j) so that the
 * dots over i run across j in vector lanes, each lane in the reference's
 * order: the same bits at vector speed. Products the reference rounds are
 * kept rounded (an empty asm stops GCC from fusing them into the adds). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/forward_math.h"
#include "kernels/kernel_scratch.h"
#include "model/forward_internal.h"

/* State sizes up to this (Qwen3.5's is 128). */
#define DN_MAX_STATE 256

size_t forward_rs_layer_bytes(const model_hparams *hp, uint32_t il)
{
    if (!hp->recurrent_layer[il])
        return 0;
    const size_t conv_dim = 2 * (size_t)hp->ssm_d_state * hp->ssm_n_group + hp->ssm_d_inner;
    const size_t S = hp->ssm_d_state;
    return ((hp->ssm_d_conv - 1) * conv_dim + S * S * hp->ssm_dt_rank) * sizeof(float);
}

size_t forward_rs_layer_offset(const model_hparams *hp, uint32_t il)
{
    size_t off = 0;
    for (uint32_t l = 0; l < il; l++)
        off += forward_rs_layer_bytes(hp, l);
    return off;
}

static inline float keep_rounded(float x)
{
    __asm__("" : "+x"(x));
    return x;
}

/* ggml_vec_silu_f32's element at index i of a row of n */
static inline float silu_at(float x, int64_t i, int64_t n)
{
    return i < (n & ~(int64_t)15) ? x / (1.0f + v_expf(0.0f - x)) : x / (1.0f + expf(-x));
}

struct dn_job {
    forward_ctx *f;
    const model_layer *L;
    float *conv_state; /* [conv_dim][d_conv - 1] */
    float *ssm;        /* [HV][S (key i)][S (value j)] */
    int row0, n;       /* rows [row0, row0 + n) of the batch: one sequence's */
    uint8_t *snaps;    /* forward_rs_keep: this layer's state in the first snapshot, NULL when none are kept */
};

/* ---- 1. the convolution, channels split across the pool ---- */

/* ggml_ssm_conv then ggml_silu on channels [c0, c1) of n rows x (W floats
 * apart; C channels in all), from and back to state ([C][K - 1]), without
 * snapshots. 8 channels a vector where their SiLU is v_expf's (the row's
 * 16-lane groups), each lane its channel's FMA chain in tap order: the
 * scalar loop's bits. */
void forward_deltanet_conv(float *x, int64_t W, int n, const float *wconv, float *state, int64_t K, int64_t C,
                           int64_t c0, int64_t c1)
{
    int64_t c = c0;
#ifdef FWD_F16C
    const int64_t cv = C & ~(int64_t)15;
    if (K <= 8)
        for (; c + 8 <= c1 && c + 8 <= cv; c += 8) {
            float *st = state + c * (K - 1);
            const float *w = wconv + c * K;
            __m256 wv[8], wn[8];
            for (int64_t i = 0; i < K; i++) {
                float a[8], b[8];
                for (int l = 0; l < 8; l++) {
                    a[l] = w[l * K + i];
                    b[l] = i < K - 1 ? st[l * (K - 1) + i] : 0.0f;
                }
                wv[i] = _mm256_loadu_ps(a);
                wn[i] = _mm256_loadu_ps(b);
            }
            for (int t = 0; t < n; t++) {
                float *xt = x + (size_t)t * W + c;
                wn[K - 1] = _mm256_loadu_ps(xt);
                __m256 sum = _mm256_setzero_ps();
                for (int64_t i = 0; i < K; i++)
                    sum = _mm256_fmadd_ps(wn[i], wv[i], sum);
                const __m256 e = v_expf8(_mm256_sub_ps(_mm256_setzero_ps(), sum));
                _mm256_storeu_ps(xt, _mm256_div_ps(sum, _mm256_add_ps(_mm256_set1_ps(1.0f), e)));
                for (int64_t i = 0; i + 1 < K; i++)
                    wn[i] = wn[i + 1];
            }
            for (int64_t i = 0; i + 1 < K; i++) {
                float b[8];
                _mm256_storeu_ps(b, wn[i]);
                for (int l = 0; l < 8; l++)
                    st[l * (K - 1) + i] = b[l];
            }
        }
#endif
    float win[64];
    for (; c < c1; c++) {
        float *st = state + c * (K - 1);
        const float *w = wconv + c * K;
        memcpy(win, st, (size_t)(K - 1) * sizeof(float));
        for (int t = 0; t < n; t++) {
            float *xt = x + (size_t)t * W + c;
            win[K - 1] = *xt;
            float sum = 0.0f;
            for (int64_t i = 0; i < K; i++)
                sum = fmaf(win[i], w[i], sum);
            *xt = silu_at(sum, c, C);
            memmove(win, win + 1, (size_t)(K - 1) * sizeof(float));
        }
        memcpy(st, win, (size_t)(K - 1) * sizeof(float));
    }
}

static void conv_worker(void *arg, int ith, int64_t chunk, int64_t n_chunks)
{
    (void)ith;
    const struct dn_job *j = arg;
    const forward_ctx *f = j->f;
    const model_hparams *hp = &f->hp;
    const int64_t W = f->graph.width[FWD_QKV], K = hp->ssm_d_conv;
    const int64_t C = 2 * (int64_t)hp->ssm_d_state * hp->ssm_n_group + hp->ssm_d_inner; /* channels */
    const int64_t c0 = forward_chunk_start(C, chunk, n_chunks), c1 = forward_chunk_start(C, chunk + 1, n_chunks);
    const float *wconv = j->L->ssm_conv1d->data;
    if (!j->snaps) {
        forward_deltanet_conv(f->buf[FWD_QKV] + (size_t)j->row0 * W, W, j->n, wconv, j->conv_state, K, C, c0, c1);
        return;
    }
    /* forward_rs_keep: every token's window kept too */
    float win[64];
    for (int64_t c = c0; c < c1; c++) {
        float *st = j->conv_state + c * (K - 1);
        const float *w = wconv + c * K;
        memcpy(win, st, (size_t)(K - 1) * sizeof(float));
        for (int t = j->row0; t < j->row0 + j->n; t++) {
            float *x = f->buf[FWD_QKV] + (size_t)t * W + c;
            win[K - 1] = *x;
            float sum = 0.0f;
            for (int64_t i = 0; i < K; i++)
                sum = fmaf(win[i], w[i], sum);
            *x = silu_at(sum, c, C);
            memmove(win, win + 1, (size_t)(K - 1) * sizeof(float));
            memcpy(j->snaps + (size_t)(f->row0 + t) * f->rs_bytes + c * (K - 1) * sizeof(float), win,
                   (size_t)(K - 1) * sizeof(float));
        }
        memcpy(st, win, (size_t)(K - 1) * sizeof(float));
    }
}

/* ---- 2-4. the delta rule, value heads split across the pool ---- */

/* ggml_l2_norm of two heads (q's and k's): their sums' chains side by
 * side, each in its order (a chain of double adds waits on the last) */
static void l2norm2(float *oa, const float *a, float *ob, const float *b, int64_t n, float eps)
{
    double sa = 0.0, sb = 0.0;
    for (int64_t i = 0; i < n; i++) {
        sa += (double)(a[i] * a[i]);
        sb += (double)(b[i] * b[i]);
    }
    const float ka = 1.0f / fmaxf(sqrtf((float)sa), eps), kb = 1.0f / fmaxf(sqrtf((float)sb), eps);
    for (int64_t i = 0; i < n; i++) {
        oa[i] = a[i] * ka;
        ob[i] = b[i] * kb;
    }
}

/* ---- ggml_vec_dot_f32(S) of every column j of a state s[i][j] at once ----
 * ggml_vec_dot_f32 on the reference build: the first np = S & ~63 elements
 * in 64 lanes (four 16-lane accumulators, FMA), element i in lane i % 64,
 * reduced as (a0 + a2) + (a1 + a3) and then _mm512_reduce_add_ps (red16);
 * the rest as GCC vectorized its leftover loop (refdot_f32's f32_tail): with
 * 16 or more left, the products of the multiples of 16 and one more 8
 * rounded and added in order, FMAs for the rest. Each column's sum follows
 * that order exactly; the columns run side by side. */
struct coldot {
    int64_t S, np, nr;
    float *lanes; /* [64][S] while i < np */
    float *sum;   /* [S] */
};

static void coldot_init(struct coldot *c, int64_t S, float *lanes, float *sum)
{
    c->S = S;
    c->np = S & ~(int64_t)63;
    const int64_t left = S - c->np, n16 = left >= 16 ? (left & ~(int64_t)15) : 0;
    c->nr = n16 + (left >= 16 && left - n16 >= 8 ? 8 : 0);
    c->lanes = lanes; /* rows 0..63 write their lane (an FMA on zero), later ones add */
    c->sum = sum;
    memset(sum, 0, (size_t)S * sizeof(float));
}

/* Adds row i's terms r[j] * y, columns [j0, S) (j0: what the vector part did). */
static inline void coldot_row_tail(const struct coldot *c, int64_t i, const float *r, float y, int64_t j0)
{
    const int64_t S = c->S;
    if (i < c->np) {
        float *p = c->lanes + (i & 63) * S;
        for (int64_t j = j0; j < S; j++)
            p[j] = fmaf(r[j], y, i < 64 ? 0.0f : p[j]);
    } else if (i - c->np < c->nr) {
        for (int64_t j = j0; j < S; j++)
            c->sum[j] += keep_rounded(r[j] * y);
    } else {
        for (int64_t j = j0; j < S; j++)
            c->sum[j] = fmaf(r[j], y, c->sum[j]);
    }
}

/* Adds row i's terms r[j] * y; after row np - 1, reduces the lanes. */
static inline void coldot_row(const struct coldot *c, int64_t i, const float *r, float y)
{
    const int64_t S = c->S;
    int64_t j0 = 0;
#ifdef FWD_F16C
    const __m256 vy = _mm256_set1_ps(y);
    if (i < c->np) {
        float *p = c->lanes + (i & 63) * S;
        if (i < 64)
            for (; j0 + 8 <= S; j0 += 8)
                _mm256_storeu_ps(p + j0, _mm256_fmadd_ps(_mm256_loadu_ps(r + j0), vy, _mm256_setzero_ps()));
        else
            for (; j0 + 8 <= S; j0 += 8)
                _mm256_storeu_ps(p + j0, _mm256_fmadd_ps(_mm256_loadu_ps(r + j0), vy, _mm256_loadu_ps(p + j0)));
    } else if (i - c->np < c->nr) {
        for (; j0 + 8 <= S; j0 += 8) {
            __m256 t = _mm256_mul_ps(_mm256_loadu_ps(r + j0), vy);
            __asm__("" : "+x"(t));
            _mm256_storeu_ps(c->sum + j0, _mm256_add_ps(_mm256_loadu_ps(c->sum + j0), t));
        }
    } else {
        for (; j0 + 8 <= S; j0 += 8)
            _mm256_storeu_ps(c->sum + j0,
                             _mm256_fmadd_ps(_mm256_loadu_ps(r + j0), vy, _mm256_loadu_ps(c->sum + j0)));
    }
#endif
    coldot_row_tail(c, i, r, y, j0);
    if (i + 1 != c->np)
        return;
    int64_t j = 0;
#ifdef FWD_F16C
    for (; j + 8 <= S; j += 8) { /* red16 below, 8 columns per vector */
        __m256 v[16];
        for (int l = 0; l < 16; l++) {
            const float *pl = c->lanes + l * S + j;
            v[l] = _mm256_add_ps(_mm256_add_ps(_mm256_loadu_ps(pl), _mm256_loadu_ps(pl + 32 * S)),
                                 _mm256_add_ps(_mm256_loadu_ps(pl + 16 * S), _mm256_loadu_ps(pl + 48 * S)));
        }
        for (int l = 0; l < 8; l++)
            v[l] = _mm256_add_ps(v[8 + l], v[l]);
        for (int l = 0; l < 4; l++)
            v[l] = _mm256_add_ps(v[4 + l], v[l]);
        _mm256_storeu_ps(c->sum + j, _mm256_add_ps(_mm256_add_ps(v[0], v[2]), _mm256_add_ps(v[1], v[3])));
    }
#endif
    for (; j < S; j++) {
        float v[16];
        for (int l = 0; l < 16; l++) {
            const float *pl = c->lanes + l * S + j;
            v[l] = (pl[0] + pl[32 * S]) + (pl[16 * S] + pl[48 * S]);
        }
        c->sum[j] = red16(v);
    }
}

#if defined(__AVX512F__) && defined(FWD_F16C)
/* ggml_vec_dot_f32 of the 16 columns [c0, c0 + 16) of s with y, S a
 * multiple of 64 (no leftover loop): row i's products go to lane i % 64 of
 * that dot (an FMA chain over i = q, q + 64, ..., the first on zero), lane
 * q = 16m + l lands in accumulator m's lane l; reduced as (a0 + a2) + (a1 +
 * a3), then _mm512_reduce_add_ps (red16's order) - coldot's order, with a
 * column per vector lane and no lanes buffer. The dots are of the updated
 * rows: x = r * eg (ggml_vec_scale_f32, one rounded product per element)
 * in pass 1, then fma(k[i], d, r * eg) (ggml_vec_mad_f32) in pass 2, which
 * alone stores the row: the product made again is the same float, and pass
 * 1 stores nothing. S is the row stride: the state's (delta_step) or a
 * copied block's (dn_block_tokens). In place, a column chunk (ni x 64 rows
 * of 64 bytes) was meant to stay in L1 between the passes, but at S = 128
 * its rows 512 bytes apart fall into 8 of L1's 64 sets; prompts copy it
 * out first (dn_tokens), a lone token keeps it in place (late: the copy
 * cost what it saved there, 5.0-5.5 against 4.3-5.0 us before the loads
 * went ahead of the stores). The old form went over the whole state and
 * the 64 x S lanes twice each. */
static inline __attribute__((always_inline)) __m512 dn_chunk16(float *s, int64_t S, int64_t ni, int64_t c0,
                                                               const float *y, int pass2, int late, __m512 eg,
                                                               __m512 d, const float *k)
{
    __m512 v[16];
    for (int l = 0; l < 16; l++) {
        /* late (in place, one token): an l's rows (all one 4 KB alias
         * class at S = 128) loaded before any of them is stored, as a load
         * behind a store to an address equal in its low 12 bits waited for
         * that store, and the next chunk fetched during pass 2 (prefetch
         * never faults past the last head). Zen 4, one thread, a 128 x 128
         * step: 4.7 -> 3.0 us in L2, 3.5 -> 3.1 in L3, 5.7-6.9 -> 4.3-4.5
         * from memory (bench_deltanet 128 1 1 H), where a token finds the
         * states after its weights went by. The prompts' copied blocks
         * (late 0) are as before. */
        __m512 x[16], lm[4];
#pragma GCC unroll 4
        for (int m = 0; m < 4; m++)
            for (int64_t it = 0; it < ni; it++) {
                const int64_t i = 64 * it + 16 * m + l;
                const __m512 xs = _mm512_mul_ps(_mm512_loadu_ps(s + i * S + c0), eg);
                if (late && pass2) /* in place: the row's next 16 columns, or the next head's first */
                    _mm_prefetch((const char *)((uintptr_t)(s + i * S + c0) +
                                                (c0 + 16 < S ? 64 : (uintptr_t)(S * S - c0) * sizeof(float))),
                                 _MM_HINT_T0);
                x[4 * m + it] = pass2 ? _mm512_fmadd_ps(_mm512_set1_ps(k[i]), d, xs) : xs;
                if (pass2 && !late)
                    _mm512_storeu_ps(s + i * S + c0, x[4 * m + it]);
            }
        if (pass2 && late)
#pragma GCC unroll 4
            for (int m = 0; m < 4; m++)
                for (int64_t it = 0; it < ni; it++)
                    _mm512_storeu_ps(s + (64 * it + 16 * m + l) * S + c0, x[4 * m + it]);
#pragma GCC unroll 4
        for (int m = 0; m < 4; m++) {
            __m512 acc = _mm512_setzero_ps();
            for (int64_t it = 0; it < ni; it++)
                acc = _mm512_fmadd_ps(x[4 * m + it], _mm512_set1_ps(y[64 * it + 16 * m + l]), acc);
            lm[m] = acc;
        }
        v[l] = _mm512_add_ps(_mm512_add_ps(lm[0], lm[2]), _mm512_add_ps(lm[1], lm[3]));
    }
    for (int l = 0; l < 8; l++)
        v[l] = _mm512_add_ps(v[8 + l], v[l]);
    for (int l = 0; l < 4; l++)
        v[l] = _mm512_add_ps(v[4 + l], v[l]);
    return _mm512_add_ps(_mm512_add_ps(v[0], v[2]), _mm512_add_ps(v[1], v[3]));
}
#elif defined(FWD_F16C)
/* AVX2: the same block, each half of a row (8 columns) one vector, a
 * column a lane: dn_chunk16's chains and tree on 8 lanes. Its 16 sums
 * v[l] are added as they come, x[l] = (v[l + 12] + v[l + 4]) + (v[l + 8]
 * + v[l]) (the same additions of the same pairs), so that AVX2's 16
 * registers hold them. The transposed block this replaced (a column's
 * chains in 8 lanes, red16's tree across them a column at a time) ran
 * 3.8 us a 128 x 128 step on one Zen 4 thread. */
static inline __attribute__((always_inline)) __m256 dn_v8(float *blk, int64_t st, int64_t ni, int l,
                                                          const float *y, int pass2, __m256 eg, __m256 d,
                                                          const float *k)
{
    __m256 lm[4];
#pragma GCC unroll 4
    for (int m = 0; m < 4; m++) {
        __m256 acc = _mm256_setzero_ps();
        for (int64_t it = 0; it < ni; it++) {
            const int64_t i = 64 * it + 16 * m + l;
            float *r = blk + i * st;
            const __m256 xs = _mm256_mul_ps(_mm256_loadu_ps(r), eg);
            __m256 x = xs;
            if (pass2) {
                x = _mm256_fmadd_ps(_mm256_set1_ps(k[i]), d, xs);
                _mm256_storeu_ps(r, x);
            }
            acc = _mm256_fmadd_ps(x, _mm256_set1_ps(y[i]), acc);
        }
        lm[m] = acc;
    }
    return _mm256_add_ps(_mm256_add_ps(lm[0], lm[2]), _mm256_add_ps(lm[1], lm[3]));
}

/* blk's row stride st: DN_CB in a copied block, S in the state itself
 * (one token, in place: 5.5 us a 128 x 128 step in L2 against the lanes
 * form's 5.8, 7.1-7.6 against 8.5 from memory, Zen 4; neither an l's loads
 * ahead of its stores as in dn_chunk16 nor a prefetch of the next columns
 * helped here, the prefetch cost 1.5-2 us) */
static inline __attribute__((always_inline)) __m256
dn_chunk8(float *blk, int64_t st, int64_t ni, const float *y, int pass2, __m256 eg, __m256 d, const float *k)
{
    __m256 x[4];
#pragma GCC unroll 4
    for (int l = 0; l < 4; l++) {
        const __m256 v0 = dn_v8(blk, st, ni, l, y, pass2, eg, d, k),
                     v4 = dn_v8(blk, st, ni, l + 4, y, pass2, eg, d, k);
        const __m256 v8 = dn_v8(blk, st, ni, l + 8, y, pass2, eg, d, k),
                     v12 = dn_v8(blk, st, ni, l + 12, y, pass2, eg, d, k);
        x[l] = _mm256_add_ps(_mm256_add_ps(v12, v4), _mm256_add_ps(v8, v0));
    }
    return _mm256_add_ps(_mm256_add_ps(x[0], x[2]), _mm256_add_ps(x[1], x[3]));
}

#endif

/* One token of ggml_gated_delta_net on one head's state s[S][S] (key index
 * i, value index j): S *= eg; sk[j] = dot(S[.][j], k); delta = (v - sk) *
 * beta; S[i][j] = fma(k[i], delta[j], S[i][j]); out[j] = dot(S[.][j], q) *
 * scale. lanes: 64 * S floats of scratch. */
static void delta_step(float *s, int64_t S, const float *k, const float *q, const float *v, float beta, float eg,
                       float scale, float *out, float *lanes)
{
#if defined(__AVX512F__) && defined(FWD_F16C)
    /* S a multiple of 64 (Qwen3.5's 128): a column's delta needs only its
     * own column, so both passes run per 16 columns, one column a lane */
    if (S % 64 == 0) {
        for (int64_t c0 = 0; c0 < S; c0 += 16) {
            /* Qwen3.5's 128 with the chains' length a constant */
            const __m512 veg = _mm512_set1_ps(eg), z = _mm512_setzero_ps();
            const __m512 sk = S == 128 ? dn_chunk16(s, 128, 2, c0, k, 0, 1, veg, z, k)
                                       : dn_chunk16(s, S, S / 64, c0, k, 0, 1, veg, z, k);
            const __m512 d = _mm512_mul_ps(_mm512_sub_ps(_mm512_loadu_ps(v + c0), sk), _mm512_set1_ps(beta));
            const __m512 o = S == 128 ? dn_chunk16(s, 128, 2, c0, q, 1, 1, veg, d, k)
                                      : dn_chunk16(s, S, S / 64, c0, q, 1, 1, veg, d, k);
            _mm512_storeu_ps(out + c0, _mm512_mul_ps(o, _mm512_set1_ps(scale)));
        }
        return;
    }
#elif defined(FWD_F16C)
    /* AVX2: the same per 8 columns, in place */
    if (S % 64 == 0) {
        for (int64_t c0 = 0; c0 < S; c0 += 8) {
            const __m256 veg = _mm256_set1_ps(eg), z = _mm256_setzero_ps();
            const __m256 sk = S == 128 ? dn_chunk8(s + c0, 128, 2, k, 0, veg, z, k)
                                       : dn_chunk8(s + c0, S, S / 64, k, 0, veg, z, k);
            const __m256 d = _mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(v + c0), sk), _mm256_set1_ps(beta));
            const __m256 o = S == 128 ? dn_chunk8(s + c0, 128, 2, q, 1, veg, d, k)
                                      : dn_chunk8(s + c0, S, S / 64, q, 1, veg, d, k);
            _mm256_storeu_ps(out + c0, _mm256_mul_ps(o, _mm256_set1_ps(scale)));
        }
        return;
    }
#endif
#ifdef FWD_F16C
    /* 16 <= S < 64, a multiple of 8 (qwen35-mini's 32): every product
     * rounded and summed in order, 8 columns per vector */
    if (S >= 16 && S < 64 && S % 8 == 0) {
        const int nv = (int)(S / 8);
        __m256 acc[8];
        const __m256 veg = _mm256_set1_ps(eg);
        for (int b = 0; b < nv; b++)
            acc[b] = _mm256_setzero_ps();
        for (int64_t i = 0; i < S; i++) {
            float *r = s + i * S;
            const __m256 ki = _mm256_set1_ps(k[i]);
            for (int b = 0; b < nv; b++) {
                const __m256 x = _mm256_mul_ps(_mm256_loadu_ps(r + 8 * b), veg);
                _mm256_storeu_ps(r + 8 * b, x);
                __m256 p = _mm256_mul_ps(x, ki);
                __asm__("" : "+x"(p));
                acc[b] = _mm256_add_ps(acc[b], p);
            }
        }
        const __m256 vb = _mm256_set1_ps(beta);
        __m256 d[8];
        for (int b = 0; b < nv; b++) {
            d[b] = _mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(v + 8 * b), acc[b]), vb);
            acc[b] = _mm256_setzero_ps();
        }
        for (int64_t i = 0; i < S; i++) {
            float *r = s + i * S;
            const __m256 ki = _mm256_set1_ps(k[i]), qi = _mm256_set1_ps(q[i]);
            for (int b = 0; b < nv; b++) {
                const __m256 x = _mm256_fmadd_ps(ki, d[b], _mm256_loadu_ps(r + 8 * b));
                _mm256_storeu_ps(r + 8 * b, x);
                __m256 p = _mm256_mul_ps(x, qi);
                __asm__("" : "+x"(p));
                acc[b] = _mm256_add_ps(acc[b], p);
            }
        }
        const __m256 vs = _mm256_set1_ps(scale);
        for (int b = 0; b < nv; b++)
            _mm256_storeu_ps(out + 8 * b, _mm256_mul_ps(acc[b], vs));
        return;
    }
#endif
    float sum[DN_MAX_STATE], delta[DN_MAX_STATE];
    struct coldot c;
    coldot_init(&c, S, lanes, sum);
    for (int64_t i = 0; i < S; i++) {
        float *r = s + i * S;
        int64_t j = 0;
#ifdef FWD_F16C
        const __m256 veg = _mm256_set1_ps(eg);
        for (; j + 8 <= S; j += 8) /* exact products: any width gives the same bits */
            _mm256_storeu_ps(r + j, _mm256_mul_ps(_mm256_loadu_ps(r + j), veg));
#endif
        for (; j < S; j++)
            r[j] *= eg;
        coldot_row(&c, i, r, k[i]);
    }
    for (int64_t j = 0; j < S; j++)
        delta[j] = (v[j] - sum[j]) * beta;
    coldot_init(&c, S, lanes, sum);
    for (int64_t i = 0; i < S; i++) {
        float *r = s + i * S;
        int64_t j = 0;
#ifdef FWD_F16C
        const __m256 ki = _mm256_set1_ps(k[i]);
        for (; j + 8 <= S; j += 8)
            _mm256_storeu_ps(r + j, _mm256_fmadd_ps(ki, _mm256_loadu_ps(delta + j), _mm256_loadu_ps(r + j)));
#endif
        for (; j < S; j++)
            r[j] = fmaf(k[i], delta[j], r[j]);
        coldot_row(&c, i, r, q[i]);
    }
    for (int64_t j = 0; j < S; j++)
        out[j] = sum[j] * scale;
}

#ifdef FWD_F16C
/* Prompts: a column of the state is all its own through the step
 * (its dot, its delta, its update), so a block of DN_CB columns runs every
 * token of a batch of DN_TB while it sits in L1, copied out of the state
 * (whose rows, 512 bytes apart at S = 128, put a block's lines into 8 of
 * L1's 64 sets: delta_step's column chunk did not stay there between its
 * passes). Each column's arithmetic is delta_step's. */
#define DN_CB 16
#define DN_TB 16

#ifdef __AVX512F__
/* AVX-512: the block row-major, row i's 16 columns one vector (blk[16 i +
 * c]), run by dn_chunk16 with a row stride of 16. */
static void dn_block_tokens(float *blk, int64_t S, int64_t c0, int n, const float *qk, const float *const *v,
                            const float *beta, const float *eg, float scale, float *o)
{
    const __m512 z = _mm512_setzero_ps();
    for (int t = 0; t < n; t++) {
        const float *q = qk + (size_t)t * 2 * S, *k = q + S;
        const __m512 veg = _mm512_set1_ps(eg[t]);
        const __m512 sk = S == 128 ? dn_chunk16(blk, DN_CB, 2, 0, k, 0, 0, veg, z, k)
                                   : dn_chunk16(blk, DN_CB, S / 64, 0, k, 0, 0, veg, z, k);
        const __m512 d = _mm512_mul_ps(_mm512_sub_ps(_mm512_loadu_ps(v[t] + c0), sk), _mm512_set1_ps(beta[t]));
        const __m512 oc = S == 128 ? dn_chunk16(blk, DN_CB, 2, 0, q, 1, 0, veg, d, k)
                                   : dn_chunk16(blk, DN_CB, S / 64, 0, q, 1, 0, veg, d, k);
        _mm512_storeu_ps(o + (size_t)t * S + c0, _mm512_mul_ps(oc, _mm512_set1_ps(scale)));
    }
}

#else
static void dn_block_tokens(float *blk, int64_t S, int64_t c0, int n, const float *qk, const float *const *v,
                            const float *beta, const float *eg, float scale, float *o)
{
    const __m256 z = _mm256_setzero_ps();
    for (int t = 0; t < n; t++) {
        const float *q = qk + (size_t)t * 2 * S, *k = q + S;
        const __m256 veg = _mm256_set1_ps(eg[t]);
        for (int hc = 0; hc < DN_CB; hc += 8) {
            float *b = blk + hc;
            const __m256 sk = S == 128 ? dn_chunk8(b, DN_CB, 2, k, 0, veg, z, k)
                                       : dn_chunk8(b, DN_CB, S / 64, k, 0, veg, z, k);
            const __m256 d =
                _mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(v[t] + c0 + hc), sk), _mm256_set1_ps(beta[t]));
            const __m256 oc = S == 128 ? dn_chunk8(b, DN_CB, 2, q, 1, veg, d, k)
                                       : dn_chunk8(b, DN_CB, S / 64, q, 1, veg, d, k);
            _mm256_storeu_ps(o + (size_t)t * S + c0 + hc, _mm256_mul_ps(oc, _mm256_set1_ps(scale)));
        }
    }
}
#endif

/* The state's columns [c0, c0 + DN_CB) into blk (row i's at blk + i *
 * DN_CB), or back (to_s). */
static void dn_block_move(float *s, int64_t S, int64_t c0, float *blk, int to_s)
{
    for (int64_t i = 0; i < S; i++) {
        if (to_s)
            memcpy(s + i * S + c0, blk + i * DN_CB, DN_CB * sizeof(float));
        else
            memcpy(blk + i * DN_CB, s + i * S + c0, DN_CB * sizeof(float));
    }
}

/* n <= DN_TB tokens of one head on its state s: the outputs times scale
 * into o (n x S); scr: DN_CB x S floats. */
static void dn_tokens(float *s, int64_t S, int n, const float *qk, const float *const *v, const float *beta,
                      const float *eg, float scale, float *o, float *scr)
{
    for (int64_t c0 = 0; c0 < S; c0 += DN_CB) {
        dn_block_move(s, S, c0, scr, 0);
        dn_block_tokens(scr, S, c0, n, qk, v, beta, eg, scale, o);
        dn_block_move(s, S, c0, scr, 1);
    }
}
#endif /* FWD_F16C */

void forward_deltanet_step(float *s, int64_t S, const float *k, const float *q, const float *v, float beta, float eg,
                           float scale, float *out)
{
    float *lanes = malloc(64 * (size_t)S * sizeof(float));
    delta_step(s, S, k, q, v, beta, eg, scale, out, lanes);
    free(lanes);
}

/* Head h's output o of token t through the gated RMS norm: rms_norm(o) *
 * ssm_norm * silu(z), into FWD_DN. */
static void dn_gate(const forward_ctx *f, int64_t h, int t, const float *o, const float *nw, float eps)
{
    const int64_t S = f->hp.ssm_d_state;
    double sum = 0.0;
    for (int64_t i = 0; i < S; i++)
        sum += (double)(o[i] * o[i]);
    const float mean = (float)(sum / S);
    const float rs = 1.0f / sqrtf(mean + eps);
    const float *z = f->buf[FWD_GATE] + (size_t)t * f->graph.width[FWD_GATE] + h * S;
    float *dst = f->buf[FWD_DN] + (size_t)t * f->graph.width[FWD_DN] + h * S;
    int64_t i = 0;
#ifdef FWD_F16C
    /* silu_at's v_expf part, 8 lanes (each a product of its own: nothing
     * to contract) */
    for (; i + 8 <= (S & ~(int64_t)15); i += 8) {
        const __m256 zv = _mm256_loadu_ps(z + i);
        const __m256 e = v_expf8(_mm256_sub_ps(_mm256_setzero_ps(), zv));
        const __m256 sz = _mm256_div_ps(zv, _mm256_add_ps(_mm256_set1_ps(1.0f), e));
        const __m256 x =
            _mm256_mul_ps(_mm256_mul_ps(_mm256_loadu_ps(o + i), _mm256_set1_ps(rs)), _mm256_loadu_ps(nw + i));
        _mm256_storeu_ps(dst + i, _mm256_mul_ps(x, sz));
    }
#endif
    for (; i < S; i++)
        dst[i] = ((o[i] * rs) * nw[i]) * silu_at(z[i], i, S);
}

void forward_deltanet_steps(float *s, int64_t S, int n, const float *q, const float *k, const float *v,
                            const float *beta, const float *eg, float scale, float *out)
{
#ifdef FWD_F16C
    if (S % 64 == 0 && S <= DN_MAX_STATE) { /* the prompts' form */
        float qk[DN_TB * 2 * DN_MAX_STATE], blk[DN_CB * DN_MAX_STATE];
        const float *vt[DN_TB];
        for (int t0 = 0; t0 < n; t0 += DN_TB) {
            const int nb = n - t0 < DN_TB ? n - t0 : DN_TB;
            for (int u = 0; u < nb; u++) {
                memcpy(qk + (size_t)u * 2 * S, q + (size_t)(t0 + u) * S, (size_t)S * sizeof(float));
                memcpy(qk + (size_t)u * 2 * S + S, k + (size_t)(t0 + u) * S, (size_t)S * sizeof(float));
                vt[u] = v + (size_t)(t0 + u) * S;
            }
            dn_tokens(s, S, nb, qk, vt, beta + t0, eg + t0, scale, out + (size_t)t0 * S, blk);
        }
        return;
    }
#endif
    for (int t = 0; t < n; t++)
        forward_deltanet_step(s, S, k + (size_t)t * S, q + (size_t)t * S, v + (size_t)t * S, beta[t], eg[t], scale,
                              out + (size_t)t * S);
}

static void head_worker(void *arg, int ith, int64_t chunk, int64_t n_chunks)
{
    const struct dn_job *j = arg;
    const forward_ctx *f = j->f;
    const model_hparams *hp = &f->hp;
    const model_layer *L = j->L;
    const int64_t S = hp->ssm_d_state, HK = hp->ssm_n_group, HV = hp->ssm_dt_rank, KD = S * HK;
    const int64_t W = f->graph.width[FWD_QKV];
    const float eps = hp->rms_eps, scale = 1.0f / sqrtf((float)S);
    const float *dt = L->ssm_dt->data, *A = L->ssm_a->data, *nw = L->ssm_norm->data;
    const int64_t h1 = forward_chunk_start(HV, chunk + 1, n_chunks);
    float qn[DN_MAX_STATE], kn[DN_MAX_STATE], o1[DN_MAX_STATE];
    float *lanes = f->dn_lanes + (size_t)ith * 64 * S;
#ifdef FWD_F16C
    /* prompts: DN_TB tokens at a time through dn_tokens (their q|k,
     * outputs and a column block in the thread's scratch); single tokens
     * and per-token snapshots through delta_step */
    float *scr = !j->snaps && j->n > 1 && S % 64 == 0
                     ? kernel_scratch_get((size_t)(DN_TB * 3 + DN_CB) * (size_t)S * sizeof(float))
                     : NULL;
    float *tqk = scr, *tout = scr ? scr + (size_t)DN_TB * 2 * S : NULL, *tblk = scr ? tout + (size_t)DN_TB * S : NULL;
    const float *tv[DN_TB];
    float tbeta[DN_TB], teg[DN_TB];
#endif
    for (int64_t h = forward_chunk_start(HV, chunk, n_chunks); h < h1; h++) {
        float *s = j->ssm + h * S * S;
        const int64_t kh = h % HK;
        for (int t = j->row0; t < j->row0 + j->n; t++) {
            const float *row = f->buf[FWD_QKV] + (size_t)t * W;
            float *o = o1;
#ifdef FWD_F16C
            const int tb = (t - j->row0) % DN_TB; /* the token's place in its batch */
            float *qn_t = scr ? tqk + (size_t)tb * 2 * S : qn, *kn_t = scr ? qn_t + S : kn;
#else
            float *qn_t = qn, *kn_t = kn;
#endif
            l2norm2(qn_t, row + kh * S, kn_t, row + KD + kh * S, S, eps);
            const float *v = row + 2 * KD + h * S;
            const float braw = f->buf[FWD_BETA][(size_t)t * f->graph.width[FWD_BETA] + h];
            const float beta = 1.0f / (1.0f + expf(-braw));
            const float a = f->buf[FWD_ALPHA][(size_t)t * f->graph.width[FWD_ALPHA] + h] + dt[h];
            const float sp = a > 20.0f ? a : logf(1.0f + expf(a));
            const float g = sp * A[h];
#ifdef FWD_F16C
            if (scr) {
                tv[tb] = v;
                tbeta[tb] = beta;
                teg[tb] = expf(g);
                const int last = t + 1 == j->row0 + j->n;
                if (tb + 1 < DN_TB && !last)
                    continue;
                /* the batch's steps, then its tokens' gating below */
                dn_tokens(s, S, tb + 1, tqk, tv, tbeta, teg, scale, tout, tblk);
                for (int u = 0; u <= tb; u++)
                    dn_gate(f, h, t - tb + u, tout + (size_t)u * S, nw, eps);
                continue;
            }
#endif
            delta_step(s, S, kn_t, qn_t, v, beta, expf(g), scale, o, lanes);
            if (j->snaps) {
                float *dst = (float *)(j->snaps + (size_t)(f->row0 + t) * f->rs_bytes) +
                             (size_t)(hp->ssm_d_conv - 1) * (size_t)(2 * KD + hp->ssm_d_inner) + h * S * S;
                memcpy(dst, s, (size_t)(S * S) * sizeof(float));
            }
            dn_gate(f, h, t, o, nw, eps);
        }
    }
}

/* Rows [row0, row0 + n), all of one sequence, on that sequence's state. */
static void deltanet_rows(forward_ctx *f, uint32_t il, int row0, int n, int32_t seq)
{
    const model_hparams *hp = &f->hp;
    const int64_t C = 2 * (int64_t)hp->ssm_d_state * hp->ssm_n_group + hp->ssm_d_inner;
    uint8_t *st = f->rs + (size_t)seq * f->rs_bytes + forward_rs_layer_offset(hp, il);
    /* the states kept for forward_rs_keep are one sequence's: forward_decode
     * never keeps them (rs_snap_on is forward_run's alone) */
    struct dn_job j = {f, &f->w->layers[il], (float *)st, (float *)st + (size_t)(hp->ssm_d_conv - 1) * C, row0, n,
                       f->rs_snap_on && !f->ub ? f->rs_snaps + forward_rs_layer_offset(hp, il) : NULL};
    threadpool_run(f->tp, forward_n_chunks(f, C, (int64_t)n * C * hp->ssm_d_conv * PREP_COST), conv_worker, &j);
    const int64_t S = hp->ssm_d_state, HV = hp->ssm_dt_rank;
    threadpool_run(f->tp, forward_n_chunks(f, HV, (int64_t)n * HV * S * S * 4), head_worker, &j);
}

void forward_deltanet_run(forward_ctx *f, uint32_t il, int n)
{
    if (!f->ub) {
        deltanet_rows(f, il, 0, n, 0);
        return;
    }
    /* forward_decode's batch: each sequence's rows on its own state, as
     * ggml_ssm_conv and ggml_gated_delta_net run each sequence of a ubatch */
    const int per = n / f->ub->n_stream;
    for (int s = 0; s < f->ub->n_stream; s++)
        deltanet_rows(f, il, s * per, per, f->ub->seq[s * per]);
}
