/* Several sequences in one forward call (forward_decode, memory_seq):
 * - the reference's goldens (tests/golden/reference/multiseq/MODEL.txt,
 *   llama_decode with several seq_ids, kv_unified = false, 34af94cd's
 *   AVX-512 build; F16 caches, and Q8_0 or Q4_0 K beside F16 V where the
 *   heads allow) replayed batch by batch, every row of logits bit for bit
 *   (FNV-1a 64 of the whole row); through memory_seq, which keeps each
 *   sequence's position counter and drops a sequence where the file does;
 * - a sequence alone in forward_decode gives forward_eval's bits, in any
 *   stream;
 * - a sequence cannot see another's cells: changing sequence 0's tokens
 *   leaves sequence 1's rows in the same batch bit-identical, and tokens
 *   swapped between two sequences give each token list its own logits;
 * - batches the reference refuses (positions not consecutive) are
 *   refused; a recurrent state (qwen35) keeps one state per sequence and
 *   drops a sequence only whole. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "memory/memory_seq.h"
#include "model/forward.h"
#include "model/model.h"
#include "testutil.h"

#define MAXB 1024

static uint64_t fnv(const float *y, int n)
{
    uint64_t h = 0xcbf29ce484222325ull;
    const uint8_t *p = (const uint8_t *)y;
    for (size_t i = 0; i < 4 * (size_t)n; i++)
        h = (h ^ p[i]) * 0x100000001b3ull;
    return h;
}

static forward_ctx *build_kv(const model *m, uint32_t n_seq, uint32_t n_ctx, uint32_t n_batch,
                             enum tensor_type kt, enum tensor_type vt)
{
    forward_params p = forward_default_params();
    p.kv_type = kt;
    p.v_type = vt;
    p.n_ctx = n_ctx;
    p.n_batch = n_batch;
    p.n_threads = 2;
    p.n_seq = n_seq;
    char err[256];
    forward_ctx *f = forward_build(m, &p, err, sizeof err);
    if (!f)
        fail_msg("forward_build: %s", err);
    return f;
}

static forward_ctx *build(const model *m, uint32_t n_seq, uint32_t n_ctx, uint32_t n_batch)
{
    return build_kv(m, n_seq, n_ctx, n_batch, TENSOR_TYPE_F16, TENSOR_TYPE_F16);
}

/* Replays one golden file; returns the rows checked. */
static int replay(const char *name)
{
    char path[256];
    snprintf(path, sizeof path, "tests/golden/reference/multiseq/%s.txt", name);
    FILE *in = fopen(path, "r");
    if (!in)
        fail_msg("cannot open %s", path);
    char line[4096], err[256];
    model *m = NULL;
    forward_ctx *f = NULL;
    memory_seq ms = {0};
    int32_t tok[MAXB], pos[MAXB], seq[MAXB];
    int8_t out[MAXB];
    float *logits = NULL;
    int n = 0, n_out = 0, got = 0, checked = 0, n_batch = 0, n_ctx_lines = 0;
    int32_t nv = 0;
    while (fgets(line, sizeof line, in)) {
        char rel[512], tk[16], tv[16];
        int a, b, c, d;
        if (sscanf(line, "model %511s", rel) == 1) {
            const char *mp = testdata_path(rel);
            if (access(mp, R_OK) != 0) {
                fclose(in);
                if (testdata_in_ci())
                    fail_msg("test data missing: %s", mp);
                print_message("test data missing, skipping: %s\n", mp);
                skip();
            }
            m = model_load(mp, err, sizeof err);
            if (!m)
                fail_msg("%s: %s", rel, err);
            nv = model_get_hparams(m)->n_vocab;
            logits = malloc((size_t)MAXB * nv * sizeof(float));
            assert_non_null(logits);
        } else if (sscanf(line, "context %d %d %d %d %15s %15s", &a, &b, &c, &d, tk, tv) == 6) {
            memory_seq_release(&ms);
            forward_free(f);
            assert_int_equal(d, 2);
            enum tensor_type kt, vt;
            assert_true(forward_kv_type_parse(tk, &kt) && forward_kv_type_parse(tv, &vt));
            f = build_kv(m, (uint32_t)a, (uint32_t)b, (uint32_t)c, kt, vt);
            if (!memory_seq_init(&ms, f, err, sizeof err))
                fail_msg("memory_seq_init: %s", err);
            n_batch = 0;
            n_ctx_lines++;
        } else if (sscanf(line, "rm %d", &a) == 1) {
            assert_true(memory_seq_truncate(&ms, a, 0));
        } else if (sscanf(line, "batch %d", &a) == 1) {
            assert_true(a > 0 && a <= MAXB);
            for (int i = 0; i < a; i++) {
                assert_non_null(fgets(line, sizeof line, in));
                int o;
                assert_int_equal(sscanf(line, "t %d %d %d %d", &tok[i], &pos[i], &seq[i], &o), 4);
                out[i] = (int8_t)o;
            }
            n = a;
            n_out = 0;
            for (int i = 0; i < n; i++)
                n_out += out[i] != 0;
            const forward_batch fb = {n, tok, pos, seq, out};
            if (memory_seq_decode(&ms, &fb, logits, err, sizeof err) != 0)
                fail_msg("%s batch %d: %s", name, n_batch, err);
            got = 0;
            n_batch++;
        } else if (!strncmp(line, "logits ", 7)) {
            int idx, am, k;
            unsigned long long want;
            char *s = line + 7;
            assert_int_equal(sscanf(s, "%d %d %llx %d", &idx, &am, &want, &k), 4);
            assert_true(got < n_out);
            const float *row = logits + (size_t)got * nv;
            got++;
            if (fnv(row, nv) != (uint64_t)want) {
                int my = 0;
                for (int i = 1; i < nv; i++)
                    if (row[i] > row[my])
                        my = i;
                /* the reference's top logit, to say how far off */
                char *p = s;
                for (int w = 0; w < 4; w++)
                    p = strchr(p, ' ') + 1;
                int id0 = atoi(p);
                const double ref0 = strtod(strchr(p, ':') + 1, NULL);
                fail_msg(
                    "%s batch %d entry %d (seq %d pos %d, %d-token batch): hash %016llx, reference %016llx; "
                    "argmax %d (reference %d); logit[%d] %.9g, reference %.9g",
                    name, n_batch - 1, idx, seq[idx], pos[idx], n, (unsigned long long)fnv(row, nv), want, my,
                    am, id0, (double)row[id0], ref0);
            }
            checked++;
        }
    }
    fclose(in);
    memory_seq_release(&ms);
    forward_free(f);
    free(logits);
    model_free(m);
    assert_true(n_ctx_lines >= 3);
    print_message("%s: %d rows in %d contexts, bit for bit\n", name, checked, n_ctx_lines);
    return checked;
}

#define GOLDEN(fn, name)                                                                                     \
    static void fn(void **state)                                                                             \
    {                                                                                                        \
        (void)state;                                                                                         \
        assert_true(replay(name) >= 120);                                                                    \
    }
GOLDEN(test_golden_stories260k, "stories260K")
GOLDEN(test_golden_tiny_spm_q4_0, "tiny-spm-q4_0")
GOLDEN(test_golden_llama3, "llama3-mini-q8_0")
GOLDEN(test_golden_qwen2, "qwen2-mini-q4_k_m")
GOLDEN(test_golden_qwen3, "qwen3-mini-q8_0")
GOLDEN(test_golden_phi3, "phi3-mini-q8_0")
GOLDEN(test_golden_gemma3, "gemma3-mini-q8_0")
GOLDEN(test_golden_qwen3moe, "qwen3moe-mini-q8_0")
GOLDEN(test_golden_gemma4, "gemma4-mini-q8_0")
GOLDEN(test_golden_gptoss, "gptoss-mini-mxfp4")
GOLDEN(test_golden_qwen35, "qwen35-mini-q8_0")
GOLDEN(test_golden_qwen35moe, "qwen35moe-mini-q8_0")

static model *load(const char *rel)
{
    char err[256];
    model *m = model_load(TESTDATA_REQUIRE(rel), err, sizeof err);
    if (!m)
        fail_msg("%s: %s", rel, err);
    return m;
}

static void fill_tokens(int32_t *t, int n, uint64_t seed)
{
    for (int i = 0; i < n; i++)
        t[i] = 3 + (int32_t)(test_xorshift64(&seed) % 400);
}

/* A sequence alone: a 70-token prompt (tiled attention), then single
 * tokens, in stream 2 of a 3-sequence context, against forward_eval on a
 * one-sequence context. */
static void alone_equals_eval(const char *rel)
{
    model *m = load(rel);
    const int32_t nv = model_get_hparams(m)->n_vocab;
    forward_ctx *one = build(m, 1, 512, 512), *three = build(m, 3, 512, 512);
    int32_t t[80], pos[80], seq[80];
    fill_tokens(t, 80, 77);
    float *a = malloc((size_t)70 * nv * sizeof(float)), *b = malloc((size_t)70 * nv * sizeof(float));
    char err[256];
    assert_int_equal(forward_eval(one, t, 70, 0, a, true, err, sizeof err), 0);
    for (int i = 0; i < 80; i++)
        pos[i] = i, seq[i] = 2;
    const forward_batch fb = {70, t, pos, seq, (const int8_t[70]){[0 ... 69] = 1}};
    assert_int_equal(forward_decode(three, &fb, b, err, sizeof err), 0);
    assert_memory_equal(a, b, (size_t)70 * nv * sizeof(float));
    for (int i = 70; i < 80; i++) {
        assert_int_equal(forward_eval(one, t + i, 1, i, a, false, err, sizeof err), 0);
        const forward_batch g = {1, t + i, pos + i, seq + i, NULL};
        assert_int_equal(forward_decode(three, &g, b, err, sizeof err), 0);
        assert_memory_equal(a, b, (size_t)nv * sizeof(float));
    }
    /* the prompt with its last row only, as generation runs it (the last
     * layer's FFN for one row) */
    assert_int_equal(forward_eval(one, t, 33, 0, a, false, err, sizeof err), 0);
    const forward_batch last = {33, t, pos, seq, NULL};
    assert_int_equal(forward_decode(three, &last, b, err, sizeof err), 0);
    assert_memory_equal(a, b, (size_t)nv * sizeof(float));
    free(a);
    free(b);
    forward_free(one);
    forward_free(three);
    model_free(m);
}

static void test_alone_stories260k(void **state)
{
    (void)state;
    alone_equals_eval("models/stories260K.gguf");
}

static void test_alone_tiny_spm_q4_0(void **state)
{
    (void)state;
    alone_equals_eval("models/tiny-spm-q4_0.gguf");
}

static void test_alone_qwen35(void **state)
{
    (void)state;
    alone_equals_eval("families2026/models/qwen35-mini-q8_0.gguf");
}

/* Two 20-token prompts in one batch (one internal batch of 2 x 20 rows)
 * with logits for every row into rows (40 x nv). */
static void two_prompts(forward_ctx *f, const int32_t *t0, const int32_t *t1, int s0, int s1, float *rows)
{
    int32_t t[40], pos[40], seq[40];
    for (int i = 0; i < 20; i++) {
        t[i] = t0[i], pos[i] = i, seq[i] = s0;
        t[20 + i] = t1[i], pos[20 + i] = i, seq[20 + i] = s1;
    }
    const forward_batch fb = {40, t, pos, seq, (const int8_t[40]){[0 ... 39] = 1}};
    char err[256];
    if (forward_decode(f, &fb, rows, err, sizeof err) != 0)
        fail_msg("%s", err);
}

static void test_isolation(void **state)
{
    (void)state;
    model *m = load("models/tiny-spm-q4_0.gguf");
    const int32_t nv = model_get_hparams(m)->n_vocab;
    const size_t half = (size_t)20 * nv;
    forward_ctx *f = build(m, 2, 256, 512);
    int32_t p[20], q[20], r[20];
    fill_tokens(p, 20, 1);
    fill_tokens(q, 20, 2);
    fill_tokens(r, 20, 3);
    float *a = malloc(2 * half * sizeof(float)), *b = malloc(2 * half * sizeof(float));
    /* sequence 1's rows do not change when sequence 0 holds other tokens */
    two_prompts(f, p, q, 0, 1, a);
    two_prompts(f, r, q, 0, 1, b);
    assert_memory_equal(a + half, b + half, half * sizeof(float));
    assert_memory_not_equal(a, b, half * sizeof(float));
    /* swapped between the sequences (the rows of sequence 0 still come
     * first: it is the lower id): each token list keeps its logits */
    two_prompts(f, q, p, 0, 1, b);
    assert_memory_equal(a, b + half, half * sizeof(float));
    assert_memory_equal(a + half, b, half * sizeof(float));
    /* and the next token of sequence 1 reads its own stream: P's, not R's */
    int32_t t2[2] = {5, 5}, pos2[2] = {20, 20}, seq2[2] = {0, 1};
    const forward_batch g = {2, t2, pos2, seq2, (const int8_t[2]){1, 1}};
    char err[256];
    two_prompts(f, p, q, 0, 1, a);
    assert_int_equal(forward_decode(f, &g, a, err, sizeof err), 0);
    two_prompts(f, r, q, 0, 1, b);
    assert_int_equal(forward_decode(f, &g, b, err, sizeof err), 0);
    assert_memory_not_equal(a, b, (size_t)nv * sizeof(float));
    assert_memory_equal(a + nv, b + nv, (size_t)nv * sizeof(float));
    free(a);
    free(b);
    forward_free(f);
    model_free(m);
}

static void test_refusals(void **state)
{
    (void)state;
    model *m = load("models/stories260K.gguf");
    forward_ctx *f = build(m, 2, 256, 512);
    memory_seq ms;
    char err[256];
    assert_true(memory_seq_init(&ms, f, err, sizeof err));
    float *lg = malloc((size_t)4 * model_get_hparams(m)->n_vocab * sizeof(float));
    int32_t t[3] = {5, 6, 7}, pos[3] = {0, 2, 0}, seq[3] = {0, 0, 1};
    const forward_batch gap = {3, t, pos, seq, NULL};
    assert_int_equal(forward_decode(f, &gap, lg, err, sizeof err), -1);
    assert_non_null(strstr(err, "consecutive"));
    int32_t bad_seq[1] = {2}, p0[1] = {0};
    const forward_batch other = {1, t, p0, bad_seq, NULL};
    assert_int_equal(forward_decode(f, &other, lg, err, sizeof err), -1);
    /* memory_seq holds the position counter: sequence 1 must continue at 0 */
    int32_t p5[1] = {5}, s1[1] = {1};
    const forward_batch skip_ahead = {1, t, p5, s1, NULL};
    assert_int_equal(memory_seq_decode(&ms, &skip_ahead, lg, err, sizeof err), -1);
    assert_non_null(strstr(err, "sequence 1"));
    const forward_batch ok = {1, t, p0, s1, NULL};
    assert_int_equal(memory_seq_decode(&ms, &ok, lg, err, sizeof err), 0);
    assert_int_equal(memory_seq_n_past(&ms, 1), 1);
    assert_int_equal(memory_seq_n_past(&ms, 0), 0);
    assert_int_equal(memory_seq_tokens(&ms, 1)[0], 5);
    assert_true(memory_seq_truncate(&ms, 1, 0));
    assert_int_equal(memory_seq_n_past(&ms, 1), 0);
    free(lg);
    memory_seq_release(&ms);
    forward_free(f);
    model_free(m);
    /* a recurrent state cannot drop its last tokens: a sequence goes whole */
    const char *rel = "families2026/models/qwen35-mini-q8_0.gguf";
    if (access(testdata_path(rel), R_OK) == 0) {
        model *r = load(rel);
        forward_ctx *fr = build(r, 2, 256, 512);
        assert_true(memory_seq_init(&ms, fr, err, sizeof err));
        float *rl = malloc((size_t)model_get_hparams(r)->n_vocab * sizeof(float));
        int32_t tt[4] = {5, 6, 7, 8}, pp[4] = {0, 1, 2, 3}, ss[4] = {1, 1, 1, 1};
        const forward_batch four = {4, tt, pp, ss, NULL};
        assert_int_equal(memory_seq_decode(&ms, &four, rl, err, sizeof err), 0);
        assert_false(memory_seq_truncate(&ms, 1, 2));
        assert_int_equal(memory_seq_n_past(&ms, 1), 4);
        assert_true(memory_seq_truncate(&ms, 1, 0));
        assert_int_equal(memory_seq_n_past(&ms, 1), 0);
        /* the states kept after each position (--spec mtp) are one
         * sequence's: refused on a context of several */
        assert_false(forward_rs_keep(fr, 4));
        memory_seq_release(&ms);
        forward_free(fr);
        /* on one sequence they are kept by forward_eval, and a
         * forward_decode after it leaves none to go back to */
        fr = build(r, 1, 256, 512);
        assert_true(forward_rs_keep(fr, 4));
        assert_int_equal(forward_eval(fr, tt, 4, 0, rl, false, err, sizeof err), 0);
        assert_true(forward_rs_rollback(fr, 1));
        assert_int_equal(forward_rs_pos(fr), 2);
        int32_t p2[1] = {2}, s0[1] = {0};
        const forward_batch next = {1, tt + 2, p2, s0, NULL};
        assert_int_equal(forward_decode(fr, &next, rl, err, sizeof err), 0);
        assert_false(forward_rs_rollback(fr, 0));
        forward_rs_keep(fr, 0);
        free(rl);
        forward_free(fr);
        model_free(r);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_golden_stories260k), cmocka_unit_test(test_golden_tiny_spm_q4_0),
        cmocka_unit_test(test_golden_llama3),      cmocka_unit_test(test_golden_qwen2),
        cmocka_unit_test(test_golden_qwen3),       cmocka_unit_test(test_golden_phi3),
        cmocka_unit_test(test_golden_gemma3),      cmocka_unit_test(test_golden_qwen3moe),
        cmocka_unit_test(test_golden_gemma4),      cmocka_unit_test(test_golden_gptoss),
        cmocka_unit_test(test_golden_qwen35),      cmocka_unit_test(test_golden_qwen35moe),
        cmocka_unit_test(test_alone_stories260k),  cmocka_unit_test(test_alone_tiny_spm_q4_0),
        cmocka_unit_test(test_alone_qwen35),       cmocka_unit_test(test_isolation),
        cmocka_unit_test(test_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
