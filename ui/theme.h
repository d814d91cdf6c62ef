/* Colours and attributes of every UI element. With colours off (NO_COLOR,
 * [ui] colors = false, or a terminal without colours) each element falls back
 * to a monochrome attribute so the layout still reads. */
#ifndef TOKSCOPE_UI_THEME_H
#define TOKSCOPE_UI_THEME_H

#include <stdbool.h>

enum theme_elem {
    THEME_NORMAL,
    THEME_TITLE,     /* top bar */
    THEME_TAB_ACTIVE,
    THEME_USER,      /* "You" label */
    THEME_ASSISTANT, /* "Assistant" label */
    THEME_SYSTEM,
    THEME_STATUS,    /* status line */
    THEME_KEYS,      /* function key hints (key names) */
    THEME_KEYS_TEXT,
    THEME_BORDER,
    THEME_BORDER_FOCUS,
    THEME_HEADER,    /* table headers, panel titles */
    THEME_SELECTED,  /* chosen row / selected parameter / selected token */
    THEME_PROB_HI,   /* p >= 0.8 */
    THEME_PROB_MID,  /* 0.4 .. 0.8 */
    THEME_PROB_LO,   /* 0.1 .. 0.4 */
    THEME_PROB_VLO,  /* < 0.1 */
    THEME_BAR,
    THEME_ERROR,
    THEME_DIM,
    THEME_COUNT
};

/* Call after initscr(). use_colors=false forces monochrome. */
void theme_init(bool use_colors);
bool theme_has_colors(void);
/* ncurses attribute (colour pair and/or A_BOLD/A_REVERSE...) of an element. */
int theme_attr(enum theme_elem e);
/* Element for a token drawn with probability p. */
enum theme_elem theme_prob_elem(float p);

#endif
