/* The steps between the matmuls: embeddings, RMS norms, adds, biases,
 * RoPE (both pairings, with frequency factors), the KV store and the FFN
 * activations. Each works on one token row at a time, so a row step runs
 * on the pool like a matmul (a row's arithmetic is the same on any
 * thread), each in the reference's float order:
 *  - RMS norm sums squares in double, scales by 1/sqrtf(mean + eps), then
 *    multiplies by the weight (ggml_rms_norm, then ggml_mul);
 *  - RoPE builds theta by repeated multiplication with base^(-2/n_rot)
 *    like ggml's rope cache, divides it by the pair's frequency factor, and
 *    rotates adjacent pairs (NORM) or the two halves of a head (NEOX);
 *  - SiLU uses ggml's vector exp, GELU its F16 lookup table. */
#include <math.h>
#include <pthread.h>
#include <string.h>

#include "kernels/forward_math.h"
#include "kernels/tanhf_libm.h"
#include "model/forward_internal.h"
#include "model/rope_yarn.h"

/* ggml_rms_norm's scaling, then (w) ggml_mul: two roundings an element */
static void rmsnorm_scale(float *out, const float *x, const float *w, int64_t n, double sum, float eps)
{
    const float mean = (float)(sum / n);
    const float scale = 1.0f / sqrtf(mean + eps);
    int64_t i = 0;
#ifdef FWD_F16C
    const __m256 sc = _mm256_set1_ps(scale);
    for (; i + 8 <= n; i += 8) {
        const __m256 y = _mm256_mul_ps(_mm256_loadu_ps(x + i), sc);
        _mm256_storeu_ps(out + i, w ? _mm256_mul_ps(y, _mm256_loadu_ps(w + i)) : y);
    }
#endif
    for (; i < n; i++)
        out[i] = w ? (x[i] * scale) * w[i] : x[i] * scale;
}

static void rmsnorm(float *out, const float *x, const float *w, int64_t n, float eps)
{
    double sum = 0.0;
    for (int64_t i = 0; i < n; i++)
        sum += (double)(x[i] * x[i]);
    rmsnorm_scale(out, x, w, n, sum, eps);
}

/* The RMS norms of nr (1-4) rows of n at once: row j's squares summed in
 * its own order, one lane of a vector of 4 doubles, so that the rows
 * share the adds' latency (a row's 2048 dependent adds took a tenth of a
 * prompt's time outside the matmuls). out[j] is x[j] or apart from every
 * x. */
static void rmsnorm_rows(float *const out[4], const float *const x[4], int nr, const float *w, int64_t n, float eps)
{
#ifdef FWD_F16C
    if (nr > 1) {
        const float *x1 = x[1], *x2 = x[nr > 2 ? 2 : 0], *x3 = x[nr > 3 ? 3 : 0];
        __m256d acc = _mm256_setzero_pd();
        for (int64_t i = 0; i < n; i++) {
            const __m128 v = _mm_setr_ps(x[0][i], x1[i], x2[i], x3[i]);
            acc = _mm256_add_pd(acc, _mm256_cvtps_pd(_mm_mul_ps(v, v)));
        }
        double sum[4];
        _mm256_storeu_pd(sum, acc);
        for (int j = 0; j < nr; j++)
            rmsnorm_scale(out[j], x[j], w, n, sum[j], eps);
        return;
    }
#endif
    for (int j = 0; j < nr; j++)
        rmsnorm(out[j], x[j], w, n, eps);
}

/* ggml_vec_swiglu_f32: 16-lane groups use the vector silu, the tail libm expf. */
static void swiglu_row(float *out, const float *g, const float *up, int64_t n)
{
    const int64_t nv = n & ~(int64_t)15;
    int64_t i = 0;
#ifdef FWD_F16C
    for (; i < nv; i += 8) {
        const __m256 x = _mm256_loadu_ps(g + i);
        const __m256 e = v_expf8(_mm256_sub_ps(_mm256_setzero_ps(), x));
        _mm256_storeu_ps(out + i, _mm256_mul_ps(_mm256_div_ps(x, _mm256_add_ps(_mm256_set1_ps(1.0f), e)),
                                                _mm256_loadu_ps(up + i)));
    }
#endif
    for (; i < nv; i++)
        out[i] = (g[i] / (1.0f + v_expf(0.0f - g[i]))) * up[i];
    for (i = nv; i < n; i++)
        out[i] = (g[i] / (1.0f + expf(-g[i]))) * up[i];
}

/* ggml's GELU (tanh approximation) goes through a table of every F16
 * input, filled once with this very expression. */
static float gelu_f32(float x)
{
    const float GELU_COEF_A = 0.044715f, SQRT_2_OVER_PI = 0.79788456080286535587989211986876f;
    return 0.5f * x * (1.0f + tanhf(SQRT_2_OVER_PI * x * (1.0f + GELU_COEF_A * x * x)));
}

static fp16_t gelu_table[1 << 16];
static pthread_once_t gelu_once = PTHREAD_ONCE_INIT;

static void gelu_table_init(void)
{
    for (uint32_t i = 0; i < (1u << 16); i++)
        gelu_table[i] = f2h(gelu_f32(h2f((fp16_t)i)));
}

/* ggml_vec_geglu_f32 with GGML_GELU_FP16 */
static void geglu_row(float *out, const float *g, const float *up, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        const float x = g[i];
        if (x <= -10.0f)
            out[i] = 0.0f;
        else if (x >= 10.0f)
            out[i] = x * up[i];
        else
            out[i] = h2f(gelu_table[f2h(x)]) * up[i];
    }
}

/* IMROPE (ggml_mrope_cache_init, interleaved): pair k's sector k % (sum of
 * the sections) takes its angle from the time, height or width position
 * (all the token's position for text) when it is below 3x that section,
 * else from the fourth position, 0 for text: no rotation. */
static bool imrope_pos0(const int32_t sec[4], uint32_t pair)
{
    const int32_t dims = sec[0] + sec[1] + sec[2] + sec[3];
    const int32_t k = (int32_t)pair % dims;
    if (k % 3 == 1 && k < 3 * sec[1])
        return false;
    if (k % 3 == 2 && k < 3 * sec[2])
        return false;
    if (k % 3 == 0 && k < 3 * sec[0])
        return false;
    return true;
}

/* cos/sin pairs for position pos, like ggml_rope_cache_init (sections:
 * IMROPE's, or NULL); with YaRN (ext_factor != 0) through rope_yarn_cs,
 * its correction dims from the table's base and the original context. */
static void rope_table(float *cs, int32_t pos, uint32_t n_rot, float base, float freq_scale, float mscale,
                       const float *factors, float ext_factor, uint32_t n_ctx_orig, const int32_t *sections)
{
    const float theta_scale = powf(base, -2.0f / (float)n_rot);
    float theta = (float)pos, theta0 = 0.0f;
    if (ext_factor != 0.0f) {
        float dims[2];
        rope_yarn_corr_dims((int)n_rot, (int)n_ctx_orig, base, ROPE_YARN_BETA_FAST, ROPE_YARN_BETA_SLOW, dims);
        for (uint32_t i = 0; i < n_rot; i += 2) {
            const float ff = factors ? factors[i / 2] : 1.0f;
            const float th = sections && imrope_pos0(sections, i / 2) ? theta0 : theta;
            rope_yarn_cs(th / ff, freq_scale, dims, i, ext_factor, mscale, &cs[i], &cs[i + 1]);
            theta *= theta_scale;
            theta0 *= theta_scale;
        }
        return;
    }
    for (uint32_t i = 0; i < n_rot; i += 2) {
        const float ff = factors ? factors[i / 2] : 1.0f;
        const float th = sections && imrope_pos0(sections, i / 2) ? theta0 : theta;
        const float t = freq_scale * (th / ff);
        cs[i] = cosf(t) * mscale;
        cs[i + 1] = sinf(t) * mscale;
        theta *= theta_scale;
        theta0 *= theta_scale;
    }
}

/* The cache is head-major (forward_internal.h): each KV head's rows are
 * contiguous, so attention streams them. A row of a head is converted alone;
 * for the block types that is the whole row's quantization (heads are whole
 * blocks), as ggml_set_rows does it. */
static void store_kv(forward_ctx *f, uint32_t l, int32_t stream, int32_t pos, const float *k, const float *v)
{
    const int64_t hd = forward_hd(f, l);
    const enum tensor_type types[2] = {f->p.kv_type, f->p.v_type};
    const float *src[2] = {k, v};
    uint8_t *base[2] = {(uint8_t *)f->k_cache[l], (uint8_t *)f->v_cache[l]};
    const size_t head[2] = {forward_k_head(f, l), forward_v_head(f, l)};
    for (int c = 0; c < 2; c++)
        for (int h = 0; h < forward_n_kv(f, l); h++) {
            uint8_t *dst = base[c] + (forward_kv_base(f, l, stream, h) + (size_t)pos) * head[c];
            const float *x = src[c] + (int64_t)h * hd;
            if (types[c] == TENSOR_TYPE_F16) {
                fp16_t *d = (fp16_t *)dst;
                for (int64_t i = 0; i < hd; i++)
                    d[i] = f2h(x[i]);
            } else if (types[c] == TENSOR_TYPE_F32) {
                memcpy(dst, x, (size_t)hd * sizeof(float));
            } else {
                tensor_quantize_row(types[c], x, dst, hd);
            }
        }
}

/* ggml's fast Walsh-Hadamard transform (the CPU kernel behind llama.cpp's
 * Hadamard-hinted matmul): each n-element piece scaled by 1/sqrt(n), then
 * butterflies of width 1, 2, 4, ... (u + v, u - v). */
static void hadamard_row(float *x, int64_t width, int64_t n)
{
    const float scale = 1.0f / sqrtf((float)n);
    for (int64_t p = 0; p < width; p += n) {
        float *r = x + p;
        for (int64_t j = 0; j < n; j++)
            r[j] *= scale;
        for (int64_t len = 1; len < n; len <<= 1)
            for (int64_t i = 0; i < n; i += 2 * len)
                for (int64_t j = 0; j < len; j++) {
                    const float u = r[i + j], v = r[i + len + j];
                    r[i + j] = u + v;
                    r[i + len + j] = u - v;
                }
    }
}

static inline float *row(forward_ctx *f, enum fwd_buf b, int t)
{
    return f->buf[b] + (size_t)t * f->graph.width[b];
}

/* Heads of layer il's size in a row of buffer b: the layer's own count
 * for the attention buffers, which are as wide as the widest layer's. */
static int64_t n_heads(const forward_ctx *f, enum fwd_buf b, uint32_t il, int64_t hd)
{
    if (b == FWD_Q || b == FWD_ATT)
        return f->hp.n_head;
    if (b == FWD_K || b == FWD_V)
        return forward_n_kv(f, il);
    return f->graph.width[b] / hd;
}

/* Gemma 4's per-layer inputs of token t (forward_ple.c): d holds the
 * projection of the scaled embeddings, all layers' pieces side by side. */
static void ple_input(forward_ctx *f, const struct fwd_op *op, float *d, int t)
{
    const model_hparams *hp = &f->hp;
    const gguf_tensor *te = f->w->ple_tok_embd;
    const int64_t npl = hp->n_embd_per_layer, n = npl * hp->n_layer;
    float tok[n]; /* the loader keeps n_layer * n_embd_per_layer small */
    const size_t rb = tensor_row_size((enum tensor_type)te->type, n);
    tensor_dequantize_row((enum tensor_type)te->type, (const uint8_t *)te->data + (size_t)f->tokens[t] * rb, tok, n);
    const float tok_scale = sqrtf((float)npl), proj_scale = 1.0f / sqrtf((float)hp->n_embd);
    const float inp_scale = 1.0f / sqrtf(2.0f);
    for (int64_t i = 0; i < n; i++)
        d[i] *= proj_scale;
    for (int64_t l = 0; l < hp->n_layer; l++)
        rmsnorm(d + l * npl, d + l * npl, op->w->data, npl, hp->rms_eps);
    for (int64_t i = 0; i < n; i++)
        d[i] = (d[i] + tok[i] * tok_scale) * inp_scale;
}

/* The token's RoPE tables, used by every layer (table 1: the sliding layers'),
 * at its row's position in forward_decode's batch (f->ub), else start_pos + t. */
static void token_rope_tables(forward_ctx *f, int t)
{
    const model_hparams *hp = &f->hp;
    float *cs = f->rope + (size_t)t * f->n_rope_tables * f->rope_stride;
    const int32_t pos = f->ub ? f->ub->pos[t] : f->start_pos + t;
    const int32_t *sec = hp->rope_imrope ? hp->rope_sections : NULL;
    rope_table(cs, pos, hp->n_rot, hp->rope_freq_base, hp->rope_freq_scale, hp->rope_attn_factor, f->rope_factors,
               hp->rope_ext_factor, hp->n_ctx_orig, sec);
    if (f->n_rope_tables > 1)
        rope_table(cs + f->rope_stride, pos, hp->n_rot_swa, hp->rope_freq_base_swa, hp->rope_freq_scale_swa,
                   hp->rope_attn_factor, hp->rope_factors_full_only ? NULL : f->rope_factors, hp->rope_ext_factor,
                   hp->n_ctx_orig, sec);
}

/* ggml_scale, ggml_tanh, ggml_scale on elements [i0, i1) of a row: the
 * C library's tanhf, in vector lanes where they give its bits */
static void softcap_span(float *d, int64_t i0, int64_t i1, float c)
{
    const float inv = 1.0f / c;
    if (tanhf_libm_exact()) {
        tanhf_libm_scaled(d + i0, d + i0, i1 - i0, inv, c);
        return;
    }
    for (int64_t i = i0; i < i1; i++)
        d[i] = tanhf(d[i] * inv) * c;
}

static void run_op(forward_ctx *f, const struct fwd_op *op, int t)
{
    const model_hparams *hp = &f->hp;
    const int64_t *width = f->graph.width;
    float *d = row(f, op->dst, t);
    switch (op->kind) {
    case OP_EMBED: {
        const gguf_tensor *emb = f->w->tok_embd;
        const int64_t E = hp->n_embd;
        const size_t erb = tensor_row_size((enum tensor_type)emb->type, E);
        tensor_dequantize_row((enum tensor_type)emb->type,
                              (const uint8_t *)emb->data + (size_t)f->tokens[t] * erb, d, E);
        if (hp->embd_scale != 0.0f)
            for (int64_t i = 0; i < E; i++)
                d[i] *= hp->embd_scale;
        token_rope_tables(f, t);
        break;
    }
    case OP_G4A_INPUT: { /* [the target's embedding * sqrt(B) | h]: ggml_get_rows, ggml_scale, ggml_concat */
        const gguf_tensor *emb = f->w->tok_embd; /* the target's (model_g4assist_view) */
        const int64_t B = hp->n_embd_out;
        const size_t erb = tensor_row_size((enum tensor_type)emb->type, B);
        tensor_dequantize_row((enum tensor_type)emb->type,
                              (const uint8_t *)emb->data + (size_t)f->tokens[t] * erb, d, B);
        for (int64_t i = 0; i < B; i++)
            d[i] *= hp->embd_scale;
        memcpy(d + B, f->h_in + (size_t)(f->row0 + t) * B, (size_t)B * sizeof *d);
        token_rope_tables(f, t);
        break;
    }
    case OP_H_OUTPUT:
        memcpy(f->h_out + (size_t)(f->row0 + t) * hp->n_embd_out, row(f, op->src, t),
               (size_t)hp->n_embd_out * sizeof *d);
        break;
    case OP_NORM:
        rmsnorm(d, row(f, op->src, t), op->w ? op->w->data : NULL, width[op->src], hp->rms_eps);
        break;
    case OP_HEAD_NORM: {
        const int64_t hd = forward_hd(f, op->il), nh = n_heads(f, op->dst, op->il, hd);
        for (int64_t h = 0; h < nh; h += 4) {
            const int nr = nh - h < 4 ? (int)(nh - h) : 4;
            float *o[4];
            const float *xs[4];
            for (int k = 0; k < 4; k++) /* past the last head: the group's first, unread */
                xs[k] = o[k] = d + (h + (k < nr ? k : 0)) * hd;
            rmsnorm_rows(o, xs, nr, op->w ? op->w->data : NULL, hd, hp->rms_eps);
        }
        break;
    }
    case OP_ADD:
        vec_add(d, row(f, op->src, t), width[op->dst]);
        break;
    case OP_BIAS:
        vec_add(d, op->w->data, width[op->dst]);
        break;
    case OP_SCALE:
        vec_scale(d, width[op->dst], op->s);
        break;
    case OP_ROPE: {
        const int tab = f->n_rope_tables > 1 && hp->swa_layer[op->il];
        const float *cs = f->rope + ((size_t)t * f->n_rope_tables + tab) * f->rope_stride;
        const int64_t hd = forward_hd(f, op->il);
        for (int64_t h = 0; h < n_heads(f, op->dst, op->il, hd); h++)
            rope_rotate(d + h * hd, cs, model_n_rot(hp, op->il), hp->rope_type == MODEL_ROPE_NEOX);
        break;
    }
    case OP_KV_STORE:
        if (f->ub)
            store_kv(f, op->il, f->ub->seq[t], f->ub->pos[t], d, row(f, op->src, t));
        else
            store_kv(f, op->il, 0, f->start_pos + t, d, row(f, op->src, t));
        break;
    case OP_SPLIT_QKV: {
        const float *s = row(f, op->src, t);
        const int64_t nq = width[FWD_Q], kv = width[FWD_K];
        memcpy(d, s, (size_t)nq * sizeof(float));
        memcpy(row(f, FWD_K, t), s + nq, (size_t)kv * sizeof(float));
        memcpy(row(f, FWD_V, t), s + nq + kv, (size_t)kv * sizeof(float));
        break;
    }
    case OP_SWIGLU:
        swiglu_row(d, row(f, op->src, t), row(f, op->src2, t), width[op->dst]);
        break;
    case OP_SWIGLU_FUSED: {
        const float *s = row(f, op->src, t);
        const int64_t n = width[op->src] / 2;
        swiglu_row(d, s, s + n, n);
        break;
    }
    case OP_GEGLU:
        geglu_row(d, row(f, op->src, t), row(f, op->src2, t), width[op->dst]);
        break;
    case OP_HADAMARD: { /* the layer's own heads: a sliding layer's may be narrower than the buffer */
        const int64_t hd = forward_hd(f, op->il);
        hadamard_row(d, n_heads(f, op->dst, op->il, hd) * hd, fwd_rot_size(op->dst == FWD_Q || op->dst == FWD_K, hd));
        break;
    }
    case OP_COPY:
        memcpy(d, row(f, op->src, t), (size_t)(width[op->dst] < width[op->src] ? width[op->dst] : width[op->src]) *
                                          sizeof(float));
        break;
    case OP_MUL:
        vec_mul(d, op->w->data, op->w->ne[0]);
        break;
    case OP_PLE_INPUT: ple_input(f, op, d, t); break;
    case OP_PLE_GATE: {
        const int64_t npl = hp->n_embd_per_layer;
        geglu_row(d, d, row(f, op->src, t) + (size_t)op->il * npl, npl);
        break;
    }
    case OP_SPLIT_QGATE: {
        const float *s = row(f, op->src, t);
        float *gate = row(f, op->src2, t);
        const int64_t hd = hp->head_dim;
        for (int64_t h = 0; h < width[op->dst] / hd; h++) {
            memcpy(d + h * hd, s + 2 * h * hd, (size_t)hd * sizeof(float));
            memcpy(gate + h * hd, s + (2 * h + 1) * hd, (size_t)hd * sizeof(float));
        }
        break;
    }
    case OP_H_INPUT:
        memcpy(d, f->h_in + (size_t)(f->row0 + t) * hp->n_embd, (size_t)hp->n_embd * sizeof *d);
        break;
    case OP_CAT:
        memcpy(d, row(f, op->src, t), (size_t)width[op->src] * sizeof *d);
        memcpy(d + width[op->src], row(f, op->src2, t), (size_t)width[op->src2] * sizeof *d);
        break;
    case OP_SIGMOID_MUL: { /* ggml_sigmoid (libm expf), then ggml_mul */
        const float *s = row(f, op->src, t);
        for (int64_t i = 0; i < (int64_t)hp->n_head * hp->head_dim; i++)
            d[i] *= 1.0f / (1.0f + expf(-s[i]));
        break;
    }
    case OP_SHEXP_MIX: {
        /* ggml_sigmoid, ggml_mul, ggml_add: each rounded on its own */
        const float gate = 1.0f / (1.0f + expf(-row(f, op->src2, t)[0]));
        const float *moe = row(f, op->src, t);
        for (int64_t i = 0; i < width[op->dst]; i++)
            d[i] *= gate;
        for (int64_t i = 0; i < width[op->dst]; i++)
            d[i] = moe[i] + d[i];
        break;
    }
    case OP_SOFTCAP:
        softcap_span(d, 0, width[op->dst], op->s);
        break;
    }
}

void forward_swiglu_row(float *out, const float *g, const float *up, int64_t n) { swiglu_row(out, g, up, n); }

void forward_rmsnorm_row(float *out, const float *x, const float *w, int64_t n, float eps)
{
    rmsnorm(out, x, w, n, eps);
}

void forward_geglu_row(float *out, const float *g, const float *up, int64_t n)
{
    pthread_once(&gelu_once, gelu_table_init);
    geglu_row(out, g, up, n);
}

struct rows_job {
    forward_ctx *f;
    const struct fwd_step *st;
    int n;
};

/* A chunk's tokens in groups of 4, each op for the group's tokens in turn
 * (a token's ops stay in order, and a row op touches its own token's rows
 * only), so that an RMS norm runs for 4 tokens at once (rmsnorm_rows). */
static void rows_worker(void *arg, int ith, int64_t chunk, int64_t n_chunks)
{
    (void)ith;
    const struct rows_job *j = arg;
    forward_ctx *f = j->f;
    const int t1 = (int)forward_chunk_start(j->n, chunk + 1, n_chunks);
    for (int t0 = (int)forward_chunk_start(j->n, chunk, n_chunks); t0 < t1; t0 += 4) {
        const int g = t1 - t0 < 4 ? t1 - t0 : 4;
        for (int i = 0; i < j->st->n_ops; i++) {
            const struct fwd_op *op = &j->st->ops[i];
            if (op->kind == OP_NORM && g > 1) {
                float *o[4];
                const float *x[4];
                for (int k = 0; k < 4; k++) {
                    o[k] = row(f, op->dst, t0 + (k < g ? k : 0));
                    x[k] = row(f, op->src, t0 + (k < g ? k : 0));
                }
                rmsnorm_rows(o, x, g, op->w ? op->w->data : NULL, f->graph.width[op->src], f->hp.rms_eps);
                continue;
            }
            for (int k = 0; k < g; k++)
                run_op(f, op, t0 + k);
        }
    }
}

/* Elements per chunk of a soft-capped logit row (span_worker). */
#define SPAN_ELEMS 8192

/* A step of elementwise ops alone (the final logit soft-cap): chunks of
 * SPAN_ELEMS elements of every row, so that a single token's 262144 tanhf
 * calls (Gemma 4's head: 13 % of a generated token on one thread while the
 * other waited) are shared by the threads. Each element's steps are the
 * same, so the bits are too. */
static void span_worker(void *arg, int ith, int64_t chunk, int64_t n_chunks)
{
    (void)ith;
    const struct rows_job *j = arg;
    const enum fwd_buf b = j->st->ops[0].dst;
    const int64_t w = j->f->graph.width[b], per_row = (w + SPAN_ELEMS - 1) / SPAN_ELEMS;
    const int64_t c1 = forward_chunk_start((int64_t)j->n * per_row, chunk + 1, n_chunks);
    for (int64_t c = forward_chunk_start((int64_t)j->n * per_row, chunk, n_chunks); c < c1; c++) {
        const int t = (int)(c / per_row);
        const int64_t i0 = (c % per_row) * SPAN_ELEMS, i1 = i0 + SPAN_ELEMS < w ? i0 + SPAN_ELEMS : w;
        for (int i = 0; i < j->st->n_ops; i++)
            softcap_span(row(j->f, b, t), i0, i1, j->st->ops[i].s);
    }
}

/* True for a step span_worker can run: soft-caps of one buffer only. */
static bool elementwise_step(const struct fwd_step *st)
{
    for (int i = 0; i < st->n_ops; i++)
        if (st->ops[i].kind != OP_SOFTCAP || st->ops[i].dst != st->ops[0].dst)
            return false;
    return st->n_ops > 0;
}

void forward_run_rows(forward_ctx *f, const struct fwd_step *st, int n)
{
    int64_t width = 0;
    for (int i = 0; i < st->n_ops; i++) {
        if (st->ops[i].kind == OP_GEGLU || st->ops[i].kind == OP_PLE_GATE)
            pthread_once(&gelu_once, gelu_table_init);
        const int64_t w = f->graph.width[st->ops[i].dst];
        width = w > width ? w : width;
    }
    struct rows_job j = {f, st, n};
    if (elementwise_step(st)) {
        const int64_t spans = (int64_t)n * ((width + SPAN_ELEMS - 1) / SPAN_ELEMS);
        threadpool_run(f->tp, forward_n_chunks(f, spans, (int64_t)n * width * PREP_COST), span_worker, &j);
        return;
    }
    threadpool_run(f->tp, forward_n_chunks(f, n, (int64_t)n * width * PREP_COST), rows_worker, &j);
}
