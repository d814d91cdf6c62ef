/* gemma3: Gemma 3 text models.
 *
 * Load rules: the head size comes from attention.key_length (not
 * n_embd / n_head); Q and K get per-head RMS norms; the attention output
 * and the FFN output are normed again before their residual adds; the FFN
 * is GELU(tanh)-gated; embeddings are scaled by sqrt(n_embd). Layers use
 * sliding-window attention (attention.sliding_window positions) except
 * every 6th (or as attention.sliding_window_pattern says), and those local
 * layers use their own RoPE base (rope.freq_base_swa, default 10000) and no
 * scaling. Queries are scaled by 1/sqrt(head_dim) before attention (by
 * 1/sqrt(n_embd / n_head) in the 62-layer 27B, as the reference does).
 * Norm weights are stored with Gemma's +1 already added. RoPE is NEOX. */
#include "model/arch.h"

#include <math.h>

static bool load(model_loader *ld, model_hparams *hp, model_weights *w)
{
    const int64_t E = hp->n_embd, HD = hp->head_dim, NQ = (int64_t)hp->n_head * HD;
    if (ml_u32(ld, "attention.sliding_window", &hp->n_swa) && hp->n_swa > 0) {
        if (!ml_bool_array(ld, "attention.sliding_window_pattern", hp->swa_layer, hp->n_layer)) {
            uint32_t pattern = 6;
            ml_u32(ld, "attention.sliding_window_pattern", &pattern);
            for (uint32_t il = 0; il < hp->n_layer; il++)
                hp->swa_layer[il] = pattern == 0 || il % pattern < pattern - 1;
        }
        ml_f32(ld, "rope.freq_base_swa", &hp->rope_freq_base_swa);
    } else {
        hp->n_swa = 0;
    }
    ml_f32(ld, "final_logit_softcapping", &hp->logit_softcap);
    hp->embd_scale = sqrtf((float)hp->n_embd);
    /* the reference divides in integers: 5376 / 32 = 168 for the 27B */
    const uint32_t head_27b = hp->n_embd / hp->n_head;
    hp->q_scale = hp->n_layer == 62 ? 1.0f / sqrtf((float)head_27b) : 1.0f / sqrtf((float)HD);
    hp->kq_scale = 1.0f;
    for (uint32_t il = 0; il < hp->n_layer && !ml_failed(ld); il++) {
        model_layer *L = &w->layers[il];
        L->attn_norm = ml_tensor(ld, (int)il, "attn_norm.weight", E, 1, ML_F32);
        ml_qkv(ld, L, il, hp, false);
        L->q_norm = ml_tensor(ld, (int)il, "attn_q_norm.weight", HD, 1, ML_F32);
        L->k_norm = ml_tensor(ld, (int)il, "attn_k_norm.weight", HD, 1, ML_F32);
        L->wo = ml_tensor(ld, (int)il, "attn_output.weight", NQ, E, 0);
        L->attn_post_norm = ml_tensor(ld, (int)il, "post_attention_norm.weight", E, 1, ML_F32);
        L->ffn_norm = ml_tensor(ld, (int)il, "ffn_norm.weight", E, 1, ML_F32);
        ml_ffn(ld, L, il, hp);
        L->ffn_post_norm = ml_tensor(ld, (int)il, "post_ffw_norm.weight", E, 1, ML_F32);
    }
    return !ml_failed(ld);
}

static void layer(fwd_graph *g, const model_hparams *hp, const model_layer *L, uint32_t il)
{
    fwd_norm(g, FWD_XB, FWD_X, L->attn_norm);
    fwd_block_qkv_rope(g, L, il); /* q, k = head_norm(xb W); RoPE (local or global base) */
    fwd_scale(g, FWD_Q, hp->q_scale);
    fwd_attention(g, il); /* softmax(q k) v, within the window on local layers */
    fwd_matmul1(g, FWD_XB, FWD_ATT, L->wo);
    fwd_keep_out_rows(g, il);
    fwd_norm(g, FWD_XB, FWD_XB, L->attn_post_norm);
    fwd_add(g, FWD_X, FWD_XB);
    fwd_norm(g, FWD_XB, FWD_X, L->ffn_norm);
    fwd_block_ffn_geglu(g, L); /* xb = down(gelu(gate xb) * up xb) */
    fwd_norm(g, FWD_XB, FWD_XB, L->ffn_post_norm);
    fwd_add(g, FWD_X, FWD_XB);
}

const arch_def arch_gemma3 = {MODEL_ARCH_GEMMA3, "gemma3", MODEL_ROPE_NEOX, load, layer};
