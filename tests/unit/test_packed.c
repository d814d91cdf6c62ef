/* Packed weights (engine/kernels/forward_packed.c) against the kernels they replace
 * (forward_repack.c and repack_mxfp4.c; tensor_matmul for Q8_0), bit for
 * bit: random Q4_0, Q4_K, Q8_0 and MXFP4 tensors covering every quant and
 * 6-bit scale value, row counts that leave part of a group, token counts
 * around the 2-, 4- and 8-token groupings and Q8_0's 64-token tiles, Q8_0
 * rows long enough for its 32-block passes, and row ranges that cut groups. Rows outside the
 * range must stay untouched. Each comparison also checks that the data tell
 * neighbouring rows and tokens apart, so that swapping two would fail. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/forward_packed.h"
#include "kernels/forward_repack.h"
#include "kernels/packed_q6_K.h"
#include "kernels/packed_q8_0.h"
#include "kernels/quant_internal.h"
#include "kernels/quant_batch.h"
#include "gguf/tensor.h"

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint32_t rnd_u32(void) { return (uint32_t)(test_xorshift64(&rng) >> 32); }
static float rnd(void)
{
    return (float)(rnd_u32() >> 8) / (float)(1 << 24) * 2.0f - 1.0f;
}

/* Random block bytes, then sane fp16 scales at the offsets given (the
 * quants and the 6-bit scales take every value). */
static uint8_t *random_weights(enum tensor_type type, int64_t n, int64_t rows, const int *d_off, int n_d)
{
    const size_t bs = tensor_type_size(type), nb = (size_t)(n / tensor_type_block_size(type));
    uint8_t *w = malloc(bs * nb * (size_t)rows);
    for (size_t i = 0; i < bs * nb * (size_t)rows; i++)
        w[i] = (uint8_t)rnd_u32();
    for (size_t b = 0; b < nb * (size_t)rows; b++)
        for (int k = 0; k < n_d; k++) {
            const uint16_t h = tensor_fp32_to_fp16(0.001f + 0.05f * (rnd() + 1.0f));
            memcpy(w + b * bs + d_off[k], &h, 2);
        }
    return w;
}

/* n_tok activation rows in the dot type; every fifth row saturated. */
static uint8_t *random_act(enum tensor_type dot, int64_t n, int n_tok)
{
    const size_t rs = tensor_row_size(dot, n);
    uint8_t *a = malloc(rs * (size_t)n_tok);
    float *x = malloc(sizeof(float) * (size_t)n);
    for (int t = 0; t < n_tok; t++) {
        for (int64_t i = 0; i < n; i++)
            x[i] = t % 5 == 4 ? (i % 2 ? 3.0f : -3.0f) : rnd() * (float)(1 + t);
        tensor_quantize_row(dot, x, a + (size_t)t * rs, n);
    }
    free(x);
    return a;
}

/* Every output bit for bit (want: the reference kernel's, got: the one
 * under test); the first difference named with the case. */
static void expect_same(const float *want, const float *got, int64_t n_out, const char *what, int64_t n,
                        int64_t rows, int n_tok, int64_t r0, int64_t r1)
{
    for (int64_t i = 0; i < n_out; i++)
        if (memcmp(&want[i], &got[i], sizeof(float)) != 0) {
            print_error("%s n=%lld rows=%lld tokens=%d rows [%lld,%lld): out[%lld] %.9g, want %.9g\n", what,
                        (long long)n, (long long)rows, n_tok, (long long)r0, (long long)r1, (long long)i,
                        (double)got[i], (double)want[i]);
            fail();
        }
}

static void check_type(enum tensor_type type, int64_t n, int64_t rows)
{
    const int q4_0_d[1] = {0}, q4_K_d[2] = {0, 2}, q6_K_d[1] = {208};
    const bool k = type == TENSOR_TYPE_Q4_K, q6 = type == TENSOR_TYPE_Q6_K;
    gguf_tensor w;
    memset(&w, 0, sizeof w);
    w.type = (uint32_t)type;
    w.n_dims = 2;
    w.ne[0] = n;
    w.ne[1] = rows;
    w.ne[2] = w.ne[3] = 1;
    w.data = random_weights(type, n, rows, k ? q4_K_d : q6 ? q6_K_d : q4_0_d, type == TENSOR_TYPE_MXFP4 ? 0 : k ? 2 : 1);
    if (type == TENSOR_TYPE_MXFP4) /* scale bytes near 2^0, and now and then the edges */
        for (int64_t b = 0; b < rows * (n / 32); b++) {
            static const uint8_t edge[] = {0, 1, 2, 25, 26, 240, 241};
            uint8_t *e = (uint8_t *)(uintptr_t)w.data + b * 17;
            *e = b % 37 == 5 ? edge[(b / 37) % sizeof edge] : (uint8_t)(117 + rnd_u32() % 20);
        }
    const size_t bytes = packed_bytes(&w);
    uint8_t *pk = NULL;
    if (bytes) {
        pk = aligned_alloc(64, (bytes + 63) & ~(size_t)63);
        memset(pk, 0xA5, bytes); /* packing must write every byte it reads back */
        /* two calls, as two threads would split it */
        packed_build(&w, pk, 0, packed_groups(&w) / 2);
        packed_build(&w, pk, packed_groups(&w) / 2, packed_groups(&w));
    }
    const enum tensor_type dot = tensor_dot_type(type);
    /* 33, 65 and 66: past 32 tokens, and past Q8_0's tile of 64 */
    const int toks[] = {1, 2, 3, 4, 5, 7, 8, 9, 12, 13, 19, 33, 65, 66};
    for (size_t ti = 0; ti < sizeof toks / sizeof toks[0]; ti++) {
        const int n_tok = toks[ti];
        uint8_t *act = random_act(dot, n, n_tok);
        const size_t as = tensor_row_size(dot, n);
        const int64_t ranges[][2] = {{0, rows}, {3, rows - 5}, {8, rows}, {rows - 1, rows}};
        for (size_t ri = 0; ri < sizeof ranges / sizeof ranges[0]; ri++) {
            const int64_t r0 = ranges[ri][0], r1 = ranges[ri][1];
            float *want = malloc(sizeof(float) * (size_t)(rows * n_tok));
            float *got = malloc(sizeof(float) * (size_t)(rows * n_tok));
            for (int64_t i = 0; i < rows * n_tok; i++)
                want[i] = got[i] = -1234.5f;
            if (k)
                refk_matmul(&w, n, r0, r1, act, as, n_tok, want, rows);
            else if (type == TENSOR_TYPE_Q8_0 || q6) /* the vec_dot / tinyBLAS kernels */
                tensor_matmul(type, n, (const uint8_t *)w.data + (size_t)r0 * tensor_row_size(type, n),
                              r1 - r0, act, n_tok, as, want + r0, rows);
            else
                repack_matmul(&w, n, r0, r1, act, as, n_tok, want, rows);
            const size_t eb = packed_act_bytes(&w);
            uint8_t *extra = eb ? aligned_alloc(64, (eb * (size_t)n_tok + 63) & ~(size_t)63) : NULL;
            if (extra)
                packed_act_prepare(&w, act, as, n_tok, extra);
            packed_matmul(&w, pk, r0, r1, act, as, extra, n_tok, got, rows);
            free(extra);
            expect_same(want, got, rows * n_tok, tensor_type_name(type), n, rows, n_tok, r0, r1);
            /* the data tell rows and tokens apart, so a kernel that swapped
             * two of them would fail the comparison above */
            if (r1 - r0 >= 2)
                assert_true(memcmp(&want[r0], &want[r0 + 1], sizeof(float)) != 0);
            if (n_tok >= 2)
                assert_true(memcmp(&want[r0], &want[rows + r0], sizeof(float)) != 0);
            free(want);
            free(got);
        }
        free(act);
    }
    free(pk);
    free((void *)w.data);
}

static void test_q4_0(void **state)
{
    (void)state;
    check_type(TENSOR_TYPE_Q4_0, 64, 24);
    check_type(TENSOR_TYPE_Q4_0, 96, 40); /* an odd number of blocks */
    check_type(TENSOR_TYPE_Q4_0, 256, 64);
    /* AVX2's tokens-in-lanes GEMM (gemm_tlanes.c, from 32 tokens): 40
     * blocks are two slices, the last one short; 200 blocks a row put 40
     * rows in three panels */
    check_type(TENSOR_TYPE_Q4_0, 40 * 32, 40);
    check_type(TENSOR_TYPE_Q4_0, 200 * 32, 40);
}

static void test_q4_K(void **state)
{
    (void)state;
    check_type(TENSOR_TYPE_Q4_K, 256, 24);
    check_type(TENSOR_TYPE_Q4_K, 512, 48);
    /* AVX2's tokens-in-lanes GEMM (gemm_tlanes.c, from 16 tokens): 9
     * super-blocks are three slices, the last one short; 40 super-blocks a
     * row put 40 rows in three panels */
    check_type(TENSOR_TYPE_Q4_K, 9 * 256, 40);
    check_type(TENSOR_TYPE_Q4_K, 40 * 256, 40);
}

static void test_q8_0(void **state)
{
    (void)state;
    check_type(TENSOR_TYPE_Q8_0, 64, 24);
    check_type(TENSOR_TYPE_Q8_0, 96, 40);
    check_type(TENSOR_TYPE_Q8_0, 576, 36); /* not a multiple of 8 rows: Q8_0 is packed anyway */
    check_type(TENSOR_TYPE_Q8_0, 2048, 32); /* two passes of 32 blocks */
    check_type(TENSOR_TYPE_Q8_0, 1056, 16); /* a pass of 32 blocks and one of 1 */
}

/* Q6_K, re-encoded in AVX2 builds without AVX-512 (packed_q6_K.h; the
 * others leave it unpacked: skipped there): one token, passes of 4 and 1,
 * and from 8 tokens gemm_kq6's GEMM from the re-encoded rows; rows not a
 * multiple of 16 (the last group padded) */
static void test_q6_K(void **state)
{
    (void)state;
#ifndef PACKED_Q6_K
    skip();
#endif
    check_type(TENSOR_TYPE_Q6_K, 256, 24);
    check_type(TENSOR_TYPE_Q6_K, 3 * 256, 40);
    check_type(TENSOR_TYPE_Q6_K, 8 * 256, 17);
}

/* The re-encoding keeps every value: each of the 256 positions of a block
 * takes all 64 values across the blocks, and packed_q6_K_unpack gives back
 * quant_unpack_q6_K's values of the file's block. */
static void test_q6_K_encode(void **state)
{
    (void)state;
    enum { NB = 64 };
    block_q6_K *x = malloc(sizeof(block_q6_K) * NB), *e = malloc(sizeof(block_q6_K) * NB);
    for (int b = 0; b < NB; b++) {
        for (size_t i = 0; i < sizeof x[b]; i++)
            ((uint8_t *)&x[b])[i] = (uint8_t)rnd_u32();
        /* block b: value (b + 5 * i) % 64 at element i, so that each element
         * meets every value over the 64 blocks */
        memset(x[b].ql, 0, sizeof x[b].ql);
        memset(x[b].qh, 0, sizeof x[b].qh);
        for (int i = 0; i < QK_K; i++) {
            const int v = (b + 5 * i) % 64, h = i / 128, k = i % 128 / 32, l = i % 32;
            x[b].ql[64 * h + 32 * (k & 1) + l] |= (uint8_t)((v & 15) << (k < 2 ? 0 : 4));
            x[b].qh[32 * h + l] |= (uint8_t)((v >> 4) << (2 * k));
        }
    }
    packed_q6_K_encode(x, e, NB);
    for (int b = 0; b < NB; b++) {
        int8_t want[QK_K], got[QK_K];
        quant_unpack_q6_K(&x[b], want);
        packed_q6_K_unpack(&e[b], got);
        for (int i = 0; i < QK_K; i++)
            assert_int_equal(want[i], (b + 5 * i) % 64 - 32);
        assert_memory_equal(want, got, QK_K);
        assert_memory_equal(x[b].scales, e[b].scales, sizeof x[b].scales);
        assert_int_equal(x[b].d, e[b].d);
    }
    free(x);
    free(e);
}

/* Which weights get packed: those the reference repacks, and Q8_0 (only
 * where the build has the kernels). */
/* MXFP4: one token (generation), up to 8 decoded in registers, more
 * through gemm_mxfp4's panels, against repack_mxfp4.c's kernels */
static void test_mxfp4(void **state)
{
    (void)state;
    check_type(TENSOR_TYPE_MXFP4, 64, 24);
    check_type(TENSOR_TYPE_MXFP4, 96, 40);
    check_type(TENSOR_TYPE_MXFP4, 512, 64);
}

/* Experts: a 3-D MXFP4, Q8_0 or Q4_K weight packed over all its matrices,
 * each expert read from its own groups (packed_expert_matmul) against
 * repack_matmul (MXFP4), tensor_matmul (Q8_0, vec_dot's order) or
 * refk_matmul_gemv (Q4_K: the repacked gemv for every token, as the
 * reference's mul_mat_id) on that expert's rows; experts whose rows do not
 * fill whole groups stay unpacked */
static void check_experts(enum tensor_type type)
{
    const bool q6 = type == TENSOR_TYPE_Q6_K, q4k = type == TENSOR_TYPE_Q4_K;
    const int64_t n = q6 || q4k ? 512 : 128, rows = 32, n_exp = 3;
    gguf_tensor w;
    memset(&w, 0, sizeof w);
    w.type = type;
    w.n_dims = 3;
    w.ne[0] = n;
    w.ne[1] = rows;
    w.ne[2] = n_exp;
    w.ne[3] = 1;
    const size_t rb = tensor_row_size(type, n);
    w.nbytes = rb * (size_t)(rows * n_exp);
    w.n_elements = n * rows * n_exp;
    const int q8_d[1] = {0}, q6_d[1] = {208}, q4k_d[2] = {0, 2};
    uint8_t *data = random_weights(type, n, rows * n_exp, q6 ? q6_d : q4k ? q4k_d : q8_d,
                                   type == TENSOR_TYPE_MXFP4 ? 0 : q4k ? 2 : 1);
    if (type == TENSOR_TYPE_MXFP4)
        for (int64_t b = 0; b < rows * n_exp * (n / 32); b++)
            data[b * 17] = (uint8_t)(117 + rnd_u32() % 20);
    w.data = data;
    const size_t bytes = packed_bytes(&w);
    /* the AVX-512 VNNI and the AVX2 builds pack them (forward_packed.c);
     * Q6_K only AVX2 builds without AVX-512, Q4_K only AVX-512 VNNI ones
     * (its scales as bytes: 2.8 % more than the rows) */
#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VNNI__)
    if (q4k)
        assert_int_equal(bytes, (size_t)(rows * n_exp / PACKED_ROWS) * (size_t)(n / 256) *
                                    (PACKED_Q4_K_NIB + PACKED_Q4_K_SC));
    else
#else
    if (q4k)
        assert_int_equal(bytes, 0);
    else
#endif
#ifndef PACKED_Q6_K
    if (q6)
        assert_int_equal(bytes, 0);
    else
#endif
        assert_int_equal(bytes, w.nbytes);
#else
    assert_int_equal(bytes, 0);
#endif
    if (bytes) {
        uint8_t *pk = aligned_alloc(64, (bytes + 63) & ~(size_t)63);
        packed_build(&w, pk, 0, packed_groups(&w));
        const enum tensor_type dot = tensor_dot_type(type);
        const int toks[] = {1, 3, 8, 9, 20, 48}; /* 48: the AVX2 build's tokens-in-lanes batch */
        for (size_t ti = 0; ti < sizeof toks / sizeof toks[0]; ti++) {
            const int n_tok = toks[ti];
            uint8_t *act = random_act(dot, n, n_tok);
            const size_t as = tensor_row_size(dot, n);
            float want[3][48 * 32], got[3][48 * 32];
            for (int32_t e = 0; e < n_exp; e++) {
                gguf_tensor v = w;
                v.ne[2] = 1;
                v.n_dims = 2;
                v.nbytes = rb * (size_t)rows;
                v.data = data + (size_t)e * v.nbytes;
                if (q4k)
                    refk_matmul_gemv(&v, n, 16, rows, act, as, n_tok, want[e], rows);
                else if (type == TENSOR_TYPE_Q8_0 || q6)
                    tensor_matmul(type, n, (const uint8_t *)v.data + 16 * rb, rows - 16, act, n_tok, as,
                                  want[e] + 16, rows);
                else
                    repack_matmul(&v, n, 16, rows, act, as, n_tok, want[e], rows);
                packed_expert_matmul(&w, pk, e, 16, rows, act, as, n_tok, got[e], rows);
                for (int t = 0; t < n_tok; t++)
                    assert_memory_equal(&want[e][t * rows + 16], &got[e][t * rows + 16], 16 * sizeof(float));
            }
            /* the experts differ, so reading another expert's groups fails */
            assert_true(memcmp(&want[0][16], &want[1][16], sizeof(float)) != 0);
            free(act);
        }
        free(pk);
    }
    w.ne[1] = 24; /* experts of 24 rows: groups would straddle two experts */
    w.ne[2] = 4;
    assert_int_equal(packed_bytes(&w), 0);
    free(data);
}

static void test_mxfp4_experts(void **state)
{
    (void)state;
    check_experts(TENSOR_TYPE_MXFP4);
}

static void test_q8_0_experts(void **state)
{
    (void)state;
    check_experts(TENSOR_TYPE_Q8_0);
}

/* Q4_K experts (the gate and up projections of Q4_K_M MoE files), packed
 * on AVX-512 VNNI; elsewhere only that they stay unpacked */
static void test_q4_K_experts(void **state)
{
    (void)state;
    check_experts(TENSOR_TYPE_Q4_K);
}

/* Q6_K experts (the down projections of Q4_K_M MoE files), re-encoded in
 * AVX2 builds without AVX-512; elsewhere only that they stay unpacked */
static void test_q6_K_experts(void **state)
{
    (void)state;
    check_experts(TENSOR_TYPE_Q6_K);
}

/* packed_q8_0_rows (a MoE expert's Q8_0 rows packed per call, its tokens
 * run through packed_q8_0_group) against tensor_matmul, vec_dot's order:
 * row ranges that start and end inside 16-row groups and inside the
 * 8-row halves the AVX2 tiles take, odd and even token counts, more
 * tokens than one tile (64). Builds without the kernels say no. */
static void test_q8_0_rows(void **state)
{
    (void)state;
    const int q8_0_d[1] = {0};
    const int64_t n = 352, rows = 45;
    const size_t rs = tensor_row_size(TENSOR_TYPE_Q8_0, n);
    uint8_t *w = random_weights(TENSOR_TYPE_Q8_0, n, rows, q8_0_d, 1);
    const int toks[] = {1, 2, 5, 24, 33, 70};
    const int64_t ranges[][2] = {{0, rows}, {3, 29}, {9, 16}, {17, 45}};
    for (size_t ti = 0; ti < sizeof toks / sizeof toks[0]; ti++) {
        const int n_tok = toks[ti];
        uint8_t *act = random_act(TENSOR_TYPE_Q8_0, n, n_tok);
        for (size_t ri = 0; ri < sizeof ranges / sizeof ranges[0]; ri++) {
            const int64_t r0 = ranges[ri][0], r1 = ranges[ri][1];
            float *want = malloc(sizeof(float) * (size_t)(rows * n_tok));
            float *got = malloc(sizeof(float) * (size_t)(rows * n_tok));
            for (int64_t i = 0; i < rows * n_tok; i++)
                want[i] = got[i] = -1234.5f;
            tensor_matmul(TENSOR_TYPE_Q8_0, n, w + (size_t)r0 * rs, r1 - r0, act, n_tok, rs, want + r0, rows);
            if (!packed_q8_0_rows(w, rs, n / 32, r0, r1, act, rs, n_tok, got, rows)) {
#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
                fail_msg("packed_q8_0_rows said no in a build with its kernels");
#endif
                free(want);
                free(got);
                continue;
            }
            expect_same(want, got, rows * n_tok, "packed_q8_0_rows", n, rows, n_tok, r0, r1);
            free(want);
            free(got);
        }
        free(act);
    }
    free(w);
}

static void test_which(void **state)
{
    (void)state;
    gguf_tensor w;
    memset(&w, 0, sizeof w);
    w.ne[0] = 256;
    w.ne[1] = 24;
    const uint32_t types[] = {TENSOR_TYPE_Q4_0, TENSOR_TYPE_Q4_K, TENSOR_TYPE_Q8_0, TENSOR_TYPE_MXFP4,
                              TENSOR_TYPE_Q6_K, TENSOR_TYPE_F16};
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        w.type = types[i];
        bool repacked = types[i] == TENSOR_TYPE_Q4_0 || types[i] == TENSOR_TYPE_Q4_K ||
                        types[i] == TENSOR_TYPE_Q8_0 || types[i] == TENSOR_TYPE_MXFP4;
#ifdef PACKED_Q6_K
        repacked |= types[i] == TENSOR_TYPE_Q6_K; /* re-encoded, as many bytes as the rows */
#endif
#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VNNI__)
        assert_int_equal(packed_bytes(&w) > 0, repacked);
        /* the packed copy of 24 rows takes 32 (two groups): Q4_0, Q8_0 and
         * MXFP4 as many bytes as the rows, Q4_K 64 more bytes of decoded
         * scales per block */
        if (repacked) {
            const size_t rows32 = tensor_row_size(w.type, w.ne[0]) * 32;
            assert_int_equal(packed_bytes(&w), types[i] == TENSOR_TYPE_Q4_K ? rows32 + 2 * 64 : rows32);
        }
#elif defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
        /* AVX2 builds pack the same 2-D weights */
        assert_int_equal(packed_bytes(&w) > 0, repacked);
        if (repacked) {
            const size_t rows32 = tensor_row_size(w.type, w.ne[0]) * 32;
            assert_int_equal(packed_bytes(&w), types[i] == TENSOR_TYPE_Q4_K ? rows32 + 2 * 64 : rows32);
        }
#else
        (void)repacked;
        assert_int_equal(packed_bytes(&w), 0);
#endif
    }
    w.ne[1] = 20; /* not a multiple of 8: the reference does not repack it */
    w.type = TENSOR_TYPE_Q4_0;
    assert_int_equal(packed_bytes(&w), 0);
    w.type = TENSOR_TYPE_MXFP4;
    assert_int_equal(packed_bytes(&w), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_q4_0),
        cmocka_unit_test(test_q4_K),
        cmocka_unit_test(test_q8_0),
        cmocka_unit_test(test_q6_K),
        cmocka_unit_test(test_q6_K_encode),
        cmocka_unit_test(test_mxfp4),
        cmocka_unit_test(test_mxfp4_experts),
        cmocka_unit_test(test_q8_0_experts),
        cmocka_unit_test(test_q4_K_experts),
        cmocka_unit_test(test_q6_K_experts),
        cmocka_unit_test(test_q8_0_rows),
        cmocka_unit_test(test_which),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
