/* Conversation model and pane. */
#include "conv.h"

#include <curses.h>
#include <stdlib.h>
#include <string.h>

#include "chat/chat.h"
#include "chat/reasoning.h"
#include "draw.h"
#include "theme.h"
#include "wrap.h"

#define CONV_INDENT 2

static void *xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q)
        abort(); /* out of memory in an interactive UI: nothing sensible left to do */
    return q;
}

static char *xstrdup(const char *s)
{
    char *d = strdup(s ? s : "");
    if (!d)
        abort();
    return d;
}

ui_conv *conv_create(int32_t id, const char *system)
{
    ui_conv *c = calloc(1, sizeof *c);
    if (!c)
        abort();
    c->id = id;
    c->system = xstrdup(system);
    c->sel_msg = -1;
    c->sel_tok = -1;
    return c;
}

void msg_clear(ui_msg *m)
{
    msg_versions_free(m);
    free(m->wl);
    free(m->reasoning);
    free(m->answer);
    free(m->think_vis);
    if (m->rs)
        chat_reasoning_free(m->rs);
    free(m->rs);
    for (size_t i = 0; i < m->n_toks; i++) {
        free(m->toks[i].top);
        engine_lens_free(m->toks[i].lens);
    }
    free(m->toks);
    free(m->text);
    memset(m, 0, sizeof *m);
}

void conv_free(ui_conv *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->n_msgs; i++)
        msg_clear(&c->msgs[i]);
    if (c->pending_vers) {
        ui_msg tmp = {.vers = c->pending_vers};
        msg_versions_free(&tmp);
    }
    free(c->msgs);
    free(c->system);
    free(c->vl);
    free(c);
}

void conv_set_system(ui_conv *c, const char *system)
{
    free(c->system);
    c->system = xstrdup(system);
}

void msg_append(ui_msg *m, const char *s, size_t n)
{
    if (m->len + n + 1 > m->cap) {
        size_t cap = m->cap ? m->cap : 64;
        while (cap < m->len + n + 1)
            cap *= 2;
        m->text = xrealloc(m->text, cap);
        m->cap = cap;
    }
    memcpy(m->text + m->len, s, n);
    m->len += n;
    m->text[m->len] = 0;
}

static int32_t g_next_uid = 1;

size_t conv_add_msg(ui_conv *c, const char *role, const char *text)
{
    return conv_add_msg_n(c, role, text, text ? strlen(text) : 0);
}

size_t conv_add_msg_n(ui_conv *c, const char *role, const char *text, size_t len)
{
    if (c->n_msgs == c->cap_msgs) {
        c->cap_msgs = c->cap_msgs ? c->cap_msgs * 2 : 8;
        c->msgs = xrealloc(c->msgs, c->cap_msgs * sizeof *c->msgs);
    }
    ui_msg *m = &c->msgs[c->n_msgs];
    memset(m, 0, sizeof *m);
    snprintf(m->role, sizeof m->role, "%s", role);
    m->done_reason = -1;
    m->uid = g_next_uid++;
    if (c->pending_vers && c->pending_at == c->n_msgs) { /* the new version of a fork */
        m->vers = c->pending_vers;
        c->pending_vers = NULL;
    }
    msg_append(m, text ? text : "", text ? len : 0);
    return c->n_msgs++;
}

void conv_pop(ui_conv *c)
{
    if (c->n_msgs == 0)
        return;
    c->n_msgs--;
    msg_clear(&c->msgs[c->n_msgs]);
    if (c->sel_msg >= (int32_t)c->n_msgs)
        conv_sel_clear(c);
}

void conv_clear(ui_conv *c)
{
    while (c->n_msgs)
        conv_pop(c);
    c->scroll = 0;
    conv_sel_clear(c);
}

void msg_add_token(ui_msg *m, const engine_event *ev)
{
    if (m->n_toks == m->cap_toks) {
        m->cap_toks = m->cap_toks ? m->cap_toks * 2 : 64;
        m->toks = xrealloc(m->toks, m->cap_toks * sizeof *m->toks);
    }
    ui_token *t = &m->toks[m->n_toks++];
    memset(t, 0, sizeof *t);
    int32_t tl = ev->text_len;
    if (tl < 0)
        tl = 0;
    if (tl > ENGINE_TEXT_MAX - 1)
        tl = ENGINE_TEXT_MAX - 1;
    t->id = ev->token;
    t->pos = ev->pos;
    t->off = (uint32_t)m->len;
    t->len = (uint32_t)tl;
    t->logit = ev->logit;
    t->p_raw = ev->p_raw;
    t->p_post = ev->p_post;
    t->entropy_raw = ev->entropy_raw;
    t->entropy_post = ev->entropy_post;
    t->spec_mark = ev->spec_mark;
    t->spec_rejected = ev->spec_rejected;
    int32_t nt = ev->n_top;
    if (nt < 0)
        nt = 0;
    if (nt > SAMPLER_MAX_TOP)
        nt = SAMPLER_MAX_TOP;
    t->n_top = nt;
    if (nt) {
        t->top = malloc((size_t)nt * sizeof *t->top);
        if (!t->top)
            abort();
        memcpy(t->top, ev->top, (size_t)nt * sizeof *t->top);
    }
    msg_append(m, ev->text, (size_t)tl);
}

size_t conv_chat_messages(const ui_conv *c, chat_message **out)
{
    return conv_chat_messages_upto(c, c->n_msgs, out);
}

size_t conv_chat_messages_upto(const ui_conv *c, size_t n_msgs, chat_message **out)
{
    if (n_msgs > c->n_msgs)
        n_msgs = c->n_msgs;
    chat_message *v = xrealloc(NULL, (n_msgs + 1) * sizeof *v);
    size_t n = 0;
    if (c->system && *c->system)
        v[n++] = (chat_message){"system", c->system, 0};
    size_t extra = 0;
    for (size_t i = 0; i < n_msgs; i++)
        extra += c->msgs[i].reasoning != NULL;
    if (extra)
        v = xrealloc(v, (n_msgs + extra + 1) * sizeof *v);
    for (size_t i = 0; i < n_msgs; i++) {
        const ui_msg *m = &c->msgs[i];
        if (!strcmp(m->role, "assistant") && m->len == 0)
            continue;
        if (m->reasoning) { /* the template gets reasoning and answer apart, as it expects */
            v[n++] = (chat_message){CHAT_ROLE_REASONING, m->reasoning, m->reasoning_len};
            v[n++] = (chat_message){m->role, m->answer ? m->answer : "", m->answer ? m->answer_len : 0};
        } else /* the reply's bytes, NULs included */
            v[n++] = (chat_message){m->role, m->text, m->len};
    }
    *out = v;
    return n;
}

/* ---- token cursor ---- */

void conv_sel_clear(ui_conv *c)
{
    c->sel_msg = -1;
    c->sel_tok = -1;
}

ui_token *conv_selected(ui_conv *c)
{
    if (c->sel_msg < 0 || c->sel_msg >= (int32_t)c->n_msgs)
        return NULL;
    ui_msg *m = &c->msgs[c->sel_msg];
    if (c->sel_tok < 0 || c->sel_tok >= (int32_t)m->n_toks)
        return NULL;
    return &m->toks[c->sel_tok];
}

ui_token *conv_latest(ui_conv *c)
{
    for (size_t i = c->n_msgs; i-- > 0;)
        if (c->msgs[i].n_toks)
            return &c->msgs[i].toks[c->msgs[i].n_toks - 1];
    return NULL;
}

int conv_token_ordinal(const ui_conv *c, const ui_token *tok, int *n)
{
    int k = 0, found = 0;
    for (size_t i = 0; i < c->n_msgs; i++)
        for (size_t j = 0; j < c->msgs[i].n_toks; j++) {
            k++;
            if (&c->msgs[i].toks[j] == tok)
                found = k;
        }
    if (n)
        *n = k;
    return found;
}

bool conv_sel_last(ui_conv *c)
{
    for (size_t i = c->n_msgs; i-- > 0;)
        if (c->msgs[i].n_toks) {
            c->sel_msg = (int32_t)i;
            c->sel_tok = (int32_t)c->msgs[i].n_toks - 1;
            c->reveal = true;
            return true;
        }
    return false;
}

bool conv_sel_first(ui_conv *c)
{
    for (size_t i = 0; i < c->n_msgs; i++)
        if (c->msgs[i].n_toks) {
            c->sel_msg = (int32_t)i;
            c->sel_tok = 0;
            c->reveal = true;
            return true;
        }
    return false;
}

bool conv_sel_step(ui_conv *c, int delta)
{
    if (!conv_selected(c))
        return conv_sel_last(c);
    int32_t mi = c->sel_msg, ti = c->sel_tok;
    while (delta != 0) {
        int step = delta > 0 ? 1 : -1;
        int32_t nt = ti + step;
        int32_t nm = mi;
        while (nt < 0 || nt >= (int32_t)c->msgs[nm].n_toks) {
            nm += step;
            if (nm < 0 || nm >= (int32_t)c->n_msgs)
                goto out;
            nt = step > 0 ? 0 : (int32_t)c->msgs[nm].n_toks - 1;
        }
        mi = nm;
        ti = nt;
        delta -= step;
    }
out:
    if (mi == c->sel_msg && ti == c->sel_tok)
        return false;
    c->sel_msg = mi;
    c->sel_tok = ti;
    c->reveal = true;
    return true;
}

/* Token of message mi covering byte b (or the first one starting after it). */
static int32_t token_at(const ui_msg *m, size_t b)
{
    for (size_t j = 0; j < m->n_toks; j++)
        if (b < (size_t)m->toks[j].off + m->toks[j].len || m->toks[j].off >= b)
            return (int32_t)j;
    return m->n_toks ? (int32_t)m->n_toks - 1 : -1;
}

void msg_think_toggle(ui_msg *m)
{
    m->think_open = !m->think_open;
    m->think_set = true;
}

static long vline_of(const ui_conv *c, int32_t mi, size_t off)
{
    long best = -1;
    for (size_t i = 0; i < c->n_vl; i++) {
        const conv_vline *v = &c->vl[i];
        if (v->msg == mi && v->kind == CONV_VL_FOLD) { /* a token of a folded block is on its line */
            if (off < v->start + v->len)
                best = (long)i;
            continue;
        }
        if (v->msg != mi || v->kind != CONV_VL_TEXT)
            continue;
        if (v->start <= off)
            best = (long)i;
    }
    return best;
}

bool conv_sel_line(ui_conv *c, int dir)
{
    ui_token *t = conv_selected(c);
    if (!t)
        return conv_sel_last(c);
    if (!c->vl || c->n_vl == 0)
        return conv_sel_step(c, dir);
    long li = vline_of(c, c->sel_msg, t->off);
    if (li < 0)
        return conv_sel_step(c, dir);
    const conv_vline *cur = &c->vl[li];
    ui_msg *m = &c->msgs[c->sel_msg];
    int col = cur->kind == CONV_VL_FOLD ? 0 : wrap_str_width(m->text + cur->start, t->off - cur->start);
    for (long k = li + dir; k >= 0 && k < (long)c->n_vl; k += dir) {
        const conv_vline *v = &c->vl[k];
        if (v->kind != CONV_VL_TEXT || c->msgs[v->msg].n_toks == 0)
            continue;
        const ui_msg *vm = &c->msgs[v->msg];
        int w = 0;
        size_t b = wrap_fit(vm->text + v->start, v->len, col, &w) + v->start;
        int32_t j = token_at(vm, b);
        if (j < 0)
            continue;
        c->sel_msg = v->msg;
        c->sel_tok = j;
        c->reveal = true;
        return true;
    }
    return false;
}

bool conv_sel_uncertain(ui_conv *c, int dir, int mode)
{
    if (mode == CONV_STRIP_OFF)
        mode = CONV_STRIP_ENTROPY;
    int32_t mi = c->sel_msg, ti = c->sel_tok;
    if (!conv_selected(c)) { /* from the start (or the end) of the conversation */
        mi = dir > 0 ? 0 : (int32_t)c->n_msgs - 1;
        ti = dir > 0 ? -1 : mi >= 0 ? (int32_t)c->msgs[mi].n_toks : 0;
    }
    while (mi >= 0 && mi < (int32_t)c->n_msgs) {
        const ui_msg *m = &c->msgs[mi];
        for (ti += dir; ti >= 0 && ti < (int32_t)m->n_toks; ti += dir)
            if (conv_strip_level(&m->toks[ti], mode) >= CONV_STRIP_UNCERTAIN) {
                c->sel_msg = mi;
                c->sel_tok = ti;
                c->reveal = true;
                return true;
            }
        mi += dir;
        ti = dir > 0 || mi < 0 || mi >= (int32_t)c->n_msgs ? -1 : (int32_t)c->msgs[mi].n_toks;
    }
    return false;
}

bool conv_hit(ui_conv *c, int y, int x)
{
    const ui_rect r = c->view;
    if (y < r.y || y >= r.y + r.h || x < r.x + CONV_INDENT || x >= r.x + r.w)
        return false;
    const long li = (long)c->view_top + (y - r.y);
    if (li < 0 || (size_t)li >= c->n_vl)
        return false;
    const conv_vline *v = &c->vl[li];
    if (v->kind == CONV_VL_FOLD && v->msg >= 0) { /* a click on "thinking" folds or unfolds it */
        msg_think_toggle(&c->msgs[v->msg]);
        return false;
    }
    if ((v->kind != CONV_VL_TEXT && v->kind != CONV_VL_STRIP) || v->msg < 0 || c->msgs[v->msg].n_toks == 0)
        return false;
    const ui_msg *m = &c->msgs[v->msg];
    int w = 0;
    const size_t b = v->start + wrap_fit(m->text + v->start, v->len, x - r.x - CONV_INDENT, &w);
    const int32_t j = token_at(m, b);
    if (j < 0)
        return false;
    c->sel_msg = v->msg;
    c->sel_tok = j;
    return true;
}

/* ---- layout and drawing ---- */

static void vl_push(ui_conv *c, int32_t msg, int32_t kind, size_t start, size_t len)
{
    if (c->n_vl == c->cap_vl) {
        c->cap_vl = c->cap_vl ? c->cap_vl * 2 : 256;
        c->vl = xrealloc(c->vl, c->cap_vl * sizeof *c->vl);
    }
    c->vl[c->n_vl++] = (conv_vline){msg, kind, start, len};
}

static void msg_wrap(ui_msg *m, int tw)
{
    if (m->wl_width != tw || m->wl_len > m->len || m->wl_base != m->think_end) {
        m->n_wl = 0;
        m->wl_len = 0;
        m->wl_width = tw;
        m->wl_base = m->think_end; /* the answer after a reasoning block wraps on its own */
    }
    if (m->n_wl && m->wl_len == m->len)
        return;
    if (m->wl_base >= m->len) { /* nothing after the block yet */
        m->wl_len = m->len;
        return;
    }
    /* lines before the last one cannot change when text is appended */
    size_t from = m->wl_base;
    if (m->n_wl) {
        from = m->wl[m->n_wl - 1].start;
        m->n_wl--;
    }
    size_t n = wrap_text(m->text + from, m->len - from, tw, NULL, 0);
    if (m->n_wl + n > m->cap_wl) {
        size_t cap = m->cap_wl ? m->cap_wl : 16;
        while (cap < m->n_wl + n)
            cap *= 2;
        m->wl = xrealloc(m->wl, cap * sizeof *m->wl);
        m->cap_wl = cap;
    }
    wrap_text(m->text + from, m->len - from, tw, m->wl + m->n_wl, n);
    for (size_t i = 0; i < n; i++)
        m->wl[m->n_wl + i].start += from;
    m->n_wl += n;
    m->wl_len = m->len;
}

void conv_build_lines(ui_conv *c, int width)
{
    c->n_vl = 0;
    c->vl_width = width;
    int tw = width - CONV_INDENT;
    if (tw < 1)
        tw = 1;
    wrap_line tmp[256];
    if (c->system && *c->system) {
        /* the system prompt is drawn from c->system, marked by msg = -1 */
        vl_push(c, -1, CONV_VL_LABEL, 0, 0);
        size_t sl = strlen(c->system);
        size_t n = wrap_text(c->system, sl, tw, NULL, 0);
        wrap_line *lines = n <= 256 ? tmp : xrealloc(NULL, n * sizeof *lines);
        wrap_text(c->system, sl, tw, lines, n);
        for (size_t i = 0; i < n; i++)
            vl_push(c, -1, CONV_VL_TEXT, lines[i].start, lines[i].len);
        if (lines != tmp)
            free(lines);
        vl_push(c, -1, CONV_VL_BLANK, 0, 0);
    }
    for (size_t mi = 0; mi < c->n_msgs; mi++) {
        ui_msg *m = &c->msgs[mi];
        vl_push(c, (int32_t)mi, CONV_VL_LABEL, 0, 0);
        if (m->think_end > m->len)
            m->think_end = (uint32_t)m->len; /* text taken back (undo) */
        msg_wrap(m, tw);
        const bool strip = c->strip != CONV_STRIP_OFF && m->n_toks > 0;
        if (m->think_end) { /* the reasoning block: its line, then (unfolded) its text */
            vl_push(c, (int32_t)mi, CONV_VL_FOLD, 0, m->think_end);
            size_t bend = m->think_end; /* the blank lines before the answer are not drawn */
            while (bend > 0 && (m->text[bend - 1] == '\n' || m->text[bend - 1] == ' '))
                bend--;
            if (m->think_open && bend) {
                /* the reasoning's pieces, each wrapped on its own (the
                 * markers between them are not drawn), blanks at their ends
                 * left out; without pieces the block's text as it is */
                const uint32_t whole[2] = {0, (uint32_t)bend};
                const uint32_t *vis = m->n_think_vis ? m->think_vis : whole;
                const uint32_t n_vis = m->n_think_vis ? m->n_think_vis : 1;
                for (uint32_t p = 0; p < n_vis; p++) {
                    size_t a = vis[2 * p], e = vis[2 * p + 1] < bend ? vis[2 * p + 1] : bend;
                    while (a < e && (m->text[a] == '\n' || m->text[a] == ' '))
                        a++;
                    while (e > a && (m->text[e - 1] == '\n' || m->text[e - 1] == ' '))
                        e--;
                    if (a >= e)
                        continue;
                    size_t n = wrap_text(m->text + a, e - a, tw, NULL, 0);
                    wrap_line *lines = n <= 256 ? tmp : xrealloc(NULL, n * sizeof *lines);
                    wrap_text(m->text + a, e - a, tw, lines, n);
                    for (size_t i = 0; i < n; i++) {
                        vl_push(c, (int32_t)mi, CONV_VL_TEXT, a + lines[i].start, lines[i].len);
                        if (strip)
                            vl_push(c, (int32_t)mi, CONV_VL_STRIP, a + lines[i].start, lines[i].len);
                    }
                    if (lines != tmp)
                        free(lines);
                }
            }
        }
        for (size_t i = 0; i < m->n_wl; i++) {
            vl_push(c, (int32_t)mi, CONV_VL_TEXT, m->wl[i].start, m->wl[i].len);
            if (strip) /* under each line of the reply, aligned with its text */
                vl_push(c, (int32_t)mi, CONV_VL_STRIP, m->wl[i].start, m->wl[i].len);
        }
        vl_push(c, (int32_t)mi, CONV_VL_BLANK, 0, 0);
    }
}

void conv_scroll(ui_conv *c, int lines)
{
    c->scroll += lines;
    if (c->scroll < 0)
        c->scroll = 0;
    /* the upper bound depends on the pane height: clamped at draw time */
}

static const char *reason_text(int r)
{
    switch (r) {
    case ENGINE_DONE_LENGTH: return "n_predict reached";
    case ENGINE_DONE_STOPPED: return "stopped";
    case ENGINE_DONE_CTX_FULL: return "context full";
    case ENGINE_DONE_ERROR: return "error";
    case ENGINE_DONE_CUT: return "cut: connection lost";
    case CONV_DONE_INTERRUPTED: return "interrupted: tokscope quit";
    default: return NULL;
    }
}

float conv_token_prob(const ui_token *t, bool post)
{
    const float p = post ? t->p_post : t->p_raw;
    return p >= 0 ? p : post ? t->p_raw : t->p_post;
}

float conv_token_entropy(const ui_token *t)
{
    return t->entropy_raw >= 0 ? t->entropy_raw : t->entropy_post;
}

/* Draws one text line of an assistant message token by token. */
static void draw_token_line(const ui_conv *c, const ui_msg *m, const conv_vline *v, int y, int x, int w,
                            const conv_draw_opts *o)
{
    size_t b = v->start, end = v->start + v->len;
    /* first token ending after b (offsets only grow): binary search */
    size_t lo = 0, hi = m->n_toks;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if ((size_t)m->toks[mid].off + m->toks[mid].len <= b)
            lo = mid + 1;
        else
            hi = mid;
    }
    size_t j = lo;
    int col = 0;
    int32_t mi = (int32_t)(m - c->msgs);
    while (b < end && col < w) {
        /* advance to the token covering b */
        while (j < m->n_toks && (size_t)m->toks[j].off + m->toks[j].len <= b)
            j++;
        size_t seg_end = end;
        int attr = 0;
        if (j < m->n_toks && m->toks[j].off <= b) {
            const ui_token *t = &m->toks[j];
            size_t te = (size_t)t->off + t->len;
            if (te < seg_end)
                seg_end = te;
            if (o->prob_colors)
                attr = theme_attr(theme_prob_elem(conv_token_prob(t, o->post)));
            else if (b < m->think_end) /* reasoning: set apart */
                attr = theme_attr(THEME_DIM);
            if (mi == c->sel_msg && (int32_t)j == c->sel_tok)
                attr = theme_attr(THEME_SELECTED) | A_BOLD;
        } else if (j < m->n_toks && m->toks[j].off < seg_end) {
            seg_end = m->toks[j].off;
        }
        if (!attr && b < m->think_end)
            attr = theme_attr(THEME_DIM);
        col += draw_text(y, x + col, w - col, m->text + b, seg_end - b, attr);
        b = seg_end;
    }
    /* a selected token that is only whitespace/newline still gets a visible mark */
    if (mi == c->sel_msg && c->sel_tok >= 0 && c->sel_tok < (int32_t)m->n_toks) {
        const ui_token *t = &m->toks[c->sel_tok];
        bool blank = true;
        for (uint32_t k = 0; k < t->len; k++)
            if (m->text[t->off + k] != ' ' && m->text[t->off + k] != '\n')
                blank = false;
        if (blank && t->off >= v->start && t->off <= end && (t->off < end || t->len == 0 || m->text[t->off] == '\n'))
            if (t->off == end && col < w)
                draw_str(y, x + col, w - col, "\xe2\x86\xb5", theme_attr(THEME_SELECTED));
    }
}

int conv_strip_level(const ui_token *t, int mode)
{
    float x = mode == CONV_STRIP_PROB ? 1.0f - conv_token_prob(t, false) : conv_token_entropy(t) / 4.0f;
    if (!(x > 0.0f))
        x = 0.0f;
    if (x > 1.0f)
        x = 1.0f;
    return 1 + (int)(x * 7.0f + 0.5f);
}

/* The strip under a reply line: each token's columns filled with a block
 * as high as its level, so the uncertain spots stand out. */
static void draw_strip_line(const ui_conv *c, const ui_msg *m, const conv_vline *v, int y, int x, int w)
{
    static const char *const blocks[9] = {" ", "\xe2\x96\x81", "\xe2\x96\x82", "\xe2\x96\x83", "\xe2\x96\x84",
                                          "\xe2\x96\x85", "\xe2\x96\x86", "\xe2\x96\x87", "\xe2\x96\x88"};
    const int32_t mi = (int32_t)(m - c->msgs);
    size_t b = v->start;
    const size_t end = v->start + v->len;
    int col = 0;
    size_t j = 0;
    while (j < m->n_toks && (size_t)m->toks[j].off + m->toks[j].len <= b)
        j++;
    while (b < end && col < w) {
        while (j < m->n_toks && (size_t)m->toks[j].off + m->toks[j].len <= b)
            j++;
        size_t seg_end = end;
        const ui_token *t = NULL;
        if (j < m->n_toks && m->toks[j].off <= b) {
            t = &m->toks[j];
            if ((size_t)t->off + t->len < seg_end)
                seg_end = (size_t)t->off + t->len;
        } else if (j < m->n_toks && m->toks[j].off < seg_end) {
            seg_end = m->toks[j].off;
        }
        int cols = wrap_str_width(m->text + b, seg_end - b);
        if (t) {
            const int lv = conv_strip_level(t, c->strip);
            int attr = theme_attr(theme_prob_elem(conv_token_prob(t, false)));
            if (mi == c->sel_msg && (int32_t)j == c->sel_tok)
                attr = theme_attr(THEME_SELECTED);
            for (int k = 0; k < cols && col + k < w; k++)
                draw_str(y, x + col + k, 1, blocks[lv], attr);
        }
        col += cols;
        b = seg_end;
    }
}

/* The line over a reasoning block: folded, how many tokens it holds (and
 * whether the token cursor is inside: the inspector shows that token). */
static void draw_fold_line(const ui_conv *c, const ui_msg *m, const conv_vline *v, int y, int x, int w)
{
    size_t n = 0;
    while (n < m->n_toks && m->toks[n].off < v->start + v->len)
        n++;
    const int32_t mi = (int32_t)(m - c->msgs);
    const bool sel_inside = mi == c->sel_msg && c->sel_tok >= 0 && (size_t)c->sel_tok < n;
    const bool going = m->streaming && m->think_end == m->len;
    char buf[160];
    snprintf(buf, sizeof buf, "%s thinking%s \xc2\xb7 %zu token%s%s", m->think_open ? "\xe2\x96\xbe" : "\xe2\x96\xb8",
             going ? "\xe2\x80\xa6" : "", n, n == 1 ? "" : "s",
             m->think_open ? "  (F9 folds)" : sel_inside ? "  (cursor inside; F9 unfolds)" : "  (F9 unfolds)");
    draw_str(y, x, w, buf, theme_attr(sel_inside && !m->think_open ? THEME_SELECTED : THEME_DIM));
}

void conv_draw(ui_conv *c, ui_rect r, const conv_draw_opts *o)
{
    if (r.h <= 0 || r.w <= 2)
        return;
    int width = r.w - 1; /* last column: scroll indicator */
    conv_build_lines(c, width);
    int total = (int)c->n_vl;
    if (c->scroll > 0 && total > c->last_total)
        c->scroll += total - c->last_total; /* keep the view still while reading back */
    c->last_total = total;
    int max_scroll = total > r.h ? total - r.h : 0;
    if (c->reveal) {
        ui_token *t = conv_selected(c);
        if (t) {
            long li = vline_of(c, c->sel_msg, t->off);
            if (li >= 0) {
                int top = total - r.h - c->scroll;
                if (top < 0)
                    top = 0;
                if (li < top)
                    c->scroll = total - r.h - (int)li;
                else if (li >= top + r.h)
                    c->scroll = total - (int)li - 1;
            }
        }
        c->reveal = false;
    }
    if (c->scroll > max_scroll)
        c->scroll = max_scroll;
    if (c->scroll < 0)
        c->scroll = 0;
    int top = total - r.h - c->scroll;
    if (top < 0)
        top = 0;
    c->view = r;
    c->view_top = top;
    if (c->n_msgs == 0 && !(c->system && *c->system)) {
        draw_str(r.y + r.h / 2 - 1, r.x + 2, r.w - 3, "Type a message and press Enter.", theme_attr(THEME_DIM));
        draw_str(r.y + r.h / 2, r.x + 2, r.w - 3, "F1 or /help for keys and commands.", theme_attr(THEME_DIM));
        return;
    }
    for (int row = 0; row < r.h && top + row < total; row++) {
        const conv_vline *v = &c->vl[top + row];
        int y = r.y + row;
        if (v->kind == CONV_VL_BLANK)
            continue;
        if (v->msg < 0) {
            if (v->kind == CONV_VL_LABEL)
                draw_str(y, r.x, width, "System", theme_attr(THEME_SYSTEM));
            else
                draw_text(y, r.x + CONV_INDENT, width - CONV_INDENT, c->system + v->start, v->len,
                          theme_attr(THEME_SYSTEM) & ~A_BOLD);
            continue;
        }
        const ui_msg *m = &c->msgs[v->msg];
        bool is_user = !strcmp(m->role, "user");
        bool is_asst = !strcmp(m->role, "assistant");
        if (v->kind == CONV_VL_LABEL) {
            int col = draw_str(y, r.x, width, is_user ? "You" : is_asst ? "Assistant" : m->role,
                               theme_attr(is_user ? THEME_USER : is_asst ? THEME_ASSISTANT : THEME_SYSTEM));
            size_t vcur, vn = conv_versions(m, &vcur);
            if (vn > 1) /* a branch: this version of how many */
                col += draw_printf(y, r.x + col, width - col, theme_attr(THEME_HEADER),
                                   " \xe2\x80\xb9%zu/%zu\xe2\x80\xba", vcur, vn);
            if (is_asst) {
                const char *why = m->streaming ? NULL : reason_text(m->done_reason);
                char info[96] = "";
                size_t il = 0;
                if (why)
                    il += (size_t)snprintf(info + il, sizeof info - il, " [%s]", why);
                if (m->n_toks)
                    il += (size_t)snprintf(info + il, sizeof info - il, " %zu tokens", m->n_toks);
                if (m->streaming && o->generating)
                    snprintf(info + il, sizeof info - il, " \xe2\x80\xa6");
                draw_str(y, r.x + col, width - col, info, theme_attr(THEME_DIM));
            }
            continue;
        }
        if (v->kind == CONV_VL_STRIP) {
            draw_strip_line(c, m, v, y, r.x + CONV_INDENT, width - CONV_INDENT);
            continue;
        }
        if (v->kind == CONV_VL_FOLD) {
            draw_fold_line(c, m, v, y, r.x + CONV_INDENT, width - CONV_INDENT);
            continue;
        }
        if (is_asst && m->len == 0 && !m->streaming)
            draw_str(y, r.x + CONV_INDENT, width - CONV_INDENT, "(empty reply)", theme_attr(THEME_DIM));
        else if (is_asst && m->n_toks)
            draw_token_line(c, m, v, y, r.x + CONV_INDENT, width - CONV_INDENT, o);
        else /* a reply without token data (an older save) still sets its reasoning apart */
            draw_text(y, r.x + CONV_INDENT, width - CONV_INDENT, m->text + v->start, v->len,
                      v->start < m->think_end ? theme_attr(THEME_DIM) : 0);
    }
    /* scroll indicator */
    if (total > r.h) {
        int bar_y = (int)((long)top * (r.h - 1) / (total - r.h > 0 ? total - r.h : 1));
        for (int row = 0; row < r.h; row++)
            if (row == bar_y) /* the thumb alone: a track would double the panel's rule */
                draw_str(r.y + row, r.x + r.w - 1, 1, "\xe2\x96\x90", theme_attr(THEME_BORDER));
        if (c->scroll > 0)
            draw_printf(r.y + r.h - 1, r.x + r.w - 12 > r.x ? r.x + r.w - 12 : r.x, 11, theme_attr(THEME_HEADER),
                        "\xe2\x86\x93 %d more", c->scroll);
    }
    (void)o->focused;
}
