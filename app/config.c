/* Config file reader (iniparser). */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <iniparser/iniparser.h>

#include "model/forward.h"
#include "params.h"

void config_init(tok_config *c)
{
    memset(c, 0, sizeof *c);
    ui_default_options(&c->ui);
}

void config_free(tok_config *c)
{
    for (size_t i = 0; i < c->n_dirs; i++)
        free(c->dirs[i]);
    free(c->dirs);
    free(c->system);
    c->dirs = NULL;
    c->n_dirs = 0;
    c->system = NULL;
}

const char *config_default_path(char *buf, size_t cap)
{
    const char *xdg = getenv("XDG_CONFIG_HOME");
    const char *home = getenv("HOME");
    if (xdg && *xdg)
        snprintf(buf, cap, "%s/tokscope/tokscope.ini", xdg);
    else if (home && *home)
        snprintf(buf, cap, "%s/.config/tokscope/tokscope.ini", home);
    else
        buf[0] = 0;
    return buf;
}

static int ini_quiet(const char *fmt, ...)
{
    (void)fmt;
    return 0;
}

static const char *const known_ui[] = {"colors", "prob_colors", "mouse", "inspector_order", NULL};
static const char *const known_paths[] = {"model", "model_dirs", NULL};
static const char *const known_engine[] = {"n_ctx",         "threads",      "template",     "context_shift",
                                           "kv_cache",      "cache_type_k", "cache_type_v", "blas", NULL};
static const char *const known_chat[] = {"system", NULL};

static bool in_list(const char *const *l, const char *k)
{
    for (; *l; l++)
        if (!strcmp(*l, k))
            return true;
    return false;
}

static bool parse_bool(const char *v, bool *out)
{
    if (!strcasecmp(v, "true") || !strcasecmp(v, "yes") || !strcasecmp(v, "on") || !strcmp(v, "1")) {
        *out = true;
        return true;
    }
    if (!strcasecmp(v, "false") || !strcasecmp(v, "no") || !strcasecmp(v, "off") || !strcmp(v, "0")) {
        *out = false;
        return true;
    }
    return false;
}

static bool parse_long(const char *v, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (end == v || *end || errno || x < lo || x > hi)
        return false;
    *out = x;
    return true;
}

static void add_dirs(tok_config *c, const char *list)
{
    /* ':' or ',' separated */
    const char *p = list;
    while (*p) {
        size_t l = strcspn(p, ":,");
        while (l && (*p == ' ')) {
            p++;
            l--;
        }
        size_t t = l;
        while (t && p[t - 1] == ' ')
            t--;
        if (t) {
            char **v = realloc(c->dirs, (c->n_dirs + 1) * sizeof *v);
            if (v) {
                c->dirs = v;
                c->dirs[c->n_dirs] = strndup(p, t);
                if (c->dirs[c->n_dirs])
                    c->n_dirs++;
            }
        }
        p += l;
        if (*p)
            p++;
    }
    c->ui.model_dirs = c->dirs;
    c->ui.n_model_dirs = c->n_dirs;
}

bool config_load(tok_config *c, const char *path, bool must_exist, char *err, size_t errlen)
{
    if (!path || !*path)
        return true;
    if (access(path, R_OK) != 0) {
        if (!must_exist && errno == ENOENT)
            return true;
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return false;
    }
    iniparser_set_error_callback(ini_quiet);
    dictionary *d = iniparser_load(path);
    if (!d) {
        snprintf(err, errlen, "%s: cannot parse (INI syntax error)", path);
        return false;
    }
    bool ok = true;
    int nsec = iniparser_getnsec(d);
    for (int s = 0; s < nsec && ok; s++) {
        const char *sec = iniparser_getsecname(d, s);
        int nk = iniparser_getsecnkeys(d, sec);
        if (nk <= 0)
            continue;
        const char **keys = calloc((size_t)nk, sizeof *keys);
        if (!keys || !iniparser_getseckeys(d, sec, keys)) {
            free(keys);
            continue;
        }
        for (int k = 0; k < nk && ok; k++) {
            const char *full = keys[k]; /* "section:key" */
            const char *key = strchr(full, ':');
            key = key ? key + 1 : full;
            const char *val = iniparser_getstring(d, full, "");
            char perr[256] = "";
            if (!strcmp(sec, "sampling")) {
                sampler_params *sp = &c->ui.engine.sampling;
                if (!params_set_value(sp, key, val, perr, sizeof perr)) {
                    snprintf(err, errlen, "%s: [sampling] %s: %s", path, key, perr);
                    ok = false;
                }
            } else if (!strcmp(sec, "ui")) {
                if (!in_list(known_ui, key)) {
                    snprintf(err, errlen, "%s: unknown key [ui] %s", path, key);
                    ok = false;
                } else if (!strcmp(key, "inspector_order")) {
                    if (!strcmp(val, "raw") || !strcmp(val, "post"))
                        c->ui.post_order = !strcmp(val, "post");
                    else {
                        snprintf(err, errlen, "%s: [ui] inspector_order must be raw or post", path);
                        ok = false;
                    }
                } else {
                    bool b;
                    if (!parse_bool(val, &b)) {
                        snprintf(err, errlen, "%s: [ui] %s: '%s' is not a boolean", path, key, val);
                        ok = false;
                    } else if (!strcmp(key, "colors"))
                        c->ui.colors = b;
                    else if (!strcmp(key, "prob_colors"))
                        c->ui.prob_colors = b;
                    else
                        c->ui.mouse = b;
                }
            } else if (!strcmp(sec, "paths")) {
                if (!in_list(known_paths, key)) {
                    snprintf(err, errlen, "%s: unknown key [paths] %s", path, key);
                    ok = false;
                } else if (!strcmp(key, "model"))
                    snprintf(c->model, sizeof c->model, "%s", val);
                else
                    add_dirs(c, val);
            } else if (!strcmp(sec, "engine")) {
                long x;
                bool b;
                if (!in_list(known_engine, key)) {
                    snprintf(err, errlen, "%s: unknown key [engine] %s", path, key);
                    ok = false;
                } else if (!strcmp(key, "n_ctx")) {
                    if (parse_long(val, 0, 1L << 24, &x))
                        c->ui.engine.n_ctx = (uint32_t)x;
                    else {
                        snprintf(err, errlen, "%s: [engine] n_ctx: '%s' is not 0..16777216", path, val);
                        ok = false;
                    }
                } else if (!strcmp(key, "threads")) {
                    if (parse_long(val, 0, 1024, &x))
                        c->ui.engine.n_threads = (int32_t)x;
                    else {
                        snprintf(err, errlen, "%s: [engine] threads: '%s' is not 0..1024", path, val);
                        ok = false;
                    }
                } else if (!strcmp(key, "cache_type_k") || !strcmp(key, "cache_type_v")) {
                    enum tensor_type t;
                    if (!forward_kv_type_parse(val, &t)) {
                        snprintf(err, errlen, "%s: [engine] %s: '%s' is not f16, q8_0, q4_0 or f32", path, key, val);
                        ok = false;
                    } else if (key[11] == 'k')
                        c->ui.engine.cache_type_k = t;
                    else
                        c->ui.engine.cache_type_v = t;
                } else if (!strcmp(key, "blas")) {
                    if (!blas_mode_parse(val, &c->ui.engine.blas)) {
                        snprintf(err, errlen, "%s: [engine] blas: '%s' is not auto, on or off", path, val);
                        ok = false;
                    }
                } else if (!strcmp(key, "template")) {
                    snprintf(c->template_name, sizeof c->template_name, "%s", val);
                    c->ui.engine.template_name = c->template_name[0] ? c->template_name : NULL;
                } else if (!parse_bool(val, &b)) {
                    snprintf(err, errlen, "%s: [engine] %s: '%s' is not a boolean", path, key, val);
                    ok = false;
                } else if (!strcmp(key, "context_shift"))
                    c->ui.engine.context_shift = b;
                else
                    c->ui.engine.no_kv_cache = !b;
            } else if (!strcmp(sec, "chat")) {
                if (!in_list(known_chat, key)) {
                    snprintf(err, errlen, "%s: unknown key [chat] %s", path, key);
                    ok = false;
                } else {
                    free(c->system);
                    c->system = strdup(val);
                    c->ui.system = c->system;
                }
            } else {
                snprintf(err, errlen, "%s: unknown section [%s]", path, sec);
                ok = false;
            }
        }
        free(keys);
    }
    iniparser_freedict(d);
    return ok;
}
