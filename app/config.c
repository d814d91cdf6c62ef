/* The configuration layers and what each key means. Files are read by
 * iniparser (config_ini.c adds line numbers and skips the lines it refuses). */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "chat/chat.h"
#include "spec/spec.h"
#include "config_ini.h"
#include "model/forward.h"
#include "params.h"

#define CONFIG_FILE_MAX (1u << 20) /* a config file this large is a mistake */

static const struct {
    const char *section, *name;
} keys[] = {
    {"sampling", "temp"},
    {"sampling", "top_k"},
    {"sampling", "top_p"},
    {"sampling", "min_p"},
    {"sampling", "typical_p"},
    {"sampling", "repeat_penalty"},
    {"sampling", "repeat_last_n"},
    {"sampling", "frequency_penalty"},
    {"sampling", "presence_penalty"},
    {"sampling", "seed"},
    {"sampling", "n_predict"},
    {"sampling", "n_top"},
    {"sampling", "top_n_sigma"},
    {"sampling", "xtc_probability"},
    {"sampling", "xtc_threshold"},
    {"sampling", "mirostat"},
    {"sampling", "mirostat_tau"},
    {"sampling", "mirostat_eta"},
    {"sampling", "dry_multiplier"},
    {"sampling", "dry_base"},
    {"sampling", "dry_allowed_length"},
    {"sampling", "dry_penalty_last_n"},
    {"sampling", "stop"},
    {"ui", "colors"},
    {"ui", "prob_colors"},
    {"ui", "mouse"},
    {"ui", "inspector_order"},
    {"ui", "autosave"},
    {"paths", "model_dirs"},
    {"paths", "model"},
    {"engine", "n_ctx"},
    {"engine", "threads"},
    {"engine", "template"},
    {"engine", "context_shift"},
    {"engine", "kv_cache"},
    {"engine", "cache_type_k"},
    {"engine", "cache_type_v"},
    {"engine", "blas"},
    {"chat", "system"},
    {"remote", "url"},
    {"remote", "model"},
    {"remote", "api_key_file"},
    {"remote", "timeout"},
    {"remote", "probs"},
    {"spec", "type"},
    {"spec", "draft_max"},
    {"spec", "draft_model"},
    {"session", "save_kv"},
    {"session", "kv_max_mb"},
    {"serve", "model"},
    {"serve", "host"},
    {"serve", "port"},
    {"serve", "api_key_file"},
    {"serve", "max_queue"},
    {"serve", "parallel"},
    {"serve", "n_ctx"},
    {"serve", "threads"},
    {"serve", "kv_dir"},
    {"serve", "kv_max_mb"},
};
#define N_KEYS (sizeof keys / sizeof keys[0])
_Static_assert(N_KEYS <= CONFIG_MAX_KEYS, "CONFIG_MAX_KEYS too small");

size_t config_n_keys(void)
{
    return N_KEYS;
}

bool config_key_at(size_t i, const char **section, const char **name)
{
    if (i >= N_KEYS)
        return false;
    *section = keys[i].section;
    *name = keys[i].name;
    return true;
}

static int key_index(const char *section, const char *name)
{
    if (!strcmp(section, "sampling") && !strcmp(name, "temperature"))
        name = "temp"; /* the sampler's alias */
    for (size_t i = 0; i < N_KEYS; i++)
        if (!strcmp(keys[i].section, section) && !strcmp(keys[i].name, name))
            return (int)i;
    return -1;
}

static bool known_section(const char *s)
{
    for (size_t i = 0; i < N_KEYS; i++)
        if (!strcmp(keys[i].section, s))
            return true;
    return false;
}

const config_origin *config_origin_of(const tok_config *c, const char *section, const char *key)
{
    int i = key_index(section, key);
    return i < 0 ? NULL : &c->origin[i];
}

void config_init(tok_config *c)
{
    memset(c, 0, sizeof *c);
    ui_default_options(&c->ui);
    snprintf(c->serve.host, sizeof c->serve.host, "127.0.0.1");
    c->serve.port = 8080;
    c->serve.max_queue = 64;
    c->serve.parallel = CONFIG_SERVE_PARALLEL;
    c->serve.kv_max_mb = 1024;
}

static void free_dirs(tok_config *c)
{
    for (size_t i = 0; i < c->n_dirs; i++)
        free(c->dirs[i]);
    free(c->dirs);
    c->dirs = NULL;
    c->n_dirs = 0;
    c->ui.model_dirs = NULL;
    c->ui.n_model_dirs = 0;
}

void config_free(tok_config *c)
{
    free_dirs(c);
    free(c->system);
    c->system = NULL;
    for (size_t i = 0; i < c->n_files; i++)
        free(c->files[i]);
    c->n_files = 0;
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

const char *config_system_path(void)
{
    return TOKSCOPE_SYSCONFDIR "/tokscope/tokscope.ini";
}

/* ---- values ------------------------------------------------------------- */

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

/* ':' or ',' separated; replaces what a lower layer set */
static void set_dirs(tok_config *c, const char *list)
{
    free_dirs(c);
    const char *p = list;
    while (*p) {
        size_t l = strcspn(p, ":,");
        const char *b = p;
        size_t t = l;
        while (t && *b == ' ') {
            b++;
            t--;
        }
        while (t && b[t - 1] == ' ')
            t--;
        if (t) {
            char **v = realloc(c->dirs, (c->n_dirs + 1) * sizeof *v); // NOLINT(bugprone-sizeof-expression)
            char *d = strndup(b, t);
            if (v)
                c->dirs = v;
            if (v && d)
                c->dirs[c->n_dirs++] = d;
            else
                free(d);
        }
        p += l;
        if (*p)
            p++;
    }
    c->ui.model_dirs = c->dirs;
    c->ui.n_model_dirs = c->n_dirs;
}

static bool bad(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static bool bad(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return false;
}

/* [serve] key = val; the ranges are serve's command line's (app/cli.c). */
static bool set_serve(config_serve *s, const char *key, const char *val, char *err, size_t errlen)
{
    static const struct {
        const char *key;
        long lo, hi;
        const char *unit;
    } nums[] = {
        {"port", 0, 65535, " (0 = any free port)"},
        {"max_queue", 0, 100000, ""},
        {"parallel", 1, 256, " (requests evaluated side by side)"},
        {"n_ctx", 0, 1L << 24, " (0 = min(trained context, 4096))"},
        {"threads", 0, 1024, " (0 = all cores)"},
        {"kv_max_mb", 0, 1L << 30, " (MiB; 0 = no cap)"},
    };
    long *dst[] = {&s->port, &s->max_queue, &s->parallel, &s->n_ctx, &s->threads, &s->kv_max_mb};
    for (size_t k = 0; k < sizeof nums / sizeof nums[0]; k++) {
        long x;
        if (strcmp(key, nums[k].key) != 0)
            continue;
        if (!parse_long(val, nums[k].lo, nums[k].hi, &x))
            return bad(err, errlen, "[serve] %s: '%s' is not %ld..%ld%s", key, val, nums[k].lo, nums[k].hi,
                       nums[k].unit);
        *dst[k] = x;
        return true;
    }
    char *text = !strcmp(key, "model") ? s->model
                 : !strcmp(key, "host") ? s->host
                 : !strcmp(key, "api_key_file") ? s->api_key_file
                                                : s->kv_dir;
    size_t cap = !strcmp(key, "model") ? sizeof s->model
                 : !strcmp(key, "host") ? sizeof s->host
                 : !strcmp(key, "api_key_file") ? sizeof s->api_key_file
                                                : sizeof s->kv_dir;
    if (strlen(val) >= cap)
        return bad(err, errlen, "[serve] %s: too long", key);
    if (!strcmp(key, "host") && !*val)
        return bad(err, errlen, "[serve] host: empty (127.0.0.1 listens on this machine only)");
    snprintf(text, cap, "%s", val);
    return true;
}

/* Sets key i; false + err (naming the key) on a bad value. */
static bool set_value(tok_config *c, size_t i, const char *val, char *err, size_t errlen)
{
    const char *sec = keys[i].section, *key = keys[i].name;
    engine_params *e = &c->ui.engine;
    long x;
    bool b;
    if (!strcmp(sec, "sampling")) {
        sampler_params sp = e->sampling;
        char perr[200] = "";
        if (!strcmp(key, "stop")) { /* one stop string; empty = none */
            sampler_params_set(&sp, "stop", "", perr, sizeof perr);
            if (*val && !sampler_params_set(&sp, "stop", val, perr, sizeof perr))
                return bad(err, errlen, "[sampling] stop: %s", perr);
        } else if (!params_set_value(&sp, key, val, perr, sizeof perr))
            return bad(err, errlen, "[sampling] %s", perr);
        e->sampling = sp;
        return true;
    }
    if (!strcmp(sec, "ui")) {
        if (!strcmp(key, "inspector_order")) {
            if (strcmp(val, "raw") != 0 && strcmp(val, "post") != 0)
                return bad(err, errlen, "[ui] inspector_order: '%s' is not raw or post", val);
            c->ui.post_order = !strcmp(val, "post");
            return true;
        }
        if (!parse_bool(val, &b))
            return bad(err, errlen, "[ui] %s: '%s' is not a boolean (true/false)", key, val);
        if (!strcmp(key, "colors"))
            c->ui.colors = b;
        else if (!strcmp(key, "prob_colors"))
            c->ui.prob_colors = b;
        else if (!strcmp(key, "autosave"))
            c->ui.no_autosave = !b;
        else
            c->ui.mouse = b;
        return true;
    }
    if (!strcmp(sec, "paths")) {
        if (!strcmp(key, "model")) {
            if (strlen(val) >= sizeof c->model)
                return bad(err, errlen, "[paths] model: path too long");
            snprintf(c->model, sizeof c->model, "%s", val);
            e->model_path = c->model[0] ? c->model : NULL;
        } else
            set_dirs(c, val);
        return true;
    }
    if (!strcmp(sec, "engine")) {
        if (!strcmp(key, "n_ctx")) {
            if (!parse_long(val, 0, 1L << 24, &x))
                return bad(err, errlen, "[engine] n_ctx: '%s' is not 0..16777216", val);
            e->n_ctx = (uint32_t)x;
        } else if (!strcmp(key, "threads")) {
            if (!parse_long(val, 0, 1024, &x))
                return bad(err, errlen, "[engine] threads: '%s' is not 0..1024", val);
            e->n_threads = (int32_t)x;
        } else if (!strcmp(key, "template")) {
            if (!*val || !strcmp(val, "model")) {
                c->template_name[0] = 0;
                e->template_name = NULL;
            } else if (strcmp(val, "raw") != 0 && !chat_builtin_known(val))
                return bad(err, errlen, "[engine] template: unknown template '%s'", val);
            else {
                snprintf(c->template_name, sizeof c->template_name, "%s", val);
                e->template_name = c->template_name;
            }
        } else if (!strcmp(key, "cache_type_k") || !strcmp(key, "cache_type_v")) {
            enum tensor_type t;
            if (!forward_kv_type_parse(val, &t))
                return bad(err, errlen, "[engine] %s: '%s' is not f16, q8_0, q4_0 or f32", key, val);
            *(key[11] == 'k' ? &e->cache_type_k : &e->cache_type_v) = t;
        } else if (!strcmp(key, "blas")) {
            if (!blas_mode_parse(val, &e->blas))
                return bad(err, errlen, "[engine] blas: '%s' is not auto, on or off", val);
        } else if (!parse_bool(val, &b))
            return bad(err, errlen, "[engine] %s: '%s' is not a boolean (true/false)", key, val);
        else if (!strcmp(key, "context_shift"))
            e->context_shift = b;
        else
            e->no_kv_cache = !b;
        return true;
    }
    if (!strcmp(sec, "remote")) { /* the key itself is never a configuration value: only its file */
        if (!strcmp(key, "timeout")) {
            if (!parse_long(val, 0, 86400, &x))
                return bad(err, errlen, "[remote] timeout: '%s' is not 0..86400 seconds", val);
            e->remote_timeout_s = (int32_t)x;
            return true;
        }
        if (!strcmp(key, "probs")) { /* llama-server: raw logprobs or post_sampling_probs */
            if (strcmp(val, "raw") != 0 && strcmp(val, "post") != 0)
                return bad(err, errlen, "[remote] probs: '%s' is not raw or post", val);
            e->remote_probs_post = !strcmp(val, "post");
            return true;
        }
        char *dst = !strcmp(key, "url") ? c->remote_url : !strcmp(key, "model") ? c->remote_model : c->api_key_file;
        size_t cap = !strcmp(key, "url") ? sizeof c->remote_url
                     : !strcmp(key, "model") ? sizeof c->remote_model
                                             : sizeof c->api_key_file;
        if (strlen(val) >= cap)
            return bad(err, errlen, "[remote] %s: too long", key);
        if (!strcmp(key, "url") && *val && strncmp(val, "http://", 7) != 0 && strncmp(val, "https://", 8) != 0)
            return bad(err, errlen, "[remote] url: '%s' is not an http:// or https:// URL", val);
        snprintf(dst, cap, "%s", val);
        e->remote_url = c->remote_url[0] ? c->remote_url : NULL;
        e->remote_model = c->remote_model[0] ? c->remote_model : NULL;
        return true;
    }
    if (!strcmp(sec, "spec")) { /* speculative decoding (engine/spec/spec.h) */
        if (!strcmp(key, "type")) {
            enum spec_type t;
            if (!spec_type_parse(val, &t))
                return bad(err, errlen, "[spec] type: '%s' is not off, ngram, draft, mtp or auto", val);
            e->spec_type = (int32_t)t;
        } else if (!strcmp(key, "draft_max")) {
            if (!parse_long(val, 1, SPEC_DRAFT_MAX, &x))
                return bad(err, errlen, "[spec] draft_max: '%s' is not 1..%d", val, SPEC_DRAFT_MAX);
            e->draft_max = (int32_t)x;
        } else {
            if (strlen(val) >= sizeof c->draft_model)
                return bad(err, errlen, "[spec] draft_model: path too long");
            snprintf(c->draft_model, sizeof c->draft_model, "%s", val);
            e->draft_model = c->draft_model[0] ? c->draft_model : NULL;
        }
        return true;
    }
    if (!strcmp(sec, "session")) { /* KV snapshots beside session files (memory/kv_snapshot.h) */
        if (!strcmp(key, "kv_max_mb")) {
            if (!parse_long(val, 0, 1L << 30, &x))
                return bad(err, errlen, "[session] kv_max_mb: '%s' is not 0..1073741824 (MiB; 0 = no cap)", val);
            e->kv_max_bytes = (uint64_t)x << 20;
        } else if (!parse_bool(val, &b))
            return bad(err, errlen, "[session] save_kv: '%s' is not a boolean (true/false)", val);
        else
            c->ui.no_save_kv = !b;
        return true;
    }
    if (!strcmp(sec, "serve"))
        return set_serve(&c->serve, key, val, err, errlen);
    /* [chat] system */
    char *s = strdup(val);
    if (!s)
        return bad(err, errlen, "out of memory");
    free(c->system);
    c->system = s;
    c->ui.system = s;
    return true;
}

void config_value(const tok_config *c, size_t i, char *buf, size_t cap)
{
    const char *sec = keys[i].section, *key = keys[i].name;
    const engine_params *e = &c->ui.engine;
    const config_serve *sv = &c->serve;
    buf[0] = 0;
    if (!strcmp(sec, "serve")) {
        if (!strcmp(key, "model"))
            snprintf(buf, cap, "%s", sv->model);
        else if (!strcmp(key, "host"))
            snprintf(buf, cap, "%s", sv->host);
        else if (!strcmp(key, "api_key_file"))
            snprintf(buf, cap, "%s", sv->api_key_file);
        else if (!strcmp(key, "kv_dir"))
            snprintf(buf, cap, "%s", sv->kv_dir);
        else
            snprintf(buf, cap, "%ld",
                     !strcmp(key, "port")        ? sv->port
                     : !strcmp(key, "max_queue") ? sv->max_queue
                     : !strcmp(key, "parallel")  ? sv->parallel
                     : !strcmp(key, "n_ctx")     ? sv->n_ctx
                     : !strcmp(key, "threads")   ? sv->threads
                                                 : sv->kv_max_mb);
    } else if (!strcmp(sec, "sampling")) {
        if (!strcmp(key, "stop"))
            snprintf(buf, cap, "%s", e->sampling.n_stop > 0 ? e->sampling.stop[0] : "");
        else
            sampler_params_get(&e->sampling, key, buf, cap);
    } else if (!strcmp(key, "colors"))
        snprintf(buf, cap, "%s", c->ui.colors ? "true" : "false");
    else if (!strcmp(key, "prob_colors"))
        snprintf(buf, cap, "%s", c->ui.prob_colors ? "true" : "false");
    else if (!strcmp(key, "mouse"))
        snprintf(buf, cap, "%s", c->ui.mouse ? "true" : "false");
    else if (!strcmp(key, "inspector_order"))
        snprintf(buf, cap, "%s", c->ui.post_order ? "post" : "raw");
    else if (!strcmp(key, "autosave"))
        snprintf(buf, cap, "%s", c->ui.no_autosave ? "false" : "true");
    else if (!strcmp(key, "model_dirs")) {
        size_t off = 0;
        for (size_t k = 0; k < c->n_dirs && off < cap; k++) {
            int w = snprintf(buf + off, cap - off, "%s%s", k ? ":" : "", c->dirs[k]);
            if (w < 0)
                break;
            off += (size_t)w;
        }
    } else if (!strcmp(sec, "paths") && !strcmp(key, "model"))
        snprintf(buf, cap, "%s", e->model_path ? e->model_path : "");
    else if (!strcmp(key, "n_ctx"))
        snprintf(buf, cap, "%u", (unsigned)e->n_ctx);
    else if (!strcmp(key, "threads"))
        snprintf(buf, cap, "%d", (int)e->n_threads);
    else if (!strcmp(key, "template"))
        snprintf(buf, cap, "%s", e->template_name ? e->template_name : "");
    else if (!strcmp(key, "context_shift"))
        snprintf(buf, cap, "%s", e->context_shift ? "true" : "false");
    else if (!strcmp(key, "kv_cache"))
        snprintf(buf, cap, "%s", e->no_kv_cache ? "false" : "true");
    else if (!strcmp(key, "cache_type_k"))
        snprintf(buf, cap, "%s", forward_kv_type_name(e->cache_type_k));
    else if (!strcmp(key, "cache_type_v"))
        snprintf(buf, cap, "%s", forward_kv_type_name(e->cache_type_v));
    else if (!strcmp(key, "blas"))
        snprintf(buf, cap, "%s", blas_mode_name(e->blas));
    else if (!strcmp(key, "system"))
        snprintf(buf, cap, "%s", c->ui.system ? c->ui.system : "");
    else if (!strcmp(key, "url"))
        snprintf(buf, cap, "%s", c->remote_url);
    else if (!strcmp(sec, "remote") && !strcmp(key, "model"))
        snprintf(buf, cap, "%s", c->remote_model);
    else if (!strcmp(key, "api_key_file"))
        snprintf(buf, cap, "%s", c->api_key_file);
    else if (!strcmp(key, "timeout"))
        snprintf(buf, cap, "%d", (int)e->remote_timeout_s);
    else if (!strcmp(key, "probs"))
        snprintf(buf, cap, "%s", e->remote_probs_post ? "post" : "raw");
    else if (!strcmp(key, "type"))
        snprintf(buf, cap, "%s", spec_type_name((enum spec_type)e->spec_type));
    else if (!strcmp(key, "draft_max"))
        snprintf(buf, cap, "%d", (int)(e->draft_max > 0 ? e->draft_max : 3));
    else if (!strcmp(key, "draft_model"))
        snprintf(buf, cap, "%s", c->draft_model);
    else if (!strcmp(key, "save_kv"))
        snprintf(buf, cap, "%s", c->ui.no_save_kv ? "false" : "true");
    else if (!strcmp(key, "kv_max_mb"))
        snprintf(buf, cap, "%llu", (unsigned long long)(e->kv_max_bytes >> 20));
}

bool config_set(tok_config *c, const char *section, const char *key, const char *value, const char *option,
                char *err, size_t errlen)
{
    int i = key_index(section, key);
    if (i < 0)
        return bad(err, errlen, "unknown key [%s] %s", section, key);
    if (!set_value(c, (size_t)i, value, err, errlen))
        return false;
    c->origin[i] = (config_origin){option, 0, false};
    return true;
}

void config_apply_env(tok_config *c)
{
    const char *nc = getenv("NO_COLOR");
    if (nc && *nc) {
        c->ui.colors = false;
        c->origin[key_index("ui", "colors")] = (config_origin){"NO_COLOR", 0, false};
    }
}

/* ---- files -------------------------------------------------------------- */

struct load_state {
    tok_config *c;
    const char *name; /* as stored in c->files */
    FILE *diag;
};

static void report(struct load_state *st, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void report(struct load_state *st, int line, const char *fmt, ...)
{
    st->c->n_issues++;
    if (!st->diag)
        return;
    char msg[1200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (line > 0)
        fprintf(st->diag, "tokscope: %s:%d: %s\n", st->name, line, msg);
    else
        fprintf(st->diag, "tokscope: %s: %s\n", st->name, msg);
}

/* The first problem in the strict section, kept as an error. */
static void strict_fail(struct load_state *st, const ini_item *it, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void strict_fail(struct load_state *st, const ini_item *it, const char *fmt, ...)
{
    tok_config *c = st->c;
    if (!c->strict || strcmp(it->section, c->strict) != 0 || c->strict_err[0])
        return;
    char msg[1000];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    snprintf(c->strict_err, sizeof c->strict_err, "%s:%d: %s", st->name, it->line, msg);
}

static void on_item(void *user, const ini_item *it)
{
    struct load_state *st = user;
    const int line = it->line;
    switch (it->kind) {
    case INI_SKIPPED: report(st, line, "%s (line ignored)", it->value); return;
    case INI_NAMELESS: report(st, line, "a section header needs a name (ignored)"); return;
    case INI_SECTION:
        /* a section iniparser made up after a nameless header has no line:
         * its keys are reported one by one */
        if (line > 0 && !known_section(it->section))
            report(st, line, "unknown section [%s] (ignored with its keys)", it->section);
        return;
    case INI_OVERRIDDEN:
        if (key_index(it->section, it->key) >= 0)
            report(st, line, "[%s] %s is set again on line %d (this line ignored)", it->section, it->key, it->later);
        return;
    case INI_KEY: break;
    }
    if (!*it->section) {
        report(st, line, "'%s' is outside any [section] (ignored)", it->key);
        return;
    }
    if (!it->section_line) {
        report(st, line, "'%s' follows a section header without a name (ignored)", it->key);
        return;
    }
    if (!known_section(it->section))
        return; /* reported with its section */
    int i = key_index(it->section, it->key);
    if (i < 0) {
        report(st, line, "unknown key '%s' in [%s] (ignored)", it->key, it->section);
        strict_fail(st, it, "unknown key '%s' in [%s]", it->key, it->section);
        return;
    }
    char err[600];
    if (!set_value(st->c, (size_t)i, it->value, err, sizeof err)) {
        report(st, line, "%s (ignored)", err);
        strict_fail(st, it, "%s", err);
        return;
    }
    st->c->origin[i] = (config_origin){st->name, line, true};
}

static const char *remember_file(tok_config *c, const char *name, bool read)
{
    /* origins point at the stored name, so it must outlive the caller's */
    if (c->n_files >= CONFIG_MAX_FILES)
        return "(a file past the first 8)";
    char *s = strdup(name);
    if (!s)
        return "(a file)";
    c->files[c->n_files] = s;
    c->file_read[c->n_files++] = read;
    return s;
}

void config_load_text(tok_config *c, const char *text, size_t n, const char *name, FILE *diag)
{
    struct load_state st = {c, remember_file(c, name, true), diag};
    /* the stored name outlives this call: origins point at it */
    char err[300];
    if (!ini_read(text, n, on_item, &st, err, sizeof err))
        report(&st, 0, "%s (the rest of the file ignored)", err);
}

bool config_load(tok_config *c, const char *path, bool must_exist, FILE *diag, char *err, size_t errlen)
{
    if (!path || !*path)
        return true;
    FILE *f = fopen(path, "rb");
    if (!f) {
        int e = errno;
        if (!must_exist && e == ENOENT) {
            remember_file(c, path, false);
            return true;
        }
        snprintf(err, errlen, "%s: %s", path, strerror(e));
        return false;
    }
    struct stat sb;
    if (fstat(fileno(f), &sb) != 0 || !S_ISREG(sb.st_mode) || sb.st_size > (off_t)CONFIG_FILE_MAX) {
        fclose(f);
        snprintf(err, errlen, "%s: not a regular file of at most 1 MiB", path);
        return false;
    }
    char *text = malloc((size_t)sb.st_size + 1);
    size_t n = text ? fread(text, 1, (size_t)sb.st_size, f) : 0;
    bool ok = text && !ferror(f);
    fclose(f);
    if (!ok) {
        free(text);
        snprintf(err, errlen, "%s: cannot read", path);
        return false;
    }
    config_load_text(c, text, n, path, diag);
    free(text);
    return true;
}

/* ---- --print-config ----------------------------------------------------- */

/* v as INI reads it back: quoted when it has ';' or '#', outer spaces or a
 * leading quote (iniparser keeps what is inside quotes). false when it
 * cannot be written: it would need quotes and has both kinds. */
static bool quote(const char *v, char *out, size_t cap)
{
    size_t n = strlen(v);
    bool needs = strpbrk(v, ";#") ||
                 (n && (isspace((unsigned char)v[0]) || isspace((unsigned char)v[n - 1]))) || v[0] == '"' ||
                 v[0] == '\'' || (n && v[n - 1] == '\\') || !strcmp(v, "\"\"") || !strcmp(v, "''");
    if (!needs)
        snprintf(out, cap, "%s", v);
    else if (!strchr(v, '"'))
        snprintf(out, cap, "\"%s\"", v);
    else if (!strchr(v, '\''))
        snprintf(out, cap, "'%s'", v);
    else {
        snprintf(out, cap, "%s", v);
        return false;
    }
    return true;
}

void config_print(const tok_config *c, FILE *out)
{
    fprintf(out, "; tokscope --print-config: the merged configuration. Sources, lowest first:\n"
                 ";   built-in defaults\n");
    for (size_t i = 0; i < c->n_files; i++)
        fprintf(out, ";   %s%s\n", c->files[i], c->file_read[i] ? "" : " (absent)");
    fprintf(out, ";   environment (NO_COLOR), command-line options\n");
    const char *sec = "";
    for (size_t i = 0; i < N_KEYS; i++) {
        if (strcmp(sec, keys[i].section) != 0) {
            sec = keys[i].section;
            fprintf(out, "\n[%s]\n", sec);
        }
        char v[4096], q[4200], line[4400];
        config_value(c, i, v, sizeof v);
        for (char *p = v; *p; p++)
            if (*p == '\n' || *p == '\r')
                *p = ' '; /* an INI value is one line */
        const config_origin *o = &c->origin[i];
        char src[4200];
        if (!o->src)
            snprintf(src, sizeof src, "default");
        else if (o->file && o->line > 0)
            snprintf(src, sizeof src, "%s:%d", o->src, o->line);
        else if (o->file)
            snprintf(src, sizeof src, "%s", o->src);
        else if (!strcmp(o->src, "NO_COLOR"))
            snprintf(src, sizeof src, "environment: NO_COLOR");
        else
            snprintf(src, sizeof src, "command line: %s", o->src);
        bool ok = quote(v, q, sizeof q);
        snprintf(line, sizeof line, "%s = %s", keys[i].name, q);
        /* an INI line holds at most INI_LINE_MAX - 2 bytes */
        if (!ok || strlen(line) + 3 > INI_LINE_MAX - 2)
            fprintf(out, "; %s: %s, cannot be written as an INI value (%s)\n", keys[i].name,
                    ok ? "too long" : "needs quotes and has both kinds", src);
        else if (strlen(line) + 3 + strlen(src) <= INI_LINE_MAX - 2)
            fprintf(out, "%-30s ; %s\n", line, src);
        else
            fprintf(out, "%s\n", line);
    }
}
