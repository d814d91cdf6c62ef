/* Colour pairs: one per element, initialised once. */
#include "theme.h"

#include <curses.h>

static bool g_colors;

static const struct {
    short fg, bg;
    int attr;      /* added on top of the colour */
    int mono_attr; /* used when colours are off */
} theme_def[THEME_COUNT] = {
    [THEME_NORMAL] = {-1, -1, 0, 0},
    [THEME_TITLE] = {COLOR_BLACK, COLOR_CYAN, 0, A_REVERSE},
    [THEME_TAB_ACTIVE] = {COLOR_WHITE, COLOR_BLUE, A_BOLD, A_BOLD},
    [THEME_USER] = {COLOR_GREEN, -1, A_BOLD, A_BOLD},
    [THEME_ASSISTANT] = {COLOR_CYAN, -1, A_BOLD, A_BOLD | A_UNDERLINE},
    [THEME_SYSTEM] = {COLOR_MAGENTA, -1, A_BOLD, A_DIM},
    [THEME_STATUS] = {COLOR_BLACK, COLOR_CYAN, 0, A_REVERSE},
    [THEME_KEYS] = {COLOR_WHITE, -1, A_BOLD, A_BOLD},
    [THEME_KEYS_TEXT] = {COLOR_BLACK, COLOR_CYAN, 0, A_REVERSE},
    [THEME_BORDER] = {COLOR_BLUE, -1, 0, 0},
    [THEME_BORDER_FOCUS] = {COLOR_YELLOW, -1, A_BOLD, A_BOLD},
    [THEME_HEADER] = {COLOR_YELLOW, -1, A_BOLD, A_BOLD},
    [THEME_SELECTED] = {COLOR_BLACK, COLOR_YELLOW, 0, A_REVERSE},
    [THEME_PROB_HI] = {COLOR_GREEN, -1, 0, 0},
    [THEME_PROB_MID] = {COLOR_CYAN, -1, 0, 0},
    [THEME_PROB_LO] = {COLOR_YELLOW, -1, 0, A_UNDERLINE},
    [THEME_PROB_VLO] = {COLOR_RED, -1, A_BOLD, A_BOLD | A_UNDERLINE},
    [THEME_BAR] = {COLOR_GREEN, -1, 0, 0},
    [THEME_ERROR] = {COLOR_WHITE, COLOR_RED, A_BOLD, A_BOLD | A_REVERSE},
    [THEME_DIM] = {COLOR_BLUE, -1, A_BOLD, A_DIM},
};

void theme_init(bool use_colors)
{
    g_colors = use_colors && has_colors();
    if (!g_colors)
        return;
    start_color();
    use_default_colors();
    for (int i = 1; i < THEME_COUNT; i++)
        init_pair((short)i, theme_def[i].fg, theme_def[i].bg);
}

bool theme_has_colors(void)
{
    return g_colors;
}

int theme_attr(enum theme_elem e)
{
    if (e <= THEME_NORMAL || e >= THEME_COUNT)
        return A_NORMAL;
    if (!g_colors)
        return theme_def[e].mono_attr;
    return (int)COLOR_PAIR(e) | theme_def[e].attr;
}

enum theme_elem theme_prob_elem(float p)
{
    if (p >= 0.8f)
        return THEME_PROB_HI;
    if (p >= 0.4f)
        return THEME_PROB_MID;
    if (p >= 0.1f)
        return THEME_PROB_LO;
    return THEME_PROB_VLO;
}
