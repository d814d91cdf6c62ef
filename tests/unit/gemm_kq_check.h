/* What the K-quant GEMM tests share (test_gemm_kq5.c, test_gemm_kq6.c):
 * random weights and Q8_K activations (quantized floats, and every third
 * token raw random bytes, -128 too, with bsums of their own, as the
 * reference takes the bsums as given), and check_case, which compares the
 * GEMM with the test's emulation of the reference and with tensor_vec_dot
 * bit for bit, over every token count up to max_nt, a row range cut in two,
 * and an output stride wider than the rows. Neighbouring rows and tokens
 * must give different outputs (checked), so an exchanged row or token
 * fails. Include after <cmocka.h> and testutil.h, with KQ_SEED defined. */
#ifndef TOKSCOPE_GEMM_KQ_CHECK_H
#define TOKSCOPE_GEMM_KQ_CHECK_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/tensor.h"
#include "kernels/quant_internal.h"

struct kq_type {
    enum tensor_type type;
    size_t block_bytes;
    size_t d_off[2]; /* the fp16 scales in a block */
    int n_d;
    float (*ref)(int64_t n, const void *w, const void *act); /* the reference's vec_dot, emulated */
    void (*gemm)(int64_t n, const void *w, size_t rs, int64_t r0, int64_t r1, const void *act,
                 size_t act_stride, int n_tok, float *out, int64_t out_stride);
    bool (*applies)(const gguf_tensor *w, int n_tok);
    int min_tok;                /* the GEMM's threshold */
    bool built;                 /* this build has the GEMM */
    enum tensor_type other;     /* a type it must not take */
};

static uint64_t rng_state = KQ_SEED;
static uint32_t rnd_u32(void)
{
    return (uint32_t)(test_xorshift64(&rng_state) >> 16);
}

/* Random bytes, each block's fp16 scales (d, dmin) random of either sign. */
static void random_weights(const struct kq_type *k, uint8_t *w, size_t bytes)
{
    for (size_t i = 0; i < bytes; i++)
        w[i] = (uint8_t)rnd_u32();
    for (size_t o = 0; o < bytes; o += k->block_bytes)
        for (int j = 0; j < k->n_d; j++) {
            const uint16_t h = tensor_fp32_to_fp16((rnd_u32() & 1 ? -1.0f : 1.0f) *
                                                   (float)(1 + rnd_u32() % 4096) / 65536.0f);
            memcpy(w + o + k->d_off[j], &h, 2);
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
static void check_case(const struct kq_type *k, int64_t n, int64_t rows, int max_nt, int64_t cut)
{
    const size_t rs = tensor_row_size(k->type, n), as = tensor_row_size(TENSOR_TYPE_Q8_K, n) + 8;
    const int64_t ostride = rows + 3;
    uint8_t *w = malloc(rs * (size_t)rows), *a = malloc(as * (size_t)max_nt);
    float *out = malloc(sizeof(float) * (size_t)(ostride * max_nt)),
          *want = malloc(sizeof(float) * (size_t)(rows * max_nt));
    random_weights(k, w, rs * (size_t)rows);
    random_acts(a, n, max_nt, as);
    for (int c = 0; c < max_nt; c++)
        for (int64_t r = 0; r < rows; r++) {
            const void *wr = w + rs * (size_t)r, *ar = a + as * (size_t)c;
            const float x = k->ref(n, wr, ar), v = tensor_vec_dot(k->type, n, wr, ar);
            if (f2u(v) != f2u(x))
                fail_msg("n=%lld [%d][%lld]: vec_dot %.9g, reference %.9g", (long long)n, c, (long long)r,
                         (double)v, (double)x);
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
        k->gemm(n, w, rs, 0, cut, a, as, nt, out, ostride);
        k->gemm(n, w, rs, cut, rows, a, as, nt, out, ostride);
        for (int c = 0; c < max_nt; c++)
            for (int64_t r = 0; r < ostride; r++) {
                const float got = out[c * ostride + r];
                if (c >= nt || r >= rows) { /* the padding and later tokens untouched */
                    if (got != -1e30f)
                        fail_msg("n=%lld rows=%lld nt=%d: wrote [%d][%lld]", (long long)n, (long long)rows,
                                 nt, c, (long long)r);
                } else if (f2u(got) != f2u(want[c * rows + r])) {
                    fail_msg("n=%lld rows=%lld nt=%d cut=%lld [%d][%lld]: gemm %.9g, reference %.9g",
                             (long long)n, (long long)rows, nt, (long long)cut, c, (long long)r, (double)got,
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
static void check_tokens_rows(const struct kq_type *k)
{
    static const int64_t rowss[] = {1, 3, 4, 5, 7, 17};
    for (int rep = 0; rep < 6; rep++) {
        const int64_t rows = rowss[rep];
        check_case(k, QK_K * (1 + rep % 5), rows, 70, rows > 1 ? 1 + (rep * 7) % (rows - 1) : 1);
    }
}

/* Wider rows than one slice (KC super-blocks) and one panel hold, several
 * token blocks per call, a row range starting on an odd row; whole-line
 * output rows. */
static void check_panels(const struct kq_type *k)
{
    check_case(k, QK_K * 23, 37, 21, 13);
    check_case(k, QK_K * 22, 9, 250, 3);
    /* panels of 64 rows: a token's outputs of one are streamed by whole
     * lines with the parts of lines at either end copied (stride 153 and
     * the cut at 67 put them at every offset in a line) */
    check_case(k, QK_K * 2, 150, 24, 67);
}
/* The dispatch: the type's batches of min_tok tokens and more (when the
 * GEMM is built), never fewer, never another type. */
static void check_applies(const struct kq_type *k)
{
    gguf_tensor wt;
    memset(&wt, 0, sizeof wt);
    wt.type = k->type;
    if (k->built)
        assert_true(k->applies(&wt, k->min_tok));
    assert_false(k->applies(&wt, k->min_tok - 1));
    wt.type = k->other;
    assert_false(k->applies(&wt, 512));
}

#endif
