/* Reasoning in the chat: the template's style (engine/chat/reasoning.h), the
 * splitter fed as a reply streams, which sets the message's reasoning block
 * (ui_msg.think_end, drawn by conv.c), folded by default once the answer
 * starts; the template variables enable_thinking / reasoning_effort of the
 * parameter panel's think and effort rows, sent with every turn. */
#ifndef TOKSCOPE_UI_THINK_H
#define TOKSCOPE_UI_THINK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "conv.h"

struct ui_app;

enum think_mode { THINK_AUTO, THINK_ON, THINK_OFF };                          /* app->think */
enum effort_mode { EFFORT_AUTO, EFFORT_LOW, EFFORT_MEDIUM, EFFORT_HIGH };     /* app->effort */
extern const char *const think_mode_names[];   /* "auto" "on" "off" */
extern const char *const effort_mode_names[];  /* "auto" "low" "medium" "high" */

/* The model loaded: reads its chat template (the reasoning style) and its
 * control tokens' texts (markers the reply's text lacks: gpt-oss). */
void think_load_template(struct ui_app *app);
/* Frees what think_load_template read. */
void think_free(struct ui_app *app);
/* The template in use changed (/template): the style again. */
void think_style_update(struct ui_app *app);
/* The messages of c before n_msgs for the engine (conv_chat_messages_upto),
 * with the template variables after the leading system messages when think
 * or effort is set; no pseudo messages for the "raw" format. When
 * c->msgs[n_msgs] is a reply whose settings are recorded (think_record),
 * its template and variables, else the current ones. */
size_t think_chat_messages(struct ui_app *app, const ui_conv *c, size_t n_msgs, chat_message **out);
/* A turn is sent with m as its reply: records the current template, variables
 * and reasoning style in m, unless m has them already (a branch keeps those of
 * the reply it branched from). */
void think_record(struct ui_app *app, ui_msg *m);
/* m's recorded settings for a session file (an object: template, vars,
 * style), and back (absent or malformed: not recorded, as before). */
struct cJSON;
struct cJSON *think_sent_json(const ui_msg *m);
void think_sent_load(ui_msg *m, const struct cJSON *o);
/* The template m's turn was sent with, for an engine command's name
 * (malloc'd: a built-in, "raw" or "model"); NULL when not recorded. */
char *think_sent_template(const ui_msg *m);
/* A turn starts with c->msgs[mi] as its reply (maybe with a branch's text already). */
void think_begin(struct ui_app *app, ui_conv *c, size_t mi);
/* The reply's text changed (tokens appended, or taken back): the block follows. */
void think_sync(struct ui_app *app, ui_msg *m);
/* A token arrived (after msg_add_token): empty, a control token's text goes
 * to the splitter as a marker it could not see. */
void think_token(struct ui_app *app, ui_msg *m, int32_t id, bool empty);
/* The reply ended: its reasoning and answer for the next turns. */
void think_end_turn(struct ui_app *app, ui_msg *m);
/* F9 / t: folds or unfolds the reasoning at the cursor (else the last one). */
void think_toggle(struct ui_app *app);
/* Sets think/effort by name ("on", "off", "auto"; "low", ...). False: unknown value. */
bool think_set(struct ui_app *app, const char *name, const char *value);
/* The panel's think/effort rows: value text, and a step left/right. */
const char *think_value(const struct ui_app *app, int row);
void think_step(struct ui_app *app, int row, int dir);

#endif
