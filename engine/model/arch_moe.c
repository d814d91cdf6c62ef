/* Loader rules a mixture-of-experts layer shares across architectures:
 * the expert counts and widths, then a layer's router, experts (3-D
 * tensors, one ne0 x ne1 matrix per expert) and shared expert. What they
 * compute is forward_graph.h's fwd_block_moe. */
#include "model/arch.h"

bool ml_moe_hparams(model_loader *ld, model_hparams *hp)
{
    if (!ml_u32(ld, "expert_count", &hp->n_expert) || !ml_u32(ld, "expert_used_count", &hp->n_expert_used))
        return ml_fail(ld, "missing hyperparameter (expert_count or expert_used_count)");
    if (hp->n_expert == 0 || hp->n_expert > MODEL_MAX_EXPERTS || hp->n_expert_used == 0 ||
        hp->n_expert_used > hp->n_expert)
        return ml_fail(ld, "inconsistent hyperparameters: expert_count %u, expert_used_count %u (at most %d experts)",
                       hp->n_expert, hp->n_expert_used, MODEL_MAX_EXPERTS);
    if (!ml_u32(ld, "expert_feed_forward_length", &hp->n_ff_exp) || hp->n_ff_exp == 0)
        hp->n_ff_exp = hp->n_ff / hp->n_expert_used;
    if (!ml_u32(ld, "expert_shared_feed_forward_length", &hp->n_ff_shexp))
        hp->n_ff_shexp = 0;
    if (hp->n_ff_exp == 0 || hp->n_ff_exp > 1 << 20 || hp->n_ff_shexp > 1 << 20)
        return ml_fail(ld, "inconsistent hyperparameters: expert_feed_forward_length %u, "
                       "expert_shared_feed_forward_length %u", hp->n_ff_exp, hp->n_ff_shexp);
    if (!ml_f32(ld, "expert_weights_scale", &hp->moe_w_scale))
        hp->moe_w_scale = 0.0f;
    return true;
}

bool ml_moe(model_loader *ld, model_layer *L, uint32_t il, const model_hparams *hp)
{
    const int l = (int)il;
    const int64_t E = hp->n_embd, F = hp->n_ff_exp, X = hp->n_expert;
    L->ffn_gate_inp = ml_tensor(ld, l, "ffn_gate_inp.weight", E, X, 0);
    L->ffn_gate_inp_b = ml_tensor(ld, l, "ffn_gate_inp.bias", X, 1, ML_OPTIONAL | ML_F32);
    L->ffn_gate_up_exps = ml_tensor3(ld, l, "ffn_gate_up_exps.weight", E, 2 * F, X, ML_OPTIONAL);
    if (L->ffn_gate_up_exps) {
        L->ffn_gate_up_exps_b = ml_tensor(ld, l, "ffn_gate_up_exps.bias", 2 * F, X, ML_OPTIONAL | ML_F32);
    } else {
        L->ffn_gate_exps = ml_tensor3(ld, l, "ffn_gate_exps.weight", E, F, X, 0);
        L->ffn_up_exps = ml_tensor3(ld, l, "ffn_up_exps.weight", E, F, X, 0);
        L->ffn_gate_exps_b = ml_tensor(ld, l, "ffn_gate_exps.bias", F, X, ML_OPTIONAL | ML_F32);
        L->ffn_up_exps_b = ml_tensor(ld, l, "ffn_up_exps.bias", F, X, ML_OPTIONAL | ML_F32);
        L->ffn_gate_exps_s = ml_tensor(ld, l, "ffn_gate_exps.scale", X, 1, ML_OPTIONAL | ML_F32);
        L->ffn_up_exps_s = ml_tensor(ld, l, "ffn_up_exps.scale", X, 1, ML_OPTIONAL | ML_F32);
    }
    L->ffn_down_exps = ml_tensor3(ld, l, "ffn_down_exps.weight", F, E, X, 0);
    L->ffn_down_exps_b = ml_tensor(ld, l, "ffn_down_exps.bias", E, X, ML_OPTIONAL | ML_F32);
    L->ffn_down_exps_s = ml_tensor(ld, l, "ffn_down_exps.scale", X, 1, ML_OPTIONAL | ML_F32);
    /* the shared expert: all three matrices and its gate, or none */
    const int64_t S = hp->n_ff_shexp ? hp->n_ff_shexp : hp->n_ff;
    L->ffn_up_shexp = ml_tensor(ld, l, "ffn_up_shexp.weight", E, S, ML_OPTIONAL);
    if (L->ffn_up_shexp) {
        L->ffn_gate_shexp = ml_tensor(ld, l, "ffn_gate_shexp.weight", E, S, 0);
        L->ffn_down_shexp = ml_tensor(ld, l, "ffn_down_shexp.weight", S, E, 0);
        L->ffn_gate_inp_shexp = ml_tensor(ld, l, "ffn_gate_inp_shexp.weight", E, 1, 0);
    }
    return !ml_failed(ld);
}
