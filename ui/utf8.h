/* Valid UTF-8 for everything the UI keeps: typed or pasted bytes that are
 * not UTF-8 become U+FFFD before they enter a conversation, and a saved
 * file is always valid UTF-8 (JSON requires it; a model's byte tokens may
 * produce anything). Pure functions, no ncurses. */
#ifndef TOKSCOPE_UI_UTF8_H
#define TOKSCOPE_UI_UTF8_H

#include <stdbool.h>
#include <stddef.h>

/* True when s[0..n) is well-formed UTF-8 (no overlongs, surrogates or code
 * points above U+10FFFF). */
bool utf8_valid(const char *s, size_t n);
/* A malloc'd, NUL-terminated copy of s[0..n) in which every byte that does
 * not start a well-formed sequence is replaced by U+FFFD (so a truncated
 * sequence gives one U+FFFD per byte). *out_len (may be NULL) gets its
 * length. NULL when out of memory. */
char *utf8_sanitize(const char *s, size_t n, size_t *out_len);

#endif
