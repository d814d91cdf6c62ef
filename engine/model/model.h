/* A decoder-only transformer read from GGUF: hyperparameters and weights
 * (weights stay in the mmap), plus the tokenizer and chat template. Which
 * tensors and keys an architecture needs, and what its layers compute, is
 * stated in its engine/model/arch_<name>.c. */
#ifndef TOKSCOPE_MODEL_H
#define TOKSCOPE_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gguf/gguf.h"
#include "tokenizer/tokenizer.h"

#define MODEL_MAX_LAYERS 1024

enum model_arch {
    MODEL_ARCH_LLAMA,
    MODEL_ARCH_QWEN2,
    MODEL_ARCH_QWEN3,
    MODEL_ARCH_GEMMA3,
    MODEL_ARCH_PHI3,
    MODEL_ARCH_GEMMA4,
    MODEL_ARCH_QWEN3MOE,
    MODEL_ARCH_GPTOSS,
    MODEL_ARCH_QWEN35,
    MODEL_ARCH_QWEN35MOE,
    MODEL_ARCH_GEMMA4_ASSISTANT,
    MODEL_ARCH_COUNT,
};

/* How RoPE pairs a head's elements: NORM rotates adjacent pairs (i, i+1),
 * NEOX the two halves (i, i + n_rot/2). */
enum model_rope_type { MODEL_ROPE_NORM, MODEL_ROPE_NEOX };

/* How a mixture-of-experts router turns its logits into expert weights
 * (llama.cpp's llama_expert_gating_func_type, same numbers as the GGUF key
 * expert_gating_func):
 *  SOFTMAX: softmax over all experts, the top k of those probabilities;
 *  SIGMOID: each logit's sigmoid, the top k of those;
 *  SOFTMAX_WEIGHT: the top k logits, then a softmax over those k (gpt-oss). */
enum model_moe_gating {
    MODEL_MOE_GATING_NONE = 0,
    MODEL_MOE_GATING_SOFTMAX = 1,
    MODEL_MOE_GATING_SIGMOID = 2,
    MODEL_MOE_GATING_SOFTMAX_WEIGHT = 3,
};

/* The activation of a mixture of experts' FFNs (forward_graph.h's fwd_moe). */
enum fwd_moe_act {
    FWD_MOE_SILU,       /* silu(g) * u (ggml_swiglu_split) */
    FWD_MOE_GELU,       /* gelu_tanh(g) * u (ggml_geglu_split) */
    FWD_MOE_SWIGLU_OAI, /* gpt-oss: x = min(g, limit), y = clamp(u, +-limit), x / (1 + e^(-alpha x)) * (y + 1) */
};

/* rope.scaling.type: what the frequencies are scaled by. */
enum model_rope_scaling {
    MODEL_ROPE_SCALING_NONE,
    MODEL_ROPE_SCALING_LINEAR,   /* positions divided by rope.scaling.factor */
    MODEL_ROPE_SCALING_LONGROPE, /* Phi-3: per-dimension long/short factors */
    MODEL_ROPE_SCALING_YARN,     /* YaRN: interpolation ramped into extrapolation (rope_yarn.h) */
};

typedef struct model_hparams {
    enum model_arch arch;
    uint32_t n_ctx_train;
    uint32_t n_embd;
    uint32_t n_layer;
    uint32_t n_head;
    uint32_t n_head_kv;
    uint32_t n_ff;
    uint32_t head_dim; /* attention.key_length (= value_length), default n_embd / n_head */
    uint32_t n_rot;    /* rope.dimension_count, default head_dim */
    int32_t n_vocab;
    enum model_rope_type rope_type;
    enum model_rope_scaling rope_scaling;
    float rope_freq_base;   /* default 10000 */
    float rope_freq_scale;  /* 1 / rope.scaling.factor for linear scaling, else 1 */
    float rope_attn_factor; /* rope.scaling.attn_factor: cos and sin are scaled by it (1 = none);
                               with YaRN the reference's derived factor (rope_yarn_attn_factor) */
    float rope_ext_factor;  /* YaRN's extrapolation mix: 1 with YaRN, else 0 */
    uint32_t n_ctx_orig;    /* rope.scaling.original_context_length, default n_ctx_train */
    /* sliding-window attention: layer l sees the n_swa positions up to its
     * own when swa_layer[l]; those layers use their own RoPE base and scale */
    uint32_t n_swa;
    float rope_freq_base_swa, rope_freq_scale_swa;
    bool swa_layer[MODEL_MAX_LAYERS];
    float embd_scale;    /* token embeddings multiplied by this (0 = not scaled) */
    float q_scale;       /* queries multiplied by this before attention (0 = not) */
    float kq_scale;      /* softmax(kq_scale * K.Q) */
    float logit_softcap; /* logits = c * tanh(logits / c) (0 = none) */
    /* IMROPE (qwen35): rope.dimension_sections; a text token's position
     * drives the first three sections, the fourth sees position 0 */
    bool rope_imrope;
    int32_t rope_sections[4];
    /* Gated DeltaNet (qwen35): recurrent_layer[l] marks its layers, the
     * rest are full attention. ssm.conv_kernel, ssm.state_size (the head
     * size of keys and values), ssm.group_count (key heads),
     * ssm.time_step_rank (value heads), ssm.inner_size (value width) */
    bool recurrent_layer[MODEL_MAX_LAYERS];
    uint32_t ssm_d_conv, ssm_d_state, ssm_n_group, ssm_dt_rank, ssm_d_inner;
    uint32_t n_layer_nextn; /* nextn/MTP blocks after the n_layer ones (--spec mtp runs the first) */
    /* gemma4-assistant: embedding_length_out, its target's n_embd (the
     * width of the hidden states it takes and hands on, and of the
     * target's embeddings it reads) */
    uint32_t n_embd_out;
    float rms_eps;
    /* Gemma 4: the sliding-window layers' own head size and rotated dims
     * (attention.key_length_swa, rope.dimension_count_swa; default
     * head_dim and n_rot, so model_head_dim() is head_dim elsewhere) */
    uint32_t head_dim_swa, n_rot_swa;
    bool rope_factors_full_only; /* rope_freqs divide only the full-attention layers' thetas */
    /* layers [0, n_layer_kv) own a KV cache; a later one reads the cache of
     * kv_layer[l] and stores nothing (Gemma 4's shared KV layers) */
    uint32_t n_layer_kv;
    uint16_t kv_layer[MODEL_MAX_LAYERS];
    uint32_t n_embd_per_layer; /* per-layer embedding size (Gemma 4), 0 = none */
    /* KV heads of each layer: attention.head_count_kv may be an array
     * (Gemma 4); n_head_kv is then the most of them */
    uint32_t n_head_kv_l[MODEL_MAX_LAYERS];
    uint32_t file_type; /* general.file_type, 0 if absent */
    /* mixture of experts (0 experts: a dense model); see forward_graph.h's fwd_moe */
    uint32_t n_expert, n_expert_used; /* expert_count, expert_used_count */
    uint32_t n_ff_exp;                /* expert_feed_forward_length: one expert's width */
    uint32_t n_ff_shexp;              /* expert_shared_feed_forward_length (0: no shared expert) */
    enum model_moe_gating moe_gating;
    bool moe_norm_w;   /* the k weights divided by their sum */
    float moe_w_scale; /* the k weights times this (0 or 1: not scaled) */
    enum fwd_moe_act moe_act; /* the experts' activation (default SiLU) */
} model_hparams;

/* Layer il's head size and rotated dims (its kind's). */
static inline uint32_t model_head_dim(const model_hparams *hp, uint32_t il)
{
    return hp->swa_layer[il] ? hp->head_dim_swa : hp->head_dim;
}
static inline uint32_t model_n_rot(const model_hparams *hp, uint32_t il)
{
    return hp->swa_layer[il] ? hp->n_rot_swa : hp->n_rot;
}
static inline uint32_t model_n_head_kv(const model_hparams *hp, uint32_t il) { return hp->n_head_kv_l[il]; }

typedef struct model model;

/* Opens, validates shapes and types of every tensor the forward pass needs
 * (clear error naming the tensor otherwise), refuses architectures, tensors
 * and rope scaling types it does not know, builds the tokenizer. */
model *model_load(const char *path, char *err, size_t errlen);
/* Same, but a tokenizer that fails to build is not an error:
 * model_get_tokenizer() then returns NULL (compare needs token ids only). */
model *model_load_weights_only(const char *path, char *err, size_t errlen);
/* model_load over a caller-owned buffer (fuzzing, tests); buf must outlive
 * the model. name stands for the file in messages. */
model *model_load_buffer(const void *buf, size_t size, const char *name, char *err, size_t errlen);
void model_free(model *m);

const model_hparams *model_get_hparams(const model *m);
const tokenizer *model_get_tokenizer(const model *m);
const gguf_ctx *model_get_gguf(const model *m);
const char *model_get_name(const model *m);          /* general.name or file base name */
const char *model_get_chat_template(const model *m); /* NULL when absent */
const char *model_get_arch(const model *m);
size_t model_get_weight_bytes(const model *m);
const char *model_file_type_name(uint32_t file_type); /* "Q4_K_M", ... */
const char *model_arch_name(enum model_arch a);
/* The architectures tokscope runs, space-separated (for messages). */
const char *model_arch_list(void);
const char *model_rope_type_name(enum model_rope_type t);
const char *model_rope_scaling_name(enum model_rope_scaling s);

/* The weights the forward pass reads (views into the GGUF mapping). A
 * NULL pointer is a tensor this architecture or file does not have. */
typedef struct model_layer {
    const gguf_tensor *attn_norm;
    const gguf_tensor *wq, *wk, *wv, *wqkv; /* separate, or fused Q|K|V rows */
    const gguf_tensor *bq, *bk, *bv;        /* biases added after the Q, K, V matmuls */
    const gguf_tensor *q_norm, *k_norm;     /* per-head RMS norms of Q and K */
    const gguf_tensor *wo;
    const gguf_tensor *bo;                  /* bias added after the output projection */
    const gguf_tensor *attn_sinks;          /* [n_head] sink logits (gpt-oss), forward_attn.h */
    const gguf_tensor *attn_post_norm;      /* norm of the attention output */
    const gguf_tensor *ffn_norm;
    const gguf_tensor *ffn_gate, *ffn_up, *ffn_down; /* gate NULL: ffn_up holds gate|up rows */
    const gguf_tensor *ffn_post_norm;       /* norm of the FFN output */
    /* Gemma 4's per-layer embedding block: gate (n_embd -> n_embd_per_layer),
     * projection back, its norm; and the layer's output scale ([1]) */
    const gguf_tensor *ple_gate, *ple_proj, *ple_post_norm, *out_scale;
    /* Gemma 4 MoE layers: the router input's scale, the experts' input norm,
     * the dense FFN's and the experts' output norms (before their sum) */
    const gguf_tensor *ffn_gate_inp_s, *ffn_pre_norm_2, *ffn_post_norm_1, *ffn_post_norm_2;
    /* mixture of experts (arch_moe.c's ml_moe): expert tensors are 3-D,
     * ne0 x ne1 x n_expert (expert e's rows start at e * nbytes / n_expert);
     * their biases and the per-expert scales 2-D / 1-D, one row per expert */
    const gguf_tensor *ffn_gate_inp, *ffn_gate_inp_b;         /* router [n_embd, n_expert], its bias */
    const gguf_tensor *ffn_gate_exps, *ffn_up_exps, *ffn_down_exps;
    const gguf_tensor *ffn_gate_up_exps;                      /* gate|up rows fused (gate_exps, up_exps NULL) */
    const gguf_tensor *ffn_gate_exps_b, *ffn_up_exps_b, *ffn_gate_up_exps_b, *ffn_down_exps_b;
    const gguf_tensor *ffn_gate_exps_s, *ffn_up_exps_s, *ffn_down_exps_s; /* [n_expert] output scales */
    const gguf_tensor *ffn_gate_shexp, *ffn_up_shexp, *ffn_down_shexp; /* the shared expert */
    const gguf_tensor *ffn_gate_inp_shexp;                              /* its sigmoid gate [n_embd] */
    /* Gated DeltaNet layers (qwen35): wqkv holds the Q|K|V rows fed to the
     * convolution, attn_gate the output gate z */
    const gguf_tensor *attn_gate;
    const gguf_tensor *ssm_conv1d, *ssm_dt, *ssm_a, *ssm_beta, *ssm_alpha, *ssm_norm, *ssm_out;
} model_layer;

typedef struct model_weights {
    const gguf_tensor *tok_embd, *output_norm;
    const gguf_tensor *output; /* == tok_embd when the embeddings are tied */
    /* RoPE frequency factors, one per rotated pair (divide theta): Llama 3's
     * rope_freqs, or Phi-3's long/short factors chosen by the context size */
    const gguf_tensor *rope_freqs, *rope_long, *rope_short;
    /* Gemma 4's per-layer embeddings: token rows of n_layer * n_embd_per_layer,
     * the projection of the scaled embeddings to that width, its norm */
    const gguf_tensor *ple_tok_embd, *ple_model_proj, *ple_proj_norm;
    model_layer *layers; /* n_layer */
    /* Qwen3.5's first nextn/MTP block (hp->n_layer_nextn > 0; NULL where
     * the file lacks a tensor): a gated-attention layer whose input is
     * eh_proj . [enorm(embedding) | hnorm(the trunk's last hidden state)],
     * its own embeddings, head and head norm optional (the trunk's then) */
    model_layer mtp;
    const gguf_tensor *mtp_eh_proj, *mtp_enorm, *mtp_hnorm, *mtp_embed, *mtp_head, *mtp_head_norm;
    /* a model_mtp_view: the graph starts with that input (forward_graph.c) */
    bool mtp_input;
    /* gemma4-assistant: its input is nextn_proj_pre . [the target's
     * embedding * sqrt(n_embd_out) | the target's hidden state], its next
     * hidden state nextn_proj_post . (its normed residual); in a
     * model_g4assist_view, tok_embd is the target's (the input rows) and
     * output the assistant's own token_embd (its tied head) */
    const gguf_tensor *nextn_proj_pre, *nextn_proj_post;
    bool g4assist_input;
} model_weights;

const model_weights *model_get_weights(const model *m);
/* The MTP block of m as a model of one layer (llama.cpp's
 * LLM_GRAPH_TYPE_DECODER_MTP graph): forward_build on it gives the draft
 * head with a KV cache of its own, evaluated with forward_eval_h. It shares
 * m's file and tensors (free it before m, with model_free). NULL with err
 * set when m has no complete MTP block. */
model *model_mtp_view(const model *m, char *err, size_t errlen);
/* A gemma4-assistant file a bound to its gemma4 target t (llama.cpp's
 * ctx_other): a model whose forward_build gives the drafting head, run
 * with forward_eval_h (h_in: the target's hidden states, h_out: the next
 * ones, n_embd_out wide), its layers' caches the target's
 * (forward_share_kv). Shares a's file and t's embeddings: free it before
 * them, with model_free. NULL with err set when they do not fit (naming
 * what differs). */
model *model_g4assist_view(const model *a, const model *t, char *err, size_t errlen);
/* True when any matmul weight is a quantized block type (not F32/F16/BF16). */
bool model_is_quantized(const model *m);

#endif
