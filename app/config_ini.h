/* INI reader that knows line numbers: iniparser 4.1's syntax line for line
 * (its sscanf patterns, comments, quoting, backslash continuation, lowercased
 * sections and keys), but a bad line is reported with its number and skipped
 * instead of discarding the whole file, as iniparser_load does. make fuzz
 * holds the two to the same values on every file iniparser accepts. */
#ifndef TOKSCOPE_APP_CONFIG_INI_H
#define TOKSCOPE_APP_CONFIG_INI_H

#include <stdbool.h>
#include <stddef.h>

#define INI_LINE_MAX 1024 /* iniparser's ASCIILINESZ: longer lines are errors */

/* One callback per entry, in file order. key == NULL: line `line` could not
 * be read and value says why. section is "" for keys before any section.
 * A section header with no keys still produces one call with key == "" so
 * that unknown sections can be reported. Return false to stop. */
typedef bool (*ini_entry_fn)(void *user, int line, const char *section, const char *key, const char *value);

/* Parses text[0..len) (NUL bytes end a line's content, as with fgets). */
void ini_parse(const char *text, size_t len, ini_entry_fn fn, void *user);

#endif
