/* Inspector: one sampling step in detail (the latest, the token under the
 * conversation cursor, or in step mode the step the engine waits on):
 * position, chosen token, entropy and the top-k table (rank, id, escaped
 * text, logit, raw %, post-chain %, bar) with the chosen row highlighted,
 * ordered by raw logit or by post-chain probability; with the focus, a row
 * cursor (Enter picks that candidate). With the lens on, the step's logit
 * lens instead: per block its top-1, the chosen token's rank and
 * probability, the block where it first becomes top-1 marked. */
#ifndef TOKSCOPE_UI_INSPECTOR_H
#define TOKSCOPE_UI_INSPECTOR_H

#include <stdbool.h>

#include "engine.h"
#include "layout.h"

struct ui_app;
struct ui_conv;
struct ui_token;
void inspector_draw(struct ui_app *app, ui_rect r);
/* The step the inspector shows for c (pending: the one step mode waits on). */
struct ui_token *inspector_token(struct ui_app *app, struct ui_conv *c, bool *pending);
/* The candidates in the order shown (rows: SAMPLER_MAX_TOP entries); returns how many. */
int inspector_rows(const struct ui_app *app, const struct ui_token *t, engine_token_candidate *rows);

#endif
