/* Word wrapping over UTF-8 with wcwidth column widths. */
#include "wrap.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <wchar.h>

size_t wrap_utf8_decode(const char *s, size_t n, uint32_t *cp)
{
    const unsigned char *u = (const unsigned char *)s;
    if (n == 0) {
        *cp = 0;
        return 0;
    }
    unsigned c = u[0];
    size_t len;
    uint32_t v, min;
    if (c < 0x80) {
        *cp = c;
        return 1;
    } else if ((c & 0xE0) == 0xC0) {
        len = 2, v = c & 0x1F, min = 0x80;
    } else if ((c & 0xF0) == 0xE0) {
        len = 3, v = c & 0x0F, min = 0x800;
    } else if ((c & 0xF8) == 0xF0) {
        len = 4, v = c & 0x07, min = 0x10000;
    } else {
        *cp = 0xFFFD;
        return 1;
    }
    if (len > n) {
        *cp = 0xFFFD;
        return 1;
    }
    for (size_t i = 1; i < len; i++) {
        if ((u[i] & 0xC0) != 0x80) {
            *cp = 0xFFFD;
            return 1;
        }
        v = (v << 6) | (u[i] & 0x3F);
    }
    if (v < min || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) {
        *cp = 0xFFFD;
        return 1;
    }
    *cp = v;
    return len;
}

size_t wrap_utf8_encode(uint32_t cp, char *out)
{
    unsigned char *o = (unsigned char *)out;
    if (cp < 0x80) {
        o[0] = (unsigned char)cp;
        return 1;
    } else if (cp < 0x800) {
        o[0] = (unsigned char)(0xC0 | (cp >> 6));
        o[1] = (unsigned char)(0x80 | (cp & 0x3F));
        return 2;
    } else if (cp < 0x10000) {
        o[0] = (unsigned char)(0xE0 | (cp >> 12));
        o[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
        o[2] = (unsigned char)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (unsigned char)(0xF0 | (cp >> 18));
    o[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
    o[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
    o[3] = (unsigned char)(0x80 | (cp & 0x3F));
    return 4;
}

int wrap_cp_width(uint32_t cp)
{
    if (cp == '\t')
        return 1;
    if (cp < 0x20 || (cp >= 0x7F && cp < 0xA0))
        return 0;
    if (cp == 0x200B || cp == 0x200C || cp == 0x200D || cp == 0xFE0F || cp == 0xFE0E)
        return 0;
    int w = wcwidth((wchar_t)cp);
    if (w >= 0)
        return w;
    /* Unknown to the C library (e.g. unassigned, or a non-UTF-8 locale):
     * treat the big wide blocks as wide, everything else as one column. */
    if ((cp >= 0x1100 && cp <= 0x115F) || (cp >= 0x2E80 && cp <= 0xA4CF) || (cp >= 0xAC00 && cp <= 0xD7A3) ||
        (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0xFF00 && cp <= 0xFF60) || (cp >= 0x1F300 && cp <= 0x1FAFF) ||
        (cp >= 0x20000 && cp <= 0x3FFFD))
        return 2;
    if (cp >= 0x0300 && cp <= 0x036F)
        return 0;
    return 1;
}

int wrap_str_width(const char *s, size_t n)
{
    int w = 0;
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        i += wrap_utf8_decode(s + i, n - i, &cp);
        w += wrap_cp_width(cp);
    }
    return w;
}

size_t wrap_fit(const char *s, size_t n, int cols, int *width_out)
{
    size_t i = 0;
    int w = 0;
    while (i < n) {
        uint32_t cp;
        size_t l = wrap_utf8_decode(s + i, n - i, &cp);
        int cw = wrap_cp_width(cp);
        if (w + cw > cols)
            break;
        w += cw;
        i += l;
    }
    if (width_out)
        *width_out = w;
    return i;
}

static void emit(wrap_line *out, size_t cap, size_t *count, size_t start, size_t len, int width)
{
    if (out && *count < cap)
        out[*count] = (wrap_line){start, len, width};
    (*count)++;
}

size_t wrap_text(const char *s, size_t n, int width, wrap_line *out, size_t cap)
{
    if (width < 1)
        width = 1;
    size_t count = 0;
    size_t line_start = 0;
    int line_w = 0;
    /* last break opportunity inside the current line: the byte after a space */
    size_t brk = 0;
    int brk_w = 0;
    bool have_brk = false;
    size_t i = 0;
    while (i < n) {
        uint32_t cp;
        size_t l = wrap_utf8_decode(s + i, n - i, &cp);
        if (cp == '\n') {
            emit(out, cap, &count, line_start, i - line_start, line_w);
            i += l;
            line_start = i;
            line_w = 0;
            have_brk = false;
            continue;
        }
        int cw = wrap_cp_width(cp);
        if (line_w + cw > width && cw > 0) {
            if (cp == ' ') {
                /* a space at the edge: end the line here and swallow it */
                emit(out, cap, &count, line_start, i - line_start, line_w);
                i += l;
                line_start = i;
                line_w = 0;
                have_brk = false;
                continue;
            }
            if (have_brk && brk > line_start) {
                emit(out, cap, &count, line_start, brk - line_start, brk_w);
                line_w -= brk_w;
                line_start = brk;
            } else if (i > line_start) {
                emit(out, cap, &count, line_start, i - line_start, line_w);
                line_start = i;
                line_w = 0;
            }
            have_brk = false;
            /* a character wider than the whole line still goes on a line of its own */
        }
        line_w += cw;
        i += l;
        if (cp == ' ' || cp == '\t') {
            brk = i;
            brk_w = line_w;
            have_brk = true;
        }
    }
    emit(out, cap, &count, line_start, n - line_start, line_w);
    return count;
}

char *wrap_escape(const char *s, size_t n, char *out, size_t cap)
{
    size_t o = 0;
    if (cap == 0)
        return out;
    for (size_t i = 0; i < n;) {
        char tmp[8];
        size_t tl;
        uint32_t cp;
        size_t l = wrap_utf8_decode(s + i, n - i, &cp);
        unsigned char b = (unsigned char)s[i];
        if (cp == 0xFFFD && l == 1 && b >= 0x80) {
            tl = (size_t)snprintf(tmp, sizeof tmp, "\\x%02X", b);
        } else if (cp == '\n') {
            tl = 2, tmp[0] = '\\', tmp[1] = 'n';
        } else if (cp == '\t') {
            tl = 2, tmp[0] = '\\', tmp[1] = 't';
        } else if (cp == '\r') {
            tl = 2, tmp[0] = '\\', tmp[1] = 'r';
        } else if (cp == '\\') {
            tl = 2, tmp[0] = '\\', tmp[1] = '\\';
        } else if (cp < 0x20 || cp == 0x7F) {
            tl = (size_t)snprintf(tmp, sizeof tmp, "\\x%02X", (unsigned)cp);
        } else {
            tl = l;
            memcpy(tmp, s + i, l);
        }
        if (o + tl + 1 > cap)
            break;
        memcpy(out + o, tmp, tl);
        o += tl;
        i += l;
    }
    out[o] = 0;
    return out;
}
