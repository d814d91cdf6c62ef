/* Jinja evaluator: expressions, statements, scopes, loops and macros. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "chat/jinja.h"

_Noreturn void jx_fail(jctx *x, enum jinja_err kind, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (kind != JINJA_ERR_RAISE && x->cur_line > 0)
        snprintf(x->err, x->errlen, "%d:%d: %s", x->cur_line, x->cur_col, msg);
    else
        snprintf(x->err, x->errlen, "%s", msg);
    x->kind = kind;
    longjmp(x->jmp, 1);
}

static void step(jctx *x, const jnode *n)
{
    x->cur_line = n->line;
    x->cur_col = n->col;
    if (++x->steps > x->lim.max_steps)
        jx_fail(x, JINJA_ERR_LIMIT, "template exceeded %lld evaluation steps", (long long)x->lim.max_steps);
}

static _Noreturn void undefined_error(jctx *x, jv v)
{
    jx_fail(x, JINJA_ERR_RUNTIME, "%s", v.u.undef_hint ? v.u.undef_hint : "value is undefined");
}

/* Arena copy of a message about an undefined value, built when the value is
 * made (the message is only printed if the value is later misused). */
static const char *fmt_hint(jctx *x, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static const char *fmt_hint(jctx *x, const char *fmt, ...)
{
    char tmp[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    return jarena_strndup(&x->arena, tmp, strlen(tmp));
}

/* Key under which a recursive loop's loop object keeps its loop() function. */
#define RECURSE_KEY "\x01recurse"
static jv call_recursive_loop(jctx *x, jv loop, jv *args, int nargs);

/* ---- scopes ---- */
static jframe *frame_new(jctx *x, jframe *parent)
{
    jframe *f = jarena_alloc(&x->arena, sizeof *f);
    f->parent = parent;
    f->vars = jv_dict(x).u.d;
    return f;
}

static jv lookup(jctx *x, jframe *f, const char *name)
{
    size_t n = strlen(name);
    for (; f; f = f->parent) {
        jv *v = jdict_find(f->vars, name, n);
        if (v)
            return *v;
    }
    jv g;
    if (jx_global(name, &g))
        return g;
    return jv_undef(fmt_hint(x, "'%s' is undefined", name));
}

static void assign(jctx *x, jframe *f, const char *name, jv v) { jdict_set_str(x, f->vars, name, v); }

/* ---- attribute / item access ---- */
static bool is_dict_method(const char *n)
{
    static const char *const m[] = {"items", "keys", "values", "get", "copy", "update", "pop", "setdefault", NULL};
    for (int i = 0; m[i]; i++)
        if (!strcmp(n, m[i]))
            return true;
    return false;
}
static bool is_str_method(const char *n)
{
    static const char *const m[] = {"strip", "lstrip", "rstrip", "split", "rsplit", "splitlines", "startswith",
                                    "endswith", "upper", "lower", "title", "capitalize", "replace", "find", "rfind",
                                    "count", "join", "format", "isdigit", "isalpha", "isalnum", "isspace", "islower",
                                    "isupper", "index", "center", "ljust", "rjust", "zfill", "swapcase", "casefold",
                                    "removeprefix", "removesuffix", "partition", "rpartition", NULL};
    for (int i = 0; m[i]; i++)
        if (!strcmp(n, m[i]))
            return true;
    return false;
}
static bool is_list_method(const char *n)
{
    static const char *const m[] = {"index", "count", "append", "extend", "pop", "insert", "remove", "copy",
                                    "reverse", "sort", "clear", NULL};
    for (int i = 0; m[i]; i++)
        if (!strcmp(n, m[i]))
            return true;
    return false;
}

typedef struct bound_method {
    jv self;
    const char *name;
} bound_method;
#define JFN_METHOD 100

static jv bind_method(jctx *x, jv self, const char *name)
{
    bound_method *bm = jarena_alloc(&x->arena, sizeof *bm);
    bm->self = self;
    bm->name = name;
    jv f = {.t = JV_FUNC};
    f.u.fn = JFN_METHOD;
    f.bound = bm;
    return f;
}

static const char *obj_desc(jv v)
{
    switch (v.t) {
    case JV_DICT:
        return "dict object";
    case JV_LIST:
        return "list object";
    case JV_STR:
        return "str object";
    case JV_NS:
        return "Namespace object";
    case JV_NONE:
        return "None";
    case JV_INT:
        return "int object";
    case JV_FLOAT:
        return "float object";
    case JV_BOOL:
        return "bool object";
    default:
        return "object";
    }
}

jv jx_getattr(jctx *x, jv obj, const char *name)
{
    switch (obj.t) {
    case JV_UNDEF:
        undefined_error(x, obj);
    case JV_DICT:
        if (is_dict_method(name))
            return bind_method(x, obj, name);
        /* fall through */
    case JV_NS: {
        jv *v = jdict_find(obj.u.d, name, strlen(name));
        if (v)
            return *v;
        break;
    }
    case JV_STR:
        if (is_str_method(name))
            return bind_method(x, obj, name);
        break;
    case JV_LIST:
        if (obj.u.l->group && obj.u.l->n == 2 && (!strcmp(name, "grouper") || !strcmp(name, "list")))
            return obj.u.l->v[name[0] == 'g' ? 0 : 1];
        if (is_list_method(name))
            return bind_method(x, obj, name);
        break;
    default:
        break;
    }
    return jv_undef(fmt_hint(x, "'%s' has no attribute '%s'", obj_desc(obj), name));
}

static bool as_index(jv k, int64_t *i)
{
    if (k.t == JV_INT) {
        *i = k.u.i;
        return true;
    }
    if (k.t == JV_BOOL) {
        *i = k.u.b;
        return true;
    }
    return false;
}

/* Byte offset of code point `cp` in s (n bytes). */
static size_t utf8_offset(const char *s, size_t n, size_t cp)
{
    size_t i = 0, c = 0;
    while (i < n && c < cp) {
        i++;
        while (i < n && ((unsigned char)s[i] & 0xC0) == 0x80)
            i++;
        c++;
    }
    return i;
}

jv jx_getitem(jctx *x, jv obj, jv key)
{
    int64_t i;
    switch (obj.t) {
    case JV_UNDEF:
        undefined_error(x, obj);
    case JV_DICT:
    case JV_NS: {
        jv *v = jdict_find_v(obj.u.d, key);
        if (v)
            return *v;
        if (key.t == JV_STR && obj.t == JV_DICT && is_dict_method(key.u.s->p))
            return bind_method(x, obj, key.u.s->p);
        if (key.t == JV_STR)
            return jv_undef(fmt_hint(x, "'%s' has no attribute '%s'", obj_desc(obj), key.u.s->p));
        if (key.t == JV_INT)
            return jv_undef(fmt_hint(x, "%s has no element %lld", obj_desc(obj), (long long)key.u.i));
        return jv_undef(fmt_hint(x, "%s has no element of type %s", obj_desc(obj), jv_type_name(key)));
    }
    case JV_LIST:
        if (as_index(key, &i)) {
            int64_t n = (int64_t)obj.u.l->n, orig = i;
            if (i < 0)
                i += n;
            if (i < 0 || i >= n)
                return jv_undef(fmt_hint(x, "list object has no element %lld", (long long)orig));
            return obj.u.l->v[i];
        }
        if (key.t == JV_STR)
            return jx_getattr(x, obj, key.u.s->p);
        break;
    case JV_STR:
        if (as_index(key, &i)) {
            int64_t n = (int64_t)utf8_count(obj.u.s->p, obj.u.s->len), orig = i;
            if (i < 0)
                i += n;
            if (i < 0 || i >= n)
                return jv_undef(fmt_hint(x, "str object has no element %lld", (long long)orig));
            size_t a = utf8_offset(obj.u.s->p, obj.u.s->len, (size_t)i);
            size_t b = utf8_offset(obj.u.s->p, obj.u.s->len, (size_t)i + 1);
            return jv_strn(x, obj.u.s->p + a, b - a);
        }
        if (key.t == JV_STR)
            return jx_getattr(x, obj, key.u.s->p);
        break;
    default:
        break;
    }
    if (key.t == JV_STR)
        return jv_undef(fmt_hint(x, "'%s' has no attribute '%s'", obj_desc(obj), key.u.s->p));
    if (key.t == JV_INT)
        return jv_undef(fmt_hint(x, "%s has no element %lld", obj_desc(obj), (long long)key.u.i));
    return jv_undef(fmt_hint(x, "%s has no such element", obj_desc(obj)));
}

/* Python slice index normalization. */
static void slice_indices(jctx *x, jv start, jv stop, jv stepv, int64_t n, int64_t *s0, int64_t *s1, int64_t *st)
{
    int64_t stp = 1;
    if (stepv.t != JV_NONE && stepv.t != JV_UNDEF) {
        if (!as_index(stepv, &stp))
            jx_fail(x, JINJA_ERR_RUNTIME, "slice indices must be integers");
        if (stp == 0)
            jx_fail(x, JINJA_ERR_RUNTIME, "slice step cannot be zero");
    }
    int64_t lo, hi;
    if (stp > 0) {
        lo = 0;
        hi = n;
    } else {
        lo = -1;
        hi = n - 1;
    }
    int64_t a, b;
    if (start.t == JV_NONE || start.t == JV_UNDEF)
        a = stp > 0 ? lo : hi;
    else {
        if (!as_index(start, &a))
            jx_fail(x, JINJA_ERR_RUNTIME, "slice indices must be integers");
        if (a < 0) {
            a += n;
            if (a < lo)
                a = lo;
        } else if (a > hi)
            a = hi;
    }
    if (stop.t == JV_NONE || stop.t == JV_UNDEF)
        b = stp > 0 ? hi : lo;
    else {
        if (!as_index(stop, &b))
            jx_fail(x, JINJA_ERR_RUNTIME, "slice indices must be integers");
        if (b < 0) {
            b += n;
            if (b < lo)
                b = lo;
        } else if (b > hi)
            b = hi;
    }
    *s0 = a;
    *s1 = b;
    *st = stp;
}

static jv do_slice(jctx *x, jv obj, jv start, jv stop, jv stepv)
{
    int64_t a, b, st;
    if (obj.t == JV_UNDEF)
        undefined_error(x, obj);
    if (obj.t == JV_LIST) {
        slice_indices(x, start, stop, stepv, (int64_t)obj.u.l->n, &a, &b, &st);
        jv out = jv_list(x, 0);
        for (int64_t i = a; st > 0 ? i < b : i > b; i += st)
            jlist_push(x, out.u.l, obj.u.l->v[i]);
        return out;
    }
    if (obj.t == JV_STR) {
        jlist *chars = jv_iter_list(x, obj);
        slice_indices(x, start, stop, stepv, (int64_t)chars->n, &a, &b, &st);
        jbuf buf = {0};
        for (int64_t i = a; st > 0 ? i < b : i > b; i += st)
            jbuf_put(x, &buf, chars->v[i].u.s->p, chars->v[i].u.s->len);
        return jv_strn(x, buf.p ? buf.p : "", buf.len);
    }
    jx_fail(x, JINJA_ERR_RUNTIME, "'%s' object is not subscriptable", jv_type_name(obj));
}

/* ---- operators ---- */
static bool isnum(jv v) { return v.t == JV_INT || v.t == JV_FLOAT || v.t == JV_BOOL; }
static double numf(jv v) { return v.t == JV_FLOAT ? v.u.f : v.t == JV_INT ? (double)v.u.i : (double)v.u.b; }
static int64_t numi(jv v) { return v.t == JV_INT ? v.u.i : v.t == JV_BOOL ? (int64_t)v.u.b : 0; }

static const char *op_name(int op)
{
    /* no static buffer: templates render on several threads at once (serve) */
    static const char ops[] = "+-*/%~";
    static const char *const names[] = {"+", "-", "*", "/", "%", "~"};
    switch (op) {
    case JOP_FLOORDIV:
        return "//";
    case JOP_POW:
        return "**";
    default: {
        const char *p = op > 0 && op < 256 ? strchr(ops, op) : NULL;
        return p ? names[p - ops] : "?";
    }
    }
}

static _Noreturn void type_error(jctx *x, int op, jv a, jv b)
{
    if (a.t == JV_UNDEF)
        undefined_error(x, a);
    if (b.t == JV_UNDEF)
        undefined_error(x, b);
    if (op == '+' && (a.t == JV_STR || a.t == JV_LIST)) /* Python's wording */
        jx_fail(x, JINJA_ERR_RUNTIME, "can only concatenate %s (not \"%s\") to %s", jv_type_name(a), jv_type_name(b),
                jv_type_name(a));
    jx_fail(x, JINJA_ERR_RUNTIME, "unsupported operand type(s) for %s: '%s' and '%s'", op_name(op), jv_type_name(a),
            jv_type_name(b));
}

static jv repeat(jctx *x, jv seq, int64_t n)
{
    if (n < 0)
        n = 0;
    if (seq.t == JV_STR) {
        if (seq.u.s->len && (uint64_t)n > x->lim.max_output / seq.u.s->len)
            jx_fail(x, JINJA_ERR_LIMIT, "string repetition too large");
        jbuf b = {0};
        for (int64_t i = 0; i < n; i++)
            jbuf_put(x, &b, seq.u.s->p, seq.u.s->len);
        return jv_strn(x, b.p ? b.p : "", b.len);
    }
    if (seq.u.l->n && (uint64_t)n > x->lim.max_output / seq.u.l->n)
        jx_fail(x, JINJA_ERR_LIMIT, "list repetition too large");
    jv out = jv_list(x, 0);
    for (int64_t i = 0; i < n; i++)
        for (size_t j = 0; j < seq.u.l->n; j++)
            jlist_push(x, out.u.l, seq.u.l->v[j]);
    return out;
}

static jv binop(jctx *x, int op, jv a, jv b)
{
    if (op == '~') {
        jstr *sa = jv_to_str(x, a), *sb = jv_to_str(x, b);
        jbuf buf = {0};
        jbuf_put(x, &buf, sa->p, sa->len);
        jbuf_put(x, &buf, sb->p, sb->len);
        return jv_strn(x, buf.p ? buf.p : "", buf.len);
    }
    if (isnum(a) && isnum(b)) {
        bool fl = a.t == JV_FLOAT || b.t == JV_FLOAT;
        int64_t ia = numi(a), ib = numi(b), r;
        double fa = numf(a), fb = numf(b);
        switch (op) {
        case '+':
            if (!fl && !__builtin_add_overflow(ia, ib, &r))
                return jv_int(r);
            return jv_float(fa + fb);
        case '-':
            if (!fl && !__builtin_sub_overflow(ia, ib, &r))
                return jv_int(r);
            return jv_float(fa - fb);
        case '*':
            if (!fl && !__builtin_mul_overflow(ia, ib, &r))
                return jv_int(r);
            return jv_float(fa * fb);
        case '/':
            if (fb == 0)
                jx_fail(x, JINJA_ERR_RUNTIME, "division by zero");
            return jv_float(fa / fb);
        case JOP_FLOORDIV:
            if (fl) {
                if (fb == 0)
                    jx_fail(x, JINJA_ERR_RUNTIME, "float floor division by zero");
                return jv_float(floor(fa / fb));
            }
            if (ib == 0)
                jx_fail(x, JINJA_ERR_RUNTIME, "integer division or modulo by zero");
            if (ia == INT64_MIN && ib == -1)
                return jv_float(-(double)ia);
            r = ia / ib;
            if ((ia % ib != 0) && ((ia < 0) != (ib < 0)))
                r--;
            return jv_int(r);
        case '%':
            if (fl) {
                if (fb == 0)
                    jx_fail(x, JINJA_ERR_RUNTIME, "float modulo");
                double m = fmod(fa, fb);
                if (m != 0 && ((m < 0) != (fb < 0)))
                    m += fb;
                return jv_float(m);
            }
            if (ib == 0)
                jx_fail(x, JINJA_ERR_RUNTIME, "integer division or modulo by zero");
            if (ib == -1)
                return jv_int(0);
            r = ia % ib;
            if (r != 0 && ((r < 0) != (ib < 0)))
                r += ib;
            return jv_int(r);
        case JOP_POW:
            if (!fl && ib >= 0) {
                int64_t acc = 1, base = ia, e = ib;
                bool ovf = false;
                while (e > 0 && !ovf) {
                    if (e & 1)
                        ovf |= __builtin_mul_overflow(acc, base, &acc);
                    e >>= 1;
                    if (e)
                        ovf |= __builtin_mul_overflow(base, base, &base);
                }
                if (!ovf)
                    return jv_int(acc);
                jx_fail(x, JINJA_ERR_LIMIT, "integer power too large");
            }
            return jv_float(pow(fa, fb));
        }
    }
    if (op == '+' && a.t == JV_STR && b.t == JV_STR) {
        jbuf buf = {0};
        jbuf_put(x, &buf, a.u.s->p, a.u.s->len);
        jbuf_put(x, &buf, b.u.s->p, b.u.s->len);
        return jv_strn(x, buf.p ? buf.p : "", buf.len);
    }
    if (op == '+' && a.t == JV_LIST && b.t == JV_LIST) {
        jv out = jv_list(x, a.u.l->n + b.u.l->n);
        for (size_t i = 0; i < a.u.l->n; i++)
            jlist_push(x, out.u.l, a.u.l->v[i]);
        for (size_t i = 0; i < b.u.l->n; i++)
            jlist_push(x, out.u.l, b.u.l->v[i]);
        return out;
    }
    if (op == '%' && a.t == JV_STR)
        return jx_printf(x, a.u.s, b);
    if (op == '*' && (a.t == JV_STR || a.t == JV_LIST) && (b.t == JV_INT || b.t == JV_BOOL))
        return repeat(x, a, numi(b));
    if (op == '*' && (b.t == JV_STR || b.t == JV_LIST) && (a.t == JV_INT || a.t == JV_BOOL))
        return repeat(x, b, numi(a));
    type_error(x, op, a, b);
}

static bool contains(jctx *x, jv container, jv item)
{
    switch (container.t) {
    case JV_UNDEF:
        return false;
    case JV_STR:
        if (item.t != JV_STR)
            jx_fail(x, JINJA_ERR_RUNTIME, "'in <string>' requires string as left operand, not %s", jv_type_name(item));
        return memmem(container.u.s->p, container.u.s->len, item.u.s->p, item.u.s->len) != NULL ||
               item.u.s->len == 0;
    case JV_LIST:
        for (size_t i = 0; i < container.u.l->n; i++)
            if (jv_equal(container.u.l->v[i], item))
                return true;
        return false;
    case JV_DICT:
    case JV_NS:
        return jdict_find_v(container.u.d, item) != NULL;
    default:
        jx_fail(x, JINJA_ERR_RUNTIME, "argument of type '%s' is not iterable", jv_type_name(container));
    }
}

/* ---- calls ---- */
static void render_body(jctx *x, const jnode *body, jframe *f, jbuf *out);
static jv eval(jctx *x, const jnode *n, jframe *f);

static jv call_macro(jctx *x, jmacro *m, jv *args, int nargs, const char **kwn, jv *kwv, int nkw)
{
    const jnode *def = m->def;
    if (++x->depth > x->lim.max_depth)
        jx_fail(x, JINJA_ERR_LIMIT, "maximum recursion depth (%d) exceeded", x->lim.max_depth);
    jframe *f = frame_new(x, m->closure);
    jv varargs = jv_list(x, 0), kwargs = jv_dict(x);
    varargs.u.l->tuple = true;
    bool *set = jarena_alloc(&x->arena, (size_t)def->ntargets + 1);
    for (int i = 0; i < nargs; i++) {
        if (i < def->ntargets) {
            assign(x, f, def->targets[i], args[i]);
            set[i] = true;
        } else
            jlist_push(x, varargs.u.l, args[i]);
    }
    for (int k = 0; k < nkw; k++) {
        int i;
        for (i = 0; i < def->ntargets; i++)
            if (!strcmp(def->targets[i], kwn[k]))
                break;
        if (i < def->ntargets) {
            assign(x, f, def->targets[i], kwv[k]);
            set[i] = true;
        } else
            jdict_set_str(x, kwargs.u.d, kwn[k], kwv[k]);
    }
    for (int i = 0; i < def->ntargets; i++)
        if (!set[i]) {
            if (def->kwargs && def->kwargs[i]) {
                jv dv = eval(x, def->kwargs[i], f); /* defaults see earlier parameters */
                assign(x, f, def->targets[i], dv);
            } else
                assign(x, f, def->targets[i], jv_undef(fmt_hint(x, "parameter '%s' was not provided", def->targets[i])));
        }
    assign(x, f, "varargs", varargs);
    assign(x, f, "kwargs", kwargs);
    if (m->caller.t != JV_UNDEF)
        assign(x, f, "caller", m->caller);
    jbuf out = {0};
    render_body(x, def->body, f, &out);
    x->depth--;
    return jv_strn(x, out.p ? out.p : "", out.len);
}

jv jx_call_value(jctx *x, jv fn, jv *args, int nargs, const char **kwn, jv *kwv, int nkw)
{
    if (fn.t == JV_MACRO)
        return call_macro(x, fn.u.m, args, nargs, kwn, kwv, nkw);
    if (fn.t == JV_FUNC) {
        if (fn.u.fn == JFN_METHOD) {
            bound_method *bm = fn.bound;
            jv out;
            if (jx_call_method(x, bm->self, bm->name, args, nargs, kwn, kwv, nkw, &out))
                return out;
            jx_fail(x, JINJA_ERR_RUNTIME, "'%s' object has no attribute '%s'", jv_type_name(bm->self), bm->name);
        }
        return jx_call_builtin(x, fn, args, nargs, kwn, kwv, nkw);
    }
    if (fn.t == JV_UNDEF)
        undefined_error(x, fn);
    if (fn.t == JV_DICT && jdict_find(fn.u.d, RECURSE_KEY, strlen(RECURSE_KEY)))
        return call_recursive_loop(x, fn, args, nargs);
    jx_fail(x, JINJA_ERR_RUNTIME, "'%s' object is not callable", jv_type_name(fn));
}

/* ---- expressions ---- */

static void eval_args(jctx *x, const jnode *n, jframe *f, jv **args, jv **kwv)
{
    *args = n->nargs ? jarena_alloc(&x->arena, n->nargs * sizeof(jv)) : NULL;
    *kwv = n->nkw ? jarena_alloc(&x->arena, n->nkw * sizeof(jv)) : NULL;
    for (int i = 0; i < n->nargs; i++)
        (*args)[i] = eval(x, n->args[i], f);
    for (int i = 0; i < n->nkw; i++)
        (*kwv)[i] = eval(x, n->kwargs[i], f);
}

static jv eval(jctx *x, const jnode *n, jframe *f)
{
    step(x, n);
    if (++x->depth > x->lim.max_depth + 200)
        jx_fail(x, JINJA_ERR_LIMIT, "expression nested too deeply");
    jv r;
    switch (n->kind) {
    case JE_CONST:
        r = n->cval;
        break;
    case JE_NAME:
        r = lookup(x, f, n->name);
        break;
    case JE_ATTR: {
        jv o = eval(x, n->a, f);
        step(x, n);
        r = jx_getattr(x, o, n->name);
        break;
    }
    case JE_ITEM: {
        jv o = eval(x, n->a, f);
        jv k = eval(x, n->b, f);
        step(x, n);
        r = jx_getitem(x, o, k);
        break;
    }
    case JE_SLICE: {
        jv o = eval(x, n->a, f);
        jv a = n->b ? eval(x, n->b, f) : jv_none();
        jv b = n->c ? eval(x, n->c, f) : jv_none();
        jv c = n->d ? eval(x, n->d, f) : jv_none();
        step(x, n);
        r = do_slice(x, o, a, b, c);
        break;
    }
    case JE_CALL: {
        jv fn = eval(x, n->a, f);
        jv *args, *kwv;
        eval_args(x, n, f, &args, &kwv);
        step(x, n);
        r = jx_call_value(x, fn, args, n->nargs, n->kwnames, kwv, n->nkw);
        break;
    }
    case JE_FILTER: {
        jv v = n->a ? eval(x, n->a, f) : jv_undef("no value");
        jv *args, *kwv;
        eval_args(x, n, f, &args, &kwv);
        step(x, n);
        r = jx_filter(x, n->name, v, args, n->nargs, n->kwnames, kwv, n->nkw);
        break;
    }
    case JE_TEST: {
        jv v = eval(x, n->a, f);
        jv *args, *kwv;
        eval_args(x, n, f, &args, &kwv);
        step(x, n);
        r = jv_bool(jx_test(x, n->name, v, args, n->nargs));
        break;
    }
    case JE_BINOP: {
        jv a = eval(x, n->a, f);
        jv b = eval(x, n->b, f);
        step(x, n);
        r = binop(x, n->op, a, b);
        break;
    }
    case JE_UNARY: {
        jv a = eval(x, n->a, f);
        step(x, n);
        if (a.t == JV_INT)
            r = n->op == '-' ? (a.u.i == INT64_MIN ? jv_float(-(double)a.u.i) : jv_int(-a.u.i)) : a;
        else if (a.t == JV_BOOL)
            r = jv_int(n->op == '-' ? -(int64_t)a.u.b : a.u.b);
        else if (a.t == JV_FLOAT)
            r = jv_float(n->op == '-' ? -a.u.f : a.u.f);
        else if (a.t == JV_UNDEF)
            undefined_error(x, a);
        else
            jx_fail(x, JINJA_ERR_RUNTIME, "bad operand type for unary %c: '%s'", n->op, jv_type_name(a));
        break;
    }
    case JE_AND: {
        jv a = eval(x, n->a, f);
        r = jv_truthy(a) ? eval(x, n->b, f) : a;
        break;
    }
    case JE_OR: {
        jv a = eval(x, n->a, f);
        r = jv_truthy(a) ? a : eval(x, n->b, f);
        break;
    }
    case JE_NOT:
        r = jv_bool(!jv_truthy(eval(x, n->a, f)));
        break;
    case JE_COND:
        if (jv_truthy(eval(x, n->a, f)))
            r = eval(x, n->b, f);
        else
            r = n->c ? eval(x, n->c, f) : jv_undef("the inline if-expression evaluated to false and no else section was defined");
        break;
    case JE_LIST: {
        r = jv_list(x, (size_t)n->nargs);
        r.u.l->tuple = n->op == 't';
        for (int i = 0; i < n->nargs; i++)
            jlist_push(x, r.u.l, eval(x, n->args[i], f));
        break;
    }
    case JE_DICT: {
        r = jv_dict(x);
        for (int i = 0; i < n->nargs; i++) {
            jv k = eval(x, n->args[i], f);
            jv v = eval(x, n->kwargs[i], f);
            if (k.t == JV_LIST || k.t == JV_DICT || k.t == JV_UNDEF)
                jx_fail(x, JINJA_ERR_RUNTIME, "unhashable dict key of type '%s'", jv_type_name(k));
            jdict_set(x, r.u.d, k, v);
        }
        break;
    }
    case JE_CMP: {
        jv a = eval(x, n->a, f);
        jv b = eval(x, n->b, f);
        step(x, n);
        switch (n->op) {
        case JOP_EQ:
            r = jv_bool(jv_equal(a, b));
            break;
        case JOP_NE:
            r = jv_bool(!jv_equal(a, b));
            break;
        case JOP_IN:
            r = jv_bool(contains(x, b, a));
            break;
        case JOP_NOTIN:
            r = jv_bool(!contains(x, b, a));
            break;
        default: {
            if (a.t == JV_UNDEF)
                undefined_error(x, a);
            if (b.t == JV_UNDEF)
                undefined_error(x, b);
            int c = jv_compare(x, a, b);
            r = jv_bool(n->op == JOP_LT ? c < 0 : n->op == JOP_LE ? c <= 0 : n->op == JOP_GT ? c > 0 : c >= 0);
        }
        }
        break;
    }
    default:
        jx_fail(x, JINJA_ERR_RUNTIME, "unsupported expression");
    }
    x->depth--;
    return r;
}

jv jx_eval(jctx *x, const jnode *n) { return eval(x, n, x->root); }

/* ---- statements ---- */
enum { FLOW_NORMAL, FLOW_BREAK, FLOW_CONTINUE };

static int exec_list(jctx *x, const jnode *n, jframe *f);

static void unpack(jctx *x, jframe *f, const char *const *targets, int nt, jv item)
{
    if (nt == 1) {
        assign(x, f, targets[0], item);
        return;
    }
    jlist *l;
    if (item.t == JV_LIST)
        l = item.u.l;
    else if (item.t == JV_STR || item.t == JV_DICT)
        l = jv_iter_list(x, item);
    else
        jx_fail(x, JINJA_ERR_RUNTIME, "cannot unpack non-iterable %s object", jv_type_name(item));
    if ((int)l->n != nt)
        jx_fail(x, JINJA_ERR_RUNTIME, "%s values to unpack (expected %d, got %zu)",
                (int)l->n > nt ? "too many" : "not enough", nt, l->n);
    for (int i = 0; i < nt; i++)
        assign(x, f, targets[i], l->v[i]);
}

/* A recursive loop's `loop(children)`: the same loop body over a new iterable. */
typedef struct jrecurse {
    const jnode *node;
    jframe *frame;
    int depth;
} jrecurse;
static int exec_for_items(jctx *x, const jnode *n, jframe *f, jv it, int depth);

static jv call_recursive_loop(jctx *x, jv loop, jv *args, int nargs)
{
    jv *r = jdict_find(loop.u.d, RECURSE_KEY, strlen(RECURSE_KEY));
    if (!r || r->t != JV_FUNC)
        jx_fail(x, JINJA_ERR_RUNTIME, "'dict' object is not callable");
    if (nargs != 1)
        jx_fail(x, JINJA_ERR_RUNTIME, "loop() takes exactly one argument");
    jrecurse *rc = r->bound;
    if (++x->depth > x->lim.max_depth)
        jx_fail(x, JINJA_ERR_LIMIT, "maximum recursion depth (%d) exceeded", x->lim.max_depth);
    jbuf out = {0};
    jbuf *saved = x->out;
    x->out = &out;
    exec_for_items(x, rc->node, rc->frame, args[0], rc->depth + 1);
    x->out = saved;
    x->depth--;
    return jv_strn(x, out.p ? out.p : "", out.len);
}

static int exec_for(jctx *x, const jnode *n, jframe *f) { return exec_for_items(x, n, f, eval(x, n->a, f), 1); }

static int exec_for_items(jctx *x, const jnode *n, jframe *f, jv it, int depth)
{
    jlist *items = jv_iter_list(x, it);
    if (n->c) { /* `for x in xs if cond`: filter first; loop.length counts the kept ones */
        jv kept = jv_list(x, 0);
        for (size_t i = 0; i < items->n; i++) {
            jframe *tf = frame_new(x, f);
            unpack(x, tf, n->targets, n->ntargets, items->v[i]);
            if (jv_truthy(eval(x, n->c, tf)))
                jlist_push(x, kept.u.l, items->v[i]);
        }
        items = kept.u.l;
    }
    if (items->n == 0) {
        if (n->else_body)
            return exec_list(x, n->else_body, f);
        return FLOW_NORMAL;
    }
    int64_t len = (int64_t)items->n;
    jchanged *changed = jarena_alloc(&x->arena, sizeof *changed); /* loop.changed() state spans iterations */
    for (int64_t i = 0; i < len; i++) {
        step(x, n);
        jframe *lf = frame_new(x, f);
        jv loop = jv_dict(x);
        jdict *d = loop.u.d;
        jdict_set_str(x, d, "index", jv_int(i + 1));
        jdict_set_str(x, d, "index0", jv_int(i));
        jdict_set_str(x, d, "revindex", jv_int(len - i));
        jdict_set_str(x, d, "revindex0", jv_int(len - i - 1));
        jdict_set_str(x, d, "first", jv_bool(i == 0));
        jdict_set_str(x, d, "last", jv_bool(i == len - 1));
        jdict_set_str(x, d, "length", jv_int(len));
        jdict_set_str(x, d, "depth", jv_int(depth));
        jdict_set_str(x, d, "depth0", jv_int(depth - 1));
        jdict_set_str(x, d, "previtem", i > 0 ? items->v[i - 1] : jv_undef("there is no previous item"));
        jdict_set_str(x, d, "nextitem", i + 1 < len ? items->v[i + 1] : jv_undef("there is no next item"));
        jv cyc = {.t = JV_FUNC};
        cyc.u.fn = JFN_CYCLE;
        cyc.bound = (void *)(intptr_t)i;
        jdict_set_str(x, d, "cycle", cyc);
        jv chg = {.t = JV_FUNC};
        chg.u.fn = JFN_CHANGED;
        chg.bound = changed;
        jdict_set_str(x, d, "changed", chg);
        if (n->op == 'r') {
            jrecurse *rc = jarena_alloc(&x->arena, sizeof *rc);
            rc->node = n;
            rc->frame = f;
            rc->depth = depth;
            jv rf = {.t = JV_FUNC};
            rf.u.fn = JFN_RECURSE;
            rf.bound = rc;
            jdict_set_str(x, d, RECURSE_KEY, rf);
        }
        assign(x, lf, "loop", loop);
        unpack(x, lf, n->targets, n->ntargets, items->v[i]);
        int fl = exec_list(x, n->body, lf);
        if (fl == FLOW_BREAK)
            break;
    }
    return FLOW_NORMAL;
}

static void render_body(jctx *x, const jnode *body, jframe *f, jbuf *out)
{
    jbuf *saved = x->out;
    x->out = out;
    int fl = exec_list(x, body, f);
    (void)fl;
    x->out = saved;
}

static void out_value(jctx *x, jv v)
{
    if (v.t == JV_UNDEF)
        return;
    jstr *s = jv_to_str(x, v);
    jbuf_put(x, x->out, s->p, s->len);
}

static int exec_one(jctx *x, const jnode *n, jframe *f)
{
    step(x, n);
    switch (n->kind) {
    case JN_DATA:
        jbuf_put(x, x->out, n->cval.u.s->p, n->cval.u.s->len);
        return FLOW_NORMAL;
    case JN_OUTPUT:
        out_value(x, eval(x, n->a, f));
        return FLOW_NORMAL;
    case JN_IF:
        if (jv_truthy(eval(x, n->a, f)))
            return exec_list(x, n->body, f);
        return exec_list(x, n->else_body, f);
    case JN_FOR:
        return exec_for(x, n, f);
    case JN_SET: {
        jv v = eval(x, n->a, f);
        step(x, n);
        if (n->op == '.') {
            jv ns = lookup(x, f, n->name);
            if (ns.t != JV_NS)
                jx_fail(x, JINJA_ERR_RUNTIME, "cannot assign attribute on non-namespace object");
            jdict_set_str(x, ns.u.d, n->targets[0], v);
        } else if (n->ntargets == 1)
            assign(x, f, n->targets[0], v);
        else
            unpack(x, f, n->targets, n->ntargets, v);
        return FLOW_NORMAL;
    }
    case JN_SETBLOCK: {
        jbuf out = {0};
        render_body(x, n->body, f, &out);
        jv v = jv_strn(x, out.p ? out.p : "", out.len);
        if (n->a) {
            /* apply the filter chain: innermost filter has a == NULL */
            const jnode *chain[64];
            int nc = 0;
            for (const jnode *c = n->a; c && nc < 64; c = c->a)
                chain[nc++] = c;
            for (int i = nc - 1; i >= 0; i--) {
                jv *args, *kwv;
                eval_args(x, chain[i], f, &args, &kwv);
                v = jx_filter(x, chain[i]->name, v, args, chain[i]->nargs, chain[i]->kwnames, kwv, chain[i]->nkw);
            }
        }
        assign(x, f, n->targets[0], v);
        return FLOW_NORMAL;
    }
    case JN_FILTERBLOCK: {
        jbuf out = {0};
        render_body(x, n->body, f, &out);
        jv v = jv_strn(x, out.p ? out.p : "", out.len);
        const jnode *chain[64];
        int nc = 0;
        for (const jnode *c = n->a; c && nc < 64; c = c->a)
            chain[nc++] = c;
        for (int i = nc - 1; i >= 0; i--) {
            jv *args, *kwv;
            eval_args(x, chain[i], f, &args, &kwv);
            v = jx_filter(x, chain[i]->name, v, args, chain[i]->nargs, chain[i]->kwnames, kwv, chain[i]->nkw);
        }
        out_value(x, v);
        return FLOW_NORMAL;
    }
    case JN_MACRO: {
        jmacro *m = jarena_alloc(&x->arena, sizeof *m);
        m->def = n;
        m->closure = f;
        m->caller = jv_undef(NULL);
        jv v = {.t = JV_MACRO};
        v.u.m = m;
        assign(x, f, n->name, v);
        return FLOW_NORMAL;
    }
    case JN_CALLBLOCK: {
        const jnode *call = n->a;
        jv fn = eval(x, call->a, f);
        if (fn.t != JV_MACRO)
            jx_fail(x, JINJA_ERR_RUNTIME, "{%% call %%} needs a macro");
        jmacro *caller = jarena_alloc(&x->arena, sizeof *caller);
        caller->def = n; /* params in targets/kwargs, body */
        caller->closure = f;
        caller->caller = jv_undef(NULL);
        jmacro *m = jarena_alloc(&x->arena, sizeof *m);
        *m = *fn.u.m;
        m->caller.t = JV_MACRO;
        m->caller.u.m = caller;
        jv *args, *kwv;
        eval_args(x, call, f, &args, &kwv);
        out_value(x, call_macro(x, m, args, call->nargs, call->kwnames, kwv, call->nkw));
        return FLOW_NORMAL;
    }
    case JN_BREAK:
        return FLOW_BREAK;
    case JN_CONTINUE:
        return FLOW_CONTINUE;
    case JN_BLOCK:
        return exec_list(x, n->body, f);
    case JN_WITH: {
        /* values are evaluated in the outer scope, then bound in a new one */
        jframe *wf = frame_new(x, f);
        for (int i = 0; i < n->ntargets; i++)
            assign(x, wf, n->targets[i], eval(x, n->kwargs[i], f));
        return exec_list(x, n->body, wf);
    }
    default:
        jx_fail(x, JINJA_ERR_RUNTIME, "unsupported statement");
    }
}

static int exec_list(jctx *x, const jnode *n, jframe *f)
{
    for (; n; n = n->next) {
        int fl = exec_one(x, n, f);
        if (fl != FLOW_NORMAL)
            return fl;
    }
    return FLOW_NORMAL;
}

/* Entry for jinja_render: runs the template body in the root frame. */
void jx_exec_template(jctx *x, const jnode *body)
{
    exec_list(x, body, x->root);
}
