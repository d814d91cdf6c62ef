/* The IQ2/IQ3 sign tables against entries of ggml-common.h's kmask_iq2xs,
 * ksigns_iq2xs and ksigns64 copied here by hand, and against their rule (an
 * even number of minus signs per 8 weights). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "kernels/quant_iq_signs.h"

static void test_known_entries(void **state)
{
    (void)state;
    static const uint8_t first[16] = {0, 129, 130, 3, 132, 5, 6, 135, 136, 9, 10, 139, 12, 141, 142, 15};
    for (int i = 0; i < 16; i++)
        assert_int_equal(quant_ksigns_iq2xs[i], first[i]);
    assert_int_equal(quant_ksigns_iq2xs[64], 192);
    assert_int_equal(quant_ksigns_iq2xs[113], 113);
    assert_int_equal(quant_ksigns_iq2xs[127], 255);
    assert_true(quant_ksigns64[1] == 0xff000000000000ffull);
    assert_true(quant_ksigns64[2] == 0xff0000000000ff00ull);
    assert_true(quant_ksigns64[3] == 0x000000000000ffffull);
    assert_true(quant_ksigns64[7] == 0xff00000000ffffffull);
    assert_true(quant_ksigns64[32] == 0xff00ff0000000000ull);
    for (int j = 0; j < 8; j++)
        assert_int_equal(quant_kmask_iq2xs[j], 1 << j);
}

static void test_rule(void **state)
{
    (void)state;
    for (int i = 0; i < 128; i++) {
        uint8_t s = quant_ksigns_iq2xs[i];
        assert_int_equal(s & 127, i);
        assert_int_equal(__builtin_popcount(s) % 2, 0);
        for (int j = 0; j < 8; j++)
            assert_int_equal((quant_ksigns64[i] >> (8 * j)) & 0xff, (s >> j) & 1 ? 0xff : 0);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_known_entries),
        cmocka_unit_test(test_rule),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
