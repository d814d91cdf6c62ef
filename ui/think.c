/* Reasoning in the chat (see think.h). */
#include "think.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chat/chat.h"
#include "chat/reasoning.h"
#include "explore.h"
#include "gguf/gguf.h"
#include "ui.h"

const char *const think_mode_names[] = {"auto", "on", "off", NULL};
const char *const effort_mode_names[] = {"auto", "low", "medium", "high", NULL};

void think_style_update(ui_app *app)
{
    const bool forced = app->template_name[0] && strcmp(app->template_name, "model") != 0;
    app->think_style = forced ? CHAT_REASONING_NONE : (int)chat_reasoning_detect(app->tmpl_text);
}

void think_load_template(ui_app *app)
{
    free(app->tmpl_text);
    app->tmpl_text = NULL;
    char err[256];
    gguf_ctx *g = app->model_path[0] ? gguf_open(app->model_path, err, sizeof err) : NULL;
    if (g) {
        app->tmpl_text = gguf_get_str_dup(g, "tokenizer.chat_template");
        gguf_close(g);
    }
    think_style_update(app);
}

static bool raw_format(const ui_app *app)
{
    const char *t = app->template_name[0] ? app->template_name : app->info.template_name;
    return !strcmp(t, "raw");
}

/* The template variables as JSON in app->think_vars, or NULL when none is set. */
static const char *vars_json(ui_app *app)
{
    if (app->think == THINK_AUTO && app->effort == EFFORT_AUTO)
        return NULL;
    int n = snprintf(app->think_vars, sizeof app->think_vars, "{");
    if (app->think != THINK_AUTO)
        n += snprintf(app->think_vars + n, sizeof app->think_vars - (size_t)n, "\"enable_thinking\": %s",
                      app->think == THINK_ON ? "true" : "false");
    if (app->effort != EFFORT_AUTO)
        n += snprintf(app->think_vars + n, sizeof app->think_vars - (size_t)n, "%s\"reasoning_effort\": \"%s\"",
                      app->think != THINK_AUTO ? ", " : "", effort_mode_names[app->effort]);
    snprintf(app->think_vars + n, sizeof app->think_vars - (size_t)n, "}");
    return app->think_vars;
}

size_t think_chat_messages(ui_app *app, const ui_conv *c, size_t n_msgs, chat_message **out)
{
    chat_message *v;
    size_t n = conv_chat_messages_upto(c, n_msgs, &v);
    if (raw_format(app)) { /* contents back to back: the pseudo messages would be text */
        size_t k = 0;
        for (size_t i = 0; i < n; i++)
            if (strcmp(v[i].role, CHAT_ROLE_REASONING) != 0)
                v[k++] = v[i];
        *out = v;
        return k;
    }
    const char *vars = vars_json(app);
    if (vars) { /* after the leading system messages, where the engine's n_keep render stops */
        chat_message *w = realloc(v, (n + 2) * sizeof *w);
        if (!w)
            abort();
        v = w;
        size_t at = 0;
        while (at < n && !strcmp(v[at].role, "system"))
            at++;
        memmove(v + at + 1, v + at, (n - at) * sizeof *v);
        v[at] = (chat_message){CHAT_ROLE_VARS, vars};
        n++;
    }
    *out = v;
    return n;
}

/* think_end and the default fold from the splitter's state. */
static void refresh(ui_msg *m)
{
    const chat_reasoning *r = m->rs;
    if (!r || !r->seen) {
        m->think_end = 0;
        return;
    }
    m->think_end = (uint32_t)(r->answer_at != (size_t)-1 ? r->answer_at : m->len);
    if (!m->think_set) /* open while it thinks, folded once the answer starts */
        m->think_open = r->answer_at == (size_t)-1;
}

static void reset(ui_msg *m)
{
    if (m->rs)
        chat_reasoning_free(m->rs);
    free(m->rs);
    free(m->reasoning);
    free(m->answer);
    m->rs = NULL;
    m->reasoning = m->answer = NULL;
    m->think_end = 0;
}

void think_begin(ui_app *app, ui_conv *c, size_t mi)
{
    ui_msg *m = &c->msgs[mi];
    reset(m);
    m->think_open = m->think_set = false;
    m->think_style = (int8_t)app->think_style;
    m->think_inside = false;
    if (app->think_style == CHAT_REASONING_NONE)
        return;
    /* the prompt's end says whether the reply starts inside reasoning
     * (Qwen3.5 opens <think>); rendered as the engine will, BOS aside */
    chat_message *msgs;
    size_t n = think_chat_messages(app, c, mi, &msgs);
    chat_render_params rp = {.bos_token = "", .eos_token = "", .add_generation_prompt = true, .date = NULL};
    char warn[256], err[256];
    char *prompt = chat_render(app->tmpl_text, NULL, msgs, n, &rp, warn, sizeof warn, err, sizeof err);
    free(msgs);
    m->rs = calloc(1, sizeof *m->rs);
    if (!m->rs)
        abort();
    chat_reasoning_init(m->rs, (enum chat_reasoning_style)app->think_style, prompt);
    m->think_inside = m->rs->seen;
    free(prompt);
    think_sync(m);
}

void think_sync(ui_msg *m)
{
    if (!m->rs)
        return;
    if (m->len < m->rs->fed) { /* taken back (step mode's undo): split again */
        enum chat_reasoning_style st = m->rs->style;
        chat_reasoning_free(m->rs);
        chat_reasoning_init_inside(m->rs, st, m->think_inside);
    }
    chat_reasoning_feed(m->rs, m->text + m->rs->fed, m->len - m->rs->fed);
    refresh(m);
}

void think_end_turn(ui_msg *m)
{
    if (!m->rs)
        return;
    think_sync(m);
    chat_reasoning_finish(m->rs);
    refresh(m);
    if (m->rs->seen) {
        m->reasoning = chat_reasoning_extract(m->rs, m->text, m->len, CHAT_SPAN_REASONING);
        m->answer = chat_reasoning_extract(m->rs, m->text, m->len, CHAT_SPAN_ANSWER);
    }
    chat_reasoning_free(m->rs);
    free(m->rs);
    m->rs = NULL;
}

void think_toggle(ui_app *app)
{
    ui_conv *c = explore_side(app);
    ui_msg *m = NULL;
    if (c->sel_msg >= 0 && (size_t)c->sel_msg < c->n_msgs && c->msgs[c->sel_msg].think_end)
        m = &c->msgs[c->sel_msg];
    for (size_t i = c->n_msgs; !m && i-- > 0;)
        if (c->msgs[i].think_end)
            m = &c->msgs[i];
    if (!m) {
        ui_message(app, UI_MSG_INFO, "no reasoning in this conversation");
        return;
    }
    msg_think_toggle(m);
    c->reveal = true;
    ui_message(app, UI_MSG_INFO, "thinking %s", m->think_open ? "unfolded" : "folded");
}

static int lookup(const char *const *names, const char *v)
{
    for (int i = 0; names[i]; i++)
        if (!strcmp(names[i], v))
            return i;
    return -1;
}

bool think_set(ui_app *app, const char *name, const char *value)
{
    if (!strcmp(name, "think")) {
        int i = !strcmp(value, "true") ? THINK_ON : !strcmp(value, "false") ? THINK_OFF
                                                                           : lookup(think_mode_names, value);
        if (i < 0)
            return false;
        app->think = i;
        return true;
    }
    int i = lookup(effort_mode_names, value);
    if (strcmp(name, "effort") != 0 || i < 0)
        return false;
    app->effort = i;
    return true;
}

const char *think_value(const ui_app *app, int row)
{
    return row == 0 ? think_mode_names[app->think] : effort_mode_names[app->effort];
}

void think_step(ui_app *app, int row, int dir)
{
    if (row == 0)
        app->think = (app->think + 3 + dir) % 3;
    else
        app->effort = (app->effort + 4 + dir) % 4;
}
