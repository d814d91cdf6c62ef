/* qwen3: Qwen3 dense models.
 *
 * Load rules: the head size comes from attention.key_length, so the
 * queries (n_head * head_dim) may be wider than n_embd; each head's Q and K
 * get an RMS norm of their own (attn_q_norm, attn_k_norm) before RoPE; no
 * biases; a SiLU-gated FFN. RoPE rotates the two halves of a head (NEOX). */
#include "model/arch.h"

static bool load(model_loader *ld, model_hparams *hp, model_weights *w)
{
    const int64_t E = hp->n_embd, HD = hp->head_dim;
    for (uint32_t il = 0; il < hp->n_layer && !ml_failed(ld); il++) {
        model_layer *L = &w->layers[il];
        L->attn_norm = ml_tensor(ld, (int)il, "attn_norm.weight", E, 1, ML_F32);
        ml_qkv(ld, L, il, hp, false);
        L->q_norm = ml_tensor(ld, (int)il, "attn_q_norm.weight", HD, 1, ML_F32);
        L->k_norm = ml_tensor(ld, (int)il, "attn_k_norm.weight", HD, 1, ML_F32);
        L->wo = ml_tensor(ld, (int)il, "attn_output.weight", (int64_t)hp->n_head * HD, E, 0);
        L->ffn_norm = ml_tensor(ld, (int)il, "ffn_norm.weight", E, 1, ML_F32);
        ml_ffn(ld, L, il, hp);
    }
    return !ml_failed(ld);
}

static void layer(fwd_graph *g, const model_hparams *hp, const model_layer *L, uint32_t il)
{
    (void)hp;
    fwd_norm(g, FWD_XB, FWD_X, L->attn_norm);
    fwd_block_qkv_rope(g, L, il); /* q, k = head_norm(xb W); NEOX RoPE; k, v -> cache */
    fwd_attention(g, il);
    fwd_matmul1(g, FWD_XB, FWD_ATT, L->wo);
    fwd_keep_out_rows(g, il);
    fwd_add(g, FWD_X, FWD_XB);
    fwd_norm(g, FWD_XB, FWD_X, L->ffn_norm);
    fwd_block_ffn_swiglu(g, L);
    fwd_add(g, FWD_X, FWD_XB);
}

const arch_def arch_qwen3 = {MODEL_ARCH_QWEN3, "qwen3", MODEL_ROPE_NEOX, load, layer};
