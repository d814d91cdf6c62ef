/* Per-layer embeddings (Gemma 4, llama.cpp's gemma4 graph): every layer
 * gets a small input of its own, n_embd_per_layer wide, built once per
 * token before the first layer and mixed into the residual at the end of
 * the layer.
 *
 * The inputs (build_inp_per_layer, project_per_layer_inputs): the token's
 * row of per_layer_token_embd (all layers' pieces side by side) times
 * sqrt(n_embd_per_layer), plus the scaled embeddings X projected by
 * per_layer_model_proj, times 1/sqrt(n_embd), each layer's piece RMS-normed
 * with per_layer_proj_norm; the sum times 1/sqrt(2). The layer's block:
 * gelu(inp_gate X) times its piece, projected back by proj, RMS-normed with
 * post_norm, added to X. Each float operation is a separate ggml op there
 * (scale, norm, mul, add), done here in the same order (forward_rows.c). */
#include "model/arch.h"
#include "model/forward_internal.h"

void fwd_ple_inputs(fwd_graph *g, const model_weights *w)
{
    fwd_matmul1(g, FWD_PLE, FWD_X, w->ple_model_proj);
    fwd_graph_row_op(g, (struct fwd_op){.kind = OP_PLE_INPUT, .dst = FWD_PLE, .w = w->ple_proj_norm});
}

void fwd_block_ple(fwd_graph *g, const model_layer *L, uint32_t il)
{
    fwd_matmul1(g, FWD_PLG, FWD_X, L->ple_gate);
    fwd_graph_row_op(g, (struct fwd_op){.kind = OP_PLE_GATE, .dst = FWD_PLG, .src = FWD_PLE, .il = il});
    fwd_matmul1(g, FWD_XB, FWD_PLG, L->ple_proj);
    fwd_norm(g, FWD_XB, FWD_XB, L->ple_post_norm);
    fwd_add(g, FWD_X, FWD_XB);
}
