/* Small drawing helpers over stdscr that clip to a width and never write
 * outside the screen (safe at any terminal size). */
#ifndef TOKSCOPE_UI_DRAW_H
#define TOKSCOPE_UI_DRAW_H

#include <stddef.h>

/* Draws UTF-8 s[0..n) at (y, x) in at most w columns with attribute attr;
 * control characters are skipped, tabs drawn as spaces. Returns columns used. */
int draw_text(int y, int x, int w, const char *s, size_t n, int attr);
int draw_str(int y, int x, int w, const char *s, int attr);
int draw_printf(int y, int x, int w, int attr, const char *fmt, ...) __attribute__((format(printf, 5, 6)));
/* Fills w columns with spaces in attr. */
void draw_fill(int y, int x, int w, int attr);
void draw_hline(int y, int x, int w, int attr);
void draw_vline(int y, int x, int h, int attr);

#endif
