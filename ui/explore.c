/* Explore mode's actions: each turns a key or command into engine commands
 * and keeps the conversation model (versions, the streaming reply, lens
 * answers) in step. See explore.h. */
#include "explore.h"
#include "remote_ui.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "input.h"
#include "params.h"
#include "think.h"

/* ---- sides and the shown token ---- */

bool explore_compare_view(ui_app *app)
{
    if (!app->cmp_on || !app->n_convs)
        return false;
    const int32_t id = ui_current(app)->id;
    return (id == app->cmp_a || id == app->cmp_b) && ui_conv_by_id(app, app->cmp_a) && ui_conv_by_id(app, app->cmp_b);
}

ui_conv *explore_side(ui_app *app)
{
    if (explore_compare_view(app))
        return ui_conv_by_id(app, app->cmp_side ? app->cmp_b : app->cmp_a);
    return ui_current(app);
}

ui_token *explore_shown(ui_conv *c, size_t *mi, size_t *ti)
{
    if (conv_selected(c)) {
        *mi = (size_t)c->sel_msg;
        *ti = (size_t)c->sel_tok;
        return &c->msgs[*mi].toks[*ti];
    }
    for (size_t i = c->n_msgs; i-- > 0;)
        if (c->msgs[i].n_toks) {
            *mi = i;
            *ti = c->msgs[i].n_toks - 1;
            return &c->msgs[i].toks[*ti];
        }
    return NULL;
}

/* ---- branches ---- */

void ui_abandon_turn(ui_app *app)
{
    if (!ui_busy(app) && app->gen_conv_id < 0)
        return;
    engine_stop(app->eng);
    ui_conv *c = ui_conv_by_id(app, app->gen_conv_id);
    if (c && app->gen_msg < c->n_msgs) {
        c->msgs[app->gen_msg].streaming = false;
        c->msgs[app->gen_msg].done_reason = ENGINE_DONE_STOPPED;
    }
    app->gen_conv_id = -1;
    app->gen_req = -1; /* whatever the engine still says about it is stale */
    app->has_pending = false;
    app->cmp_queued = false;
    app->state = app->loaded ? UI_STATE_IDLE : UI_STATE_NO_MODEL;
}

/* s[0..n) (any bytes), NUL-terminated, malloc'd */
static char *memdup0(const char *s, size_t n)
{
    char *d = malloc(n + 1);
    if (!d)
        abort();
    memcpy(d, s, n);
    d[n] = 0;
    return d;
}

static bool can_change(ui_app *app, ui_conv *c)
{
    if (!app->eng || app->state == UI_STATE_NO_MODEL || app->state == UI_STATE_LOADING) {
        ui_message(app, UI_MSG_ERROR, "no model loaded");
        return false;
    }
    if (ui_busy(app) && app->gen_conv_id != c->id && app->state != UI_STATE_STEP) {
        ui_message(app, UI_MSG_WARN, "generating in another conversation: Esc stops it first");
        return false;
    }
    return true;
}

bool explore_branch(ui_app *app, ui_conv *c, size_t mi, size_t k, int32_t id)
{
    if (mi >= c->n_msgs || strcmp(c->msgs[mi].role, "assistant") != 0 || k >= c->msgs[mi].n_toks)
        return false;
    if (!can_change(app, c))
        return false;
    if (id < 0 || (id >= app->info.n_vocab && !remote_ui_on(app))) { /* remote: the backend's own ids */
        ui_message(app, UI_MSG_ERROR, "token %d is outside the vocabulary", id);
        return false;
    }
    ui_abandon_turn(app);
    int32_t *ids = malloc((k + 1) * sizeof *ids);
    if (!ids)
        return false;
    const ui_msg *m = &c->msgs[mi];
    for (size_t j = 0; j < k; j++)
        ids[j] = m->toks[j].id;
    ids[k] = id;
    const int32_t emitted = (int32_t)m->toks[k].off;
    const int32_t old_id = m->toks[k].id;
    ui_tail *old = conv_fork(c, mi);
    size_t nmi = conv_add_prefix(c, &old->msgs[0], k);
    ui_msg *nm = &c->msgs[nmi]; /* sent as the reply it branches from was: the context shown */
    nm->sent_set = old->msgs[0].sent_set;
    nm->sent_style = old->msgs[0].sent_style;
    memcpy(nm->sent_tmpl, old->msgs[0].sent_tmpl, sizeof nm->sent_tmpl);
    memcpy(nm->sent_vars, old->msgs[0].sent_vars, sizeof nm->sent_vars);
    ui_start_turn(app, c, nmi, ids, (int32_t)k + 1, emitted);
    free(ids);
    size_t cur, n = conv_versions(&c->msgs[nmi], &cur);
    if (id == old_id)
        ui_message(app, UI_MSG_INFO, "generating again from token %zu (version %zu/%zu)", k + 1, cur, n);
    else
        ui_message(app, UI_MSG_INFO, "branch at token %zu: another candidate (version %zu/%zu)", k + 1, cur, n);
    return true;
}

void explore_edit_begin(ui_app *app, ui_conv *c, size_t mi)
{
    if (mi >= c->n_msgs || strcmp(c->msgs[mi].role, "user") != 0)
        return;
    input_set_text(c->msgs[mi].text);
    app->edit_conv = c->id;
    app->edit_uid = c->msgs[mi].uid;
    app->focus = UI_FOCUS_INPUT;
    ui_message(app, UI_MSG_INFO, "editing a message: Enter sends it as a new version (the old one stays), Esc cancels");
}

void explore_edit_cancel(ui_app *app)
{
    app->edit_conv = app->edit_uid = -1;
}

bool explore_edit_send(ui_app *app, const char *text)
{
    if (app->edit_uid < 0)
        return false;
    ui_conv *c = ui_conv_by_id(app, app->edit_conv);
    size_t mi = 0;
    const int32_t uid = app->edit_uid;
    explore_edit_cancel(app);
    if (!c || !conv_msg_by_uid(c, uid, &mi))
        return false; /* the message is gone (another version shown): a plain send */
    if (!can_change(app, c))
        return true;
    ui_abandon_turn(app);
    conv_fork(c, mi);
    conv_add_msg(c, "user", text);
    size_t ai = conv_add_msg(c, "assistant", "");
    c->msgs[ai].streaming = true;
    ui_start_turn(app, c, ai, NULL, 0, 0);
    size_t cur, n = conv_versions(&c->msgs[mi], &cur);
    ui_message(app, UI_MSG_INFO, "sent as version %zu/%zu of the message", cur, n);
    return true;
}

bool explore_regen(ui_app *app)
{
    ui_conv *c = ui_current(app);
    if (ui_busy(app)) {
        ui_message(app, UI_MSG_WARN, "generating: Esc stops first");
        return false;
    }
    size_t n = c->n_msgs;
    if (n && !strcmp(c->msgs[n - 1].role, "assistant")) {
        if (!app->eng || app->state == UI_STATE_NO_MODEL) {
            ui_message(app, UI_MSG_ERROR, "no model loaded");
            return false;
        }
        conv_fork(c, n - 1); /* the old reply stays a sibling */
    }
    if (!c->n_msgs || strcmp(c->msgs[c->n_msgs - 1].role, "user") != 0) {
        conv_unfork(c);
        ui_message(app, UI_MSG_WARN, "nothing to regenerate");
        return false;
    }
    if (!ui_submit(app)) {
        conv_unfork(c);
        return false;
    }
    return true;
}

bool explore_switch(ui_app *app, int delta)
{
    ui_conv *c = explore_side(app);
    int32_t from = c->sel_msg >= 0 ? c->sel_msg : (int32_t)c->n_msgs - 1;
    for (int32_t i = from; i >= 0; i--) {
        size_t cur, n = conv_versions(&c->msgs[i], &cur);
        if (n < 2)
            continue;
        if (app->gen_conv_id == c->id && ui_busy(app)) {
            ui_message(app, UI_MSG_WARN, "generating here: Esc stops first");
            return false;
        }
        conv_switch_version(c, (size_t)i, delta);
        conv_versions(&c->msgs[i], &cur);
        /* the cursor stays on that message */
        if (c->msgs[i].n_toks) {
            c->sel_msg = i;
            c->sel_tok = 0;
            c->reveal = true;
        }
        ui_message(app, UI_MSG_INFO, "%s message: version %zu of %zu", c->msgs[i].role, cur, n);
        return true;
    }
    ui_message(app, UI_MSG_INFO, "no other versions here (Enter on a candidate in the inspector makes one)");
    return false;
}

/* ---- step mode ---- */

void explore_step_toggle(ui_app *app, int on)
{
    if ((on > 0 || (on < 0 && !app->step_on)) && remote_ui_refuse(app, "step mode"))
        return;
    app->step_on = on < 0 ? !app->step_on : on != 0;
    if (app->eng)
        engine_set_step(app->eng, app->step_on);
    if (!app->step_on && app->state == UI_STATE_STEP) {
        app->state = UI_STATE_GENERATING;
        app->has_pending = false;
    }
    ui_message(app, UI_MSG_INFO, app->step_on ? "step mode on: the engine waits before every token"
                                              : "step mode off");
}

static bool step_waiting(ui_app *app)
{
    if (app->state == UI_STATE_STEP)
        return true;
    ui_message(app, UI_MSG_WARN, "step mode: nothing waits for a token now");
    return false;
}

void explore_step_draw(ui_app *app)
{
    if (!step_waiting(app))
        return;
    engine_step(app->eng);
    app->state = UI_STATE_GENERATING;
}

void explore_step_pick(ui_app *app, int32_t id)
{
    if (!step_waiting(app))
        return;
    engine_step_token(app->eng, id);
    app->state = UI_STATE_GENERATING;
}

void explore_step_text(ui_app *app, const char *text)
{
    if (!step_waiting(app))
        return;
    engine_step_text(app->eng, text);
    app->state = UI_STATE_GENERATING;
}

void explore_step_undo(ui_app *app)
{
    if (!step_waiting(app))
        return;
    engine_undo(app->eng);
}

/* ---- logit lens ---- */

static void lens_request(ui_app *app, ui_conv *c, size_t mi, size_t k)
{
    ui_msg *m = &c->msgs[mi];
    chat_message *msgs;
    size_t n = think_chat_messages(app, c, mi, &msgs); /* as the turn was sent: same positions */
    int32_t *ids = malloc((k + 1) * sizeof *ids);
    if (!ids) {
        free(msgs);
        return;
    }
    for (size_t j = 0; j < k; j++)
        ids[j] = m->toks[j].id;
    engine_cmd cmd = {.type = ENGINE_CMD_LENS,
                      .name = think_sent_template(m),
                      .messages = msgs,
                      .n_messages = n,
                      .conv_id = c->id,
                      .req_id = m->uid,
                      .tokens = ids,
                      .n_tokens = (int32_t)k,
                      .token = m->toks[k].id,
                      .index = (int32_t)k};
    engine_send(app->eng, &cmd);
    free(ids);
    free(msgs);
    m->toks[k].lens_wait = true;
}

void explore_lens_sync(ui_app *app)
{
    if (!app->lens_on || !app->eng || !app->loaded)
        return;
    ui_conv *sides[2] = {explore_compare_view(app) ? ui_conv_by_id(app, app->cmp_a) : ui_current(app),
                         explore_compare_view(app) ? ui_conv_by_id(app, app->cmp_b) : NULL};
    for (int s = 0; s < 2; s++) {
        size_t mi, ti;
        ui_token *t = sides[s] ? explore_shown(sides[s], &mi, &ti) : NULL;
        /* not the latest token of a reply still being written: a lens per
         * token would cost the engine a forward pass per token */
        if (t && !t->lens && !t->lens_wait && !t->lens_failed &&
            !(sides[s]->msgs[mi].streaming && !conv_selected(sides[s])))
            lens_request(app, sides[s], mi, ti);
    }
}

void explore_lens_event(ui_app *app, const engine_event *ev)
{
    ui_conv *c = ui_conv_by_id(app, ev->conv_id);
    ui_msg *m = c ? conv_msg_by_uid(c, ev->req_id, NULL) : NULL;
    ui_token *t = m && ev->index >= 0 && (size_t)ev->index < m->n_toks ? &m->toks[ev->index] : NULL;
    if (!ev->lens) {
        if (t) {
            t->lens_wait = false;
            t->lens_failed = true;
        }
        ui_message(app, UI_MSG_ERROR, "%s", ev->message[0] ? ev->message : "logit lens failed");
        return;
    }
    if (!t || t->id != ev->lens->token) { /* that message is not shown any more */
        engine_lens_free(ev->lens);
        return;
    }
    engine_lens_free(t->lens);
    t->lens = ev->lens;
    t->lens_wait = false;
    app->lens_scroll = -1;
}

/* ---- compare settings ---- */

void explore_compare_desc(ui_app *app, char *buf, size_t cap)
{
    ui_conv *b = ui_conv_by_id(app, app->cmp_b);
    size_t n = 0;
    buf[0] = 0;
    for (int i = 0; b && sampler_param_names[i]; i++) {
        char va[64], vb[64];
        sampler_params_get(&app->sp, sampler_param_names[i], va, sizeof va);
        sampler_params_get(&b->sp, sampler_param_names[i], vb, sizeof vb);
        if (strcmp(va, vb) != 0 && n < cap)
            n += (size_t)snprintf(buf + n, cap - n, "%s%s %s", n ? " " : "", sampler_param_names[i], vb);
    }
    if (!buf[0])
        snprintf(buf, cap, "the same parameters");
}

bool explore_compare(ui_app *app, const char *args, char *err, size_t errlen)
{
    while (*args == ' ')
        args++;
    if (!strcmp(args, "off")) {
        app->cmp_on = false;
        app->cmp_queued = false;
        return true;
    }
    if (ui_busy(app)) {
        snprintf(err, errlen, "generating: Esc stops first");
        return false;
    }
    ui_conv *a = ui_current(app);
    ui_conv *b = app->cmp_on ? ui_conv_by_id(app, app->cmp_b) : NULL;
    if (a == b || (b && a->id != app->cmp_a)) { /* asked from side B, or from another conversation */
        if (a == b)
            a = ui_conv_by_id(app, app->cmp_a);
        else
            b = NULL;
    }
    sampler_params sp = b ? b->sp : app->sp;
    /* PARAM VALUE pairs */
    char buf[512];
    snprintf(buf, sizeof buf, "%s", args);
    char *save = NULL;
    for (char *name = strtok_r(buf, " \t", &save); name; name = strtok_r(NULL, " \t", &save)) {
        char *eq = strchr(name, '=');
        const char *value = NULL;
        if (eq) {
            *eq = 0;
            value = eq + 1;
        } else {
            value = strtok_r(NULL, " \t", &save);
        }
        if (!value || !*value) {
            snprintf(err, errlen, "usage: /compare PARAM VALUE [PARAM VALUE ...] (or off)");
            return false;
        }
        if (!params_set_value(&sp, name, value, err, errlen))
            return false;
    }
    if (!b) {
        b = ui_new_conv(app, a->system);
        for (size_t i = 0; i < a->n_msgs; i++) {
            const ui_msg *m = &a->msgs[i];
            size_t k = conv_add_msg_n(b, m->role, m->text, m->len);
            b->msgs[k].done_reason = m->done_reason;
            if (m->reasoning) { /* the same turns go to the template */
                b->msgs[k].reasoning = memdup0(m->reasoning, m->reasoning_len);
                b->msgs[k].answer = memdup0(m->answer ? m->answer : "", m->answer ? m->answer_len : 0);
                b->msgs[k].reasoning_len = m->reasoning_len;
                b->msgs[k].answer_len = m->answer ? m->answer_len : 0;
                b->msgs[k].think_end = m->think_end;
                if (m->n_think_vis) {
                    const size_t sz = 2 * (size_t)m->n_think_vis * sizeof *m->think_vis;
                    b->msgs[k].think_vis = malloc(sz);
                    if (!b->msgs[k].think_vis)
                        abort();
                    memcpy(b->msgs[k].think_vis, m->think_vis, sz);
                    b->msgs[k].n_think_vis = m->n_think_vis;
                }
            }
        }
    }
    b->has_sp = true;
    b->sp = sp;
    app->cmp_a = a->id;
    app->cmp_b = b->id;
    app->cmp_on = true;
    app->cmp_side = 0;
    for (size_t i = 0; i < app->n_convs; i++)
        if (app->convs[i] == a)
            app->cur = i;
    return true;
}

void explore_turn_done(ui_app *app, int32_t conv_id, int reason)
{
    if (!app->cmp_queued || conv_id != app->cmp_a)
        return;
    app->cmp_queued = false;
    if (reason == ENGINE_DONE_STOPPED || reason == ENGINE_DONE_ERROR || reason == ENGINE_DONE_CUT || !app->cmp_on)
        return;
    ui_conv *b = ui_conv_by_id(app, app->cmp_b);
    if (!b || !b->n_msgs || strcmp(b->msgs[b->n_msgs - 1].role, "user") != 0)
        return;
    size_t mi = conv_add_msg(b, "assistant", "");
    b->msgs[mi].streaming = true;
    ui_start_turn(app, b, mi, NULL, 0, 0);
}
