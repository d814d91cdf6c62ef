/* qwen2: Qwen2, Qwen2.5, DeepSeek-R1-Distill-Qwen.
 *
 * Load rules: attention Q/K/V each with a bias (the three or none), a
 * SiLU-gated FFN, usually tied output. RoPE rotates the two halves of a
 * head (NEOX). */
#include "model/arch.h"

static bool load(model_loader *ld, model_hparams *hp, model_weights *w)
{
    const int64_t E = hp->n_embd;
    for (uint32_t il = 0; il < hp->n_layer && !ml_failed(ld); il++) {
        model_layer *L = &w->layers[il];
        L->attn_norm = ml_tensor(ld, (int)il, "attn_norm.weight", E, 1, ML_F32);
        ml_qkv(ld, L, il, hp, false);
        L->wo = ml_tensor(ld, (int)il, "attn_output.weight", (int64_t)hp->n_head * hp->head_dim, E, 0);
        L->ffn_norm = ml_tensor(ld, (int)il, "ffn_norm.weight", E, 1, ML_F32);
        ml_ffn(ld, L, il, hp);
    }
    return !ml_failed(ld);
}

static void layer(fwd_graph *g, const model_hparams *hp, const model_layer *L, uint32_t il)
{
    (void)hp;
    fwd_norm(g, FWD_XB, FWD_X, L->attn_norm);
    fwd_block_qkv_rope(g, L, il); /* q, k, v = xb W + b; NEOX RoPE; k, v -> cache */
    fwd_attention(g, il);
    fwd_matmul1(g, FWD_XB, FWD_ATT, L->wo);
    fwd_keep_out_rows(g, il);
    fwd_add(g, FWD_X, FWD_XB);
    fwd_norm(g, FWD_XB, FWD_X, L->ffn_norm);
    fwd_block_ffn_swiglu(g, L);
    fwd_add(g, FWD_X, FWD_XB);
}

const arch_def arch_qwen2 = {MODEL_ARCH_QWEN2, "qwen2", MODEL_ROPE_NEOX, load, layer};
