/* TQ1_0 / TQ2_0 blocks: sizes and dot type; the base-3 fixed-point digits
 * and the element layout against encodings written out here independently
 * of the kernels; dequantization and dot products against the reference's
 * own outputs (tests/unit/data/tq*_0.dump, made by
 * tests/golden/reference/tq_dump.c from llama.cpp's CPU backend); the AVX2
 * kernels against the portable x86-order model on random bytes; and the
 * batched path against one dot per (row, column). */
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
#include "kernels/quant_batch.h"
#include "kernels/quant_internal.h"
#include "kernels/quant_tq.h"
#include "testutil.h"

static uint64_t rng_state = 0x54513130ull;
static uint32_t rnd_u32(void)
{
    return (uint32_t)(test_xorshift64(&rng_state) >> 16);
}

static void test_sizes(void **state)
{
    (void)state;
    static const struct {
        enum tensor_type t;
        const char *name;
        size_t size;
    } c[] = {{TENSOR_TYPE_TQ1_0, "TQ1_0", 54}, {TENSOR_TYPE_TQ2_0, "TQ2_0", 66}};
    for (int i = 0; i < 2; i++) {
        assert_int_equal(c[i].t, i == 0 ? 34 : 35); /* ggml's ids */
        assert_true(tensor_type_is_supported(c[i].t));
        assert_string_equal(tensor_type_name(c[i].t), c[i].name);
        assert_int_equal(tensor_type_block_size(c[i].t), 256);
        assert_int_equal(tensor_type_size(c[i].t), c[i].size);
        assert_int_equal(tensor_row_size(c[i].t, 768), 3 * c[i].size);
        assert_int_equal(tensor_row_size(c[i].t, 128), 0); /* not whole blocks */
        assert_int_equal(tensor_dot_type(c[i].t), TENSOR_TYPE_Q8_K);
    }
}

/* Every 5-trit value v = t0*81 + t1*27 + t2*9 + t3*3 + t4 stored as
 * ceil(v * 256 / 243) gives back t0..t4 as digits 0..4; a 4-trit value
 * (qh) is stored shifted up by one trit and gives back digits 0..3. */
static void test_trit_digits(void **state)
{
    (void)state;
    for (int v = 0; v < 243; v++) {
        const uint8_t b = (uint8_t)((v * 256 + 242) / 243);
        int rest = v;
        for (int n = 0; n < 5; n++) {
            const int p = (int)pow(3, 4 - n), want = rest / p;
            rest %= p;
            if (quant_tq1_trit(b, n) != want)
                fail_msg("byte %d (value %d): digit %d is %d, want %d", b, v, n, quant_tq1_trit(b, n), want);
        }
    }
    for (int v = 0; v < 81; v++) {
        const uint8_t b = (uint8_t)((v * 3 * 256 + 242) / 243);
        for (int n = 0; n < 4; n++) {
            const int want = v / (int)pow(3, 3 - n) % 3;
            assert_int_equal(quant_tq1_trit(b, n), want);
        }
    }
}

/* A block with known trits at every element, packed by the layout as
 * ggml-common.h / quantize_row_tq1_0_ref describe it, dequantizes to
 * (trit - 1) * d. */
static void test_dequantize_layout(void **state)
{
    (void)state;
    for (int rep = 0; rep < 20; rep++) {
        int t[QK_K];
        for (int e = 0; e < QK_K; e++)
            t[e] = (int)(rnd_u32() % 3);
        const float d = ldexpf((float)(rnd_u32() % 2048 + 1), -(int)(rnd_u32() % 16));
        const uint16_t dh = tensor_fp32_to_fp16(rep % 2 ? -d : d);
        const float df = tensor_fp16_to_fp32(dh);
        block_tq1_0 b1;
        block_tq2_0 b2;
        b1.d = b2.d = dh;
        for (int m = 0; m < 32; m++) { /* qs[m]: elements m, m+32, ..., m+128 */
            int v = 0;
            for (int n = 0; n < 5; n++)
                v = v * 3 + t[32 * n + m];
            b1.qs[m] = (uint8_t)((v * 256 + 242) / 243);
        }
        for (int m = 0; m < 16; m++) { /* qs[32+m]: 160+m, 176+m, ..., 224+m */
            int v = 0;
            for (int n = 0; n < 5; n++)
                v = v * 3 + t[160 + 16 * n + m];
            b1.qs[32 + m] = (uint8_t)((v * 256 + 242) / 243);
        }
        for (int j = 0; j < 4; j++) { /* qh[j]: 240+j, 244+j, 248+j, 252+j */
            int v = 0;
            for (int n = 0; n < 4; n++)
                v = v * 3 + t[240 + 4 * n + j];
            b1.qh[j] = (uint8_t)((v * 3 * 256 + 242) / 243);
        }
        for (int h = 0; h < 2; h++) /* qs[32h+m] bits 2l: element 128h + 32l + m */
            for (int m = 0; m < 32; m++)
                b2.qs[32 * h + m] = (uint8_t)(t[128 * h + m] | t[128 * h + 32 + m] << 2 |
                                              t[128 * h + 64 + m] << 4 | t[128 * h + 96 + m] << 6);
        float y1[QK_K], y2[QK_K];
        tensor_dequantize_row(TENSOR_TYPE_TQ1_0, &b1, y1, QK_K);
        tensor_dequantize_row(TENSOR_TYPE_TQ2_0, &b2, y2, QK_K);
        for (int e = 0; e < QK_K; e++) {
            const float want = (float)(t[e] - 1) * df;
            if (f2u(y1[e]) != f2u(want) || f2u(y2[e]) != f2u(want))
                fail_msg("element %d: tq1 %g tq2 %g, want %g", e, (double)y1[e], (double)y2[e], (double)want);
        }
        /* the quantizers give these blocks back from their values */
        block_tq1_0 q1;
        block_tq2_0 q2;
        float x[QK_K];
        for (int e = 0; e < QK_K; e++)
            x[e] = (float)(t[e] - 1) * d;
        x[0] = d; /* amax = d */
        t[0] = 2;
        quant_quantize_tq1_0(x, &q1, QK_K);
        quant_quantize_tq2_0(x, &q2, QK_K);
        tensor_dequantize_row(TENSOR_TYPE_TQ1_0, &q1, y1, QK_K);
        tensor_dequantize_row(TENSOR_TYPE_TQ2_0, &q2, y2, QK_K);
        const float dq = tensor_fp16_to_fp32(tensor_fp32_to_fp16(d));
        for (int e = 0; e < QK_K; e++)
            assert_true(y1[e] == (float)(t[e] - 1) * dq && y2[e] == y1[e]);
    }
}

/* The reference's dumps: dequantization and vec_dot bit for bit. */
static void check_dump(const char *path, enum tensor_type type)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        fail_msg("cannot open %s (run from the repository root)", path);
    uint32_t hdr[4];
    assert_int_equal(fread(hdr, 4, 4, f), 4);
    assert_int_equal(hdr[0], type);
    const uint32_t n = hdr[1], rows = hdr[2], rb = hdr[3];
    assert_int_equal(rb, tensor_row_size(type, n));
    const size_t ab = tensor_row_size(TENSOR_TYPE_Q8_K, n);
    uint8_t *w = malloc(rb), *a = malloc(ab);
    float *dq = malloc(n * sizeof(float)), *mine = malloc(n * sizeof(float));
    int dots = 0;
    for (uint32_t r = 0; r < rows; r++) {
        float dot;
        assert_int_equal(fread(w, 1, rb, f), rb);
        assert_int_equal(fread(a, 1, ab, f), ab);
        assert_int_equal(fread(&dot, 4, 1, f), 1);
        assert_int_equal(fread(dq, 4, n, f), n);
        tensor_dequantize_row(type, w, mine, n);
        for (uint32_t e = 0; e < n; e++)
            if (f2u(mine[e]) != f2u(dq[e]))
                fail_msg("%s row %u element %u: %.9g, reference %.9g", tensor_type_name(type), r, e,
                         (double)mine[e], (double)dq[e]);
        const float got = tensor_vec_dot(type, n, w, a);
        const float x86 =
            type == TENSOR_TYPE_TQ1_0 ? quant_dot_tq1_0_x86order(n, w, a) : quant_dot_tq2_0_x86order(n, w, a);
        if (f2u(got) != f2u(dot) || f2u(x86) != f2u(dot))
            fail_msg("%s row %u: dot %.9g (x86 order %.9g), reference %.9g", tensor_type_name(type), r,
                     (double)got, (double)x86, (double)dot);
        /* the generic order adds the same products differently: close only */
        const float sc = quant_vec_dot_scalar(type, n, w, a);
        assert_true(fabsf(sc - dot) <= 1e-5f * (1.0f + fabsf(dot)));
        dots++;
    }
    assert_int_equal(dots, 4);
    fclose(f);
    free(w);
    free(a);
    free(dq);
    free(mine);
}

static void test_reference_dump(void **state)
{
    (void)state;
    check_dump("tests/unit/data/tq1_0.dump", TENSOR_TYPE_TQ1_0);
    check_dump("tests/unit/data/tq2_0.dump", TENSOR_TYPE_TQ2_0);
}

/* Random bytes (every trit code, the invalid ones too) and activations with
 * large values: the installed kernel equals the x86-order model bit for bit,
 * and its integer part equals the generic sum (1 block, d = 1). */
static void test_kernel_orders(void **state)
{
    (void)state;
    const int64_t n = 7 * QK_K;
    float x[7 * QK_K];
    block_q8_K a[7];
    uint8_t w1[7 * sizeof(block_tq1_0)], w2[7 * sizeof(block_tq2_0)];
    for (int rep = 0; rep < 200; rep++) {
        for (int64_t i = 0; i < n; i++)
            x[i] = ((float)(rnd_u32() % 20001) - 10000.0f) / (rep % 3 ? 10000.0f : 37.0f);
        tensor_quantize_row(TENSOR_TYPE_Q8_K, x, a, n);
        for (size_t i = 0; i < sizeof w1; i++)
            w1[i] = (uint8_t)rnd_u32();
        for (size_t i = 0; i < sizeof w2; i++)
            w2[i] = (uint8_t)rnd_u32();
        for (int b = 0; b < 7; b++) { /* finite scales */
            ((block_tq1_0 *)(void *)w1)[b].d = tensor_fp32_to_fp16((float)(rnd_u32() % 1000) / 512.0f - 1.0f);
            ((block_tq2_0 *)(void *)w2)[b].d = tensor_fp32_to_fp16((float)(rnd_u32() % 1000) / 512.0f - 1.0f);
        }
        const int64_t nn = (rep % 7 + 1) * QK_K;
        float g = tensor_vec_dot(TENSOR_TYPE_TQ1_0, nn, w1, a), m = quant_dot_tq1_0_x86order(nn, w1, a);
        if (f2u(g) != f2u(m))
            fail_msg("tq1_0 rep %d: kernel %.9g, x86 order %.9g", rep, (double)g, (double)m);
        g = tensor_vec_dot(TENSOR_TYPE_TQ2_0, nn, w2, a), m = quant_dot_tq2_0_x86order(nn, w2, a);
        if (f2u(g) != f2u(m))
            fail_msg("tq2_0 rep %d: kernel %.9g, x86 order %.9g", rep, (double)g, (double)m);
    }
}

/* The batched path (tensor_matmul) gives each (row, column) the one-row
 * dot's bits, as the reference's mul_mat runs vec_dot per pair for TQ. */
static void test_batched(void **state)
{
    (void)state;
    enum { N = 512, ROWS = 9, COLS = 6 };
    const enum tensor_type types[2] = {TENSOR_TYPE_TQ1_0, TENSOR_TYPE_TQ2_0};
    for (int ti = 0; ti < 2; ti++) {
        const enum tensor_type t = types[ti];
        const size_t rb = tensor_row_size(t, N), ab = tensor_row_size(TENSOR_TYPE_Q8_K, N);
        uint8_t *w = malloc(rb * ROWS), *a = malloc(ab * COLS);
        float x[N], out[COLS * ROWS];
        for (size_t i = 0; i < rb * ROWS; i++)
            w[i] = (uint8_t)rnd_u32();
        for (int r = 0; r < ROWS; r++)
            for (int b = 0; b < N / QK_K; b++) {
                uint16_t h = tensor_fp32_to_fp16((float)(rnd_u32() % 100) / 64.0f);
                memcpy(w + r * rb + (b + 1) * tensor_type_size(t) - 2, &h, 2);
            }
        for (int c = 0; c < COLS; c++) {
            for (int i = 0; i < N; i++)
                x[i] = (float)(rnd_u32() % 2001) / 1000.0f - 1.0f;
            tensor_quantize_row(TENSOR_TYPE_Q8_K, x, a + c * ab, N);
        }
        tensor_matmul(t, N, w, ROWS, a, COLS, ab, out, ROWS);
        for (int c = 0; c < COLS; c++)
            for (int r = 0; r < ROWS; r++)
                assert_int_equal(f2u(out[c * ROWS + r]), f2u(tensor_vec_dot(t, N, w + r * rb, a + c * ab)));
        free(w);
        free(a);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sizes),
        cmocka_unit_test(test_trit_digits),
        cmocka_unit_test(test_dequantize_layout),
        cmocka_unit_test(test_reference_dump),
        cmocka_unit_test(test_kernel_orders),
        cmocka_unit_test(test_batched),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
