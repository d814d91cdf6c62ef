/* llama: Llama 1/2/3.x, TinyLlama, SmolLM, Mistral 7B and their kin.
 *
 * Load rules: attention Q/K/V separate (or fused attn_qkv), with optional
 * biases; a SiLU-gated FFN; Llama 3.x files carry rope_freqs.weight, the
 * per-dimension frequency factors of their rope scaling (one per rotated
 * pair), which every layer's RoPE divides theta by. RoPE rotates adjacent
 * pairs (NORM). */
#include "model/arch.h"

static bool load(model_loader *ld, model_hparams *hp, model_weights *w)
{
    const int64_t E = hp->n_embd, NQ = (int64_t)hp->n_head * hp->head_dim;
    if (hp->rope_scaling == MODEL_ROPE_SCALING_LONGROPE) {
        w->rope_long = ml_tensor(ld, -1, "rope_factors_long.weight", hp->n_rot / 2, 1, ML_OPTIONAL | ML_F32);
        w->rope_short =
            ml_tensor(ld, -1, "rope_factors_short.weight", hp->n_rot / 2, 1, ML_OPTIONAL | ML_F32);
    } else {
        w->rope_freqs = ml_tensor(ld, -1, "rope_freqs.weight", hp->n_rot / 2, 1, ML_OPTIONAL | ML_F32);
    }
    for (uint32_t il = 0; il < hp->n_layer && !ml_failed(ld); il++) {
        model_layer *L = &w->layers[il];
        L->attn_norm = ml_tensor(ld, (int)il, "attn_norm.weight", E, 1, ML_F32);
        ml_qkv(ld, L, il, hp, true);
        L->wo = ml_tensor(ld, (int)il, "attn_output.weight", NQ, E, 0);
        L->ffn_norm = ml_tensor(ld, (int)il, "ffn_norm.weight", E, 1, ML_F32);
        ml_ffn(ld, L, il, hp);
    }
    return !ml_failed(ld);
}

static void layer(fwd_graph *g, const model_hparams *hp, const model_layer *L, uint32_t il)
{
    (void)hp;
    fwd_norm(g, FWD_XB, FWD_X, L->attn_norm);
    fwd_block_qkv_rope(g, L, il); /* q, k, v = xb W (+ b); RoPE; k, v -> cache */
    fwd_attention(g, il);         /* att = softmax(q k / sqrt(hd)) v */
    fwd_matmul1(g, FWD_XB, FWD_ATT, L->wo);
    fwd_keep_out_rows(g, il);
    fwd_add(g, FWD_X, FWD_XB); /* residual */
    fwd_norm(g, FWD_XB, FWD_X, L->ffn_norm);
    fwd_block_ffn_swiglu(g, L); /* xb = down(silu(gate xb) * up xb) */
    fwd_add(g, FWD_X, FWD_XB);  /* residual */
}

const arch_def arch_llama = {MODEL_ARCH_LLAMA, "llama", MODEL_ROPE_NORM, load, layer};
