/* Built-in chat formats for models without a usable template. Output matches
 * llama.cpp's llm_chat_apply_template for the same style (no BOS: the
 * tokenizer adds it), and detection follows llm_chat_detect_template. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chat/chat.h"

const char *const chat_builtin_names[] = {"chatml", "llama2", "llama3", "zephyr", "mistral", "phi3",
                                          "gemma",  "vicuna", "plain",  NULL};

static const char *const extra_names[] = {"llama2-sys", "llama2-sys-bos", "llama2-sys-strip", "mistral-v1",
                                          "mistral-v3", "mistral-v3-tekken", "mistral-v7",    "deepseek",
                                          "deepseek3",  "command-r",  "openchat",          "vicuna-orca", NULL};

bool chat_builtin_known(const char *name)
{
    if (!name)
        return false;
    for (int i = 0; chat_builtin_names[i]; i++)
        if (!strcmp(name, chat_builtin_names[i]))
            return true;
    for (int i = 0; extra_names[i]; i++)
        if (!strcmp(name, extra_names[i]))
            return true;
    return false;
}

typedef struct sbuf {
    char *p;
    size_t len, cap;
    bool oom;
} sbuf;

static void put(sbuf *b, const char *s, size_t n)
{
    if (b->oom)
        return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n + 1)
            cap *= 2;
        char *np = realloc(b->p, cap);
        if (!np) {
            b->oom = true;
            return;
        }
        b->p = np;
        b->cap = cap;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = 0;
}
static void puts_(sbuf *b, const char *s) { put(b, s, strlen(s)); }

/* a message's content: its bytes, NULs included */
static void put_msg(sbuf *b, const chat_message *m) { put(b, m->content, chat_content_len(m)); }

/* llama.cpp's trim(): isspace on bytes at both ends */
static void put_trim(sbuf *b, const chat_message *m)
{
    const char *s = m->content;
    size_t a = 0, e = chat_content_len(m);
    while (a < e && isspace((unsigned char)s[a]))
        a++;
    while (e > a && isspace((unsigned char)s[e - 1]))
        e--;
    put(b, s + a, e - a);
}

static bool is(const char *a, const char *b) { return !strcmp(a, b); }

char *chat_render_builtin(const char *name, const chat_message *msgs, size_t n, const chat_render_params *p,
                          char *err, size_t errlen)
{
    return chat_render_builtin_n(name, msgs, n, p, NULL, err, errlen);
}

char *chat_render_builtin_n(const char *name, const chat_message *msgs, size_t n, const chat_render_params *p,
                            size_t *out_len, char *err, size_t errlen)
{
    bool add_ass = p ? p->add_generation_prompt : true;
    if (!name)
        name = "chatml";
    if (!chat_builtin_known(name)) {
        snprintf(err, errlen, "unknown built-in chat format '%s' (known: chatml llama2 llama3 zephyr mistral phi3 gemma vicuna plain)", name);
        return NULL;
    }
    for (size_t i = 0; i < n; i++)
        if (!msgs[i].role || !msgs[i].content) {
            snprintf(err, errlen, "message %zu has no role or content", i);
            return NULL;
        }
    sbuf b = {0};
    puts_(&b, "");
    if (is(name, "chatml")) {
        for (size_t i = 0; i < n; i++) {
            puts_(&b, "<|im_start|>");
            puts_(&b, msgs[i].role);
            puts_(&b, "\n");
            put_msg(&b, &msgs[i]);
            puts_(&b, "<|im_end|>\n");
        }
        if (add_ass)
            puts_(&b, "<|im_start|>assistant\n");
    } else if (is(name, "mistral-v7")) {
        for (size_t i = 0; i < n; i++) {
            if (is(msgs[i].role, "system")) {
                puts_(&b, "[SYSTEM_PROMPT] ");
                put_msg(&b, &msgs[i]);
                puts_(&b, "[/SYSTEM_PROMPT]");
            } else if (is(msgs[i].role, "user")) {
                puts_(&b, "[INST] ");
                put_msg(&b, &msgs[i]);
                puts_(&b, "[/INST]");
            } else {
                puts_(&b, " ");
                put_msg(&b, &msgs[i]);
                puts_(&b, "</s>");
            }
        }
    } else if (is(name, "mistral") || is(name, "mistral-v1") || is(name, "mistral-v3") || is(name, "mistral-v3-tekken")) {
        bool v1 = is(name, "mistral-v1"), tekken = is(name, "mistral-v3-tekken");
        const char *lead = v1 ? " " : "", *trail = tekken ? "" : " ";
        bool trim_ass = is(name, "mistral-v3") || is(name, "mistral");
        bool inside = false;
        for (size_t i = 0; i < n; i++) {
            if (!inside) {
                puts_(&b, lead);
                puts_(&b, "[INST]");
                puts_(&b, trail);
                inside = true;
            }
            if (is(msgs[i].role, "system")) {
                put_msg(&b, &msgs[i]);
                puts_(&b, "\n\n");
            } else if (is(msgs[i].role, "user")) {
                put_msg(&b, &msgs[i]);
                puts_(&b, lead);
                puts_(&b, "[/INST]");
            } else {
                puts_(&b, trail);
                if (trim_ass)
                    put_trim(&b, &msgs[i]);
                else
                    put_msg(&b, &msgs[i]);
                puts_(&b, "</s>");
                inside = false;
            }
        }
    } else if (is(name, "llama2") || is(name, "llama2-sys") || is(name, "llama2-sys-bos") || is(name, "llama2-sys-strip")) {
        bool sys = !is(name, "llama2"), bos_inside = is(name, "llama2-sys-bos"), strip = is(name, "llama2-sys-strip");
        bool inside = true;
        puts_(&b, "[INST] ");
        for (size_t i = 0; i < n; i++) {
            if (!inside) {
                inside = true;
                puts_(&b, bos_inside ? "<s>[INST] " : "[INST] ");
            }
            if (is(msgs[i].role, "system")) {
                if (sys) {
                    puts_(&b, "<<SYS>>\n");
                    strip ? put_trim(&b, &msgs[i]) : put_msg(&b, &msgs[i]);
                    puts_(&b, "\n<</SYS>>\n\n");
                } else {
                    strip ? put_trim(&b, &msgs[i]) : put_msg(&b, &msgs[i]);
                    puts_(&b, "\n");
                }
            } else if (is(msgs[i].role, "user")) {
                strip ? put_trim(&b, &msgs[i]) : put_msg(&b, &msgs[i]);
                puts_(&b, " [/INST]");
            } else {
                strip ? put_trim(&b, &msgs[i]) : put_msg(&b, &msgs[i]);
                puts_(&b, "</s>");
                inside = false;
            }
        }
    } else if (is(name, "phi3")) {
        for (size_t i = 0; i < n; i++) {
            puts_(&b, "<|");
            puts_(&b, msgs[i].role);
            puts_(&b, "|>\n");
            put_msg(&b, &msgs[i]);
            puts_(&b, "<|end|>\n");
        }
        if (add_ass)
            puts_(&b, "<|assistant|>\n");
    } else if (is(name, "zephyr")) {
        for (size_t i = 0; i < n; i++) {
            puts_(&b, "<|");
            puts_(&b, msgs[i].role);
            puts_(&b, "|>\n");
            put_msg(&b, &msgs[i]);
            puts_(&b, "<|endoftext|>\n");
        }
        if (add_ass)
            puts_(&b, "<|assistant|>\n");
    } else if (is(name, "gemma")) {
        sbuf sys = {0};
        puts_(&sys, "");
        for (size_t i = 0; i < n; i++) {
            if (is(msgs[i].role, "system")) {
                put_trim(&sys, &msgs[i]);
                continue;
            }
            const char *role = is(msgs[i].role, "assistant") ? "model" : msgs[i].role;
            puts_(&b, "<start_of_turn>");
            puts_(&b, role);
            puts_(&b, "\n");
            if (sys.len && !is(role, "model")) {
                put(&b, sys.p, sys.len);
                puts_(&b, "\n\n");
                sys.len = 0;
            }
            put_trim(&b, &msgs[i]);
            puts_(&b, "<end_of_turn>\n");
        }
        free(sys.p);
        if (add_ass)
            puts_(&b, "<start_of_turn>model\n");
    } else if (is(name, "vicuna") || is(name, "vicuna-orca")) {
        bool orca = is(name, "vicuna-orca");
        for (size_t i = 0; i < n; i++) {
            if (is(msgs[i].role, "system")) {
                if (orca) {
                    puts_(&b, "SYSTEM: ");
                    put_msg(&b, &msgs[i]);
                    puts_(&b, "\n");
                } else {
                    put_msg(&b, &msgs[i]);
                    puts_(&b, "\n\n");
                }
            } else if (is(msgs[i].role, "user")) {
                puts_(&b, "USER: ");
                put_msg(&b, &msgs[i]);
                puts_(&b, "\n");
            } else if (is(msgs[i].role, "assistant")) {
                puts_(&b, "ASSISTANT: ");
                put_msg(&b, &msgs[i]);
                puts_(&b, "</s>\n");
            }
        }
        if (add_ass)
            puts_(&b, "ASSISTANT:");
    } else if (is(name, "llama3")) {
        for (size_t i = 0; i < n; i++) {
            puts_(&b, "<|start_header_id|>");
            puts_(&b, msgs[i].role);
            puts_(&b, "<|end_header_id|>\n\n");
            put_trim(&b, &msgs[i]);
            puts_(&b, "<|eot_id|>");
        }
        if (add_ass)
            puts_(&b, "<|start_header_id|>assistant<|end_header_id|>\n\n");
    } else if (is(name, "deepseek")) {
        for (size_t i = 0; i < n; i++) {
            if (is(msgs[i].role, "system"))
                put_msg(&b, &msgs[i]);
            else if (is(msgs[i].role, "user")) {
                puts_(&b, "### Instruction:\n");
                put_msg(&b, &msgs[i]);
                puts_(&b, "\n");
            } else if (is(msgs[i].role, "assistant")) {
                puts_(&b, "### Response:\n");
                put_msg(&b, &msgs[i]);
                puts_(&b, "\n<|EOT|>\n");
            }
        }
        if (add_ass)
            puts_(&b, "### Response:\n");
    } else if (is(name, "deepseek3")) {
        for (size_t i = 0; i < n; i++) {
            if (is(msgs[i].role, "system")) {
                put_msg(&b, &msgs[i]);
                puts_(&b, "\n\n");
            } else if (is(msgs[i].role, "user")) {
                puts_(&b, "<\xef\xbd\x9cUser\xef\xbd\x9c>");
                put_msg(&b, &msgs[i]);
            } else if (is(msgs[i].role, "assistant")) {
                puts_(&b, "<\xef\xbd\x9c" "Assistant\xef\xbd\x9c>");
                put_msg(&b, &msgs[i]);
                puts_(&b, "<\xef\xbd\x9c" "end\xe2\x96\x81of\xe2\x96\x81sentence\xef\xbd\x9c>");
            }
        }
        if (add_ass)
            puts_(&b, "<\xef\xbd\x9c" "Assistant\xef\xbd\x9c>");
    } else if (is(name, "command-r")) {
        for (size_t i = 0; i < n; i++) {
            const char *tok = is(msgs[i].role, "system") ? "<|SYSTEM_TOKEN|>"
                              : is(msgs[i].role, "user") ? "<|USER_TOKEN|>"
                              : is(msgs[i].role, "assistant") ? "<|CHATBOT_TOKEN|>" : NULL;
            if (!tok)
                continue;
            puts_(&b, "<|START_OF_TURN_TOKEN|>");
            puts_(&b, tok);
            put_trim(&b, &msgs[i]);
            puts_(&b, "<|END_OF_TURN_TOKEN|>");
        }
        if (add_ass)
            puts_(&b, "<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>");
    } else if (is(name, "openchat")) {
        for (size_t i = 0; i < n; i++) {
            if (is(msgs[i].role, "system")) {
                put_msg(&b, &msgs[i]);
                puts_(&b, "<|end_of_turn|>");
            } else {
                char role[64];
                snprintf(role, sizeof role, "%s", msgs[i].role);
                role[0] = (char)toupper((unsigned char)role[0]);
                puts_(&b, "GPT4 Correct ");
                puts_(&b, role);
                puts_(&b, ": ");
                put_msg(&b, &msgs[i]);
                puts_(&b, "<|end_of_turn|>");
            }
        }
        if (add_ass)
            puts_(&b, "GPT4 Correct Assistant:");
    } else { /* plain: contents one after another, for models without any chat format */
        for (size_t i = 0; i < n; i++) {
            put_msg(&b, &msgs[i]);
            puts_(&b, "\n");
        }
    }
    if (b.oom) {
        free(b.p);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    if (out_len)
        *out_len = b.len;
    return b.p;
}

static bool has(const char *t, const char *s) { return strstr(t, s) != NULL; }

const char *chat_detect_builtin(const char *t)
{
    if (!t || !*t)
        return "chatml";
    if (chat_builtin_known(t))
        return t;
    if (has(t, "<|im_start|>"))
        return "chatml";
    if (!strncmp(t, "mistral", 7) || has(t, "[INST]")) {
        if (has(t, "[SYSTEM_PROMPT]"))
            return "mistral-v7";
        if (has(t, "' [INST] ' + system_message") || has(t, "[AVAILABLE_TOOLS]")) {
            if (has(t, " [INST]"))
                return "mistral-v1";
            if (has(t, "\"[INST]\""))
                return "mistral-v3-tekken";
            return "mistral-v3";
        }
        if (has(t, "content.strip()"))
            return "llama2-sys-strip";
        if (has(t, "bos_token + '[INST]"))
            return "llama2-sys-bos";
        if (has(t, "<<SYS>>"))
            return "llama2-sys";
        return "llama2";
    }
    if (has(t, "<|assistant|>") && has(t, "<|end|>"))
        return "phi3";
    if (has(t, "<|user|>") && has(t, "<|endoftext|>"))
        return "zephyr";
    if (has(t, "<|user|>"))
        return "zephyr";
    if (has(t, "<start_of_turn>"))
        return "gemma";
    if (has(t, "GPT4 Correct "))
        return "openchat";
    if (has(t, "USER: ") && has(t, "ASSISTANT: "))
        return has(t, "SYSTEM: ") ? "vicuna-orca" : "vicuna";
    if (has(t, "### Instruction:") && has(t, "<|EOT|>"))
        return "deepseek";
    if (has(t, "<|START_OF_TURN_TOKEN|>") && has(t, "<|USER_TOKEN|>"))
        return "command-r";
    if (has(t, "<|start_header_id|>") && has(t, "<|end_header_id|>"))
        return "llama3";
    if (has(t, "<\xef\xbd\x9c" "Assistant\xef\xbd\x9c>") && has(t, "<\xef\xbd\x9cUser\xef\xbd\x9c>"))
        return "deepseek3";
    return "chatml";
}
