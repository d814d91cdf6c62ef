/* The chat prompt every path builds (see chat_prompt.h). */
#include "chat/chat_prompt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *token_text_dup(const tokenizer *t, int32_t id)
{
    size_t len = 0;
    const char *s = id >= 0 ? tokenizer_token_str(t, id, &len) : NULL;
    char *r = malloc((s ? len : 0) + 1);
    if (r) {
        if (s)
            memcpy(r, s, len);
        r[s ? len : 0] = 0;
    }
    return r;
}

const char *chat_prompt_format(const chat_prompt_src *s)
{
    if (s->forced && *s->forced && strcmp(s->forced, "model") != 0)
        return s->forced;
    return s->model_template && *s->model_template ? "model" : "raw";
}

static bool pseudo(const chat_message *m)
{
    return m->role && (!strcmp(m->role, CHAT_ROLE_VARS) || !strcmp(m->role, CHAT_ROLE_REASONING));
}

static char *render_raw(const chat_message *msgs, size_t n, size_t *out_len, char *err, size_t errlen)
{
    size_t len = 0;
    for (size_t i = 0; i < n; i++)
        len += msgs[i].content && !pseudo(&msgs[i]) ? chat_content_len(&msgs[i]) : 0;
    char *out = malloc(len + 1), *w = out;
    if (!out) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    for (size_t i = 0; i < n; i++)
        if (msgs[i].content && !pseudo(&msgs[i]))
            w = mempcpy(w, msgs[i].content, chat_content_len(&msgs[i]));
    *w = 0;
    if (out_len)
        *out_len = len;
    return out;
}

char *chat_prompt_render(const chat_prompt_src *s, const chat_message *msgs, size_t n, bool add_gen, char *warn,
                         size_t warnlen, char *err, size_t errlen)
{
    return chat_prompt_render_n(s, msgs, n, add_gen, warn, warnlen, NULL, err, errlen);
}

char *chat_prompt_render_n(const chat_prompt_src *s, const chat_message *msgs, size_t n, bool add_gen, char *warn,
                           size_t warnlen, size_t *out_len, char *err, size_t errlen)
{
    if (warn && warnlen)
        warn[0] = 0;
    const char *fmt = chat_prompt_format(s);
    if (!strcmp(fmt, "raw"))
        return render_raw(msgs, n, out_len, err, errlen);
    const bool own = !strcmp(fmt, "model");
    char *bos = token_text_dup(s->tok, tokenizer_bos(s->tok));
    char *eos = token_text_dup(s->tok, tokenizer_eos(s->tok));
    chat_render_params rp = {.bos_token = bos, .eos_token = eos, .add_generation_prompt = add_gen, .date = NULL};
    char *out = bos && eos ? chat_render_n(own ? s->model_template : NULL, own ? NULL : fmt, msgs, n, &rp, warn,
                                           warnlen, out_len, err, errlen)
                           : NULL;
    if (!(bos && eos))
        snprintf(err, errlen, "out of memory");
    free(bos);
    free(eos);
    return out;
}

/* The rendered prompt (malloc'd) and whether BOS goes before it: what
 * chat_prompt_tokenize and chat_prompt_count tokenize. */
static char *prompt_text(const chat_prompt_src *s, const chat_message *msgs, size_t n, bool *add_bos,
                         size_t *len, char *warn, size_t warnlen, char *err, size_t errlen)
{
    const tokenizer *t = s->tok;
    if (!t) {
        snprintf(err, errlen, "the model has no usable tokenizer");
        return NULL;
    }
    size_t last = n; /* the last plain message: an assistant's is continued, not answered */
    while (last > 0 && pseudo(&msgs[last - 1]))
        last--;
    const bool add_gen = !(last > 0 && msgs[last - 1].role && !strcmp(msgs[last - 1].role, "assistant"));
    char rerr[512] = "";
    char *text = chat_prompt_render_n(s, msgs, n, add_gen, warn, warnlen, len, rerr, sizeof rerr);
    if (!text) {
        snprintf(err, errlen, "chat template (%s): %s", chat_prompt_format(s), rerr);
        return NULL;
    }
    *add_bos = !s->no_bos && tokenizer_add_bos(t) && tokenizer_bos(t) >= 0;
    if (*add_bos) { /* the template may have written BOS itself: one BOS, as a token */
        size_t bl = 0;
        const char *bs = tokenizer_token_str(t, tokenizer_bos(t), &bl);
        if (bs && bl && *len >= bl && memcmp(text, bs, bl) == 0)
            *add_bos = false;
    }
    return text;
}

int32_t *chat_prompt_tokenize(const chat_prompt_src *s, const chat_message *msgs, size_t n, int32_t *np, char *warn,
                              size_t warnlen, char *err, size_t errlen)
{
    bool add_bos;
    size_t len = 0;
    char *text = prompt_text(s, msgs, n, &add_bos, &len, warn, warnlen, err, errlen);
    if (!text)
        return NULL;
    const tokenizer *t = s->tok;
    const int32_t need = tokenizer_encode(t, text, len, add_bos, true, NULL, 0);
    int32_t *out = need >= 0 ? malloc(((size_t)need + 1) * sizeof *out) : NULL;
    if (!out || tokenizer_encode(t, text, len, add_bos, true, out, need + 1) != need) {
        free(out);
        free(text);
        snprintf(err, errlen, "tokenizer failed on the rendered conversation");
        return NULL;
    }
    free(text);
    *np = need;
    return out;
}

int32_t chat_prompt_count(const chat_prompt_src *s, const chat_message *msgs, size_t n, int32_t limit, char *err,
                          size_t errlen)
{
    bool add_bos;
    size_t len = 0;
    char *text = prompt_text(s, msgs, n, &add_bos, &len, NULL, 0, err, errlen);
    if (!text)
        return -1;
    const int32_t k = tokenizer_count(s->tok, text, len, add_bos, true, limit);
    free(text);
    if (k < 0)
        snprintf(err, errlen, "tokenizer failed on the rendered conversation");
    return k;
}

void chat_prompt_log(const char *who, const int32_t *ids, int32_t n)
{
    const char *path = getenv("TOKSCOPE_PROMPT_LOG");
    FILE *f = path && *path ? fopen(path, "a") : NULL;
    if (!f)
        return;
    fprintf(f, "%s ", who);
    for (int32_t i = 0; i < n; i++)
        fprintf(f, i ? ",%d" : "%d", (int)ids[i]);
    fputc('\n', f);
    fclose(f);
}
