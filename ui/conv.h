/* Conversations: the messages the UI owns (and submits whole to the engine),
 * every generated token with its event data (position, chosen probability,
 * top-k, its logit lens once asked for), the versions of a message (branches:
 * an edited message, a reply branched from another candidate, a
 * regenerated reply; the old ones stay as siblings), and the conversation
 * pane that draws them with a token cursor, branch markers and the entropy
 * strip. */
#ifndef TOKSCOPE_UI_CONV_H
#define TOKSCOPE_UI_CONV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine.h"
#include "layout.h"
#include "sampler/sampler.h"

typedef struct ui_token {
    int32_t id, pos;
    uint32_t off, len; /* bytes of the message text this token added */
    float logit, p_raw, p_post, entropy_raw, entropy_post;
    int32_t n_top;
    engine_token_candidate *top; /* n_top entries, by raw logit */
    engine_lens *lens;           /* the step's logit lens, once it arrived */
    bool lens_wait;              /* asked for, not arrived */
    bool lens_failed;            /* the engine could not compute it: not asked again */
    int32_t spec_mark, spec_rejected; /* speculative decoding: engine_event's */
} ui_token;

struct ui_versions;

/* done_reason of a reply that tokscope's exit (Ctrl-Q, SIGTERM, SIGHUP)
 * cut while it streamed: saved so and shown so after loading. Not one of
 * the engine's reasons (engine.h), which never send it. */
#define CONV_DONE_INTERRUPTED 100

typedef struct ui_msg {
    char role[16]; /* "system", "user", "assistant" */
    char *text;    /* text[0..len): any bytes, NULs included; NUL-terminated after that */
    size_t len, cap;
    ui_token *toks;
    size_t n_toks, cap_toks;
    bool streaming;
    int done_reason; /* enum engine_done_reason, -1 while streaming / not generated */
    int32_t uid;     /* unique in the session: lens answers find the message by it */
    struct ui_versions *vers; /* the other versions at this place (NULL: none) */
    /* wrap cache: lines of text[0..wl_len) at width wl_width; a growing reply
     * re-wraps only from its last line */
    struct wrap_line *wl;
    size_t n_wl, cap_wl, wl_len;
    int wl_width;
    size_t wl_base;  /* the wrap cache covers text[wl_base..): the answer after a reasoning block */
    /* reasoning (ui/think.c): text[0..think_end) is the reply's reasoning
     * block, the format's markers included, drawn dimmed under a "thinking"
     * line and folded or not; 0: none. The text and the tokens stay as
     * generated, so token indices are those of the reply. */
    uint32_t think_end;
    /* the block's text drawn when unfolded: think_vis[2i]..think_vis[2i+1]
     * for i < n_think_vis, in order, the format's markers and headers left
     * out (gpt-oss's "analysis", "assistant", "final" header words, whose
     * control tokens have no text, included); 0 pairs: all of [0, think_end) */
    uint32_t *think_vis;
    uint32_t n_think_vis;
    bool think_open;          /* unfolded */
    bool think_set;           /* folded/unfolded by the user: no automatic fold */
    int8_t think_style;       /* enum chat_reasoning_style the reply was split with */
    bool think_inside;        /* the reply started inside reasoning (the prompt opened it) */
    char *reasoning, *answer; /* once the reply ended: what the next turn's template gets (NULL: no reasoning) */
    size_t reasoning_len, answer_len; /* their bytes (NULs included) */
    struct chat_reasoning *rs; /* the splitter while the reply streams */
    /* how the turn that made this reply was sent (think_record): the template ("" the model's),
     * the template variables as JSON ("" none) and the reasoning style. A branch from the reply
     * and its lens are sent the same way, so they continue the context shown; /template and
     * think apply from the next new turn. sent_set false: not known (a loaded session). */
    bool sent_set;
    int8_t sent_style;
    char sent_tmpl[64];
    char sent_vars[96];
} ui_msg;

/* A branch: the versions of one message, each with the conversation that
 * followed it (a tail). The active version is the conversation itself, so
 * tails[cur] is empty. */
typedef struct ui_tail {
    struct ui_msg *msgs;
    size_t n;
} ui_tail;

typedef struct ui_versions {
    ui_tail *tails;
    size_t n, cur;
} ui_versions;

/* entropy strip modes */
enum conv_strip { CONV_STRIP_OFF, CONV_STRIP_ENTROPY, CONV_STRIP_PROB };

/* CONV_VL_FOLD: the "thinking" line over a reasoning block [start, start + len) */
enum conv_vline_kind { CONV_VL_LABEL, CONV_VL_TEXT, CONV_VL_BLANK, CONV_VL_STRIP, CONV_VL_FOLD };

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
    int strip;             /* enum conv_strip: a strip line under every reply line */
    ui_rect view;          /* where the last draw put the text (for mouse clicks) */
    int view_top;          /* first visual line drawn */
    bool has_sp;           /* this conversation samples with sp (compare settings' side B) */
    sampler_params sp;
    struct ui_versions *pending_vers; /* conv_fork's, until the new version is added at pending_at */
    size_t pending_at, pending_old;
} ui_conv;

ui_conv *conv_create(int32_t id, const char *system);
void conv_free(ui_conv *c);
void conv_set_system(ui_conv *c, const char *system);
/* Appends a message; returns its index. */
size_t conv_add_msg(ui_conv *c, const char *role, const char *text);
/* The same for text[0..len), which may hold any byte (a model's byte tokens
 * give NULs and invalid UTF-8): a reply is bytes with a length, never a C string. */
size_t conv_add_msg_n(ui_conv *c, const char *role, const char *text, size_t len);
/* Removes the last message. */
void conv_pop(ui_conv *c);
void conv_clear(ui_conv *c);
void msg_append(ui_msg *m, const char *s, size_t n);
/* Records a TOKEN event: its text goes to the message, its data to toks. */
void msg_add_token(ui_msg *m, const engine_event *ev);

/* Message list for engine_submit: system prompt (when set) + messages,
 * skipping empty assistant placeholders; a reply with reasoning goes as a
 * CHAT_ROLE_REASONING message and its answer (chat.h). Pointers into c;
 * *out is malloc'd. */
size_t conv_chat_messages(const ui_conv *c, chat_message **out);
/* The same for the first n_msgs messages only. */
size_t conv_chat_messages_upto(const ui_conv *c, size_t n_msgs, chat_message **out);

/* ---- versions (ui/branch.c) ---- */
/* Message i and everything after it become a sibling version: the
 * conversation then ends before i, and the next message added at i is the
 * new version. Returns the old version's messages (valid until the
 * conversation changes again). */
ui_tail *conv_fork(ui_conv *c, size_t i);
/* Undoes a conv_fork whose new version was not added (the old one comes back). */
void conv_unfork(ui_conv *c);
/* Appends a copy of m's first k tokens and the text before token k as a
 * new streaming assistant message (a branch's start); returns its index. */
size_t conv_add_prefix(ui_conv *c, const ui_msg *m, size_t k);
/* Shows another version of message i (delta steps, wrapping). */
bool conv_switch_version(ui_conv *c, size_t i, int delta);
/* Versions at message m: returns how many (1: no branch), *cur the active one (1-based). */
size_t conv_versions(const ui_msg *m, size_t *cur);
/* Message of the visible path with this uid, NULL when none; *index its place. */
ui_msg *conv_msg_by_uid(ui_conv *c, int32_t uid, size_t *index);
/* Frees a message's versions (recursively). */
void msg_versions_free(ui_msg *m);
void msg_clear(ui_msg *m);

/* Token cursor. */
ui_token *conv_selected(ui_conv *c);
ui_token *conv_latest(ui_conv *c);
/* Index of tok within all generated tokens of c (1-based), total in *n. */
int conv_token_ordinal(const ui_conv *c, const ui_token *tok, int *n);
void conv_sel_clear(ui_conv *c);
/* The message's reasoning block: folded or unfolded (by the user from now on). */
void msg_think_toggle(ui_msg *m);
/* Moves the cursor by delta tokens (starting from the latest when none). */
bool conv_sel_step(ui_conv *c, int delta);
/* Moves the cursor to the token on the visual line above (-1) or below (+1). */
bool conv_sel_line(ui_conv *c, int dir);
bool conv_sel_first(ui_conv *c);
bool conv_sel_last(ui_conv *c);
/* Moves the cursor to the next (dir 1) or previous (-1) uncertain token of
 * the strip's measure (level >= CONV_STRIP_UNCERTAIN). */
bool conv_sel_uncertain(ui_conv *c, int dir, int mode);
/* Selects the token drawn at screen cell (y, x) by the last draw (text or
 * strip line). */
bool conv_hit(ui_conv *c, int y, int x);
/* Strip level 1..8 of a token: its raw entropy (0..4 nats over the levels)
 * or its improbability (1 - the chosen token's raw probability). Uncertain
 * (level >= 5): entropy 2 nats or more, or a chosen probability of 50% or
 * less. */
int conv_strip_level(const ui_token *t, int mode);
/* A token's probability, raw or post, or the other kind where only that one
 * came (--remote: the server sends one kind, the other is negative, "not
 * given"); its entropy likewise, raw first. */
float conv_token_prob(const ui_token *t, bool post);
float conv_token_entropy(const ui_token *t);
#define CONV_STRIP_UNCERTAIN 5

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
