/* The Q5_K integer GEMM (kernels/gemm_kq5.h) against the reference's
 * ggml_vec_dot_q5_K_q8_K (llama.cpp 34af94cd, the AVX2 body its AVX-512
 * build runs), emulated here lane by lane from its source, and against
 * tensor_vec_dot: every output bit for bit, on random weights (random
 * scales and mins up to 63, d and dmin of both signs) and Q8_K activations
 * (quantized floats, and raw random bytes and bsums that do not match
 * them, as the reference takes the bsums as given), for 1..70 tokens, odd
 * row counts, row ranges cut mid-pair, widths over several slices and
 * panels, token blocks, and an output stride wider than the rows.
 * Neighbouring rows and tokens give different outputs (checked), so an
 * exchanged row or token fails. */
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
#include "kernels/gemm_kq5.h"
#include "kernels/quant_internal.h"
#include "testutil.h"

#define KQ_SEED 0x6b71355f67656d6dull
#include "gemm_kq_check.h"

/* The reference's AVX2 body: per super-block 8 int32 lanes, lane k = the
 * sums over the eight 32-value chunks j of sc[j] * (q * y over bytes
 * 4k..4k+3 of the chunk) (q 0..31: maddubs pairs, madd with the scale);
 * acc[k] = fma(y.d * x.d, lane k, acc[k]); beside them the mins' integer
 * (hadd of the bsums in int16, madd with the mins, hadd) into summs =
 * fma(-y.d * x.dmin, total, summs); hsum_float_8 (upper half plus lower,
 * then movehl, then the odd lane) + summs. */
static float ref_dot_q5_K(int64_t n, const void *w, const void *act)
{
    const block_q5_K *x = w;
    const block_q8_K *y = act;
    float acc[8] = {0}, summs = 0.0f;
    for (int64_t i = 0; i < n / QK_K; i++) {
        const float d = y[i].d * quant_fp16_to_fp32_soft(x[i].d);
        const float dmin = -y[i].d * quant_fp16_to_fp32_soft(x[i].dmin);
        uint8_t sc[8], mn[8];
        for (int j = 0; j < 8; j++)
            quant_scale_min_k4(j, x[i].scales, &sc[j], &mn[j]);
        int32_t total = 0;
        for (int j = 0; j < 8; j++)
            total += mn[j] * (int16_t)(y[i].bsums[2 * j] + y[i].bsums[2 * j + 1]);
        summs = fmaf(dmin, (float)total, summs);
        int32_t lane[8] = {0};
        for (int j = 0; j < 8; j++)
            for (int l = 0; l < 32; l++) {
                const int q =
                    ((x[i].qs[32 * (j / 2) + l] >> (4 * (j % 2))) & 0xF) | (((x[i].qh[l] >> j) & 1) << 4);
                lane[l / 4] += sc[j] * q * y[i].qs[32 * j + l];
            }
        for (int k = 0; k < 8; k++)
            acc[k] = fmaf(d, (float)lane[k], acc[k]);
    }
    float r[4];
    for (int k = 0; k < 4; k++)
        r[k] = acc[k + 4] + acc[k];
    return (r[0] + r[2]) + (r[1] + r[3]) + summs;
}

static const struct kq_type kq = {
    .type = TENSOR_TYPE_Q5_K,
    .block_bytes = sizeof(block_q5_K),
    .d_off = {offsetof(block_q5_K, d), offsetof(block_q5_K, dmin)},
    .n_d = 2,
    .ref = ref_dot_q5_K,
    .gemm = gemm_kq5_rows,
    .applies = gemm_kq5_applies,
    .min_tok = GEMM_KQ5_MIN_TOK,
#ifdef GEMM_KQ5
    .built = true,
#endif
    .other = TENSOR_TYPE_Q6_K,
};

static void test_tokens_rows(void **state)
{
    (void)state;
    check_tokens_rows(&kq);
}

static void test_panels(void **state)
{
    (void)state;
    check_panels(&kq);
    check_applies(&kq);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tokens_rows),
        cmocka_unit_test(test_panels),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
