/* Pane geometry. Conversation on the left; parameters and inspector share
 * the right column; input, status and key hints stacked at the bottom. */
#include "layout.h"

#include <string.h>

static int clampi(int v, int lo, int hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

void layout_compute(ui_layout *l, int rows, int cols, int input_rows)
{
    memset(l, 0, sizeof *l);
    l->rows = rows;
    l->cols = cols;
    if (rows < LAYOUT_MIN_ROWS || cols < LAYOUT_MIN_COLS) {
        l->too_small = true;
        return;
    }
    int keys_h = rows >= 16 ? 1 : 0;
    int max_in = rows >= 24 ? 6 : rows >= 16 ? 3 : 1;
    int in_h = clampi(input_rows, 1, max_in);
    int bottom = in_h + 1 /* separator above the input */ + 1 /* status */ + keys_h;
    int main_h = rows - 1 - bottom;

    l->title = (ui_rect){0, 0, 1, cols};
    int right_w = clampi(cols * 9 / 20, 24, 60);
    if (cols - right_w < 20)
        right_w = cols / 2;
    int left_w = cols - right_w;
    l->conv = (ui_rect){1, 0, main_h, left_w};
    int ph = main_h < LAYOUT_PARAMS_ROWS ? main_h : LAYOUT_PARAMS_ROWS;
    l->params = (ui_rect){1, left_w, ph, right_w};
    l->inspector = (ui_rect){1 + ph, left_w, main_h - ph, right_w};
    /* the input's top separator row belongs to the input rect (drawn as a rule) */
    l->input = (ui_rect){1 + main_h, 0, in_h + 1, cols};
    l->status = (ui_rect){1 + main_h + in_h + 1, 0, 1, cols};
    l->keys = (ui_rect){rows - keys_h, 0, keys_h, cols};
}
