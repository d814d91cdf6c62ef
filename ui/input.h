/* Input line on GNU readline's callback interface. Readline never touches
 * the terminal: its getc, redisplay and terminal prep hooks are redirected,
 * ncurses reads the keys, feeds them to readline byte by byte, and draws
 * rl_line_buffer / rl_point in the input rectangle. Enter is handled here
 * (not by readline's accept-line) so that Alt-Enter and pastes can insert
 * newlines. History persists in a file; entries may span several lines. */
#ifndef TOKSCOPE_UI_INPUT_H
#define TOKSCOPE_UI_INPUT_H

#include <stdbool.h>
#include <stddef.h>

#include "layout.h"

/* history_path may be NULL (no persistence). */
void input_init(const char *history_path);
void input_shutdown(void); /* saves history */
/* Feeds one key from ncurses (wide key codes for special keys, bytes otherwise). */
void input_key(int key);
void input_insert(const char *s);
/* Bracketed paste: the bytes are collected and inserted in one go, as valid
 * UTF-8 (bytes that are not become U+FFFD): a paste of any size is one
 * insertion, not one readline call per byte. '\r' and '\n' give a newline;
 * a tab stays a tab (the message keeps it, the screen shows a space).
 * flush(false) inserts what has arrived so far, keeping a character cut in
 * the middle for the next bytes; flush(true) ends it. */
void input_paste_add(int byte);
void input_paste_flush(bool end);
/* True while readline's incremental search (Ctrl-R) is active. */
bool input_in_search(void);
/* Current text (readline's buffer, NUL-terminated). */
const char *input_text(void);
void input_set_text(const char *s);
/* Takes the current line: returns a malloc'd copy, clears the buffer and adds
 * it to the history (when non-blank). */
char *input_take(void);
/* Lines the input wants for width w (1..). */
int input_rows(int w);
/* Draws in r (first row is a separator rule, with label on it when not
 * NULL); places the cursor when focused. */
void input_draw(ui_rect r, bool focused, const char *label);
/* Where the terminal cursor goes after drawing (valid when focused). */
void input_cursor(int *y, int *x);

/* History file helpers (exposed for tests): entries are escaped one per line
 * ("\n" -> "\\n", "\\" -> "\\\\"). */
void input_history_escape(const char *s, char *out, size_t cap);
void input_history_unescape(const char *s, char *out, size_t cap);

#endif
