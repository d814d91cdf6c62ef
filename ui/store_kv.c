/* KV snapshots beside session files (store.h): the engine writes and reads
 * them (memory/kv_snapshot.h); the UI names them, removes a stale one when
 * snapshots are off, and says what the engine did. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "autosave.h"
#include "memory/kv_snapshot.h"
#include "store.h"
#include "ui.h"

static bool kv_local(const ui_app *app)
{
    return app->eng && !(app->eparams.remote_url && *app->eparams.remote_url);
}

void store_kv_save(ui_app *app, const char *path)
{
    char kv[4096 + 160];
    if (!kv_local(app) || !kv_snapshot_path(path, kv, sizeof kv))
        return;
    if (!app->save_kv) { /* it would stand for an earlier state of this file */
        if (unlink(kv) != 0 && errno != ENOENT)
            ui_message(app, UI_MSG_WARN, "cannot remove the old KV snapshot %s: %s", kv, strerror(errno));
        return;
    }
    engine_save_kv(app->eng, kv);
}

void store_kv_load(ui_app *app, const char *path)
{
    char kv[4096 + 160];
    if (!kv_local(app) || !app->save_kv || !kv_snapshot_path(path, kv, sizeof kv) || access(kv, F_OK) != 0)
        return; /* none: the conversation is evaluated when the next message is sent, as always */
    engine_load_kv(app->eng, kv);
}

/* After what the status line says now ("saved FILE", "loaded FILE"), when it says something. */
static void say_after(ui_app *app, enum ui_msg_level lvl, const char *text)
{
    if (!app->msg[0]) {
        ui_message(app, lvl, "%s", text);
        return;
    }
    char old[sizeof app->msg];
    snprintf(old, sizeof old, "%s", app->msg);
    ui_message(app, lvl > app->msg_level ? lvl : app->msg_level, "%s; %s", old, text);
}

void store_kv_event(ui_app *app, const engine_event *ev)
{
    const bool announced = app->kv_announce > 0;
    switch ((enum engine_kv_kind)ev->kv) {
    case ENGINE_KV_SAVED:
    case ENGINE_KV_PRUNED: /* serve's only */
        if (announced)
            say_after(app, UI_MSG_INFO, ev->message);
        break;
    case ENGINE_KV_SAVE_SKIPPED:
        if (announced)
            say_after(app, UI_MSG_INFO, ev->message);
        break;
    case ENGINE_KV_SAVE_FAILED:
        if (strstr(ev->message, "over the cap") && !announced) {
            if (app->kv_cap_said)
                break; /* once a session: every reply would say it again */
            app->kv_cap_said = true;
        }
        if (announced)
            say_after(app, UI_MSG_WARN, ev->message);
        else
            ui_message(app, UI_MSG_WARN, "%s", ev->message);
        break;
    case ENGINE_KV_RESTORED:
    case ENGINE_KV_NOT_USED:
    case ENGINE_KV_USED: {
        app->n_past = ev->n_past;
        enum ui_msg_level lvl = ev->kv == ENGINE_KV_NOT_USED ? UI_MSG_WARN : UI_MSG_INFO;
        if (app->state == UI_STATE_LOADING || autosave_note_pending(app)) { /* beside what a resume says */
            autosave_note(app, lvl, "%s", ev->message);
        } else if (ev->kv != ENGINE_KV_USED) {
            say_after(app, lvl, ev->message);
        } else {
            ui_message(app, lvl, "%s", ev->message);
        }
        break;
    }
    }
    if (announced &&
        (ev->kv == ENGINE_KV_SAVED || ev->kv == ENGINE_KV_SAVE_FAILED || ev->kv == ENGINE_KV_SAVE_SKIPPED))
        app->kv_announce--;
}
