/* The queue of messages typed during a reply. */
#include "queued.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "draw.h"
#include "input.h"
#include "theme.h"
#include "ui.h"
#include "wrap.h"

#define PENDING_LINES 3 /* text lines shown per queued message */
#define PENDING_INDENT 2

void queued_push(ui_app *app, int32_t conv_id, const char *text)
{
    ui_queued *v = realloc(app->queued, (app->n_queued + 1) * sizeof *v);
    char *t = strdup(text);
    if (!v || !t) {
        free(t);
        if (v)
            app->queued = v;
        ui_message(app, UI_MSG_ERROR, "out of memory: message not queued (Up recalls it)");
        return;
    }
    app->queued = v;
    app->queued[app->n_queued++] = (ui_queued){conv_id, t};
    size_t n = queued_count(app, conv_id);
    ui_message(app, UI_MSG_INFO, "queued (%zu): sent when the reply ends, Esc cancels", n);
}

size_t queued_count(const ui_app *app, int32_t conv_id)
{
    size_t n = 0;
    for (size_t i = 0; i < app->n_queued; i++)
        n += app->queued[i].conv_id == conv_id;
    return n;
}

static void queued_remove(ui_app *app, size_t i)
{
    free(app->queued[i].text);
    memmove(app->queued + i, app->queued + i + 1, (app->n_queued - i - 1) * sizeof *app->queued);
    app->n_queued--;
}

bool queued_cancel(ui_app *app)
{
    int32_t id = ui_current(app)->id;
    for (size_t i = app->n_queued; i-- > 0;) {
        if (app->queued[i].conv_id != id)
            continue;
        bool back = !input_text()[0];
        if (back)
            input_set_text(app->queued[i].text);
        queued_remove(app, i);
        app->focus = UI_FOCUS_INPUT;
        ui_message(app, UI_MSG_INFO, "queued message cancelled%s",
                   back ? ": back in the input" : " (Up recalls it)");
        return true;
    }
    return false;
}

bool queued_dispatch(ui_app *app)
{
    if (!app->n_queued || !app->eng || !app->loaded || app->state != UI_STATE_IDLE)
        return false;
    ui_queued p = app->queued[0];
    memmove(app->queued, app->queued + 1, (app->n_queued - 1) * sizeof *app->queued);
    app->n_queued--;
    size_t k = 0;
    while (k < app->n_convs && app->convs[k]->id != p.conv_id)
        k++;
    bool sent = false;
    if (k == app->n_convs) {
        ui_message(app, UI_MSG_WARN, "queued message dropped: its conversation is gone (Up recalls it)");
    } else {
        /* ui_send_user works on the visible conversation */
        size_t cur = app->cur;
        app->cur = k;
        sent = ui_send_user(app, p.text);
        app->cur = cur;
    }
    free(p.text);
    app->dirty = true;
    return sent;
}

void queued_free(ui_app *app)
{
    for (size_t i = 0; i < app->n_queued; i++)
        free(app->queued[i].text);
    free(app->queued);
    app->queued = NULL;
    app->n_queued = 0;
}

/* Lines of one message at text width tw, at most PENDING_LINES. */
static int msg_lines(const char *text, int tw, bool *cut)
{
    size_t n = wrap_text(text, strlen(text), tw, NULL, 0);
    *cut = n > PENDING_LINES;
    return n > PENDING_LINES ? PENDING_LINES : (int)n;
}

int queued_rows(const ui_app *app, int32_t conv_id, int w, int max_rows)
{
    if (!queued_count(app, conv_id) || max_rows < 3)
        return 0;
    int tw = w - PENDING_INDENT > 1 ? w - PENDING_INDENT : 1;
    int rows = 2; /* a blank line above, the label */
    for (size_t i = 0; i < app->n_queued; i++) {
        bool cut;
        if (app->queued[i].conv_id == conv_id)
            rows += msg_lines(app->queued[i].text, tw, &cut);
    }
    return rows < max_rows ? rows : max_rows;
}

void queued_draw(const ui_app *app, int32_t conv_id, ui_rect r)
{
    if (r.h < 2 || r.w < 4)
        return;
    size_t n = queued_count(app, conv_id);
    int y = r.y + 1, end = r.y + r.h; /* r.y: a blank line */
    char label[128];
    if (n > 1)
        snprintf(label, sizeof label,
                 " (%zu) \xe2\x80\x94 sent in turn when the reply ends, Esc cancels the last", n);
    else
        snprintf(label, sizeof label, " \xe2\x80\x94 sent when the reply ends, Esc cancels it");
    int col = draw_str(y, r.x, r.w, "You \xc2\xb7 queued", theme_attr(THEME_USER));
    draw_str(y, r.x + col, r.w - col, label, theme_attr(THEME_DIM));
    y++;
    int tw = r.w - PENDING_INDENT > 1 ? r.w - PENDING_INDENT : 1;
    wrap_line lines[PENDING_LINES];
    for (size_t i = 0; i < app->n_queued && y < end; i++) {
        const ui_queued *p = &app->queued[i];
        if (p->conv_id != conv_id)
            continue;
        bool cut;
        int nl = msg_lines(p->text, tw, &cut);
        wrap_text(p->text, strlen(p->text), tw, lines, PENDING_LINES);
        for (int k = 0; k < nl && y < end; k++, y++) {
            int used = draw_text(y, r.x + PENDING_INDENT, tw, p->text + lines[k].start, lines[k].len,
                                 theme_attr(THEME_DIM));
            /* more text than shown: a mark at the end of the last line drawn */
            bool more = (k == nl - 1 && cut) || (y == end - 1 && (k < nl - 1 || i + 1 < app->n_queued));
            if (more)
                draw_str(y, r.x + PENDING_INDENT + (used < tw ? used : tw - 1), 1, "\xe2\x80\xa6",
                         theme_attr(THEME_DIM));
        }
    }
}
