/* Sampler chain on hand-made logit vectors: each step alone, the whole chain,
 * edge cases, reproducibility and a chi-square test of the draw. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/model.h"
#include "sampler/sampler.h"
#include "sampler/sampler_internal.h"
#include "tokenizer/tokenizer.h"
#include "testutil.h"

/* Parameters with every filter off: plain softmax at temp 1. */
static sampler_params plain_params(void)
{
    sampler_params p = sampler_default_params();
    p.temp = 1.0f;
    p.top_k = 0;
    p.top_p = 1.0f;
    p.min_p = 0.0f;
    p.typical_p = 1.0f;
    p.seed = 1234;
    p.seed_set = true;
    p.n_top = SAMPLER_MAX_TOP;
    return p;
}

static void softmax_ref(const float *l, int n, float t, double *out)
{
    double mx = -INFINITY, s = 0;
    for (int i = 0; i < n; i++)
        if (l[i] > mx)
            mx = l[i];
    for (int i = 0; i < n; i++) {
        out[i] = isinf(l[i]) && l[i] < 0 ? 0.0 : exp((l[i] - mx) / t);
        s += out[i];
    }
    for (int i = 0; i < n; i++)
        out[i] /= s;
}

/* p_post of id from the step's candidate list (all tokens reported when n_vocab <= n_top) */
static float post_of(const sampler_step *st, int32_t id)
{
    for (int i = 0; i < st->n_top; i++)
        if (st->top[i].id == id)
            return st->top[i].p_post;
    fail_msg("token %d not in the reported candidates", id);
    return -1;
}

static float raw_of(const sampler_step *st, int32_t id)
{
    for (int i = 0; i < st->n_top; i++)
        if (st->top[i].id == id)
            return st->top[i].p_raw;
    fail_msg("token %d not in the reported candidates", id);
    return -1;
}

static void check_sums(const sampler_step *st, int n_vocab)
{
    assert_int_equal(st->n_top, n_vocab);
    double sr = 0, sp = 0;
    int nz = 0;
    for (int i = 0; i < st->n_top; i++) {
        sr += st->top[i].p_raw;
        sp += st->top[i].p_post;
        nz += st->top[i].p_post > 0;
        if (i > 0)
            assert_true(st->top[i - 1].logit >= st->top[i].logit);
    }
    assert_float_equal(sr, 1.0, 1e-5);
    assert_float_equal(sp, 1.0, 1e-5);
    assert_true(nz <= st->n_survivors);
    assert_true(st->p_post > 0);
}

static void test_defaults(void **state)
{
    (void)state;
    sampler_params p = sampler_default_params();
    assert_float_equal(p.temp, 0.8f, 1e-7);
    assert_int_equal(p.top_k, 40);
    assert_float_equal(p.top_p, 0.95f, 1e-7);
    assert_float_equal(p.min_p, 0.05f, 1e-7);
    assert_float_equal(p.typical_p, 1.0f, 1e-7);
    assert_float_equal(p.repeat_penalty, 1.0f, 1e-7);
    assert_int_equal(p.repeat_last_n, 64);
    assert_float_equal(p.frequency_penalty, 0.0f, 1e-7);
    assert_float_equal(p.presence_penalty, 0.0f, 1e-7);
    assert_false(p.seed_set);
    assert_int_equal(p.n_predict, -1);
    assert_int_equal(p.n_stop, 0);
}

static void test_plain_softmax(void **state)
{
    (void)state;
    const float l[6] = {1.0f, 3.0f, -2.0f, 0.5f, 3.0f, 0.0f};
    double ref[6];
    softmax_ref(l, 6, 1.0f, ref);
    sampler_params p = plain_params();
    sampler *s = sampler_build(&p, 6);
    sampler_step st;
    sampler_sample(s, l, &st);
    check_sums(&st, 6);
    assert_int_equal(st.n_survivors, 6);
    for (int i = 0; i < 6; i++) {
        assert_float_equal(raw_of(&st, i), ref[i], 1e-6);
        assert_float_equal(post_of(&st, i), ref[i], 1e-6);
    }
    double h = 0;
    for (int i = 0; i < 6; i++)
        h -= ref[i] * log(ref[i]);
    assert_float_equal(st.entropy_raw, h, 1e-5);
    assert_float_equal(st.entropy_post, h, 1e-5);
    assert_float_equal(st.logit, l[st.token], 0);
    assert_float_equal(st.p_raw, ref[st.token], 1e-6);
    /* ties in top[] come by id: 1 before 4 */
    assert_int_equal(st.top[0].id, 1);
    assert_int_equal(st.top[1].id, 4);
    sampler_free(s);
}

static void test_greedy(void **state)
{
    (void)state;
    const float l[5] = {0.1f, 2.0f, 5.0f, -1.0f, 4.9f};
    sampler_params p = sampler_default_params();
    p.temp = 0.0f;
    p.n_top = 5;
    sampler *s = sampler_build(&p, 5);
    sampler_step st;
    for (int k = 0; k < 20; k++) {
        assert_int_equal(sampler_sample(s, l, &st), 2);
        assert_float_equal(st.p_post, 1.0f, 0);
        assert_int_equal(st.n_survivors, 1);
        assert_int_equal(st.rank, 0);
        assert_float_equal(st.entropy_post, 0.0f, 0);
        check_sums(&st, 5);
    }
    p.temp = -1.0f; /* negative is greedy too */
    sampler_set_params(s, &p);
    assert_int_equal(sampler_sample(s, l, NULL), 2);
    sampler_free(s);
}

static void test_top_k(void **state)
{
    (void)state;
    const float l[10] = {0.3f, 1.2f, -0.5f, 2.2f, 0.0f, 1.9f, -3.0f, 0.8f, 1.1f, 0.2f};
    sampler_params p = plain_params();
    p.top_k = 3;
    sampler *s = sampler_build(&p, 10);
    sampler_step st;
    const float kept[3] = {2.2f, 1.9f, 1.2f};
    double ref[3];
    softmax_ref(kept, 3, 1.0f, ref);
    for (int k = 0; k < 50; k++) {
        int32_t t = sampler_sample(s, l, &st);
        assert_true(t == 3 || t == 5 || t == 1);
        assert_int_equal(st.n_survivors, 3);
        check_sums(&st, 10);
        assert_float_equal(post_of(&st, 3), ref[0], 1e-6);
        assert_float_equal(post_of(&st, 5), ref[1], 1e-6);
        assert_float_equal(post_of(&st, 1), ref[2], 1e-6);
        assert_float_equal(post_of(&st, 8), 0.0f, 0);
    }
    /* top_k larger than the vocab, and <= 0: no-op */
    p.top_k = 1000;
    sampler_set_params(s, &p);
    sampler_sample(s, l, &st);
    assert_int_equal(st.n_survivors, 10);
    p.top_k = -1;
    sampler_set_params(s, &p);
    sampler_sample(s, l, &st);
    assert_int_equal(st.n_survivors, 10);
    p.top_k = 1;
    sampler_set_params(s, &p);
    assert_int_equal(sampler_sample(s, l, &st), 3);
    assert_int_equal(st.n_survivors, 1);
    sampler_free(s);
}

static void test_top_p(void **state)
{
    (void)state;
    const float l[4] = {logf(0.15f), logf(0.5f), logf(0.05f), logf(0.3f)};
    sampler_params p = plain_params();
    sampler *s = sampler_build(&p, 4);
    sampler_step st;
    p.top_p = 0.7f; /* 0.5 + 0.3 >= 0.7 */
    sampler_set_params(s, &p);
    sampler_sample(s, l, &st);
    assert_int_equal(st.n_survivors, 2);
    check_sums(&st, 4);
    assert_float_equal(post_of(&st, 1), 0.5 / 0.8, 1e-5);
    assert_float_equal(post_of(&st, 3), 0.3 / 0.8, 1e-5);
    assert_float_equal(post_of(&st, 0), 0.0f, 0);
    p.top_p = 0.9f; /* 0.95 needs three */
    sampler_set_params(s, &p);
    sampler_sample(s, l, &st);
    assert_int_equal(st.n_survivors, 3);
    assert_float_equal(post_of(&st, 2), 0.0f, 0);
    p.top_p = 0.0f; /* keeps one */
    sampler_set_params(s, &p);
    for (int k = 0; k < 20; k++) {
        assert_int_equal(sampler_sample(s, l, &st), 1);
        assert_int_equal(st.n_survivors, 1);
        assert_float_equal(st.p_post, 1.0f, 1e-6);
    }
    sampler_free(s);
}

static void test_min_p(void **state)
{
    (void)state;
    const float l[5] = {logf(0.3f), logf(0.05f), logf(0.5f), logf(0.09f), logf(0.06f)};
    sampler_params p = plain_params();
    p.min_p = 0.15f; /* threshold 0.075: keeps 0.5 0.3 0.09 */
    sampler *s = sampler_build(&p, 5);
    sampler_step st;
    sampler_sample(s, l, &st);
    assert_int_equal(st.n_survivors, 3);
    check_sums(&st, 5);
    assert_float_equal(post_of(&st, 3), 0.09 / 0.89, 1e-5);
    assert_float_equal(post_of(&st, 4), 0.0f, 0);
    p.min_p = 1.0f; /* only the maximum */
    sampler_set_params(s, &p);
    for (int k = 0; k < 10; k++) {
        assert_int_equal(sampler_sample(s, l, &st), 2);
        assert_int_equal(st.n_survivors, 1);
    }
    const float tie[5] = {1.0f, 2.0f, 2.0f, 0.5f, -1.0f};
    sampler_sample(s, tie, &st);
    assert_int_equal(st.n_survivors, 2);
    sampler_free(s);
}

static void test_typical(void **state)
{
    (void)state;
    /* p = .4 .3 .2 .1, H = 1.2799; |-log p - H| = .364 .076 .330 1.023:
     * typical order 0.3, 0.2, 0.4, 0.1 */
    const float l[4] = {logf(0.4f), logf(0.3f), logf(0.2f), logf(0.1f)};
    sampler_params p = plain_params();
    p.typical_p = 0.45f; /* 0.3 + 0.2 > 0.45: the most likely token is dropped */
    sampler *s = sampler_build(&p, 4);
    sampler_step st;
    for (int k = 0; k < 30; k++) {
        int32_t t = sampler_sample(s, l, &st);
        assert_true(t == 1 || t == 2);
        assert_int_equal(st.n_survivors, 2);
        check_sums(&st, 4);
        assert_float_equal(post_of(&st, 1), 0.6, 1e-5);
        assert_float_equal(post_of(&st, 0), 0.0, 0);
    }
    p.typical_p = 0.6f;
    sampler_set_params(s, &p);
    sampler_sample(s, l, &st);
    assert_int_equal(st.n_survivors, 3);
    assert_float_equal(post_of(&st, 3), 0.0, 0);
    assert_float_equal(post_of(&st, 0), 0.4 / 0.9, 1e-5);
    p.typical_p = 0.0f; /* min_keep 1 */
    sampler_set_params(s, &p);
    assert_int_equal(sampler_sample(s, l, &st), 1);
    assert_int_equal(st.n_survivors, 1);
    sampler_free(s);
}

static void test_temperature(void **state)
{
    (void)state;
    const float l[4] = {1.0f, 2.0f, 0.0f, -1.0f};
    sampler_params p = plain_params();
    p.temp = 2.0f;
    sampler *s = sampler_build(&p, 4);
    sampler_step st;
    double ref[4], raw[4];
    softmax_ref(l, 4, 2.0f, ref);
    softmax_ref(l, 4, 1.0f, raw);
    sampler_sample(s, l, &st);
    check_sums(&st, 4);
    for (int i = 0; i < 4; i++) {
        assert_float_equal(post_of(&st, i), ref[i], 1e-6);
        assert_float_equal(raw_of(&st, i), raw[i], 1e-6);
    }
    assert_float_equal(st.p_post, ref[st.token], 1e-6);
    sampler_free(s);
}

static void test_all_equal(void **state)
{
    (void)state;
    float l[8];
    for (int i = 0; i < 8; i++)
        l[i] = 0.25f;
    sampler_params p = sampler_default_params();
    p.n_top = 8;
    p.seed = 7;
    p.seed_set = true;
    sampler *s = sampler_build(&p, 8);
    sampler_step st;
    sampler_sample(s, l, &st);
    check_sums(&st, 8);
    assert_int_equal(st.n_survivors, 8);
    for (int i = 0; i < 8; i++) {
        assert_float_equal(st.top[i].p_raw, 0.125, 1e-6);
        assert_float_equal(st.top[i].p_post, 0.125, 1e-6);
    }
    assert_float_equal(st.entropy_raw, log(8.0), 1e-5);
    p.top_k = 3;
    sampler_set_params(s, &p);
    sampler_sample(s, l, &st);
    assert_int_equal(st.n_survivors, 3);
    check_sums(&st, 8);
    assert_float_equal(st.p_post, 1.0 / 3, 1e-6);
    p.temp = 0;
    sampler_set_params(s, &p);
    assert_int_equal(sampler_sample(s, l, &st), 0); /* argmax takes the first */
    sampler_free(s);
}

static void test_neg_inf(void **state)
{
    (void)state;
    const float l[6] = {-INFINITY, 1.0f, -INFINITY, 0.5f, -INFINITY, NAN};
    sampler_params p = plain_params();
    p.n_top = 6;
    sampler *s = sampler_build(&p, 6);
    sampler_step st;
    int seen[6] = {0};
    for (int k = 0; k < 500; k++) {
        int32_t t = sampler_sample(s, l, &st);
        seen[t]++;
        assert_int_equal(st.n_survivors, 2);
        assert_true(isfinite(st.entropy_raw));
    }
    assert_int_equal(seen[0] + seen[2] + seen[4] + seen[5], 0);
    assert_true(seen[1] > 0 && seen[3] > 0);
    assert_int_equal(st.n_top, 5); /* NaN is not reported */
    assert_float_equal(raw_of(&st, 0), 0.0f, 0);
    assert_float_equal(post_of(&st, 2), 0.0f, 0);
    /* a single finite logit is always chosen */
    const float one[6] = {-INFINITY, -INFINITY, -INFINITY, -7.0f, -INFINITY, -INFINITY};
    for (int k = 0; k < 20; k++) {
        assert_int_equal(sampler_sample(s, one, &st), 3);
        assert_float_equal(st.p_raw, 1.0f, 1e-6);
        assert_float_equal(st.p_post, 1.0f, 1e-6);
        assert_float_equal(st.entropy_raw, 0.0f, 1e-6);
    }
    sampler_free(s);
}

static void test_single_survivor(void **state)
{
    (void)state;
    const float l[5] = {0.0f, 30.0f, 1.0f, 2.0f, 0.5f};
    sampler_params p = sampler_default_params(); /* min_p 0.05 leaves only token 1 */
    p.n_top = 5;
    sampler *s = sampler_build(&p, 5);
    sampler_step st;
    for (int k = 0; k < 50; k++) {
        assert_int_equal(sampler_sample(s, l, &st), 1);
        assert_int_equal(st.n_survivors, 1);
        assert_float_equal(st.p_post, 1.0f, 0);
        assert_float_equal(st.entropy_post, 0.0f, 1e-7);
    }
    sampler_free(s);
}

static void test_penalties(void **state)
{
    (void)state;
    const float l[5] = {2.0f, -1.0f, 0.5f, 1.0f, 0.0f};
    sampler_params p = plain_params();
    p.repeat_penalty = 2.0f;
    p.repeat_last_n = 3;
    sampler *s = sampler_build(&p, 5);
    /* history: 3 (outside the last 3), then 0 1 0 */
    sampler_accept(s, 3);
    sampler_accept(s, 0);
    sampler_accept(s, 1);
    sampler_accept(s, 0);
    sampler_step st;
    sampler_sample(s, l, &st);
    float pen[5] = {1.0f, -2.0f, 0.5f, 1.0f, 0.0f}; /* 0: 2/2, 1: -1*2; counts do not stack */
    double ref[5];
    softmax_ref(pen, 5, 1.0f, ref);
    for (int i = 0; i < 5; i++)
        assert_float_equal(post_of(&st, i), ref[i], 1e-6);
    /* raw probabilities ignore penalties */
    softmax_ref(l, 5, 1.0f, ref);
    assert_float_equal(raw_of(&st, 0), ref[0], 1e-6);

    /* whole history, frequency and presence */
    p.repeat_penalty = 1.0f;
    p.repeat_last_n = -1;
    p.frequency_penalty = 0.5f;
    p.presence_penalty = 0.25f;
    sampler_set_params(s, &p);
    sampler_sample(s, l, &st);
    float fp[5] = {2.0f - 1.0f - 0.25f, -1.0f - 0.5f - 0.25f, 0.5f, 1.0f - 0.5f - 0.25f, 0.0f};
    softmax_ref(fp, 5, 1.0f, ref);
    for (int i = 0; i < 5; i++)
        assert_float_equal(post_of(&st, i), ref[i], 1e-6);

    /* greedy after penalties: token 0 loses its lead */
    p.frequency_penalty = 0;
    p.presence_penalty = 0;
    p.repeat_penalty = 3.0f;
    p.temp = 0;
    sampler_set_params(s, &p);
    assert_int_equal(sampler_sample(s, l, &st), 0); /* 0: 2/3, 3: 1/3, 2: 0.5 */
    p.repeat_last_n = 2;                             /* window 1 0: 3 is free again */
    sampler_set_params(s, &p);
    assert_int_equal(sampler_sample(s, l, &st), 3);
    p.repeat_last_n = 0; /* off */
    sampler_set_params(s, &p);
    assert_int_equal(sampler_sample(s, l, &st), 0);
    sampler_reset_history(s);
    p.repeat_last_n = -1;
    sampler_set_params(s, &p);
    assert_int_equal(sampler_sample(s, l, &st), 0);
    sampler_free(s);
}

static void test_params_change(void **state)
{
    (void)state;
    const float l[6] = {0.1f, 0.2f, 0.3f, 0.4f, 0.5f, 0.6f};
    sampler_params p = plain_params();
    sampler *s = sampler_build(&p, 6);
    sampler_step st;
    sampler_sample(s, l, &st);
    assert_int_equal(st.n_survivors, 6);
    p.top_k = 2;
    sampler_set_params(s, &p);
    assert_int_equal(sampler_get_params(s)->top_k, 2);
    sampler_sample(s, l, &st);
    assert_int_equal(st.n_survivors, 2);
    p.temp = 0;
    sampler_set_params(s, &p);
    assert_int_equal(sampler_sample(s, l, &st), 5);
    p.n_top = 3;
    sampler_set_params(s, &p);
    sampler_sample(s, l, &st);
    assert_int_equal(st.n_top, 3);
    sampler_free(s);
}

static void run_seq(uint64_t seed, int32_t *out, int n)
{
    float l[16];
    for (int i = 0; i < 16; i++)
        l[i] = (float)((i * 7) % 5) * 0.3f;
    sampler_params p = plain_params();
    p.seed = seed;
    sampler *s = sampler_build(&p, 16);
    for (int i = 0; i < n; i++)
        out[i] = sampler_sample(s, l, NULL);
    sampler_free(s);
}

static void test_reproducible(void **state)
{
    (void)state;
    int32_t a[200], b[200], c[200];
    run_seq(42, a, 200);
    run_seq(42, b, 200);
    run_seq(43, c, 200);
    assert_memory_equal(a, b, sizeof a);
    assert_memory_not_equal(a, c, sizeof a);
    /* setting a new seed mid-way restarts the sequence */
    float l[16];
    for (int i = 0; i < 16; i++)
        l[i] = (float)((i * 7) % 5) * 0.3f;
    sampler_params p = plain_params();
    p.seed = 5;
    sampler *s = sampler_build(&p, 16);
    for (int i = 0; i < 10; i++)
        sampler_sample(s, l, NULL);
    p.seed = 42;
    sampler_set_params(s, &p);
    for (int i = 0; i < 200; i++)
        b[i] = sampler_sample(s, l, NULL);
    assert_memory_equal(a, b, sizeof a);
    sampler_free(s);
    /* unseeded samplers differ from each other */
    p.seed_set = false;
    sampler *u1 = sampler_build(&p, 16), *u2 = sampler_build(&p, 16);
    for (int i = 0; i < 200; i++) {
        a[i] = sampler_sample(u1, l, NULL);
        b[i] = sampler_sample(u2, l, NULL);
    }
    assert_memory_not_equal(a, b, sizeof a);
    sampler_free(u1);
    sampler_free(u2);
}

/* Independent reference of the default chain (no penalties, no typical) for
 * logits given in descending order. */
static int chain_ref(const float *l, int n, int top_k, float top_p, float min_p, float temp, double *out)
{
    int m = top_k > 0 && top_k < n ? top_k : n;
    double pr[64];
    softmax_ref(l, m, 1.0f, pr);
    double cum = 0;
    int k = m;
    for (int i = 0; i < m; i++) {
        cum += pr[i];
        if (cum >= top_p) {
            k = i + 1;
            break;
        }
    }
    int j = 0;
    while (j < k && pr[j] >= min_p * pr[0])
        j++;
    softmax_ref(l, j, temp, out);
    for (int i = j; i < n; i++)
        out[i] = 0;
    return j;
}

static void test_chi_square(void **state)
{
    (void)state;
    enum { N = 8, DRAWS = 40000 };
    const float l[N] = {2.0f, 1.7f, 1.5f, 1.0f, 0.6f, 0.2f, -1.5f, -4.0f};
    sampler_params p = sampler_default_params(); /* top_k 40, top_p .95, min_p .05, temp .8 */
    p.seed = 2024;
    p.seed_set = true;
    p.n_top = N;
    double ref[N], raw[N];
    int n_keep = chain_ref(l, N, p.top_k, p.top_p, p.min_p, p.temp, ref);
    softmax_ref(l, N, 1.0f, raw);
    assert_true(n_keep >= 4 && n_keep < N); /* the chain really filters here */
    sampler *s = sampler_build(&p, N);
    sampler_step st;
    long cnt[N] = {0};
    for (int k = 0; k < DRAWS; k++) {
        int32_t t = sampler_sample(s, l, &st);
        cnt[t]++;
    }
    assert_int_equal(st.n_survivors, n_keep);
    for (int i = 0; i < N; i++)
        assert_float_equal(post_of(&st, i), ref[i], 1e-5);
    double chi = 0, chi_raw = 0;
    for (int i = 0; i < N; i++) {
        if (ref[i] == 0) {
            assert_int_equal(cnt[i], 0); /* filtered tokens never drawn */
            continue;
        }
        double e = ref[i] * DRAWS, d = cnt[i] - e;
        chi += d * d / e;
        double er = raw[i] * DRAWS, dr = cnt[i] - er;
        chi_raw += dr * dr / er;
    }
    /* df = n_keep - 1 <= 6: 22.5 is the 0.999 quantile for df 6 */
    print_message("chi-square %.2f (df %d), against the raw softmax %.1f\n", chi, n_keep - 1, chi_raw);
    assert_true(chi < 22.5);
    assert_true(chi_raw > 200); /* a draw from the unfiltered distribution would fail */
    sampler_free(s);
}

static int cmp_float_desc(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x < y) - (x > y);
}

static void test_big_vocab(void **state)
{
    (void)state;
    enum { NV = 150000 };
    float *l = malloc(NV * sizeof *l);
    uint64_t x = 99;
    for (int i = 0; i < NV; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        l[i] = (float)((x >> 40) % 10000) / 1000.0f;
    }
    l[77777] = 11.0f;
    sampler_params p = sampler_default_params();
    p.seed = 1;
    p.seed_set = true;
    p.min_p = 0;
    p.top_p = 1.0f;
    sampler *s = sampler_build(&p, NV);
    sampler_step st;
    for (int k = 0; k < 30; k++) {
        sampler_sample(s, l, &st);
        assert_int_equal(st.n_survivors, 40);
        assert_int_equal(st.top[0].id, 77777);
        assert_true(st.rank < 40);
        double sp = 0;
        for (int i = 0; i < st.n_top; i++)
            sp += st.top[i].p_post;
        assert_true(sp <= 1.0 + 1e-5);
    }
    /* top_k off, top_p on: the growing partial sort must find exactly the
     * smallest set reaching top_p */
    p.top_k = 0;
    p.top_p = 0.5f;
    sampler_set_params(s, &p);
    sampler_sample(s, l, &st);
    float *sorted = malloc(NV * sizeof *sorted);
    memcpy(sorted, l, NV * sizeof *sorted);
    qsort(sorted, NV, sizeof *sorted, cmp_float_desc);
    /* llama.cpp's arithmetic: float exponentials summed in float in vocabulary
     * order (before it sorts), then float cumulative p over the sorted ones */
    float z = 0.0f, cum = 0.0f;
    for (int i = 0; i < NV; i++)
        z += expf(l[i] - sorted[0]);
    int keep = 0;
    while (keep < NV && !(cum >= 0.5f))
        cum += expf(sorted[keep++] - sorted[0]) / z;
    assert_true(keep > 1000);
    assert_int_equal(st.n_survivors, keep);
    assert_true(st.p_post > 0);
    /* a peaked distribution: few survivors */
    for (int i = 0; i < 50; i++)
        l[(i * 2999) % NV] = 25.0f - 0.1f * i;
    p.top_p = 0.95f;
    sampler_set_params(s, &p);
    sampler_sample(s, l, &st);
    assert_true(st.n_survivors < 200);
    assert_true(st.logit >= 20.0f);
    free(sorted);
    sampler_free(s);
    free(l);
}

static void test_chosen_outside_top(void **state)
{
    (void)state;
    float l[32];
    for (int i = 0; i < 32; i++)
        l[i] = 1.0f - 0.01f * i;
    sampler_params p = plain_params();
    p.n_top = 2;
    sampler *s = sampler_build(&p, 32);
    sampler_step st;
    double ref[32];
    softmax_ref(l, 32, 1.0f, ref);
    int outside = 0;
    for (int k = 0; k < 100; k++) {
        int32_t t = sampler_sample(s, l, &st);
        assert_int_equal(st.n_top, 2);
        assert_int_equal(st.rank, t);
        assert_float_equal(st.p_raw, ref[t], 1e-6);
        assert_float_equal(st.p_post, ref[t], 1e-6);
        assert_float_equal(st.logit, l[t], 0);
        outside += st.rank >= 2;
    }
    assert_true(outside > 50);
    sampler_free(s);
}

static void test_params_by_name(void **state)
{
    (void)state;
    sampler_params p = sampler_default_params();
    char err[256], buf[256];
    for (int i = 0; sampler_param_names[i]; i++)
        assert_true(sampler_params_get(&p, sampler_param_names[i], buf, sizeof buf));
    assert_true(sampler_params_set(&p, "temp", "0.5", err, sizeof err));
    assert_float_equal(p.temp, 0.5f, 0);
    assert_true(sampler_params_set(&p, "top_k", "7", err, sizeof err));
    assert_int_equal(p.top_k, 7);
    assert_true(sampler_params_set(&p, "repeat_last_n", "-1", err, sizeof err));
    assert_int_equal(p.repeat_last_n, -1);
    assert_true(sampler_params_set(&p, "seed", "123", err, sizeof err));
    assert_true(p.seed_set);
    assert_true(sampler_params_get(&p, "seed", buf, sizeof buf));
    assert_string_equal(buf, "123");
    assert_true(sampler_params_set(&p, "seed", "random", err, sizeof err));
    assert_false(p.seed_set);
    assert_true(sampler_params_get(&p, "seed", buf, sizeof buf));
    assert_string_equal(buf, "random");
    assert_true(sampler_params_get(&p, "top_p", buf, sizeof buf));
    assert_string_equal(buf, "0.95");
    assert_true(sampler_params_get(&p, "temp", buf, sizeof buf));
    assert_string_equal(buf, "0.5");

    assert_false(sampler_params_set(&p, "top_p", "1.5", err, sizeof err));
    assert_non_null(strstr(err, "top_p"));
    assert_float_equal(p.top_p, 0.95f, 0);
    assert_false(sampler_params_set(&p, "temp", "abc", err, sizeof err));
    assert_non_null(strstr(err, "not a number"));
    assert_false(sampler_params_set(&p, "temp", "0.5x", err, sizeof err));
    assert_false(sampler_params_set(&p, "temp", "nan", err, sizeof err));
    assert_false(sampler_params_set(&p, "top_k", "2.5", err, sizeof err));
    assert_false(sampler_params_set(&p, "repeat_penalty", "0", err, sizeof err));
    assert_false(sampler_params_set(&p, "seed", "-5", err, sizeof err));
    assert_false(sampler_params_set(&p, "n_predict", "-2", err, sizeof err));
    assert_false(sampler_params_set(&p, "mirostat", "1", err, sizeof err));
    assert_true(sampler_params_set(&p, "mirostat", "2", err, sizeof err));
    assert_int_equal(p.mirostat, 2);
    assert_true(sampler_params_set(&p, "xtc_probability", "0.5", err, sizeof err));
    assert_false(sampler_params_set(&p, "xtc_probability", "2", err, sizeof err));
    assert_true(sampler_params_get(&p, "top_n_sigma", buf, sizeof buf));
    assert_string_equal(buf, "-1");
    assert_false(sampler_params_set(&p, "bogus", "1", err, sizeof err));
    assert_non_null(strstr(err, "bogus"));
    assert_false(sampler_params_get(&p, "bogus", buf, sizeof buf));

    assert_true(sampler_params_set(&p, "stop", "\n\n", err, sizeof err));
    assert_true(sampler_params_set(&p, "stop", "User:", err, sizeof err));
    assert_true(sampler_params_set(&p, "stop", "User:", err, sizeof err)); /* no duplicate */
    assert_int_equal(p.n_stop, 2);
    assert_string_equal(p.stop[1], "User:");
    for (int i = 0; i < SAMPLER_MAX_STOP - 2; i++) {
        char v[16];
        snprintf(v, sizeof v, "s%d", i);
        assert_true(sampler_params_set(&p, "stop", v, err, sizeof err));
    }
    assert_false(sampler_params_set(&p, "stop", "one more", err, sizeof err));
    assert_true(sampler_params_set(&p, "stop", "", err, sizeof err));
    assert_int_equal(p.n_stop, 0);
}

static void test_top_n_sigma(void **state)
{
    (void)state;
    /* mean 2.375, std 4.12: one sigma below 10 is 5.88 */
    const float l[8] = {10.0f, 9.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
    sampler_params p = plain_params();
    p.top_n_sigma = 1.0f;
    sampler *s = sampler_build(&p, 8);
    sampler_step st;
    double ref[2];
    softmax_ref(l, 2, 1.0f, ref);
    for (int k = 0; k < 20; k++) {
        int32_t t = sampler_sample(s, l, &st);
        assert_true(t == 0 || t == 1);
        assert_int_equal(st.n_survivors, 2);
        check_sums(&st, 8);
        assert_float_equal(post_of(&st, 1), ref[1], 1e-6);
    }
    p.top_n_sigma = 3.0f; /* 10 - 12.4 < 0: everything stays */
    sampler_set_params(s, &p);
    sampler_sample(s, l, &st);
    assert_int_equal(st.n_survivors, 8);
    p.top_n_sigma = -1.0f;
    sampler_set_params(s, &p);
    sampler_sample(s, l, &st);
    assert_int_equal(st.n_survivors, 8);
    sampler_free(s);
}

static void test_xtc(void **state)
{
    (void)state;
    const float l[5] = {logf(0.05f), logf(0.3f), logf(0.05f), logf(0.4f), logf(0.2f)};
    sampler_params p = plain_params();
    p.xtc_probability = 1.0f;
    p.xtc_threshold = 0.1f; /* .4 .3 .2 are above: the two most likely go */
    sampler *s = sampler_build(&p, 5);
    sampler_step st;
    for (int k = 0; k < 20; k++) {
        int32_t t = sampler_sample(s, l, &st);
        assert_true(t == 4 || t == 0 || t == 2);
        assert_int_equal(st.n_survivors, 3);
        check_sums(&st, 5);
        assert_float_equal(post_of(&st, 4), 2.0 / 3, 1e-5);
        assert_float_equal(post_of(&st, 3), 0.0, 0);
    }
    p.xtc_threshold = 0.6f; /* > 0.5: off */
    sampler_set_params(s, &p);
    sampler_sample(s, l, &st);
    assert_int_equal(st.n_survivors, 5);
    p.xtc_threshold = 0.35f; /* only one above: nothing to exclude */
    sampler_set_params(s, &p);
    sampler_sample(s, l, &st);
    assert_int_equal(st.n_survivors, 5);
    p.xtc_threshold = 0.1f;
    p.xtc_probability = 0.5f; /* about every other step */
    sampler_set_params(s, &p);
    int cut = 0;
    for (int k = 0; k < 2000; k++) {
        sampler_sample(s, l, &st);
        cut += st.n_survivors == 3;
    }
    assert_true(cut > 850 && cut < 1150);
    sampler_free(s);
}

static void test_mirostat_v2(void **state)
{
    (void)state;
    /* a flat-ish distribution over 256 tokens (entropy near 8 bits), so a
     * target surprise of 5 bits needs real truncation */
    enum { N = 256 };
    float l[N];
    for (int i = 0; i < N; i++)
        l[i] = -0.02f * (float)i;
    sampler_params p = plain_params();
    p.mirostat = 2;
    p.mirostat_tau = 5.0f;
    p.mirostat_eta = 0.1f;
    p.repeat_penalty = 5.0f; /* ignored by the mirostat chain, like llama.cpp */
    p.n_top = SAMPLER_MAX_TOP;
    sampler *s = sampler_build(&p, N);
    sampler_accept(s, 0);
    sampler_step st;
    double raw[N];
    softmax_ref(l, N, 1.0f, raw);
    int keep = 0;
    double mass = 0;
    while (keep < N && raw[keep] >= pow(2.0, -10)) /* mu starts at 2 tau = 10 bits */
        mass += raw[keep++];
    assert_true(keep > 100 && keep < N);
    sampler_sample(s, l, &st);
    assert_int_equal(st.n_survivors, keep);
    assert_float_equal(st.top[0].p_post, raw[0] / mass, 1e-5);
    assert_float_equal(st.top[0].p_raw, raw[0], 1e-6);
    /* the feedback drives the mean surprise of the draws to tau */
    double surprise = 0;
    int n = 4000, small = 0;
    for (int k = 0; k < n; k++) {
        sampler_sample(s, l, &st);
        if (k >= 200) /* after the controller settled */
            surprise += -log2(st.p_post);
        small += st.n_survivors < keep / 2;
    }
    surprise /= n - 200;
    print_message("mirostat v2 mean surprise %.3f bits (tau 5)\n", surprise);
    assert_true(fabs(surprise - 5.0) < 0.3);
    assert_true(small > n / 2);
    /* greedy still wins at temp 0 */
    p.temp = 0;
    sampler_set_params(s, &p);
    assert_int_equal(sampler_sample(s, l, &st), 0);
    sampler_free(s);
}

/* Reference vectors from llama.cpp's tests/test-sampling.cpp (probabilities
 * in, probabilities after the sampler out, in id order). */
static void run_ref(const float *probs, int n, const int32_t *hist, int nh, sampler_params p, const float *expect,
                    const int32_t *const *brk, const int32_t *brk_len, int n_brk)
{
    float l[8];
    for (int i = 0; i < n; i++)
        l[i] = logf(probs[i]);
    p.n_top = n;
    sampler *s = sampler_build(&p, n);
    if (n_brk)
        assert_true(sampler_set_dry_breakers(s, brk, brk_len, n_brk));
    for (int i = 0; i < nh; i++)
        sampler_accept(s, hist[i]);
    sampler_step st;
    sampler_sample(s, l, &st);
    for (int i = 0; i < n; i++)
        assert_float_equal(post_of(&st, i), expect[i], 1e-5);
    sampler_free(s);
}

static void test_reference_vectors(void **state)
{
    (void)state;
    const float q5[5] = {0.2f, 0.2f, 0.2f, 0.2f, 0.2f}, q4[4] = {0.25f, 0.25f, 0.25f, 0.25f};
    sampler_params p = plain_params();
    /* penalties */
    p.repeat_penalty = 50.0f;
    p.repeat_last_n = -1;
    run_ref(q5, 5, (int32_t[]){0}, 1, p, (float[]){0, 0.25f, 0.25f, 0.25f, 0.25f}, NULL, NULL, 0);
    run_ref(q5, 5, (int32_t[]){0, 1, 2}, 3, p, (float[]){0, 0, 0, 0.5f, 0.5f}, NULL, NULL, 0);
    run_ref(q5, 5, (int32_t[]){0, 1, 2, 0, 0}, 5, p, (float[]){0, 0, 0, 0.5f, 0.5f}, NULL, NULL, 0);
    p.repeat_penalty = 1.0f;
    p.frequency_penalty = 5.0f;
    p.presence_penalty = 5.0f;
    run_ref(q5, 5, (int32_t[]){0}, 1, p, (float[]){0.000011f, 0.249997f, 0.249997f, 0.249997f, 0.249997f}, NULL, NULL, 0);
    run_ref(q5, 5, (int32_t[]){0, 1, 2}, 3, p, (float[]){0.000023f, 0.000023f, 0.000023f, 0.499966f, 0.499966f}, NULL,
            NULL, 0);
    run_ref(q5, 5, (int32_t[]){0, 1, 2, 0, 0}, 5, p, (float[]){0.000000f, 0.000023f, 0.000023f, 0.499977f, 0.499977f},
            NULL, NULL, 0);
    p.frequency_penalty = 0;
    p.presence_penalty = 0;
    /* DRY: multiplier, base, allowed length, last n, breakers */
    p.dry_multiplier = 1.0f;
    p.dry_base = 1.1f;
    p.dry_allowed_length = 2;
    p.dry_penalty_last_n = 4;
    run_ref(q4, 4, (int32_t[]){0, 1}, 2, p, q4, NULL, NULL, 0);
    p.dry_penalty_last_n = 5;
    run_ref(q4, 4, (int32_t[]){0, 1, 2, 0, 1}, 5, p, (float[]){0.296923f, 0.296923f, 0.109232f, 0.296923f}, NULL, NULL,
            0);
    p.dry_penalty_last_n = 6;
    const int32_t b3[1] = {3};
    run_ref(q5, 5, (int32_t[]){0, 1, 3, 4, 0, 1}, 6, p, q5, (const int32_t *const[]){b3}, (int32_t[]){1}, 1);
    p.dry_multiplier = 2.0f;
    p.dry_penalty_last_n = 5;
    run_ref(q5, 5, (int32_t[]){0, 1, 2, 0, 1}, 5, p, (float[]){0.241818f, 0.241818f, 0.032727f, 0.241818f, 0.241818f},
            NULL, NULL, 0);
    p.dry_multiplier = 1.0f;
    p.dry_allowed_length = 4;
    p.dry_penalty_last_n = 7;
    run_ref(q5, 5, (int32_t[]){0, 1, 2, 3, 4, 0, 1}, 7, p, q5, NULL, NULL, 0);
    p.dry_multiplier = 0;
    /* top-n-sigma */
    p.top_n_sigma = 1.0f;
    run_ref((float[]){0.1f, 0.2f, 0.3f, 0.4f}, 4, NULL, 0, p, (float[]){0, 0, 0.428571f, 0.571429f}, NULL, NULL, 0);
}

/* DRY on a longer history: the longest repeat decides, and a multi-token
 * breaker cuts it. */
static void test_dry_breakers(void **state)
{
    (void)state;
    float l[8] = {0};
    sampler_params p = plain_params();
    p.n_top = 8;
    p.dry_multiplier = 1.0f;
    p.dry_base = 2.0f;
    p.dry_allowed_length = 1;
    sampler *s = sampler_build(&p, 8);
    /* 1 2 3 4 5 | 6 | 1 2 3 4: the context ends with a repeat of 1 2 3 4 (length 4),
     * so 5 would extend it: penalty 2^(4-1) = 8; nothing else continues a repeat */
    const int32_t h[] = {1, 2, 3, 4, 5, 6, 1, 2, 3, 4};
    for (size_t i = 0; i < sizeof h / sizeof *h; i++)
        sampler_accept(s, h[i]);
    sampler_step st;
    sampler_sample(s, l, &st);
    double w[8] = {1, 1, 1, 1, 1, exp(-8.0), 1, 1}, z = 0;
    for (int i = 0; i < 8; i++)
        z += w[i];
    assert_float_equal(post_of(&st, 5), w[5] / z, 1e-6);
    assert_float_equal(post_of(&st, 0), 1 / z, 1e-6);
    /* breaker "6 1": the repeat can no longer reach back past it (limit 2 tokens: 3 4) */
    const int32_t b61[2] = {6, 1};
    assert_true(sampler_set_dry_breakers(s, (const int32_t *const[]){b61}, (int32_t[]){2}, 1));
    sampler_sample(s, l, &st);
    /* the breaker's head 6 sits 4 tokens back, its tail 1 follows: rep_limit
     * = 4 - 1 = 3, so the repeat 1 2 3 4 counts as 3 -> 2^(3-1) = 4 */
    double w2[8] = {1, 1, 1, 1, 1, exp(-4.0), 1, 1};
    z = 0;
    for (int i = 0; i < 8; i++)
        z += w2[i];
    assert_float_equal(post_of(&st, 5), w2[5] / z, 1e-6);
    /* a single-token breaker is never penalised itself */
    const int32_t b5[1] = {5};
    assert_true(sampler_set_dry_breakers(s, (const int32_t *const[]){b5}, (int32_t[]){1}, 1));
    sampler_sample(s, l, &st);
    assert_float_equal(post_of(&st, 5), 1.0 / 8, 1e-6);
    sampler_free(s);
}

/* Breakers from a real vocabulary: "\n" and ":" tokens stop DRY. */
static void test_dry_tokenizer(void **state)
{
    (void)state;
    char err[256];
    model *m = model_load(TESTDATA_REQUIRE("models/stories260K.gguf"), err, sizeof err);
    assert_non_null(m);
    const tokenizer *tk = model_get_tokenizer(m);
    int32_t nl = tokenizer_find(tk, "<0x0A>");
    assert_true(nl > 0);
    sampler_params p = plain_params();
    p.dry_multiplier = 1.0f;
    p.dry_base = 2.0f;
    p.dry_allowed_length = 1;
    p.n_top = 8;
    sampler *s = sampler_build(&p, tokenizer_n_vocab(tk));
    sampler_set_tokenizer(s, tk);
    float *l = calloc((size_t)tokenizer_n_vocab(tk), sizeof *l);
    sampler_step st;
    /* 5 6 7 5 6: 7 would repeat "5 6 7" */
    const int32_t h1[] = {5, 6, 7, 5, 6};
    for (int i = 0; i < 5; i++)
        sampler_accept(s, h1[i]);
    sampler_sample(s, l, &st);
    assert_true(st.top[0].id != 7 && st.n_top == 8);
    float p_other = st.top[0].p_post;
    int32_t nv = tokenizer_n_vocab(tk);
    assert_float_equal(p_other, 1.0 / (nv - 1 + exp(-2.0)), 1e-7);
    /* 5 6 \n 5 6: the newline is a breaker, never penalised */
    sampler_reset_history(s);
    const int32_t h2[] = {5, 6, nl, 5, 6};
    for (int i = 0; i < 5; i++)
        sampler_accept(s, h2[i]);
    sampler_sample(s, l, &st);
    assert_float_equal(st.top[0].p_post, 1.0 / nv, 1e-7);
    free(l);
    sampler_free(s);
    model_free(m);
}

static int line_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The breaker table tokscope builds from the strings, for a model's
 * vocabulary, line for line what llama.cpp 34af94cd's
 * get_overlapping_token_sequences makes of them (tests/golden/reference/dry,
 * make.sh: "head tail..." sorted, no duplicates): the default breakers and
 * two of several tokens, on an SPM and a BPE vocabulary. */
static void check_breakers_ref(const char *model_file, const char *ref_file)
{
    char err[256];
    model *m = model_load(model_file, err, sizeof err);
    assert_non_null(m);
    const tokenizer *tk = model_get_tokenizer(m);
    sampler_params p = plain_params();
    p.dry_multiplier = 1.0f;
    p.n_dry_breakers = 0;
    const char *strs[] = {"\n", ":", "\"", "*", " said", "sat on the mat"};
    for (size_t i = 0; i < sizeof strs / sizeof *strs; i++)
        assert_true(sampler_params_add_dry_breaker(&p, strs[i]));
    const int32_t nv = tokenizer_n_vocab(tk);
    sampler *s = sampler_build(&p, nv);
    sampler_set_tokenizer(s, tk);
    float *l = calloc((size_t)nv, sizeof *l);
    sampler_sample(s, l, NULL); /* DRY on: the table is built */
    char **lines = malloc(((size_t)s->n_brk + 1) * sizeof *lines);
    int32_t n = 0;
    for (int32_t t = 0; t < nv; t++)
        for (int32_t b = s->brk_start[t]; b < s->brk_start[t + 1]; b++) {
            char buf[512];
            int o = snprintf(buf, sizeof buf, "%d", (int)t);
            for (int32_t k = 0; k < s->brk_len[b]; k++)
                o += snprintf(buf + o, sizeof buf - (size_t)o, " %d", (int)s->brk_tail[(size_t)b * DRY_MAX_TAIL + k]);
            lines[n++] = strdup(buf);
        }
    qsort(lines, (size_t)n, sizeof *lines, line_cmp);
    FILE *f = fopen(ref_file, "r");
    assert_non_null(f);
    char want[512];
    int32_t i = 0, n_ref = 0, bad = 0;
    while (fgets(want, sizeof want, f)) {
        want[strcspn(want, "\n")] = 0;
        while (i > 0 && i < n && !strcmp(lines[i], lines[i - 1]))
            i++; /* a duplicate (two strings, one entry) */
        if (i >= n || strcmp(lines[i], want)) {
            if (bad++ < 5)
                print_message("entry %d: tokscope '%s', llama.cpp '%s'\n", (int)n_ref, i < n ? lines[i] : "(none)", want);
        } else
            i++;
        n_ref++;
    }
    while (i > 0 && i < n && !strcmp(lines[i], lines[i - 1]))
        i++;
    fclose(f);
    assert_true(n_ref > 0);
    assert_int_equal(bad, 0);
    assert_int_equal(i, n);
    for (int32_t k = 0; k < n; k++)
        free(lines[k]);
    free(lines);
    free(l);
    sampler_free(s);
    model_free(m);
}

static void test_dry_breakers_ref(void **state)
{
    (void)state;
    check_breakers_ref(TESTDATA_REQUIRE("models/stories260K.gguf"), "tests/golden/reference/dry/stories260K.txt");
    check_breakers_ref(TESTDATA_REQUIRE("models/smollm-mini-q8_0.gguf"),
                       "tests/golden/reference/dry/smollm-mini-q8_0.txt");
}

/* ignore_eos (llama-server's): the end-of-generation tokens get a -inf bias
 * ahead of the chain, so greedy and draws never pick one and their p_post is
 * 0, while p_raw, entropy_raw and the top list stay the model's; with every
 * finite logit an end token, nothing is banned. */
static void test_ignore_eos(void **state)
{
    (void)state;
    const float l[8] = {1.0f, 0.5f, 4.0f, 2.0f, 3.5f, -1.0f, 0.0f, 1.5f};
    const int32_t eog[2] = {2, 4};
    double want[8];
    softmax_ref(l, 8, 1.0f, want);
    for (int mode = 0; mode < 4; mode++) {
        sampler_params p = plain_params();
        p.temp = mode == 0 ? 0.0f : 1.0f;
        if (mode == 2)
            p.top_k = 3; /* keeps 3, 7, 0 once the end tokens are out */
        if (mode == 3)
            p.mirostat = 2;
        sampler *s = sampler_build(&p, 8);
        assert_true(sampler_set_eog(s, eog, 2));
        sampler_step st;
        assert_int_equal(sampler_sample(s, l, &st), 2); /* off: the end token wins greedy/most draws */
        p.ignore_eos = true;
        sampler_set_params(s, &p);
        for (int k = 0; k < 300; k++) {
            int32_t t = sampler_sample(s, l, &st);
            assert_true(t != 2 && t != 4);
            if (mode == 0)
                assert_int_equal(t, 3);
            if (mode == 2)
                assert_true(t == 3 || t == 7 || t == 0);
            assert_float_equal(post_of(&st, 2), 0.0, 0);
            assert_float_equal(post_of(&st, 4), 0.0, 0);
            for (int i = 0; i < 8; i++)
                assert_float_equal(raw_of(&st, i), want[i], 1e-6);
            assert_int_equal(st.top[0].id, 2); /* the list is by raw logit */
        }
        if (mode == 1) { /* the survivors' p_post: the softmax without the end tokens */
            float lb[8];
            memcpy(lb, l, sizeof lb);
            lb[2] = lb[4] = -INFINITY;
            double wb[8];
            softmax_ref(lb, 8, 1.0f, wb);
            for (int i = 0; i < 8; i++)
                assert_float_equal(post_of(&st, i), wb[i], 1e-6);
        }
        sampler_free(s);
    }
    /* only end tokens are finite: no ban, the best of them */
    const float only[4] = {-INFINITY, 1.0f, -INFINITY, 2.0f};
    const int32_t eog2[2] = {1, 3};
    sampler_params p = plain_params();
    p.temp = 0.0f;
    p.ignore_eos = true;
    sampler *s = sampler_build(&p, 4);
    assert_true(sampler_set_eog(s, eog2, 2));
    assert_int_equal(sampler_sample(s, only, NULL), 3);
    sampler_free(s);
}

/* sampler_report (explore mode: the step's distribution shown before the
 * choice, forced tokens) never changes what the sampler draws next: the
 * same seed gives the same tokens with or without reports in between, with
 * XTC (which draws to decide) and mirostat (which learns) on. A report
 * shows the chain the next draw uses; a forced token the chain filtered
 * out has p_post 0. */
static void test_report(void **state)
{
    (void)state;
    float l[16];
    for (int i = 0; i < 16; i++)
        l[i] = sinf((float)i * 1.7f) * 3.0f;
    for (int mode = 0; mode < 3; mode++) {
        sampler_params p = plain_params();
        p.top_k = 8;
        p.min_p = 0.02f;
        if (mode == 1) {
            p.xtc_probability = 0.5f;
            p.xtc_threshold = 0.05f;
        } else if (mode == 2) {
            p.mirostat = 2;
        }
        sampler *a = sampler_build(&p, 16), *b = sampler_build(&p, 16);
        for (int k = 0; k < 200; k++) {
            sampler_step sa, sb, pre, forced;
            sampler_report(b, l, -1, &pre);
            int32_t ta = sampler_sample(a, l, &sa);
            assert_int_equal(pre.token, -1);
            assert_float_equal(pre.p_post, 0.0, 0);
            sampler_report(b, l, (int32_t)(k % 16), &forced);
            int32_t tb = sampler_sample(b, l, &sb);
            assert_int_equal(ta, tb);
            assert_float_equal(sa.p_post, sb.p_post, 0);
            assert_int_equal(sa.n_top, sb.n_top);
            assert_memory_equal(sa.top, sb.top, (size_t)sa.n_top * sizeof sa.top[0]);
            /* the preview is the chain the draw used */
            assert_int_equal(pre.n_survivors, sb.n_survivors);
            for (int i = 0; i < pre.n_top; i++) {
                assert_int_equal(pre.top[i].id, sb.top[i].id);
                assert_float_equal(pre.top[i].p_post, sb.top[i].p_post, 0);
            }
            /* a forced token: its own raw probability, its post-chain one (0 when filtered) */
            assert_int_equal(forced.token, k % 16);
            assert_float_equal(forced.p_raw, raw_of(&pre, k % 16), 1e-7);
            assert_float_equal(forced.p_post, post_of(&pre, k % 16), 0);
            sampler_accept(a, ta);
            sampler_accept(b, tb);
        }
        sampler_free(a);
        sampler_free(b);
    }
}

/* sampler_mark_get / sampler_rewind (llama-server's sampler clone and
 * copy around a replayed verification): after a rewind the draws, the
 * mirostat state and the penalties are those that followed the mark, with
 * repetition penalties on (the history's length matters) */
static void test_rewind(void **state)
{
    (void)state;
    float l[16];
    for (int i = 0; i < 16; i++)
        l[i] = sinf((float)i * 1.3f) * 2.0f;
    for (int mode = 0; mode < 2; mode++) {
        sampler_params p = plain_params();
        p.repeat_penalty = 1.5f;
        p.repeat_last_n = 4;
        if (mode == 1)
            p.mirostat = 2;
        sampler *a = sampler_build(&p, 16);
        for (int k = 0; k < 10; k++)
            sampler_accept(a, sampler_sample(a, l, NULL));
        sampler_mark m;
        sampler_mark_get(a, &m);
        int32_t first[20], again[20];
        for (int k = 0; k < 20; k++) {
            first[k] = sampler_sample(a, l, NULL);
            sampler_accept(a, first[k]);
        }
        sampler_rewind(a, &m);
        for (int k = 0; k < 20; k++) {
            again[k] = sampler_sample(a, l, NULL);
            sampler_accept(a, again[k]);
        }
        assert_memory_equal(first, again, sizeof first);
        sampler_free(a);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),        cmocka_unit_test(test_plain_softmax),
        cmocka_unit_test(test_greedy),          cmocka_unit_test(test_top_k),
        cmocka_unit_test(test_top_p),           cmocka_unit_test(test_min_p),
        cmocka_unit_test(test_typical),         cmocka_unit_test(test_temperature),
        cmocka_unit_test(test_all_equal),       cmocka_unit_test(test_neg_inf),
        cmocka_unit_test(test_single_survivor), cmocka_unit_test(test_penalties),
        cmocka_unit_test(test_params_change),   cmocka_unit_test(test_reproducible),
        cmocka_unit_test(test_chi_square),      cmocka_unit_test(test_big_vocab),
        cmocka_unit_test(test_chosen_outside_top), cmocka_unit_test(test_params_by_name),
        cmocka_unit_test(test_top_n_sigma),     cmocka_unit_test(test_xtc),
        cmocka_unit_test(test_mirostat_v2),     cmocka_unit_test(test_reference_vectors),
        cmocka_unit_test(test_dry_breakers),    cmocka_unit_test(test_dry_tokenizer),
        cmocka_unit_test(test_dry_breakers_ref),
        cmocka_unit_test(test_report),
        cmocka_unit_test(test_rewind),
        cmocka_unit_test(test_ignore_eos),
    };
    return cmocka_run_group_tests_name("sampler", tests, NULL, NULL);
}
