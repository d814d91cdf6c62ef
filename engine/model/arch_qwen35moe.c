/* qwen35moe: Qwen3.5 / 3.6 mixture-of-experts models (35B-A3B, 122B-A10B).
 *
 * Load rules: qwen35's hybrid layout (arch_qwen35.c: Gated DeltaNet and
 * gated-attention layers, IMROPE, post-attention norm, nextn blocks
 * claimed and never run) with every layer's FFN a mixture of expert_count
 * SiLU-gated experts of width expert_feed_forward_length, expert_used_count
 * per token, routed by a softmax whose top k are renormalised (hard-coded
 * by the reference for this architecture), plus a shared expert of width
 * expert_shared_feed_forward_length whose output is scaled by
 * sigmoid(ffn_gate_inp_shexp . x) and added to the routed experts' sum. */
#include "model/arch_qwen35.h"

static bool load(model_loader *ld, model_hparams *hp, model_weights *w) { return qwen35_load(ld, hp, w, true); }

static void layer(fwd_graph *g, const model_hparams *hp, const model_layer *L, uint32_t il)
{
    qwen35_layer(g, hp, L, il, true);
}

const arch_def arch_qwen35moe = {MODEL_ARCH_QWEN35MOE, "qwen35moe", MODEL_ROPE_NEOX, load, layer};
