/* IQ3_XXS and IQ3_S blocks: dequantization against an element-by-element
 * decoder written here from the layout (quant_iq3.h) and against the
 * reference's own dequantize_row; the dot orders (generic, x86 portable C,
 * the installed SIMD kernel, the batched tile) against the reference's
 * vec_dot bits (tests/unit/data, made by tests/golden/reference/iq_dump.c),
 * against each other on random blocks, and against the exact dot. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/tensor.h"
#include "kernels/quant_batch.h"
#include "kernels/quant_internal.h"
#include "kernels/quant_iq3.h"
#include "kernels/quant_iq_signs.h"
#include "iq_ref.h"
#include "testutil.h"

static uint64_t rng_state = 0x49513333ull;
static uint32_t rnd_u32(void)
{
    return (uint32_t)(test_xorshift64(&rng_state) >> 16);
}

static void test_sizes(void **state)
{
    (void)state;
    const enum tensor_type ts[2] = {TENSOR_TYPE_IQ3_XXS, TENSOR_TYPE_IQ3_S};
    const char *names[2] = {"IQ3_XXS", "IQ3_S"};
    const size_t sizes[2] = {98, 110};
    for (int t = 0; t < 2; t++) {
        assert_true(tensor_type_is_supported(ts[t]));
        assert_string_equal(tensor_type_name(ts[t]), names[t]);
        assert_int_equal(tensor_type_block_size(ts[t]), 256);
        assert_int_equal(tensor_type_size(ts[t]), sizes[t]);
        assert_int_equal(tensor_row_size(ts[t], 768), 3 * sizes[t]);
        assert_int_equal(tensor_row_size(ts[t], 384), 0); /* not whole super-blocks */
        assert_int_equal(tensor_dot_type(ts[t]), TENSOR_TYPE_Q8_K);
    }
}

/* The loader sizes rows in super-blocks: a partial one or a tensor past the
 * data is refused with a message, a fitting one opens. */
static void test_gguf_sizes(void **state)
{
    (void)state;
    const uint32_t ts[2] = {TENSOR_TYPE_IQ3_XXS, TENSOR_TYPE_IQ3_S};
    for (int t = 0; t < 2; t++) {
        char err[512] = "";
        void *keep;
        gguf_ctx *g = iq_gguf_one_tensor(ts[t], 256, 2, err, sizeof err, &keep); /* 196 / 220 bytes */
        assert_non_null(g);
        gguf_close(g);
        free(keep);
        g = iq_gguf_one_tensor(ts[t], 384, 1, err, sizeof err, &keep);
        assert_null(g);
        assert_non_null(strstr(err, "block size 256"));
        free(keep);
        g = iq_gguf_one_tensor(ts[t], 256, 3, err, sizeof err, &keep); /* 294 / 330 bytes > 256 */
        assert_null(g);
        assert_non_null(strstr(err, "past its end"));
        free(keep);
    }
}

/* ---- the layout, decoded weight by weight (independent of the kernels) ---- */

static float spec_xxs(const block_iq3_xxs *x, int j, uint8_t *negp)
{
    const int b = j / 32, e = j % 32;
    uint32_t aux;
    memcpy(&aux, x->qs + 64 + 4 * b, 4);
    const int code = (int)(aux >> (7 * (e / 8)) & 127);
    /* the 8th sign bit makes the count of minus signs even */
    const int bit7 = __builtin_popcount((unsigned)code) & 1;
    const int neg = e % 8 == 7 ? bit7 : code >> (e % 8) & 1;
    const int mag = (int)(quant_iq3xxs_grid[x->qs[8 * b + e / 4]] >> (8 * (e % 4)) & 255);
    const float db = fp16_to_f32(x->d) * (0.5f + (float)(aux >> 28)) * 0.5f;
    *negp = (uint8_t)neg;
    return db * (float)mag * (neg ? -1.0f : 1.0f);
}

static float spec_s(const block_iq3_s *x, int j, uint8_t *negp)
{
    const int b = j / 32, e = j % 32, g = e / 4;
    const int idx = x->qs[8 * b + g] | ((x->qh[b] >> g) & 1) << 8;
    const int mag = (int)(quant_iq3s_grid[idx] >> (8 * (e % 4)) & 255);
    const int neg = x->signs[4 * b + e / 8] >> (e % 8) & 1;
    const int sc = b % 2 ? x->scales[b / 2] >> 4 : x->scales[b / 2] & 15;
    const float db = fp16_to_f32(x->d) * (float)(2 * sc + 1);
    *negp = (uint8_t)neg;
    return db * (float)mag * (neg ? -1.0f : 1.0f);
}

/* Weight j of a row, and its stored sign bit in *neg. */
static float spec_weight(enum tensor_type t, const void *row, int64_t j, uint8_t *neg)
{
    if (t == TENSOR_TYPE_IQ3_XXS)
        return spec_xxs((const block_iq3_xxs *)row + j / QK_K, (int)(j % QK_K), neg);
    return spec_s((const block_iq3_s *)row + j / QK_K, (int)(j % QK_K), neg);
}

static void spec_signs(enum tensor_type t, const void *row, int64_t n, uint8_t *neg)
{
    for (int64_t j = 0; j < n; j++)
        spec_weight(t, row, j, &neg[j]);
}

/* ---- random data ---- */

/* A random fp16 with |value| in [2^-10, 2^-4). */
static uint16_t rnd_d(void)
{
    const uint32_t r = rnd_u32();
    return (uint16_t)((r & 1) << 15 | (5 + (r >> 1) % 6) << 10 | (r >> 8) % 1024);
}

static void rnd_row(enum tensor_type t, uint8_t *row, int64_t n)
{
    const size_t bs = tensor_type_size(t);
    for (int64_t i = 0; i < n / QK_K; i++) {
        uint8_t *b = row + (size_t)i * bs;
        for (size_t k = 0; k < bs; k++)
            b[k] = (uint8_t)rnd_u32();
        const uint16_t d = rnd_d();
        memcpy(b, &d, 2);
    }
}

/* Q8_K rows with a -128 in one element of four, so that the wrap of
 * negated -128s is exercised everywhere. */
static void rnd_act(block_q8_K *y, int64_t n)
{
    for (int64_t i = 0; i < n / QK_K; i++) {
        y[i].d = ldexpf((float)(rnd_u32() % 1000 + 1), -17);
        for (int j = 0; j < QK_K; j++)
            y[i].qs[j] = (int8_t)(rnd_u32() % 4 == 0 ? -128 : (int)(rnd_u32() % 256) - 128);
        for (int g = 0; g < QK_K / 16; g++) {
            int s = 0;
            for (int j = 0; j < 16; j++)
                s += y[i].qs[16 * g + j];
            y[i].bsums[g] = (int16_t)s;
        }
    }
}

/* ---- dequantization ---- */

static void check_dequant_spec(enum tensor_type t)
{
    const int64_t n = 3 * QK_K;
    uint8_t row[3 * 110];
    float out[3 * QK_K];
    for (int rep = 0; rep < 20; rep++) {
        rnd_row(t, row, n);
        tensor_dequantize_row(t, row, out, n);
        for (int64_t j = 0; j < n; j++) {
            uint8_t neg;
            const float want = spec_weight(t, row, j, &neg);
            if (iq_f2u(out[j]) != iq_f2u(want))
                fail_msg("%s weight %lld: %g, layout says %g", tensor_type_name(t), (long long)j,
                         (double)out[j], (double)want);
        }
    }
}

static void test_dequant_xxs_spec(void **state)
{
    (void)state;
    check_dequant_spec(TENSOR_TYPE_IQ3_XXS);
}

static void test_dequant_s_spec(void **state)
{
    (void)state;
    check_dequant_spec(TENSOR_TYPE_IQ3_S);
}

/* ---- against the reference ---- */

typedef iq_dot_fn dot_fn;

static void check_ref(const char *name, enum tensor_type t, dot_fn scalar, dot_fn x86)
{
    struct iq_ref r;
    iq_ref_load(&r, name, t);
    float *deq = iq_ref_check_kernels(&r, name, t, scalar, x86);
    /* the reference's dots near the exact value (its sign wrap included),
     * the generic order near the plain one */
    uint8_t *neg = malloc((size_t)r.n * r.rows);
    spec_signs(t, r.w, (int64_t)r.n * r.rows, neg);
    for (uint32_t i = 0; i < r.rows; i++)
        for (uint32_t c = 0; c < r.cols; c++) {
            const void *w = r.w + i * r.rs, *a = r.a + c * r.as;
            const float ref = r.dots[i * r.cols + c];
            const double mag = iq_spec_mag(deq + (size_t)i * r.n, a, r.n);
            assert_true(
                iq_close(ref, iq_spec_dot(deq + (size_t)i * r.n, a, r.n, neg + (size_t)i * r.n), mag));
            assert_true(iq_close(scalar(r.n, w, a), iq_spec_dot(deq + (size_t)i * r.n, a, r.n, NULL), mag));
        }
    free(neg);
    free(deq);
    iq_ref_free(&r);
}

static void test_ref_xxs(void **state)
{
    (void)state;
    check_ref("iq3_xxs", TENSOR_TYPE_IQ3_XXS, quant_dot_iq3_xxs_scalar, quant_dot_iq3_xxs_x86order);
}

static void test_ref_s(void **state)
{
    (void)state;
    check_ref("iq3_s", TENSOR_TYPE_IQ3_S, quant_dot_iq3_s_scalar, quant_dot_iq3_s_x86order);
}

/* Every tensor of these types in the iq-mini models, bit for bit with the
 * reference (the goldens of files that also hold another engineer's types
 * cannot run on this branch alone). */
static void test_ref_models(void **state)
{
    (void)state;
    iq_ref_check_models(TENSOR_TYPE_IQ3_XXS, TENSOR_TYPE_IQ3_S);
}

/* ---- the orders on random blocks ---- */

static void check_orders(enum tensor_type t, dot_fn scalar, dot_fn x86)
{
    enum { NMAX = 5 * QK_K, NACT = 5 };
    static uint8_t w[NMAX / QK_K * 110];
    static block_q8_K act[NACT][NMAX / QK_K];
    static float deq[NMAX], mm[NACT];
    static uint8_t neg[NMAX];
    for (int rep = 0; rep < 40; rep++) {
        const int64_t n = (int64_t)(1 + rep % 5) * QK_K;
        rnd_row(t, w, n);
        tensor_dequantize_row(t, w, deq, n);
        spec_signs(t, w, n, neg);
        for (int c = 0; c < NACT; c++)
            rnd_act(act[c], n);
        tensor_matmul(t, n, w, 1, act, NACT, sizeof act[0], mm, 1);
        for (int c = 0; c < NACT; c++) {
            const float xo = x86(n, w, act[c]);
            assert_int_equal(iq_f2u(tensor_vec_dot(t, n, w, act[c])), iq_f2u(xo));
            assert_int_equal(iq_f2u(mm[c]), iq_f2u(xo));
            const double mag = iq_spec_mag(deq, act[c], n);
            assert_true(iq_close(xo, iq_spec_dot(deq, act[c], n, neg), mag));
            assert_true(iq_close(scalar(n, w, act[c]), iq_spec_dot(deq, act[c], n, NULL), mag));
        }
    }
}

static void test_orders_xxs(void **state)
{
    (void)state;
    check_orders(TENSOR_TYPE_IQ3_XXS, quant_dot_iq3_xxs_scalar, quant_dot_iq3_xxs_x86order);
}

static void test_orders_s(void **state)
{
    (void)state;
    check_orders(TENSOR_TYPE_IQ3_S, quant_dot_iq3_s_scalar, quant_dot_iq3_s_x86order);
}

/* The sign table the IQ3_XXS kernels read, bit 7 by the parity rule. */
static void test_xxs_sign_parity(void **state)
{
    (void)state;
    for (int c = 0; c < 128; c++)
        assert_int_equal(quant_ksigns_iq2xs[c], c | (__builtin_popcount((unsigned)c) & 1) << 7);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sizes),           cmocka_unit_test(test_gguf_sizes),
        cmocka_unit_test(test_xxs_sign_parity), cmocka_unit_test(test_dequant_xxs_spec),
        cmocka_unit_test(test_dequant_s_spec),  cmocka_unit_test(test_ref_xxs),
        cmocka_unit_test(test_ref_s),           cmocka_unit_test(test_ref_models),
        cmocka_unit_test(test_orders_xxs),      cmocka_unit_test(test_orders_s),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
