/* Chat rendering entry points: builds the variables transformers passes to
 * a chat template (messages, bos/eos, add_generation_prompt, tools=None,
 * documents=None) and runs the Jinja interpreter, or a built-in format. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chat/chat.h"
#include "chat/jinja.h"

char *chat_render_jinja_json(const char *tmpl, const cJSON *messages, const chat_render_params *p, bool *raised,
                             char *err, size_t errlen)
{
    return chat_render_jinja_vars(tmpl, messages, NULL, p, raised, err, errlen);
}

char *chat_bytes_escape(const char *s, size_t n)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        k += s[i] == 0 || (unsigned char)s[i] == 0xFF;
    char *out = malloc(n + k + 1), *w = out;
    if (!out)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        const unsigned char c = (unsigned char)s[i];
        if (c == 0 || c == 0xFF) {
            *w++ = (char)0xFF;
            *w++ = c == 0 ? '0' : (char)0xFF;
        } else {
            *w++ = (char)c;
        }
    }
    *w = 0;
    return out;
}

size_t chat_bytes_unescape(char *s)
{
    char *w = s;
    for (const char *r = s; *r; r++) {
        if ((unsigned char)r[0] == 0xFF && (r[1] == '0' || (unsigned char)r[1] == 0xFF)) {
            *w++ = r[1] == '0' ? 0 : (char)0xFF;
            r++;
        } else {
            *w++ = *r;
        }
    }
    *w = 0;
    return (size_t)(w - s);
}

char *chat_bytes_json_in(const char *json, size_t len, size_t *out_len)
{
    char *out = malloc(2 * len + 1), *w = out;
    if (!out)
        return NULL;
    for (size_t i = 0; i < len; i++) {
        const unsigned char ch = (unsigned char)json[i];
        if (ch == '\\' && i + 5 < len && json[i + 1] == 'u' && !memcmp(json + i + 2, "0000", 4)) {
            *w++ = (char)0xFF;
            *w++ = '0';
            i += 5;
        } else if (ch == '\\' && i + 1 < len) {
            *w++ = json[i++];
            *w++ = json[i];
        } else if (ch == 0xFF) {
            *w++ = (char)0xFF;
            *w++ = (char)0xFF;
        } else {
            *w++ = (char)ch;
        }
    }
    *w = 0;
    *out_len = (size_t)(w - out);
    return out;
}

char *chat_bytes_json_out(char *json)
{
    if (!json || !strchr(json, (char)0xFF))
        return json;
    const size_t n = strlen(json);
    char *out = malloc(6 * n + 1), *w = out;
    if (!out) {
        free(json);
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        if ((unsigned char)json[i] == 0xFF && json[i + 1] == '0') {
            w = stpcpy(w, "\\u0000");
            i++;
        } else if ((unsigned char)json[i] == 0xFF && (unsigned char)json[i + 1] == 0xFF) {
            *w++ = (char)0xFF;
            i++;
        } else {
            *w++ = json[i];
        }
    }
    *w = 0;
    free(json);
    return out;
}

/* s[0..n) as the string key: as it is when it holds no NUL, else escaped and flagged */
static void add_content(cJSON *o, const char *key, const char *s, size_t n)
{
    if (!memchr(s, 0, n) && s[n] == 0) {
        cJSON_AddStringToObject(o, key, s);
        return;
    }
    char *e = chat_bytes_escape(s, n);
    cJSON *item = e ? cJSON_AddStringToObject(o, key, e) : NULL;
    if (item)
        item->type |= CHAT_CJSON_BYTES;
    free(e);
}

static char *render_vars(const char *tmpl, const cJSON *messages, const cJSON *extra, const chat_render_params *p,
                         bool *raised, size_t *out_len, char *err, size_t errlen);

char *chat_render_jinja_vars(const char *tmpl, const cJSON *messages, const cJSON *extra, const chat_render_params *p,
                             bool *raised, char *err, size_t errlen)
{
    return render_vars(tmpl, messages, extra, p, raised, NULL, err, errlen);
}

char *chat_render_jinja_vars_n(const char *tmpl, const cJSON *messages, const cJSON *extra,
                               const chat_render_params *p, bool *raised, size_t *out_len, char *err, size_t errlen)
{
    return render_vars(tmpl, messages, extra, p, raised, out_len, err, errlen);
}

void chat_bytes_mark(cJSON *root)
{
    for (cJSON *c = root; c; c = c->next) {
        if (cJSON_IsString(c) && c->valuestring && strchr(c->valuestring, (char)0xFF))
            c->type |= CHAT_CJSON_BYTES;
        chat_bytes_mark(c->child);
    }
}

static char *render_vars(const char *tmpl, const cJSON *messages, const cJSON *extra, const chat_render_params *p,
                         bool *raised, size_t *out_len, char *err, size_t errlen)
{
    if (raised)
        *raised = false;
    if (!tmpl) {
        snprintf(err, errlen, "no template");
        return NULL;
    }
    cJSON *vars = cJSON_CreateObject();
    if (!vars) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    cJSON *msgs = messages ? cJSON_Duplicate(messages, 1) : cJSON_CreateArray();
    cJSON_AddItemToObject(vars, "messages", msgs);
    cJSON_AddStringToObject(vars, "bos_token", p && p->bos_token ? p->bos_token : "");
    cJSON_AddStringToObject(vars, "eos_token", p && p->eos_token ? p->eos_token : "");
    cJSON_AddBoolToObject(vars, "add_generation_prompt", p ? p->add_generation_prompt : true);
    /* transformers passes these explicitly (None when not given) */
    cJSON_AddNullToObject(vars, "tools");
    cJSON_AddNullToObject(vars, "documents");
    if (extra && cJSON_IsObject(extra))
        for (const cJSON *c = extra->child; c; c = c->next) {
            if (!c->string || !strcmp(c->string, "messages"))
                continue;
            cJSON *dup = cJSON_Duplicate(c, 1);
            if (dup && cJSON_GetObjectItemCaseSensitive(vars, c->string))
                cJSON_ReplaceItemInObjectCaseSensitive(vars, c->string, dup);
            else if (dup)
                cJSON_AddItemToObject(vars, c->string, dup);
        }
    enum jinja_err kind = JINJA_OK;
    char *out = NULL;
    jinja_template *t = jinja_parse(tmpl, err, errlen);
    if (t)
        out = jinja_render(t, vars, p ? p->date : NULL, NULL, out_len, &kind, err, errlen);
    else
        kind = JINJA_ERR_SYNTAX;
    jinja_free(t);
    cJSON_Delete(vars);
    if (!out && raised)
        *raised = kind == JINJA_ERR_RAISE;
    return out;
}

static bool is_role(const chat_message *m, const char *role)
{
    return m->role && !strcmp(m->role, role);
}

/* The messages without the pseudo ones (a malloc'd array of pointers into
 * msgs, *np of them); reasoning[i] (when asked) the reasoning of plain
 * message i or NULL; *vars the last CHAT_ROLE_VARS content or NULL. */
static chat_message *plain_messages(const chat_message *msgs, size_t n, size_t *np,
                                    const chat_message ***reasoning, const char **vars)
{
    chat_message *v = malloc((n + 1) * sizeof *v);
    const chat_message **r = reasoning ? calloc(n + 1, sizeof *r) : NULL;
    if (!v || (reasoning && !r)) {
        free(v);
        free(r);
        return NULL;
    }
    size_t k = 0;
    const chat_message *pending = NULL;
    if (vars)
        *vars = NULL;
    for (size_t i = 0; i < n; i++) {
        if (is_role(&msgs[i], CHAT_ROLE_VARS)) {
            if (vars)
                *vars = msgs[i].content;
        } else if (is_role(&msgs[i], CHAT_ROLE_REASONING)) {
            pending = &msgs[i];
        } else {
            if (r)
                r[k] = is_role(&msgs[i], "assistant") ? pending : NULL;
            v[k++] = msgs[i];
            pending = NULL;
        }
    }
    *np = k;
    if (reasoning)
        *reasoning = r;
    return v;
}

static cJSON *messages_json(const chat_message *msgs, size_t n, const chat_message *const *reasoning)
{
    cJSON *arr = cJSON_CreateArray();
    for (size_t i = 0; arr && i < n; i++) {
        cJSON *m = cJSON_CreateObject();
        cJSON_AddStringToObject(m, "role", msgs[i].role ? msgs[i].role : "");
        if (msgs[i].content)
            add_content(m, "content", msgs[i].content, chat_content_len(&msgs[i]));
        const chat_message *r = reasoning ? reasoning[i] : NULL;
        if (r && r->content) { /* the two names the 2026 templates read */
            add_content(m, "reasoning_content", r->content, chat_content_len(r));
            add_content(m, "thinking", r->content, chat_content_len(r));
        }
        cJSON_AddItemToArray(arr, m);
    }
    return arr;
}

static char *render_jinja_kind(const char *tmpl, const chat_message *msgs, size_t n, const chat_render_params *p,
                               bool *raised, size_t *out_len, char *err, size_t errlen)
{
    size_t np = 0;
    const chat_message **reasoning = NULL;
    const char *vars_text = NULL;
    chat_message *plain = plain_messages(msgs, n, &np, &reasoning, &vars_text);
    cJSON *arr = plain ? messages_json(plain, np, reasoning) : NULL;
    free(plain);
    free(reasoning);
    if (!arr) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    cJSON *vars = vars_text ? cJSON_Parse(vars_text) : NULL;
    if (vars_text && !cJSON_IsObject(vars)) {
        snprintf(err, errlen, "template variables are not a JSON object: %.80s", vars_text);
        cJSON_Delete(vars);
        cJSON_Delete(arr);
        return NULL;
    }
    char *out = render_vars(tmpl, arr, vars, p, raised, out_len, err, errlen);
    cJSON_Delete(vars);
    cJSON_Delete(arr);
    return out;
}

/* A built-in format over the plain messages. */
static char *render_builtin_plain(const char *name, const chat_message *msgs, size_t n, const chat_render_params *p,
                                  size_t *out_len, char *err, size_t errlen)
{
    size_t np = 0;
    chat_message *plain = plain_messages(msgs, n, &np, NULL, NULL);
    if (!plain) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    char *out = chat_render_builtin_n(name, plain, np, p, out_len, err, errlen);
    free(plain);
    return out;
}

char *chat_render_jinja(const char *tmpl, const chat_message *msgs, size_t n, const chat_render_params *p,
                        char *err, size_t errlen)
{
    return render_jinja_kind(tmpl, msgs, n, p, NULL, NULL, err, errlen);
}

char *chat_render(const char *tmpl, const char *builtin, const chat_message *msgs, size_t n,
                  const chat_render_params *p, char *warn, size_t warnlen, char *err, size_t errlen)
{
    return chat_render_n(tmpl, builtin, msgs, n, p, warn, warnlen, NULL, err, errlen);
}

char *chat_render_n(const char *tmpl, const char *builtin, const chat_message *msgs, size_t n,
                    const chat_render_params *p, char *warn, size_t warnlen, size_t *out_len, char *err,
                    size_t errlen)
{
    if (warn && warnlen)
        warn[0] = 0;
    if (tmpl && *tmpl && !builtin) {
        bool raised = false;
        char jerr[512];
        char *out = render_jinja_kind(tmpl, msgs, n, p, &raised, out_len, jerr, sizeof jerr);
        if (out)
            return out;
        if (raised) {
            snprintf(err, errlen, "%s", jerr);
            return NULL;
        }
        const char *fb = chat_detect_builtin(tmpl);
        if (warn && warnlen)
            snprintf(warn, warnlen, "chat template failed (%s); using built-in format '%s'", jerr, fb);
        return render_builtin_plain(fb, msgs, n, p, out_len, err, errlen);
    }
    const char *name = builtin ? builtin : (tmpl && *tmpl ? chat_detect_builtin(tmpl) : "chatml");
    return render_builtin_plain(name, msgs, n, p, out_len, err, errlen);
}
