/* `tokscope pull`'s choices without a network: spec parsing, the whole-word
 * quant match, split-part names, and which files of a hub listing a spec
 * picks (the network side is tests/golden/pull.sh, against a mock hub). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "pull.h"

static void test_spec(void **state)
{
    (void)state;
    pull_spec s;
    char err[512];
    assert_int_equal(pull_spec_parse("unsloth/Qwen3.5-4B-GGUF:Q4_K_M", &s, err, sizeof err), 0);
    assert_false(s.is_url);
    assert_string_equal(s.repo, "unsloth/Qwen3.5-4B-GGUF");
    assert_string_equal(s.quant, "Q4_K_M");
    assert_int_equal(pull_spec_parse("bartowski/x-GGUF", &s, err, sizeof err), 0);
    assert_string_equal(s.quant, "");
    assert_int_equal(pull_spec_parse("https://h/x/resolve/main/a.gguf?download=1", &s, err, sizeof err), 0);
    assert_true(s.is_url);
    const char *bad[] = {"", "noslash", "/x", "x/", "a/b/c", "a/b:", "a/b:../x", "a b/c", "a/b:x/y"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_equal(pull_spec_parse(bad[i], &s, err, sizeof err), -1);
}

static void test_quant_word(void **state)
{
    (void)state;
    assert_true(pull_name_has_quant("Qwen3.5-4B-Q4_K_M.gguf", "Q4_K_M"));
    assert_true(pull_name_has_quant("Qwen3.5-4B-q4_k_m.gguf", "Q4_K_M"));
    assert_false(pull_name_has_quant("Qwen3.5-4B-Q4_K_M.gguf", "Q4_K"));
    assert_false(pull_name_has_quant("Qwen3.5-4B-IQ4_XS.gguf", "Q4_XS"));
    assert_true(pull_name_has_quant("Q4_K_M/x-Q4_K_M-00001-of-00002.gguf", "Q4_K_M"));
    assert_true(pull_name_has_quant("x-UD-Q4_K_XL.gguf", "UD-Q4_K_XL"));
    assert_false(pull_name_has_quant("x-Q8_0.gguf", ""));
}

static void test_split(void **state)
{
    (void)state;
    int p, c;
    size_t l;
    assert_true(pull_split_part("big-Q4_K_M-00002-of-00003.gguf", &p, &c, &l));
    assert_int_equal(p, 2);
    assert_int_equal(c, 3);
    assert_int_equal(l, strlen("big-Q4_K_M"));
    assert_false(pull_split_part("big-Q4_K_M.gguf", &p, &c, &l));
    assert_false(pull_split_part("big-00004-of-00003.gguf", &p, &c, &l));
    assert_false(pull_split_part("big-0000a-of-00003.gguf", &p, &c, &l));
}

static const char *tree =
    "[{\"type\":\"directory\",\"path\":\"Q8_0\"},"
    "{\"type\":\"file\",\"path\":\"README.md\",\"size\":10},"
    "{\"type\":\"file\",\"path\":\"m-Q4_K_M.gguf\",\"size\":7,\"lfs\":{\"oid\":"
    "\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\",\"size\":1000}},"
    "{\"type\":\"file\",\"path\":\"m-Q4_K_S.gguf\",\"size\":900},"
    "{\"type\":\"file\",\"path\":\"mmproj-m-Q4_K_M.gguf\",\"size\":5},"
    "{\"type\":\"file\",\"path\":\"m-IQ4_XS.gguf\",\"size\":800},"
    "{\"type\":\"file\",\"path\":\"m-IQ4_NL.gguf\",\"size\":800},"
    "{\"type\":\"file\",\"path\":\"Q8_0/m-Q8_0-00002-of-00002.gguf\",\"size\":2},"
    "{\"type\":\"file\",\"path\":\"Q8_0/m-Q8_0-00001-of-00002.gguf\",\"size\":1},"
    "{\"type\":\"file\",\"path\":\"BF16/m-BF16-00001-of-00002.gguf\",\"size\":1}]";

static void test_pick(void **state)
{
    (void)state;
    pull_file f[8];
    char err[1024];
    assert_int_equal(pull_pick(tree, "Q4_K_M", f, 8, err, sizeof err), 1);
    assert_string_equal(f[0].path, "m-Q4_K_M.gguf");
    assert_int_equal(f[0].size, 1000); /* the LFS size, not the pointer's */
    assert_int_equal(strlen(f[0].sha256), 64);
    assert_int_equal(pull_pick(tree, "", f, 8, err, sizeof err), 1); /* default Q4_K_M, not mmproj */
    assert_string_equal(f[0].path, "m-Q4_K_M.gguf");
    assert_int_equal(pull_pick(tree, "q8_0", f, 8, err, sizeof err), 2); /* both parts, in order */
    assert_string_equal(f[0].path, "Q8_0/m-Q8_0-00001-of-00002.gguf");
    assert_string_equal(f[1].path, "Q8_0/m-Q8_0-00002-of-00002.gguf");
    assert_int_equal(pull_pick(tree, "m-IQ4_NL.gguf", f, 8, err, sizeof err), 1);
    assert_string_equal(f[0].path, "m-IQ4_NL.gguf");
    assert_int_equal(pull_pick(tree, "Q4_K", f, 8, err, sizeof err), -1);
    assert_non_null(strstr(err, "no .gguf file matches 'Q4_K'"));
    assert_int_equal(pull_pick(tree, "BF16", f, 8, err, sizeof err), -1); /* a part is missing */
    assert_non_null(strstr(err, "part 2 of 2"));
    assert_int_equal(pull_pick("[{\"type\":\"file\",\"path\":\"a-Q5_0.gguf\"},{\"type\":\"file\",\"path\":\"a-Q6_K.gguf\"}]",
                               "", f, 8, err, sizeof err), -1); /* no Q4_K_M, two models: name one */
    assert_non_null(strstr(err, "2 files match"));
    assert_int_equal(pull_pick("[{\"type\":\"file\",\"path\":\"a-Q5_0.gguf\"}]", "", f, 8, err, sizeof err), 1);
    assert_int_equal(pull_pick("{}", "", f, 8, err, sizeof err), -1);
    assert_int_equal(pull_pick("[]", "", f, 8, err, sizeof err), -1);
    assert_int_equal(pull_pick("not json", "", f, 8, err, sizeof err), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_spec),
        cmocka_unit_test(test_quant_word),
        cmocka_unit_test(test_split),
        cmocka_unit_test(test_pick),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
