/* Fuzz target: the Jinja engine on a random template and random messages.
 * Input: TEMPLATE, then optionally "\0" MESSAGES-JSON, then "\0" EXTRA-JSON
 * (template variables, like enable_thinking). Messages that are not a JSON
 * array are replaced by a two-turn conversation. Rendered with tighter step
 * and memory limits than chat templates get (speed), once with and once
 * without the generation prompt; then the built-in formats and the fallback
 * chat_render would pick on the same messages. A render must end in text or an error
 * message, within the limits. */
#include <stdbool.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "chat/chat.h"
#include "chat/jinja.h"
#include "fuzz.h"

static const char default_messages[] = "[{\"role\":\"system\",\"content\":\"Be brief.\"},"
                                       "{\"role\":\"user\",\"content\":\"Hi <b>\\u00e9\"},"
                                       "{\"role\":\"assistant\",\"content\":\"Hello.\"},"
                                       "{\"role\":\"user\",\"content\":\"\"}]";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 1 << 16)
        return 0;
    char *copy = malloc(size + 1);
    FUZZ_CHECK(copy, "out of memory");
    memcpy(copy, data, size);
    copy[size] = 0;
    const char *tmpl = copy;
    size_t tl = strlen(tmpl);
    const char *msgs_text = tl < size ? copy + tl + 1 : default_messages;
    const char *extra_text =
        tl < size && tl + 1 + strlen(msgs_text) < size ? msgs_text + strlen(msgs_text) + 1 : "";

    cJSON *msgs = cJSON_Parse(msgs_text);
    if (!cJSON_IsArray(msgs)) {
        cJSON_Delete(msgs);
        msgs = cJSON_Parse(default_messages);
    } else
        jinja_cjson_mark_floats(msgs, msgs_text);
    cJSON *extra = cJSON_Parse(extra_text);

    char err[512];
    jinja_template *t = jinja_parse(tmpl, err, sizeof err);
    if (!t)
        FUZZ_CHECK(err[0], "parse failed without a message");
    jinja_limits lim = jinja_default_limits();
    lim.max_steps = 200000;
    lim.max_memory = 32u << 20;
    lim.max_output = 1u << 20;
    for (int gen = 0; t && gen < 2; gen++) {
        cJSON *vars = cJSON_CreateObject();
        cJSON_AddItemToObject(vars, "messages", cJSON_Duplicate(msgs, 1));
        cJSON_AddStringToObject(vars, "bos_token", "<s>");
        cJSON_AddStringToObject(vars, "eos_token", "</s>");
        cJSON_AddBoolToObject(vars, "add_generation_prompt", gen);
        cJSON_AddNullToObject(vars, "tools");
        cJSON_AddNullToObject(vars, "documents");
        if (cJSON_IsObject(extra))
            for (const cJSON *c = extra->child; c; c = c->next)
                if (c->string && !cJSON_GetObjectItemCaseSensitive(vars, c->string))
                    cJSON_AddItemToObject(vars, c->string, cJSON_Duplicate(c, 1));
        size_t out_len = 0;
        enum jinja_err kind = JINJA_OK;
        err[0] = 0;
        char *out = jinja_render(t, vars, "2024-07-26", &lim, &out_len, &kind, err, sizeof err);
        if (out) {
            FUZZ_CHECK(out_len <= lim.max_output, "%zu bytes of output past the limit", out_len);
            FUZZ_CHECK(strlen(out) <= out_len, "length %zu, text %zu", out_len, strlen(out));
        } else
            FUZZ_CHECK(kind != JINJA_OK && (err[0] || kind == JINJA_ERR_RAISE), "no output and no error");
        free(out);
        cJSON_Delete(vars);
    }
    jinja_free(t);

    /* the built-in formats and the fallback, on plain role/content pairs */
    chat_message m[8];
    size_t n = 0;
    for (const cJSON *c = msgs ? msgs->child : NULL; c && n < 8; c = c->next) {
        const cJSON *r = cJSON_GetObjectItemCaseSensitive(c, "role");
        const cJSON *k = cJSON_GetObjectItemCaseSensitive(c, "content");
        m[n].role = cJSON_IsString(r) ? r->valuestring : "user";
        m[n].content = cJSON_IsString(k) ? k->valuestring : NULL;
        m[n].content_len = 0;
        n++;
    }
    chat_render_params p = {"<s>", "</s>", true, "2024-07-26"};
    for (int i = 0; chat_builtin_names[i]; i++) {
        char *out = chat_render_builtin(chat_builtin_names[i], m, n, &p, err, sizeof err);
        free(out);
    }
    /* the built-in format chat_render falls back to when a template fails */
    const char *fb = chat_detect_builtin(tmpl);
    FUZZ_CHECK(fb && chat_builtin_known(fb), "fallback '%s' is not a built-in", fb ? fb : "(null)");
    cJSON_Delete(msgs);
    cJSON_Delete(extra);
    free(copy);
    return 0;
}
