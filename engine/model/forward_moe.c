/* The mixture-of-experts block (forward_graph.h's fwd_block_moe): the
 * recipe words that build it, and the STEP_MOE step that runs the routed
 * experts of a batch.
 *
 * What the reference computes (llama.cpp's build_moe_ffn on the CPU
 * backend), and where this file follows it:
 *  - the router is a plain matmul (a STEP_MATMUL before STEP_MOE, so it
 *    gets the dense kernels' float order) and its bias a plain add; its
 *    logits become each token's experts and weights in forward_moe_route.c;
 *  - the experts are ggml_mul_mat_id: the input rows quantized to the
 *    weight's dot type, then for every expert the rows routed to it, each
 *    output one dot product in vec_dot order (ggml_vec_dot_*; the types the
 *    reference repacks take their gemv order, one token at a time, exactly
 *    as its repacked mul_mat_id does) - so grouping tokens by expert, as
 *    the reference does, changes no bit;
 *  - scales (ggml_mul), biases (ggml_add_id), the activation (ggml_swiglu /
 *    geglu / swiglu_oai), the router weight (ggml_mul) and the sum over the
 *    slots (ggml_add of views, slot 0 + slot 1, then + slot 2, ...) are each
 *    their own pass here too: one rounding per operation, never a fused
 *    multiply-add the reference does not do. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/forward_math.h"
#include "kernels/forward_packed.h"
#include "kernels/forward_repack.h"
#include "kernels/gemm_kq4v.h"
#include "kernels/packed_q8_0.h"
#include "kernels/quant_batch.h"
#include "kernels/quant_iq4.h"
#include "model/arch.h"
#include "model/forward_internal.h"

/* ---- building the block --------------------------------------------------- */

fwd_moe fwd_moe_of(const model_hparams *hp, const model_layer *L)
{
    fwd_moe m;
    memset(&m, 0, sizeof m);
    m.in = m.router_in = m.dst = FWD_XB;
    m.n_expert = hp->n_expert;
    m.n_used = hp->n_expert_used;
    m.gating = hp->moe_gating;
    m.norm_w = hp->moe_norm_w;
    m.w_scale = hp->moe_w_scale;
    m.act = hp->moe_act;
    m.oai_alpha = 1.702f;
    m.oai_limit = 7.0f;
    m.router = L->ffn_gate_inp;
    m.router_b = L->ffn_gate_inp_b;
    m.gate = L->ffn_gate_exps;
    m.up = L->ffn_up_exps;
    m.gate_up = L->ffn_gate_up_exps;
    m.down = L->ffn_down_exps;
    m.gate_b = L->ffn_gate_exps_b;
    m.up_b = L->ffn_up_exps_b;
    m.gate_up_b = L->ffn_gate_up_exps_b;
    m.down_b = L->ffn_down_exps_b;
    m.gate_s = L->ffn_gate_exps_s;
    m.up_s = L->ffn_up_exps_s;
    m.down_s = L->ffn_down_exps_s;
    m.sh_gate = L->ffn_gate_shexp;
    m.sh_up = L->ffn_up_shexp;
    m.sh_down = L->ffn_down_shexp;
    m.sh_gate_inp = L->ffn_gate_inp_shexp;
    return m;
}

void fwd_block_moe(fwd_graph *g, const fwd_moe *m)
{
    if (g->oom)
        return;
    const bool shared = m->sh_up != NULL;
    fwd_matmul1(g, FWD_ROUTER, m->router_in, m->router);
    /* the reference's order even where --blas would take the weight: one
     * bit of a logit can change which experts run */
    if (!g->oom)
        g->steps[g->n_steps - 1].no_blas = true;
    if (m->router_b)
        fwd_bias(g, FWD_ROUTER, m->router_b);
    if (g->n_moe == g->cap_moe) {
        const int cap = g->cap_moe ? 2 * g->cap_moe : 16;
        fwd_moe *p = realloc(g->moe, (size_t)cap * sizeof *p);
        if (!p) {
            g->oom = true;
            return;
        }
        g->moe = p;
        g->cap_moe = cap;
    }
    fwd_moe *c = &g->moe[g->n_moe];
    *c = *m;
    if (shared)
        c->dst = FWD_XB2; /* the routed experts' sum, until the shared expert's is added */
    struct fwd_step *st = fwd_graph_push(g, STEP_MOE);
    if (!st)
        return;
    st->moe = g->n_moe++;
    if (!shared)
        return;
    /* llama.cpp (qwen35moe / qwen3next): build_ffn on the same input, its
     * gate logit sigmoid-ed, ffn_shexp * gate, then moe_out + that */
    const gguf_tensor *ws[3] = {m->sh_gate, m->sh_up, m->sh_gate_inp};
    const enum fwd_buf outs[3] = {FWD_HB, FWD_HB2, FWD_SHGATE};
    fwd_matmul(g, m->in, 3, ws, outs);
    fwd_swiglu(g, FWD_HB, FWD_HB, FWD_HB2);
    fwd_matmul1(g, m->dst, FWD_HB, m->sh_down);
    fwd_graph_row_op(g, (struct fwd_op){.kind = OP_SHEXP_MIX, .dst = m->dst, .src = FWD_XB2, .src2 = FWD_SHGATE});
}

/* ---- activations ---------------------------------------------------------------- */

/* ggml_swiglu_oai_f32, one row */
void moe_swiglu_oai(float *out, const float *g, const float *u, int64_t n, float alpha, float limit)
{
    for (int64_t i = 0; i < n; i++) {
        const float x = g[i] < limit ? g[i] : limit;                            /* std::min(x, limit) */
        const float y = u[i] < -limit ? -limit : limit < u[i] ? limit : u[i]; /* std::clamp */
        const float glu = x / (1.0f + expf(alpha * (-x)));
        out[i] = glu * (y + 1.0f);
    }
}

/* ---- running a batch's experts ------------------------------------------------- */

/* Scratch of the MoE step, sized for the largest block of the graph and a
 * full batch (forward_moe_alloc). Rows of the routed experts are kept
 * "grouped": expert e's rows are off[e] .. off[e] + cnt[e], tokens in
 * order, so that each expert's matmul is one call over its rows. */
struct fwd_moe_scratch {
    int64_t max_rows;  /* n_batch * n_used */
    int32_t *ids;      /* [token * n_used + k]: the expert */
    float *w;          /* [token * n_used + k]: its weight */
    int32_t *pos;      /* [token * n_used + k]: its grouped row */
    int32_t *row_slot; /* [grouped row]: token * n_used + k */
    int64_t *cnt, *off; /* [n_expert] */
    uint8_t *act[2];    /* grouped input rows, in the gate's and the up's dot type */
    uint8_t *act_dn;    /* grouped activation rows, in the down's dot type */
    float *hid;         /* grouped gate|up rows (2 n_ff) */
    float *out;         /* grouped down rows (n_embd) */
    struct moe_seg *seg;
    int max_seg;
};

/* One expert matmul of a job: rows of expert e of w against its grouped rows. */
struct moe_seg {
    const gguf_tensor *w;
    int32_t e;
    int64_t rows;
    const uint8_t *act;
    size_t act_stride;
    int n_tok;
    float *out;
    int64_t out_stride;
    const uint8_t *packed; /* w's forward_packed.h copy (all experts), or NULL */
};

static size_t dot_stride(enum tensor_type dot, int64_t n)
{
    return dot == TENSOR_TYPE_F32 || dot == TENSOR_TYPE_F16 ? (size_t)n * sizeof(float) : tensor_row_size(dot, n);
}

/* x in the weight's dot type, as forward_matmul prepares it: F32 as is, F16
 * as F16-rounded floats (the float kernels convert only the weights),
 * the others quantized. */
static void to_dot(enum tensor_type dot, const float *x, uint8_t *a, int64_t n)
{
    if (dot == TENSOR_TYPE_F32) {
        memcpy(a, x, (size_t)n * sizeof(float));
    } else if (dot == TENSOR_TYPE_F16) {
        float *y = (float *)(void *)a;
        for (int64_t i = 0; i < n; i++)
            y[i] = h2f(f2h(x[i]));
    } else {
        tensor_quantize_row(dot, x, a, n);
    }
}

/* rem (< 4) tokens through tensor_matmul's 4-token tiles: false when out
 * of memory (nothing done). */
static bool expert_tile_rest(enum tensor_type type, int64_t n, const uint8_t *w0, int64_t rows, const uint8_t *act,
                             int rem, size_t stride, float *out, int64_t out_stride)
{
    uint8_t *a = malloc(4 * stride);
    float *o = malloc((size_t)(4 * rows) * sizeof *o);
    if (!a || !o) {
        free(a);
        free(o);
        return false;
    }
    for (int k = 0; k < 4; k++)
        memcpy(a + (size_t)k * stride, act + (size_t)(k < rem ? k : rem - 1) * stride, stride);
    tensor_matmul(type, n, w0, rows, a, 4, stride, o, rows);
    for (int k = 0; k < rem; k++)
        memcpy(out + (int64_t)k * out_stride, o + (int64_t)k * rows, (size_t)rows * sizeof *o);
    free(a);
    free(o);
    return true;
}

/* From this many tokens on packing an expert's Q8_0 rows for its tokens
 * pays (bench_gemm_kq q8_0_pack 704 2816, one thread: 8 tokens about even
 * with the vec_dot tiles, 10 tokens 5.5-6.4 vs 7.6 ns, 16 4.1 vs 7.1, 32
 * 3.0 vs 7.4). Without VNNI (the sign trick's tiles, packed_q8_0.c) later:
 * 16 tokens 7.5-7.7 vs 7.6-7.9, 24 7.4-7.8 vs 8.2-8.3, 32 6.6-6.7 vs 7.6-7.9. */
#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VNNI__)
#define MOE_Q8_0_PACK_MIN 10
#else
#define MOE_Q8_0_PACK_MIN 24
#endif

void moe_expert_matmul(const gguf_tensor *w, int32_t e, int64_t lo, int64_t hi, const uint8_t *act, size_t stride,
                          int n_tok, float *out, int64_t out_stride)
{
    /* expert e's matrix, as a 2-D weight the dense kernels know */
    const gguf_tensor v = gguf_tensor_matrix(w, e);
    const int64_t n = w->ne[0];
    /* A type the reference repacks on its AVX-512 machine (ggml-cpu/repack.cpp:
     * Q4_0, MXFP4, Q4_K, Q2_K, IQ4_NL here) takes these first branches with
     * its gemv kernel's bits: mul_mat_id never uses the repacked gemm. */
    if (quant_iq4_nl_batch_applies(&v, 1)) { /* IQ4_NL repacked 8x8: its gemv order, a token at a time */
        for (int t = 0; t < n_tok; t++)
            quant_iq4_nl_batch_matmul(&v, n, lo, hi, act + (size_t)t * stride, stride, 1,
                                      out + (int64_t)t * out_stride, out_stride);
        return;
    }
    if (repack_applies(&v)) {
        /* Q4_0 and MXFP4: gemv and gemm end in the same per-output chain
         * (forward_repack.h), so all the expert's tokens go at once through
         * the tiles that decode each weight block once for several tokens */
        repack_matmul(&v, n, lo, hi, act, stride, n_tok, out, out_stride);
        return;
    }
    if (refk_applies(&v)) {
        /* Q4_K, Q2_K: the repacked mul_mat_id runs gemv a token at a time,
         * never the gemm's order; a batch of Q4_K tokens runs the integer
         * GEMM that keeps that order per output, the rest refk_matmul_gemv
         * (Q4_K tokens in fours sharing the weight decoding) */
        if (gemm_kq4v_applies(&v, n_tok) &&
            gemm_kq4v_rows(n, v.data, tensor_row_size((enum tensor_type)v.type, n), lo, hi, act, stride, n_tok,
                           out, out_stride))
            return;
        refk_matmul_gemv(&v, n, lo, hi, act, stride, n_tok, out, out_stride);
        return;
    }
    if (reffloat_applies(&v)) {
        /* the plain mul_mat_id runs vec_dot a token at a time: never the
         * batch kernels' order */
        for (int t = 0; t < n_tok; t++)
            reffloat_matmul(&v, n, lo, hi, act + (size_t)t * stride, stride, 1, out + (int64_t)t * out_stride,
                            out_stride);
        return;
    }
    /* vec_dot order from here on. An expert with a batch of tokens (a
     * prompt's experts get n_tok * n_used / n_expert rows on average) runs
     * the integer GEMMs that give every output vec_dot's bits, as the dense
     * matmuls do: Q6_K and Q5_K down projections of the Q4_K_M mixes, the
     * IQ types */
    if (fwd_gemm_vec_dot(&v, n, lo, hi, act, stride, NULL, n_tok, out, out_stride))
        return;
    const size_t rs = tensor_row_size((enum tensor_type)v.type, n);
    /* Q8_0 experts the load did not pack (rows that do not fill whole
     * 16-row groups; Gemma 4's down experts are packed at load): the dense
     * kernel of the weights packed at load, on rows packed here 16 at a time */
    if (v.type == TENSOR_TYPE_Q8_0 && n_tok >= MOE_Q8_0_PACK_MIN &&
        packed_q8_0_rows(v.data, rs, n / QK8_0, lo, hi, act, stride, n_tok, out, out_stride))
        return;
    /* vec_dot order (both kernels give its bits): tokens in fours through
     * the tiles that decode each weight row once for four of them, the rest
     * (one token's decoding, always) through the matvec kernel, which
     * outruns the tiles' one-token remainder path */
    const enum tensor_type type = (enum tensor_type)v.type;
    const uint8_t *w0 = (const uint8_t *)v.data + (size_t)lo * tensor_row_size(type, n);
    const int n4 = n_tok & ~3, rem = n_tok - n4;
    if (n4 > 0)
        tensor_matmul(type, n, w0, hi - lo, act, n4, stride, out + lo, out_stride);
    /* 2 or 3 tokens left: one more tile over a copy of them, the last one
     * repeated (the extra outputs dropped), instead of one more pass over
     * the weights per token; every output keeps its bits */
    if (rem >= 2 && expert_tile_rest(type, n, w0, hi - lo, act + (size_t)n4 * stride, rem, stride,
                                     out + (int64_t)n4 * out_stride + lo, out_stride))
        return;
    for (int t = n4; t < n_tok; t++)
        tensor_matvec(type, n, w0, hi - lo, act + (size_t)t * stride, out + (int64_t)t * out_stride + lo);
}

struct seg_job {
    const struct moe_seg *seg;
    int n_seg;
    int64_t total_rows;
};

static int64_t seg_row(const struct seg_job *j, int64_t chunk, int64_t n_chunks)
{
    const int64_t r = forward_chunk_start(j->total_rows, chunk, n_chunks);
    /* whole 16-row groups (packed weights; repacked ones take groups of 8) */
    return chunk >= n_chunks ? j->total_rows : r - r % 16;
}

static void seg_worker(void *arg, int ith, int64_t chunk, int64_t n_chunks)
{
    (void)ith;
    const struct seg_job *j = arg;
    const int64_t r0 = seg_row(j, chunk, n_chunks), r1 = seg_row(j, chunk + 1, n_chunks);
    int64_t base = 0;
    for (int s = 0; s < j->n_seg && base < r1; s++) {
        const struct moe_seg *sg = &j->seg[s];
        const int64_t lo = r0 > base ? r0 - base : 0;
        const int64_t hi = r1 - base < sg->rows ? r1 - base : sg->rows;
        base += sg->rows;
        if (lo < hi && sg->packed) /* MXFP4 and Q8_0 experts packed at load */
            packed_expert_matmul(sg->w, sg->packed, sg->e, lo, hi, sg->act, sg->act_stride, sg->n_tok, sg->out,
                                 sg->out_stride);
        else if (lo < hi)
            moe_expert_matmul(sg->w, sg->e, lo, hi, sg->act, sg->act_stride, sg->n_tok, sg->out, sg->out_stride);
    }
}

static void run_segs(forward_ctx *f, const struct moe_seg *seg, int n_seg)
{
    struct seg_job j = {seg, n_seg, 0};
    int64_t work = 0;
    for (int s = 0; s < n_seg; s++) {
        j.total_rows += seg[s].rows;
        work += seg[s].rows * seg[s].w->ne[0] * seg[s].n_tok;
    }
    threadpool_run(f->tp, forward_n_chunks(f, j.total_rows, work), seg_worker, &j);
}

/* The per-token and per-row passes between the matmuls. */
struct moe_job {
    forward_ctx *f;
    const fwd_moe *m;
    int n;
    int64_t F, E;
    enum tensor_type dot_g, dot_u, dot_d;
};

static void route_worker(void *arg, int ith, int64_t chunk, int64_t n_chunks)
{
    (void)ith;
    const struct moe_job *j = arg;
    struct fwd_moe_scratch *s = j->f->moe;
    const int U = (int)j->m->n_used;
    const int64_t lw = j->f->graph.width[FWD_ROUTER];
    const int t1 = (int)forward_chunk_start(j->n, chunk + 1, n_chunks);
    for (int t = (int)forward_chunk_start(j->n, chunk, n_chunks); t < t1; t++)
        moe_route(j->f->buf[FWD_ROUTER] + (size_t)t * lw, (int)j->m->n_expert, U, j->m->gating, j->m->norm_w,
                  j->m->w_scale, s->ids + (size_t)t * U, s->w + (size_t)t * U);
}

/* Each token's input in the gate's (and up's) dot type, made once into
 * its first grouped row and copied to its other n_used (the same bytes:
 * quantizing a row again gives them again). */
static void gather_worker(void *arg, int ith, int64_t chunk, int64_t n_chunks)
{
    (void)ith;
    const struct moe_job *j = arg;
    struct fwd_moe_scratch *s = j->f->moe;
    const int U = (int)j->m->n_used;
    const int64_t E = j->E;
    const int64_t in_w = j->f->graph.width[j->m->in];
    const size_t sg = dot_stride(j->dot_g, E), su = dot_stride(j->dot_u, E);
    const int t1 = (int)forward_chunk_start(j->n, chunk + 1, n_chunks);
    for (int t = (int)forward_chunk_start(j->n, chunk, n_chunks); t < t1; t++) {
        const float *x = j->f->buf[j->m->in] + (size_t)t * in_w;
        const int32_t *pos = s->pos + (size_t)t * U;
        uint8_t *g0 = s->act[0] + (size_t)pos[0] * sg;
        to_dot(j->dot_g, x, g0, E);
        for (int k = 1; k < U; k++)
            memcpy(s->act[0] + (size_t)pos[k] * sg, g0, sg);
        if (j->dot_u != j->dot_g) {
            uint8_t *u0 = s->act[1] + (size_t)pos[0] * su;
            to_dot(j->dot_u, x, u0, E);
            for (int k = 1; k < U; k++)
                memcpy(s->act[1] + (size_t)pos[k] * su, u0, su);
        }
    }
}

/* Each grouped row after gate and up: scales, biases, the activation, then
 * the result in the down's dot type. */
static void act_worker(void *arg, int ith, int64_t chunk, int64_t n_chunks)
{
    (void)ith;
    const struct moe_job *j = arg;
    const fwd_moe *m = j->m;
    struct fwd_moe_scratch *s = j->f->moe;
    const int64_t R = (int64_t)j->n * m->n_used, F = j->F;
    const size_t sd = dot_stride(j->dot_d, F);
    const int64_t r1 = forward_chunk_start(R, chunk + 1, n_chunks);
    for (int64_t r = forward_chunk_start(R, chunk, n_chunks); r < r1; r++) {
        const int32_t e = s->ids[s->row_slot[r]];
        float *g = s->hid + (size_t)r * 2 * F, *u = g + F;
        /* one pass per ggml op: a scale then a bias must not become an FMA */
        if (m->gate_up) {
            if (m->up_s) { /* build_lora_mm_id scales the fused rows by up_exps_s */
                const float sc = ((const float *)m->up_s->data)[e];
                for (int64_t i = 0; i < 2 * F; i++)
                    g[i] *= sc;
            }
            if (m->gate_up_b) {
                const float *b = (const float *)m->gate_up_b->data + (size_t)e * 2 * F;
                for (int64_t i = 0; i < 2 * F; i++)
                    g[i] += b[i];
            }
        } else {
            if (m->up_s) {
                const float sc = ((const float *)m->up_s->data)[e];
                for (int64_t i = 0; i < F; i++)
                    u[i] *= sc;
            }
            if (m->up_b) {
                const float *b = (const float *)m->up_b->data + (size_t)e * F;
                for (int64_t i = 0; i < F; i++)
                    u[i] += b[i];
            }
            if (m->gate_s) {
                const float sc = ((const float *)m->gate_s->data)[e];
                for (int64_t i = 0; i < F; i++)
                    g[i] *= sc;
            }
            if (m->gate_b) {
                const float *b = (const float *)m->gate_b->data + (size_t)e * F;
                for (int64_t i = 0; i < F; i++)
                    g[i] += b[i];
            }
        }
        switch (m->act) {
        case FWD_MOE_SILU: forward_swiglu_row(g, g, u, F); break;
        case FWD_MOE_GELU: forward_geglu_row(g, g, u, F); break;
        case FWD_MOE_SWIGLU_OAI: moe_swiglu_oai(g, g, u, F, m->oai_alpha, m->oai_limit); break;
        }
        to_dot(j->dot_d, g, s->act_dn + (size_t)r * sd, F);
    }
}

/* One slot's down value of a token: scaled, biased and weighted, each its
 * own rounding (the reference's ggml_mul, ggml_add_id, ggml_mul). The
 * products pass through an empty asm so that GCC cannot contract them
 * with the add that follows into an FMA the reference does not do. */
static inline float slot_value(float y, float sc, const float *b, float wk)
{
    if (sc != 1.0f) {
        y *= sc;
        __asm__("" : "+x"(y));
    }
    if (b)
        y += *b;
    y *= wk;
    __asm__("" : "+x"(y));
    return y;
}

#ifdef FWD_F16C
static inline __m256 slot_value8(__m256 y, float sc, const float *b, float wk)
{
    if (sc != 1.0f) {
        y = _mm256_mul_ps(y, _mm256_set1_ps(sc));
        __asm__("" : "+x"(y));
    }
    if (b)
        y = _mm256_add_ps(y, _mm256_loadu_ps(b));
    y = _mm256_mul_ps(y, _mm256_set1_ps(wk));
    __asm__("" : "+x"(y));
    return y;
}
#endif

void moe_combine_row(float *d, const float *const *y, const float *sc, const float *const *b, const float *wk, int u,
                     int64_t n)
{
    int64_t i = 0;
#ifdef FWD_F16C
    for (; i + 8 <= n; i += 8) {
        __m256 acc = slot_value8(_mm256_loadu_ps(y[0] + i), sc[0], b[0] ? b[0] + i : NULL, wk[0]);
        for (int k = 1; k < u; k++)
            acc = _mm256_add_ps(acc, slot_value8(_mm256_loadu_ps(y[k] + i), sc[k], b[k] ? b[k] + i : NULL, wk[k]));
        _mm256_storeu_ps(d + i, acc);
    }
#endif
    for (; i < n; i++) {
        float acc = slot_value(y[0][i], sc[0], b[0] ? b[0] + i : NULL, wk[0]);
        for (int k = 1; k < u; k++)
            acc += slot_value(y[k][i], sc[k], b[k] ? b[k] + i : NULL, wk[k]);
        d[i] = acc;
    }
}

/* Each token: moe_combine_row of its slots, in one pass over the elements
 * (the reference's ops one pass after the other give the same roundings
 * but wrote every slot's row back and read it again: 3 % of a MoE prompt's
 * samples). */
static void combine_worker(void *arg, int ith, int64_t chunk, int64_t n_chunks)
{
    (void)ith;
    const struct moe_job *j = arg;
    const fwd_moe *m = j->m;
    struct fwd_moe_scratch *s = j->f->moe;
    const int U = (int)m->n_used;
    const int64_t E = j->E, dw = j->f->graph.width[m->dst];
    const int t1 = (int)forward_chunk_start(j->n, chunk + 1, n_chunks);
    for (int t = (int)forward_chunk_start(j->n, chunk, n_chunks); t < t1; t++) {
        const float *y[MODEL_MAX_EXPERTS], *b[MODEL_MAX_EXPERTS];
        float sc[MODEL_MAX_EXPERTS], wk[MODEL_MAX_EXPERTS];
        for (int k = 0; k < U; k++) {
            const int32_t slot = t * U + k, e = s->ids[slot];
            y[k] = s->out + (size_t)s->pos[slot] * E;
            /* ggml_mul by a scale of exactly 1 changes no value */
            sc[k] = m->down_s ? ((const float *)m->down_s->data)[e] : 1.0f;
            b[k] = m->down_b ? (const float *)m->down_b->data + (size_t)e * E : NULL;
            wk[k] = s->w[slot];
        }
        moe_combine_row(j->f->buf[m->dst] + (size_t)t * dw, y, sc, b, wk, U, E);
    }
}

/* w's packed copy (forward.c's build_packed), or NULL */
static const uint8_t *moe_packed(const forward_ctx *f, const gguf_tensor *w)
{
    return w && f->packed_of ? f->packed_of[w - gguf_tensor_at(model_get_gguf(f->m), 0)] : NULL;
}

void forward_run_moe(forward_ctx *f, const fwd_graph *g, const struct fwd_step *st, int n)
{
    const fwd_moe *m = &g->moe[st->moe];
    struct fwd_moe_scratch *s = f->moe;
    const int U = (int)m->n_used;
    const int64_t X = m->n_expert, R = (int64_t)n * U;
    const gguf_tensor *down = m->down;
    struct moe_job j = {f, m, n, down->ne[0], down->ne[1], TENSOR_TYPE_F32, TENSOR_TYPE_F32, TENSOR_TYPE_F32};
    const int64_t F = j.F, E = j.E;
    j.dot_g = tensor_dot_type((enum tensor_type)(m->gate_up ? m->gate_up : m->gate)->type);
    j.dot_u = m->gate_up ? j.dot_g : tensor_dot_type((enum tensor_type)m->up->type);
    j.dot_d = tensor_dot_type((enum tensor_type)down->type);

    /* 1. the router's choice and weights, per token */
    threadpool_run(f->tp, forward_n_chunks(f, n, (int64_t)n * X * 8), route_worker, &j);

    /* 2. rows grouped by expert, tokens in order (mul_mat_id's matrix_rows) */
    memset(s->cnt, 0, (size_t)X * sizeof *s->cnt);
    for (int64_t i = 0; i < R; i++)
        s->cnt[s->ids[i]]++;
    int64_t acc = 0;
    for (int64_t e = 0; e < X; e++) {
        s->off[e] = acc;
        acc += s->cnt[e];
        s->cnt[e] = 0;
    }
    for (int64_t i = 0; i < R; i++) {
        const int32_t e = s->ids[i];
        const int64_t r = s->off[e] + s->cnt[e]++;
        s->pos[i] = (int32_t)r;
        s->row_slot[r] = (int32_t)i;
    }

    /* 3. inputs in the experts' dot types */
    threadpool_run(f->tp, forward_n_chunks(f, n, (int64_t)n * E * PREP_COST), gather_worker, &j);

    /* 4. gate and up of every chosen expert over its rows */
    const size_t sg = dot_stride(j.dot_g, E), su = dot_stride(j.dot_u, E), sd = dot_stride(j.dot_d, F);
    const uint8_t *act_u = j.dot_u != j.dot_g ? s->act[1] : s->act[0];
    const uint8_t *pk_gu = moe_packed(f, m->gate_up), *pk_g = moe_packed(f, m->gate), *pk_u = moe_packed(f, m->up);
    int ns = 0;
    for (int64_t e = 0; e < X; e++) {
        const int64_t c = s->cnt[e], o = s->off[e];
        if (c == 0)
            continue;
        float *h = s->hid + (size_t)o * 2 * F;
        if (m->gate_up) {
            s->seg[ns++] = (struct moe_seg){m->gate_up, (int32_t)e, 2 * F, s->act[0] + (size_t)o * sg, sg, (int)c, h, 2 * F,
                                            pk_gu};
        } else {
            s->seg[ns++] = (struct moe_seg){m->gate, (int32_t)e, F, s->act[0] + (size_t)o * sg, sg, (int)c, h, 2 * F,
                                            pk_g};
            s->seg[ns++] = (struct moe_seg){m->up, (int32_t)e, F, act_u + (size_t)o * su, su, (int)c, h + F, 2 * F,
                                            pk_u};
        }
    }
    run_segs(f, s->seg, ns);

    /* 5. the activation, in the down's dot type */
    threadpool_run(f->tp, forward_n_chunks(f, R, R * F * 8), act_worker, &j);

    /* 6. down */
    const uint8_t *pk_d = moe_packed(f, down);
    ns = 0;
    for (int64_t e = 0; e < X; e++) {
        const int64_t c = s->cnt[e], o = s->off[e];
        if (c > 0)
            s->seg[ns++] = (struct moe_seg){down, (int32_t)e, E, s->act_dn + (size_t)o * sd, sd, (int)c,
                                            s->out + (size_t)o * E, E, pk_d};
    }
    run_segs(f, s->seg, ns);

    /* 7. weighted, summed */
    threadpool_run(f->tp, forward_n_chunks(f, n, R * E * 4), combine_worker, &j);
}

/* ---- scratch ------------------------------------------------------------------- */

bool forward_moe_alloc(forward_ctx *f)
{
    const fwd_graph *g = &f->graph;
    if (g->n_moe == 0)
        return true;
    int64_t U = 0, X = 0, F = 0, E = 0;
    for (int i = 0; i < g->n_moe; i++) {
        const fwd_moe *m = &g->moe[i];
        U = (int64_t)m->n_used > U ? (int64_t)m->n_used : U;
        X = (int64_t)m->n_expert > X ? (int64_t)m->n_expert : X;
        F = m->down->ne[0] > F ? m->down->ne[0] : F;
        E = m->down->ne[1] > E ? m->down->ne[1] : E;
    }
    const int64_t R = (int64_t)f->p.n_batch * U;
    if (R <= 0 || X <= 0 || F <= 0 || E <= 0)
        return false;
    struct fwd_moe_scratch *s = calloc(1, sizeof *s);
    if (!s)
        return false;
    f->moe = s;
    s->max_rows = R;
    s->ids = malloc((size_t)R * sizeof *s->ids);
    s->w = malloc((size_t)R * sizeof *s->w);
    s->pos = malloc((size_t)R * sizeof *s->pos);
    s->row_slot = malloc((size_t)R * sizeof *s->row_slot);
    s->cnt = malloc((size_t)X * sizeof *s->cnt);
    s->off = malloc((size_t)X * sizeof *s->off);
    const size_t in_row = (size_t)(E > F ? E : F) * sizeof(float) + 64; /* F32, the widest dot type */
    for (int i = 0; i < 2; i++)
        s->act[i] = aligned_alloc(64, ((size_t)R * in_row + 63) & ~(size_t)63);
    s->act_dn = aligned_alloc(64, ((size_t)R * in_row + 63) & ~(size_t)63);
    s->hid = malloc((size_t)R * 2 * F * sizeof(float));
    s->out = malloc((size_t)R * E * sizeof(float));
    s->max_seg = (int)(2 * X);
    s->seg = malloc((size_t)s->max_seg * sizeof *s->seg);
    return s->ids && s->w && s->pos && s->row_slot && s->cnt && s->off && s->act[0] && s->act[1] &&
           s->act_dn && s->hid && s->out && s->seg;
}

void forward_moe_free(forward_ctx *f)
{
    struct fwd_moe_scratch *s = f->moe;
    if (!s)
        return;
    free(s->ids);
    free(s->w);
    free(s->pos);
    free(s->row_slot);
    free(s->cnt);
    free(s->off);
    free(s->act[0]);
    free(s->act[1]);
    free(s->act_dn);
    free(s->hid);
    free(s->out);
    free(s->seg);
    free(s);
    f->moe = NULL;
}
