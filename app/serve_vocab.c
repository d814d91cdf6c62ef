/* The server's own view of the model file, beside the engine thread's: the
 * tokenizer (token pieces for logprobs entries, control tokens for the
 * reasoning splitter) and the chat template (its reasoning style, and the
 * prompt's end: Qwen3.5 starts the reply inside <think>). Read-only after
 * open, so every connection thread may use it. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chat/chat_prompt.h"
#include "gguf/gguf.h"
#include "serve.h"
#include "tokenizer/tokenizer.h"

struct serve_vocab {
    gguf_ctx *g;
    tokenizer *tok;
    char *tmpl;   /* tokenizer.chat_template, NULL when none */
    char *bos, *eos;
    enum chat_reasoning_style style;
    char **control; /* per id: the control token's text, NULL for others */
    int32_t n_vocab;
    int32_t max_piece; /* bytes of the longest piece (at least 4: an unknown character is one token) */
    pthread_mutex_t big; /* one large prompt counted at a time (serve_vocab_count) */
};

static char *token_str(const tokenizer *t, int32_t id)
{
    size_t len = 0;
    const char *s = id >= 0 ? tokenizer_token_str(t, id, &len) : NULL;
    return s ? strndup(s, len) : strdup("");
}

serve_vocab *serve_vocab_open(const char *path, char *err, size_t errlen)
{
    serve_vocab *v = calloc(1, sizeof *v);
    if (!v) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    pthread_mutex_init(&v->big, NULL);
    v->g = gguf_open(path, err, errlen);
    if (!v->g || !(v->tok = tokenizer_build(v->g, err, errlen))) {
        serve_vocab_close(v);
        return NULL;
    }
    v->tmpl = gguf_get_str_dup(v->g, "tokenizer.chat_template");
    v->style = v->tmpl ? chat_reasoning_detect(v->tmpl) : CHAT_REASONING_NONE;
    v->bos = token_str(v->tok, tokenizer_bos(v->tok));
    v->eos = token_str(v->tok, tokenizer_eos(v->tok));
    v->n_vocab = tokenizer_n_vocab(v->tok);
    v->control = calloc((size_t)v->n_vocab, sizeof *v->control);
    if (!v->control || !v->bos || !v->eos) {
        snprintf(err, errlen, "out of memory");
        serve_vocab_close(v);
        return NULL;
    }
    v->max_piece = 4;
    char piece[1024];
    for (int32_t i = 0; i < v->n_vocab; i++) {
        if (tokenizer_token_type(v->tok, i) == TOKEN_TYPE_CONTROL)
            v->control[i] = token_str(v->tok, i);
        int32_t k = tokenizer_token_to_piece(v->tok, i, true, piece, (int32_t)sizeof piece);
        if (k > v->max_piece)
            v->max_piece = k;
    }
    return v;
}

void serve_vocab_close(serve_vocab *v)
{
    if (!v)
        return;
    if (v->control)
        for (int32_t i = 0; i < v->n_vocab; i++)
            free(v->control[i]);
    free(v->control);
    free(v->tmpl);
    free(v->bos);
    free(v->eos);
    tokenizer_free(v->tok);
    gguf_close(v->g);
    pthread_mutex_destroy(&v->big);
    free(v);
}

int32_t serve_vocab_piece(const serve_vocab *v, int32_t id, char *buf, int32_t cap)
{
    if (id < 0 || id >= v->n_vocab)
        return 0;
    int32_t k = tokenizer_token_to_piece(v->tok, id, true, buf, cap);
    return k < 0 ? 0 : k > cap ? cap : k;
}

const char *serve_vocab_control_text(const serve_vocab *v, int32_t id)
{
    return id >= 0 && id < v->n_vocab ? v->control[id] : NULL;
}

enum chat_reasoning_style serve_vocab_reasoning_style(const serve_vocab *v) { return v->style; }

static int64_t nonblank(const char *s, size_t len)
{
    int64_t n = 0;
    for (size_t i = 0; s && i < len; i++)
        n += !(s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r');
    return n;
}

int64_t serve_vocab_min_tokens(const serve_vocab *v, const serve_request *req)
{
    int64_t bytes = 0;
    if (req->prompt_ids) /* token ids: counted exactly, and cheaply (their text is no measure) */
        return 0;
    if (!req->chat)
        bytes = nonblank(req->prompt, req->prompt ? strlen(req->prompt) : 0);
    for (size_t i = 0; req->chat && i < req->n_msgs; i++) {
        const char *role = req->msgs[i].role;
        /* template variables and earlier reasoning may not reach the prompt */
        if (role && strcmp(role, CHAT_ROLE_VARS) != 0 && strcmp(role, CHAT_ROLE_REASONING) != 0)
            bytes += nonblank(req->msgs[i].content, chat_content_len(&req->msgs[i]));
    }
    return (bytes + v->max_piece - 1) / v->max_piece;
}

void serve_vocab_roles(const serve_vocab *v, serve_request *req)
{
    if (!req->chat || (v->tmpl && strstr(v->tmpl, "<|channel|>")))
        return;
    for (size_t i = 0; i < req->n_msgs; i++) {
        char *sys = !strcmp(req->msgs[i].role, "developer") ? strdup("system") : NULL;
        if (sys) {
            free((char *)req->msgs[i].role);
            req->msgs[i].role = sys;
        }
    }
}

const char *serve_vocab_format(const serve_vocab *v, const serve_request *req)
{
    if (!req->chat)
        return req->prompt_ids ? CHAT_PROMPT_IDS : "raw";
    /* a model without a template: llama-server's fallback, chatml (its
     * CHATML_TEMPLATE_SRC renders as the built-in does) */
    return v->tmpl && *v->tmpl ? NULL : "chatml";
}

int32_t serve_vocab_count(const serve_vocab *v, const serve_request *req, int32_t limit, char *err, size_t errlen)
{
    /* what the bridge sends the engine: completions raw, chats the model's template */
    const chat_prompt_src src = {.tok = v->tok, .model_template = v->tmpl, .forced = serve_vocab_format(v, req)};
    chat_message one = {"user", req->prompt, req->prompt_len};
    size_t bytes = chat_content_len(&one);
    for (size_t i = 0; req->chat && i < req->n_msgs; i++)
        bytes += chat_content_len(&req->msgs[i]);
    /* rendering and pretokenizing take about 15 times the prompt's bytes
     * while they run (the pretokenizer's per-character arrays): large
     * prompts take turns, so the peak is one body's worth whatever the
     * number of clients; small ones never wait */
    const bool big = bytes > SERVE_COUNT_ALONE;
    if (big)
        pthread_mutex_lock((pthread_mutex_t *)&v->big);
    int32_t k = chat_prompt_count(&src, req->chat ? req->msgs : &one, req->chat ? req->n_msgs : 1, limit, err, errlen);
    if (big)
        pthread_mutex_unlock((pthread_mutex_t *)&v->big);
    return k;
}

/* appends the ids' text to *buf (grown as needed) */
static bool ids_append(char **buf, size_t *len, size_t *cap, const int32_t *ids, int32_t n)
{
    for (int32_t i = 0; i < n; i++) {
        if (*len + 16 > *cap) {
            size_t c = *cap ? 2 * *cap : 256;
            char *g = realloc(*buf, c);
            if (!g)
                return false;
            *buf = g;
            *cap = c;
        }
        *len += (size_t)snprintf(*buf + *len, *cap - *len, "%s%d", *len ? " " : "", (int)ids[i]);
    }
    return true;
}

int serve_vocab_prompt(const serve_vocab *v, serve_request *req, char *err, size_t errlen)
{
    if (!req->parts)
        return 0;
    char *buf = NULL;
    size_t len = 0, cap = 0, n_ids = 0;
    bool ok = true;
    for (size_t i = 0; ok && i < req->n_parts; i++) {
        const serve_prompt_part *p = &req->parts[i];
        if (!p->text) {
            if (p->id >= v->n_vocab) {
                free(buf);
                snprintf(err, errlen, "prompt: token %lld is not in the vocabulary (0..%d)", (long long)p->id,
                         (int)v->n_vocab - 1);
                return 400;
            }
            const int32_t id = (int32_t)p->id;
            ok = ids_append(&buf, &len, &cap, &id, 1);
            n_ids++;
            continue;
        }
        /* common_tokenize(vocab, s, add_special: the first element only, parse_special) */
        const bool bos = i == 0 && tokenizer_add_bos(v->tok) && tokenizer_bos(v->tok) >= 0;
        const size_t tl = p->len ? p->len : strlen(p->text);
        const int32_t n = tokenizer_encode(v->tok, p->text, tl, bos, true, NULL, 0);
        int32_t *ids = n > 0 ? malloc((size_t)n * sizeof *ids) : NULL;
        if (n < 0 || (n > 0 && !ids)) {
            free(buf);
            snprintf(err, errlen, "prompt: a text cannot be tokenized");
            return 400;
        }
        if (n > 0)
            tokenizer_encode(v->tok, p->text, tl, bos, true, ids, n);
        ok = ids_append(&buf, &len, &cap, ids, n);
        n_ids += (size_t)(n > 0 ? n : 0);
        free(ids);
    }
    if (!ok || n_ids == 0) {
        free(buf);
        snprintf(err, errlen, ok ? "prompt: the prompt holds no tokens" : "out of memory");
        return 400;
    }
    free(req->prompt);
    req->prompt = buf;
    req->prompt_len = len;
    req->prompt_ids = true;
    return 0;
}

char *serve_vocab_render(const serve_vocab *v, const chat_message *msgs, size_t n, size_t *cont_at)
{
    const chat_prompt_src src = {
        .tok = v->tok, .model_template = v->tmpl, .forced = v->tmpl && *v->tmpl ? NULL : "chatml"};
    char warn[256], err[256];
    size_t len = 0;
    if (cont_at)
        *cont_at = (size_t)-1;
    char *text = chat_prompt_continues(&src, msgs, n)
                     ? chat_prompt_render_prefill(&src, msgs, n, warn, sizeof warn, &len, cont_at, err, sizeof err)
                     : chat_prompt_render_n(&src, msgs, n, true, warn, sizeof warn, &len, err, sizeof err);
    /* a NUL a reply held: the splitter reads a C string, and no marker holds 0x01 */
    for (char *z = text ? memchr(text, 0, len) : NULL; z; z = memchr(z, 0, len - (size_t)(z - text)))
        *z = 1;
    return text;
}

int serve_vocab_bias(const serve_vocab *v, serve_request *req, char *err, size_t errlen)
{
    sampler_params *sp = &req->sp;
    sp->n_bias = 0;
    for (size_t i = 0; i < req->n_bias_in; i++) {
        const serve_bias_in *in = &req->bias_in[i];
        int32_t one, *ids = &one, n = 1;
        if (in->text) { /* common_tokenize(vocab, text, false): no BOS, specials as text */
            const size_t len = strlen(in->text);
            n = tokenizer_encode(v->tok, in->text, len, false, false, NULL, 0);
            if (n < 0 || !(ids = malloc((size_t)(n ? n : 1) * sizeof *ids))) {
                snprintf(err, errlen, "logit_bias: '%.64s' cannot be tokenized", in->text);
                return 400;
            }
            tokenizer_encode(v->tok, in->text, len, false, false, ids, n);
        } else if (in->id < 0 || in->id >= v->n_vocab) {
            snprintf(err, errlen, "logit_bias: token %lld is not in the vocabulary (0..%d)", (long long)in->id,
                     (int)v->n_vocab - 1);
            return 400;
        } else {
            one = (int32_t)in->id;
        }
        for (int32_t k = 0; k < n; k++) {
            if (sp->n_bias == SAMPLER_MAX_BIAS) {
                if (ids != &one)
                    free(ids);
                snprintf(err, errlen, "logit_bias: more than %d tokens", SAMPLER_MAX_BIAS);
                return 400;
            }
            sp->bias[sp->n_bias++] = (sampler_bias){ids[k], in->bias};
        }
        if (ids != &one)
            free(ids);
    }
    return 0;
}
