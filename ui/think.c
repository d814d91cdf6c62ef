/* Reasoning in the chat (see think.h). */
#include "think.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "chat/chat.h"
#include "chat/reasoning.h"
#include "explore.h"
#include "remote_ui.h"
#include "gguf/gguf.h"
#include "ui.h"

const char *const think_mode_names[] = {"auto", "on", "off", NULL};
const char *const effort_mode_names[] = {"auto", "low", "medium", "high", NULL};

void think_style_update(ui_app *app)
{
    const bool forced = app->template_name[0] && strcmp(app->template_name, "model") != 0;
    app->think_style = forced ? CHAT_REASONING_NONE : (int)chat_reasoning_detect(app->tmpl_text);
    if (remote_ui_on(app)) /* the remote backend sends reasoning_content between <think> markers */
        app->think_style = CHAT_REASONING_THINK;
}

/* The vocabulary's control tokens: the engine's reply text leaves their text
 * out, but some are a reasoning format's markers (gpt-oss). */
typedef struct think_ctl {
    int32_t id;
    char *text;
} think_ctl;

void think_free(ui_app *app)
{
    for (size_t i = 0; i < app->n_think_ctl; i++)
        free(app->think_ctl[i].text);
    free(app->think_ctl);
    app->think_ctl = NULL;
    app->n_think_ctl = 0;
    free(app->tmpl_text);
    app->tmpl_text = NULL;
}

static void load_controls(ui_app *app, const gguf_ctx *g)
{
    const int64_t ti = gguf_find_key(g, "tokenizer.ggml.tokens");
    const int64_t ty = gguf_find_key(g, "tokenizer.ggml.token_type");
    if (ti < 0 || ty < 0 || gguf_arr_len(g, ti) != gguf_arr_len(g, ty))
        return;
    const uint64_t n = gguf_arr_len(g, ti);
    size_t cap = 0;
    for (uint64_t j = 0; j < n && j < INT32_MAX; j++) {
        if (gguf_arr_i64(g, ty, j) != 3) /* llama.cpp's LLAMA_TOKEN_TYPE_CONTROL */
            continue;
        gguf_str s = gguf_arr_str(g, ti, j);
        if (!s.ptr || s.len == 0 || s.len > 64)
            continue;
        if (app->n_think_ctl == cap) {
            cap = cap ? cap * 2 : 64;
            think_ctl *c = realloc(app->think_ctl, cap * sizeof *c);
            if (!c)
                abort();
            app->think_ctl = c;
        }
        app->think_ctl[app->n_think_ctl++] = (think_ctl){(int32_t)j, strndup(s.ptr, s.len)};
    }
}

/* A control token's text (ids ascending: binary search), NULL for others. */
static const char *control_text(const ui_app *app, int32_t id)
{
    size_t lo = 0, hi = app->n_think_ctl;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (app->think_ctl[mid].id < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < app->n_think_ctl && app->think_ctl[lo].id == id ? app->think_ctl[lo].text : NULL;
}

void think_load_template(ui_app *app)
{
    think_free(app);
    char err[256];
    gguf_ctx *g = app->model_path[0] && !remote_ui_on(app) ? gguf_open(app->model_path, err, sizeof err) : NULL;
    if (g) {
        app->tmpl_text = gguf_get_str_dup(g, "tokenizer.chat_template");
        load_controls(app, g);
        gguf_close(g);
    }
    think_style_update(app);
}

/* tmpl: a forced template, "" for the model's (the engine's label says whether that is raw) */
static bool raw_format(const ui_app *app, const char *tmpl)
{
    const char *t = tmpl[0] ? tmpl : app->info.template_name;
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

void think_record(ui_app *app, ui_msg *m)
{
    if (m->sent_set)
        return;
    const char *vars = vars_json(app);
    snprintf(m->sent_tmpl, sizeof m->sent_tmpl, "%s", app->template_name);
    snprintf(m->sent_vars, sizeof m->sent_vars, "%s", vars ? vars : "");
    m->sent_style = (int8_t)app->think_style;
    m->sent_set = true;
}

cJSON *think_sent_json(const ui_msg *m)
{
    cJSON *o = cJSON_CreateObject();
    if (!o)
        abort();
    cJSON_AddStringToObject(o, "template", m->sent_tmpl);
    cJSON_AddStringToObject(o, "vars", m->sent_vars);
    cJSON_AddNumberToObject(o, "style", m->sent_style);
    return o;
}

void think_sent_load(ui_msg *m, const cJSON *o)
{
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(o, "template");
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, "vars");
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(o, "style");
    if (!cJSON_IsString(t) || !cJSON_IsString(v) || !cJSON_IsNumber(s) || strlen(t->valuestring) >= sizeof m->sent_tmpl ||
        strlen(v->valuestring) >= sizeof m->sent_vars || s->valuedouble < 0 || s->valuedouble > 127)
        return;
    snprintf(m->sent_tmpl, sizeof m->sent_tmpl, "%s", t->valuestring);
    snprintf(m->sent_vars, sizeof m->sent_vars, "%s", v->valuestring);
    m->sent_style = (int8_t)s->valuedouble;
    m->sent_set = true;
}

char *think_sent_template(const ui_msg *m)
{
    if (!m->sent_set)
        return NULL;
    char *s = strdup(m->sent_tmpl[0] ? m->sent_tmpl : "model");
    if (!s)
        abort();
    return s;
}

size_t think_chat_messages(ui_app *app, const ui_conv *c, size_t n_msgs, chat_message **out)
{
    const ui_msg *sent = n_msgs < c->n_msgs && c->msgs[n_msgs].sent_set ? &c->msgs[n_msgs] : NULL;
    chat_message *v;
    size_t n = conv_chat_messages_upto(c, n_msgs, &v);
    if (raw_format(app, sent ? sent->sent_tmpl : app->template_name)) { /* contents back to back: the pseudo messages would be text */
        size_t k = 0;
        for (size_t i = 0; i < n; i++)
            if (strcmp(v[i].role, CHAT_ROLE_REASONING) != 0)
                v[k++] = v[i];
        *out = v;
        return k;
    }
    const char *vars = sent ? (sent->sent_vars[0] ? sent->sent_vars : NULL) : vars_json(app);
    if (vars) { /* after the leading system messages, where the engine's n_keep render stops */
        chat_message *w = realloc(v, (n + 2) * sizeof *w);
        if (!w)
            abort();
        v = w;
        size_t at = 0;
        while (at < n && !strcmp(v[at].role, "system"))
            at++;
        memmove(v + at + 1, v + at, (n - at) * sizeof *v);
        v[at] = (chat_message){CHAT_ROLE_VARS, vars, 0};
        n++;
    }
    *out = v;
    return n;
}

static void feed_tokens(ui_app *app, ui_msg *m);

/* The block's drawn pieces (ui_msg.think_vis): the splitter's spans before
 * think_end that are not markers, adjacent ones merged. Bytes it has not
 * classified yet (a possible marker's start) are left out until it has. */
static void set_vis(ui_msg *m, const chat_reasoning *r)
{
    uint32_t n = 0;
    for (size_t i = 0; i < r->n_spans && r->spans[i].start < m->think_end; i++)
        n += r->spans[i].kind != CHAT_SPAN_MARKER;
    uint32_t *v = n ? realloc(m->think_vis, 2 * (size_t)n * sizeof *v) : NULL;
    if (n && !v)
        abort();
    if (!n)
        free(m->think_vis);
    m->think_vis = v;
    n = 0;
    for (size_t i = 0; i < r->n_spans && r->spans[i].start < m->think_end; i++) {
        if (r->spans[i].kind == CHAT_SPAN_MARKER)
            continue;
        const uint32_t a = (uint32_t)r->spans[i].start;
        const uint32_t e = (uint32_t)(r->spans[i].end < m->think_end ? r->spans[i].end : m->think_end);
        if (n && v[2 * n - 1] == a)
            v[2 * n - 1] = e;
        else {
            v[2 * n] = a;
            v[2 * n + 1] = e;
            n++;
        }
    }
    if (n == 0) { /* nothing but markers yet: no piece to draw (not "all of it") */
        free(m->think_vis);
        m->think_vis = malloc(2 * sizeof *m->think_vis);
        if (!m->think_vis)
            abort();
        m->think_vis[0] = m->think_vis[1] = 0;
        n = 1;
    }
    m->n_think_vis = n;
}

/* think_end and the default fold from the splitter's state. */
static void refresh(ui_msg *m)
{
    const chat_reasoning *r = m->rs;
    if (!r || !r->seen) {
        m->think_end = 0;
        free(m->think_vis);
        m->think_vis = NULL;
        m->n_think_vis = 0;
        return;
    }
    m->think_end = (uint32_t)(r->answer_at != (size_t)-1 ? r->answer_at : m->len);
    set_vis(m, r);
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
    free(m->think_vis);
    m->rs = NULL;
    m->reasoning = m->answer = NULL;
    m->reasoning_len = m->answer_len = 0;
    m->think_vis = NULL;
    m->n_think_vis = 0;
    m->think_end = 0;
}

void think_begin(ui_app *app, ui_conv *c, size_t mi)
{
    ui_msg *m = &c->msgs[mi];
    reset(m);
    m->think_open = m->think_set = false;
    m->think_style = m->sent_set ? m->sent_style : (int8_t)app->think_style;
    m->think_inside = false;
    if (m->think_style == CHAT_REASONING_NONE)
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
    chat_reasoning_init(m->rs, (enum chat_reasoning_style)m->think_style, prompt);
    m->think_inside = m->rs->seen;
    free(prompt);
    feed_tokens(app, m); /* a branch's tokens before the step */
    think_sync(app, m);
}

/* Feeds the reply's text token by token from the start: a token whose text
 * is empty (a control token) goes in as its own text, virtually. */
static void feed_tokens(ui_app *app, ui_msg *m)
{
    for (size_t j = 0; j < m->n_toks; j++) {
        const ui_token *t = &m->toks[j];
        if (t->off > m->rs->fed && t->off <= m->len) /* bytes before it that no token holds */
            chat_reasoning_feed(m->rs, m->text + m->rs->fed, t->off - m->rs->fed);
        if (t->off < m->rs->fed || (size_t)t->off + t->len > m->len)
            continue;
        if (t->len)
            chat_reasoning_feed(m->rs, m->text + t->off, t->len);
        else {
            const char *ct = control_text(app, t->id);
            if (ct)
                chat_reasoning_feed_virtual(m->rs, ct, strlen(ct));
        }
    }
}

void think_sync(ui_app *app, ui_msg *m)
{
    if (!m->rs)
        return;
    if (m->len < m->rs->fed) { /* taken back (step mode's undo): split again */
        enum chat_reasoning_style st = m->rs->style;
        chat_reasoning_free(m->rs);
        chat_reasoning_init_inside(m->rs, st, m->think_inside);
        feed_tokens(app, m);
    }
    chat_reasoning_feed(m->rs, m->text + m->rs->fed, m->len - m->rs->fed);
    refresh(m);
}

void think_token(ui_app *app, ui_msg *m, int32_t id, bool empty)
{
    if (!m->rs)
        return;
    think_sync(app, m);
    const char *ct = empty ? control_text(app, id) : NULL;
    if (ct) {
        chat_reasoning_feed_virtual(m->rs, ct, strlen(ct));
        refresh(m);
    }
}

void think_end_turn(ui_app *app, ui_msg *m)
{
    if (!m->rs)
        return;
    think_sync(app, m);
    chat_reasoning_finish(m->rs);
    refresh(m);
    if (m->rs->seen) {
        m->reasoning = chat_reasoning_extract_n(m->rs, m->text, m->len, CHAT_SPAN_REASONING, &m->reasoning_len);
        m->answer = chat_reasoning_extract_n(m->rs, m->text, m->len, CHAT_SPAN_ANSWER, &m->answer_len);
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
