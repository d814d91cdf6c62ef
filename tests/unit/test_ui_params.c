/* Parameter panel: step/clamp logic, value parsing, and its key handling. */
#include <curses.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "params.h"
#include "testutil.h"
#include "ui.h"

static sampler_params defaults(void)
{
    sampler_params p;
    memset(&p, 0, sizeof p);
    p.temp = 0.8f;
    p.top_k = 40;
    p.top_p = 0.95f;
    p.min_p = 0.05f;
    p.typical_p = 1.0f;
    p.repeat_penalty = 1.0f;
    p.repeat_last_n = 64;
    p.n_predict = -1;
    p.n_top = 10;
    return p;
}

static void test_adjust_steps(void **state)
{
    (void)state;
    sampler_params p = defaults();
    assert_true(params_adjust(&p, "temp", 1, 1));
    assert_float_equal(p.temp, 0.85f, 1e-6);
    assert_true(params_adjust(&p, "temp", -1, 1));
    assert_true(params_adjust(&p, "temp", -1, 1));
    assert_float_equal(p.temp, 0.75f, 1e-6);
    assert_true(params_adjust(&p, "temp", -1, 10)); /* Shift: x10 */
    assert_float_equal(p.temp, 0.25f, 1e-6);
    for (int i = 0; i < 20; i++)
        params_adjust(&p, "temp", -1, 1);
    assert_float_equal(p.temp, 0.0f, 0);
    assert_false(params_adjust(&p, "temp", -1, 1)); /* clamped at 0 */
    /* 100 small steps stay on the grid (no 0.79999) */
    for (int i = 0; i < 100; i++)
        params_adjust(&p, "temp", 1, 1);
    assert_float_equal(p.temp, 5.0f, 1e-6);
    char buf[32];
    params_format(&p, "temp", buf, sizeof buf);
    assert_string_equal(buf, "5.00");

    assert_true(params_adjust(&p, "top_p", 1, 1));
    assert_float_equal(p.top_p, 0.96f, 1e-6);
    for (int i = 0; i < 10; i++)
        params_adjust(&p, "top_p", 1, 1);
    assert_float_equal(p.top_p, 1.0f, 0);

    assert_true(params_adjust(&p, "top_k", -1, 1));
    assert_int_equal(p.top_k, 39);
    p.top_k = 0;
    assert_false(params_adjust(&p, "top_k", -1, 1));
    assert_int_equal(p.top_k, 0);

    assert_true(params_adjust(&p, "repeat_last_n", -1, 1));
    assert_int_equal(p.repeat_last_n, 56);
    p.repeat_last_n = 3;
    params_adjust(&p, "repeat_last_n", -1, 1);
    assert_int_equal(p.repeat_last_n, -1);

    assert_true(params_adjust(&p, "n_predict", 1, 1));
    assert_int_equal(p.n_predict, 15);
    p.n_top = SAMPLER_MAX_TOP;
    assert_false(params_adjust(&p, "n_top", 1, 1));
    assert_false(params_adjust(&p, "nonsense", 1, 1));
}

static void test_seed(void **state)
{
    (void)state;
    sampler_params p = defaults();
    char buf[32];
    params_format(&p, "seed", buf, sizeof buf);
    assert_string_equal(buf, "random");
    assert_true(params_adjust(&p, "seed", 1, 1));
    assert_true(p.seed_set);
    assert_int_equal(p.seed, 1);
    assert_true(params_adjust(&p, "seed", 1, 10));
    assert_int_equal(p.seed, 11);
    char err[128];
    assert_true(params_set_value(&p, "seed", "random", err, sizeof err));
    assert_false(p.seed_set);
    assert_true(params_set_value(&p, "seed", "1234", err, sizeof err));
    assert_true(p.seed_set);
    assert_int_equal(p.seed, 1234);
    params_format(&p, "seed", buf, sizeof buf);
    assert_string_equal(buf, "1234");
}

static void test_set_value(void **state)
{
    (void)state;
    sampler_params p = defaults();
    char err[128];
    assert_true(params_set_value(&p, "temp", "0.1", err, sizeof err));
    assert_float_equal(p.temp, 0.1f, 1e-7);
    assert_true(params_set_value(&p, "top_k", " 7", err, sizeof err));
    assert_int_equal(p.top_k, 7);
    assert_true(params_set_value(&p, "n_predict", "-1", err, sizeof err));
    assert_int_equal(p.n_predict, -1);
    sampler_params before = p;
    assert_false(params_set_value(&p, "temp", "abc", err, sizeof err));
    assert_non_null(strstr(err, "not a number"));
    assert_false(params_set_value(&p, "top_k", "1.5", err, sizeof err));
    assert_non_null(strstr(err, "integer"));
    assert_false(params_set_value(&p, "top_p", "2", err, sizeof err));
    assert_non_null(strstr(err, "outside"));
    assert_false(params_set_value(&p, "temp", "nan", err, sizeof err));
    assert_false(params_set_value(&p, "temp", "", err, sizeof err));
    assert_false(params_set_value(&p, "temp", "0.5x", err, sizeof err));
    assert_false(params_set_value(&p, "n_top", "0", err, sizeof err));
    assert_false(params_set_value(&p, "nonsense", "1", err, sizeof err));
    assert_memory_equal(&p, &before, sizeof p); /* failures change nothing */
}

static void test_names(void **state)
{
    (void)state;
    /* every panel row is a parameter the sampler knows by the same name */
    sampler_params p = defaults();
    char buf[64];
    for (int i = 0; params_names[i]; i++) {
        assert_int_equal(params_index(params_names[i]), i);
        assert_true(params_format(&p, params_names[i], buf, sizeof buf));
    }
    assert_int_equal(params_index("frobnicate"), -1);
}

/* The panel's keys over a real ui_app without an engine or a terminal. */
static void test_panel_keys(void **state)
{
    (void)state;
    ui_app *app = calloc(1, sizeof *app);
    assert_non_null(app);
    app->sp = defaults();
    app->focus = UI_FOCUS_PARAMS;
    ui_new_conv(app, "");
    assert_true(params_key(app, KEY_RIGHT)); /* temp 0.80 -> 0.85 */
    assert_float_equal(app->sp.temp, 0.85f, 1e-6);
    assert_true(params_key(app, KEY_DOWN)); /* top_k */
    assert_int_equal(app->param_sel, 1);
    assert_true(params_key(app, KEY_SRIGHT)); /* +10 */
    assert_int_equal(app->sp.top_k, 50);
    assert_true(params_key(app, KEY_UP));
    assert_true(params_key(app, KEY_UP)); /* wraps to the last row: effort */
    assert_int_equal(app->param_sel, PARAMS_ROWS - 1);
    assert_true(params_key(app, KEY_DOWN));
    assert_int_equal(app->param_sel, 0);
    /* typing a value: digits start an edit, Enter applies */
    assert_true(params_key(app, '0'));
    assert_true(app->param_editing);
    params_key(app, '.');
    params_key(app, '3');
    params_key(app, '\r');
    assert_false(app->param_editing);
    assert_float_equal(app->sp.temp, 0.3f, 1e-7);
    /* a bad value is refused with a message and changes nothing */
    params_key(app, '9');
    params_key(app, '9');
    params_key(app, '\r');
    assert_float_equal(app->sp.temp, 0.3f, 1e-7);
    assert_non_null(strstr(app->msg, "outside"));
    /* Esc cancels an edit; backspace edits */
    params_key(app, '1');
    params_key(app, 27);
    assert_false(app->param_editing);
    assert_float_equal(app->sp.temp, 0.3f, 1e-7);
    params_key(app, '1');
    params_key(app, '5');
    params_key(app, KEY_BACKSPACE);
    params_key(app, '\r');
    assert_float_equal(app->sp.temp, 1.0f, 1e-7);
    assert_false(params_key(app, 'x')); /* not a panel key */
    conv_free(app->convs[0]);
    free(app->convs);
    free(app);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_adjust_steps), cmocka_unit_test(test_seed),      cmocka_unit_test(test_set_value),
        cmocka_unit_test(test_names),        cmocka_unit_test(test_panel_keys),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
