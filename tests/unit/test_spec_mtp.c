/* --spec mtp (engine/spec/spec_mtp.c, model_mtp_view): toy Qwen3.5 dense
 * and MoE files with an MTP block are written here by
 * tests/tools/gguf_mtp.py from the shared mini models (none is committed).
 *  - the block's graph by hand: with every block's output scaled to 0 and
 *    eh_proj the identity on one half of its input, the block's draft is
 *    the head on rmsnorm(rmsnorm(that half)): on the embedding half the
 *    sampled token's embedding, on the hidden-state half the target's
 *    h_nextn of the token before (pending) and then the block's own (the
 *    chain), worked out here in double precision from the weights;
 *  - decoding: spec_step's tokens are the plain greedy and seeded ones
 *    (the recurrent target's rollback to the state kept after the last
 *    accepted position included), and a
 *    block that copies the target (embedding half, blocks at 0) has every
 *    draft accepted;
 *  - a file without a block is refused, naming what is missing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/tensor.h"
#include "model/forward.h"
#include "model/model.h"
#include "sampler/sampler.h"
#include "spec/spec.h"
#include "testutil.h"

#define QWEN35 "families2026/models/qwen35-mini-q8_0.gguf"
#define QWEN35MOE "families2026/models/qwen35moe-mini-q8_0.gguf"

static char g_dir[256];

static int setup(void **state)
{
    (void)state;
    snprintf(g_dir, sizeof g_dir, "/tmp/tokscope_test_spec_mtp.%d", (int)getpid());
    char cmd[600];
    snprintf(cmd, sizeof cmd, "mkdir -p %s", g_dir);
    return system(cmd) == 0 ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf %s", g_dir);
    return system(cmd) == 0 ? 0 : -1;
}

/* gguf_mtp.py FLAGS SRC OUT FROM FACTOR (args: "FLAGS FROM FACTOR"): the written path */
static const char *write_mtp(const char *src, const char *name, const char *args)
{
    static char out[8][512];
    static int slot;
    char *o = out[slot++ & 7];
    snprintf(o, sizeof out[0], "%s/%s.gguf", g_dir, name);
    char cmd[2048];
    /* args: the flags, then FROM FACTOR */
    const char *num = args;
    while (*num == '-') {
        num = strchr(num, ' ');
        num = num ? num + 1 : "";
    }
    snprintf(cmd, sizeof cmd, "python3 tests/tools/gguf_mtp.py %.*s %s %s %s >/dev/null", (int)(num - args),
             args, src, o, num);
    assert_int_equal(system(cmd), 0);
    return o;
}

static void rmsnorm_d(double *y, const double *x, int n, double eps_f)
{
    /* the values, not the bits: in double */
    double s = 0;
    for (int i = 0; i < n; i++)
        s += x[i] * x[i];
    const double k = 1.0 / sqrt(s / n + eps_f);
    for (int i = 0; i < n; i++)
        y[i] = x[i] * k;
}

/* The head on rmsnorm(x) * output_norm, x = ea * rmsnorm(e) + ha *
 * rmsnorm(h) (a block whose outputs are 0, eh_proj the identity on the
 * halves asked for, enorm and hnorm ones): its argmax, and that vector
 * (the block's h_nextn) into hn. */
static int32_t head_argmax(const model *m, const float *e, const float *h, double ea, double ha, float *hn)
{
    const model_hparams *hp = model_get_hparams(m);
    const model_weights *w = model_get_weights(m);
    const int E = (int)hp->n_embd;
    double x[E], y[E], z[E];
    for (int i = 0; i < E; i++)
        x[i] = e[i];
    rmsnorm_d(y, x, E, hp->rms_eps);
    for (int i = 0; i < E; i++)
        x[i] = h[i];
    rmsnorm_d(z, x, E, hp->rms_eps);
    for (int i = 0; i < E; i++)
        x[i] = ea * y[i] + ha * z[i];
    rmsnorm_d(z, x, E, hp->rms_eps);
    const float *onw = w->output_norm->data;
    for (int i = 0; i < E; i++) {
        z[i] *= onw[i];
        hn[i] = (float)z[i];
    }
    const gguf_tensor *out = w->output;
    const size_t rb = tensor_row_size((enum tensor_type)out->type, E);
    float row[E];
    int32_t best = 0;
    double best_v = -INFINITY;
    for (int32_t t = 0; t < hp->n_vocab; t++) {
        tensor_dequantize_row((enum tensor_type)out->type, (const uint8_t *)out->data + (size_t)t * rb, row,
                              E);
        double d = 0;
        for (int i = 0; i < E; i++)
            d += row[i] * z[i];
        if (d > best_v) {
            best_v = d;
            best = t;
        }
    }
    return best;
}

/* the block's embedding of tok (its own nextn.embed_tokens) */
static void embedding(const model *m, int32_t tok, float *e)
{
    const model_weights *w = model_get_weights(m);
    const gguf_tensor *t = w->mtp_embed ? w->mtp_embed : w->tok_embd;
    const int64_t E = model_get_hparams(m)->n_embd;
    const size_t rb = tensor_row_size((enum tensor_type)t->type, E);
    tensor_dequantize_row((enum tensor_type)t->type, (const uint8_t *)t->data + (size_t)tok * rb, e, E);
}

static int32_t argmax(const float *x, int32_t n)
{
    int32_t b = 0;
    for (int32_t i = 1; i < n; i++)
        if (x[i] > x[b])
            b = i;
    return b;
}

static const int32_t prompt[] = {1, 400, 300, 200, 100, 50, 25};
#define N_PROMPT ((int32_t)(sizeof prompt / sizeof prompt[0]))

/* the drafts of a block with every output at 0, worked out by hand: its
 * input the embedding half (flags "--shift-embed": with the shifted rows
 * each draft is the token after the one before, which the trunk's rows
 * would not give: a tied head finds a token's own row), or both halves
 * (the target's h_nextn of the token before, pending, then the block's
 * own, the chain) */
static void by_hand(const char *src, const char *name, bool both)
{
    const char *path = write_mtp(src, name, both ? "--both --shift-embed 0 0" : "--shift-embed 0 0");
    char err[512];
    model *m = model_load(path, err, sizeof err);
    assert_non_null(m);
    const int64_t E = model_get_hparams(m)->n_embd;
    const int32_t V = model_get_hparams(m)->n_vocab;
    forward_params fp = forward_default_params();
    fp.n_ctx = 64;
    fp.n_threads = 2;
    forward_ctx *f = forward_build(m, &fp, err, sizeof err);
    assert_non_null(f);
    spec_params sp = spec_default_params();
    sp.type = SPEC_MTP;
    spec *s = spec_create(&sp, m, &fp, err, sizeof err);
    assert_non_null(s);
    float *logits = malloc((size_t)V * sizeof *logits), *h = malloc((size_t)N_PROMPT * E * sizeof *h);
    assert_int_equal(spec_eval(s, f, prompt, N_PROMPT, 0, logits, false, err, sizeof err), 0);
    const int32_t last = argmax(logits, V);
    int32_t seq[64], out[3];
    memcpy(seq, prompt, sizeof prompt);
    assert_int_equal(spec_draft(s, seq, N_PROMPT, last, 3, out, err, sizeof err), 3);
    /* the target's h_nextn of the prompt's last token, from a context of its own */
    forward_ctx *f2 = forward_build(m, &fp, err, sizeof err);
    assert_non_null(f2);
    assert_int_equal(forward_eval_h(f2, prompt, NULL, N_PROMPT, 0, logits, false, h, err, sizeof err), 0);
    float e[E], hin[E], hn[E];
    memcpy(hin, h + (size_t)(N_PROMPT - 1) * E, sizeof hin);
    int32_t tok = last;
    for (int i = 0; i < 3; i++) {
        embedding(m, tok, e);
        const int32_t want = head_argmax(m, e, hin, 1.0, both ? 1.0 : 0.0, hn);
        assert_int_equal(out[i], want);
        if (!both)
            assert_int_equal(want, (tok + 1) % V);
        memcpy(hin, hn, sizeof hin);
        tok = want;
    }
    free(logits);
    free(h);
    spec_free(s);
    forward_free(f);
    forward_free(f2);
    model_free(m);
}

static void test_by_hand_embedding(void **state)
{
    (void)state;
    by_hand(TESTDATA_REQUIRE(QWEN35), "dense_e", false);
    by_hand(TESTDATA_REQUIRE(QWEN35MOE), "moe_e", false);
}

static void test_by_hand_both(void **state)
{
    (void)state;
    by_hand(TESTDATA_REQUIRE(QWEN35), "dense_eh", true);
    by_hand(TESTDATA_REQUIRE(QWEN35MOE), "moe_eh", true);
}

/* n tokens after the prompt, plain (sp NULL) or through spec_step; the
 * counts into *st */
static void decode(const char *path, const sampler_params *smp_p, bool mtp, int32_t n, int32_t *toks,
                   spec_stats *st)
{
    char err[512];
    model *m = model_load(path, err, sizeof err);
    assert_non_null(m);
    const int32_t V = model_get_hparams(m)->n_vocab;
    forward_params fp = forward_default_params();
    fp.n_ctx = 256;
    fp.n_threads = 2;
    forward_ctx *f = forward_build(m, &fp, err, sizeof err);
    assert_non_null(f);
    spec *s = NULL;
    if (mtp) {
        spec_params sp = spec_default_params();
        sp.type = SPEC_MTP;
        s = spec_create(&sp, m, &fp, err, sizeof err);
        assert_non_null(s);
    }
    sampler *smp = sampler_build(smp_p, V);
    float *logits = malloc((size_t)V * sizeof *logits);
    int32_t seq[256], q[SPEC_DRAFT_MAX + 1], nq = 0, iq = 0;
    memcpy(seq, prompt, sizeof prompt);
    for (int32_t i = 0; i < N_PROMPT; i++)
        sampler_accept(smp, prompt[i]);
    assert_int_equal(spec_eval(s, f, seq, N_PROMPT, 0, logits, false, err, sizeof err), 0);
    int32_t n_past = N_PROMPT;
    for (int32_t g = 0; g < n; g++) {
        const bool queued = iq < nq;
        const int32_t id = queued ? q[iq++] : sampler_sample(smp, logits, NULL);
        if (!queued)
            sampler_accept(smp, id);
        toks[g] = id;
        if (iq < nq)
            continue;
        if (s) {
            int32_t max = n - g - 1;
            nq = spec_step(s, f, smp, seq, n_past, id, max, q, err, sizeof err);
            iq = 0;
            assert_true(nq >= 0);
            if (nq > 0) {
                n_past += nq;
                continue;
            }
        }
        seq[n_past] = id;
        assert_int_equal(spec_eval(s, f, seq + n_past, 1, n_past, logits, false, err, sizeof err), 0);
        n_past++;
    }
    *st = s ? spec_get_stats(s) : (spec_stats){0, 0, 0};
    free(logits);
    sampler_free(smp);
    spec_free(s);
    forward_free(f);
    model_free(m);
}

static void same_tokens(const char *path, const sampler_params *p, spec_stats *st)
{
    int32_t a[80], b[80];
    spec_stats st0;
    decode(path, p, false, 80, a, &st0);
    decode(path, p, true, 80, b, st);
    assert_memory_equal(a, b, sizeof a);
    assert_true(st->n_drafted > 0);
}

static void test_same_tokens(void **state)
{
    (void)state;
    const char *srcs[2] = {TESTDATA_REQUIRE(QWEN35), TESTDATA_REQUIRE(QWEN35MOE)};
    for (int i = 0; i < 2; i++) {
        const char *path = write_mtp(srcs[i], i ? "moe015" : "dense015", "0 0.15");
        sampler_params greedy = sampler_default_params();
        greedy.temp = 0;
        sampler_params seeded = sampler_default_params();
        seeded.temp = 0.9f;
        seeded.seed = 11;
        seeded.seed_set = true;
        spec_stats st;
        same_tokens(path, &greedy, &st);
        print_message("%s: greedy drafted %lld, accepted %lld\n", i ? "moe" : "dense",
                      (long long)st.n_drafted, (long long)st.n_accepted);
        /* some drafts accepted, some rejected: the rollback ran */
        assert_true(st.n_accepted > 0);
        assert_true(st.n_accepted < st.n_drafted);
        same_tokens(path, &seeded, &st);
    }
}

/* a block that copies the target (embedding half, every block at 0):
 * every greedy draft is what the target then samples */
static void test_copy_accepts_all(void **state)
{
    (void)state;
    const char *path = write_mtp(TESTDATA_REQUIRE(QWEN35), "copy", "0 0");
    sampler_params greedy = sampler_default_params();
    greedy.temp = 0;
    spec_stats st;
    same_tokens(path, &greedy, &st);
    assert_int_equal(st.n_accepted, st.n_drafted);
}

static void test_refused(void **state)
{
    (void)state;
    char err[512];
    model *m = model_load(TESTDATA_REQUIRE(QWEN35), err, sizeof err);
    assert_non_null(m);
    assert_null(model_mtp_view(m, err, sizeof err));
    assert_non_null(strstr(err, "no MTP block"));
    forward_params fp = forward_default_params();
    fp.n_ctx = 64;
    spec_params sp = spec_default_params();
    sp.type = SPEC_MTP;
    assert_null(spec_create(&sp, m, &fp, err, sizeof err));
    assert_non_null(strstr(err, "--spec mtp"));
    model_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_refused),      cmocka_unit_test(test_by_hand_embedding),
        cmocka_unit_test(test_by_hand_both), cmocka_unit_test(test_copy_accepts_all),
        cmocka_unit_test(test_same_tokens),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
