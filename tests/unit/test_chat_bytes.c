/* A reply is bytes: a NUL in a message (a model's byte token <0x00>) reaches
 * the next turn's prompt whole, with the bytes after it, in every format the
 * one chat prompt function renders: the model's Jinja template, a built-in,
 * raw. Checked against the same conversation with '?' in the NUL's place:
 * the same text but that byte, and the tokens hold the NUL's byte token. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "chat/chat.h"
#include "chat/chat_prompt.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"
#include "testutil.h"

static const char REPLY[] = "a\0b tail";     /* 8 bytes */
static const char REPLY_Q[] = "a?b tail";
#define REPLY_LEN 8

static void conversation(chat_message *v, const char *reply, bool lens)
{
    v[0] = (chat_message){"user", "Hello there", 0};
    v[1] = (chat_message){CHAT_ROLE_REASONING, reply, lens ? REPLY_LEN : 0};
    v[2] = (chat_message){"assistant", reply, lens ? REPLY_LEN : 0};
    v[3] = (chat_message){"user", "more", 0};
}

/* The prompt with the NUL equals the one with '?' but that byte. */
static void check_format(const tokenizer *tok, const char *tmpl, const char *forced)
{
    chat_prompt_src src = {.tok = tok, .model_template = tmpl, .forced = forced};
    chat_message a[4], b[4];
    conversation(a, REPLY, true);
    conversation(b, REPLY_Q, false);
    char err[256] = "";
    size_t la = 0, lb = 0;
    char *ta = chat_prompt_render_n(&src, a, 4, true, NULL, 0, &la, err, sizeof err);
    char *tb = chat_prompt_render_n(&src, b, 4, true, NULL, 0, &lb, err, sizeof err);
    assert_non_null(ta);
    assert_non_null(tb);
    assert_int_equal(la, lb);
    size_t diff = 0;
    for (size_t i = 0; i < la; i++)
        if (ta[i] != tb[i]) {
            assert_int_equal(ta[i], 0);
            assert_int_equal(tb[i], '?');
            diff++;
        }
    assert_true(diff >= 1); /* the reply (and its reasoning, where the template writes it) */
    free(ta);
    free(tb);

    int32_t one[4]; /* SPM may put its space first: the NUL's token is the last */
    const int32_t k = tokenizer_encode(tok, "\0", 1, false, false, one, 4);
    assert_true(k >= 1 && k <= 4);
    const int32_t nul_id = one[k - 1];
    int32_t np = 0;
    int32_t *ids = chat_prompt_tokenize(&src, a, 4, &np, NULL, 0, err, sizeof err);
    assert_non_null(ids);
    bool seen = false;
    for (int32_t i = 0; i < np; i++)
        seen |= ids[i] == nul_id;
    assert_true(seen);
    assert_int_equal(chat_prompt_count(&src, a, 4, 0, err, sizeof err), np);
    free(ids);
}

static void test_nul_in_reply(void **state)
{
    (void)state;
    char err[256];
    model *m = model_load(testdata_path("models/tiny-spm-q8_0.gguf"), err, sizeof err);
    if (!m) {
        if (testdata_in_ci())
            fail_msg("%s", err);
        skip();
    }
    const tokenizer *tok = model_get_tokenizer(m);
    check_format(tok, model_get_chat_template(m), NULL); /* its Jinja template (zephyr) */
    check_format(tok, NULL, "chatml");                 /* a built-in */
    check_format(tok, NULL, "gemma");                  /* a built-in that trims */
    check_format(tok, NULL, "raw");
    model_free(m);
}

/* The escape that carries such a content through cJSON into a template. */
static void test_bytes_escape(void **state)
{
    (void)state;
    const char in[] = "\0x\xff\xff" "0\0";
    char *e = chat_bytes_escape(in, sizeof in - 1);
    assert_non_null(e);
    assert_int_equal(strlen(e), sizeof in - 1 + 4);
    assert_int_equal(chat_bytes_unescape(e), sizeof in - 1);
    assert_memory_equal(e, in, sizeof in - 1);
    free(e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_nul_in_reply), cmocka_unit_test(test_bytes_escape)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
