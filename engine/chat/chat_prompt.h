/* The chat prompt: the one function every path builds its prompt with (the
 * TUI's SUBMIT and lens, `generate --chat`, `logits --chat`, serve), so the
 * same messages give the same token ids everywhere. It sits above chat.h
 * (rendering) and the tokenizer; the engine and the commands call it, it
 * calls neither. */
#ifndef TOKSCOPE_CHAT_PROMPT_H
#define TOKSCOPE_CHAT_PROMPT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "chat/chat.h"
#include "tokenizer/tokenizer.h"

/* Where the prompt's format comes from. */
typedef struct chat_prompt_src {
    const tokenizer *tok;
    const char *model_template; /* the model's tokenizer.chat_template; NULL when it has none */
    const char *forced;         /* a built-in name or "raw"; NULL, "" or "model": the model's own
                                   template, "raw" for a model without one */
    bool no_bos;                /* never add BOS (generate/logits --no-bos) */
} chat_prompt_src;

/* A forced format that is no template: the one plain message's content is
 * the prompt's token ids as decimal text ("12 34 56"), taken as they are (no
 * BOS added, nothing rendered). serve's token-id prompts (llama-server's
 * `"prompt": [12, 34, 56]`) reach the engine this way, through the same
 * prompt function as every other prompt. */
#define CHAT_PROMPT_IDS "tokscope.ids"

/* The format a prompt gets: the forced name, "model" (the model's own
 * template) or "raw" (contents back to back: a model without a template
 * simply continues the text, like llama.cpp's completion). */
const char *chat_prompt_format(const chat_prompt_src *s);

/* The rendered conversation (malloc'd), exactly as the template writes it:
 * nothing stripped. Raw: the plain messages' contents back to back (the
 * pseudo messages of chat.h left out). warn (may be NULL) gets a template
 * fallback notice; NULL with err set on failure. */
char *chat_prompt_render(const chat_prompt_src *s, const chat_message *msgs, size_t n, bool add_gen, char *warn,
                         size_t warnlen, char *err, size_t errlen);
/* The same with the text's length in *out_len: the contents' bytes are
 * carried whole (chat_message.content_len), NULs included. */
char *chat_prompt_render_n(const chat_prompt_src *s, const chat_message *msgs, size_t n, bool add_gen, char *warn,
                           size_t warnlen, size_t *out_len, char *err, size_t errlen);

/* Whether msgs end with an assistant message that the prompt continues
 * (llama-server's assistant prefill; the raw format continues any text). */
bool chat_prompt_continues(const chat_prompt_src *s, const chat_message *msgs, size_t n);
/* The prompt that continues msgs' last message, the assistant's, as
 * llama-server 34af94cd writes it (common_chat_templates_apply_jinja with
 * continue_final_message "auto", the prefill of a trailing assistant
 * message): the conversation before it without the generation prompt, then
 * the generation prompt (what add_generation_prompt adds to it), then, for a
 * template that writes reasoning between markers (found as llama.cpp's
 * template analysis finds them: Qwen3's "<think>\n" and "\n</think>\n\n"),
 * the generation prompt cut before its own start marker, the start marker,
 * the message's reasoning and the end marker (left out when the message
 * holds reasoning alone: the reply continues the reasoning), then the
 * message's content; no end-of-turn. malloc'd, NULL with err set.
 * *cont_at (may be NULL): where the message's own part starts (its
 * "<think>", else its content): the text a reply's parse starts from. */
char *chat_prompt_render_prefill(const chat_prompt_src *s, const chat_message *msgs, size_t n, char *warn,
                                 size_t warnlen, size_t *out_len, size_t *cont_at, char *err, size_t errlen);

/* Renders and tokenizes msgs: the generation prompt is added, or, when the
 * last message is the assistant's, that message is continued
 * (chat_prompt_render_prefill; raw: the texts back to back); special tokens parsed;
 * BOS added when the vocabulary wants it, unless the template wrote it
 * itself (or no_bos). Returns malloc'd ids and their count in *np; NULL with
 * err set on failure. */
int32_t *chat_prompt_tokenize(const chat_prompt_src *s, const chat_message *msgs, size_t n, int32_t *np, char *warn,
                              size_t warnlen, char *err, size_t errlen);

/* The count chat_prompt_tokenize would give (*np), from the same text and
 * BOS rule, without keeping ids: exact up to limit, some count > limit once
 * it passes (tokenizing stops early: tokenizer_count). limit <= 0: exact.
 * -1 with err set on failure. Safe from any thread: the tokenizer and the
 * template are read-only once built (serve counts on connection threads). */
int32_t chat_prompt_count(const chat_prompt_src *s, const chat_message *msgs, size_t n, int32_t limit, char *err,
                          size_t errlen);

/* Testing aid: when TOKSCOPE_PROMPT_LOG names a file, appends "WHO id,id,...\n"
 * to it, the prompt a path is about to evaluate (the engine's SUBMIT, which
 * the TUI and serve send; generate; logits), so a test can hold every path
 * to the same ids. Does nothing when the variable is unset. */
void chat_prompt_log(const char *who, const int32_t *ids, int32_t n);

#endif
