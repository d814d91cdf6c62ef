/* IQ1_S and IQ1_M blocks: dequantization against a weight-by-weight decoder
 * written here from the layout (quant_iq1.h) and against the reference's own
 * dequantize_row; the dot orders (generic, x86 portable C, the installed SIMD
 * kernel, the batched tile) against the reference's vec_dot bits
 * (tests/unit/data, made by tests/golden/reference/iq_dump.c), against each
 * other on random blocks, and against the exact dot. */
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
#include "kernels/quant_iq1.h"
#include "iq_ref.h"
#include "testutil.h"

static uint64_t rng_state = 0x49513131ull;
static uint32_t rnd_u32(void)
{
    return (uint32_t)(test_xorshift64(&rng_state) >> 16);
}

static void test_sizes(void **state)
{
    (void)state;
    const enum tensor_type ts[2] = {TENSOR_TYPE_IQ1_S, TENSOR_TYPE_IQ1_M};
    const char *names[2] = {"IQ1_S", "IQ1_M"};
    const size_t sizes[2] = {50, 56};
    for (int t = 0; t < 2; t++) {
        assert_true(tensor_type_is_supported(ts[t]));
        assert_string_equal(tensor_type_name(ts[t]), names[t]);
        assert_int_equal(tensor_type_block_size(ts[t]), 256);
        assert_int_equal(tensor_type_size(ts[t]), sizes[t]);
        assert_int_equal(tensor_row_size(ts[t], 768), 3 * sizes[t]);
        assert_int_equal(tensor_row_size(ts[t], 384), 0);
        assert_int_equal(tensor_dot_type(ts[t]), TENSOR_TYPE_Q8_K);
    }
}

/* The loader sizes rows in super-blocks. */
static void test_gguf_sizes(void **state)
{
    (void)state;
    const uint32_t ts[2] = {TENSOR_TYPE_IQ1_S, TENSOR_TYPE_IQ1_M};
    for (int t = 0; t < 2; t++) {
        char err[512] = "";
        void *keep;
        gguf_ctx *g = iq_gguf_one_tensor(ts[t], 256, 4, err, sizeof err, &keep); /* 200 / 224 bytes */
        assert_non_null(g);
        gguf_close(g);
        free(keep);
        g = iq_gguf_one_tensor(ts[t], 384, 1, err, sizeof err, &keep);
        assert_null(g);
        assert_non_null(strstr(err, "block size 256"));
        free(keep);
        g = iq_gguf_one_tensor(ts[t], 256, 6, err, sizeof err, &keep); /* 300 / 336 bytes > 256 */
        assert_null(g);
        assert_non_null(strstr(err, "past its end"));
        free(keep);
    }
}

static int cmp_u64(const void *a, const void *b)
{
    const uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* The grid: every byte -1, 0 or +1, the 2048 entries distinct (the values
 * themselves are checked against the reference's dumps). */
static void test_grid_values(void **state)
{
    (void)state;
    static uint64_t sorted[2048];
    for (int i = 0; i < 2048; i++)
        for (int j = 0; j < 8; j++) {
            const int8_t v = (int8_t)(quant_iq1s_grid[i] >> (8 * j));
            assert_true(v >= -1 && v <= 1);
        }
    memcpy(sorted, quant_iq1s_grid, sizeof sorted);
    qsort(sorted, 2048, sizeof sorted[0], cmp_u64);
    for (int i = 1; i < 2048; i++)
        assert_true(sorted[i] != sorted[i - 1]);
}

/* ---- the layout, decoded weight by weight (independent of the kernels) ---- */

struct w1 {
    float dl; /* d * (2 s + 1) */
    int g;    /* the grid value, -1..1 */
    int dneg; /* the delta is -1/8 */
};

static struct w1 spec_iq1_s(const block_iq1_s *x, int j)
{
    const int b = j / 32, l = (j % 32) / 8;
    const unsigned h = x->qh[b];
    const int idx = x->qs[4 * b + l] | (int)((h >> (3 * l)) & 7) << 8;
    return (struct w1){fp16_to_f32(x->d) * (float)(2 * ((h >> 12) & 7) + 1),
                       (int8_t)(quant_iq1s_grid[idx] >> (8 * (j % 8))), (int)(h >> 15)};
}

static struct w1 spec_iq1_m(const block_iq1_m *x, int j)
{
    const int b = j / 32, l = (j % 32) / 8;
    const int nib = x->qh[2 * b + l / 2] >> (4 * (l % 2)) & 15;
    const int idx = x->qs[4 * b + l] | (nib & 7) << 8;
    uint16_t sc[4];
    memcpy(sc, x->scales, 8);
    uint16_t d16 = 0;
    for (int k = 0; k < 4; k++)
        d16 |= (uint16_t)((sc[k] >> 12) << (4 * k));
    const int s = sc[b / 2] >> (6 * (b % 2) + 3 * ((j % 32) / 16)) & 7;
    return (struct w1){fp16_to_f32(d16) * (float)(2 * s + 1), (int8_t)(quant_iq1s_grid[idx] >> (8 * (j % 8))),
                       nib >> 3};
}

static struct w1 spec_weight(enum tensor_type t, const void *row, int64_t j)
{
    if (t == TENSOR_TYPE_IQ1_S)
        return spec_iq1_s((const block_iq1_s *)row + j / QK_K, (int)(j % QK_K));
    return spec_iq1_m((const block_iq1_m *)row + j / QK_K, (int)(j % QK_K));
}

static float spec_value(struct w1 w)
{
    return w.dl * ((float)w.g + (w.dneg ? -0.125f : 0.125f));
}

/* The exact dot; with `wrap`, the x86 kernels' 8-bit negation of -128 in
 * the grid part (both types) and in the delta part (IQ1_M: IQ1_S takes its
 * delta part from the Q8_K bsums, exact). */
static double spec_dot(enum tensor_type t, const void *row, const block_q8_K *y, int64_t n, int wrap,
                       double *mag)
{
    double s = 0, m = 0;
    for (int64_t j = 0; j < n; j++) {
        const struct w1 w = spec_weight(t, row, j);
        const int q = y[j / QK_K].qs[j % QK_K];
        const int wg = wrap && q == -128 && w.g < 0;
        const int wd = wrap && t == TENSOR_TYPE_IQ1_M && q == -128 && w.dneg;
        const double pg = wg ? -128.0 : (double)w.g * q;
        const double pd = wd ? -128.0 : (w.dneg ? -q : q);
        s += (double)w.dl * (pg + 0.125 * pd) * y[j / QK_K].d;
        m += fabs((double)w.dl * y[j / QK_K].d) * (fabs(pg) + 0.125 * fabs(pd));
    }
    *mag = m;
    return s;
}

/* ---- random data ---- */

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
        if (t == TENSOR_TYPE_IQ1_S) {
            memcpy(b, &d, 2);
        } else { /* the fp16 in the scales' top nibbles */
            quant_iq1m_set_d((block_iq1_m *)b, d);
        }
    }
}

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
    uint8_t row[3 * 56];
    float out[3 * QK_K];
    for (int rep = 0; rep < 20; rep++) {
        rnd_row(t, row, n);
        tensor_dequantize_row(t, row, out, n);
        for (int64_t j = 0; j < n; j++) {
            const float want = spec_value(spec_weight(t, row, j));
            if (iq_f2u(out[j]) != iq_f2u(want))
                fail_msg("%s weight %lld: %g, layout says %g", tensor_type_name(t), (long long)j,
                         (double)out[j], (double)want);
        }
    }
}

static void test_dequant_s_spec(void **state)
{
    (void)state;
    check_dequant_spec(TENSOR_TYPE_IQ1_S);
}

static void test_dequant_m_spec(void **state)
{
    (void)state;
    check_dequant_spec(TENSOR_TYPE_IQ1_M);
}

/* ---- against the reference ---- */

typedef iq_dot_fn dot_fn;

static void check_ref(const char *name, enum tensor_type t, dot_fn scalar, dot_fn x86)
{
    struct iq_ref r;
    iq_ref_load(&r, name, t);
    free(iq_ref_check_kernels(&r, name, t, scalar, x86));
    /* the reference's dots near the exact value (its sign wrap included),
     * the generic order near the plain one */
    for (uint32_t i = 0; i < r.rows; i++)
        for (uint32_t c = 0; c < r.cols; c++) {
            const void *w = r.w + i * r.rs, *a = r.a + c * r.as;
            const float ref = r.dots[i * r.cols + c];
            double mag;
            const double wrapped = spec_dot(t, w, a, r.n, 1, &mag), plain = spec_dot(t, w, a, r.n, 0, &mag);
            assert_true(iq_close(ref, wrapped, mag));
            assert_true(iq_close(scalar(r.n, w, a), plain, mag));
        }
    iq_ref_free(&r);
}

static void test_ref_s(void **state)
{
    (void)state;
    check_ref("iq1_s", TENSOR_TYPE_IQ1_S, quant_dot_iq1_s_scalar, quant_dot_iq1_s_x86order);
}

static void test_ref_m(void **state)
{
    (void)state;
    check_ref("iq1_m", TENSOR_TYPE_IQ1_M, quant_dot_iq1_m_scalar, quant_dot_iq1_m_x86order);
}

/* Every tensor of these types in the iq-mini models, bit for bit with the
 * reference (the goldens of files that also hold another engineer's types
 * cannot run on this branch alone). */
static void test_ref_models(void **state)
{
    (void)state;
    iq_ref_check_models(TENSOR_TYPE_IQ1_S, TENSOR_TYPE_IQ1_M);
}

/* ---- the orders on random blocks ---- */

static void check_orders(enum tensor_type t, dot_fn scalar, dot_fn x86)
{
    enum { NMAX = 5 * QK_K, NACT = 5 };
    static uint8_t w[NMAX / QK_K * 56];
    static block_q8_K act[NACT][NMAX / QK_K];
    static float mm[NACT];
    for (int rep = 0; rep < 40; rep++) {
        const int64_t n = (int64_t)(1 + rep % 5) * QK_K;
        rnd_row(t, w, n);
        for (int c = 0; c < NACT; c++)
            rnd_act(act[c], n);
        tensor_matmul(t, n, w, 1, act, NACT, sizeof act[0], mm, 1);
        for (int c = 0; c < NACT; c++) {
            const float xo = x86(n, w, act[c]);
            assert_int_equal(iq_f2u(tensor_vec_dot(t, n, w, act[c])), iq_f2u(xo));
            assert_int_equal(iq_f2u(mm[c]), iq_f2u(xo));
            double mag;
            const double wrapped = spec_dot(t, w, act[c], n, 1, &mag),
                         plain = spec_dot(t, w, act[c], n, 0, &mag);
            assert_true(iq_close(xo, wrapped, mag));
            assert_true(iq_close(scalar(n, w, act[c]), plain, mag));
        }
    }
}

static void test_orders_s(void **state)
{
    (void)state;
    check_orders(TENSOR_TYPE_IQ1_S, quant_dot_iq1_s_scalar, quant_dot_iq1_s_x86order);
}

static void test_orders_m(void **state)
{
    (void)state;
    check_orders(TENSOR_TYPE_IQ1_M, quant_dot_iq1_m_scalar, quant_dot_iq1_m_x86order);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sizes),          cmocka_unit_test(test_gguf_sizes),
        cmocka_unit_test(test_grid_values),    cmocka_unit_test(test_dequant_s_spec),
        cmocka_unit_test(test_dequant_m_spec), cmocka_unit_test(test_ref_s),
        cmocka_unit_test(test_ref_m),          cmocka_unit_test(test_ref_models),
        cmocka_unit_test(test_orders_s),       cmocka_unit_test(test_orders_m),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
