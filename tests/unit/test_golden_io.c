/* The golden JSON lines tokscope writes (app/golden.c): the last line's
 * "text" is valid UTF-8 whatever bytes the model's byte tokens produced
 * (JSON readers reject anything else), and the exact bytes are kept in
 * "text_hex" when they are not UTF-8. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <cjson/cJSON.h>

#include "golden.h"
#include "testutil.h"
#include "utf8.h"

/* writes the final line for text and parses it back */
static cJSON *final_line(const char *text, char *raw, size_t cap)
{
    FILE *f = tmpfile();
    assert_non_null(f);
    const int32_t gen[2] = {7, 9};
    golden_write_final(f, gen, 2, text);
    rewind(f);
    size_t n = fread(raw, 1, cap - 1, f);
    raw[n] = 0;
    fclose(f);
    assert_true(utf8_valid(raw, n));
    cJSON *j = cJSON_Parse(raw);
    assert_non_null(j);
    return j;
}

static void test_invalid_utf8_becomes_fffd_with_hex(void **state)
{
    (void)state;
    char raw[512];
    /* a split three-byte sequence, a lone continuation byte, then ASCII */
    cJSON *j = final_line("a\xE2\x80" "b\x80z", raw, sizeof raw);
    const cJSON *t = cJSON_GetObjectItem(j, "text");
    assert_true(cJSON_IsString(t));
    assert_string_equal(t->valuestring, "a\xEF\xBF\xBD\xEF\xBF\xBD" "b\xEF\xBF\xBDz");
    const cJSON *h = cJSON_GetObjectItem(j, "text_hex");
    assert_true(cJSON_IsString(h));
    assert_string_equal(h->valuestring, "61e28062807a");
    cJSON_Delete(j);
}

static void test_valid_utf8_has_no_hex(void **state)
{
    (void)state;
    char raw[512];
    cJSON *j = final_line("caf\xC3\xA9 \xE2\x9C\x93", raw, sizeof raw);
    assert_string_equal(cJSON_GetObjectItem(j, "text")->valuestring, "caf\xC3\xA9 \xE2\x9C\x93");
    assert_null(cJSON_GetObjectItem(j, "text_hex"));
    const cJSON *g = cJSON_GetObjectItem(j, "generated");
    assert_int_equal(cJSON_GetArraySize(g), 2);
    cJSON_Delete(j);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_invalid_utf8_becomes_fffd_with_hex),
        cmocka_unit_test(test_valid_utf8_has_no_hex),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
