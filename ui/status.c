/* Status line, tabs bar and key hints. */
#include "status.h"

#include <curses.h>
#include <stdio.h>
#include <string.h>

#include "draw.h"
#include "theme.h"
#include "ui.h"
#include "wrap.h"

const char *status_state_text(const ui_app *app, char *buf, size_t cap)
{
    switch (app->state) {
    case UI_STATE_NO_MODEL: snprintf(buf, cap, "no model"); break;
    case UI_STATE_LOADING: snprintf(buf, cap, "loading %d%%", (int)(app->progress * 100.0f + 0.5f)); break;
    case UI_STATE_IDLE: snprintf(buf, cap, "idle"); break;
    case UI_STATE_PREFILL: snprintf(buf, cap, "prefill %d%%", (int)(app->progress * 100.0f + 0.5f)); break;
    case UI_STATE_GENERATING: snprintf(buf, cap, "generating"); break;
    case UI_STATE_STOPPING: snprintf(buf, cap, "stopping"); break;
    case UI_STATE_STEP: snprintf(buf, cap, "waiting: step at pos %d", app->pending.pos); break;
    }
    return buf;
}

void status_draw(ui_app *app, ui_rect r)
{
    if (r.h <= 0)
        return;
    int sa = theme_attr(THEME_STATUS);
    draw_fill(r.y, r.x, r.w, sa);
    char st[48], buf[512];
    status_state_text(app, st, sizeof st);
    double gen_tps = app->gen_tps;
    if (app->state == UI_STATE_GENERATING && app->gen_count > 1) {
        double dt = ui_now() - app->gen_t0;
        if (dt > 0)
            gen_tps = (app->gen_count - 1) / dt;
    }
    int kv = app->n_ctx > 0 ? (int)(100.0 * app->n_past / app->n_ctx + 0.5) : 0;
    const char *tmpl = app->template_name[0] ? app->template_name
                       : app->info.template_name[0] ? app->info.template_name
                                                    : "-";
    char model[160];
    if (app->loaded)
        snprintf(model, sizeof model, "%.100s (%.31s)", app->info.name, app->info.arch[0] ? app->info.arch : "?");
    else
        snprintf(model, sizeof model, "-");
    char ckpt[64] = ""; /* a recurrent model: the state checkpoints explore mode goes back with (short:
                           the message after the line needs the room) */
    if (app->loaded && app->info.recurrent) {
        const double b = (double)app->ckpt_bytes;
        char sz[16];
        if (b < 1024.0 * 1024.0)
            snprintf(sz, sizeof sz, "%.0fK", b / 1024.0);
        else if (b < 1024.0 * 1024.0 * 1024.0)
            snprintf(sz, sizeof sz, b < 10.0 * 1024 * 1024 ? "%.1fM" : "%.0fM", b / (1024.0 * 1024.0));
        else
            snprintf(sz, sizeof sz, "%.1fG", b / (1024.0 * 1024.0 * 1024.0));
        snprintf(ckpt, sizeof ckpt, " \xe2\x94\x82 ckpt %d %s", (int)app->n_ckpt, sz);
    }
    if (app->loaded && app->spec_drafted > 0) { /* the last reply's speculative decoding */
        char sp[48];
        snprintf(sp, sizeof sp, " \xe2\x94\x82 spec %d/%d", (int)app->spec_accepted, (int)app->spec_drafted);
        snprintf(ckpt + strlen(ckpt), sizeof ckpt - strlen(ckpt), "%s", sp);
    }
    if (app->info.remote_kind[0]) { /* --remote: no template, cache or prompt speed of ours; room for messages */
        snprintf(buf, sizeof buf, " %s \xe2\x94\x82 %.60s (%s) \xe2\x94\x82 pos %d \xe2\x94\x82 tg %.1f t/s ", st,
                 app->info.name, app->info.remote_kind, app->n_past, gen_tps);
    } else {
        snprintf(buf, sizeof buf, " %s \xe2\x94\x82 %s \xe2\x94\x82 tmpl %s \xe2\x94\x82 pos %d/%d \xe2\x94\x82 KV %d%%%s \xe2\x94\x82 pp %.0f t/s \xe2\x94\x82 tg %.1f t/s ",
                 st, model, tmpl, app->n_past, app->n_ctx, kv, ckpt, app->prompt_tps, gen_tps);
    }
    if (app->msg[0] && app->msg_hold &&
        wrap_str_width(buf, strlen(buf)) + wrap_str_width(app->msg, strlen(app->msg)) + 3 > r.w)
        snprintf(buf, sizeof buf, " %s ", st); /* an error not seen yet, too long for the line: it goes
                                                  before the figures until the next key */
    int used = draw_str(r.y, r.x, r.w, buf, sa | A_BOLD);
    if (app->msg[0] && used + 4 < r.w) {
        int attr = app->msg_level == UI_MSG_ERROR ? theme_attr(THEME_ERROR)
                   : app->msg_level == UI_MSG_WARN ? theme_attr(THEME_HEADER) | (int)A_REVERSE
                                                   : sa;
        draw_printf(r.y, r.x + used + 1, r.w - used - 1, attr, " %s ", app->msg);
    }
}

void status_draw_title(ui_app *app, ui_rect r)
{
    if (r.h <= 0)
        return;
    int ta = theme_attr(THEME_TITLE);
    draw_fill(r.y, r.x, r.w, ta);
    int x = draw_str(r.y, r.x, r.w, " tokscope ", ta | A_BOLD);
    for (size_t i = 0; i < app->n_convs && x < r.w; i++) {
        bool cur = i == app->cur;
        bool busy = app->gen_conv_id == app->convs[i]->id && ui_busy(app);
        /* a tab is named after the conversation's first user message */
        const ui_conv *c = app->convs[i];
        const char *title = "chat";
        for (size_t k = 0; k < c->n_msgs; k++)
            if (!strcmp(c->msgs[k].role, "user")) {
                title = c->msgs[k].text;
                break;
            }
        char name[64];
        size_t nl = wrap_fit(title, strcspn(title, "\n"), 14, NULL);
        snprintf(name, sizeof name, "%.*s%s", (int)nl, title, title[nl] && title[nl] != '\n' ? "\xe2\x80\xa6" : "");
        char tab[96];
        snprintf(tab, sizeof tab, " %zu:%s%s ", i + 1, name, busy ? "*" : "");
        x += draw_str(r.y, r.x + x, r.w - x, tab, cur ? theme_attr(THEME_TAB_ACTIVE) : ta);
    }
    static const char *const fnames[UI_FOCUS_COUNT] = {"input", "conversation", "parameters", "inspector"};
    char right[96];
    /* the explore modes that are on */
    snprintf(right, sizeof right, "%s%s%s focus: %s ", app->step_on ? " step" : "", app->lens_on ? " lens" : "",
             app->strip ? " strip" : "", fnames[app->focus]);
    int rw = (int)strlen(right);
    if (x + rw < r.w)
        draw_str(r.y, r.x + r.w - rw, rw, right, ta);
}

void status_draw_keys(ui_app *app, ui_rect r)
{
    if (r.h <= 0)
        return;
    static const char *const keys[][2] = {
        {"F1", "Help"}, {"Tab", "Focus"}, {"Esc", "Stop"}, {"^P/^N", "Chat"}, {"F4", "Colour"},
        {"F5", "Raw/Post"}, {"F6", "Step"}, {"F7", "Strip"}, {"F8", "Lens"}, {"F9", "Think"}, {"^Q", "Quit"},
    };
    /* step mode waiting: what the keys do now */
    static const char *const step_keys[][2] = {
        {"Enter", "Draw"}, {"text+Enter", "Force"}, {"Bksp", "Undo"}, {"Tab", "Pick"}, {"Esc", "Stop"},
        {"F6", "Step off"},
    };
    const bool step = app->state == UI_STATE_STEP;
    const size_t n = step ? sizeof step_keys / sizeof step_keys[0] : sizeof keys / sizeof keys[0];
    int x = 0;
    draw_fill(r.y, r.x, r.w, 0);
    for (size_t i = 0; i < n && x < r.w; i++) {
        const char *const *k = step ? step_keys[i] : keys[i];
        x += draw_str(r.y, r.x + x, r.w - x, k[0], theme_attr(THEME_KEYS));
        x += draw_str(r.y, r.x + x, r.w - x, k[1], theme_attr(THEME_KEYS_TEXT));
        x += draw_str(r.y, r.x + x, r.w - x, " ", 0);
    }
}
