/* The MoE expert kernels' batches against their one-token order: ggml's
 * repacked mul_mat_id runs gemv a token at a time, so refk_matmul_gemv
 * must give every (row, token) the bits of refk_matmul on that token
 * alone, for any row range and token count. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf.h"
#include "gguf/tensor.h"
#include "kernels/forward_repack.h"
#include "kernels/gemm_kq4v.h"
#include "kernels/quant_iq4.h"
#include "kernels/quant_internal.h"
#include "model/forward_internal.h"
#include "testutil.h"

static uint64_t rng_state = 0x4D6F454B65726Eull;
static uint32_t rnd_u32(void) { return (uint32_t)(test_xorshift64(&rng_state) >> 16); }
static float rnd_uniform(void) { return (float)rnd_u32() / 4294967296.0f * 2.0f - 1.0f; }

/* gemm: the batch through gemm_kq4v_rows (Q4_K), not refk_matmul_gemv.
 * Up to 12 super-blocks: the GEMM's float chains wait between slices of 8. */
static void check_type(enum tensor_type type, size_t block_size, bool gemm)
{
    enum { RMAX = 24, TMAX = 40, NBMAX = 12 };
    const size_t wbytes = block_size * NBMAX * RMAX;
    uint8_t *w = malloc(wbytes);
    const size_t as = tensor_row_size(TENSOR_TYPE_Q8_K, NBMAX * QK_K);
    uint8_t *act = malloc(as * TMAX);
    float *got = malloc(sizeof(float) * TMAX * RMAX), *want = malloc(sizeof(float) * TMAX * RMAX);
    float x[NBMAX * QK_K];
    for (int rep = 0; rep < 40; rep++) {
        const int64_t nb = 1 + (int64_t)(rnd_u32() % NBMAX), n = nb * QK_K;
        const int rows = 8 * (1 + (int)(rnd_u32() % (RMAX / 8)));
        const int n_tok = 1 + (int)(rnd_u32() % (gemm ? TMAX : 11));
        const int r0 = (int)(rnd_u32() % (unsigned)rows), r1 = r0 + 1 + (int)(rnd_u32() % (unsigned)(rows - r0));
        for (size_t i = 0; i < wbytes; i++)
            w[i] = (uint8_t)rnd_u32(); /* every quant, scale and min */
        for (int b = 0; b < rows * nb; b++) { /* finite d and dmin (Q4_K: bytes 0-3, Q2_K: 80-83) */
            uint16_t *dd = (uint16_t *)(void *)(w + (size_t)b * block_size + (type == TENSOR_TYPE_Q2_K ? 80 : 0));
            dd[0] = tensor_fp32_to_fp16(0.01f + 0.02f * (rnd_uniform() + 1.0f));
            dd[1] = tensor_fp32_to_fp16(0.01f + 0.02f * (rnd_uniform() + 1.0f));
        }
        for (int t = 0; t < n_tok; t++) {
            const float scale = t % 5 == 4 ? 100.0f : 1.0f + (float)t;
            for (int64_t i = 0; i < n; i++)
                x[i] = rnd_uniform() * scale;
            /* rows at the stride the kernels are given: written at the
             * buffer's widest stride, tokens 1.. were read from bytes never
             * written (whose bsums can overflow what a real Q8_K row holds) */
            tensor_quantize_row(TENSOR_TYPE_Q8_K, x, act + (size_t)t * tensor_row_size(TENSOR_TYPE_Q8_K, n), n);
        }
        gguf_tensor wt = {.name = "w", .n_dims = 2, .ne = {n, rows, 1, 1}, .type = type, .data = w};
        assert_true(refk_applies(&wt));
        const size_t stride = tensor_row_size(TENSOR_TYPE_Q8_K, n);
        for (int i = 0; i < TMAX * RMAX; i++)
            got[i] = want[i] = -1.0f;
        if (!gemm)
            refk_matmul_gemv(&wt, n, r0, r1, act, stride, n_tok, got, rows);
        else
            assert_true(gemm_kq4v_rows(n, w, tensor_row_size(type, n), r0, r1, act, stride, n_tok, got, rows));
        for (int t = 0; t < n_tok; t++)
            refk_matmul(&wt, n, r0, r1, act + (size_t)t * stride, stride, 1, want + t * rows, rows);
        for (int t = 0; t < n_tok; t++)
            for (int r = 0; r < rows; r++)
                if (f2u(got[t * rows + r]) != f2u(want[t * rows + r]))
                    fail_msg("%s%s n=%lld rows [%d,%d), %d tokens: (%d,%d) %.9g, one token at a time %.9g",
                             tensor_type_name(type), gemm ? " gemm" : "", (long long)n, r0, r1, n_tok, r, t, (double)got[t * rows + r],
                             (double)want[t * rows + r]);
    }
    free(w);
    free(act);
    free(got);
    free(want);
}

static void test_q4_K_gemv_batch(void **state)
{
    (void)state;
    check_type(TENSOR_TYPE_Q4_K, sizeof(block_q4_K), false);
}

/* The Q4_K gemv-order GEMM (where this build has it) against the gemv a
 * token at a time: every bit, any row range, token count and length. */
static void test_q4_K_gemv_gemm(void **state)
{
    (void)state;
#ifdef GEMM_KQ4V
    check_type(TENSOR_TYPE_Q4_K, sizeof(block_q4_K), true);
#else
    skip();
#endif
}

static void test_q2_K_gemv_batch(void **state)
{
    (void)state;
    check_type(TENSOR_TYPE_Q2_K, sizeof(block_q2_K), false);
}

/* moe_expert_matmul on a batch, each type's path (repacked Q4_0 and MXFP4
 * tiles, Q4_K gemv tiles with a padded last group, the vec_dot tiles with
 * a padded group of 2-3 tokens, the matvec, the Q4_K gemv-order GEMM from
 * GEMM_KQ4V_MIN_TOK tokens (2 on AVX-512 VNNI, 5 on AVX2), and from 16 tokens on the Q6_K, Q5_K and
 * IQ4_XS integer GEMMs), against each token run alone: the same bits, rows
 * outside [lo, hi) untouched. */
static void test_expert_batch_equals_alone(void **state)
{
    (void)state;
    const enum tensor_type types[] = {TENSOR_TYPE_Q8_0, TENSOR_TYPE_Q6_K, TENSOR_TYPE_Q4_K, TENSOR_TYPE_Q4_0,
                                      TENSOR_TYPE_MXFP4, TENSOR_TYPE_Q5_K, TENSOR_TYPE_IQ4_XS};
    enum { N = 512, TFEW = 11, TMAX = 40, NX = 2 };
    for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++)
        for (int shape = 0; shape < 2; shape++) {
            const enum tensor_type type = types[ti];
            const int64_t rows = shape ? 24 : 12; /* 12: not a multiple of 8, never repacked */
            const size_t rb = tensor_row_size(type, N);
            uint8_t *wd = malloc(rb * (size_t)(rows * NX));
            float x[N];
            for (int64_t r = 0; r < rows * NX; r++) {
                for (int i = 0; i < N; i++)
                    x[i] = rnd_uniform();
                tensor_quantize_row(type, x, wd + (size_t)r * rb, N);
            }
            if (type == TENSOR_TYPE_IQ4_XS) /* no quantizer here: random blocks, d (bytes 0-1) finite */
                for (size_t b = 0; b < rb / sizeof(block_iq4_xs) * (size_t)(rows * NX); b++) {
                    block_iq4_xs *blk = (block_iq4_xs *)(void *)wd + b;
                    for (size_t i = 0; i < sizeof *blk; i++)
                        ((uint8_t *)blk)[i] = (uint8_t)rnd_u32();
                    blk->d = tensor_fp32_to_fp16(0.01f + 0.02f * (rnd_uniform() + 1.0f));
                }
            gguf_tensor w = {.name = "exps", .n_dims = 3, .ne = {N, rows, NX, 1}, .type = type, .data = wd};
            w.nbytes = rb * (size_t)(rows * NX);
            w.n_elements = (int64_t)N * rows * NX;
            const enum tensor_type dot = tensor_dot_type(type);
            const size_t as = tensor_row_size(dot, N);
            uint8_t *act = malloc(as * TMAX);
            float *got = malloc(sizeof(float) * TMAX * rows), *want = malloc(sizeof(float) * TMAX * rows);
            for (int rep = 0; rep < 12; rep++) {
                /* half the batches few tokens, half a prompt's expert share */
                const int n_tok = rep % 2 ? 1 + (int)(rnd_u32() % TFEW) : 16 + (int)(rnd_u32() % (TMAX - 15));
                const int e = (int)(rnd_u32() % NX);
                const int64_t lo = shape ? 8 * (int64_t)(rnd_u32() % 2) : (int64_t)(rnd_u32() % 4);
                const int64_t hi = rows - (shape ? 8 * (int64_t)(rnd_u32() % 2) : (int64_t)(rnd_u32() % 4));
                for (int t = 0; t < n_tok; t++) {
                    for (int i = 0; i < N; i++)
                        x[i] = rnd_uniform() * (1.0f + (float)t);
                    tensor_quantize_row(dot, x, act + (size_t)t * as, N);
                }
                for (int64_t i = 0; i < TMAX * rows; i++)
                    got[i] = want[i] = -1.0f;
                moe_expert_matmul(&w, e, lo, hi, act, as, n_tok, got, rows);
                for (int t = 0; t < n_tok; t++)
                    moe_expert_matmul(&w, e, lo, hi, act + (size_t)t * as, as, 1, want + t * rows, rows);
                for (int t = 0; t < n_tok; t++)
                    for (int64_t r = 0; r < rows; r++)
                        if (f2u(got[t * rows + r]) != f2u(want[t * rows + r]))
                            fail_msg("%s %lld rows [%lld,%lld), %d tokens: (%lld,%d) %.9g, alone %.9g",
                                     tensor_type_name(type), (long long)rows, (long long)lo, (long long)hi, n_tok,
                                     (long long)r, t, (double)got[t * rows + r], (double)want[t * rows + r]);
            }
            free(wd);
            free(act);
            free(got);
            free(want);
        }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_q4_K_gemv_batch),
        cmocka_unit_test(test_q4_K_gemv_gemm),
        cmocka_unit_test(test_q2_K_gemv_batch),
        cmocka_unit_test(test_expert_batch_equals_alone),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
