/* Unicode helpers: see unicode.h. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "tokenizer/unicode.h"

#define UNICODE_MAX_CPT 0x110000

static uint8_t *g_flags;        /* one byte per codepoint */
static char g_byte_utf8[256][3]; /* GPT-2 byte -> UTF-8 (NUL-terminated) */
static uint8_t g_byte_len[256];
static int16_t g_cpt_byte[324]; /* codepoint (< 324) -> byte, -1 none */
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void unicode_init(void)
{
    g_flags = malloc(UNICODE_MAX_CPT);
    if (g_flags) {
        for (size_t i = 0; i < unicode_n_ranges; i++) {
            uint32_t a = unicode_range_starts[i];
            uint32_t b = i + 1 < unicode_n_ranges ? unicode_range_starts[i + 1] : UNICODE_MAX_CPT;
            memset(g_flags + a, unicode_range_cats[i], b - a);
        }
        for (size_t i = 0; i < unicode_n_whitespace; i++)
            g_flags[unicode_whitespace[i]] |= UNICODE_FLAG_WHITESPACE;
    }
    /* printable bytes map to themselves, the other 68 to U+0100.. in order */
    for (int i = 0; i < 324; i++)
        g_cpt_byte[i] = -1;
    int n = 0;
    for (int b = 0; b < 256; b++) {
        int keep = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
        uint32_t cpt = keep ? (uint32_t)b : (uint32_t)(256 + n++);
        char tmp[4];
        int l = unicode_encode(cpt, tmp);
        memcpy(g_byte_utf8[b], tmp, (size_t)l);
        g_byte_utf8[b][l] = 0;
        g_byte_len[b] = (uint8_t)l;
        g_cpt_byte[cpt] = (int16_t)b;
    }
}

static void unicode_ensure(void) { pthread_once(&g_once, unicode_init); }

uint8_t unicode_flags(uint32_t cpt)
{
    if (cpt >= UNICODE_MAX_CPT)
        return 0;
    unicode_ensure();
    if (g_flags)
        return g_flags[cpt];
    /* allocation failed at init: binary search the ranges */
    size_t lo = 0, hi = unicode_n_ranges;
    while (hi - lo > 1) {
        size_t mid = (lo + hi) / 2;
        if (unicode_range_starts[mid] <= cpt)
            lo = mid;
        else
            hi = mid;
    }
    uint8_t f = unicode_range_cats[lo];
    for (size_t i = 0; i < unicode_n_whitespace; i++)
        if (unicode_whitespace[i] == cpt)
            f |= UNICODE_FLAG_WHITESPACE;
    return f;
}

size_t unicode_len_utf8(uint8_t c)
{
    static const uint8_t lookup[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
    return lookup[c >> 4];
}

uint32_t unicode_decode(const char *str, size_t len, size_t *off)
{
    const uint8_t *s = (const uint8_t *)str;
    size_t o = *off;
    uint8_t c = s[o];
    if (!(c & 0x80)) {
        *off = o + 1;
        return c;
    }
    if ((c & 0x40)) {
        if (!(c & 0x20)) {
            if (o + 1 < len && (s[o + 1] & 0xC0) == 0x80) {
                *off = o + 2;
                return ((uint32_t)(c & 0x1F) << 6) | (s[o + 1] & 0x3F);
            }
        } else if (!(c & 0x10)) {
            if (o + 2 < len && (s[o + 1] & 0xC0) == 0x80 && (s[o + 2] & 0xC0) == 0x80) {
                *off = o + 3;
                return ((uint32_t)(c & 0x0F) << 12) | ((uint32_t)(s[o + 1] & 0x3F) << 6) | (s[o + 2] & 0x3F);
            }
        } else if (!(c & 0x08)) {
            if (o + 3 < len && (s[o + 1] & 0xC0) == 0x80 && (s[o + 2] & 0xC0) == 0x80 &&
                (s[o + 3] & 0xC0) == 0x80) {
                *off = o + 4;
                return ((uint32_t)(c & 0x07) << 18) | ((uint32_t)(s[o + 1] & 0x3F) << 12) |
                       ((uint32_t)(s[o + 2] & 0x3F) << 6) | (s[o + 3] & 0x3F);
            }
        }
    }
    *off = o + 1;
    return 0xFFFD;
}

uint32_t *unicode_decode_all(const char *s, size_t len, size_t *n)
{
    uint32_t *out = malloc((len ? len : 1) * sizeof *out);
    size_t k = 0, off = 0;
    if (!out) {
        *n = 0;
        return NULL;
    }
    while (off < len)
        out[k++] = unicode_decode(s, len, &off);
    *n = k;
    return out;
}

int unicode_encode(uint32_t cpt, char out[4])
{
    if (cpt <= 0x7F) {
        out[0] = (char)cpt;
        return 1;
    }
    if (cpt <= 0x7FF) {
        out[0] = (char)(0xC0 | (cpt >> 6));
        out[1] = (char)(0x80 | (cpt & 0x3F));
        return 2;
    }
    if (cpt > 0x10FFFF)
        cpt = 0xFFFD;
    if (cpt <= 0xFFFF) {
        out[0] = (char)(0xE0 | (cpt >> 12));
        out[1] = (char)(0x80 | ((cpt >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cpt & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | (cpt >> 18));
    out[1] = (char)(0x80 | ((cpt >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((cpt >> 6) & 0x3F));
    out[3] = (char)(0x80 | (cpt & 0x3F));
    return 4;
}

const char *unicode_byte_to_utf8(uint8_t b, int *len)
{
    unicode_ensure();
    if (len)
        *len = g_byte_len[b];
    return g_byte_utf8[b];
}

int unicode_cpt_to_byte(uint32_t cpt)
{
    unicode_ensure();
    return cpt < 324 ? g_cpt_byte[cpt] : -1;
}
