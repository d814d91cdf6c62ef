/* tokscope.ini: defaults for the TUI ([sampling], [ui], [paths], [engine],
 * [chat]), merged from layers, lowest first: built-in defaults, the system
 * file (TOKSCOPE_SYSCONFDIR/tokscope/tokscope.ini), the user's
 * ($XDG_CONFIG_HOME/tokscope/tokscope.ini), --config FILE, the command line.
 * Each key remembers which layer set it (--print-config shows it). A file's
 * unknown keys, bad values and unreadable lines are reported as FILE:LINE
 * and skipped; they never stop tokscope. conf/tokscope.ini documents every key. */
#ifndef TOKSCOPE_APP_CONFIG_H
#define TOKSCOPE_APP_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "ui.h"

#ifndef TOKSCOPE_SYSCONFDIR
#define TOKSCOPE_SYSCONFDIR "/usr/local/etc"
#endif

#define CONFIG_MAX_KEYS 64
#define CONFIG_MAX_FILES 8
#define CONFIG_SERVE_PARALLEL 4 /* serve's slots unless told: llama-server's and LM Studio's kind of default */

/* Where a key's value came from: a file and line, or a command-line option,
 * or the environment; src == NULL is the built-in default. */
typedef struct config_origin {
    const char *src; /* a path in files[], an option ("--temp"), "NO_COLOR" */
    int line;        /* in a file: > 0 (0 when it could not be placed) */
    bool file;       /* src is a file */
} config_origin;

/* [serve]: what `tokscope serve` takes besides the command line (the TUI
 * reads and checks these too, but does not use them). */
typedef struct config_serve {
    char model[4096];        /* default -m */
    char host[256];          /* numeric address to listen on */
    char api_key_file[4096]; /* the file whose first line is the API key */
    char kv_dir[4096];       /* "" = no snapshots */
    long port, max_queue, parallel, n_ctx, threads, kv_max_mb;
} config_serve;

typedef struct tok_config {
    ui_options ui;          /* engine params (with sampling) and UI switches */
    char model[4096];       /* [paths] model: default -m */
    char template_name[64]; /* [engine] template */
    char *system;           /* [chat] system */
    char **dirs;            /* [paths] model_dirs (owned) */
    char remote_url[2048];  /* [remote] url: the remote backend's server ("" = local) */
    char remote_model[256]; /* [remote] model: the model id to ask for */
    char api_key_file[4096]; /* [remote] api_key_file: the file holding the API key (the key is never a value) */
    char draft_model[4096];  /* [spec] draft_model: the draft GGUF of speculative decoding */
    config_serve serve;      /* [serve]: tokscope serve's options */
    const char *strict;      /* a section whose unknown keys and bad values are errors (strict_err) */
    char strict_err[1400];   /* the first such error, "FILE:LINE: ...", "" if none */
    size_t n_dirs;
    config_origin origin[CONFIG_MAX_KEYS]; /* per key of config_key_at() */
    char *files[CONFIG_MAX_FILES];         /* every file looked at, in order (owned) */
    bool file_read[CONFIG_MAX_FILES];      /* false: it did not exist */
    size_t n_files;
    int n_issues; /* lines reported and skipped, all files */
} tok_config;

void config_init(tok_config *c);
void config_free(tok_config *c);
/* $XDG_CONFIG_HOME/tokscope/tokscope.ini (or ~/.config/...) into buf. */
const char *config_default_path(char *buf, size_t cap);
/* TOKSCOPE_SYSCONFDIR/tokscope/tokscope.ini, compiled in by make from PREFIX. */
const char *config_system_path(void);

/* Reads path into c over what is there. A missing file is fine unless
 * must_exist; false + err only when the file cannot be read. Problems in
 * the file go to diag ("tokscope: PATH:LINE: ...", diag may be NULL). */
bool config_load(tok_config *c, const char *path, bool must_exist, FILE *diag, char *err, size_t errlen);
/* The same over text in memory; name stands for the file. */
void config_load_text(tok_config *c, const char *text, size_t n, const char *name, FILE *diag);
/* Sets [section] key = value on behalf of a command-line option (origin:
 * the option as typed, which must outlive c). false + err on an unknown key
 * or a bad value. */
bool config_set(tok_config *c, const char *section, const char *key, const char *value, const char *option,
                char *err, size_t errlen);
/* NO_COLOR (non-empty) turns colours off. */
void config_apply_env(tok_config *c);
/* The merged configuration as INI that tokscope reads back to the same
 * values: every key, each followed by a comment naming its source. */
void config_print(const tok_config *c, FILE *out);

/* The keys in print order: section and name, i < config_n_keys(). */
size_t config_n_keys(void);
bool config_key_at(size_t i, const char **section, const char **name);
/* Where [section] key came from (NULL: not a key). */
const config_origin *config_origin_of(const tok_config *c, const char *section, const char *key);
/* Current value of key i as config_print writes it (before quoting). */
void config_value(const tok_config *c, size_t i, char *buf, size_t cap);

#endif
