/* The graph builder behind forward_graph.h: each recipe word appends a
 * step. A row op joins the previous step when that is a row step too, so
 * the norms, adds and RoPE between two matmuls cost one pass over the
 * tokens (one wake of the thread pool), whatever the recipe's wording. */
#include <stdlib.h>
#include <string.h>

#include "model/arch.h"
#include "model/forward_internal.h"

static struct fwd_step *push(fwd_graph *g, enum fwd_step_kind kind)
{
    if (g->oom)
        return NULL;
    if (!g->steps || g->n_steps == g->cap) {
        const size_t cap = g->steps && g->cap > 0 ? 2 * (size_t)g->cap : 64;
        struct fwd_step *s = cap < (1u << 24) ? realloc(g->steps, cap * sizeof *s) : NULL;
        if (!s) {
            g->oom = true;
            return NULL;
        }
        g->steps = s;
        g->cap = (int)cap;
    }
    struct fwd_step *st = &g->steps[g->n_steps++];
    memset(st, 0, sizeof *st);
    st->kind = kind;
    return st;
}

static void row_op(fwd_graph *g, struct fwd_op op)
{
    struct fwd_step *st = g->n_steps > 0 ? &g->steps[g->n_steps - 1] : NULL;
    if (!st || st->kind != STEP_ROWS || st->n_ops == FWD_MAX_OPS)
        st = push(g, STEP_ROWS);
    if (st)
        st->ops[st->n_ops++] = op;
}

struct fwd_step *fwd_graph_push(fwd_graph *g, enum fwd_step_kind kind) { return push(g, kind); }

void fwd_graph_row_op(fwd_graph *g, struct fwd_op op) { row_op(g, op); }

void fwd_embed(fwd_graph *g)
{
    row_op(g, (struct fwd_op){.kind = OP_EMBED, .dst = FWD_X});
}

void fwd_norm(fwd_graph *g, enum fwd_buf dst, enum fwd_buf src, const gguf_tensor *w)
{
    row_op(g, (struct fwd_op){.kind = OP_NORM, .dst = dst, .src = src, .w = w});
}

void fwd_head_norm(fwd_graph *g, enum fwd_buf buf, const gguf_tensor *w)
{
    row_op(g, (struct fwd_op){.kind = OP_HEAD_NORM, .dst = buf, .w = w, .il = g->il});
}

void fwd_add(fwd_graph *g, enum fwd_buf dst, enum fwd_buf src)
{
    row_op(g, (struct fwd_op){.kind = OP_ADD, .dst = dst, .src = src});
}

void fwd_bias(fwd_graph *g, enum fwd_buf buf, const gguf_tensor *b)
{
    row_op(g, (struct fwd_op){.kind = OP_BIAS, .dst = buf, .w = b});
}

void fwd_scale(fwd_graph *g, enum fwd_buf buf, float s)
{
    row_op(g, (struct fwd_op){.kind = OP_SCALE, .dst = buf, .s = s});
}

void fwd_rope(fwd_graph *g, enum fwd_buf buf, uint32_t il)
{
    row_op(g, (struct fwd_op){.kind = OP_ROPE, .dst = buf, .il = il});
}

void fwd_kv_store(fwd_graph *g, uint32_t il)
{
    if (g->rot_k)
        row_op(g, (struct fwd_op){.kind = OP_HADAMARD, .dst = FWD_K, .il = il});
    if (g->rot_v)
        row_op(g, (struct fwd_op){.kind = OP_HADAMARD, .dst = FWD_V, .il = il});
    row_op(g, (struct fwd_op){.kind = OP_KV_STORE, .dst = FWD_K, .src = FWD_V, .il = il});
}

void fwd_split_qkv(fwd_graph *g)
{
    row_op(g, (struct fwd_op){.kind = OP_SPLIT_QKV, .dst = FWD_Q, .src = FWD_QKV});
}

void fwd_swiglu(fwd_graph *g, enum fwd_buf dst, enum fwd_buf gate, enum fwd_buf up)
{
    row_op(g, (struct fwd_op){.kind = OP_SWIGLU, .dst = dst, .src = gate, .src2 = up});
}

void fwd_swiglu_fused(fwd_graph *g, enum fwd_buf dst, enum fwd_buf gate_up)
{
    row_op(g, (struct fwd_op){.kind = OP_SWIGLU_FUSED, .dst = dst, .src = gate_up});
}

void fwd_geglu(fwd_graph *g, enum fwd_buf dst, enum fwd_buf gate, enum fwd_buf up)
{
    row_op(g, (struct fwd_op){.kind = OP_GEGLU, .dst = dst, .src = gate, .src2 = up});
}

void fwd_softcap(fwd_graph *g, enum fwd_buf buf, float c)
{
    row_op(g, (struct fwd_op){.kind = OP_SOFTCAP, .dst = buf, .s = c});
}

void fwd_mul(fwd_graph *g, enum fwd_buf buf, const gguf_tensor *w)
{
    row_op(g, (struct fwd_op){.kind = OP_MUL, .dst = buf, .w = w});
}

void fwd_copy(fwd_graph *g, enum fwd_buf dst, enum fwd_buf src)
{
    row_op(g, (struct fwd_op){.kind = OP_COPY, .dst = dst, .src = src});
}

void fwd_split_qgate(fwd_graph *g)
{
    row_op(g, (struct fwd_op){.kind = OP_SPLIT_QGATE, .dst = FWD_Q, .src = FWD_QKV, .src2 = FWD_GATE});
    if (g->width[FWD_Q] > g->width[FWD_GATE])
        g->width[FWD_GATE] = g->width[FWD_Q];
}

void fwd_sigmoid_mul(fwd_graph *g, enum fwd_buf dst, enum fwd_buf gate)
{
    row_op(g, (struct fwd_op){.kind = OP_SIGMOID_MUL, .dst = dst, .src = gate});
}

void fwd_matmul(fwd_graph *g, enum fwd_buf in, int n, const gguf_tensor *const *ws, const enum fwd_buf *outs)
{
    struct fwd_step *st = push(g, STEP_MATMUL);
    if (!st)
        return;
    st->in = in;
    st->n_seg = n;
    for (int s = 0; s < n; s++) {
        st->w[s] = ws[s];
        st->out[s] = outs[s];
        if (ws[s]->ne[1] > g->width[outs[s]])
            g->width[outs[s]] = ws[s]->ne[1];
        if (ws[s]->ne[0] > g->max_in)
            g->max_in = ws[s]->ne[0];
    }
}

void fwd_matmul1(fwd_graph *g, enum fwd_buf out, enum fwd_buf in, const gguf_tensor *w)
{
    fwd_matmul(g, in, 1, &w, &out);
}

void fwd_attention(fwd_graph *g, uint32_t il)
{
    /* the queries as the (rotated) keys they meet; the output rotated back */
    if (g->rot_k)
        row_op(g, (struct fwd_op){.kind = OP_HADAMARD, .dst = FWD_Q, .il = il});
    struct fwd_step *st = push(g, STEP_ATTN);
    if (st)
        st->il = il;
    if (g->rot_v)
        row_op(g, (struct fwd_op){.kind = OP_HADAMARD, .dst = FWD_ATT, .il = il});
}

void fwd_deltanet(fwd_graph *g, uint32_t il)
{
    struct fwd_step *st = push(g, STEP_DELTANET);
    if (st)
        st->il = il;
    g->width[FWD_DN] = g->hp->ssm_d_inner;
}

void fwd_keep_out_rows(fwd_graph *g, uint32_t il)
{
    if (il + 1 == g->n_layer && push(g, STEP_KEEP_OUT))
        g->kept_out = true;
}

/* ---- shared blocks ---------------------------------------------------------- */

void fwd_block_qkv_rope(fwd_graph *g, const model_layer *L, uint32_t il)
{
    if (L->wqkv) {
        fwd_matmul1(g, FWD_QKV, FWD_XB, L->wqkv);
        fwd_split_qkv(g);
    } else {
        const gguf_tensor *ws[3] = {L->wq, L->wk, L->wv};
        const enum fwd_buf outs[3] = {FWD_Q, FWD_K, FWD_V};
        fwd_matmul(g, FWD_XB, 3, ws, outs);
    }
    if (L->bq) {
        fwd_bias(g, FWD_Q, L->bq);
        fwd_bias(g, FWD_K, L->bk);
        fwd_bias(g, FWD_V, L->bv);
    }
    if (L->q_norm)
        fwd_head_norm(g, FWD_Q, L->q_norm);
    if (L->k_norm)
        fwd_head_norm(g, FWD_K, L->k_norm);
    fwd_rope(g, FWD_Q, il);
    fwd_rope(g, FWD_K, il);
    fwd_kv_store(g, il);
}

void fwd_block_ffn_swiglu(fwd_graph *g, const model_layer *L)
{
    if (L->ffn_gate) {
        const gguf_tensor *ws[2] = {L->ffn_gate, L->ffn_up};
        const enum fwd_buf outs[2] = {FWD_HB, FWD_HB2};
        fwd_matmul(g, FWD_XB, 2, ws, outs);
        fwd_swiglu(g, FWD_HB, FWD_HB, FWD_HB2);
    } else { /* ffn_up holds the gate rows, then the up rows */
        fwd_matmul1(g, FWD_HB2, FWD_XB, L->ffn_up);
        fwd_swiglu_fused(g, FWD_HB, FWD_HB2);
    }
    fwd_matmul1(g, FWD_XB, FWD_HB, L->ffn_down);
}

void fwd_block_deltanet(fwd_graph *g, const model_layer *L, uint32_t il)
{
    const gguf_tensor *ws[3] = {L->wqkv, L->attn_gate, L->ssm_beta};
    const enum fwd_buf outs[3] = {FWD_QKV, FWD_GATE, FWD_BETA};
    fwd_matmul(g, FWD_XB, 3, ws, outs);
    fwd_matmul1(g, FWD_ALPHA, FWD_XB, L->ssm_alpha);
    fwd_deltanet(g, il);
    fwd_matmul1(g, FWD_XB, FWD_DN, L->ssm_out);
}

void fwd_block_ffn_geglu(fwd_graph *g, const model_layer *L)
{
    const gguf_tensor *ws[2] = {L->ffn_gate, L->ffn_up};
    const enum fwd_buf outs[2] = {FWD_HB, FWD_HB2};
    fwd_matmul(g, FWD_XB, 2, ws, outs);
    fwd_geglu(g, FWD_HB, FWD_HB, FWD_HB2);
    fwd_matmul1(g, FWD_XB, FWD_HB, L->ffn_down);
}

/* ---- the whole model ---------------------------------------------------------- */

/* The output norm and head on the residual X (LOGITS = head(norm(X))).
 * A recipe that never dropped the rows without logits (fwd_keep_out_rows)
 * drops them after the output norm, where llama.cpp's graphs without the
 * early get_rows do (gemma4): the last layer then runs on every row. */
static void head(fwd_graph *g, const model_hparams *hp, const model_weights *w, bool final)
{
    fwd_norm(g, FWD_XB, FWD_X, w->output_norm);
    if (final && !g->kept_out && push(g, STEP_KEEP_OUT))
        g->kept_out = true;
    fwd_matmul1(g, FWD_LOGITS, FWD_XB, w->output);
    if (hp->logit_softcap != 0.0f)
        fwd_softcap(g, FWD_LOGITS, hp->logit_softcap);
    if (final && w->g4assist_input) { /* gemma4-assistant's h_nextn: nextn_proj_post . result_norm */
        fwd_matmul1(g, FWD_XB2, FWD_XB, w->nextn_proj_post);
        row_op(g, (struct fwd_op){.kind = OP_H_OUTPUT, .src = FWD_XB2});
    }
}

bool fwd_graph_build(fwd_graph *g, const model *m, int rot_k, int rot_v)
{
    return fwd_graph_build_ex(g, m, rot_k, rot_v, model_get_hparams(m)->n_layer, false);
}

bool fwd_graph_build_ex(fwd_graph *g, const model *m, int rot_k, int rot_v, uint32_t n_layer, bool lens)
{
    const model_hparams *hp = model_get_hparams(m);
    const model_weights *w = model_get_weights(m);
    const arch_def *a = arch_get(hp->arch);
    memset(g, 0, sizeof *g);
    g->hp = hp;
    g->n_layer = n_layer < hp->n_layer ? n_layer : hp->n_layer;
    g->rot_k = rot_k;
    g->rot_v = rot_v;
    const int64_t NQ = (int64_t)hp->n_head * hp->head_dim, KV = (int64_t)hp->n_head_kv * hp->head_dim;
    g->width[FWD_X] = g->width[FWD_XB] = g->width[FWD_XB2] = hp->n_embd;
    g->width[FWD_ATT] = g->width[FWD_Q] = NQ;
    g->width[FWD_K] = g->width[FWD_V] = KV;
    g->width[FWD_HB] = g->width[FWD_HB2] = hp->n_ff;
    g->width[FWD_LOGITS] = hp->n_vocab;
    if (w->g4assist_input) { /* gemma4-assistant: X = nextn_proj_pre . [target embedding | h] */
        const int64_t B2 = 2 * (int64_t)hp->n_embd_out;
        if (g->width[FWD_HB2] < B2)
            g->width[FWD_HB2] = B2;
        if (g->width[FWD_XB2] < (int64_t)hp->n_embd_out)
            g->width[FWD_XB2] = hp->n_embd_out;
        row_op(g, (struct fwd_op){.kind = OP_G4A_INPUT, .dst = FWD_HB2});
        fwd_matmul1(g, FWD_X, FWD_HB2, w->nextn_proj_pre);
    } else {
        fwd_embed(g);
    }
    if (w->ple_tok_embd)
        fwd_ple_inputs(g, w);
    if (w->mtp_input) { /* llama_model_qwen35::graph_mtp: X = eh_proj . [enorm(e) | hnorm(h)] */
        fwd_norm(g, FWD_XB, FWD_X, w->mtp_enorm);
        row_op(g, (struct fwd_op){.kind = OP_H_INPUT, .dst = FWD_XB2});
        fwd_norm(g, FWD_XB2, FWD_XB2, w->mtp_hnorm);
        if (g->width[FWD_HB2] < 2 * (int64_t)hp->n_embd)
            g->width[FWD_HB2] = 2 * (int64_t)hp->n_embd;
        row_op(g, (struct fwd_op){.kind = OP_CAT, .dst = FWD_HB2, .src = FWD_XB, .src2 = FWD_XB2});
        fwd_matmul1(g, FWD_X, FWD_HB2, w->mtp_eh_proj);
    }
    for (uint32_t il = 0; il < g->n_layer; il++) {
        g->il = il;
        a->layer(g, hp, &w->layers[il], il);
        if (lens && il + 1 < g->n_layer) {
            /* the head reads X and writes XB and LOGITS, which the next
             * block's first norm overwrites anyway */
            head(g, hp, w, false);
            struct fwd_step *st = push(g, STEP_LENS);
            if (st)
                st->il = il;
        }
    }
    head(g, hp, w, true);
    if (lens) {
        struct fwd_step *st = push(g, STEP_LENS);
        if (st)
            st->il = g->n_layer - 1;
    }
    g->width[FWD_LOGITS] = hp->n_vocab;
    return !g->oom;
}

void fwd_graph_free(fwd_graph *g)
{
    free(g->steps);
    g->steps = NULL;
    g->n_steps = g->cap = 0;
    free(g->moe);
    g->moe = NULL;
    g->n_moe = g->cap_moe = 0;
}
