/* Conversations on disk: /save and /load (JSON: parameters, and for every
 * conversation its system prompt, its messages with their versions and the
 * generated tokens' data; files of the first format load too) and /export
 * (Markdown: the versions shown). */
#ifndef TOKSCOPE_UI_STORE_H
#define TOKSCOPE_UI_STORE_H

#include <stdbool.h>
#include <stddef.h>

struct ui_app;
bool store_save(struct ui_app *app, const char *path, char *err, size_t errlen);
/* Each conversation of the file is checked on its own: those that are not
 * sound are left out and the others load. True when one or more loaded;
 * err then holds "" or what was left out and why (for the status line).
 * False and err when none loads (the conversations are then unchanged). */
bool store_load(struct ui_app *app, const char *path, char *err, size_t errlen);
bool store_export_md(struct ui_app *app, const char *path, char *err, size_t errlen);

/* --- KV snapshots beside session files (memory/kv_snapshot.h) ---
 * After a session file is written at path: the engine writes a snapshot of
 * its memory beside it (NAME.kv), or, with snapshots off, a stale one there
 * is removed (it would describe an older state). After one is loaded: the
 * engine restores the snapshot beside it when there is one (it checks the
 * model, the settings and the checksum itself, and says what it did).
 * Both do nothing without an engine (unit tests) or with snapshots off. */
void store_kv_save(struct ui_app *app, const char *path);
void store_kv_load(struct ui_app *app, const char *path);
/* The engine's KV event: what it did, in the status line. */
struct engine_event;
void store_kv_event(struct ui_app *app, const struct engine_event *ev);

/* --- autosave and resume (ui/autosave.c) --- */

/* The /save JSON of app as a malloc'd string (free()), valid UTF-8; NULL
 * and err when out of memory. store_save writes it atomically. */
char *store_serialize(struct ui_app *app, char *err, size_t errlen);

/* What a saved file holds, to offer resuming it. */
typedef struct store_summary {
    char model[4096];       /* the GGUF file it was made with ("" when not recorded) */
    size_t n_convs, n_msgs; /* conversations; messages in all of them */
    char title[192];        /* first line of the current conversation's first user message, cut */
} store_summary;

/* Reads path's summary; false and err when it is not a file /load accepts. */
bool store_peek(const char *path, store_summary *s, char *err, size_t errlen);

#endif
