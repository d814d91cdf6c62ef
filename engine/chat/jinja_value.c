/* Jinja values: arena, constructors, Python-compatible equality, ordering,
 * str()/repr() and float formatting. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chat/jinja.h"

/* ---- arena ---- */
struct jarena_block {
    jarena_block *next;
    size_t used, cap;
    _Alignas(16) unsigned char data[];
};

void *jarena_alloc(jarena *a, size_t n)
{
    n = (n + 15) & ~(size_t)15;
    if (a->limit && a->used_total + n > a->limit) {
        if (a->on_oom)
            a->on_oom(a->ud);
        return NULL;
    }
    jarena_block *b = a->head;
    if (!b || b->cap - b->used < n) {
        size_t cap = n > 65536 ? n : 65536;
        b = malloc(sizeof *b + cap);
        if (!b) {
            if (a->on_oom)
                a->on_oom(a->ud);
            return NULL;
        }
        b->used = 0;
        b->cap = cap;
        b->next = a->head;
        a->head = b;
    }
    void *p = b->data + b->used;
    b->used += n;
    a->used_total += n;
    memset(p, 0, n);
    return p;
}

void jarena_free(jarena *a)
{
    jarena_block *b = a->head;
    while (b) {
        jarena_block *nx = b->next;
        free(b);
        b = nx;
    }
    a->head = NULL;
    a->used_total = 0;
}

char *jarena_strndup(jarena *a, const char *s, size_t n)
{
    char *p = jarena_alloc(a, n + 1);
    if (!p)
        return NULL;
    memcpy(p, s, n);
    p[n] = 0;
    return p;
}

/* ---- output buffers ---- */
void jbuf_put(jctx *x, jbuf *b, const char *s, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        if (b->len + n > x->lim.max_output)
            jx_fail(x, JINJA_ERR_LIMIT, "output exceeds %zu bytes", x->lim.max_output);
        size_t cap = b->cap ? b->cap * 2 : 256;
        while (cap < b->len + n + 1)
            cap *= 2;
        char *np = jarena_alloc(&x->arena, cap);
        if (b->len)
            memcpy(np, b->p, b->len);
        b->p = np;
        b->cap = cap;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = 0;
}

void jbuf_puts(jctx *x, jbuf *b, const char *s) { jbuf_put(x, b, s, strlen(s)); }

/* ---- constructors ---- */
jv jv_undef(const char *hint)
{
    jv v = {.t = JV_UNDEF};
    v.u.undef_hint = hint;
    return v;
}
jv jv_none(void) { return (jv){.t = JV_NONE}; }
jv jv_bool(bool b)
{
    jv v = {.t = JV_BOOL};
    v.u.b = b;
    return v;
}
jv jv_int(int64_t i)
{
    jv v = {.t = JV_INT};
    v.u.i = i;
    return v;
}
jv jv_float(double f)
{
    jv v = {.t = JV_FLOAT};
    v.u.f = f;
    return v;
}
jv jv_strn(jctx *x, const char *s, size_t n)
{
    jv v = {.t = JV_STR};
    v.u.s = jarena_alloc(&x->arena, sizeof(jstr));
    v.u.s->p = jarena_strndup(&x->arena, s, n);
    v.u.s->len = n;
    return v;
}
jv jv_str(jctx *x, const char *s) { return jv_strn(x, s, strlen(s)); }
jv jv_list(jctx *x, size_t cap)
{
    jv v = {.t = JV_LIST};
    v.u.l = jarena_alloc(&x->arena, sizeof(jlist));
    if (cap) {
        v.u.l->v = jarena_alloc(&x->arena, cap * sizeof(jv));
        v.u.l->cap = cap;
    }
    return v;
}
jv jv_dict(jctx *x)
{
    jv v = {.t = JV_DICT};
    v.u.d = jarena_alloc(&x->arena, sizeof(jdict));
    return v;
}

void jlist_push(jctx *x, jlist *l, jv v)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 8;
        jv *nv = jarena_alloc(&x->arena, cap * sizeof(jv));
        if (l->n)
            memcpy(nv, l->v, l->n * sizeof(jv));
        l->v = nv;
        l->cap = cap;
    }
    l->v[l->n++] = v;
}

jv *jdict_find(const jdict *d, const char *key, size_t keylen)
{
    for (size_t i = 0; i < d->n; i++)
        if (d->k[i].t == JV_STR && d->k[i].u.s->len == keylen && !memcmp(d->k[i].u.s->p, key, keylen))
            return &d->v[i];
    return NULL;
}

jv *jdict_find_v(const jdict *d, jv key)
{
    for (size_t i = 0; i < d->n; i++)
        if (jv_equal(d->k[i], key))
            return &d->v[i];
    return NULL;
}

void jdict_set(jctx *x, jdict *d, jv key, jv val)
{
    jv *p = jdict_find_v(d, key);
    if (p) {
        *p = val;
        return;
    }
    jdict_append(x, d, key, val);
}

void jdict_append(jctx *x, jdict *d, jv key, jv val)
{
    if (d->n == d->cap) {
        size_t cap = d->cap ? d->cap * 2 : 8;
        jv *nk = jarena_alloc(&x->arena, cap * sizeof(jv));
        jv *nv = jarena_alloc(&x->arena, cap * sizeof(jv));
        if (d->n) {
            memcpy(nk, d->k, d->n * sizeof(jv));
            memcpy(nv, d->v, d->n * sizeof(jv));
        }
        d->k = nk;
        d->v = nv;
        d->cap = cap;
    }
    d->k[d->n] = key;
    d->v[d->n] = val;
    d->n++;
}

void jdict_set_str(jctx *x, jdict *d, const char *key, jv val) { jdict_set(x, d, jv_str(x, key), val); }

/* ---- truth, equality, ordering ---- */
bool jv_is_str(jv v) { return v.t == JV_STR; }

bool jv_truthy(jv v)
{
    switch (v.t) {
    case JV_UNDEF:
    case JV_NONE:
        return false;
    case JV_BOOL:
        return v.u.b;
    case JV_INT:
        return v.u.i != 0;
    case JV_FLOAT:
        return v.u.f != 0.0;
    case JV_STR:
        return v.u.s->len != 0;
    case JV_LIST:
        return v.u.l->n != 0;
    case JV_DICT:
        return v.u.d->n != 0;
    default:
        return true;
    }
}

static bool is_num(jv v) { return v.t == JV_INT || v.t == JV_FLOAT || v.t == JV_BOOL; }
static double num_f(jv v) { return v.t == JV_FLOAT ? v.u.f : v.t == JV_INT ? (double)v.u.i : (double)v.u.b; }
static int64_t num_i(jv v) { return v.t == JV_INT ? v.u.i : v.t == JV_BOOL ? (int64_t)v.u.b : 0; }

#define MAX_NEST 1000 /* nesting of lists/dicts walked recursively (stack safety) */

static bool eq_rec(jv a, jv b, int depth);
bool jv_equal(jv a, jv b) { return eq_rec(a, b, 0); }

static bool eq_rec(jv a, jv b, int depth)
{
    if (depth > MAX_NEST)
        return false;
    if (is_num(a) && is_num(b)) {
        if (a.t == JV_FLOAT || b.t == JV_FLOAT)
            return num_f(a) == num_f(b);
        return num_i(a) == num_i(b);
    }
    if (a.t != b.t)
        return false;
    switch (a.t) {
    case JV_UNDEF:
    case JV_NONE:
        return true;
    case JV_STR:
        return a.u.s->len == b.u.s->len && !memcmp(a.u.s->p, b.u.s->p, a.u.s->len);
    case JV_LIST:
        if (a.u.l->n != b.u.l->n)
            return false;
        for (size_t i = 0; i < a.u.l->n; i++)
            if (!eq_rec(a.u.l->v[i], b.u.l->v[i], depth + 1))
                return false;
        return true;
    case JV_DICT:
        if (a.u.d->n != b.u.d->n)
            return false;
        for (size_t i = 0; i < a.u.d->n; i++) {
            jv *o = jdict_find_v(b.u.d, a.u.d->k[i]);
            if (!o || !eq_rec(a.u.d->v[i], *o, depth + 1))
                return false;
        }
        return true;
    case JV_NS:
        return a.u.d == b.u.d;
    case JV_MACRO:
        return a.u.m == b.u.m;
    case JV_FUNC:
        return a.u.fn == b.u.fn && a.bound == b.bound;
    }
    return false;
}

static int cmp_rec(jctx *x, jv a, jv b, int depth);
int jv_compare(jctx *x, jv a, jv b) { return cmp_rec(x, a, b, 0); }

static int cmp_rec(jctx *x, jv a, jv b, int depth)
{
    if (depth > MAX_NEST)
        jx_fail(x, JINJA_ERR_LIMIT, "comparison nested too deeply");
    if (is_num(a) && is_num(b)) {
        if (a.t == JV_FLOAT || b.t == JV_FLOAT) {
            double fa = num_f(a), fb = num_f(b);
            return fa < fb ? -1 : fa > fb;
        }
        int64_t ia = num_i(a), ib = num_i(b);
        return ia < ib ? -1 : ia > ib;
    }
    if (a.t == JV_STR && b.t == JV_STR) {
        size_t n = a.u.s->len < b.u.s->len ? a.u.s->len : b.u.s->len;
        int c = memcmp(a.u.s->p, b.u.s->p, n); /* UTF-8 byte order == code point order */
        if (c)
            return c < 0 ? -1 : 1;
        return a.u.s->len < b.u.s->len ? -1 : a.u.s->len > b.u.s->len;
    }
    if (a.t == JV_LIST && b.t == JV_LIST) {
        size_t n = a.u.l->n < b.u.l->n ? a.u.l->n : b.u.l->n;
        for (size_t i = 0; i < n; i++) {
            if (jv_equal(a.u.l->v[i], b.u.l->v[i]))
                continue;
            return cmp_rec(x, a.u.l->v[i], b.u.l->v[i], depth + 1);
        }
        return a.u.l->n < b.u.l->n ? -1 : a.u.l->n > b.u.l->n;
    }
    jx_fail(x, JINJA_ERR_RUNTIME, "'<' not supported between instances of '%s' and '%s'", jv_type_name(a),
            jv_type_name(b));
}

const char *jv_type_name(jv v)
{
    switch (v.t) {
    case JV_UNDEF:
        return "Undefined";
    case JV_NONE:
        return "NoneType";
    case JV_BOOL:
        return "bool";
    case JV_INT:
        return "int";
    case JV_FLOAT:
        return "float";
    case JV_STR:
        return "str";
    case JV_LIST:
        return "list";
    case JV_DICT:
        return "dict";
    case JV_NS:
        return "Namespace";
    case JV_MACRO:
        return "Macro";
    default:
        return "function";
    }
}

size_t utf8_count(const char *s, size_t n)
{
    size_t c = 0;
    for (size_t i = 0; i < n; i++)
        if (((unsigned char)s[i] & 0xC0) != 0x80)
            c++;
    return c;
}

/* ---- float formatting like Python's repr(float) ---- */
void jv_fmt_float(double f, char *buf, size_t n)
{
    if (isnan(f)) {
        snprintf(buf, n, "nan");
        return;
    }
    if (isinf(f)) {
        snprintf(buf, n, f < 0 ? "-inf" : "inf");
        return;
    }
    /* shortest round-tripping digits */
    char tmp[64];
    int prec;
    for (prec = 1; prec <= 17; prec++) {
        snprintf(tmp, sizeof tmp, "%.*e", prec - 1, f);
        if (strtod(tmp, NULL) == f)
            break;
    }
    if (prec > 17)
        prec = 17;
    snprintf(tmp, sizeof tmp, "%.*e", prec - 1, f);
    /* tmp: [-]d[.ddd]e[+-]XX */
    const char *p = tmp;
    bool neg = false;
    if (*p == '-') {
        neg = true;
        p++;
    }
    char digits[32];
    int nd = 0;
    while (*p && *p != 'e') {
        if (*p != '.')
            digits[nd++] = *p;
        p++;
    }
    digits[nd] = 0;
    int exp = atoi(p + 1);
    while (nd > 1 && digits[nd - 1] == '0')
        digits[--nd] = 0;
    char out[80];
    int o = 0;
    if (neg)
        out[o++] = '-';
    if (exp >= -5 + 1 && exp < 16) {
        if (exp < 0) {
            out[o++] = '0';
            out[o++] = '.';
            for (int i = 0; i < -exp - 1; i++)
                out[o++] = '0';
            for (int i = 0; i < nd; i++)
                out[o++] = digits[i];
        } else {
            for (int i = 0; i <= exp; i++)
                out[o++] = i < nd ? digits[i] : '0';
            out[o++] = '.';
            if (nd > exp + 1)
                for (int i = exp + 1; i < nd; i++)
                    out[o++] = digits[i];
            else
                out[o++] = '0';
        }
        out[o] = 0;
    } else {
        out[o++] = digits[0];
        if (nd > 1) {
            out[o++] = '.';
            for (int i = 1; i < nd; i++)
                out[o++] = digits[i];
        }
        snprintf(out + o, sizeof out - o, "e%c%02d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
    }
    snprintf(buf, n, "%s", out);
}

/* ---- str() and repr() ---- */
static void repr_str(jctx *x, jbuf *b, const jstr *s)
{
    bool has_sq = memchr(s->p, '\'', s->len) != NULL, has_dq = memchr(s->p, '"', s->len) != NULL;
    char q = has_sq && !has_dq ? '"' : '\'';
    jbuf_put(x, b, &q, 1);
    for (size_t i = 0; i < s->len; i++) {
        unsigned char c = (unsigned char)s->p[i];
        char e[8];
        if (c == '\\')
            jbuf_puts(x, b, "\\\\");
        else if (c == (unsigned char)q)
            jbuf_put(x, b, q == '\'' ? "\\'" : "\\\"", 2);
        else if (c == '\n')
            jbuf_puts(x, b, "\\n");
        else if (c == '\r')
            jbuf_puts(x, b, "\\r");
        else if (c == '\t')
            jbuf_puts(x, b, "\\t");
        else if (c < 0x20 || c == 0x7f) {
            snprintf(e, sizeof e, "\\x%02x", c);
            jbuf_puts(x, b, e);
        } else
            jbuf_put(x, b, (const char *)&s->p[i], 1);
    }
    jbuf_put(x, b, &q, 1);
}

static void str_into(jctx *x, jbuf *b, jv v, bool repr, int depth)
{
    char tmp[64];
    if (depth > MAX_NEST)
        jx_fail(x, JINJA_ERR_LIMIT, "object nested too deeply to print");
    switch (v.t) {
    case JV_UNDEF:
        if (repr)
            jbuf_puts(x, b, "Undefined");
        return;
    case JV_NONE:
        jbuf_puts(x, b, "None");
        return;
    case JV_BOOL:
        jbuf_puts(x, b, v.u.b ? "True" : "False");
        return;
    case JV_INT:
        snprintf(tmp, sizeof tmp, "%lld", (long long)v.u.i);
        jbuf_puts(x, b, tmp);
        return;
    case JV_FLOAT:
        jv_fmt_float(v.u.f, tmp, sizeof tmp);
        jbuf_puts(x, b, tmp);
        return;
    case JV_STR:
        if (repr)
            repr_str(x, b, v.u.s);
        else
            jbuf_put(x, b, v.u.s->p, v.u.s->len);
        return;
    case JV_LIST:
        jbuf_puts(x, b, v.u.l->tuple ? "(" : "[");
        for (size_t i = 0; i < v.u.l->n; i++) {
            if (i)
                jbuf_puts(x, b, ", ");
            str_into(x, b, v.u.l->v[i], true, depth + 1);
        }
        if (v.u.l->tuple && v.u.l->n == 1)
            jbuf_puts(x, b, ",");
        jbuf_puts(x, b, v.u.l->tuple ? ")" : "]");
        return;
    case JV_DICT:
        jbuf_puts(x, b, "{");
        for (size_t i = 0; i < v.u.d->n; i++) {
            if (i)
                jbuf_puts(x, b, ", ");
            str_into(x, b, v.u.d->k[i], true, depth + 1);
            jbuf_puts(x, b, ": ");
            str_into(x, b, v.u.d->v[i], true, depth + 1);
        }
        jbuf_puts(x, b, "}");
        return;
    case JV_NS:
        jbuf_puts(x, b, "<Namespace>");
        return;
    case JV_MACRO:
        jbuf_puts(x, b, "<Macro>");
        return;
    default:
        jbuf_puts(x, b, "<function>");
        return;
    }
}

jstr *jv_to_str(jctx *x, jv v)
{
    if (v.t == JV_STR)
        return v.u.s;
    jbuf b = {0};
    str_into(x, &b, v, false, 0);
    jstr *s = jarena_alloc(&x->arena, sizeof *s);
    s->p = b.p ? b.p : jarena_strndup(&x->arena, "", 0);
    s->len = b.len;
    return s;
}

void jv_repr(jctx *x, jbuf *b, jv v) { str_into(x, b, v, true, 0); }

/* ---- JSON like Python's json.dumps ---- */
typedef struct json_opts {
    int indent; /* -1: none */
    const char *item_sep, *key_sep;
    bool ensure_ascii, sort_keys;
} json_opts;

static void json_str(jctx *x, jbuf *b, const char *s, size_t n, bool ensure_ascii)
{
    jbuf_puts(x, b, "\"");
    size_t run = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        const char *e = NULL;
        char tmp[16];
        size_t adv = 1;
        if (c == '"')
            e = "\\\"";
        else if (c == '\\')
            e = "\\\\";
        else if (c == '\n')
            e = "\\n";
        else if (c == '\r')
            e = "\\r";
        else if (c == '\t')
            e = "\\t";
        else if (c == '\b')
            e = "\\b";
        else if (c == '\f')
            e = "\\f";
        else if (c < 0x20 || (ensure_ascii && c == 0x7f)) {
            snprintf(tmp, sizeof tmp, "\\u%04x", c);
            e = tmp;
        } else if (ensure_ascii && c >= 0x80) {
            /* decode one UTF-8 sequence; invalid bytes pass as U+FFFD like errors="replace" would */
            uint32_t cp = 0xFFFD;
            size_t len = (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 1;
            if (len > 1 && i + len <= n) {
                uint32_t v = len == 2 ? (c & 0x1Fu) : len == 3 ? (c & 0x0Fu) : (c & 0x07u);
                bool ok = true;
                for (size_t k = 1; k < len; k++) {
                    unsigned char d = (unsigned char)s[i + k];
                    ok &= (d & 0xC0) == 0x80;
                    v = (v << 6) | (d & 0x3Fu);
                }
                if (ok) {
                    cp = v;
                    adv = len;
                }
            }
            if (cp >= 0x10000) {
                cp -= 0x10000;
                snprintf(tmp, sizeof tmp, "\\u%04x\\u%04x", 0xD800 + (cp >> 10), 0xDC00 + (cp & 0x3FF));
            } else
                snprintf(tmp, sizeof tmp, "\\u%04x", cp);
            e = tmp;
        }
        if (e) {
            jbuf_put(x, b, s + i - run, run);
            run = 0;
            jbuf_puts(x, b, e);
            i += adv - 1;
        } else
            run++;
    }
    jbuf_put(x, b, s + n - run, run);
    jbuf_puts(x, b, "\"");
}

static void json_nl(jctx *x, jbuf *b, int indent, int level)
{
    jbuf_puts(x, b, "\n");
    for (int i = 0; i < indent * level; i++)
        jbuf_puts(x, b, " ");
}

static void json_rec(jctx *x, jbuf *b, jv v, int level, const json_opts *o)
{
    char tmp[64];
    if (level > 200)
        jx_fail(x, JINJA_ERR_LIMIT, "tojson: nesting too deep");
    switch (v.t) {
    case JV_NONE:
        jbuf_puts(x, b, "null");
        return;
    case JV_BOOL:
        jbuf_puts(x, b, v.u.b ? "true" : "false");
        return;
    case JV_INT:
        snprintf(tmp, sizeof tmp, "%lld", (long long)v.u.i);
        jbuf_puts(x, b, tmp);
        return;
    case JV_FLOAT:
        if (isnan(v.u.f))
            jbuf_puts(x, b, "NaN");
        else if (isinf(v.u.f))
            jbuf_puts(x, b, v.u.f < 0 ? "-Infinity" : "Infinity");
        else {
            jv_fmt_float(v.u.f, tmp, sizeof tmp);
            jbuf_puts(x, b, tmp);
        }
        return;
    case JV_STR:
        json_str(x, b, v.u.s->p, v.u.s->len, o->ensure_ascii);
        return;
    case JV_LIST:
        if (!v.u.l->n) {
            jbuf_puts(x, b, "[]");
            return;
        }
        jbuf_puts(x, b, "[");
        for (size_t i = 0; i < v.u.l->n; i++) {
            if (i)
                jbuf_puts(x, b, o->item_sep);
            if (o->indent >= 0)
                json_nl(x, b, o->indent, level + 1);
            json_rec(x, b, v.u.l->v[i], level + 1, o);
        }
        if (o->indent >= 0)
            json_nl(x, b, o->indent, level);
        jbuf_puts(x, b, "]");
        return;
    case JV_DICT:
    case JV_NS: {
        size_t n = v.u.d->n;
        if (!n) {
            jbuf_puts(x, b, "{}");
            return;
        }
        size_t *order = jarena_alloc(&x->arena, n * sizeof *order);
        for (size_t i = 0; i < n; i++)
            order[i] = i;
        if (o->sort_keys) /* insertion sort: stable, dicts in templates are small */
            for (size_t i = 1; i < n; i++)
                for (size_t j = i; j > 0 && jv_compare(x, v.u.d->k[order[j - 1]], v.u.d->k[order[j]]) > 0; j--) {
                    size_t t = order[j];
                    order[j] = order[j - 1];
                    order[j - 1] = t;
                }
        jbuf_puts(x, b, "{");
        for (size_t oi = 0; oi < n; oi++) {
            size_t i = order[oi];
            if (oi)
                jbuf_puts(x, b, o->item_sep);
            if (o->indent >= 0)
                json_nl(x, b, o->indent, level + 1);
            jv k = v.u.d->k[i];
            if (k.t == JV_STR)
                json_str(x, b, k.u.s->p, k.u.s->len, o->ensure_ascii);
            else if (k.t == JV_INT || k.t == JV_FLOAT || k.t == JV_BOOL || k.t == JV_NONE) {
                /* Python converts int/float/bool/None keys to strings */
                jbuf kb = {0};
                json_opts ko = *o;
                ko.indent = -1;
                json_rec(x, &kb, k, level + 1, &ko);
                json_str(x, b, kb.p, kb.len, o->ensure_ascii);
            } else
                jx_fail(x, JINJA_ERR_RUNTIME, "keys must be str, int, float, bool or None, not %s", jv_type_name(k));
            jbuf_puts(x, b, o->key_sep);
            json_rec(x, b, v.u.d->v[i], level + 1, o);
        }
        if (o->indent >= 0)
            json_nl(x, b, o->indent, level);
        jbuf_puts(x, b, "}");
        return;
    }
    default:
        jx_fail(x, JINJA_ERR_RUNTIME, "Object of type %s is not JSON serializable", jv_type_name(v));
    }
}

void jv_json(jctx *x, jbuf *b, jv v, int indent, int level, const char *item_sep, const char *key_sep)
{
    json_opts o = {indent, item_sep, key_sep, false, false};
    json_rec(x, b, v, level, &o);
}

void jv_json_opts(jctx *x, jbuf *b, jv v, int indent, const char *item_sep, const char *key_sep, bool ensure_ascii,
                  bool sort_keys)
{
    json_opts o = {indent, item_sep, key_sep, ensure_ascii, sort_keys};
    json_rec(x, b, v, 0, &o);
}

jlist *jv_iter_list(jctx *x, jv v)
{
    switch (v.t) {
    case JV_UNDEF:
        return jv_list(x, 0).u.l;
    case JV_LIST:
        return v.u.l;
    case JV_DICT:
    case JV_NS: {
        jv l = jv_list(x, v.u.d->n);
        for (size_t i = 0; i < v.u.d->n; i++)
            jlist_push(x, l.u.l, v.u.d->k[i]);
        return l.u.l;
    }
    case JV_STR: {
        jv l = jv_list(x, v.u.s->len);
        const char *s = v.u.s->p;
        size_t n = v.u.s->len;
        for (size_t i = 0; i < n;) {
            size_t j = i + 1;
            while (j < n && ((unsigned char)s[j] & 0xC0) == 0x80)
                j++;
            jlist_push(x, l.u.l, jv_strn(x, s + i, j - i));
            i = j;
        }
        return l.u.l;
    }
    default:
        jx_fail(x, JINJA_ERR_RUNTIME, "'%s' object is not iterable", jv_type_name(v));
    }
}

int64_t jx_trunc_int(jctx *x, double f)
{
    if (!(f > -0x1p63 - 1025.0 && f < 0x1p63)) /* NaN too */
        jx_fail(x, JINJA_ERR_RUNTIME, "%g does not fit a 64-bit integer", f);
    return (int64_t)f;
}
