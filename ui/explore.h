/* Explore mode in the UI: branching from another candidate or an edited
 * message (the old version stays a sibling), switching versions, step mode,
 * the logit lens requests, the entropy strip's jumps and compare settings
 * (two sides, two parameter sets, one engine serving them in turn). The
 * engine does the work; these only send its commands and keep the
 * conversation model in step with its events. */
#ifndef TOKSCOPE_UI_EXPLORE_H
#define TOKSCOPE_UI_EXPLORE_H

#include <stdbool.h>
#include <stddef.h>

#include "ui.h"

/* The conversation the cursor and the inspector's keys act on: the current
 * one, or in compare settings the side the cursor is on. */
ui_conv *explore_side(ui_app *app);
/* True when the current conversation is one side of compare settings. */
bool explore_compare_view(ui_app *app);
/* The token the inspector shows for c: the cursor's, else the latest. */
ui_token *explore_shown(ui_conv *c, size_t *mi, size_t *ti);

/* A new version of reply mi of c from its token k on, with candidate id
 * instead (the same id: generate again from there). The running turn, if
 * any, is stopped first. */
bool explore_branch(ui_app *app, ui_conv *c, size_t mi, size_t k, int32_t id);
/* Puts user message mi of c into the input; Enter then sends it as a new version. */
void explore_edit_begin(ui_app *app, ui_conv *c, size_t mi);
void explore_edit_cancel(ui_app *app);
/* Enter with an edit pending: sends text as the new version (true), or
 * false when no edit is pending. */
bool explore_edit_send(ui_app *app, const char *text);
/* /regen: a new reply, the old one kept as a sibling. */
bool explore_regen(ui_app *app);
/* Shows another version of the message under the cursor (or the nearest
 * above it that has versions). */
bool explore_switch(ui_app *app, int delta);

/* Step mode. */
void explore_step_toggle(ui_app *app, int on); /* on: 0, 1, or -1 to toggle */
void explore_step_draw(ui_app *app);
void explore_step_pick(ui_app *app, int32_t id);
void explore_step_text(ui_app *app, const char *text);
void explore_step_undo(ui_app *app);

/* Logit lens: asks the engine for the shown tokens' lenses when the view is on. */
void explore_lens_sync(ui_app *app);
void explore_lens_event(ui_app *app, const engine_event *ev);

/* Compare settings: "PARAM VALUE ..." (side B's differences from the panel's
 * parameters), "off", or "" (on with B as it was). */
bool explore_compare(ui_app *app, const char *args, char *err, size_t errlen);
/* A turn ended: side B's turn starts when A's ended well. */
void explore_turn_done(ui_app *app, int32_t conv_id, int reason);
/* Side B's parameters that differ from the panel's, as "temp 1.00 top_k 0". */
void explore_compare_desc(ui_app *app, char *buf, size_t cap);

#endif
