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

#define KQ_SEED 0x6b71365f67656d6dull
#include "gemm_kq_check.h"

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

static const struct kq_type kq = {
    .type = TENSOR_TYPE_Q6_K,
    .block_bytes = sizeof(block_q6_K),
    .d_off = {offsetof(block_q6_K, d)},
    .n_d = 1,
    .ref = ref_dot_q6_K,
    .gemm = gemm_kq6_rows,
    .applies = gemm_kq6_applies,
    .min_tok = GEMM_KQ6_MIN_TOK,
#ifdef GEMM_KQ6
    .built = true,
#endif
    .other = TENSOR_TYPE_Q5_K,
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
