/* The words an architecture's layer recipe is written in (arch_*.c).
 *
 * A recipe does not compute: when the forward context is built it appends
 * steps to a graph, top to bottom, and forward_eval then runs that graph
 * for each batch. Steps work on named row buffers, one row per token of
 * the batch. Consecutive row steps (norms, adds, RoPE, ...) run as one pass
 * over the tokens on the thread pool; matmuls with a shared input run as
 * one job. Each step does its arithmetic in the reference's float order,
 * so a recipe that lists the reference's operations in its order gives its
 * bits. */
#ifndef TOKSCOPE_FORWARD_GRAPH_H
#define TOKSCOPE_FORWARD_GRAPH_H

#include <stdint.h>

#include "gguf/gguf.h"
#include "model/model.h"

enum fwd_buf {
    FWD_X,      /* the residual stream (n_embd) */
    FWD_XB,     /* a norm's output, a block's output (n_embd) */
    FWD_ATT,    /* attention output, all query heads (n_head * head_dim) */
    FWD_Q,      /* queries (n_head * head_dim) */
    FWD_K,      /* keys of this batch (n_head_kv * head_dim) */
    FWD_V,      /* values of this batch */
    FWD_QKV,    /* a fused Q|K|V matmul's output */
    FWD_HB,     /* FFN hidden (n_ff) */
    FWD_HB2,    /* FFN hidden, second matmul output (n_ff, or 2 n_ff fused) */
    FWD_GATE,   /* gated attention's output gate (n_head * head_dim); DeltaNet's z */
    FWD_BETA,   /* DeltaNet: beta per value head, before its sigmoid */
    FWD_ALPHA,  /* DeltaNet: alpha per value head, before softplus */
    FWD_DN,     /* DeltaNet output (ssm.inner_size) */
    FWD_LOGITS, /* the caller's logits rows */
    FWD_XB2,    /* a second n_embd row: a mixture of experts' output, a router's own input */
    FWD_ROUTER, /* a router's logits (n_expert) */
    FWD_SHGATE, /* a shared expert's gate logit (1) */
    FWD_N_BUF,
};

typedef struct fwd_graph fwd_graph;

/* ---- row steps ---- */
void fwd_embed(fwd_graph *g); /* X = token embeddings (* embd_scale) */
void fwd_norm(fwd_graph *g, enum fwd_buf dst, enum fwd_buf src, const gguf_tensor *w); /* RMS norm * w */
void fwd_head_norm(fwd_graph *g, enum fwd_buf buf, const gguf_tensor *w); /* RMS norm * w of each head */
void fwd_add(fwd_graph *g, enum fwd_buf dst, enum fwd_buf src);           /* dst += src */
void fwd_bias(fwd_graph *g, enum fwd_buf buf, const gguf_tensor *b);      /* buf += b */
void fwd_scale(fwd_graph *g, enum fwd_buf buf, float s);                  /* buf *= s */
void fwd_rope(fwd_graph *g, enum fwd_buf buf, uint32_t il); /* RoPE of each head, layer il's rope */
void fwd_kv_store(fwd_graph *g, uint32_t il);               /* K, V rows into layer il's cache */
void fwd_split_qkv(fwd_graph *g);                           /* QKV -> Q, K, V */
void fwd_swiglu(fwd_graph *g, enum fwd_buf dst, enum fwd_buf gate, enum fwd_buf up); /* silu(gate) * up */
void fwd_swiglu_fused(fwd_graph *g, enum fwd_buf dst, enum fwd_buf gate_up); /* silu(1st half) * 2nd half */
void fwd_geglu(fwd_graph *g, enum fwd_buf dst, enum fwd_buf gate, enum fwd_buf up); /* gelu_tanh(gate) * up */
void fwd_softcap(fwd_graph *g, enum fwd_buf buf, float c);                          /* c * tanh(buf / c) */
/* QKV holds each head's query and then its gate (qwen35's attn_q): Q = the
 * queries, GATE = the gates */
void fwd_split_qgate(fwd_graph *g);
void fwd_sigmoid_mul(fwd_graph *g, enum fwd_buf dst, enum fwd_buf gate); /* dst *= sigmoid(gate) */

/* ---- matmuls: out[s] = in . ws[s] for up to 3 weights sharing the input ---- */
void fwd_matmul(fwd_graph *g, enum fwd_buf in, int n, const gguf_tensor *const *ws, const enum fwd_buf *outs);
void fwd_matmul1(fwd_graph *g, enum fwd_buf out, enum fwd_buf in, const gguf_tensor *w);

/* ---- attention: ATT = softmax(kq_scale * Q.K) V over layer il's cache,
 * causal, within the sliding window on the layer's that have one ---- */
void fwd_attention(fwd_graph *g, uint32_t il);

/* ---- Gated DeltaNet (forward_deltanet.c): DN = the layer's DeltaNet
 * output from QKV (the convolution's input), GATE (z), BETA and ALPHA,
 * advancing layer il's recurrent state over the batch's tokens ---- */
void fwd_deltanet(fwd_graph *g, uint32_t il);

/* In the last layer, after the attention's output projection: from here on
 * only the rows whose logits were asked for are computed (llama.cpp's
 * inp_out_ids). X and XB must be the only live buffers. Elsewhere a no-op. */
void fwd_keep_out_rows(fwd_graph *g, uint32_t il);

/* ---- blocks most recipes share ---- */
/* Q, K, V from XB: separate or fused weights, biases when the layer has
 * them, per-head Q/K norms when it has them; then RoPE and the cache. */
void fwd_block_qkv_rope(fwd_graph *g, const model_layer *L, uint32_t il);
/* XB = FFN(XB) with a SiLU-gated FFN (gate and up separate or fused). */
void fwd_block_ffn_swiglu(fwd_graph *g, const model_layer *L);
/* XB = DeltaNet(XB): the projections, fwd_deltanet, the output projection. */
void fwd_block_deltanet(fwd_graph *g, const model_layer *L, uint32_t il);
/* XB = FFN(XB) with a GELU(tanh)-gated FFN. */
void fwd_block_ffn_geglu(fwd_graph *g, const model_layer *L);

/* ---- mixture of experts (forward_moe.c, its router forward_moe_route.c) ----
 *
 * dst = MoE(in): a router picks n_used of n_expert expert FFNs per token,
 * their outputs are summed with the router's weights, plus an optional
 * shared expert behind a sigmoid gate. llama.cpp's build_moe_ffn, step for
 * step and in its float order:
 *   logits = router . router_in (+ router bias)
 *   probs  = softmax(logits) | sigmoid(logits) | logits (SOFTMAX_WEIGHT)
 *   the top n_used probs (ggml_argsort: libstdc++'s std::sort, descending)
 *   w      = their probs; SOFTMAX_WEIGHT: softmax over those n_used
 *   norm_w: w /= max(sum w, 2^-14);  w_scale (not 0 or 1): w *= w_scale
 *   per chosen expert e: g = gate_e . in, u = up_e . in (each * scale_e,
 *     + bias_e), h = act(g, u), y = down_e . h (* scale_e, + bias_e)
 *   dst = y_0 * w_0 + y_1 * w_1 + ... (each product rounded, summed in slot order)
 *   shared expert: dst += down_sh(silu(gate_sh . in) * up_sh . in) * sigmoid(gate_inp_sh . in)
 * The expert matmuls use the reference's mul_mat_id kernels: each output is
 * one weight row's dot with one token's quantized row (vec_dot order; the
 * repacked types' gemv order), so a batch groups its tokens by expert and
 * multiplies each expert's rows once for all of them, and one token reads
 * only its chosen experts' rows.
 *
 * A recipe starts from fwd_moe_of (the layer's tensors, the model's
 * options that the architecture's load() set: hp->moe_gating, moe_norm_w,
 * moe_w_scale, moe_act; in = router_in = dst = XB) and changes what its
 * architecture does differently, e.g. gpt-oss's load() sets
 *     hp->moe_gating = MODEL_MOE_GATING_SOFTMAX_WEIGHT; hp->moe_act = FWD_MOE_SWIGLU_OAI;
 * and gemma4's recipe routes from its own router input:
 *     fwd_moe m = fwd_moe_of(hp, L);
 *     m.router_in = FWD_XB2;  (rms_norm(x) / sqrt(n_embd) * ffn_gate_inp.scale, made by the recipe)
 *     fwd_block_moe(g, &m);
 * (Setting the options in hp lets `tokscope info` show them.)
 * Buffers it uses besides in/dst: ROUTER, SHGATE, XB2 (output of the
 * routed experts when there is a shared expert, else free), HB and HB2 (the
 * shared expert). in and router_in are only read. */
/* (enum fwd_moe_act, the experts' activation, is in model.h: hp->moe_act) */
typedef struct fwd_moe {
    enum fwd_buf in, router_in, dst;
    uint32_t n_expert, n_used;
    enum model_moe_gating gating;
    bool norm_w;
    float w_scale;
    enum fwd_moe_act act;
    float oai_alpha, oai_limit; /* FWD_MOE_SWIGLU_OAI (1.702, 7) */
    const gguf_tensor *router, *router_b; /* [n_embd, n_expert], [n_expert] or NULL */
    /* experts [n_in, n_out, n_expert]; gate NULL and gate_up set: gate|up rows fused */
    const gguf_tensor *gate, *up, *gate_up, *down;
    const gguf_tensor *gate_b, *up_b, *gate_up_b, *down_b; /* [n_out, n_expert] or NULL */
    const gguf_tensor *gate_s, *up_s, *down_s;             /* [n_expert] output scales or NULL */
    /* the shared expert (SiLU-gated), NULL when none */
    const gguf_tensor *sh_gate, *sh_up, *sh_down, *sh_gate_inp;
} fwd_moe;

/* The layer's MoE tensors and the model's options (hp->n_expert*, hp->moe_*). */
fwd_moe fwd_moe_of(const model_hparams *hp, const model_layer *L);
void fwd_block_moe(fwd_graph *g, const fwd_moe *m);

#endif
