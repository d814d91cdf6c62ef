/* Attention sinks (gpt-oss) in the attention kernels: with a sink logit s
 * per query head, out = sum_j e^(q.k_j) v_j / (sum_j e^(q.k_j) + e^s),
 * for every kernel (one chunk, split KV, tiled, generic) against a
 * double-precision computation, within the sliding window too, and a sink
 * of -inf leaves every bit as without sinks. Bit-exactness against the
 * reference is checked by tests/golden/families2026.sh (gpt-oss). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "testutil.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/tensor.h"
#include "model/forward_attn.h"

enum { N_CTX = 640, NH = 3 };

static uint64_t rng = 0x51AB5EEDull;
static float rnd(void) { return (float)(test_xorshift64(&rng) >> 40) / (float)(1 << 24) * 2.0f - 1.0f; }

typedef struct {
    int hd;
    uint16_t *k16, *v16;
    float *k32, *v32;
    float *buf;
    uint16_t *half;
    attn_scratch s;
} fixture;

static void fixture_init(fixture *fx, int hd)
{
    fx->hd = hd;
    const size_t n = (size_t)N_CTX * hd;
    fx->k16 = malloc(n * 2);
    fx->v16 = malloc(n * 2);
    fx->k32 = malloc(n * 4);
    fx->v32 = malloc(n * 4);
    for (size_t i = 0; i < n; i++) {
        fx->k16[i] = tensor_fp32_to_fp16(rnd() * 2.0f);
        fx->v16[i] = tensor_fp32_to_fp16(rnd());
        fx->k32[i] = tensor_fp16_to_fp32(fx->k16[i]);
        fx->v32[i] = tensor_fp16_to_fp32(fx->v16[i]);
    }
    fx->buf = malloc(attn_scratch_floats(hd, N_CTX, NH) * sizeof(float));
    fx->half = malloc((size_t)hd * 2 * sizeof(uint16_t));
    attn_scratch_init(&fx->s, fx->buf, fx->half, hd, N_CTX);
}

static void fixture_free(fixture *fx)
{
    free(fx->k16);
    free(fx->v16);
    free(fx->k32);
    free(fx->v32);
    free(fx->buf);
    free(fx->half);
}

static attn_kv view(const fixture *fx, bool f16, int32_t window, const float *sinks)
{
    attn_kv kv = {
        .k = f16 ? (const void *)fx->k16 : (const void *)fx->k32,
        .v = f16 ? (const void *)fx->v16 : (const void *)fx->v32,
        .stride = fx->hd,
        .f16 = f16,
        .hd = fx->hd,
        .scale = 1.0f / sqrtf((float)fx->hd),
        .window = window,
        .sinks = sinks,
    };
    return kv;
}

/* The query at n_kv - 1 over its keys (the last `window` when window > 0)
 * and the sink, in double. */
static void exact(const fixture *fx, const float *q, int32_t n_kv, int32_t window, double sink, double *out)
{
    const int hd = fx->hd;
    const int32_t k0 = window > 0 && n_kv > window ? n_kv - window : 0;
    double mx = sink, sum = 0.0;
    double *s = malloc(sizeof(double) * (size_t)n_kv);
    for (int32_t j = k0; j < n_kv; j++) {
        double d = 0.0;
        for (int i = 0; i < hd; i++)
            d += (double)fx->k32[(size_t)j * hd + i] * q[i];
        s[j] = d / sqrt((double)hd);
        mx = s[j] > mx ? s[j] : mx;
    }
    for (int i = 0; i < hd; i++)
        out[i] = 0.0;
    for (int32_t j = k0; j < n_kv; j++) {
        const double p = exp(s[j] - mx);
        sum += p;
        for (int i = 0; i < hd; i++)
            out[i] += p * fx->v32[(size_t)j * hd + i];
    }
    sum += exp(sink - mx);
    for (int i = 0; i < hd; i++)
        out[i] /= sum;
    free(s);
}

static void expect_close(const float *got, const double *want, int hd, double tol, const char *what, int32_t pos,
                         double sink)
{
    for (int i = 0; i < hd; i++)
        if (!(fabs(got[i] - want[i]) <= tol))
            fail_msg("%s pos %d sink %g elem %d: %.7f, exact %.7f", what, pos, sink, i, (double)got[i], want[i]);
}

static void test_sinks_are_softmax(void **state)
{
    (void)state;
    const int hds[] = {32, 64};
    const float sinks[] = {-3.0f, 0.25f, 2.5f, 9.0f}; /* 9: the sink outweighs every key */
    for (size_t h = 0; h < 2; h++) {
        fixture fx;
        fixture_init(&fx, hds[h]);
        const int hd = fx.hd;
        float *q = malloc(sizeof(float) * ATTN_TILE * NH * hd), *out = malloc(sizeof(float) * ATTN_TILE * NH * hd);
        double *want = malloc(sizeof(double) * hd);
        for (int i = 0; i < ATTN_TILE * NH * hd; i++)
            q[i] = rnd() * 1.5f;
        for (size_t si = 0; si < 4; si++)
            for (int f16 = 0; f16 <= 1; f16++)
                for (int w = 0; w <= 1; w++) {
                    const int32_t window = w ? 8 : 0;
                    const float sk[NH] = {sinks[si], sinks[si] - 1.0f, sinks[si] + 0.5f};
                    const attn_kv kv = view(&fx, f16, window, sk);
                    const double tol = f16 ? 4e-3 : 1e-4;
                    const int32_t lens[] = {1, 2, 9, 65, 300};
                    for (size_t l = 0; l < 5; l++) {
                        exact(&fx, q, lens[l], window, sk[0], want);
                        attn_row(&kv, q, lens[l], &fx.s, out);
                        expect_close(out, want, hd, tol, "attn_row", lens[l] - 1, sk[0]);
                    }
                    /* split: with the window, chunk 0 sees no key but still carries the sink */
                    for (int split = 1; split <= 3; split++) {
                        const int32_t n_kv = 400;
                        exact(&fx, q, n_kv, window, sk[0], want);
                        attn_row_split(&kv, q, n_kv, attn_kv_view(n_kv - 1), split, &fx.s, out);
                        expect_close(out, want, hd, tol, "attn_row_split", n_kv - 1, sk[0]);
                    }
                    /* tiled: NH query heads of one KV head, each with its sink */
                    attn_tile(&kv, q, (int64_t)NH * hd, NH, ATTN_TILE, 100, &fx.s, out, (int64_t)NH * hd);
                    for (int r = 0; r < ATTN_TILE; r++)
                        for (int g = 0; g < NH; g++) {
                            const float *qr = q + (size_t)r * NH * hd + (size_t)g * hd;
                            exact(&fx, qr, 100 + r + 1, window, sk[g], want);
                            expect_close(out + (size_t)r * NH * hd + (size_t)g * hd, want, hd, 1e-4, "attn_tile",
                                         100 + r, sk[g]);
                        }
                }
        free(q);
        free(out);
        free(want);
        fixture_free(&fx);
    }
}

/* e^-inf = 0 joins the sums exactly: every kernel gives the bits it gives
 * without sinks. */
static void test_sink_minus_inf(void **state)
{
    (void)state;
    fixture fx;
    fixture_init(&fx, 32);
    const int hd = 32;
    const float sk[NH] = {-INFINITY, -INFINITY, -INFINITY};
    float *q = malloc(sizeof(float) * ATTN_TILE * NH * hd);
    float *a = malloc(sizeof(float) * ATTN_TILE * NH * hd), *b = malloc(sizeof(float) * ATTN_TILE * NH * hd);
    for (int i = 0; i < ATTN_TILE * NH * hd; i++)
        q[i] = rnd();
    for (int f16 = 0; f16 <= 1; f16++) {
        const attn_kv with = view(&fx, f16, 0, sk), without = view(&fx, f16, 0, NULL);
        attn_row(&with, q, 77, &fx.s, a);
        attn_row(&without, q, 77, &fx.s, b);
        assert_memory_equal(a, b, sizeof(float) * hd);
        attn_row_split(&with, q, 600, attn_kv_view(599), 2, &fx.s, a);
        attn_row_split(&without, q, 600, attn_kv_view(599), 2, &fx.s, b);
        assert_memory_equal(a, b, sizeof(float) * hd);
        attn_tile(&with, q, (int64_t)NH * hd, NH, ATTN_TILE, 30, &fx.s, a, (int64_t)NH * hd);
        attn_tile(&without, q, (int64_t)NH * hd, NH, ATTN_TILE, 30, &fx.s, b, (int64_t)NH * hd);
        assert_memory_equal(a, b, sizeof(float) * ATTN_TILE * NH * hd);
    }
    free(q);
    free(a);
    free(b);
    fixture_free(&fx);
}

/* The generic kernel (quantized caches): each head with its own sink, the
 * same bits as that head alone, and softmax with the sink. */
static void test_generic_sinks(void **state)
{
    (void)state;
    enum { HD = 32, NK = 120 };
    const size_t kr = tensor_row_size(TENSOR_TYPE_Q8_0, HD);
    uint8_t *kc = malloc((size_t)NK * kr), *vc = malloc((size_t)NK * kr);
    float row[HD], q[NH * HD], all[NH * HD], one[HD];
    float *buf = malloc(attn_scratch_floats(HD, N_CTX, NH) * sizeof(float));
    uint16_t half[2 * HD];
    attn_scratch sc;
    attn_scratch_init(&sc, buf, half, HD, N_CTX);
    for (int i = 0; i < NH * HD; i++)
        q[i] = rnd() * 2.0f;
    for (int j = 0; j < NK; j++) {
        for (int i = 0; i < HD; i++)
            row[i] = rnd() * 2.0f;
        tensor_quantize_row(TENSOR_TYPE_Q8_0, row, kc + (size_t)j * kr, HD);
        for (int i = 0; i < HD; i++)
            row[i] = rnd();
        tensor_quantize_row(TENSOR_TYPE_Q8_0, row, vc + (size_t)j * kr, HD);
    }
    const float sk[NH] = {0.5f, 6.0f, -2.0f};
    attn_kv kv = {.k = kc, .v = vc, .generic = true, .k_type = TENSOR_TYPE_Q8_0, .v_type = TENSOR_TYPE_Q8_0,
                  .k_row = kr, .v_row = kr, .hd = HD, .scale = 0.125f, .sinks = sk};
    attn_rows_generic(&kv, q, NH, NK, &sc, all);
    float plain[NH * HD];
    kv.sinks = NULL;
    attn_rows_generic(&kv, q, NH, NK, &sc, plain);
    for (int h = 0; h < NH; h++) {
        attn_kv k1 = kv;
        k1.sinks = &sk[h];
        attn_row(&k1, q + h * HD, NK, &sc, one);
        assert_memory_equal(one, all + h * HD, sizeof one);
        /* a sink only shrinks the weights of the values: out = plain * S / (S + e^(s - M)) */
        double ratio = 0;
        int cnt = 0;
        for (int i = 0; i < HD; i++)
            if (fabs(plain[h * HD + i]) > 1e-3) {
                ratio += all[h * HD + i] / plain[h * HD + i];
                cnt++;
            }
        ratio /= cnt;
        assert_true(ratio > 0.0 && ratio < 1.0);
        for (int i = 0; i < HD; i++)
            assert_true(fabs(all[h * HD + i] - ratio * plain[h * HD + i]) <= 1e-4);
    }
    free(kc);
    free(vc);
    free(buf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sinks_are_softmax),
        cmocka_unit_test(test_sink_minus_inf),
        cmocka_unit_test(test_generic_sinks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
