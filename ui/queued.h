/* Messages typed while a reply streams. Enter during a reply queues the
 * text (slash commands still run at once); the queue is drawn under the
 * conversation it belongs to, marked as pending, and each message is sent
 * when the reply before it ends, in the order typed. Esc cancels the latest
 * queued message of the visible conversation; its text goes back to the
 * input line (and, like every line entered, stays in the history). */
#ifndef TOKSCOPE_UI_QUEUED_H
#define TOKSCOPE_UI_QUEUED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "layout.h"

typedef struct ui_queued {
    int32_t conv_id;
    char *text;
} ui_queued;

struct ui_app;
void queued_push(struct ui_app *app, int32_t conv_id, const char *text);
/* Queued messages of a conversation. */
size_t queued_count(const struct ui_app *app, int32_t conv_id);
/* Esc: removes the latest queued message of the visible conversation;
 * false when it has none. */
bool queued_cancel(struct ui_app *app);
/* Sends the oldest queued message once the engine is idle with a model;
 * true when one was sent. Called by the main loop after every event batch. */
bool queued_dispatch(struct ui_app *app);
void queued_free(struct ui_app *app);
/* Rows the queue of conv_id takes at the bottom of a pane of width w (at
 * most max_rows; 0 when nothing is queued), and draws it in r. */
int queued_rows(const struct ui_app *app, int32_t conv_id, int w, int max_rows);
void queued_draw(const struct ui_app *app, int32_t conv_id, ui_rect r);

#endif
