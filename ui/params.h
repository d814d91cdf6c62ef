/* Parameter panel: the sampler parameters, always visible. Tab focuses it;
 * Up/Down pick a row, Left/Right adjust by a step (Shift: x10), digits
 * start typing a value (Enter applies, Esc cancels). Every change goes to
 * the engine at once and applies from the next token. */
#ifndef TOKSCOPE_UI_PARAMS_H
#define TOKSCOPE_UI_PARAMS_H

#include <stdbool.h>
#include <stddef.h>

#include "layout.h"
#include "sampler/sampler.h"

#define PARAMS_N 12
/* The sampling values' ranges ("lo, hi"): the panel's, /set's, the
 * configuration's and the command line's (app/cli.c), written once. */
#define PARAMS_RANGE_TEMP 0.0, 5.0
#define PARAMS_RANGE_TOP_K 0, 1000000
#define PARAMS_RANGE_TOP_P 0.0, 1.0
#define PARAMS_RANGE_MIN_P 0.0, 1.0
#define PARAMS_RANGE_TYPICAL_P 0.0, 1.0
#define PARAMS_RANGE_REPEAT_PENALTY 0.0, 10.0
#define PARAMS_RANGE_REPEAT_LAST_N -1, 1000000
#define PARAMS_RANGE_FREQUENCY_PENALTY -2.0, 2.0
#define PARAMS_RANGE_PRESENCE_PENALTY -2.0, 2.0
#define PARAMS_RANGE_SEED 0, 4294967295.0
#define PARAMS_RANGE_N_PREDICT -1, 1000000
#define PARAMS_RANGE_N_TOP 1, SAMPLER_MAX_TOP
extern const char *const params_names[PARAMS_N + 1]; /* panel order, NULL-terminated */
/* The panel's rows: the sampler parameters, then the template variables
 * think (enable_thinking: auto|on|off) and effort (reasoning_effort:
 * auto|low|medium|high), which apply from the next turn (ui/think.h). */
#define PARAMS_ROWS (PARAMS_N + 2)

/* Index in params_names, -1 when unknown. */
int params_index(const char *name);
/* Formats the value as the panel shows it ("random" for an unset seed,
 * "off" for disabled filters is NOT used: numbers stay numbers). */
bool params_format(const sampler_params *p, const char *name, char *buf, size_t cap);
/* Steps a parameter by dir (+1/-1) times mult steps, clamped to its range.
 * Returns true when the value changed. */
bool params_adjust(sampler_params *p, const char *name, int dir, int mult);
/* Parses and sets a value ("0.7", "random" for seed, ...). Names outside the
 * panel go to sampler_params_set. On error returns false with a message. */
bool params_set_value(sampler_params *p, const char *name, const char *value, char *err, size_t errlen);

struct ui_app;
void params_draw(struct ui_app *app, ui_rect r);
/* Returns true when the key was used. */
bool params_key(struct ui_app *app, int key);

#endif
