/* INI through iniparser (config_ini.h): iniparser reads the file; this file
 * feeds it a copy without the lines it refused, and finds the line of each
 * section and key it read. */
#include "config_ini.h"

#include <ctype.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <iniparser/iniparser.h>

/* ---- the text, line by line --------------------------------------------- */

typedef struct text_line {
    size_t off, len; /* the content, without its newline */
    bool nl;         /* ended by a newline */
    bool dead;       /* reported: iniparser sees an empty line */
} text_line;

typedef struct text_lines {
    const char *text;
    text_line *l;
    int n;
} text_lines;

static bool split_lines(const char *text, size_t len, text_lines *t)
{
    size_t n = 0;
    for (size_t i = 0; i < len; i++)
        n += text[i] == '\n';
    if (len && text[len - 1] != '\n')
        n++;
    if (n > INT_MAX / 2)
        return false;
    t->text = text;
    t->l = calloc(n ? n : 1, sizeof *t->l);
    if (!t->l)
        return false;
    size_t start = 0;
    int k = 0;
    for (size_t i = 0; i < len; i++)
        if (text[i] == '\n') {
            t->l[k++] = (text_line){start, i - start, true, false};
            start = i + 1;
        }
    if (start < len)
        t->l[k++] = (text_line){start, len - start, false, false};
    t->n = k;
    return true;
}

/* iniparser's logical lines: when the text read so far ends in a backslash
 * (trailing white space dropped), the next line replaces the backslash. A
 * line still continued at the end of the file is never read. */
typedef struct logical {
    int first, last; /* its lines */
    char *text;      /* NULL: dropped at the end of the file */
} logical;

static void logical_free(logical *g, int n)
{
    for (int i = 0; i < n; i++)
        free(g[i].text);
    free(g);
}

/* The logical lines of t as iniparser will read it (dead lines empty);
 * NULL when out of memory. */
static logical *logical_lines(const text_lines *t, int *n_out)
{
    logical *g = calloc(t->n ? (size_t)t->n : 1, sizeof *g);
    size_t cap = 64, n = 0;
    char *acc = malloc(cap);
    int k = 0, first = 0;
    if (!g || !acc) {
        free(g);
        free(acc);
        return NULL;
    }
    for (int i = 0; i < t->n; i++) {
        const text_line *l = &t->l[i];
        size_t m = l->dead ? 0 : l->len;
        if (n + m + 1 > cap) {
            while (n + m + 1 > cap)
                cap *= 2;
            char *a = realloc(acc, cap);
            if (!a) {
                free(acc);
                logical_free(g, k);
                return NULL;
            }
            acc = a;
        }
        memcpy(acc + n, t->text + l->off, m);
        n += m;
        while (n && isspace((unsigned char)acc[n - 1]))
            n--;
        acc[n] = 0;
        const bool more = n && acc[n - 1] == '\\';
        if (more && i + 1 < t->n) {
            acc[--n] = 0;
            continue;
        }
        g[k].first = first;
        g[k].last = i;
        g[k].text = more ? NULL : strdup(acc);
        if (!more && !g[k].text) {
            free(acc);
            logical_free(g, k);
            return NULL;
        }
        k++;
        first = i + 1;
        n = 0;
    }
    free(acc);
    *n_out = k;
    return g;
}

static char *strip_lower(char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    size_t n = strlen(s);
    while (n && isspace((unsigned char)s[n - 1]))
        n--;
    s[n] = 0;
    for (char *p = s; *p; p++)
        *p = (char)tolower((unsigned char)*p);
    return s;
}

/* ---- where things are: section headers and `key =` lines ----------------- */

typedef struct key_at {
    char *section; /* NULL: after a header without a name */
    char *prev;    /* then: the last named section before it ("" if none) */
    char *key;
    int line;
} key_at;

typedef struct header_at {
    char *name; /* NULL: without a name */
    int line;
} header_at;

typedef struct places {
    key_at *keys; /* sorted by section (NULL last), key, line */
    size_t n_keys;
    header_at *heads; /* in file order */
    size_t n_heads;
    header_at *by_name; /* the named ones, sorted by name, line */
    size_t n_named;
} places;

static void places_free(places *p)
{
    for (size_t i = 0; i < p->n_keys; i++) {
        free(p->keys[i].section);
        free(p->keys[i].prev);
        free(p->keys[i].key);
    }
    for (size_t i = 0; i < p->n_heads; i++)
        free(p->heads[i].name);
    free(p->keys);
    free(p->heads);
    free(p->by_name);
    memset(p, 0, sizeof *p);
}

static int key_cmp(const void *a, const void *b)
{
    const key_at *x = a, *y = b;
    if (!x->section != !y->section)
        return x->section ? -1 : 1;
    int c = x->section ? strcmp(x->section, y->section) : 0;
    if (!c)
        c = strcmp(x->key, y->key);
    return c ? c : (x->line > y->line) - (x->line < y->line);
}

static int head_cmp(const void *a, const void *b)
{
    const header_at *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    return c ? c : (x->line > y->line) - (x->line < y->line);
}

static char *dup_or_null(const char *s, bool *oom)
{
    if (!s)
        return NULL;
    char *d = strdup(s);
    *oom |= !d;
    return d;
}

/* The headers and key lines of the text as iniparser will read it (refused
 * lines blank); keys sorted by section, key and line. */
static bool scan(const text_lines *t, places *p)
{
    memset(p, 0, sizeof *p);
    size_t cap_k = 0, cap_h = 0;
    const char *cur = "", *named = "";
    char *cur_own = NULL, *named_own = NULL; /* cur: NULL after a nameless header */
    bool oom = false;
    int n_groups;
    logical *g = logical_lines(t, &n_groups);
    if (!g)
        return false;
    for (int i = 0; i < n_groups && !oom; i++) {
        if (!g[i].text)
            continue;
        char *s = strip_lower(g[i].text);
        size_t n = strlen(s);
        const int line = g[i].first + 1;
        if (n && s[0] == '[' && s[n - 1] == ']') {
            /* iniparser's name: up to the first ']' ("[a]b]" is [a]); none
             * in "[]" or "[]x]", where it keeps an earlier one cut short */
            char *name = s + 1;
            name[strcspn(name, "]")] = 0;
            name = strip_lower(name);
            if (p->n_heads == cap_h) {
                cap_h = cap_h ? 2 * cap_h : 16;
                header_at *h = realloc(p->heads, cap_h * sizeof *h);
                if (!h) {
                    oom = true;
                    break;
                }
                p->heads = h;
            }
            header_at *h = &p->heads[p->n_heads++];
            h->line = line;
            h->name = *name ? dup_or_null(name, &oom) : NULL;
            free(cur_own);
            cur_own = dup_or_null(h->name, &oom);
            cur = cur_own;
            if (cur) {
                free(named_own);
                named_own = dup_or_null(cur, &oom);
                named = named_own ? named_own : "";
            }
        } else if (n && s[0] != '#' && s[0] != ';' && strchr(s, '=')) {
            *strchr(s, '=') = 0;
            char *key = strip_lower(s);
            if (*key) {
                if (p->n_keys == cap_k) {
                    cap_k = cap_k ? 2 * cap_k : 32;
                    key_at *k = realloc(p->keys, cap_k * sizeof *k);
                    if (!k) {
                        oom = true;
                        break;
                    }
                    p->keys = k;
                }
                key_at *k = &p->keys[p->n_keys++];
                k->section = dup_or_null(cur, &oom);
                k->prev = cur ? NULL : dup_or_null(named, &oom);
                k->key = dup_or_null(key, &oom);
                k->line = line;
                oom |= !k->key;
            }
        }
    }
    logical_free(g, n_groups);
    free(cur_own);
    free(named_own);
    if (oom) {
        places_free(p);
        return false;
    }
    if (p->n_keys)
        qsort(p->keys, p->n_keys, sizeof *p->keys, key_cmp);
    p->by_name = malloc((p->n_heads ? p->n_heads : 1) * sizeof *p->by_name);
    if (!p->by_name) {
        places_free(p);
        return false;
    }
    for (size_t i = 0; i < p->n_heads; i++)
        if (p->heads[i].name)
            p->by_name[p->n_named++] = p->heads[i]; /* the names stay owned by heads */
    if (p->n_named)
        qsort(p->by_name, p->n_named, sizeof *p->by_name, head_cmp);
    return true;
}

/* The first header of a section (0: none). */
static int header_line(const places *p, const char *name)
{
    size_t lo = 0, hi = p->n_named;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (strcmp(p->by_name[mid].name, name) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < p->n_named && !strcmp(p->by_name[lo].name, name) ? p->by_name[lo].line : 0;
}

/* The line whose value iniparser kept for section:key: the last one. After a
 * header without a name iniparser files keys under an earlier name, cut
 * short: those key lines match a section that begins their last named one. */
static int key_line(const places *p, const char *section, const char *key)
{
    size_t lo = 0, hi = p->n_keys; /* the first (section, key) at or after */
    const key_at want = {(char *)section, NULL, (char *)key, INT_MAX};
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (key_cmp(&p->keys[mid], &want) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo > 0 && p->keys[lo - 1].section && !strcmp(p->keys[lo - 1].section, section) &&
        !strcmp(p->keys[lo - 1].key, key))
        return p->keys[lo - 1].line;
    int best = 0;
    for (size_t i = p->n_keys; i-- > 0 && !p->keys[i].section;)
        if (!strcmp(p->keys[i].key, key) && !strncmp(p->keys[i].prev, section, strlen(section)) &&
            p->keys[i].line > best)
            best = p->keys[i].line;
    return best;
}

/* ---- iniparser, on a scratch copy --------------------------------------- */

/* iniparser's error callback takes no context: what the current load said */
static struct {
    const char *path;
    int *lines;
    bool *too_long;
    size_t n, cap;
    char other[256]; /* a message that names no line */
} said;

static int on_error(const char *fmt, ...)
{
    char msg[INI_LINE_MAX + 512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    static const char syntax[] = "iniparser: syntax error in ", too_long[] = "iniparser: input line too long in ";
    bool is_long = !strncmp(msg, too_long, sizeof too_long - 1);
    const char *p = is_long                                        ? msg + sizeof too_long - 1
                    : !strncmp(msg, syntax, sizeof syntax - 1) ? msg + sizeof syntax - 1
                                                                   : NULL;
    size_t pl = strlen(said.path);
    if (p && !strncmp(p, said.path, pl) && !strncmp(p + pl, " (", 2)) {
        int line = atoi(p + pl + 2);
        if (said.n == said.cap) {
            size_t cap = said.cap ? 2 * said.cap : 16;
            int *l = realloc(said.lines, cap * sizeof *l);
            if (l)
                said.lines = l;
            bool *t = l ? realloc(said.too_long, cap * sizeof *t) : NULL;
            if (t)
                said.too_long = t;
            if (!l || !t)
                return 0; /* the line stays unplaced: reported as a load failure */
            said.cap = cap;
        }
        said.lines[said.n] = line;
        said.too_long[said.n++] = is_long;
    } else if (!said.other[0]) {
        snprintf(said.other, sizeof said.other, "%.*s", (int)sizeof said.other - 1, msg);
        char *nl = strchr(said.other, '\n');
        if (nl)
            *nl = 0;
    }
    return 0;
}

typedef struct scratch {
    int fd;
    char path[4096];
    bool unlink; /* a temporary file rather than a memfd */
} scratch;

static bool scratch_open(scratch *s)
{
    s->unlink = false;
    s->fd = memfd_create("tokscope-ini", MFD_CLOEXEC);
    if (s->fd >= 0) {
        snprintf(s->path, sizeof s->path, "/proc/self/fd/%d", s->fd);
        if (access(s->path, R_OK) == 0)
            return true;
        close(s->fd); /* no /proc */
    }
    const char *tmp = getenv("TMPDIR");
    snprintf(s->path, sizeof s->path, "%s/tokscope-ini.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    s->fd = mkstemp(s->path);
    s->unlink = s->fd >= 0;
    return s->fd >= 0;
}

static void scratch_close(scratch *s)
{
    if (s->unlink)
        unlink(s->path);
    close(s->fd);
}

/* The text with the dead lines blank, into the scratch file. */
static bool scratch_write(const scratch *s, const text_lines *t)
{
    if (ftruncate(s->fd, 0) != 0)
        return false;
    off_t at = 0;
    for (int i = 0; i < t->n; i++) {
        const text_line *l = &t->l[i];
        const char *p = t->text + l->off;
        size_t n = (l->dead ? 0 : l->len) + l->nl;
        if (l->dead)
            p = "\n";
        while (n > 0) {
            ssize_t w = pwrite(s->fd, p, n, at);
            if (w <= 0)
                return false;
            p += w;
            n -= (size_t)w;
            at += w;
        }
    }
    return true;
}

/* ---- items -------------------------------------------------------------- */

typedef struct seq_item {
    ini_item it;
    size_t seq; /* items of one line keep their order */
} seq_item;

typedef struct item_list {
    seq_item *v;
    char **own; /* strings the items point at, freed with them */
    size_t n, cap, n_own, cap_own;
    bool oom;
} item_list;

static void push(item_list *l, ini_item it)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 32;
        seq_item *v = realloc(l->v, cap * sizeof *v);
        if (!v) {
            l->oom = true;
            return;
        }
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n] = (seq_item){it, l->n};
    l->n++;
}

static char *own(item_list *l, const char *s, size_t n)
{
    if (l->n_own == l->cap_own) {
        size_t cap = l->cap_own ? 2 * l->cap_own : 32;
        char **v = realloc(l->own, cap * sizeof *v);
        if (!v) {
            l->oom = true;
            return NULL;
        }
        l->own = v;
        l->cap_own = cap;
    }
    char *d = strndup(s, n);
    if (!d)
        l->oom = true;
    else
        l->own[l->n_own++] = d;
    return d;
}

static int item_cmp(const void *a, const void *b)
{
    const seq_item *x = a, *y = b;
    unsigned lx = x->it.line > 0 ? (unsigned)x->it.line : UINT_MAX;
    unsigned ly = y->it.line > 0 ? (unsigned)y->it.line : UINT_MAX;
    if (lx != ly)
        return lx < ly ? -1 : 1;
    return (x->seq > y->seq) - (x->seq < y->seq);
}

/* The longest section name that key ("section:key") starts with; 0 for
 * keys before any header (":key"). Sections are the entries without a value. */
static size_t section_len(dictionary *d, const char *key)
{
    static const char absent[] = "";
    char pre[2 * INI_LINE_MAX + 2];
    size_t n = strlen(key);
    if (n >= sizeof pre)
        return 0;
    memcpy(pre, key, n + 1);
    for (size_t i = n; i-- > 0;)
        if (pre[i] == ':') {
            pre[i] = 0;
            if (i > 0 && dictionary_get(d, pre, absent) == NULL)
                return i;
        }
    return 0;
}

/* Items of a dictionary iniparser read, placed with p. */
static void dict_items(dictionary *d, const places *p, item_list *l)
{
    for (ssize_t i = 0; i < d->size && !l->oom; i++) {
        const char *k = d->key[i];
        if (!k)
            continue;
        if (!d->val[i]) {
            if (*k)
                push(l, (ini_item){INI_SECTION, header_line(p, k), k, NULL, NULL, 0, 0});
            continue;
        }
        size_t sl = section_len(d, k);
        const char *sec = own(l, k, sl), *key = k + sl + (k[sl] == ':');
        if (!sec)
            break;
        int sec_line = *sec ? header_line(p, sec) : 0;
        push(l, (ini_item){INI_KEY, key_line(p, sec, key), sec, key, d->val[i], sec_line, 0});
    }
    /* key lines that a later line of the same section and key overrides */
    for (size_t i = 0; i < p->n_keys && p->keys[i].section && !l->oom;) {
        size_t j = i; /* the run of one section and key: its last line wins */
        while (j + 1 < p->n_keys && p->keys[j + 1].section && !strcmp(p->keys[j + 1].section, p->keys[i].section) &&
               !strcmp(p->keys[j + 1].key, p->keys[i].key))
            j++;
        for (size_t k = i; k < j; k++)
            push(l, (ini_item){INI_OVERRIDDEN, p->keys[k].line, p->keys[k].section, p->keys[k].key, NULL, 0,
                               p->keys[j].line});
        i = j + 1;
    }
    for (size_t i = 0; i < p->n_heads; i++)
        if (!p->heads[i].name)
            push(l, (ini_item){INI_NAMELESS, p->heads[i].line, "", NULL, NULL, 0, 0});
}

static void skip(item_list *l, int line, const char *why)
{
    push(l, (ini_item){INI_SKIPPED, line, "", NULL, why, 0, 0});
}

bool ini_read(const char *text, size_t len, ini_item_fn fn, void *user, char *err, size_t errlen)
{
    text_lines t;
    item_list items = {0};
    scratch sc;
    if (!split_lines(text, len, &t)) {
        snprintf(err, errlen, "out of memory");
        return false;
    }
    if (!scratch_open(&sc)) {
        free(t.l);
        snprintf(err, errlen, "no scratch file for iniparser");
        return false;
    }
    /* iniparser reads a NUL byte as the end of its line, and takes the
     * rest for a line that is too long, except on the last line */
    for (int i = 0; i < t.n; i++)
        if (memchr(text + t.l[i].off, 0, t.l[i].len)) {
            t.l[i].dead = true;
            skip(&items, i + 1, "contains a NUL byte");
        }
    dictionary *d = NULL;
    bool ok = true;
    err[0] = 0;
    while (ok && !d) {
        said.path = sc.path;
        said.n = 0;
        said.other[0] = 0;
        if (!scratch_write(&sc, &t)) {
            snprintf(err, errlen, "cannot write iniparser's copy");
            ok = false;
            break;
        }
        iniparser_set_error_callback(on_error);
        d = iniparser_load(sc.path);
        iniparser_set_error_callback(NULL);
        if (d)
            break;
        /* blank the lines it named (a continued line as a whole) and read
         * again: a line too long stops it, so what follows is unread */
        int fresh = 0, n_groups = 0;
        logical *g = logical_lines(&t, &n_groups);
        if (!g) {
            snprintf(err, errlen, "out of memory");
            ok = false;
            break;
        }
        for (size_t k = 0; k < said.n; k++) {
            int line = said.lines[k] - 1, lo = 0, hi = n_groups - 1;
            if (line < 0 || line >= t.n || n_groups == 0)
                continue;
            while (lo < hi) { /* the logical line holding it */
                int mid = lo + (hi - lo) / 2;
                if (g[mid].last < line)
                    lo = mid + 1;
                else
                    hi = mid;
            }
            const int a = g[lo].first, b = g[lo].last;
            bool alive = false;
            for (int j = a; j <= b; j++) {
                alive |= !t.l[j].dead;
                t.l[j].dead = true;
            }
            if (!alive)
                continue;
            fresh++;
            skip(&items, a + 1,
                 said.too_long[k] ? "line too long (over 1022 bytes)" : "not a [section], a key = value or a comment");
        }
        logical_free(g, n_groups);
        if (!fresh) {
            snprintf(err, errlen, "%s", said.other[0] ? said.other : "iniparser could not read it");
            ok = false;
        }
    }
    free(said.lines);
    free(said.too_long);
    said.lines = NULL;
    said.too_long = NULL;
    said.n = said.cap = 0;
    said.path = NULL; /* it pointed into sc */
    scratch_close(&sc);

    places p;
    if (d && !scan(&t, &p)) {
        snprintf(err, errlen, "out of memory");
        ok = false;
    } else if (d) {
        dict_items(d, &p, &items);
    }
    if (items.oom) {
        snprintf(err, errlen, "out of memory");
        ok = false;
    }
    if (!items.oom && items.n) {
        qsort(items.v, items.n, sizeof *items.v, item_cmp);
        for (size_t i = 0; i < items.n; i++)
            fn(user, &items.v[i].it);
    }
    if (d)
        places_free(&p);
    iniparser_freedict(d);
    for (size_t i = 0; i < items.n_own; i++)
        free(items.own[i]);
    free(items.own);
    free(items.v);
    free(t.l);
    return ok;
}
