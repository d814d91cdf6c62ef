/* gemma4: Gemma 4 text models (llama.cpp's src/models/gemma4.cpp).
 *
 * Load rules: layers are sliding-window or full attention as
 * attention.sliding_window_pattern says, and each kind has its own head
 * size (attention.key_length for full layers, key_length_swa for sliding
 * ones; K and V alike), rotated dims (rope.dimension_count[_swa]) and RoPE
 * base (rope.freq_base / freq_base_swa); rope_freqs divides the full
 * layers' thetas only. The last attention.shared_kv_layers layers have no
 * K/V of their own: they read the cache of the last layer of their kind
 * before them and store nothing. A layer without attn_v uses its K
 * projection as V (K = V). Q and K get per-head RMS norms, V a per-head
 * RMS norm without weight; no query scaling and a softmax scale of 1.
 * Attention and FFN outputs are normed again before their residual adds,
 * the FFN is GELU(tanh)-gated with a width per layer
 * (feed_forward_length may be an array); embeddings are scaled by
 * sqrt(n_embd). Per-layer embeddings (embedding_length_per_layer_input,
 * forward_ple.c) are mixed in at the end of each layer, then the layer's
 * output is multiplied by layer_output_scale when present. Logits are
 * soft-capped (final_logit_softcapping). The last layer runs on every row:
 * the rows without logits are dropped after the output norm. RoPE is NEOX.
 * attention.head_count_kv may be an array (KV heads per layer).
 *
 * MoE layers (those with ffn_gate_inp): the dense FFN (ffn_norm, then
 * post_ffw_norm_1) runs beside expert_count GELU experts (pre_ffw_norm_2,
 * then post_ffw_norm_2), and their sum gets post_ffw_norm. The router reads
 * rms_norm(x) / sqrt(n_embd) * ffn_gate_inp.scale, not the experts' input;
 * softmax, the top expert_used_count renormalised, no weight scale; each
 * expert's down output times ffn_down_exps.scale (fwd_block_moe). */
#include "model/arch.h"

#include <math.h>

/* The layer whose cache a shared-KV layer reads (llama.cpp's layer_reuse
 * for gemma4): the last sliding layer, or the last full one, before them. */
static bool share_kv(model_loader *ld, model_hparams *hp, uint32_t n_shared)
{
    if (n_shared == 0)
        return true;
    if (n_shared + 2 > hp->n_layer)
        return ml_fail(ld, "%u shared KV layers leave fewer than 2 layers with a cache of their own", n_shared);
    hp->n_layer_kv = hp->n_layer - n_shared;
    for (uint32_t il = hp->n_layer_kv; il < hp->n_layer; il++) {
        const uint32_t src = hp->n_layer_kv - (hp->swa_layer[il] ? 2 : 1);
        if (hp->swa_layer[src] != hp->swa_layer[il])
            return ml_fail(ld, "shared KV layer %u (%s) would read layer %u, which is not of its kind", il,
                           hp->swa_layer[il] ? "sliding" : "full", src);
        hp->kv_layer[il] = (uint16_t)src;
    }
    return true;
}

static bool load_hparams(model_loader *ld, model_hparams *hp)
{
    if (!ml_bool_array(ld, "attention.sliding_window_pattern", hp->swa_layer, hp->n_layer))
        return ml_fail(ld, "gemma4: attention.sliding_window_pattern (one entry per layer) is missing");
    if (!ml_u32(ld, "attention.sliding_window", &hp->n_swa) || hp->n_swa == 0)
        return ml_fail(ld, "gemma4: attention.sliding_window is missing");
    ml_f32(ld, "rope.freq_base_swa", &hp->rope_freq_base_swa);
    uint32_t vlen = 0;
    if (!ml_u32(ld, "attention.key_length_swa", &hp->head_dim_swa) ||
        !ml_u32(ld, "attention.value_length_swa", &vlen) || vlen != hp->head_dim_swa || hp->head_dim_swa == 0 ||
        hp->head_dim_swa > 1024)
        return ml_fail(ld, "gemma4: attention.key_length_swa and value_length_swa must be present and equal");
    hp->n_rot_swa = hp->n_rot;
    ml_u32(ld, "rope.dimension_count_swa", &hp->n_rot_swa);
    if (hp->n_rot_swa > hp->head_dim_swa || hp->n_rot_swa % 2 != 0)
        return ml_fail(ld, "rope.dimension_count_swa %u does not fit the sliding layers' head size %u", hp->n_rot_swa,
                       hp->head_dim_swa);
    hp->rope_factors_full_only = true;
    uint32_t n_shared = 0;
    ml_u32(ld, "attention.shared_kv_layers", &n_shared);
    if (!share_kv(ld, hp, n_shared))
        return false;
    if (!ml_u32(ld, "embedding_length_per_layer_input", &hp->n_embd_per_layer))
        return ml_fail(ld, "gemma4: embedding_length_per_layer_input is missing");
    if ((uint64_t)hp->n_embd_per_layer * hp->n_layer > 65536)
        return ml_fail(ld, "per-layer embeddings of %u x %u layers are larger than tokscope supports",
                       hp->n_embd_per_layer, hp->n_layer);
    uint32_t n_expert = 0;
    if (ml_u32(ld, "expert_count", &n_expert) && n_expert > 0) {
        if (!ml_moe_hparams(ld, hp))
            return false;
        /* build_moe_ffn as gemma4 calls it: softmax, the top k renormalised, no scale */
        hp->moe_gating = MODEL_MOE_GATING_SOFTMAX;
        hp->moe_norm_w = true;
        hp->moe_w_scale = 1.0f;
        hp->moe_act = FWD_MOE_GELU;
    }
    ml_f32(ld, "final_logit_softcapping", &hp->logit_softcap);
    hp->embd_scale = sqrtf((float)hp->n_embd);
    hp->q_scale = 0.0f;  /* Gemma 4 scales nothing before attention */
    hp->kq_scale = 1.0f; /* and its softmax scale is 1 (f_attention_scale) */
    return true;
}

static bool load(model_loader *ld, model_hparams *hp, model_weights *w)
{
    if (!load_hparams(ld, hp))
        return false;
    const int64_t E = hp->n_embd, PL = hp->n_embd_per_layer;
    uint32_t n_ff[MODEL_MAX_LAYERS];
    if (!ml_u32_array(ld, "feed_forward_length", n_ff, hp->n_layer))
        return ml_fail(ld, "gemma4: feed_forward_length is missing");
    bool any_full = false;
    for (uint32_t il = 0; il < hp->n_layer; il++)
        any_full |= !hp->swa_layer[il];
    if (any_full) /* proportional RoPE of the full layers; one tensor for all of them */
        w->rope_freqs = ml_tensor(ld, -1, "rope_freqs.weight", hp->head_dim / 2, 1, ML_F32);
    if (PL > 0) {
        w->ple_tok_embd = ml_tensor(ld, -1, "per_layer_token_embd.weight", PL * hp->n_layer, hp->n_vocab, 0);
        w->ple_model_proj = ml_tensor(ld, -1, "per_layer_model_proj.weight", E, PL * hp->n_layer, 0);
        w->ple_proj_norm = ml_tensor(ld, -1, "per_layer_proj_norm.weight", PL, 1, ML_F32);
    }
    for (uint32_t il = 0; il < hp->n_layer && !ml_failed(ld); il++) {
        model_layer *L = &w->layers[il];
        const int l = (int)il;
        const int64_t HD = model_head_dim(hp, il), NQ = (int64_t)hp->n_head * HD;
        const int64_t KV = (int64_t)model_n_head_kv(hp, il) * HD;
        const bool own_kv = hp->kv_layer[il] == il;
        const unsigned kv_flags = own_kv ? 0 : ML_OPTIONAL;
        L->attn_norm = ml_tensor(ld, l, "attn_norm.weight", E, 1, ML_F32);
        L->wq = ml_tensor(ld, l, "attn_q.weight", E, NQ, 0);
        L->wk = ml_tensor(ld, l, "attn_k.weight", E, KV, kv_flags);
        L->wv = ml_tensor(ld, l, "attn_v.weight", E, KV, ML_OPTIONAL);
        L->wo = ml_tensor(ld, l, "attn_output.weight", NQ, E, 0);
        L->q_norm = ml_tensor(ld, l, "attn_q_norm.weight", HD, 1, ML_F32);
        L->k_norm = ml_tensor(ld, l, "attn_k_norm.weight", HD, 1, ML_F32 | kv_flags);
        if (!own_kv) /* a shared layer's own K/V weights, if a file has them, go unused, as in the reference */
            L->wk = L->wv = L->k_norm = NULL;
        L->attn_post_norm = ml_tensor(ld, l, "post_attention_norm.weight", E, 1, ML_F32);
        L->out_scale = ml_tensor(ld, l, "layer_output_scale.weight", 1, 1, ML_OPTIONAL | ML_F32);
        L->ffn_norm = ml_tensor(ld, l, "ffn_norm.weight", E, 1, ML_F32);
        L->ffn_gate = ml_tensor(ld, l, "ffn_gate.weight", E, n_ff[il], 0);
        L->ffn_up = ml_tensor(ld, l, "ffn_up.weight", E, n_ff[il], 0);
        L->ffn_down = ml_tensor(ld, l, "ffn_down.weight", n_ff[il], E, 0);
        L->ffn_post_norm = ml_tensor(ld, l, "post_ffw_norm.weight", E, 1, ML_F32);
        /* a MoE layer: the FFN above runs beside the experts (a shared expert) */
        if (hp->n_expert > 0 && ml_tensor(ld, l, "ffn_gate_inp.weight", E, hp->n_expert, ML_OPTIONAL)) {
            ml_moe(ld, L, il, hp);
            L->ffn_gate_inp_s = ml_tensor(ld, l, "ffn_gate_inp.scale", E, 1, ML_F32);
            L->ffn_pre_norm_2 = ml_tensor(ld, l, "pre_ffw_norm_2.weight", E, 1, ML_F32);
            L->ffn_post_norm_1 = ml_tensor(ld, l, "post_ffw_norm_1.weight", E, 1, ML_F32);
            L->ffn_post_norm_2 = ml_tensor(ld, l, "post_ffw_norm_2.weight", E, 1, ML_F32);
        }
        if (PL > 0) {
            L->ple_gate = ml_tensor(ld, l, "inp_gate.weight", E, PL, 0);
            L->ple_proj = ml_tensor(ld, l, "proj.weight", PL, E, 0);
            L->ple_post_norm = ml_tensor(ld, l, "post_norm.weight", E, 1, ML_F32);
        }
    }
    return !ml_failed(ld);
}

static void layer(fwd_graph *g, const model_hparams *hp, const model_layer *L, uint32_t il)
{
    fwd_norm(g, FWD_XB, FWD_X, L->attn_norm);
    if (hp->kv_layer[il] == il) {
        const gguf_tensor *ws[3] = {L->wq, L->wk, L->wv};
        const enum fwd_buf outs[3] = {FWD_Q, FWD_K, FWD_V};
        fwd_matmul(g, FWD_XB, L->wv ? 3 : 2, ws, outs);
        if (!L->wv)
            fwd_copy(g, FWD_V, FWD_K); /* K = V: the K projection before its norm */
        fwd_head_norm(g, FWD_Q, L->q_norm);
        fwd_rope(g, FWD_Q, il);
        fwd_head_norm(g, FWD_K, L->k_norm);
        fwd_head_norm(g, FWD_V, NULL);
        fwd_rope(g, FWD_K, il);
        fwd_kv_store(g, il);
    } else { /* a shared-KV layer: queries only, over the cache of hp->kv_layer[il] */
        fwd_matmul1(g, FWD_Q, FWD_XB, L->wq);
        fwd_head_norm(g, FWD_Q, L->q_norm);
        fwd_rope(g, FWD_Q, il);
    }
    fwd_attention(g, il); /* softmax(q k) v, within the window on sliding layers */
    fwd_matmul1(g, FWD_XB, FWD_ATT, L->wo);
    fwd_norm(g, FWD_XB, FWD_XB, L->attn_post_norm);
    fwd_add(g, FWD_X, FWD_XB);
    if (L->ffn_gate_inp) {
        /* the router reads its own input: rms_norm(x) / sqrt(n_embd) * scale */
        fwd_norm(g, FWD_XB2, FWD_X, NULL);
        fwd_scale(g, FWD_XB2, 1.0f / sqrtf((float)hp->n_embd));
        fwd_mul(g, FWD_XB2, L->ffn_gate_inp_s);
        fwd_norm(g, FWD_XB, FWD_X, L->ffn_pre_norm_2);
        fwd_moe moe = fwd_moe_of(hp, L); /* xb2 = the top-k GELU experts of xb, weighted */
        moe.router_in = FWD_XB2;
        moe.dst = FWD_XB2;
        fwd_block_moe(g, &moe);
        fwd_norm(g, FWD_XB2, FWD_XB2, L->ffn_post_norm_2);
        fwd_norm(g, FWD_XB, FWD_X, L->ffn_norm);
        fwd_block_ffn_geglu(g, L);
        fwd_norm(g, FWD_XB, FWD_XB, L->ffn_post_norm_1);
        fwd_add(g, FWD_XB, FWD_XB2); /* the dense FFN's and the experts' outputs */
    } else {
        fwd_norm(g, FWD_XB, FWD_X, L->ffn_norm);
        fwd_block_ffn_geglu(g, L);
    }
    fwd_norm(g, FWD_XB, FWD_XB, L->ffn_post_norm);
    fwd_add(g, FWD_X, FWD_XB);
    if (L->ple_gate)
        fwd_block_ple(g, L, il);
    if (L->out_scale)
        fwd_scale(g, FWD_X, *(const float *)L->out_scale->data);
}

const arch_def arch_gemma4 = {MODEL_ARCH_GEMMA4, "gemma4", MODEL_ROPE_NEOX, load, layer};
