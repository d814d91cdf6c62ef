/* The recurrent state of a forward context (forward.h, forward_rs.c): a
 * snapshot restores the state bit for bit, the states kept after each
 * token of a batch are those of its prefixes, positions the state cannot
 * continue from are refused, start_pos 0 starts again from an empty state,
 * and a model without recurrent layers has none. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/forward_math.h"
#include "kernels/forward_repack.h"
#include "model/forward.h"
#include "model/forward_internal.h"
#include "model/model.h"
#include "testutil.h"

#define QWEN35 "families2026/models/qwen35-mini-q8_0.gguf"

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

static forward_ctx *build(const model *m, uint32_t n_ctx)
{
    forward_params p = forward_default_params();
    p.n_ctx = n_ctx;
    p.n_threads = 2;
    char err[512];
    forward_ctx *f = forward_build(m, &p, err, sizeof err);
    if (!f) {
        fail_msg("%s", err);
        abort();
    }
    return f;
}

static const int32_t seq[] = {1, 291, 278, 333, 415, 413, 415, 277, 372, 410, 354, 411, 427, 285, 263, 420};
#define N_SEQ ((int32_t)(sizeof seq / sizeof seq[0]))

/* Evaluates seq[p0, p1) one token at a time; logits: one row per token. */
static void eval_each(forward_ctx *f, int32_t p0, int32_t p1, float *logits, int32_t n_vocab)
{
    char err[256];
    for (int32_t p = p0; p < p1; p++) {
        const int rc = forward_eval(f, &seq[p], 1, p, logits + (size_t)(p - p0) * n_vocab, false, err, sizeof err);
        if (rc != 0)
            fail_msg("position %d: %s", p, err);
    }
}

static void test_sizes(void **s)
{
    (void)s;
    model *m = load(QWEN35);
    forward_ctx *f = build(m, 64);
    const model_hparams *hp = model_get_hparams(m);
    /* 6 DeltaNet layers (3 and 7 are attention): conv state 3 x 256, delta
     * state 4 heads x 32 x 32, in floats */
    int n_rec = 0;
    for (uint32_t l = 0; l < hp->n_layer; l++)
        n_rec += hp->recurrent_layer[l];
    assert_int_equal(n_rec, 6);
    assert_false(hp->recurrent_layer[3]);
    assert_false(hp->recurrent_layer[7]);
    assert_true(forward_is_recurrent(f));
    assert_int_equal(forward_rs_bytes(f), 6 * (3 * 256 + 4 * 32 * 32) * sizeof(float));
    assert_int_equal(forward_rs_pos(f), 0);
    /* the KV cache holds the two attention layers only */
    assert_int_equal(forward_kv_cache_bytes(f), 2 * 64 * 2 * (64 * sizeof(uint16_t)));
    forward_free(f);
    model_free(m);
}

static void test_snapshot_restores(void **s)
{
    (void)s;
    model *m = load(QWEN35);
    forward_ctx *f = build(m, 64);
    const int32_t V = model_get_hparams(m)->n_vocab, P = 7;
    float *a = malloc((size_t)N_SEQ * V * sizeof(float)), *b = malloc((size_t)N_SEQ * V * sizeof(float));
    char err[256];
    assert_int_equal(forward_eval(f, seq, P, 0, a, false, err, sizeof err), 0);
    assert_int_equal(forward_rs_pos(f), P);
    void *snap = malloc(forward_rs_bytes(f));
    forward_rs_save(f, snap);
    eval_each(f, P, N_SEQ, a, V);
    assert_int_equal(forward_rs_pos(f), N_SEQ);
    forward_rs_load(f, snap, P);
    assert_int_equal(forward_rs_pos(f), P);
    eval_each(f, P, N_SEQ, b, V);
    assert_memory_equal(a, b, (size_t)(N_SEQ - P) * V * sizeof(float));
    free(snap);
    free(a);
    free(b);
    forward_free(f);
    model_free(m);
}

/* forward_rs_keep (llama.cpp's n_rs_seq): after a batch of 5 tokens, the
 * state after each of them is the state its prefix alone gives, bit for
 * bit, at the right position; then the same continuation gives the same
 * logits. A longer batch keeps none, and a restored snapshot drops them. */
static void test_keep_rollback(void **s)
{
    (void)s;
    model *m = load(QWEN35);
    forward_ctx *f = build(m, 64), *g = build(m, 64);
    const int32_t V = model_get_hparams(m)->n_vocab, P = 7, N = 5;
    const size_t B = forward_rs_bytes(f);
    float *a = malloc((size_t)N_SEQ * V * sizeof(float)), *b = malloc((size_t)N_SEQ * V * sizeof(float));
    uint8_t *want = malloc(B), *got = malloc(B), *start = malloc(B);
    char err[256];
    assert_int_equal(forward_eval(f, seq, P, 0, a, false, err, sizeof err), 0);
    forward_rs_save(f, start);
    assert_true(forward_rs_keep(f, N));
    for (int32_t i = 0; i < N; i++) {
        forward_rs_load(f, start, P);
        assert_false(forward_rs_rollback(f, 0)); /* a restored snapshot drops them */
        assert_int_equal(forward_eval(f, seq + P, N, P, a, true, err, sizeof err), 0);
        assert_true(forward_rs_rollback(f, i));
        assert_false(forward_rs_rollback(f, N));
        assert_int_equal(forward_rs_pos(f), P + i + 1);
        forward_rs_save(f, got);
        assert_int_equal(forward_eval(g, seq, P + i + 1, 0, b, false, err, sizeof err), 0);
        forward_rs_save(g, want);
        assert_memory_equal(got, want, B);
        eval_each(f, P + i + 1, N_SEQ, a, V);
        eval_each(g, P + i + 1, N_SEQ, b, V);
        assert_memory_equal(a, b, (size_t)(N_SEQ - P - i - 1) * V * sizeof(float));
    }
    forward_rs_load(f, start, P);
    assert_int_equal(forward_eval(f, seq + P, N + 1, P, a, true, err, sizeof err), 0);
    assert_false(forward_rs_rollback(f, 0)); /* longer than kept */
    assert_true(forward_rs_keep(f, 0));
    forward_rs_load(f, start, P);
    assert_int_equal(forward_eval(f, seq + P, 2, P, a, true, err, sizeof err), 0);
    assert_false(forward_rs_rollback(f, 0)); /* keeping is off */
    free(want);
    free(got);
    free(start);
    free(a);
    free(b);
    forward_free(f);
    forward_free(g);
    model_free(m);
}

static void test_wrong_position_refused(void **s)
{
    (void)s;
    model *m = load(QWEN35);
    forward_ctx *f = build(m, 64);
    const int32_t V = model_get_hparams(m)->n_vocab;
    float *lg = malloc((size_t)V * sizeof(float));
    char err[256] = "";
    assert_int_equal(forward_eval(f, seq, 5, 0, lg, false, err, sizeof err), 0);
    /* past the state, and back into what it has consumed: both refused */
    err[0] = 0;
    assert_int_equal(forward_eval(f, &seq[6], 1, 6, lg, false, err, sizeof err), -1);
    assert_non_null(strstr(err, "recurrent state"));
    err[0] = 0;
    assert_int_equal(forward_eval(f, &seq[3], 1, 3, lg, false, err, sizeof err), -1);
    assert_non_null(strstr(err, "position 3"));
    assert_int_equal(forward_rs_pos(f), 5); /* a refused call changes nothing */
    assert_int_equal(forward_eval(f, &seq[5], 1, 5, lg, false, err, sizeof err), 0);
    assert_int_equal(forward_rs_pos(f), 6);
    /* a cut evaluation advances only its blocks: the full graph may not
     * continue from it, but may start again at 0 */
    assert_int_equal(forward_eval_cut(f, 4, seq, 3, 0, lg, false, err, sizeof err), 0);
    err[0] = 0;
    assert_int_equal(forward_eval(f, &seq[3], 1, 3, lg, false, err, sizeof err), -1);
    assert_non_null(strstr(err, "blocks"));
    assert_int_equal(forward_eval(f, seq, 3, 0, lg, false, err, sizeof err), 0);
    free(lg);
    forward_free(f);
    model_free(m);
}

/* start_pos 0 starts from an empty state: recomputing from 0 (what
 * --no-kv-cache does) gives the first run's logits again */
static void test_restart_at_zero(void **s)
{
    (void)s;
    model *m = load(QWEN35);
    forward_ctx *f = build(m, 64);
    const int32_t V = model_get_hparams(m)->n_vocab;
    float *a = malloc((size_t)N_SEQ * V * sizeof(float)), *b = malloc((size_t)N_SEQ * V * sizeof(float));
    char err[256];
    assert_int_equal(forward_eval(f, seq, N_SEQ, 0, a, true, err, sizeof err), 0);
    assert_int_equal(forward_eval(f, seq, N_SEQ, 0, b, true, err, sizeof err), 0);
    assert_memory_equal(a, b, (size_t)N_SEQ * V * sizeof(float));
    /* and so does a reset followed by one token at a time, against a fresh context */
    forward_rs_reset(f);
    assert_int_equal(forward_rs_pos(f), 0);
    eval_each(f, 0, N_SEQ, a, V);
    forward_ctx *g = build(m, 64);
    eval_each(g, 0, N_SEQ, b, V);
    assert_memory_equal(a, b, (size_t)N_SEQ * V * sizeof(float));
    forward_free(g);
    free(a);
    free(b);
    forward_free(f);
    model_free(m);
}

static void test_not_recurrent(void **s)
{
    (void)s;
    model *m = load("models/stories260K.gguf");
    forward_ctx *f = build(m, 32);
    assert_false(forward_is_recurrent(f));
    assert_int_equal(forward_rs_bytes(f), 0);
    assert_int_equal(forward_rs_pos(f), 0);
    forward_rs_save(f, NULL);
    forward_rs_load(f, NULL, 9);
    forward_rs_reset(f);
    assert_int_equal(forward_rs_pos(f), 0);
    /* positions stay the caller's: any start_pos the cache covers runs */
    float *lg = malloc((size_t)model_get_hparams(m)->n_vocab * sizeof(float));
    char err[256];
    assert_int_equal(forward_eval(f, seq, 4, 0, lg, false, err, sizeof err), 0);
    assert_int_equal(forward_eval(f, &seq[2], 1, 2, lg, false, err, sizeof err), 0);
    assert_int_equal(forward_eval(f, &seq[9], 1, 9, lg, false, err, sizeof err), 0);
    free(lg);
    forward_free(f);
    model_free(m);
}

/* ggml_compute_forward_gated_delta_net_one_chunk for one token, written the
 * way the reference writes it (the state transposed, one column dot at a
 * time through refdot_f32, the reference's ggml_vec_dot_f32), against
 * forward_deltanet_step's column-parallel form, for state sizes on both
 * sides of the dot's 16-, 8- and 64-element boundaries. */
static void ref_step(float *st, int S, const float *k, const float *q, const float *v, float beta, float eg, float scale,
                     float *out)
{
    /* st[j * S + i] = S[i][j] */
    float *delta = malloc((size_t)S * sizeof(float));
    for (int i = 0; i < S * S; i++)
        st[i] *= eg;
    for (int j = 0; j < S; j++)
        delta[j] = (v[j] - refdot_f32(S, st + (size_t)j * S, k)) * beta;
    for (int j = 0; j < S; j++)
        for (int i = 0; i < S; i++)
            st[(size_t)j * S + i] = fmaf(k[i], delta[j], st[(size_t)j * S + i]);
    for (int j = 0; j < S; j++)
        out[j] = refdot_f32(S, st + (size_t)j * S, q) * scale;
    free(delta);
}

static void test_delta_step_order(void **s)
{
    (void)s;
    static const int sizes[] = {8, 12, 16, 20, 24, 32, 40, 56, 64, 72, 96, 128, 192, 200, 256};
    uint64_t rng = 0x9e3779b97f4a7c15ull;
    for (size_t c = 0; c < sizeof sizes / sizeof sizes[0]; c++) {
        const int S = sizes[c];
        float *a = malloc((size_t)S * S * sizeof(float)), *b = malloc((size_t)S * S * sizeof(float));
        float *kq = malloc(3 * (size_t)S * sizeof(float)), *oa = malloc((size_t)S * sizeof(float)),
              *ob = malloc((size_t)S * sizeof(float));
        for (int i = 0; i < S * S; i++)
            a[i] = b[i] = 0.0f;
        for (int t = 0; t < 4; t++) {
            for (int i = 0; i < 3 * S; i++)
                kq[i] = (float)((double)(test_xorshift64(&rng) >> 11) / 9007199254740992.0 - 0.5);
            const float beta = 0.3f + 0.1f * (float)t, eg = 0.9f - 0.05f * (float)t, scale = 1.0f / sqrtf((float)S);
            forward_deltanet_step(a, S, kq, kq + S, kq + 2 * S, beta, eg, scale, oa);
            ref_step(b, S, kq, kq + S, kq + 2 * S, beta, eg, scale, ob);
            if (memcmp(oa, ob, (size_t)S * sizeof(float)) != 0)
                fail_msg("state size %d, token %d: outputs differ", S, t);
            for (int i = 0; i < S; i++)
                for (int j = 0; j < S; j++)
                    if (memcmp(&a[(size_t)i * S + j], &b[(size_t)j * S + i], sizeof(float)) != 0)
                        fail_msg("state size %d, token %d: state [%d][%d] differs", S, t, i, j);
        }
        free(a);
        free(b);
        free(kq);
        free(oa);
        free(ob);
    }
}

/* A prompt's tokens through forward_deltanet_steps (on column blocks
 * of the state run a batch of tokens each) against ref_step token after
 * token: every output and the state after, for batches that end inside
 * and on the 16-token batches, state sizes 64-256. */
static void test_delta_steps_batch(void **s)
{
    (void)s;
    static const int sizes[] = {32, 64, 128, 192, 256};
    static const int counts[] = {1, 5, 16, 17, 40};
    uint64_t rng = 0x51ed270b1a3c5e77ull;
    for (size_t c = 0; c < sizeof sizes / sizeof sizes[0]; c++)
        for (size_t nc = 0; nc < sizeof counts / sizeof counts[0]; nc++) {
            const int S = sizes[c], n = counts[nc];
            float *a = malloc((size_t)S * S * sizeof(float)), *b = malloc((size_t)S * S * sizeof(float));
            float *qkv = malloc(3 * (size_t)n * S * sizeof(float)), *oa = malloc((size_t)n * S * sizeof(float)),
                  *ob = malloc((size_t)S * sizeof(float)), *beta = malloc((size_t)n * sizeof(float)),
                  *eg = malloc((size_t)n * sizeof(float));
            for (int i = 0; i < S * S; i++) /* a state the prompt goes on from */
                a[i] = b[i] = (float)((double)(test_xorshift64(&rng) >> 11) / 9007199254740992.0 - 0.5);
            for (int i = 0; i < 3 * n * S; i++)
                qkv[i] = (float)((double)(test_xorshift64(&rng) >> 11) / 9007199254740992.0 - 0.5);
            for (int t = 0; t < n; t++) {
                beta[t] = 0.2f + 0.03f * (float)(t % 20);
                eg[t] = 0.95f - 0.01f * (float)(t % 30);
            }
            const float *q = qkv, *k = qkv + (size_t)n * S, *v = qkv + 2 * (size_t)n * S;
            const float scale = 1.0f / sqrtf((float)S);
            /* the reference's state is transposed: b[j][i] */
            for (int i = 0; i < S; i++)
                for (int j = 0; j < i; j++) {
                    const float x = b[(size_t)i * S + j];
                    b[(size_t)i * S + j] = b[(size_t)j * S + i];
                    b[(size_t)j * S + i] = x;
                }
            forward_deltanet_steps(a, S, n, q, k, v, beta, eg, scale, oa);
            for (int t = 0; t < n; t++) {
                ref_step(b, S, k + (size_t)t * S, q + (size_t)t * S, v + (size_t)t * S, beta[t], eg[t], scale, ob);
                if (memcmp(oa + (size_t)t * S, ob, (size_t)S * sizeof(float)) != 0)
                    fail_msg("state size %d, %d tokens: token %d's outputs differ", S, n, t);
            }
            for (int i = 0; i < S; i++)
                for (int j = 0; j < S; j++)
                    if (memcmp(&a[(size_t)i * S + j], &b[(size_t)j * S + i], sizeof(float)) != 0)
                        fail_msg("state size %d, %d tokens: state [%d][%d] differs", S, n, i, j);
            free(a);
            free(b);
            free(qkv);
            free(oa);
            free(ob);
            free(beta);
            free(eg);
        }
}

/* ggml_ssm_conv (a channel's taps, an FMA chain from 0 in tap order) then
 * ggml_vec_silu_f32 over each row of C channels (its 16-lane groups
 * through ggml_v_expf, the tail through expf), written a channel and a
 * token at a time, against forward_deltanet_conv's 8-channel vectors, over
 * channel ranges that start and end anywhere, with tails past the last
 * 16-lane group. */
static void ref_conv(float *x, int64_t W, int n, const float *wc, float *st, int64_t K, int64_t C, int64_t c0,
                     int64_t c1)
{
    for (int64_t c = c0; c < c1; c++) {
        float win[8];
        for (int64_t i = 0; i + 1 < K; i++)
            win[i] = st[c * (K - 1) + i];
        for (int t = 0; t < n; t++) {
            win[K - 1] = x[(size_t)t * W + c];
            float sum = 0.0f;
            for (int64_t i = 0; i < K; i++)
                sum = fmaf(win[i], wc[c * K + i], sum);
            x[(size_t)t * W + c] =
                c < (C & ~(int64_t)15) ? sum / (1.0f + v_expf(0.0f - sum)) : sum / (1.0f + expf(-sum));
            for (int64_t i = 0; i + 1 < K; i++)
                win[i] = win[i + 1];
        }
        for (int64_t i = 0; i + 1 < K; i++)
            st[c * (K - 1) + i] = win[i];
    }
}

static void test_conv_order(void **s)
{
    (void)s;
    static const struct {
        int64_t K, C, c0, c1;
    } cases[] = {{4, 72, 0, 72}, {4, 72, 3, 61}, {4, 8192, 1000, 1931}, {3, 40, 0, 40}, {1, 24, 5, 24}, {8, 48, 0, 48}};
    uint64_t rng = 0x2545f4914f6cdd1dull;
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        const int64_t K = cases[k].K, C = cases[k].C, W = C + 5;
        const int n = 7;
        float *xa = malloc((size_t)n * W * sizeof(float)), *xb = malloc((size_t)n * W * sizeof(float));
        float *wc = malloc((size_t)(C * K) * sizeof(float));
        float *sa = malloc((size_t)(C * K) * sizeof(float)), *sb = malloc((size_t)(C * K) * sizeof(float));
        for (int64_t i = 0; i < (int64_t)n * W; i++)
            xa[i] = xb[i] = (float)((double)(test_xorshift64(&rng) >> 11) / 9007199254740992.0 * 16.0 - 8.0);
        for (int64_t i = 0; i < C * K; i++) {
            wc[i] = (float)((double)(test_xorshift64(&rng) >> 11) / 9007199254740992.0 - 0.5);
            sa[i] = sb[i] = (float)((double)(test_xorshift64(&rng) >> 11) / 9007199254740992.0 * 4.0 - 2.0);
        }
        forward_deltanet_conv(xa, W, n, wc, sa, K, C, cases[k].c0, cases[k].c1);
        ref_conv(xb, W, n, wc, sb, K, C, cases[k].c0, cases[k].c1);
        if (memcmp(xa, xb, (size_t)n * W * sizeof(float)) != 0)
            fail_msg("K %lld, C %lld: outputs differ", (long long)K, (long long)C);
        if (memcmp(sa, sb, (size_t)(C * (K - 1)) * sizeof(float)) != 0)
            fail_msg("K %lld, C %lld: states differ", (long long)K, (long long)C);
        free(xa);
        free(xb);
        free(wc);
        free(sa);
        free(sb);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_delta_step_order),
        cmocka_unit_test(test_delta_steps_batch),
        cmocka_unit_test(test_conv_order),
        cmocka_unit_test(test_sizes),
        cmocka_unit_test(test_snapshot_restores),
        cmocka_unit_test(test_keep_rollback),
        cmocka_unit_test(test_wrong_position_refused),
        cmocka_unit_test(test_restart_at_zero),
        cmocka_unit_test(test_not_recurrent),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
