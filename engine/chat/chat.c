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

char *chat_render_jinja_vars(const char *tmpl, const cJSON *messages, const cJSON *extra, const chat_render_params *p,
                             bool *raised, char *err, size_t errlen)
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
    char *out = jinja_render_string(tmpl, vars, p ? p->date : NULL, &kind, err, errlen);
    cJSON_Delete(vars);
    if (!out && raised)
        *raised = kind == JINJA_ERR_RAISE;
    return out;
}

static cJSON *messages_json(const chat_message *msgs, size_t n)
{
    cJSON *arr = cJSON_CreateArray();
    for (size_t i = 0; arr && i < n; i++) {
        cJSON *m = cJSON_CreateObject();
        cJSON_AddStringToObject(m, "role", msgs[i].role ? msgs[i].role : "");
        if (msgs[i].content)
            cJSON_AddStringToObject(m, "content", msgs[i].content);
        cJSON_AddItemToArray(arr, m);
    }
    return arr;
}

static char *render_jinja_kind(const char *tmpl, const chat_message *msgs, size_t n, const chat_render_params *p,
                               bool *raised, char *err, size_t errlen)
{
    cJSON *arr = messages_json(msgs, n);
    if (!arr) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    char *out = chat_render_jinja_json(tmpl, arr, p, raised, err, errlen);
    cJSON_Delete(arr);
    return out;
}

char *chat_render_jinja(const char *tmpl, const chat_message *msgs, size_t n, const chat_render_params *p,
                        char *err, size_t errlen)
{
    return render_jinja_kind(tmpl, msgs, n, p, NULL, err, errlen);
}

char *chat_render(const char *tmpl, const char *builtin, const chat_message *msgs, size_t n,
                  const chat_render_params *p, char *warn, size_t warnlen, char *err, size_t errlen)
{
    if (warn && warnlen)
        warn[0] = 0;
    if (tmpl && *tmpl && !builtin) {
        bool raised = false;
        char jerr[512];
        char *out = render_jinja_kind(tmpl, msgs, n, p, &raised, jerr, sizeof jerr);
        if (out)
            return out;
        if (raised) {
            snprintf(err, errlen, "%s", jerr);
            return NULL;
        }
        const char *fb = chat_detect_builtin(tmpl);
        if (warn && warnlen)
            snprintf(warn, warnlen, "chat template failed (%s); using built-in format '%s'", jerr, fb);
        return chat_render_builtin(fb, msgs, n, p, err, errlen);
    }
    const char *name = builtin ? builtin : (tmpl && *tmpl ? chat_detect_builtin(tmpl) : "chatml");
    return chat_render_builtin(name, msgs, n, p, err, errlen);
}
