/* gpt-oss: OpenAI's gpt-oss models (llama.cpp's openai-moe).
 *
 * Load rules: Q, K and V with biases, the attention output with a bias,
 * and one sink logit per query head (attn_sinks) that joins every softmax
 * without a value row; softmax scale 1/sqrt(n_rot); NEOX RoPE, YaRN-scaled
 * in the released models (rope.scaling.type yarn), the same base and scale
 * on every layer (rope.freq_base_swa if the file has one). Sliding-window
 * attention (attention.sliding_window) on the layers the pattern marks:
 * attention.sliding_window_pattern (a period or a per-layer array), period
 * 2 by default, i.e. the even layers. The FFN is a mixture of experts with
 * a router bias, the top-k logits softmaxed (SOFTMAX_WEIGHT: the reference
 * hard-codes it for this architecture), experts with biases, usually
 * MXFP4, and the clamped SwiGLU (alpha 1.702, limit 7). The norm before
 * the experts is stored as post_attention_norm. Untied output. Tensors
 * the reference does not read for this architecture (fused gate_up
 * experts, a shared expert, per-expert scales) are refused. */
#include "model/arch.h"

#include <math.h>

static bool load(model_loader *ld, model_hparams *hp, model_weights *w)
{
    if (!ml_moe_hparams(ld, hp))
        return false;
    hp->moe_gating = MODEL_MOE_GATING_SOFTMAX_WEIGHT;
    hp->moe_norm_w = false;
    hp->moe_act = FWD_MOE_SWIGLU_OAI; /* alpha 1.702, limit 7 (the block's defaults) */
    if (!ml_u32(ld, "attention.sliding_window", &hp->n_swa))
        return ml_fail(ld, "missing hyperparameter %s.attention.sliding_window", "gpt-oss");
    if (!ml_bool_array(ld, "attention.sliding_window_pattern", hp->swa_layer, hp->n_layer)) {
        uint32_t period = 2;
        ml_u32(ld, "attention.sliding_window_pattern", &period);
        for (uint32_t il = 0; il < hp->n_layer; il++)
            hp->swa_layer[il] = period == 0 || il % period < period - 1;
    }
    if (ml_failed(ld))
        return false;
    hp->rope_freq_base_swa = hp->rope_freq_base;
    ml_f32(ld, "rope.freq_base_swa", &hp->rope_freq_base_swa);
    hp->rope_freq_scale_swa = hp->rope_freq_scale;
    hp->kq_scale = 1.0f / sqrtf((float)hp->n_rot);
    if (w->output == w->tok_embd)
        return ml_fail(ld, "tensor 'output.weight' is missing (required by architecture 'gpt-oss')");
    const int64_t E = hp->n_embd, NQ = (int64_t)hp->n_head * hp->head_dim;
    for (uint32_t il = 0; il < hp->n_layer && !ml_failed(ld); il++) {
        model_layer *L = &w->layers[il];
        const int l = (int)il;
        L->attn_norm = ml_tensor(ld, l, "attn_norm.weight", E, 1, ML_F32);
        ml_qkv(ld, L, il, hp, false);
        L->wo = ml_tensor(ld, l, "attn_output.weight", NQ, E, 0);
        L->bo = ml_tensor(ld, l, "attn_output.bias", E, 1, ML_F32);
        L->attn_sinks = ml_tensor(ld, l, "attn_sinks.weight", hp->n_head, 1, ML_F32);
        L->ffn_norm = ml_tensor(ld, l, "post_attention_norm.weight", E, 1, ML_F32);
        ml_moe(ld, L, il, hp);
        if (ml_failed(ld))
            break;
        if (!L->bq)
            return ml_fail(ld, "layer %u has no attn_q/k/v biases (required by architecture 'gpt-oss')", il);
        if (!L->ffn_gate_inp_b || !L->ffn_gate_exps || !L->ffn_gate_exps_b || !L->ffn_up_exps_b ||
            !L->ffn_down_exps_b)
            return ml_fail(ld, "layer %u lacks gpt-oss's router bias or separate gate/up/down experts with biases "
                           "(ffn_gate_inp.bias, ffn_{gate,up,down}_exps.bias)", il);
        if (L->ffn_gate_exps_s || L->ffn_up_exps_s || L->ffn_down_exps_s || L->ffn_up_shexp)
            return ml_fail(ld, "layer %u has expert scales or a shared expert, which architecture 'gpt-oss' "
                           "does not use", il);
    }
    return !ml_failed(ld);
}

static void layer(fwd_graph *g, const model_hparams *hp, const model_layer *L, uint32_t il)
{
    fwd_norm(g, FWD_XB, FWD_X, L->attn_norm);
    fwd_block_qkv_rope(g, L, il); /* q, k, v = xb W + b; NEOX YaRN RoPE; k, v -> cache */
    fwd_attention(g, il);         /* with the layer's sinks, within the window on SWA layers */
    fwd_matmul1(g, FWD_XB, FWD_ATT, L->wo);
    fwd_bias(g, FWD_XB, L->bo);
    fwd_add(g, FWD_X, FWD_XB);
    fwd_norm(g, FWD_XB, FWD_X, L->ffn_norm);
    const fwd_moe moe = fwd_moe_of(hp, L); /* xb = sum of the top-k experts' clamped SwiGLU FFNs, weighted */
    fwd_block_moe(g, &moe);
    fwd_add(g, FWD_X, FWD_XB);
    /* the reference drops the unused rows after the last layer, not after
     * its attention: the MoE runs on every row (its router's F32 matmul
     * takes another kernel for a batch than for one row) */
    fwd_keep_out_rows(g, il);
}

const arch_def arch_gptoss = {MODEL_ARCH_GPTOSS, "gpt-oss", MODEL_ROPE_NEOX, load, layer};
