/* Parameter panel: values, steps, ranges, drawing and keys. */
#include "params.h"

#include <curses.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "draw.h"
#include "remote_ui.h"
#include "theme.h"
#include "think.h"
#include "ui.h"

const char *const params_names[PARAMS_N + 1] = {
    "temp",           "top_k",             "top_p",            "min_p", "typical_p", "repeat_penalty",
    "repeat_last_n",  "frequency_penalty", "presence_penalty", "seed",  "n_predict", "n_top",
    NULL,
};

enum pkind { PK_FLOAT, PK_INT, PK_SEED };

static const struct pdef {
    enum pkind kind;
    double step, lo, hi;
    const char *help;
} pdefs[PARAMS_N] = {
    {PK_FLOAT, 0.05, PARAMS_RANGE_TEMP, "temperature; 0 = greedy"},
    {PK_INT, 1, PARAMS_RANGE_TOP_K, "keep the k most likely; 0 = off"},
    {PK_FLOAT, 0.01, PARAMS_RANGE_TOP_P, "nucleus mass; 1 = off"},
    {PK_FLOAT, 0.01, PARAMS_RANGE_MIN_P, "drop p < min_p * p_max; 0 = off"},
    {PK_FLOAT, 0.01, PARAMS_RANGE_TYPICAL_P, "locally typical mass; 1 = off"},
    {PK_FLOAT, 0.05, PARAMS_RANGE_REPEAT_PENALTY, "penalise repeats; 1 = off"},
    {PK_INT, 8, PARAMS_RANGE_REPEAT_LAST_N, "penalty window; -1 = context, 0 = off"},
    {PK_FLOAT, 0.05, PARAMS_RANGE_FREQUENCY_PENALTY, "subtract count x value; 0 = off"},
    {PK_FLOAT, 0.05, PARAMS_RANGE_PRESENCE_PENALTY, "subtract value if seen; 0 = off"},
    {PK_SEED, 1, PARAMS_RANGE_SEED, "PRNG seed; 'random' = fresh"},
    {PK_INT, 16, PARAMS_RANGE_N_PREDICT, "max tokens per reply; -1 = no limit"},
    {PK_INT, 1, PARAMS_RANGE_N_TOP, "rows in the inspector"},
};

int params_index(const char *name)
{
    for (int i = 0; i < PARAMS_N; i++)
        if (!strcmp(params_names[i], name))
            return i;
    return -1;
}

static float *pf(sampler_params *p, int i)
{
    switch (i) {
    case 0: return &p->temp;
    case 2: return &p->top_p;
    case 3: return &p->min_p;
    case 4: return &p->typical_p;
    case 5: return &p->repeat_penalty;
    case 7: return &p->frequency_penalty;
    case 8: return &p->presence_penalty;
    default: return NULL;
    }
}

static int32_t *pi(sampler_params *p, int i)
{
    switch (i) {
    case 1: return &p->top_k;
    case 6: return &p->repeat_last_n;
    case 10: return &p->n_predict;
    case 11: return &p->n_top;
    default: return NULL;
    }
}

bool params_format(const sampler_params *p, const char *name, char *buf, size_t cap)
{
    int i = params_index(name);
    sampler_params *q = (sampler_params *)p;
    if (i < 0)
        return sampler_params_get(p, name, buf, cap);
    if (pdefs[i].kind == PK_FLOAT)
        snprintf(buf, cap, "%.2f", (double)*pf(q, i));
    else if (pdefs[i].kind == PK_INT)
        snprintf(buf, cap, "%d", *pi(q, i));
    else if (p->seed_set)
        snprintf(buf, cap, "%llu", (unsigned long long)p->seed);
    else
        snprintf(buf, cap, "random");
    return true;
}

static double clampd(double v, double lo, double hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

bool params_adjust(sampler_params *p, const char *name, int dir, int mult)
{
    int i = params_index(name);
    if (i < 0 || dir == 0)
        return false;
    if (mult < 1)
        mult = 1;
    const struct pdef *d = &pdefs[i];
    double delta = d->step * mult * (dir > 0 ? 1 : -1);
    if (d->kind == PK_FLOAT) {
        float *f = pf(p, i);
        /* snap to the step grid so repeated steps stay round numbers */
        double v = round((*f + delta) / d->step) * d->step;
        v = clampd(v, d->lo, d->hi);
        float nv = (float)(round(v * 10000.0) / 10000.0);
        if (nv == *f)
            return false;
        *f = nv;
        return true;
    }
    if (d->kind == PK_INT) {
        int32_t *v = pi(p, i);
        double nv = clampd((double)*v + delta, d->lo, d->hi);
        if ((int32_t)nv == *v)
            return false;
        *v = (int32_t)nv;
        return true;
    }
    /* seed: stepping from "random" starts at 0 (or 1 going up) */
    if (!p->seed_set) {
        p->seed_set = true;
        p->seed = dir > 0 ? 1 : 0;
        return true;
    }
    double nv = clampd((double)p->seed + delta, d->lo, d->hi);
    if ((uint64_t)nv == p->seed)
        return false;
    p->seed = (uint64_t)nv;
    return true;
}

bool params_set_value(sampler_params *p, const char *name, const char *value, char *err, size_t errlen)
{
    int i = params_index(name);
    if (i < 0) {
        if (sampler_params_set(p, name, value, err, errlen))
            return true;
        if (err && errlen && !*err)
            snprintf(err, errlen, "unknown parameter '%s'", name);
        return false;
    }
    while (*value == ' ')
        value++;
    if (!*value) {
        snprintf(err, errlen, "%s: missing value", name);
        return false;
    }
    const struct pdef *d = &pdefs[i];
    if (d->kind == PK_SEED && (!strcasecmp(value, "random") || !strcmp(value, "-1"))) {
        p->seed_set = false;
        return true;
    }
    char *end;
    errno = 0;
    double v = strtod(value, &end);
    while (*end == ' ')
        end++;
    if (end == value || *end || errno || !isfinite(v)) {
        snprintf(err, errlen, "%s: '%s' is not a number", name, value);
        return false;
    }
    if (d->kind != PK_FLOAT && v != floor(v)) {
        snprintf(err, errlen, "%s: '%s' is not an integer", name, value);
        return false;
    }
    if (v < d->lo || v > d->hi) {
        snprintf(err, errlen, "%s: %s is outside %g..%g", name, value, d->lo, d->hi);
        return false;
    }
    if (d->kind == PK_FLOAT)
        *pf(p, i) = (float)v;
    else if (d->kind == PK_INT)
        *pi(p, i) = (int32_t)v;
    else {
        p->seed = (uint64_t)v;
        p->seed_set = true;
    }
    return true;
}

void params_draw(ui_app *app, ui_rect r)
{
    if (r.h <= 0 || r.w <= 2)
        return;
    bool focus = app->focus == UI_FOCUS_PARAMS;
    draw_vline(r.y, r.x, r.h, theme_attr(focus ? THEME_BORDER_FOCUS : THEME_BORDER));
    int x = r.x + 2, w = r.w - 3;
    draw_str(r.y, x, w, focus ? "Parameters  \xe2\x86\x91\xe2\x86\x93 pick  \xe2\x86\x90\xe2\x86\x92 adjust" : "Parameters",
             theme_attr(focus ? THEME_BORDER_FOCUS : THEME_HEADER));
    int name_w = 18;
    if (w < 28)
        name_w = w - 7 > 4 ? w - 7 : 4; /* values need ~6 cells; names get the rest */
    for (int i = 0; i < PARAMS_ROWS && 1 + i < r.h; i++) {
        int y = r.y + 1 + i;
        bool sel = focus && app->param_sel == i;
        if (i >= PARAMS_N) { /* template variables */
            static const char *const names[2] = {"think", "effort"};
            static const char *const help[2] = {"enable_thinking; from the next turn",
                                                "reasoning_effort (gpt-oss); next turn"};
            const char *val = think_value(app, i - PARAMS_N);
            int attr = sel ? theme_attr(THEME_SELECTED) : 0;
            if (sel)
                draw_fill(y, x, w, attr);
            int nw = draw_str(y, x, name_w - 1, names[i - PARAMS_N], attr);
            if (strcmp(val, "auto") != 0 && nw < name_w - 1) /* set: the template's default no more */
                draw_str(y, x + nw, 1, "*", attr | theme_attr(THEME_HEADER));
            draw_str(y, x + name_w, w - name_w, val, attr | A_BOLD);
            if (sel && w - name_w - (int)strlen(val) > 4)
                draw_str(y, x + name_w + (int)strlen(val) + 2, w - name_w - (int)strlen(val) - 2, help[i - PARAMS_N],
                         attr);
            continue;
        }
        char val[80];
        if (sel && app->param_editing)
            snprintf(val, sizeof val, "%s_", app->param_edit);
        else
            params_format(&app->sp, params_names[i], val, sizeof val);
        int attr = sel ? theme_attr(THEME_SELECTED) : 0;
        if (sel)
            draw_fill(y, x, w, attr);
        char start[80];
        params_format(&app->sp_start, params_names[i], start, sizeof start);
        bool changed = !(sel && app->param_editing) && strcmp(start, val) != 0;
        int nw = draw_str(y, x, name_w - 1, params_names[i], attr);
        if (changed && nw < name_w - 1) /* changed since start */
            draw_str(y, x + nw, 1, "*", attr | theme_attr(THEME_HEADER));
        /* --remote: a parameter the server ignores is dimmed and says so;
         * n_top above the server's cap shows the cap */
        const bool ignored = remote_ui_ignored(app, params_names[i]);
        const bool capped = i == 11 && remote_ui_on(app) && app->loaded && app->info.remote_max_top > 0 &&
                            app->sp.n_top > app->info.remote_max_top;
        if (capped && !(sel && app->param_editing))
            snprintf(val + strlen(val), sizeof val - strlen(val), " (server: %d)", app->info.remote_max_top);
        draw_str(y, x + name_w, w - name_w, val, ignored ? attr | theme_attr(THEME_DIM) : attr | (int)A_BOLD);
        if (ignored && !sel && w - name_w - (int)strlen(val) > 12)
            draw_str(y, x + name_w + (int)strlen(val) + 1, w - name_w - (int)strlen(val) - 1, "(ignored by server)",
                     theme_attr(THEME_DIM));
        if (sel && w - name_w - (int)strlen(val) > 4)
            draw_str(y, x + name_w + (int)strlen(val) + 2, w - name_w - (int)strlen(val) - 2,
                     ignored ? "the server ignores this parameter" : pdefs[i].help, attr);
    }
}

/* Keys on the think/effort rows: Left/Right/Enter step through the values. */
static bool think_row_key(ui_app *app, int key)
{
    const int row = app->param_sel - PARAMS_N;
    int dir = 0;
    if (key == KEY_LEFT || key == KEY_SLEFT)
        dir = -1;
    else if (key == KEY_RIGHT || key == KEY_SRIGHT || key == '\n' || key == '\r' || key == KEY_ENTER || key == ' ')
        dir = 1;
    if (!dir)
        return false;
    think_step(app, row, dir);
    ui_message(app, UI_MSG_INFO, "%s = %s (from the next turn)", row == 0 ? "think" : "effort", think_value(app, row));
    return true;
}

bool params_key(ui_app *app, int key)
{
    if (app->param_sel >= PARAMS_N && key != KEY_UP && key != KEY_DOWN && key != 'k' && key != 'j') {
        app->param_editing = false;
        return think_row_key(app, key);
    }
    /* the think/effort rows reach here for Up/Down only, which need no name */
    const char *name = app->param_sel < PARAMS_N ? params_names[app->param_sel] : "";
    if (app->param_editing) {
        size_t n = strlen(app->param_edit);
        if (key == '\n' || key == '\r' || key == KEY_ENTER) {
            char err[160] = "";
            if (params_set_value(&app->sp, name, app->param_edit, err, sizeof err)) {
                ui_params_changed(app);
                char v[64];
                params_format(&app->sp, name, v, sizeof v);
                ui_message(app, UI_MSG_INFO, "%s = %s", name, v);
            } else
                ui_message(app, UI_MSG_ERROR, "%s", err);
            app->param_editing = false;
        } else if (key == 27) {
            app->param_editing = false;
        } else if (key == KEY_BACKSPACE || key == 127 || key == 8) {
            if (n)
                app->param_edit[n - 1] = 0;
            else
                app->param_editing = false;
        } else if (key >= 32 && key < 127 && n + 1 < sizeof app->param_edit) {
            app->param_edit[n] = (char)key;
            app->param_edit[n + 1] = 0;
        } else
            return false;
        return true;
    }
    switch (key) {
    case KEY_UP:
    case 'k':
        app->param_sel = (app->param_sel + PARAMS_ROWS - 1) % PARAMS_ROWS;
        return true;
    case KEY_DOWN:
    case 'j':
        app->param_sel = (app->param_sel + 1) % PARAMS_ROWS;
        return true;
    case KEY_LEFT:
    case KEY_RIGHT:
    case KEY_SLEFT:
    case KEY_SRIGHT: {
        int dir = (key == KEY_LEFT || key == KEY_SLEFT) ? -1 : 1;
        int mult = (key == KEY_SLEFT || key == KEY_SRIGHT) ? 10 : 1;
        if (params_adjust(&app->sp, name, dir, mult))
            ui_params_changed(app);
        return true;
    }
    case '\n':
    case '\r':
    case KEY_ENTER:
        app->param_editing = true;
        app->param_edit[0] = 0;
        return true;
    default:
        if ((key >= '0' && key <= '9') || key == '.' || key == '-' || key == 'r') {
            app->param_editing = true;
            app->param_edit[0] = (char)key;
            app->param_edit[1] = 0;
            return true;
        }
        return false;
    }
}
