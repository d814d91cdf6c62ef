/* Speculative decoding (engine/spec): the ngram source against hand-worked
 * sequences; verification on a KV model (stories260K) and on a recurrent one
 * (qwen35-mini's DeltaNet): the tokens it samples are the target's greedy
 * ones, it accepts exactly the leading drafts that agree, and rejected
 * drafts leave nothing behind (the next step's logits bit-equal to a
 * context that never saw them, batch shapes the same); a draft model with
 * another vocabulary is refused with the mismatch named. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memory/memory.h"
#include "model/forward.h"
#include "model/model.h"
#include "sampler/sampler.h"
#include "spec/spec.h"
#include "testutil.h"

#define STORIES "models/stories260K.gguf"
#define TINYSPM "models/tiny-spm-q8_0.gguf"
#define QWEN35 "families2026/models/qwen35-mini-q8_0.gguf"

/* ---- ngram ---- */

static void test_ngram_hand(void **state)
{
    (void)state;
    int32_t out[8];
    /* the only earlier [1 2] is at position 0, which the reference skips */
    const int32_t a[] = {1, 2, 3, 4, 5, 6, 7, 8, 1};
    assert_int_equal(spec_ngram_draft(a, 9, 2, 2, 3, 8, out), 0);
    /* [1 2] at 1: what followed, at most m = 3, then cut to max */
    const int32_t b[] = {9, 1, 2, 3, 4, 5, 6, 7, 1};
    assert_int_equal(spec_ngram_draft(b, 9, 2, 2, 3, 8, out), 3);
    assert_int_equal(out[0], 3);
    assert_int_equal(out[1], 4);
    assert_int_equal(out[2], 5);
    assert_int_equal(spec_ngram_draft(b, 9, 2, 2, 3, 2, out), 2);
    /* the latest earlier match wins */
    const int32_t c[] = {9, 1, 2, 3, 4, 5, 1, 2, 7, 8, 9, 9, 1};
    assert_int_equal(spec_ngram_draft(c, 13, 2, 2, 3, 8, out), 3);
    assert_int_equal(out[0], 7);
    assert_int_equal(out[1], 8);
    assert_int_equal(out[2], 9);
    /* fewer than n_key tokens after the match: none (as the reference) */
    const int32_t d[] = {9, 8, 7, 6, 5, 4, 1, 2, 3, 1, 2};
    assert_int_equal(spec_ngram_draft(d, 11, 3, 3, 3, 8, out), 0);
    /* too little history: n must exceed n_key + m + 1 */
    assert_int_equal(spec_ngram_draft(b, 6, 2, 2, 3, 8, out), 0);
    /* the last token must match too */
    assert_int_equal(spec_ngram_draft(b, 9, 7, 2, 3, 8, out), 0);
}

/* spec_draft cuts an ngram match to --draft-max (m = 48 as the reference) */
static void test_ngram_draft_max(void **state)
{
    (void)state;
    enum { N = 120 };
    int32_t ctx[N];
    for (int32_t i = 0; i < N; i++)
        ctx[i] = 10 + i % 20; /* period 20: the last 12 tokens + next seen 20 back */
    model *m = model_load(TESTDATA_REQUIRE(STORIES), (char[256]){0}, 256);
    assert_non_null(m);
    spec_params p = spec_default_params();
    p.type = SPEC_NGRAM;
    p.draft_max = 5;
    char err[256];
    forward_params fp = forward_default_params();
    spec *s = spec_create(&p, m, &fp, err, sizeof err);
    assert_non_null(s);
    int32_t out[SPEC_DRAFT_MAX];
    const int32_t last = 10 + N % 20;
    assert_int_equal(spec_draft(s, ctx, N, last, 64, out, err, sizeof err), 5);
    for (int32_t i = 0; i < 5; i++)
        assert_int_equal(out[i], 10 + (N + 1 + i) % 20);
    assert_int_equal(spec_draft(s, ctx, N, last, 2, out, err, sizeof err), 2); /* the caller's room */
    spec_free(s);
    model_free(m);
}

/* ---- verification ---- */

typedef struct run {
    model *m;
    forward_ctx *f;
    int32_t n_vocab;
    sampler *smp;
} run;

static void run_open(run *r, const char *rel)
{
    char err[512];
    r->m = model_load(TESTDATA_REQUIRE(rel), err, sizeof err);
    if (!r->m)
        fail_msg("%s", err);
    forward_params p = forward_default_params();
    p.n_ctx = 256;
    p.n_threads = 2;
    r->f = forward_build(r->m, &p, err, sizeof err);
    if (!r->f)
        fail_msg("%s", err);
    r->n_vocab = model_get_hparams(r->m)->n_vocab;
    sampler_params sp = sampler_default_params();
    sp.temp = 0; /* greedy */
    r->smp = sampler_build(&sp, r->n_vocab);
}

static void run_close(run *r)
{
    sampler_free(r->smp);
    forward_free(r->f);
    model_free(r->m);
}

static const int32_t prompt[] = {1, 291, 278, 333, 415, 413, 415, 277, 372, 410, 354, 411};
#define NP ((int32_t)(sizeof prompt / sizeof prompt[0]))

static void eval(run *r, const int32_t *t, int32_t n, int32_t pos, float *logits)
{
    char err[256];
    if (forward_eval(r->f, t, n, pos, logits, false, err, sizeof err) != 0)
        fail_msg("%s", err);
}

static int32_t argmax(const float *x, int32_t n)
{
    int32_t b = 0;
    for (int32_t i = 1; i < n; i++)
        if (x[i] > x[b])
            b = i;
    return b;
}

/* g[0..n): the greedy continuation of the prompt, every token alone */
static void greedy(const char *rel, int32_t *g, int32_t n)
{
    run r;
    run_open(&r, rel);
    float *l = malloc((size_t)r.n_vocab * sizeof *l);
    eval(&r, prompt, NP, 0, l);
    for (int32_t i = 0; i < n; i++) {
        g[i] = argmax(l, r.n_vocab);
        if (i + 1 < n)
            eval(&r, &g[i], 1, NP + i, l);
    }
    free(l);
    run_close(&r);
}

/* A fresh context after the prompt; last = g[0] with drafts d[0..nd) verified.
 * Returns the tokens sampled (into out); the context then holds
 * prompt + g[0] + the accepted drafts. */
static int32_t verify(run *r, const int32_t *g, const int32_t *d, int32_t nd, int32_t *out, int32_t *acc)
{
    float *l = malloc((size_t)r->n_vocab * sizeof *l);
    eval(r, prompt, NP, 0, l);
    free(l);
    int32_t seq[NP + 1 + SPEC_DRAFT_MAX];
    memcpy(seq, prompt, sizeof prompt);
    seq[NP] = g[0];
    memcpy(seq + NP + 1, d, (size_t)nd * sizeof *d);
    float *rows = malloc((size_t)(nd + 1) * (size_t)r->n_vocab * sizeof *rows);
    void *rs = malloc(forward_rs_bytes(r->f) + 1);
    char err[256];
    int32_t n = spec_verify(r->f, r->smp, r->n_vocab, seq, NP, nd, rows, rs, out, NULL, acc, err, sizeof err);
    if (n < 0)
        fail_msg("%s", err);
    /* seq holds what f holds: the drafts a replay verified */
    for (int32_t i = 1; i < n; i++)
        assert_int_equal(seq[NP + i], out[i - 1]);
    free(rows);
    free(rs);
    return n;
}

static void check_verify(const char *rel, bool recurrent)
{
    int32_t g[8];
    greedy(rel, g, 8);
    run a, b;
    run_open(&a, rel);
    run_open(&b, rel);
    assert_int_equal(forward_is_recurrent(a.f), recurrent);
    const int32_t V = a.n_vocab;
    int32_t out[SPEC_DRAFT_MAX + 1];

    /* every draft right: all accepted, then the target's own next token */
    int32_t d_all[3] = {g[1], g[2], g[3]}, acc = -1;
    assert_int_equal(verify(&a, g, d_all, 3, out, &acc), 4);
    assert_int_equal(acc, 3);
    for (int32_t i = 0; i < 4; i++)
        assert_int_equal(out[i], g[i + 1]);
    if (recurrent)
        assert_int_equal(forward_rs_pos(a.f), NP + 4);

    /* the third draft wrong: two accepted, the third position sampled;
     * another wrong draft after it does not matter. A KV cache keeps
     * [g0 g1 g2]; a recurrent state (llama-server's checkpoint without
     * rollback states) goes back and verifies [g0 g1 g2 g3] again as one
     * batch, drawing g4 too: two drafts accepted as the server counts them */
    const int32_t x = (g[3] + 1) % V, y = (g[3] + 2) % V, z = (g[3] + 3) % V;
    int32_t d_bad[4] = {g[1], g[2], x, y};
    const int32_t nb = recurrent ? 4 : 3;
    assert_int_equal(verify(&a, g, d_bad, 4, out, &acc), nb);
    assert_int_equal(acc, 2);
    for (int32_t i = 0; i < nb; i++)
        assert_int_equal(out[i], g[i + 1]);
    if (recurrent)
        assert_int_equal(forward_rs_pos(a.f), NP + 4);

    /* the next step, g[nb] at NP + nb, against a context that never saw x, y:
     * a KV model's rows came from a batch of the same shape with other
     * rejected tokens; a recurrent state is what [g0 g1 g2 g3] as one batch gives */
    float *la = malloc((size_t)V * sizeof *la), *lb = malloc((size_t)V * sizeof *lb);
    eval(&a, &g[nb], 1, NP + nb, la);
    float *tmp = malloc((size_t)5 * (size_t)V * sizeof *tmp);
    eval(&b, prompt, NP, 0, tmp);
    char err[256];
    if (recurrent) {
        const int32_t t4[4] = {g[0], g[1], g[2], g[3]};
        eval(&b, t4, 4, NP, tmp);
    } else {
        const int32_t t5[5] = {g[0], g[1], g[2], z, (z + 1) % V};
        assert_int_equal(forward_eval(b.f, t5, 5, NP, tmp, true, err, sizeof err), 0);
    }
    eval(&b, &g[nb], 1, NP + nb, lb);
    assert_memory_equal(la, lb, (size_t)V * sizeof *la);

    /* the first draft wrong: nothing accepted; a recurrent state replays
     * [g0 g1] and draws g2 too, none accepted as the server counts them */
    int32_t d_none[3] = {x, g[2], g[3]};
    const int32_t nn = recurrent ? 2 : 1;
    assert_int_equal(verify(&a, g, d_none, 3, out, &acc), nn);
    assert_int_equal(acc, 0);
    for (int32_t i = 0; i < nn; i++)
        assert_int_equal(out[i], g[i + 1]);
    if (recurrent) {
        assert_int_equal(forward_rs_pos(a.f), NP + 2);
        /* one token alone after the replay: what [g0 g1] as one batch gives */
        eval(&a, &g[2], 1, NP + 2, la);
        eval(&b, prompt, NP, 0, tmp);
        const int32_t t2[2] = {g[0], g[1]};
        eval(&b, t2, 2, NP, tmp);
        eval(&b, &g[2], 1, NP + 2, lb);
        assert_memory_equal(la, lb, (size_t)V * sizeof *la);
    }
    free(la);
    free(lb);
    free(tmp);
    run_close(&a);
    run_close(&b);
}

static void test_verify_kv(void **state)
{
    (void)state;
    check_verify(STORIES, false);
}

static void test_verify_recurrent(void **state)
{
    (void)state;
    check_verify(QWEN35, true);
}

/* ---- the memory's verified tokens ---- */

static void lens_none(void *user, int32_t layer, int32_t row0, int32_t n_rows, const float *logits)
{
    (void)user, (void)layer, (void)row0, (void)n_rows, (void)logits;
}

/* memory_verify keeps 3 tokens and counts them one by one (memory_advance);
 * the logit lens of a step among them (run between two tokens) must not
 * rewrite a cache row a verification batch computed and that is not counted
 * yet: the next distribution equals the one without the lens, bit for bit.
 * (A guard: stories260K's K/V rows come out the same computed alone or in a
 * batch, so this did not fail before memory_lens kept such rows; a model
 * whose rows round differently in a batch would.) */
static void run_verify_lens(bool with_lens, float *out)
{
    run r;
    run_open(&r, STORIES);
    memory m;
    char err[256];
    assert_true(memory_init(&m, r.f, 256, r.n_vocab, false, NULL, err, sizeof err));
    int32_t g[8];
    greedy(STORIES, g, 8);
    int32_t ev = 0;
    assert_int_equal(memory_ensure(&m, prompt, NP, NP, &ev, err, sizeof err), 0);
    float *rows = malloc((size_t)4 * (size_t)r.n_vocab * sizeof *rows);
    assert_int_equal(memory_verify(&m, g, 4, rows, err, sizeof err), 0);
    assert_int_equal(memory_verify_keep(&m, 4, err, sizeof err), 0);
    memory_advance(&m, rows);
    assert_int_equal(m.n_past, NP + 1);
    if (with_lens) { /* the step of g[1], at NP + 1: computed by the batch, not counted yet */
        int32_t seq[NP + 2];
        memcpy(seq, prompt, sizeof prompt);
        seq[NP] = g[0];
        seq[NP + 1] = g[1];
        float *l = malloc((size_t)r.n_vocab * sizeof *l);
        assert_int_equal(memory_lens(&m, seq, NP + 2, l, lens_none, NULL, err, sizeof err), 0);
        free(l);
    }
    memory_advance(&m, rows + r.n_vocab);
    memory_advance(&m, rows + 2 * (size_t)r.n_vocab);
    memory_advance(&m, rows + 3 * (size_t)r.n_vocab);
    assert_int_equal(m.n_past, NP + 4);
    assert_int_equal(memory_push(&m, g[4], err, sizeof err), 0);
    memcpy(out, m.logits, (size_t)r.n_vocab * sizeof *out);
    free(rows);
    memory_release(&m);
    run_close(&r);
}

static void test_lens_keeps_verified_rows(void **state)
{
    (void)state;
    float *a = malloc(512 * sizeof *a), *b = malloc(512 * sizeof *b);
    run_verify_lens(false, a);
    run_verify_lens(true, b);
    assert_memory_equal(a, b, 512 * sizeof *a);
    free(a);
    free(b);
}

/* ---- the draft model's vocabulary ---- */

static void test_vocab_mismatch(void **state)
{
    (void)state;
    char err[512];
    model *t = model_load(TESTDATA_REQUIRE(STORIES), err, sizeof err);
    model *d = model_load(TESTDATA_REQUIRE(TINYSPM), err, sizeof err);
    assert_non_null(t);
    assert_non_null(d);
    assert_true(spec_vocab_check(t, t, err, sizeof err));
    assert_false(spec_vocab_check(t, d, err, sizeof err));
    assert_non_null(strstr(err, "token"));
    spec_params p = spec_default_params();
    p.type = SPEC_DRAFT;
    p.draft_model = TESTDATA_REQUIRE(TINYSPM);
    forward_params fp = forward_default_params();
    fp.n_ctx = 64;
    assert_null(spec_create(&p, t, &fp, err, sizeof err));
    assert_non_null(strstr(err, "vocabulary does not match"));
    p.draft_model = NULL;
    assert_null(spec_create(&p, t, &fp, err, sizeof err));
    assert_non_null(strstr(err, "--draft-model"));
    model_free(t);
    model_free(d);
}

static void test_type_names(void **state)
{
    (void)state;
    enum spec_type t;
    assert_true(spec_type_parse("ngram", &t));
    assert_int_equal(t, SPEC_NGRAM);
    assert_true(spec_type_parse("draft-simple", &t));
    assert_int_equal(t, SPEC_DRAFT);
    assert_true(spec_type_parse("off", &t));
    assert_int_equal(t, SPEC_OFF);
    assert_true(spec_type_parse("auto", &t));
    assert_int_equal(t, SPEC_AUTO);
    assert_false(spec_type_parse("eagle", &t));
    assert_string_equal(spec_type_name(SPEC_MTP), "mtp");
}

/* --spec auto without an MTP block or a draft model is ngram; a window of
 * 24 drafts under 40 % accepted pauses drafting for 32 tokens, then it
 * drafts again; a window at or above it does not */
static void test_auto_pauses(void **state)
{
    (void)state;
    enum { N = 120 };
    int32_t ctx[N];
    for (int32_t i = 0; i < N; i++)
        ctx[i] = 10 + i % 20;
    model *m = model_load(TESTDATA_REQUIRE(STORIES), (char[256]){0}, 256);
    assert_non_null(m);
    spec_params p = spec_default_params();
    p.type = SPEC_AUTO;
    char err[256];
    forward_params fp = forward_default_params();
    spec *s = spec_create(&p, m, &fp, err, sizeof err);
    assert_non_null(s);
    assert_int_equal(spec_get_params(s)->type, SPEC_NGRAM);
    int32_t out[SPEC_DRAFT_MAX];
    const int32_t last = 10 + N % 20;
    assert_int_equal(spec_draft(s, ctx, N, last, 3, out, err, sizeof err), 3);
    for (int i = 0; i < 8; i++) /* 24 drafts, 10 accepted: 41.7 %, kept on */
        spec_count(s, 3, i < 2 ? 2 : 1);
    assert_int_equal(spec_draft(s, ctx, N, last, 3, out, err, sizeof err), 3);
    for (int i = 0; i < 8; i++) /* 24 drafts, 9 accepted: 37.5 %, paused */
        spec_count(s, 3, i < 1 ? 2 : 1);
    for (int i = 0; i < SPEC_AUTO_PAUSE; i++)
        assert_int_equal(spec_draft(s, ctx, N, last, 3, out, err, sizeof err), 0);
    assert_int_equal(spec_draft(s, ctx, N, last, 3, out, err, sizeof err), 3);
    spec_free(s);
    /* --spec ngram never pauses */
    p.type = SPEC_NGRAM;
    s = spec_create(&p, m, &fp, err, sizeof err);
    assert_non_null(s);
    for (int i = 0; i < 8; i++)
        spec_count(s, 3, 0);
    assert_int_equal(spec_draft(s, ctx, N, last, 3, out, err, sizeof err), 3);
    spec_free(s);
    model_free(m);
}

/* forward_eval with no logits (a draft model catching up) leaves the cache,
 * or the recurrent state, as with them: the next token's logits are the
 * same bits */
static void no_logits_case(const char *rel)
{
    run a, b;
    run_open(&a, rel);
    run_open(&b, rel);
    float *la = malloc((size_t)a.n_vocab * sizeof *la), *lb = malloc((size_t)a.n_vocab * sizeof *lb);
    assert_non_null(la);
    assert_non_null(lb);
    char err[256];
    eval(&a, prompt, NP, 0, la);
    assert_int_equal(forward_eval(b.f, prompt, NP, 0, NULL, false, err, sizeof err), 0);
    const int32_t next = 300;
    eval(&a, &next, 1, NP, la);
    eval(&b, &next, 1, NP, lb);
    assert_memory_equal(la, lb, (size_t)a.n_vocab * sizeof *la);
    free(la);
    free(lb);
    run_close(&a);
    run_close(&b);
}

static void test_eval_no_logits(void **state)
{
    (void)state;
    no_logits_case(STORIES);
    no_logits_case(QWEN35);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ngram_hand),
        cmocka_unit_test(test_ngram_draft_max),
        cmocka_unit_test(test_verify_kv),
        cmocka_unit_test(test_verify_recurrent),
        cmocka_unit_test(test_vocab_mismatch),
        cmocka_unit_test(test_type_names),
        cmocka_unit_test(test_auto_pauses),
        cmocka_unit_test(test_eval_no_logits),
        cmocka_unit_test(test_lens_keeps_verified_rows),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
