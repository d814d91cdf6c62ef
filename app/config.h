/* tokscope.ini: defaults for the TUI ([sampling], [ui], [paths], [engine],
 * [chat]) read with iniparser. conf/tokscope.ini documents every key. */
#ifndef TOKSCOPE_APP_CONFIG_H
#define TOKSCOPE_APP_CONFIG_H

#include <stdbool.h>
#include <stddef.h>

#include "ui.h"

typedef struct tok_config {
    ui_options ui;           /* engine params (with sampling) and UI switches */
    char model[4096];        /* [paths] model: default -m */
    char template_name[64];  /* [engine] template */
    char *system;            /* [chat] system */
    char **dirs;             /* [paths] model_dirs (owned) */
    size_t n_dirs;
} tok_config;

void config_init(tok_config *c);
void config_free(tok_config *c);
/* $XDG_CONFIG_HOME/tokscope/tokscope.ini (or ~/.config/...) into buf. */
const char *config_default_path(char *buf, size_t cap);
/* Reads path into c. A missing file is fine unless must_exist. Bad values
 * and unknown keys are errors (false + message naming section:key). */
bool config_load(tok_config *c, const char *path, bool must_exist, char *err, size_t errlen);

#endif
