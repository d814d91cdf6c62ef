/* UTF-8 aware word wrapping and display widths (wcwidth). Pure functions:
 * no ncurses, so the wrapping rules are unit-tested on their own. */
#ifndef TOKSCOPE_UI_WRAP_H
#define TOKSCOPE_UI_WRAP_H

#include <stddef.h>
#include <stdint.h>

typedef struct wrap_line {
    size_t start; /* byte offset of the line in the text */
    size_t len;   /* bytes, without the '\n' that ended it */
    int width;    /* display columns */
} wrap_line;

/* Decodes one code point at s[0..n); returns the bytes consumed (>= 1 when
 * n > 0). Invalid or truncated sequences give U+FFFD and consume one byte. */
size_t wrap_utf8_decode(const char *s, size_t n, uint32_t *cp);
/* Encodes cp into out[4]; returns its length. */
size_t wrap_utf8_encode(uint32_t cp, char *out);
/* Display columns of a code point: 2 for wide (CJK, most emoji), 0 for
 * combining marks and zero-width characters, 0 for control characters except
 * tab (1, drawn as a space), 1 for anything wcwidth does not know. */
int wrap_cp_width(uint32_t cp);
/* Columns of a UTF-8 string. */
int wrap_str_width(const char *s, size_t n);
/* Bytes of the longest prefix of s that fits in `cols` columns (zero-width
 * characters following the last included character are kept with it). */
size_t wrap_fit(const char *s, size_t n, int cols, int *width_out);

/* Wraps s[0..n) into lines of at most `width` columns. Breaks after spaces
 * when it can; words longer than a line are broken at the column; a wide
 * character never straddles the edge; combining marks stay with their base;
 * '\n' ends a line. Always produces at least one line. Returns the number of
 * lines and stores the first `cap` of them in out (out may be NULL). */
size_t wrap_text(const char *s, size_t n, int width, wrap_line *out, size_t cap);

/* Writes a visible form of a token piece into out: \n \t \r \\ \xNN for
 * control bytes and invalid UTF-8, everything else as is. Returns out. */
char *wrap_escape(const char *s, size_t n, char *out, size_t cap);

#endif
