/* The Q6_K integer GEMM (kernels/gemm_kq6.h) against the reference's
 * ggml_vec_dot_q6_K_q8_K (llama.cpp 34af94cd, the AVX2 body its AVX-512
 * build runs), emulated here lane by lane from its source, and against
 * tensor_vec_dot: every output bit for bit, on random weights (random
 * scales of both signs, -128 included) and Q8_K activations (quantized
 * floats, and raw random bytes and bsums that do not match them, as the
 * reference takes the bsums as given), for 1..70 tokens, odd row counts,
 * row ranges cut mid-pair, widths over several slices and panels, token
 * blocks, and an output stride wider than the rows. Neighbouring rows and
 * tokens give different outputs (checked), so an exchanged row or token
 * fails. */
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
#include "kernels/gemm_kq6.h"
#include "kernels/quant_internal.h"
#include "testutil.h"

static uint64_t rng_state = 0x6b71365f67656d6dull;
static uint32_t rnd_u32(void)
{
    return (uint32_t)(test_xorshift64(&rng_state) >> 16);
}

static uint32_t f2u(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

/* The reference's AVX2 body: per super-block 8 int32 lanes, lane k = the
 * sums of sc * q * y over bytes 4k..4k+3 of each 32-value chunk (q 0..63)
 * less (sc[2k] bsum[2k] + sc[2k+1] bsum[2k+1]) << 5; acc[k] = fma(y.d *
 * x.d, lane k, acc[k]); hsum_float_8 (upper half plus lower, then movehl,
 * then the odd lane). */
static float ref_dot_q6_K(int64_t n, const void *w, const void *act)
{
    const block_q6_K *x = w;
    const block_q8_K *y = act;
    float acc[8] = {0};
    for (int64_t i = 0; i < n / QK_K; i++) {
        const float d = y[i].d * quant_fp16_to_fp32_soft(x[i].d);
        int32_t lane[8] = {0};
        for (int j = 0; j < 2; j++)
            for (int l = 0; l < 32; l++) {
                const uint8_t *ql = x[i].ql + 64 * j, *qh = x[i].qh + 32 * j;
                const int q[4] = {(ql[l] & 0xF) | ((qh[l] & 3) << 4), (ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4),
                                  (ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4), (ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)};
                for (int m = 0; m < 4; m++) {
                    const int e = 128 * j + 32 * m + l;
                    lane[l % 32 / 4] += x[i].scales[e / 16] * q[m] * y[i].qs[e];
                }
            }
        for (int k = 0; k < 8; k++) {
            lane[k] -= (x[i].scales[2 * k] * y[i].bsums[2 * k] + x[i].scales[2 * k + 1] * y[i].bsums[2 * k + 1]) * 32;
            acc[k] = fmaf(d, (float)lane[k], acc[k]);
        }
    }
    float r[4];
    for (int k = 0; k < 4; k++)
        r[k] = acc[k + 4] + acc[k];
    return (r[0] + r[2]) + (r[1] + r[3]);
}

/* Random bytes, each block's fp16 d a random scale of either sign. */
static void random_weights(uint8_t *w, size_t bytes)
{
    for (size_t i = 0; i < bytes; i++)
        w[i] = (uint8_t)rnd_u32();
    for (size_t o = 0; o < bytes; o += sizeof(block_q6_K)) {
        const uint16_t h =
            tensor_fp32_to_fp16((rnd_u32() & 1 ? -1.0f : 1.0f) * (float)(1 + rnd_u32() % 4096) / 65536.0f);
        memcpy(w + o + offsetof(block_q6_K, d), &h, 2);
    }
}

/* Activations quantized from random floats; every third token raw random
 * bytes (-128 too) and bsums of its own. */
static void random_acts(uint8_t *a, int64_t n, int rows, size_t stride)
{
    float *x = malloc((size_t)n * sizeof *x);
    for (int r = 0; r < rows; r++) {
        for (int64_t i = 0; i < n; i++)
            x[i] = ((float)(rnd_u32() % 20001) / 10000.0f - 1.0f) * (float)(1 + (r % 5) * 40);
        tensor_quantize_row(TENSOR_TYPE_Q8_K, x, a + stride * (size_t)r, n);
        if (r % 3 == 2)
            for (int64_t b = 0; b < n / QK_K; b++) {
                block_q8_K *y = (block_q8_K *)(void *)(a + stride * (size_t)r) + b;
                for (int e = 0; e < QK_K; e++)
                    y->qs[e] = (int8_t)rnd_u32();
                for (int g = 0; g < 16; g++)
                    y->bsums[g] = (int16_t)((int)(rnd_u32() % 4097) - 2048);
            }
    }
    free(x);
}

/* rows x n weights against 1..max_nt tokens (each count in turn), computed
 * in two row ranges split at cut, into an output of stride rows + 3. */
static void check_case(int64_t n, int64_t rows, int max_nt, int64_t cut)
{
    const size_t rs = tensor_row_size(TENSOR_TYPE_Q6_K, n), as = tensor_row_size(TENSOR_TYPE_Q8_K, n) + 8;
    const int64_t ostride = rows + 3;
    uint8_t *w = malloc(rs * (size_t)rows), *a = malloc(as * (size_t)max_nt);
    float *out = malloc(sizeof(float) * (size_t)(ostride * max_nt)), *want = malloc(sizeof(float) * (size_t)(rows * max_nt));
    random_weights(w, rs * (size_t)rows);
    random_acts(a, n, max_nt, as);
    for (int c = 0; c < max_nt; c++)
        for (int64_t r = 0; r < rows; r++) {
            const void *wr = w + rs * (size_t)r, *ar = a + as * (size_t)c;
            const float x = ref_dot_q6_K(n, wr, ar), v = tensor_vec_dot(TENSOR_TYPE_Q6_K, n, wr, ar);
            if (f2u(v) != f2u(x))
                fail_msg("n=%lld [%d][%lld]: vec_dot %.9g, reference %.9g", (long long)n, c, (long long)r, (double)v,
                         (double)x);
            want[c * rows + r] = x;
        }
    /* neighbours differ, so a swapped row or token cannot pass */
    for (int c = 0; c < max_nt; c++)
        for (int64_t r = 0; r < rows; r++) {
            if (r + 1 < rows)
                assert_true(f2u(want[c * rows + r]) != f2u(want[c * rows + r + 1]));
            if (c + 1 < max_nt)
                assert_true(f2u(want[c * rows + r]) != f2u(want[(c + 1) * rows + r]));
        }
    for (int nt = max_nt > 70 ? max_nt : 1; nt <= max_nt; nt++) {
        for (int64_t i = 0; i < ostride * max_nt; i++)
            out[i] = -1e30f;
        gemm_kq6_rows(n, w, rs, 0, cut, a, as, nt, out, ostride);
        gemm_kq6_rows(n, w, rs, cut, rows, a, as, nt, out, ostride);
        for (int c = 0; c < max_nt; c++)
            for (int64_t r = 0; r < ostride; r++) {
                const float got = out[c * ostride + r];
                if (c >= nt || r >= rows) { /* the padding and later tokens untouched */
                    if (got != -1e30f)
                        fail_msg("n=%lld rows=%lld nt=%d: wrote [%d][%lld]", (long long)n, (long long)rows, nt, c,
                                 (long long)r);
                } else if (f2u(got) != f2u(want[c * rows + r])) {
                    fail_msg("n=%lld rows=%lld nt=%d cut=%lld [%d][%lld]: gemm %.9g, reference %.9g", (long long)n,
                             (long long)rows, nt, (long long)cut, c, (long long)r, (double)got,
                             (double)want[c * rows + r]);
                }
            }
    }
    free(w);
    free(a);
    free(out);
    free(want);
}

/* 1..70 tokens against odd and even row counts, cut anywhere, widths of
 * one to five super-blocks. */
static void test_tokens_rows(void **state)
{
    (void)state;
    static const int64_t rowss[] = {1, 3, 4, 5, 7, 17};
    for (int rep = 0; rep < 6; rep++) {
        const int64_t rows = rowss[rep];
        check_case(QK_K * (1 + rep % 5), rows, 70, rows > 1 ? 1 + (rep * 7) % (rows - 1) : 1);
    }
}

/* Wider rows than one slice (KC super-blocks) and one panel hold, several
 * token blocks per call, a row range starting on an odd row. */
static void test_panels(void **state)
{
    (void)state;
    check_case(QK_K * 23, 37, 21, 13);
    check_case(QK_K * 22, 9, 250, 3);
    /* dispatch: Q6_K batches of GEMM_KQ6_MIN_TOK tokens and more */
    gguf_tensor wt;
    memset(&wt, 0, sizeof wt);
    wt.type = TENSOR_TYPE_Q6_K;
#ifdef GEMM_KQ6
    assert_true(gemm_kq6_applies(&wt, GEMM_KQ6_MIN_TOK));
#endif
    assert_false(gemm_kq6_applies(&wt, GEMM_KQ6_MIN_TOK - 1));
    wt.type = TENSOR_TYPE_Q5_K;
    assert_false(gemm_kq6_applies(&wt, 512));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tokens_rows),
        cmocka_unit_test(test_panels),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
