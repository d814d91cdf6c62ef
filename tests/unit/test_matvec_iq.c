/* The one-token matvecs of IQ2_XXS, IQ3_S and IQ4_XS (tensor_matvec: the AVX-512
 * kernels of matvec_iq.c where built, else the vec_dot loop) and of IQ1_S
 * and IQ1_M (IQ1_M's AVX2 matvec in every x86 build) held bit for bit to
 * the portable x86 order of each row (which test_iq1, test_iq2 and test_iq4
 * hold to llama.cpp 34af94cd's own outputs), on random blocks: row counts
 * odd and even, 1..9 super-blocks, activations with -128 bytes for IQ1,
 * IQ2 and IQ3 (the reference's sign trick keeps them -128), rows past the
 * IQ4_XS kernel's stack budget and past the token sums IQ1_M's keeps. Each
 * check would fail with two rows or two activation blocks swapped: the test
 * asserts that the expected values themselves differ under such a swap. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "gguf/tensor.h"
#include "kernels/matvec_iq.h"
#include "kernels/quant_internal.h"
#include "kernels/quant_iq1.h"
#include "kernels/quant_iq2.h"
#include "kernels/quant_iq3.h"
#include "kernels/quant_iq4.h"
#include "kernels/quant_kfew.h"
#include "testutil.h"

static uint64_t rng_state = 0x6d61747665637571ull;
static uint32_t rnd_u32(void)
{
    return (uint32_t)(test_xorshift64(&rng_state) >> 16);
}

typedef float (*dot_fn)(int64_t n, const void *w, const void *act);

/* Random bytes with a random F16 scale (either sign, around 2^-6) at the
 * start of each block (IQ1_M: in its scales' top nibbles). */
static void random_weights(enum tensor_type t, uint8_t *w, size_t bytes)
{
    for (size_t i = 0; i < bytes; i++)
        w[i] = (uint8_t)rnd_u32();
    const size_t bs = tensor_type_size(t);
    for (size_t o = 0; o < bytes; o += bs) {
        const uint16_t h =
            tensor_fp32_to_fp16((rnd_u32() & 1 ? -1.0f : 1.0f) * (float)(1 + rnd_u32() % 4096) / 65536.0f);
        if (t == TENSOR_TYPE_IQ1_M)
            quant_iq1m_set_d((block_iq1_m *)(void *)(w + o), h);
        else
            memcpy(w + o, &h, 2);
    }
}

/* A Q8_K row quantized from random floats; with minus128, some bytes
 * forced to -128 (IQ2's x86 order negates them in 8 bits). */
static void random_act(uint8_t *a, int64_t n, int minus128)
{
    float *x = malloc((size_t)n * sizeof *x);
    for (int64_t i = 0; i < n; i++)
        x[i] = (float)(rnd_u32() % 20001) / 10000.0f - 1.0f;
    tensor_quantize_row(TENSOR_TYPE_Q8_K, x, a, n);
    free(x);
    if (minus128) {
        block_q8_K *y = (block_q8_K *)(void *)a;
        for (int64_t i = 0; i < n / QK_K; i++)
            for (int k = 0; k < 8; k++)
                y[i].qs[rnd_u32() % QK_K] = -128;
    }
}

static void check_type(enum tensor_type t, dot_fn x86order, int minus128, int64_t nb_max, int reps)
{
    enum { RMAX = 11 };
    const int64_t nmax = QK_K * nb_max;
    const size_t rsmax = tensor_row_size(t, nmax);
    uint8_t *w = malloc(rsmax * RMAX), *a = malloc(tensor_row_size(TENSOR_TYPE_Q8_K, nmax));
    uint8_t *tmp = malloc(rsmax);
    float out[RMAX + 1];
    for (int rep = 0; rep < reps; rep++) {
        const int64_t n = QK_K * (nb_max > 9 ? nb_max : 1 + rep % nb_max);
        const int rows = 1 + rep % RMAX;
        const size_t rs = tensor_row_size(t, n);
        random_weights(t, w, rs * (size_t)rows);
        random_act(a, n, minus128);
        out[rows] = 12345.0f; /* must stay: nothing past the last row */
        tensor_matvec(t, n, w, rows, a, out);
        assert_true(out[rows] == 12345.0f);
        for (int r = 0; r < rows; r++) {
            const float want = x86order(n, w + rs * (size_t)r, a);
            if (f2u(out[r]) != f2u(want))
                fail_msg("%s n=%lld rows=%d row %d: %.9g, x86 order %.9g", tensor_type_name(t), (long long)n,
                         rows, r, (double)out[r], (double)want);
        }
        /* the expected values see a swap of two rows... */
        if (rows >= 2) {
            const float w0 = x86order(n, w, a), w1 = x86order(n, w + rs, a);
            assert_true(f2u(w0) != f2u(w1));
        }
        /* ...and of two activation blocks */
        if (n >= 2 * QK_K) {
            const float before = x86order(n, w, a);
            const size_t ab = sizeof(block_q8_K);
            memcpy(tmp, a, ab);
            memmove(a, a + ab, ab);
            memcpy(a + ab, tmp, ab);
            assert_true(f2u(x86order(n, w, a)) != f2u(before));
        }
    }
    free(w);
    free(a);
    free(tmp);
}

static void test_iq2_xxs(void **state)
{
    (void)state;
    check_type(TENSOR_TYPE_IQ2_XXS, quant_dot_iq2_xxs_x86order, 0, 9, 60);
    check_type(TENSOR_TYPE_IQ2_XXS, quant_dot_iq2_xxs_x86order, 1, 9, 60);
}

static void test_iq3_s(void **state)
{
    (void)state;
    check_type(TENSOR_TYPE_IQ3_S, quant_dot_iq3_s_x86order, 0, 9, 60);
    check_type(TENSOR_TYPE_IQ3_S, quant_dot_iq3_s_x86order, 1, 9, 60);
}

/* IQ4_XS in each of the AVX-512 kernel's ways of streaming its rows (row
 * pairs or one row after the other, quant_kfew.h; the calls here are too
 * small for AUTO to time, so it takes the pairs) */
static void test_iq4_xs(void **state)
{
    (void)state;
#ifdef QUANT_HAVE_KFEW
    const int ways[] = {QUANT_KFEW_STREAM_AUTO, QUANT_KFEW_STREAM_PAIRS, QUANT_KFEW_STREAM_SEQ};
#else
    const int ways[] = {0};
#endif
    for (size_t i = 0; i < sizeof ways / sizeof ways[0]; i++) {
#ifdef QUANT_HAVE_KFEW
        quant_kfew_stream = ways[i];
#endif
        check_type(TENSOR_TYPE_IQ4_XS, quant_dot_iq4_xs_x86order, 0, 9, 60);
        /* 129 super-blocks: past the AVX-512 kernel's prepared activations */
        check_type(TENSOR_TYPE_IQ4_XS, quant_dot_iq4_xs_x86order, 0, 129, 3);
    }
#ifdef QUANT_HAVE_KFEW
    quant_kfew_stream = QUANT_KFEW_STREAM_AUTO;
#endif
}

static void test_iq1_s(void **state)
{
    (void)state;
    check_type(TENSOR_TYPE_IQ1_S, quant_dot_iq1_s_x86order, 1, 9, 60);
}

static void test_iq1_m(void **state)
{
    (void)state;
    check_type(TENSOR_TYPE_IQ1_M, quant_dot_iq1_m_x86order, 0, 9, 60);
    check_type(TENSOR_TYPE_IQ1_M, quant_dot_iq1_m_x86order, 1, 9, 60);
    /* 257 super-blocks: past the token sums the matvec keeps (vec_dot row
     * by row there) */
    check_type(TENSOR_TYPE_IQ1_M, quant_dot_iq1_m_x86order, 1, 257, 2);
}

/* Where the AVX-512 kernels are built they are what tensor_matvec runs (so
 * the tests above test them); in the AVX2 builds, the AVX2 ones. */
static void test_installed(void **state)
{
    (void)state;
#if defined(QUANT_HAVE_MATVEC_IQ512)
    assert_true(quant_kernels_get(TENSOR_TYPE_IQ2_XXS)->matvec == quant_avx512_matvec_iq2_xxs);
    assert_true(quant_kernels_get(TENSOR_TYPE_IQ3_S)->matvec == quant_avx512_matvec_iq3_s);
    assert_true(quant_kernels_get(TENSOR_TYPE_IQ4_XS)->matvec == quant_avx512_matvec_iq4_xs);
    assert_non_null(quant_kernels_get(TENSOR_TYPE_IQ1_M)->matvec); /* the AVX2 one */
#elif defined(QUANT_HAVE_AVX2)
    /* AVX2 (the variant builds): IQ4_XS has a matvec of its own (the token's
     * |a| made once), IQ2_XXS one that prefetches the rows ahead (its sign
     * words taken apart per super-block), IQ3_S runs its vec_dot row after row */
    assert_non_null(quant_kernels_get(TENSOR_TYPE_IQ4_XS)->matvec);
    assert_non_null(quant_kernels_get(TENSOR_TYPE_IQ2_XXS)->matvec);
    assert_null(quant_kernels_get(TENSOR_TYPE_IQ3_S)->matvec);
    assert_non_null(quant_kernels_get(TENSOR_TYPE_IQ1_M)->matvec);
#else
    skip();
#endif
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_installed),
        cmocka_unit_test(test_iq2_xxs),
        cmocka_unit_test(test_iq3_s),
        cmocka_unit_test(test_iq4_xs),
        cmocka_unit_test(test_iq1_s),
        cmocka_unit_test(test_iq1_m),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
