/* YaRN (engine/model/rope_yarn.c) against the formulas it comes from,
 * evaluated here in double: the correction dims of the YaRN paper as ggml
 * writes them, llama.cpp's attention factor, and the angle mix (pure
 * extrapolation below the first dim, pure interpolation past the last, the
 * linear ramp between). Bit-exactness against the reference is checked by
 * tests/golden/families2026.sh (gpt-oss). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "model/rope_yarn.h"

static double corr_dim(int n_dims, int n_ctx_orig, double n_rot, double base)
{
    return n_dims * log(n_ctx_orig / (n_rot * 2 * M_PI)) / (2 * log(base));
}

static void test_corr_dims(void **state)
{
    (void)state;
    float d[2];
    /* gpt-oss: 32 rotated dims, base 150000, original context 4096 */
    rope_yarn_corr_dims(32, 4096, 150000.0f, ROPE_YARN_BETA_FAST, ROPE_YARN_BETA_SLOW, d);
    assert_true(d[0] == 4.0f && d[1] == 9.0f);
    const struct {
        int n;
        int ctx;
        double base;
    } cases[] = {{64, 4096, 150000}, {128, 32768, 1000000}, {128, 4096, 10000}, {64, 2048, 500000}, {16, 64, 10000}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        rope_yarn_corr_dims(cases[i].n, cases[i].ctx, (float)cases[i].base, 32.0f, 1.0f, d);
        const double lo = fmax(0, floor(corr_dim(cases[i].n, cases[i].ctx, 32, cases[i].base)));
        const double hi = fmin(cases[i].n - 1, ceil(corr_dim(cases[i].n, cases[i].ctx, 1, cases[i].base)));
        if (d[0] != lo || d[1] != hi)
            fail_msg("case %zu: dims %g %g, want %g %g", i, (double)d[0], (double)d[1], lo, hi);
    }
}

/* (1 + 0.1 ln s) / (1 + 0.1 ln s) * attn_factor: the reference's two
 * factors cancel up to rounding; no scaling gives the plain factor. */
static void test_attn_factor(void **state)
{
    (void)state;
    assert_true(fabsf(rope_yarn_attn_factor(1.0f / 32, 1.0f) - 1.0f) <= 2.5e-7f);
    assert_true(fabsf(rope_yarn_attn_factor(1.0f / 4, 2.0f) - 2.0f) <= 5e-7f);
    /* factor <= 1: get_mscale is 1, the division still applies */
    assert_true(fabs(rope_yarn_attn_factor(1.0f, 1.0f) - 1.0) <= 1e-7);
    assert_true(fabs(rope_yarn_attn_factor(2.0f, 1.0f) - 1.0 / (1.0 + 0.1 * log(0.5))) <= 1e-6);
}

static void test_angle_mix(void **state)
{
    (void)state;
    const float dims[2] = {4.0f, 9.0f}, fs = 1.0f / 32;
    const float ms = 1.0f + 0.1f * logf(32.0f);
    for (int pos = 0; pos < 200; pos += 7)
        for (int64_t i0 = 0; i0 < 32; i0 += 2) {
            const float te = (float)pos * powf(150000.0f, -(float)i0 / 32.0f);
            float c, s;
            rope_yarn_cs(te, fs, dims, i0, 1.0f, 1.0f, &c, &s);
            const double k = i0 / 2;
            const double ramp = 1 - fmin(1, fmax(0, (k - 4) / 5));
            const double theta = (double)(fs * te) * (1 - ramp) + (double)te * ramp;
            if (fabs(c - cos(theta) * ms) > 2e-6 || fabs(s - sin(theta) * ms) > 2e-6)
                fail_msg("pos %d pair %d: %.8f %.8f, want %.8f %.8f", pos, (int)k, (double)c, (double)s,
                         cos(theta) * ms, sin(theta) * ms);
            /* the ends are exact: the angle itself, unscaled or scaled */
            if (k <= 4 && c != cosf(te) * ms)
                fail_msg("pair %d is pure extrapolation", (int)k);
            if (k >= 9 && c != cosf(fs * te) * ms)
                fail_msg("pair %d is pure interpolation", (int)k);
            /* ext_factor 0: plain linear scaling, attention factor as given */
            rope_yarn_cs(te, fs, dims, i0, 0.0f, 0.75f, &c, &s);
            assert_true(c == cosf(fs * te) * 0.75f && s == sinf(fs * te) * 0.75f);
        }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_corr_dims),
        cmocka_unit_test(test_attn_factor),
        cmocka_unit_test(test_angle_mix),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
