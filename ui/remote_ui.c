/* The UI's side of the remote backend (see remote_ui.h). */
#include "remote_ui.h"

#include <stdio.h>
#include <string.h>

#include "ui.h"

bool remote_ui_on(const ui_app *app)
{
    return app->eparams.remote_url && *app->eparams.remote_url;
}

bool remote_ui_one_prob(const ui_app *app)
{
    return remote_ui_on(app) && strcmp(app->info.remote_kind, "tokscope") != 0;
}

bool remote_ui_refuse(ui_app *app, const char *what)
{
    if (!remote_ui_on(app))
        return false;
    ui_message(app, UI_MSG_WARN, "%s needs the local engine (not with --remote)", what);
    return true;
}

bool remote_ui_ignored(const ui_app *app, const char *name)
{
    if (!remote_ui_on(app) || !app->loaded)
        return false;
    const char *ign = app->info.remote_ignored;
    size_t n = strlen(name);
    for (const char *p = strstr(ign, name); p; p = strstr(p + 1, name))
        if ((p == ign || p[-1] == ' ') && (p[n] == ' ' || p[n] == 0))
            return true;
    return false;
}

/* The idx-th id of info.remote_models (space-separated) into out. */
static bool model_id_at(const ui_app *app, int idx, char *out, size_t cap)
{
    const char *p = app->info.remote_models;
    for (int i = 0; *p; i++) {
        size_t l = strcspn(p, " ");
        if (i == idx) {
            if (l >= cap)
                return false;
            memcpy(out, p, l);
            out[l] = 0;
            return true;
        }
        p += l;
        p += *p == ' ';
    }
    return false;
}

static void switch_model(ui_app *app, const char *id)
{
    if (ui_busy(app)) {
        ui_message(app, UI_MSG_WARN, "still generating: Esc stops it first");
        return;
    }
    engine_load(app->eng, id);
    ui_message(app, UI_MSG_INFO, "asking the server for model %s", id);
}

static void on_model_pick(ui_app *app, int idx)
{
    char id[256];
    if (model_id_at(app, idx, id, sizeof id))
        switch_model(app, id);
}

void remote_ui_model_cmd(ui_app *app, const char *args)
{
    if (!remote_ui_on(app)) {
        ui_message(app, UI_MSG_WARN,
                   "/model is for --remote (a local model is chosen with -m or the picker)");
        return;
    }
    if (args && *args) {
        switch_model(app, args);
        return;
    }
    /* the server's list as a pick list: the model in use marked and selected */
    char text[4096];
    int n = snprintf(text, sizeof text, "Server: %s (%s)\nIn use: %s\n\nThe server lists (GET /v1/models):\n",
                     app->eparams.remote_url, app->info.remote_kind, app->info.name);
    const int first = 4;
    int count = 0, sel = 0;
    const char *p = app->info.remote_models;
    while (*p && n > 0 && (size_t)n < sizeof text) {
        size_t l = strcspn(p, " ");
        const bool cur = strlen(app->info.name) == l && !strncmp(p, app->info.name, l);
        if (cur)
            sel = count;
        n += snprintf(text + n, sizeof text - (size_t)n, "  %.*s%s\n", (int)l, p, cur ? "  (in use)" : "");
        count++;
        p += l;
        p += *p == ' ';
    }
    if (n > 0 && (size_t)n < sizeof text)
        snprintf(text + n, sizeof text - (size_t)n,
                 "\n\xe2\x86\x91\xe2\x86\x93 choose, Enter switches (or /model ID), Esc closes.");
    ui_overlay_pick(app, "Remote models", text, first, count, sel, on_model_pick);
}

void remote_ui_probs_cmd(ui_app *app, const char *args)
{
    if (!remote_ui_on(app)) {
        ui_message(app, UI_MSG_WARN, "/probs is for --remote (the local engine shows raw and post both)");
        return;
    }
    if (args && *args) {
        if (strcmp(args, "raw") != 0 && strcmp(args, "post") != 0) {
            ui_message(app, UI_MSG_ERROR, "usage: /probs raw|post");
            return;
        }
        app->eparams.remote_probs_post = !strcmp(args, "post");
        if (app->eng)
            engine_set_remote_probs(app->eng, app->eparams.remote_probs_post);
    }
    const bool post = app->eparams.remote_probs_post;
    if (app->loaded && strcmp(app->info.remote_kind, "llama-server") != 0)
        ui_message(app, UI_MSG_WARN,
                   "probs %s: only llama-server has post-sampler probabilities (%s sends %s)",
                   post ? "post" : "raw", app->info.remote_kind,
                   !strcmp(app->info.remote_kind, "tokscope") ? "raw and post both" : "raw logprobs");
    else
        ui_message(app, UI_MSG_INFO, "probs %s: llama-server is asked for its %s from the next request",
                   post ? "post" : "raw",
                   post ? "post-sampler probabilities (post_sampling_probs)" : "raw logprobs");
}
