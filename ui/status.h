/* Status line (model, template, position / context, KV use, tok/s, state,
 * transient messages), the tabs bar at the top and the key hints. */
#ifndef TOKSCOPE_UI_STATUS_H
#define TOKSCOPE_UI_STATUS_H

#include <stddef.h>

#include "layout.h"

struct ui_app;
void status_draw(struct ui_app *app, ui_rect r);
void status_draw_title(struct ui_app *app, ui_rect r);
void status_draw_keys(struct ui_app *app, ui_rect r);
/* "generating", "prefill 40%", ... */
const char *status_state_text(const struct ui_app *app, char *buf, size_t cap);

#endif
