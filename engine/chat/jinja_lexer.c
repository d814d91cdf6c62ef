/* Jinja lexer: splits the source into data and tag tokens, applying jinja2's
 * whitespace rules (-/+ markers, trim_blocks, lstrip_blocks) to the data, and
 * tokenizes the expressions inside tags. */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chat/jinja.h"

typedef struct lexer {
    const char *s;
    size_t n, pos;
    jarena *a;
    jtoks *out;
    char *err;
    size_t errlen;
    int failed;
    size_t cur_pos; /* pos_of() cursor */
    int cur_line, cur_col;
} lexer;

/* Line and column of byte `at`, counted on from the previous query (tokens
 * come in source order) so lexing stays linear in the template size. */
static void pos_of(lexer *L, size_t at, int *line, int *col)
{
    if (at < L->cur_pos) {
        L->cur_pos = 0;
        L->cur_line = 1;
        L->cur_col = 1;
    }
    for (size_t i = L->cur_pos; i < at && i < L->n; i++) {
        if (L->s[i] == '\n') {
            L->cur_line++;
            L->cur_col = 1;
        } else
            L->cur_col++;
    }
    L->cur_pos = at;
    *line = L->cur_line;
    *col = L->cur_col;
}

static int lex_fail(lexer *L, size_t at, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int lex_fail(lexer *L, size_t at, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    int line, col;
    pos_of(L, at, &line, &col);
    snprintf(L->err, L->errlen, "%d:%d: %s", line, col, msg);
    L->failed = 1;
    return -1;
}

static jtok *push(lexer *L, int type, size_t at)
{
    if (L->out->n == L->out->cap) {
        size_t cap = L->out->cap ? L->out->cap * 2 : 256;
        jtok *nv = realloc(L->out->v, cap * sizeof(jtok));
        if (!nv)
            return NULL;
        L->out->v = nv;
        L->out->cap = cap;
    }
    jtok *t = &L->out->v[L->out->n++];
    memset(t, 0, sizeof *t);
    t->type = type;
    pos_of(L, at, &t->line, &t->col);
    return t;
}

static int push_data(lexer *L, size_t start, size_t end)
{
    if (end <= start)
        return 0;
    jtok *t = push(L, JT_DATA, start);
    if (!t)
        return lex_fail(L, start, "out of memory");
    t->s = L->s + start;
    t->len = end - start;
    return 0;
}

static const char *const OPS3[] = {NULL};
static const char *const OPS2[] = {"//", "**", "==", "!=", "<=", ">=", NULL};
static const char OPS1[] = "+-*/%~<>=()[]{},.:|";

/* Decodes a Python string literal's escapes into the arena. */
static int lex_string(lexer *L, size_t *p, jtok *t)
{
    char q = L->s[*p];
    size_t i = *p + 1, e = i;
    while (e < L->n && L->s[e] != q) /* find the end first: the buffer is sized to the literal */
        e += (L->s[e] == '\\' && e + 1 < L->n) ? 2 : 1;
    char *buf = jarena_alloc(L->a, e - i + 1);
    if (!buf)
        return lex_fail(L, *p, "out of memory");
    size_t o = 0;
    while (i < L->n && L->s[i] != q) {
        char c = L->s[i];
        if (c == '\\' && i + 1 < L->n) {
            char e = L->s[i + 1];
            i += 2;
            switch (e) {
            case 'n': buf[o++] = '\n'; break;
            case 't': buf[o++] = '\t'; break;
            case 'r': buf[o++] = '\r'; break;
            case '0': buf[o++] = '\0'; break;
            case 'a': buf[o++] = '\a'; break;
            case 'b': buf[o++] = '\b'; break;
            case 'f': buf[o++] = '\f'; break;
            case 'v': buf[o++] = '\v'; break;
            case '\\': buf[o++] = '\\'; break;
            case '\'': buf[o++] = '\''; break;
            case '"': buf[o++] = '"'; break;
            case '\n': break;
            case 'x':
            case 'u':
            case 'U': {
                int nd = e == 'x' ? 2 : e == 'u' ? 4 : 8;
                unsigned cp = 0;
                for (int k = 0; k < nd; k++, i++) {
                    if (i >= L->n || !isxdigit((unsigned char)L->s[i]))
                        return lex_fail(L, i, "bad \\%c escape in string", e);
                    char h = L->s[i];
                    cp = cp * 16 + (unsigned)(isdigit((unsigned char)h) ? h - '0' : (tolower((unsigned char)h) - 'a' + 10));
                }
                if (cp > 0x10FFFF)
                    return lex_fail(L, i, "bad code point in string");
                if (cp < 0x80)
                    buf[o++] = (char)cp;
                else if (cp < 0x800) {
                    buf[o++] = (char)(0xC0 | (cp >> 6));
                    buf[o++] = (char)(0x80 | (cp & 0x3F));
                } else if (cp < 0x10000) {
                    buf[o++] = (char)(0xE0 | (cp >> 12));
                    buf[o++] = (char)(0x80 | ((cp >> 6) & 0x3F));
                    buf[o++] = (char)(0x80 | (cp & 0x3F));
                } else {
                    buf[o++] = (char)(0xF0 | (cp >> 18));
                    buf[o++] = (char)(0x80 | ((cp >> 12) & 0x3F));
                    buf[o++] = (char)(0x80 | ((cp >> 6) & 0x3F));
                    buf[o++] = (char)(0x80 | (cp & 0x3F));
                }
                break;
            }
            default: /* Python keeps unknown escapes as written */
                buf[o++] = '\\';
                buf[o++] = e;
            }
            continue;
        }
        buf[o++] = c;
        i++;
    }
    if (i >= L->n)
        return lex_fail(L, *p, "unterminated string");
    buf[o] = 0;
    t->s = buf;
    t->len = o;
    *p = i + 1;
    return 0;
}

/* Tokenizes a tag's inside from L->pos up to its end marker (`}}` or `%}`),
 * honouring brackets so `{'a': {'b': 1}}` does not end early. Returns the
 * end marker's strip sign ('-', '+' or 0); L->pos moves past the marker. */
static int lex_tag(lexer *L, char endc, int endtype, int *sign)
{
    int depth = 0;
    size_t start = L->pos;
    for (;;) {
        size_t p = L->pos;
        while (p < L->n && (L->s[p] == ' ' || L->s[p] == '\t' || L->s[p] == '\n' || L->s[p] == '\r'))
            p++;
        L->pos = p;
        if (p >= L->n)
            return lex_fail(L, start, "unclosed tag (missing '%c}')", endc);
        const char *c = L->s + p;
        if (depth == 0) {
            if ((c[0] == '-' || c[0] == '+') && p + 2 < L->n && c[1] == endc && c[2] == '}') {
                *sign = (unsigned char)c[0];
                if (!push(L, endtype, p))
                    return lex_fail(L, p, "out of memory");
                L->pos = p + 3;
                return 0;
            }
            if (c[0] == endc && p + 1 < L->n && c[1] == '}') {
                *sign = 0;
                if (!push(L, endtype, p))
                    return lex_fail(L, p, "out of memory");
                L->pos = p + 2;
                return 0;
            }
        }
        if (isalpha((unsigned char)*c) || *c == '_') {
            size_t e = p;
            while (e < L->n && (isalnum((unsigned char)L->s[e]) || L->s[e] == '_'))
                e++;
            jtok *t = push(L, JT_NAME, p);
            if (!t)
                return lex_fail(L, p, "out of memory");
            t->s = L->s + p;
            t->len = e - p;
            L->pos = e;
            continue;
        }
        if (*c == '0' && p + 2 < L->n && strchr("xXoObB", c[1]) && isalnum((unsigned char)c[2])) {
            int base = (c[1] | 0x20) == 'x' ? 16 : (c[1] | 0x20) == 'o' ? 8 : 2;
            size_t e = p + 2;
            uint64_t v = 0;
            for (; e < L->n && (isalnum((unsigned char)L->s[e]) || L->s[e] == '_'); e++) {
                if (L->s[e] == '_')
                    continue;
                int d = isdigit((unsigned char)L->s[e]) ? L->s[e] - '0' : (tolower((unsigned char)L->s[e]) - 'a' + 10);
                if (d >= base)
                    return lex_fail(L, p, "bad digit in integer literal");
                if (v > (uint64_t)INT64_MAX / (uint64_t)base)
                    return lex_fail(L, p, "integer literal too large");
                v = v * (uint64_t)base + (uint64_t)d;
            }
            if (v > (uint64_t)INT64_MAX)
                return lex_fail(L, p, "integer literal too large");
            jtok *t = push(L, JT_INT, p);
            if (!t)
                return lex_fail(L, p, "out of memory");
            t->i = (int64_t)v;
            L->pos = e;
            continue;
        }
        if (isdigit((unsigned char)*c)) {
            size_t e = p;
            bool isf = false;
            while (e < L->n && (isdigit((unsigned char)L->s[e]) || L->s[e] == '_'))
                e++;
            if (e + 1 < L->n && L->s[e] == '.' && isdigit((unsigned char)L->s[e + 1])) {
                isf = true;
                e++;
                while (e < L->n && (isdigit((unsigned char)L->s[e]) || L->s[e] == '_'))
                    e++;
            }
            if (e < L->n && (L->s[e] == 'e' || L->s[e] == 'E')) {
                size_t f = e + 1;
                if (f < L->n && (L->s[f] == '+' || L->s[f] == '-'))
                    f++;
                if (f < L->n && isdigit((unsigned char)L->s[f])) {
                    isf = true;
                    e = f;
                    while (e < L->n && isdigit((unsigned char)L->s[e]))
                        e++;
                }
            }
            char num[128];
            size_t k = 0;
            for (size_t i = p; i < e && k + 1 < sizeof num; i++)
                if (L->s[i] != '_')
                    num[k++] = L->s[i];
            num[k] = 0;
            jtok *t = push(L, isf ? JT_FLOAT : JT_INT, p);
            if (!t)
                return lex_fail(L, p, "out of memory");
            if (isf)
                t->f = strtod(num, NULL);
            else {
                char *end;
                unsigned long long v = strtoull(num, &end, 10);
                if (v > (unsigned long long)INT64_MAX || k >= 20)
                    return lex_fail(L, p, "integer literal too large");
                t->i = (int64_t)v;
            }
            L->pos = e;
            continue;
        }
        if (*c == '\'' || *c == '"') {
            jtok *t = push(L, JT_STR, p);
            if (!t)
                return lex_fail(L, p, "out of memory");
            size_t q = p;
            if (lex_string(L, &q, t))
                return -1;
            L->pos = q;
            continue;
        }
        const char *op = NULL;
        for (int i = 0; OPS2[i]; i++)
            if (p + 1 < L->n && c[0] == OPS2[i][0] && c[1] == OPS2[i][1])
                op = OPS2[i];
        (void)OPS3;
        size_t oplen = 2;
        if (!op && strchr(OPS1, *c) && *c) {
            op = c;
            oplen = 1;
        }
        if (!op)
            return lex_fail(L, p, "unexpected character '%c'", *c);
        if (oplen == 1 && strchr("([{", *c))
            depth++;
        if (oplen == 1 && strchr(")]}", *c)) {
            if (depth == 0)
                return lex_fail(L, p, "unexpected '%c'", *c);
            depth--;
        }
        jtok *t = push(L, JT_OP, p);
        if (!t)
            return lex_fail(L, p, "out of memory");
        t->s = jarena_strndup(L->a, c, oplen);
        t->len = oplen;
        L->pos = p + oplen;
    }
}

static size_t skip_ws(const lexer *L, size_t p)
{
    while (p < L->n && isspace((unsigned char)L->s[p]))
        p++;
    return p;
}

/* After a block/comment end: `-` strips all following whitespace, none
 * (trim_blocks) strips one newline, `+` keeps everything. */
static size_t after_block_end(const lexer *L, size_t p, int sign)
{
    if (sign == '-')
        return skip_ws(L, p);
    if (sign == 0 && p < L->n && L->s[p] == '\n')
        return p + 1;
    return p;
}

/* Is `{%[-+]? raw [-+]?%}` at p? Sets the content start and end-sign. */
static bool match_word_tag(const lexer *L, size_t p, const char *word, size_t *end, int *endsign, int *beginsign)
{
    if (p + 2 > L->n || L->s[p] != '{' || L->s[p + 1] != '%')
        return false;
    p += 2;
    *beginsign = 0;
    if (p < L->n && (L->s[p] == '-' || L->s[p] == '+'))
        *beginsign = (unsigned char)L->s[p++];
    p = skip_ws(L, p);
    size_t wl = strlen(word);
    if (p + wl > L->n || memcmp(L->s + p, word, wl) != 0)
        return false;
    p += wl;
    if (p < L->n && (isalnum((unsigned char)L->s[p]) || L->s[p] == '_'))
        return false;
    p = skip_ws(L, p);
    *endsign = 0;
    if (p < L->n && (L->s[p] == '-' || L->s[p] == '+'))
        *endsign = (unsigned char)L->s[p++];
    if (p + 2 > L->n || L->s[p] != '%' || L->s[p + 1] != '}')
        return false;
    *end = p + 2;
    return true;
}

int jinja_lex(const char *src, jarena *a, jtoks *out, char *err, size_t errlen)
{
    lexer L = {.s = src, .n = strlen(src), .a = a, .out = out, .err = err, .errlen = errlen, .cur_line = 1, .cur_col = 1};
    /* keep_trailing_newline=False: one trailing newline of the source goes */
    if (L.n && L.s[L.n - 1] == '\n')
        L.n--;
    size_t pos = 0;
    while (pos < L.n) {
        /* next tag opener */
        size_t t = pos;
        int kind = 0;
        for (; t + 1 < L.n; t++) {
            if (L.s[t] == '{' && (L.s[t + 1] == '{' || L.s[t + 1] == '%' || L.s[t + 1] == '#')) {
                kind = (unsigned char)L.s[t + 1];
                break;
            }
        }
        if (!kind) {
            if (push_data(&L, pos, L.n))
                return -1;
            break;
        }
        size_t p = t + 2;
        int sign = 0;
        if (p < L.n && (L.s[p] == '-' || L.s[p] == '+')) {
            sign = (unsigned char)L.s[p];
            p++;
        }
        /* whitespace control on the data before the tag */
        size_t dend = t;
        if (sign == '-') {
            while (dend > pos && isspace((unsigned char)L.s[dend - 1]))
                dend--;
        } else if (sign != '+' && kind != '{') {
            size_t l = dend;
            while (l > pos && (L.s[l - 1] == ' ' || L.s[l - 1] == '\t'))
                l--;
            bool line_start = (l == 0) || L.s[l - 1] == '\n';
            if (line_start)
                dend = l;
        }
        /* raw blocks */
        size_t rend;
        int rsign, bsign;
        if (kind == '%' && match_word_tag(&L, t, "raw", &rend, &rsign, &bsign)) {
            if (push_data(&L, pos, dend))
                return -1;
            size_t c0 = rend;
            if (rsign == '-')
                c0 = skip_ws(&L, c0);
            size_t q = c0;
            size_t eend = 0;
            int esign = 0, ebsign = 0;
            for (; q + 1 < L.n; q++)
                if (match_word_tag(&L, q, "endraw", &eend, &esign, &ebsign))
                    break;
            if (q + 1 >= L.n)
                return lex_fail(&L, t, "missing {%% endraw %%}");
            size_t c1 = q;
            if (ebsign == '-')
                while (c1 > c0 && isspace((unsigned char)L.s[c1 - 1]))
                    c1--;
            else if (ebsign != '+') { /* lstrip_blocks before endraw */
                size_t l = c1;
                while (l > c0 && (L.s[l - 1] == ' ' || L.s[l - 1] == '\t'))
                    l--;
                if (l == 0 || L.s[l - 1] == '\n')
                    c1 = l;
            }
            if (push_data(&L, c0, c1))
                return -1;
            pos = after_block_end(&L, eend, esign);
            continue;
        }
        if (push_data(&L, pos, dend))
            return -1;
        if (kind == '#') {
            size_t q = p;
            while (q + 1 < L.n && !(L.s[q] == '#' && L.s[q + 1] == '}'))
                q++;
            if (q + 1 >= L.n)
                return lex_fail(&L, t, "unclosed comment");
            int esign = (q > p && (L.s[q - 1] == '-' || L.s[q - 1] == '+')) ? (unsigned char)L.s[q - 1] : 0;
            pos = after_block_end(&L, q + 2, esign);
            continue;
        }
        if (!push(&L, kind == '{' ? JT_VAR_BEGIN : JT_BLOCK_BEGIN, t))
            return lex_fail(&L, t, "out of memory");
        L.pos = p;
        int esign = 0;
        if (lex_tag(&L, kind == '{' ? '}' : '%', kind == '{' ? JT_VAR_END : JT_BLOCK_END, &esign))
            return -1;
        if (kind == '{')
            pos = esign == '-' ? skip_ws(&L, L.pos) : L.pos;
        else
            pos = after_block_end(&L, L.pos, esign);
    }
    if (!push(&L, JT_EOF, L.n))
        return lex_fail(&L, L.n, "out of memory");
    return 0;
}
