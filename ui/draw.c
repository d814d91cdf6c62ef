/* Clipped text output. Every write checks the screen bounds because panes
 * can be as small as one cell while the terminal is being resized. */
#include "draw.h"

#include <curses.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "wrap.h"

static int inside(int y, int x)
{
    return y >= 0 && x >= 0 && y < LINES && x < COLS;
}

int draw_text(int y, int x, int w, const char *s, size_t n, int attr)
{
    if (!inside(y, x) || w <= 0)
        return 0;
    if (x + w > COLS)
        w = COLS - x;
    int used = 0;
    attr_t old_a;
    short old_p;
    attr_get(&old_a, &old_p, NULL);
    attrset((attr_t)attr);
    move(y, x);
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        size_t l = wrap_utf8_decode(s + i, n - i, &cp);
        int cw = wrap_cp_width(cp);
        if (cp == '\t') {
            if (used + 1 > w)
                break;
            addch(' ');
            used++;
        } else if (cw == 0) {
            /* combining marks attach to the previous cell; drop other zero-width controls */
            if (used > 0 && cp >= 0x300 && !(cp >= 0x7F && cp < 0xA0))
                addnstr(s + i, (int)l);
        } else {
            if (used + cw > w)
                break;
            if (cp == 0xFFFD && l == 1)
                addstr("\xEF\xBF\xBD");
            else
                addnstr(s + i, (int)l);
            used += cw;
        }
        i += l;
    }
    attrset(old_a);
    (void)old_p;
    return used;
}

int draw_str(int y, int x, int w, const char *s, int attr)
{
    return draw_text(y, x, w, s, strlen(s), attr);
}

int draw_printf(int y, int x, int w, int attr, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    /* the analyzer misreads va_list under _XOPEN_SOURCE (ncurses flags) */
    vsnprintf(buf, sizeof buf, fmt, ap); // NOLINT(clang-analyzer-valist.Uninitialized)
    va_end(ap);
    return draw_str(y, x, w, buf, attr);
}

void draw_fill(int y, int x, int w, int attr)
{
    if (!inside(y, x) || w <= 0)
        return;
    if (x + w > COLS)
        w = COLS - x;
    attr_t old_a;
    short old_p;
    attr_get(&old_a, &old_p, NULL);
    attrset((attr_t)attr);
    mvhline(y, x, ' ', w);
    attrset(old_a);
}

void draw_hline(int y, int x, int w, int attr)
{
    if (!inside(y, x) || w <= 0)
        return;
    if (x + w > COLS)
        w = COLS - x;
    /* Unicode box drawing rather than ACS: renders (and captures) the same everywhere */
    for (int i = 0; i < w; i++)
        draw_text(y, x + i, 1, "\xe2\x94\x80", 3, attr);
}

void draw_vline(int y, int x, int h, int attr)
{
    if (!inside(y, x) || h <= 0)
        return;
    if (y + h > LINES)
        h = LINES - y;
    for (int i = 0; i < h; i++)
        draw_text(y + i, x, 1, "\xe2\x94\x82", 3, attr);
}
