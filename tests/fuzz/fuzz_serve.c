/* Fuzz target: tokscope serve's request parser (app/serve_request.c) and
 * response shaping (app/serve_json.c) on random bodies. The first byte picks
 * the endpoint and a reasoning style; the rest is the body. Checks:
 * - a body is accepted (0) or refused with 400, a message and, when a field
 *   is named, a name the body spells (or a required one: messages, prompt,
 *   a message's role);
 * - an accepted request keeps the sampler's limits (top_logprobs <= 20,
 *   at most 8 non-empty stop strings that fit, finite temperature >= 0, top_p
 *   and min_p in [0, 1]) and has its messages or its prompt;
 * - the body's bytes, fed as a reply in pieces, come out as valid UTF-8
 *   deltas no longer than what was fed, and every chunk and whole reply
 *   built from them parses back as JSON. */
#include <stdbool.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "fuzz.h"
#include "serve.h"

static bool utf8_valid(const char *s)
{
    const unsigned char *u = (const unsigned char *)s;
    while (*u) {
        int k = *u < 0x80 ? 1 : (*u >> 5) == 6 ? 2 : (*u >> 4) == 14 ? 3 : (*u >> 3) == 30 ? 4 : 0;
        if (!k)
            return false;
        for (int i = 1; i < k; i++)
            if ((u[i] & 0xC0) != 0x80)
                return false;
        u += k;
    }
    return true;
}

static void check_json(char *s, bool sse)
{
    FUZZ_CHECK(s != NULL, "no output");
    const char *j = s;
    if (sse) {
        FUZZ_CHECK(!strncmp(s, "data: ", 6), "chunk without data:");
        j = s + 6;
    }
    cJSON *o = cJSON_Parse(j);
    FUZZ_CHECK(o != NULL, "output is not JSON: %.200s", s);
    FUZZ_CHECK(utf8_valid(s), "output is not UTF-8");
    cJSON_Delete(o);
    free(s);
}

static void shape(const serve_request *r, enum chat_reasoning_style style, const uint8_t *data, size_t size)
{
    serve_out o;
    /* a third of the longer inputs continue an assistant message: the
     * prompt's "<think>\n" is then that message's own text */
    const char *prompt = size > 8 ? "<think>\n" : NULL;
    serve_out_init(&o, r, style, prompt, prompt && data[0] % 3 == 0 ? 0 : (size_t)-1);
    serve_reply_meta m = {"id", 1, r->model ? r->model : "m", 0, NULL};
    size_t out = 0, at = 0;
    cJSON *entries = cJSON_CreateArray();
    for (int i = 0; at <= size; i++) {
        size_t n = size - at < 7 ? size - at : 1 + (size_t)(data[at] % 7);
        serve_token t;
        memset(&t, 0, sizeof t);
        t.id = i;
        t.piece_len = (int32_t)n;
        memcpy(t.piece, data + at, n);
        t.text_len = (int32_t)n;
        memcpy(t.text, data + at, n);
        t.p_raw = n ? data[at] / 255.0f : 0;
        t.p_post = 1;
        t.n_top = (int32_t)(n % 3);
        for (int32_t k = 0; k < t.n_top; k++) {
            t.top[k].id = k;
            t.top[k].piece_len = (int32_t)n;
            memcpy(t.top[k].piece, data + at, n);
        }
        char *c, *rs;
        cJSON *e;
        const bool end = at == size;
        serve_out_feed(&o, end ? NULL : &t, end ? "\xE2\x82" : NULL, end ? 2 : 0, &c, &rs, &e);
        FUZZ_CHECK(utf8_valid(c) && utf8_valid(rs), "a delta is not UTF-8");
        out += strlen(c) + strlen(rs);
        cJSON *one = NULL;
        if (e) {
            cJSON_AddItemToArray(entries, cJSON_Duplicate(e, true));
            one = cJSON_CreateArray();
            cJSON_AddItemToArray(one, e);
        }
        check_json(serve_chunk(&m, r->chat, i == 0, c, rs, one, end ? "stop" : NULL), true);
        free(c);
        free(rs);
        if (end)
            break;
        at += n;
    }
    /* each invalid byte may become 3 (U+FFFD); the 2 bytes of the end, too */
    FUZZ_CHECK(out <= 3 * (size + 2), "deltas longer than the reply: %zu of %zu", out, size);
    check_json(serve_reply(&m, r->chat, o.text ? "x" : "", NULL, entries, "length", 1, o.n_tokens), false);
    serve_out_free(&o);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    const bool chat = data[0] & 1;
    const enum chat_reasoning_style style = (enum chat_reasoning_style)((data[0] >> 1) % 4);
    data++;
    size--;
    serve_request r;
    char err[256] = "", param[64] = "";
    int rc = serve_request_parse(&r, chat, (const char *)data, size, NULL, err, sizeof err, param, sizeof param);
    FUZZ_CHECK(rc == 0 || rc == 400, "status %d", rc);
    if (rc) {
        FUZZ_CHECK(err[0], "a refusal without a message");
        if (param[0]) {
            /* the field's own name (messages[3].content: "content") is in the
             * body, unless it is a required one that is missing */
            const char *leaf = strrchr(param, '.');
            char name[64];
            snprintf(name, sizeof name, "%s", leaf ? leaf + 1 : param);
            char *br = strchr(name, '[');
            if (br)
                *br = 0;
            const bool required = !strcmp(name, "messages") || !strcmp(name, "prompt") || !strcmp(name, "role");
            FUZZ_CHECK(required || memmem(data, size, name, strlen(name)) != NULL, "param '%s' not in the body",
                       param);
        }
    } else {
        FUZZ_CHECK(r.top_logprobs >= 0 && r.top_logprobs <= SERVE_MAX_TOP && r.sp.n_top == r.top_logprobs,
                   "top_logprobs %d", r.top_logprobs);
        FUZZ_CHECK(r.sp.n_stop >= 0 && r.sp.n_stop <= SAMPLER_MAX_STOP, "n_stop %d", r.sp.n_stop);
        for (int32_t i = 0; i < r.sp.n_stop; i++)
            FUZZ_CHECK(r.sp.stop[i][0] && strlen(r.sp.stop[i]) < SAMPLER_STOP_LEN, "stop %d", i);
        FUZZ_CHECK(r.sp.temp >= 0 && r.sp.temp == r.sp.temp, "temperature");
        FUZZ_CHECK(r.sp.top_p >= 0 && r.sp.top_p <= 1 && r.sp.min_p >= 0 && r.sp.min_p <= 1, "top_p/min_p");
        FUZZ_CHECK(r.sp.n_predict >= -1, "n_predict %d", r.sp.n_predict);
        if (chat) {
            FUZZ_CHECK(r.n_msgs >= 1, "no messages");
            for (size_t i = 0; i < r.n_msgs; i++)
                FUZZ_CHECK(r.msgs[i].role && r.msgs[i].content, "message %zu", i);
        } else {
            FUZZ_CHECK(r.prompt != NULL, "no prompt");
        }
        shape(&r, style, data, size);
    }
    serve_request_free(&r);
    return 0;
}
