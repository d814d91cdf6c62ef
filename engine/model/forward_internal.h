/* What the parts of the forward pass share: the context (buffers, KV
 * cache, thread pool) and how work is cut into chunks for the pool.
 * Internal to forward*.c. */
#ifndef TOKSCOPE_FORWARD_INTERNAL_H
#define TOKSCOPE_FORWARD_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "model/forward.h"
#include "model/forward_graph.h"
#include "gguf/gguf.h"
#include "model/model.h"
#include "kernels/blas.h"
#include "kernels/threadpool.h"

/* Below this many multiply-adds a job runs on the calling thread: waking the
 * pool would cost more than the work. */
#define MT_MIN_WORK (1 << 15)
/* Work units (multiply-add equivalents) of one element of the per-token
 * steps: quantizing, norms, RoPE. A guess at their cost relative to a
 * SIMD multiply-add, so that n_chunks splits them only when worth it. */
#define PREP_COST 2

/* ---- the graph a recipe builds (forward_graph.c) ---- */
enum fwd_op_kind {
    OP_EMBED,        /* X = embedding row * embd_scale; the token's RoPE tables */
    OP_NORM,         /* dst = rmsnorm(src) * w (w NULL: no weight) */
    OP_HEAD_NORM,    /* each head of dst (layer il's head size) = rmsnorm(head) * w (w NULL: no weight) */
    OP_ADD,          /* dst += src */
    OP_BIAS,         /* dst += w */
    OP_SCALE,        /* dst *= s */
    OP_ROPE,         /* RoPE of each head of dst with layer il's table */
    OP_KV_STORE,     /* K, V rows into layer il's cache */
    OP_SPLIT_QKV,    /* QKV row -> Q, K, V rows */
    OP_SWIGLU,       /* dst = silu(src) * src2 */
    OP_SWIGLU_FUSED, /* dst = silu(src[0, n)) * src[n, 2n) */
    OP_GEGLU,        /* dst = gelu(src) * src2 */
    OP_SOFTCAP,      /* dst = s * tanh(dst / s) */
    OP_HADAMARD,     /* layer il's heads in dst, each n-element piece times the n x n Walsh-Hadamard
                      * matrix (n: fwd_rot_size of that layer and buffer) */
    OP_COPY,         /* dst = src */
    OP_MUL,          /* dst *= w, element by element (w->ne[0] of them) */
    OP_PLE_INPUT,    /* PLE = (rmsnorm of each layer's piece of PLE / sqrt(n_embd) * w + token rows) / sqrt(2) */
    OP_PLE_GATE,     /* dst = gelu(dst) * layer il's piece of PLE */
    OP_SHEXP_MIX,    /* dst = src + dst * sigmoid(src2[0]) (a shared expert into the routed experts' sum) */
    OP_SPLIT_QGATE,  /* src (per head: query, gate) -> dst (queries), src2 (gates) */
    OP_SIGMOID_MUL,  /* dst *= sigmoid(src) */
    OP_H_INPUT,      /* dst = the caller's hidden-state row (forward_eval_h's h_in) */
    OP_CAT,          /* dst = src | src2 (an MTP block's input, before eh_proj) */
    OP_G4A_INPUT,    /* dst = the target's embedding * embd_scale | the caller's h_in row (gemma4-assistant;
                      * n_embd_out each); the token's RoPE tables */
    OP_H_OUTPUT,     /* the caller's h_out row = src (n_embd_out floats: gemma4-assistant's next hidden state) */
};

struct fwd_op {
    enum fwd_op_kind kind;
    enum fwd_buf dst, src, src2;
    uint32_t il;
    const gguf_tensor *w;
    float s;
};

/* STEP_LENS (logit lens graphs only): LOGITS holds the head's output on
 * the residual after block il + 1; forward_run hands it to the lens callback */
/* STEP_MOE: the routed experts of graph->moe[moe] (forward_moe.c) */
enum fwd_step_kind { STEP_ROWS, STEP_MATMUL, STEP_ATTN, STEP_KEEP_OUT, STEP_LENS, STEP_MOE, STEP_DELTANET };

#define FWD_MAX_OPS 12

struct fwd_step {
    enum fwd_step_kind kind;
    int n_ops; /* STEP_ROWS: ops run in order on each row */
    struct fwd_op ops[FWD_MAX_OPS];
    int n_seg; /* STEP_MATMUL: up to 3 weights sharing the input */
    enum fwd_buf in;
    const gguf_tensor *w[3];
    enum fwd_buf out[3];
    bool no_blas; /* STEP_MATMUL: never OpenBLAS (a router: another bit may pick another expert) */
    uint32_t il;  /* STEP_ATTN, STEP_DELTANET */
    int moe;     /* STEP_MOE */
};

struct fwd_graph {
    const model_hparams *hp;
    uint32_t n_layer; /* blocks in this graph: hp->n_layer, or fewer for a cut one */
    uint32_t il;      /* the layer whose recipe is being appended (ops that need its head size) */
    bool kept_out;    /* a STEP_KEEP_OUT was appended */
    struct fwd_step *steps;
    int n_steps, cap;
    int64_t width[FWD_N_BUF]; /* floats per row of each buffer */
    int64_t max_in;           /* widest matmul input */
    /* llama.cpp rotates what a quantized cache holds by a Walsh-Hadamard
     * matrix (0: not; the size is per layer, fwd_rot_size): Q and K for a
     * quantized K cache, V and the attention output for a quantized V cache */
    int rot_k, rot_v;
    fwd_moe *moe; /* the MoE blocks' options, by STEP_MOE's index */
    int n_moe, cap_moe;
    bool oom;
};

/* Appends a step (NULL when out of memory), or a row op to the last row
 * step (forward_graph.c). */
struct fwd_step *fwd_graph_push(fwd_graph *g, enum fwd_step_kind kind);
void fwd_graph_row_op(fwd_graph *g, struct fwd_op op);

/* Builds the whole model's graph: embeddings, every layer's recipe, the
 * output norm and head. false when out of memory. */
bool fwd_graph_build(fwd_graph *g, const model *m, int rot_k, int rot_v);
/* The Walsh-Hadamard size for buffer b (Q/K: the K rotation, V/ATT: the V
 * rotation) of a layer with heads of hd: llama.cpp sizes the K rotation by
 * its cache's head size (the largest power of two from 64 dividing it; each
 * kind of a sliding-window model has its own cache), the V rotation 64. */
static inline int64_t fwd_rot_size(int b_is_k, int64_t hd)
{
    if (!b_is_k)
        return 64;
    int64_t n = 64;
    while (hd % (2 * n) == 0)
        n *= 2;
    return n;
}
/* The same with only the first n_layer blocks (the output norm and head then
 * read the residual after block n_layer, as in a file cut to n_layer
 * blocks), and with lens: the head after every block too, each followed by
 * a STEP_LENS. */
bool fwd_graph_build_ex(fwd_graph *g, const model *m, int rot_k, int rot_v, uint32_t n_layer, bool lens);
void fwd_graph_free(fwd_graph *g);
/* Appends a row op (joining the previous row step), for graph words
 * outside forward_graph.c. */
void fwd_graph_row_op(fwd_graph *g, struct fwd_op op);

/* One internal batch of forward_decode (forward_seq.c): row t's position
 * and sequence (its cache stream); the rows come stream by stream, n_stream
 * streams of the same number of rows; out_rows: the n_out rows with logits,
 * ascending (the rows past the last attention keeps, as llama.cpp's
 * inp_out_ids does). */
struct fwd_ubatch {
    const int32_t *pos, *seq;
    int n_stream;
    const int32_t *out_rows;
    int n_out;
};

struct forward_ctx {
    const model *m;
    model_hparams hp;
    const model_weights *w;
    forward_params p;
    fwd_graph graph;
    int64_t kv_dim;
    int n_group;       /* the most query heads per KV head of any layer (forward_group: layer l's) */
    size_t k_row, v_row;   /* bytes per cache row (all KV heads of a position) */
    size_t k_head, v_head; /* bytes of one head within a row */
    bool kv_generic;       /* not one F16/F32 type: ggml's one-chunk kernel only (attn_kv.generic) */
    /* [0]: layers of head_dim, [1]: of head_dim_swa (Gemma 4's 512 and 256:
     * the kernels take some sizes only, so a model may use them on one kind) */
    bool attn_group[2]; /* single queries run per KV head (attn_group_*) */
    bool attn_quant[2]; /* a quantized cache's queries run 16 at a time (attn_quant_*) */
    /* [n_layer] -> head-major: KV head h's row at position p is at
     * (h * n_ctx + p) * k_head bytes (so attention reads each head's keys
     * as one stream) */
    void **k_cache;
    void **v_cache;
    /* row buffers, n_batch rows of graph.width[b] floats each (LOGITS is the caller's) */
    float *buf[FWD_N_BUF];
    size_t buf_len[FWD_N_BUF]; /* each one's mapping (huge_alloc) */
    uint8_t *act[3];     /* quantized activation rows, one buffer per distinct dot type in a job */
    size_t act_cap;      /* bytes per act buffer */
    uint8_t *act_sum[3]; /* side data for packed weights (packed_act_prepare), when they want it, or the
                            IQ GEMM's prepared tokens (gemm_iq_prep_tokens) */
    /* per token of the batch, n_rope_tables tables of rope_stride floats:
     * n_rot cos, sin pairs; table 1 is the sliding-window layers' */
    float *rope;
    size_t rope_stride;
    int n_rope_tables;
    const float *rope_factors; /* per rotated pair, or NULL */
    /* the current batch, for the row steps */
    const int32_t *tokens;
    int32_t start_pos;
    const struct fwd_ubatch *ub; /* forward_decode's batch; NULL: rows at start_pos.., stream 0 */
    /* per-thread attention scratch, attn_scratch_floats each */
    float *attn_buf;
    size_t attn_floats;  /* per thread, a multiple of a cache line */
    uint16_t *attn_half; /* n_threads * attn_halfs */
    /* the split one-token attention's chunk results (attn_group_part), every
     * query head times n_threads chunks; NULL without the group kernel */
    float *attn_parts;
    size_t attn_halfs;   /* 2 * head_dim, rounded up to a cache line */
    /* packed weight copies (forward_packed.h), by tensor index; NULL where a weight has none */
    const uint8_t **packed_of;
    uint8_t *packed_buf;
    size_t packed_len; /* bytes mapped at packed_buf (for munmap) */
    threadpool *tp;
    int n_threads;
    blas_ctx *blas; /* OpenBLAS buffers (kernels/blas.h); NULL when it is off or has nothing to do */
    forward_progress_fn progress;
    void *progress_user;
    /* graphs of the lens and cut evaluations (forward_lens.c), built on first use */
    int rot_k, rot_v;
    fwd_graph *cut; /* the model cut to cut->n_layer blocks */
    fwd_graph *lens;
    forward_lens_fn lens_fn;
    void *lens_user;
    int32_t row0; /* first row of the running batch within the evaluation */
    struct fwd_moe_scratch *moe; /* the MoE step's buffers (forward_moe.c), NULL without one */
    /* recurrent state (forward_rs.c): the recurrent layers' states, one
     * block of rs_bytes; rs_pos positions consumed. NULL / 0 without them */
    uint8_t *rs;
    size_t rs_bytes;
    int32_t rs_pos;
    uint32_t rs_nl; /* blocks of the graph that advanced it (a cut graph leaves the later ones behind) */
    /* forward_rs_keep: room for rs_keep states (rs_bytes each) after each
     * token of an evaluation of at most rs_keep tokens; rs_snap_on while
     * one runs, rs_snap_n / rs_snap_pos what the last one left */
    uint8_t *rs_snaps;
    int32_t rs_keep, rs_snap_cap, rs_snap_n, rs_snap_pos;
    bool rs_snap_on;
    /* forward_eval_h: the MTP input rows (n_embd each, by token of the
     * evaluation) and where the output norm of every row's last hidden
     * state goes (llama.cpp's h_nextn), NULL when not asked */
    const float *h_in;
    float *h_out;
    /* forward_share_kv: the layers read another context's cache (never
     * freed here), and a query at pos sees its keys before pos only */
    bool kv_shared;
    float *dn_lanes; /* per thread, 64 * ssm_d_state floats: the DeltaNet dots' 64 lanes (forward_deltanet.c) */
};

/* Evaluates one internal batch of n rows at start_pos (or as f->ub says):
 * the graph's steps in order; logits for rows [out_first, n) (f->ub: its
 * out_rows) into out, n_vocab floats each (forward.c). */
void forward_eval_batch(forward_ctx *f, const fwd_graph *gr, const int32_t *tokens, int n, int32_t start_pos,
                        float *out, int out_first);

/* Runs graph g over tokens like forward_eval (which is this with
 * f->graph): internal batches, progress, STEP_LENS calls to f->lens_fn. */
int forward_run(forward_ctx *f, const fwd_graph *g, const int32_t *tokens, int32_t n, int32_t start_pos,
                float *logits, bool all_logits, char *err, size_t errlen);
/* The recurrent state (forward_rs.c): allocated in forward_build (false
 * when out of memory), freed in forward_free; forward_rs_check refuses a
 * start_pos the state cannot continue from (0 resets it), or a graph of
 * another depth than the one that advanced it. */
bool forward_rs_alloc(forward_ctx *f);
void forward_rs_free(forward_ctx *f);
int forward_rs_check(forward_ctx *f, uint32_t n_layer, int32_t start_pos, char *err, size_t errlen);
/* Bytes of layer il's recurrent state (0: not a recurrent layer). */
size_t forward_rs_layer_bytes(const model_hparams *hp, uint32_t il);

/* Frees the lens and cut graphs (forward_lens.c). */
void forward_lens_free(forward_ctx *f);

/* Runs layer il's Gated DeltaNet on the batch's n rows (forward_deltanet.c). */
void forward_deltanet_run(forward_ctx *f, uint32_t il, int n);
/* forward_run's bracket of an evaluation for forward_rs_keep's states */
void forward_rs_snap_begin(forward_ctx *f, int32_t n, int32_t start_pos);
void forward_rs_snap_end(forward_ctx *f, int32_t n);
/* ggml_ssm_conv + ggml_silu of channels [c0, c1) (C in all, K taps) of n
 * rows x (W floats apart), from and back to state [C][K - 1] (for
 * forward_deltanet.c and tests). */
void forward_deltanet_conv(float *x, int64_t W, int n, const float *wconv, float *state, int64_t K, int64_t C,
                           int64_t c0, int64_t c1);
/* One token of ggml_gated_delta_net on one head's state s (S x S, key
 * index major): S *= eg, the delta rule with k, v, beta, out = S^T q *
 * scale, in the reference's float order (for tests). */
void forward_deltanet_step(float *s, int64_t S, const float *k, const float *q, const float *v, float beta, float eg,
                           float scale, float *out);
/* n tokens of it (q, k, v, out: n x S token after token; beta, eg: n),
 * the way a prompt's tokens run (for tests). */
void forward_deltanet_steps(float *s, int64_t S, int n, const float *q, const float *k, const float *v,
                            const float *beta, const float *eg, float scale, float *out);
/* Byte offset of layer il's state within the recurrent state block. */
size_t forward_rs_layer_offset(const model_hparams *hp, uint32_t il);

/* Runs a STEP_ROWS step on rows [0, n) on the pool (forward_rows.c). */
void forward_run_rows(forward_ctx *f, const struct fwd_step *st, int n);
/* ggml_rms_norm (then * w, when w) of one row, as OP_NORM computes it. */
void forward_rmsnorm_row(float *out, const float *x, const float *w, int64_t n, float eps);
/* ggml_vec_swiglu_f32 / ggml_vec_geglu_f32 on one row (out may be g). */
void forward_swiglu_row(float *out, const float *g, const float *up, int64_t n);
void forward_geglu_row(float *out, const float *g, const float *up, int64_t n);

/* ---- mixture of experts (forward_moe.c) ---- */
/* Runs step st (a STEP_MOE of graph g) on rows [0, n). */
void forward_run_moe(forward_ctx *f, const fwd_graph *g, const struct fwd_step *st, int n);
/* Its buffers, for a full batch of the graph's largest block; false when out of memory. */
bool forward_moe_alloc(forward_ctx *f);
void forward_moe_free(forward_ctx *f);
/* The reference's routing of one token (forward_moe_route.c; unit-tested): softmax / sigmoid /
 * softmax-weight gating of n_expert logits, the top n_used, normalised and
 * scaled weights. */
void moe_route(const float *logits, int n_expert, int n_used, enum model_moe_gating gating, bool norm_w,
               float w_scale, int32_t *ids, float *w);
/* ggml_soft_max of one row; y may be x. */
void moe_softmax(const float *x, float *y, int n);
/* ggml_argsort descending: idx = 0..n-1 ordered as libstdc++'s std::sort orders them. */
void moe_argsort_desc(const float *v, int32_t *idx, int n);
/* The first k of moe_argsort_desc's order into idx when they are sure
 * without a sort: no two of the k largest equal, none of them equal to a
 * value outside them, no NaN (then every sort by `>` puts them first in
 * this order and std::sort's ties cannot matter). False otherwise. */
bool moe_topk_distinct(const float *v, int n, int k, int32_t *idx);
/* One token's routed slots summed into d (n elements): slot k's down row
 * y[k] times sc[k], plus b[k] (none when NULL), times the router weight
 * wk[k], each a rounding of its own (the reference's ggml_mul, ggml_add_id,
 * ggml_mul), then slot 0 + slot 1, + slot 2, ... (its ggml_add of views). */
void moe_combine_row(float *d, const float *const *y, const float *sc, const float *const *b, const float *wk, int u,
                     int64_t n);
/* ggml_swiglu_oai of one row (out may be g). */
void moe_swiglu_oai(float *out, const float *g, const float *u, int64_t n, float alpha, float limit);
/* Rows [lo, hi) of expert e of the 3-D weight w against n_tok activation
 * rows in its dot type (row t at act + t * stride): out[t * out_stride + r].
 * Every output has the bits of the same token run alone (unit-tested). */
/* A batch of tokens against rows [lo, hi) of a plain 2-D weight through the
 * integer GEMM that gives every output tensor_vec_dot's bits (gemm_iq,
 * gemm_kq5, gemm_kq6): false, nothing written, where none applies to its
 * type and n_tok in this build. The dense matmuls and a MoE expert's
 * tokens share it. iq_tok: NULL, or the tokens gemm_iq_prep_tokens made
 * once for every thread of the matmul (the IQ GEMM prepares them itself
 * otherwise). */
bool fwd_gemm_vec_dot(const gguf_tensor *w, int64_t n, int64_t lo, int64_t hi, const uint8_t *act, size_t stride,
                      const uint8_t *iq_tok, int n_tok, float *out, int64_t out_stride);

void moe_expert_matmul(const gguf_tensor *w, int32_t e, int64_t lo, int64_t hi, const uint8_t *act, size_t stride,
                       int n_tok, float *out, int64_t out_stride);

/* How many chunks to cut `items` units of work into: one (inline) when the
 * job is too small to be worth waking the pool, else several per thread,
 * sized by forward_chunk_start, so a thread that starts late still finds work. */
static inline int64_t forward_n_chunks(const forward_ctx *f, int64_t items, int64_t work)
{
    if (f->n_threads <= 1 || work < MT_MIN_WORK || items <= 1)
        return 1;
    /* up to 8 per thread, none below 4 * MT_MIN_WORK: claiming a chunk
     * moves a cache line between cores */
    int64_t n = work / (4 * MT_MIN_WORK);
    if (n > (int64_t)f->n_threads * 8)
        n = (int64_t)f->n_threads * 8;
    if (n < f->n_threads)
        n = f->n_threads;
    return n < items ? n : items;
}

/* First item of chunk c of n over `total` items. Chunk sizes fall linearly
 * (the first takes about 2/n of the work, the last about 1/n^2), so the
 * threads run out of work nearly together instead of one waiting for the
 * other's last big chunk. */
static inline int64_t forward_chunk_start(int64_t total, int64_t c, int64_t n)
{
    return c >= n ? total : total * c * (2 * n - c) / (n * n);
}

/* Runs up to 3 matmuls sharing the input x (n_tok rows of n_in, x_stride
 * floats apart: a row buffer may be wider than one weight's rows): outs[s]
 * gets n_tok rows of ws[s]->ne[1] outputs, out_strides[s] floats apart.
 * packed[s]: forward_packed.h copy of ws[s], or NULL (forward_matmul.c). */
void forward_matmul(forward_ctx *f, const float *x, int64_t x_stride, int n_tok, int64_t n_in, int n_seg,
                    const gguf_tensor *const *ws, const uint8_t *const *packed, float *const *outs,
                    const int64_t *out_strides);

/* Layer l's head size (its kind's) and the bytes of one K / V head row
 * of one position in the cache it reads. */
static inline int64_t forward_hd(const forward_ctx *f, uint32_t l) { return model_head_dim(&f->hp, l); }
/* Layer l's KV heads and query heads per KV head. */
static inline int forward_n_kv(const forward_ctx *f, uint32_t l) { return (int)model_n_head_kv(&f->hp, l); }
static inline int forward_group(const forward_ctx *f, uint32_t l) { return (int)(f->hp.n_head / model_n_head_kv(&f->hp, l)); }
size_t forward_k_head(const forward_ctx *f, uint32_t l);
/* Index of KV head h's row 0 in layer l's cache of stream s (multiply by the
 * head's bytes): streams one after the other, each head-major. */
static inline size_t forward_kv_base(const forward_ctx *f, uint32_t l, int32_t s, int h)
{
    return ((size_t)s * (size_t)forward_n_kv(f, l) + (size_t)h) * f->p.n_ctx;
}
size_t forward_v_head(const forward_ctx *f, uint32_t l);

#endif
