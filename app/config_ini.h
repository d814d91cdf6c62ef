/* INI files read by iniparser, plus what it does not give: line numbers, and
 * the rest of a file when one line is bad.
 *
 * iniparser_load refuses a whole file for one line it cannot read; its error
 * messages name the line. ini_read reports such a line and has iniparser
 * read the file again from a copy in memory with that line blanked, so one
 * bad line never loses the others. The sections and keys are iniparser's
 * (its syntax, quoting, comments, continuation lines, lowercased names, last
 * value wins); a small scan of the text only finds the line each one is on
 * (section headers and `key =` lines), and the lines a later line overrides. */
#ifndef TOKSCOPE_APP_CONFIG_INI_H
#define TOKSCOPE_APP_CONFIG_INI_H

#include <stdbool.h>
#include <stddef.h>

#define INI_LINE_MAX 1024 /* iniparser's ASCIILINESZ: longer lines are errors */

enum ini_kind {
    INI_SKIPPED,    /* a line iniparser refused (or holding a NUL byte); value says why */
    INI_NAMELESS,   /* a section header without a name ("[]", "[ ]", "[]x]") */
    INI_SECTION,    /* a section, at its first header */
    INI_KEY,        /* section, key = value as iniparser read them, at the line that set it */
    INI_OVERRIDDEN, /* a line setting a key that line `later` sets again */
};

typedef struct ini_item {
    enum ini_kind kind;
    int line;            /* 1-based (where a continued line starts); 0: not placed on a line */
    const char *section; /* lowercased; "" before any header */
    const char *key;     /* INI_KEY, INI_OVERRIDDEN */
    const char *value;   /* INI_KEY: the value; INI_SKIPPED: why */
    int section_line;    /* INI_KEY: the section's first header (0: none, e.g. after a header without a name) */
    int later;           /* INI_OVERRIDDEN: the line whose value counts */
} ini_item;

typedef void (*ini_item_fn)(void *user, const ini_item *item);

/* Reads text[0..len) and calls fn for every item, in line order (items with
 * line 0 last). false + err only when iniparser could not be run at all
 * (no memory, no scratch file); fn may have been called for some lines. */
bool ini_read(const char *text, size_t len, ini_item_fn fn, void *user, char *err, size_t errlen);

#endif
