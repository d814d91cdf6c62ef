/* Chat rendering entry points (stub; real code follows). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chat.h"

const char *const chat_builtin_names[] = {"chatml", "llama2", "llama3", "zephyr", "mistral",
                                          "phi3",   "gemma",  "vicuna", "plain",  NULL};

char *chat_render_jinja(const char *tmpl, const chat_message *msgs, size_t n, const chat_render_params *p,
                        char *err, size_t errlen)
{
    (void)tmpl; (void)msgs; (void)n; (void)p;
    snprintf(err, errlen, "jinja: not implemented yet");
    return NULL;
}

char *chat_render_builtin(const char *name, const chat_message *msgs, size_t n, const chat_render_params *p,
                          char *err, size_t errlen)
{
    (void)name; (void)msgs; (void)n; (void)p;
    snprintf(err, errlen, "chat: built-in formats not implemented yet");
    return NULL;
}

const char *chat_detect_builtin(const char *tmpl)
{
    (void)tmpl;
    return "chatml";
}

char *chat_render(const char *tmpl, const char *builtin, const chat_message *msgs, size_t n,
                  const chat_render_params *p, char *warn, size_t warnlen, char *err, size_t errlen)
{
    if (warn && warnlen) warn[0] = 0;
    if (tmpl) return chat_render_jinja(tmpl, msgs, n, p, err, errlen);
    return chat_render_builtin(builtin ? builtin : "chatml", msgs, n, p, err, errlen);
}
