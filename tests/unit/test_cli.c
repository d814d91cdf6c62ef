/* app/cli.c: the option table and its parser. The sampling rows must take
 * exactly what the TUI's parameter panel takes (ui/params.c, /set and the
 * configuration file), so that an option means the same on every path. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "cli.h"
#include "params.h"
#include "sampler/sampler.h"

static const struct {
    int id;
    const char *param; /* ui/params.c's name */
} sampling[] = {
    {CLI_TEMP, "temp"},
    {CLI_TOP_K, "top_k"},
    {CLI_TOP_P, "top_p"},
    {CLI_MIN_P, "min_p"},
    {CLI_TYPICAL, "typical_p"},
    {CLI_REPEAT_PENALTY, "repeat_penalty"},
    {CLI_REPEAT_LAST_N, "repeat_last_n"},
    {CLI_FREQUENCY_PENALTY, "frequency_penalty"},
    {CLI_PRESENCE_PENALTY, "presence_penalty"},
    {CLI_SEED, "seed"},
    {CLI_N_PREDICT, "n_predict"},
    {CLI_N_TOP, "n_top"},
    {CLI_DRY_MULTIPLIER, "dry_multiplier"},
    {CLI_DRY_BASE, "dry_base"},
    {CLI_DRY_ALLOWED_LENGTH, "dry_allowed_length"},
    {CLI_DRY_PENALTY_LAST_N, "dry_penalty_last_n"},
};

static bool panel_takes(const char *param, double x)
{
    char v[64], err[256];
    snprintf(v, sizeof v, "%.10g", x);
    sampler_params p = sampler_default_params();
    return params_set_value(&p, param, v, err, sizeof err);
}

static bool cli_takes(int id, double x, cli_value *out)
{
    char v[64], why[512];
    snprintf(v, sizeof v, "%.10g", x);
    return cli_check(id, v, out, why, sizeof why);
}

static void test_sampling_ranges_are_the_panels(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof sampling / sizeof sampling[0]; i++) {
        const cli_opt *o = cli_opt_of(sampling[i].id);
        assert_non_null(o);
        const double step = o->type == CLI_T_FLOAT ? 0.001 : 1;
        cli_value v;
        /* both ends, inside */
        assert_true(panel_takes(sampling[i].param, o->lo));
        assert_true(panel_takes(sampling[i].param, o->hi));
        assert_true(cli_takes(sampling[i].id, o->lo, &v));
        assert_true(cli_takes(sampling[i].id, o->hi, &v));
        /* past the top: refused by both */
        if (panel_takes(sampling[i].param, o->hi + step))
            fail_msg("%s: the panel takes more than %g", sampling[i].param, o->hi);
        assert_false(cli_takes(sampling[i].id, o->hi + step, &v));
        /* under the bottom: refused by both, or (<= 0 = off) taken as the bottom */
        const double under = o->lo - step;
        if (sampling[i].id == CLI_SEED)
            continue; /* -1 is "random" in both */
        if (o->under_is_lo) {
            assert_true(cli_takes(sampling[i].id, under, &v));
            assert_true(v.taken_as_lo);
            assert_true(v.f == o->lo);
        } else {
            if (panel_takes(sampling[i].param, under))
                fail_msg("%s: the panel takes %g, under %g", sampling[i].param, under, o->lo);
            assert_false(cli_takes(sampling[i].id, under, &v));
        }
    }
}

static void test_check_messages(void **state)
{
    (void)state;
    cli_value v;
    char why[512];
    assert_false(cli_check(CLI_N_PREDICT, "abc", &v, why, sizeof why));
    assert_string_equal(why, "want an integer in -1..1000000 (tokens to generate; -1 = no limit)");
    assert_false(cli_check(CLI_TOP_P, "2", &v, why, sizeof why));
    assert_string_equal(why, "want a number in 0..1 (nucleus mass; 1 = off)");
    assert_false(cli_check(CLI_TOP_K, "1.5", &v, why, sizeof why));
    assert_false(cli_check(CLI_TEMP, "nan", &v, why, sizeof why));
    assert_false(cli_check(CLI_CTK, "q2_k", &v, why, sizeof why));
    assert_string_equal(why, "want f16, q8_0, q4_0 or f32 (KV cache type of keys)");
    assert_true(cli_check(CLI_TOP_K, "-3", &v, why, sizeof why));
    assert_int_equal(v.i, 0);
    assert_true(cli_check(CLI_N_PREDICT, "-1", &v, why, sizeof why));
    assert_int_equal(v.i, -1);
    assert_true(cli_check(CLI_SEED, "random", &v, why, sizeof why));
    assert_true(v.random);
    assert_true(cli_check(CLI_SEED, "4294967295", &v, why, sizeof why));
    assert_false(v.random);
    assert_true(v.seed == 4294967295ULL);
    assert_false(cli_check(CLI_SEED, "-5", &v, why, sizeof why));
    assert_false(cli_check(CLI_SEED, "4294967296", &v, why, sizeof why));
    assert_true(cli_check(CLI_BENCH_THREADS, "1,2,4", &v, why, sizeof why));
    assert_false(cli_check(CLI_BENCH_THREADS, "1,,4", &v, why, sizeof why));
    assert_false(cli_check(CLI_BENCH_BLAS, "on,off,auto,on", &v, why, sizeof why));
}

/* The parser over an argv: ids and values in order, the operands after. */
static void test_parse(void **state)
{
    (void)state;
    static const int ids[] = {CLI_MODEL, CLI_N_PREDICT, CLI_TOP_K, CLI_CHAT, CLI_TEMP};
    char *argv[] = {"generate", "-m",     "m.gguf", "file", "--top-k=-3", "-n",
                    "-1",       "--chat", "--temp", "0.5",  NULL};
    cli p;
    cli_value v;
    cli_begin(&p, "generate", ids, 5, false, 10, argv);
    assert_int_equal(cli_next(&p, &v), CLI_MODEL);
    assert_string_equal(v.text, "m.gguf");
    assert_int_equal(cli_next(&p, &v), CLI_TOP_K);
    assert_int_equal(v.i, 0);
    assert_string_equal(v.text, "0"); /* what a configuration key gets */
    assert_string_equal(p.typed, "--top-k");
    assert_int_equal(cli_next(&p, &v), CLI_N_PREDICT);
    assert_int_equal(v.i, -1);
    assert_string_equal(p.typed, "-n");
    assert_int_equal(cli_next(&p, &v), CLI_CHAT);
    assert_int_equal(cli_next(&p, &v), CLI_TEMP);
    assert_true(fabs(v.f - 0.5) < 1e-12);
    assert_int_equal(cli_next(&p, &v), CLI_END);
    assert_int_equal(cli_rest(&p), 9);
    assert_string_equal(argv[cli_rest(&p)], "file");

    /* mistakes, quietly: each one CLI_ERROR, the option as typed */
    char *bad1[] = {"generate", "--bogus", NULL};
    cli_begin(&p, "generate", ids, 5, false, 2, bad1);
    p.quiet = true;
    assert_int_equal(cli_next(&p, &v), CLI_ERROR);
    assert_string_equal(p.typed, "--bogus");
    char *bad2[] = {"generate", "-n", "abc", NULL};
    cli_begin(&p, "generate", ids, 5, false, 3, bad2);
    p.quiet = true;
    assert_int_equal(cli_next(&p, &v), CLI_ERROR);
    assert_string_equal(p.typed, "-n");
    char *bad3[] = {"generate", "--chat=yes", NULL};
    cli_begin(&p, "generate", ids, 5, false, 2, bad3);
    p.quiet = true;
    assert_int_equal(cli_next(&p, &v), CLI_ERROR);
    assert_string_equal(p.typed, "--chat");
    char *bad4[] = {"generate", "--temp", NULL};
    cli_begin(&p, "generate", ids, 5, false, 2, bad4);
    p.quiet = true;
    assert_int_equal(cli_next(&p, &v), CLI_ERROR);
    assert_string_equal(p.typed, "--temp");
}

/* Every row reads: a name or a short name, a meaning, a range that holds
 * its lowest value. */
static void test_table_rows(void **state)
{
    (void)state;
    for (int id = 0; id < CLI_N_IDS; id++) {
        const cli_opt *o = cli_opt_of(id);
        assert_non_null(o);
        if (!o->name && !o->short_name)
            fail_msg("option %d has no name", id);
        assert_non_null(o->meaning);
        if (o->type == CLI_T_INT || o->type == CLI_T_FLOAT || o->type == CLI_T_SEED)
            assert_true(o->lo <= o->hi);
        if (o->check)
            assert_non_null(o->want);
    }
}

/* --dry-sequence-breaker, llama.cpp's semantics: the first one clears the
 * defaults, each adds its string as typed, "none" clears all (later ones add
 * again), at most SAMPLER_MAX_DRY_BRK. */
static void test_dry_breaker(void **state)
{
    (void)state;
    sampler_params sp = sampler_default_params();
    assert_int_equal(sp.n_dry_breakers, 4); /* "\n" ":" "\"" "*" */
    bool cleared = false;
    assert_true(cli_dry_breaker(&sp, &cleared, "cat"));
    assert_int_equal(sp.n_dry_breakers, 1);
    assert_string_equal(sp.dry_breakers[0], "cat");
    assert_true(cli_dry_breaker(&sp, &cleared, "\\n")); /* as typed: a backslash and n */
    assert_int_equal(sp.n_dry_breakers, 2);
    assert_string_equal(sp.dry_breakers[1], "\\n");
    assert_true(cli_dry_breaker(&sp, &cleared, "none"));
    assert_int_equal(sp.n_dry_breakers, 0);
    assert_true(cli_dry_breaker(&sp, &cleared, "~"));
    assert_int_equal(sp.n_dry_breakers, 1);
    assert_string_equal(sp.dry_breakers[0], "~");
    /* "none" first: no breakers at all */
    sp = sampler_default_params();
    cleared = false;
    assert_true(cli_dry_breaker(&sp, &cleared, "none"));
    assert_int_equal(sp.n_dry_breakers, 0);
    /* a 17th is refused */
    sp = sampler_default_params();
    cleared = false;
    for (int i = 0; i < SAMPLER_MAX_DRY_BRK; i++)
        assert_true(cli_dry_breaker(&sp, &cleared, "x"));
    assert_false(cli_dry_breaker(&sp, &cleared, "x"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sampling_ranges_are_the_panels),
        cmocka_unit_test(test_check_messages),
        cmocka_unit_test(test_parse),
        cmocka_unit_test(test_table_rows),
        cmocka_unit_test(test_dry_breaker),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
