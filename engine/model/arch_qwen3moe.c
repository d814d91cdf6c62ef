/* qwen3moe: Qwen3 mixture-of-experts models (Qwen3-30B-A3B, 235B-A22B).
 *
 * Load rules: qwen3's attention (head size from attention.key_length,
 * per-head Q/K RMS norms, no biases, NEOX RoPE); every layer's FFN is a
 * mixture of expert_count SiLU-gated experts of width
 * expert_feed_forward_length, expert_used_count of them per token, routed
 * by a softmax over the router's logits, the top k renormalised to sum to
 * 1 (the reference hard-codes softmax and the renormalisation for this
 * architecture, whatever the file says) and scaled by
 * expert_weights_scale when the file has one. */
#include "model/arch.h"

static bool load(model_loader *ld, model_hparams *hp, model_weights *w)
{
    if (!ml_moe_hparams(ld, hp))
        return false;
    hp->moe_gating = MODEL_MOE_GATING_SOFTMAX;
    hp->moe_norm_w = true;
    const int64_t E = hp->n_embd, HD = hp->head_dim;
    for (uint32_t il = 0; il < hp->n_layer && !ml_failed(ld); il++) {
        model_layer *L = &w->layers[il];
        L->attn_norm = ml_tensor(ld, (int)il, "attn_norm.weight", E, 1, ML_F32);
        ml_qkv(ld, L, il, hp, false);
        L->q_norm = ml_tensor(ld, (int)il, "attn_q_norm.weight", HD, 1, ML_F32);
        L->k_norm = ml_tensor(ld, (int)il, "attn_k_norm.weight", HD, 1, ML_F32);
        L->wo = ml_tensor(ld, (int)il, "attn_output.weight", (int64_t)hp->n_head * HD, E, 0);
        L->ffn_norm = ml_tensor(ld, (int)il, "ffn_norm.weight", E, 1, ML_F32);
        ml_moe(ld, L, il, hp);
    }
    return !ml_failed(ld);
}

static void layer(fwd_graph *g, const model_hparams *hp, const model_layer *L, uint32_t il)
{
    fwd_norm(g, FWD_XB, FWD_X, L->attn_norm);
    fwd_block_qkv_rope(g, L, il); /* q, k = head_norm(xb W); NEOX RoPE; k, v -> cache */
    fwd_attention(g, il);
    fwd_matmul1(g, FWD_XB, FWD_ATT, L->wo);
    fwd_keep_out_rows(g, il);
    fwd_add(g, FWD_X, FWD_XB);
    fwd_norm(g, FWD_XB, FWD_X, L->ffn_norm);
    const fwd_moe moe = fwd_moe_of(hp, L); /* xb = sum of the top-k experts' SiLU FFNs, weighted */
    fwd_block_moe(g, &moe);
    fwd_add(g, FWD_X, FWD_XB);
}

const arch_def arch_qwen3moe = {MODEL_ARCH_QWEN3MOE, "qwen3moe", MODEL_ROPE_NEOX, load, layer};
