/* phi3: Phi-3, Phi-3.5, Phi-4-mini.
 *
 * Load rules: Q, K and V in one fused attn_qkv matrix (or separate);
 * ffn_up holds the gate rows and then the up rows (2 n_ff), no ffn_gate;
 * untied output. Long-context variants (rope scaling "longrope") carry
 * rope_factors_long/short: the long ones when the context is longer than
 * rope.scaling.original_context_length, as the reference picks them.
 * Queries are scaled by 1/sqrt(head_dim) before attention. The reference
 * ignores attention.sliding_window for this architecture (it disabled Phi
 * SWA), and so does tokscope, to give its numbers. RoPE is NEOX. */
#include "model/arch.h"

static bool load(model_loader *ld, model_hparams *hp, model_weights *w)
{
    const int64_t E = hp->n_embd, NQ = (int64_t)hp->n_head * hp->head_dim;
    hp->q_scale = hp->kq_scale;
    hp->kq_scale = 1.0f;
    w->rope_long = ml_tensor(ld, -1, "rope_factors_long.weight", hp->n_rot / 2, 1, ML_OPTIONAL | ML_F32);
    w->rope_short = ml_tensor(ld, -1, "rope_factors_short.weight", hp->n_rot / 2, 1, ML_OPTIONAL | ML_F32);
    for (uint32_t il = 0; il < hp->n_layer && !ml_failed(ld); il++) {
        model_layer *L = &w->layers[il];
        L->attn_norm = ml_tensor(ld, (int)il, "attn_norm.weight", E, 1, ML_F32);
        ml_qkv(ld, L, il, hp, true);
        L->wo = ml_tensor(ld, (int)il, "attn_output.weight", NQ, E, 0);
        L->ffn_norm = ml_tensor(ld, (int)il, "ffn_norm.weight", E, 1, ML_F32);
        L->ffn_up = ml_tensor(ld, (int)il, "ffn_up.weight", E, 2 * (int64_t)hp->n_ff, 0);
        L->ffn_down = ml_tensor(ld, (int)il, "ffn_down.weight", hp->n_ff, E, 0);
    }
    return !ml_failed(ld);
}

static void layer(fwd_graph *g, const model_hparams *hp, const model_layer *L, uint32_t il)
{
    fwd_norm(g, FWD_XB, FWD_X, L->attn_norm);
    fwd_block_qkv_rope(g, L, il); /* q, k, v = xb Wqkv; RoPE (with long/short factors) */
    fwd_scale(g, FWD_Q, hp->q_scale);
    fwd_attention(g, il);
    fwd_matmul1(g, FWD_XB, FWD_ATT, L->wo);
    fwd_keep_out_rows(g, il);
    fwd_add(g, FWD_X, FWD_XB);
    fwd_norm(g, FWD_XB, FWD_X, L->ffn_norm);
    fwd_block_ffn_swiglu(g, L); /* gate|up in one matmul */
    fwd_add(g, FWD_X, FWD_XB);
}

const arch_def arch_phi3 = {MODEL_ARCH_PHI3, "phi3", MODEL_ROPE_NEOX, load, layer};
