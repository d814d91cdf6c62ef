/* MXFP4 blocks: values against the OCP E2M1 / E8M0 definitions (written out
 * here independently of the kernels' table), the nibble order, the block and
 * row sizes, the reference quantizer on exact values, and the three dot
 * orders (generic, x86 vec_dot, repacked) against emulations written from
 * the reference kernels' descriptions. */
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
#include "kernels/forward_repack.h"
#include "kernels/gemm_mxfp4.h"
#include "kernels/quant_internal.h"
#include "kernels/quant_mxfp4.h"
#include "kernels/repack_mxfp4.h"
#include "testutil.h"

static uint64_t rng_state = 0x4D58465034ull;
static uint32_t rnd_u32(void) { return (uint32_t)(test_xorshift64(&rng_state) >> 16); }

/* OCP MX v1.0: E2M1 is sign, 2 exponent bits (bias 1), 1 mantissa bit;
 * exponent 0 is subnormal (0 or 0.5). */
static double e2m1(unsigned nib)
{
    const unsigned ex = (nib >> 1) & 3, m = nib & 1;
    const double mag = ex == 0 ? 0.5 * m : (1.0 + 0.5 * m) * ldexp(1.0, (int)ex - 1);
    return nib & 8 ? -mag : mag;
}

/* E8M0: 2^(e - 127) (e = 255 is NaN in the spec; not used by the files). */
static double e8m0(unsigned e) { return ldexp(1.0, (int)e - 127); }

static void test_sizes(void **state)
{
    (void)state;
    assert_true(tensor_type_is_supported(TENSOR_TYPE_MXFP4));
    assert_string_equal(tensor_type_name(TENSOR_TYPE_MXFP4), "MXFP4");
    assert_int_equal(tensor_type_block_size(TENSOR_TYPE_MXFP4), 32);
    assert_int_equal(tensor_type_size(TENSOR_TYPE_MXFP4), 17);
    assert_int_equal(tensor_row_size(TENSOR_TYPE_MXFP4, 2880), 90 * 17);
    assert_int_equal(tensor_row_size(TENSOR_TYPE_MXFP4, 48), 0); /* not whole blocks */
    assert_int_equal(tensor_dot_type(TENSOR_TYPE_MXFP4), TENSOR_TYPE_Q8_0);
}

/* Every exponent: the half scale is exactly 2^(e - 128), subnormals included. */
static void test_e8m0_half(void **state)
{
    (void)state;
    for (unsigned e = 0; e < 255; e++) {
        const float got = quant_e8m0_to_fp32_half((uint8_t)e);
        if ((double)got != e8m0(e) / 2)
            fail_msg("e8m0 half of %u: %.9g, want %.9g", e, (double)got, e8m0(e) / 2);
    }
    assert_true(quant_e8m0_to_fp32_half(255) == 0x1p127f); /* NaN in the spec; ggml does not check */
}

/* Every nibble in both positions under several scales: element j is the low
 * nibble of qs[j], element j + 16 the high one. */
static void test_dequantize_known(void **state)
{
    (void)state;
    const unsigned exps[] = {0, 1, 2, 100, 126, 127, 128, 130, 200, 254};
    for (size_t k = 0; k < sizeof exps / sizeof exps[0]; k++) {
        block_mxfp4 b[2];
        float y[64];
        for (int i = 0; i < 2; i++) {
            b[i].e = (uint8_t)(exps[k] + (unsigned)i > 254 ? 254 : exps[k] + (unsigned)i);
            for (int j = 0; j < 16; j++)
                b[i].qs[j] = (uint8_t)(j | (15 - j) << 4);
        }
        tensor_dequantize_row(TENSOR_TYPE_MXFP4, b, y, 64);
        for (int i = 0; i < 2; i++)
            for (int j = 0; j < 32; j++) {
                const unsigned nib = j < 16 ? (unsigned)j : (unsigned)(15 - (j - 16));
                const float want = (float)(e2m1(nib) * e8m0(b[i].e)); /* inf past FLT_MAX */
                if (f2u(y[32 * i + j]) != f2u(want) && !(want == 0 && y[32 * i + j] == 0))
                    fail_msg("e=%u element %d (nibble %u): %.9g, want %.9g", b[i].e, j, nib,
                             (double)y[32 * i + j], (double)want);
            }
    }
}

/* Values on the grid come back exactly; the scale is the largest value's
 * power of two minus 2. */
static void test_quantize_exact(void **state)
{
    (void)state;
    float x[64], y[64];
    for (int r = 0; r < 50; r++) {
        const int sh = (int)(rnd_u32() % 40) - 20;
        for (int j = 0; j < 64; j++)
            x[j] = (float)(e2m1(rnd_u32() % 16) * ldexp(1.0, sh));
        x[rnd_u32() % 32] = (float)ldexp(6.0, sh); /* the largest of block 0 */
        x[32 + rnd_u32() % 32] = (float)ldexp(-4.0, sh);
        block_mxfp4 b[2];
        tensor_quantize_row(TENSOR_TYPE_MXFP4, x, b, 64);
        assert_int_equal(b[0].e, 127 + sh);
        assert_int_equal(b[1].e, 127 + sh);
        tensor_dequantize_row(TENSOR_TYPE_MXFP4, b, y, 64);
        for (int j = 0; j < 64; j++)
            if (f2u(x[j]) != f2u(y[j]) && !(x[j] == 0 && y[j] == 0))
                fail_msg("rep %d [%d]: %.9g came back as %.9g", r, j, (double)x[j], (double)y[j]);
    }
}

/* Random blocks (any nibble, exponents around 1) and Q8_0 activations. */
static void random_row(int64_t n, block_mxfp4 *w, block_q8_0 *a)
{
    for (int64_t i = 0; i < n / 32; i++) {
        w[i].e = (uint8_t)(118 + rnd_u32() % 16);
        for (int j = 0; j < 16; j++)
            w[i].qs[j] = (uint8_t)rnd_u32();
        a[i].d = tensor_fp32_to_fp16((float)(rnd_u32() % 1000 + 1) * 1e-4f);
        for (int j = 0; j < 32; j++)
            a[i].qs[j] = (int8_t)((int)(rnd_u32() % 255) - 127);
    }
}

/* Block i's integer sum from the dequantized values (the weight over its
 * half scale is the doubled E2M1 integer). */
static int isum_from_values(const block_mxfp4 *w, const block_q8_0 *a, int64_t i)
{
    float v[32];
    tensor_dequantize_row(TENSOR_TYPE_MXFP4, &w[i], v, 32);
    const float d = quant_e8m0_to_fp32_half(w[i].e);
    int s = 0;
    for (int j = 0; j < 32; j++)
        s += (int)(v[j] / d) * a[i].qs[j];
    return s;
}

/* The three orders against their descriptions; the table's vec_dot is the
 * x86 one (SIMD or not). */
static void test_dot_orders(void **state)
{
    (void)state;
    enum { NMAX = 32 * 97 };
    block_mxfp4 *w = malloc(sizeof *w * (NMAX / 32));
    block_q8_0 *a = malloc(sizeof *a * (NMAX / 32));
    for (int rep = 0; rep < 200; rep++) {
        const int64_t n = 32 * (1 + (int64_t)(rep < 8 ? (uint32_t)rep : rnd_u32() % 97));
        const int64_t nb = n / 32;
        random_row(n, w, a);
        float rep_acc = 0.0f, gen = 0.0f, lanes[2][8] = {{0}};
        double exact = 0;
        for (int64_t i = 0; i < nb; i++) {
            const int s = isum_from_values(w, a, i);
            const float dw = quant_e8m0_to_fp32_half(w[i].e), da = tensor_fp16_to_fp32(a[i].d);
            exact += (double)dw * da * s;
            rep_acc = fmaf((float)s, dw * da, rep_acc);
            volatile float p = da * dw * (float)s;
            gen += p;
        }
        /* x86: blocks in pairs (0,1), (2,3), ... into two 8-lane accumulators
         * (lane k: elements 4k..4k+3); an odd last block added apart */
        float v[32];
        int64_t i;
        const int64_t np = nb & ~(int64_t)1;
        for (i = 0; i < np; i++) {
            tensor_dequantize_row(TENSOR_TYPE_MXFP4, &w[i], v, 32);
            const float dw = quant_e8m0_to_fp32_half(w[i].e), da = tensor_fp16_to_fp32(a[i].d);
            for (int k = 0; k < 8; k++) {
                int l = 0;
                for (int j = 4 * k; j < 4 * k + 4; j++)
                    l += (int)(v[j] / dw) * a[i].qs[j];
                lanes[i % 2][k] = fmaf(da * dw, (float)l, lanes[i % 2][k]);
            }
        }
        float t[8], r4[4];
        for (int k = 0; k < 8; k++)
            t[k] = lanes[0][k] + lanes[1][k];
        for (int k = 0; k < 4; k++)
            r4[k] = t[k] + t[k + 4];
        float x86 = (r4[0] + r4[2]) + (r4[1] + r4[3]);
        if (nb % 2)
            x86 = fmaf(tensor_fp16_to_fp32(a[nb - 1].d) * quant_e8m0_to_fp32_half(w[nb - 1].e),
                       (float)isum_from_values(w, a, nb - 1), x86);

        const float got_vec = tensor_vec_dot(TENSOR_TYPE_MXFP4, n, w, a);
        const float got_x86 = quant_dot_mxfp4_x86order(n, w, a);
        const float got_rep = quant_dot_mxfp4_repacked(n, w, a);
        const float got_gen = quant_vec_dot_scalar(TENSOR_TYPE_MXFP4, n, w, a);
        if (f2u(got_vec) != f2u(x86) || f2u(got_x86) != f2u(x86))
            fail_msg("n=%lld x86 order: vec_dot %.9g, portable %.9g, want %.9g", (long long)n, (double)got_vec,
                     (double)got_x86, (double)x86);
        if (f2u(got_rep) != f2u(rep_acc))
            fail_msg("n=%lld repacked order: %.9g, want %.9g", (long long)n, (double)got_rep, (double)rep_acc);
        if (f2u(got_gen) != f2u(gen))
            fail_msg("n=%lld generic order: %.9g, want %.9g", (long long)n, (double)got_gen, (double)gen);
        if (fabs(got_gen - exact) > 1e-5 * fabs(exact) + 1e-3)
            fail_msg("n=%lld: %.9g, exact %.9g", (long long)n, (double)got_gen, exact);
    }
    free(w);
    free(a);
}

/* The matmul dispatch takes the repacked order where the reference repacks
 * (rows a multiple of 8), as forward_matmul does for every weight. */
static void test_repack_dispatch(void **state)
{
    (void)state;
    enum { N = 96, ROWS = 16 };
    block_mxfp4 w[ROWS * N / 32], scratch_w[N / 32];
    block_q8_0 a[2][N / 32], scratch_a[ROWS * N / 32];
    random_row((int64_t)ROWS * N, w, scratch_a);
    random_row(N, scratch_w, a[0]);
    random_row(N, scratch_w, a[1]);
    gguf_tensor t;
    memset(&t, 0, sizeof t);
    t.type = TENSOR_TYPE_MXFP4;
    t.ne[0] = N;
    t.ne[1] = ROWS;
    t.ne[2] = t.ne[3] = 1;
    t.data = w;
    assert_true(repack_applies(&t));
    float out[2 * ROWS];
    repack_matmul(&t, N, 0, ROWS, (const uint8_t *)a, sizeof a[0], 2, out, ROWS);
    for (int tk = 0; tk < 2; tk++)
        for (int r = 0; r < ROWS; r++) {
            const float want = quant_dot_mxfp4_repacked(N, &w[r * (N / 32)], a[tk]);
            assert_int_equal(f2u(out[tk * ROWS + r]), f2u(want));
        }
    t.ne[1] = 12; /* not a multiple of 8: plain vec_dot */
    assert_false(repack_applies(&t));
}

/* The tiled kernel (4 rows x 4 tokens, 4 rows x 1 token, single rows left
 * over) gives every output the bits of the one-row repacked chain, for any
 * row range, token count and output stride; the extreme values (|w| 12,
 * |a| 127) included. */
static void test_repack_tiles(void **state)
{
    (void)state;
    enum { NMAX = 32 * 13, RMAX = 23, TMAX = 11 };
    block_mxfp4 *w = malloc(sizeof *w * (RMAX * NMAX / 32));
    block_q8_0 *a = malloc(sizeof *a * (TMAX * NMAX / 32)), *scratch_a = malloc(sizeof *a * (RMAX * NMAX / 32));
    block_mxfp4 *scratch_w = malloc(sizeof *w * (TMAX * NMAX / 32));
    float *out = malloc(sizeof(float) * TMAX * (RMAX + 3));
    for (int rep = 0; rep < 60; rep++) {
        const int64_t n = 32 * (1 + (int64_t)(rnd_u32() % 13)), nb = n / 32;
        const int rows = 1 + (int)(rnd_u32() % RMAX), n_tok = 1 + (int)(rnd_u32() % TMAX);
        const int r0 = (int)(rnd_u32() % (unsigned)rows), r1 = r0 + 1 + (int)(rnd_u32() % (unsigned)(rows - r0));
        const int64_t ostride = rows + (int64_t)(rnd_u32() % 3);
        random_row(rows * n, w, scratch_a);
        random_row(n_tok * n, scratch_w, a);
        if (rep % 4 == 0) /* the largest magnitudes: nibbles 7 / 15, bytes +-127 */
            for (int64_t i = 0; i < rows * nb; i++)
                for (int j = 0; j < 16; j++)
                    w[i].qs[j] = (uint8_t)(rnd_u32() % 2 ? 0x7F : 0xF7);
        if (rep % 4 == 0)
            for (int64_t i = 0; i < n_tok * nb; i++)
                for (int j = 0; j < 32; j++)
                    a[i].qs[j] = (int8_t)(rnd_u32() % 2 ? 127 : -127);
        for (int64_t i = 0; i < TMAX * (RMAX + 3); i++)
            out[i] = -1.0f;
        const size_t astride = (size_t)nb * sizeof(block_q8_0), wrow = (size_t)nb * sizeof(block_mxfp4);
        repack_mxfp4_matmul(w, n, r0, r1, (const uint8_t *)a, astride, n_tok, out, ostride);
        for (int t = 0; t < n_tok; t++)
            for (int r = 0; r < rows; r++) {
                const float got = out[t * ostride + r];
                if (r < r0 || r >= r1) {
                    assert_int_equal(f2u(got), f2u(-1.0f)); /* rows outside the range untouched */
                    continue;
                }
                const float want =
                    quant_dot_mxfp4_repacked(n, (const uint8_t *)w + r * wrow, (const uint8_t *)a + t * astride);
                if (f2u(got) != f2u(want))
                    fail_msg("n=%lld rows [%d,%d) of %d, %d tokens: (%d,%d) %.9g, want %.9g", (long long)n, r0, r1,
                             rows, n_tok, r, t, (double)got, (double)want);
            }
    }
    free(w);
    free(a);
    free(scratch_a);
    free(scratch_w);
    free(out);
}

/* out[t * ostride + r] of rows [r0, r1) against every one-row repacked
 * chain, bit for bit; rows outside the range still -1. */
static void check_outputs(const char *what, const block_mxfp4 *w, int64_t n, int rows, int r0, int r1,
                          const uint8_t *a, size_t astride, int n_tok, const float *out, int64_t ostride)
{
    const size_t wrow = (size_t)(n / 32) * sizeof(block_mxfp4);
    for (int t = 0; t < n_tok; t++)
        for (int r = 0; r < rows; r++) {
            const float got = out[t * ostride + r];
            if (r < r0 || r >= r1) {
                if (f2u(got) != f2u(-1.0f))
                    fail_msg("%s: n=%lld rows [%d,%d), %d tokens: (%d,%d) outside the range written", what,
                             (long long)n, r0, r1, n_tok, r, t);
                continue;
            }
            const float want = quant_dot_mxfp4_repacked(n, (const uint8_t *)w + r * wrow, a + t * astride);
            if (f2u(got) != f2u(want))
                fail_msg("%s: n=%lld rows [%d,%d) of %d, %d tokens: (%d,%d) %.9g, want %.9g", what, (long long)n, r0,
                         r1, rows, n_tok, r, t, (double)got, (double)want);
        }
}

/* The AVX-512 VNNI GEMM's tiles (gemm_mxfp4.h: panels of 16 rows, tiles
 * of up to 8 tokens in even sizes, passes of tokens past its scratch
 * share) through the dispatch and called directly: every token count
 * 1..26 (one to four tiles of every size), row ranges of 1..40
 * rows from any start (full panels, each tail), padded token and output
 * strides, passes of one tile each, and the blocks where d_w * d_a must be
 * a multiply (d_a = 0, scale bytes 0, 1, 2, 25, 241). */
static void test_gemm_tiles(void **state)
{
    (void)state;
    enum { RMAX = 40, TMAX = 26, NBIG = 32 * 90 };
    block_mxfp4 *w = malloc(sizeof *w * (RMAX * NBIG / 32));
    uint8_t *a = malloc((sizeof(block_q8_0) * (NBIG / 32) + 34) * TMAX);
    block_q8_0 *row_a = malloc(sizeof *row_a * (NBIG / 32)), *scratch_a = malloc(sizeof *scratch_a * (RMAX * NBIG / 32));
    block_mxfp4 *scratch_w = malloc(sizeof *scratch_w * (NBIG / 32));
    float *out = malloc(sizeof(float) * TMAX * (RMAX + 3));
    for (int rep = 0; rep < 3 * TMAX + 4; rep++) {
        const int n_tok = rep < 3 * TMAX ? 1 + rep % TMAX : 23 + rep % 4;
        const int64_t n = 32 * (1 + (int64_t)(rnd_u32() % (rep % 3 == 2 ? NBIG / 32 : 13)));
        const int64_t nb = n / 32;
        const int rows = 1 + (int)(rnd_u32() % RMAX);
        const int r0 = rep % 5 == 0 ? 0 : (int)(rnd_u32() % (unsigned)rows);
        const int r1 = rep % 5 == 0 ? rows : r0 + 1 + (int)(rnd_u32() % (unsigned)(rows - r0));
        const int64_t ostride = rows + (int64_t)(rnd_u32() % 3);
        const size_t astride = (size_t)nb * sizeof(block_q8_0) + (rep % 3 == 1 ? 34 : rep % 3 == 2 ? 2 : 0);
        random_row(rows * n, w, scratch_a);
        for (int t = 0; t < n_tok; t++) {
            random_row(n, scratch_w, row_a);
            if (rep % 7 == 0) /* the largest magnitudes */
                for (int64_t i = 0; i < nb; i++)
                    for (int j = 0; j < 32; j++)
                        row_a[i].qs[j] = (int8_t)(rnd_u32() % 2 ? 127 : -127);
            memcpy(a + t * astride, row_a, (size_t)nb * sizeof(block_q8_0));
        }
        if (rep % 7 == 0)
            for (int64_t i = 0; i < rows * nb; i++)
                for (int j = 0; j < 16; j++)
                    w[i].qs[j] = (uint8_t)(rnd_u32() % 2 ? 0x7F : 0xF7);
        /* where d_w * d_a is not an exponent add (gemm_mxfp4.c, E_LO):
         * a token block with d_a = 0, a weight block's scale byte out of
         * [26, 240] (subnormal d_w included) */
        if (rep % 5 == 3) {
            block_q8_0 *y = (block_q8_0 *)(void *)(a + (rnd_u32() % (unsigned)n_tok) * astride) + rnd_u32() % nb;
            y->d = 0;
        }
        if (rep % 5 == 4) {
            static const uint8_t odd_e[] = {0, 1, 2, 25, 241};
            w[rnd_u32() % (unsigned)(rows * nb)].e = odd_e[rnd_u32() % 5];
        }
        for (int64_t i = 0; i < TMAX * (RMAX + 3); i++)
            out[i] = -1.0f;
        repack_mxfp4_matmul(w, n, r0, r1, a, astride, n_tok, out, ostride);
        check_outputs("repack_mxfp4_matmul", w, n, rows, r0, r1, a, astride, n_tok, out, ostride);
#if defined(GEMM_MXFP4)
        for (int64_t i = 0; i < TMAX * (RMAX + 3); i++)
            out[i] = -1.0f;
        const size_t pass_bytes = gemm_mxfp4_pass_bytes;
        if (rep >= 3 * TMAX)
            gemm_mxfp4_pass_bytes = 1; /* a tile per pass */
        assert_true(gemm_mxfp4_matmul(w, n, r0, r1, a, astride, n_tok, out, ostride));
        gemm_mxfp4_pass_bytes = pass_bytes;
        check_outputs("gemm_mxfp4_matmul", w, n, rows, r0, r1, a, astride, n_tok, out, ostride);
#endif
    }
    free(w);
    free(a);
    free(row_a);
    free(scratch_a);
    free(scratch_w);
    free(out);
}

/* gpt-oss's experts from the file: 3-D MXFP4 tensors of the size the
 * blocks give, each element a value of the grid times its block's scale. */
static void test_real_experts(void **state)
{
    (void)state;
    const char *path = testdata_path("families2026/models/gptoss-mini-mxfp4.gguf");
    if (access(path, R_OK) != 0) {
        if (testdata_in_ci())
            fail_msg("%s missing", path);
        skip();
    }
    char err[256];
    gguf_ctx *g = gguf_open(path, err, sizeof err);
    assert_non_null(g);
    const gguf_tensor *t = gguf_find_tensor(g, "blk.0.ffn_gate_exps.weight");
    assert_non_null(t);
    assert_int_equal(t->type, TENSOR_TYPE_MXFP4);
    assert_int_equal(t->ne[0], 64);
    assert_int_equal(t->ne[2], 8);
    assert_int_equal(t->nbytes, (size_t)(64 / 32) * 17 * 64 * 8);
    const block_mxfp4 *b = t->data;
    float y[32];
    for (int64_t i = 0; i < (int64_t)(t->nbytes / 17); i++) {
        tensor_dequantize_row(TENSOR_TYPE_MXFP4, &b[i], y, 32);
        for (int j = 0; j < 32; j++) {
            const double v = fabs((double)y[j]) / e8m0(b[i].e);
            if (!(v == 0 || v == 0.5 || v == 1 || v == 1.5 || v == 2 || v == 3 || v == 4 || v == 6))
                fail_msg("block %lld element %d: %g is off the grid", (long long)i, j, (double)y[j]);
        }
    }
    gguf_close(g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sizes),          cmocka_unit_test(test_e8m0_half),
        cmocka_unit_test(test_dequantize_known), cmocka_unit_test(test_quantize_exact),
        cmocka_unit_test(test_dot_orders),     cmocka_unit_test(test_repack_dispatch),
        cmocka_unit_test(test_repack_tiles),     cmocka_unit_test(test_gemm_tiles),
        cmocka_unit_test(test_real_experts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
