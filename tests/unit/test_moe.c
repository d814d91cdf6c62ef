/* The mixture-of-experts block (forward_moe.c, forward_moe_route.c): routing against
 * hand-computed values for every gating option (softmax, sigmoid, softmax
 * over the top-k logits, renormalisation, its clamp, scale), the top-k's
 * tie order against libstdc++'s std::sort, swiglu_oai, and the expert step
 * with each option the goldens do not reach (expert biases and scales, fused
 * gate|up, GELU, swiglu_oai, the shared expert's gate) against a plain
 * double-precision computation; grouping tokens by expert changes no bit,
 * and one token never reads the experts it did not choose. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "model/arch.h"
#include "model/forward.h"
#include "model/forward_internal.h"
#include "testutil.h"

#define TOL 1e-6

static void test_softmax_values(void **s)
{
    (void)s;
    /* softmax(log 1, log 2, log 3, log 4) = (1, 2, 3, 4) / 10 */
    const float x[4] = {0.0f, logf(2.0f), logf(3.0f), logf(4.0f)};
    float y[4];
    moe_softmax(x, y, 4);
    for (int i = 0; i < 4; i++)
        assert_float_equal(y[i], (i + 1) / 10.0, TOL);
    /* 20 values: one 16-lane block and a tail of 4 */
    float a[20], b[20];
    double sum = 0;
    for (int i = 0; i < 20; i++) {
        a[i] = 0.1f * (float)i - 1.0f;
        sum += exp((double)a[i]);
    }
    moe_softmax(a, b, 20);
    for (int i = 0; i < 20; i++)
        assert_float_equal(b[i], exp((double)a[i]) / sum, TOL);
}

static void test_route_softmax_norm(void **s)
{
    (void)s;
    /* probabilities 0.1 0.3 0.2 0.4: top 2 = experts 3, 1; renormalised 4/7, 3/7 */
    const float lg[4] = {0.0f, logf(3.0f), logf(2.0f), logf(4.0f)};
    int32_t ids[2];
    float w[2];
    moe_route(lg, 4, 2, MODEL_MOE_GATING_SOFTMAX, true, 0.0f, ids, w);
    assert_int_equal(ids[0], 3);
    assert_int_equal(ids[1], 1);
    assert_float_equal(w[0], 4.0 / 7.0, TOL);
    assert_float_equal(w[1], 3.0 / 7.0, TOL);
    /* without renormalisation: the probabilities themselves */
    moe_route(lg, 4, 2, MODEL_MOE_GATING_SOFTMAX, false, 0.0f, ids, w);
    assert_float_equal(w[0], 0.4, TOL);
    assert_float_equal(w[1], 0.3, TOL);
    /* a scale of 1 or 0 leaves them; 2.5 multiplies */
    moe_route(lg, 4, 2, MODEL_MOE_GATING_SOFTMAX, false, 1.0f, ids, w);
    assert_float_equal(w[0], 0.4, TOL);
    moe_route(lg, 4, 2, MODEL_MOE_GATING_SOFTMAX, true, 2.5f, ids, w);
    assert_float_equal(w[0], 2.5 * 4.0 / 7.0, TOL);
    assert_float_equal(w[1], 2.5 * 3.0 / 7.0, TOL);
}

static double sigmoid(double x) { return 1.0 / (1.0 + exp(-x)); }

static void test_route_sigmoid(void **s)
{
    (void)s;
    const float lg[5] = {0.0f, 2.0f, -1.0f, 1.0f, 0.5f};
    int32_t ids[3];
    float w[3];
    moe_route(lg, 5, 3, MODEL_MOE_GATING_SIGMOID, false, 0.0f, ids, w);
    assert_int_equal(ids[0], 1);
    assert_int_equal(ids[1], 3);
    assert_int_equal(ids[2], 4);
    assert_float_equal(w[0], sigmoid(2.0), TOL);
    assert_float_equal(w[1], sigmoid(1.0), TOL);
    assert_float_equal(w[2], sigmoid(0.5), TOL);
    moe_route(lg, 5, 3, MODEL_MOE_GATING_SIGMOID, true, 0.0f, ids, w);
    const double sum = sigmoid(2.0) + sigmoid(1.0) + sigmoid(0.5);
    assert_float_equal(w[0], sigmoid(2.0) / sum, TOL);
    assert_float_equal(w[2], sigmoid(0.5) / sum, TOL);
    /* weights summing below 2^-14 are divided by 2^-14, not by their sum */
    const float tiny[2] = {-30.0f, -31.0f};
    moe_route(tiny, 2, 2, MODEL_MOE_GATING_SIGMOID, true, 0.0f, ids, w);
    assert_int_equal(ids[0], 0);
    assert_float_equal(w[0] / (sigmoid(-30.0) / 6.103515625e-5), 1.0, 1e-5);
    assert_true(w[0] + w[1] < 1e-6f);
}

static void test_route_softmax_weight(void **s)
{
    (void)s;
    /* gpt-oss: the top 2 logits (3 and 2), then softmax over those two */
    const float lg[4] = {1.0f, 3.0f, 2.0f, 0.0f};
    int32_t ids[2];
    float w[2];
    moe_route(lg, 4, 2, MODEL_MOE_GATING_SOFTMAX_WEIGHT, false, 0.0f, ids, w);
    assert_int_equal(ids[0], 1);
    assert_int_equal(ids[1], 2);
    const double e = exp(1.0);
    assert_float_equal(w[0], e / (e + 1), TOL);
    assert_float_equal(w[1], 1 / (e + 1), TOL);
}

static void test_argsort_ties(void **s)
{
    (void)s;
    /* below 17 values std::sort is an insertion sort: equal values keep their order */
    const float v[6] = {1, 2, 2, 1, 2, 3};
    int32_t idx[6];
    moe_argsort_desc(v, idx, 6);
    const int32_t want6[6] = {5, 1, 2, 4, 0, 3};
    assert_memory_equal(idx, want6, sizeof want6);
    /* above, introsort: the order libstdc++'s std::sort (g++ 12) gives these
     * 40 and 128 values of four levels (i-th: ((s >> 16) % 4) / 4 with
     * s = s * 1103515245 + 12345 from 12345) */
    float a[128];
    uint32_t st = 12345;
    for (int i = 0; i < 128; i++) {
        st = st * 1103515245u + 12345u;
        a[i] = (float)((st >> 16) % 4) * 0.25f;
    }
    static const int32_t want40[40] = {20, 39, 37, 36, 33, 30, 22, 14, 13, 11, 4,  31, 12, 8,  7,  29, 38, 3,  34, 35,
                                       21, 5,  28, 24, 6,  2,  18, 16, 9,  1,  32, 10, 27, 26, 25, 23, 0,  19, 17, 15};
    static const int32_t want128[128] = {
        106, 76,  36,  33,  37,  85,  30,  75,  88,  92,  39,  22,  71,  20,  105, 64,  114, 54,  123, 4,   59,  115,
        46,  11,  113, 13,  14,  72,  73,  74,  58,  57,  56,  55,  93,  67,  107, 126, 122, 121, 119, 118, 117, 110,
        109, 77,  103, 102, 99,  94,  127, 87,  83,  3,   7,   34,  35,  38,  8,   43,  31,  29,  12,  112, 28,  111,
        78,  9,   16,  84,  116, 95,  82,  81,  98,  24,  18,  101, 21,  62,  52,  51,  53,  49,  48,  61,  63,  6,
        44,  41,  68,  42,  2,   5,   1,   19,  120, 17,  108, 125, 15,  0,   10,  124, 32,  50,  47,  60,  45,  65,
        66,  69,  70,  40,  79,  80,  104, 86,  89,  90,  91,  27,  26,  25,  96,  97,  100, 23};
    int32_t got[128];
    moe_argsort_desc(a, got, 40);
    assert_memory_equal(got, want40, sizeof want40);
    moe_argsort_desc(a, got, 128);
    assert_memory_equal(got, want128, sizeof want128);
}

static void test_swiglu_oai(void **s)
{
    (void)s;
    const float g[4] = {0.0f, 10.0f, -3.0f, 1.0f}, u[4] = {5.0f, 10.0f, -9.0f, 0.5f};
    float o[4];
    moe_swiglu_oai(o, g, u, 4, 1.702f, 7.0f);
    assert_float_equal(o[0], 0.0, TOL);
    /* gate clamped to 7, up to +-7 */
    assert_float_equal(o[1], 7.0 / (1.0 + exp(-1.702 * 7.0)) * 8.0, 1e-5);
    assert_float_equal(o[2], -3.0 / (1.0 + exp(1.702 * 3.0)) * -6.0, 1e-5);
    assert_float_equal(o[3], 1.0 / (1.0 + exp(-1.702)) * 1.5, 1e-5);
}

/* ---- the expert step on a hand-made context -------------------------------- */

#define NE 32 /* n_embd */
#define NF 16 /* expert width */
#define NX 4  /* experts */
#define NU 2  /* used */
#define NT 3  /* tokens */

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static float rnd(void) { return (float)((int)(test_xorshift64(&rng) % 2001) - 1000) / 1000.0f; }

static gguf_tensor *f32_tensor(int64_t ne0, int64_t ne1, int64_t ne2)
{
    gguf_tensor *t = calloc(1, sizeof *t);
    const int64_t n = ne0 * ne1 * ne2;
    float *d = malloc((size_t)n * sizeof(float));
    for (int64_t i = 0; i < n; i++)
        d[i] = rnd();
    t->n_dims = ne2 > 1 ? 3 : ne1 > 1 ? 2 : 1;
    t->ne[0] = ne0;
    t->ne[1] = ne1;
    t->ne[2] = ne2;
    t->ne[3] = 1;
    t->type = TENSOR_TYPE_F32;
    t->data = d;
    t->nbytes = (size_t)n * sizeof(float);
    t->n_elements = n;
    return t;
}

static void free_tensor(const gguf_tensor *t)
{
    if (t) {
        free((void *)(uintptr_t)t->data);
        free((void *)(uintptr_t)t);
    }
}

static float *fdata(const gguf_tensor *t) { return (float *)(uintptr_t)t->data; }

static forward_ctx *moe_ctx(fwd_moe *m, int n_batch, bool experts)
{
    forward_ctx *f = calloc(1, sizeof *f);
    f->graph.moe = m;
    f->graph.n_moe = 1;
    f->graph.width[FWD_XB] = f->graph.width[FWD_XB2] = NE;
    f->graph.width[FWD_ROUTER] = NX;
    f->graph.width[FWD_SHGATE] = 1;
    const enum fwd_buf bufs[4] = {FWD_XB, FWD_XB2, FWD_ROUTER, FWD_SHGATE};
    for (int i = 0; i < 4; i++)
        f->buf[bufs[i]] = calloc((size_t)n_batch * (size_t)f->graph.width[bufs[i]], sizeof(float));
    f->p.n_batch = (uint32_t)n_batch;
    f->tp = threadpool_create(2);
    f->n_threads = threadpool_n_threads(f->tp);
    if (experts)
        assert_true(forward_moe_alloc(f));
    return f;
}

static void moe_ctx_free(forward_ctx *f)
{
    forward_moe_free(f);
    threadpool_free(f->tp);
    for (int b = 0; b < FWD_N_BUF; b++)
        free(f->buf[b]);
    free(f);
}

static void run_moe(forward_ctx *f, int n)
{
    struct fwd_step st;
    memset(&st, 0, sizeof st);
    st.kind = STEP_MOE;
    st.moe = 0;
    forward_run_moe(f, &f->graph, &st, n);
}

/* Row r of expert e of w (ne0 x ne1 x n_expert) . x, in double. */
static double dotd(const gguf_tensor *w, int e, int64_t r, const double *x)
{
    const float *row = fdata(w) + ((size_t)e * w->ne[1] + (size_t)r) * w->ne[0];
    double acc = 0;
    for (int64_t i = 0; i < w->ne[0]; i++)
        acc += (double)row[i] * x[i];
    return acc;
}

static double gelu_tanh(double x) { return 0.5 * x * (1.0 + tanh(0.7978845608028654 * x * (1.0 + 0.044715 * x * x))); }

/* What the block should give for one token: the weighted sum of its chosen
 * experts, each with the options of m, in double. */
static void expect_token(const fwd_moe *m, const float *x, const float *logits, double *out)
{
    int32_t ids[NU];
    float w[NU];
    moe_route(logits, NX, NU, m->gating, m->norm_w, m->w_scale, ids, w);
    double xd[NE], h[NF];
    for (int i = 0; i < NE; i++)
        xd[i] = x[i];
    for (int i = 0; i < NE; i++)
        out[i] = 0;
    for (int k = 0; k < NU; k++) {
        const int e = ids[k];
        for (int r = 0; r < NF; r++) {
            double g, u;
            if (m->gate_up) {
                g = dotd(m->gate_up, e, r, xd);
                u = dotd(m->gate_up, e, NF + r, xd);
                if (m->gate_up_b) {
                    g += fdata(m->gate_up_b)[e * 2 * NF + r];
                    u += fdata(m->gate_up_b)[e * 2 * NF + NF + r];
                }
            } else {
                g = dotd(m->gate, e, r, xd);
                u = dotd(m->up, e, r, xd);
                if (m->gate_s)
                    g *= fdata(m->gate_s)[e];
                if (m->up_s)
                    u *= fdata(m->up_s)[e];
                if (m->gate_b)
                    g += fdata(m->gate_b)[e * NF + r];
                if (m->up_b)
                    u += fdata(m->up_b)[e * NF + r];
            }
            switch (m->act) {
            case FWD_MOE_SILU: h[r] = g / (1.0 + exp(-g)) * u; break;
            case FWD_MOE_GELU: h[r] = gelu_tanh(g) * u; break;
            case FWD_MOE_SWIGLU_OAI: {
                const double xc = g < 7.0 ? g : 7.0, yc = u < -7.0 ? -7.0 : u > 7.0 ? 7.0 : u;
                h[r] = xc / (1.0 + exp(-1.702 * xc)) * (yc + 1.0);
                break;
            }
            }
        }
        for (int i = 0; i < NE; i++) {
            double y = dotd(m->down, e, i, h);
            if (m->down_s)
                y *= fdata(m->down_s)[e];
            if (m->down_b)
                y += fdata(m->down_b)[e * NE + i];
            out[i] += w[k] * y;
        }
    }
}

/* Runs m on NT tokens batched, checks each token against expect_token
 * within tol, and that each token alone gives the same bits. */
static void check_experts(fwd_moe *m, double tol)
{
    m->in = m->router_in = FWD_XB;
    m->dst = FWD_XB2;
    m->n_expert = NX;
    m->n_used = NU;
    forward_ctx *f = moe_ctx(m, NT, true);
    float x[NT][NE], lg[NT][NX];
    for (int t = 0; t < NT; t++) {
        for (int i = 0; i < NE; i++)
            x[t][i] = rnd();
        for (int e = 0; e < NX; e++)
            lg[t][e] = rnd() * 3;
    }
    memcpy(f->buf[FWD_XB], x, sizeof x);
    memcpy(f->buf[FWD_ROUTER], lg, sizeof lg);
    run_moe(f, NT);
    float batched[NT][NE];
    memcpy(batched, f->buf[FWD_XB2], sizeof batched);
    for (int t = 0; t < NT; t++) {
        double want[NE];
        expect_token(m, x[t], lg[t], want);
        for (int i = 0; i < NE; i++)
            if (!(fabs(batched[t][i] - want[i]) <= tol * (1.0 + fabs(want[i]))))
                fail_msg("token %d, element %d: got %.7g, want %.7g", t, i, (double)batched[t][i], want[i]);
        /* the same token alone: the same bits */
        memcpy(f->buf[FWD_XB], x[t], sizeof x[t]);
        memcpy(f->buf[FWD_ROUTER], lg[t], sizeof lg[t]);
        run_moe(f, 1);
        assert_memory_equal(f->buf[FWD_XB2], batched[t], sizeof batched[t]);
    }
    moe_ctx_free(f);
}

static void test_topk_distinct(void **s)
{
    (void)s;
    float v[256];
    int32_t got[256], all[256];
    uint32_t st = 777;
    for (int round = 0; round < 200; round++) {
        const int n = round % 3 == 0 ? 256 : 1 + (int)(st % 200), k = 1 + (int)(st % (uint32_t)(n < 12 ? n : 12));
        for (int i = 0; i < n; i++) {
            st = st * 1103515245u + 12345u;
            /* few levels in some rounds: ties everywhere */
            v[i] = round % 2 ? (float)(st >> 8) / 16777216.0f : (float)((st >> 16) % 8);
        }
        moe_argsort_desc(v, all, n);
        if (moe_topk_distinct(v, n, k, got)) {
            assert_memory_equal(got, all, (size_t)k * sizeof *got);
            for (int j = 1; j < k; j++)
                assert_true(v[got[j - 1]] > v[got[j]]);
            /* and nothing outside ties the last */
            for (int i = k; i < n; i++)
                assert_true(v[all[i]] < v[got[k - 1]]);
        } else {
            /* it declines only where a tie or a NaN is among the k largest or at their edge */
            bool tie = false;
            for (int j = 1; j <= k && j < n; j++)
                tie |= !(v[all[j - 1]] > v[all[j]]);
            assert_true(tie);
        }
    }
    /* ties below the k-th do not matter; at it or above they do */
    const float a[6] = {0.5f, 0.9f, 0.1f, 0.1f, 0.7f, 0.2f};
    assert_true(moe_topk_distinct(a, 6, 3, got));
    assert_int_equal(got[0], 1);
    assert_int_equal(got[1], 4);
    assert_int_equal(got[2], 0);
    assert_false(moe_topk_distinct(a, 6, 5, got)); /* 0.1 and 0.1 at the cut */
    const float b[5] = {0.3f, 0.8f, 0.3f, 0.8f, 0.1f};
    assert_false(moe_topk_distinct(b, 5, 1, got));
    assert_false(moe_topk_distinct(b, 5, 3, got));
    const float z[3] = {0.0f, -0.0f, -1.0f}; /* equal under > */
    assert_false(moe_topk_distinct(z, 3, 1, got));
    assert_true(moe_topk_distinct(z, 3, 3, got) == false);
    const float nan[4] = {1.0f, NAN, 0.5f, 0.25f};
    assert_false(moe_topk_distinct(nan, 4, 1, got));
    assert_false(moe_topk_distinct(a, 6, 0, got));
    assert_false(moe_topk_distinct(a, 6, 7, got));
}

/* The combine step against each operation rounded on its own (volatile:
 * no contraction in the oracle): a fused multiply-add anywhere in it, or
 * a slot summed out of order, changes some of these bits. 37 elements: the
 * 8-lane loop and the scalar tail. */
static void test_combine_roundings(void **s)
{
    (void)s;
    enum { U = 8, N = 37 };
    static float ys[U][N], bs[U][N], d[N];
    const float *y[U], *b[U];
    float sc[U], wk[U];
    for (int pass = 0; pass < 3; pass++) {
        for (int k = 0; k < U; k++) {
            for (int i = 0; i < N; i++) {
                ys[k][i] = rnd() * 3.3f;
                bs[k][i] = rnd() * 0.7f;
            }
            y[k] = ys[k];
            b[k] = pass == 1 ? NULL : bs[k];
            sc[k] = pass == 2 ? 1.0f : 1.0f + rnd() * 0.37f;
            wk[k] = 0.05f + (rnd() + 1.0f) * 0.2f;
        }
        moe_combine_row(d, y, sc, b, wk, U, N);
        for (int i = 0; i < N; i++) {
            volatile float acc = 0.0f;
            for (int k = 0; k < U; k++) {
                volatile float t = ys[k][i];
                t = t * sc[k];
                if (b[k])
                    t = t + b[k][i];
                t = t * wk[k];
                acc = k ? acc + t : t;
            }
            const float want = acc;
            if (memcmp(&want, &d[i], sizeof want))
                fail_msg("pass %d element %d: got %.9g, want %.9g", pass, i, (double)d[i], (double)want);
        }
    }
}

static void test_experts_silu_biases_scales(void **s)
{
    (void)s;
    fwd_moe m;
    memset(&m, 0, sizeof m);
    m.gating = MODEL_MOE_GATING_SOFTMAX;
    m.norm_w = true;
    m.act = FWD_MOE_SILU;
    m.gate = f32_tensor(NE, NF, NX);
    m.up = f32_tensor(NE, NF, NX);
    m.down = f32_tensor(NF, NE, NX);
    check_experts(&m, 1e-5);
    m.gate_b = f32_tensor(NF, NX, 1);
    m.up_b = f32_tensor(NF, NX, 1);
    m.down_b = f32_tensor(NE, NX, 1);
    m.gate_s = f32_tensor(NX, 1, 1);
    m.up_s = f32_tensor(NX, 1, 1);
    m.down_s = f32_tensor(NX, 1, 1);
    m.gating = MODEL_MOE_GATING_SIGMOID;
    m.w_scale = 1.5f;
    check_experts(&m, 1e-5);
    const gguf_tensor *ts[] = {m.gate, m.up, m.down, m.gate_b, m.up_b, m.down_b, m.gate_s, m.up_s, m.down_s};
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++)
        free_tensor(ts[i]);
}

static void test_experts_fused_gelu(void **s)
{
    (void)s;
    fwd_moe m;
    memset(&m, 0, sizeof m);
    m.gating = MODEL_MOE_GATING_SOFTMAX;
    m.norm_w = true;
    m.act = FWD_MOE_GELU; /* gemma4: gate|up fused, per-expert output scale */
    m.gate_up = f32_tensor(NE, 2 * NF, NX);
    m.gate_up_b = f32_tensor(2 * NF, NX, 1);
    m.down = f32_tensor(NF, NE, NX);
    m.down_s = f32_tensor(NX, 1, 1);
    check_experts(&m, 1e-2); /* ggml's GELU is an F16 table */
    free_tensor(m.gate_up);
    free_tensor(m.gate_up_b);
    free_tensor(m.down);
    free_tensor(m.down_s);
}

static void test_experts_swiglu_oai(void **s)
{
    (void)s;
    fwd_moe m;
    memset(&m, 0, sizeof m);
    m.gating = MODEL_MOE_GATING_SOFTMAX_WEIGHT; /* gpt-oss */
    m.act = FWD_MOE_SWIGLU_OAI;
    m.oai_alpha = 1.702f;
    m.oai_limit = 7.0f;
    m.gate = f32_tensor(NE, NF, NX);
    m.up = f32_tensor(NE, NF, NX);
    m.down = f32_tensor(NF, NE, NX);
    /* large enough that the clamps at +-7 matter */
    for (int64_t i = 0; i < m.up->n_elements; i++) {
        fdata(m.gate)[i] *= 3;
        fdata(m.up)[i] *= 3;
    }
    m.gate_b = f32_tensor(NF, NX, 1);
    m.up_b = f32_tensor(NF, NX, 1);
    m.down_b = f32_tensor(NE, NX, 1);
    check_experts(&m, 1e-5);
    const gguf_tensor *ts[] = {m.gate, m.up, m.down, m.gate_b, m.up_b, m.down_b};
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++)
        free_tensor(ts[i]);
}

/* The experts a token did not choose are never read: NaN there changes nothing. */
static void test_unchosen_experts_untouched(void **s)
{
    (void)s;
    fwd_moe m;
    memset(&m, 0, sizeof m);
    m.in = m.router_in = FWD_XB;
    m.dst = FWD_XB2;
    m.n_expert = NX;
    m.n_used = NU;
    m.gating = MODEL_MOE_GATING_SOFTMAX;
    m.act = FWD_MOE_SILU;
    m.gate = f32_tensor(NE, NF, NX);
    m.up = f32_tensor(NE, NF, NX);
    m.down = f32_tensor(NF, NE, NX);
    const gguf_tensor *ws[3] = {m.gate, m.up, m.down};
    for (int k = 0; k < 3; k++) /* experts 0 and 2 */
        for (int e = 0; e < NX; e += 2)
            for (int64_t i = 0; i < NE * NF; i++)
                fdata(ws[k])[(size_t)e * NE * NF + (size_t)i] = NAN;
    forward_ctx *f = moe_ctx(&m, NT, true);
    for (int t = 0; t < NT; t++) {
        for (int i = 0; i < NE; i++)
            f->buf[FWD_XB][t * NE + i] = rnd();
        const float lg[NX] = {-5, 2, -5, 1 + (float)t};
        memcpy(f->buf[FWD_ROUTER] + t * NX, lg, sizeof lg);
    }
    run_moe(f, NT);
    for (int i = 0; i < NT * NE; i++)
        assert_true(isfinite(f->buf[FWD_XB2][i]));
    run_moe(f, 1);
    for (int i = 0; i < NE; i++)
        assert_true(isfinite(f->buf[FWD_XB2][i]));
    moe_ctx_free(f);
    for (int k = 0; k < 3; k++)
        free_tensor(ws[k]);
}

/* The shared expert's mix: dst = moe + dst * sigmoid(gate logit). */
static void test_shared_expert_mix(void **s)
{
    (void)s;
    fwd_moe m;
    memset(&m, 0, sizeof m);
    forward_ctx *f = moe_ctx(&m, NT, false);
    for (int t = 0; t < NT; t++) {
        f->buf[FWD_SHGATE][t] = (float)t - 1.0f;
        for (int i = 0; i < NE; i++) {
            f->buf[FWD_XB][t * NE + i] = rnd();
            f->buf[FWD_XB2][t * NE + i] = rnd();
        }
    }
    float sh[NT * NE], mo[NT * NE];
    memcpy(sh, f->buf[FWD_XB], sizeof sh);
    memcpy(mo, f->buf[FWD_XB2], sizeof mo);
    struct fwd_step st;
    memset(&st, 0, sizeof st);
    st.kind = STEP_ROWS;
    st.n_ops = 1;
    st.ops[0] = (struct fwd_op){.kind = OP_SHEXP_MIX, .dst = FWD_XB, .src = FWD_XB2, .src2 = FWD_SHGATE};
    forward_run_rows(f, &st, NT);
    for (int t = 0; t < NT; t++)
        for (int i = 0; i < NE; i++)
            assert_float_equal(f->buf[FWD_XB][t * NE + i], mo[t * NE + i] + sh[t * NE + i] * sigmoid(t - 1.0), 1e-6);
    moe_ctx_free(f);
}

/* fwd_block_moe's steps: router (+ bias), the experts, and the shared
 * expert on the same input into dst, mixed with the experts' sum in XB2. */
static void test_block_steps(void **s)
{
    (void)s;
    model_hparams hp;
    memset(&hp, 0, sizeof hp);
    hp.n_embd = NE;
    hp.n_expert = NX;
    hp.n_expert_used = NU;
    hp.moe_gating = MODEL_MOE_GATING_SIGMOID;
    hp.moe_norm_w = true;
    hp.moe_w_scale = 2.0f;
    hp.moe_act = FWD_MOE_GELU;
    model_layer L;
    memset(&L, 0, sizeof L);
    gguf_tensor *router = f32_tensor(NE, NX, 1), *rb = f32_tensor(NX, 1, 1), *sg = f32_tensor(NE, 64, 1),
                *su = f32_tensor(NE, 64, 1), *sd = f32_tensor(64, NE, 1), *sgi = f32_tensor(NE, 1, 1);
    L.ffn_gate_inp = router;
    L.ffn_gate_inp_b = rb;
    L.ffn_gate_shexp = sg;
    L.ffn_up_shexp = su;
    L.ffn_down_shexp = sd;
    L.ffn_gate_inp_shexp = sgi;
    fwd_moe m = fwd_moe_of(&hp, &L);
    assert_int_equal(m.n_expert, NX);
    assert_int_equal(m.gating, MODEL_MOE_GATING_SIGMOID);
    assert_true(m.norm_w);
    assert_int_equal(m.act, FWD_MOE_GELU);
    assert_int_equal(m.in, FWD_XB);
    fwd_graph g;
    memset(&g, 0, sizeof g);
    fwd_block_moe(&g, &m);
    const enum fwd_step_kind want[] = {STEP_MATMUL, STEP_ROWS, STEP_MOE, STEP_MATMUL, STEP_ROWS, STEP_MATMUL, STEP_ROWS};
    assert_int_equal(g.n_steps, 7);
    for (int i = 0; i < 7; i++)
        assert_int_equal(g.steps[i].kind, want[i]);
    assert_ptr_equal(g.steps[0].w[0], router);
    assert_int_equal(g.steps[0].out[0], FWD_ROUTER);
    assert_int_equal(g.steps[1].ops[0].kind, OP_BIAS);
    assert_int_equal(g.moe[g.steps[2].moe].dst, FWD_XB2);
    assert_int_equal(g.moe[g.steps[2].moe].act, FWD_MOE_GELU);
    assert_int_equal(g.steps[3].n_seg, 3);
    assert_int_equal(g.steps[3].out[2], FWD_SHGATE);
    assert_int_equal(g.steps[5].out[0], FWD_XB);
    assert_int_equal(g.steps[6].ops[0].kind, OP_SHEXP_MIX);
    assert_int_equal(g.width[FWD_HB], 64);
    fwd_graph_free(&g);
    const gguf_tensor *ts[] = {router, rb, sg, su, sd, sgi};
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++)
        free_tensor(ts[i]);
}

/* A 3-D expert tensor of the wrong shape is refused with its name and both shapes. */
static void test_load_rejects_expert_shape(void **s)
{
    (void)s;
    const char *path = TESTDATA_REQUIRE("families2026/models/qwen3moe-mini-q8_0.gguf");
    FILE *fp = fopen(path, "rb");
    assert_non_null(fp);
    fseek(fp, 0, SEEK_END);
    const long size = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    uint8_t *buf = malloc((size_t)size);
    assert_int_equal(fread(buf, 1, (size_t)size, fp), (size_t)size);
    fclose(fp);
    const char name[] = "blk.1.ffn_up_exps.weight";
    uint8_t *p = memmem(buf, (size_t)size, name, sizeof name - 1);
    assert_non_null(p);
    /* after the name: n_dims (u32), then ne[0], ne[1], ne[2] (i64): 64 x 64 x 8
     * -> 64 x 32 x 16, the same bytes (the reader wants the data back to back) */
    uint8_t *ne1 = p + sizeof name - 1 + 4 + 8;
    int64_t v[2];
    memcpy(v, ne1, 16);
    assert_int_equal(v[0], 64);
    assert_int_equal(v[1], 8);
    v[0] = 32;
    v[1] = 16;
    memcpy(ne1, v, 16);
    char err[512] = "";
    model *m = model_load_buffer(buf, (size_t)size, "mutated", err, sizeof err);
    assert_null(m);
    assert_non_null(strstr(err, "tensor 'blk.1.ffn_up_exps.weight' has shape [64, 32, 16, 1], expected [64, 64, 8]"));
    free(buf);
}

/* --blas never takes a router (F32, the type OpenBLAS takes): another last
 * bit there may pick another expert than the reference does. */
static void test_router_never_blas(void **s)
{
    (void)s;
    const char *path = TESTDATA_REQUIRE("families2026/models/qwen3moe-mini-q8_0.gguf");
    char err[512];
    model *m = model_load_weights_only(path, err, sizeof err);
    assert_non_null(m);
    int64_t total = 0;
    assert_int_equal(forward_blas_plan(m, BLAS_MODE_ON, 512, &total, NULL), 0);
    assert_int_equal(total, 4 * 5 + 1); /* q, k, v, o and the router in each layer, the output */
    model_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_softmax_values),
        cmocka_unit_test(test_route_softmax_norm),
        cmocka_unit_test(test_route_sigmoid),
        cmocka_unit_test(test_route_softmax_weight),
        cmocka_unit_test(test_argsort_ties),
        cmocka_unit_test(test_topk_distinct),
        cmocka_unit_test(test_combine_roundings),
        cmocka_unit_test(test_swiglu_oai),
        cmocka_unit_test(test_experts_silu_biases_scales),
        cmocka_unit_test(test_experts_fused_gelu),
        cmocka_unit_test(test_experts_swiglu_oai),
        cmocka_unit_test(test_unchosen_experts_untouched),
        cmocka_unit_test(test_shared_expert_mix),
        cmocka_unit_test(test_block_steps),
        cmocka_unit_test(test_load_rejects_expert_shape),
        cmocka_unit_test(test_router_never_blas),
    };
    return cmocka_run_group_tests_name("moe", tests, NULL, NULL);
}
