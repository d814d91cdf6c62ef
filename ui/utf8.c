/* UTF-8 validation and repair, on wrap_utf8_decode's strict decoder. */
#include "utf8.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "wrap.h"

/* The decoder returns U+FFFD for bad input too; a real U+FFFD is 3 bytes. */
static bool bad_at(const char *s, size_t n, size_t *len)
{
    uint32_t cp;
    *len = wrap_utf8_decode(s, n, &cp);
    return cp == 0xFFFD && *len == 1;
}

/* Bytes of s[0..n) that are ASCII, from the start (the common case, fast). */
static size_t ascii_run(const char *s, size_t n)
{
    size_t i = 0;
    while (i < n && (unsigned char)s[i] < 0x80)
        i++;
    return i;
}

/* Ill-formed sequences in s[0..n). */
static size_t count_bad(const char *s, size_t n)
{
    size_t bad = 0;
    for (size_t i = 0, l; i < n; i += l) {
        size_t a = ascii_run(s + i, n - i);
        if (a) {
            l = a;
            continue;
        }
        bad += bad_at(s + i, n - i, &l);
    }
    return bad;
}

bool utf8_valid(const char *s, size_t n)
{
    return count_bad(s, n) == 0;
}

char *utf8_sanitize(const char *s, size_t n, size_t *out_len)
{
    size_t bad = count_bad(s, n);
    char *out = malloc(n + 2 * bad + 1); /* each bad byte grows by two */
    if (!out)
        return NULL;
    size_t o = 0;
    if (!bad) {
        memcpy(out, s, n);
        o = n;
    }
    for (size_t i = bad ? 0 : n, l; i < n; i += l) {
        if (bad_at(s + i, n - i, &l)) {
            memcpy(out + o, "\xEF\xBF\xBD", 3);
            o += 3;
        } else {
            memcpy(out + o, s + i, l);
            o += l;
        }
    }
    out[o] = 0;
    if (out_len)
        *out_len = o;
    return out;
}
