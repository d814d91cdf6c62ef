/* GGUF reader: real files from ../shared open and expose what we need. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "gguf.h"
#include "tensor.h"
#include "testutil.h"

static void test_open_stories(void **state)
{
    (void)state;
    const char *path = TESTDATA_REQUIRE("models/stories260K.gguf");
    char err[512];
    gguf_ctx *g = gguf_open(path, err, sizeof err);
    assert_non_null(g);
    assert_int_equal(gguf_version(g), 3);
    uint32_t n_embd = 0;
    assert_true(gguf_get_u32(g, "llama.embedding_length", &n_embd));
    assert_int_equal(n_embd, 64);
    const gguf_tensor *t = gguf_find_tensor(g, "token_embd.weight");
    assert_non_null(t);
    assert_int_equal(t->ne[0], 64);
    assert_int_equal(t->ne[1], 512);
    assert_int_equal(t->type, TENSOR_TYPE_F32);
    int64_t k = gguf_find_key(g, "tokenizer.ggml.tokens");
    assert_true(k >= 0);
    assert_int_equal(gguf_arr_len(g, k), 512);
    gguf_close(g);
}

static void test_reject_not_gguf(void **state)
{
    (void)state;
    static const char junk[64] = "this is not a gguf file at all....";
    char err[512];
    gguf_ctx *g = gguf_open_buffer(junk, sizeof junk, "junk", err, sizeof err);
    assert_null(g);
    assert_non_null(strstr(err, "magic"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_open_stories),
        cmocka_unit_test(test_reject_not_gguf),
    };
    return cmocka_run_group_tests_name("gguf", tests, NULL, NULL);
}
