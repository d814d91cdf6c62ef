/* Response shaping for tokscope serve: OpenAI's shapes (chat completion and
 * its chunks, the legacy text completion, errors, the model list), the
 * logprobs entries with tokscope's raw and post-sampler probabilities, and
 * the split of a reply into reasoning and answer as it streams. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "commands.h"
#include "serve.h"

/* ---- UTF-8 ---------------------------------------------------------------- */

/* Length of the valid UTF-8 sequence at s (n bytes left), 0 when invalid. */
static size_t utf8_seq(const unsigned char *s, size_t n)
{
    const unsigned char c = s[0];
    size_t k;
    unsigned min;
    if (c < 0x80)
        return 1;
    if (c >= 0xC2 && c <= 0xDF)
        k = 2, min = 0x80;
    else if (c >= 0xE0 && c <= 0xEF)
        k = 3, min = 0x800;
    else if (c >= 0xF0 && c <= 0xF4)
        k = 4, min = 0x10000;
    else
        return 0;
    if (n < k)
        return 0;
    unsigned cp = c & (0x7F >> k);
    for (size_t i = 1; i < k; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return 0;
        cp = cp << 6 | (s[i] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return k;
}

char *serve_utf8_clean(const char *s, size_t n)
{
    char *out = malloc(3 * n + 1), *w = out;
    if (!out)
        return NULL;
    const unsigned char *u = (const unsigned char *)s;
    for (size_t i = 0; i < n;) {
        size_t k = utf8_seq(u + i, n - i);
        if (k == 1 && u[i] == 0) { /* a NUL (a byte token): "\u0000" once printed (print_free) */
            memcpy(w, "\xFF" "0", 2);
            w += 2;
            i++;
            continue;
        }
        if (k == 0) { /* an invalid byte: U+FFFD */
            memcpy(w, "\xEF\xBF\xBD", 3);
            w += 3;
            i++;
            continue;
        }
        memcpy(w, u + i, k);
        w += k;
        i += k;
    }
    *w = 0;
    return out;
}

/* ---- logprobs entries ----------------------------------------------------- */

/* ln p, with OpenAI's floor for "as good as impossible" (JSON has no -inf). */
static double logprob_of(float p)
{
    if (!(p > 0))
        return -9999.0;
    double l = log((double)p);
    return l < -9999.0 ? -9999.0 : l;
}

/* Numbers rounded to float precision: a float printed as a double shows
 * noise digits (0.1f -> 0.10000000149011612). */
static cJSON *numf(float v)
{
    if (!isfinite(v))
        return cJSON_CreateNumber(0);
    char b[32];
    snprintf(b, sizeof b, "%.9g", (double)v);
    return cJSON_CreateNumber(strtod(b, NULL));
}

static void add_token_fields(cJSON *o, const char *piece, int32_t len, int32_t id, float logit, float p_raw,
                             float p_post, bool post_sampling)
{
    char *tok = serve_utf8_clean(piece, (size_t)len);
    cJSON_AddStringToObject(o, "token", tok ? tok : "");
    free(tok);
    cJSON_AddItemToObject(o, "logprob", numf((float)logprob_of(post_sampling ? p_post : p_raw)));
    cJSON *bytes = cJSON_AddArrayToObject(o, "bytes");
    for (int32_t i = 0; i < len; i++)
        cJSON_AddItemToArray(bytes, cJSON_CreateNumber((unsigned char)piece[i]));
    /* tokscope's extension: the engine's own numbers */
    cJSON_AddNumberToObject(o, "id", id);
    cJSON_AddItemToObject(o, "logit", numf(logit));
    cJSON_AddItemToObject(o, "p_raw", numf(p_raw));
    cJSON_AddItemToObject(o, "p_post", numf(p_post));
}

cJSON *serve_logprob_entry(const serve_token *t, int32_t top, bool post_sampling)
{
    cJSON *e = cJSON_CreateObject();
    if (!e)
        return NULL;
    add_token_fields(e, t->piece, t->piece_len, t->id, t->logit, t->p_raw, t->p_post, post_sampling);
    cJSON_AddItemToObject(e, "entropy_raw", numf(t->entropy_raw));
    cJSON_AddItemToObject(e, "entropy_post", numf(t->entropy_post));
    cJSON *arr = cJSON_AddArrayToObject(e, "top_logprobs");
    const int32_t n = t->n_top < top ? t->n_top : top;
    for (int32_t i = 0; i < n; i++) {
        const serve_cand *c = &t->top[i];
        cJSON *o = cJSON_CreateObject();
        add_token_fields(o, c->piece, c->piece_len, c->id, c->logit, c->p_raw, c->p_post, post_sampling);
        cJSON_AddItemToArray(arr, o);
    }
    return e;
}

/* ---- the reply: reasoning and answer --------------------------------------- */

void serve_out_init(serve_out *o, const serve_request *req, enum chat_reasoning_style style, const char *prompt,
                    size_t cont_at)
{
    memset(o, 0, sizeof *o);
    o->style = style;
    if (req->chat && prompt && cont_at != (size_t)-1 && cont_at <= strlen(prompt)) {
        o->cont_len = strlen(prompt + cont_at);
        o->cont = strdup(prompt + cont_at);
        o->cont_prompt = strndup(prompt, cont_at);
        if (!o->cont || !o->cont_prompt) {
            free(o->cont);
            free(o->cont_prompt);
            o->cont = o->cont_prompt = NULL;
        }
    }
    o->chat = req->chat;
    o->logprobs = req->logprobs;
    o->post_sampling = req->post_sampling;
    o->top_logprobs = req->top_logprobs;
    o->split = req->chat && style != CHAT_REASONING_NONE;
    if (o->split && o->cont) { /* the reply goes on from the continued message's text: its state, no bytes */
        chat_reasoning_init(&o->rs, style, o->cont_prompt);
        chat_reasoning_feed_virtual(&o->rs, o->cont, o->cont_len);
        /* what the message holds has started: blanks the reply begins with are kept */
        chat_reasoning seen;
        chat_reasoning_split(&seen, style, o->cont_prompt, o->cont, o->cont_len);
        o->pre_content = chat_reasoning_extract(&seen, o->cont, o->cont_len, CHAT_SPAN_ANSWER);
        o->pre_reasoning = chat_reasoning_extract(&seen, o->cont, o->cont_len, CHAT_SPAN_REASONING);
        o->answer_started = o->pre_content && *o->pre_content;
        o->reasoning_started = o->pre_reasoning && *o->pre_reasoning;
        chat_reasoning_free(&seen);
    } else if (o->split) {
        chat_reasoning_init(&o->rs, style, prompt);
    } else if (o->cont) {
        o->pre_content = strdup(o->cont);
    }
}

void serve_out_whole(const serve_out *o, char **content, char **reasoning)
{
    /* the continued message's text, then the reply (its NULs kept) */
    const size_t n = o->cont_len + o->len;
    char *all = malloc(n + 1);
    if (all) {
        if (o->cont_len)
            memcpy(all, o->cont, o->cont_len);
        if (o->len)
            memcpy(all + o->cont_len, o->text, o->len);
        all[n] = 0;
    }
    *reasoning = NULL;
    if (!all) {
        *content = serve_utf8_clean("", 0);
        return;
    }
    if (!o->split) {
        *content = serve_utf8_clean(all, n);
        free(all);
        return;
    }
    /* split as a whole, trimmed like the template's own extraction; a
     * continued message's text is split with the reply, from the prompt
     * before it (the stream's splitter starts after it) */
    chat_reasoning again, *rs = (chat_reasoning *)&o->rs;
    if (o->cont) {
        chat_reasoning_split(&again, o->style, o->cont_prompt, all, n);
        rs = &again;
    }
    size_t al = 0, rl = 0;
    char *a = chat_reasoning_extract_n(rs, all, n, CHAT_SPAN_ANSWER, &al);
    char *r = chat_reasoning_extract_n(rs, all, n, CHAT_SPAN_REASONING, &rl);
    *content = serve_utf8_clean(a ? a : "", a ? al : 0);
    *reasoning = serve_utf8_clean(r ? r : "", r ? rl : 0);
    free(a);
    free(r);
    if (o->cont)
        chat_reasoning_free(&again);
    free(all);
}

void serve_out_free(serve_out *o)
{
    if (o->split)
        chat_reasoning_free(&o->rs);
    free(o->cont);
    free(o->cont_prompt);
    free(o->pre_content);
    free(o->pre_reasoning);
    free(o->text);
    memset(o, 0, sizeof *o);
}

static void out_append(serve_out *o, const char *s, size_t n)
{
    if (o->len + n + 1 > o->cap) {
        size_t cap = o->cap ? o->cap : 256;
        while (cap < o->len + n + 1)
            cap *= 2;
        char *t = realloc(o->text, cap);
        if (!t)
            abort();
        o->text = t;
        o->cap = cap;
    }
    memcpy(o->text + o->len, s, n);
    o->len += n;
    o->text[o->len] = 0;
}

typedef struct sbuf {
    char *s;
    size_t n, cap;
} sbuf;

static void sb_add(sbuf *b, const char *s, size_t n)
{
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 64;
        while (cap < b->n + n + 1)
            cap *= 2;
        char *t = realloc(b->s, cap);
        if (!t)
            abort();
        b->s = t;
        b->cap = cap;
    }
    memcpy(b->s + b->n, s, n);
    b->n += n;
    b->s[b->n] = 0;
}

static bool blank(char ch) { return ch == ' ' || ch == '\n' || ch == '\r' || ch == '\t'; }

/* The classified bytes [done_to, upto) go to the answer or the reasoning;
 * markers go nowhere, and each part's leading blanks are dropped (the
 * newline after <think>, the blank line after </think>). */
static void out_route(serve_out *o, size_t upto, sbuf *content, sbuf *reasoning)
{
    for (size_t i = o->done_to; i < upto; i++) {
        const char ch = o->text[i];
        enum chat_span_kind k = o->split ? chat_reasoning_kind_at(&o->rs, i) : CHAT_SPAN_ANSWER;
        if (k == CHAT_SPAN_ANSWER) {
            if (!o->answer_started && o->split && blank(ch))
                continue;
            o->answer_started = true;
            sb_add(content, &ch, 1);
        } else if (k == CHAT_SPAN_REASONING) {
            if (!o->reasoning_started && blank(ch))
                continue;
            o->reasoning_started = true;
            sb_add(reasoning, &ch, 1);
        }
    }
    o->done_to = upto;
}

/* A delta string: valid UTF-8 ("" when nothing). */
static char *delta(sbuf *b)
{
    char *s = serve_utf8_clean(b->s ? b->s : "", b->n);
    free(b->s);
    return s;
}

void serve_out_feed(serve_out *o, const serve_token *t, const char *rest, size_t rest_len, char **content,
                    char **reasoning, cJSON **entry)
{
    sbuf c = {0}, r = {0};
    *entry = NULL;
    if (!o->pre_sent) { /* a continued message's text first, as llama-server's stream */
        o->pre_sent = true;
        if (o->pre_content)
            sb_add(&c, o->pre_content, strlen(o->pre_content));
        if (o->pre_reasoning)
            sb_add(&r, o->pre_reasoning, strlen(o->pre_reasoning));
    }
    if (t) {
        if (!t->eog) {
            o->n_tokens++;
            if (o->logprobs)
                *entry = serve_logprob_entry(t, o->top_logprobs, o->post_sampling);
        }
        if (t->text_len > 0)
            out_append(o, t->text, (size_t)t->text_len);
        if (o->split) {
            if (t->text_len > 0)
                chat_reasoning_feed(&o->rs, t->text, (size_t)t->text_len);
            else if (t->control)
                chat_reasoning_feed_virtual(&o->rs, t->control, strlen(t->control));
        }
    } else {
        if (rest && rest_len > 0) {
            out_append(o, rest, rest_len);
            if (o->split)
                chat_reasoning_feed(&o->rs, rest, rest_len);
        }
        if (o->split)
            chat_reasoning_finish(&o->rs);
    }
    /* without a split every byte is answer as soon as it comes */
    out_route(o, o->split ? (o->rs.pos < o->len ? o->rs.pos : o->len) : o->len, &c, &r);
    *content = delta(&c);
    *reasoning = delta(&r);
}

const char *serve_finish_reason(enum engine_done_reason r)
{
    switch (r) {
    case ENGINE_DONE_EOG:
    case ENGINE_DONE_STOP_STRING:
    case ENGINE_DONE_STOPPED:
        return "stop";
    case ENGINE_DONE_LENGTH:
    case ENGINE_DONE_CTX_FULL:
        return "length";
    case ENGINE_DONE_ERROR:
    case ENGINE_DONE_CUT: /* the remote backend's; the local engine never ends so */
        break;
    }
    return "error";
}

/* ---- whole objects -------------------------------------------------------- */

/* The object as JSON text. cJSON holds C strings, so a NUL travels in them
 * as 0xFF '0' (serve_utf8_clean: never UTF-8, so nothing else has 0xFF) and
 * becomes "\u0000" here, as llama-server writes it. */
static char *print_free(cJSON *o)
{
    char *s = o ? cJSON_PrintUnformatted(o) : NULL;
    cJSON_Delete(o);
    return chat_bytes_json_out(s);
}

char *serve_error_json(const char *message, const char *type, const char *param, const char *code)
{
    cJSON *o = cJSON_CreateObject();
    cJSON *e = cJSON_AddObjectToObject(o, "error");
    char *m = serve_utf8_clean(message, strlen(message));
    cJSON_AddStringToObject(e, "message", m ? m : "");
    free(m);
    cJSON_AddStringToObject(e, "type", type);
    if (param && *param)
        cJSON_AddStringToObject(e, "param", param);
    else
        cJSON_AddNullToObject(e, "param");
    if (code && *code)
        cJSON_AddStringToObject(e, "code", code);
    else
        cJSON_AddNullToObject(e, "code");
    return print_free(o);
}

static cJSON *head(const serve_reply_meta *m, bool chat, bool chunk)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "id", m->id);
    cJSON_AddStringToObject(o, "object",
                            chat ? (chunk ? "chat.completion.chunk" : "chat.completion") : "text_completion");
    cJSON_AddNumberToObject(o, "created", (double)m->created);
    cJSON_AddStringToObject(o, "model", m->model);
    cJSON_AddStringToObject(o, "system_fingerprint", "tokscope-" TOKSCOPE_VERSION);
    return o;
}

/* The legacy completions logprobs object: tokens, token_logprobs,
 * top_logprobs (token -> logprob maps), text_offset; plus "content", the
 * chat shape of the same entries (tokscope's fields included). */
static cJSON *legacy_logprobs(cJSON *entries, size_t *text_offset)
{
    cJSON *lp = cJSON_CreateObject();
    cJSON *toks = cJSON_AddArrayToObject(lp, "tokens");
    cJSON *tlp = cJSON_AddArrayToObject(lp, "token_logprobs");
    cJSON *top = cJSON_AddArrayToObject(lp, "top_logprobs");
    cJSON *off = cJSON_AddArrayToObject(lp, "text_offset");
    const cJSON *e;
    cJSON_ArrayForEach(e, entries)
    {
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(e, "token");
        const cJSON *l = cJSON_GetObjectItemCaseSensitive(e, "logprob");
        const cJSON *b = cJSON_GetObjectItemCaseSensitive(e, "bytes");
        cJSON_AddItemToArray(toks, cJSON_CreateString(t->valuestring));
        cJSON_AddItemToArray(tlp, cJSON_CreateNumber(l->valuedouble));
        cJSON *map = cJSON_CreateObject();
        const cJSON *c;
        cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(e, "top_logprobs"))
        {
            const char *k = cJSON_GetObjectItemCaseSensitive(c, "token")->valuestring;
            if (!cJSON_GetObjectItemCaseSensitive(map, k))
                cJSON_AddNumberToObject(map, k, cJSON_GetObjectItemCaseSensitive(c, "logprob")->valuedouble);
        }
        cJSON_AddItemToArray(top, map);
        cJSON_AddItemToArray(off, cJSON_CreateNumber((double)*text_offset));
        *text_offset += (size_t)cJSON_GetArraySize(b);
    }
    cJSON_AddItemToObject(lp, "content", entries);
    return lp;
}

static cJSON *choice(bool chat, bool chunk, bool first, const char *content, const char *reasoning, cJSON *entries,
                     const char *finish, size_t *text_offset)
{
    cJSON *ch = cJSON_CreateObject();
    cJSON_AddNumberToObject(ch, "index", 0);
    if (chat) {
        cJSON *msg = cJSON_AddObjectToObject(ch, chunk ? "delta" : "message");
        if (first || !chunk)
            cJSON_AddStringToObject(msg, "role", "assistant");
        if (!chunk || (content && *content) || first)
            cJSON_AddStringToObject(msg, "content", content ? content : "");
        if (reasoning && *reasoning)
            cJSON_AddStringToObject(msg, "reasoning_content", reasoning);
        if (entries) {
            cJSON *lp = cJSON_AddObjectToObject(ch, "logprobs");
            cJSON_AddItemToObject(lp, "content", entries);
        } else {
            cJSON_AddNullToObject(ch, "logprobs");
        }
    } else {
        cJSON_AddStringToObject(ch, "text", content ? content : "");
        if (entries)
            cJSON_AddItemToObject(ch, "logprobs", legacy_logprobs(entries, text_offset));
        else
            cJSON_AddNullToObject(ch, "logprobs");
    }
    if (finish)
        cJSON_AddStringToObject(ch, "finish_reason", finish);
    else
        cJSON_AddNullToObject(ch, "finish_reason");
    return ch;
}

/* "data: JSON\n\n" from a JSON text (taken over). */
static char *sse_event(char *json)
{
    if (!json)
        return NULL;
    char *out = NULL;
    if (asprintf(&out, "data: %s\n\n", json) < 0)
        out = NULL;
    free(json);
    return out;
}

char *serve_chunk(const serve_reply_meta *m, bool chat, bool first, const char *content, const char *reasoning,
                  cJSON *entries, const char *finish)
{
    cJSON *o = head(m, chat, true);
    cJSON *chs = cJSON_AddArrayToObject(o, "choices");
    size_t off = 0; /* streamed legacy chunks: offsets from the reply's start, as the whole reply's */
    cJSON_AddItemToArray(chs,
                         choice(chat, true, first, content, reasoning, entries, finish, m->text_offset ? m->text_offset : &off));
    return sse_event(print_free(o));
}

/* OpenAI's usage, with prompt_tokens_details.cached_tokens as OpenAI and
 * llama-server give it: the prompt's tokens the cache (or a restored KV
 * snapshot) already held, not evaluated for this request */
static cJSON *usage(int32_t n_prompt, int32_t n_cached, int32_t n_gen)
{
    cJSON *u = cJSON_CreateObject();
    cJSON_AddNumberToObject(u, "prompt_tokens", n_prompt);
    cJSON_AddNumberToObject(u, "completion_tokens", n_gen);
    cJSON_AddNumberToObject(u, "total_tokens", n_prompt + n_gen);
    cJSON *d = cJSON_AddObjectToObject(u, "prompt_tokens_details");
    cJSON_AddNumberToObject(d, "cached_tokens", n_cached);
    return u;
}

char *serve_usage_chunk(const serve_reply_meta *m, bool chat, int32_t n_prompt, int32_t n_gen)
{
    cJSON *o = head(m, chat, true);
    cJSON_AddArrayToObject(o, "choices");
    cJSON_AddItemToObject(o, "usage", usage(n_prompt, m->n_cached, n_gen));
    return sse_event(print_free(o));
}

char *serve_reply(const serve_reply_meta *m, bool chat, const char *content, const char *reasoning, cJSON *entries,
                  const char *finish, int32_t n_prompt, int32_t n_gen)
{
    cJSON *o = head(m, chat, false);
    cJSON *chs = cJSON_AddArrayToObject(o, "choices");
    size_t off = 0;
    cJSON_AddItemToArray(chs, choice(chat, false, false, content, reasoning, entries, finish, &off));
    cJSON_AddItemToObject(o, "usage", usage(n_prompt, m->n_cached, n_gen));
    return print_free(o);
}

static cJSON *model_object(const char *model_id, long long created, const engine_model_info *info)
{
    cJSON *m = cJSON_CreateObject();
    cJSON_AddStringToObject(m, "id", model_id);
    cJSON_AddStringToObject(m, "object", "model");
    cJSON_AddNumberToObject(m, "created", (double)created);
    cJSON_AddStringToObject(m, "owned_by", "tokscope");
    if (info) { /* like llama-server's "meta": what the picker may show */
        cJSON *meta = cJSON_AddObjectToObject(m, "meta");
        char *name = serve_utf8_clean(info->name, strlen(info->name));
        cJSON_AddStringToObject(meta, "name", name ? name : "");
        free(name);
        cJSON_AddStringToObject(meta, "arch", info->arch);
        cJSON_AddStringToObject(meta, "file_type", info->file_type);
        cJSON_AddStringToObject(meta, "template", info->template_name);
        cJSON_AddNumberToObject(meta, "n_ctx", info->n_ctx);
        cJSON_AddNumberToObject(meta, "n_ctx_train", info->n_ctx_train);
        cJSON_AddNumberToObject(meta, "n_vocab", info->n_vocab);
        cJSON_AddNumberToObject(meta, "n_params", (double)info->n_params);
        cJSON_AddNumberToObject(meta, "max_top_logprobs", SERVE_MAX_TOP);
    }
    return m;
}

char *serve_models_json(const char *model_id, long long created, const engine_model_info *info, int32_t slots_total,
                        int32_t slots_busy)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "object", "list");
    cJSON *data = cJSON_AddArrayToObject(o, "data");
    cJSON *m = model_object(model_id, created, info);
    cJSON *meta = cJSON_GetObjectItem(m, "meta");
    if (meta) {
        cJSON_AddNumberToObject(meta, "slots_total", slots_total);
        cJSON_AddNumberToObject(meta, "slots_busy", slots_busy);
    }
    cJSON_AddItemToArray(data, m);
    return print_free(o);
}

char *serve_model_json(const char *model_id, long long created, const engine_model_info *info)
{
    return print_free(model_object(model_id, created, info));
}
