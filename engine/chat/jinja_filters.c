/* Jinja filters and tests (the subset chat templates use, with jinja2's
 * semantics; tojson is transformers' override around json.dumps). */
#include <ctype.h>
#include <locale.h>
#include <pthread.h>
#include <wctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chat/jinja.h"

jv jx_kwarg(const char **kwn, jv *kwv, int nkw, const char *name)
{
    for (int i = 0; i < nkw; i++)
        if (!strcmp(kwn[i], name))
            return kwv[i];
    return jv_undef(NULL);
}

/* positional i, else keyword `name`, else undefined */
static jv arg(jv *args, int nargs, const char **kwn, jv *kwv, int nkw, int i, const char *name)
{
    if (i < nargs)
        return args[i];
    return jx_kwarg(kwn, kwv, nkw, name);
}

static bool given(jv v) { return v.t != JV_UNDEF; }

static int64_t want_int(jctx *x, jv v, const char *what)
{
    if (v.t == JV_INT)
        return v.u.i;
    if (v.t == JV_BOOL)
        return v.u.b;
    if (v.t == JV_FLOAT)
        return jx_trunc_int(x, v.u.f);
    jx_fail(x, JINJA_ERR_RUNTIME, "%s must be an integer, not %s", what, jv_type_name(v));
}

/* ---- Python-like whitespace (ASCII plus common Unicode spaces) ---- */
static size_t ws_at(const char *s, size_t n, size_t i)
{
    unsigned char c = (unsigned char)s[i];
    if (c == ' ' || (c >= '\t' && c <= '\r') || (c >= 0x1c && c <= 0x1f))
        return 1;
    if (c == 0xC2 && i + 1 < n && ((unsigned char)s[i + 1] == 0x85 || (unsigned char)s[i + 1] == 0xA0))
        return 2;
    if (i + 2 < n) {
        unsigned char c1 = (unsigned char)s[i + 1], c2 = (unsigned char)s[i + 2];
        if (c == 0xE3 && c1 == 0x80 && c2 == 0x80)
            return 3;
        if (c == 0xE2 && c1 == 0x80 && ((c2 >= 0x80 && c2 <= 0x8A) || c2 == 0xA8 || c2 == 0xA9 || c2 == 0xAF))
            return 3;
        if (c == 0xE2 && c1 == 0x81 && c2 == 0x9F)
            return 3;
        if (c == 0xE1 && c1 == 0x9A && c2 == 0x80)
            return 3;
    }
    return 0;
}
static size_t ws_before(const char *s, size_t end)
{
    for (size_t k = 1; k <= 3 && k <= end; k++) {
        size_t w = ws_at(s, end, end - k);
        if (w == k)
            return k;
    }
    return 0;
}

/* Is code point starting at s[i] in the chars set (a UTF-8 string)? Returns its length or 0. */
static size_t cp_len(const char *s, size_t n, size_t i)
{
    size_t j = i + 1;
    while (j < n && ((unsigned char)s[j] & 0xC0) == 0x80)
        j++;
    return j - i;
}
static bool in_set(const jstr *set, const char *p, size_t len)
{
    for (size_t i = 0; i < set->len;) {
        size_t l = cp_len(set->p, set->len, i);
        if (l == len && !memcmp(set->p + i, p, len))
            return true;
        i += l;
    }
    return false;
}
static size_t cp_before(const char *s, size_t end)
{
    size_t i = end - 1;
    while (i > 0 && ((unsigned char)s[i] & 0xC0) == 0x80)
        i--;
    return end - i;
}

jv jx_strip(jctx *x, jv v, jv chars, bool left, bool right)
{
    jstr *s = jv_to_str(x, v);
    size_t a = 0, b = s->len;
    if (chars.t == JV_NONE || chars.t == JV_UNDEF) {
        size_t w;
        while (left && a < b && (w = ws_at(s->p, b, a)))
            a += w;
        while (right && b > a && (w = ws_before(s->p, b)) && b - w >= a)
            b -= w;
    } else {
        if (chars.t != JV_STR)
            jx_fail(x, JINJA_ERR_RUNTIME, "strip arg must be None or str");
        while (left && a < b) {
            size_t l = cp_len(s->p, b, a);
            if (!in_set(chars.u.s, s->p + a, l))
                break;
            a += l;
        }
        while (right && b > a) {
            size_t l = cp_before(s->p, b);
            if (!in_set(chars.u.s, s->p + b - l, l))
                break;
            b -= l;
        }
    }
    return jv_strn(x, s->p + a, b - a);
}

/* Unicode case mapping through the C.UTF-8 locale's tables (ASCII only when
 * that locale is missing). One-to-one mappings only: Python's special cases
 * such as 'ß'.upper() == 'SS' are not reproduced. */
static locale_t utf8_loc;
static pthread_once_t utf8_once = PTHREAD_ONCE_INIT;
static void utf8_loc_init(void) { utf8_loc = newlocale(LC_CTYPE_MASK, "C.UTF-8", (locale_t)0); }

static uint32_t cp_upper(uint32_t c)
{
    if (c < 0x80)
        return (uint32_t)toupper((int)c);
    return utf8_loc ? (uint32_t)towupper_l((wint_t)c, utf8_loc) : c;
}
static uint32_t cp_lower(uint32_t c)
{
    if (c < 0x80)
        return (uint32_t)tolower((int)c);
    return utf8_loc ? (uint32_t)towlower_l((wint_t)c, utf8_loc) : c;
}
static bool cp_alpha(uint32_t c)
{
    if (c < 0x80)
        return isalpha((int)c);
    return utf8_loc ? iswalpha_l((wint_t)c, utf8_loc) : false;
}
static bool cp_isupper(uint32_t c) { return c < 0x80 ? isupper((int)c) : (utf8_loc && iswupper_l((wint_t)c, utf8_loc)); }

static size_t utf8_decode(const char *s, size_t n, size_t i, uint32_t *cp)
{
    unsigned char c = (unsigned char)s[i];
    size_t len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 1;
    if (i + len > n)
        len = 1;
    uint32_t v = len == 1 ? c : len == 2 ? (c & 0x1Fu) : len == 3 ? (c & 0x0Fu) : (c & 0x07u);
    for (size_t k = 1; k < len; k++) {
        unsigned char d = (unsigned char)s[i + k];
        if ((d & 0xC0) != 0x80) {
            *cp = c;
            return 1;
        }
        v = (v << 6) | (d & 0x3Fu);
    }
    *cp = v;
    return len;
}
static void utf8_put(jctx *x, jbuf *b, uint32_t c)
{
    char o[4];
    size_t n;
    if (c < 0x80) {
        o[0] = (char)c;
        n = 1;
    } else if (c < 0x800) {
        o[0] = (char)(0xC0 | (c >> 6));
        o[1] = (char)(0x80 | (c & 0x3F));
        n = 2;
    } else if (c < 0x10000) {
        o[0] = (char)(0xE0 | (c >> 12));
        o[1] = (char)(0x80 | ((c >> 6) & 0x3F));
        o[2] = (char)(0x80 | (c & 0x3F));
        n = 3;
    } else {
        o[0] = (char)(0xF0 | (c >> 18));
        o[1] = (char)(0x80 | ((c >> 12) & 0x3F));
        o[2] = (char)(0x80 | ((c >> 6) & 0x3F));
        o[3] = (char)(0x80 | (c & 0x3F));
        n = 4;
    }
    jbuf_put(x, b, o, n);
}

static jv case_map(jctx *x, jv v, int mode)
{
    pthread_once(&utf8_once, utf8_loc_init);
    jstr *s = jv_to_str(x, v);
    jbuf b = {0};
    bool prev_sep = true, first = true;
    for (size_t i = 0; i < s->len;) {
        uint32_t c, r = 0;
        size_t len = utf8_decode(s->p, s->len, i, &c);
        if (len == 1 && c >= 0x80) { /* invalid byte: keep as is */
            jbuf_put(x, &b, s->p + i, 1);
            i++;
            continue;
        }
        switch (mode) {
        case 'u':
            r = cp_upper(c);
            break;
        case 'l':
            r = cp_lower(c);
            break;
        case 'c': /* capitalize */
            r = first ? cp_upper(c) : cp_lower(c);
            break;
        case 't': /* jinja title: words start after runs of [-\s({[<] */
            r = prev_sep ? cp_upper(c) : cp_lower(c);
            prev_sep = c == '-' || (c < 0x80 && isspace((int)c)) || c == '(' || c == '{' || c == '[' || c == '<';
            break;
        case 'T': /* str.title(): words start after any uncased character */
            r = prev_sep ? cp_upper(c) : cp_lower(c);
            prev_sep = !cp_alpha(c);
            break;
        default: /* swapcase */
            r = cp_isupper(c) ? cp_lower(c) : cp_upper(c);
            break;
        }
        utf8_put(x, &b, r);
        first = false;
        i += len;
    }
    return jv_strn(x, b.p ? b.p : "", b.len);
}

jv jx_case(jctx *x, jv v, int mode) { return case_map(x, v, mode); }

jv jx_replace(jctx *x, jv v, jv old, jv new_, int64_t count)
{
    jstr *s = jv_to_str(x, v), *o = jv_to_str(x, old), *nw = jv_to_str(x, new_);
    jbuf b = {0};
    size_t i = 0;
    int64_t done = 0;
    if (o->len == 0) {
        /* Python inserts `new` between every character and at both ends */
        jlist *chars = jv_iter_list(x, jv_strn(x, s->p, s->len));
        for (size_t k = 0; k <= chars->n; k++) {
            if (count < 0 || done < count) {
                jbuf_put(x, &b, nw->p, nw->len);
                done++;
            }
            if (k < chars->n)
                jbuf_put(x, &b, chars->v[k].u.s->p, chars->v[k].u.s->len);
        }
        return jv_strn(x, b.p ? b.p : "", b.len);
    }
    while (i < s->len) {
        const char *hit = (count < 0 || done < count) ? memmem(s->p + i, s->len - i, o->p, o->len) : NULL;
        if (!hit) {
            jbuf_put(x, &b, s->p + i, s->len - i);
            break;
        }
        jbuf_put(x, &b, s->p + i, (size_t)(hit - (s->p + i)));
        jbuf_put(x, &b, nw->p, nw->len);
        i = (size_t)(hit - s->p) + o->len;
        done++;
    }
    return jv_strn(x, b.p ? b.p : "", b.len);
}

static jv getattr_path(jctx *x, jv v, const jstr *path)
{
    /* "a.b.0" like jinja's make_attrgetter */
    const char *p = path->p, *end = p + path->len;
    while (p <= end) {
        const char *dot = memchr(p, '.', (size_t)(end - p));
        if (!dot)
            dot = end;
        char part[256];
        size_t n = (size_t)(dot - p) < sizeof part - 1 ? (size_t)(dot - p) : sizeof part - 1;
        memcpy(part, p, n);
        part[n] = 0;
        char *e;
        long long idx = strtoll(part, &e, 10);
        if (n && *e == 0)
            v = jx_getitem(x, v, jv_int(idx));
        else
            v = jx_getitem(x, v, jv_str(x, part));
        if (v.t == JV_UNDEF && dot < end)
            return v;
        p = dot + 1;
    }
    return v;
}

static jv attr_of(jctx *x, jv item, jv attribute)
{
    if (attribute.t == JV_STR)
        return getattr_path(x, item, attribute.u.s);
    if (attribute.t == JV_INT)
        return jx_getitem(x, item, attribute);
    return item;
}

static int cmp_key(jctx *x, jv a, jv b, bool case_sensitive)
{
    if (!case_sensitive && a.t == JV_STR && b.t == JV_STR) {
        a = case_map(x, a, 'l');
        b = case_map(x, b, 'l');
    }
    return jv_compare(x, a, b);
}

/* stable merge sort of values by keys */
static void sort_vals(jctx *x, jv *v, jv *keys, size_t n, bool reverse, bool cs)
{
    if (n < 2)
        return;
    jv *tv = jarena_alloc(&x->arena, n * sizeof(jv)), *tk = jarena_alloc(&x->arena, n * sizeof(jv));
    for (size_t width = 1; width < n; width *= 2) {
        for (size_t lo = 0; lo < n; lo += 2 * width) {
            size_t mid = lo + width < n ? lo + width : n, hi = lo + 2 * width < n ? lo + 2 * width : n;
            size_t i = lo, j = mid, k = lo;
            while (i < mid && j < hi) {
                int c = cmp_key(x, keys[j], keys[i], cs);
                bool take_right = reverse ? c > 0 : c < 0;
                if (take_right) {
                    tv[k] = v[j];
                    tk[k++] = keys[j++];
                } else {
                    tv[k] = v[i];
                    tk[k++] = keys[i++];
                }
            }
            while (i < mid) {
                tv[k] = v[i];
                tk[k++] = keys[i++];
            }
            while (j < hi) {
                tv[k] = v[j];
                tk[k++] = keys[j++];
            }
        }
        memcpy(v, tv, n * sizeof(jv));
        memcpy(keys, tk, n * sizeof(jv));
    }
}

static jv do_tojson(jctx *x, jv v, jv *args, int nargs, const char **kwn, jv *kwv, int nkw)
{
    jv ensure_ascii = arg(args, nargs, kwn, kwv, nkw, 0, "ensure_ascii");
    jv indent = arg(args, nargs, kwn, kwv, nkw, 1, "indent");
    jv seps = arg(args, nargs, kwn, kwv, nkw, 2, "separators");
    jv sort_keys = arg(args, nargs, kwn, kwv, nkw, 3, "sort_keys");
    int ind = -1;
    if (given(indent) && indent.t != JV_NONE) {
        if (indent.t == JV_STR)
            ind = (int)indent.u.s->len; /* only spaces are supported */
        else
            ind = (int)want_int(x, indent, "indent");
        if (ind < 0)
            ind = 0;
        if (ind > 64)
            jx_fail(x, JINJA_ERR_RUNTIME, "tojson: indent too large");
    }
    const char *item_sep = ind >= 0 ? "," : ", ", *key_sep = ": ";
    if (given(seps) && seps.t != JV_NONE) {
        if (seps.t != JV_LIST || seps.u.l->n != 2 || seps.u.l->v[0].t != JV_STR || seps.u.l->v[1].t != JV_STR)
            jx_fail(x, JINJA_ERR_RUNTIME, "tojson: separators must be a pair of strings");
        item_sep = seps.u.l->v[0].u.s->p;
        key_sep = seps.u.l->v[1].u.s->p;
    }
    if (v.t == JV_UNDEF)
        jx_fail(x, JINJA_ERR_RUNTIME, "Object of type Undefined is not JSON serializable");
    jbuf b = {0};
    jv_json_opts(x, &b, v, ind, item_sep, key_sep, jv_truthy(ensure_ascii), jv_truthy(sort_keys));
    return jv_strn(x, b.p ? b.p : "", b.len);
}

static jv do_indent(jctx *x, jv v, jv width, jv first, jv blank)
{
    jstr *s = jv_to_str(x, v);
    jstr *ind;
    if (width.t == JV_STR)
        ind = width.u.s;
    else {
        int64_t w = given(width) ? want_int(x, width, "width") : 4;
        if (w < 0)
            w = 0;
        if (w > 1024)
            jx_fail(x, JINJA_ERR_RUNTIME, "indent width too large");
        char sp[1025];
        memset(sp, ' ', (size_t)w);
        ind = jv_strn(x, sp, (size_t)w).u.s;
    }
    /* split lines like str.splitlines() on s + "\n" */
    jv lines = jv_list(x, 0);
    size_t i = 0, start = 0;
    const char *p = s->p;
    size_t n = s->len;
    while (i < n) {
        if (p[i] == '\n' || p[i] == '\r') {
            jlist_push(x, lines.u.l, jv_strn(x, p + start, i - start));
            if (p[i] == '\r' && i + 1 < n && p[i + 1] == '\n')
                i++;
            start = i + 1;
        }
        i++;
    }
    jlist_push(x, lines.u.l, jv_strn(x, p + start, n - start)); /* the appended "\n" ends this line */
    jbuf b = {0};
    bool bl = jv_truthy(blank);
    for (size_t k = 0; k < lines.u.l->n; k++) {
        jstr *ln = lines.u.l->v[k].u.s;
        if (k) {
            jbuf_puts(x, &b, "\n");
            if (bl || ln->len)
                jbuf_put(x, &b, ind->p, ind->len);
        }
        jbuf_put(x, &b, ln->p, ln->len);
    }
    jv r = jv_strn(x, b.p ? b.p : "", b.len);
    if (jv_truthy(first)) {
        jbuf c = {0};
        jbuf_put(x, &c, ind->p, ind->len);
        jbuf_put(x, &c, r.u.s->p, r.u.s->len);
        r = jv_strn(x, c.p, c.len);
    }
    return r;
}

static jv do_round(jctx *x, jv v, jv precision, jv method)
{
    int64_t p = given(precision) ? want_int(x, precision, "precision") : 0;
    const char *m = method.t == JV_STR ? method.u.s->p : "common";
    double f;
    if (v.t == JV_INT || v.t == JV_BOOL)
        f = (double)(v.t == JV_INT ? v.u.i : v.u.b);
    else if (v.t == JV_FLOAT)
        f = v.u.f;
    else
        jx_fail(x, JINJA_ERR_RUNTIME, "round: expected a number, got %s", jv_type_name(v));
    if (p < 0 || p > 15)
        jx_fail(x, JINJA_ERR_RUNTIME, "round: unsupported precision");
    double scale = pow(10, (double)p);
    if (!strcmp(m, "floor"))
        return jv_float(floor(f * scale) / scale);
    if (!strcmp(m, "ceil"))
        return jv_float(ceil(f * scale) / scale);
    if (v.t == JV_INT || v.t == JV_BOOL)
        return v.t == JV_INT ? v : jv_int(v.u.b);
    char buf[512];
    snprintf(buf, sizeof buf, "%.*f", (int)p, f);
    return jv_float(strtod(buf, NULL));
}

static jv do_int(jctx *x, jv v, jv def)
{
    jv d = given(def) ? def : jv_int(0);
    switch (v.t) {
    case JV_INT:
        return v;
    case JV_BOOL:
        return jv_int(v.u.b);
    case JV_FLOAT:
        if (isnan(v.u.f) || isinf(v.u.f))
            return d;
        return jv_int(jx_trunc_int(x, v.u.f));
    case JV_STR: {
        jv t = jx_strip(x, v, jv_none(), true, true);
        char *e;
        long long i = strtoll(t.u.s->p, &e, 10);
        if (t.u.s->len && *e == 0)
            return jv_int(i);
        double f = strtod(t.u.s->p, &e);
        if (t.u.s->len && *e == 0 && !isnan(f) && !isinf(f))
            return jv_int(jx_trunc_int(x, f));
        return d;
    }
    default:
        return d;
    }
}

static jv do_float(jctx *x, jv v, jv def)
{
    jv d = given(def) ? def : jv_float(0.0);
    switch (v.t) {
    case JV_INT:
        return jv_float((double)v.u.i);
    case JV_BOOL:
        return jv_float(v.u.b);
    case JV_FLOAT:
        return v;
    case JV_STR: {
        jv t = jx_strip(x, v, jv_none(), true, true);
        char *e;
        double f = strtod(t.u.s->p, &e);
        if (t.u.s->len && *e == 0)
            return jv_float(f);
        return d;
    }
    default:
        return d;
    }
}

static jv html_escape(jctx *x, jv v)
{
    jstr *s = jv_to_str(x, v);
    jbuf b = {0};
    for (size_t i = 0; i < s->len; i++) {
        switch (s->p[i]) {
        case '&': jbuf_puts(x, &b, "&amp;"); break;
        case '<': jbuf_puts(x, &b, "&lt;"); break;
        case '>': jbuf_puts(x, &b, "&gt;"); break;
        case '"': jbuf_puts(x, &b, "&#34;"); break;
        case '\'': jbuf_puts(x, &b, "&#39;"); break;
        default: jbuf_put(x, &b, s->p + i, 1);
        }
    }
    return jv_strn(x, b.p ? b.p : "", b.len);
}

static jv select_like(jctx *x, jv v, jv *args, int nargs, bool by_attr, bool keep)
{
    jlist *items = jv_iter_list(x, v);
    jv out = jv_list(x, 0);
    int a0 = by_attr ? 1 : 0;
    if (by_attr && nargs < 1)
        jx_fail(x, JINJA_ERR_RUNTIME, "selectattr/rejectattr need an attribute name");
    for (size_t i = 0; i < items->n; i++) {
        jv item = items->v[i];
        jv val = by_attr ? attr_of(x, item, args[0]) : item;
        bool r;
        if (nargs > a0) {
            if (args[a0].t != JV_STR)
                jx_fail(x, JINJA_ERR_RUNTIME, "test name must be a string");
            r = jx_test(x, args[a0].u.s->p, val, args + a0 + 1, nargs - a0 - 1);
        } else
            r = jv_truthy(val);
        if (r == keep)
            jlist_push(x, out.u.l, item);
    }
    return out;
}

jv jx_filter(jctx *x, const char *name, jv v, jv *args, int nargs, const char **kwn, jv *kwv, int nkw)
{
#define ARG(i, nm) arg(args, nargs, kwn, kwv, nkw, i, nm)
    if (!strcmp(name, "trim") || !strcmp(name, "strip"))
        return jx_strip(x, v, ARG(0, "chars"), true, true);
    if (!strcmp(name, "length") || !strcmp(name, "count")) {
        switch (v.t) {
        case JV_UNDEF:
            return jv_int(0);
        case JV_STR:
            return jv_int((int64_t)utf8_count(v.u.s->p, v.u.s->len));
        case JV_LIST:
            return jv_int((int64_t)v.u.l->n);
        case JV_DICT:
        case JV_NS:
            return jv_int((int64_t)v.u.d->n);
        default:
            jx_fail(x, JINJA_ERR_RUNTIME, "object of type '%s' has no len()", jv_type_name(v));
        }
    }
    if (!strcmp(name, "tojson"))
        return do_tojson(x, v, args, nargs, kwn, kwv, nkw);
    if (!strcmp(name, "upper"))
        return case_map(x, v, 'u');
    if (!strcmp(name, "lower"))
        return case_map(x, v, 'l');
    if (!strcmp(name, "title"))
        return case_map(x, v, 't');
    if (!strcmp(name, "capitalize"))
        return case_map(x, v, 'c');
    if (!strcmp(name, "replace")) {
        jv c = ARG(2, "count");
        return jx_replace(x, v, ARG(0, "old"), ARG(1, "new"), given(c) && c.t != JV_NONE ? want_int(x, c, "count") : -1);
    }
    if (!strcmp(name, "join")) {
        jv sep = ARG(0, "d"), attribute = ARG(1, "attribute");
        jstr *s = given(sep) ? jv_to_str(x, sep) : jv_to_str(x, jv_str(x, ""));
        jlist *items = jv_iter_list(x, v);
        jbuf b = {0};
        for (size_t i = 0; i < items->n; i++) {
            if (i)
                jbuf_put(x, &b, s->p, s->len);
            jstr *e = jv_to_str(x, attr_of(x, items->v[i], attribute));
            jbuf_put(x, &b, e->p, e->len);
        }
        return jv_strn(x, b.p ? b.p : "", b.len);
    }
    if (!strcmp(name, "first") || !strcmp(name, "last")) {
        jlist *items = jv_iter_list(x, v);
        if (!items->n)
            return jv_undef("No first item, sequence was empty.");
        return name[0] == 'f' ? items->v[0] : items->v[items->n - 1];
    }
    if (!strcmp(name, "list")) {
        jlist *items = jv_iter_list(x, v);
        jv out = jv_list(x, items->n);
        for (size_t i = 0; i < items->n; i++)
            jlist_push(x, out.u.l, items->v[i]);
        return out;
    }
    if (!strcmp(name, "default") || !strcmp(name, "d")) {
        jv dv = ARG(0, "default_value"), boolean = ARG(1, "boolean");
        if (!given(dv))
            dv = jv_str(x, "");
        if (v.t == JV_UNDEF || (jv_truthy(boolean) && !jv_truthy(v)))
            return dv;
        return v;
    }
    if (!strcmp(name, "string")) {
        if (v.t == JV_UNDEF)
            return jv_str(x, "");
        jstr *s = jv_to_str(x, v);
        return jv_strn(x, s->p, s->len);
    }
    if (!strcmp(name, "int"))
        return do_int(x, v, ARG(0, "default"));
    if (!strcmp(name, "float"))
        return do_float(x, v, ARG(0, "default"));
    if (!strcmp(name, "abs")) {
        if (v.t == JV_INT)
            return v.u.i == INT64_MIN ? jv_float(-(double)v.u.i) : jv_int(v.u.i < 0 ? -v.u.i : v.u.i);
        if (v.t == JV_BOOL)
            return jv_int(v.u.b);
        if (v.t == JV_FLOAT)
            return jv_float(fabs(v.u.f));
        jx_fail(x, JINJA_ERR_RUNTIME, "bad operand type for abs(): '%s'", jv_type_name(v));
    }
    if (!strcmp(name, "round"))
        return do_round(x, v, ARG(0, "precision"), ARG(1, "method"));
    if (!strcmp(name, "selectattr"))
        return select_like(x, v, args, nargs, true, true);
    if (!strcmp(name, "rejectattr"))
        return select_like(x, v, args, nargs, true, false);
    if (!strcmp(name, "select"))
        return select_like(x, v, args, nargs, false, true);
    if (!strcmp(name, "reject"))
        return select_like(x, v, args, nargs, false, false);
    if (!strcmp(name, "map")) {
        jlist *items = jv_iter_list(x, v);
        jv out = jv_list(x, items->n);
        jv attribute = jx_kwarg(kwn, kwv, nkw, "attribute");
        jv dflt = jx_kwarg(kwn, kwv, nkw, "default");
        for (size_t i = 0; i < items->n; i++) {
            jv r;
            if (given(attribute)) {
                r = attr_of(x, items->v[i], attribute);
                if (r.t == JV_UNDEF && given(dflt))
                    r = dflt;
            } else {
                if (nargs < 1 || args[0].t != JV_STR)
                    jx_fail(x, JINJA_ERR_RUNTIME, "map needs a filter name or attribute=");
                r = jx_filter(x, args[0].u.s->p, items->v[i], args + 1, nargs - 1, kwn, kwv, nkw);
            }
            jlist_push(x, out.u.l, r);
        }
        return out;
    }
    if (!strcmp(name, "items")) {
        if (v.t == JV_UNDEF)
            return jv_list(x, 0);
        if (v.t != JV_DICT && v.t != JV_NS)
            jx_fail(x, JINJA_ERR_RUNTIME, "items: expected a mapping, got %s", jv_type_name(v));
        jv out = jv_list(x, v.u.d->n);
        for (size_t i = 0; i < v.u.d->n; i++) {
            jv pair = jv_list(x, 2);
            pair.u.l->tuple = true;
            jlist_push(x, pair.u.l, v.u.d->k[i]);
            jlist_push(x, pair.u.l, v.u.d->v[i]);
            jlist_push(x, out.u.l, pair);
        }
        return out;
    }
    if (!strcmp(name, "indent"))
        return do_indent(x, v, ARG(0, "width"), ARG(1, "first"), ARG(2, "blank"));
    if (!strcmp(name, "safe"))
        return v;
    if (!strcmp(name, "escape") || !strcmp(name, "e") || !strcmp(name, "forceescape"))
        return html_escape(x, v);
    if (!strcmp(name, "reverse")) {
        if (v.t == JV_STR) {
            jlist *chars = jv_iter_list(x, v);
            jbuf b = {0};
            for (size_t i = chars->n; i-- > 0;)
                jbuf_put(x, &b, chars->v[i].u.s->p, chars->v[i].u.s->len);
            return jv_strn(x, b.p ? b.p : "", b.len);
        }
        jlist *items = jv_iter_list(x, v);
        jv out = jv_list(x, items->n);
        for (size_t i = items->n; i-- > 0;)
            jlist_push(x, out.u.l, items->v[i]);
        return out;
    }
    if (!strcmp(name, "sort") || !strcmp(name, "dictsort") || !strcmp(name, "unique") || !strcmp(name, "min") ||
        !strcmp(name, "max")) {
        bool dictsort = name[0] == 'd';
        jv cs, reverse, attribute;
        if (dictsort) {
            cs = ARG(0, "case_sensitive");
            jv by = ARG(1, "by");
            reverse = ARG(2, "reverse");
            attribute = jv_int(by.t == JV_STR && !strcmp(by.u.s->p, "value") ? 1 : 0);
            if (v.t != JV_DICT && v.t != JV_NS)
                jx_fail(x, JINJA_ERR_RUNTIME, "dictsort: expected a mapping");
            v = jx_filter(x, "items", v, NULL, 0, NULL, NULL, 0);
        } else if (!strcmp(name, "sort")) {
            reverse = ARG(0, "reverse");
            cs = ARG(1, "case_sensitive");
            attribute = ARG(2, "attribute");
        } else {
            reverse = jv_bool(false);
            cs = ARG(0, "case_sensitive");
            attribute = ARG(1, "attribute");
        }
        jlist *items = jv_iter_list(x, v);
        if (!strcmp(name, "unique")) {
            jv out = jv_list(x, 0), seen = jv_list(x, 0);
            for (size_t i = 0; i < items->n; i++) {
                jv k = attr_of(x, items->v[i], attribute);
                if (!jv_truthy(cs) && k.t == JV_STR)
                    k = case_map(x, k, 'l');
                bool dup = false;
                for (size_t j = 0; j < seen.u.l->n && !dup; j++)
                    dup = jv_equal(seen.u.l->v[j], k);
                if (!dup) {
                    jlist_push(x, seen.u.l, k);
                    jlist_push(x, out.u.l, items->v[i]);
                }
            }
            return out;
        }
        size_t n = items->n;
        jv *vals = jarena_alloc(&x->arena, (n + 1) * sizeof(jv)), *keys = jarena_alloc(&x->arena, (n + 1) * sizeof(jv));
        for (size_t i = 0; i < n; i++) {
            vals[i] = items->v[i];
            keys[i] = attr_of(x, items->v[i], attribute);
        }
        if (!strcmp(name, "min") || !strcmp(name, "max")) {
            if (!n)
                return jv_undef("No aggregated item, sequence was empty.");
            size_t best = 0;
            for (size_t i = 1; i < n; i++) {
                int c = cmp_key(x, keys[i], keys[best], jv_truthy(cs));
                if (name[1] == 'i' ? c < 0 : c > 0)
                    best = i;
            }
            return vals[best];
        }
        sort_vals(x, vals, keys, n, jv_truthy(reverse), jv_truthy(cs));
        jv out = jv_list(x, n);
        for (size_t i = 0; i < n; i++)
            jlist_push(x, out.u.l, vals[i]);
        return out;
    }
    if (!strcmp(name, "groupby")) {
        jv attribute = ARG(0, "attribute"), dflt = ARG(1, "default"), cs = ARG(2, "case_sensitive");
        jlist *items = jv_iter_list(x, v);
        size_t n = items->n;
        jv *vals = jarena_alloc(&x->arena, (n + 1) * sizeof(jv)), *keys = jarena_alloc(&x->arena, (n + 1) * sizeof(jv));
        for (size_t i = 0; i < n; i++) {
            vals[i] = items->v[i];
            keys[i] = attr_of(x, items->v[i], attribute);
            if (keys[i].t == JV_UNDEF && given(dflt))
                keys[i] = dflt;
        }
        sort_vals(x, vals, keys, n, false, jv_truthy(cs));
        jv out = jv_list(x, 0);
        for (size_t i = 0; i < n;) {
            size_t j = i + 1;
            while (j < n && cmp_key(x, keys[i], keys[j], jv_truthy(cs)) == 0)
                j++;
            jv members = jv_list(x, j - i);
            for (size_t k = i; k < j; k++)
                jlist_push(x, members.u.l, vals[k]);
            jv g = jv_list(x, 2);
            g.u.l->tuple = g.u.l->group = true;
            jlist_push(x, g.u.l, keys[i]); /* the first item's own value, as jinja keeps its case */
            jlist_push(x, g.u.l, members);
            jlist_push(x, out.u.l, g);
            i = j;
        }
        return out;
    }
    if (!strcmp(name, "sum")) {
        jv attribute = ARG(0, "attribute"), start = ARG(1, "start");
        jlist *items = jv_iter_list(x, v);
        jv acc = given(start) ? start : jv_int(0);
        for (size_t i = 0; i < items->n; i++) {
            jv e = attr_of(x, items->v[i], attribute);
            if ((acc.t == JV_INT || acc.t == JV_BOOL) && (e.t == JV_INT || e.t == JV_BOOL)) {
                int64_t r;
                if (__builtin_add_overflow(acc.t == JV_INT ? acc.u.i : acc.u.b, e.t == JV_INT ? e.u.i : e.u.b, &r))
                    jx_fail(x, JINJA_ERR_RUNTIME, "sum: integer overflow");
                acc = jv_int(r);
            } else if ((acc.t == JV_INT || acc.t == JV_FLOAT || acc.t == JV_BOOL) &&
                       (e.t == JV_INT || e.t == JV_FLOAT || e.t == JV_BOOL)) {
                double a = acc.t == JV_FLOAT ? acc.u.f : acc.t == JV_INT ? (double)acc.u.i : acc.u.b;
                double b = e.t == JV_FLOAT ? e.u.f : e.t == JV_INT ? (double)e.u.i : e.u.b;
                acc = jv_float(a + b);
            } else
                jx_fail(x, JINJA_ERR_RUNTIME, "sum: unsupported operand types");
        }
        return acc;
    }
    if (!strcmp(name, "attr")) { /* attributes only: dict keys are not attributes */
        jv nm = ARG(0, "name");
        if (nm.t != JV_STR)
            jx_fail(x, JINJA_ERR_RUNTIME, "attr: name must be a string");
        if (v.t == JV_DICT) {
            jv r = jx_getattr(x, v, nm.u.s->p);
            return r.t == JV_FUNC ? r : jv_undef("no such attribute");
        }
        return jx_getattr(x, v, nm.u.s->p);
    }
    if (!strcmp(name, "format")) {
        if (nkw)
            jx_fail(x, JINJA_ERR_RUNTIME, "format: keyword arguments are not supported");
        jv t = jv_list(x, (size_t)nargs);
        t.u.l->tuple = true;
        for (int i = 0; i < nargs; i++)
            jlist_push(x, t.u.l, args[i]);
        return jx_printf(x, jv_to_str(x, v), t);
    }
    if (!strcmp(name, "truncate")) {
        jstr *s = jv_to_str(x, v);
        jv lv = ARG(0, "length"), kw = ARG(1, "killwords"), endv = ARG(2, "end"), lw = ARG(3, "leeway");
        int64_t length = given(lv) ? want_int(x, lv, "length") : 255, leeway = given(lw) && lw.t != JV_NONE ? want_int(x, lw, "leeway") : 5;
        jstr *e = given(endv) ? jv_to_str(x, endv) : jv_to_str(x, jv_str(x, "..."));
        jlist *chars = jv_iter_list(x, jv_strn(x, s->p, s->len));
        int64_t n = (int64_t)chars->n, elen = (int64_t)utf8_count(e->p, e->len);
        if (length < elen)
            jx_fail(x, JINJA_ERR_RUNTIME, "expected length >= %lld, got %lld", (long long)elen, (long long)length);
        if (leeway < 0)
            jx_fail(x, JINJA_ERR_RUNTIME, "expected leeway >= 0");
        if (n <= length + leeway)
            return v.t == JV_STR ? v : jv_strn(x, s->p, s->len);
        int64_t keep = length - elen;
        jbuf b = {0};
        for (int64_t i = 0; i < keep; i++)
            jbuf_put(x, &b, chars->v[i].u.s->p, chars->v[i].u.s->len);
        if (!jv_truthy(kw)) { /* drop the last partial word: rsplit(" ", 1)[0] */
            size_t cut = b.len;
            while (cut > 0 && b.p[cut - 1] != ' ')
                cut--;
            if (cut > 0)
                b.len = cut - 1;
        }
        jbuf_put(x, &b, e->p, e->len);
        return jv_strn(x, b.p, b.len);
    }
    if (!strcmp(name, "wordcount")) {
        jstr *s = jv_to_str(x, v);
        int64_t c = 0;
        bool in = false;
        for (size_t i = 0; i < s->len; i++) {
            bool w = isalnum((unsigned char)s->p[i]) || s->p[i] == '_' || ((unsigned char)s->p[i] & 0x80);
            if (w && !in)
                c++;
            in = w;
        }
        return jv_int(c);
    }
    if (!strcmp(name, "batch")) {
        int64_t k = want_int(x, ARG(0, "linecount"), "linecount");
        if (k <= 0)
            jx_fail(x, JINJA_ERR_RUNTIME, "batch: linecount must be positive");
        jlist *items = jv_iter_list(x, v);
        jv out = jv_list(x, 0), cur = jv_list(x, 0);
        for (size_t i = 0; i < items->n; i++) {
            jlist_push(x, cur.u.l, items->v[i]);
            if ((int64_t)cur.u.l->n == k) {
                jlist_push(x, out.u.l, cur);
                cur = jv_list(x, 0);
            }
        }
        if (cur.u.l->n) {
            jv fill = ARG(1, "fill_with");
            if (given(fill) && fill.t != JV_NONE)
                while ((int64_t)cur.u.l->n < k)
                    jlist_push(x, cur.u.l, fill);
            jlist_push(x, out.u.l, cur);
        }
        return out;
    }
    if (!strcmp(name, "center")) {
        jstr *s = jv_to_str(x, v);
        jv w = ARG(0, "width");
        int64_t width = given(w) ? want_int(x, w, "width") : 80;
        int64_t len = (int64_t)utf8_count(s->p, s->len);
        if (width > 100000)
            jx_fail(x, JINJA_ERR_LIMIT, "center: width too large");
        if (len >= width)
            return v.t == JV_STR ? v : jv_strn(x, s->p, s->len);
        int64_t pad = width - len, left = pad / 2 + (pad & width & 1);
        jbuf b = {0};
        for (int64_t i = 0; i < left; i++)
            jbuf_puts(x, &b, " ");
        jbuf_put(x, &b, s->p, s->len);
        for (int64_t i = 0; i < pad - left; i++)
            jbuf_puts(x, &b, " ");
        return jv_strn(x, b.p, b.len);
    }
    jx_fail(x, JINJA_ERR_RUNTIME, "unknown filter '%s'", name);
#undef ARG
}

/* ---- tests ---- */
bool jx_test(jctx *x, const char *name, jv v, jv *args, int nargs)
{
    jv a0 = nargs > 0 ? args[0] : jv_undef(NULL);
    if (!strcmp(name, "defined"))
        return v.t != JV_UNDEF;
    if (!strcmp(name, "undefined"))
        return v.t == JV_UNDEF;
    if (!strcmp(name, "none"))
        return v.t == JV_NONE;
    if (!strcmp(name, "string"))
        return v.t == JV_STR;
    if (!strcmp(name, "number"))
        return v.t == JV_INT || v.t == JV_FLOAT || v.t == JV_BOOL;
    if (!strcmp(name, "integer"))
        return v.t == JV_INT;
    if (!strcmp(name, "float"))
        return v.t == JV_FLOAT;
    if (!strcmp(name, "mapping"))
        return v.t == JV_DICT;
    if (!strcmp(name, "iterable"))
        return v.t == JV_STR || v.t == JV_LIST || v.t == JV_DICT || v.t == JV_UNDEF;
    if (!strcmp(name, "sequence"))
        return v.t == JV_STR || v.t == JV_LIST || v.t == JV_DICT;
    if (!strcmp(name, "boolean"))
        return v.t == JV_BOOL;
    if (!strcmp(name, "true"))
        return v.t == JV_BOOL && v.u.b;
    if (!strcmp(name, "false"))
        return v.t == JV_BOOL && !v.u.b;
    if (!strcmp(name, "callable"))
        return v.t == JV_MACRO || v.t == JV_FUNC;
    if (!strcmp(name, "odd") || !strcmp(name, "even")) {
        if (v.t != JV_INT && v.t != JV_BOOL)
            jx_fail(x, JINJA_ERR_RUNTIME, "%s test needs an integer, got %s", name, jv_type_name(v));
        int64_t i = v.t == JV_INT ? v.u.i : v.u.b;
        return (name[0] == 'o') == ((i % 2) != 0);
    }
    if (!strcmp(name, "divisibleby")) {
        int64_t d = want_int(x, a0, "divisibleby argument"), val = want_int(x, v, "value");
        if (d == 0)
            jx_fail(x, JINJA_ERR_RUNTIME, "integer division or modulo by zero");
        return d == -1 || (d != 0 && val % d == 0); /* INT64_MIN % -1 traps */
    }
    if (!strcmp(name, "equalto") || !strcmp(name, "eq") || !strcmp(name, "=="))
        return jv_equal(v, a0);
    if (!strcmp(name, "ne") || !strcmp(name, "!="))
        return !jv_equal(v, a0);
    if (!strcmp(name, "lt") || !strcmp(name, "lessthan") || !strcmp(name, "<"))
        return jv_compare(x, v, a0) < 0;
    if (!strcmp(name, "le") || !strcmp(name, "<="))
        return jv_compare(x, v, a0) <= 0;
    if (!strcmp(name, "gt") || !strcmp(name, "greaterthan") || !strcmp(name, ">"))
        return jv_compare(x, v, a0) > 0;
    if (!strcmp(name, "ge") || !strcmp(name, ">="))
        return jv_compare(x, v, a0) >= 0;
    if (!strcmp(name, "sameas"))
        return v.t == a0.t && jv_equal(v, a0) && (v.t == JV_NONE || v.t == JV_BOOL || v.t == JV_UNDEF || v.t == JV_INT ||
                                                   (v.t == JV_LIST && v.u.l == a0.u.l) || (v.t == JV_DICT && v.u.d == a0.u.d) ||
                                                   (v.t == JV_STR && v.u.s == a0.u.s));
    if (!strcmp(name, "in")) {
        if (a0.t == JV_STR && v.t == JV_STR)
            return memmem(a0.u.s->p, a0.u.s->len, v.u.s->p, v.u.s->len) != NULL || v.u.s->len == 0;
        if (a0.t == JV_LIST) {
            for (size_t i = 0; i < a0.u.l->n; i++)
                if (jv_equal(a0.u.l->v[i], v))
                    return true;
            return false;
        }
        if (a0.t == JV_DICT)
            return jdict_find_v(a0.u.d, v) != NULL;
        jx_fail(x, JINJA_ERR_RUNTIME, "'in' test needs a container");
    }
    if (!strcmp(name, "lower") || !strcmp(name, "upper")) {
        if (v.t != JV_STR)
            return false;
        bool cased = false;
        for (size_t i = 0; i < v.u.s->len; i++) {
            unsigned char c = (unsigned char)v.u.s->p[i];
            if (name[0] == 'l' ? isupper(c) : islower(c))
                return false;
            if (isalpha(c))
                cased = true;
        }
        return cased;
    }
    if (!strcmp(name, "escaped"))
        return false;
    jx_fail(x, JINJA_ERR_RUNTIME, "unknown test '%s'", name);
}
