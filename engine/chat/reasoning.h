/* Reasoning splitter: tells, as a reply streams, which of its bytes are the
 * model's reasoning and which its answer, for the three ways 2026 templates
 * mark reasoning:
 *   THINK    Qwen3.x: <think> reasoning </think> answer (the Qwen3.5 template
 *            opens <think>\n in the generation prompt: the reply starts inside)
 *   GEMMA4   Gemma 4: <|channel>thought\n reasoning <channel|> answer
 *   HARMONY  gpt-oss: <|channel|>analysis<|message|> reasoning <|end|>
 *            <|start|>assistant<|channel|>final<|message|> answer; <|return|>
 *            and <|call|> end a turn
 * Bytes are fed as they come (token pieces); a marker may be split across
 * pieces (with a vocab that has no special token for it, it is several
 * tokens): bytes that may still be the start of a marker stay pending until
 * the next piece (or chat_reasoning_finish) decides them. The text itself is
 * not kept: spans are byte ranges of the reply as fed. No terminal code. */
#ifndef TOKSCOPE_CHAT_REASONING_H
#define TOKSCOPE_CHAT_REASONING_H

#include <stdbool.h>
#include <stddef.h>

enum chat_reasoning_style {
    CHAT_REASONING_NONE, /* the template marks no reasoning: everything is answer */
    CHAT_REASONING_THINK,
    CHAT_REASONING_GEMMA4,
    CHAT_REASONING_HARMONY,
};

enum chat_span_kind {
    CHAT_SPAN_ANSWER,
    CHAT_SPAN_REASONING,
    CHAT_SPAN_MARKER, /* the format's own markers and headers (<think>, <|channel|>analysis<|message|>, ...) */
};

typedef struct chat_span {
    size_t start, end;
    enum chat_span_kind kind;
} chat_span;

typedef struct chat_reasoning {
    enum chat_reasoning_style style;
    int state;        /* internal: answer, reasoning, harmony header */
    size_t fed;       /* reply bytes fed so far (virtual ones not counted) */
    size_t pos;       /* reply bytes classified: [pos, fed) are pending */
    char pend[32];    /* the pending bytes (a possible marker's start) */
    bool pend_virtual[32]; /* ... each one fed by chat_reasoning_feed_virtual */
    size_t n_pend;
    char hdr[64];     /* harmony: the header being read (to find its channel) */
    size_t n_hdr;
    bool seen;        /* some reasoning or marker was seen (or the reply started inside reasoning) */
    size_t answer_at; /* first non-blank answer byte after reasoning; (size_t)-1 while none */
    chat_span *spans; /* merged, in order, covering [0, pos) */
    size_t n_spans, cap_spans;
} chat_reasoning;

/* The style a chat template uses, from its markers (NONE when it has none). */
enum chat_reasoning_style chat_reasoning_detect(const char *tmpl);
const char *chat_reasoning_style_name(enum chat_reasoning_style s);

/* Starts a reply. prompt: the rendered prompt the reply continues (NULL: a
 * plain start); a prompt that ends inside reasoning (Qwen3.5's "<think>\n")
 * makes the reply start there. */
void chat_reasoning_init(chat_reasoning *r, enum chat_reasoning_style style, const char *prompt);
/* The same with the start given: inside reasoning or not. */
void chat_reasoning_init_inside(chat_reasoning *r, enum chat_reasoning_style style, bool inside);
void chat_reasoning_free(chat_reasoning *r);
/* Feeds the next bytes of the reply; returns how many bytes became classified. */
size_t chat_reasoning_feed(chat_reasoning *r, const char *s, size_t n);
/* Feeds text that is not in the reply but tells its structure: a control
 * token's text that the detokenizer leaves out (gpt-oss's <|channel|>,
 * <|message|>, <|end|>, <|start|> are control tokens). It moves the state
 * like the same bytes would, and takes no room: offsets count reply bytes. */
void chat_reasoning_feed_virtual(chat_reasoning *r, const char *s, size_t n);
/* The reply ended: pending bytes are classified (as what they are, no marker). */
void chat_reasoning_finish(chat_reasoning *r);
/* Kind of reply byte off; pending bytes and bytes not fed yet count as the
 * current state's kind (what they most likely are). */
enum chat_span_kind chat_reasoning_kind_at(const chat_reasoning *r, size_t off);
/* Kind the current state gives new bytes. */
enum chat_span_kind chat_reasoning_current(const chat_reasoning *r);
/* True while the reply is inside reasoning (or a harmony header). */
bool chat_reasoning_inside(const chat_reasoning *r);
/* The bytes of text (the reply as fed, len bytes) of one kind, back to back,
 * blank lines and spaces at both ends trimmed; malloc'd. */
char *chat_reasoning_extract(const chat_reasoning *r, const char *text, size_t len, enum chat_span_kind kind);
/* The same with its length in *out_len (the bytes may hold NULs). */
char *chat_reasoning_extract_n(const chat_reasoning *r, const char *text, size_t len, enum chat_span_kind kind,
                               size_t *out_len);

/* One call over a whole reply: r is initialised, fed and finished. */
void chat_reasoning_split(chat_reasoning *r, enum chat_reasoning_style style, const char *prompt, const char *text,
                          size_t len);

#endif
