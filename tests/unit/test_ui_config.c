/* Config file: the shipped conf/tokscope.ini is valid and matches the
 * built-in defaults; every section is read; bad input names the key. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "config.h"
#include "testutil.h"

static const char *write_tmp(const char *text)
{
    static char path[64];
    snprintf(path, sizeof path, "/tmp/tokscope-cfg-XXXXXX");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    return path;
}

static void test_shipped_file_is_valid(void **state)
{
    (void)state;
    tok_config c;
    config_init(&c);
    sampler_params d = c.ui.engine.sampling;
    char err[512] = "";
    if (!config_load(&c, "conf/tokscope.ini", true, err, sizeof err))
        fail_msg("conf/tokscope.ini: %s", err);
    /* the documented values are the defaults */
    assert_float_equal(c.ui.engine.sampling.temp, d.temp, 1e-6);
    assert_int_equal(c.ui.engine.sampling.top_k, d.top_k);
    assert_float_equal(c.ui.engine.sampling.top_p, d.top_p, 1e-6);
    assert_float_equal(c.ui.engine.sampling.min_p, d.min_p, 1e-6);
    assert_int_equal(c.ui.engine.sampling.repeat_last_n, d.repeat_last_n);
    assert_int_equal(c.ui.engine.sampling.n_predict, d.n_predict);
    assert_int_equal(c.ui.engine.sampling.n_top, d.n_top);
    assert_false(c.ui.engine.sampling.seed_set);
    assert_true(c.ui.colors);
    assert_false(c.ui.mouse);
    assert_null(c.ui.engine.template_name);
    assert_true(c.ui.engine.context_shift);
    assert_false(c.ui.engine.no_kv_cache);
    assert_int_equal(c.ui.engine.n_ctx, 0);
    assert_int_equal(c.ui.engine.blas, BLAS_MODE_AUTO);
    config_free(&c);
}

static void test_all_sections(void **state)
{
    (void)state;
    const char *p = write_tmp("[sampling]\ntemp = 0.3\ntop_k = 7\nseed = 42\n"
                              "[ui]\ncolors = false\nprob_colors = yes\nmouse = on\ninspector_order = post\n"
                              "[paths]\nmodel_dirs = /a/b: ~/c , /d\nmodel = /x/y.gguf\n"
                              "[engine]\nn_ctx = 512\nthreads = 3\ntemplate = chatml\ncontext_shift = false\n"
                              "kv_cache = false\nblas = off\n"
                              "[chat]\nsystem = \"Be brief; really.\"\n");
    tok_config c;
    config_init(&c);
    char err[512] = "";
    if (!config_load(&c, p, true, err, sizeof err))
        fail_msg("%s", err);
    assert_float_equal(c.ui.engine.sampling.temp, 0.3f, 1e-6);
    assert_int_equal(c.ui.engine.sampling.top_k, 7);
    assert_true(c.ui.engine.sampling.seed_set);
    assert_int_equal(c.ui.engine.sampling.seed, 42);
    assert_false(c.ui.colors);
    assert_true(c.ui.prob_colors);
    assert_true(c.ui.mouse);
    assert_true(c.ui.post_order);
    assert_int_equal(c.n_dirs, 3);
    assert_string_equal(c.dirs[0], "/a/b");
    assert_string_equal(c.dirs[1], "~/c");
    assert_string_equal(c.dirs[2], "/d");
    assert_int_equal(c.ui.n_model_dirs, 3);
    assert_string_equal(c.model, "/x/y.gguf");
    assert_int_equal(c.ui.engine.n_ctx, 512);
    assert_int_equal(c.ui.engine.n_threads, 3);
    assert_string_equal(c.ui.engine.template_name, "chatml");
    assert_false(c.ui.engine.context_shift);
    assert_true(c.ui.engine.no_kv_cache);
    assert_int_equal(c.ui.engine.blas, BLAS_MODE_OFF);
    assert_string_equal(c.ui.system, "Be brief; really.");
    config_free(&c);
    remove(p);
}

static void expect_error(const char *text, const char *needle)
{
    const char *p = write_tmp(text);
    tok_config c;
    config_init(&c);
    char err[512] = "";
    assert_false(config_load(&c, p, true, err, sizeof err));
    if (!strstr(err, needle))
        fail_msg("error '%s' does not mention '%s'", err, needle);
    config_free(&c);
    remove(p);
}

static void test_errors(void **state)
{
    (void)state;
    expect_error("[sampling]\ntemp = banana\n", "temp");
    expect_error("[sampling]\ntop_p = 3\n", "top_p");
    expect_error("[sampling]\nwarmth = 1\n", "warmth");
    expect_error("[ui]\ncolors = maybe\n", "colors");
    expect_error("[ui]\ncolour = true\n", "colour");
    expect_error("[ui]\ninspector_order = sideways\n", "inspector_order");
    expect_error("[engine]\nn_ctx = -5\n", "n_ctx");
    expect_error("[engine]\nthreads = many\n", "threads");
    expect_error("[engine]\ncontext_shift = 2\n", "context_shift");
    expect_error("[engine]\nblas = sometimes\n", "blas");
    expect_error("[paths]\nmodels = /x\n", "models");
    expect_error("[whatever]\nx = 1\n", "whatever");
}

static void test_missing_file(void **state)
{
    (void)state;
    tok_config c;
    config_init(&c);
    char err[512] = "";
    assert_true(config_load(&c, "/nonexistent/tokscope.ini", false, err, sizeof err)); /* optional */
    assert_false(config_load(&c, "/nonexistent/tokscope.ini", true, err, sizeof err)); /* --config */
    assert_non_null(strstr(err, "/nonexistent/tokscope.ini"));
    config_free(&c);
}

static void test_default_path(void **state)
{
    (void)state;
    char buf[512];
    setenv("XDG_CONFIG_HOME", "/xdg", 1);
    assert_string_equal(config_default_path(buf, sizeof buf), "/xdg/tokscope/tokscope.ini");
    unsetenv("XDG_CONFIG_HOME");
    setenv("HOME", "/home/u", 1);
    assert_string_equal(config_default_path(buf, sizeof buf), "/home/u/.config/tokscope/tokscope.ini");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shipped_file_is_valid), cmocka_unit_test(test_all_sections),
        cmocka_unit_test(test_errors),                cmocka_unit_test(test_missing_file),
        cmocka_unit_test(test_default_path),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
