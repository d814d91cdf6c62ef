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
bool store_load(struct ui_app *app, const char *path, char *err, size_t errlen);
bool store_export_md(struct ui_app *app, const char *path, char *err, size_t errlen);

#endif
