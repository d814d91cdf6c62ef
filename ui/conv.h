/* Conversations: the messages the UI owns (and submits whole to the engine),
 * every generated token with its event data (position, chosen probability,
 * top-k), and the conversation pane that draws them with a token cursor. */
#ifndef TOKSCOPE_UI_CONV_H
#define TOKSCOPE_UI_CONV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine.h"
#include "layout.h"

typedef struct ui_token {
    int32_t id, pos;
    uint32_t off, len; /* bytes of the message text this token added */
    float logit, p_raw, p_post, entropy_raw, entropy_post;
    int32_t n_top;
    engine_token_candidate *top; /* n_top entries, by raw logit */
} ui_token;

typedef struct ui_msg {
    char role[16]; /* "system", "user", "assistant" */
    char *text;    /* NUL-terminated */
    size_t len, cap;
    ui_token *toks;
    size_t n_toks, cap_toks;
    bool streaming;
    int done_reason; /* enum engine_done_reason, -1 while streaming / not generated */
    /* wrap cache: lines of text[0..wl_len) at width wl_width; a growing reply
     * re-wraps only from its last line */
    struct wrap_line *wl;
    size_t n_wl, cap_wl, wl_len;
    int wl_width;
} ui_msg;

enum conv_vline_kind { CONV_VL_LABEL, CONV_VL_TEXT, CONV_VL_BLANK };

typedef struct conv_vline {
    int32_t msg;
    int32_t kind;
    size_t start, len;
} conv_vline;

typedef struct ui_conv {
    int32_t id;
    char *system; /* "" = none */
    ui_msg *msgs;
    size_t n_msgs, cap_msgs;
    int scroll;            /* visual lines scrolled up from the bottom (0 = follow) */
    int last_total;
    int32_t sel_msg;       /* token cursor: message index, -1 = none */
    int32_t sel_tok;
    bool reveal;           /* scroll so the cursor is visible on the next draw */
    conv_vline *vl;        /* layout cache of the last draw */
    size_t n_vl, cap_vl;
    int vl_width;
} ui_conv;

ui_conv *conv_create(int32_t id, const char *system);
void conv_free(ui_conv *c);
void conv_set_system(ui_conv *c, const char *system);
/* Appends a message; returns its index. */
size_t conv_add_msg(ui_conv *c, const char *role, const char *text);
/* Removes the last message. */
void conv_pop(ui_conv *c);
void conv_clear(ui_conv *c);
void msg_append(ui_msg *m, const char *s, size_t n);
/* Records a TOKEN event: its text goes to the message, its data to toks. */
void msg_add_token(ui_msg *m, const engine_event *ev);

/* Message list for engine_submit: system prompt (when set) + messages,
 * skipping empty assistant placeholders. Pointers into c; *out is malloc'd. */
size_t conv_chat_messages(const ui_conv *c, chat_message **out);

/* Token cursor. */
ui_token *conv_selected(ui_conv *c);
ui_token *conv_latest(ui_conv *c);
/* Index of tok within all generated tokens of c (1-based), total in *n. */
int conv_token_ordinal(const ui_conv *c, const ui_token *tok, int *n);
void conv_sel_clear(ui_conv *c);
/* Moves the cursor by delta tokens (starting from the latest when none). */
bool conv_sel_step(ui_conv *c, int delta);
/* Moves the cursor to the token on the visual line above (-1) or below (+1). */
bool conv_sel_line(ui_conv *c, int dir);
bool conv_sel_first(ui_conv *c);
bool conv_sel_last(ui_conv *c);

/* Builds the visual lines for a text width (used by draw and by cursor moves). */
void conv_build_lines(ui_conv *c, int width);

typedef struct conv_draw_opts {
    bool prob_colors;
    bool post; /* colour by post-chain probability (else raw) */
    bool focused;
    bool generating;
} conv_draw_opts;

void conv_draw(ui_conv *c, ui_rect r, const conv_draw_opts *o);
void conv_scroll(ui_conv *c, int lines);

#endif
