/* Inspector pane. */
#include "inspector.h"

#include <curses.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "draw.h"
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

void inspector_draw(ui_app *app, ui_rect r)
{
    if (r.h <= 0 || r.w <= 4)
        return;
    draw_vline(r.y, r.x, r.h, theme_attr(THEME_BORDER));
    draw_hline(r.y, r.x + 1, r.w - 1, theme_attr(THEME_BORDER));
    int x = r.x + 2, w = r.w - 3;
    ui_conv *c = ui_current(app);
    ui_token *t = conv_selected(c);
    bool selected = t != NULL;
    if (!t)
        t = conv_latest(c);
    int n_all = 0, ord = t ? conv_token_ordinal(c, t, &n_all) : 0;
    char title[96];
    if (selected)
        snprintf(title, sizeof title, " Inspector: token %d/%d ", ord, n_all);
    else
        snprintf(title, sizeof title, " Inspector: latest step ");
    int tl = draw_str(r.y, x, w, title, theme_attr(THEME_HEADER));
    draw_str(r.y, x + tl + 1, w - tl - 1, app->post_order ? "[post order]" : "[raw order]", theme_attr(THEME_DIM));
    if (!t) {
        draw_str(r.y + 2, x, w, "no generated token yet", theme_attr(THEME_DIM));
        return;
    }
    int y = r.y + 1;
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
    if (y < r.y + r.h)
        draw_printf(y++, x, w, 0, "pos %d  id %d  '%s'", t->pos, t->id, esc);
    if (y < r.y + r.h)
        draw_printf(y++, x, w, 0, "raw %.2f%%  post %.2f%%  logit %.3f", t->p_raw * 100.0, t->p_post * 100.0,
                    (double)t->logit);
    if (y < r.y + r.h)
        draw_printf(y++, x, w, 0, "entropy raw %.3f  post %.3f nats", (double)t->entropy_raw,
                    (double)t->entropy_post);
    if (y >= r.y + r.h)
        return;
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
    snprintf(hdr + hl, sizeof hdr - (size_t)hl, " %6s %6s", "raw%", "post%");
    draw_str(y, x, w, hdr, theme_attr(THEME_HEADER));
    int bar_x = x + 10 + tok_w + (show_logit ? 8 : 0) + 14 + 1;
    if (bar_w)
        draw_str(y, bar_x, bar_w, "post", theme_attr(THEME_HEADER));
    y++;
    engine_token_candidate rows[SAMPLER_MAX_TOP];
    int n = t->n_top;
    memcpy(rows, t->top, (size_t)n * sizeof rows[0]);
    if (app->post_order)
        qsort(rows, (size_t)n, sizeof rows[0], cmp_post);
    bool chosen_shown = false;
    for (int k = 0; k < n && y < r.y + r.h; k++, y++) {
        const engine_token_candidate *cd = &rows[k];
        bool chosen = cd->id == t->id;
        chosen_shown |= chosen;
        int attr = chosen ? theme_attr(THEME_SELECTED) : 0;
        if (chosen)
            draw_fill(y, x, w, attr);
        wrap_escape(cd->text, strnlen(cd->text, ENGINE_TEXT_MAX), esc, sizeof esc);
        char tokcol[200];
        snprintf(tokcol, sizeof tokcol, "'%s'", esc);
        draw_printf(y, x, 10, attr, "%2d %6d", k + 1, cd->id);
        int used = draw_str(y, x + 10, tok_w, tokcol, attr);
        (void)used;
        int cx = x + 10 + tok_w;
        if (show_logit)
            cx += draw_printf(y, cx, x + w - cx, attr, " %7.3f", (double)cd->logit);
        draw_printf(y, cx, x + w - cx, attr, " %6.2f %6.2f", cd->p_raw * 100.0, cd->p_post * 100.0);
        if (bar_w) {
            int bx = bar_x;
            /* eighth blocks: a narrow bar still resolves 1/(8*bar_w) */
            int eighths = (int)lroundf(cd->p_post * (float)(bar_w * 8));
            char bar[128];
            size_t bl = 0;
            for (; eighths >= 8 && bl + 4 < sizeof bar; eighths -= 8) {
                memcpy(bar + bl, "\xe2\x96\x88", 3);
                bl += 3;
            }
            if (eighths > 0 && bl + 4 < sizeof bar) {
                bar[bl++] = (char)0xe2;
                bar[bl++] = (char)0x96;
                bar[bl++] = (char)(0x90 - eighths); /* U+258F (1/8) .. U+2589 (7/8) */
            }
            bar[bl] = 0;
            draw_str(y, bx, bar_w, bar, chosen ? attr : theme_attr(THEME_BAR));
        }
    }
    if (!chosen_shown && y < r.y + r.h && n > 0)
        draw_printf(y, x, w, theme_attr(THEME_DIM), "chosen token %d is outside the top %d", t->id, n);
}
