/* JSON save/load (cJSON) and Markdown export. */
#include "store.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "params.h"
#include "ui.h"

#define STORE_MAX_BYTES (256u << 20)

static bool write_file(const char *path, const char *data, char *err, size_t errlen)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return false;
    }
    size_t n = strlen(data);
    bool ok = fwrite(data, 1, n, f) == n;
    ok &= fclose(f) == 0;
    if (!ok)
        snprintf(err, errlen, "%s: write failed", path);
    return ok;
}

bool store_save(ui_app *app, const char *path, char *err, size_t errlen)
{
    cJSON *root = cJSON_CreateObject();
    cJSON_AddNumberToObject(root, "tokscope", 1);
    cJSON_AddStringToObject(root, "model", app->model_path);
    cJSON_AddStringToObject(root, "template", app->template_name);
    cJSON *params = cJSON_AddObjectToObject(root, "params");
    for (int i = 0; params_names[i]; i++) {
        char v[64];
        params_format(&app->sp, params_names[i], v, sizeof v);
        char *end;
        double d = strtod(v, &end);
        if (end != v && !*end)
            cJSON_AddNumberToObject(params, params_names[i], d);
        else
            cJSON_AddStringToObject(params, params_names[i], v);
    }
    cJSON_AddNumberToObject(root, "current", (double)app->cur);
    cJSON *convs = cJSON_AddArrayToObject(root, "conversations");
    for (size_t k = 0; k < app->n_convs; k++) {
        const ui_conv *c = app->convs[k];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "system", c->system);
        cJSON *msgs = cJSON_AddArrayToObject(o, "messages");
        for (size_t i = 0; i < c->n_msgs; i++) {
            const ui_msg *m = &c->msgs[i];
            if (!strcmp(m->role, "assistant") && m->len == 0)
                continue;
            cJSON *jm = cJSON_CreateObject();
            cJSON_AddStringToObject(jm, "role", m->role);
            cJSON_AddStringToObject(jm, "content", m->text);
            cJSON_AddItemToArray(msgs, jm);
        }
        cJSON_AddItemToArray(convs, o);
    }
    char *text = cJSON_Print(root);
    cJSON_Delete(root);
    if (!text) {
        snprintf(err, errlen, "out of memory");
        return false;
    }
    bool ok = write_file(path, text, err, errlen);
    cJSON_free(text);
    return ok;
}

static char *read_file(const char *path, char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return NULL;
    }
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    if (!buf) {
        fclose(f);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    for (;;) {
        if (n + 1 >= cap) {
            char *nb = cap < STORE_MAX_BYTES ? realloc(buf, cap * 2) : NULL;
            if (!nb) {
                snprintf(err, errlen, cap < STORE_MAX_BYTES ? "out of memory" : "%s: larger than %u MiB", path,
                         STORE_MAX_BYTES >> 20);
                free(buf);
                fclose(f);
                return NULL;
            }
            buf = nb;
            cap *= 2;
        }
        size_t r = fread(buf + n, 1, cap - n - 1, f);
        if (r == 0)
            break;
        n += r;
    }
    fclose(f);
    buf[n] = 0;
    return buf;
}

static bool valid_role(const char *r)
{
    return !strcmp(r, "system") || !strcmp(r, "user") || !strcmp(r, "assistant");
}

bool store_load(ui_app *app, const char *path, char *err, size_t errlen)
{
    if (ui_busy(app)) {
        snprintf(err, errlen, "generating: Esc stops first");
        return false;
    }
    char *text = read_file(path, err, errlen);
    if (!text)
        return false;
    cJSON *root = cJSON_Parse(text);
    free(text);
    if (!root) {
        snprintf(err, errlen, "%s: not valid JSON", path);
        return false;
    }
    const cJSON *convs = cJSON_GetObjectItemCaseSensitive(root, "conversations");
    if (!cJSON_IsArray(convs) || cJSON_GetArraySize(convs) == 0) {
        snprintf(err, errlen, "%s: no \"conversations\" array", path);
        cJSON_Delete(root);
        return false;
    }
    /* validate everything before touching the current state */
    const cJSON *c;
    cJSON_ArrayForEach(c, convs)
    {
        const cJSON *msgs = cJSON_GetObjectItemCaseSensitive(c, "messages");
        const cJSON *sys = cJSON_GetObjectItemCaseSensitive(c, "system");
        if (!cJSON_IsObject(c) || (msgs && !cJSON_IsArray(msgs)) || (sys && !cJSON_IsString(sys) && !cJSON_IsNull(sys))) {
            snprintf(err, errlen, "%s: a conversation is not {\"system\": string, \"messages\": [...]}", path);
            cJSON_Delete(root);
            return false;
        }
        const cJSON *m;
        cJSON_ArrayForEach(m, msgs)
        {
            const cJSON *role = cJSON_GetObjectItemCaseSensitive(m, "role");
            const cJSON *content = cJSON_GetObjectItemCaseSensitive(m, "content");
            if (!cJSON_IsString(role) || !cJSON_IsString(content) || !valid_role(role->valuestring)) {
                snprintf(err, errlen, "%s: a message needs \"role\" (system/user/assistant) and \"content\" strings",
                         path);
                cJSON_Delete(root);
                return false;
            }
        }
    }
    sampler_params sp = app->sp;
    const cJSON *params = cJSON_GetObjectItemCaseSensitive(root, "params");
    const cJSON *p;
    cJSON_ArrayForEach(p, params)
    {
        char v[64], perr[160];
        if (cJSON_IsNumber(p))
            snprintf(v, sizeof v, "%.17g", p->valuedouble);
        else if (cJSON_IsString(p))
            snprintf(v, sizeof v, "%s", p->valuestring);
        else if (cJSON_IsNull(p))
            snprintf(v, sizeof v, "random");
        else
            continue;
        if (!params_set_value(&sp, p->string, v, perr, sizeof perr)) {
            snprintf(err, errlen, "%s: %s", path, perr);
            cJSON_Delete(root);
            return false;
        }
    }
    for (size_t k = 0; k < app->n_convs; k++)
        conv_free(app->convs[k]);
    app->n_convs = 0;
    cJSON_ArrayForEach(c, convs)
    {
        const cJSON *sys = cJSON_GetObjectItemCaseSensitive(c, "system");
        ui_conv *conv = ui_new_conv(app, cJSON_IsString(sys) ? sys->valuestring : "");
        const cJSON *m;
        cJSON_ArrayForEach(m, cJSON_GetObjectItemCaseSensitive(c, "messages"))
        {
            const char *role = cJSON_GetObjectItemCaseSensitive(m, "role")->valuestring;
            const char *content = cJSON_GetObjectItemCaseSensitive(m, "content")->valuestring;
            if (!strcmp(role, "system") && conv->n_msgs == 0 && !conv->system[0])
                conv_set_system(conv, content);
            else
                conv_add_msg(conv, role, content);
        }
    }
    const cJSON *cur = cJSON_GetObjectItemCaseSensitive(root, "current");
    app->cur = cJSON_IsNumber(cur) && cur->valuedouble >= 0 && cur->valuedouble < (double)app->n_convs
                   ? (size_t)cur->valuedouble
                   : 0;
    app->sp = sp;
    ui_params_changed(app);
    const cJSON *tmpl = cJSON_GetObjectItemCaseSensitive(root, "template");
    (void)tmpl; /* the template stays a property of the session: /template changes it */
    cJSON_Delete(root);
    return true;
}

bool store_export_md(ui_app *app, const char *path, char *err, size_t errlen)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return false;
    }
    ui_conv *c = ui_current(app);
    fprintf(f, "# Conversation %zu\n\n", app->cur + 1);
    if (app->loaded)
        fprintf(f, "Model: `%s` (%s, %s)\n\n", app->info.name, app->info.arch, app->info.file_type);
    if (c->system[0])
        fprintf(f, "## System\n\n%s\n\n", c->system);
    for (size_t i = 0; i < c->n_msgs; i++) {
        const ui_msg *m = &c->msgs[i];
        const char *title = !strcmp(m->role, "user") ? "User" : !strcmp(m->role, "assistant") ? "Assistant" : "System";
        fprintf(f, "## %s\n\n%s\n\n", title, m->text);
    }
    if (fclose(f) != 0) {
        snprintf(err, errlen, "%s: write failed", path);
        return false;
    }
    return true;
}
