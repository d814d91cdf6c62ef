/* Configuration: the shipped conf/tokscope.ini is valid, matches the built-in
 * defaults and documents every key; every section is read; a bad line, key or
 * value is reported as FILE:LINE and skipped, never fatal; layers override
 * in order and each key remembers its source; --print-config's output reads
 * back to the same values; the values are iniparser's, and ini_read places
 * them on their lines. */
#include <ctype.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <iniparser/iniparser.h>

#include "config.h"
#include "config_ini.h"
#include "testutil.h"

static const char *write_tmp(const char *text, size_t n)
{
    static char path[64];
    snprintf(path, sizeof path, "/tmp/tokscope-cfg-XXXXXX");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, n), (ssize_t)n);
    close(fd);
    return path;
}

/* Loads text as a file; returns the diagnostics (malloc'd). */
static char *load_text(tok_config *c, const char *text)
{
    const char *p = write_tmp(text, strlen(text));
    char *diag = NULL;
    size_t dn = 0;
    FILE *d = open_memstream(&diag, &dn);
    char err[512] = "";
    if (!config_load(c, p, true, d, err, sizeof err))
        fail_msg("%s", err);
    fclose(d);
    remove(p);
    return diag;
}

static size_t key_of(const char *section, const char *name)
{
    const char *s, *n;
    for (size_t i = 0; config_key_at(i, &s, &n); i++)
        if (!strcmp(s, section) && !strcmp(n, name))
            return i;
    fail_msg("no key [%s] %s", section, name);
    return 0;
}

static void test_shipped_file_is_valid(void **state)
{
    (void)state;
    tok_config c, d;
    config_init(&c);
    config_init(&d);
    char *diag = NULL;
    size_t dn = 0;
    FILE *df = open_memstream(&diag, &dn);
    char err[512] = "";
    if (!config_load(&c, "conf/tokscope.ini", true, df, err, sizeof err))
        fail_msg("conf/tokscope.ini: %s", err);
    fclose(df);
    if (c.n_issues)
        fail_msg("conf/tokscope.ini: %s", diag);
    free(diag);
    /* the documented values are the defaults, key by key */
    for (size_t i = 0; i < config_n_keys(); i++) {
        char a[4096], b[4096];
        config_value(&c, i, a, sizeof a);
        config_value(&d, i, b, sizeof b);
        const char *s, *n;
        config_key_at(i, &s, &n);
        if (strcmp(a, b) != 0)
            fail_msg("[%s] %s: conf/tokscope.ini says '%s', the default is '%s'", s, n, a, b);
    }
    assert_false(c.ui.engine.sampling.seed_set);
    assert_null(c.ui.engine.template_name);
    assert_true(c.ui.engine.context_shift);
    assert_false(c.ui.engine.no_kv_cache);
    assert_int_equal(c.ui.engine.n_ctx, 0);
    assert_int_equal(c.ui.engine.blas, BLAS_MODE_AUTO);
    assert_false(c.ui.no_autosave);
    config_free(&c);
    config_free(&d);
}

/* Every key --print-config prints is documented in the shipped file, as a
 * setting or a commented-out example ("; key = ..."). */
static void test_shipped_file_documents_every_key(void **state)
{
    (void)state;
    FILE *f = fopen("conf/tokscope.ini", "r");
    assert_non_null(f);
    static char text[1 << 16];
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = 0;
    const char *s, *k;
    for (size_t i = 0; config_key_at(i, &s, &k); i++) {
        char sec[64];
        snprintf(sec, sizeof sec, "[%s]", s);
        const char *at = strstr(text, sec);
        if (!at)
            fail_msg("conf/tokscope.ini has no %s", sec);
        const char *next = strstr(at + 1, "\n[");
        bool found = false;
        for (const char *l = at; l && (!next || l < next) && !found; l = strchr(l + 1, '\n')) {
            const char *p = l + 1;
            while (*p == ' ' || *p == ';')
                p++;
            size_t kl = strlen(k);
            found = !strncmp(p, k, kl) && (p[kl] == ' ' || p[kl] == '=');
        }
        if (!found)
            fail_msg("conf/tokscope.ini does not document [%s] %s", s, k);
    }
}

static void test_all_sections(void **state)
{
    (void)state;
    tok_config c;
    config_init(&c);
    char *diag = load_text(&c, "[sampling]\ntemp = 0.3\ntop_k = 7\nseed = 42\nstop = \"</s>\"\n"
                               "[ui]\ncolors = false\nprob_colors = yes\nmouse = on\ninspector_order = post\n"
                               "autosave = no\n"
                               "[paths]\nmodel_dirs = /a/b: ~/c , /d\nmodel = /x/y.gguf\n"
                               "[engine]\nn_ctx = 512\nthreads = 3\ntemplate = chatml\ncontext_shift = false\n"
                               "kv_cache = false\ncache_type_k = q8_0\nblas = off\n"
                               "[chat]\nsystem = \"Be brief; really.\"\n");
    assert_int_equal(c.n_issues, 0);
    assert_string_equal(diag, "");
    free(diag);
    assert_float_equal(c.ui.engine.sampling.temp, 0.3f, 1e-6);
    assert_int_equal(c.ui.engine.sampling.top_k, 7);
    assert_true(c.ui.engine.sampling.seed_set);
    assert_int_equal(c.ui.engine.sampling.seed, 42);
    assert_int_equal(c.ui.engine.sampling.n_stop, 1);
    assert_string_equal(c.ui.engine.sampling.stop[0], "</s>");
    assert_false(c.ui.colors);
    assert_true(c.ui.prob_colors);
    assert_true(c.ui.mouse);
    assert_true(c.ui.post_order);
    assert_int_equal(c.n_dirs, 3);
    assert_string_equal(c.dirs[0], "/a/b");
    assert_string_equal(c.dirs[1], "~/c");
    assert_string_equal(c.dirs[2], "/d");
    assert_int_equal(c.ui.n_model_dirs, 3);
    assert_string_equal(c.ui.engine.model_path, "/x/y.gguf");
    assert_int_equal(c.ui.engine.n_ctx, 512);
    assert_int_equal(c.ui.engine.n_threads, 3);
    assert_string_equal(c.ui.engine.template_name, "chatml");
    assert_false(c.ui.engine.context_shift);
    assert_true(c.ui.engine.no_kv_cache);
    assert_int_equal(c.ui.engine.cache_type_k, TENSOR_TYPE_Q8_0);
    assert_int_equal(c.ui.engine.blas, BLAS_MODE_OFF);
    assert_true(c.ui.no_autosave);
    assert_string_equal(c.ui.system, "Be brief; really.");
    config_free(&c);
}

/* A bad line is reported as FILE:LINE naming what is wrong, the rest of the
 * file still applies and the bad key keeps its previous value. */
static void expect_issue(const char *text, int line, const char *needle)
{
    tok_config c;
    config_init(&c);
    tok_config d;
    config_init(&d);
    char *diag = load_text(&c, text);
    assert_int_equal(c.n_issues, 1);
    char at[32];
    snprintf(at, sizeof at, ":%d: ", line);
    if (!strstr(diag, at) || !strstr(diag, needle) || !strstr(diag, "ignored") ||
        !strstr(diag, "/tmp/tokscope-cfg-"))
        fail_msg("for %s: report '%s' lacks the file, line %d, '%s' or 'ignored'", text, diag, line, needle);
    free(diag);
    /* the good keys after it were read */
    assert_int_equal(c.ui.engine.n_threads, 5);
    /* and the bad one left as it was */
    for (size_t i = 0; i < config_n_keys(); i++) {
        const char *s, *k;
        config_key_at(i, &s, &k);
        if (!strcmp(k, "threads"))
            continue;
        char a[4096], b[4096];
        config_value(&c, i, a, sizeof a);
        config_value(&d, i, b, sizeof b);
        if (strcmp(a, b) != 0)
            fail_msg("for %s: [%s] %s changed to '%s'", text, s, k, a);
    }
    config_free(&c);
    config_free(&d);
}

static void test_issues_are_reported_and_skipped(void **state)
{
    (void)state;
    expect_issue("[sampling]\ntemp = banana\n[engine]\nthreads = 5\n", 2, "temp");
    expect_issue("[sampling]\n\ntop_p = 3\n[engine]\nthreads = 5\n", 3, "top_p");
    expect_issue("[sampling]\nwarmth = 1\n[engine]\nthreads = 5\n", 2, "warmth");
    expect_issue("; c\n[ui]\ncolors = maybe\n[engine]\nthreads = 5\n", 3, "colors");
    expect_issue("[ui]\ncolour = true\n[engine]\nthreads = 5\n", 2, "colour");
    expect_issue("[ui]\ninspector_order = sideways\n[engine]\nthreads = 5\n", 2, "inspector_order");
    expect_issue("[engine]\nn_ctx = -5\nthreads = 5\n", 2, "n_ctx");
    expect_issue("[engine]\nthreads = many\nthreads = 5\n", 2, "threads");
    expect_issue("[engine]\ncontext_shift = 2\nthreads = 5\n", 2, "context_shift");
    expect_issue("[engine]\ntemplate = nonsense\nthreads = 5\n", 2, "nonsense");
    expect_issue("[engine]\ncache_type_k = q3_k\nthreads = 5\n", 2, "cache_type_k");
    expect_issue("[engine]\nblas = sometimes\nthreads = 5\n", 2, "blas");
    expect_issue("[ui]\nautosave = often\n[engine]\nthreads = 5\n", 2, "autosave");
    expect_issue("[paths]\nmodels = /x\n[engine]\nthreads = 5\n", 2, "models");
    expect_issue("[whatever]\nx = 1\ny = 2\n[engine]\nthreads = 5\n", 1, "whatever");
    expect_issue("temp = 0.1\n[engine]\nthreads = 5\n", 1, "outside");
    expect_issue("[engine]\njust words\nthreads = 5\n", 2, "not a [section]");
    expect_issue("[engine]\nthreads = 5\n[]\n", 3, "name");
    /* after "[]" iniparser files keys under the old section's name cut
     * short ("e"): each is reported as following the nameless header */
    tok_config c;
    config_init(&c);
    char *diag = load_text(&c, "[engine]\n[]\nthreads = 5\n");
    assert_int_equal(c.n_issues, 2);
    assert_non_null(strstr(diag, ":2: a section header needs a name"));
    assert_non_null(strstr(diag, ":3: 'threads' follows a section header without a name (ignored)"));
    assert_int_equal(c.ui.engine.n_threads, 0);
    free(diag);
    config_free(&c);
    /* a continued line is reported where it starts */
    expect_issue("[engine]\nn_ctx = 1\\\n2x\nthreads = 5\n", 2, "n_ctx");
    expect_issue("[engine]\nn_ctx = 1\\\n2\\\n  x\nthreads = 5\n", 2, "n_ctx");
    expect_issue("[engine]\nnot\\\n a key\nthreads = 5\n", 2, "not a [section]");
    /* a key set twice: the earlier line is reported, the later one counts */
    expect_issue("[engine]\nthreads = 2\nthreads = 5\n", 2, "set again on line 3");
    expect_issue("[engine]\nthreads = 2\n[ui]\n[engine]\nTHREADS = 5\n", 2, "set again on line 5");
}

/* iniparser refuses a whole file for a line it cannot read: each such line
 * is reported with its number and the others are read, also when one line
 * hides the next (iniparser stops at the first line that is too long). */
static void test_many_bad_lines(void **state)
{
    (void)state;
    char text[8000];
    int n = snprintf(text, sizeof text, "[sampling]\njunk\ntemp = 0.5\nmore junk\ntop_k = ");
    memset(text + n, '7', 1100);
    n += 1100;
    n += snprintf(text + n, sizeof text - (size_t)n, "\n[engine]\nthreads = 5\nstill junk\nn_ctx = ");
    memset(text + n, '1', 2000);
    n += 2000;
    n += snprintf(text + n, sizeof text - (size_t)n, "\n[ui]\nmouse = true\nnope \\\n again\n");
    tok_config c;
    config_init(&c);
    char *diag = load_text(&c, text);
    static const char *const want[] = {
        ":2: not a [section]", ":4: not a [section]", ":5: line too long",   ":8: not a [section]",
        ":9: line too long",   ":12: not a [section]",
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        if (!strstr(diag, want[i]))
            fail_msg("no '%s' in:\n%s", want[i], diag);
    assert_int_equal(c.n_issues, 6);
    /* in line order */
    assert_true(strstr(diag, ":2: ") < strstr(diag, ":5: ") && strstr(diag, ":5: ") < strstr(diag, ":12: "));
    assert_float_equal(c.ui.engine.sampling.temp, 0.5f, 1e-6);
    assert_int_equal(c.ui.engine.sampling.top_k, 40);
    assert_int_equal(c.ui.engine.n_threads, 5);
    assert_int_equal(c.ui.engine.n_ctx, 0);
    assert_true(c.ui.mouse);
    assert_int_equal(c.origin[key_of("ui", "mouse")].line, 11);
    free(diag);
    config_free(&c);

    /* nothing readable at all: every line reported, no value changed */
    config_init(&c);
    diag = load_text(&c, "a\nb\nc\n");
    assert_int_equal(c.n_issues, 3);
    assert_non_null(strstr(diag, ":3: not a [section]"));
    free(diag);
    config_free(&c);
}

static void test_lines_iniparser_gives_up_on(void **state)
{
    (void)state;
    /* iniparser_load drops the whole file for these; here only the line goes */
    char text[3000];
    int n = snprintf(text, sizeof text, "[engine]\nthreads = 5\n[chat]\nsystem = ");
    memset(text + n, 'x', 1100);
    n += 1100;
    n += snprintf(text + n, sizeof text - (size_t)n, "\n[ui]\nmouse = true\n");
    tok_config c;
    config_init(&c);
    char *diag = load_text(&c, text);
    assert_int_equal(c.n_issues, 1);
    assert_non_null(strstr(diag, ":4: line too long"));
    assert_true(c.ui.mouse);
    assert_int_equal(c.ui.engine.n_threads, 5);
    free(diag);
    config_free(&c);

    static const char nul[] = "[engine]\nthreads = 5\nn_ctx = 1\0 2\n[ui]\nmouse = true\n";
    config_init(&c);
    const char *p = write_tmp(nul, sizeof nul - 1);
    diag = NULL;
    size_t dn;
    FILE *d = open_memstream(&diag, &dn);
    char err[256];
    assert_true(config_load(&c, p, true, d, err, sizeof err));
    fclose(d);
    remove(p);
    assert_non_null(strstr(diag, ":3: contains a NUL byte"));
    assert_true(c.ui.mouse);
    assert_int_equal(c.ui.engine.n_ctx, 0);
    free(diag);
    config_free(&c);

    /* on the last line too (where iniparser would read up to the NUL) */
    static const char nul_end[] = "[engine]\nthreads = 5\nn_ctx = 1\0 2";
    config_init(&c);
    p = write_tmp(nul_end, sizeof nul_end - 1);
    d = open_memstream(&diag, &dn);
    assert_true(config_load(&c, p, true, d, err, sizeof err));
    fclose(d);
    remove(p);
    assert_non_null(strstr(diag, ":3: contains a NUL byte"));
    assert_int_equal(c.ui.engine.n_threads, 5);
    assert_int_equal(c.ui.engine.n_ctx, 0);
    free(diag);
    config_free(&c);
}

static void test_missing_file(void **state)
{
    (void)state;
    tok_config c;
    config_init(&c);
    char err[512] = "";
    assert_true(config_load(&c, "/nonexistent/tokscope.ini", false, NULL, err, sizeof err)); /* optional */
    assert_false(config_load(&c, "/nonexistent/tokscope.ini", true, NULL, err, sizeof err)); /* --config */
    assert_non_null(strstr(err, "/nonexistent/tokscope.ini"));
    assert_false(config_load(&c, "/tmp", true, NULL, err, sizeof err)); /* a directory */
    config_free(&c);
}

static void test_default_paths(void **state)
{
    (void)state;
    char buf[512];
    setenv("XDG_CONFIG_HOME", "/xdg", 1);
    assert_string_equal(config_default_path(buf, sizeof buf), "/xdg/tokscope/tokscope.ini");
    unsetenv("XDG_CONFIG_HOME");
    setenv("HOME", "/home/u", 1);
    assert_string_equal(config_default_path(buf, sizeof buf), "/home/u/.config/tokscope/tokscope.ini");
    assert_string_equal(config_system_path(), TOKSCOPE_SYSCONFDIR "/tokscope/tokscope.ini");
}

/* Layers: a later file overrides an earlier one key by key, the command line
 * overrides both, and each key names where its value came from. */
static void test_layers_and_origins(void **state)
{
    (void)state;
    tok_config c;
    config_init(&c);
    free(load_text(&c, "[sampling]\ntemp = 0.1\ntop_k = 5\n[paths]\nmodel_dirs = /a:/b\n"));
    char first[64];
    snprintf(first, sizeof first, "%s", c.files[0]);
    free(load_text(&c, "[sampling]\n; comment\ntop_k = 6\n[paths]\nmodel_dirs = /c\n"));
    char err[256];
    assert_true(config_set(&c, "sampling", "min_p", "0.2", "--min-p", err, sizeof err));
    assert_false(config_set(&c, "sampling", "min_p", "2", "--min-p", err, sizeof err));
    assert_non_null(strstr(err, "min_p"));
    assert_false(config_set(&c, "sampling", "nope", "2", "--nope", err, sizeof err));
    assert_float_equal(c.ui.engine.sampling.temp, 0.1f, 1e-6);
    assert_int_equal(c.ui.engine.sampling.top_k, 6);
    assert_float_equal(c.ui.engine.sampling.min_p, 0.2f, 1e-6);
    assert_int_equal(c.n_dirs, 1); /* a later layer replaces the list */
    assert_string_equal(c.dirs[0], "/c");
    const config_origin *o = &c.origin[key_of("sampling", "temp")];
    assert_string_equal(o->src, first);
    assert_int_equal(o->line, 2);
    o = &c.origin[key_of("sampling", "top_k")];
    assert_string_equal(o->src, c.files[1]);
    assert_int_equal(o->line, 3);
    o = &c.origin[key_of("sampling", "min_p")];
    assert_string_equal(o->src, "--min-p");
    assert_int_equal(o->line, 0);
    assert_null(c.origin[key_of("sampling", "top_p")].src);

    char *out = NULL;
    size_t on = 0;
    FILE *f = open_memstream(&out, &on);
    config_print(&c, f);
    fclose(f);
    char want[300];
    snprintf(want, sizeof want, "\ntemp = 0.1                     ; %s:2\n", first);
    if (!strstr(out, want) || !strstr(out, "\nmin_p = 0.2                    ; command line: --min-p\n") ||
        !strstr(out, "\ntop_p = 0.95                   ; default\n"))
        fail_msg("print-config:\n%s", out);
    free(out);

    setenv("NO_COLOR", "1", 1);
    config_apply_env(&c);
    unsetenv("NO_COLOR");
    assert_false(c.ui.colors);
    assert_string_equal(c.origin[key_of("ui", "colors")].src, "NO_COLOR");
    config_free(&c);
}

/* --print-config's output, read as a config file, gives the same values;
 * awkward values (comment characters, outer spaces, quotes) survive. */
static void test_print_reads_back(void **state)
{
    (void)state;
    tok_config c;
    config_init(&c);
    char err[256];
    assert_true(config_set(&c, "chat", "system", "  a; b # c  ", "--system", err, sizeof err));
    assert_true(config_set(&c, "sampling", "stop", "say \"#\"", "x", err, sizeof err));
    /* make fuzz found these: a leading quote was printed bare and read back
     * as the start of a quoted value; a trailing backslash continues a line */
    assert_true(config_set(&c, "paths", "model", "\"", "x", err, sizeof err));
    assert_true(config_set(&c, "engine", "template", "", "x", err, sizeof err));
    assert_true(config_set(&c, "sampling", "temp", "0.123", "x", err, sizeof err));
    assert_true(config_set(&c, "sampling", "seed", "7", "x", err, sizeof err));
    assert_true(config_set(&c, "paths", "model_dirs", "/m1:/m2", "x", err, sizeof err));
    assert_true(config_set(&c, "engine", "template", "llama3", "x", err, sizeof err));
    tok_config c2;
    config_init(&c2);
    assert_true(config_set(&c2, "chat", "system", "'quoted' \\", "x", err, sizeof err));
    assert_true(config_set(&c2, "paths", "model_dirs", "/a\\", "x", err, sizeof err));
    char *o2 = NULL;
    size_t o2n = 0;
    FILE *f2 = open_memstream(&o2, &o2n);
    config_print(&c2, f2);
    fclose(f2);
    tok_config d2;
    config_init(&d2);
    free(load_text(&d2, o2));
    assert_int_equal(d2.n_issues, 0);
    assert_string_equal(d2.ui.system, "'quoted' \\");
    assert_string_equal(d2.dirs[0], "/a\\");
    free(o2);
    config_free(&c2);
    config_free(&d2);
    assert_true(config_set(&c, "engine", "cache_type_v", "q4_0", "x", err, sizeof err));
    assert_true(config_set(&c, "ui", "inspector_order", "post", "x", err, sizeof err));
    char *out = NULL;
    size_t on = 0;
    FILE *f = open_memstream(&out, &on);
    config_print(&c, f);
    fclose(f);
    tok_config d;
    config_init(&d);
    char *diag = load_text(&d, out);
    if (d.n_issues)
        fail_msg("print-config output does not read back: %s\n%s", diag, out);
    free(diag);
    for (size_t i = 0; i < config_n_keys(); i++) {
        char a[4096], b[4096];
        config_value(&c, i, a, sizeof a);
        config_value(&d, i, b, sizeof b);
        const char *s, *k;
        config_key_at(i, &s, &k);
        if (strcmp(a, b) != 0)
            fail_msg("[%s] %s: printed '%s', read back '%s'", s, k, a, b);
    }
    free(out);
    config_free(&c);
    config_free(&d);
}

/* ini_read's sections, keys and values are iniparser's, each on its line. */
struct collect {
    FILE *f;
    const char *text;
};

/* true when line (1-based) of text, lowercased, contains needle */
static bool line_has(const char *text, int line, const char *needle)
{
    const char *l = text;
    for (int i = 1; i < line && l; i++) {
        l = strchr(l, '\n');
        if (l)
            l++;
    }
    if (!l)
        return false;
    size_t n = strcspn(l, "\n");
    char buf[2048];
    snprintf(buf, sizeof buf, "%.*s", (int)n, l);
    for (char *p = buf; *p; p++)
        *p = (char)tolower((unsigned char)*p);
    return strstr(buf, needle) != NULL;
}

static void collect_fn(void *user, const ini_item *it)
{
    struct collect *c = user;
    if (it->kind == INI_KEY) {
        fprintf(c->f, "%s:%s=%s\n", it->section, it->key, it->value);
        if (!line_has(c->text, it->line, it->key))
            fail_msg("%s:%s placed on line %d", it->section, it->key, it->line);
    } else if (it->kind == INI_SECTION && *it->section && it->line > 0 && !line_has(c->text, it->line, it->section))
        fail_msg("[%s] placed on line %d", it->section, it->line);
}

static void test_agrees_with_iniparser(void **state)
{
    (void)state;
    static const char *const cases[] = {
        "[A]\nKey = Value\n",
        "[s]\nk = \"quoted ; with # and  spaces \"\nj='single'\n",
        "[s]\nk = v ; comment\nj = v#c\nz=\nq = ;\nw = #\n",
        "[s]\nk = a \\\n  continued\nx = 1\n",
        "[ s p ]\n  k  =  v  \n\n\n# c\n; c\n",
        "[s]\nk = \"\"\nj = ''\nm = \"unterminated\n",
        "[s]\nk = 1\nk = 2\n",
        "[s]\nk = v\r\nj = w\t\n",
        "[s]\nk =v\n[t]\nk= w\n[S]\nj = 3\n",
        "k = before\n[s]\nk:x = colon\n[a:b]\nc = d\n",
        /* "[]" cuts the current section's name short in iniparser (its
         * lowercasing stops at the line's length) */
        "[sampling]\n[]\nk = v\n",
        "[]\nk = v\n[a]\n",
        "[sampling]\n[]x]\nk = v\n[engine]\n[]xxxxxxxxxxx]\nk = v\n",
    };
    iniparser_set_error_callback(NULL);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *p = write_tmp(cases[i], strlen(cases[i]));
        dictionary *d = iniparser_load(p);
        remove(p);
        assert_non_null(d);
        char *mine = NULL;
        size_t mn = 0;
        struct collect col = {open_memstream(&mine, &mn), cases[i]};
        char err[256];
        assert_true(ini_read(cases[i], strlen(cases[i]), collect_fn, &col, err, sizeof err));
        fclose(col.f);
        int n_mine = 0;
        for (char *l = mine; *l; n_mine++) {
            char *nl = strchr(l, '\n');
            *nl = 0;
            char *eq = strchr(l, '=');
            *eq = 0;
            const char *theirs = iniparser_getstring(d, l, NULL);
            if (!theirs || strcmp(theirs, eq + 1) != 0)
                fail_msg("case %zu: %s: mine '%s', iniparser's '%s'", i, l, eq + 1, theirs ? theirs : "(none)");
            l = nl + 1;
        }
        int n_theirs = 0; /* and no key of iniparser's is missing */
        for (ssize_t k = 0; k < d->size; k++)
            n_theirs += d->key[k] && d->val[k];
        assert_int_equal(n_mine, n_theirs);
        free(mine);
        iniparser_freedict(d);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shipped_file_is_valid),
        cmocka_unit_test(test_shipped_file_documents_every_key),
        cmocka_unit_test(test_all_sections),
        cmocka_unit_test(test_issues_are_reported_and_skipped),
        cmocka_unit_test(test_many_bad_lines),
        cmocka_unit_test(test_lines_iniparser_gives_up_on),
        cmocka_unit_test(test_missing_file),
        cmocka_unit_test(test_default_paths),
        cmocka_unit_test(test_layers_and_origins),
        cmocka_unit_test(test_print_reads_back),
        cmocka_unit_test(test_agrees_with_iniparser),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
