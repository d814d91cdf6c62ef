/* Conversation model fed by a fake engine (TOKEN events built by hand): token
 * offsets, the message list sent to the engine, the token cursor, and the
 * screen layout at every size down to 1x1. */
#include <locale.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "conv.h"
#include "layout.h"
#include "testutil.h"
#include "wrap.h"

/* what the engine would post for one generated token */
static engine_event fake_token(int32_t id, int32_t pos, const char *text, float p)
{
    engine_event ev;
    memset(&ev, 0, sizeof ev);
    ev.type = ENGINE_EV_TOKEN;
    ev.token = id;
    ev.pos = pos;
    ev.text_len = (int32_t)strlen(text);
    memcpy(ev.text, text, strlen(text));
    ev.p_raw = p;
    ev.p_post = p;
    ev.n_top = 3;
    for (int k = 0; k < 3; k++) {
        ev.top[k].id = id + k;
        ev.top[k].logit = 10.0f - (float)k;
        ev.top[k].p_raw = k == 0 ? p : (1 - p) / 2;
        snprintf(ev.top[k].text, sizeof ev.top[k].text, "%s", k == 0 ? text : "x");
    }
    return ev;
}

static void add_reply(ui_conv *c, int32_t pos0, const char *const *pieces, int n)
{
    size_t mi = conv_add_msg(c, "assistant", "");
    for (int i = 0; i < n; i++) {
        engine_event ev = fake_token(100 + i, pos0 + i, pieces[i], 0.5f);
        msg_add_token(&c->msgs[mi], &ev);
    }
}

static void test_tokens_build_text(void **state)
{
    (void)state;
    ui_conv *c = conv_create(1, "");
    conv_add_msg(c, "user", "hi");
    static const char *const pieces[] = {"Hello", ",", " wor", "ld", " 日本", ""};
    add_reply(c, 10, pieces, 6);
    ui_msg *m = &c->msgs[1];
    assert_string_equal(m->text, "Hello, world 日本");
    assert_int_equal(m->n_toks, 6);
    assert_int_equal(m->toks[2].off, 6);
    assert_int_equal(m->toks[2].len, 4);
    assert_int_equal(m->toks[2].pos, 12);
    assert_int_equal(m->toks[5].len, 0); /* a token that adds no bytes (held-back UTF-8) */
    assert_int_equal(m->toks[0].n_top, 3);
    assert_string_equal(m->toks[0].top[0].text, "Hello");
    /* a malformed event cannot overflow */
    engine_event ev = fake_token(1, 1, "", 0.1f);
    ev.text_len = 100000;
    ev.n_top = 100000;
    msg_add_token(m, &ev);
    assert_true(m->toks[6].len < ENGINE_TEXT_MAX);
    assert_int_equal(m->toks[6].n_top, SAMPLER_MAX_TOP);
    conv_free(c);
}

static void test_chat_messages(void **state)
{
    (void)state;
    ui_conv *c = conv_create(1, "Be brief.");
    conv_add_msg(c, "user", "one");
    conv_add_msg(c, "assistant", "two");
    conv_add_msg(c, "user", "three");
    conv_add_msg(c, "assistant", ""); /* the placeholder of a reply being generated */
    chat_message *v;
    size_t n = conv_chat_messages(c, &v);
    assert_int_equal(n, 4);
    assert_string_equal(v[0].role, "system");
    assert_string_equal(v[0].content, "Be brief.");
    assert_string_equal(v[3].role, "user");
    assert_string_equal(v[3].content, "three");
    free(v);
    conv_set_system(c, "");
    n = conv_chat_messages(c, &v);
    assert_int_equal(n, 3);
    assert_string_equal(v[0].role, "user");
    free(v);
    /* a reply with a NUL (a byte token) goes to the next turn whole */
    conv_pop(c);
    conv_add_msg_n(c, "assistant", "x\0y", 3);
    n = conv_chat_messages(c, &v);
    assert_int_equal(n, 4);
    assert_int_equal(chat_content_len(&v[3]), 3);
    assert_memory_equal(v[3].content, "x\0y", 3);
    free(v);
    conv_pop(c);
    conv_add_msg(c, "assistant", "");
    conv_pop(c);
    conv_pop(c);
    assert_int_equal(c->n_msgs, 2);
    conv_clear(c);
    assert_int_equal(c->n_msgs, 0);
    conv_free(c);
}

static void test_cursor(void **state)
{
    (void)state;
    ui_conv *c = conv_create(1, "");
    assert_null(conv_latest(c));
    assert_false(conv_sel_step(c, -1)); /* nothing to select */
    static const char *const a[] = {"A", "B", "C"};
    static const char *const b[] = {"D", "E"};
    conv_add_msg(c, "user", "q1");
    add_reply(c, 0, a, 3);
    conv_add_msg(c, "user", "q2");
    add_reply(c, 10, b, 2);
    assert_int_equal(conv_latest(c)->id, 101); /* "E" */
    assert_null(conv_selected(c));
    assert_true(conv_sel_step(c, -1)); /* first move selects the latest */
    assert_int_equal(conv_selected(c)->pos, 11);
    assert_true(conv_sel_step(c, -1));
    assert_int_equal(conv_selected(c)->pos, 10);
    assert_true(conv_sel_step(c, -1)); /* crosses the user message into the previous reply */
    assert_int_equal(conv_selected(c)->pos, 2);
    assert_true(conv_sel_step(c, -5)); /* stops at the first token */
    assert_int_equal(conv_selected(c)->pos, 0);
    assert_false(conv_sel_step(c, -1));
    int n;
    assert_int_equal(conv_token_ordinal(c, conv_selected(c), &n), 1);
    assert_int_equal(n, 5);
    assert_true(conv_sel_last(c));
    assert_int_equal(conv_token_ordinal(c, conv_selected(c), NULL), 5);
    assert_true(conv_sel_first(c));
    assert_int_equal(conv_selected(c)->pos, 0);
    /* line moves over a wrapped layout */
    conv_build_lines(c, 40);
    assert_true(conv_sel_line(c, 1));
    assert_int_equal(conv_selected(c)->pos, 10); /* next reply's text line */
    assert_true(conv_sel_line(c, -1));
    assert_int_equal(conv_selected(c)->pos, 0);
    conv_sel_clear(c);
    assert_null(conv_selected(c));
    /* popping the selected message clears the cursor */
    conv_sel_last(c);
    conv_pop(c);
    assert_null(conv_selected(c));
    conv_free(c);
}

static void test_build_lines(void **state)
{
    (void)state;
    ui_conv *c = conv_create(1, "system text");
    conv_add_msg(c, "user", "a fairly long message that has to wrap over several lines");
    conv_build_lines(c, 20);
    /* system: label + 1 line + blank; user: label + lines + blank */
    assert_int_equal(c->vl[0].kind, CONV_VL_LABEL);
    assert_int_equal(c->vl[0].msg, -1);
    size_t text_lines = 0;
    for (size_t i = 0; i < c->n_vl; i++)
        if (c->vl[i].msg == 0 && c->vl[i].kind == CONV_VL_TEXT) {
            text_lines++;
            assert_true(c->vl[i].len <= 18);
        }
    assert_true(text_lines >= 3);
    conv_build_lines(c, 1); /* degenerate widths do not hang */
    conv_build_lines(c, 0);
    conv_free(c);
}

/* wrapping a reply as it streams (from its last line on) gives the same
 * lines as wrapping the finished text */
static void test_incremental_wrap(void **state)
{
    (void)state;
    static const char *const pieces[] = {"Once", " upon", " a", " time", ",", " 日本", "語の", "テキスト", " and",
                                         " a", "verylongwordthatneverends", "\n", "\n", "new", " line", " e\xcc\x81",
                                         " 😀", "😀", " end", " ", "  "};
    for (int width = 3; width < 30; width += 4) {
        ui_conv *c = conv_create(1, "");
        size_t mi = conv_add_msg(c, "assistant", "");
        for (size_t i = 0; i < sizeof pieces / sizeof pieces[0]; i++) {
            engine_event ev = fake_token((int32_t)i, (int32_t)i, pieces[i], 0.5f);
            msg_add_token(&c->msgs[mi], &ev);
            conv_build_lines(c, width);
        }
        const ui_msg *m = &c->msgs[mi];
        wrap_line full[256];
        size_t n = wrap_text(m->text, m->len, width - 2, full, 256);
        size_t k = 0;
        for (size_t i = 0; i < c->n_vl; i++)
            if (c->vl[i].kind == CONV_VL_TEXT) {
                assert_true(k < n);
                assert_int_equal(c->vl[i].start, full[k].start);
                assert_int_equal(c->vl[i].len, full[k].len);
                k++;
            }
        assert_int_equal(k, n);
        conv_free(c);
    }
}

static int inside(ui_rect r, int rows, int cols)
{
    return r.y >= 0 && r.x >= 0 && r.h >= 0 && r.w >= 0 && r.y + r.h <= rows && r.x + r.w <= cols;
}

static int overlap(ui_rect a, ui_rect b)
{
    if (a.h == 0 || a.w == 0 || b.h == 0 || b.w == 0)
        return 0;
    return a.x < b.x + b.w && b.x < a.x + a.w && a.y < b.y + b.h && b.y < a.y + a.h;
}

static void test_layout(void **state)
{
    (void)state;
    ui_layout l;
    layout_compute(&l, 40, 120, 1);
    assert_false(l.too_small);
    assert_int_equal(l.params.h, LAYOUT_PARAMS_ROWS);
    assert_true(l.inspector.h >= 12);
    assert_true(l.conv.w >= 60);
    layout_compute(&l, 10, 40, 1);
    assert_false(l.too_small);
    layout_compute(&l, 9, 40, 1);
    assert_true(l.too_small);
    layout_compute(&l, 10, 39, 1);
    assert_true(l.too_small);
    layout_compute(&l, 5, 20, 1);
    assert_true(l.too_small);
    /* every size: panes inside the screen, never overlapping, input grows but is capped */
    for (int rows = 1; rows <= 60; rows++)
        for (int cols = 1; cols <= 200; cols += 7)
            for (int in = 1; in <= 20; in += 19) {
                layout_compute(&l, rows, cols, in);
                if (l.too_small)
                    continue;
                ui_rect r[] = {l.title, l.conv, l.params, l.inspector, l.input, l.status, l.keys};
                for (size_t i = 0; i < 7; i++) {
                    assert_true(inside(r[i], rows, cols));
                    for (size_t j = i + 1; j < 7; j++)
                        assert_false(overlap(r[i], r[j]));
                }
                assert_true(l.input.h >= 2 && l.input.h <= 7);
                assert_int_equal(l.status.h, 1);
                assert_true(l.conv.h >= 1);
            }
}

int main(void)
{
    setlocale(LC_ALL, "C.UTF-8");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tokens_build_text), cmocka_unit_test(test_chat_messages),
        cmocka_unit_test(test_cursor),            cmocka_unit_test(test_build_lines),
        cmocka_unit_test(test_incremental_wrap), cmocka_unit_test(test_layout),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
