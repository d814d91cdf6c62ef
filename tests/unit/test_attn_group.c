/* The per-KV-head attention kernels (engine/model/forward_attn_group.c,
 * forward_attn_quant.c) and
 * the vector expf they use (engine/kernels/expf_libm.c) give, bit for bit,
 * what the one-query kernels of forward_attn.c give for each head alone, and
 * what the C library's expf gives. Those one-query kernels are the
 * reference's order (tests/golden/logits.sh and tests/golden/longctx.sh hold
 * them to llama.cpp). Skipped where the build has no such kernels (no
 * AVX-512) or the C library computes expf differently. */
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
#include "kernels/expf_libm.h"
#include "model/forward_attn.h"

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static float rnd(void) { return (float)(test_xorshift64(&rng) >> 40) / (float)(1 << 24) * 2.0f - 1.0f; }

/* Every float of a stride-pattern over [-112, 112] (about 1 in 97 of them),
 * infinities, NaN and both zeros: the vector lanes and the library agree. */
static void test_expf_matches_libm(void **state)
{
    (void)state;
    if (!expf_libm_exact())
        skip();
    enum { B = 4096 };
    static float x[B], y[B];
    long bad = 0;
    for (int sign = 0; sign < 2; sign++)
        for (uint64_t b0 = 0; b0 < 0x42e00000u; b0 += (uint64_t)B * 97) {
            int n = 0;
            for (uint64_t b = b0; n < B && b < 0x42e00000u; b += 97) {
                const uint32_t bits = (uint32_t)b | (sign ? 0x80000000u : 0u);
                memcpy(&x[n++], &bits, sizeof bits);
            }
            expf_libm_n(x, y, n);
            for (int i = 0; i < n; i++) {
                const float want = expf(x[i]);
                if (memcmp(&want, &y[i], sizeof want) != 0 && bad++ < 5)
                    print_error("expf(%a): library %a, lanes %a\n", (double)x[i], (double)want, (double)y[i]);
            }
        }
    const float special[] = {INFINITY, -INFINITY, NAN, 0.0f, -0.0f, 88.0f, -88.0f, 89.0f, -104.0f, -200.0f};
    const int ns = (int)(sizeof special / sizeof special[0]);
    expf_libm_n(special, y, ns);
    for (int i = 0; i < ns; i++) {
        const float want = expf(special[i]);
        if (memcmp(&want, &y[i], sizeof want) != 0 && !(isnan(want) && isnan(y[i])) && bad++ < 10)
            print_error("expf(%a): library %a, lanes %a\n", (double)special[i], (double)want, (double)y[i]);
    }
    assert_int_equal(bad, 0);
}

enum { N_CTX = 1200, KV_HEADS = 2 };

typedef struct {
    int hd;
    uint16_t *k, *v; /* head-major: KV head h's row p at (h * N_CTX + p) * hd */
    float *q, *a, *b;
    float *buf, *gbuf;
    float *parts; /* attn_group_part's results of up to 3 chunks */
    uint16_t half[1024]; /* 2 * hd */
    attn_scratch s;
} fixture;

static void fixture_init(fixture *fx, int hd, float kscale)
{
    fx->hd = hd;
    const size_t n = (size_t)KV_HEADS * N_CTX * (size_t)hd;
    fx->k = malloc(n * 2);
    fx->v = malloc(n * 2);
    for (size_t i = 0; i < n; i++) {
        fx->k[i] = tensor_fp32_to_fp16(rnd() * kscale);
        fx->v[i] = tensor_fp32_to_fp16(rnd());
    }
    const size_t w = (size_t)ATTN_GROUP_MAX * (size_t)hd;
    fx->q = malloc(w * sizeof(float));
    fx->a = malloc(w * sizeof(float));
    fx->b = malloc(w * sizeof(float));
    fx->buf = malloc(attn_scratch_floats(hd, N_CTX, 1) * sizeof(float));
    fx->gbuf = malloc(attn_group_scratch_floats(hd) * sizeof(float));
    fx->parts = malloc(3 * attn_group_part_floats(ATTN_GROUP_MAX, hd) * sizeof(float));
    attn_scratch_init(&fx->s, fx->buf, fx->half, hd, N_CTX);
}

static void fixture_free(fixture *fx)
{
    free(fx->k);
    free(fx->v);
    free(fx->q);
    free(fx->a);
    free(fx->b);
    free(fx->buf);
    free(fx->gbuf);
    free(fx->parts);
}

static attn_kv view(const fixture *fx, int head, int32_t window)
{
    const attn_kv kv = {
        .k = fx->k + (size_t)head * N_CTX * fx->hd,
        .v = fx->v + (size_t)head * N_CTX * fx->hd,
        .stride = fx->hd,
        .f16 = true,
        .hd = fx->hd,
        .scale = 1.0f / sqrtf((float)fx->hd),
        .window = window,
    };
    return kv;
}

/* nh heads at once against each head alone, one chunk and split, for
 * lengths around the 16-key groups and 64-key blocks, with and without a
 * window. kscale large makes scores spread past expf's vector range (the
 * library's own path) and new maxima late in the keys. */
static void check_heads(int hd, float kscale, bool sinks)
{
    /* sink logits (gpt-oss): below, among and above the scores, one per head */
    float sk[ATTN_GROUP_MAX];
    for (int g = 0; g < ATTN_GROUP_MAX; g++)
        sk[g] = (float)(g % 4) * 3.0f - 4.0f;
    fixture fx;
    fixture_init(&fx, hd, kscale);
    const int nhs[] = {1, 3, 8, 16};
    const int32_t lens[] = {1, 2, 15, 16, 17, 63, 64, 65, 130, 300, 513, 1100};
    const int32_t windows[] = {0, 40, 512};
    for (size_t w = 0; w < sizeof windows / sizeof windows[0]; w++) {
        attn_kv kv = view(&fx, 1, windows[w]), one = kv;
        kv.sinks = sinks ? sk : NULL;
        for (size_t h = 0; h < sizeof nhs / sizeof nhs[0]; h++) {
            const int nh = nhs[h];
            for (int i = 0; i < nh * hd; i++)
                fx.q[i] = rnd() * 2.0f;
            for (size_t l = 0; l < sizeof lens / sizeof lens[0]; l++) {
                const int32_t n = lens[l];
                attn_group_row(&kv, fx.q, nh, n, fx.gbuf, fx.a);
                for (int g = 0; g < nh; g++) {
                    one.sinks = sinks ? &sk[g] : NULL;
                    attn_row(&one, fx.q + (size_t)g * hd, n, &fx.s, fx.b + (size_t)g * hd);
                }
                if (memcmp(fx.a, fx.b, sizeof(float) * (size_t)nh * hd) != 0)
                    fail_msg("attn_group_row hd %d, %d heads, %d keys, window %d", hd, nh, n, windows[w]);
                for (int split = 1; split <= 3; split++) {
                    const int32_t view_len = attn_kv_view(n - 1);
                    attn_group_split(&kv, fx.q, nh, n, view_len, split, fx.gbuf, fx.a);
                    for (int g = 0; g < nh; g++) {
                        one.sinks = sinks ? &sk[g] : NULL;
                        attn_row_split(&one, fx.q + (size_t)g * hd, n, view_len, split, &fx.s,
                                       fx.b + (size_t)g * hd);
                    }
                    if (memcmp(fx.a, fx.b, sizeof(float) * (size_t)nh * hd) != 0)
                        fail_msg("attn_group_split hd %d, %d heads, %d keys, %d chunks, window %d", hd, nh, n, split,
                                 windows[w]);
                    /* the same split as parts (computed last chunk first, as
                     * threads may) merged head by head: the same bits */
                    for (int c = split - 1; c >= 0; c--)
                        attn_group_part(&kv, fx.q, nh, n, view_len, split, c, fx.gbuf,
                                        fx.parts + (size_t)c * attn_group_part_floats(nh, hd));
                    for (int g = 0; g < nh; g++)
                        attn_group_merge(nh, hd, split, fx.parts, g, fx.a + (size_t)g * hd);
                    if (memcmp(fx.a, fx.b, sizeof(float) * (size_t)nh * hd) != 0)
                        fail_msg("attn_group_part/merge hd %d, %d heads, %d keys, %d chunks, window %d", hd, nh, n,
                                 split, windows[w]);
                }
            }
        }
    }
    fixture_free(&fx);
}

static void test_group_matches_one_head(void **state)
{
    (void)state;
    const attn_kv probe = {.f16 = true, .hd = 64};
    if (!attn_group_ok(&probe))
        skip();
    check_heads(64, 2.0f, false);
    check_heads(128, 2.0f, false);
    check_heads(256, 1.0f, false);
    check_heads(512, 0.5f, false);
}

/* With attention sinks (gpt-oss's generation): each head's sink joins its
 * softmax after the keys, in the first chunk of a split. */
static void test_group_sinks(void **state)
{
    (void)state;
    const attn_kv probe = {.f16 = true, .hd = 64};
    if (!attn_group_ok(&probe))
        skip();
    check_heads(64, 2.0f, true);
    check_heads(128, 8.0f, true);
}

static void test_group_wide_scores(void **state)
{
    (void)state;
    const attn_kv probe = {.f16 = true, .hd = 64};
    if (!attn_group_ok(&probe))
        skip();
    check_heads(64, 60.0f, false);
}

/* A quantized cache: up to 16 queries at once (attn_quant_queries) against
 * each alone through the generic one-chunk kernel (attn_row), for the K and
 * V types the fast kernel takes, causal bounds (a prompt's tokens) and
 * windows. */
static void check_quant(int hd, enum tensor_type kt, enum tensor_type vt)
{
    enum { N = 700 };
    const size_t krow = tensor_row_size(kt, hd), vrow = tensor_row_size(vt, hd);
    uint8_t *k = malloc(N * krow), *v = malloc(N * vrow);
    float *row = malloc(sizeof(float) * (size_t)hd);
    for (int j = 0; j < N; j++) {
        for (int i = 0; i < hd; i++)
            row[i] = rnd() * 2.0f;
        tensor_quantize_row(kt, row, k + (size_t)j * krow, hd);
        for (int i = 0; i < hd; i++)
            row[i] = rnd();
        if (vt == TENSOR_TYPE_F16)
            for (int i = 0; i < hd; i++)
                ((uint16_t *)(v + (size_t)j * vrow))[i] = tensor_fp32_to_fp16(row[i]);
        else
            tensor_quantize_row(vt, row, v + (size_t)j * vrow, hd);
    }
    float *q = malloc(sizeof(float) * ATTN_GROUP_MAX * (size_t)hd);
    float *a = malloc(sizeof(float) * ATTN_GROUP_MAX * (size_t)hd), *b = malloc(sizeof(float) * (size_t)hd);
    float *scratch = aligned_alloc(64, (attn_quant_scratch_floats(hd) * sizeof(float) + 63) & ~(size_t)63);
    float *buf = malloc(attn_scratch_floats(hd, N, 1) * sizeof(float));
    uint16_t half[512];
    attn_scratch sc;
    attn_scratch_init(&sc, buf, half, hd, N);
    for (int i = 0; i < ATTN_GROUP_MAX * hd; i++)
        q[i] = rnd() * 2.0f;
    const int32_t windows[] = {0, 50};
    const int nqs[] = {1, 5, 16};
    const int32_t ends[] = {1, 17, 64, 65, 200, 700};
    for (size_t w = 0; w < sizeof windows / sizeof windows[0]; w++)
        for (size_t e = 0; e < sizeof ends / sizeof ends[0]; e++)
            for (size_t n = 0; n < sizeof nqs / sizeof nqs[0]; n++) {
                const attn_kv kv = {.k = k, .v = v, .generic = true, .k_type = kt, .v_type = vt, .k_row = krow,
                                    .v_row = vrow, .hd = hd, .scale = 1.0f / sqrtf((float)hd), .window = windows[w]};
                attn_query qv[ATTN_GROUP_MAX];
                const int nq = nqs[n];
                for (int i = 0; i < nq; i++) {
                    /* consecutive tokens ending at ends[e], two heads each */
                    const int32_t n_kv = ends[e] - (nq - 1 - i) / 2 > 0 ? ends[e] - (nq - 1 - i) / 2 : 1;
                    qv[i] = (attn_query){q + (size_t)i * hd, a + (size_t)i * hd,
                                         windows[w] > 0 && n_kv > windows[w] ? n_kv - windows[w] : 0, n_kv};
                }
                attn_quant_queries(&kv, qv, nq, scratch);
                for (int i = 0; i < nq; i++) {
                    attn_row(&kv, qv[i].q, qv[i].hi, &sc, b);
                    if (memcmp(qv[i].out, b, sizeof(float) * (size_t)hd) != 0)
                        fail_msg("attn_quant_queries %s/%s hd %d: query %d of %d, keys [%d, %d)", tensor_type_name(kt),
                                 tensor_type_name(vt), hd, i, nq, qv[i].lo, qv[i].hi);
                }
            }
    free(k);
    free(v);
    free(row);
    free(q);
    free(a);
    free(b);
    free(scratch);
    free(buf);
}

static void test_quant_matches_one_query(void **state)
{
    (void)state;
    const attn_kv probe = {.generic = true, .k_type = TENSOR_TYPE_Q8_0, .v_type = TENSOR_TYPE_Q8_0, .hd = 64};
    if (!attn_quant_ok(&probe))
        skip();
    check_quant(64, TENSOR_TYPE_Q8_0, TENSOR_TYPE_Q8_0);
    check_quant(64, TENSOR_TYPE_Q4_0, TENSOR_TYPE_Q4_0);
    check_quant(64, TENSOR_TYPE_Q8_0, TENSOR_TYPE_F16);
    check_quant(64, TENSOR_TYPE_Q4_0, TENSOR_TYPE_Q8_0);
    check_quant(128, TENSOR_TYPE_Q8_0, TENSOR_TYPE_Q4_0);
    check_quant(256, TENSOR_TYPE_Q4_0, TENSOR_TYPE_F16);
}

/* Which heads and caches the kernels take */
static void test_group_choice(void **state)
{
    (void)state;
    attn_kv kv = {.f16 = true, .hd = 80};
    assert_false(attn_group_ok(&kv)); /* not a multiple of 64 */
    kv.hd = 64;
    kv.f16 = false;
    assert_false(attn_group_ok(&kv)); /* F32 cache */
    kv.f16 = true;
    kv.generic = true;
    assert_false(attn_group_ok(&kv)); /* quantized cache */
    attn_kv qk = {.generic = true, .k_type = TENSOR_TYPE_F16, .v_type = TENSOR_TYPE_Q8_0, .hd = 64};
    assert_false(attn_quant_ok(&qk)); /* F16 K: the scalar kernel */
    qk.k_type = TENSOR_TYPE_Q8_0;
    qk.v_type = TENSOR_TYPE_F32;
    assert_false(attn_quant_ok(&qk)); /* F32 V */
    qk.v_type = TENSOR_TYPE_Q4_0;
    qk.hd = 96;
    assert_false(attn_quant_ok(&qk)); /* heads not 64, 128 or 256 */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_expf_matches_libm),
        cmocka_unit_test(test_group_matches_one_head),
        cmocka_unit_test(test_group_wide_scores),
        cmocka_unit_test(test_group_sinks),
        cmocka_unit_test(test_quant_matches_one_query),
        cmocka_unit_test(test_group_choice),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
