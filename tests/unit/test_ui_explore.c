/* Explore mode in the UI, on the conversation model and events built by
 * hand (an engine without a model answers the commands): versions of a
 * message (fork, switch, undo a fork, free), a branch from another
 * candidate (the old reply stays a sibling, the prefix is copied, the engine
 * gets its tokens), step mode's events (the pending step, undo, stale events
 * of an abandoned turn), lens answers, the entropy strip's levels and jumps,
 * and /save with versions and tokens, /load of both formats. */
#include <locale.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <unistd.h>

#include "commands.h"
#include "explore.h"
#include "inspector.h"
#include "status.h"
#include "testutil.h"
#include "ui.h"

static engine_event token_ev(int32_t id, int32_t pos, const char *text, float p, float h)
{
    engine_event ev;
    memset(&ev, 0, sizeof ev);
    ev.type = ENGINE_EV_TOKEN;
    ev.conv_id = 1;
    ev.token = id;
    ev.pos = pos;
    ev.text_len = (int32_t)strlen(text);
    memcpy(ev.text, text, strlen(text));
    ev.p_raw = ev.p_post = p;
    ev.entropy_raw = h;
    ev.n_top = 3;
    for (int k = 0; k < 3; k++) {
        ev.top[k].id = k == 0 ? id : id + 100 + k;
        ev.top[k].logit = 5.0f - (float)k;
        ev.top[k].p_raw = k == 0 ? p : (1 - p) / 2;
        snprintf(ev.top[k].text, sizeof ev.top[k].text, "%s", k == 0 ? text : "alt");
    }
    return ev;
}

static ui_app *fake_app(bool with_engine)
{
    ui_app *app = calloc(1, sizeof *app);
    assert_non_null(app);
    app->gen_conv_id = -1;
    app->next_conv_id = 1;
    app->edit_conv = app->edit_uid = -1;
    app->lens_scroll = -1;
    app->state = UI_STATE_IDLE;
    app->loaded = true;
    app->info.n_vocab = 1000;
    app->sp = sampler_default_params();
    if (with_engine) {
        char err[128];
        engine_params p = engine_default_params(); /* no model: the commands are answered, nothing runs */
        app->eng = engine_start(&p, err, sizeof err);
        assert_non_null(app->eng);
    }
    ui_new_conv(app, "");
    return app;
}

static void free_app(ui_app *app)
{
    if (app->eng)
        engine_shutdown(app->eng);
    for (size_t i = 0; i < app->n_convs; i++)
        conv_free(app->convs[i]);
    free(app->convs);
    free(app->pending.top);
    ui_overlay_close(app);
    free(app);
}

/* A reply "Once upon a time" of four tokens as the engine would stream it. */
static size_t add_reply(ui_conv *c, const char *user)
{
    conv_add_msg(c, "user", user);
    size_t mi = conv_add_msg(c, "assistant", "");
    static const char *const pieces[] = {"Once", " upon", " a", " time"};
    static const float h[] = {0.1f, 3.5f, 0.2f, 2.9f};
    for (int i = 0; i < 4; i++) {
        engine_event ev = token_ev(10 + i, 5 + i, pieces[i], 0.6f, h[i]);
        msg_add_token(&c->msgs[mi], &ev);
    }
    return mi;
}

static void test_versions(void **state)
{
    (void)state;
    ui_conv *c = conv_create(1, "");
    size_t mi = add_reply(c, "tell me");
    assert_int_equal(c->n_msgs, 2);
    size_t cur, n = conv_versions(&c->msgs[mi], &cur);
    assert_int_equal(n, 1);
    /* a new version of the user message: the old one and its reply stay a sibling */
    ui_tail *old = conv_fork(c, 0);
    assert_non_null(old);
    assert_int_equal(old->n, 2);
    assert_string_equal(old->msgs[0].text, "tell me");
    assert_int_equal(c->n_msgs, 0);
    add_reply(c, "tell me more");
    n = conv_versions(&c->msgs[0], &cur);
    assert_int_equal(n, 2);
    assert_int_equal(cur, 2);
    /* a branch inside the new version: a reply from token 2 on */
    ui_tail *t = conv_fork(c, 1);
    size_t bi = conv_add_prefix(c, &t->msgs[0], 2);
    assert_int_equal(bi, 1);
    assert_string_equal(c->msgs[1].text, "Once upon");
    assert_int_equal(c->msgs[1].n_toks, 2);
    assert_true(c->msgs[1].streaming);
    assert_int_equal(c->msgs[1].toks[1].top[0].id, 11);
    assert_ptr_not_equal(c->msgs[1].toks[1].top, t->msgs[0].toks[1].top); /* a copy */
    n = conv_versions(&c->msgs[1], &cur);
    assert_int_equal(n, 2);
    assert_int_equal(cur, 2);
    /* switching the user message shows the first version (one reply, no branch) */
    assert_true(conv_switch_version(c, 0, -1));
    assert_string_equal(c->msgs[0].text, "tell me");
    assert_int_equal(c->n_msgs, 2);
    assert_int_equal(conv_versions(&c->msgs[1], &cur), 1);
    assert_true(conv_switch_version(c, 0, 1)); /* and back: the branch is still there */
    assert_string_equal(c->msgs[0].text, "tell me more");
    assert_int_equal(conv_versions(&c->msgs[1], &cur), 2);
    assert_string_equal(c->msgs[1].text, "Once upon");
    assert_true(conv_switch_version(c, 1, 1)); /* wraps: version 1 of 2 */
    assert_string_equal(c->msgs[1].text, "Once upon a time");
    assert_false(conv_switch_version(c, 1, 2)); /* a full turn: nothing changes */
    assert_false(conv_switch_version(c, 5, 1));
    /* a fork that is not followed by a new version is undone */
    conv_fork(c, 1);
    assert_int_equal(c->n_msgs, 1);
    conv_unfork(c);
    assert_int_equal(c->n_msgs, 2);
    assert_string_equal(c->msgs[1].text, "Once upon a time");
    n = conv_versions(&c->msgs[1], &cur);
    assert_int_equal(n, 2);
    assert_int_equal(cur, 1);
    /* uid lookups see the shown path only */
    size_t at = 9;
    assert_non_null(conv_msg_by_uid(c, c->msgs[1].uid, &at));
    assert_int_equal(at, 1);
    assert_null(conv_msg_by_uid(c, -5, NULL));
    conv_free(c); /* frees every version, nested */
}

static void test_strip(void **state)
{
    (void)state;
    ui_conv *c = conv_create(1, "");
    size_t mi = add_reply(c, "x");
    const ui_msg *m = &c->msgs[mi];
    assert_int_equal(conv_strip_level(&m->toks[0], CONV_STRIP_ENTROPY), 1);
    assert_true(conv_strip_level(&m->toks[1], CONV_STRIP_ENTROPY) >= CONV_STRIP_UNCERTAIN);
    assert_int_equal(conv_strip_level(&m->toks[1], CONV_STRIP_PROB), 1 + (int)(0.4f * 7 + 0.5f));
    ui_token big = m->toks[0];
    big.entropy_raw = 99.0f;
    assert_int_equal(conv_strip_level(&big, CONV_STRIP_ENTROPY), 8);
    big.entropy_raw = -1.0f;
    assert_int_equal(conv_strip_level(&big, CONV_STRIP_ENTROPY), 1);
    /* ] and [ : the uncertain tokens (entropy 3.5 and 2.9) */
    assert_true(conv_sel_uncertain(c, 1, CONV_STRIP_ENTROPY));
    assert_int_equal(c->sel_tok, 1);
    assert_true(conv_sel_uncertain(c, 1, CONV_STRIP_ENTROPY));
    assert_int_equal(c->sel_tok, 3);
    assert_false(conv_sel_uncertain(c, 1, CONV_STRIP_ENTROPY));
    assert_true(conv_sel_uncertain(c, -1, CONV_STRIP_ENTROPY));
    assert_int_equal(c->sel_tok, 1);
    /* the strip adds a line under every reply line */
    c->strip = CONV_STRIP_OFF;
    conv_build_lines(c, 40);
    size_t plain = c->n_vl;
    c->strip = CONV_STRIP_ENTROPY;
    conv_build_lines(c, 40);
    assert_int_equal(c->n_vl, plain + 1);
    bool after_text = false;
    for (size_t i = 1; i < c->n_vl; i++)
        if (c->vl[i].kind == CONV_VL_STRIP)
            after_text = c->vl[i - 1].kind == CONV_VL_TEXT && c->vl[i - 1].start == c->vl[i].start;
    assert_true(after_text);
    conv_free(c);
}

static void test_branch(void **state)
{
    (void)state;
    ui_app *app = fake_app(true);
    ui_conv *c = ui_current(app);
    size_t mi = add_reply(c, "tell me");
    c->msgs[mi].done_reason = ENGINE_DONE_EOG;
    /* Enter on candidate 2 of token 3 */
    assert_true(explore_branch(app, c, mi, 2, 10 + 2 + 100 + 1));
    assert_int_equal(c->n_msgs, 2);
    ui_msg *m = &c->msgs[mi];
    assert_string_equal(m->text, "Once upon");
    assert_int_equal(m->n_toks, 2);
    assert_true(m->streaming);
    size_t cur, n = conv_versions(m, &cur);
    assert_int_equal(n, 2);
    assert_int_equal(cur, 2);
    assert_int_equal(app->gen_conv_id, c->id);
    assert_int_equal(app->gen_msg, mi);
    assert_int_equal(app->state, UI_STATE_PREFILL);
    const int32_t req = app->gen_req;
    /* the alternative arrives as the branch's first token */
    engine_event ev = token_ev(113, 7, " an", 0.1f, 1.0f);
    ev.req_id = req;
    ui_handle_event(app, &ev);
    assert_string_equal(m->text, "Once upon an");
    /* switching versions is refused while that conversation generates */
    assert_false(explore_switch(app, -1));
    assert_non_null(strstr(app->msg, "generating here"));
    /* branching again mid-turn abandons it: its late events are stale */
    assert_true(explore_branch(app, c, mi, 0, 10));
    assert_int_not_equal(app->gen_req, req);
    m = &c->msgs[mi];
    assert_int_equal(m->n_toks, 0);
    assert_int_equal(m->len, 0);
    n = conv_versions(m, &cur);
    assert_int_equal(n, 3);
    ev = token_ev(99, 9, " STALE", 0.1f, 1.0f);
    ev.req_id = req;
    ui_handle_event(app, &ev);
    assert_int_equal(m->n_toks, 0);
    engine_event done;
    memset(&done, 0, sizeof done);
    done.type = ENGINE_EV_DONE;
    done.conv_id = c->id;
    done.req_id = req;
    done.reason = ENGINE_DONE_STOPPED;
    ui_handle_event(app, &done);
    assert_true(m->streaming); /* the stale DONE finished nothing */
    done.req_id = app->gen_req;
    done.reason = ENGINE_DONE_EOG;
    ui_handle_event(app, &done);
    assert_false(m->streaming);
    assert_int_equal(app->state, UI_STATE_IDLE);
    /* the abandoned version was kept, marked stopped */
    assert_true(explore_switch(app, -1));
    assert_string_equal(c->msgs[mi].text, "Once upon an");
    assert_int_equal(c->msgs[mi].done_reason, ENGINE_DONE_STOPPED);
    /* refusals */
    assert_false(explore_branch(app, c, 0, 0, 5)); /* a user message */
    assert_false(explore_branch(app, c, mi, 99, 5));
    assert_false(explore_branch(app, c, mi, 0, 5000)); /* outside the vocabulary */
    free_app(app);
}

static void test_edit_and_regen(void **state)
{
    (void)state;
    ui_app *app = fake_app(true);
    ui_conv *c = ui_current(app);
    add_reply(c, "tell me");
    c->msgs[1].streaming = false;
    commands_run(app, "/edit");
    assert_int_equal(app->edit_uid, c->msgs[0].uid);
    assert_int_equal(c->n_msgs, 2); /* nothing changes until it is sent */
    assert_true(ui_send_user(app, "tell me again"));
    assert_int_equal(c->n_msgs, 2);
    assert_string_equal(c->msgs[0].text, "tell me again");
    assert_true(c->msgs[1].streaming);
    size_t cur, n = conv_versions(&c->msgs[0], &cur);
    assert_int_equal(n, 2);
    assert_int_equal(app->edit_uid, -1);
    engine_event done;
    memset(&done, 0, sizeof done);
    done.type = ENGINE_EV_DONE;
    done.conv_id = c->id;
    done.req_id = app->gen_req;
    ui_handle_event(app, &done);
    /* /regen keeps the old reply */
    c->msgs[1].len = 0;
    msg_append(&c->msgs[1], "first", 5);
    commands_run(app, "/regen");
    n = conv_versions(&c->msgs[1], &cur);
    assert_int_equal(n, 2);
    assert_int_equal(c->msgs[1].len, 0);
    ui_handle_event(app, &(engine_event){.type = ENGINE_EV_DONE, .conv_id = c->id, .req_id = app->gen_req});
    assert_true(explore_switch(app, 1));
    assert_string_equal(c->msgs[1].text, "first");
    /* Esc-like cancel of an edit */
    commands_run(app, "/edit");
    explore_edit_cancel(app);
    assert_true(ui_send_user(app, "plain"));
    assert_int_equal(c->n_msgs, 4);
    free_app(app);
}

static void test_step_events(void **state)
{
    (void)state;
    ui_app *app = fake_app(false);
    ui_conv *c = ui_current(app);
    conv_add_msg(c, "user", "x");
    size_t mi = conv_add_msg(c, "assistant", "");
    c->msgs[mi].streaming = true;
    app->gen_conv_id = c->id;
    app->gen_msg = mi;
    app->gen_req = 4;
    app->state = UI_STATE_PREFILL;
    engine_event ev = token_ev(7, 3, "Hi", 0.5f, 1.0f);
    ev.type = ENGINE_EV_STEP;
    ev.token = -1;
    ev.req_id = 4;
    ui_handle_event(app, &ev);
    assert_int_equal(app->state, UI_STATE_STEP);
    assert_true(app->has_pending);
    assert_int_equal(app->pending.pos, 3);
    assert_int_equal(app->pending.n_top, 3);
    char buf[64];
    assert_string_equal(status_state_text(app, buf, sizeof buf), "waiting: step at pos 3");
    assert_true(ui_busy(app));
    bool pending;
    assert_ptr_equal(inspector_token(app, c, &pending), &app->pending);
    assert_true(pending);
    ev = token_ev(7, 3, "Hi", 0.5f, 1.0f);
    ev.req_id = 4;
    ui_handle_event(app, &ev);
    ev = token_ev(8, 4, " you", 0.5f, 1.0f);
    ev.req_id = 4;
    ui_handle_event(app, &ev);
    assert_int_equal(app->state, UI_STATE_GENERATING);
    assert_false(app->has_pending);
    assert_string_equal(c->msgs[mi].text, "Hi you");
    /* an error while the step waits (a refused choice) does not end the turn */
    ev.type = ENGINE_EV_STEP;
    ui_handle_event(app, &ev);
    engine_event er;
    memset(&er, 0, sizeof er);
    er.type = ENGINE_EV_ERROR;
    er.req_id = 4;
    snprintf(er.message, sizeof er.message, "nothing to take back");
    ui_handle_event(app, &er);
    assert_int_equal(app->state, UI_STATE_STEP);
    assert_true(c->msgs[mi].streaming);
    /* UNDO: the last token and its text go */
    engine_event u;
    memset(&u, 0, sizeof u);
    u.type = ENGINE_EV_UNDO;
    u.conv_id = c->id;
    u.req_id = 4;
    u.pos = 4;
    u.reply_len = 2;
    ui_handle_event(app, &u);
    assert_string_equal(c->msgs[mi].text, "Hi");
    assert_int_equal(c->msgs[mi].n_toks, 1);
    u.req_id = 3; /* stale */
    ui_handle_event(app, &u);
    assert_int_equal(c->msgs[mi].n_toks, 1);
    /* a lens answer lands on its token; one for a message not shown is dropped */
    engine_lens *l = calloc(1, sizeof *l + 2 * sizeof l->layer[0]);
    l->n_layer = 2;
    l->token = 7;
    l->first_top = 2;
    engine_event le;
    memset(&le, 0, sizeof le);
    le.type = ENGINE_EV_LENS;
    le.conv_id = c->id;
    le.req_id = c->msgs[mi].uid;
    le.index = 0;
    le.lens = l;
    c->msgs[mi].toks[0].lens_wait = true;
    ui_handle_event(app, &le);
    assert_ptr_equal(c->msgs[mi].toks[0].lens, l);
    assert_false(c->msgs[mi].toks[0].lens_wait);
    le.lens = calloc(1, sizeof *l);
    le.req_id = -7;
    ui_handle_event(app, &le); /* freed, not leaked or attached */
    le.lens = NULL;
    le.req_id = c->msgs[mi].uid;
    snprintf(le.message, sizeof le.message, "logit lens: no model loaded");
    c->msgs[mi].toks[0].lens_wait = true;
    ui_handle_event(app, &le);
    assert_non_null(strstr(app->msg, "no model loaded"));
    assert_true(c->msgs[mi].toks[0].lens_failed); /* not asked again and again */
    assert_false(c->msgs[mi].toks[0].lens_wait);
    free_app(app);
}

/* With the lens view on, a step's lens is asked for once; not for the
 * latest token of a reply still being written (one forward pass a token),
 * but for a token the cursor picks there. */
static void test_lens_requests(void **state)
{
    (void)state;
    ui_app *app = fake_app(true);
    ui_conv *c = ui_current(app);
    size_t mi = add_reply(c, "x");
    app->lens_on = true;
    c->msgs[mi].streaming = true;
    explore_lens_sync(app);
    assert_false(c->msgs[mi].toks[3].lens_wait);
    c->sel_msg = (int32_t)mi;
    c->sel_tok = 1;
    explore_lens_sync(app);
    assert_true(c->msgs[mi].toks[1].lens_wait);
    conv_sel_clear(c);
    c->msgs[mi].streaming = false;
    explore_lens_sync(app);
    assert_true(c->msgs[mi].toks[3].lens_wait);
    app->lens_on = false;
    c->msgs[mi].toks[2].lens_wait = false;
    c->sel_msg = (int32_t)mi;
    c->sel_tok = 2;
    explore_lens_sync(app);
    assert_false(c->msgs[mi].toks[2].lens_wait);
    free_app(app);
}

static void test_store_versions(void **state)
{
    (void)state;
    char path[] = "/tmp/tokscope-test-explore-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    ui_app *app = fake_app(false);
    ui_conv *c = ui_current(app);
    size_t mi = add_reply(c, "tell me");
    c->msgs[mi].streaming = false;
    c->msgs[mi].done_reason = ENGINE_DONE_LENGTH;
    ui_tail *t = conv_fork(c, mi);
    size_t bi = conv_add_prefix(c, &t->msgs[0], 1);
    c->msgs[bi].streaming = false;
    engine_event ev = token_ev(55, 6, " day", 0.25f, 2.5f);
    msg_add_token(&c->msgs[bi], &ev);
    conv_add_msg(c, "user", "and then?");
    conv_fork(c, 0); /* the first message gets a second version too (nested branches) */
    conv_add_msg(c, "user", "other");
    ui_new_conv(app, "sys");
    app->convs[1]->has_sp = true;
    app->convs[1]->sp = app->sp;
    app->convs[1]->sp.temp = 1.5f;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "/save %s", path);
    commands_run(app, cmd);
    assert_int_equal(app->msg_level, UI_MSG_INFO);

    ui_app *b = fake_app(false);
    snprintf(cmd, sizeof cmd, "/load %s", path);
    commands_run(b, cmd);
    assert_int_equal(b->msg_level, UI_MSG_INFO);
    ui_conv *d = b->convs[0];
    assert_int_equal(d->n_msgs, 1);
    assert_string_equal(d->msgs[0].text, "other");
    size_t cur, n = conv_versions(&d->msgs[0], &cur);
    assert_int_equal(n, 2);
    assert_int_equal(cur, 2);
    assert_true(conv_switch_version(d, 0, 1));
    assert_int_equal(d->n_msgs, 3);
    assert_string_equal(d->msgs[1].text, "Once day");
    assert_string_equal(d->msgs[2].text, "and then?");
    ui_msg *r = &d->msgs[1];
    assert_int_equal(r->n_toks, 2);
    assert_int_equal(r->toks[1].id, 55);
    assert_int_equal(r->toks[1].pos, 6);
    assert_int_equal(r->toks[1].off, 4);
    assert_float_equal(r->toks[1].p_raw, 0.25f, 0);
    assert_float_equal(r->toks[1].entropy_raw, 2.5f, 0);
    assert_int_equal(r->toks[1].n_top, 3);
    assert_string_equal(r->toks[1].top[0].text, " day");
    n = conv_versions(r, &cur);
    assert_int_equal(n, 2);
    assert_true(conv_switch_version(d, 1, 1));
    assert_string_equal(d->msgs[1].text, "Once upon a time");
    assert_int_equal(d->msgs[1].n_toks, 4);
    assert_int_equal(d->msgs[1].done_reason, ENGINE_DONE_LENGTH);
    assert_true(b->convs[1]->has_sp);
    assert_float_equal(b->convs[1]->sp.temp, 1.5f, 1e-6);
    assert_false(b->convs[0]->has_sp);

    /* the first format (no versions, no tokens) still loads */
    FILE *f = fopen(path, "w");
    fputs("{\"tokscope\": 1, \"conversations\": [{\"system\": \"\", \"messages\": ["
          "{\"role\": \"user\", \"content\": \"hi\"}, {\"role\": \"assistant\", \"content\": \"hello\"}]}]}",
          f);
    fclose(f);
    commands_run(b, cmd);
    assert_int_equal(b->msg_level, UI_MSG_INFO);
    assert_int_equal(b->convs[0]->n_msgs, 2);
    assert_int_equal(b->convs[0]->msgs[1].n_toks, 0);
    /* malformed versions, tokens, or a newer format are refused and change nothing */
    static const char *const bad[] = {
        "{\"conversations\": [{\"messages\": [{\"role\": \"user\", \"content\": \"x\", \"versions\": [null], "
        "\"version\": 0}]}]}",
        "{\"conversations\": [{\"messages\": [{\"role\": \"user\", \"content\": \"x\", \"versions\": [null, []], "
        "\"version\": 0}]}]}",
        "{\"conversations\": [{\"messages\": [{\"role\": \"user\", \"content\": \"x\", \"versions\": [null, "
        "[{\"role\": \"user\", \"content\": \"y\"}]], \"version\": 1}]}]}",
        /* (a span running past the text from inside it loads without it: older files cut a reply at a NUL) */
        "{\"conversations\": [{\"messages\": [{\"role\": \"assistant\", \"content\": \"ab\", \"tokens\": "
        "[[1, 0, 3, 1, 0, 0, 0, 0, 0, []]]}]}]}",
        "{\"conversations\": [{\"messages\": [{\"role\": \"assistant\", \"content\": \"ab\", \"tokens\": "
        "[[1, 0, 0, 1, 0, 0, 0, 0, 0, [[1, 2, 3]]]]}]}]}",
        "{\"tokscope\": 99, \"conversations\": [{\"messages\": []}]}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        f = fopen(path, "w");
        fputs(bad[i], f);
        fclose(f);
        commands_run(b, cmd);
        assert_int_equal(b->msg_level, UI_MSG_ERROR);
        assert_int_equal(b->convs[0]->n_msgs, 2);
    }
    remove(path);
    free_app(app);
    free_app(b);
}

static void test_compare_command(void **state)
{
    (void)state;
    ui_app *app = fake_app(true);
    ui_conv *a = ui_current(app);
    conv_add_msg(a, "user", "hi");
    conv_add_msg(a, "assistant", "hello");
    commands_run(app, "/compare temp");
    assert_int_equal(app->msg_level, UI_MSG_ERROR);
    commands_run(app, "/compare temp hot");
    assert_int_equal(app->msg_level, UI_MSG_ERROR);
    assert_false(app->cmp_on);
    commands_run(app, "/compare temp 1.5 top_k=5");
    assert_true(app->cmp_on);
    assert_int_equal(app->n_convs, 2);
    ui_conv *b = ui_conv_by_id(app, app->cmp_b);
    assert_true(b->has_sp);
    assert_float_equal(b->sp.temp, 1.5f, 1e-6);
    assert_int_equal(b->sp.top_k, 5);
    assert_int_equal(b->n_msgs, 2);
    assert_true(explore_compare_view(app));
    char desc[128];
    explore_compare_desc(app, desc, sizeof desc);
    assert_non_null(strstr(desc, "temp 1.5"));
    assert_non_null(strstr(desc, "top_k 5"));
    /* a message goes to both; A answers first, B when A is done */
    assert_true(ui_send_user(app, "again"));
    assert_int_equal(a->n_msgs, 4);
    assert_int_equal(b->n_msgs, 3);
    assert_true(app->cmp_queued);
    assert_int_equal(app->gen_conv_id, a->id);
    ui_handle_event(app,
                    &(engine_event){.type = ENGINE_EV_DONE, .conv_id = a->id, .req_id = app->gen_req, .reason = 0});
    assert_int_equal(app->gen_conv_id, b->id);
    assert_int_equal(b->n_msgs, 4);
    assert_true(b->msgs[3].streaming);
    assert_false(app->cmp_queued);
    ui_handle_event(app, &(engine_event){.type = ENGINE_EV_DONE, .conv_id = b->id, .req_id = app->gen_req});
    assert_int_equal(app->state, UI_STATE_IDLE);
    /* stopped A: B does not start */
    assert_true(ui_send_user(app, "third"));
    ui_handle_event(app, &(engine_event){.type = ENGINE_EV_DONE, .conv_id = a->id, .req_id = app->gen_req,
                                         .reason = ENGINE_DONE_STOPPED});
    assert_int_equal(app->state, UI_STATE_IDLE);
    assert_int_equal(b->n_msgs, 5);
    commands_run(app, "/compare off");
    assert_false(app->cmp_on);
    assert_false(explore_compare_view(app));
    assert_int_equal(app->n_convs, 2); /* B stays a conversation */
    free_app(app);
}

int main(void)
{
    setlocale(LC_ALL, "C.UTF-8");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_versions),       cmocka_unit_test(test_strip),
        cmocka_unit_test(test_branch),         cmocka_unit_test(test_edit_and_regen),
        cmocka_unit_test(test_step_events),    cmocka_unit_test(test_store_versions),
        cmocka_unit_test(test_compare_command), cmocka_unit_test(test_lens_requests),
    };
    return cmocka_run_group_tests_name("ui_explore", tests, NULL, NULL);
}
