/* One architecture = its load rules and its layer recipe (arch_<name>.c).
 * model.c reads what every architecture shares (sizes, RoPE, the
 * embeddings and output), then the architecture's load() reads its own
 * keys and each layer's tensors through the loader below; forward.c builds
 * the graph by calling its layer() once per layer. */
#ifndef TOKSCOPE_ARCH_H
#define TOKSCOPE_ARCH_H

#include <stdbool.h>
#include <stdint.h>

#include "gguf/gguf.h"
#include "model/forward_graph.h"
#include "model/model.h"

typedef struct model_loader model_loader;

enum {
    ML_OPTIONAL = 1 << 0, /* absent is fine: NULL */
    ML_F32 = 1 << 1,      /* norms, biases and factors: F32 only */
};

/* The tensor `blk.IL.SUFFIX` (il >= 0) or `SUFFIX` (il < 0), checked for
 * shape ne0 x ne1 (ne1 = 1 for a vector) and a type tokscope computes with.
 * NULL when absent (the loader has failed unless ML_OPTIONAL) or bad (failed). */
const gguf_tensor *ml_tensor(model_loader *ld, int il, const char *suffix, int64_t ne0, int64_t ne1,
                             unsigned flags);
/* The same for a 3-D tensor ne0 x ne1 x ne2 (a layer's experts: ne2 = n_expert). */
const gguf_tensor *ml_tensor3(model_loader *ld, int il, const char *suffix, int64_t ne0, int64_t ne1, int64_t ne2,
                              unsigned flags);
/* ARCH.KEY, false when absent. */
bool ml_u32(model_loader *ld, const char *key, uint32_t *out);
bool ml_f32(model_loader *ld, const char *key, float *out);
/* ARCH.KEY as a per-layer bool array (sliding_window_pattern); false when absent. */
bool ml_bool_array(model_loader *ld, const char *key, bool *out, uint32_t n);
/* ARCH.KEY as a per-layer u32 array (or one u32 for every layer); false when absent. */
bool ml_u32_array(model_loader *ld, const char *key, uint32_t *out, uint32_t n);
/* ARCH.KEY as up to n int32 (rope.dimension_sections), the rest 0; false
 * when absent (failed when longer than n). */
bool ml_i32_array(model_loader *ld, const char *key, int32_t *out, uint32_t n);
/* Marks the load failed with a message (first one wins); returns false. */
bool ml_fail(model_loader *ld, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
bool ml_failed(const model_loader *ld);
/* The file being loaded (an architecture that checks its keys). */
const gguf_ctx *ml_gguf(const model_loader *ld);

typedef struct arch_def {
    enum model_arch arch;
    const char *name; /* general.architecture */
    enum model_rope_type rope_type;
    /* Keys beyond the shared ones, then every layer's tensors. */
    bool (*load)(model_loader *ld, model_hparams *hp, model_weights *w);
    /* Layer il, top to bottom: from X (the residual stream) to X. */
    void (*layer)(fwd_graph *g, const model_hparams *hp, const model_layer *L, uint32_t il);
} arch_def;

extern const arch_def arch_llama, arch_qwen2, arch_qwen3, arch_gemma3, arch_phi3;
extern const arch_def arch_qwen3moe, arch_gptoss, arch_gemma4, arch_qwen35, arch_qwen35moe;
extern const arch_def arch_gemma4_assistant;


const arch_def *arch_find(const char *name);
const arch_def *arch_get(enum model_arch a);

/* Loader helpers several architectures share. */
/* attn_q/k/v (or fused attn_qkv) with their optional biases. */
bool ml_qkv(model_loader *ld, model_layer *L, uint32_t il, const model_hparams *hp, bool fused_allowed);
/* ffn_gate, ffn_up, ffn_down. */
bool ml_ffn(model_loader *ld, model_layer *L, uint32_t il, const model_hparams *hp);

/* Mixture of experts (arch_moe.c). ml_moe_hparams: expert_count,
 * expert_used_count (both required, 1 <= used <= count <= MODEL_MAX_EXPERTS),
 * expert_feed_forward_length (default n_ff / n_expert_used, as the
 * reference), expert_shared_feed_forward_length (default 0), and
 * expert_weights_scale (default 0: none); gating and norm_w are left to the
 * architecture (the reference hard-codes them per model). */
#define MODEL_MAX_EXPERTS 512
bool ml_moe_hparams(model_loader *ld, model_hparams *hp);
/* A layer's router ffn_gate_inp (+ optional .bias), the experts
 * ffn_{gate,up,down}_exps (or ffn_gate_up_exps fused) with their optional
 * biases (.bias, [width, n_expert]) and output scales (.scale, [n_expert]),
 * and, when present, the shared expert ffn_{gate,up,down}_shexp of width
 * n_ff_shexp with its gate ffn_gate_inp_shexp. */
bool ml_moe(model_loader *ld, model_layer *L, uint32_t il, const model_hparams *hp);

#endif
