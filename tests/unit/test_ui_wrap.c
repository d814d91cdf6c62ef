/* Word wrapping with wide characters, combining marks and long words. */
#include <locale.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "testutil.h"
#include "wrap.h"

#define MAXL 64

static size_t wrap(const char *s, int width, wrap_line *out)
{
    size_t n = wrap_text(s, strlen(s), width, out, MAXL);
    assert_true(n <= MAXL);
    return n;
}

static void assert_line(const char *s, const wrap_line *l, const char *expect)
{
    char buf[256];
    assert_true(l->len < sizeof buf);
    memcpy(buf, s + l->start, l->len);
    buf[l->len] = 0;
    assert_string_equal(buf, expect);
}

/* every line fits, lines tile the text (only wrapped spaces and '\n' between them) */
static void assert_tiles(const char *s, const wrap_line *v, size_t n, int width)
{
    size_t pos = 0;
    for (size_t i = 0; i < n; i++) {
        assert_true(v[i].width <= width || v[i].len <= 4); /* a lone too-wide char is allowed */
        assert_int_equal(v[i].width, wrap_str_width(s + v[i].start, v[i].len));
        while (pos < v[i].start) {
            assert_true(s[pos] == ' ' || s[pos] == '\n');
            pos++;
        }
        assert_int_equal(v[i].start, pos);
        pos += v[i].len;
    }
    while (pos < strlen(s)) {
        assert_true(s[pos] == ' ' || s[pos] == '\n');
        pos++;
    }
}

static void test_ascii_words(void **state)
{
    (void)state;
    wrap_line v[MAXL];
    const char *s = "hello world foo";
    size_t n = wrap(s, 11, v);
    assert_int_equal(n, 2);
    assert_line(s, &v[0], "hello world");
    assert_line(s, &v[1], "foo");
    n = wrap(s, 8, v);
    assert_int_equal(n, 3);
    assert_line(s, &v[0], "hello ");
    assert_line(s, &v[1], "world ");
    assert_line(s, &v[2], "foo");
    assert_tiles(s, v, n, 8);
    n = wrap(s, 80, v);
    assert_int_equal(n, 1);
    assert_int_equal(v[0].width, 15);
}

static void test_long_word_hard_break(void **state)
{
    (void)state;
    wrap_line v[MAXL];
    const char *s = "abcdefghij";
    size_t n = wrap(s, 4, v);
    assert_int_equal(n, 3);
    assert_line(s, &v[0], "abcd");
    assert_line(s, &v[1], "efgh");
    assert_line(s, &v[2], "ij");
    /* a long word after a short one moves to its own line, then breaks */
    s = "a bcdefghijkl";
    n = wrap(s, 5, v);
    assert_line(s, &v[0], "a ");
    assert_line(s, &v[1], "bcdef");
    assert_line(s, &v[2], "ghijk");
    assert_line(s, &v[3], "l");
    assert_tiles(s, v, n, 5);
}

static void test_cjk_wide(void **state)
{
    (void)state;
    wrap_line v[MAXL];
    const char *s = "日本語テキスト"; /* 7 characters, 2 columns each */
    assert_int_equal(wrap_str_width(s, strlen(s)), 14);
    size_t n = wrap(s, 5, v);
    assert_int_equal(n, 4); /* 2 per line: a third would straddle column 5 */
    assert_line(s, &v[0], "日本");
    assert_line(s, &v[3], "ト");
    for (size_t i = 0; i < n; i++)
        assert_true(v[i].width <= 5);
    assert_tiles(s, v, n, 5);
    /* mixed with ASCII and spaces */
    s = "ab 日本語 cd";
    n = wrap(s, 6, v);
    assert_tiles(s, v, n, 6);
    assert_line(s, &v[0], "ab ");
    assert_line(s, &v[1], "日本語"); /* the space at the edge is swallowed */
    assert_line(s, &v[2], "cd");
}

static void test_emoji(void **state)
{
    (void)state;
    wrap_line v[MAXL];
    const char *s = "\xf0\x9f\x98\x80\xf0\x9f\x98\x80\xf0\x9f\x98\x80"; /* three U+1F600 */
    assert_int_equal(wrap_str_width(s, strlen(s)), 6);
    size_t n = wrap(s, 3, v);
    assert_int_equal(n, 3);
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(v[i].width, 2);
        assert_int_equal(v[i].len, 4);
    }
    /* width 1: a wide character still gets a line of its own, no endless loop */
    n = wrap(s, 1, v);
    assert_int_equal(n, 3);
}

static void test_combining_marks(void **state)
{
    (void)state;
    wrap_line v[MAXL];
    /* "e" + U+0301 COMBINING ACUTE, five times: 5 columns */
    const char *s = "e\xcc\x81" "e\xcc\x81" "e\xcc\x81" "e\xcc\x81" "e\xcc\x81";
    assert_int_equal(wrap_str_width(s, strlen(s)), 5);
    size_t n = wrap(s, 3, v);
    assert_int_equal(n, 2);
    assert_int_equal(v[0].width, 3);
    assert_int_equal(v[0].len, 9); /* the mark stays with its base */
    for (size_t i = 0; i < n; i++)
        assert_false((unsigned char)s[v[i].start] == 0xcc); /* no line starts with a mark */
    assert_tiles(s, v, n, 3);
}

static void test_newlines_and_empty(void **state)
{
    (void)state;
    wrap_line v[MAXL];
    size_t n = wrap("", 10, v);
    assert_int_equal(n, 1);
    assert_int_equal(v[0].len, 0);
    const char *s = "a\n\nb\n";
    n = wrap(s, 10, v);
    assert_int_equal(n, 4);
    assert_line(s, &v[0], "a");
    assert_line(s, &v[1], "");
    assert_line(s, &v[2], "b");
    assert_line(s, &v[3], "");
    /* counting without storing gives the same number */
    assert_int_equal(wrap_text(s, strlen(s), 10, NULL, 0), 4);
}

static void test_invalid_utf8(void **state)
{
    (void)state;
    uint32_t cp;
    assert_int_equal(wrap_utf8_decode("\xc0\xaf", 2, &cp), 1); /* overlong */
    assert_int_equal(cp, 0xFFFD);
    assert_int_equal(wrap_utf8_decode("\xe6\x97", 2, &cp), 1); /* truncated */
    assert_int_equal(cp, 0xFFFD);
    assert_int_equal(wrap_utf8_decode("\xed\xa0\x80", 3, &cp), 1); /* surrogate */
    assert_int_equal(wrap_utf8_decode("\xe6\x97\xa5", 3, &cp), 3);
    assert_int_equal(cp, 0x65E5);
    char enc[4];
    assert_int_equal(wrap_utf8_encode(0x1F600, enc), 4);
    assert_memory_equal(enc, "\xf0\x9f\x98\x80", 4);
    wrap_line v[MAXL];
    const char *s = "\xff\xfe abc \x80";
    size_t n = wrap(s, 3, v);
    assert_tiles(s, v, n, 3);
}

static void test_fit(void **state)
{
    (void)state;
    int w;
    const char *s = "a日b";
    assert_int_equal(wrap_fit(s, strlen(s), 2, &w), 1); /* the wide char does not fit in 1 column */
    assert_int_equal(w, 1);
    assert_int_equal(wrap_fit(s, strlen(s), 3, &w), 4);
    assert_int_equal(w, 3);
}

static void test_escape(void **state)
{
    (void)state;
    char out[64];
    assert_string_equal(wrap_escape("a\nb\t\\", 5, out, sizeof out), "a\\nb\\t\\\\");
    assert_string_equal(wrap_escape("\x01\x7f", 2, out, sizeof out), "\\x01\\x7F");
    assert_string_equal(wrap_escape("\xff" "x", 2, out, sizeof out), "\\xFFx");
    assert_string_equal(wrap_escape(" é", strlen(" é"), out, sizeof out), " é");
    /* truncation never splits an escape */
    assert_string_equal(wrap_escape("\n\n\n", 3, out, 6), "\\n\\n");
}

int main(void)
{
    if (!setlocale(LC_ALL, "C.UTF-8"))
        setlocale(LC_ALL, "en_US.UTF-8");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ascii_words),    cmocka_unit_test(test_long_word_hard_break),
        cmocka_unit_test(test_cjk_wide),       cmocka_unit_test(test_emoji),
        cmocka_unit_test(test_combining_marks), cmocka_unit_test(test_newlines_and_empty),
        cmocka_unit_test(test_invalid_utf8),   cmocka_unit_test(test_fit),
        cmocka_unit_test(test_escape),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
