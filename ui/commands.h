/* Slash commands typed in the input line (/help lists them). */
#ifndef TOKSCOPE_UI_COMMANDS_H
#define TOKSCOPE_UI_COMMANDS_H

#include <stdbool.h>
#include <stddef.h>

typedef struct ui_command {
    const char *name;  /* without the slash */
    const char *args;  /* "" or "PARAM VALUE" ... */
    const char *help;
} ui_command;

extern const ui_command commands_table[]; /* NULL-name terminated */

/* Splits "/name args" into name (lower-case copy) and args (leading and
 * trailing blanks trimmed, into args_out). Returns false when line is not a
 * slash command: it does not start with '/', or starts with "//" (an escaped
 * slash: the message is sent with one slash removed). */
bool commands_parse(const char *line, char *name, size_t name_cap, char *args_out, size_t args_cap);
/* The table entry for a name or unique prefix, NULL otherwise. */
const ui_command *commands_find(const char *name);
/* The commands a prefix could mean, as "/a /b ..." in out; returns how many. */
size_t commands_candidates(const char *name, char *out, size_t cap);
/* Enter arrived with more bytes right behind it (a script, or a paste the
 * terminal did not bracket): true when line is a complete command to run now
 * rather than a line of a longer text. Every command ends there but /system
 * and /new, whose text may span lines up to one that starts with '/' (next:
 * the first byte waiting). */
bool commands_ends_at_newline(const char *line, int next);
/* A file name as typed, with a leading ~ or ~user expanded to the home
 * directory. False when the result does not fit in cap. */
bool commands_expand_path(const char *path, char *out, size_t cap);
/* Splits "PARAM VALUE" for /set. */
bool commands_split_set(const char *args, char *param, size_t pcap, const char **value);

struct ui_app;
/* Runs a command line; unknown commands report in the status line. */
void commands_run(struct ui_app *app, const char *line);
/* Help text (keys and commands), '\n'-separated. */
const char *commands_help_text(void);

#endif
