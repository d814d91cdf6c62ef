/* Fuzz target: the configuration layer (app/config.c) over iniparser
 * (app/config_ini.c) on random files. Checks:
 * - loading never fails or stops on bad lines;
 * - every report names a line of the file, and every line iniparser itself
 *   refuses is reported (where its continued line starts);
 * - each key read from the file has its origin on a line naming the key;
 * - where iniparser accepts the file as it is, the values are the ones
 *   iniparser read, set key by key;
 * - --print-config's output reads back without a single complaint and to
 *   the same values. */
#include <ctype.h>
#include <stdarg.h>
#include <stdbool.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <iniparser/iniparser.h>

#include "config.h"
#include "fuzz.h"

/* What iniparser said of the raw file: the lines it refused. */
static int refused[4096];
static int n_refused;

static int note_refusal(const char *fmt, ...)
{
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    const char *p = strstr(msg, " (");
    if (p && (strstr(msg, "syntax error") || strstr(msg, "too long")) && n_refused < 4096)
        refused[n_refused++] = atoi(p + 2);
    return 0;
}

/* Line `line` (1-based) of text: start and length, or false. */
static bool nth_line(const char *text, size_t n, int line, size_t *off, size_t *len)
{
    size_t o = 0;
    for (int i = 1; i < line; i++) {
        const char *nl = memchr(text + o, '\n', n - o);
        if (!nl)
            return false;
        o = (size_t)(nl - text) + 1;
    }
    if (o >= n && line > 1)
        return false;
    const char *nl = memchr(text + o, '\n', n - o);
    *off = o;
    *len = nl ? (size_t)(nl - text) - o : n - o;
    return true;
}

/* Does the logical line starting at `line`, lowercased, hold needle? (A
 * line whose text so far ends in a backslash goes on with the next.) */
static bool line_holds(const char *text, size_t n, int line, const char *needle)
{
    char buf[8192];
    size_t used = 0;
    for (int l = line;; l++) {
        size_t o, len;
        if (!nth_line(text, n, l, &o, &len))
            break;
        for (size_t i = 0; i < len && used + 1 < sizeof buf; i++)
            buf[used++] = (char)tolower((unsigned char)text[o + i]);
        while (used && isspace((unsigned char)buf[used - 1]))
            used--;
        if (!used || buf[used - 1] != '\\')
            break;
        used--;
    }
    buf[used] = 0;
    return strstr(buf, needle) != NULL;
}

static char *print(const tok_config *c, size_t *n)
{
    char *out = NULL;
    FILE *f = open_memstream(&out, n);
    FUZZ_CHECK(f, "open_memstream");
    config_print(c, f);
    fclose(f);
    return out;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 1 << 16)
        return 0;
    const char *text = (const char *)data;
    int n_lines = 0;
    for (size_t i = 0; i < size; i++)
        n_lines += text[i] == '\n';
    n_lines += size && text[size - 1] != '\n';

    tok_config c;
    config_init(&c);
    char *diag = NULL;
    size_t dn = 0;
    FILE *df = open_memstream(&diag, &dn);
    FUZZ_CHECK(df, "open_memstream");
    config_load_text(&c, text, size, "fuzz.ini", df);
    fclose(df);

    /* every report names a line of the file; used[line]: 1 a report,
     * 2 a skipped line, 3 a key's origin */
    bool nameless = false;
    char *used = calloc((size_t)n_lines + 2, 1);
    FUZZ_CHECK(used, "out of memory");
    for (const char *l = diag; *l;) {
        const char *nl = strchr(l, '\n');
        FUZZ_CHECK(nl && !strncmp(l, "tokscope: fuzz.ini:", 19), "report '%.*s'", (int)(nl ? nl - l : 80), l);
        int line = atoi(l + 19);
        FUZZ_CHECK(line >= 1 && line <= n_lines, "report on line %d of %d: %.*s", line, n_lines, (int)(nl - l), l);
        nameless |= strstr(l, "without a name") && strstr(l, "without a name") < nl;
        const char *ign = strstr(l, "(line ignored)\n");
        used[line] = ign && ign + 14 == nl ? 2 : 1;
        l = nl + 1;
    }
    /* each key read from the file is on a line naming it */
    for (size_t i = 0; i < config_n_keys(); i++) {
        const config_origin *o = &c.origin[i];
        const char *s, *k;
        config_key_at(i, &s, &k);
        if (o->file) {
            FUZZ_CHECK(o->line >= 1 && o->line <= n_lines, "[%s] %s from line %d of %d", s, k, o->line, n_lines);
            FUZZ_CHECK(line_holds(text, size, o->line, k), "[%s] %s placed on line %d", s, k, o->line);
            used[o->line] = 3;
        }
    }

    /* iniparser on the file as it is (it reads a NUL byte as a line's end:
     * those lines are reported before it sees them) */
    if (!memchr(data, 0, size)) {
        int fd = memfd_create("fuzz_ini", MFD_CLOEXEC);
        FUZZ_CHECK(fd >= 0, "memfd_create");
        FUZZ_CHECK(size == 0 || write(fd, data, size) == (ssize_t)size, "write");
        char path[64];
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
        n_refused = 0;
        iniparser_set_error_callback(note_refusal);
        dictionary *d = iniparser_load(path);
        iniparser_set_error_callback(NULL);
        close(fd);
        for (int k = 0; k < n_refused; k++) {
            /* reported where its continued line starts: the nearest report
             * at or before it is of a skipped line */
            int g = refused[k];
            FUZZ_CHECK(g >= 1 && g <= n_lines, "iniparser refused line %d of %d", g, n_lines);
            while (g > 1 && !used[g])
                g--;
            FUZZ_CHECK(used[g] == 2, "iniparser refused line %d, no report from %d to it:\n%s", refused[k], g, diag);
        }
        if (d && !nameless) {
            /* its values, set one by one, are the configuration's (but for
             * temp when its alias is there too: then the later line counts,
             * which the dictionary does not know) */
            bool both = iniparser_find_entry(d, "sampling:temp") && iniparser_find_entry(d, "sampling:temperature");
            tok_config t;
            config_init(&t);
            for (ssize_t i = 0; i < d->size; i++) {
                const char *key = d->key[i], *colon = key ? strchr(key, ':') : NULL;
                if (!colon || !d->val[i] || colon == key)
                    continue;
                char sec[2100], err[600];
                snprintf(sec, sizeof sec, "%.*s", (int)(colon - key), key);
                config_set(&t, sec, colon + 1, d->val[i], "x", err, sizeof err);
            }
            for (size_t i = 0; i < config_n_keys(); i++) {
                char a[4096], b[4096];
                config_value(&c, i, a, sizeof a);
                config_value(&t, i, b, sizeof b);
                const char *s, *k;
                config_key_at(i, &s, &k);
                FUZZ_CHECK(!strcmp(a, b) || (both && !strcmp(k, "temp")), "[%s] %s: read '%s', iniparser's '%s'", s, k,
                           a, b);
            }
            config_free(&t);
        }
        iniparser_freedict(d);
    }
    free(diag);
    free(used);

    /* print, read back: no complaint, same values */
    size_t pn;
    char *printed = print(&c, &pn);
    tok_config r;
    config_init(&r);
    char *rdiag = NULL;
    size_t rdn = 0;
    FILE *rf = open_memstream(&rdiag, &rdn);
    config_load_text(&r, printed, pn, "printed.ini", rf);
    fclose(rf);
    FUZZ_CHECK(r.n_issues == 0, "--print-config output has %d bad lines:\n%s\n%s", r.n_issues, rdiag, printed);
    free(rdiag);
    for (size_t i = 0; i < config_n_keys(); i++) {
        char a[4096], b[4096];
        config_value(&c, i, a, sizeof a);
        config_value(&r, i, b, sizeof b);
        const char *s, *k;
        config_key_at(i, &s, &k);
        /* newlines cannot be printed (a value with one is printed flattened);
         * a value INI cannot hold is printed as a comment saying so */
        char at[80];
        snprintf(at, sizeof at, "\n%s = ", k);
        if (!strchr(a, '\n') && !strchr(a, '\r') && strstr(printed, at))
            FUZZ_CHECK(!strcmp(a, b), "[%s] %s: '%s' printed, '%s' read back", s, k, a, b);
    }
    free(printed);
    config_free(&r);
    config_free(&c);
    return 0;
}
