/* The soft-cap's tanhf lanes (kernels/tanhf_libm.h) against the C library's
 * tanhf, bit for bit: every 97th float bit pattern of both signs (44
 * million values over every branch: |x| < 2^-55, the expm1f reductions
 * k = -3..64, |x| >= 22, infinities) and, whole, the float ranges around
 * each branch's threshold; the scaled form against the scalar steps. On
 * glibc 2.36 (Debian 12, the reference's) the lanes must be exact (a build
 * that fused two of the steps fails here: shown); another C library may
 * take the scalar path, and the tests of the lanes skip. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <gnu/libc-version.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/tanhf_libm.h"

static uint32_t bits_of(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static float of_bits(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

enum { CHUNK = 1 << 16 };

/* tanhf_libm_scaled(x, 1, 1) against tanhf on the given bit patterns */
static void check_bits(const uint32_t *u, int n)
{
    static float x[CHUNK], y[CHUNK];
    for (int i = 0; i < n; i++)
        x[i] = of_bits(u[i]);
    tanhf_libm_scaled(x, y, n, 1.0f, 1.0f);
    for (int i = 0; i < n; i++) {
        if (isnan(x[i]))
            continue;
        const float want = tanhf(x[i]);
        if (bits_of(want) != bits_of(y[i])) {
            print_error("tanhf(%a = 0x%08x): lanes %a, library %a\n", (double)x[i], u[i], (double)y[i],
                        (double)want);
            fail();
        }
    }
}

/* bit patterns [lo, hi) of both signs, every step-th */
static void check_range(uint32_t lo, uint32_t hi, uint32_t step)
{
    static uint32_t u[CHUNK];
    int n = 0;
    for (uint64_t b = lo; b < hi; b += step) {
        u[n++] = (uint32_t)b;
        u[n++] = (uint32_t)b | 0x80000000u;
        if (n + 2 > CHUNK) {
            check_bits(u, n);
            n = 0;
        }
    }
    check_bits(u, n);
}

static bool glibc_2_36(void)
{
    return strcmp(gnu_get_libc_version(), "2.36") == 0;
}

static void test_exact_here(void **state)
{
    (void)state;
    if (!glibc_2_36())
        skip();
    assert_true(tanhf_libm_exact());
}

static void test_spread(void **state)
{
    (void)state;
    if (!tanhf_libm_exact())
        skip();
    check_range(0, 0x7f800001u, 97);
}

/* every float within 2^16 patterns of a threshold: |x| = 2^-55, 1, 22 and
 * the expm1f argument 2|x| at 0.5 ln2, 1.5 ln2, 2^-25, and where k moves
 * past 22 and 56 */
static void test_thresholds(void **state)
{
    (void)state;
    if (!tanhf_libm_exact())
        skip();
    const float at[] = {0x1p-55f, 1.0f, 22.0f, 0.17328680f, 0.51986039f, 0x1p-26f,
                        22.5f * 0.69314718f / 2.0f, 56.5f * 0.69314718f / 2.0f};
    for (size_t i = 0; i < sizeof at / sizeof at[0]; i++) {
        const uint32_t c = bits_of(at[i]);
        check_range(c - 0x8000u, c + 0x8000u, 1);
    }
}

/* the soft-cap's form: tanhf(x * s) * c, each product rounded, on both paths */
static void test_scaled(void **state)
{
    (void)state;
    if (!tanhf_libm_exact())
        skip();
    enum { N = 4099 }; /* not a multiple of the lanes */
    static float x[N], y[N];
    for (int i = 0; i < N; i++)
        x[i] = (float)(i - N / 2) * 0.0371f + (float)(i % 7) * 1e-3f;
    const float s = 1.0f / 30.0f, c = 30.0f;
    tanhf_libm_scaled(x, y, N, s, c);
    for (int i = 0; i < N; i++)
        assert_int_equal(bits_of(y[i]), bits_of(tanhf(x[i] * s) * c));
    tanhf_libm_scaled(x, x, N, s, c); /* in place */
    assert_memory_equal(x, y, sizeof x);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exact_here),
        cmocka_unit_test(test_spread),
        cmocka_unit_test(test_thresholds),
        cmocka_unit_test(test_scaled),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
