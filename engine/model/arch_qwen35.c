/* qwen35: Qwen3.5 / 3.6, a hybrid of Gated DeltaNet and gated attention.
 *
 * Load rules: the layers marked by attention.recurrent_layers (or, without
 * that key, all but every full_attention_interval-th, default 4) are Gated
 * DeltaNet layers (ssm.* keys, forward_deltanet.c); the others are full
 * attention whose attn_q gives each head's query and an output gate
 * (sigmoid) side by side, with per-head Q/K norms and IMROPE over
 * rope.dimension_sections. Every layer has a post-attention norm before
 * its SiLU-gated FFN. nextn_predict_layers extra blocks (MTP, a draft head
 * llama.cpp never runs in a normal decode) follow block_count's trunk:
 * the first one drafts for --spec mtp (model_mtp_view, engine/spec/spec_mtp.c).
 *
 * As llama.cpp builds it, the rows without logits are dropped only after
 * the output norm (embeddings_nextn_masked is off), so the last layer's
 * matmuls see every row of the batch. */
#include <stdio.h>

#include "model/arch_qwen35.h"

/* The MTP block's tensors (llama_model_qwen35(moe)::load_block_mtp). The
 * first block's go into w->mtp and w->mtp_* for --spec mtp (model_mtp_view);
 * any further ones (the reference runs one) are claimed only. A file may
 * lack some: model_mtp_view says which. */
static void load_mtp(model_loader *ld, const model_hparams *hp, model_weights *w, uint32_t il, bool moe)
{
    const int64_t E = hp->n_embd, HD = hp->head_dim, NQ = (int64_t)hp->n_head * HD,
                  KV = (int64_t)hp->n_head_kv * HD, F = hp->n_ff, V = hp->n_vocab;
    const int l = (int)il;
    const unsigned o = ML_OPTIONAL;
    model_layer tmp = {0}, *L = il == hp->n_layer ? &w->mtp : &tmp;
    L->attn_norm = ml_tensor(ld, l, "attn_norm.weight", E, 1, o | ML_F32);
    L->ffn_norm = ml_tensor(ld, l, "post_attention_norm.weight", E, 1, o | ML_F32);
    L->wq = ml_tensor(ld, l, "attn_q.weight", E, 2 * NQ, o);
    L->wk = ml_tensor(ld, l, "attn_k.weight", E, KV, o);
    L->wv = ml_tensor(ld, l, "attn_v.weight", E, KV, o);
    L->wo = ml_tensor(ld, l, "attn_output.weight", NQ, E, o);
    L->q_norm = ml_tensor(ld, l, "attn_q_norm.weight", HD, 1, o | ML_F32);
    L->k_norm = ml_tensor(ld, l, "attn_k_norm.weight", HD, 1, o | ML_F32);
    if (moe) {
        const int64_t X = hp->n_expert, FE = hp->n_ff_exp, FS = hp->n_ff_shexp ? hp->n_ff_shexp : hp->n_ff;
        L->ffn_gate_inp = ml_tensor(ld, l, "ffn_gate_inp.weight", E, X, o);
        L->ffn_gate_up_exps = ml_tensor3(ld, l, "ffn_gate_up_exps.weight", E, 2 * FE, X, o);
        L->ffn_gate_exps = ml_tensor3(ld, l, "ffn_gate_exps.weight", E, FE, X, o);
        L->ffn_up_exps = ml_tensor3(ld, l, "ffn_up_exps.weight", E, FE, X, o);
        L->ffn_down_exps = ml_tensor3(ld, l, "ffn_down_exps.weight", FE, E, X, o);
        L->ffn_gate_inp_shexp = ml_tensor(ld, l, "ffn_gate_inp_shexp.weight", E, 1, o);
        L->ffn_gate_shexp = ml_tensor(ld, l, "ffn_gate_shexp.weight", E, FS, o);
        L->ffn_up_shexp = ml_tensor(ld, l, "ffn_up_shexp.weight", E, FS, o);
        L->ffn_down_shexp = ml_tensor(ld, l, "ffn_down_shexp.weight", FS, E, o);
    } else {
        L->ffn_gate = ml_tensor(ld, l, "ffn_gate.weight", E, F, o);
        L->ffn_up = ml_tensor(ld, l, "ffn_up.weight", E, F, o);
        L->ffn_down = ml_tensor(ld, l, "ffn_down.weight", F, E, o);
    }
    const gguf_tensor *eh = ml_tensor(ld, l, "nextn.eh_proj.weight", 2 * E, E, o);
    const gguf_tensor *en = ml_tensor(ld, l, "nextn.enorm.weight", E, 1, o | ML_F32);
    const gguf_tensor *hn = ml_tensor(ld, l, "nextn.hnorm.weight", E, 1, o | ML_F32);
    const gguf_tensor *et = ml_tensor(ld, l, "nextn.embed_tokens.weight", E, V, o);
    const gguf_tensor *hh = ml_tensor(ld, l, "nextn.shared_head_head.weight", E, V, o);
    const gguf_tensor *hnw = ml_tensor(ld, l, "nextn.shared_head_norm.weight", E, 1, o | ML_F32);
    if (L == &w->mtp) {
        w->mtp_eh_proj = eh;
        w->mtp_enorm = en;
        w->mtp_hnorm = hn;
        w->mtp_embed = et;
        w->mtp_head = hh;
        w->mtp_head_norm = hnw;
    }
}

static bool load_hparams(model_loader *ld, model_hparams *hp)
{
    const uint32_t n_all = hp->n_layer;
    if (!ml_u32(ld, "nextn_predict_layers", &hp->n_layer_nextn))
        hp->n_layer_nextn = 0;
    if (hp->n_layer_nextn >= n_all)
        return ml_fail(ld, "nextn_predict_layers %u leaves no layers of %u", hp->n_layer_nextn, n_all);
    hp->n_layer = n_all - hp->n_layer_nextn;

    if (!ml_i32_array(ld, "rope.dimension_sections", hp->rope_sections, 4))
        return ml_fail(ld, "%s.rope.dimension_sections is missing (required by architecture '%s')",
                       model_arch_name(hp->arch), model_arch_name(hp->arch));
    const int32_t *sec = hp->rope_sections;
    if (sec[0] < 0 || sec[1] < 0 || sec[2] < 0 || sec[3] < 0 || sec[0] + sec[1] + sec[2] + sec[3] <= 0 ||
        sec[0] + sec[1] + sec[2] <= 0)
        return ml_fail(ld, "rope.dimension_sections [%d, %d, %d, %d] are not usable", sec[0], sec[1], sec[2], sec[3]);
    hp->rope_imrope = true;

    if (!ml_u32(ld, "ssm.conv_kernel", &hp->ssm_d_conv) || !ml_u32(ld, "ssm.state_size", &hp->ssm_d_state) ||
        !ml_u32(ld, "ssm.group_count", &hp->ssm_n_group) || !ml_u32(ld, "ssm.time_step_rank", &hp->ssm_dt_rank) ||
        !ml_u32(ld, "ssm.inner_size", &hp->ssm_d_inner))
        return ml_fail(ld, "missing hyperparameter (%s.ssm.conv_kernel, state_size, group_count, "
                           "time_step_rank or inner_size)", model_arch_name(hp->arch));
    const uint32_t S = hp->ssm_d_state, HK = hp->ssm_n_group, HV = hp->ssm_dt_rank;
    if (hp->ssm_d_conv < 1 || hp->ssm_d_conv > 64 || S == 0 || S > 1024 || HK == 0 || HV == 0 || HV % HK != 0 ||
        HV > 4096 || hp->ssm_d_inner != S * HV)
        return ml_fail(ld, "Gated DeltaNet sizes not supported: conv_kernel %u, state_size %u, group_count %u, "
                           "time_step_rank %u, inner_size %u (value heads must be a multiple of key heads, "
                           "inner_size = state_size * time_step_rank)",
                       hp->ssm_d_conv, S, HK, HV, hp->ssm_d_inner);

    if (S > 256) /* forward_deltanet.c's DN_MAX_STATE */
        return ml_fail(ld, "Gated DeltaNet state_size %u is not supported (at most 256)", S);

    bool rec[MODEL_MAX_LAYERS] = {false};
    if (ml_bool_array(ld, "attention.recurrent_layers", rec, n_all)) {
        for (uint32_t il = 0; il < hp->n_layer; il++)
            hp->recurrent_layer[il] = rec[il];
    } else if (ml_failed(ld)) {
        return false;
    } else {
        uint32_t interval = 4;
        ml_u32(ld, "full_attention_interval", &interval);
        if (interval == 0)
            return ml_fail(ld, "full_attention_interval is 0");
        for (uint32_t il = 0; il < hp->n_layer; il++)
            hp->recurrent_layer[il] = (il + 1) % interval != 0;
    }
    return true;
}

bool qwen35_load(model_loader *ld, model_hparams *hp, model_weights *w, bool moe)
{
    if (!load_hparams(ld, hp))
        return false;
    if (moe) {
        if (!ml_moe_hparams(ld, hp))
            return false;
        /* build_moe_ffn's arguments for this architecture, whatever the file says */
        hp->moe_gating = MODEL_MOE_GATING_SOFTMAX;
        hp->moe_norm_w = true;
    }
    const int64_t E = hp->n_embd, HD = hp->head_dim, NQ = (int64_t)hp->n_head * HD;
    const int64_t S = hp->ssm_d_state, KD = S * hp->ssm_n_group, VD = hp->ssm_d_inner, HV = hp->ssm_dt_rank;
    for (uint32_t il = 0; il < hp->n_layer && !ml_failed(ld); il++) {
        model_layer *L = &w->layers[il];
        const int l = (int)il;
        L->attn_norm = ml_tensor(ld, l, "attn_norm.weight", E, 1, ML_F32);
        L->ffn_norm = ml_tensor(ld, l, "post_attention_norm.weight", E, 1, ML_F32);
        if (hp->recurrent_layer[il]) {
            L->wqkv = ml_tensor(ld, l, "attn_qkv.weight", E, 2 * KD + VD, 0);
            L->attn_gate = ml_tensor(ld, l, "attn_gate.weight", E, VD, 0);
            L->ssm_conv1d = ml_tensor(ld, l, "ssm_conv1d.weight", hp->ssm_d_conv, 2 * KD + VD, ML_F32);
            L->ssm_dt = ml_tensor(ld, l, "ssm_dt.bias", HV, 1, ML_F32);
            L->ssm_a = ml_tensor(ld, l, "ssm_a", HV, 1, ML_F32);
            L->ssm_beta = ml_tensor(ld, l, "ssm_beta.weight", E, HV, 0);
            L->ssm_alpha = ml_tensor(ld, l, "ssm_alpha.weight", E, HV, 0);
            L->ssm_norm = ml_tensor(ld, l, "ssm_norm.weight", S, 1, ML_F32);
            L->ssm_out = ml_tensor(ld, l, "ssm_out.weight", VD, E, 0);
        } else {
            const int64_t KV = (int64_t)hp->n_head_kv * HD;
            L->wq = ml_tensor(ld, l, "attn_q.weight", E, 2 * NQ, 0); /* query and gate, head by head */
            L->wk = ml_tensor(ld, l, "attn_k.weight", E, KV, 0);
            L->wv = ml_tensor(ld, l, "attn_v.weight", E, KV, 0);
            L->q_norm = ml_tensor(ld, l, "attn_q_norm.weight", HD, 1, ML_F32);
            L->k_norm = ml_tensor(ld, l, "attn_k_norm.weight", HD, 1, ML_F32);
            L->wo = ml_tensor(ld, l, "attn_output.weight", NQ, E, 0);
        }
        if (moe)
            ml_moe(ld, L, il, hp);
        else
            ml_ffn(ld, L, il, hp);
    }
    for (uint32_t il = hp->n_layer; il < hp->n_layer + hp->n_layer_nextn && !ml_failed(ld); il++)
        load_mtp(ld, hp, w, il, moe);
    return !ml_failed(ld);
}

/* llama_model_qwen35::graph::build_layer_attn: Q|gate, Q/K norms, IMROPE,
 * attention, times sigmoid(gate), output projection. */
static void attn_gated(fwd_graph *g, const model_layer *L, uint32_t il)
{
    const gguf_tensor *ws[3] = {L->wq, L->wk, L->wv};
    const enum fwd_buf outs[3] = {FWD_QKV, FWD_K, FWD_V};
    fwd_matmul(g, FWD_XB, 3, ws, outs);
    fwd_split_qgate(g);
    fwd_head_norm(g, FWD_Q, L->q_norm);
    fwd_head_norm(g, FWD_K, L->k_norm);
    fwd_rope(g, FWD_Q, il);
    fwd_rope(g, FWD_K, il);
    fwd_kv_store(g, il);
    fwd_attention(g, il);
    fwd_sigmoid_mul(g, FWD_ATT, FWD_GATE);
    fwd_matmul1(g, FWD_XB, FWD_ATT, L->wo);
}

void qwen35_layer(fwd_graph *g, const model_hparams *hp, const model_layer *L, uint32_t il, bool moe)
{
    fwd_norm(g, FWD_XB, FWD_X, L->attn_norm);
    if (hp->recurrent_layer[il])
        fwd_block_deltanet(g, L, il);
    else
        attn_gated(g, L, il);
    fwd_add(g, FWD_X, FWD_XB);
    fwd_norm(g, FWD_XB, FWD_X, L->ffn_norm); /* post_attention_norm */
    if (moe) { /* routed experts (softmax, top k renormalised) + the shared expert behind its sigmoid gate */
        const fwd_moe m = fwd_moe_of(hp, L);
        fwd_block_moe(g, &m);
    } else {
        fwd_block_ffn_swiglu(g, L);
    }
    fwd_add(g, FWD_X, FWD_XB);
    /* the rows without logits go after the output norm, which is per row:
     * dropping them here gives the same bits and the head the same rows */
    fwd_keep_out_rows(g, il);
}

static bool load(model_loader *ld, model_hparams *hp, model_weights *w) { return qwen35_load(ld, hp, w, false); }

static void layer(fwd_graph *g, const model_hparams *hp, const model_layer *L, uint32_t il)
{
    qwen35_layer(g, hp, L, il, false);
}

const arch_def arch_qwen35 = {MODEL_ARCH_QWEN35, "qwen35", MODEL_ROPE_NEOX, load, layer};
