/* The IQ integer GEMM (kernels/gemm_iq.h) against the reference's x86
 * vec_dot order (quant_dot_*_x86order, held to the reference's own outputs
 * by test_iq4 / test_iq2): every output bit for bit, on random weights and
 * Q8_K activations, for several widths, row counts and token counts that
 * do and do not fill the tiles, row ranges that start mid-tile, and an
 * output stride wider than the rows, and the tile shapes (test_tiles).
 * The random data gives neighbouring rows and tokens different outputs
 * (checked), so an exchanged row or token fails. Built for AVX2 too (test_gemm_iq_avx2), whose tiles differ. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "gguf/gguf.h"
#include "gguf/tensor.h"
#include "kernels/gemm_iq.h"
#include "kernels/quant_internal.h"
#include "kernels/quant_iq1.h"
#include "kernels/quant_iq2.h"
#include "kernels/quant_iq3.h"
#include "kernels/quant_iq4.h"
#include "testutil.h"

static uint64_t rng_state = 0x67656d6d69717175ull;
static uint32_t rnd_u32(void)
{
    return (uint32_t)(test_xorshift64(&rng_state) >> 16);
}

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

/* Random bytes, each block's leading fp16 d a random scale of either sign. */
static void random_weights(enum tensor_type t, uint8_t *w, size_t bytes)
{
    for (size_t i = 0; i < bytes; i++)
        w[i] = (uint8_t)rnd_u32();
    const size_t bs = tensor_type_size(t);
    for (size_t o = 0; o < bytes; o += bs) {
        const uint16_t h =
            tensor_fp32_to_fp16((rnd_u32() & 1 ? -1.0f : 1.0f) * (float)(1 + rnd_u32() % 4096) / 65536.0f);
        memcpy(w + o, &h, 2);
        if (t == TENSOR_TYPE_IQ1_M) /* its d: the top nibbles of the four scales */
            quant_iq1m_set_d((block_iq1_m *)(void *)(w + o), h);
    }
}

/* Activations quantized from random floats, some rows with large values. */
static void random_acts(uint8_t *a, int64_t n, int rows, size_t stride)
{
    float *x = malloc((size_t)n * sizeof *x);
    for (int r = 0; r < rows; r++) {
        for (int64_t i = 0; i < n; i++)
            x[i] = ((float)(rnd_u32() % 20001) / 10000.0f - 1.0f) * (float)(1 + (r % 3) * 40);
        tensor_quantize_row(TENSOR_TYPE_Q8_K, x, a + stride * (size_t)r, n);
    }
    free(x);
}

typedef float (*dot_fn)(int64_t n, const void *w, const void *act);

static dot_fn x86order(enum tensor_type t)
{
    switch (t) {
    case TENSOR_TYPE_IQ4_XS:
        return quant_dot_iq4_xs_x86order;
    case TENSOR_TYPE_IQ2_XXS:
        return quant_dot_iq2_xxs_x86order;
    case TENSOR_TYPE_IQ2_XS:
        return quant_dot_iq2_xs_x86order;
    case TENSOR_TYPE_IQ2_S:
        return quant_dot_iq2_s_x86order;
    case TENSOR_TYPE_IQ3_S:
        return quant_dot_iq3_s_x86order;
    case TENSOR_TYPE_IQ3_XXS:
        return quant_dot_iq3_xxs_x86order;
    case TENSOR_TYPE_IQ1_M:
        return quant_dot_iq1_m_x86order;
    default:
        return NULL;
    }
}

static const enum tensor_type types[] = {TENSOR_TYPE_IQ4_XS, TENSOR_TYPE_IQ2_XXS, TENSOR_TYPE_IQ2_XS,
                                         TENSOR_TYPE_IQ2_S, TENSOR_TYPE_IQ3_S, TENSOR_TYPE_IQ3_XXS,
                                         TENSOR_TYPE_IQ1_M};

/* The IQ1 GEMM is in AVX-512 VNNI and AVX2 builds: others leave those
 * batches to the vec_dot tiles (gemm_iq_applies false), which the tests
 * check. */
static bool absent_here(enum tensor_type t)
{
    if (gemm_iq_supports(t))
        return false;
    assert_true(t == TENSOR_TYPE_IQ1_M);
    const gguf_tensor w = weight(t, NULL, QK_K, 8);
    assert_false(gemm_iq_applies(&w, 512));
    return true;
}

/* Activations at full scale with the signs of row c % rows's weights
 * (token c's even super-blocks) or the opposite ones (odd), so that its
 * 4-value lane sums against that row reach +-127 x 4 x the type's largest
 * magnitude: the packed-scale panel's int16 bound (gemm_iq.c). */
static void extreme_acts(enum tensor_type t, const uint8_t *w, size_t rs, int64_t rows, uint8_t *a, int64_t n,
                         int nt, size_t stride)
{
    float *x = malloc((size_t)n * sizeof *x), *wf = malloc((size_t)n * sizeof *wf);
    for (int c = 0; c < nt; c++) {
        tensor_dequantize_row(t, w + rs * (size_t)(c % rows), wf, n);
        for (int64_t i = 0; i < n; i++)
            x[i] = ((wf[i] > 0) == ((i / QK_K) % 2 == 0) ? 1.0f : -1.0f) * (float)(1 + c % 3);
        tensor_quantize_row(TENSOR_TYPE_Q8_K, x, a + stride * (size_t)c, n);
    }
    free(x);
    free(wf);
}

/* Where the threads of a matmul share the GEMM's prepared tokens
 * (gemm_iq_tok_bytes, as forward_matmul does): the same bits from them, in
 * both row ranges. And the GEMM reads them, not act: with the first and
 * last tokens swapped in act, the prepared tokens still give the same
 * outputs (their bytes and their d), where act alone gives others. */
static void check_shared_tokens(const gguf_tensor *wt, int64_t n, int64_t rows, const uint8_t *a, size_t as, int nt,
                                int64_t cut, const float *want)
{
    const size_t tb = gemm_iq_tok_bytes(wt, nt);
    if (tb == 0)
        return;
    assert_true(tb <= gemm_iq_tok_bytes_max(n));
    uint8_t *tok = malloc(tb * (size_t)nt), *a2 = malloc(as * (size_t)nt);
    float *out = malloc(sizeof(float) * (size_t)(rows * nt));
    gemm_iq_prep_tokens(wt, a, as, nt, tok);
    memcpy(a2, a, as * (size_t)nt);
    if (nt > 1) {
        block_q8_K *y0 = (block_q8_K *)(void *)a2, *y1 = (block_q8_K *)(void *)(a2 + as * (size_t)(nt - 1));
        for (int64_t i = 0; i < n / QK_K; i++) {
            const block_q8_K b = y0[i];
            y0[i] = y1[i];
            y1[i] = b;
        }
    }
    for (int swapped = 0; swapped < 2 && (!swapped || nt > 1); swapped++) {
        const uint8_t *act = swapped ? a2 : a;
        gemm_iq_matmul(wt, n, 0, cut, act, as, tok, nt, out, rows);
        gemm_iq_matmul(wt, n, cut, rows, act, as, tok, nt, out, rows);
        for (int c = 0; c < nt; c++)
            for (int64_t r = 0; r < rows; r++)
                if (f2u(out[c * rows + r]) != f2u(want[c * rows + r]))
                    fail_msg("type %d shared tokens%s: [%d][%lld] %.9g, want %.9g", (int)wt->type,
                             swapped ? " (act's first and last swapped)" : "", c, (long long)r,
                             (double)out[c * rows + r], (double)want[c * rows + r]);
    }
    if (nt > 1) { /* the swap is visible to a GEMM that reads act */
        gemm_iq_matmul(wt, n, 0, rows, a2, as, NULL, nt, out, rows);
        bool differs = false;
        for (int64_t r = 0; r < rows; r++)
            differs = differs || f2u(out[r]) != f2u(want[r]);
        assert_true(differs);
    }
    free(tok);
    free(a2);
    free(out);
}

/* One case: rows x n weights against nt tokens, computed in two row ranges
 * split at cut, into an output with stride ostride > rows; extreme: the
 * activations from extreme_acts. */
static void check_case_acts(enum tensor_type t, int64_t n, int64_t rows, int nt, int64_t cut, bool extreme)
{
    if (absent_here(t))
        return;
    const size_t rs = tensor_row_size(t, n), as = tensor_row_size(TENSOR_TYPE_Q8_K, n) + 8;
    const int64_t ostride = rows + 3;
    uint8_t *w = malloc(rs * (size_t)rows), *a = malloc(as * (size_t)nt);
    float *out = malloc(sizeof(float) * (size_t)(ostride * nt)), *want = malloc(sizeof(float) * (size_t)(rows * nt));
    random_weights(t, w, rs * (size_t)rows);
    if (extreme)
        extreme_acts(t, w, rs, rows, a, n, nt, as);
    else
        random_acts(a, n, nt, as);
    for (int64_t i = 0; i < ostride * nt; i++)
        out[i] = -1e30f;
    const gguf_tensor wt = weight(t, w, n, rows);
    assert_true(gemm_iq_supports(t));
    gemm_iq_matmul(&wt, n, 0, cut, a, as, NULL, nt, out, ostride);
    gemm_iq_matmul(&wt, n, cut, rows, a, as, NULL, nt, out, ostride);
    for (int c = 0; c < nt; c++)
        for (int64_t r = 0; r < rows; r++) {
            const void *wr = w + rs * (size_t)r, *ar = a + as * (size_t)c;
            const float x = x86order(t)(n, wr, ar), v = tensor_vec_dot(t, n, wr, ar);
            want[c * rows + r] = x;
            if (f2u(out[c * ostride + r]) != f2u(x) || f2u(v) != f2u(x))
                fail_msg("type %d n=%lld rows=%lld nt=%d cut=%lld [%d][%lld]: gemm %.9g, vec_dot %.9g, x86 order %.9g",
                         (int)t, (long long)n, (long long)rows, nt, (long long)cut, c, (long long)r,
                         (double)out[c * ostride + r], (double)v, (double)x);
        }
    /* the padding between rows untouched */
    for (int c = 0; c < nt; c++)
        for (int64_t r = rows; r < ostride; r++)
            assert_true(out[c * ostride + r] == -1e30f);
    /* neighbours differ, so a swapped row or token cannot pass */
    for (int c = 0; c < nt; c++)
        for (int64_t r = 0; r < rows; r++) {
            if (r + 1 < rows)
                assert_true(f2u(want[c * rows + r]) != f2u(want[c * rows + r + 1]));
            if (c + 1 < nt)
                assert_true(f2u(want[c * rows + r]) != f2u(want[(c + 1) * rows + r]));
        }
    check_shared_tokens(&wt, n, rows, a, as, nt, cut, want);
    free(w);
    free(a);
    free(out);
    free(want);
}

static void check_case(enum tensor_type t, int64_t n, int64_t rows, int nt, int64_t cut)
{
    check_case_acts(t, n, rows, nt, cut, false);
}

/* The lanes' int16 bound (IQ2 and IQ3 types: 4 x 127 x 43, 15, 62) reached
 * in the asm tiles (16 tokens: two full tiles) and the C ones (13). */
static void test_extremes(void **state)
{
    (void)state;
    for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
        check_case_acts(types[ti], QK_K * 2, 8, 16, 4, true);
        check_case_acts(types[ti], QK_K * 3, 7, 13, 3, true);
    }
}

static void test_random_shapes(void **state)
{
    (void)state;
    static const int64_t rowss[] = {1, 3, 4, 5, 8, 11, 17};
    static const int nts[] = {1, 2, 3, 4, 5, 7, 8, 9, 13};
    for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++)
        for (int rep = 0; rep < 21; rep++) {
            const int64_t n = QK_K * (1 + rep % 4);
            const int64_t rows = rowss[rep % 7];
            const int nt = nts[(rep * 5 + (int)ti) % 9];
            const int64_t cut = rows > 1 ? 1 + rep % (rows - 1) : 1;
            check_case(types[ti], n, rows, nt, cut);
        }
}

/* The AVX-512 tiles: 2 row pairs x 8 tokens in one asm loop per
 * super-block when the tokens are evenly spaced (full tiles), 2 pairs x 6
 * likewise, the C tiles for every other shape (a last tile of 1-7 tokens,
 * repeated to 8, or of 1-3 rows). Token counts of full tiles, full tiles
 * plus each remainder, and odd row counts, for every type. */
static void test_tiles(void **state)
{
    (void)state;
    static const int nts[] = {8, 14, 16, 17, 22, 23, 30};
    static const int64_t rowss[] = {4, 7, 8, 9, 13};
    for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++)
        for (int k = 0; k < 7; k++) {
            const int64_t rows = rowss[(k + (int)ti) % 5];
            check_case(types[ti], QK_K * (1 + k % 3), rows, nts[k], rows > 4 ? 4 + k % 2 : 1);
        }
}

/* Wider rows than one panel holds (several panels and token blocks per
 * call), a batch past the GEMM threshold as forward_matmul gives it, and
 * one too big for a single pass. */
static void test_panels(void **state)
{
    (void)state;
    for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
        const int min = gemm_iq_min_tok(types[ti]);
        check_case(types[ti], QK_K * 23, 70, min + 3, 33);
        if (absent_here(types[ti]))
            continue;
        const gguf_tensor w = weight(types[ti], NULL, QK_K, 8);
#if defined(QUANT_HAVE_AVX2)
        assert_true(gemm_iq_applies(&w, min));
#endif
        assert_false(gemm_iq_applies(&w, min - 1));
    }
    /* more tokens than one pass of widened activations holds (6 MB) */
    check_case(TENSOR_TYPE_IQ4_XS, QK_K * 64, 5, 200, 2);
    check_case(TENSOR_TYPE_IQ1_M, QK_K * 96, 5, 200, 2); /* 6 MB / (96 x 384 bytes): 170 tokens a pass */
    const gguf_tensor q = weight(TENSOR_TYPE_Q4_K, NULL, QK_K, 8);
    assert_false(gemm_iq_applies(&q, 64));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_random_shapes),
        cmocka_unit_test(test_tiles),
        cmocka_unit_test(test_panels),
        cmocka_unit_test(test_extremes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
