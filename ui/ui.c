/* Main loop, engine event handling, global keys, overlay. */
#include "ui.h"

#include <curses.h>
#include <errno.h>
#include <fcntl.h>
#include <langinfo.h>
#include <locale.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "autosave.h"
#include "commands.h"
#include "draw.h"
#include "explore.h"
#include "input.h"
#include "inspector.h"
#include "params.h"
#include "queued.h"
#include "remote_ui.h"
#include "picker.h"
#include "status.h"
#include "theme.h"
#include "think.h"
#include "utf8.h"

#define UI_FRAME_S (1.0 / 30.0)
/* While a reply streams the screen changes every frame; 20 frames a second
 * read as smooth, and each frame not drawn is CPU the engine's threads keep
 * (on a 2-core machine they want both cores). */
#define UI_FRAME_GEN_S (1.0 / 20.0)
#define UI_MSG_SECONDS 6.0
#define KEY_PASTE_BEGIN (KEY_MAX + 1)
#define KEY_PASTE_END (KEY_MAX + 2)
#define UI_KEY_LONE_ESC (KEY_MAX + 3) /* an Esc known not to start an Alt- chord */
#undef CTRL
#define CTRL(c) ((c) & 0x1f)

static int g_winch_pipe[2] = {-1, -1};

void ui_default_options(ui_options *o)
{
    memset(o, 0, sizeof *o);
    o->engine = engine_default_params();
    o->colors = true;
    o->prob_colors = false;
    o->mouse = false;
    o->engine.kv_max_bytes = (uint64_t)UI_KV_MAX_MB << 20;
}

double ui_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void ui_message(ui_app *app, enum ui_msg_level lvl, const char *fmt, ...)
{
    if (app->msg_hold && lvl != UI_MSG_ERROR)
        return; /* an error stays until the next key (a context shift would hide it at once) */
    va_list ap;
    va_start(ap, fmt);
    /* the analyzer misreads va_list under _XOPEN_SOURCE (ncurses flags) */
    vsnprintf(app->msg, sizeof app->msg, fmt, ap); // NOLINT(clang-analyzer-valist.Uninitialized)
    va_end(ap);
    for (char *p = app->msg; *p; p++)
        if (*p == '\n' || *p == '\r' || *p == '\t')
            *p = ' ';
    app->msg_level = lvl;
    app->msg_hold = lvl == UI_MSG_ERROR;
    app->msg_until = lvl == UI_MSG_ERROR ? 0 : ui_now() + UI_MSG_SECONDS;
    app->dirty = true;
}

ui_conv *ui_current(ui_app *app)
{
    return app->convs[app->cur];
}

ui_conv *ui_conv_by_id(ui_app *app, int32_t id)
{
    for (size_t i = 0; i < app->n_convs; i++)
        if (app->convs[i]->id == id)
            return app->convs[i];
    return NULL;
}

ui_conv *ui_new_conv(ui_app *app, const char *system)
{
    ui_conv **v = realloc(app->convs, (app->n_convs + 1) * sizeof *v); // NOLINT(bugprone-sizeof-expression): an array of pointers
    if (!v)
        abort();
    app->convs = v;
    ui_conv *c = conv_create(app->next_conv_id++, system);
    app->convs[app->n_convs++] = c;
    return c;
}

void ui_switch_conv(ui_app *app, int delta)
{
    if (app->n_convs < 2)
        return;
    app->cur = (app->cur + app->n_convs + (size_t)(delta % (int)app->n_convs + (int)app->n_convs)) % app->n_convs;
    ui_message(app, UI_MSG_INFO, "conversation %zu of %zu", app->cur + 1, app->n_convs);
}

bool ui_busy(const ui_app *app)
{
    return app->state == UI_STATE_PREFILL || app->state == UI_STATE_GENERATING || app->state == UI_STATE_STOPPING ||
           app->state == UI_STATE_STEP;
}

void ui_start_turn(ui_app *app, ui_conv *c, size_t mi, const int32_t *toks, int32_t n_toks, int32_t emitted)
{
    chat_message *msgs;
    think_record(app, &c->msgs[mi]); /* a branch keeps its reply's: the context shown */
    size_t n = think_chat_messages(app, c, mi, &msgs);
    engine_cmd cmd = {.type = ENGINE_CMD_SUBMIT,
                      .name = think_sent_template(&c->msgs[mi]),
                      .messages = msgs,
                      .n_messages = n,
                      .conv_id = c->id,
                      .req_id = ++app->next_req,
                      .tokens = (int32_t *)toks,
                      .n_tokens = n_toks,
                      .reply_emitted = emitted};
    if (c->has_sp) { /* compare settings' side B */
        cmd.own_sampling = true;
        cmd.sampling = c->sp;
    } else if (app->cmp_on && c->id == app->cmp_a) { /* side A: the panel's, from the same seed as B */
        cmd.own_sampling = true;
        cmd.sampling = app->sp;
    }
    engine_send(app->eng, &cmd);
    free(msgs);
    c->msgs[mi].streaming = true;
    think_begin(app, c, mi); /* where the reasoning is, as the reply streams */
    c->scroll = 0;
    conv_sel_clear(c);
    app->gen_req = cmd.req_id;
    app->gen_conv_id = c->id;
    app->gen_msg = mi;
    app->gen_count = 0;
    app->has_pending = false;
    if (app->state != UI_STATE_LOADING)
        app->state = UI_STATE_PREFILL;
    app->progress = 0;
}

bool ui_submit(ui_app *app)
{
    ui_conv *c = ui_current(app);
    if (!app->eng || app->state == UI_STATE_NO_MODEL) {
        ui_message(app, UI_MSG_ERROR, "no model loaded");
        return false;
    }
    size_t mi = conv_add_msg(c, "assistant", "");
    ui_start_turn(app, c, mi, NULL, 0, 0);
    return true;
}

bool ui_send_user(ui_app *app, const char *text)
{
    if (ui_busy(app)) {
        ui_message(app, UI_MSG_WARN, "still generating: Esc stops it first");
        input_set_text(text);
        return false;
    }
    if (explore_edit_send(app, text))
        return true;
    ui_conv *c = ui_current(app);
    ui_conv *b = NULL;
    if (explore_compare_view(app)) { /* both sides get the message; A answers, then B */
        c = ui_conv_by_id(app, app->cmp_a);
        b = ui_conv_by_id(app, app->cmp_b);
    }
    conv_add_msg(c, "user", text);
    if (!app->eng || app->state == UI_STATE_NO_MODEL) {
        ui_message(app, UI_MSG_ERROR, "no model loaded");
        conv_pop(c);
        input_set_text(text);
        return false;
    }
    size_t mi = conv_add_msg(c, "assistant", "");
    ui_start_turn(app, c, mi, NULL, 0, 0);
    if (b) {
        conv_add_msg(b, "user", text);
        app->cmp_queued = true;
    }
    return true;
}

void ui_stop(ui_app *app)
{
    if (!ui_busy(app))
        return;
    engine_stop(app->eng);
    app->state = UI_STATE_STOPPING;
    app->dirty = true;
}

void ui_params_changed(ui_app *app)
{
    if (app->eng)
        engine_set_params(app->eng, &app->sp);
    app->dirty = true;
}

void ui_overlay_close(ui_app *app)
{
    for (size_t i = 0; i < app->n_overlay; i++)
        free(app->overlay[i]);
    free(app->overlay);
    app->overlay = NULL;
    app->n_overlay = 0;
    app->overlay_scroll = 0;
    app->overlay_pick_n = 0;
    app->overlay_on_pick = NULL;
    app->dirty = true;
}

void ui_overlay_show(ui_app *app, const char *title, const char *text)
{
    ui_overlay_close(app);
    snprintf(app->overlay_title, sizeof app->overlay_title, "%s", title);
    const char *p = text;
    while (*p) {
        const char *e = strchr(p, '\n');
        size_t l = e ? (size_t)(e - p) : strlen(p);
        char **v = realloc(app->overlay, (app->n_overlay + 1) * sizeof *v);
        if (!v)
            break;
        app->overlay = v;
        app->overlay[app->n_overlay++] = strndup(p, l);
        p += l + (e ? 1 : 0);
    }
}

void ui_overlay_pick(ui_app *app, const char *title, const char *text, int first, int n, int sel,
                     void (*on_pick)(ui_app *app, int idx))
{
    ui_overlay_show(app, title, text);
    if (first < 0 || n <= 0 || first + n > (int)app->n_overlay)
        return; /* not a list after all: a plain overlay */
    app->overlay_pick_first = first;
    app->overlay_pick_n = n;
    app->overlay_sel = sel >= 0 && sel < n ? sel : 0;
    app->overlay_on_pick = on_pick;
}

void ui_show_help(ui_app *app)
{
    ui_overlay_show(app, "Help  (Esc closes, \xe2\x86\x91\xe2\x86\x93 scroll)", commands_help_text());
}

/* ---- engine events ---- */

static void finish_turn(ui_app *app, int reason)
{
    ui_conv *c = ui_conv_by_id(app, app->gen_conv_id);
    if (c && app->gen_msg < c->n_msgs) {
        ui_msg *m = &c->msgs[app->gen_msg];
        m->streaming = false;
        m->done_reason = reason;
        think_end_turn(app, m);
    }
    if (reason == ENGINE_DONE_STOPPED)
        ui_message(app, UI_MSG_INFO, "stopped after %d tokens", app->gen_count);
    const int32_t conv_id = app->gen_conv_id;
    app->gen_conv_id = -1;
    app->has_pending = false;
    app->state = app->loaded ? UI_STATE_IDLE : UI_STATE_NO_MODEL;
    explore_turn_done(app, conv_id, reason);
    autosave_request(app); /* a completed turn is never lost */
}

/* STEP: the distribution the engine waits on, for the inspector. */
static void set_pending(ui_app *app, const engine_event *ev)
{
    free(app->pending.top);
    memset(&app->pending, 0, sizeof app->pending);
    ui_token *t = &app->pending;
    t->id = -1;
    t->pos = ev->pos;
    t->entropy_raw = ev->entropy_raw;
    t->entropy_post = ev->entropy_post;
    int32_t nt = ev->n_top < 0 ? 0 : ev->n_top > SAMPLER_MAX_TOP ? SAMPLER_MAX_TOP : ev->n_top;
    t->top = nt ? malloc((size_t)nt * sizeof *t->top) : NULL;
    t->n_top = t->top ? nt : 0;
    if (t->top)
        memcpy(t->top, ev->top, (size_t)nt * sizeof *t->top);
    app->has_pending = true;
    if (app->insp_row >= t->n_top)
        app->insp_row = 0;
}

/* UNDO: the reply's last token and the text it added go. */
static void undo_token(ui_app *app, const engine_event *ev)
{
    ui_conv *c = ui_conv_by_id(app, app->gen_conv_id);
    if (!c || app->gen_msg >= c->n_msgs)
        return;
    ui_msg *m = &c->msgs[app->gen_msg];
    if (m->n_toks) {
        ui_token *t = &m->toks[--m->n_toks];
        free(t->top);
        engine_lens_free(t->lens);
        memset(t, 0, sizeof *t);
    }
    if (ev->reply_len >= 0 && (size_t)ev->reply_len < m->len) {
        m->len = (size_t)ev->reply_len;
        m->text[m->len] = 0;
        think_sync(app, m);
    }
    if (c->sel_msg == (int32_t)app->gen_msg && c->sel_tok >= (int32_t)m->n_toks)
        conv_sel_clear(c);
    if (app->gen_count > 0)
        app->gen_count--;
    app->n_past = ev->n_past;
}

void ui_handle_event(ui_app *app, const engine_event *ev)
{
    app->dirty = true;
    if (ev->type == ENGINE_EV_LOADED || ev->type == ENGINE_EV_PREFILL || ev->type == ENGINE_EV_TOKEN ||
        ev->type == ENGINE_EV_DONE || ev->type == ENGINE_EV_STEP || ev->type == ENGINE_EV_UNDO ||
        ev->type == ENGINE_EV_KV) {
        app->n_ckpt = ev->n_ckpt; /* the engine's memory (engine/memory/memory.h) */
        app->ckpt_bytes = ev->ckpt_bytes;
    }
    switch (ev->type) {
    case ENGINE_EV_LOAD_PROGRESS:
        app->state = UI_STATE_LOADING;
        app->progress = ev->progress;
        break;
    case ENGINE_EV_LOADED:
        app->info = ev->info;
        app->loaded = true;
        think_load_template(app); /* the reasoning style of its template */
        app->n_ctx = ev->n_ctx > 0 ? ev->n_ctx : (int32_t)ev->info.n_ctx;
        app->n_past = ev->n_past;
        if (!ui_busy(app))
            app->state = app->gen_conv_id >= 0 ? UI_STATE_PREFILL : UI_STATE_IDLE;
        if (app->config_note[0]) { /* the screen hid what was printed before it */
            ui_message(app, UI_MSG_WARN, "%s", app->config_note);
            if (!app->msg_hold)
                app->msg_until = ui_now() + 4 * UI_MSG_SECONDS;
            app->config_note[0] = 0;
        } else if (ev->info.remote_kind[0]) {
            if (app->sp.n_top > ev->info.remote_max_top) /* short: the status line must show all of it */
                ui_message(app, UI_MSG_WARN, "remote: %s, model %s; n_top %d capped to the server's %d",
                           ev->info.remote_kind, ev->info.name, app->sp.n_top, ev->info.remote_max_top);
            else
                ui_message(app, UI_MSG_INFO, "remote: %s at %s, model %s", ev->info.remote_kind,
                           app->eparams.remote_url ? app->eparams.remote_url : "?", ev->info.name);
        } else {
            ui_message(app, UI_MSG_INFO, "loaded %s (%s, %s)", ev->info.name, ev->info.arch, ev->info.file_type);
        }
        break;
    case ENGINE_EV_PREFILL:
        if (app->gen_conv_id < 0)
            break;
        app->state = UI_STATE_PREFILL == app->state || app->state == UI_STATE_LOADING ? UI_STATE_PREFILL : app->state;
        app->prefill_done = ev->done;
        app->prefill_total = ev->total;
        app->progress = ev->total > 0 ? (float)ev->done / (float)ev->total : 1.0f;
        if (ev->prompt_tps > 0) /* the prompt is done */
            app->prompt_tps = ev->prompt_tps;
        if (ev->n_ctx > 0) {
            app->n_past = ev->n_past;
            app->n_ctx = ev->n_ctx;
        }
        break;
    case ENGINE_EV_TOKEN: {
        ui_conv *c = ui_conv_by_id(app, ev->conv_id);
        if (!c || ev->conv_id != app->gen_conv_id || ev->req_id != app->gen_req || app->gen_msg >= c->n_msgs)
            break;
        app->has_pending = false;
        ui_msg *m = &c->msgs[app->gen_msg];
        msg_add_token(m, ev);
        think_token(app, m, ev->token, ev->text_len <= 0);
        if (app->state != UI_STATE_STOPPING)
            app->state = UI_STATE_GENERATING;
        if (app->gen_count++ == 0)
            app->gen_t0 = ui_now();
        app->n_past = ev->n_past > 0 ? ev->n_past : ev->pos + 1;
        if (ev->n_ctx > 0)
            app->n_ctx = ev->n_ctx;
        break;
    }
    case ENGINE_EV_DONE:
        if (ev->req_id != app->gen_req) /* a turn abandoned for a branch or an edit */
            break;
        if (app->gen_conv_id >= 0 && ev->conv_id == app->gen_conv_id && ev->text_len > 0) {
            /* bytes the engine held back (partial UTF-8, a partial stop string) */
            ui_conv *c = ui_conv_by_id(app, ev->conv_id);
            if (c && app->gen_msg < c->n_msgs) {
                ui_msg *m = &c->msgs[app->gen_msg];
                size_t n = ev->text_len < ENGINE_TEXT_MAX ? (size_t)ev->text_len : ENGINE_TEXT_MAX - 1;
                if (m->n_toks && (size_t)m->toks[m->n_toks - 1].off + m->toks[m->n_toks - 1].len == m->len)
                    m->toks[m->n_toks - 1].len += (uint32_t)n;
                msg_append(m, ev->text, n);
                think_sync(app, m);
            }
        }
        if (app->gen_conv_id >= 0)
            finish_turn(app, ev->reason);
        else if (app->state != UI_STATE_LOADING)
            app->state = app->loaded ? UI_STATE_IDLE : UI_STATE_NO_MODEL;
        if (ev->n_prompt > 0)
            app->prompt_tps = ev->prompt_tps;
        if (ev->n_gen > 0)
            app->gen_tps = ev->gen_tps;
        app->spec_drafted = ev->n_drafted;
        app->spec_accepted = ev->n_accepted;
        if (ev->n_ctx > 0) {
            app->n_past = ev->n_past;
            app->n_ctx = ev->n_ctx;
        }
        if (ev->reason == ENGINE_DONE_ERROR || ev->reason == ENGINE_DONE_CUT)
            ui_message(app, UI_MSG_ERROR, "%s", ev->message[0] ? ev->message : "generation failed");
        else if (ev->reason == ENGINE_DONE_CTX_FULL && ev->message[0]) /* the turn failed: an error, which
                                                                          replaces the engine's shorter one */
            ui_message(app, UI_MSG_ERROR, "%s: /edit it shorter, /clear or /new (or a larger -c%s)", ev->message,
                       app->info.recurrent ? "" : ", or context shift on");
        else if (ev->reason == ENGINE_DONE_CTX_FULL)
            ui_message(app, UI_MSG_WARN, "context full (%d/%d)", app->n_past, app->n_ctx);
        break;
    case ENGINE_EV_CONTEXT_SHIFT:
        ui_message(app, UI_MSG_WARN, "context shift: dropped %d tokens%s%s", ev->n_dropped, ev->message[0] ? " - " : "",
                   ev->message);
        break;
    case ENGINE_EV_ERROR:
        ui_message(app, UI_MSG_ERROR, "%s", ev->message[0] ? ev->message : "engine error");
        if (app->state == UI_STATE_LOADING && !app->loaded) {
            app->state = UI_STATE_NO_MODEL;
            /* too long for the status line, and the session is useless without it */
            char text[ENGINE_MSG_MAX + 4096 + 128];
            snprintf(text, sizeof text, "%s\n\n%s\n\nQuit with Ctrl-Q and start tokscope with another model.",
                     app->model_path, ev->message);
            ui_overlay_show(app, "Cannot load the model", text);
        }
        /* a refused step choice leaves the engine waiting; a turn that
         * failed ends with DONE, which finishes it here too */
        if (app->state != UI_STATE_STEP && ev->req_id == app->gen_req &&
            (ui_busy(app) || (!app->loaded && app->gen_conv_id >= 0)))
            finish_turn(app, ENGINE_DONE_ERROR); /* also a message sent while the model was loading */
        break;
    case ENGINE_EV_QUIT:
        break;
    case ENGINE_EV_STEP:
        if (ev->req_id != app->gen_req || ev->conv_id != app->gen_conv_id)
            break;
        set_pending(app, ev);
        app->state = UI_STATE_STEP;
        app->n_past = ev->n_past;
        break;
    case ENGINE_EV_UNDO:
        if (ev->req_id == app->gen_req && ev->conv_id == app->gen_conv_id)
            undo_token(app, ev);
        break;
    case ENGINE_EV_LENS:
        explore_lens_event(app, ev);
        break;
    case ENGINE_EV_KV:
        store_kv_event(app, ev);
        break;
    }
}

static void drain_events(ui_app *app)
{
    engine_event *ev = malloc(sizeof *ev);
    if (!ev)
        return;
    /* bounded per call so a flood of tokens cannot starve the keyboard */
    for (int i = 0; i < 4096 && engine_poll(app->eng, ev); i++)
        ui_handle_event(app, ev);
    free(ev);
}

/* ---- drawing ---- */

static void draw_overlay(ui_app *app)
{
    int maxw = 0;
    for (size_t i = 0; i < app->n_overlay; i++) {
        int w = (int)strlen(app->overlay[i]);
        if (w > maxw)
            maxw = w;
    }
    int w = maxw + 4, h = (int)app->n_overlay + 2;
    if (w > COLS - 2)
        w = COLS - 2;
    if (h > LINES - 2)
        h = LINES - 2;
    if (w < 10 || h < 3)
        return;
    int y0 = (LINES - h) / 2, x0 = (COLS - w) / 2;
    int body = h - 2;
    int max_scroll = (int)app->n_overlay - body;
    if (app->overlay_scroll > max_scroll)
        app->overlay_scroll = max_scroll > 0 ? max_scroll : 0;
    for (int y = 0; y < h; y++)
        draw_fill(y0 + y, x0, w, 0);
    int ba = theme_attr(THEME_BORDER_FOCUS);
    draw_hline(y0, x0, w, ba);
    draw_hline(y0 + h - 1, x0, w, ba);
    draw_vline(y0 + 1, x0, h - 2, ba);
    draw_vline(y0 + 1, x0 + w - 1, h - 2, ba);
    draw_str(y0, x0, 1, "\xe2\x94\x8c", ba);
    draw_str(y0, x0 + w - 1, 1, "\xe2\x94\x90", ba);
    draw_str(y0 + h - 1, x0, 1, "\xe2\x94\x94", ba);
    draw_str(y0 + h - 1, x0 + w - 1, 1, "\xe2\x94\x98", ba);
    draw_printf(y0, x0 + 2, w - 4, theme_attr(THEME_HEADER), " %s ", app->overlay_title);
    for (int i = 0; i < body && app->overlay_scroll + i < (int)app->n_overlay; i++) {
        const int li = app->overlay_scroll + i;
        const char *l = app->overlay[li];
        bool head = l[0] && l[0] != ' ';
        int attr = head ? theme_attr(THEME_HEADER) : 0;
        if (app->overlay_pick_n && li == app->overlay_pick_first + app->overlay_sel) {
            attr = A_REVERSE;
            draw_fill(y0 + 1 + i, x0 + 1, w - 2, attr);
            draw_str(y0 + 1 + i, x0 + 1, 1, ">", attr);
        }
        draw_str(y0 + 1 + i, x0 + 2, w - 4, l, attr);
    }
    if (max_scroll > 0)
        draw_printf(y0 + h - 1, x0 + w - 16, 14, ba, " %d/%d ", app->overlay_scroll + body, (int)app->n_overlay);
}

static void draw_all(ui_app *app)
{
    if (app->clear_screen) {
        clearok(curscr, TRUE);
        app->clear_screen = false;
    }
    erase();
    layout_compute(&app->lay, LINES, COLS, input_rows(COLS));
    ui_layout *l = &app->lay;
    if (l->too_small) {
        curs_set(0);
        char msg[96];
        snprintf(msg, sizeof msg, "terminal too small (%dx%d, need %dx%d)", COLS, LINES, LAYOUT_MIN_COLS,
                 LAYOUT_MIN_ROWS);
        int len = (int)strlen(msg);
        int x = COLS > len ? (COLS - len) / 2 : 0;
        draw_str(LINES / 2, x, COLS - x, msg, A_BOLD);
        refresh();
        return;
    }
    status_draw_title(app, l->title);
    explore_lens_sync(app);
    conv_draw_opts co = {app->prob_colors, true, app->focus == UI_FOCUS_CONV, ui_busy(app)};
    if (explore_compare_view(app)) {
        /* compare settings: side A (the panel's parameters) left, B right */
        ui_conv *sa = ui_conv_by_id(app, app->cmp_a), *sb = ui_conv_by_id(app, app->cmp_b);
        ui_rect ra = l->conv, rb = l->conv;
        ra.w = l->conv.w / 2;
        rb.x = l->conv.x + ra.w + 1;
        rb.w = l->conv.w - ra.w - 1;
        ra.y = rb.y = l->conv.y + 1;
        ra.h = rb.h = l->conv.h - 1;
        char desc[160];
        explore_compare_desc(app, desc, sizeof desc);
        const int ha = theme_attr(THEME_HEADER) | (app->cmp_side == 0 ? (int)A_UNDERLINE : 0);
        const int hb = theme_attr(THEME_HEADER) | (app->cmp_side == 1 ? (int)A_UNDERLINE : 0);
        draw_str(l->conv.y, ra.x, ra.w, "A: the panel's parameters", ha);
        draw_printf(l->conv.y, rb.x, rb.w, hb, "B: %s", desc);
        draw_vline(l->conv.y, ra.x + ra.w, l->conv.h, theme_attr(THEME_BORDER));
        sa->strip = sb->strip = app->strip;
        co.focused = app->focus == UI_FOCUS_CONV && app->cmp_side == 0;
        conv_draw(sa, ra, &co);
        co.focused = app->focus == UI_FOCUS_CONV && app->cmp_side == 1;
        conv_draw(sb, rb, &co);
    } else {
        ui_current(app)->strip = app->strip;
        /* messages queued during a reply sit under the conversation */
        ui_rect cr = l->conv;
        int queued = queued_rows(app, ui_current(app)->id, cr.w - 1, cr.h / 2);
        cr.h -= queued;
        conv_draw(ui_current(app), cr, &co);
        queued_draw(app, ui_current(app)->id, (ui_rect){cr.y + cr.h, cr.x, queued, cr.w - 1});
        autosave_draw_offer(app, cr);
    }
    params_draw(app, l->params);
    inspector_draw(app, l->inspector);
    const char *label = app->state == UI_STATE_STEP ? "step mode \xe2\x80\x94 Enter draws, text forces, Backspace undoes"
                        : app->edit_uid >= 0 ? "editing a message \xe2\x80\x94 Enter sends a new version, Esc cancels"
                        : ui_busy(app)       ? "generating \xe2\x80\x94 Enter queues, Esc stops"
                                             : NULL;
    input_draw(l->input, app->focus == UI_FOCUS_INPUT, label);
    status_draw(app, l->status);
    status_draw_keys(app, l->keys);
    if (app->overlay)
        draw_overlay(app);
    if (app->focus == UI_FOCUS_INPUT && !app->overlay) {
        int y, x;
        input_cursor(&y, &x);
        curs_set(1);
        move(y, x);
    } else
        curs_set(0);
    refresh();
}

/* ---- keys ---- */

static bool step_line(ui_app *app, const char *line);

static void handle_line(ui_app *app, char *line)
{
    char name[32], args[8];
    if (step_line(app, line))
        return;
    if (commands_parse(line, name, sizeof name, args, sizeof args)) {
        commands_run(app, line);
        return;
    }
    char *text = line;
    while (*text == ' ' || *text == '\n' || *text == '\t')
        text++;
    if (!*text)
        return;
    if (text[0] == '/' && text[1] == '/')
        text++;
    /* typed or pasted bytes that are not UTF-8 become U+FFFD here, so the
     * conversation, the tokenizer and the saved JSON see valid text */
    char *clean = utf8_sanitize(text, strlen(text), NULL);
    if (!clean)
        return;
    if (ui_busy(app))
        queued_push(app, ui_current(app)->id, clean); /* sent when the reply ends */
    else
        ui_send_user(app, clean);
    free(clean);
}

static void handle_resize(ui_app *app)
{
    struct winsize ws;
    /* resizeterm queues a KEY_RESIZE of its own: only call it on a real change */
    if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_row > 0 && ws.ws_col > 0 &&
        (ws.ws_row != LINES || ws.ws_col != COLS))
        resizeterm(ws.ws_row, ws.ws_col);
    app->clear_screen = true;
    app->dirty = true;
}

/* Focus on the inspector with its cursor on the shown step's chosen row. */
static void focus_inspector(ui_app *app)
{
    app->focus = UI_FOCUS_INSPECTOR;
    bool pending;
    const ui_token *t = inspector_token(app, explore_side(app), &pending);
    engine_token_candidate rows[SAMPLER_MAX_TOP];
    int n = inspector_rows(app, t, rows);
    app->insp_row = 0;
    for (int k = 0; t && k < n; k++)
        if (rows[k].id == t->id)
            app->insp_row = k;
}

/* Enter on an inspector row: step mode's pick, or a branch from that step. */
static void inspector_pick(ui_app *app)
{
    ui_conv *c = explore_side(app);
    bool pending;
    const ui_token *t = inspector_token(app, c, &pending);
    engine_token_candidate rows[SAMPLER_MAX_TOP];
    int n = inspector_rows(app, t, rows);
    if (!t || app->insp_row < 0 || app->insp_row >= n)
        return;
    const int32_t id = rows[app->insp_row].id;
    if (pending) {
        explore_step_pick(app, id);
        return;
    }
    size_t mi, ti;
    if (!explore_shown(c, &mi, &ti))
        return;
    if (explore_branch(app, c, mi, ti, id)) {
        app->focus = UI_FOCUS_CONV;
        conv_sel_clear(c);
    }
}

/* A printable key in the conversation or the inspector: the input takes
 * the focus and the key (letters are text there, never commands). */
static void type_into_input(ui_app *app, int key)
{
    app->focus = UI_FOCUS_INPUT;
    conv_sel_clear(explore_side(app));
    input_key(key);
}

static void inspector_focus_key(ui_app *app, int key)
{
    ui_conv *c = explore_side(app);
    bool pending;
    const ui_token *t = inspector_token(app, c, &pending);
    if (((key > ' ' && key < 256 && key != 127) || (key == ' ' && !pending))) {
        type_into_input(app, key); /* no keystroke is lost: typing goes to the input */
        return;
    }
    if (app->lens_on && !pending) { /* the lens table scrolls */
        if (key == KEY_UP)
            app->lens_scroll = app->lens_scroll > 0 ? app->lens_scroll - 1 : 0;
        else if (key == KEY_DOWN)
            app->lens_scroll = app->lens_scroll < 0 ? 1 << 20 : app->lens_scroll + 1;
        else if (key == KEY_LEFT)
            conv_sel_step(c, -1);
        else if (key == KEY_RIGHT)
            conv_sel_step(c, 1);
        return;
    }
    const int n = t ? t->n_top : 0;
    switch (key) {
    case KEY_UP:
        app->insp_row = app->insp_row > 0 ? app->insp_row - 1 : 0;
        break;
    case KEY_DOWN:
        app->insp_row = app->insp_row + 1 < n ? app->insp_row + 1 : app->insp_row;
        break;
    case KEY_HOME:
        app->insp_row = 0;
        break;
    case KEY_END:
        app->insp_row = n > 0 ? n - 1 : 0;
        break;
    case KEY_LEFT:
        conv_sel_step(c, -1);
        break;
    case KEY_RIGHT:
        conv_sel_step(c, 1);
        break;
    case '\r':
    case '\n':
    case KEY_ENTER:
        inspector_pick(app);
        break;
    case ' ':
        explore_step_draw(app);
        break;
    case KEY_BACKSPACE:
    case 127:
    case 8:
        explore_step_undo(app);
        break;
    default:
        break;
    }
}

static void conv_focus_key(ui_app *app, int key)
{
    ui_conv *c = explore_side(app);
    switch (key) {
    case '\r':
    case '\n':
    case KEY_ENTER:
        if (!conv_selected(c))
            conv_sel_last(c);
        focus_inspector(app);
        break;
    case '<':
    case ',':
        explore_switch(app, -1);
        break;
    case '>':
    case '.':
        explore_switch(app, 1);
        break;
    case ']':
    case '[':
        if (!conv_sel_uncertain(c, key == ']' ? 1 : -1, app->strip))
            ui_message(app, UI_MSG_INFO, "no %s uncertain token (%s)", key == ']' ? "later" : "earlier",
                       app->strip == CONV_STRIP_PROB ? "chosen p 50% or less" : "entropy 2 nats or more");
        break;
    case CTRL('w'):
        if (explore_compare_view(app)) {
            app->cmp_side = !app->cmp_side;
            c = explore_side(app);
            if (!conv_selected(c))
                conv_sel_last(c);
        }
        break;
    case KEY_LEFT:
        conv_sel_step(c, -1);
        break;
    case KEY_RIGHT:
        conv_sel_step(c, 1);
        break;
    case KEY_UP:
        conv_sel_line(c, -1);
        break;
    case KEY_DOWN:
        conv_sel_line(c, 1);
        break;
    case KEY_HOME:
        conv_sel_first(c);
        break;
    case KEY_END:
        conv_sel_last(c);
        break;
    default:
        /* typing while the pane has focus goes to the input: letters are
         * text, the pane's letter commands are Alt- chords (conv_alt_key) */
        if (key >= 32 && key < 256 && key != 127)
            type_into_input(app, key);
    }
}

/* Alt-<letter> in the conversation: its commands that letters were once.
 * False for a chord it does not bind. */
static bool conv_alt_key(ui_app *app, int key)
{
    ui_conv *c = explore_side(app);
    switch (key) {
    case 'e': {
        int32_t i = c->sel_msg >= 0 ? c->sel_msg : (int32_t)c->n_msgs - 1;
        while (i >= 0 && strcmp(c->msgs[i].role, "user") != 0)
            i--;
        if (i < 0)
            ui_message(app, UI_MSG_WARN, "no user message above the cursor");
        else
            explore_edit_begin(app, c, (size_t)i);
        return true;
    }
    case 'c':
        app->prob_colors = !app->prob_colors;
        ui_message(app, UI_MSG_INFO, "probability colours %s", app->prob_colors ? "on" : "off");
        return true;
    case 'r':
        app->post_order = !app->post_order;
        ui_message(app, UI_MSG_INFO, "inspector: %s order", app->post_order ? "post-chain" : "raw logit");
        return true;
    case 't':
        think_toggle(app);
        return true;
    default:
        return false;
    }
}

/* Enter in the input while step mode waits: a command runs, an empty line
 * lets the sampler draw, text is forced. */
static bool step_line(ui_app *app, const char *line)
{
    char name[32], args[8];
    if (app->state != UI_STATE_STEP || commands_parse(line, name, sizeof name, args, sizeof args))
        return false;
    const char *p = line;
    while (*p == ' ' || *p == '\n' || *p == '\t')
        p++;
    if (!*p)
        explore_step_draw(app);
    else
        explore_step_text(app, line[0] == '/' && line[1] == '/' ? line + 1 : line);
    return true;
}

/* Ctrl-C (a key in raw mode; a SIGINT comes here too) stops prefill or
 * generation, else clears the input (into the history: Up recalls it); a
 * second one within a second quits, through the autosave. */
static void ui_ctrl_c(ui_app *app)
{
    double now = ui_now();
    if (app->last_ctrl_c > 0 && now - app->last_ctrl_c <= 1.0) {
        app->quit = true;
        return;
    }
    app->last_ctrl_c = now;
    if (ui_busy(app)) {
        ui_stop(app);
        ui_message(app, UI_MSG_INFO, "stopping; Ctrl-C again to quit");
    } else if (input_in_search()) {
        input_key(CTRL('g'));
    } else if (input_text()[0]) {
        free(input_take());
        ui_message(app, UI_MSG_INFO, "input cleared (Up recalls it); Ctrl-C again to quit");
    } else {
        ui_message(app, UI_MSG_INFO, "Ctrl-C again to quit (also Ctrl-Q, /quit)");
    }
}

/* ESC [ ... final (CSI) or ESC O ... final (SS3) that ncurses could not match
 * against the terminal's description (a key the terminfo entry lacks, or a
 * TERM that names another terminal): dropped whole rather than typed into
 * the input as "[1~". Its bytes arrive together, so they are readable now. */
static void drop_escape_sequence(void)
{
    int c = getch();
    /* parameter and intermediate bytes 0x20-0x3f, then one final byte */
    for (int n = 0; c != ERR && c >= 0x20 && c < 0x40 && n < 64; n++)
        c = getch();
    if (c != ERR && !(c >= 0x40 && c <= 0x7e))
        ungetch(c); /* not part of a sequence after all */
}

static void handle_key(ui_app *app, int key, bool *in_paste)
{
    app->dirty = true;
    if (app->msg_hold && key != KEY_RESIZE) { /* the error has been seen: it may go now */
        app->msg_hold = false;
        app->msg_until = ui_now() + UI_MSG_SECONDS;
    }
    if (key == KEY_RESIZE) {
        app->clear_screen = true;
        return;
    }
    if (key == KEY_PASTE_BEGIN) {
        *in_paste = true;
        app->focus = UI_FOCUS_INPUT;
        return;
    }
    if (key == KEY_PASTE_END) {
        input_paste_flush(true);
        *in_paste = false;
        return;
    }
    if (*in_paste) {
        if (key >= 0 && key < 256)
            input_paste_add(key); /* inserted at once, as valid UTF-8 */
        else if (key == KEY_ENTER)
            input_paste_add('\n');
        else {
            input_paste_flush(false);
            input_key(key);
        }
        return;
    }
    if (key == CTRL('q')) {
        app->quit = true;
        return;
    }
    /* An overlay's own keys are arrows, pages, Enter and Esc (and F1 for
     * help), none of them text: they close it or move in it and stop there.
     * Any other key closes it and then does its usual job, so the first
     * letter typed after a dialog is not lost. */
    const bool enter = key == '\n' || key == '\r' || key == KEY_ENTER;
    if (app->overlay && (key == 27 || key == KEY_F(1) || (enter && !app->overlay_pick_n))) {
        ui_overlay_close(app);
        return;
    }
    if (app->overlay && key != KEY_UP && key != KEY_DOWN && key != KEY_PPAGE && key != KEY_NPAGE && !enter)
        ui_overlay_close(app); /* and on to the key's usual job */
    if (app->overlay && app->overlay_pick_n) {
        /* a pick list: the selection moves and the view follows it */
        int body = LINES - 4;
        if (key == KEY_DOWN && app->overlay_sel + 1 < app->overlay_pick_n)
            app->overlay_sel++;
        else if (key == KEY_UP && app->overlay_sel > 0)
            app->overlay_sel--;
        else if (key == KEY_NPAGE)
            app->overlay_sel = app->overlay_sel + body < app->overlay_pick_n ? app->overlay_sel + body : app->overlay_pick_n - 1;
        else if (key == KEY_PPAGE)
            app->overlay_sel = app->overlay_sel > body ? app->overlay_sel - body : 0;
        else if (enter) {
            void (*cb)(ui_app *, int) = app->overlay_on_pick;
            const int idx = app->overlay_sel;
            ui_overlay_close(app);
            if (cb)
                cb(app, idx);
            return;
        }
        const int line = app->overlay_pick_first + app->overlay_sel;
        if (line < app->overlay_scroll)
            app->overlay_scroll = line;
        else if (body > 0 && line >= app->overlay_scroll + body)
            app->overlay_scroll = line - body + 1;
        return;
    }
    if (app->overlay) {
        int body = LINES - 4;
        if (key == KEY_DOWN)
            app->overlay_scroll++;
        else if (key == KEY_UP)
            app->overlay_scroll = app->overlay_scroll > 0 ? app->overlay_scroll - 1 : 0;
        else if (key == KEY_NPAGE)
            app->overlay_scroll += body > 1 ? body : 1;
        else if (key == KEY_PPAGE)
            app->overlay_scroll = app->overlay_scroll > body ? app->overlay_scroll - body : 0;
        return;
    }
    bool lone_esc = key == UI_KEY_LONE_ESC;
    if (key == 27 || lone_esc) {
        int next = lone_esc ? ERR : getch();
        if (next == '[' || next == 'O') {
            drop_escape_sequence();
            return;
        }
        if (next == '\r' || next == '\n' || next == KEY_ENTER) {
            app->focus = UI_FOCUS_INPUT;
            input_insert("\n");
        } else if (next != ERR && app->focus == UI_FOCUS_INPUT && !ui_busy(app)) {
            input_key(27); /* Alt-<key>: readline's meta bindings (M-b, M-f, M-d...) */
            input_key(next);
        } else if (next != ERR && app->focus == UI_FOCUS_CONV && conv_alt_key(app, next)) {
            /* Alt-e, Alt-t, Alt-c, Alt-r: the conversation's commands */
        } else if (next != ERR) {
            /* Esc followed at once by another key: the Esc, then that key */
            ungetch(next);
            handle_key(app, UI_KEY_LONE_ESC, in_paste);
        } else if (app->focus == UI_FOCUS_INPUT && input_in_search()) {
            input_key(CTRL('g')); /* abort the search, restoring the line */
        } else if (app->focus == UI_FOCUS_PARAMS && app->param_editing) {
            app->param_editing = false;
        } else if (queued_cancel(app)) {
            /* a queued message goes first; the next Esc stops the reply */
        } else if (ui_busy(app)) {
            ui_stop(app);
        } else if (app->focus != UI_FOCUS_INPUT) {
            conv_sel_clear(explore_side(app));
            app->focus = UI_FOCUS_INPUT;
        } else if (app->edit_uid >= 0) {
            explore_edit_cancel(app);
            input_set_text("");
            ui_message(app, UI_MSG_INFO, "edit cancelled");
        }
        return;
    }
    switch (key) {
    case CTRL('c'):
        ui_ctrl_c(app);
        return;
    case CTRL('l'):
        app->clear_screen = true;
        return;
    case KEY_F(1):
        ui_show_help(app);
        return;
    case '\t':
    case KEY_BTAB:
        app->param_editing = false;
        app->focus = (enum ui_focus)((app->focus + (key == '\t' ? 1 : UI_FOCUS_COUNT - 1)) % UI_FOCUS_COUNT);
        if (app->state == UI_STATE_STEP && app->focus == UI_FOCUS_CONV && key == '\t')
            app->focus = UI_FOCUS_INSPECTOR; /* step mode: Tab goes to the candidates */
        if (app->focus == UI_FOCUS_CONV && !conv_selected(explore_side(app)) && app->state != UI_STATE_STEP)
            conv_sel_last(explore_side(app));
        if (app->focus == UI_FOCUS_INSPECTOR)
            focus_inspector(app);
        return;
    case KEY_F(6):
        explore_step_toggle(app, -1);
        return;
    case KEY_F(7):
        app->strip = (app->strip + 1) % 3;
        ui_message(app, UI_MSG_INFO, "entropy strip: %s",
                   app->strip == CONV_STRIP_ENTROPY ? "entropy" : app->strip == CONV_STRIP_PROB ? "probability" : "off");
        return;
    case KEY_F(9):
        think_toggle(app);
        return;
    case KEY_F(8):
        if (!app->lens_on && remote_ui_refuse(app, "the logit lens"))
            return;
        app->lens_on = !app->lens_on;
        app->lens_scroll = -1;
        ui_message(app, UI_MSG_INFO, "logit lens %s", app->lens_on ? "on" : "off");
        return;
    case CTRL('p'):
    case KEY_F(2):
        ui_switch_conv(app, -1);
        return;
    case CTRL('n'):
    case KEY_F(3):
        ui_switch_conv(app, 1);
        return;
    case KEY_F(4):
        app->prob_colors = !app->prob_colors;
        ui_message(app, UI_MSG_INFO, "probability colours %s", app->prob_colors ? "on" : "off");
        return;
    case KEY_F(5):
        app->post_order = !app->post_order;
        ui_message(app, UI_MSG_INFO, "inspector: %s order", app->post_order ? "post-chain" : "raw logit");
        return;
    case KEY_PPAGE:
        conv_scroll(ui_current(app), app->lay.conv.h > 3 ? app->lay.conv.h - 2 : 1);
        return;
    case KEY_NPAGE:
        conv_scroll(ui_current(app), -(app->lay.conv.h > 3 ? app->lay.conv.h - 2 : 1));
        return;
    case KEY_MOUSE: {
        MEVENT me;
        if (getmouse(&me) == OK) {
            if (me.bstate & (BUTTON1_PRESSED | BUTTON1_CLICKED | BUTTON1_RELEASED)) {
                /* a click on a token (or its strip cell) selects it for the inspector */
                ui_conv *sides[2] = {ui_current(app), NULL};
                if (explore_compare_view(app)) {
                    sides[0] = ui_conv_by_id(app, app->cmp_a);
                    sides[1] = ui_conv_by_id(app, app->cmp_b);
                }
                for (int k = 0; k < 2; k++)
                    if (sides[k] && conv_hit(sides[k], me.y, me.x)) {
                        app->focus = UI_FOCUS_CONV;
                        if (sides[1])
                            app->cmp_side = k;
                    }
            } else if (me.bstate & BUTTON4_PRESSED)
                conv_scroll(ui_current(app), 3);
#ifdef BUTTON5_PRESSED
            else if (me.bstate & BUTTON5_PRESSED)
                conv_scroll(ui_current(app), -3);
#endif
        }
        return;
    }
    default:
        break;
    }
    switch (app->focus) {
    case UI_FOCUS_INPUT:
        if (key == '\r' || key == '\n' || key == KEY_ENTER) {
            /* more bytes already waiting after Enter: a paste without bracketed
             * paste support; keep the newline in the text instead of sending */
            int next = getch();
            if (next != ERR) {
                ungetch(next);
                /* a slash command still ends here: a script's (or an
                 * unbracketed paste's) commands each run */
                if (!commands_ends_at_newline(input_text(), next)) {
                    input_insert("\n");
                    return;
                }
            }
            if (input_in_search())
                input_key(CTRL('j')); /* ends the search, keeping the found line */
            char *line = input_take();
            if (line) {
                handle_line(app, line);
                free(line);
            }
            return;
        }
        if (app->state == UI_STATE_STEP && !input_text()[0] && (key == KEY_BACKSPACE || key == 127 || key == 8)) {
            explore_step_undo(app); /* Backspace on an empty line: one position back */
            return;
        }
        input_key(key);
        return;
    case UI_FOCUS_CONV:
        conv_focus_key(app, key);
        return;
    case UI_FOCUS_PARAMS:
        params_key(app, key);
        return;
    case UI_FOCUS_INSPECTOR:
        inspector_focus_key(app, key);
        return;
    default:
        return;
    }
}

/* ---- setup ---- */

/* SIGWINCH, SIGTERM, SIGHUP and SIGINT only write a byte; the loop does
 * the work (SIGTERM, SIGHUP: quit through the autosave; SIGINT: as Ctrl-C). */
static void on_signal(int sig)
{
    int saved = errno;
    if (g_winch_pipe[1] >= 0) {
        ssize_t r = write(g_winch_pipe[1], sig == SIGWINCH ? "w" : sig == SIGINT ? "c" : "q", 1);
        (void)r;
    }
    errno = saved;
}

/* The signal pipe, and the signals that end a session, from the start:
 * before the picker, which a SIGTERM then ends too (getch fails). SIGWINCH
 * waits for the main loop: ncurses handles it until then. */
static void signals_init(void)
{
    if (g_winch_pipe[0] >= 0 || pipe(g_winch_pipe) != 0)
        return;
    for (int i = 0; i < 2; i++) {
        fcntl(g_winch_pipe[i], F_SETFL, O_NONBLOCK);
        fcntl(g_winch_pipe[i], F_SETFD, FD_CLOEXEC);
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
}

static void setup_locale(void)
{
    setlocale(LC_ALL, "");
    const char *cs = nl_langinfo(CODESET);
    if (!cs || strcmp(cs, "UTF-8") != 0) {
        /* wide-character output needs a UTF-8 locale; C.UTF-8 exists on every glibc */
        if (!setlocale(LC_CTYPE, "C.UTF-8"))
            setlocale(LC_CTYPE, "en_US.UTF-8");
    }
}

static void default_history_path(char *buf, size_t cap)
{
    const char *xdg = getenv("XDG_STATE_HOME");
    const char *home = getenv("HOME");
    if (xdg && *xdg)
        snprintf(buf, cap, "%s/tokscope/history", xdg);
    else if (home && *home)
        snprintf(buf, cap, "%s/.local/state/tokscope/history", home);
    else
        buf[0] = 0;
}

static void term_setup(ui_app *app)
{
    initscr();
    raw();
    noecho();
    nonl();
    keypad(stdscr, TRUE);
    nodelay(stdscr, TRUE);
    set_escdelay(25);
    theme_init(app->colors);
    define_key("\033[200~", KEY_PASTE_BEGIN);
    define_key("\033[201~", KEY_PASTE_END);
    /* Home and End as tmux, screen and the VT220 family send them, whatever
     * TERM's description says (xterm's is ESC O H): the conversation's first
     * and last token have no letter keys any more */
    static const char *const home[] = {"\033[1~", "\033[7~", "\033[H", "\033OH"};
    static const char *const end[] = {"\033[4~", "\033[8~", "\033[F", "\033OF"};
    for (size_t i = 0; i < 4; i++) {
        if (key_defined(home[i]) == 0)
            define_key(home[i], KEY_HOME);
        if (key_defined(end[i]) == 0)
            define_key(end[i], KEY_END);
    }
    if (app->mouse) {
        mmask_t mask = BUTTON4_PRESSED | BUTTON1_PRESSED | BUTTON1_CLICKED;
#ifdef BUTTON5_PRESSED
        mask |= BUTTON5_PRESSED;
#endif
        mousemask(mask, NULL);
        mouseinterval(0);
    }
}

static void term_paste_mode(bool on)
{
    fputs(on ? "\033[?2004h" : "\033[?2004l", stdout);
    fflush(stdout);
}

/* No model given: the model of the conversation to resume, else the picker,
 * which offers to resume the last conversation (*resume is then set). */
static char *pick_model(ui_app *app, const ui_options *o, bool *resume, char *resume_path, size_t cap)
{
    store_summary sum;
    char err[256];
    if (*resume && resume_path[0] && store_peek(resume_path, &sum, err, sizeof err) && sum.model[0] &&
        access(sum.model, R_OK) == 0)
        return strdup(sum.model);
    const store_summary *last = autosave_last_summary(app);
    char label[600] = "";
    if (!*resume && last && last->model[0] && access(last->model, R_OK) == 0)
        autosave_offer_text(app, label, sizeof label);
    bool chose = false;
    char *picked = picker_run_offer((const char *const *)o->model_dirs, o->n_model_dirs,
                                    label[0] ? label : NULL, &chose);
    if (chose && last) { /* chosen only when offered, i.e. with a last session */
        *resume = true;
        snprintf(resume_path, cap, "%s", autosave_last_path(app));
        return strdup(last->model);
    }
    return picked;
}

/* --resume, or the picker's offer: the conversations come back before the
 * first key. */
static void start_resume(ui_app *app, const char *path)
{
    char err[700];
    if (!path[0])
        autosave_note(app, UI_MSG_WARN, "no autosaved conversation to resume: a new one starts");
    else if (autosave_resume(app, path, err, sizeof err)) {
        const char *base = strrchr(path, '/');
        size_t n = 0;
        for (size_t i = 0; i < app->n_convs; i++)
            n += app->convs[i]->n_msgs;
        autosave_note(app, err[0] ? UI_MSG_WARN : UI_MSG_INFO, "resumed: %zu messages (%s)%s%s", n,
                      base ? base + 1 : path, err[0] ? "; " : "", err);
    } else
        autosave_note(app, UI_MSG_ERROR, "cannot resume: %s", err);
}

/* The UI thread needs a few milliseconds of CPU a second; the engine's
 * threads want every core while a reply streams, in lockstep, so each time
 * the UI's wakeup preempted one of them the other waited too. At nice 19
 * (this thread only: Linux's nice is per thread, and the engine's threads,
 * made before this, keep theirs) the UI runs where the engine leaves a core
 * idle, between tokens, and still gets its share when it does not. */
static void ui_yield_to_engine(void)
{
#ifdef SYS_gettid
    setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), 19);
#endif
}

int ui_run(const ui_options *o)
{
    char err_exit[1024] = "";
    setup_locale();
    ui_app *app = calloc(1, sizeof *app);
    if (!app)
        return 1;
    app->eparams = o->engine;
    app->sp = o->engine.sampling;
    app->sp_start = app->sp;
    app->gen_conv_id = -1;
    app->next_conv_id = 1;
    app->edit_conv = app->edit_uid = -1;
    app->lens_scroll = -1;
    app->step_on = o->engine.step_mode;
    app->prob_colors = o->prob_colors;
    app->post_order = o->post_order;
    app->mouse = o->mouse;
    const char *nc = getenv("NO_COLOR");
    app->colors = o->colors && !(nc && *nc);
    if (o->engine.template_name)
        snprintf(app->template_name, sizeof app->template_name, "%s", o->engine.template_name);
    if (o->config_note)
        snprintf(app->config_note, sizeof app->config_note, "%s", o->config_note);
    ui_new_conv(app, o->system);
    app->save_kv = !o->no_save_kv && !(o->engine.remote_url && *o->engine.remote_url);
    autosave_init(app, !o->no_autosave);
    signals_init();

    term_setup(app);
    char *picked = NULL;
    char resume_path[4096 + 128] = "";
    bool resume = o->resume;
    if (resume && (o->resume_path || autosave_last_path(app)))
        snprintf(resume_path, sizeof resume_path, "%s",
                 o->resume_path ? o->resume_path : autosave_last_path(app));
    const bool remote = o->engine.remote_url && *o->engine.remote_url;
    if (!o->engine.model_path && !remote)
        picked = pick_model(app, o, &resume, resume_path, sizeof resume_path);
    if (remote) /* the server's models: /model lists them */
        app->eparams.model_path = NULL;
    else if (!o->engine.model_path) {
        if (!picked) {
            endwin();
            autosave_finish(app, err_exit, sizeof err_exit); /* nothing to save yet: frees */
            conv_free(app->convs[0]);
            free(app->convs);
            free(app);
            return 0;
        }
        app->eparams.model_path = picked;
    }
    if (remote)
        snprintf(app->model_path, sizeof app->model_path, "remote %s", o->engine.remote_url);
    else
        snprintf(app->model_path, sizeof app->model_path, "%s", app->eparams.model_path);
    erase();
    draw_printf(0, 0, COLS, A_BOLD, "tokscope: starting the engine for %s", app->model_path);
    refresh();

    char err[512] = "";
    app->eng = engine_start(&app->eparams, err, sizeof err);
    ui_yield_to_engine();
    if (!app->eng) {
        endwin();
        fprintf(stderr, "tokscope: %s\n", err[0] ? err : "cannot start the engine");
        autosave_finish(app, err_exit, sizeof err_exit);
        free(picked);
        conv_free(app->convs[0]);
        free(app->convs);
        free(app);
        return 1;
    }
    app->state = UI_STATE_LOADING;

    char hist[4096];
    if (o->history_path)
        snprintf(hist, sizeof hist, "%s", o->history_path);
    else
        default_history_path(hist, sizeof hist);
    input_init(hist[0] ? hist : NULL);
    if (resume)
        start_resume(app, resume_path);

    if (g_winch_pipe[0] >= 0) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_signal;
        sigemptyset(&sa.sa_mask);
        sigaction(SIGWINCH, &sa, NULL);
        sigaction(SIGTERM, &sa, NULL);
        sigaction(SIGHUP, &sa, NULL);
    }
    term_paste_mode(true);
    handle_resize(app); /* the terminal may have changed while the picker ran */

    bool in_paste = false;
    app->dirty = true;
    while (!app->quit) {
        double now = ui_now();
        if (app->msg[0] && app->msg_until > 0 && now >= app->msg_until) {
            app->msg[0] = 0;
            app->dirty = true;
        }
        if (app->state == UI_STATE_GENERATING)
            app->dirty = true; /* live tok/s */
        int timeout = 1000;
        bool frame_wait = false;
        const bool streaming = app->state == UI_STATE_GENERATING || app->state == UI_STATE_PREFILL;
        if (app->dirty) {
            double wait = app->last_draw + (streaming ? UI_FRAME_GEN_S : UI_FRAME_S) - now;
            if (wait <= 0) {
                draw_all(app);
                app->last_draw = now;
                app->dirty = false;
                /* While a reply streams, the next frame is the next time
                 * anything shows: sleep until then rather than wake for
                 * the next token only to wait for the frame (each wakeup
                 * takes a core from the engine's threads). */
                timeout = streaming ? (int)(UI_FRAME_GEN_S * 1000.0) : 1000;
                frame_wait = streaming;
            } else {
                timeout = (int)(wait * 1000.0) + 1;
                frame_wait = true;
            }
        }
        if (app->msg[0] && app->msg_until > 0) {
            int t = (int)((app->msg_until - now) * 1000.0) + 1;
            if (t < timeout)
                timeout = t > 0 ? t : 0;
        }
        /* Until the next frame is due the engine's events wait in their
         * queue (drained below, before the frame): waking for each token
         * would take a core from the engine's threads for nothing the
         * screen shows sooner. Keys and signals still wake us at once.
         * poll() skips a negative fd. */
        struct pollfd fds[3] = {
            {STDIN_FILENO, POLLIN, 0},
            {frame_wait ? -1 : engine_event_fd(app->eng), POLLIN, 0},
            {g_winch_pipe[0], POLLIN, 0},
        };
        int r = poll(fds, 3, timeout);
        if (r < 0 && errno != EINTR)
            break;
        char sigs[64];
        ssize_t ns = g_winch_pipe[0] >= 0 ? read(g_winch_pipe[0], sigs, sizeof sigs) : 0;
        for (ssize_t i = 0; i < ns; i++) {
            if (sigs[i] == 'q')
                app->quit = true; /* SIGTERM / SIGHUP: leave through the normal cleanup */
            else if (sigs[i] == 'c')
                ui_ctrl_c(app);
            else
                handle_resize(app);
        }
        drain_events(app);
        queued_dispatch(app); /* a message queued during the reply that just ended */
        autosave_poll(app);
        if (r > 0 && (fds[0].revents & (POLLHUP | POLLERR)) && !(fds[0].revents & POLLIN))
            break; /* the terminal went away */
        int key;
        while (!app->quit && (key = getch()) != ERR)
            handle_key(app, key, &in_paste);
        if (in_paste)
            input_paste_flush(false); /* what has arrived shows now, end marker or not */
    }

    /* first of all: a kill -9 may follow a SIGTERM */
    bool saved = autosave_finish(app, err_exit, sizeof err_exit);
    term_paste_mode(false);
    input_shutdown();
    engine_shutdown(app->eng);
    endwin();
    signal(SIGWINCH, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    signal(SIGHUP, SIG_DFL);
    signal(SIGINT, SIG_DFL);
    if (err_exit[0])
        fprintf(stderr, "tokscope: %s\n", err_exit);
    ui_overlay_close(app);
    queued_free(app);
    for (size_t i = 0; i < app->n_convs; i++)
        conv_free(app->convs[i]);
    free(app->convs);
    think_free(app);
    free(app->pending.top);
    free(picked);
    /* a model that could not be loaded is a failure (tokscope(1): exit 1) */
    const bool load_failed = !app->loaded && app->state == UI_STATE_NO_MODEL;
    free(app);
    return saved && !load_failed ? 0 : 1;
}
