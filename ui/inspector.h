/* Inspector: one sampling step in detail (the latest, or the token under
 * the conversation cursor): position, chosen token, entropy and the top-k
 * table (rank, id, escaped text, logit, raw %, post-chain %, bar) with the
 * chosen row highlighted, ordered by raw logit or by post-chain probability. */
#ifndef TOKSCOPE_UI_INSPECTOR_H
#define TOKSCOPE_UI_INSPECTOR_H

#include "layout.h"

struct ui_app;
void inspector_draw(struct ui_app *app, ui_rect r);

#endif
