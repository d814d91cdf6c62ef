/* The logit lens (engine/model/forward_lens.c): every block's logits of a
 * lens evaluation are those of the model cut to that many blocks, the last
 * block's are the model's own, in every architecture; a lens on a cached
 * position leaves the cache as it was; bad layers are refused. (The cut
 * evaluation against a file really cut to n blocks, and against the
 * reference's run of that file: tests/golden/lens.sh.) */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/forward.h"
#include "model/forward_internal.h"
#include "model/model.h"
#include "testutil.h"

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

/* token ids valid in every shared vocabulary (>= 512 entries) */
static const int32_t seq[] = {1,   403, 407, 261, 378, 432, 383, 286, 261, 392,
                              308, 312, 274, 410, 402, 266, 357, 311, 290};
#define N_SEQ ((int32_t)(sizeof seq / sizeof seq[0]))

typedef struct lens_log {
    int32_t n_vocab, n_layer, n_rows;
    float *rows; /* [layer - 1][row] n_vocab floats */
    int calls;
    bool bad_order;
    int32_t last_layer;
} lens_log;

static void collect(void *user, int32_t layer, int32_t row0, int32_t n_rows, const float *logits)
{
    lens_log *l = user;
    l->calls++;
    if (layer < 1 || layer > l->n_layer || row0 < 0 || row0 + n_rows > l->n_rows) {
        l->bad_order = true;
        return;
    }
    if (row0 == 0 && layer != l->last_layer + 1 && !(layer == 1 && l->last_layer == l->n_layer))
        l->bad_order = true; /* blocks come in order within a batch */
    l->last_layer = layer;
    memcpy(l->rows + ((size_t)(layer - 1) * l->n_rows + row0) * l->n_vocab, logits,
           (size_t)n_rows * l->n_vocab * sizeof(float));
}

/* Batches of n_batch (0: one batch): every block's lens logits are
 * forward_eval_cut's, bit for bit, and the last block's forward_eval's. */
static void check_model(const char *rel, uint32_t n_batch)
{
    model *m = load(rel);
    const model_hparams *hp = model_get_hparams(m);
    const int32_t V = hp->n_vocab, L = (int32_t)hp->n_layer;
    const size_t row = (size_t)V * sizeof(float);
    lens_log lg = {V, L, N_SEQ, malloc((size_t)L * N_SEQ * row), 0, false, 0};
    float *own = malloc(N_SEQ * row), *cut = malloc(N_SEQ * row), *full = malloc(N_SEQ * row);
    assert_non_null(lg.rows);
    char err[256];
    forward_ctx *f = build(m, 64, n_batch);
    assert_int_equal(forward_eval_lens(f, seq, N_SEQ, 0, own, false, collect, &lg, err, sizeof err), 0);
    assert_false(lg.bad_order);
    const int32_t batches = n_batch ? (N_SEQ + (int32_t)n_batch - 1) / (int32_t)n_batch : 1;
    assert_int_equal(lg.calls, L * batches);
    assert_int_equal(forward_eval(f, seq, N_SEQ, 0, full, true, err, sizeof err), 0);
    assert_memory_equal(own, full, N_SEQ * row);
    assert_memory_equal(lg.rows + (size_t)(L - 1) * N_SEQ * V, full, N_SEQ * row);
    bool differ = false;
    for (int32_t l = 1; l <= L; l++) {
        assert_int_equal(forward_eval_cut(f, l, seq, N_SEQ, 0, cut, true, err, sizeof err), 0);
        assert_memory_equal(lg.rows + (size_t)(l - 1) * N_SEQ * V, cut, N_SEQ * row);
        differ |= l < L && memcmp(cut, full, N_SEQ * row) != 0;
    }
    assert_true(differ); /* the blocks do something: the lens is not the output everywhere */
    /* the cut model's own rounding with logits for the last row only */
    assert_int_equal(forward_eval_cut(f, 1, seq, N_SEQ, 0, cut, false, err, sizeof err), 0);
    assert_true(isfinite(cut[0]));
    forward_free(f);
    free(own);
    free(cut);
    free(full);
    free(lg.rows);
    model_free(m);
}

static void test_lens_llama(void **s)
{
    (void)s;
    check_model("models/stories260K.gguf", 0);
    check_model("models/tiny-spm-mix.gguf", 5); /* every block type, batches of 5 */
}

static void test_lens_families(void **s)
{
    (void)s;
    check_model("models/llama3-mini-q8_0.gguf", 0);
    check_model("models/qwen2-mini-q4_k_m.gguf", 0);
    check_model("models/qwen3-mini-q8_0.gguf", 0);
    check_model("models/gemma3-mini-q8_0.gguf", 0); /* window 16 crossed, softcap-free */
    check_model("models/phi3-mini-q8_0.gguf", 7);
}

/* The engine's lens re-runs a position the cache already holds: with
 * keep_cache the cache is unchanged afterwards, so the next token's logits
 * are those of a run without the lens. The lens here runs another token at
 * position 5, so a lens that wrote the cache would show. */
static void test_lens_keeps_cache(void **s)
{
    (void)s;
    model *m = load("models/tiny-spm-q4_k_m.gguf");
    const int32_t V = model_get_hparams(m)->n_vocab, L = (int32_t)model_get_hparams(m)->n_layer;
    float *a = malloc((size_t)V * sizeof(float)), *b = malloc((size_t)V * sizeof(float));
    float *one = malloc((size_t)V * sizeof(float)), *alone = malloc((size_t)V * sizeof(float));
    lens_log lg = {V, L, 1, malloc((size_t)L * V * sizeof(float)), 0, false, 0};
    char err[256];
    for (int keep = 1; keep >= 0; keep--) {
        forward_ctx *f = build(m, 64, 0);
        assert_int_equal(forward_eval(f, seq, 12, 0, a, false, err, sizeof err), 0);
        assert_int_equal(forward_eval(f, seq + 12, 1, 12, a, false, err, sizeof err), 0);
        lg.calls = 0;
        lg.last_layer = 0;
        assert_int_equal(forward_eval_lens(f, seq + 6, 1, 5, one, keep, collect, &lg, err, sizeof err), 0);
        assert_int_equal(lg.calls, L);
        assert_memory_equal(lg.rows + (size_t)(L - 1) * V, one, (size_t)V * sizeof(float));
        assert_int_equal(forward_eval(f, seq + 13, 1, 13, b, false, err, sizeof err), 0);
        forward_free(f);
        f = build(m, 64, 0);
        assert_int_equal(forward_eval(f, seq, 12, 0, a, false, err, sizeof err), 0);
        assert_int_equal(forward_eval(f, seq + 12, 1, 12, a, false, err, sizeof err), 0);
        assert_int_equal(forward_eval(f, seq + 13, 1, 13, a, false, err, sizeof err), 0);
        /* the lens's last block is the model run on that token alone */
        assert_int_equal(forward_eval(f, seq + 6, 1, 5, alone, false, err, sizeof err), 0);
        assert_memory_equal(alone, one, (size_t)V * sizeof(float));
        forward_free(f);
        if (keep)
            assert_memory_equal(a, b, (size_t)V * sizeof(float));
        else /* the check is sharp: without keep_cache position 5 holds another token */
            assert_memory_not_equal(a, b, (size_t)V * sizeof(float));
    }
    free(a);
    free(b);
    free(one);
    free(alone);
    free(lg.rows);
    model_free(m);
}

static void test_lens_errors(void **s)
{
    (void)s;
    model *m = load("models/stories260K.gguf");
    const int32_t V = model_get_hparams(m)->n_vocab;
    float *lo = malloc((size_t)V * N_SEQ * sizeof(float));
    char err[256] = "";
    forward_ctx *f = build(m, 16, 0);
    assert_int_equal(forward_eval_cut(f, 0, seq, 2, 0, lo, true, err, sizeof err), -1);
    assert_non_null(strstr(err, "1..5"));
    assert_int_equal(forward_eval_cut(f, 6, seq, 2, 0, lo, true, err, sizeof err), -1);
    err[0] = 0;
    assert_int_equal(forward_eval_lens(f, seq, N_SEQ, 0, lo, false, NULL, NULL, err, sizeof err), -1);
    assert_non_null(strstr(err, "context"));
    /* no callback is allowed: the model's own logits all the same */
    assert_int_equal(forward_eval_lens(f, seq, 4, 0, lo, false, NULL, NULL, err, sizeof err), 0);
    /* the normal graph has no lens steps */
    for (int i = 0; i < f->graph.n_steps; i++)
        assert_int_not_equal(f->graph.steps[i].kind, STEP_LENS);
    forward_free(f);
    free(lo);
    model_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lens_llama),
        cmocka_unit_test(test_lens_families),
        cmocka_unit_test(test_lens_keeps_cache),
        cmocka_unit_test(test_lens_errors),
    };
    return cmocka_run_group_tests_name("lens", tests, NULL, NULL);
}
