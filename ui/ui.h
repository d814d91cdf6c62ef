/* The chat TUI: application state shared by the panes and the main loop.
 *
 * Structure (htop/ncdu style): every pane is a module with a draw function
 * over a rectangle of stdscr and, when it can take focus, a key function.
 * The main loop poll()s stdin, the engine's event fd and a SIGWINCH
 * self-pipe, drains engine events into the conversation model, and redraws
 * the whole screen at most ~30 times a second (ncurses sends only the diff).
 * The UI never computes model math and never waits for the engine. */
#ifndef TOKSCOPE_UI_UI_H
#define TOKSCOPE_UI_UI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "conv.h"
#include "engine.h"
#include "layout.h"

enum ui_focus { UI_FOCUS_INPUT, UI_FOCUS_CONV, UI_FOCUS_PARAMS, UI_FOCUS_INSPECTOR, UI_FOCUS_COUNT };

enum ui_state {
    UI_STATE_NO_MODEL,
    UI_STATE_LOADING,
    UI_STATE_IDLE,
    UI_STATE_PREFILL,
    UI_STATE_GENERATING,
    UI_STATE_STOPPING,
    UI_STATE_STEP, /* step mode: the engine waits for the next token's choice */
};

enum ui_msg_level { UI_MSG_INFO, UI_MSG_WARN, UI_MSG_ERROR };

/* What cmd_tui hands to ui_run (after config + command line). */
typedef struct ui_options {
    engine_params engine;   /* model_path may be NULL: the picker runs first */
    const char *system;     /* system prompt of the first conversation */
    bool colors;            /* false: monochrome (NO_COLOR also forces this) */
    bool prob_colors;       /* colour assistant tokens by probability at start */
    bool mouse;             /* mouse wheel scrolling */
    bool post_order;        /* inspector sorted by post-chain probability */
    const char *history_path; /* NULL: $XDG_STATE_HOME/tokscope/history */
    char **model_dirs;      /* extra picker directories */
    size_t n_model_dirs;
    bool resume;             /* --resume: continue the last autosaved conversation ... */
    const char *resume_path; /* ... or this file (--resume=FILE) */
    bool no_autosave;        /* --no-autosave */
    bool no_save_kv;         /* --no-save-kv ([session] save_kv = false): no KV snapshots written or
                                read beside session files (the cap: engine.kv_max_bytes) */
    const char *config_note; /* problems in the config files, shown once loaded (NULL: none) */
} ui_options;

void ui_default_options(ui_options *o);

#define UI_KV_MAX_MB 1024 /* [session] kv_max_mb: the default cap of one KV snapshot */

typedef struct ui_app {
    engine *eng;
    engine_params eparams;
    sampler_params sp;      /* what the panel shows and the engine uses */
    sampler_params sp_start; /* as started (defaults < config < command line): the panel marks changes */
    char model_path[4096];

    ui_conv **convs;
    size_t n_convs;
    size_t cur;             /* index of the visible conversation */
    int32_t next_conv_id;
    int32_t gen_conv_id;    /* conversation being generated for, -1 when none */
    size_t gen_msg;         /* its assistant message index */
    int32_t gen_req;        /* the running submit's req_id: events of older ones are stale */
    int32_t next_req;

    enum ui_focus focus;
    enum ui_state state;
    float progress;         /* loading / prefill fraction */
    int32_t prefill_done, prefill_total;
    int32_t n_past, n_ctx;
    int32_t n_ckpt;         /* recurrent models: state checkpoints the engine keeps, and their bytes */
    uint64_t ckpt_bytes;
    double prompt_tps, gen_tps;
    int32_t spec_drafted, spec_accepted; /* the last reply's speculative drafts and accepted ones */
    double gen_t0;          /* first token time of the running turn */
    int32_t gen_count;
    bool loaded;
    engine_model_info info;
    char template_name[64]; /* forced template ("" = model's own) */
    /* reasoning (ui/think.c) */
    char *tmpl_text;        /* the model's chat template (NULL: none) */
    int think_style;        /* enum chat_reasoning_style of the template in use */
    int think;              /* enum think_mode: template variable enable_thinking (auto: not passed) */
    int effort;             /* enum effort_mode: reasoning_effort (auto: not passed) */
    char think_vars[96];    /* the variables as JSON, for the turn being sent */
    struct think_ctl *think_ctl; /* the vocabulary's control tokens (id, text), ids ascending */
    size_t n_think_ctl;

    char config_note[512];  /* config file problems, shown when the model has loaded */
    char msg[ENGINE_MSG_MAX + 64];
    enum ui_msg_level msg_level;
    double msg_until;       /* monotonic seconds; 0 = sticky until replaced */
    bool msg_hold;          /* an error: nothing replaces it before the next key */

    bool prob_colors;
    bool post_order;
    bool mouse;
    bool colors;

    /* parameter panel */
    int param_sel;
    bool param_editing;
    char param_edit[64];

    /* overlay (help, /show): lines of text, any key closes; a pick list
     * (ui_overlay_pick) marks lines [pick_first, pick_first + pick_n) as
     * choices: arrows move, Enter calls on_pick with the chosen one's index */
    char **overlay;
    size_t n_overlay;
    int overlay_scroll;
    char overlay_title[64];
    int overlay_pick_first, overlay_pick_n, overlay_sel;
    void (*overlay_on_pick)(struct ui_app *app, int idx);

    /* explore mode (ui/explore.c) */
    bool step_on;           /* step mode */
    ui_token pending;       /* STEP: the distribution the engine waits on (pending.top owned) */
    bool has_pending;
    int insp_row;           /* inspector focus: the candidate row under the cursor */
    int32_t edit_conv, edit_uid; /* Enter sends a new version of this user message (-1: none) */
    bool lens_on;           /* the inspector shows the logit lens */
    int lens_scroll;        /* first block row shown (-1: so that the last block shows) */
    int strip;              /* enum conv_strip */
    bool cmp_on;            /* compare settings: the conversation pane split in two */
    int32_t cmp_a, cmp_b;   /* the two sides' conversation ids */
    int cmp_side;           /* which side the cursor is on (0 A, 1 B) */
    bool cmp_queued;        /* B's turn starts when A's ends */

    bool quit;
    bool dirty;
    bool clear_screen;      /* Ctrl-L, resize */
    ui_layout lay;
    double last_draw;

    /* nothing lost: messages typed while a reply streams (ui/queued.c),
     * the autosave (ui/autosave.c; NULL when off, as in unit tests), and
     * the time of the last Ctrl-C (twice within a second quits) */
    struct ui_queued *queued;
    size_t n_queued;
    struct autosave *autosave;
    double last_ctrl_c;
    /* KV snapshots beside session files (ui/store.c store_kv_*): on unless
     * --no-save-kv or --remote; /save's snapshots are announced, the
     * autosave's only when they fail (the cap once) */
    bool save_kv;
    int kv_announce;
    bool kv_cap_said;
} ui_app;

/* Runs the TUI until the user quits. Returns the process exit status. */
int ui_run(const ui_options *o);

/* Applies one engine event to the UI state (exposed for tests). */
void ui_handle_event(ui_app *app, const engine_event *ev);

/* --- used by the panes and the slash commands --- */
double ui_now(void); /* monotonic seconds */
void ui_message(ui_app *app, enum ui_msg_level lvl, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
ui_conv *ui_current(ui_app *app);
ui_conv *ui_conv_by_id(ui_app *app, int32_t id);
ui_conv *ui_new_conv(ui_app *app, const char *system);
void ui_switch_conv(ui_app *app, int delta);
/* Sends text as a user message of the current conversation and starts generation. */
bool ui_send_user(ui_app *app, const char *text);
/* Re-submits the current conversation as it is (the last message must be a user one). */
bool ui_submit(ui_app *app);
void ui_stop(ui_app *app);
bool ui_busy(const ui_app *app);
/* Starts a turn of c whose reply is the (new, streaming) assistant message mi;
 * toks: the reply's first tokens to force (a branch), emitted: the bytes of
 * their text the message holds already. */
void ui_start_turn(ui_app *app, ui_conv *c, size_t mi, const int32_t *toks, int32_t n_toks, int32_t emitted);
/* The running turn ends here as stopped (before a branch or an edit replaces it). */
void ui_abandon_turn(ui_app *app);
/* Sends the current sampler parameters to the engine. */
void ui_params_changed(ui_app *app);
void ui_overlay_show(ui_app *app, const char *title, const char *text);
void ui_overlay_close(ui_app *app);
/* The overlay as a pick list: lines first .. first + n - 1 of text are the
 * choices, sel the one marked at first; Enter closes it and calls
 * on_pick(app, index), Esc closes it. */
void ui_overlay_pick(ui_app *app, const char *title, const char *text, int first, int n, int sel,
                     void (*on_pick)(ui_app *app, int idx));
void ui_show_help(ui_app *app);

#endif
