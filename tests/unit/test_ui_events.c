/* The UI's reaction to engine events, driven by a fake engine: events built
 * by hand and applied in the order a real turn produces them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "status.h"
#include "testutil.h"
#include "ui.h"

static engine_event ev_of(enum engine_event_type t)
{
    engine_event ev;
    memset(&ev, 0, sizeof ev);
    ev.type = t;
    ev.conv_id = 1;
    return ev;
}

static ui_app *fake_app(void)
{
    ui_app *app = calloc(1, sizeof *app);
    assert_non_null(app);
    app->gen_conv_id = -1;
    app->next_conv_id = 1;
    app->state = UI_STATE_LOADING;
    snprintf(app->model_path, sizeof app->model_path, "/m.gguf");
    ui_new_conv(app, "");
    return app;
}

static void free_app(ui_app *app)
{
    for (size_t i = 0; i < app->n_convs; i++)
        conv_free(app->convs[i]);
    free(app->convs);
    ui_overlay_close(app);
    free(app);
}

/* what ui_submit does, minus the engine */
static void fake_submit(ui_app *app, const char *text)
{
    ui_conv *c = ui_current(app);
    conv_add_msg(c, "user", text);
    size_t mi = conv_add_msg(c, "assistant", "");
    c->msgs[mi].streaming = true;
    app->gen_conv_id = c->id;
    app->gen_msg = mi;
    app->gen_count = 0;
    app->state = UI_STATE_PREFILL;
}

static void test_turn(void **state)
{
    (void)state;
    ui_app *app = fake_app();
    char buf[64];
    engine_event ev = ev_of(ENGINE_EV_LOAD_PROGRESS);
    ev.progress = 0.42f;
    ui_handle_event(app, &ev);
    assert_string_equal(status_state_text(app, buf, sizeof buf), "loading 42%");
    ev = ev_of(ENGINE_EV_LOADED);
    snprintf(ev.info.name, sizeof ev.info.name, "tiny");
    ev.n_ctx = 2048;
    ui_handle_event(app, &ev);
    assert_true(app->loaded);
    assert_int_equal(app->state, UI_STATE_IDLE);
    assert_int_equal(app->n_ctx, 2048);

    fake_submit(app, "hello");
    ev = ev_of(ENGINE_EV_PREFILL);
    ev.done = 3;
    ev.total = 4;
    ev.n_past = 3;
    ev.n_ctx = 2048;
    ui_handle_event(app, &ev);
    assert_string_equal(status_state_text(app, buf, sizeof buf), "prefill 75%");
    assert_int_equal(app->n_past, 3);
    /* the prompt's last PREFILL event carries its speed, shown from then on */
    ev.done = 4;
    ev.prompt_tps = 1234.0;
    ui_handle_event(app, &ev);
    assert_true(app->prompt_tps == 1234.0);

    const char *pieces[] = {"Hi", " there", "\xe6\x97"}; /* the last one: an incomplete character */
    for (int i = 0; i < 3; i++) {
        ev = ev_of(ENGINE_EV_TOKEN);
        ev.token = 10 + i;
        ev.pos = 4 + i;
        ev.n_past = 5 + i;
        ev.n_ctx = 2048;
        /* the engine holds incomplete UTF-8 back: the third token adds no bytes yet */
        const char *t = i == 2 ? "" : pieces[i];
        ev.text_len = (int32_t)strlen(t);
        memcpy(ev.text, t, strlen(t));
        ev.p_post = 0.5f;
        ev.n_top = 1;
        ev.top[0].id = 10 + i;
        ui_handle_event(app, &ev);
        assert_int_equal(app->state, UI_STATE_GENERATING);
    }
    ui_msg *m = &ui_current(app)->msgs[1];
    assert_string_equal(m->text, "Hi there");
    assert_int_equal(m->n_toks, 3);
    assert_int_equal(app->n_past, 7);
    /* a token for another conversation is not mixed in */
    ev = ev_of(ENGINE_EV_TOKEN);
    ev.conv_id = 99;
    ev.text_len = 3;
    memcpy(ev.text, "BAD", 3);
    ui_handle_event(app, &ev);
    assert_string_equal(m->text, "Hi there");

    ev = ev_of(ENGINE_EV_CONTEXT_SHIFT);
    ev.n_dropped = 512;
    ui_handle_event(app, &ev);
    assert_non_null(strstr(app->msg, "context shift: dropped 512 tokens"));

    /* DONE releases the held-back bytes: they belong to the last token */
    ev = ev_of(ENGINE_EV_DONE);
    ev.reason = ENGINE_DONE_STOPPED;
    memcpy(ev.text, "\xe6\x97\xa5", 3);
    ev.text_len = 3;
    ev.n_prompt = 4;
    ev.prompt_tps = 100;
    ev.n_gen = 3;
    ev.gen_tps = 50;
    ev.n_past = 7;
    ev.n_ctx = 2048;
    app->gen_count = 3;
    ui_handle_event(app, &ev);
    assert_string_equal(m->text, "Hi there\xe6\x97\xa5");
    assert_int_equal(m->toks[2].len, 3);
    assert_false(m->streaming);
    assert_int_equal(m->done_reason, ENGINE_DONE_STOPPED);
    assert_int_equal(app->state, UI_STATE_IDLE);
    assert_int_equal(app->gen_conv_id, -1);
    assert_float_equal(app->gen_tps, 50, 1e-9);
    assert_non_null(strstr(app->msg, "stopped after 3 tokens"));
    free_app(app);
}

static void test_load_error(void **state)
{
    (void)state;
    ui_app *app = fake_app();
    fake_submit(app, "typed while loading");
    app->state = UI_STATE_LOADING;
    engine_event ev = ev_of(ENGINE_EV_ERROR);
    snprintf(ev.message, sizeof ev.message, "bad magic");
    ui_handle_event(app, &ev);
    assert_int_equal(app->state, UI_STATE_NO_MODEL);
    assert_non_null(app->overlay); /* the error is shown in full */
    assert_string_equal(app->overlay_title, "Cannot load the model");
    assert_int_equal(app->gen_conv_id, -1);
    assert_false(ui_current(app)->msgs[1].streaming);
    free_app(app);
}

static void test_generation_error(void **state)
{
    (void)state;
    ui_app *app = fake_app();
    engine_event ev = ev_of(ENGINE_EV_LOADED);
    ui_handle_event(app, &ev);
    fake_submit(app, "x");
    ev = ev_of(ENGINE_EV_DONE);
    ev.reason = ENGINE_DONE_ERROR;
    snprintf(ev.message, sizeof ev.message, "prompt too long");
    ui_handle_event(app, &ev);
    assert_int_equal(app->msg_level, UI_MSG_ERROR);
    assert_non_null(strstr(app->msg, "prompt too long"));
    assert_int_equal(app->state, UI_STATE_IDLE);
    free_app(app);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_turn),
        cmocka_unit_test(test_load_error),
        cmocka_unit_test(test_generation_error),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
