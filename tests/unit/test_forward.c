/* Forward pass: the cached, batched and recomputed paths agree; positions
 * are explicit; the full logits of stories260K match the reference's
 * complete dump; bad input fails cleanly. */
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
#include "golden.h"
#include "model/model.h"
#include "testutil.h"

static model *load(const char *rel)
{
    const char *path = TESTDATA_REQUIRE(rel);
    char err[512];
    model *m = model_load_weights_only(path, err, sizeof err);
    if (!m) {
        fail_msg("%s", err);
        abort(); /* not reached: fail_msg leaves the test */
    }
    return m;
}

static forward_ctx *build(const model *m, uint32_t n_ctx, uint32_t n_batch, int threads)
{
    forward_params p = forward_default_params();
    p.n_ctx = n_ctx;
    p.n_batch = n_batch;
    p.n_threads = threads;
    char err[512];
    forward_ctx *f = forward_build(m, &p, err, sizeof err);
    if (!f) {
        fail_msg("%s", err);
        abort();
    }
    return f;
}

static float max_abs_diff(const float *a, const float *b, size_t n)
{
    float d = 0;
    for (size_t i = 0; i < n; i++) {
        float x = fabsf(a[i] - b[i]);
        if (!(x <= d))
            d = x; /* NaN counts as a difference */
    }
    return d;
}

static const int32_t seq[] = {1, 403, 407, 261, 378, 432, 383, 286, 261, 392, 308, 312, 274, 410, 402, 266, 357};
#define N_SEQ ((int32_t)(sizeof seq / sizeof seq[0]))

/* Same logits from: all at once, batches of 3, one by one, and recomputing
 * the prefix for every position (the --no-kv-cache path). */
static void check_paths_agree(const char *rel, int threads, float tol)
{
    model *m = load(rel);
    const int32_t V = model_get_hparams(m)->n_vocab;
    float *all = malloc((size_t)N_SEQ * V * sizeof(float));
    float *b3 = malloc((size_t)N_SEQ * V * sizeof(float));
    float *one = malloc((size_t)N_SEQ * V * sizeof(float));
    float *nokv = malloc((size_t)N_SEQ * V * sizeof(float));
    char err[256];

    forward_ctx *f = build(m, 64, 0, threads);
    assert_int_equal(forward_eval(f, seq, N_SEQ, 0, all, true, err, sizeof err), 0);
    forward_free(f);

    f = build(m, 64, 3, threads); /* internal batches of 3 */
    assert_int_equal(forward_eval(f, seq, N_SEQ, 0, b3, true, err, sizeof err), 0);
    forward_free(f);

    f = build(m, 64, 0, threads);
    for (int32_t p = 0; p < N_SEQ; p++)
        assert_int_equal(forward_eval(f, seq + p, 1, p, one + (size_t)p * V, false, err, sizeof err), 0);
    for (int32_t p = 0; p < N_SEQ; p++)
        assert_int_equal(forward_eval(f, seq, p + 1, 0, nokv + (size_t)p * V, false, err, sizeof err), 0);
    forward_free(f);

    const size_t n = (size_t)N_SEQ * V;
    /* Grouping changes nothing but float summation order: the reference
     * itself sums F32/F16 matmuls differently for batches (tinyBLAS) and
     * single tokens (vec_dot), and we follow it; quantized-only models are
     * bit-identical (tol 0). */
    const float d3 = max_abs_diff(all, b3, n), d1 = max_abs_diff(all, one, n), dn = max_abs_diff(all, nokv, n);
    print_message("%s: |all-batch3| %g |all-one| %g |all-nokv| %g\n", rel, d3, d1, dn);
    assert_true(d3 <= tol);
    assert_true(d1 <= tol);
    assert_true(dn <= tol);
    /* and not trivially: logits differ between positions */
    assert_true(max_abs_diff(all, all + V, (size_t)V) > 0.1f);
    free(all);
    free(b3);
    free(one);
    free(nokv);
    model_free(m);
}

static void test_paths_agree_f32(void **s)
{
    (void)s;
    check_paths_agree("models/stories260K.gguf", 1, 0.05f);
}

static void test_paths_agree_q4_0_threads(void **s)
{
    (void)s;
    check_paths_agree("models/stories260K-q4_0.gguf", 2, 0.0f);
}

static void test_paths_agree_gqa_q8_0(void **s)
{
    (void)s;
    check_paths_agree("models/tiny-spm-q8_0.gguf", 2, 0.0f);
}

/* The families' recipes too: batched, in batches of 3, one by one and
 * recomputed, bit for bit on Q8_0 weights (gemma3-mini's window of 16 is
 * crossed by the 17 tokens). */
static void test_paths_agree_families(void **s)
{
    (void)s;
    check_paths_agree("models/llama3-mini-q8_0.gguf", 2, 0.0f);
    check_paths_agree("models/qwen3-mini-q8_0.gguf", 2, 0.0f);
    check_paths_agree("models/gemma3-mini-q8_0.gguf", 2, 0.0f);
    check_paths_agree("models/phi3-mini-q8_0.gguf", 2, 0.0f);
}

/* A recipe's wording costs nothing: whatever an architecture adds (biases,
 * Q/K norms, post norms, scales, fused tensors), the row steps between two
 * matmuls run as one pass over the tokens, so every architecture takes the
 * same four row passes per layer as the hand-fused llama loop did, one
 * attention and four matmul jobs (Q/K/V, output, gate/up, down). */
static void test_graph_fusion(void **s)
{
    (void)s;
    const char *models[] = {"models/stories260K.gguf", "models/tiny-spm-q8_0.gguf", "models/llama3-mini-q8_0.gguf",
                            "models/qwen2-mini-q4_k_m.gguf", "models/qwen3-mini-q8_0.gguf",
                            "models/gemma3-mini-q8_0.gguf", "models/phi3-mini-q8_0.gguf"};
    for (size_t i = 0; i < sizeof models / sizeof models[0]; i++) {
        model *m = load(models[i]);
        forward_ctx *f = build(m, 64, 0, 1);
        const uint32_t L = model_get_hparams(m)->n_layer;
        int rows = 0, mm = 0, attn = 0, keep = 0;
        for (int j = 0; j < f->graph.n_steps; j++) {
            const struct fwd_step *st = &f->graph.steps[j];
            rows += st->kind == STEP_ROWS;
            mm += st->kind == STEP_MATMUL;
            attn += st->kind == STEP_ATTN;
            keep += st->kind == STEP_KEEP_OUT;
        }
        print_message("%s: %d steps: %d row passes, %d matmuls, %d attention\n", models[i], f->graph.n_steps, rows,
                      mm, attn);
        assert_int_equal(rows, 1 + 4 * (int)L); /* + the embeddings' pass */
        assert_int_equal(mm, 4 * (int)L + 1);   /* + the output head */
        assert_int_equal(attn, (int)L);
        assert_int_equal(keep, 1);
        forward_free(f);
        model_free(m);
    }
}

/* The caller owns positions: the same token at another position gives other
 * logits, and evaluating again from an earlier position overwrites the cache. */
static void test_explicit_positions(void **s)
{
    (void)s;
    model *m = load("models/stories260K.gguf");
    const int32_t V = model_get_hparams(m)->n_vocab;
    float *a = malloc((size_t)V * sizeof(float)), *b = malloc((size_t)V * sizeof(float));
    float *c = malloc((size_t)V * sizeof(float));
    char err[256];
    forward_ctx *f = build(m, 32, 0, 1);
    /* always the same shape (batch of 3, then one token): same float order */
    assert_int_equal(forward_eval(f, seq, 3, 0, a, false, err, sizeof err), 0);
    assert_int_equal(forward_eval(f, seq + 3, 1, 3, a, false, err, sizeof err), 0);
    /* token 378 at position 3 (a) vs the same prefix shifted: 378 at position 5 */
    const int32_t shifted[] = {1, 403, 407, 403, 407, 378};
    assert_int_equal(forward_eval(f, shifted, 6, 0, b, false, err, sizeof err), 0);
    assert_true(max_abs_diff(a, b, (size_t)V) > 0.01f);
    /* overwrite positions 3.. with the original tokens: same logits as before */
    assert_int_equal(forward_eval(f, seq, 3, 0, c, false, err, sizeof err), 0);
    assert_int_equal(forward_eval(f, seq + 3, 1, 3, c, false, err, sizeof err), 0);
    assert_true(max_abs_diff(a, c, (size_t)V) == 0.0f);
    /* a single token at a later position sees the cache before it */
    float *d = malloc((size_t)V * sizeof(float));
    assert_int_equal(forward_eval(f, seq + 3, 1, 1, d, false, err, sizeof err), 0);
    assert_true(max_abs_diff(a, d, (size_t)V) > 0.01f);
    forward_free(f);
    free(a);
    free(b);
    free(c);
    free(d);
    model_free(m);
}

/* Packing lets a weight's original pages go (the RSS would count the model
 * twice). The small tensors the forward pass reads whole (norms, biases,
 * rope factors) must then leave the file mapping too: read there, each
 * faulted its neighbourhood back in, its released neighbours' pages with it
 * (a whole 2 MB folio where the page cache holds one): 74 MB of a 672 MB
 * TinyLlama Q4_K_M's peak RSS. */
static void test_small_tensors_leave_file(void **s)
{
    (void)s;
    model *m = load("models/tiny-spm-q4_k_m.gguf");
    forward_ctx *f = build(m, 32, 0, 1);
    const gguf_ctx *g = model_get_gguf(m);
    int packed = 0, small = 0;
    for (int64_t i = 0; i < gguf_n_tensors(g); i++)
        packed += f->packed_of && f->packed_of[i];
    if (packed == 0)
        skip(); /* a build without packed kernels releases nothing */
    for (int64_t i = 0; i < gguf_n_tensors(g); i++) {
        const gguf_tensor *t = gguf_tensor_at(g, i);
        const char *path;
        size_t off;
        if (t->n_dims != 1)
            continue;
        small++;
        if (gguf_mapping_of(t->data, &path, &off))
            fail_msg("%s is still read from the file (offset %zu)", t->name, off);
    }
    assert_true(small > 0);
    forward_free(f);
    model_free(m);
}

static void test_context_overflow(void **s)
{
    (void)s;
    model *m = load("models/stories260K.gguf");
    const int32_t V = model_get_hparams(m)->n_vocab;
    float *lo = malloc((size_t)V * 20 * sizeof(float));
    char err[256] = "";
    forward_ctx *f = build(m, 8, 0, 1);
    assert_int_equal(forward_n_ctx(f), 8);
    /* a prompt longer than the context */
    assert_int_equal(forward_eval(f, seq, 9, 0, lo, false, err, sizeof err), -1);
    assert_non_null(strstr(err, "context"));
    /* a step past the end */
    err[0] = 0;
    assert_int_equal(forward_eval(f, seq, 1, 8, lo, false, err, sizeof err), -1);
    assert_true(err[0] != 0);
    assert_int_equal(forward_eval(f, seq, 1, -1, lo, false, err, sizeof err), -1);
    /* exactly full is fine */
    assert_int_equal(forward_eval(f, seq, 8, 0, lo, true, err, sizeof err), 0);
    /* token ids outside the vocabulary */
    const int32_t bad[] = {1, 512};
    assert_int_equal(forward_eval(f, bad, 2, 0, lo, false, err, sizeof err), -1);
    assert_non_null(strstr(err, "512"));
    assert_int_equal(forward_eval(f, seq, 0, 0, lo, false, err, sizeof err), -1);
    forward_free(f);
    free(lo);
    model_free(m);
}

/* A model read from a buffer (model_load_buffer: fuzzing, tests) computes
 * what the same file mapped computes. Packing a weight drops its original
 * pages, which a mapping reads back from the file; a buffer's were zeroed,
 * so a tied output (packed) made the embeddings it shares (read unpacked)
 * zero: smollm-mini's logits came out all wrong. */
static void test_buffer_model_matches_mapped(void **s)
{
    (void)s;
    const char *path = TESTDATA_REQUIRE("models/smollm-mini-q8_0.gguf");
    FILE *fp = fopen(path, "rb");
    assert_non_null(fp);
    fseek(fp, 0, SEEK_END);
    long size = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    void *buf = NULL;
    assert_int_equal(posix_memalign(&buf, 4096, (size_t)size), 0);
    assert_int_equal(fread(buf, 1, (size_t)size, fp), (size_t)size);
    fclose(fp);
    char err[512];
    model *mb = model_load_buffer(buf, (size_t)size, path, err, sizeof err);
    if (!mb)
        fail_msg("%s", err);
    model *mm = model_load(path, err, sizeof err);
    assert_non_null(mm);
    const int32_t V = model_get_hparams(mm)->n_vocab;
    float *a = malloc((size_t)V * 2 * sizeof(float)), *b = malloc((size_t)V * 2 * sizeof(float));
    forward_ctx *fb = build(mb, 64, 0, 1), *fm = build(mm, 64, 0, 1);
    const int32_t toks[] = {1, 2000, 3000, 4000};
    for (int rep = 0; rep < 2; rep++) { /* prompt, then one cached step */
        const int32_t n = rep ? 1 : 3, pos = rep ? 3 : 0;
        assert_int_equal(forward_eval(fb, toks + pos, n, pos, a, false, err, sizeof err), 0);
        assert_int_equal(forward_eval(fm, toks + pos, n, pos, b, false, err, sizeof err), 0);
        assert_memory_equal(a, b, (size_t)V * sizeof(float));
    }
    forward_free(fb);
    forward_free(fm);
    free(a);
    free(b);
    model_free(mb);
    model_free(mm);
    free(buf);
}

/* Every logit of every position against the reference's full dump. */
static void test_full_logits_stories(void **s)
{
    (void)s;
    const char *gpath = TESTDATA_REQUIRE("golden/logits/stories260K.bos200.jsonl");
    const char *fpath = TESTDATA_REQUIRE("golden/logits/stories260K.bos200.logits.f32");
    model *m = load("models/stories260K.gguf");
    char err[512];
    golden *g = golden_load(gpath, err, sizeof err);
    if (!g) {
        fail_msg("%s", err);
        abort();
    }
    int32_t n = 0;
    int32_t *toks = golden_sequence(g, &n);
    const int32_t V = model_get_hparams(m)->n_vocab;
    FILE *fp = fopen(fpath, "rb");
    assert_non_null(fp);
    float *ref = malloc((size_t)n * V * sizeof(float));
    size_t got = fread(ref, sizeof(float), (size_t)n * V, fp);
    fclose(fp);
    /* the dump may hold the positions of the golden or fewer */
    const int32_t n_ref = (int32_t)(got / (size_t)V);
    assert_true(n_ref >= n - 1 && n_ref >= 100);
    float *ours = malloc((size_t)n * V * sizeof(float));
    forward_ctx *f = build(m, (uint32_t)n, 0, 0);
    assert_int_equal(forward_eval(f, toks, g->n_prompt, 0, ours, true, err, sizeof err), 0);
    for (int32_t p = g->n_prompt; p < n; p++)
        assert_int_equal(forward_eval(f, toks + p, 1, p, ours + (size_t)p * V, false, err, sizeof err), 0);
    float worst = 0;
    int32_t worst_pos = -1;
    for (int32_t p = 0; p < n_ref && p < n; p++) {
        float d = max_abs_diff(ours + (size_t)p * V, ref + (size_t)p * V, (size_t)V);
        if (!(d <= worst)) {
            worst = d;
            worst_pos = p;
        }
    }
    print_message("stories260K full logits: %d positions x %d, max |dlogit| %.6f at position %d\n", n_ref, V, worst,
                  worst_pos);
    assert_true(worst <= 0.05f);
    forward_free(f);
    free(ours);
    free(ref);
    free(toks);
    golden_free(g);
    model_free(m);
}

/* Loading rejects files the forward pass cannot run, naming the problem. */
static void test_load_rejects(void **s)
{
    (void)s;
    char err[512];
    assert_null(model_load_weights_only("/nonexistent/model.gguf", err, sizeof err));
    assert_true(err[0] != 0);
    const char *vocab = TESTDATA_REQUIRE("golden/tokenizer/ggml-vocab-llama-spm.gguf");
    err[0] = 0;
    assert_null(model_load_weights_only(vocab, err, sizeof err)); /* vocab only: no tensors */
    assert_non_null(strstr(err, "token_embd.weight"));
}

/* The tensor-info entry of `name` in a GGUF image: the bytes just past the
 * name (n_dims, dims, type, offset follow). */
static char *tensor_info_after_name(char *buf, long size, const char *name)
{
    const size_t len = strlen(name);
    for (long i = 8; i + (long)len < size; i++) {
        uint64_t n;
        memcpy(&n, buf + i - 8, 8);
        if (n == len && !memcmp(buf + i, name, len))
            return buf + i + len;
    }
    return NULL;
}

/* A weight of a type we cannot compute with is refused by name. Q8_1 (an
 * activation format, never a weight type here) has Q4_0's 32-element
 * blocks at 36 bytes rather than 18, so the retyped tensor's data grows by
 * 18 bytes a block and every later tensor moves by as much: the file stays
 * valid and only the type is wrong. (This used IQ4_NL, which has Q4_0's
 * size, until IQ4_NL became a supported type.) */
static void test_load_rejects_iq_type(void **s)
{
    (void)s;
    const char *path = TESTDATA_REQUIRE("models/stories260K-q4_0.gguf");
    char err[512] = "";
    gguf_ctx *g = gguf_open(path, err, sizeof err);
    if (!g)
        fail_msg("%s", err);
    FILE *fp = fopen(path, "rb");
    assert_non_null(fp);
    fseek(fp, 0, SEEK_END);
    long size = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    const char name[] = "blk.0.attn_q.weight";
    const gguf_tensor *q = gguf_find_tensor(g, name);
    assert_non_null(q);
    assert_int_equal(q->type, TENSOR_TYPE_Q4_0);
    const long grow = (long)(q->n_elements / 32 * (36 - 18));
    assert_int_equal(grow % 32, 0); /* later offsets keep the alignment */
    char *buf = size > 0 ? calloc(1, (size_t)(size + grow)) : NULL;
    if (!buf) {
        fail_msg("cannot read %s", path);
        abort();
    }
    assert_int_equal(fread(buf, 1, (size_t)size, fp), (size_t)size);
    fclose(fp);
    /* the type, then every later tensor's offset */
    char *p = tensor_info_after_name(buf, size, name);
    assert_non_null(p);
    uint32_t n_dims;
    memcpy(&n_dims, p, 4);
    assert_int_equal(n_dims, 2);
    const uint32_t type = TENSOR_TYPE_Q8_1;
    memcpy(p + 4 + 8 * n_dims, &type, 4);
    for (int64_t i = 0; i < gguf_n_tensors(g); i++) {
        const gguf_tensor *t = gguf_tensor_at(g, i);
        if (t->offset <= q->offset)
            continue;
        char *e = tensor_info_after_name(buf, size, t->name);
        assert_non_null(e);
        uint32_t nd;
        memcpy(&nd, e, 4);
        const uint64_t off = t->offset + (uint64_t)grow;
        memcpy(e + 4 + 8 * nd + 4, &off, 8);
    }
    /* the data: room for the larger tensor right after its old end */
    const size_t end = gguf_data_offset(g) + q->offset + q->nbytes;
    memmove(buf + end + grow, buf + end, (size_t)size - end);
    memset(buf + end, 0, (size_t)grow);
    gguf_close(g);
    char tmp[] = "/tmp/tokscope_iq_XXXXXX";
    int fd = mkstemp(tmp);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, buf, (size_t)(size + grow)), size + grow);
    close(fd);
    free(buf);
    model *m = model_load_weights_only(tmp, err, sizeof err);
    unlink(tmp);
    assert_null(m);
    assert_non_null(strstr(err, "blk.0.attn_q.weight"));
    assert_non_null(strstr(err, "Q8_1"));
    assert_non_null(strstr(err, "cannot compute with"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_paths_agree_f32),
        cmocka_unit_test(test_paths_agree_q4_0_threads),
        cmocka_unit_test(test_paths_agree_gqa_q8_0),
        cmocka_unit_test(test_paths_agree_families),
        cmocka_unit_test(test_graph_fusion),
        cmocka_unit_test(test_explicit_positions),
        cmocka_unit_test(test_context_overflow),
        cmocka_unit_test(test_small_tensors_leave_file),
        cmocka_unit_test(test_buffer_model_matches_mapped),
        cmocka_unit_test(test_full_logits_stories),
        cmocka_unit_test(test_load_rejects),
        cmocka_unit_test(test_load_rejects_iq_type),
    };
    return cmocka_run_group_tests_name("forward", tests, NULL, NULL);
}
