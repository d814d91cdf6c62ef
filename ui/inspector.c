/* Inspector pane: one step in detail, its candidates (a row cursor when the
 * inspector has the focus: Enter picks one), the step the engine waits on in
 * step mode, or the step's logit lens. In compare settings there are two,
 * one per side. */
#include "inspector.h"

#include <curses.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conv.h"
#include "draw.h"
#include "remote_ui.h"
#include "explore.h"
#include "theme.h"
#include "ui.h"
#include "wrap.h"

static int cmp_post(const void *a, const void *b)
{
    const engine_token_candidate *x = a, *y = b;
    if (x->p_post != y->p_post)
        return x->p_post < y->p_post ? 1 : -1;
    return x->logit < y->logit ? 1 : x->logit > y->logit ? -1 : 0;
}

int inspector_rows(const ui_app *app, const ui_token *t, engine_token_candidate *rows)
{
    const int n = t ? t->n_top : 0;
    if (n)
        memcpy(rows, t->top, (size_t)n * sizeof rows[0]);
    if (app->post_order && n)
        qsort(rows, (size_t)n, sizeof rows[0], cmp_post);
    return n;
}

ui_token *inspector_token(ui_app *app, ui_conv *c, bool *pending)
{
    *pending = false;
    if (app->has_pending && app->gen_conv_id == c->id && !conv_selected(c)) {
        *pending = true;
        return &app->pending;
    }
    size_t mi, ti;
    return explore_shown(c, &mi, &ti);
}

static void bar_str(float p, int bar_w, char *bar, size_t cap)
{
    /* eighth blocks: a narrow bar still resolves 1/(8*bar_w) */
    int eighths = (int)lroundf(p * (float)(bar_w * 8));
    size_t bl = 0;
    for (; eighths >= 8 && bl + 4 < cap; eighths -= 8) {
        memcpy(bar + bl, "\xe2\x96\x88", 3);
        bl += 3;
    }
    if (eighths > 0 && bl + 4 < cap) {
        bar[bl++] = (char)0xe2;
        bar[bl++] = (char)0x96;
        bar[bl++] = (char)(0x90 - eighths); /* U+258F (1/8) .. U+2589 (7/8) */
    }
    bar[bl] = 0;
}

static void quoted(const char *s, char *out, size_t cap)
{
    char esc[160];
    wrap_escape(s, strnlen(s, ENGINE_TEXT_MAX), esc, sizeof esc);
    snprintf(out, cap, "'%s'", esc);
}

/* The logit lens table: per block its top candidates and where the step's
 * chosen token stands; the first block where it is top-1 is marked. */
static void draw_lens(ui_app *app, const ui_token *t, int y, int x, int w, int y_end)
{
    const engine_lens *L = t->lens;
    char chosen[192];
    const char *piece = "";
    for (int k = 0; k < t->n_top; k++)
        if (t->top[k].id == t->id)
            piece = t->top[k].text;
    quoted(piece, chosen, sizeof chosen);
    if (y < y_end) {
        if (L->first_top)
            draw_printf(y++, x, w, 0, "chosen %s: top-1 from block %d of %d", chosen, L->first_top, L->n_layer);
        else
            draw_printf(y++, x, w, 0, "chosen %s: never top-1 (sampled)", chosen);
    }
    if (y >= y_end)
        return;
    /* columns: block, top-1 and its p, the chosen one's rank and p, then more candidates */
    int tok_w = w - 4 - 7 - 7 - 7;
    if (tok_w > 16)
        tok_w = 16;
    if (tok_w < 4)
        tok_w = 4;
    draw_printf(y++, x, w, theme_attr(THEME_HEADER), "%-4s%-*s %6s %6s %6s  %s", "blk", tok_w, "top-1", "p%", "rank",
                "p%", "next");
    const int rows = y_end - y;
    if (rows <= 0)
        return;
    int first = app->lens_scroll;
    if (first < 0) { /* the marked block in view, the last blocks when they fit */
        first = L->n_layer - rows;
        if (L->first_top && L->first_top - 1 < first)
            first = L->first_top - 1 - rows / 2;
    }
    if (first > L->n_layer - rows)
        first = L->n_layer - rows;
    if (first < 0)
        first = 0;
    app->lens_scroll = app->lens_scroll < 0 ? -1 : first;
    for (int i = first; i < L->n_layer && y < y_end; i++, y++) {
        const engine_lens_layer *b = &L->layer[i];
        const bool mark = i + 1 == L->first_top;
        const int attr = mark ? theme_attr(THEME_SELECTED) : 0;
        if (mark)
            draw_fill(y, x, w, attr);
        char top1[192] = "", rank[16], more[512] = "";
        if (b->n_top)
            quoted(b->top[0].text, top1, sizeof top1);
        snprintf(rank, sizeof rank, b->chosen_rank == 0 ? "top" : "#%d", b->chosen_rank + 1);
        size_t ml = 0;
        for (int k = 1; k < b->n_top && ml < sizeof more - 1; k++) {
            char q[192];
            quoted(b->top[k].text, q, sizeof q);
            ml += (size_t)snprintf(more + ml, sizeof more - ml, "%s%s %.0f", k > 1 ? " " : "", q,
                                   b->top[k].p_raw * 100.0);
        }
        char lab[16];
        snprintf(lab, sizeof lab, "L%d%s", i + 1, mark ? "*" : "");
        draw_str(y, x, 4, lab, attr);
        int cx = x + 4;
        draw_str(y, cx, tok_w, top1, attr);
        cx += tok_w;
        draw_printf(y, cx, x + w - cx, attr, " %6.2f %6s %6.2f  %s", b->n_top ? b->top[0].p_raw * 100.0 : 0.0, rank,
                    b->chosen_p * 100.0, more);
    }
}

static void draw_table(ui_app *app, const ui_token *t, bool cursor, int y, int x, int w, int y_end)
{
    /* columns: rank id token [logit] raw% post% [bar]; the token column gets
     * at least 10 cells, the logit and the bar appear when there is room */
    const int fixed = 3 + 7 + 7 + 7; /* "%2d " "%6d " token " %6.2f" " %6.2f" */
    bool show_logit = w - fixed - 8 >= 10;
    int tok_w = w - fixed - (show_logit ? 8 : 0);
    int bar_w = 0;
    if (tok_w >= 18) {
        bar_w = tok_w / 2 < 20 ? tok_w / 2 : 20;
        tok_w -= bar_w + 1;
    }
    if (tok_w < 4)
        tok_w = 4;
    char hdr[256];
    int hl = snprintf(hdr, sizeof hdr, "%2s %6s %-*s", "#", "id", tok_w, "token");
    if (show_logit)
        hl += snprintf(hdr + hl, sizeof hdr - (size_t)hl, " %7s", "logit");
    /* --remote: the server sends one kind per request (raw logprobs, or
     * llama-server's post-sampler probs): the other column shows "-" */
    snprintf(hdr + hl, sizeof hdr - (size_t)hl, " %6s %6s", "raw%", "post%");
    draw_str(y, x, w, hdr, theme_attr(THEME_HEADER));
    int bar_x = x + 10 + tok_w + (show_logit ? 8 : 0) + 14 + 1;
    if (bar_w)
        draw_str(y, bar_x, bar_w, "post", theme_attr(THEME_HEADER));
    y++;
    engine_token_candidate rows[SAMPLER_MAX_TOP];
    int n = inspector_rows(app, t, rows);
    if (cursor && app->insp_row >= n)
        app->insp_row = n > 0 ? n - 1 : 0;
    /* keep the cursor's row in view */
    int first = cursor && app->insp_row >= y_end - y ? app->insp_row - (y_end - y) + 1 : 0;
    bool chosen_shown = false;
    for (int k = first; k < n && y < y_end; k++, y++) {
        const engine_token_candidate *cd = &rows[k];
        bool chosen = cd->id == t->id;
        chosen_shown |= chosen;
        int attr = chosen ? theme_attr(THEME_SELECTED) : 0;
        if (cursor && k == app->insp_row)
            attr = theme_attr(THEME_SELECTED) | (int)A_REVERSE | (int)A_BOLD;
        if (attr)
            draw_fill(y, x, w, attr);
        if (cursor && k == app->insp_row) /* visible without colours too */
            draw_str(y, x - 1, 1, ">", attr);
        char tokcol[200];
        quoted(cd->text, tokcol, sizeof tokcol);
        draw_printf(y, x, 10, attr, "%2d %6d", k + 1, cd->id);
        draw_str(y, x + 10, tok_w, tokcol, attr);
        int cx = x + 10 + tok_w;
        /* a negative probability: the server did not send that kind */
        if (show_logit && (cd->p_raw < 0 || cd->logit <= -1e30f)) /* not sent, or a server's log(0) */
            cx += draw_printf(y, cx, x + w - cx, attr, " %7s", cd->p_raw < 0 ? "-" : "-inf");
        else if (show_logit)
            cx += draw_printf(y, cx, x + w - cx, attr, " %7.3f", (double)cd->logit);
        char pr[16], pp[16];
        snprintf(pr, sizeof pr, cd->p_raw < 0 ? "-" : "%.2f", cd->p_raw * 100.0);
        snprintf(pp, sizeof pp, cd->p_post < 0 ? "-" : "%.2f", cd->p_post * 100.0);
        draw_printf(y, cx, x + w - cx, attr, " %6s %6s", pr, pp);
        if (bar_w) {
            char bar[128];
            bar_str(cd->p_post >= 0 ? cd->p_post : cd->p_raw, bar_w, bar, sizeof bar);
            draw_str(y, bar_x, bar_w, bar, chosen ? attr : theme_attr(THEME_BAR));
        }
    }
    if (!chosen_shown && t->id >= 0 && y < y_end && n > 0)
        draw_printf(y, x, w, theme_attr(THEME_DIM), "chosen token %d is outside the top %d", t->id, n);
}

/* One inspector over r for conversation c; label names the side ("" when one). */
static void draw_one(ui_app *app, ui_conv *c, ui_rect r, const char *label, bool focused)
{
    if (r.h <= 0 || r.w <= 4)
        return;
    draw_vline(r.y, r.x, r.h, theme_attr(THEME_BORDER));
    draw_hline(r.y, r.x + 1, r.w - 1, theme_attr(focused ? THEME_BORDER_FOCUS : THEME_BORDER));
    int x = r.x + 2, w = r.w - 3;
    bool pending;
    ui_token *t = inspector_token(app, c, &pending);
    bool selected = conv_selected(c) != NULL;
    int n_all = 0, ord = t && !pending ? conv_token_ordinal(c, t, &n_all) : 0;
    char title[128];
    if (pending)
        snprintf(title, sizeof title, " %sStep: next token ", label);
    else if (selected)
        snprintf(title, sizeof title, " %s%s: token %d/%d ", label, app->lens_on ? "Lens" : "Inspector", ord, n_all);
    else
        snprintf(title, sizeof title, " %s%s: latest step ", label, app->lens_on ? "Lens" : "Inspector");
    if (remote_ui_on(app)) /* whose numbers these are (a token's own: /probs switches between turns) */
        snprintf(title + strlen(title), sizeof title - strlen(title), "%s",
                 !remote_ui_one_prob(app) ? "(tokscope serve: raw, post) "
                 : t && !pending && t->p_raw < 0 ? "(server's post probs) "
                                                 : "(server's raw probs) ");
    int tl = draw_str(r.y, x, w, title, theme_attr(THEME_HEADER));
    draw_str(r.y, x + tl + 1, w - tl - 1, app->post_order ? "[post order]" : "[raw order]", theme_attr(THEME_DIM));
    if (!t) {
        draw_str(r.y + 2, x, w, "no generated token yet", theme_attr(THEME_DIM));
        return;
    }
    int y = r.y + 1;
    const int y_end = r.y + r.h;
    if (pending) {
        if (y < y_end)
            draw_printf(y++, x, w, 0, "pos %d: the engine waits", t->pos);
        if (y < y_end)
            draw_printf(y++, x, w, theme_attr(THEME_DIM), "Enter draws  text forces  Bksp undoes  Tab picks");
        if (y < y_end)
            draw_printf(y++, x, w, 0, "entropy raw %.3f  post %.3f nats", (double)t->entropy_raw,
                        (double)t->entropy_post);
        if (y < y_end)
            draw_table(app, t, focused, y, x, w, y_end);
        return;
    }
    const ui_msg *m = NULL;
    for (size_t i = 0; i < c->n_msgs; i++)
        if (t >= c->msgs[i].toks && t < c->msgs[i].toks + c->msgs[i].n_toks)
            m = &c->msgs[i];
    char esc[160];
    const char *piece = "";
    size_t plen = 0;
    /* the chosen token's own piece: from the top table when present, else the text it added */
    for (int k = 0; k < t->n_top; k++)
        if (t->top[k].id == t->id) {
            piece = t->top[k].text;
            plen = strnlen(piece, ENGINE_TEXT_MAX);
        }
    if (!plen && m) {
        piece = m->text + t->off;
        plen = t->len;
    }
    wrap_escape(piece, plen, esc, sizeof esc);
    if (y < y_end)
        draw_printf(y++, x, w, 0, "pos %d  id %d  '%s'", t->pos, t->id, esc);
    if (y < y_end && t->spec_mark == 1) /* speculative decoding: what the verification did here */
        draw_printf(y++, x, w, 0, "drafted, accepted by the verification");
    else if (y < y_end && t->spec_mark == 2) {
        const char *rt = "";
        for (int32_t k = 0; k < t->n_top; k++)
            if (t->top[k].id == t->spec_rejected)
                rt = t->top[k].text;
        char resc[64];
        wrap_escape(rt, strnlen(rt, ENGINE_TEXT_MAX), resc, sizeof resc);
        draw_printf(y++, x, w, 0, "drawn after the draft %d '%s' was rejected", t->spec_rejected, resc);
    }
    if (y < y_end && remote_ui_one_prob(app) && t->p_raw < 0) /* llama-server's post_sampling_probs */
        draw_printf(y++, x, w, 0, "server post-sampler %.2f%%  (raw: -)", t->p_post * 100.0);
    else if (y < y_end && remote_ui_one_prob(app)) /* one number per token: the server's logprob */
        draw_printf(y++, x, w, 0, "server raw %.2f%%  logprob %.3f  (post: -)", t->p_raw * 100.0,
                    (double)t->logit);
    else if (y < y_end)
        draw_printf(y++, x, w, 0, "raw %.2f%%  post %.2f%%  logit %.3f", t->p_raw * 100.0, t->p_post * 100.0,
                    (double)t->logit);
    if (app->lens_on) {
        if (t->lens)
            draw_lens(app, t, y, x, w, y_end);
        else if (y < y_end)
            draw_str(y, x, w,
                     t->lens_wait                        ? "computing the logit lens..."
                     : t->lens_failed                    ? "logit lens: the engine could not (see the status line)"
                     : m && m->streaming && !selected ? "logit lens: when the reply is done (or pick a token)"
                                                         : "logit lens: asking the engine",
                     theme_attr(THEME_DIM));
        return;
    }
    if (y < y_end && remote_ui_one_prob(app))
        draw_printf(y++, x, w, 0, "entropy %.3f nats (of the server's top %d)",
                    (double)conv_token_entropy(t), t->n_top);
    else if (y < y_end)
        draw_printf(y++, x, w, 0, "entropy raw %.3f  post %.3f nats", (double)t->entropy_raw,
                    (double)t->entropy_post);
    if (y < y_end)
        draw_table(app, t, focused, y, x, w, y_end);
}

void inspector_draw(ui_app *app, ui_rect r)
{
    const bool focused = app->focus == UI_FOCUS_INSPECTOR;
    if (!explore_compare_view(app)) {
        draw_one(app, ui_current(app), r, "", focused);
        return;
    }
    ui_rect a = r, b = r;
    a.h = r.h / 2;
    b.y = r.y + a.h;
    b.h = r.h - a.h;
    draw_one(app, ui_conv_by_id(app, app->cmp_a), a, "A ", focused && app->cmp_side == 0);
    draw_one(app, ui_conv_by_id(app, app->cmp_b), b, "B ", focused && app->cmp_side == 1);
}
