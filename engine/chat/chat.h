/* Chat templates: the model's own Jinja2 template (tokenizer.chat_template)
 * rendered by a Jinja2-subset interpreter (engine/jinja*.c), and built-in
 * formats for models without one. */
#ifndef TOKSCOPE_CHAT_H
#define TOKSCOPE_CHAT_H

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

typedef struct chat_message {
    const char *role; /* "system", "user", "assistant" */
    const char *content;
    size_t content_len; /* content's bytes: a reply is bytes (a model's byte tokens give NULs), so
                           every path that builds a prompt reads this many; 0: strlen(content) */
} chat_message;

/* The bytes of m's content (content_len, or strlen for 0). */
static inline size_t chat_content_len(const chat_message *m)
{
    return m->content_len ? m->content_len : m->content ? strlen(m->content) : 0;
}

/* A content with NULs through cJSON, which holds C strings: its bytes
 * escaped (NUL as 0xFF '0', 0xFF as 0xFF 0xFF: neither is UTF-8, so a
 * template never meets them) in a string item flagged CHAT_CJSON_BYTES,
 * which the Jinja interpreter reads back as the bytes. */
#define CHAT_CJSON_BYTES (1 << 13) /* extra bit in cJSON.type, beside JINJA_CJSON_FLOAT */
char *chat_bytes_escape(const char *s, size_t n); /* malloc'd, NUL-terminated */
/* Unescapes s in place; returns its length (NULs included). */
size_t chat_bytes_unescape(char *s);
/* JSON text to parse with cJSON: every "\u0000" escape as 0xFF '0' and
 * every 0xFF byte doubled (an escaped backslash stays as it is), so that
 * its strings, unescaped, give their bytes and lengths (malloc'd). */
char *chat_bytes_json_in(const char *json, size_t len, size_t *out_len);
/* JSON text cJSON printed from escaped strings, back: 0xFF '0' as
 * "\u0000", 0xFF 0xFF as the byte (takes json, returns the result). */
char *chat_bytes_json_out(char *json);

/* Pseudo messages: what a conversation carries besides role/content travels
 * as messages of these roles (so that every path that copies messages, the
 * engine's queue included, keeps it). chat_render and chat_render_jinja take
 * them out: a CHAT_ROLE_VARS message's content is a JSON object of template
 * variables (enable_thinking, reasoning_effort; the last one wins); a
 * CHAT_ROLE_REASONING message's content is the reasoning of the assistant
 * message right after it, which templates get as both "reasoning_content"
 * (Qwen3.x, Gemma 4) and "thinking" (gpt-oss). The built-in formats ignore
 * both. */
#define CHAT_ROLE_VARS "tokscope.vars"
#define CHAT_ROLE_REASONING "tokscope.reasoning"

typedef struct chat_render_params {
    const char *bos_token;   /* "" when NULL */
    const char *eos_token;
    bool add_generation_prompt;
    const char *date;        /* "YYYY-MM-DD" for strftime_now; NULL = today */
} chat_render_params;

/* Renders a Jinja2 template. Returns a malloc'd string, or NULL with a message
 * in err (a template's raise_exception message is copied as it is; other
 * errors name the line:column in the template).
 * Semantics are transformers' apply_chat_template: variables messages,
 * bos_token, eos_token, add_generation_prompt, tools=None, documents=None;
 * trim_blocks + lstrip_blocks, break/continue, strftime_now, raise_exception,
 * tojson = json.dumps(ensure_ascii=False). A message with content == NULL has
 * no "content" key. Renders are bounded (16 MiB output, 128 MiB memory, 5M
 * steps, macro depth 100): a hostile template gets an error, not a hang.
 * The built-ins add no BOS (like llama.cpp's; the tokenizer adds it). */
char *chat_render_jinja(const char *tmpl, const chat_message *msgs, size_t n, const chat_render_params *p,
                        char *err, size_t errlen);

/* Built-in formats: chatml llama2 llama3 zephyr mistral phi3 gemma vicuna plain
 * (output of llama.cpp's llm_chat_apply_template for the style; "mistral" is
 * llama.cpp's mistral-v3, "llama2" its plain llama2 without <<SYS>>; "plain"
 * is every content followed by a newline). chat_builtin_known() also accepts
 * llama.cpp's variant names, which chat_detect_builtin() can return. */
extern const char *const chat_builtin_names[];
char *chat_render_builtin(const char *name, const chat_message *msgs, size_t n, const chat_render_params *p,
                          char *err, size_t errlen);
char *chat_render_builtin_n(const char *name, const chat_message *msgs, size_t n, const chat_render_params *p,
                            size_t *out_len, char *err, size_t errlen);
/* Best built-in for a template text (by its markers), "chatml" as last resort. */
const char *chat_detect_builtin(const char *tmpl);

/* What the app uses: the template text when given (falls back to the detected
 * built-in with a warning in `warn` if rendering fails for a reason other than
 * raise_exception), else the built-in `builtin` (NULL -> detected/"chatml"). */
char *chat_render(const char *tmpl, const char *builtin, const chat_message *msgs, size_t n,
                  const chat_render_params *p, char *warn, size_t warnlen, char *err, size_t errlen);
/* The same, the rendered length in *out_len (the text may hold NULs, from
 * the messages' contents). */
char *chat_render_n(const char *tmpl, const char *builtin, const chat_message *msgs, size_t n,
                    const chat_render_params *p, char *warn, size_t warnlen, size_t *out_len, char *err,
                    size_t errlen);

/* ---- additions ---- */
struct cJSON;

/* Like chat_render_jinja, with the messages as a JSON array (any fields:
 * content lists, tool_calls, absent content). *raised (when non-NULL) tells
 * whether the error came from the template's raise_exception. */
char *chat_render_jinja_json(const char *tmpl, const struct cJSON *messages, const chat_render_params *p,
                             bool *raised, char *err, size_t errlen);

/* Same, with extra template variables (a JSON object, may be NULL) added
 * after the standard ones, like transformers' apply_chat_template(**kwargs):
 * e.g. {"tools": [...], "enable_thinking": false}. */
char *chat_render_jinja_vars(const char *tmpl, const struct cJSON *messages, const struct cJSON *extra,
                             const chat_render_params *p, bool *raised, char *err, size_t errlen);
/* Flags every string under root that holds 0xFF (parsed from
 * chat_bytes_json_in's text) CHAT_CJSON_BYTES, for a template to read. */
void chat_bytes_mark(struct cJSON *root);
/* chat_render_jinja_vars with the rendered length in *out_len. */
char *chat_render_jinja_vars_n(const char *tmpl, const struct cJSON *messages, const struct cJSON *extra,
                               const chat_render_params *p, bool *raised, size_t *out_len, char *err, size_t errlen);

/* True when `name` is a known built-in (including llama.cpp's variant names
 * llama2-sys, llama2-sys-bos, llama2-sys-strip, mistral-v1, mistral-v3,
 * mistral-v3-tekken, mistral-v7, deepseek, deepseek3, command-r, openchat). */
bool chat_builtin_known(const char *name);

#endif
