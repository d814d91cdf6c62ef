/* IQ4_NL and IQ4_XS blocks: sizes and dot types; dequantization against a
 * spec written here (the table from ggml-common.h, the nibble order, the
 * IQ4_XS scale bits) and against the reference's own dequantize_row; every
 * dot order (generic, x86 vec_dot, tinyBLAS, repacked gemv/gemm) against
 * the reference's outputs for the same bytes (tests/unit/data/iq4_ref.h,
 * made by tests/golden/reference/iq4/iq4_dump.c with llama.cpp 34af94cd),
 * and the AVX2 kernels and batch tiles against the portable orders. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf.h"
#include "gguf/tensor.h"
#include "kernels/quant_batch.h"
#include "kernels/quant_internal.h"
#include "kernels/quant_iq4.h"
#include "testutil.h"

#include "data/iq4_ref.h"

static uint64_t rng_state = 0x4951344e4cull;
static uint32_t rnd_u32(void)
{
    return (uint32_t)(test_xorshift64(&rng_state) >> 16);
}

/* ggml-common.h's kvalues_iq4nl, written out again. */
static const int spec_table[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};

/* Element e (0..31) of 16 nibble bytes: low nibbles first, then high. */
static int spec_value(const uint8_t *qs, int e)
{
    return spec_table[e < 16 ? qs[e] % 16 : qs[e - 16] / 16];
}

/* IQ4_XS sub-block ib's scale (0..63): 4 low bits from scales_l (two per
 * byte, even ib in the low nibble), 2 high bits from scales_h (ib's pair). */
static int spec_xs_scale(const block_iq4_xs *x, int ib)
{
    const int lo = ib % 2 ? x->scales_l[ib / 2] / 16 : x->scales_l[ib / 2] % 16;
    const int hi = (x->scales_h / (1 << (2 * ib))) % 4;
    return lo + 16 * hi;
}

static void test_sizes(void **state)
{
    (void)state;
    assert_true(tensor_type_is_supported(TENSOR_TYPE_IQ4_NL));
    assert_true(tensor_type_is_supported(TENSOR_TYPE_IQ4_XS));
    assert_string_equal(tensor_type_name(TENSOR_TYPE_IQ4_NL), "IQ4_NL");
    assert_string_equal(tensor_type_name(TENSOR_TYPE_IQ4_XS), "IQ4_XS");
    assert_int_equal(tensor_row_size(TENSOR_TYPE_IQ4_NL, 256), 8 * 18);
    assert_int_equal(tensor_row_size(TENSOR_TYPE_IQ4_XS, 512), 2 * 136);
    assert_int_equal(tensor_row_size(TENSOR_TYPE_IQ4_NL, 48), 0);
    assert_int_equal(tensor_row_size(TENSOR_TYPE_IQ4_XS, 128), 0);
    assert_int_equal(tensor_dot_type(TENSOR_TYPE_IQ4_NL), TENSOR_TYPE_Q8_0);
    assert_int_equal(tensor_dot_type(TENSOR_TYPE_IQ4_XS), TENSOR_TYPE_Q8_K);
    assert_int_equal(offsetof(block_iq4_xs, scales_l), 4);
    assert_int_equal(offsetof(block_iq4_xs, qs), 8);
}

/* Every nibble in both positions; IQ4_XS with each sub-block scale from
 * its own bits, including 0 (-32) and 63 (+31). */
static void test_dequantize_spec(void **state)
{
    (void)state;
    const float ds[] = {1.0f, -0.5f, 0.0078125f, 3.25f};
    for (size_t k = 0; k < sizeof ds / sizeof ds[0]; k++) {
        block_iq4_nl b[2];
        float y[64];
        for (int i = 0; i < 2; i++) {
            b[i].d = tensor_fp32_to_fp16(ds[k] * (float)(i + 1));
            for (int j = 0; j < 16; j++)
                b[i].qs[j] = (uint8_t)((j + i) % 16 | (15 - j) << 4);
        }
        tensor_dequantize_row(TENSOR_TYPE_IQ4_NL, b, y, 64);
        for (int i = 0; i < 2; i++)
            for (int e = 0; e < 32; e++) {
                const float want = tensor_fp16_to_fp32(b[i].d) * (float)spec_value(b[i].qs, e);
                if (f2u(y[32 * i + e]) != f2u(want))
                    fail_msg("iq4_nl d=%g block %d element %d: %.9g, want %.9g", (double)ds[k], i, e,
                             (double)y[32 * i + e], (double)want);
            }
    }
    for (int rep = 0; rep < 64; rep++) {
        block_iq4_xs b;
        b.d = tensor_fp32_to_fp16(rep % 2 ? -0.25f : 0.125f);
        /* rep 0: every scale 0; rep 1: every scale 63; then random bits */
        const uint32_t bits = rep == 0 ? 0 : rep == 1 ? 0xFFFFFFFFu : rnd_u32();
        b.scales_h = (uint16_t)(rep < 2 ? bits : rnd_u32());
        memcpy(b.scales_l, &bits, 4);
        for (int j = 0; j < QK_K / 2; j++)
            b.qs[j] = (uint8_t)rnd_u32();
        float y[QK_K];
        tensor_dequantize_row(TENSOR_TYPE_IQ4_XS, &b, y, QK_K);
        for (int ib = 0; ib < 8; ib++) {
            const int ls = spec_xs_scale(&b, ib);
            if (rep < 2)
                assert_int_equal(ls, rep ? 63 : 0);
            assert_int_equal(quant_iq4_xs_scale(&b, ib), ls);
            const float dl = tensor_fp16_to_fp32(b.d) * (float)(ls - 32);
            for (int e = 0; e < 32; e++) {
                const float want = dl * (float)spec_value(b.qs + 16 * ib, e);
                if (f2u(y[32 * ib + e]) != f2u(want))
                    fail_msg("iq4_xs rep %d sub-block %d (ls %d) element %d: %.9g, want %.9g", rep, ib, ls, e,
                             (double)y[32 * ib + e], (double)want);
            }
        }
    }
}

static void expect_bits(const char *what, int i, float got, uint32_t want)
{
    if (f2u(got) != want) {
        float w;
        memcpy(&w, &want, 4);
        fail_msg("%s [%d]: %.9g (0x%08x), reference %.9g (0x%08x)", what, i, (double)got, f2u(got), (double)w,
                 want);
    }
}

/* The reference's dequantize_row of the same bytes, bit for bit. */
static void test_reference_dequantize(void **state)
{
    (void)state;
    float y[REF_XS_DQ_ROWS * REF_XS_N > REF_NL_DQ_ROWS * REF_NL_N ? REF_XS_DQ_ROWS * REF_XS_N
                                                                  : REF_NL_DQ_ROWS * REF_NL_N];
    tensor_dequantize_row(TENSOR_TYPE_IQ4_NL, ref_nl_w, y, REF_NL_DQ_ROWS * REF_NL_N);
    for (int i = 0; i < REF_NL_DQ_ROWS * REF_NL_N; i++)
        expect_bits("iq4_nl dequantize", i, y[i], ref_nl_dequant[i]);
    tensor_dequantize_row(TENSOR_TYPE_IQ4_XS, ref_xs_w, y, REF_XS_DQ_ROWS * REF_XS_N);
    for (int i = 0; i < REF_XS_DQ_ROWS * REF_XS_N; i++)
        expect_bits("iq4_xs dequantize", i, y[i], ref_xs_dequant[i]);
}

/* A 2-D weight of `rows` rows over the given bytes, as forward_matmul sees it. */
static gguf_tensor weight(enum tensor_type t, const void *data, int64_t n, int64_t rows)
{
    gguf_tensor w;
    memset(&w, 0, sizeof w);
    w.name = "w";
    w.n_dims = 2;
    w.ne[0] = n;
    w.ne[1] = rows;
    w.ne[2] = w.ne[3] = 1;
    w.type = t;
    w.data = data;
    w.n_elements = n * rows;
    w.nbytes = tensor_row_size(t, n) * (size_t)rows;
    return w;
}

/* IQ4_NL: each of the reference's four outputs for the same weight and
 * activation bytes, by the portable order, the table's kernel and the
 * batch path forward_matmul takes. */
static void test_reference_dots_nl(void **state)
{
    (void)state;
    enum { N = REF_NL_N, R = REF_NL_ROWS, T = REF_NL_TOK };
    const size_t rs = tensor_row_size(TENSOR_TYPE_IQ4_NL, N), as = tensor_row_size(TENSOR_TYPE_Q8_0, N);
    assert_int_equal(sizeof ref_nl_w, rs * R);
    assert_int_equal(sizeof ref_nl_act, as * T);
    for (int t = 0; t < T; t++)
        for (int r = 0; r < R; r++) {
            const void *w = ref_nl_w + rs * r, *a = ref_nl_act + as * t;
            const int i = t * R + r;
            expect_bits("iq4_nl vec_dot (x86 order)", i, quant_dot_iq4_nl_x86order(N, w, a),
                        ref_nl_vec_dot[i]);
            expect_bits("iq4_nl vec_dot (table)", i, tensor_vec_dot(TENSOR_TYPE_IQ4_NL, N, w, a),
                        ref_nl_vec_dot[i]);
            expect_bits("iq4_nl tinyBLAS", i, quant_dot_iq4_nl_tinyblas(N, w, a), ref_nl_tinyblas[i]);
            expect_bits("iq4_nl repacked gemv", i, quant_dot_iq4_nl_repacked(N, w, a), ref_nl_gemv[i]);
            if (t < 4) /* gemm and gemv: the same float steps per output */
                expect_bits("iq4_nl repacked gemm", i, quant_dot_iq4_nl_repacked(N, w, a), ref_nl_gemm[i]);
        }
    /* the batch path: 8 rows are repacked (every batch, one token too);
     * 6 rows (the first six) go through tinyBLAS from 2 tokens on and
     * through vec_dot for one */
    float out[T * R];
    for (int nt = 1; nt <= T; nt++) {
        const gguf_tensor w8 = weight(TENSOR_TYPE_IQ4_NL, ref_nl_w, N, R);
        assert_true(quant_iq4_nl_batch_applies(&w8, nt));
        for (int lo = 0; lo < R; lo += 4) {
            quant_iq4_nl_batch_matmul(&w8, N, lo, lo + 4, ref_nl_act, as, nt, out, R);
        }
        for (int t = 0; t < nt; t++)
            for (int r = 0; r < R; r++)
                expect_bits("iq4_nl batch, 8 rows", t * R + r, out[t * R + r], ref_nl_gemv[t * R + r]);
        const gguf_tensor w6 = weight(TENSOR_TYPE_IQ4_NL, ref_nl_w, N, 6);
        assert_int_equal(quant_iq4_nl_batch_applies(&w6, nt), nt >= 2);
        if (nt < 2)
            continue;
        quant_iq4_nl_batch_matmul(&w6, N, 0, 6, ref_nl_act, as, nt, out, R);
        for (int t = 0; t < nt; t++)
            for (int r = 0; r < 6; r++)
                expect_bits("iq4_nl batch, 6 rows", t * R + r, out[t * R + r], ref_nl_tinyblas[t * R + r]);
    }
    /* the orders do differ on these bytes (else the checks above prove little) */
    int d_vt = 0, d_vg = 0, d_tg = 0;
    for (int i = 0; i < T * R; i++) {
        d_vt += ref_nl_vec_dot[i] != ref_nl_tinyblas[i];
        d_vg += ref_nl_vec_dot[i] != ref_nl_gemv[i];
        d_tg += ref_nl_tinyblas[i] != ref_nl_gemv[i];
    }
    assert_true(d_vt > 0 && d_vg > 0 && d_tg > 0);
}

static void test_reference_dots_xs(void **state)
{
    (void)state;
    enum { N = REF_XS_N, R = REF_XS_ROWS, T = REF_XS_TOK };
    const size_t rs = tensor_row_size(TENSOR_TYPE_IQ4_XS, N), as = tensor_row_size(TENSOR_TYPE_Q8_K, N);
    assert_int_equal(sizeof ref_xs_w, rs * R);
    assert_int_equal(sizeof ref_xs_act, as * T);
    for (int t = 0; t < T; t++)
        for (int r = 0; r < R; r++) {
            const void *w = ref_xs_w + rs * r, *a = ref_xs_act + as * t;
            const int i = t * R + r;
            expect_bits("iq4_xs vec_dot (x86 order)", i, quant_dot_iq4_xs_x86order(N, w, a),
                        ref_xs_vec_dot[i]);
            expect_bits("iq4_xs vec_dot (table)", i, tensor_vec_dot(TENSOR_TYPE_IQ4_XS, N, w, a),
                        ref_xs_vec_dot[i]);
        }
    /* the batch path (tiles of 4 tokens), and one token's matvec */
    float out[T * R];
    tensor_matmul(TENSOR_TYPE_IQ4_XS, N, ref_xs_w, R, ref_xs_act, T, as, out, R);
    for (int i = 0; i < T * R; i++)
        expect_bits("iq4_xs tensor_matmul", i, out[i], ref_xs_vec_dot[i]);
    tensor_matvec(TENSOR_TYPE_IQ4_XS, N, ref_xs_w, R, ref_xs_act + as, out);
    for (int r = 0; r < R; r++)
        expect_bits("iq4_xs tensor_matvec", r, out[r], ref_xs_vec_dot[R + r]);
}

/* ---- the generic order, from the spec ---- */

static float spec_nl_generic(int64_t n, const block_iq4_nl *x, const block_q8_0 *y)
{
    float sum = 0.0f;
    for (int64_t i = 0; i < n / 32; i++) {
        int s = 0;
        for (int e = 0; e < 32; e++)
            s += spec_value(x[i].qs, e) * y[i].qs[e];
        volatile float d = tensor_fp16_to_fp32(y[i].d) * tensor_fp16_to_fp32(x[i].d);
        volatile float p = d * (float)s;
        sum += p;
    }
    return sum;
}

static float spec_xs_generic(int64_t n, const block_iq4_xs *x, const block_q8_K *y)
{
    float sum = 0.0f;
    for (int64_t i = 0; i < n / QK_K; i++) {
        volatile float d = tensor_fp16_to_fp32(x[i].d) * y[i].d;
        for (int ib = 0; ib < 8; ib++) {
            int s = 0;
            for (int e = 0; e < 32; e++)
                s += spec_value(x[i].qs + 16 * ib, e) * y[i].qs[32 * ib + e];
            volatile float dl = d * (float)(spec_xs_scale(&x[i], ib) - 32);
            volatile float p = dl * (float)s;
            sum += p;
        }
    }
    return sum;
}

/* Random weight rows (any byte; scales of either sign around 2^-6) and
 * activations quantized from random floats. */
static void random_weights(enum tensor_type t, uint8_t *w, size_t bytes)
{
    for (size_t i = 0; i < bytes; i++)
        w[i] = (uint8_t)rnd_u32();
    const size_t bs = tensor_type_size(t);
    for (size_t o = 0; o < bytes; o += bs) {
        const uint16_t h =
            tensor_fp32_to_fp16((rnd_u32() & 1 ? -1.0f : 1.0f) * (float)(1 + rnd_u32() % 4096) / 65536.0f);
        memcpy(w + o, &h, 2);
    }
}

static void random_acts(enum tensor_type t, uint8_t *a, int64_t n, int rows)
{
    float *x = malloc((size_t)n * sizeof *x);
    for (int r = 0; r < rows; r++) {
        for (int64_t i = 0; i < n; i++)
            x[i] = ((float)(rnd_u32() % 20001) / 10000.0f - 1.0f) * (float)(1 + r % 3);
        tensor_quantize_row(t, x, a + tensor_row_size(t, n) * (size_t)r, n);
    }
    free(x);
}

/* Random rows: the generic kernels against the spec; the table's kernels
 * (AVX2 where built) against the portable x86 order; the batch path's
 * tiles against the portable repacked / tinyBLAS orders, for every token
 * count up to 9 and row ranges that do not start on a tile. */
static void test_random_orders(void **state)
{
    (void)state;
    enum { R = 16, T = 9, NBMAX = 13 };
    uint8_t *w = malloc(R * NBMAX * 136), *a = malloc(T * NBMAX * 292);
    float out[T * R];
    for (int rep = 0; rep < 40; rep++) {
        /* IQ4_NL: 1..13 blocks (odd counts take vec_dot's tail) */
        {
            const int64_t n = 32 * (1 + rep % NBMAX);
            const size_t rs = tensor_row_size(TENSOR_TYPE_IQ4_NL, n),
                         as = tensor_row_size(TENSOR_TYPE_Q8_0, n);
            random_weights(TENSOR_TYPE_IQ4_NL, w, rs * R);
            random_acts(TENSOR_TYPE_Q8_0, a, n, T);
            for (int t = 0; t < T; t++)
                for (int r = 0; r < R; r++) {
                    const void *wr = w + rs * r, *ar = a + as * t;
                    const float g = quant_dot_iq4_nl_scalar(n, wr, ar), s = spec_nl_generic(n, wr, ar);
                    if (f2u(g) != f2u(s))
                        fail_msg("iq4_nl generic n=%lld: %.9g, spec %.9g", (long long)n, (double)g,
                                 (double)s);
                    const float v = tensor_vec_dot(TENSOR_TYPE_IQ4_NL, n, wr, ar),
                                x = quant_dot_iq4_nl_x86order(n, wr, ar);
                    if (f2u(v) != f2u(x))
                        fail_msg("iq4_nl vec_dot n=%lld: %.9g, x86 order %.9g", (long long)n, (double)v,
                                 (double)x);
                }
            const int nt = 1 + rep % T;
            const int64_t rows = rep % 2 ? R : R - 2 - rep % 5; /* repacked, or not a multiple of 8 */
            const gguf_tensor wt = weight(TENSOR_TYPE_IQ4_NL, w, n, rows);
            if (quant_iq4_nl_batch_applies(&wt, nt)) {
                const int64_t cut = rows % 8 == 0 ? 4 : 1 + rep % 3;
                quant_iq4_nl_batch_matmul(&wt, n, 0, cut, a, as, nt, out, R);
                quant_iq4_nl_batch_matmul(&wt, n, cut, rows, a, as, nt, out, R);
                for (int t = 0; t < nt; t++)
                    for (int64_t r = 0; r < rows; r++) {
                        const void *wr = w + rs * (size_t)r, *ar = a + as * t;
                        const float want = rows % 8 == 0 ? quant_dot_iq4_nl_repacked(n, wr, ar)
                                                         : quant_dot_iq4_nl_tinyblas(n, wr, ar);
                        if (f2u(out[t * R + r]) != f2u(want))
                            fail_msg("iq4_nl batch rows=%lld nt=%d n=%lld [%d][%lld]: %.9g, want %.9g",
                                     (long long)rows, nt, (long long)n, t, (long long)r,
                                     (double)out[t * R + r], (double)want);
                    }
            }
        }
        /* IQ4_XS: 1..4 super-blocks */
        {
            const int64_t n = QK_K * (1 + rep % 4);
            const size_t rs = tensor_row_size(TENSOR_TYPE_IQ4_XS, n),
                         as = tensor_row_size(TENSOR_TYPE_Q8_K, n);
            random_weights(TENSOR_TYPE_IQ4_XS, w, rs * R);
            random_acts(TENSOR_TYPE_Q8_K, a, n, T);
            const int nt = 1 + rep % T;
            tensor_matmul(TENSOR_TYPE_IQ4_XS, n, w, R, a, nt, as, out, R);
            for (int t = 0; t < nt; t++)
                for (int r = 0; r < R; r++) {
                    const void *wr = w + rs * r, *ar = a + as * t;
                    const float g = quant_dot_iq4_xs_scalar(n, wr, ar), s = spec_xs_generic(n, wr, ar);
                    if (f2u(g) != f2u(s))
                        fail_msg("iq4_xs generic n=%lld: %.9g, spec %.9g", (long long)n, (double)g,
                                 (double)s);
                    const float v = tensor_vec_dot(TENSOR_TYPE_IQ4_XS, n, wr, ar),
                                x = quant_dot_iq4_xs_x86order(n, wr, ar);
                    if (f2u(v) != f2u(x) || f2u(out[t * R + r]) != f2u(x))
                        fail_msg("iq4_xs n=%lld [%d][%d]: vec_dot %.9g, tile %.9g, x86 order %.9g",
                                 (long long)n, t, r, (double)v, (double)out[t * R + r], (double)x);
                }
        }
    }
    free(w);
    free(a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sizes),
        cmocka_unit_test(test_dequantize_spec),
        cmocka_unit_test(test_reference_dequantize),
        cmocka_unit_test(test_reference_dots_nl),
        cmocka_unit_test(test_reference_dots_xs),
        cmocka_unit_test(test_random_orders),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
