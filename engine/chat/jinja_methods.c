/* Python methods on str/dict/list values and the global functions
 * transformers exposes (range, namespace, raise_exception, strftime_now). */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "chat/jinja.h"

static jv arg_or(jv *args, int nargs, const char **kwn, jv *kwv, int nkw, int i, const char *name)
{
    if (i < nargs)
        return args[i];
    return jx_kwarg(kwn, kwv, nkw, name);
}

static int64_t cp_index(const jstr *s, const char *at)
{
    return (int64_t)utf8_count(s->p, (size_t)(at - s->p));
}

static bool pred_all(const jstr *s, int (*pred)(int))
{
    if (!s->len)
        return false;
    for (size_t i = 0; i < s->len; i++)
        if (!pred((unsigned char)s->p[i]))
            return false;
    return true;
}

static jv str_split(jctx *x, const jstr *s, jv sep, int64_t maxsplit)
{
    jv out = jv_list(x, 0);
    if (sep.t == JV_UNDEF || sep.t == JV_NONE) {
        size_t i = 0, n = s->len;
        int64_t splits = 0;
        while (i < n) {
            while (i < n && isspace((unsigned char)s->p[i]))
                i++;
            if (i >= n)
                break;
            if (maxsplit >= 0 && splits >= maxsplit) {
                size_t e = n;
                while (e > i && isspace((unsigned char)s->p[e - 1]))
                    e--;
                jlist_push(x, out.u.l, jv_strn(x, s->p + i, e - i));
                break;
            }
            size_t j = i;
            while (j < n && !isspace((unsigned char)s->p[j]))
                j++;
            jlist_push(x, out.u.l, jv_strn(x, s->p + i, j - i));
            splits++;
            i = j;
        }
        return out;
    }
    if (sep.t != JV_STR)
        jx_fail(x, JINJA_ERR_RUNTIME, "split: separator must be a string");
    if (!sep.u.s->len)
        jx_fail(x, JINJA_ERR_RUNTIME, "empty separator");
    size_t i = 0;
    int64_t splits = 0;
    for (;;) {
        const char *hit = (maxsplit < 0 || splits < maxsplit) ? memmem(s->p + i, s->len - i, sep.u.s->p, sep.u.s->len) : NULL;
        if (!hit) {
            jlist_push(x, out.u.l, jv_strn(x, s->p + i, s->len - i));
            return out;
        }
        jlist_push(x, out.u.l, jv_strn(x, s->p + i, (size_t)(hit - s->p) - i));
        i = (size_t)(hit - s->p) + sep.u.s->len;
        splits++;
    }
}

static jv str_rsplit(jctx *x, const jstr *s, jv sep, int64_t maxsplit)
{
    if (maxsplit < 0 || sep.t != JV_STR)
        return str_split(x, s, sep, maxsplit);
    if (!sep.u.s->len)
        jx_fail(x, JINJA_ERR_RUNTIME, "empty separator");
    jv parts = jv_list(x, 0);
    size_t end = s->len;
    int64_t splits = 0;
    while (splits < maxsplit) {
        const char *hit = NULL;
        for (size_t k = end; k >= sep.u.s->len; k--) {
            if (!memcmp(s->p + k - sep.u.s->len, sep.u.s->p, sep.u.s->len)) {
                hit = s->p + k - sep.u.s->len;
                break;
            }
        }
        if (!hit)
            break;
        jlist_push(x, parts.u.l, jv_strn(x, hit + sep.u.s->len, end - (size_t)(hit - s->p) - sep.u.s->len));
        end = (size_t)(hit - s->p);
        splits++;
    }
    jlist_push(x, parts.u.l, jv_strn(x, s->p, end));
    jv out = jv_list(x, parts.u.l->n);
    for (size_t i = parts.u.l->n; i-- > 0;)
        jlist_push(x, out.u.l, parts.u.l->v[i]);
    return out;
}

static bool affix(jctx *x, const jstr *s, jv a, bool start)
{
    if (a.t == JV_LIST) {
        for (size_t i = 0; i < a.u.l->n; i++)
            if (affix(x, s, a.u.l->v[i], start))
                return true;
        return false;
    }
    if (a.t != JV_STR)
        jx_fail(x, JINJA_ERR_RUNTIME, "%s arg must be str or a tuple of str", start ? "startswith" : "endswith");
    if (a.u.s->len > s->len)
        return false;
    return !memcmp(start ? s->p : s->p + s->len - a.u.s->len, a.u.s->p, a.u.s->len);
}

/* str.format with {} {0} {name} fields (format specs are not supported). */
static jv str_format(jctx *x, const jstr *s, jv *args, int nargs, const char **kwn, jv *kwv, int nkw)
{
    jbuf b = {0};
    int auto_i = 0;
    for (size_t i = 0; i < s->len; i++) {
        char c = s->p[i];
        if (c == '{' && i + 1 < s->len && s->p[i + 1] == '{') {
            jbuf_puts(x, &b, "{");
            i++;
        } else if (c == '}' && i + 1 < s->len && s->p[i + 1] == '}') {
            jbuf_puts(x, &b, "}");
            i++;
        } else if (c == '{') {
            const char *e = memchr(s->p + i, '}', s->len - i);
            if (!e)
                jx_fail(x, JINJA_ERR_RUNTIME, "format: single '{' encountered in format string");
            char field[128];
            size_t fl = e ? (size_t)(e - (s->p + i + 1)) : 0;
            if (fl >= sizeof field || memchr(s->p + i + 1, ':', fl) || memchr(s->p + i + 1, '!', fl))
                jx_fail(x, JINJA_ERR_RUNTIME, "format: unsupported replacement field");
            if (fl >= sizeof field)
                fl = sizeof field - 1;
            memcpy(field, s->p + i + 1, fl);
            field[fl] = 0;
            jv v;
            if (!fl) {
                if (auto_i >= nargs)
                    jx_fail(x, JINJA_ERR_RUNTIME, "format: replacement index %d out of range", auto_i);
                v = args[auto_i++];
            } else if (isdigit((unsigned char)field[0])) {
                int k = atoi(field);
                if (k >= nargs)
                    jx_fail(x, JINJA_ERR_RUNTIME, "format: replacement index %d out of range", k);
                v = args[k];
            } else {
                v = jx_kwarg(kwn, kwv, nkw, field);
                if (v.t == JV_UNDEF)
                    jx_fail(x, JINJA_ERR_RUNTIME, "format: missing key '%s'", field);
            }
            jstr *vs = jv_to_str(x, v);
            jbuf_put(x, &b, vs->p, vs->len);
            i = (size_t)(e - s->p);
        } else if (c == '}')
            jx_fail(x, JINJA_ERR_RUNTIME, "format: single '}' encountered in format string");
        else
            jbuf_put(x, &b, &c, 1);
    }
    return jv_strn(x, b.p ? b.p : "", b.len);
}

static _Noreturn void unsafe(jctx *x, const char *name, jv self)
{
    jx_fail(x, JINJA_ERR_RUNTIME, "access to attribute '%s' of '%s' object is unsafe.", name, jv_type_name(self));
}

bool jx_call_method(jctx *x, jv self, const char *name, jv *args, int nargs, const char **kwn, jv *kwv, int nkw,
                    jv *out)
{
#define A(i, nm) arg_or(args, nargs, kwn, kwv, nkw, i, nm)
    if (self.t == JV_STR) {
        const jstr *s = self.u.s;
        if (!strcmp(name, "strip"))
            *out = jx_strip(x, self, A(0, "chars"), true, true);
        else if (!strcmp(name, "lstrip"))
            *out = jx_strip(x, self, A(0, "chars"), true, false);
        else if (!strcmp(name, "rstrip"))
            *out = jx_strip(x, self, A(0, "chars"), false, true);
        else if (!strcmp(name, "split") || !strcmp(name, "rsplit")) {
            jv ms = A(1, "maxsplit");
            int64_t m = ms.t == JV_INT ? ms.u.i : -1;
            *out = name[0] == 's' ? str_split(x, s, A(0, "sep"), m) : str_rsplit(x, s, A(0, "sep"), m);
        } else if (!strcmp(name, "splitlines")) {
            jv l = jv_list(x, 0);
            size_t st = 0;
            for (size_t i = 0; i < s->len; i++) {
                if (s->p[i] == '\n' || s->p[i] == '\r') {
                    jlist_push(x, l.u.l, jv_strn(x, s->p + st, i - st));
                    if (s->p[i] == '\r' && i + 1 < s->len && s->p[i + 1] == '\n')
                        i++;
                    st = i + 1;
                }
            }
            if (st < s->len)
                jlist_push(x, l.u.l, jv_strn(x, s->p + st, s->len - st));
            *out = l;
        } else if (!strcmp(name, "startswith") || !strcmp(name, "endswith"))
            *out = jv_bool(affix(x, s, A(0, "prefix"), name[0] == 's'));
        else if (!strcmp(name, "upper"))
            *out = jx_case(x, self, 'u');
        else if (!strcmp(name, "lower") || !strcmp(name, "casefold"))
            *out = jx_case(x, self, 'l');
        else if (!strcmp(name, "title"))
            *out = jx_case(x, self, 'T');
        else if (!strcmp(name, "capitalize"))
            *out = jx_case(x, self, 'c');
        else if (!strcmp(name, "swapcase"))
            *out = jx_case(x, self, 's');
        else if (!strcmp(name, "replace")) {
            jv c = A(2, "count");
            *out = jx_replace(x, self, A(0, "old"), A(1, "new"), c.t == JV_INT ? c.u.i : -1);
        } else if (!strcmp(name, "find") || !strcmp(name, "rfind") || !strcmp(name, "index") || !strcmp(name, "count")) {
            jv sub = A(0, "sub");
            if (sub.t != JV_STR)
                jx_fail(x, JINJA_ERR_RUNTIME, "%s: argument must be str", name);
            const jstr *t = sub.u.s;
            if (!strcmp(name, "count")) {
                int64_t c = 0;
                if (!t->len)
                    c = (int64_t)utf8_count(s->p, s->len) + 1;
                else
                    for (const char *p = s->p; (p = memmem(p, s->len - (size_t)(p - s->p), t->p, t->len)); p += t->len)
                        c++;
                *out = jv_int(c);
            } else if (name[0] == 'r') {
                int64_t r = -1;
                for (size_t k = s->len + 1; k-- > 0;)
                    if (k + t->len <= s->len && !memcmp(s->p + k, t->p, t->len)) {
                        r = cp_index(s, s->p + k);
                        break;
                    }
                *out = jv_int(r);
            } else {
                const char *h = memmem(s->p, s->len, t->p, t->len);
                if (!h && name[0] == 'i')
                    jx_fail(x, JINJA_ERR_RUNTIME, "substring not found");
                *out = jv_int(h ? cp_index(s, h) : -1);
            }
        } else if (!strcmp(name, "join")) {
            jlist *items = jv_iter_list(x, A(0, "iterable"));
            jbuf b = {0};
            for (size_t i = 0; i < items->n; i++) {
                if (items->v[i].t != JV_STR)
                    jx_fail(x, JINJA_ERR_RUNTIME, "sequence item %zu: expected str instance, %s found", i,
                            jv_type_name(items->v[i]));
                if (i)
                    jbuf_put(x, &b, s->p, s->len);
                jbuf_put(x, &b, items->v[i].u.s->p, items->v[i].u.s->len);
            }
            *out = jv_strn(x, b.p ? b.p : "", b.len);
        } else if (!strcmp(name, "format"))
            *out = str_format(x, s, args, nargs, kwn, kwv, nkw);
        else if (!strcmp(name, "isdigit"))
            *out = jv_bool(pred_all(s, isdigit));
        else if (!strcmp(name, "isalpha"))
            *out = jv_bool(pred_all(s, isalpha));
        else if (!strcmp(name, "isalnum"))
            *out = jv_bool(pred_all(s, isalnum));
        else if (!strcmp(name, "isspace"))
            *out = jv_bool(pred_all(s, isspace));
        else if (!strcmp(name, "islower") || !strcmp(name, "isupper")) {
            bool cased = false, ok = true;
            for (size_t i = 0; i < s->len; i++) {
                unsigned char c = (unsigned char)s->p[i];
                if (name[2] == 'l' ? isupper(c) : islower(c))
                    ok = false;
                if (isalpha(c))
                    cased = true;
            }
            *out = jv_bool(ok && cased);
        } else if (!strcmp(name, "center") || !strcmp(name, "ljust") || !strcmp(name, "rjust") || !strcmp(name, "zfill")) {
            jv w = A(0, "width"), fill = A(1, "fillchar");
            if (w.t != JV_INT)
                jx_fail(x, JINJA_ERR_RUNTIME, "%s: width must be an integer", name);
            if (w.u.i > 1000000)
                jx_fail(x, JINJA_ERR_LIMIT, "%s: width too large", name);
            const char *fc = name[0] == 'z' ? "0" : fill.t == JV_STR && fill.u.s->len ? fill.u.s->p : " ";
            size_t fcl = name[0] == 'z' ? 1 : fill.t == JV_STR && fill.u.s->len ? fill.u.s->len : 1;
            int64_t len = (int64_t)utf8_count(s->p, s->len), pad = w.u.i - len, left;
            if (pad <= 0) {
                *out = self;
                return true;
            }
            if (name[0] == 'c')
                left = pad / 2 + (pad & w.u.i & 1);
            else
                left = name[0] == 'l' ? 0 : pad;
            jbuf b = {0};
            size_t skip = 0;
            if (name[0] == 'z' && s->len && (s->p[0] == '-' || s->p[0] == '+')) {
                jbuf_put(x, &b, s->p, 1);
                skip = 1;
            }
            for (int64_t k = 0; k < left; k++)
                jbuf_put(x, &b, fc, fcl);
            jbuf_put(x, &b, s->p + skip, s->len - skip);
            for (int64_t k = 0; k < pad - left; k++)
                jbuf_put(x, &b, fc, fcl);
            *out = jv_strn(x, b.p, b.len);
        } else if (!strcmp(name, "partition") || !strcmp(name, "rpartition")) {
            jv sep = A(0, "sep");
            if (sep.t != JV_STR || !sep.u.s->len)
                jx_fail(x, JINJA_ERR_RUNTIME, "%s: separator must be a non-empty string", name);
            const char *h = NULL;
            if (name[0] == 'p')
                h = memmem(s->p, s->len, sep.u.s->p, sep.u.s->len);
            else
                for (size_t k = s->len + 1; k-- > 0 && !h;)
                    if (k + sep.u.s->len <= s->len && !memcmp(s->p + k, sep.u.s->p, sep.u.s->len))
                        h = s->p + k;
            jv t = jv_list(x, 3);
            t.u.l->tuple = true;
            if (!h) {
                jv e = jv_str(x, "");
                jlist_push(x, t.u.l, name[0] == 'p' ? self : e);
                jlist_push(x, t.u.l, e);
                jlist_push(x, t.u.l, name[0] == 'p' ? e : self);
            } else {
                jlist_push(x, t.u.l, jv_strn(x, s->p, (size_t)(h - s->p)));
                jlist_push(x, t.u.l, sep);
                size_t after = (size_t)(h - s->p) + sep.u.s->len;
                jlist_push(x, t.u.l, jv_strn(x, s->p + after, s->len - after));
            }
            *out = t;
        } else if (!strcmp(name, "removeprefix") || !strcmp(name, "removesuffix")) {
            jv a = A(0, "prefix");
            bool pre = name[6] == 'p';
            if (a.t == JV_STR && affix(x, s, a, pre))
                *out = pre ? jv_strn(x, s->p + a.u.s->len, s->len - a.u.s->len) : jv_strn(x, s->p, s->len - a.u.s->len);
            else
                *out = self;
        } else
            return false;
        return true;
    }
    if (self.t == JV_DICT) {
        jdict *d = self.u.d;
        if (!strcmp(name, "items") || !strcmp(name, "keys") || !strcmp(name, "values")) {
            jv l = jv_list(x, d->n);
            for (size_t i = 0; i < d->n; i++) {
                if (name[0] == 'i') {
                    jv pair = jv_list(x, 2);
            pair.u.l->tuple = true;
                    jlist_push(x, pair.u.l, d->k[i]);
                    jlist_push(x, pair.u.l, d->v[i]);
                    jlist_push(x, l.u.l, pair);
                } else
                    jlist_push(x, l.u.l, name[0] == 'k' ? d->k[i] : d->v[i]);
            }
            *out = l;
        } else if (!strcmp(name, "get")) {
            jv *v = jdict_find_v(d, A(0, "key"));
            jv dflt = A(1, "default");
            *out = v ? *v : (dflt.t == JV_UNDEF ? jv_none() : dflt);
        } else if (!strcmp(name, "copy")) {
            jv c = jv_dict(x);
            for (size_t i = 0; i < d->n; i++)
                jdict_set(x, c.u.d, d->k[i], d->v[i]);
            *out = c;
        } else if (!strcmp(name, "update") || !strcmp(name, "pop") || !strcmp(name, "setdefault"))
            unsafe(x, name, self);
        else
            return false;
        return true;
    }
    if (self.t == JV_LIST) {
        jlist *l = self.u.l;
        if (!strcmp(name, "index") || !strcmp(name, "count")) {
            jv v = A(0, "value");
            int64_t c = 0;
            for (size_t i = 0; i < l->n; i++)
                if (jv_equal(l->v[i], v)) {
                    if (name[0] == 'i') {
                        *out = jv_int((int64_t)i);
                        return true;
                    }
                    c++;
                }
            if (name[0] == 'i')
                jx_fail(x, JINJA_ERR_RUNTIME, "value is not in list");
            *out = jv_int(c);
        } else if (!strcmp(name, "copy")) {
            jv c = jv_list(x, l->n);
            for (size_t i = 0; i < l->n; i++)
                jlist_push(x, c.u.l, l->v[i]);
            *out = c;
        } else if (!strcmp(name, "append") || !strcmp(name, "extend") || !strcmp(name, "pop") ||
                   !strcmp(name, "insert") || !strcmp(name, "remove") || !strcmp(name, "reverse") ||
                   !strcmp(name, "sort") || !strcmp(name, "clear"))
            unsafe(x, name, self);
        else
            return false;
        return true;
    }
    return false;
#undef A
}

/* ---- globals ---- */
bool jx_global(const char *name, jv *out)
{
    static const struct {
        const char *name;
        int fn;
    } g[] = {{"range", JFN_RANGE},
             {"namespace", JFN_NAMESPACE},
             {"raise_exception", JFN_RAISE},
             {"strftime_now", JFN_STRFTIME},
             {"dict", JFN_DICT}};
    for (size_t i = 0; i < sizeof g / sizeof g[0]; i++)
        if (!strcmp(name, g[i].name)) {
            *out = (jv){.t = JV_FUNC};
            out->u.fn = g[i].fn;
            return true;
        }
    return false;
}

static int64_t int_arg(jctx *x, jv v, const char *fn)
{
    if (v.t == JV_INT)
        return v.u.i;
    if (v.t == JV_BOOL)
        return v.u.b;
    jx_fail(x, JINJA_ERR_RUNTIME, "%s: '%s' object cannot be interpreted as an integer", fn, jv_type_name(v));
}

jv jx_call_builtin(jctx *x, jv fn, jv *args, int nargs, const char **kwn, jv *kwv, int nkw)
{
    switch (fn.u.fn) {
    case JFN_RANGE: {
        int64_t start = 0, stop, stp = 1;
        if (nargs == 1)
            stop = int_arg(x, args[0], "range");
        else if (nargs == 2 || nargs == 3) {
            start = int_arg(x, args[0], "range");
            stop = int_arg(x, args[1], "range");
            if (nargs == 3)
                stp = int_arg(x, args[2], "range");
        } else
            jx_fail(x, JINJA_ERR_RUNTIME, "range expected 1 to 3 arguments, got %d", nargs);
        if (stp == 0)
            jx_fail(x, JINJA_ERR_RUNTIME, "range() arg 3 must not be zero");
        double count = stp > 0 ? ((double)stop - (double)start) / (double)stp : ((double)start - (double)stop) / (double)-stp;
        if (count > 1e6) /* jinja2's sandbox caps range at MAX_RANGE = 100000 */
            jx_fail(x, JINJA_ERR_LIMIT, "range too big");
        jv l = jv_list(x, count > 0 ? (size_t)count + 1 : 0);
        for (int64_t i = start; stp > 0 ? i < stop : i > stop; i += stp)
            jlist_push(x, l.u.l, jv_int(i));
        return l;
    }
    case JFN_NAMESPACE:
    case JFN_DICT: {
        jv d = jv_dict(x);
        d.t = fn.u.fn == JFN_NAMESPACE ? JV_NS : JV_DICT;
        for (int i = 0; i < nargs; i++) {
            if (args[i].t == JV_DICT || args[i].t == JV_NS) {
                for (size_t k = 0; k < args[i].u.d->n; k++)
                    jdict_set(x, d.u.d, args[i].u.d->k[k], args[i].u.d->v[k]);
            } else if (args[i].t == JV_LIST) {
                for (size_t k = 0; k < args[i].u.l->n; k++) {
                    jv p = args[i].u.l->v[k];
                    if (p.t != JV_LIST || p.u.l->n != 2)
                        jx_fail(x, JINJA_ERR_RUNTIME, "dictionary update sequence element has wrong length");
                    jdict_set(x, d.u.d, p.u.l->v[0], p.u.l->v[1]);
                }
            } else
                jx_fail(x, JINJA_ERR_RUNTIME, "%s: positional arguments must be mappings",
                        fn.u.fn == JFN_DICT ? "dict" : "namespace");
        }
        for (int i = 0; i < nkw; i++)
            jdict_set_str(x, d.u.d, kwn[i], kwv[i]);
        return d;
    }
    case JFN_RAISE: {
        jstr *m = nargs ? jv_to_str(x, args[0]) : jv_to_str(x, jv_str(x, ""));
        jx_fail(x, JINJA_ERR_RAISE, "%s", m->p);
    }
    case JFN_STRFTIME: {
        if (nargs < 1 || args[0].t != JV_STR)
            jx_fail(x, JINJA_ERR_RUNTIME, "strftime_now needs a format string");
        struct tm tm;
        memset(&tm, 0, sizeof tm);
        int y, mo, d;
        if (x->date && sscanf(x->date, "%d-%d-%d", &y, &mo, &d) == 3) {
            tm.tm_year = y - 1900;
            tm.tm_mon = mo - 1;
            tm.tm_mday = d;
            tm.tm_hour = 12;
            time_t t = mktime(&tm); /* fills weekday / yearday */
            localtime_r(&t, &tm);
            tm.tm_hour = 0;
        } else {
            time_t t = time(NULL);
            localtime_r(&t, &tm);
        }
        char buf[512];
        size_t n = args[0].u.s->len ? strftime(buf, sizeof buf, args[0].u.s->p, &tm) : 0;
        return jv_strn(x, buf, n);
    }
    case JFN_CHANGED: {
        jchanged *c = fn.bound;
        jv cur = jv_list(x, (size_t)nargs);
        for (int i = 0; i < nargs; i++)
            jlist_push(x, cur.u.l, args[i]);
        bool diff = !c->seen || !jv_equal(c->last, cur);
        c->seen = true;
        c->last = cur;
        return jv_bool(diff);
    }
    case JFN_CYCLE: {
        if (!nargs)
            jx_fail(x, JINJA_ERR_RUNTIME, "no items for cycling given");
        int64_t i = (int64_t)(intptr_t)fn.bound;
        return nargs ? args[i % nargs] : jv_none();
    }
    default:
        jx_fail(x, JINJA_ERR_RUNTIME, "unknown function");
    }
}

/* ---- printf-style formatting: "%s: %d" % (a, b) and the format filter ---- */

/* An integer's digits laid out as Python's %d does: sign ('-', or '+' / ' '
 * by flag), zeros up to the precision, then the width filled with spaces
 * (left with '-') or with zeros after the sign ('0'). Into the buffer
 * directly, so a width of any size is whole. */
static void put_int_text(jctx *x, jbuf *b, bool neg, const char *digits, const char *flags, int width, int prec)
{
    const char *sign = neg ? "-" : strchr(flags, '+') ? "+" : strchr(flags, ' ') ? " " : "";
    const size_t nd = strlen(digits), ns = strlen(sign);
    const size_t zeros = prec > 0 && (size_t)prec > nd ? (size_t)prec - nd : 0;
    const size_t len = ns + zeros + nd;
    const size_t pad = width > 0 && (size_t)width > len ? (size_t)width - len : 0;
    const bool left = strchr(flags, '-') != NULL, zero_fill = !left && strchr(flags, '0') != NULL;
    for (size_t i = 0; !left && !zero_fill && i < pad; i++)
        jbuf_put(x, b, " ", 1);
    jbuf_put(x, b, sign, ns);
    for (size_t i = 0; i < (zero_fill ? pad : 0) + zeros; i++)
        jbuf_put(x, b, "0", 1);
    jbuf_put(x, b, digits, nd);
    for (size_t i = 0; left && i < pad; i++)
        jbuf_put(x, b, " ", 1);
}
jv jx_printf(jctx *x, const jstr *fmt, jv args)
{
    jv *av = &args;
    size_t an = 1, ai = 0;
    if (args.t == JV_LIST && args.u.l->tuple) {
        av = args.u.l->v;
        an = args.u.l->n;
    }
    jbuf b = {0};
    const char *p = fmt->p, *end = fmt->p + fmt->len;
    while (p < end) {
        const char *pct = memchr(p, '%', (size_t)(end - p));
        if (!pct) {
            jbuf_put(x, &b, p, (size_t)(end - p));
            break;
        }
        jbuf_put(x, &b, p, (size_t)(pct - p));
        p = pct + 1;
        if (p < end && *p == '%') {
            jbuf_puts(x, &b, "%");
            p++;
            continue;
        }
        char flags[8] = "";
        size_t nf = 0;
        while (p < end && strchr("-+ 0#", *p) && nf < sizeof flags - 1)
            flags[nf++] = *p++;
        flags[nf] = 0;
        int width = -1, prec = -1;
        if (p < end && *p == '*') {
            if (ai >= an || av[ai].t != JV_INT)
                jx_fail(x, JINJA_ERR_RUNTIME, "* wants int");
            width = (int)av[ai++].u.i;
            p++;
        } else if (p < end && *p >= '0' && *p <= '9') {
            width = 0;
            while (p < end && *p >= '0' && *p <= '9' && width < 100000)
                width = width * 10 + (*p++ - '0');
        }
        if (p < end && *p == '.') {
            p++;
            prec = 0;
            while (p < end && *p >= '0' && *p <= '9' && prec < 1000)
                prec = prec * 10 + (*p++ - '0');
        }
        if (width > 100000 || prec > 1000)
            jx_fail(x, JINJA_ERR_LIMIT, "format: width or precision too large");
        if (p >= end)
            jx_fail(x, JINJA_ERR_RUNTIME, "incomplete format");
        char conv = *p++;
        if (ai >= an)
            jx_fail(x, JINJA_ERR_RUNTIME, "not enough arguments for format string");
        jv v = av[ai++];
        char spec[32], tmp[1100];
        if (conv == 's' || conv == 'r' || conv == 'a') {
            jstr *s;
            if (conv == 's')
                s = jv_to_str(x, v);
            else {
                jbuf rb = {0};
                jv_repr(x, &rb, v);
                s = jv_to_str(x, jv_strn(x, rb.p ? rb.p : "", rb.len));
            }
            size_t len = s->len, cps = utf8_count(s->p, s->len);
            if (prec >= 0 && (size_t)prec < cps) { /* truncate to prec code points */
                size_t i = 0, c = 0;
                while (i < s->len && c < (size_t)prec) {
                    i++;
                    while (i < s->len && ((unsigned char)s->p[i] & 0xC0) == 0x80)
                        i++;
                    c++;
                }
                len = i;
                cps = (size_t)prec;
            }
            bool left = strchr(flags, '-') != NULL;
            if (!left)
                for (int k = (int)cps; k < width; k++)
                    jbuf_puts(x, &b, " ");
            jbuf_put(x, &b, s->p, len);
            if (left)
                for (int k = (int)cps; k < width; k++)
                    jbuf_puts(x, &b, " ");
            continue;
        }
        if (strchr("diouxXc", conv)) {
            int64_t iv;
            if (v.t == JV_INT)
                iv = v.u.i;
            else if (v.t == JV_BOOL)
                iv = v.u.b;
            else if (v.t == JV_FLOAT && conv != 'c' && conv != 'x' && conv != 'X' && conv != 'o') {
                const double f = v.u.f;
                if (isnan(f) || isinf(f))
                    jx_fail(x, JINJA_ERR_RUNTIME, "cannot convert float %s to integer", isnan(f) ? "NaN" : "infinity");
                if (f >= 0x1p63 || f < -0x1p63) {
                    /* past int64_t, where every double is a whole number:
                     * Python prints all its digits */
                    char digits[400];
                    snprintf(digits, sizeof digits, "%.0f", fabs(f));
                    put_int_text(x, &b, f < 0, digits, flags, width, prec);
                    continue;
                }
                iv = (int64_t)f; /* truncated, as int() does */
            } else
                jx_fail(x, JINJA_ERR_RUNTIME, "%%%c format: a number is required, not %s", conv, jv_type_name(v));
            if (conv == 'c') {
                char ch = (char)iv;
                jbuf_put(x, &b, &ch, 1);
                continue;
            }
            if (conv != 'x' && conv != 'X' && conv != 'o') {
                char digits[24];
                snprintf(digits, sizeof digits, "%llu",
                         iv < 0 ? 0ull - (unsigned long long)iv : (unsigned long long)iv);
                put_int_text(x, &b, iv < 0, digits, flags, width, prec);
                continue;
            }
            char c2 = conv;
            if (prec >= 0)
                snprintf(spec, sizeof spec, "%%%s%s.%d%s%c", flags, width >= 0 ? "*" : "", prec, "ll", c2);
            else
                snprintf(spec, sizeof spec, "%%%s%s%s%c", flags, width >= 0 ? "*" : "", "ll", c2);
            if (width >= 0)
                snprintf(tmp, sizeof tmp, spec, width, (long long)iv);
            else
                snprintf(tmp, sizeof tmp, spec, (long long)iv);
            jbuf_puts(x, &b, tmp);
            continue;
        }
        if (strchr("eEfFgG", conv)) {
            double d;
            if (v.t == JV_FLOAT)
                d = v.u.f;
            else if (v.t == JV_INT)
                d = (double)v.u.i;
            else if (v.t == JV_BOOL)
                d = v.u.b;
            else
                jx_fail(x, JINJA_ERR_RUNTIME, "must be real number, not %s", jv_type_name(v));
            snprintf(spec, sizeof spec, "%%%s%s.%d%c", flags, width >= 0 ? "*" : "", prec >= 0 ? prec : 6, conv);
            if (width >= 0)
                snprintf(tmp, sizeof tmp, spec, width, d);
            else
                snprintf(tmp, sizeof tmp, spec, d);
            jbuf_puts(x, &b, tmp);
            continue;
        }
        jx_fail(x, JINJA_ERR_RUNTIME, "unsupported format character '%c'", conv);
    }
    if (ai < an)
        jx_fail(x, JINJA_ERR_RUNTIME, "not all arguments converted during string formatting");
    return jv_strn(x, b.p ? b.p : "", b.len);
}
