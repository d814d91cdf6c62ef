/* A Jinja2-subset interpreter for chat templates, rendering like Hugging Face
 * transformers' apply_chat_template: ImmutableSandboxedEnvironment with
 * trim_blocks, lstrip_blocks, loopcontrols, keep_trailing_newline=False.
 *
 * All values of one render live in an arena freed at the end, and errors
 * unwind with longjmp, so a failing render cannot leak or leave half-built
 * state. Limits on recursion, steps, memory and output size turn a hostile
 * template into an error instead of a hang or crash.
 *
 * The first section is the public API; the rest is shared by jinja_*.c only. */
#ifndef TOKSCOPE_JINJA_H
#define TOKSCOPE_JINJA_H

#include <setjmp.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct cJSON;

enum jinja_err {
    JINJA_OK = 0,
    JINJA_ERR_SYNTAX,  /* template does not parse */
    JINJA_ERR_RUNTIME, /* undefined names, type errors, unsupported constructs */
    JINJA_ERR_RAISE,   /* the template called raise_exception(msg) */
    JINJA_ERR_LIMIT,   /* recursion, step, memory or output limit */
};

typedef struct jinja_limits {
    size_t max_output; /* bytes of rendered text */
    size_t max_memory; /* bytes of arena per render */
    int64_t max_steps; /* evaluated nodes */
    int max_depth;     /* macro calls / nested evaluation */
} jinja_limits;

jinja_limits jinja_default_limits(void);

typedef struct jinja_template jinja_template;

/* Parses a template. NULL with "line:col: message" in err on failure. */
jinja_template *jinja_parse(const char *src, char *err, size_t errlen);
void jinja_free(jinja_template *t);

/* Renders with the variables of a JSON object (any JSON values). `date`
 * ("YYYY-MM-DD", NULL = today) pins strftime_now. Returns a malloc'd string
 * (its length in *out_len when non-NULL), or NULL with the error kind in *kind
 * and a message in err (raise_exception messages are copied verbatim). */
char *jinja_render(const jinja_template *t, const struct cJSON *vars, const char *date, const jinja_limits *lim,
                   size_t *out_len, enum jinja_err *kind, char *err, size_t errlen);

/* cJSON keeps one double per number, so 2.0 and 2 look alike. Call this on a
 * tree parsed from `text` to flag the numbers written with '.', 'e' or 'E';
 * they then stay floats in templates (tojson prints 2.0 like Python). */
#define JINJA_CJSON_FLOAT (1 << 12) /* extra bit in cJSON.type; cJSON's own checks mask 0xFF */
void jinja_cjson_mark_floats(struct cJSON *root, const char *text);

/* One call: parse + render. */
char *jinja_render_string(const char *src, const struct cJSON *vars, const char *date, enum jinja_err *kind,
                          char *err, size_t errlen);

/* ======================= internals (jinja_*.c only) ======================= */

/* ---- arena ---- */
typedef struct jarena_block jarena_block;
typedef struct jarena {
    jarena_block *head;
    size_t used_total, limit;
    void (*on_oom)(void *ud); /* must not return (longjmp) */
    void *ud;
} jarena;
void *jarena_alloc(jarena *a, size_t n); /* zeroed, 16-aligned */
void jarena_free(jarena *a);
char *jarena_strndup(jarena *a, const char *s, size_t n);

/* ---- values ---- */
enum jv_type {
    JV_UNDEF,
    JV_NONE,
    JV_BOOL,
    JV_INT,
    JV_FLOAT,
    JV_STR,
    JV_LIST,
    JV_DICT,
    JV_NS, /* namespace(): a dict whose attributes can be assigned */
    JV_MACRO,
    JV_FUNC, /* built-in global or bound helper (loop.cycle, caller) */
};

typedef struct jstr {
    size_t len;
    char *p; /* NUL-terminated */
} jstr;

struct jlist;
struct jdict;
struct jmacro;

typedef struct jv {
    int t;
    union {
        bool b;
        int64_t i;
        double f;
        jstr *s;
        struct jlist *l;
        struct jdict *d;
        struct jmacro *m;
        int fn;
        const char *undef_hint; /* why it is undefined, for error messages */
    } u;
    void *bound; /* JV_FUNC: bound data */
} jv;

typedef struct jlist {
    size_t n, cap;
    jv *v;
    bool tuple; /* prints as (a, b) */
    bool group; /* groupby's (grouper, list) pair: .grouper and .list work */
} jlist;

typedef struct jdict {
    size_t n, cap;
    jv *k, *v;
} jdict;

struct jnode;
struct jframe;
typedef struct jmacro {
    const struct jnode *def;
    struct jframe *closure;
    jv caller; /* JV_UNDEF unless called via {% call %} */
} jmacro;

/* ---- lexer ---- */
enum jtok_type {
    JT_EOF,
    JT_DATA,
    JT_VAR_BEGIN,
    JT_VAR_END,
    JT_BLOCK_BEGIN,
    JT_BLOCK_END,
    JT_NAME,
    JT_STR,
    JT_INT,
    JT_FLOAT,
    JT_OP,
};

typedef struct jtok {
    int type;
    int line, col;
    const char *s; /* name / string contents / data (arena) / op text */
    size_t len;
    int64_t i;
    double f;
} jtok;

typedef struct jtoks {
    jtok *v;
    size_t n, cap;
} jtoks;

/* Tokenizes with trim_blocks/lstrip_blocks applied to data. 0 on success,
 * else -1 with "line:col: msg" in err. */
int jinja_lex(const char *src, jarena *a, jtoks *out, char *err, size_t errlen);

/* ---- AST ---- */
enum jn_kind {
    /* statements */
    JN_DATA,
    JN_OUTPUT,
    JN_IF,
    JN_FOR,
    JN_SET,
    JN_SETBLOCK,
    JN_MACRO,
    JN_CALLBLOCK,
    JN_FILTERBLOCK,
    JN_BREAK,
    JN_CONTINUE,
    JN_BLOCK, /* plain body (generation blocks) */
    JN_WITH,  /* {% with a = x %}: targets/kwargs, body in a new scope */
    /* expressions */
    JE_CONST,
    JE_NAME,
    JE_ATTR,
    JE_ITEM,
    JE_SLICE,
    JE_CALL,
    JE_FILTER,
    JE_TEST,
    JE_BINOP,
    JE_UNARY,
    JE_AND,
    JE_OR,
    JE_NOT,
    JE_COND,
    JE_LIST,
    JE_DICT,
    JE_CMP,
};

typedef struct jnode {
    int kind;
    int line, col;
    int op;           /* operator char code or JOP_*; negation flag for tests */
    const char *name; /* variable / attribute / filter / test / macro name */
    jv cval;
    struct jnode *a, *b, *c, *d;
    struct jnode **args; /* positional args, list items, dict keys */
    int nargs;
    const char **kwnames;
    struct jnode **kwargs; /* keyword args, dict values */
    int nkw;
    const char **targets; /* for/set targets, macro parameter names */
    int ntargets;
    struct jnode *body, *else_body; /* statement lists */
    struct jnode *next;             /* next statement */
} jnode;

enum {
    JOP_EQ = 256,
    JOP_NE,
    JOP_LT,
    JOP_LE,
    JOP_GT,
    JOP_GE,
    JOP_IN,
    JOP_NOTIN,
    JOP_FLOORDIV,
    JOP_POW,
};

struct jinja_template {
    jarena arena;
    jnode *body;
    char *src;
};

int jinja_parse_tokens(const jtoks *toks, jarena *a, jnode **out, char *err, size_t errlen);

/* ---- evaluation context ---- */
typedef struct jframe {
    struct jframe *parent;
    jdict *vars;
} jframe;

typedef struct jbuf {
    char *p;
    size_t len, cap;
} jbuf;

typedef struct jctx {
    jarena arena;
    jmp_buf jmp;
    enum jinja_err kind;
    char *err;
    size_t errlen;
    jbuf *out;
    jbuf main_out;
    jinja_limits lim;
    int64_t steps;
    int depth;
    jframe *root;
    const char *date;
    int cur_line, cur_col; /* position of the node being evaluated */
} jctx;

_Noreturn void jx_fail(jctx *x, enum jinja_err kind, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* f truncated to an integer, as Python's int(); a value that int64_t cannot
 * hold (Python would make a big integer) fails the render, naming it */
int64_t jx_trunc_int(jctx *x, double f);

/* value helpers (jinja_value.c) */
jv jv_undef(const char *hint);
jv jv_none(void);
jv jv_bool(bool b);
jv jv_int(int64_t i);
jv jv_float(double f);
jv jv_strn(jctx *x, const char *s, size_t n);
jv jv_str(jctx *x, const char *s);
jv jv_list(jctx *x, size_t cap);
jv jv_dict(jctx *x);
void jlist_push(jctx *x, jlist *l, jv v);
jv *jdict_find(const jdict *d, const char *key, size_t keylen);
jv *jdict_find_v(const jdict *d, jv key);
void jdict_set(jctx *x, jdict *d, jv key, jv val);
void jdict_append(jctx *x, jdict *d, jv key, jv val); /* caller knows the key is new */
void jdict_set_str(jctx *x, jdict *d, const char *key, jv val);
bool jv_truthy(jv v);
bool jv_equal(jv a, jv b);
int jv_compare(jctx *x, jv a, jv b); /* <0 0 >0, errors on unorderable */
const char *jv_type_name(jv v);
bool jv_is_str(jv v);
/* str(v) as Python prints it (lists/dicts as repr). */
jstr *jv_to_str(jctx *x, jv v);
void jv_repr(jctx *x, jbuf *b, jv v);
void jv_json(jctx *x, jbuf *b, jv v, int indent, int level, const char *item_sep, const char *key_sep);
/* json.dumps options beyond indent/separators */
void jv_json_opts(jctx *x, jbuf *b, jv v, int indent, const char *item_sep, const char *key_sep, bool ensure_ascii,
                  bool sort_keys);
void jv_fmt_float(double f, char *buf, size_t n);
jv jv_from_cjson(jctx *x, const struct cJSON *j);
/* Iterates lists, dict keys, string characters; undefined gives nothing. */
jlist *jv_iter_list(jctx *x, jv v);
size_t utf8_count(const char *s, size_t n);

void jbuf_put(jctx *x, jbuf *b, const char *s, size_t n);
void jbuf_puts(jctx *x, jbuf *b, const char *s);

/* evaluation (jinja_eval.c) */
jv jx_eval(jctx *x, const jnode *n);
jv jx_call_value(jctx *x, jv fn, jv *args, int nargs, const char **kwn, jv *kwv, int nkw);
bool jx_test(jctx *x, const char *name, jv v, jv *args, int nargs);
jv jx_filter(jctx *x, const char *name, jv v, jv *args, int nargs, const char **kwn, jv *kwv, int nkw);
jv jx_getattr(jctx *x, jv obj, const char *name);
jv jx_getitem(jctx *x, jv obj, jv key);

/* methods and globals (jinja_methods.c) */
bool jx_call_method(jctx *x, jv self, const char *name, jv *args, int nargs, const char **kwn, jv *kwv, int nkw,
                    jv *out);
enum {
    JFN_RANGE = 1,
    JFN_NAMESPACE,
    JFN_RAISE,
    JFN_STRFTIME,
    JFN_DICT,
    JFN_CYCLE,
    JFN_CHANGED, /* loop.changed(); bound: struct jchanged */
    JFN_RECURSE, /* a recursive loop's loop(); only called through the loop object */
};
bool jx_global(const char *name, jv *out);
typedef struct jchanged {
    bool seen;
    jv last;
} jchanged;
jv jx_call_builtin(jctx *x, jv fn, jv *args, int nargs, const char **kwn, jv *kwv, int nkw);
jv jx_kwarg(const char **kwn, jv *kwv, int nkw, const char *name);
/* shared string helpers (jinja_filters.c): mode 'u' upper, 'l' lower,
 * 'c' capitalize, 't' jinja title, 'T' str.title, 's' swapcase */
jv jx_strip(jctx *x, jv v, jv chars, bool left, bool right);
jv jx_case(jctx *x, jv v, int mode);
jv jx_replace(jctx *x, jv v, jv old, jv new_, int64_t count);
void jx_exec_template(jctx *x, const jnode *body);
/* Python's `fmt % args` (the format filter and the % operator on strings). */
jv jx_printf(jctx *x, const jstr *fmt, jv args);

#endif
