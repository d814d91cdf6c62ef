/* Gemma 4 (arch_gemma4.c, forward_ple.c): the keys read as llama.cpp reads
 * them (head sizes per layer kind, shared KV layers, per-layer FFN widths
 * and KV heads, the MoE variant's tensors and routing),
 * shared-KV layers store nothing and read the right layer's cache, the rows
 * without logits are dropped after the output norm, the paths agree bit for
 * bit, and a quantized cache is refused. The logits themselves are checked
 * against llama.cpp by golden/families2026. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "model/forward.h"
#include "model/forward_internal.h"
#include "model/model.h"
#include "testutil.h"

#define DENSE "families2026/models/gemma4-mini-q8_0.gguf"
#define MOE "families2026/models/gemma4moe-mini-q8_0.gguf"

static model *load(const char *rel)
{
    const char *path = TESTDATA_REQUIRE(rel);
    char err[512];
    model *m = model_load_weights_only(path, err, sizeof err);
    if (!m) {
        fail_msg("%s", err);
        abort();
    }
    return m;
}

static forward_ctx *build(const model *m, uint32_t n_ctx, uint32_t n_batch)
{
    forward_params p = forward_default_params();
    p.n_ctx = n_ctx;
    p.n_batch = n_batch;
    p.n_threads = 2;
    char err[512];
    forward_ctx *f = forward_build(m, &p, err, sizeof err);
    if (!f) {
        fail_msg("%s", err);
        abort();
    }
    return f;
}

/* dense: 8 layers, sliding x3 + full, head 32 / 64, the last 4 share KV */
static void test_hparams(void **s)
{
    (void)s;
    model *m = load(DENSE);
    const model_hparams *hp = model_get_hparams(m);
    assert_int_equal(hp->n_layer, 8);
    assert_int_equal(hp->head_dim, 64);
    assert_int_equal(hp->head_dim_swa, 32);
    assert_int_equal(hp->n_rot, 64);
    assert_int_equal(hp->n_rot_swa, 32);
    assert_int_equal(hp->n_ff, 512); /* the widest of 256 x 4, 512 x 4 */
    assert_int_equal(hp->n_embd_per_layer, 16);
    assert_int_equal(hp->n_swa, 8);
    assert_true(hp->kq_scale == 1.0f);
    assert_true(hp->rope_factors_full_only);
    for (uint32_t l = 0; l < 8; l++) {
        assert_int_equal(hp->swa_layer[l], l % 4 != 3);
        assert_int_equal(model_head_dim(hp, l), l % 4 == 3 ? 64 : 32);
    }
    /* llama.cpp's layer_reuse: the last sliding layer (2) or full one (3) */
    assert_int_equal(hp->n_layer_kv, 4);
    const uint16_t want[8] = {0, 1, 2, 3, 2, 2, 2, 3};
    for (uint32_t l = 0; l < 8; l++)
        assert_int_equal(hp->kv_layer[l], want[l]);
    model_free(m);
}

/* MoE: KV heads per layer (head_count_kv is an array), K = V on the full
 * layer, every layer's experts beside its dense FFN, gemma4's routing */
static void test_moe_hparams(void **s)
{
    (void)s;
    model *m = load(MOE);
    const model_hparams *hp = model_get_hparams(m);
    const model_weights *w = model_get_weights(m);
    assert_int_equal(hp->n_layer, 6);
    assert_int_equal(hp->n_head_kv, 2);
    for (uint32_t l = 0; l < 6; l++) {
        assert_int_equal(model_n_head_kv(hp, l), l == 5 ? 1 : 2);
        assert_int_equal(hp->kv_layer[l], l); /* no shared KV layers */
        const model_layer *L = &w->layers[l];
        assert_non_null(L->wk);
        assert_true((L->wv == NULL) == (l == 5)); /* K = V on the full layer */
        assert_non_null(L->ffn_gate_inp);
        assert_non_null(L->ffn_gate_inp_s);
        assert_non_null(L->ffn_gate_up_exps);
        assert_non_null(L->ffn_down_exps_s);
        assert_non_null(L->ffn_gate); /* the dense FFN beside them */
    }
    assert_int_equal(hp->n_expert, 8);
    assert_int_equal(hp->n_expert_used, 2);
    assert_int_equal(hp->n_ff_exp, 64);
    assert_int_equal(hp->moe_gating, MODEL_MOE_GATING_SOFTMAX);
    assert_true(hp->moe_norm_w);
    assert_int_equal(hp->n_embd_per_layer, 0);
    assert_null(w->ple_tok_embd);
    /* each layer's cache has its own KV heads: 5 x 2 of 32, 1 x 1 of 64 */
    forward_ctx *f = build(m, 64, 0);
    assert_int_equal(forward_kv_cache_bytes(f), (size_t)64 * 2 * 2 * (5 * 2 * 32 + 64));
    forward_free(f);
    model_free(m);
}

/* Shared-KV layers must not write a cache (theirs is the earlier layer's)
 * and must attend over the right one; only the owners' caches take memory. */
static void test_shared_kv(void **s)
{
    (void)s;
    model *m = load(DENSE);
    forward_ctx *f = build(m, 64, 0);
    int stores[8] = {0}, attns[8] = {0};
    for (int i = 0; i < f->graph.n_steps; i++) {
        const struct fwd_step *st = &f->graph.steps[i];
        if (st->kind == STEP_ATTN)
            attns[st->il]++;
        for (int o = 0; st->kind == STEP_ROWS && o < st->n_ops; o++)
            if (st->ops[o].kind == OP_KV_STORE)
                stores[st->ops[o].il]++;
    }
    for (int l = 0; l < 8; l++) {
        assert_int_equal(stores[l], l < 4);
        assert_int_equal(attns[l], 1);
    }
    assert_ptr_equal(f->k_cache[4], f->k_cache[2]);
    assert_ptr_equal(f->v_cache[6], f->v_cache[2]);
    assert_ptr_equal(f->k_cache[7], f->k_cache[3]);
    assert_ptr_not_equal(f->k_cache[2], f->k_cache[3]);
    /* 3 sliding layers of 32-wide heads, 1 full of 64, K and V in F16 */
    assert_int_equal(forward_kv_cache_bytes(f), (size_t)64 * 2 * 2 * (3 * 32 + 64));
    forward_free(f);
    model_free(m);
}

/* The reference's gemma4 graph keeps every row through the last layer and
 * selects the rows with logits after the output norm: the step that drops
 * them comes right before the head's matmul, after every layer. */
static void test_rows_dropped_after_output_norm(void **s)
{
    (void)s;
    model *m = load(DENSE);
    forward_ctx *f = build(m, 64, 0);
    int keep = -1, last_attn = -1, n_keep = 0;
    for (int i = 0; i < f->graph.n_steps; i++) {
        if (f->graph.steps[i].kind == STEP_KEEP_OUT) {
            keep = i;
            n_keep++;
        }
        if (f->graph.steps[i].kind == STEP_ATTN)
            last_attn = i;
    }
    assert_int_equal(n_keep, 1);
    assert_true(keep > last_attn);
    assert_true(keep + 1 < f->graph.n_steps);
    const struct fwd_step *head = &f->graph.steps[keep + 1];
    assert_int_equal(head->kind, STEP_MATMUL);
    assert_ptr_equal(head->w[0], model_get_weights(m)->output);
    forward_free(f);
    model_free(m);
}

static const int32_t seq[] = {1, 403, 407, 261, 378, 432, 383, 286, 261, 392, 308, 312, 274, 410, 402, 266, 357};
#define N_SEQ ((int32_t)(sizeof seq / sizeof seq[0]))

/* All at once, in batches of 3 and one token at a time: the same bits
 * (Q8_0 weights), over 17 tokens that cross the window of 8. */
static void test_paths_agree(void **s)
{
    (void)s;
    model *m = load(DENSE);
    const int32_t V = model_get_hparams(m)->n_vocab;
    const size_t n = (size_t)N_SEQ * V;
    float *all = malloc(n * sizeof(float)), *b3 = malloc(n * sizeof(float)), *one = malloc(n * sizeof(float));
    char err[256];
    forward_ctx *f = build(m, 64, 0);
    assert_int_equal(forward_eval(f, seq, N_SEQ, 0, all, true, err, sizeof err), 0);
    forward_free(f);
    f = build(m, 64, 3);
    assert_int_equal(forward_eval(f, seq, N_SEQ, 0, b3, true, err, sizeof err), 0);
    forward_free(f);
    f = build(m, 64, 0);
    for (int32_t p = 0; p < N_SEQ; p++)
        assert_int_equal(forward_eval(f, seq + p, 1, p, one + (size_t)p * V, false, err, sizeof err), 0);
    forward_free(f);
    assert_memory_equal(all, b3, n * sizeof(float));
    assert_memory_equal(all, one, n * sizeof(float));
    assert_memory_not_equal(all, all + (size_t)(N_SEQ - 1) * V, (size_t)V * sizeof(float));
    free(all);
    free(b3);
    free(one);
    model_free(m);
}

/* A logit lens evaluation that keeps the cache restores every owner's rows
 * (per-kind head sizes, shared layers skipped): the next token's logits are
 * those of a plain run. */
static void test_lens_keeps_cache(void **s)
{
    (void)s;
    model *m = load(DENSE);
    const int32_t V = model_get_hparams(m)->n_vocab;
    float *a = malloc((size_t)V * sizeof(float)), *b = malloc((size_t)V * sizeof(float));
    float *lens = malloc((size_t)4 * V * sizeof(float));
    char err[256];
    forward_ctx *f = build(m, 64, 0);
    assert_int_equal(forward_eval(f, seq, 10, 0, a, false, err, sizeof err), 0);
    assert_int_equal(forward_eval(f, seq + 10, 1, 10, a, false, err, sizeof err), 0);
    /* other tokens at positions 6..9, cache kept, then position 10 again */
    const int32_t other[4] = {300, 301, 302, 303};
    assert_int_equal(forward_eval_lens(f, other, 4, 6, lens, true, NULL, NULL, err, sizeof err), 0);
    assert_int_equal(forward_eval(f, seq + 10, 1, 10, b, false, err, sizeof err), 0);
    assert_memory_equal(a, b, (size_t)V * sizeof(float));
    forward_free(f);
    free(a);
    free(b);
    free(lens);
    model_free(m);
}

/* A quantized cache: each kind's rows at its own head size (the sliding
 * layers' 32 hold one Q8_0 block per head, the full layers' 64 two), and no
 * Walsh-Hadamard rotation, which llama.cpp decides from layer 0's head
 * size (a sliding layer's 32, not a multiple of 64) for both kinds.
 * tests/golden/kvcache2026.sh holds the numbers to the reference. */
static void test_quantized_cache(void **s)
{
    (void)s;
    model *m = load(DENSE);
    const model_hparams *hp = model_get_hparams(m);
    forward_params p = forward_default_params();
    p.n_ctx = 64;
    p.kv_type = p.v_type = TENSOR_TYPE_Q8_0;
    char err[512] = "";
    forward_ctx *f = forward_build(m, &p, err, sizeof err);
    if (!f)
        fail_msg("%s", err);
    assert_int_equal(f->rot_k, 0);
    assert_int_equal(f->rot_v, 0);
    size_t want = 0;
    for (uint32_t l = 0; l < hp->n_layer; l++) {
        if (hp->kv_layer[l] != l)
            continue; /* shared: reads another layer's cache */
        assert_int_equal(forward_k_head(f, l), (size_t)model_head_dim(hp, l) / 32 * 34);
        want += (size_t)p.n_ctx * model_n_head_kv(hp, l) * 2 * forward_k_head(f, l);
    }
    assert_int_equal(forward_kv_cache_bytes(f), want);
    forward_free(f);
    /* the Hadamard pieces are sized per layer (64 is the V rotation's) */
    assert_int_equal(fwd_rot_size(1, 32 * 8), 256);
    assert_int_equal(fwd_rot_size(1, 512), 512);
    assert_int_equal(fwd_rot_size(1, 64 * 3), 64);
    assert_int_equal(fwd_rot_size(0, 512), 64);
    model_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hparams),
        cmocka_unit_test(test_moe_hparams),
        cmocka_unit_test(test_shared_kv),
        cmocka_unit_test(test_rows_dropped_after_output_norm),
        cmocka_unit_test(test_paths_agree),
        cmocka_unit_test(test_lens_keeps_cache),
        cmocka_unit_test(test_quantized_cache),
    };
    return cmocka_run_group_tests_name("gemma4", tests, NULL, NULL);
}
