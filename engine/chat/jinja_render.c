/* Jinja public API: parse once, render with JSON variables under limits. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chat/chat.h"
#include "chat/jinja.h"

jinja_limits jinja_default_limits(void)
{
    return (jinja_limits){
        .max_output = 16u << 20,
        .max_memory = 128u << 20,
        .max_steps = 5000000,
        .max_depth = 100,
    };
}

jinja_template *jinja_parse(const char *src, char *err, size_t errlen)
{
    if (errlen)
        err[0] = 0;
    jinja_template *t = calloc(1, sizeof *t);
    if (!t) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    /* jinja2 normalizes \r\n and \r to \n before lexing */
    size_t n = strlen(src);
    t->src = malloc(n + 1);
    if (!t->src) {
        free(t);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        if (src[i] == '\r') {
            t->src[o++] = '\n';
            if (i + 1 < n && src[i + 1] == '\n')
                i++;
        } else
            t->src[o++] = src[i];
    }
    t->src[o] = 0;
    t->arena.limit = 256u << 20;
    jtoks toks = {0};
    int rc = jinja_lex(t->src, &t->arena, &toks, err, errlen);
    if (rc == 0)
        rc = jinja_parse_tokens(&toks, &t->arena, &t->body, err, errlen);
    free(toks.v);
    if (rc) {
        jinja_free(t);
        return NULL;
    }
    return t;
}

void jinja_free(jinja_template *t)
{
    if (!t)
        return;
    jarena_free(&t->arena);
    free(t->src);
    free(t);
}

static void ctx_oom(void *ud)
{
    jctx *x = ud;
    jx_fail(x, JINJA_ERR_LIMIT, "template used more than %zu bytes of memory", x->arena.limit);
}

jv jv_from_cjson(jctx *x, const cJSON *j)
{
    if (!j || cJSON_IsNull(j))
        return jv_none();
    if (cJSON_IsBool(j))
        return jv_bool(cJSON_IsTrue(j));
    if (cJSON_IsNumber(j)) {
        double d = j->valuedouble;
        /* integral values are ints unless jinja_cjson_mark_floats saw a float literal */
        if (!(j->type & JINJA_CJSON_FLOAT) && d > -9.2e18 && d < 9.2e18 && d == (double)(int64_t)d)
            return jv_int((int64_t)d);
        return jv_float(d);
    }
    if (cJSON_IsString(j) && (j->type & CHAT_CJSON_BYTES) && j->valuestring) { /* a content with NULs */
        const size_t n = strlen(j->valuestring);
        char *b = jarena_strndup(&x->arena, j->valuestring, n);
        return jv_strn(x, b, chat_bytes_unescape(b));
    }
    if (cJSON_IsString(j))
        return jv_str(x, j->valuestring ? j->valuestring : "");
    if (cJSON_IsArray(j)) {
        jv l = jv_list(x, 0);
        for (const cJSON *c = j->child; c; c = c->next)
            jlist_push(x, l.u.l, jv_from_cjson(x, c));
        return l;
    }
    if (cJSON_IsObject(j)) {
        jv d = jv_dict(x);
        int n = 0;
        for (const cJSON *c = j->child; c; c = c->next, n++) {
            jv k = jv_str(x, c->string ? c->string : "");
            if (n < 64)
                jdict_set(x, d.u.d, k, jv_from_cjson(x, c)); /* duplicate keys: last wins, like json.loads */
            else
                jdict_append(x, d.u.d, k, jv_from_cjson(x, c)); /* big objects: stay linear */
        }
        return d;
    }
    return jv_none();
}

/* Number literals of `text` in document order: 1 = float-looking. */
static size_t scan_numbers(const char *text, unsigned char *kinds, size_t cap)
{
    size_t n = 0;
    for (const char *p = text; *p;) {
        if (*p == '"') {
            for (p++; *p && *p != '"'; p++)
                if (*p == '\\' && p[1])
                    p++;
            if (*p)
                p++;
        } else if (*p == '-' || (*p >= '0' && *p <= '9')) {
            bool fl = false;
            while (*p == '-' || *p == '+' || *p == '.' || *p == 'e' || *p == 'E' || (*p >= '0' && *p <= '9')) {
                fl |= *p == '.' || *p == 'e' || *p == 'E';
                p++;
            }
            if (n < cap)
                kinds[n] = fl;
            n++;
        } else
            p++;
    }
    return n;
}

static void mark_walk(cJSON *j, const unsigned char *kinds, size_t n, size_t *i)
{
    for (; j; j = j->next) {
        if (cJSON_IsNumber(j)) {
            if (*i < n && kinds[*i])
                j->type |= JINJA_CJSON_FLOAT;
            (*i)++;
        }
        if (j->child)
            mark_walk(j->child, kinds, n, i);
    }
}

static size_t count_numbers(const cJSON *j)
{
    size_t c = 0;
    for (; j; j = j->next)
        c += (cJSON_IsNumber(j) ? 1 : 0) + (j->child ? count_numbers(j->child) : 0);
    return c;
}

void jinja_cjson_mark_floats(cJSON *root, const char *text)
{
    if (!root || !text)
        return;
    size_t want = count_numbers(root);
    if (!want)
        return;
    unsigned char *kinds = malloc(want);
    if (!kinds)
        return;
    /* only when the literals line up one to one with the tree (they do for cJSON_Parse output) */
    if (scan_numbers(text, kinds, want) == want) {
        size_t i = 0;
        mark_walk(root, kinds, want, &i);
    }
    free(kinds);
}

char *jinja_render(const jinja_template *t, const cJSON *vars, const char *date, const jinja_limits *lim,
                   size_t *out_len, enum jinja_err *kind, char *err, size_t errlen)
{
    jctx *x = calloc(1, sizeof *x);
    if (errlen)
        err[0] = 0;
    if (!x) {
        snprintf(err, errlen, "out of memory");
        if (kind)
            *kind = JINJA_ERR_LIMIT;
        return NULL;
    }
    x->lim = lim ? *lim : jinja_default_limits();
    x->arena.limit = x->lim.max_memory;
    x->arena.on_oom = ctx_oom;
    x->arena.ud = x;
    x->err = err;
    x->errlen = errlen;
    x->date = date;
    char *result = NULL;
    if (setjmp(x->jmp) == 0) {
        x->root = jarena_alloc(&x->arena, sizeof(jframe));
        x->root->vars = jv_dict(x).u.d;
        if (vars && cJSON_IsObject(vars))
            for (const cJSON *c = vars->child; c; c = c->next)
                jdict_set_str(x, x->root->vars, c->string ? c->string : "", jv_from_cjson(x, c));
        x->out = &x->main_out;
        jx_exec_template(x, t->body);
        size_t n = x->main_out.len;
        result = malloc(n + 1);
        if (result) {
            if (n)
                memcpy(result, x->main_out.p, n);
            result[n] = 0;
            if (out_len)
                *out_len = n;
            if (kind)
                *kind = JINJA_OK;
        } else {
            snprintf(err, errlen, "out of memory");
            if (kind)
                *kind = JINJA_ERR_LIMIT;
        }
    } else if (kind)
        *kind = x->kind;
    jarena_free(&x->arena);
    free(x);
    return result;
}

char *jinja_render_string(const char *src, const cJSON *vars, const char *date, enum jinja_err *kind, char *err,
                          size_t errlen)
{
    jinja_template *t = jinja_parse(src, err, errlen);
    if (!t) {
        if (kind)
            *kind = JINJA_ERR_SYNTAX;
        return NULL;
    }
    char *r = jinja_render(t, vars, date, NULL, NULL, kind, err, errlen);
    jinja_free(t);
    return r;
}
