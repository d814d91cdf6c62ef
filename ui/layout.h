/* Screen layout: rectangles of every pane for a terminal size. Pure, so
 * the size rules (and the "too small" threshold) are testable. */
#ifndef TOKSCOPE_UI_LAYOUT_H
#define TOKSCOPE_UI_LAYOUT_H

#include <stdbool.h>

#define LAYOUT_MIN_COLS 40
#define LAYOUT_MIN_ROWS 10
#define LAYOUT_PARAMS_ROWS 15 /* title + one row per panel row (PARAMS_ROWS: 12 sampler parameters, think, effort) */

typedef struct ui_rect {
    int y, x, h, w;
} ui_rect;

typedef struct ui_layout {
    int rows, cols;
    bool too_small;
    ui_rect title;     /* tabs bar, row 0 */
    ui_rect conv;      /* conversation pane (left) */
    ui_rect params;    /* parameter panel (right, top) */
    ui_rect inspector; /* inspector (right, below the panel); h may be 0 */
    ui_rect input;     /* input line(s) */
    ui_rect status;    /* status line */
    ui_rect keys;      /* function key hints; h = 0 on short terminals */
} ui_layout;

/* input_rows: lines the input currently wants (1..), clamped here. */
void layout_compute(ui_layout *l, int rows, int cols, int input_rows);

#endif
