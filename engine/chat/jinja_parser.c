/* Jinja parser: tokens -> AST, following jinja2's grammar and operator
 * precedence (filters and tests bind tighter than arithmetic). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "chat/jinja.h"

#define MAX_PARSE_DEPTH 200

typedef struct parser {
    const jtoks *t;
    size_t i;
    jarena *a;
    jmp_buf jmp;
    char *err;
    size_t errlen;
    int depth;
} parser;

static _Noreturn void pfail(parser *P, const jtok *at, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static _Noreturn void pfail(parser *P, const jtok *at, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    snprintf(P->err, P->errlen, "%d:%d: %s", at->line, at->col, msg);
    longjmp(P->jmp, 1);
}

static void *palloc(parser *P, size_t n)
{
    void *p = jarena_alloc(P->a, n);
    if (!p)
        pfail(P, &P->t->v[P->i], "out of memory");
    return p;
}

static const jtok *cur(parser *P) { return &P->t->v[P->i]; }
static const jtok *peek(parser *P, size_t k)
{
    size_t j = P->i + k;
    return &P->t->v[j < P->t->n ? j : P->t->n - 1];
}
static const jtok *adv(parser *P)
{
    const jtok *t = cur(P);
    if (P->i + 1 < P->t->n)
        P->i++;
    return t;
}

static bool is_op(const jtok *t, const char *op) { return t->type == JT_OP && t->len == strlen(op) && !memcmp(t->s, op, t->len); }
static bool is_name(const jtok *t, const char *nm) { return t->type == JT_NAME && t->len == strlen(nm) && !memcmp(t->s, nm, t->len); }

static const char *tok_desc(parser *P, const jtok *t)
{
    static const char *names[] = {"end of template", "text", "'{{'", "'}}'", "'{%'", "'%}'", "name", "string", "integer", "float", "operator"};
    if (t->type == JT_NAME || t->type == JT_OP) {
        char *s = palloc(P, t->len + 3);
        s[0] = '\'';
        memcpy(s + 1, t->s, t->len);
        s[t->len + 1] = '\'';
        return s;
    }
    return names[t->type];
}

static void expect_op(parser *P, const char *op)
{
    if (!is_op(cur(P), op))
        pfail(P, cur(P), "expected '%s', got %s", op, tok_desc(P, cur(P)));
    adv(P);
}

static const char *expect_name(parser *P)
{
    const jtok *t = cur(P);
    if (t->type != JT_NAME)
        pfail(P, t, "expected a name, got %s", tok_desc(P, t));
    adv(P);
    return jarena_strndup(P->a, t->s, t->len);
}

static jnode *mk(parser *P, int kind, const jtok *at)
{
    jnode *n = palloc(P, sizeof *n);
    n->kind = kind;
    n->line = at->line;
    n->col = at->col;
    return n;
}

typedef struct nodevec {
    jnode **v;
    int n, cap;
} nodevec;
static void nv_push(parser *P, nodevec *v, jnode *n)
{
    if (v->n == v->cap) {
        int cap = v->cap ? v->cap * 2 : 4;
        jnode **nv = palloc(P, (size_t)cap * sizeof(jnode *));
        if (v->n)
            memcpy(nv, v->v, (size_t)v->n * sizeof(jnode *));
        v->v = nv;
        v->cap = cap;
    }
    v->v[v->n++] = n;
}
typedef struct strvec {
    const char **v;
    int n, cap;
} strvec;
static void sv_push(parser *P, strvec *v, const char *s)
{
    if (v->n == v->cap) {
        int cap = v->cap ? v->cap * 2 : 4;
        const char **nv = palloc(P, cap * sizeof *nv);
        if (v->n)
            memcpy(nv, v->v, v->n * sizeof *nv);
        v->v = nv;
        v->cap = cap;
    }
    v->v[v->n++] = s;
}

static jnode *parse_expr(parser *P);
static jnode *parse_or(parser *P);
static jnode *parse_unary(parser *P, bool with_filter);
static jnode *parse_primary(parser *P);
static jnode *parse_postfix(parser *P, jnode *n);

static void enter(parser *P)
{
    if (++P->depth > MAX_PARSE_DEPTH)
        pfail(P, cur(P), "template nested too deeply");
}

/* (args) after the '(' has been seen: positional then keyword arguments. */
static void parse_call_args(parser *P, jnode *n)
{
    nodevec args = {0}, kw = {0};
    strvec kwn = {0};
    expect_op(P, "(");
    while (!is_op(cur(P), ")")) {
        if (args.n + kw.n)
            expect_op(P, ",");
        if (is_op(cur(P), ")"))
            break;
        if (is_op(cur(P), "*") || is_op(cur(P), "**"))
            pfail(P, cur(P), "*args / **kwargs in calls are not supported");
        if (cur(P)->type == JT_NAME && is_op(peek(P, 1), "=")) {
            sv_push(P, &kwn, expect_name(P));
            adv(P);
            nv_push(P, &kw, parse_expr(P));
        } else {
            if (kw.n)
                pfail(P, cur(P), "positional argument after keyword argument");
            nv_push(P, &args, parse_expr(P));
        }
    }
    adv(P);
    n->args = args.v;
    n->nargs = args.n;
    n->kwargs = kw.v;
    n->kwnames = kwn.v;
    n->nkw = kw.n;
}

static jnode *parse_filter(parser *P, jnode *operand)
{
    const jtok *at = cur(P);
    jnode *f = mk(P, JE_FILTER, at);
    const char *name = expect_name(P);
    while (is_op(cur(P), ".")) { /* dotted filter names */
        adv(P);
        const char *more = expect_name(P);
        char *s = palloc(P, strlen(name) + strlen(more) + 2);
        sprintf(s, "%s.%s", name, more);
        name = s;
    }
    f->name = name;
    f->a = operand;
    if (is_op(cur(P), "("))
        parse_call_args(P, f);
    return f;
}

static jnode *parse_test(parser *P, jnode *operand)
{
    const jtok *at = cur(P);
    bool neg = false;
    if (is_name(cur(P), "not")) {
        neg = true;
        adv(P);
    }
    jnode *t = mk(P, JE_TEST, at);
    t->a = operand;
    const jtok *nt = cur(P);
    if (nt->type == JT_NAME && (is_name(nt, "none") || is_name(nt, "true") || is_name(nt, "false") || 1)) {
        t->name = expect_name(P);
    } else
        pfail(P, nt, "expected a test name, got %s", tok_desc(P, nt));
    if (is_op(cur(P), "(")) {
        parse_call_args(P, t);
    } else {
        const jtok *c = cur(P);
        bool starts = c->type == JT_NAME || c->type == JT_STR || c->type == JT_INT || c->type == JT_FLOAT ||
                      is_op(c, "(") || is_op(c, "[") || is_op(c, "{");
        if (starts && !is_name(c, "else") && !is_name(c, "or") && !is_name(c, "and") && !is_name(c, "if") &&
            !is_name(c, "in") && !is_name(c, "not")) {
            if (is_name(c, "is"))
                pfail(P, c, "you cannot chain multiple tests with 'is'");
            jnode *arg = parse_postfix(P, parse_primary(P));
            t->args = palloc(P, sizeof(jnode *));
            t->args[0] = arg;
            t->nargs = 1;
        }
    }
    if (neg) {
        jnode *n = mk(P, JE_NOT, at);
        n->a = t;
        return n;
    }
    return t;
}

static jnode *parse_filter_expr(parser *P, jnode *n)
{
    for (;;) {
        if (is_op(cur(P), "|")) {
            adv(P);
            n = parse_filter(P, n);
        } else if (is_name(cur(P), "is")) {
            adv(P);
            n = parse_test(P, n);
        } else if (is_op(cur(P), "(")) {
            jnode *c = mk(P, JE_CALL, cur(P));
            c->a = n;
            parse_call_args(P, c);
            n = c;
        } else
            return n;
    }
}

static jnode *parse_subscript_arg(parser *P)
{
    /* returns an expression or a JE_SLICE with a == NULL */
    const jtok *at = cur(P);
    jnode *start = NULL, *stop = NULL, *step = NULL;
    if (!is_op(cur(P), ":")) {
        start = parse_expr(P);
        if (!is_op(cur(P), ":"))
            return start;
    }
    jnode *s = mk(P, JE_SLICE, at);
    adv(P); /* ':' */
    if (!is_op(cur(P), "]") && !is_op(cur(P), ":"))
        stop = parse_expr(P);
    if (is_op(cur(P), ":")) {
        adv(P);
        if (!is_op(cur(P), "]"))
            step = parse_expr(P);
    }
    s->b = start;
    s->c = stop;
    s->d = step;
    return s;
}

static jnode *parse_postfix(parser *P, jnode *n)
{
    for (;;) {
        const jtok *t = cur(P);
        if (is_op(t, ".")) {
            adv(P);
            const jtok *nt = cur(P);
            if (nt->type == JT_INT) {
                jnode *it = mk(P, JE_ITEM, t);
                it->a = n;
                it->b = mk(P, JE_CONST, nt);
                it->b->cval = jv_int(nt->i);
                adv(P);
                n = it;
            } else {
                jnode *at = mk(P, JE_ATTR, t);
                at->a = n;
                at->name = expect_name(P);
                n = at;
            }
        } else if (is_op(t, "[")) {
            adv(P);
            jnode *arg = parse_subscript_arg(P);
            expect_op(P, "]");
            if (arg->kind == JE_SLICE && !arg->a) {
                arg->a = n;
                n = arg;
            } else {
                jnode *it = mk(P, JE_ITEM, t);
                it->a = n;
                it->b = arg;
                n = it;
            }
        } else if (is_op(t, "(")) {
            jnode *c = mk(P, JE_CALL, t);
            c->a = n;
            parse_call_args(P, c);
            n = c;
        } else
            return n;
    }
}

static jv const_str(parser *P, const char *s, size_t n)
{
    jv v = {.t = JV_STR};
    v.u.s = palloc(P, sizeof(jstr));
    v.u.s->p = jarena_strndup(P->a, s, n);
    v.u.s->len = n;
    return v;
}

static jnode *parse_primary(parser *P)
{
    enter(P);
    const jtok *t = cur(P);
    jnode *n;
    if (t->type == JT_NAME) {
        adv(P);
        n = mk(P, JE_CONST, t);
        if (is_name(t, "true") || is_name(t, "True"))
            n->cval = jv_bool(true);
        else if (is_name(t, "false") || is_name(t, "False"))
            n->cval = jv_bool(false);
        else if (is_name(t, "none") || is_name(t, "None"))
            n->cval = jv_none();
        else {
            n->kind = JE_NAME;
            n->name = jarena_strndup(P->a, t->s, t->len);
        }
    } else if (t->type == JT_STR) {
        /* adjacent string literals concatenate */
        size_t total = 0, j = P->i;
        while (P->t->v[j].type == JT_STR)
            total += P->t->v[j++].len;
        char *buf = palloc(P, total + 1);
        size_t o = 0;
        while (cur(P)->type == JT_STR) {
            memcpy(buf + o, cur(P)->s, cur(P)->len);
            o += cur(P)->len;
            adv(P);
        }
        n = mk(P, JE_CONST, t);
        n->cval = const_str(P, buf, o);
    } else if (t->type == JT_INT) {
        adv(P);
        n = mk(P, JE_CONST, t);
        n->cval = jv_int(t->i);
    } else if (t->type == JT_FLOAT) {
        adv(P);
        n = mk(P, JE_CONST, t);
        n->cval = jv_float(t->f);
    } else if (is_op(t, "(")) {
        adv(P);
        if (is_op(cur(P), ")")) { /* empty tuple */
            adv(P);
            n = mk(P, JE_LIST, t);
            n->op = 't';
        } else {
            jnode *e = parse_expr(P);
            if (is_op(cur(P), ",")) {
                nodevec items = {0};
                nv_push(P, &items, e);
                while (is_op(cur(P), ",")) {
                    adv(P);
                    if (is_op(cur(P), ")"))
                        break;
                    nv_push(P, &items, parse_expr(P));
                }
                n = mk(P, JE_LIST, t);
                n->op = 't';
                n->args = items.v;
                n->nargs = items.n;
            } else
                n = e;
            expect_op(P, ")");
        }
    } else if (is_op(t, "[")) {
        adv(P);
        nodevec items = {0};
        while (!is_op(cur(P), "]")) {
            if (items.n)
                expect_op(P, ",");
            if (is_op(cur(P), "]"))
                break;
            nv_push(P, &items, parse_expr(P));
        }
        adv(P);
        n = mk(P, JE_LIST, t);
        n->args = items.v;
        n->nargs = items.n;
    } else if (is_op(t, "{")) {
        adv(P);
        nodevec keys = {0}, vals = {0};
        while (!is_op(cur(P), "}")) {
            if (keys.n)
                expect_op(P, ",");
            if (is_op(cur(P), "}"))
                break;
            nv_push(P, &keys, parse_expr(P));
            expect_op(P, ":");
            nv_push(P, &vals, parse_expr(P));
        }
        adv(P);
        n = mk(P, JE_DICT, t);
        n->args = keys.v;
        n->nargs = keys.n;
        n->kwargs = vals.v;
        n->nkw = vals.n;
    } else
        pfail(P, t, "unexpected %s", tok_desc(P, t));
    P->depth--;
    return n;
}

static jnode *parse_unary(parser *P, bool with_filter)
{
    enter(P);
    const jtok *t = cur(P);
    jnode *n;
    if (is_op(t, "-") || is_op(t, "+")) {
        adv(P);
        n = mk(P, JE_UNARY, t);
        n->op = (unsigned char)t->s[0];
        n->a = parse_unary(P, false);
    } else
        n = parse_primary(P);
    n = parse_postfix(P, n);
    if (with_filter)
        n = parse_filter_expr(P, n);
    P->depth--;
    return n;
}

static jnode *binop(parser *P, const jtok *at, int op, jnode *a, jnode *b)
{
    jnode *n = mk(P, JE_BINOP, at);
    n->op = op;
    n->a = a;
    n->b = b;
    return n;
}

static jnode *parse_pow(parser *P)
{
    jnode *n = parse_unary(P, true);
    while (is_op(cur(P), "**")) {
        const jtok *t = adv(P);
        n = binop(P, t, JOP_POW, n, parse_unary(P, true));
    }
    return n;
}

static jnode *parse_math2(parser *P)
{
    jnode *n = parse_pow(P);
    for (;;) {
        const jtok *t = cur(P);
        int op = is_op(t, "*") ? '*' : is_op(t, "/") ? '/' : is_op(t, "//") ? JOP_FLOORDIV : is_op(t, "%") ? '%' : 0;
        if (!op)
            return n;
        adv(P);
        n = binop(P, t, op, n, parse_pow(P));
    }
}

static jnode *parse_concat(parser *P)
{
    jnode *n = parse_math2(P);
    while (is_op(cur(P), "~")) {
        const jtok *t = adv(P);
        n = binop(P, t, '~', n, parse_math2(P));
    }
    return n;
}

static jnode *parse_math1(parser *P)
{
    jnode *n = parse_concat(P);
    for (;;) {
        const jtok *t = cur(P);
        int op = is_op(t, "+") ? '+' : is_op(t, "-") ? '-' : 0;
        if (!op)
            return n;
        adv(P);
        n = binop(P, t, op, n, parse_concat(P));
    }
}

static jnode *parse_compare(parser *P)
{
    jnode *n = parse_math1(P), *prev = NULL;
    for (;;) {
        const jtok *t = cur(P);
        int op = 0;
        if (is_op(t, "=="))
            op = JOP_EQ;
        else if (is_op(t, "!="))
            op = JOP_NE;
        else if (is_op(t, "<"))
            op = JOP_LT;
        else if (is_op(t, "<="))
            op = JOP_LE;
        else if (is_op(t, ">"))
            op = JOP_GT;
        else if (is_op(t, ">="))
            op = JOP_GE;
        else if (is_name(t, "in"))
            op = JOP_IN;
        else if (is_name(t, "not") && is_name(peek(P, 1), "in")) {
            op = JOP_NOTIN;
            adv(P);
        }
        if (!op)
            return n;
        adv(P);
        jnode *c = mk(P, JE_CMP, t);
        c->op = op;
        c->b = parse_math1(P);
        if (prev) { /* a < b < c  ==  (a < b) and (b < c); b is pure, so evaluating it twice is fine */
            c->a = prev->b;
            jnode *and_ = mk(P, JE_AND, t);
            and_->a = n;
            and_->b = c;
            n = and_;
        } else {
            c->a = n;
            n = c;
        }
        prev = c;
    }
}

static jnode *parse_not(parser *P)
{
    if (is_name(cur(P), "not")) {
        enter(P);
        const jtok *t = adv(P);
        jnode *n = mk(P, JE_NOT, t);
        n->a = parse_not(P);
        P->depth--;
        return n;
    }
    return parse_compare(P);
}

static jnode *parse_and(parser *P)
{
    jnode *n = parse_not(P);
    while (is_name(cur(P), "and")) {
        const jtok *t = adv(P);
        jnode *a = mk(P, JE_AND, t);
        a->a = n;
        a->b = parse_not(P);
        n = a;
    }
    return n;
}

static jnode *parse_or(parser *P)
{
    jnode *n = parse_and(P);
    while (is_name(cur(P), "or")) {
        const jtok *t = adv(P);
        jnode *o = mk(P, JE_OR, t);
        o->a = n;
        o->b = parse_and(P);
        n = o;
    }
    return n;
}

/* condexpr: or ('if' or ('else' condexpr)?)* */
static jnode *parse_expr(parser *P)
{
    enter(P);
    jnode *n = parse_or(P);
    while (is_name(cur(P), "if")) {
        const jtok *t = adv(P);
        jnode *c = mk(P, JE_COND, t);
        c->b = n;
        c->a = parse_or(P);
        if (is_name(cur(P), "else")) {
            adv(P);
            c->c = parse_expr(P);
        }
        n = c;
    }
    P->depth--;
    return n;
}

/* An expression without the ternary (for loop iterables: `for x in xs if c`). */
static jnode *parse_expr_noternary(parser *P) { return parse_or(P); }

/* ---- statements ---- */
static void expect_block_end(parser *P)
{
    if (cur(P)->type != JT_BLOCK_END)
        pfail(P, cur(P), "expected end of statement '%%}', got %s", tok_desc(P, cur(P)));
    adv(P);
}

/* Parses statements until a block tag whose name is one of `ends`
 * (NULL-terminated); leaves P at that name token. */
static jnode *parse_body(parser *P, const char *const *ends, const char **found);

static void parse_targets(parser *P, strvec *tv)
{
    bool paren = false;
    if (is_op(cur(P), "(")) {
        paren = true;
        adv(P);
    }
    sv_push(P, tv, expect_name(P));
    while (is_op(cur(P), ",")) {
        adv(P);
        if (paren && is_op(cur(P), ")"))
            break;
        sv_push(P, tv, expect_name(P));
    }
    if (paren)
        expect_op(P, ")");
}

static jnode *parse_for(parser *P, const jtok *at)
{
    jnode *n = mk(P, JN_FOR, at);
    strvec tv = {0};
    parse_targets(P, &tv);
    n->targets = tv.v;
    n->ntargets = tv.n;
    if (!is_name(cur(P), "in"))
        pfail(P, cur(P), "expected 'in', got %s", tok_desc(P, cur(P)));
    adv(P);
    n->a = parse_expr_noternary(P);
    if (is_name(cur(P), "if")) {
        adv(P);
        n->c = parse_expr(P);
    }
    if (is_name(cur(P), "recursive")) {
        adv(P);
        n->op = 'r';
    }
    expect_block_end(P);
    static const char *const ends[] = {"endfor", "else", NULL};
    const char *found;
    n->body = parse_body(P, ends, &found);
    if (!strcmp(found, "else")) {
        adv(P);
        expect_block_end(P);
        static const char *const ends2[] = {"endfor", NULL};
        n->else_body = parse_body(P, ends2, &found);
    }
    adv(P);
    expect_block_end(P);
    return n;
}

static jnode *parse_if(parser *P, const jtok *at)
{
    jnode *n = mk(P, JN_IF, at);
    n->a = parse_expr(P);
    expect_block_end(P);
    static const char *const ends[] = {"elif", "else", "endif", NULL};
    const char *found;
    n->body = parse_body(P, ends, &found);
    if (!strcmp(found, "elif")) {
        const jtok *t = adv(P);
        n->else_body = parse_if(P, t); /* consumes through endif */
        return n;
    }
    if (!strcmp(found, "else")) {
        adv(P);
        expect_block_end(P);
        static const char *const ends2[] = {"endif", NULL};
        n->else_body = parse_body(P, ends2, &found);
    }
    adv(P);
    expect_block_end(P);
    return n;
}

static jnode *parse_set(parser *P, const jtok *at)
{
    jnode *n = mk(P, JN_SET, at);
    strvec tv = {0};
    const char *first = expect_name(P);
    if (is_op(cur(P), ".")) { /* ns.attr = value */
        adv(P);
        n->name = first;
        sv_push(P, &tv, expect_name(P));
        n->op = '.';
    } else {
        sv_push(P, &tv, first);
        while (is_op(cur(P), ",")) {
            adv(P);
            sv_push(P, &tv, expect_name(P));
        }
    }
    n->targets = tv.v;
    n->ntargets = tv.n;
    if (cur(P)->type == JT_BLOCK_END || is_op(cur(P), "|")) {
        if (n->op == '.' || tv.n != 1)
            pfail(P, cur(P), "block set needs a single name");
        n->kind = JN_SETBLOCK;
        /* optional filters: {% set x | upper %} */
        jnode *f = NULL;
        while (is_op(cur(P), "|")) {
            adv(P);
            f = parse_filter(P, f);
        }
        n->a = f;
        expect_block_end(P);
        static const char *const ends[] = {"endset", NULL};
        const char *found;
        n->body = parse_body(P, ends, &found);
        adv(P);
        expect_block_end(P);
        return n;
    }
    expect_op(P, "=");
    jnode *v = parse_expr(P);
    if (is_op(cur(P), ",")) { /* a, b = 1, 2 */
        nodevec items = {0};
        nv_push(P, &items, v);
        while (is_op(cur(P), ",")) {
            adv(P);
            nv_push(P, &items, parse_expr(P));
        }
        v = mk(P, JE_LIST, at);
        v->op = 't';
        v->args = items.v;
        v->nargs = items.n;
    }
    n->a = v;
    expect_block_end(P);
    return n;
}

static void parse_params(parser *P, jnode *n)
{
    strvec names = {0};
    nodevec defs = {0};
    bool seen_default = false;
    expect_op(P, "(");
    while (!is_op(cur(P), ")")) {
        if (names.n)
            expect_op(P, ",");
        if (is_op(cur(P), ")"))
            break;
        sv_push(P, &names, expect_name(P));
        if (is_op(cur(P), "=")) {
            adv(P);
            nv_push(P, &defs, parse_expr(P));
            seen_default = true;
        } else {
            if (seen_default)
                pfail(P, cur(P), "non-default argument follows default argument");
            nv_push(P, &defs, NULL);
        }
    }
    adv(P);
    n->targets = names.v;
    n->ntargets = names.n;
    n->kwargs = defs.v;
    n->nkw = defs.n;
}

static jnode *parse_macro(parser *P, const jtok *at)
{
    jnode *n = mk(P, JN_MACRO, at);
    n->name = expect_name(P);
    parse_params(P, n);
    expect_block_end(P);
    static const char *const ends[] = {"endmacro", NULL};
    const char *found;
    n->body = parse_body(P, ends, &found);
    adv(P);
    if (cur(P)->type == JT_NAME)
        adv(P); /* {% endmacro name %} */
    expect_block_end(P);
    return n;
}

static jnode *parse_callblock(parser *P, const jtok *at)
{
    jnode *n = mk(P, JN_CALLBLOCK, at);
    if (is_op(cur(P), "("))
        parse_params(P, n);
    n->a = parse_expr(P);
    if (n->a->kind != JE_CALL)
        pfail(P, at, "expected a call after 'call'");
    expect_block_end(P);
    static const char *const ends[] = {"endcall", NULL};
    const char *found;
    n->body = parse_body(P, ends, &found);
    adv(P);
    expect_block_end(P);
    return n;
}

static jnode *parse_filterblock(parser *P, const jtok *at)
{
    jnode *n = mk(P, JN_FILTERBLOCK, at);
    jnode *f = parse_filter(P, NULL);
    while (is_op(cur(P), "|")) {
        adv(P);
        f = parse_filter(P, f);
    }
    n->a = f;
    expect_block_end(P);
    static const char *const ends[] = {"endfilter", NULL};
    const char *found;
    n->body = parse_body(P, ends, &found);
    adv(P);
    expect_block_end(P);
    return n;
}

static jnode *parse_statement(parser *P)
{
    const jtok *at = cur(P);
    if (at->type != JT_NAME)
        pfail(P, at, "expected a statement name, got %s", tok_desc(P, at));
    adv(P);
    if (is_name(at, "for"))
        return parse_for(P, at);
    if (is_name(at, "if"))
        return parse_if(P, at);
    if (is_name(at, "set"))
        return parse_set(P, at);
    if (is_name(at, "macro"))
        return parse_macro(P, at);
    if (is_name(at, "call"))
        return parse_callblock(P, at);
    if (is_name(at, "filter"))
        return parse_filterblock(P, at);
    if (is_name(at, "break") || is_name(at, "continue")) {
        jnode *n = mk(P, is_name(at, "break") ? JN_BREAK : JN_CONTINUE, at);
        expect_block_end(P);
        return n;
    }
    if (is_name(at, "with")) {
        jnode *n = mk(P, JN_WITH, at);
        strvec names = {0};
        nodevec vals = {0};
        while (cur(P)->type != JT_BLOCK_END) {
            if (names.n)
                expect_op(P, ",");
            sv_push(P, &names, expect_name(P));
            expect_op(P, "=");
            nv_push(P, &vals, parse_expr(P));
        }
        n->targets = names.v;
        n->ntargets = names.n;
        n->kwargs = vals.v;
        n->nkw = vals.n;
        expect_block_end(P);
        static const char *const ends[] = {"endwith", NULL};
        const char *found;
        n->body = parse_body(P, ends, &found);
        adv(P);
        expect_block_end(P);
        return n;
    }
    if (is_name(at, "generation")) { /* transformers' AssistantTracker block */
        expect_block_end(P);
        jnode *n = mk(P, JN_BLOCK, at);
        static const char *const ends[] = {"endgeneration", NULL};
        const char *found;
        n->body = parse_body(P, ends, &found);
        adv(P);
        expect_block_end(P);
        return n;
    }
    char nm[64];
    snprintf(nm, sizeof nm, "%.*s", (int)(at->len < 60 ? at->len : 60), at->s);
    pfail(P, at, "unknown or unsupported statement '%s'", nm);
}

static jnode *parse_body(parser *P, const char *const *ends, const char **found)
{
    enter(P);
    jnode *head = NULL, **tail = &head;
    for (;;) {
        const jtok *t = cur(P);
        jnode *n = NULL;
        if (t->type == JT_EOF) {
            if (ends) {
                char want[128] = "";
                for (int i = 0; ends[i]; i++)
                    snprintf(want + strlen(want), sizeof want - strlen(want), "%s'%s'", i ? " or " : "", ends[i]);
                pfail(P, t, "unexpected end of template, expected %s", want);
            }
            break;
        } else if (t->type == JT_DATA) {
            adv(P);
            n = mk(P, JN_DATA, t);
            n->cval = const_str(P, t->s, t->len);
        } else if (t->type == JT_VAR_BEGIN) {
            adv(P);
            n = mk(P, JN_OUTPUT, t);
            n->a = parse_expr(P);
            if (cur(P)->type != JT_VAR_END)
                pfail(P, cur(P), "expected '}}', got %s", tok_desc(P, cur(P)));
            adv(P);
        } else if (t->type == JT_BLOCK_BEGIN) {
            const jtok *nt = peek(P, 1);
            if (ends && nt->type == JT_NAME) {
                for (int i = 0; ends[i]; i++)
                    if (is_name(nt, ends[i])) {
                        adv(P); /* leave P at the name */
                        *found = ends[i];
                        P->depth--;
                        return head;
                    }
            }
            if (nt->type == JT_NAME &&
                (is_name(nt, "endfor") || is_name(nt, "endif") || is_name(nt, "else") || is_name(nt, "elif") ||
                 is_name(nt, "endmacro") || is_name(nt, "endset") || is_name(nt, "endcall") || is_name(nt, "endfilter") ||
                 is_name(nt, "endwith") || is_name(nt, "endraw") || is_name(nt, "endgeneration")))
                pfail(P, nt, "unexpected '%.*s'", (int)nt->len, nt->s);
            adv(P);
            n = parse_statement(P);
        } else
            pfail(P, t, "unexpected %s", tok_desc(P, t));
        *tail = n;
        tail = &n->next;
    }
    P->depth--;
    return head;
}

int jinja_parse_tokens(const jtoks *toks, jarena *a, jnode **out, char *err, size_t errlen)
{
    parser P = {.t = toks, .a = a, .err = err, .errlen = errlen};
    if (setjmp(P.jmp))
        return -1;
    *out = parse_body(&P, NULL, NULL);
    return 0;
}
