/* Block kernels: known-value dequantization of hand-built blocks, fp16/bf16
 * edge cases, activation-format rounding, quantize round trips, vec_dot against
 * dequantized math, SIMD against scalar, and real tensors from a GGUF file. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf.h"
#include "kernels/forward_repack.h"
#include "kernels/quant_batch.h"
#include "kernels/quant_internal.h"
#include "kernels/quant_kfew.h"
#include "gguf/tensor.h"
#include "testutil.h"

/* The 13 weight types of tensor_type_is_supported. */
static const enum tensor_type weight_types[] = {
    TENSOR_TYPE_F32,  TENSOR_TYPE_F16,  TENSOR_TYPE_BF16, TENSOR_TYPE_Q4_0, TENSOR_TYPE_Q4_1,
    TENSOR_TYPE_Q5_0, TENSOR_TYPE_Q5_1, TENSOR_TYPE_Q8_0, TENSOR_TYPE_Q2_K, TENSOR_TYPE_Q3_K,
    TENSOR_TYPE_Q4_K, TENSOR_TYPE_Q5_K, TENSOR_TYPE_Q6_K,
};
#define N_WEIGHT_TYPES (sizeof weight_types / sizeof weight_types[0])

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static uint32_t rnd_u32(void) { return (uint32_t)(test_xorshift64(&rng_state) >> 16); }
static float rnd_uniform(void) { return (float)rnd_u32() / 4294967296.0f * 2.0f - 1.0f; }
/* Mixed magnitudes and an occasional outlier, like real activations. */
static void fill_random(float *x, int64_t n, float scale)
{
    for (int64_t i = 0; i < n; i++) {
        float v = rnd_uniform() * scale;
        if (rnd_u32() % 97 == 0)
            v *= 8.0f;
        x[i] = v;
    }
}

static float u2f(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* ---- fp16 / bf16 ---- */

static void test_fp16_edges(void **state)
{
    (void)state;
    struct {
        float f;
        uint16_t h;
    } cases[] = {
        {0.0f, 0x0000},
        {-0.0f, 0x8000},
        {1.0f, 0x3c00},
        {-2.0f, 0xc000},
        {65504.0f, 0x7bff},
        {65519.99f, 0x7bff},
        {65520.0f, 0x7c00}, /* tie between 65504 and 2^16 goes to even: inf */
        {1e9f, 0x7c00},
        {-1e9f, 0xfc00},
        {INFINITY, 0x7c00},
        {-INFINITY, 0xfc00},
        {5.9604644775390625e-8f, 0x0001},   /* 2^-24, smallest subnormal */
        {2.98023223876953125e-8f, 0x0000},  /* 2^-25: tie, rounds to even 0 */
        {4.470348358154297e-8f, 0x0001},    /* 0.75 * 2^-24 */
        {8.940696716308594e-8f, 0x0002},    /* 1.5 * 2^-24: tie, to even 2 */
        {6.103515625e-05f, 0x0400},         /* 2^-14, smallest normal */
        {6.097555160522461e-05f, 0x03ff},   /* largest subnormal */
        {1.00048828125f, 0x3c00},           /* 1 + 2^-11: tie, to even */
        {1.00146484375f, 0x3c02},           /* 1 + 3*2^-11: tie, to even */
        {1.0009765625f, 0x3c01},
        {0.1f, 0x2e66},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint16_t h = tensor_fp32_to_fp16(cases[i].f);
        if (h != cases[i].h)
            fail_msg("fp32_to_fp16(%a) = 0x%04x, want 0x%04x", (double)cases[i].f, h, cases[i].h);
        assert_int_equal(quant_fp32_to_fp16_soft(cases[i].f), cases[i].h);
    }
    uint16_t hn = tensor_fp32_to_fp16(NAN);
    assert_true((hn & 0x7c00) == 0x7c00 && (hn & 0x3ff) != 0);
    assert_true(isnan(tensor_fp16_to_fp32(hn)));
    /* signalling NaN input comes out quiet */
    uint16_t hs = quant_fp32_to_fp16_soft(u2f(0x7f800001u | (1u << 20)));
    assert_true((hs & 0x200) != 0);

    /* every half converts exactly, software and hardware agree */
    for (uint32_t h = 0; h < 65536; h++) {
        float a = tensor_fp16_to_fp32((uint16_t)h), b = quant_fp16_to_fp32_soft((uint16_t)h);
        if (isnan(a)) {
            assert_true(isnan(b));
            continue;
        }
        assert_int_equal(f2u(a), f2u(b));
        /* and converts back to itself */
        assert_int_equal(tensor_fp32_to_fp16(a), h);
        assert_int_equal(quant_fp32_to_fp16_soft(a), h);
    }
    assert_true(tensor_fp16_to_fp32(0x0001) == 5.9604644775390625e-8f);
    assert_true(tensor_fp16_to_fp32(0x8400) == -6.103515625e-05f);
    /* random floats: software rounding matches the conversion in use */
    for (int i = 0; i < 200000; i++) {
        float f = u2f(rnd_u32() ^ (rnd_u32() << 16));
        if (isnan(f))
            continue;
        assert_int_equal(quant_fp32_to_fp16_soft(f), tensor_fp32_to_fp16(f));
    }
}

static void test_bf16_edges(void **state)
{
    (void)state;
    assert_int_equal(tensor_fp32_to_bf16(1.0f), 0x3f80);
    assert_int_equal(tensor_fp32_to_bf16(-0.0f), 0x8000);
    assert_int_equal(tensor_fp32_to_bf16(0.0f), 0x0000);
    assert_int_equal(tensor_fp32_to_bf16(INFINITY), 0x7f80);
    assert_int_equal(tensor_fp32_to_bf16(-INFINITY), 0xff80);
    assert_int_equal(tensor_fp32_to_bf16(u2f(0x3f808000u)), 0x3f80); /* tie to even (down) */
    assert_int_equal(tensor_fp32_to_bf16(u2f(0x3f818000u)), 0x3f82); /* tie to even (up) */
    assert_int_equal(tensor_fp32_to_bf16(u2f(0x3f808001u)), 0x3f81);
    assert_int_equal(tensor_fp32_to_bf16(u2f(0x00010000u)), 0x0001); /* subnormal kept */
    assert_int_equal(tensor_fp32_to_bf16(u2f(0x7f7fffffu)), 0x7f80); /* FLT_MAX rounds to inf */
    uint16_t n = tensor_fp32_to_bf16(u2f(0x7f800001u));
    assert_true((n & 0x7f80) == 0x7f80 && (n & 0x7f) != 0 && (n & 0x40));
    for (uint32_t h = 0; h < 65536; h++) {
        float f = tensor_bf16_to_fp32((uint16_t)h);
        assert_int_equal(f2u(f), h << 16);
        if (!isnan(f))
            assert_int_equal(tensor_fp32_to_bf16(f), h);
    }
}

/* ---- hand-built blocks ---- */

static void test_dequant_q4_0_known(void **state)
{
    (void)state;
    block_q4_0 b[2];
    b[0].d = tensor_fp32_to_fp16(0.5f);
    b[1].d = tensor_fp32_to_fp16(-2.0f);
    for (int j = 0; j < 16; j++) {
        b[0].qs[j] = (uint8_t)(j | ((15 - j) << 4));
        b[1].qs[j] = (uint8_t)(8 | (9 << 4));
    }
    float y[64];
    tensor_dequantize_row(TENSOR_TYPE_Q4_0, b, y, 64);
    for (int j = 0; j < 16; j++) {
        assert_true(y[j] == (float)(j - 8) * 0.5f);
        assert_true(y[j + 16] == (float)(7 - j) * 0.5f);
        assert_true(y[32 + j] == 0.0f);
        assert_true(y[48 + j] == -2.0f);
    }
    assert_true(y[0] == -4.0f && y[15] == 3.5f && y[16] == 3.5f && y[31] == -4.0f);
}

static void test_dequant_legacy_known(void **state)
{
    (void)state;
    float y[32];
    /* Q4_1: d=0.25, m=-1: value = q*0.25 - 1 */
    block_q4_1 a;
    a.d = tensor_fp32_to_fp16(0.25f);
    a.m = tensor_fp32_to_fp16(-1.0f);
    for (int j = 0; j < 16; j++)
        a.qs[j] = (uint8_t)(j | (3 << 4));
    tensor_dequantize_row(TENSOR_TYPE_Q4_1, &a, y, 32);
    for (int j = 0; j < 16; j++) {
        assert_true(y[j] == (float)j * 0.25f - 1.0f);
        assert_true(y[16 + j] == -0.25f);
    }
    /* Q5_0: qh bit j is the 5th bit of element j; value = (q - 16) * d */
    block_q5_0 b;
    b.d = tensor_fp32_to_fp16(1.0f);
    uint32_t qh = 0x80000001u; /* element 0 and element 31 get the high bit */
    memcpy(b.qh, &qh, 4);
    for (int j = 0; j < 16; j++)
        b.qs[j] = 0xFF;
    tensor_dequantize_row(TENSOR_TYPE_Q5_0, &b, y, 32);
    assert_true(y[0] == 15.0f);  /* 31 - 16 */
    assert_true(y[1] == -1.0f);  /* 15 - 16 */
    assert_true(y[16] == -1.0f);
    assert_true(y[31] == 15.0f);
    /* Q5_1: value = q * d + m */
    block_q5_1 c;
    c.d = tensor_fp32_to_fp16(2.0f);
    c.m = tensor_fp32_to_fp16(0.5f);
    qh = 1u << 17; /* element 17 */
    memcpy(c.qh, &qh, 4);
    memset(c.qs, 0x21, 16); /* low 1, high 2 */
    tensor_dequantize_row(TENSOR_TYPE_Q5_1, &c, y, 32);
    assert_true(y[0] == 2.5f);
    assert_true(y[16] == 4.5f);
    assert_true(y[17] == 36.5f); /* (2 + 16) * 2 + 0.5 */
    /* Q8_0 */
    block_q8_0 q;
    q.d = tensor_fp32_to_fp16(0.125f);
    for (int j = 0; j < 32; j++)
        q.qs[j] = (int8_t)(j * 8 - 128);
    tensor_dequantize_row(TENSOR_TYPE_Q8_0, &q, y, 32);
    for (int j = 0; j < 32; j++)
        assert_true(y[j] == (float)(j * 8 - 128) * 0.125f);
}

/* Packs q4_K/q5_K 6-bit scales and mins as ggml's get_scale_min_k4 reads
 * them: bytes 0-3 scales 0-3 (+ high bits of scales 4-7 in bits 6-7), bytes
 * 4-7 mins 0-3 (+ high bits of mins 4-7), bytes 8-11 low nibbles of 4-7. */
static void pack_k4_scales(const int sc[8], const int m[8], uint8_t out[12])
{
    for (int j = 0; j < 4; j++) {
        out[j] = (uint8_t)(sc[j] | ((sc[j + 4] >> 4) << 6));
        out[j + 4] = (uint8_t)(m[j] | ((m[j + 4] >> 4) << 6));
        out[j + 8] = (uint8_t)((sc[j + 4] & 0xF) | ((m[j + 4] & 0xF) << 4));
    }
}

static void test_dequant_q4_K_known(void **state)
{
    (void)state;
    block_q4_K b;
    int sc[8] = {1, 7, 20, 63, 33, 17, 48, 5};
    int m[8] = {0, 3, 62, 9, 40, 1, 16, 63};
    pack_k4_scales(sc, m, b.scales);
    b.d = tensor_fp32_to_fp16(0.5f);
    b.dmin = tensor_fp32_to_fp16(0.25f);
    for (int i = 0; i < 128; i++)
        b.qs[i] = (uint8_t)((i % 16) | (((i * 3) % 16) << 4));
    float y[QK_K];
    tensor_dequantize_row(TENSOR_TYPE_Q4_K, &b, y, QK_K);
    /* element 64c + l: low nibble of qs[32c + l], sub-block 2c;
     * element 64c + 32 + l: high nibble, sub-block 2c + 1 */
    for (int c = 0; c < 4; c++)
        for (int l = 0; l < 32; l++) {
            int i = 32 * c + l;
            float lo = 0.5f * (float)sc[2 * c] * (float)(i % 16) - 0.25f * (float)m[2 * c];
            float hi = 0.5f * (float)sc[2 * c + 1] * (float)((i * 3) % 16) - 0.25f * (float)m[2 * c + 1];
            assert_true(y[64 * c + l] == lo);
            assert_true(y[64 * c + 32 + l] == hi);
        }
    /* spot values worked by hand: element 200 = chunk 3, l 8, low nibble of
     * qs[104] = 8, sub-block 6: 0.5*48*8 - 0.25*16 = 188 */
    assert_true(y[200] == 188.0f);
    /* element 255: high nibble of qs[127] = (381 % 16) = 13, sub-block 7:
     * 0.5*5*13 - 0.25*63 = 16.75 */
    assert_true(y[255] == 16.75f);

    /* Q5_K: same scales; qh bit 2c / 2c+1 of qh[l] adds 16 */
    block_q5_K c5;
    memcpy(c5.scales, b.scales, 12);
    c5.d = b.d;
    c5.dmin = b.dmin;
    memcpy(c5.qs, b.qs, 128);
    for (int l = 0; l < 32; l++)
        c5.qh[l] = (uint8_t)(l == 5 ? 0x80 : l == 6 ? 0x01 : 0);
    tensor_dequantize_row(TENSOR_TYPE_Q5_K, &c5, y, QK_K);
    /* element 6: low nibble of qs[6] = 6, +16, sub-block 0: 0.5*1*22 - 0 = 11 */
    assert_true(y[6] == 11.0f);
    /* element 229 = 192 + 32 + 5: high nibble of qs[101] = 303 % 16 = 15, bit 7 -> +16,
     * sub-block 7: 0.5*5*31 - 0.25*63 = 61.75 */
    assert_true(y[229] == 61.75f);
    /* element 5 has no high bit: 0.5*1*5 = 2.5 */
    assert_true(y[5] == 2.5f);
}

static void test_dequant_q6_K_known(void **state)
{
    (void)state;
    block_q6_K b;
    memset(&b, 0, sizeof b);
    b.d = tensor_fp32_to_fp16(0.25f);
    for (int g = 0; g < 16; g++)
        b.scales[g] = (int8_t)(g * 9 - 70);
    /* element e gets quant (e * 7) % 64; layout: half h = e / 128, r = e % 128,
     * l = r % 32, quarter k = r / 32: low nibble in ql[64h + l + 32*(k&1)]
     * (bits 0-3 for k < 2, bits 4-7 for k >= 2), high two bits in
     * qh[32h + l] at bits 2k. */
    for (int e = 0; e < QK_K; e++) {
        int q = (e * 7) % 64;
        int h = e / 128, r = e % 128, l = r % 32, k = r / 32;
        int qi = 64 * h + l + 32 * (k & 1);
        b.ql[qi] |= (uint8_t)((q & 0xF) << (k >= 2 ? 4 : 0));
        b.qh[32 * h + l] |= (uint8_t)((q >> 4) << (2 * k));
    }
    float y[QK_K];
    tensor_dequantize_row(TENSOR_TYPE_Q6_K, &b, y, QK_K);
    for (int e = 0; e < QK_K; e++) {
        float want = 0.25f * (float)(e / 16 * 9 - 70) * (float)((e * 7) % 64 - 32);
        if (y[e] != want)
            fail_msg("q6_K element %d: %g want %g", e, (double)y[e], (double)want);
    }
    /* by hand: element 0: q 0 -> -32, scale -70: 0.25 * -70 * -32 = 560 */
    assert_true(y[0] == 560.0f);
}

static void test_dequant_q2_q3_K_known(void **state)
{
    (void)state;
    /* Q2_K: element e = 128h + 32j + l: bits 2j of qs[32h + l]; group e/16
     * uses scales[g] (low nibble scale, high nibble min). */
    block_q2_K b;
    memset(&b, 0, sizeof b);
    b.d = tensor_fp32_to_fp16(0.5f);
    b.dmin = tensor_fp32_to_fp16(0.125f);
    for (int g = 0; g < 16; g++)
        b.scales[g] = (uint8_t)((g & 0xF) | ((15 - g) << 4));
    for (int e = 0; e < QK_K; e++) {
        int h = e / 128, j = (e % 128) / 32, l = e % 32;
        b.qs[32 * h + l] |= (uint8_t)(((e / 3) & 3) << (2 * j));
    }
    float y[QK_K];
    tensor_dequantize_row(TENSOR_TYPE_Q2_K, &b, y, QK_K);
    for (int e = 0; e < QK_K; e++) {
        int g = e / 16;
        float want = 0.5f * (float)g * (float)((e / 3) & 3) - 0.125f * (float)(15 - g);
        assert_true(y[e] == want);
    }
    /* Q3_K: scales are 6-bit, offset 32: low nibbles in bytes 0-7 (groups 0-7
     * low half-byte, 8-15 high), top two bits of group g in byte 8 + g%4 at
     * bits 2*(g/4). hmask bit (4h + j) of hmask[l] set means no -4. */
    block_q3_K c;
    memset(&c, 0, sizeof c);
    c.d = tensor_fp32_to_fp16(0.5f);
    int sc[16];
    for (int g = 0; g < 16; g++) {
        sc[g] = (g * 13) % 64 - 32; /* -32 .. 31 */
        int u = sc[g] + 32;
        if (g < 8)
            c.scales[g] |= (uint8_t)(u & 0xF);
        else
            c.scales[g - 8] |= (uint8_t)((u & 0xF) << 4);
        c.scales[8 + g % 4] |= (uint8_t)((u >> 4) << (2 * (g / 4)));
    }
    for (int e = 0; e < QK_K; e++) {
        int h = e / 128, j = (e % 128) / 32, l = e % 32;
        int q = (e * 5) % 8 - 4; /* -4 .. 3 */
        int u = q + 4;
        c.qs[32 * h + l] |= (uint8_t)((u & 3) << (2 * j));
        if (u & 4)
            c.hmask[l] |= (uint8_t)(1 << (4 * h + j));
    }
    tensor_dequantize_row(TENSOR_TYPE_Q3_K, &c, y, QK_K);
    for (int e = 0; e < QK_K; e++) {
        float want = 0.5f * (float)sc[e / 16] * (float)((e * 5) % 8 - 4);
        if (y[e] != want)
            fail_msg("q3_K element %d: %g want %g", e, (double)y[e], (double)want);
    }
    /* by hand: group 5 scale (65 % 64) - 32 = -31; element 81 = group 5, q = 405 % 8 - 4 = 1 */
    assert_true(y[81] == 0.5f * -31.0f * 1.0f);
}

/* ---- activation formats ---- */

static void test_quantize_q8_0_rounding(void **state)
{
    (void)state;
    float x[32] = {0};
    x[0] = 127.0f;  /* amax: d = 1 */
    x[1] = 0.5f;    /* tie -> 0 */
    x[2] = 1.5f;    /* tie -> 2 */
    x[3] = 2.5f;    /* tie -> 2 */
    x[4] = -63.5f;  /* tie -> -64 */
    x[5] = -126.6f; /* -127 */
    x[6] = 3.49f;
    block_q8_0 b, s;
    tensor_quantize_row(TENSOR_TYPE_Q8_0, x, &b, 32);
    quant_quantize_row_scalar(TENSOR_TYPE_Q8_0, x, &s, 32);
    assert_memory_equal(&b, &s, sizeof b);
    assert_int_equal(b.d, 0x3c00);
    int8_t want[7] = {127, 0, 2, 2, -64, -127, 3};
    for (int j = 0; j < 7; j++)
        assert_int_equal(b.qs[j], want[j]);
    for (int j = 7; j < 32; j++)
        assert_int_equal(b.qs[j], 0);

    /* all zero block: d = 0, quants 0 */
    memset(x, 0, sizeof x);
    tensor_quantize_row(TENSOR_TYPE_Q8_0, x, &b, 32);
    assert_int_equal(b.d, 0);
    for (int j = 0; j < 32; j++)
        assert_int_equal(b.qs[j], 0);

    /* Q8_1: s = d * sum(q) */
    for (int j = 0; j < 32; j++)
        x[j] = (float)(j - 10) * 0.1f;
    block_q8_1 c;
    tensor_quantize_row(TENSOR_TYPE_Q8_1, x, &c, 32);
    int sum = 0;
    for (int j = 0; j < 32; j++)
        sum += c.qs[j];
    float d = 2.1f / 127.f;
    assert_int_equal(c.d, tensor_fp32_to_fp16(d));
    assert_int_equal(c.s, tensor_fp32_to_fp16(d * (float)sum));
    assert_int_equal(c.qs[31], 127);
    assert_int_equal(c.qs[10], 0);
}

static void test_quantize_q8_K(void **state)
{
    (void)state;
    float x[QK_K];
    for (int j = 0; j < QK_K; j++)
        x[j] = (float)(j % 17) * 0.1f - 0.5f;
    x[77] = -2.0f; /* the first value of largest magnitude: it maps to -127 */
    x[78] = 2.0f;  /* same magnitude, later: +127 */
    block_q8_K b, s;
    tensor_quantize_row(TENSOR_TYPE_Q8_K, x, &b, QK_K);
    quant_quantize_row_scalar(TENSOR_TYPE_Q8_K, x, &s, QK_K);
    assert_memory_equal(&b, &s, sizeof b);
    assert_true(b.d == 1.0f / (-127.f / -2.0f));
    assert_int_equal(b.qs[77], -127);
    assert_int_equal(b.qs[78], 127);
    for (int g = 0; g < 16; g++) {
        int sum = 0;
        for (int l = 0; l < 16; l++)
            sum += b.qs[16 * g + l];
        assert_int_equal(b.bsums[g], sum);
    }
    float y[QK_K];
    tensor_dequantize_row(TENSOR_TYPE_Q8_K, &b, y, QK_K);
    for (int j = 0; j < QK_K; j++)
        assert_true(fabsf(y[j] - x[j]) <= 2.0f / 127.f * 0.5f + 1e-6f);
    /* zero block */
    memset(x, 0, sizeof x);
    tensor_quantize_row(TENSOR_TYPE_Q8_K, x, &b, QK_K);
    assert_true(b.d == 0.0f);
    assert_int_equal(b.bsums[3], 0);
}

/* ---- round trips ---- */

static void test_roundtrip_error(void **state)
{
    (void)state;
    /* Bounds on rmse / rms(x) for uniform data with 1% outliers (x8), about
     * 1.3x what these quantizers give on this deterministic data; a broken
     * bit layout or scale gives errors near or above 1. */
    struct {
        enum tensor_type t;
        double max_rel_rmse;
    } bounds[] = {
        {TENSOR_TYPE_F32, 0.0},     {TENSOR_TYPE_F16, 0.0003},  {TENSOR_TYPE_BF16, 0.002},
        {TENSOR_TYPE_Q8_0, 0.011},  {TENSOR_TYPE_Q4_0, 0.17},   {TENSOR_TYPE_Q4_1, 0.12},
        {TENSOR_TYPE_Q5_0, 0.08},   {TENSOR_TYPE_Q5_1, 0.06},   {TENSOR_TYPE_Q2_K, 0.45},
        {TENSOR_TYPE_Q3_K, 0.28},   {TENSOR_TYPE_Q4_K, 0.12},   {TENSOR_TYPE_Q5_K, 0.06},
        {TENSOR_TYPE_Q6_K, 0.033},  {TENSOR_TYPE_Q8_K, 0.025},  {TENSOR_TYPE_Q8_1, 0.011},
    };
    enum { N = 4096 };
    float *x = malloc(N * sizeof(float)), *y = malloc(N * sizeof(float));
    void *q = malloc(N * 4);
    for (size_t b = 0; b < sizeof bounds / sizeof bounds[0]; b++) {
        enum tensor_type t = bounds[b].t;
        fill_random(x, N, 1.0f);
        memset(q, 0xA5, N * 4);
        tensor_quantize_row(t, x, q, N);
        tensor_dequantize_row(t, q, y, N);
        double se = 0, sx = 0;
        for (int i = 0; i < N; i++) {
            assert_true(isfinite(y[i]));
            se += (double)(y[i] - x[i]) * (y[i] - x[i]);
            sx += (double)x[i] * x[i];
        }
        double rel = sqrt(se / sx);
        if (getenv("QUANT_TEST_VERBOSE"))
            print_message("%s rel rmse %.5f\n", tensor_type_name(t), rel);
        if (rel > bounds[b].max_rel_rmse)
            fail_msg("%s round trip rel rmse %.5f > %.5f", tensor_type_name(t), rel, bounds[b].max_rel_rmse);
        /* a quantizer that lost the signal entirely must fail even where the bound is loose */
        assert_true(rel < 0.6);

        /* zero rows quantize to exact zeros */
        memset(x, 0, N * sizeof(float));
        tensor_quantize_row(t, x, q, N);
        tensor_dequantize_row(t, q, y, N);
        for (int i = 0; i < N; i++)
            if (y[i] != 0.0f)
                fail_msg("%s: zero row dequantizes to %g at %d", tensor_type_name(t), (double)y[i], i);
    }
    free(x);
    free(y);
    free(q);
}

/* ---- vec_dot against dequantized math ---- */

/* Checks tensor_vec_dot (and the scalar kernel) against the dot of the
 * dequantized weight row and the dequantized quantized activation, in double.
 * The tolerance covers float summation order; for Q8_1 activations also the
 * fp16 rounding of the stored block sums s (the kernels use s for the mins). */
static void check_vec_dot(enum tensor_type t, int64_t n, int reps)
{
    enum tensor_type at = tensor_dot_type(t);
    float *w = malloc((size_t)n * 4), *a = malloc((size_t)n * 4);
    float *wd = malloc((size_t)n * 4), *ad = malloc((size_t)n * 4);
    void *wq = malloc(tensor_row_size(t, n)), *aq = malloc(tensor_row_size(at, n));
    for (int r = 0; r < reps; r++) {
        fill_random(w, n, 0.05f + (float)(r % 5));
        fill_random(a, n, 0.01f + (float)(r % 3) * 3.0f);
        if (r % 7 == 3) /* all-positive activations stress the min corrections */
            for (int64_t i = 0; i < n; i++)
                a[i] = fabsf(a[i]);
        tensor_quantize_row(t, w, wq, n);
        tensor_quantize_row(at, a, aq, n);
        tensor_dequantize_row(t, wq, wd, n);
        tensor_dequantize_row(at, aq, ad, n);
        double ref = 0, mag = 0, extra = 0;
        for (int64_t i = 0; i < n; i++) {
            ref += (double)wd[i] * ad[i];
            mag += fabs((double)wd[i] * ad[i]);
        }
        if (at == TENSOR_TYPE_Q8_1) {
            const block_q8_1 *ab = aq;
            for (int64_t b = 0; b < n / 32; b++) {
                float m = t == TENSOR_TYPE_Q4_1 ? tensor_fp16_to_fp32(((const block_q4_1 *)wq)[b].m)
                                                : tensor_fp16_to_fp32(((const block_q5_1 *)wq)[b].m);
                float s = tensor_fp16_to_fp32(ab[b].s);
                extra += fabs((double)m * s) * (1.0 / 1024);
            }
        }
        double tol = 2e-6 * mag + extra + 1e-9;
        float got = tensor_vec_dot(t, n, wq, aq);
        float got_s = quant_vec_dot_scalar(t, n, wq, aq);
        if (fabs(got - ref) > tol || fabs(got_s - ref) > tol)
            fail_msg("%s n=%lld rep %d: vec_dot %.9g scalar %.9g want %.9g (tol %.3g)", tensor_type_name(t),
                     (long long)n, r, (double)got, (double)got_s, ref, tol);
    }
    free(w);
    free(a);
    free(wd);
    free(ad);
    free(wq);
    free(aq);
}

static void test_vec_dot_matches_dequantized(void **state)
{
    (void)state;
    for (size_t k = 0; k < N_WEIGHT_TYPES; k++) {
        enum tensor_type t = weight_types[k];
        int64_t bs = tensor_type_block_size(t);
        int64_t ns[] = {256, 512, 1024, 2816};
        for (size_t i = 0; i < 4; i++)
            check_vec_dot(t, ns[i], 12);
        if (bs == 32)
            for (int64_t n = 32; n <= 224; n += 32)
                check_vec_dot(t, n, 4);
        if (bs == 1) {
            int64_t odd[] = {1, 7, 15, 33, 172, 255};
            for (size_t i = 0; i < 6; i++)
                check_vec_dot(t, odd[i], 4);
        }
    }
}

/* ---- SIMD against scalar ---- */

static void test_simd_matches_scalar(void **state)
{
    (void)state;
    enum { N = 4096 };
    float *a = malloc(N * 4), *w = malloc(N * 4);
    void *s1 = malloc(N * 4), *s2 = malloc(N * 4), *wq = malloc(N * 4);
    /* activation quantizers are bit-identical */
    enum tensor_type acts[] = {TENSOR_TYPE_Q8_0, TENSOR_TYPE_Q8_1, TENSOR_TYPE_Q8_K, TENSOR_TYPE_F16,
                               TENSOR_TYPE_BF16};
    for (int r = 0; r < 20; r++) {
        fill_random(a, N, r % 2 ? 1e-3f : 30.0f);
        if (r == 5)
            for (int i = 0; i < N; i++) /* ties of the rounding */
                a[i] = (float)((int)(rnd_u32() % 255) - 127) * 0.5f;
        if (r == 7) { /* F16/BF16 specials: random bit patterns incl. inf, NaN, subnormals */
            for (int i = 0; i < N; i++)
                a[i] = u2f(rnd_u32() ^ (rnd_u32() << 16));
            for (size_t k = 3; k < 5; k++) {
                size_t rs = tensor_row_size(acts[k], N);
                tensor_quantize_row(acts[k], a, s1, N);
                quant_quantize_row_scalar(acts[k], a, s2, N);
                if (memcmp(s1, s2, rs) != 0)
                    fail_msg("%s: SIMD conversion of special values differs from scalar", tensor_type_name(acts[k]));
            }
            continue;
        }
        for (size_t k = 0; k < sizeof acts / sizeof acts[0]; k++) {
            size_t rs = tensor_row_size(acts[k], N);
            memset(s1, 0x11, rs);
            memset(s2, 0x22, rs);
            tensor_quantize_row(acts[k], a, s1, N);
            quant_quantize_row_scalar(acts[k], a, s2, N);
            if (memcmp(s1, s2, rs) != 0)
                fail_msg("%s: SIMD quantizer differs from scalar (rep %d)", tensor_type_name(acts[k]), r);
        }
    }
    /* dots: same integers, float sums in another order */
    for (size_t k = 0; k < N_WEIGHT_TYPES; k++) {
        enum tensor_type t = weight_types[k];
        enum tensor_type at = tensor_dot_type(t);
        int64_t bs = tensor_type_block_size(t);
        for (int r = 0; r < 10; r++) {
            int64_t n = bs == 1 ? 1 + (rnd_u32() % N) : bs * (1 + (int64_t)(rnd_u32() % (N / bs)));
            fill_random(w, n, 2.0f);
            fill_random(a, n, 1.0f);
            tensor_quantize_row(t, w, wq, n);
            tensor_quantize_row(at, a, s1, n);
            float x = tensor_vec_dot(t, n, wq, s1), y = quant_vec_dot_scalar(t, n, wq, s1);
            double mag = 0;
            tensor_dequantize_row(t, wq, w, n);
            tensor_dequantize_row(at, s1, a, n);
            for (int64_t i = 0; i < n; i++)
                mag += fabs((double)w[i] * a[i]);
            if (fabs((double)x - y) > 2e-6 * mag + 1e-9)
                fail_msg("%s n=%lld: simd %.9g scalar %.9g", tensor_type_name(t), (long long)n, (double)x,
                         (double)y);
        }
    }
    free(a);
    free(w);
    free(s1);
    free(s2);
    free(wq);
}

/* The table's dequantizers (SIMD where the build has them) give the scalar
 * loops' bits: each value is one int x scale product. Random bytes, so
 * every quant (Q8_0's -128 too) and scales of any magnitude, NaN and inf. */
static void test_dequant_simd_matches_scalar(void **state)
{
    (void)state;
    enum { NB = 96 };
    static const struct {
        enum tensor_type t;
        void (*scalar)(const void *, float *, int64_t);
    } cases[] = {{TENSOR_TYPE_Q8_0, quant_dequantize_q8_0}, {TENSOR_TYPE_Q4_0, quant_dequantize_q4_0},
                 {TENSOR_TYPE_F16, quant_dequantize_f16}, {TENSOR_TYPE_BF16, quant_dequantize_bf16}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const int64_t n = tensor_type_block_size(cases[c].t) == 1 ? 32 * NB + 5 : 32 * NB;
        const size_t rs = tensor_row_size(cases[c].t, n);
        uint8_t *src = malloc(rs);
        float *a = malloc(sizeof(float) * (size_t)n), *b = malloc(sizeof(float) * (size_t)n);
        for (int r = 0; r < 8; r++) {
            for (size_t i = 0; i < rs; i++)
                src[i] = (uint8_t)rnd_u32();
            tensor_dequantize_row(cases[c].t, src, a, n);
            cases[c].scalar(src, b, n);
            for (int64_t i = 0; i < n; i++)
                if (f2u(a[i]) != f2u(b[i]))
                    fail_msg("%s dequantize [%lld]: %.9g, scalar %.9g", tensor_type_name(cases[c].t),
                             (long long)i, (double)a[i], (double)b[i]);
        }
        free(src);
        free(a);
        free(b);
    }
}

/* tensor_matvec and tensor_matmul give what tensor_vec_dot gives per row. */
static void test_matvec_matmul(void **state)
{
    (void)state;
    enum { ROWS = 13, NACT = 9 };
    for (size_t k = 0; k < N_WEIGHT_TYPES; k++) {
        enum tensor_type t = weight_types[k];
        enum tensor_type at = tensor_dot_type(t);
        int64_t n = tensor_type_block_size(t) == 1 ? 300 : 512;
        size_t rs = tensor_row_size(t, n), ars = tensor_row_size(at, n);
        float *x = malloc((size_t)n * 4);
        char *w = malloc(rs * ROWS), *act = malloc(ars * NACT);
        for (int r = 0; r < ROWS; r++) {
            fill_random(x, n, 1.0f);
            tensor_quantize_row(t, x, w + rs * r, n);
        }
        for (int c = 0; c < NACT; c++) {
            fill_random(x, n, 1.0f);
            tensor_quantize_row(at, x, act + ars * c, n);
        }
        float out[ROWS], mm[NACT * ROWS];
        for (int c = 0; c < NACT; c++) {
            tensor_matvec(t, n, w, ROWS, act + ars * c, out);
            for (int r = 0; r < ROWS; r++) {
                float want = tensor_vec_dot(t, n, w + rs * r, act + ars * c);
                if (f2u(out[r]) != f2u(want))
                    fail_msg("%s matvec row %d: %.9g want %.9g", tensor_type_name(t), r, (double)out[r], (double)want);
            }
        }
        memset(mm, 0, sizeof mm);
        tensor_matmul(t, n, w, ROWS, act, NACT, ars, mm, ROWS);
        for (int c = 0; c < NACT; c++)
            for (int r = 0; r < ROWS; r++) {
                float want = tensor_vec_dot(t, n, w + rs * r, act + ars * c);
                if (f2u(mm[c * ROWS + r]) != f2u(want))
                    fail_msg("%s matmul (%d,%d): %.9g want %.9g", tensor_type_name(t), c, r, (double)mm[c * ROWS + r],
                             (double)want);
            }
        free(x);
        free(w);
        free(act);
    }
}

/* AVX-512 builds run Q6_K rows in pairs (one per register half): in
 * matmul tiles and in matvec, every row must come out as it does alone. */
static void test_q6_K_pairs(void **state)
{
    (void)state;
    enum { N = 512, ROWS = 7, NTOK = 9 };
    const size_t rs = tensor_row_size(TENSOR_TYPE_Q6_K, N), as = tensor_row_size(TENSOR_TYPE_Q8_K, N);
    uint8_t *w = malloc(rs * ROWS), *act = malloc(as * NTOK);
    float *x = malloc(sizeof(float) * N);
    for (size_t i = 0; i < rs * ROWS; i++) /* every quant and scale value */
        w[i] = (uint8_t)rnd_u32();
    for (int b = 0; b < ROWS * N / QK_K; b++) {
        const uint16_t d = tensor_fp32_to_fp16(0.001f + 0.05f * (rnd_uniform() + 1.0f));
        memcpy(w + (size_t)b * sizeof(block_q6_K) + offsetof(block_q6_K, d), &d, 2);
    }
    for (int t = 0; t < NTOK; t++) {
        fill_random(x, N, 1.0f + (float)t);
        tensor_quantize_row(TENSOR_TYPE_Q8_K, x, act + as * t, N);
    }
    for (int n_tok = 1; n_tok <= NTOK; n_tok++) {
        float pairs[NTOK * ROWS], alone[NTOK * ROWS];
        if (n_tok == 1)
            tensor_matvec(TENSOR_TYPE_Q6_K, N, w, ROWS, act, pairs);
        else
            tensor_matmul(TENSOR_TYPE_Q6_K, N, w, ROWS, act, n_tok, as, pairs, ROWS);
        for (int r = 0; r < ROWS; r++)
            tensor_matmul(TENSOR_TYPE_Q6_K, N, w + rs * r, 1, act, n_tok, as, alone + r, ROWS);
        assert_memory_equal(pairs, alone, sizeof(float) * (size_t)(n_tok * ROWS));
    }
    free(w);
    free(act);
    free(x);
}

#ifdef QUANT_HAVE_KFEW
/* The one-token Q6_K and Q5_K matvecs' two ways of streaming their rows
 * (row pairs side by side, or one row after the other: quant_kfew_stream)
 * give every row vec_dot's bits, at 1-16 blocks a row and at 160 (past
 * the 128 the sequential way once kept on its stack), with an odd last
 * row. */
static void test_kfew_stream_ways(void **state)
{
    (void)state;
    enum { ROWS = 9 };
    const enum tensor_type types[] = {TENSOR_TYPE_Q6_K, TENSOR_TYPE_Q5_K};
    const int64_t ns[] = {256, 2048, 4096, 160 * 256};
    for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++)
        for (size_t k = 0; k < sizeof ns / sizeof ns[0]; k++) {
            const enum tensor_type type = types[ti];
            const int64_t n = ns[k];
            const size_t rs = tensor_row_size(type, n), as = tensor_row_size(TENSOR_TYPE_Q8_K, n);
            uint8_t *w = malloc(rs * ROWS), *act = malloc(as);
            float *x = malloc(sizeof(float) * (size_t)n);
            for (int r = 0; r < ROWS; r++) {
                fill_random(x, n, 1.0f + (float)r);
                tensor_quantize_row(type, x, w + rs * r, n);
            }
            fill_random(x, n, 1.0f);
            tensor_quantize_row(TENSOR_TYPE_Q8_K, x, act, n);
            const int ways[] = {QUANT_KFEW_STREAM_PAIRS, QUANT_KFEW_STREAM_SEQ, QUANT_KFEW_STREAM_AUTO};
            for (size_t wy = 0; wy < sizeof ways / sizeof ways[0]; wy++) {
                quant_kfew_stream = ways[wy];
                for (int rows = 1; rows <= ROWS; rows += 2) {
                    float out[ROWS];
                    tensor_matvec(type, n, w, rows, act, out);
                    for (int r = 0; r < rows; r++) {
                        const float want = tensor_vec_dot(type, n, w + rs * r, act);
                        if (f2u(out[r]) != f2u(want))
                            fail_msg("%s n %lld way %d, %d rows: row %d %.9g want %.9g", tensor_type_name(type),
                                     (long long)n, ways[wy], rows, r, (double)out[r], (double)want);
                    }
                }
            }
            quant_kfew_stream = QUANT_KFEW_STREAM_AUTO;
            free(w);
            free(act);
            free(x);
        }
}

/* AUTO on a matvec large enough for the choice (QUANT_KFEW_STREAM_MIN):
 * its probe runs both ways at random, call after call; every call has
 * vec_dot's bits. */
static void test_kfew_stream_auto(void **state)
{
    (void)state;
    const enum tensor_type types[] = {TENSOR_TYPE_Q6_K, TENSOR_TYPE_Q5_K};
    const int64_t n = 2048;
    for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
        const size_t rs = tensor_row_size(types[ti], n), as = tensor_row_size(TENSOR_TYPE_Q8_K, n);
        const int rows = (int)(QUANT_KFEW_STREAM_MIN / rs) + 3; /* odd or even, past the bound */
        uint8_t *w = malloc(rs * (size_t)rows), *act = malloc(as);
        float *x = malloc(sizeof(float) * (size_t)n), *out = malloc(sizeof(float) * (size_t)rows),
              *want = malloc(sizeof(float) * (size_t)rows);
        for (int r = 0; r < rows; r++) {
            fill_random(x, n, 1.0f);
            tensor_quantize_row(types[ti], x, w + rs * r, n);
        }
        fill_random(x, n, 1.0f);
        tensor_quantize_row(TENSOR_TYPE_Q8_K, x, act, n);
        for (int r = 0; r < rows; r++)
            want[r] = tensor_vec_dot(types[ti], n, w + rs * r, act);
        quant_kfew_stream = QUANT_KFEW_STREAM_AUTO;
        for (int call = 0; call < KFEW_PROBE + 8; call++) {
            tensor_matvec(types[ti], n, w, rows, act, out);
            assert_memory_equal(out, want, sizeof(float) * (size_t)rows);
        }
        free(w);
        free(act);
        free(x);
        free(out);
        free(want);
    }
}

/* a failed check leaves the way it forced */
static int kfew_stream_auto(void **state)
{
    (void)state;
    quant_kfew_stream = QUANT_KFEW_STREAM_AUTO;
    return 0;
}

/* AUTO's choice: KFEW_PROBE calls split evenly between the ways, then the
 * way with the lower median cost for KFEW_KEEP calls (one slow call in the
 * cheaper way does not turn it), then a new probe. */
static int tuner_run(quant_kfew_tuner *t, const float cost[2], int calls, int *used)
{
    int way = -1;
    for (int c = 0; c < calls; c++) {
        way = quant_kfew_tuner_next(t);
        used[way]++;
        /* every fifth call of the cheaper way as slow as the other way's worst */
        quant_kfew_tuner_seen(t, way, cost[way] * (c % 5 == 0 ? 3.0f : 1.0f));
    }
    return way;
}

static void test_kfew_stream_tuner(void **state)
{
    (void)state;
    quant_kfew_tuner t;
    memset(&t, 0, sizeof t);
    int used[2] = {0, 0};
    const float seq_cheaper[2] = {1.0f, 0.9f}, pairs_cheaper[2] = {1.0f, 1.2f};
    tuner_run(&t, seq_cheaper, KFEW_PROBE, used);
    assert_int_equal(used[0], KFEW_PROBE / 2);
    assert_int_equal(used[1], KFEW_PROBE / 2);
    used[0] = used[1] = 0;
    tuner_run(&t, seq_cheaper, KFEW_KEEP, used);
    assert_int_equal(used[QUANT_KFEW_STREAM_SEQ], KFEW_KEEP);
    /* the host changes: the next probe finds the pairs cheaper */
    used[0] = used[1] = 0;
    tuner_run(&t, pairs_cheaper, KFEW_PROBE + KFEW_KEEP, used);
    assert_int_equal(used[QUANT_KFEW_STREAM_PAIRS], KFEW_PROBE / 2 + KFEW_KEEP);
    assert_int_equal(used[QUANT_KFEW_STREAM_SEQ], KFEW_PROBE / 2);
}

/* Calls of two row lengths interleaved (a 512-wide expert's and a 2048-wide
 * output head's, as the Qwen3.5 width's tokens make them), the sequential
 * way cheaper for the first and dearer for the second: each row length is
 * tuned on its own calls and keeps its own way. A shared tuner let the many
 * expert calls choose the head's way (forty-first session). */
static void test_kfew_stream_tuners(void **state)
{
    (void)state;
    quant_kfew_tuners set;
    memset(&set, 0, sizeof set);
    const float seq_cheaper[2] = {1.0f, 0.9f}, pairs_cheaper[2] = {1.0f, 1.7f};
    int used[2][2] = {{0, 0}, {0, 0}}, last[2] = {-1, -1};
    for (int c = 0; c < 4 * (KFEW_PROBE + KFEW_KEEP); c++) {
        const int head = c % 4 == 3; /* three expert calls to a head's */
        quant_kfew_tuner *t = quant_kfew_tuner_of(&set, head ? 8 : 2);
        const int way = quant_kfew_tuner_next(t);
        used[head][way]++;
        last[head] = way;
        quant_kfew_tuner_seen(t, way, (head ? pairs_cheaper : seq_cheaper)[way]);
    }
    assert_int_equal(last[0], QUANT_KFEW_STREAM_SEQ);
    assert_int_equal(last[1], QUANT_KFEW_STREAM_PAIRS);
    /* the head's sequential calls are its probes' only */
    assert_true(used[1][QUANT_KFEW_STREAM_SEQ] <= 2 * (KFEW_PROBE / 2));
    assert_true(used[0][QUANT_KFEW_STREAM_PAIRS] <= 4 * (KFEW_PROBE / 2));
    /* one tuner a row length, the same one each time; past KFEW_TUNERS
     * lengths the last tuner takes the rest */
    assert_ptr_equal(quant_kfew_tuner_of(&set, 8), quant_kfew_tuner_of(&set, 8));
    assert_ptr_not_equal(quant_kfew_tuner_of(&set, 8), quant_kfew_tuner_of(&set, 2));
    for (int64_t nb = 100; nb < 100 + KFEW_TUNERS; nb++)
        assert_non_null(quant_kfew_tuner_of(&set, nb));
    assert_ptr_equal(quant_kfew_tuner_of(&set, 1000), &set.t[KFEW_TUNERS - 1]);
    /* only the calls AUTO times take a row length's tuner */
    quant_kfew_stream = QUANT_KFEW_STREAM_AUTO;
    memset(&set, 0, sizeof set);
    quant_kfew_tuner *timed;
    quant_kfew_way(&set, 5, 2, 1, QUANT_KFEW_STREAM_MIN, &timed); /* two tokens */
    assert_null(timed);
    quant_kfew_way(&set, 6, 1, 1, QUANT_KFEW_STREAM_MIN - 1, &timed); /* a small call */
    assert_null(timed);
    quant_kfew_way(&set, 7, 1, 1, QUANT_KFEW_STREAM_MIN, &timed);
    assert_ptr_equal(timed, &set.t[0]);
    assert_int_equal(set.nb[0], 7);
    assert_int_equal(set.nb[1], 0);
}
#endif

/* ---- the reference's float summation order ----
 * With AVX2 the kernels reproduce ggml's x86 AVX2 vec_dot arithmetic: 8 int32
 * lanes, lane m holding bytes 4m..4m+3 of every 32-element chunk (times the
 * chunk's scale), one float accumulator per lane updated with fmaf per block,
 * min terms where ggml puts them, and ggml's hsum_float_8. This emulates that
 * in scalar code and demands bit-identical results, so a change to a kernel
 * that would move our logits off the reference's cannot go unnoticed. */
#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#define HAVE_ORDER_TEST 1

static float hsum8(const float a[8])
{
    float r0 = a[0] + a[4], r1 = a[1] + a[5], r2 = a[2] + a[6], r3 = a[3] + a[7];
    return (r0 + r2) + (r1 + r3);
}

static float h(uint16_t x) { return tensor_fp16_to_fp32(x); }

/* Element ints of one legacy block (signed as used in the dot). */
static void legacy_ints(enum tensor_type t, const void *blk, int q[32])
{
    uint32_t qh = 0;
    const uint8_t *qs = NULL;
    int off = 0, bits5 = 0;
    switch (t) {
    case TENSOR_TYPE_Q4_0: qs = ((const block_q4_0 *)blk)->qs; off = 8; break;
    case TENSOR_TYPE_Q4_1: qs = ((const block_q4_1 *)blk)->qs; break;
    case TENSOR_TYPE_Q5_0: qs = ((const block_q5_0 *)blk)->qs; memcpy(&qh, ((const block_q5_0 *)blk)->qh, 4); off = 16; bits5 = 1; break;
    case TENSOR_TYPE_Q5_1: qs = ((const block_q5_1 *)blk)->qs; memcpy(&qh, ((const block_q5_1 *)blk)->qh, 4); bits5 = 1; break;
    default: { const block_q8_0 *b = blk; for (int e = 0; e < 32; e++) q[e] = b->qs[e]; return; }
    }
    for (int e = 0; e < 32; e++) {
        int v = e < 16 ? qs[e] & 0xF : qs[e - 16] >> 4;
        if (bits5)
            v |= (int)((qh >> e) & 1) << 4;
        q[e] = v - off;
    }
}

static float emulate_legacy(enum tensor_type t, int64_t n, const void *w, const void *act)
{
    float acc[8] = {0}, summs = 0;
    size_t bs = tensor_type_size(t);
    for (int64_t i = 0; i < n / 32; i++) {
        const void *blk = (const char *)w + bs * (size_t)i;
        int q[32], lane[8] = {0};
        legacy_ints(t, blk, q);
        const int8_t *y;
        float d;
        if (t == TENSOR_TYPE_Q4_1 || t == TENSOR_TYPE_Q5_1) {
            const block_q8_1 *a = (const block_q8_1 *)act + i;
            uint16_t xd, xm;
            memcpy(&xd, blk, 2);
            memcpy(&xm, (const char *)blk + 2, 2);
            y = a->qs;
            d = h(xd) * h(a->d);
            summs = fmaf(h(xm), h(a->s), summs);
        } else {
            const block_q8_0 *a = (const block_q8_0 *)act + i;
            uint16_t xd;
            memcpy(&xd, blk, 2);
            y = a->qs;
            d = h(xd) * h(a->d);
        }
        for (int e = 0; e < 32; e++)
            lane[e / 4] += q[e] * y[e];
        for (int m = 0; m < 8; m++)
            acc[m] = fmaf(d, (float)lane[m], acc[m]);
    }
    return hsum8(acc) + summs;
}

static float emulate_k(enum tensor_type t, int64_t n, const void *w, const void *act)
{
    float acc[8] = {0}, accm[4] = {0}, summs = 0;
    const block_q8_K *y = act;
    for (int64_t i = 0; i < n / QK_K; i++) {
        int8_t q[QK_K];
        int scale[QK_K];
        int mins[16] = {0};
        uint16_t xd = 0, xdmin = 0;
        if (t == TENSOR_TYPE_Q2_K) {
            const block_q2_K *b = (const block_q2_K *)w + i;
            quant_unpack_q2_K(b, q);
            for (int e = 0; e < QK_K; e++)
                scale[e] = b->scales[e / 16] & 0xF;
            for (int g = 0; g < 16; g++)
                mins[g] = b->scales[g] >> 4;
            xd = b->d;
            xdmin = b->dmin;
        } else if (t == TENSOR_TYPE_Q3_K) {
            const block_q3_K *b = (const block_q3_K *)w + i;
            int8_t sc[16];
            quant_unpack_q3_K(b, q);
            quant_q3k_scales(b->scales, sc);
            for (int e = 0; e < QK_K; e++)
                scale[e] = sc[e / 16];
            xd = b->d;
        } else if (t == TENSOR_TYPE_Q6_K) {
            const block_q6_K *b = (const block_q6_K *)w + i;
            quant_unpack_q6_K(b, q);
            for (int e = 0; e < QK_K; e++)
                scale[e] = b->scales[e / 16];
            xd = b->d;
        } else {
            const uint8_t *scales;
            if (t == TENSOR_TYPE_Q4_K) {
                const block_q4_K *b = (const block_q4_K *)w + i;
                quant_unpack_q4_K(b, q);
                scales = b->scales;
                xd = b->d;
                xdmin = b->dmin;
            } else {
                const block_q5_K *b = (const block_q5_K *)w + i;
                quant_unpack_q5_K(b, q);
                scales = b->scales;
                xd = b->d;
                xdmin = b->dmin;
            }
            for (int s = 0; s < 8; s++) {
                uint8_t sc, m;
                quant_scale_min_k4(s, scales, &sc, &m);
                for (int l = 0; l < 32; l++)
                    scale[32 * s + l] = sc;
                mins[s] = m;
            }
        }
        const float d = y[i].d * h(xd), dmin = -y[i].d * h(xdmin);
        const int16_t *bs = y[i].bsums;
        if (t == TENSOR_TYPE_Q2_K)
            for (int m = 0; m < 8; m++)
                acc[m] = fmaf(dmin, (float)(mins[2 * m] * bs[2 * m] + mins[2 * m + 1] * bs[2 * m + 1]), acc[m]);
        if (t == TENSOR_TYPE_Q4_K || t == TENSOR_TYPE_Q5_K) {
            int prod[4], tot = 0;
            for (int k = 0; k < 4; k++) {
                prod[k] = mins[2 * k] * (bs[4 * k] + bs[4 * k + 1]) + mins[2 * k + 1] * (bs[4 * k + 2] + bs[4 * k + 3]);
                tot += prod[k];
                accm[k] = fmaf(dmin, (float)prod[k], accm[k]);
            }
            summs = fmaf(dmin, (float)tot, summs);
        }
        int lane[8] = {0};
        if (t == TENSOR_TYPE_Q6_K) {
            /* ggml_vec_dot_q6_K_q8_K (AVX2): unsigned quants (q + 32) in the
             * lanes, then 32 * scale * block sum taken off lane m for
             * sub-blocks 2m and 2m+1. Same integer total as (q - 32) in the
             * lanes, different lanes, different float sum. */
            const block_q6_K *b = (const block_q6_K *)w + i;
            for (int e = 0; e < QK_K; e++)
                lane[(e % 32) / 4] += scale[e] * (q[e] + 32) * y[i].qs[e];
            for (int m = 0; m < 8; m++)
                lane[m] -= 32 * (b->scales[2 * m] * bs[2 * m] + b->scales[2 * m + 1] * bs[2 * m + 1]);
        } else {
            for (int e = 0; e < QK_K; e++)
                lane[(e % 32) / 4] += scale[e] * q[e] * y[i].qs[e];
        }
        for (int m = 0; m < 8; m++)
            acc[m] = fmaf(d, (float)lane[m], acc[m]);
    }
    if (t == TENSOR_TYPE_Q4_K)
        return hsum8(acc) + ((accm[0] + accm[2]) + (accm[1] + accm[3]));
    if (t == TENSOR_TYPE_Q5_K)
        return hsum8(acc) + summs;
    return hsum8(acc);
}

static void test_reference_order(void **state)
{
    (void)state;
    const enum tensor_type types[] = {TENSOR_TYPE_Q4_0, TENSOR_TYPE_Q4_1, TENSOR_TYPE_Q5_0, TENSOR_TYPE_Q5_1,
                                      TENSOR_TYPE_Q8_0, TENSOR_TYPE_Q2_K, TENSOR_TYPE_Q3_K, TENSOR_TYPE_Q4_K,
                                      TENSOR_TYPE_Q5_K, TENSOR_TYPE_Q6_K};
    enum { ROWS = 9, NACT = 6, NMAX = 2048 };
    float *x = malloc(NMAX * 4);
    char *w = malloc(NMAX * 2 * ROWS), *a = malloc(NMAX * 2 * NACT);
    for (size_t k = 0; k < sizeof types / sizeof types[0]; k++) {
        enum tensor_type t = types[k], at = tensor_dot_type(t);
        for (int rep = 0; rep < 6; rep++) {
            int64_t n = tensor_type_block_size(t) == 32 ? 32 * (1 + (int64_t)(rnd_u32() % 64)) : 256 * (1 + rep % 8);
            size_t rs = tensor_row_size(t, n);
            for (int r = 0; r < ROWS; r++) {
                fill_random(x, n, 1.0f + (float)r);
                tensor_quantize_row(t, x, w + rs * r, n);
            }
            size_t ars = tensor_row_size(at, n);
            for (int c = 0; c < NACT; c++) {
                fill_random(x, n, 3.0f + (float)c);
                tensor_quantize_row(at, x, a + ars * c, n);
            }
            /* for Q6_K these are also the forward pass's own path */
            float out[ROWS], mm[NACT * ROWS];
            tensor_matvec(t, n, w, ROWS, a, out);
            tensor_matmul(t, n, w, ROWS, a, NACT, ars, mm, ROWS);
            for (int c = 0; c < NACT; c++)
                for (int r = 0; r < ROWS; r++) {
                    const void *row = w + rs * r, *ac = a + ars * c;
                    float want = tensor_type_block_size(t) == 32 ? emulate_legacy(t, n, row, ac) : emulate_k(t, n, row, ac);
                    if (f2u(mm[c * ROWS + r]) != f2u(want))
                        fail_msg("%s n=%lld matmul (%d,%d): %.9g, reference order gives %.9g", tensor_type_name(t),
                                 (long long)n, c, r, (double)mm[c * ROWS + r], (double)want);
                }
            for (int r = 0; r < ROWS; r++) {
                const void *row = w + rs * r;
                float want = tensor_type_block_size(t) == 32 ? emulate_legacy(t, n, row, a) : emulate_k(t, n, row, a);
                float got = tensor_vec_dot(t, n, row, a);
                if (f2u(got) != f2u(want) || f2u(out[r]) != f2u(want))
                    fail_msg("%s n=%lld row %d: vec_dot %.9g matvec %.9g, reference order gives %.9g",
                             tensor_type_name(t), (long long)n, r, (double)got, (double)out[r], (double)want);
            }
        }
    }
    free(x);
    free(w);
    free(a);
}

/* A few tokens at once (verification batches, short prompts): the K-quant
 * kernels that unpack a block once for several tokens (quant_q6k_few.c on
 * AVX-512) must give each (row, token) the reference's bits, for every
 * token count a pass or a remainder takes, odd and even row counts and
 * strided outputs. Weights and activations are random bytes (every quant,
 * scale and sign, -128 included; bsums need not match the quants: both
 * sides read the same ones). Rows and tokens all differ, so a kernel that
 * swaps two rows or two tokens fails. */
static void test_few_tokens_reference(void **state)
{
    (void)state;
    const enum tensor_type types[] = {TENSOR_TYPE_Q6_K, TENSOR_TYPE_Q4_K, TENSOR_TYPE_Q5_K};
    const int row_counts[] = {1, 2, 3, 5, 8, 17};
    enum { NTOK = 9, RMAX = 17, NMAX = 1024 };
    const size_t as = tensor_row_size(TENSOR_TYPE_Q8_K, NMAX);
    uint8_t *w = malloc(tensor_row_size(TENSOR_TYPE_Q6_K, NMAX) * RMAX), *act = malloc(as * NTOK);
    for (int t = 0; t < NTOK; t++)
        for (int b = 0; b < NMAX / QK_K; b++) {
            block_q8_K *y = (block_q8_K *)(void *)(act + as * t) + b;
            for (int e = 0; e < QK_K; e++)
                y->qs[e] = (int8_t)rnd_u32();
            for (int g = 0; g < 16; g++)
                y->bsums[g] = (int16_t)((int)(rnd_u32() % 4065) - 2032);
            y->d = 0.002f + 0.01f * (rnd_uniform() + 1.0f);
        }
    for (size_t k = 0; k < sizeof types / sizeof types[0]; k++) {
        const enum tensor_type t = types[k];
        for (int64_t n = QK_K; n <= NMAX; n += 3 * QK_K) {
            const size_t rs = tensor_row_size(t, n), bs = tensor_type_size(t);
            for (size_t i = 0; i < rs * RMAX; i++)
                w[i] = (uint8_t)rnd_u32();
            for (int b = 0; b < RMAX * n / QK_K; b++) { /* sane d (and dmin) */
                const uint16_t d = tensor_fp32_to_fp16(0.001f + 0.05f * (rnd_uniform() + 1.0f));
                const uint16_t m = tensor_fp32_to_fp16(0.001f + 0.02f * (rnd_uniform() + 1.0f));
                uint8_t *blk = w + bs * (size_t)b;
                if (t == TENSOR_TYPE_Q6_K) {
                    memcpy(blk + offsetof(block_q6_K, d), &d, 2);
                } else {
                    memcpy(blk, &d, 2);
                    memcpy(blk + 2, &m, 2);
                }
            }
            float want[NTOK][RMAX];
            for (int c = 0; c < NTOK; c++)
                for (int r = 0; r < RMAX; r++)
                    want[c][r] = emulate_k(t, n, w + rs * r, act + as * c);
            for (int c = 0; c < NTOK; c++)
                for (int r = 0; r < RMAX; r++)
                    for (int c2 = 0; c2 < NTOK; c2++)
                        for (int r2 = 0; r2 < RMAX; r2++)
                            if ((c2 != c || r2 != r) && f2u(want[c][r]) == f2u(want[c2][r2]))
                                fail_msg("%s: outputs (%d,%d) and (%d,%d) equal, a swap would pass", tensor_type_name(t),
                                         c, r, c2, r2);
            for (size_t rc = 0; rc < sizeof row_counts / sizeof row_counts[0]; rc++) {
                const int rows = row_counts[rc], ostride = rows + 3;
                for (int n_tok = 1; n_tok <= NTOK; n_tok++) {
                    float out[NTOK * (RMAX + 3)];
                    memset(out, 0xff, sizeof out);
                    if (n_tok == 1)
                        tensor_matvec(t, n, w, rows, act, out);
                    else
                        tensor_matmul(t, n, w, rows, act, n_tok, as, out, ostride);
                    for (int c = 0; c < n_tok; c++)
                        for (int r = 0; r < ostride; r++) {
                            const uint32_t got = f2u(out[c * ostride + r]);
                            if (r >= rows) {
                                if (n_tok > 1 && got != 0xffffffffu)
                                    fail_msg("%s rows=%d n_tok=%d: wrote past row %d of token %d", tensor_type_name(t),
                                             rows, n_tok, rows, c);
                                continue;
                            }
                            if (got != f2u(want[c][r]))
                                fail_msg("%s n=%lld rows=%d n_tok=%d (%d,%d): %.9g, reference order gives %.9g",
                                         tensor_type_name(t), (long long)n, rows, n_tok, c, r,
                                         (double)out[c * ostride + r], (double)want[c][r]);
                        }
                }
            }
        }
    }
    free(w);
    free(act);
}
#endif

/* ggml_vec_dot_f32 on an AVX-512 build: 4 x 16 FMA lanes over the first
 * n & ~63 elements, reduced as (0+2)+(1+3) and then 8/4/2/1 halves; the rest
 * is `sumf += x[i]*y[i]`, which GCC turns into rounded products added one by
 * one for blocks of 16 and then 8 (only when 16 or more are left) and FMAs for
 * the last few. Single-token F32 matmuls of any width must give exactly this. */
static float emulate_f32_dot(int64_t n, const float *x, const float *y, bool fused_tail)
{
    const int64_t np = n & ~(int64_t)63;
    float lane[4][16] = {{0}};
    for (int64_t i = 0; i < np; i += 64)
        for (int j = 0; j < 4; j++)
            for (int l = 0; l < 16; l++)
                lane[j][l] = fmaf(x[i + 16 * j + l], y[i + 16 * j + l], lane[j][l]);
    float v[16], sum = 0.0f;
    for (int l = 0; l < 16; l++)
        v[l] = (lane[0][l] + lane[2][l]) + (lane[1][l] + lane[3][l]);
    if (np > 0) {
        float t8[8], t4[4];
        for (int l = 0; l < 8; l++)
            t8[l] = v[l + 8] + v[l];
        for (int l = 0; l < 4; l++)
            t4[l] = t8[l + 4] + t8[l];
        sum = (t4[0] + t4[2]) + (t4[1] + t4[3]);
    }
    const int64_t left = n - np;
    int64_t vec = 0;
    if (!fused_tail && left >= 16)
        vec = (left & ~(int64_t)15) + ((left & 15) >= 8 ? 8 : 0);
    for (int64_t i = np; i < n; i++) {
        if (i < np + vec) {
            volatile float p = x[i] * y[i];
            sum += p;
        } else {
            sum = fmaf(x[i], y[i], sum);
        }
    }
    return sum;
}

static void test_reference_f32_tail(void **state)
{
    (void)state;
    enum { ROWS = 16 };
    const int64_t widths[] = {172, 64 + 7, 64 + 15, 64 + 16, 64 + 23, 64 + 24, 64 + 31, 64 + 40, 64 + 63, 40, 12};
    enum { NMAX = 192 };
    float *w = malloc(sizeof(float) * NMAX * ROWS), *a = malloc(sizeof(float) * NMAX), out[ROWS];
    int differs = 0;
    for (size_t k = 0; k < sizeof widths / sizeof widths[0]; k++) {
        const int64_t n = widths[k];
        fill_random(w, n * ROWS, 1.0f);
        fill_random(a, n, 2.0f);
        gguf_tensor wt = {.name = "w", .n_dims = 2, .ne = {n, ROWS, 1, 1}, .type = TENSOR_TYPE_F32, .data = w};
        reffloat_matmul(&wt, n, 0, ROWS, (const uint8_t *)a, (size_t)n * sizeof(float), 1, out, ROWS);
        for (int r = 0; r < ROWS; r++) {
            const float want = emulate_f32_dot(n, w + n * r, a, false);
            if (f2u(out[r]) != f2u(want))
                fail_msg("F32 n=%lld row %d: %.9g, reference order gives %.9g", (long long)n, r, (double)out[r],
                         (double)want);
            differs += n == 172 && f2u(want) != f2u(emulate_f32_dot(n, w + n * r, a, true));
        }
    }
    /* the split is visible: an all-FMA tail gets some of the 172-wide rows wrong */
    assert_true(differs > 0);
    free(w);
    free(a);
}

/* GCC's _mm512_reduce_add_ps: upper 256 bits onto the lower, then 128,
 * then lanes 2,3 onto 0,1, then lane 1 onto lane 0. */
static float emulate_reduce16(const float v[16])
{
    float t8[8], t4[4];
    for (int l = 0; l < 8; l++)
        t8[l] = v[l + 8] + v[l];
    for (int l = 0; l < 4; l++)
        t4[l] = t8[l + 4] + t8[l];
    return (t4[0] + t4[2]) + (t4[1] + t4[3]);
}

/* llamafile's tinyBLAS (batches, rows a multiple of 16 long): one 16-lane
 * FMA accumulator per output, reduced as above. */
static float emulate_tinyblas(int64_t n, const float *w, const float *a)
{
    float lane[16] = {0};
    for (int64_t k = 0; k < n; k += 16)
        for (int l = 0; l < 16; l++)
            lane[l] = fmaf(w[k + l], a[k + l], lane[l]);
    return emulate_reduce16(lane);
}

/* ggml_vec_dot_f16 (single tokens): the F32 dot's 64-wide part, the rest
 * summed in double. */
static float emulate_f16_dot(int64_t n, const float *w, const float *a)
{
    const int64_t np = n & ~(int64_t)63;
    float lane[4][16] = {{0}}, v[16];
    for (int64_t i = 0; i < np; i += 64)
        for (int j = 0; j < 4; j++)
            for (int l = 0; l < 16; l++)
                lane[j][l] = fmaf(w[i + 16 * j + l], a[i + 16 * j + l], lane[j][l]);
    for (int l = 0; l < 16; l++)
        v[l] = (lane[0][l] + lane[2][l]) + (lane[1][l] + lane[3][l]);
    double sum = np > 0 ? emulate_reduce16(v) : 0.0f;
    for (int64_t i = np; i < n; i++)
        sum += (double)(w[i] * a[i]);
    return (float)sum;
}

/* F16 and F32 weights, any tile of rows and tokens: every output equals
 * the reference's one-output order, whatever tile computed it. tinyBLAS
 * takes a batch only when the weight has a multiple of 4 rows and rows a
 * multiple of 16 long (tinyBLAS::matmul refuses m % 4 != 0 on AVX-512);
 * otherwise, and for one token, every output is ggml_vec_dot's. (A
 * one-row weight, qwen35moe's shared-expert gate, took tinyBLAS's order
 * and set one golden position off.) */
static void test_reference_float_tiles(void **state)
{
    (void)state;
    /* 36 rows: tinyBLAS, more rows than one call of the AVX2 tile takes
     * (32); 37: the same shapes, all vec_dot; 1: the shared-expert gate.
     * 2096: past 2048, the AVX2 tile runs k-blocks of 1024 (and a short
     * last one) */
    enum { RMAX = 37, TOK = 13, NMAX = 2096 };
    const int row_counts[] = {36, 37, 1};
    const int64_t widths[] = {16, 48, 256, 784, 2096, 100};
    float *w = malloc(sizeof(float) * NMAX * RMAX), *a = malloc(sizeof(float) * NMAX * TOK);
    float *out = malloc(sizeof(float) * RMAX * TOK);
    uint16_t *wh = malloc(sizeof(uint16_t) * NMAX * RMAX);
    for (size_t rc = 0; rc < sizeof row_counts / sizeof row_counts[0]; rc++)
        for (int f16 = 0; f16 <= 1; f16++)
            for (size_t k = 0; k < sizeof widths / sizeof widths[0]; k++) {
                const int ROWS = row_counts[rc];
                const int64_t n = widths[k];
                fill_random(w, n * ROWS, 1.0f);
                fill_random(a, n * TOK, 2.0f);
                for (int64_t i = 0; f16 && i < n * ROWS; i++) {
                    wh[i] = tensor_fp32_to_fp16(w[i]);
                    w[i] = tensor_fp16_to_fp32(wh[i]);
                }
                for (int64_t i = 0; f16 && i < n * TOK; i++) /* F16's dot type: rounded activations */
                    a[i] = tensor_fp16_to_fp32(tensor_fp32_to_fp16(a[i]));
                gguf_tensor wt = {.name = "w",
                                  .n_dims = 2,
                                  .ne = {n, ROWS, 1, 1},
                                  .type = f16 ? TENSOR_TYPE_F16 : TENSOR_TYPE_F32,
                                  .data = f16 ? (void *)wh : (void *)w};
                for (int n_tok = 1; n_tok <= TOK; n_tok++)
                    for (int r0 = 0; r0 <= (ROWS > 2); r0++) {
                        const int r1 = ROWS - (r0 ? 2 : 0);
                        memset(out, 0, sizeof(float) * RMAX * TOK);
                        reffloat_matmul(&wt, n, r0, r1, (const uint8_t *)a, (size_t)n * sizeof(float), n_tok, out,
                                        ROWS);
                        for (int t = 0; t < n_tok; t++)
                            for (int r = r0; r < r1; r++) {
                                const float *wr = w + n * r, *at = a + n * t;
                                float want;
                                if (n_tok >= 2 && n % 16 == 0 && ROWS % 4 == 0)
                                    want = emulate_tinyblas(n, wr, at);
                                else
                                    want = f16 ? emulate_f16_dot(n, wr, at) : emulate_f32_dot(n, wr, at, false);
                                if (f2u(out[t * ROWS + r]) != f2u(want))
                                    fail_msg("%s n=%lld, %d rows, rows [%d,%d) tokens %d: row %d token %d gives "
                                             "%.9g, the reference order %.9g",
                                             f16 ? "F16" : "F32", (long long)n, ROWS, r0, r1, n_tok, r, t,
                                             (double)out[t * ROWS + r], (double)want);
                            }
                    }
            }
    free(w);
    free(a);
    free(out);
    free(wh);
}

/* The reference's repacked Q2_K (ggml_gemv/gemm_q2_K_8x8_q8_K), one output
 * at a time in scalar code: exact integer sums per 128 elements, converted
 * and FMA-accumulated per 128 (gemm: tokens in complete groups of 4) or per
 * super-block (gemv: the rest). */
static float emulate_q2_K_repacked(const block_q2_K *x, const block_q8_K *y, int64_t nb, bool gemm)
{
    float acc = 0.0f, acc_min = 0.0f;
    for (int64_t b = 0; b < nb; b++) {
        const float da = y[b].d;
        const float dw = tensor_fp16_to_fp32(x[b].d) * da, mw = tensor_fp16_to_fp32(x[b].dmin) * da;
        int32_t isum = 0, imin = 0;
        for (int g = 0; g < 2; g++) {
            int32_t gs = 0, gm = 0;
            for (int si = 8 * g; si < 8 * g + 8; si++) {
                const int j = (si % 8) / 2, h = si % 2;
                int32_t d = 0;
                for (int l = 0; l < 16; l++)
                    d += ((x[b].qs[32 * g + 16 * h + l] >> (2 * j)) & 3) * y[b].qs[128 * g + 32 * j + 16 * h + l];
                gs += (x[b].scales[si] & 0xF) * d;
                gm += (x[b].scales[si] >> 4) * y[b].bsums[si];
            }
            if (gemm) {
                acc = fmaf((float)gs, dw, acc);
                acc_min = fmaf((float)gm, mw, acc_min);
            } else {
                isum += gs;
                imin += gm;
            }
        }
        if (!gemm) {
            acc = fmaf((float)isum, dw, acc);
            acc_min = fmaf((float)imin, mw, acc_min);
        }
    }
    return acc - acc_min;
}

static void test_reference_q2_K_repacked(void **state)
{
    (void)state;
    enum { ROWS = 16, TOK = 9, NB = 3, N = NB * QK_K };
    block_q2_K *w = malloc(sizeof(block_q2_K) * NB * ROWS);
    uint8_t *raw = (uint8_t *)w;
    for (size_t i = 0; i < sizeof(block_q2_K) * NB * ROWS; i++)
        raw[i] = (uint8_t)rnd_u32(); /* every 2-bit quant, scale and min */
    for (int b = 0; b < NB * ROWS; b++) {
        w[b].d = tensor_fp32_to_fp16(0.01f + 0.02f * (rnd_uniform() + 1.0f));
        w[b].dmin = tensor_fp32_to_fp16(0.01f + 0.02f * (rnd_uniform() + 1.0f));
    }
    const size_t as = tensor_row_size(TENSOR_TYPE_Q8_K, N);
    uint8_t *act = malloc(as * TOK);
    float x[N], out[ROWS * TOK];
    for (int t = 0; t < TOK; t++) {
        fill_random(x, N, t == TOK - 1 ? 100.0f : 1.0f + (float)t);
        tensor_quantize_row(TENSOR_TYPE_Q8_K, x, act + (size_t)t * as, N);
    }
    gguf_tensor wt = {.name = "w", .n_dims = 2, .ne = {N, ROWS, 1, 1}, .type = TENSOR_TYPE_Q2_K, .data = w};
    assert_true(refk_applies(&wt));
    for (int n_tok = 1; n_tok <= TOK; n_tok++) {
        refk_matmul(&wt, N, 1, ROWS, act, as, n_tok, out, ROWS);
        for (int t = 0; t < n_tok; t++)
            for (int r = 1; r < ROWS; r++) {
                const float want = emulate_q2_K_repacked(w + (size_t)r * NB,
                                                         (const block_q8_K *)(act + (size_t)t * as), NB,
                                                         t < n_tok - n_tok % 4);
                if (f2u(out[t * ROWS + r]) != f2u(want))
                    fail_msg("Q2_K tokens %d: row %d token %d gives %.9g, the reference order %.9g", n_tok, r, t,
                             (double)out[t * ROWS + r], (double)want);
            }
    }
    free(w);
    free(act);
}

/* BF16 batches: tinyBLAS's vdpbf16ps order, one 16-lane accumulator per
 * output; each lane adds its odd product, then its even one (each rounded;
 * the products are exact). */
static float emulate_tinyblas_bf16(int64_t n, const uint16_t *w, const uint16_t *a)
{
    float lane[16] = {0};
    for (int64_t k = 0; k < n; k += 32)
        for (int l = 0; l < 16; l++) {
            const int64_t i = k + 2 * l;
            lane[l] += tensor_bf16_to_fp32(w[i + 1]) * tensor_bf16_to_fp32(a[i + 1]);
            lane[l] += tensor_bf16_to_fp32(w[i]) * tensor_bf16_to_fp32(a[i]);
        }
    return emulate_reduce16(lane);
}

static void test_reference_bf16_tiles(void **state)
{
    (void)state;
    /* tinyBLAS needs a multiple of 4 rows: 12 take it, 11 and 1 go to
     * ggml_vec_dot_bf16 (the kernel's own dot) */
    enum { ROWS = 12, TOK = 13, NMAX = 768 };
    const int64_t widths[] = {32, 96, 768};
    uint16_t *w = malloc(sizeof(uint16_t) * NMAX * ROWS), *a = malloc(sizeof(uint16_t) * NMAX * TOK);
    float *x = malloc(sizeof(float) * NMAX * TOK), *out = malloc(sizeof(float) * ROWS * TOK);
    for (size_t k = 0; k < sizeof widths / sizeof widths[0]; k++) {
        const int64_t n = widths[k];
        fill_random(x, n * ROWS, 1.0f);
        tensor_quantize_row(TENSOR_TYPE_BF16, x, w, n * ROWS);
        fill_random(x, n * TOK, 3.0f);
        tensor_quantize_row(TENSOR_TYPE_BF16, x, a, n * TOK);
        gguf_tensor wt = {.name = "w", .n_dims = 2, .ne = {n, ROWS, 1, 1}, .type = TENSOR_TYPE_BF16, .data = w};
        gguf_tensor odd = wt, one = wt;
        odd.ne[1] = ROWS - 1;
        one.ne[1] = 1;
        assert_false(refbf16_applies(&odd, 2));
        assert_false(refbf16_applies(&one, TOK));
        for (int n_tok = 2; n_tok <= TOK; n_tok++)
            for (int r0 = 0; r0 <= 1; r0++) {
                const int r1 = ROWS - (r0 ? 2 : 0);
                assert_true(refbf16_applies(&wt, n_tok));
                refbf16_matmul(&wt, n, r0, r1, (const uint8_t *)a, (size_t)n * 2, n_tok, out, ROWS);
                for (int t = 0; t < n_tok; t++)
                    for (int r = r0; r < r1; r++) {
                        const float want = emulate_tinyblas_bf16(n, w + n * r, a + n * t);
                        if (f2u(out[t * ROWS + r]) != f2u(want))
                            fail_msg("BF16 n=%lld rows [%d,%d) tokens %d: row %d token %d gives %.9g, the "
                                     "reference order %.9g",
                                     (long long)n, r0, r1, n_tok, r, t, (double)out[t * ROWS + r], (double)want);
                    }
            }
    }
    free(w);
    free(a);
    free(x);
    free(out);
}

/* ---- real tensors ---- */

static void test_real_tensors(void **state)
{
    (void)state;
    const char *path = TESTDATA_REQUIRE("models/tiny-spm-mix.gguf");
    char err[512];
    gguf_ctx *g = gguf_open(path, err, sizeof err);
    if (!g)
        fail_msg("%s", err);
    bool seen[TENSOR_TYPE_COUNT] = {0};
    int64_t nt = gguf_n_tensors(g);
    for (int64_t i = 0; i < nt; i++) {
        const gguf_tensor *t = gguf_tensor_at(g, i);
        assert_true(tensor_type_is_supported(t->type));
        seen[t->type] = true;
        int64_t n = t->ne[0], rows = t->n_elements / n;
        size_t rs = tensor_row_size(t->type, n);
        assert_true(rs > 0);
        assert_int_equal(rs * (size_t)rows, t->nbytes);
        int64_t take = rows < 64 ? rows : 64;
        float *y = malloc((size_t)(n * take) * 4);
        tensor_dequantize_row((enum tensor_type)t->type, t->data, y, n * take);
        double ss = 0, amax = 0;
        for (int64_t j = 0; j < n * take; j++) {
            if (!isfinite(y[j]))
                fail_msg("%s: non-finite value at %lld", t->name, (long long)j);
            ss += (double)y[j] * y[j];
            amax = fmax(amax, fabs(y[j]));
        }
        double rms = sqrt(ss / (double)(n * take));
        /* random-init weights (~0.02) and norms (~1): nothing huge, nothing all-zero */
        if (!(rms > 1e-4 && rms < 10 && amax < 100))
            fail_msg("%s (%s): implausible rms %g amax %g", t->name, tensor_type_name(t->type), rms, amax);
        /* row by row dequantization agrees with one call over many rows */
        float *y1 = malloc((size_t)n * 4);
        tensor_dequantize_row((enum tensor_type)t->type, (const char *)t->data + rs * (size_t)(take - 1), y1, n);
        assert_memory_equal(y1, y + n * (take - 1), (size_t)n * 4);
        /* vec_dot of real rows against a random activation */
        if (n % tensor_type_block_size(tensor_dot_type(t->type)) == 0) {
            enum tensor_type at = tensor_dot_type(t->type);
            float *a = malloc((size_t)n * 4), *ad = malloc((size_t)n * 4);
            void *aq = malloc(tensor_row_size(at, n));
            fill_random(a, n, 1.0f);
            tensor_quantize_row(at, a, aq, n);
            tensor_dequantize_row(at, aq, ad, n);
            float out[4];
            int64_t r4 = take < 4 ? take : 4;
            tensor_matvec((enum tensor_type)t->type, n, t->data, r4, aq, out);
            for (int64_t r = 0; r < r4; r++) {
                double ref = 0, mag = 0;
                for (int64_t j = 0; j < n; j++) {
                    ref += (double)y[r * n + j] * ad[j];
                    mag += fabs((double)y[r * n + j] * ad[j]);
                }
                double tol = 2e-6 * mag + 1e-9;
                if (at == TENSOR_TYPE_Q8_1)
                    tol += 2e-3 * mag + 1e-3 * rms * n; /* fp16 block sums */
                if (fabs(out[r] - ref) > tol)
                    fail_msg("%s row %lld: dot %g want %g", t->name, (long long)r, (double)out[r], ref);
            }
            free(a);
            free(ad);
            free(aq);
        }
        free(y1);
        free(y);
    }
    /* The file holds the same weights as tiny-spm-f16.gguf: each tensor must
     * dequantize to those values within its type's quantization error. A
     * wrong bit layout gives errors near 1 or above. */
    const char *fpath = TESTDATA_REQUIRE("models/tiny-spm-f16.gguf");
    gguf_ctx *gf = gguf_open(fpath, err, sizeof err);
    if (!gf)
        fail_msg("%s", err);
    for (int64_t i = 0; i < nt; i++) {
        const gguf_tensor *t = gguf_tensor_at(g, i);
        const gguf_tensor *f = gguf_find_tensor(gf, t->name);
        assert_non_null(f);
        assert_int_equal(f->n_elements, t->n_elements);
        int64_t n = t->ne[0], rows = t->n_elements / n, take = rows < 256 ? rows : 256;
        float *y = malloc((size_t)(n * take) * 4), *z = malloc((size_t)(n * take) * 4);
        tensor_dequantize_row((enum tensor_type)t->type, t->data, y, n * take);
        tensor_dequantize_row((enum tensor_type)f->type, f->data, z, n * take);
        double se = 0, sz = 0;
        for (int64_t j = 0; j < n * take; j++) {
            se += (double)(y[j] - z[j]) * (y[j] - z[j]);
            sz += (double)z[j] * z[j];
        }
        double rel = sqrt(se / (sz > 0 ? sz : 1));
        double bound;
        switch (t->type) {
        case TENSOR_TYPE_F32: case TENSOR_TYPE_F16: bound = 1e-3; break;
        case TENSOR_TYPE_BF16: bound = 3e-3; break;
        case TENSOR_TYPE_Q8_0: bound = 0.008; break;
        case TENSOR_TYPE_Q6_K: bound = 0.025; break;
        case TENSOR_TYPE_Q5_0: case TENSOR_TYPE_Q5_1: case TENSOR_TYPE_Q5_K: bound = 0.055; break;
        case TENSOR_TYPE_Q4_0: case TENSOR_TYPE_Q4_1: case TENSOR_TYPE_Q4_K: bound = 0.11; break;
        case TENSOR_TYPE_Q3_K: bound = 0.2; break;
        default: bound = 0.4; break; /* Q2_K */
        }
        if (getenv("QUANT_TEST_VERBOSE"))
            print_message("%-28s %-5s vs f16: rel rmse %.5f\n", t->name, tensor_type_name(t->type), rel);
        if (rel > bound)
            fail_msg("%s (%s): differs from the F16 file by rel rmse %.4f > %.3f", t->name,
                     tensor_type_name(t->type), rel, bound);
        free(y);
        free(z);
    }
    gguf_close(gf);

    for (size_t k = 0; k < N_WEIGHT_TYPES; k++)
        if (!seen[weight_types[k]])
            fail_msg("tiny-spm-mix.gguf holds no %s tensor", tensor_type_name(weight_types[k]));
    gguf_close(g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fp16_edges),
        cmocka_unit_test(test_bf16_edges),
        cmocka_unit_test(test_dequant_q4_0_known),
        cmocka_unit_test(test_dequant_legacy_known),
        cmocka_unit_test(test_dequant_q4_K_known),
        cmocka_unit_test(test_dequant_q6_K_known),
        cmocka_unit_test(test_dequant_q2_q3_K_known),
        cmocka_unit_test(test_quantize_q8_0_rounding),
        cmocka_unit_test(test_quantize_q8_K),
        cmocka_unit_test(test_roundtrip_error),
        cmocka_unit_test(test_vec_dot_matches_dequantized),
        cmocka_unit_test(test_simd_matches_scalar),
        cmocka_unit_test(test_dequant_simd_matches_scalar),
        cmocka_unit_test(test_matvec_matmul),
        cmocka_unit_test(test_q6_K_pairs),
#ifdef QUANT_HAVE_KFEW
        cmocka_unit_test_teardown(test_kfew_stream_ways, kfew_stream_auto),
        cmocka_unit_test(test_kfew_stream_tuner),
        cmocka_unit_test(test_kfew_stream_tuners),
        cmocka_unit_test(test_kfew_stream_auto),
#endif
        cmocka_unit_test(test_real_tensors),
        cmocka_unit_test(test_reference_q2_K_repacked),
#ifdef HAVE_ORDER_TEST
        cmocka_unit_test(test_reference_order),
        cmocka_unit_test(test_few_tokens_reference),
        cmocka_unit_test(test_reference_f32_tail),
        cmocka_unit_test(test_reference_float_tiles),
        cmocka_unit_test(test_reference_bf16_tiles),
#endif
    };
    return cmocka_run_group_tests_name("quant", tests, NULL, NULL);
}
