/* Line-numbered INI reader: iniparser 4.1's iniparser_load and
 * iniparser_line, kept step for step so that values read the same, with its
 * fatal errors turned into per-line reports. */
#include "config_ini.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

/* iniparser's strstrip: leading and trailing isspace() removed in place. */
static size_t strip(char *s)
{
    char *b = s, *e = s + strlen(s);
    while (*b && isspace((unsigned char)*b))
        b++;
    while (e > b && isspace((unsigned char)e[-1]))
        e--;
    *e = 0;
    memmove(s, b, (size_t)(e - b) + 1);
    return (size_t)(e - b);
}

static void lower(char *s)
{
    for (; *s; s++)
        *s = (char)tolower((unsigned char)*s);
}

enum ini_line { INI_EMPTY, INI_COMMENT, INI_SECTION, INI_VALUE, INI_ERROR, INI_NO_NAME };

/* iniparser_line: the same sscanf patterns in the same order. section keeps
 * its previous contents when a header's pattern does not match ("[]"). */
static enum ini_line classify(const char *input, char *section, char *key, char *value)
{
    char line[INI_LINE_MAX + 1];
    snprintf(line, sizeof line, "%s", input);
    size_t len = strip(line);
    if (len < 1)
        return INI_EMPTY;
    if (line[0] == '#' || line[0] == ';')
        return INI_COMMENT;
    if (line[0] == '[' && line[len - 1] == ']') {
        if (sscanf(line, "[%1024[^]]", section) != 1) { // NOLINT(cert-err34-c): strings, no numbers
            /* "[]...]": iniparser lowercases the old name in place up to
             * the line's length less one, which cuts a longer name there
             * ("[]" leaves its first character) */
            if (strlen(section) > len - 1)
                section[len - 1] = 0;
            return INI_NO_NAME;
        }
        strip(section);
        lower(section);
        return INI_SECTION;
    }
    if (sscanf(line, "%1024[^=] = \"%1024[^\"]\"", key, value) == 2 || // NOLINT(cert-err34-c)
        sscanf(line, "%1024[^=] = '%1024[^\']'", key, value) == 2) {   // NOLINT(cert-err34-c)
        strip(key);                                                    /* quoted values keep their spaces */
        lower(key);
        return INI_VALUE;
    }
    if (sscanf(line, "%1024[^=] = %1024[^;#]", key, value) == 2) { // NOLINT(cert-err34-c)
        strip(key);
        lower(key);
        strip(value);
        if (!strcmp(value, "\"\"") || !strcmp(value, "''"))
            value[0] = 0;
        return INI_VALUE;
    }
    if (sscanf(line, "%1024[^=] = %1024[;#]", key, value) == 2 || // NOLINT(cert-err34-c)
        sscanf(line, "%1024[^=] %1024[=]", key, value) == 2) {    // NOLINT(cert-err34-c)
        strip(key);                                               /* key =, key = ;comment, key = #comment */
        lower(key);
        value[0] = 0;
        return INI_VALUE;
    }
    return INI_ERROR;
}

void ini_parse(const char *text, size_t n, ini_entry_fn fn, void *user)
{
    char line[INI_LINE_MAX + 1], section[INI_LINE_MAX + 1], key[INI_LINE_MAX + 1], value[INI_LINE_MAX + 1];
    size_t pos = 0, last = 0;
    int lineno = 0, first = 0; /* first: where a continued line began */
    section[0] = 0;
    while (pos < n) {
        /* fgets(line + last, INI_LINE_MAX - last): at most that minus one
         * byte, up to and including a newline */
        size_t room = INI_LINE_MAX - last - 1, take = 0;
        bool nl = false;
        while (pos + take < n && take < room)
            if (text[pos + take++] == '\n') {
                nl = true;
                break;
            }
        const bool at_eof = !nl && take < room; /* fgets stopped at the end of the data */
        const bool has_nul = memchr(text + pos, 0, take) != NULL;
        memcpy(line + last, text + pos, take);
        line[last + take] = 0;
        pos += take;
        lineno++;
        if (last == 0)
            first = lineno;
        if (has_nul || (!nl && !at_eof)) {
            /* iniparser gives up on the whole file here; skip to the next line */
            if (!fn(user, first, section, NULL,
                    has_nul ? "contains a NUL byte" : "line too long (over 1022 bytes)"))
                return;
            while (!nl && pos < n)
                nl = text[pos++] == '\n';
            last = 0;
            continue;
        }
        size_t len = strlen(line);
        if (len <= 1) /* iniparser skips an empty line (and a lone byte at the very end) */
            continue;
        len--;
        for (;;) { /* the newline and trailing spaces */
            if (line[len] != '\n' && !isspace((unsigned char)line[len]))
                break;
            line[len] = 0;
            if (len == 0)
                break;
            len--;
        }
        if (line[len] == '\\') { /* continued on the next line, from the backslash on */
            last = len;
            continue;
        }
        last = 0;
        bool ok = true;
        switch (classify(line, section, key, value)) {
        case INI_EMPTY:
        case INI_COMMENT:
            break;
        case INI_SECTION:
            ok = fn(user, first, section, "", "");
            break;
        case INI_VALUE:
            ok = fn(user, first, section, key, value);
            break;
        case INI_NO_NAME:
            ok = fn(user, first, section, NULL, "a section needs a name");
            break;
        case INI_ERROR:
            ok = fn(user, first, section, NULL, "not a [section], a key = value or a comment");
            break;
        }
        if (!ok)
            return;
    }
}
