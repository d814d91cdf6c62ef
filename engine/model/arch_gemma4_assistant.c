/* gemma4-assistant: the drafting file of a Gemma 4 target (llama.cpp's
 * src/models/gemma4-assistant.cpp), run by --spec mtp --draft-model FILE
 * (engine/spec/spec_g4assist.c) on a model_g4assist_view, never alone.
 *
 * Load rules: embedding_length_out is the target's n_embd (it must differ
 * from embedding_length), nextn_predict_layers equals block_count (every
 * block drafts). Layers are sliding or full as sliding_window_pattern says,
 * each kind with its own head size (key_length, key_length_swa; K and V
 * alike) and RoPE base (rope.freq_base, freq_base_swa); rope_freqs divides
 * the full layers' thetas. A layer has queries only: it attends over the
 * target's cache of the target's last layer of its kind. Tensors:
 * token_embd (the tied head; the input embeddings are the target's),
 * output_norm, nextn.pre_projection [2 n_embd_out -> n_embd],
 * nextn.post_projection [n_embd -> n_embd_out], per layer attn_norm,
 * attn_q, attn_q_norm, attn_output, post_attention_norm,
 * layer_output_scale, ffn_norm, ffn_gate, ffn_up, ffn_down, post_ffw_norm.
 * No per-layer embeddings, no logit soft-capping (the reference's graph has
 * neither), a softmax scale of 1, RoPE NEOX.
 *
 * Keys are checked too: one this file does not list is refused with its
 * name, since the reference's assistant graph reads few of a Gemma 4
 * converter's keys and a new one could mean a graph it does not build. */
#include "model/arch.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* The keys under gemma4-assistant.: those read, and those the converter
 * writes that the reference's assistant reads but does not use
 * (shared_kv_layers) or never reads (final_logit_softcapping,
 * embedding_length_per_layer_input: no such tensors here, checked below). */
static const char *const known_keys[] = {
    "context_length",
    "embedding_length",
    "embedding_length_out",
    "block_count",
    "nextn_predict_layers",
    "feed_forward_length",
    "attention.head_count",
    "attention.head_count_kv",
    "attention.key_length",
    "attention.value_length",
    "attention.key_length_swa",
    "attention.value_length_swa",
    "attention.layer_norm_rms_epsilon",
    "attention.sliding_window",
    "attention.sliding_window_pattern",
    "attention.shared_kv_layers",
    "rope.freq_base",
    "rope.freq_base_swa",
    "rope.dimension_count",
    "rope.dimension_count_swa",
    "final_logit_softcapping",
    "embedding_length_per_layer_input",
};

static bool check_keys(model_loader *ld, const gguf_ctx *g)
{
    static const char pfx[] = "gemma4-assistant.";
    for (int64_t i = 0; i < gguf_n_kv(g); i++) {
        const gguf_str k = gguf_kv_key(g, i);
        if (k.len <= sizeof pfx - 1 || memcmp(k.ptr, pfx, sizeof pfx - 1))
            continue;
        const char *rest = k.ptr + sizeof pfx - 1;
        const size_t n = k.len - (sizeof pfx - 1);
        bool known = false;
        for (size_t j = 0; !known && j < sizeof known_keys / sizeof known_keys[0]; j++)
            known = strlen(known_keys[j]) == n && !memcmp(known_keys[j], rest, n);
        if (!known)
            return ml_fail(ld,
                           "key '%.*s' is not known to tokscope's gemma4-assistant; refusing a file it may "
                           "not run as the reference does",
                           (int)(k.len > 120 ? 120 : k.len), k.ptr);
    }
    return true;
}

static bool load(model_loader *ld, model_hparams *hp, model_weights *w)
{
    if (!check_keys(ld, ml_gguf(ld)))
        return false;
    if (!ml_u32(ld, "embedding_length_out", &hp->n_embd_out) || hp->n_embd_out == 0 || hp->n_embd_out > 65536)
        return ml_fail(ld, "gemma4-assistant: embedding_length_out (the target's hidden size) is missing");
    if (hp->n_embd_out == hp->n_embd)
        return ml_fail(ld,
                       "gemma4-assistant: embedding_length_out must differ from embedding_length (%u), as "
                       "the reference requires",
                       hp->n_embd);
    uint32_t nextn = 0;
    ml_u32(ld, "nextn_predict_layers", &nextn);
    if (nextn != hp->n_layer)
        return ml_fail(ld, "gemma4-assistant: nextn_predict_layers %u must equal block_count %u", nextn,
                       hp->n_layer);
    if (!ml_bool_array(ld, "attention.sliding_window_pattern", hp->swa_layer, hp->n_layer))
        return ml_fail(ld,
                       "gemma4-assistant: attention.sliding_window_pattern (one entry per layer) is missing");
    if (!ml_u32(ld, "attention.sliding_window", &hp->n_swa) || hp->n_swa == 0)
        return ml_fail(ld, "gemma4-assistant: attention.sliding_window is missing");
    ml_f32(ld, "rope.freq_base_swa", &hp->rope_freq_base_swa);
    uint32_t vlen = 0;
    if (!ml_u32(ld, "attention.key_length_swa", &hp->head_dim_swa) ||
        !ml_u32(ld, "attention.value_length_swa", &vlen) || vlen != hp->head_dim_swa ||
        hp->head_dim_swa == 0 || hp->head_dim_swa > 1024)
        return ml_fail(ld,
                       "gemma4-assistant: attention.key_length_swa and value_length_swa must be present and "
                       "equal");
    hp->n_rot_swa = hp->n_rot;
    ml_u32(ld, "rope.dimension_count_swa", &hp->n_rot_swa);
    if (hp->n_rot_swa > hp->head_dim_swa || hp->n_rot_swa % 2 != 0)
        return ml_fail(ld, "rope.dimension_count_swa %u does not fit the sliding layers' head size %u",
                       hp->n_rot_swa, hp->head_dim_swa);
    uint32_t pl = 0;
    if (ml_u32(ld, "embedding_length_per_layer_input", &pl) && pl != 0)
        return ml_fail(ld,
                       "gemma4-assistant: embedding_length_per_layer_input %u: the reference's assistant has "
                       "no per-layer embeddings",
                       pl);
    hp->rope_factors_full_only = true;
    hp->embd_scale =
        sqrtf((float)hp->n_embd_out); /* the target's embeddings, scaled as the target scales them */
    hp->q_scale = 0.0f;
    hp->kq_scale = 1.0f;      /* f_attention_scale */
    hp->logit_softcap = 0.0f; /* the assistant's graph has none, whatever the file says */
    const int64_t E = hp->n_embd, B = hp->n_embd_out;
    uint32_t n_ff[MODEL_MAX_LAYERS];
    if (!ml_u32_array(ld, "feed_forward_length", n_ff, hp->n_layer))
        return ml_fail(ld, "gemma4-assistant: feed_forward_length is missing");
    bool any_full = false;
    for (uint32_t il = 0; il < hp->n_layer; il++)
        any_full |= !hp->swa_layer[il];
    if (any_full)
        w->rope_freqs = ml_tensor(ld, -1, "rope_freqs.weight", hp->head_dim / 2, 1, ML_F32);
    w->nextn_proj_pre = ml_tensor(ld, -1, "nextn.pre_projection.weight", 2 * B, E, 0);
    w->nextn_proj_post = ml_tensor(ld, -1, "nextn.post_projection.weight", E, B, 0);
    for (uint32_t il = 0; il < hp->n_layer && !ml_failed(ld); il++) {
        model_layer *L = &w->layers[il];
        const int l = (int)il;
        const int64_t HD = model_head_dim(hp, il), NQ = (int64_t)hp->n_head * HD;
        L->attn_norm = ml_tensor(ld, l, "attn_norm.weight", E, 1, ML_F32);
        L->wq = ml_tensor(ld, l, "attn_q.weight", E, NQ, 0);
        L->wo = ml_tensor(ld, l, "attn_output.weight", NQ, E, 0);
        L->q_norm = ml_tensor(ld, l, "attn_q_norm.weight", HD, 1, ML_F32);
        L->attn_post_norm = ml_tensor(ld, l, "post_attention_norm.weight", E, 1, ML_F32);
        L->out_scale = ml_tensor(ld, l, "layer_output_scale.weight", 1, 1, ML_F32);
        L->ffn_norm = ml_tensor(ld, l, "ffn_norm.weight", E, 1, ML_F32);
        L->ffn_gate = ml_tensor(ld, l, "ffn_gate.weight", E, n_ff[il], 0);
        L->ffn_up = ml_tensor(ld, l, "ffn_up.weight", E, n_ff[il], 0);
        L->ffn_down = ml_tensor(ld, l, "ffn_down.weight", n_ff[il], E, 0);
        L->ffn_post_norm = ml_tensor(ld, l, "post_ffw_norm.weight", E, 1, ML_F32);
    }
    return !ml_failed(ld);
}

/* llama_model_gemma4_assistant::graph's layer: queries only, over the
 * target's cache (forward_share_kv), the rest as a Gemma 4 layer without
 * per-layer embeddings. */
static void layer(fwd_graph *g, const model_hparams *hp, const model_layer *L, uint32_t il)
{
    (void)hp;
    fwd_norm(g, FWD_XB, FWD_X, L->attn_norm);
    fwd_matmul1(g, FWD_Q, FWD_XB, L->wq);
    fwd_head_norm(g, FWD_Q, L->q_norm);
    fwd_rope(g, FWD_Q, il);
    fwd_attention(g, il);
    fwd_matmul1(g, FWD_XB, FWD_ATT, L->wo);
    fwd_norm(g, FWD_XB, FWD_XB, L->attn_post_norm);
    fwd_add(g, FWD_X, FWD_XB);
    fwd_norm(g, FWD_XB, FWD_X, L->ffn_norm);
    fwd_block_ffn_geglu(g, L);
    fwd_norm(g, FWD_XB, FWD_XB, L->ffn_post_norm);
    fwd_add(g, FWD_X, FWD_XB);
    fwd_scale(g, FWD_X, *(const float *)L->out_scale->data);
}

const arch_def arch_gemma4_assistant = {MODEL_ARCH_GEMMA4_ASSISTANT, "gemma4-assistant", MODEL_ROPE_NEOX,
                                        load, layer};
