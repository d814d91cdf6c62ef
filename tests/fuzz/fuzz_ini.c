/* Fuzz target: the configuration reader (app/config_ini.c under
 * app/config.c) on random files. Checks: loading never fails or stops on
 * bad lines; --print-config's output of the result reads back without a
 * single complaint and to the same values; and wherever iniparser itself
 * accepts the file, every key the reader found has iniparser's value. */
#include <stdbool.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <iniparser/iniparser.h>

#include "config.h"
#include "config_ini.h"
#include "fuzz.h"

static FILE *devnull;

static int quiet(const char *fmt, ...)
{
    (void)fmt;
    return 0;
}

static bool last_value(void *user, int line, const char *section, const char *key, const char *value)
{
    (void)line;
    dictionary *d = user;
    if (!key || !*key || !*section)
        return true;
    char full[2 * INI_LINE_MAX + 2];
    snprintf(full, sizeof full, "%s:%s", section, key);
    dictionary_set(d, full, value); /* the last value of a key stays, as in iniparser */
    return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 1 << 16)
        return 0;
    if (!devnull) {
        devnull = fopen("/dev/null", "w");
        iniparser_set_error_callback(quiet);
    }
    tok_config c;
    config_init(&c);
    config_load_text(&c, (const char *)data, size, "fuzz.ini", devnull);

    /* print, read back: no complaint, same values */
    char *printed = NULL;
    size_t pn = 0;
    FILE *pf = open_memstream(&printed, &pn);
    config_print(&c, pf);
    fclose(pf);
    tok_config r;
    config_init(&r);
    config_load_text(&r, printed, pn, "printed.ini", devnull);
    FUZZ_CHECK(r.n_issues == 0, "--print-config output has %d bad lines:\n%s", r.n_issues, printed);
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

    /* against iniparser, where it accepts the file (no NUL bytes: it reads
     * lines with fgets and strlen) */
    if (memchr(data, 0, size))
        return 0;
    int fd = memfd_create("fuzz_ini", MFD_CLOEXEC);
    FUZZ_CHECK(fd >= 0, "memfd_create");
    FUZZ_CHECK(size == 0 || write(fd, data, size) == (ssize_t)size, "write");
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    dictionary *theirs = iniparser_load(path);
    close(fd);
    if (!theirs)
        return 0;
    dictionary *mine = dictionary_new(0);
    ini_parse((const char *)data, size, last_value, mine);
    for (int i = 0; i < mine->size; i++) {
        if (!mine->key[i] || !mine->val[i])
            continue;
        const char *t = iniparser_getstring(theirs, mine->key[i], NULL);
        FUZZ_CHECK(t && !strcmp(t, mine->val[i]), "%s: mine '%s', iniparser's '%s'", mine->key[i],
                   mine->val[i], t ? t : "(none)");
    }
    for (int i = 0; i < theirs->size; i++) { /* and iniparser found no key the reader missed */
        const char *k = theirs->key[i];
        if (!k || !strchr(k, ':') || k[0] == ':' || !theirs->val[i])
            continue;
        FUZZ_CHECK(dictionary_get(mine, k, NULL), "iniparser has %s = '%s', the reader nothing", k,
                   theirs->val[i]);
    }
    dictionary_del(mine);
    iniparser_freedict(theirs);
    return 0;
}
