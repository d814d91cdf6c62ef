/* Autosave and resume. Every conversation of a session is saved, in the
 * /save format, to STATE/sessions/YYYYmmdd-HHMMSS-PID.json (STATE:
 * $XDG_STATE_HOME/tokscope, else ~/.local/state/tokscope) after every
 * completed turn and when tokscope exits (quit, SIGTERM, SIGHUP, the
 * terminal closing). The file is written atomically: a kill -9 at any
 * moment leaves the previous version whole. Saving after a turn is done by
 * a writer thread, so a large conversation never stalls the screen; the
 * save at exit waits for it. A session with no message writes nothing; the
 * newest AUTOSAVE_KEEP sessions are kept.
 *
 * On start the newest session is offered for resuming: an entry in the
 * model picker, a line in the empty conversation, /resume, --resume. A
 * resumed session goes on saving into its own file.
 *
 * A directory that cannot be written (read-only, full) is reported in the
 * status line when tokscope starts and whenever a save fails; at exit the
 * conversations then go to a rescue file in $TMPDIR, named on stderr. */
#ifndef TOKSCOPE_UI_AUTOSAVE_H
#define TOKSCOPE_UI_AUTOSAVE_H

#include <stdbool.h>
#include <stddef.h>

#include "layout.h"
#include "store.h"
#include "ui.h"

#define AUTOSAVE_KEEP 50
#define AUTOSAVE_KV_KEEP 5 /* of those, the newest keep their KV snapshot (NAME.kv beside NAME.json) */

struct ui_app;

/* $XDG_STATE_HOME/tokscope (or ~/.local/state/tokscope) into buf; "" when
 * neither variable is set. */
const char *autosave_state_dir(char *buf, size_t cap);
/* The newest session file in sessions_dir other than exclude (may be NULL),
 * into path; false when there is none. */
bool autosave_find_last(const char *sessions_dir, const char *exclude, char *path, size_t cap);
/* Removes all but the newest `keep` session files of sessions_dir (and the
 * temporary files of killed saves). */
void autosave_prune(const char *sessions_dir, size_t keep);

/* Sets up app->autosave (writing disabled when !enabled: --no-autosave):
 * creates the sessions directory, prunes it and finds the last session.
 * Problems with the directory are reported in the status line. */
void autosave_init(struct ui_app *app, bool enabled);
/* A status line message for when the model has loaded (its own message
 * would hide one given before): directory problems, what --resume did.
 * Several are joined. */
void autosave_note(struct ui_app *app, enum ui_msg_level lvl, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Whether a note waits to be shown (autosave_note; the next autosave_poll shows it). */
bool autosave_note_pending(const struct ui_app *app);
/* The last session from before this one, NULL when none (or no autosave). */
const char *autosave_last_path(const struct ui_app *app);
const store_summary *autosave_last_summary(const struct ui_app *app);
/* One line describing the last session: "“title” · 4 messages · model.gguf · 5 min ago". */
void autosave_offer_text(const struct ui_app *app, char *buf, size_t cap);
/* Replaces the conversations with those of path (NULL: the last session).
 * The current session is saved first, so nothing is lost. On success err
 * holds "" or the conversations left out (store_load). */
bool autosave_resume(struct ui_app *app, const char *path, char *err, size_t errlen);
/* After a completed turn: takes a snapshot now, writes it in the background. */
void autosave_request(struct ui_app *app);
/* Main loop: shows the writer's failures (and its recovery) in the status line. */
void autosave_poll(struct ui_app *app);
/* Draws the offer to resume into the empty conversation pane r, when there
 * is one to make. */
void autosave_draw_offer(struct ui_app *app, ui_rect r);
/* At exit: ends a reply still streaming as interrupted
 * (CONV_DONE_INTERRUPTED), waits for the writer, saves the final state; when that fails,
 * writes a rescue file in $TMPDIR. msg gets a line for stderr ("" when all
 * went well). False when the conversations could not be saved anywhere.
 * Frees app->autosave. */
bool autosave_finish(struct ui_app *app, char *msg, size_t cap);

#endif
