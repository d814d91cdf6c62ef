/* The chat prompt every path builds (see chat_prompt.h). */
#include "chat/chat_prompt.h"

#include "chat/reasoning.h"

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
    if (!strcmp(fmt, "raw") || !strcmp(fmt, CHAT_PROMPT_IDS)) /* ids: their text as it is */
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

/* out (grown) += the n bytes at p */
static bool text_add(char **out, size_t *len, const char *p, size_t n)
{
    char *g = realloc(*out, *len + n + 1);
    if (!g)
        return false;
    memcpy(g + *len, p, n);
    *len += n;
    g[*len] = 0;
    *out = g;
    return true;
}

static bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

/* The reasoning markers a continued reply is written between, found as
 * llama.cpp's template analysis finds them (chat-diff-analyzer.cpp,
 * compare_reasoning_presence): an assistant message with reasoning rendered
 * by the template, the reasoning's text located, and around it
 * marker + blanks before ("<think>\n") and blanks + marker + blanks after
 * ("\n</think>\n\n"); a marker is <...> or [...]. Empty when the template
 * does not write reasoning (or with a built-in format). malloc'd. */
static void reasoning_markers(const chat_prompt_src *s, char **start, char **end)
{
    *start = *end = NULL;
    if (strcmp(chat_prompt_format(s), "model") != 0)
        return;
    static const char R[] = "REASON_PART I am thinking END_R";
    const chat_message probe[] = {{"user", "U_USER_MSG Hello END_U", 0},
                                  {CHAT_ROLE_REASONING, R, 0},
                                  {"assistant", "A_ASST_MSG I can help END_A", 0}};
    char err[256];
    size_t len = 0;
    char *out = chat_prompt_render_n(s, probe, 3, false, NULL, 0, &len, err, sizeof err);
    const char *at = out ? strstr(out, R) : NULL;
    if (!at) {
        free(out);
        return;
    }
    /* before: a marker, then blanks, right before the reasoning */
    const char *b = at;
    while (b > out && is_space(b[-1]))
        b--;
    const char *pre = NULL;
    if (b > out && (b[-1] == '>' || b[-1] == ']')) { /* back to its opening: nothing between holds the close */
        const char open = b[-1] == '>' ? '<' : '[', close = b[-1];
        for (size_t i = (size_t)(b - out) - 1; i > 0 && out[i - 1] != close; i--)
            if (out[i - 1] == open) {
                pre = out + i - 1;
                break;
            }
    }
    /* after: blanks, a marker, blanks */
    const char *e = at + strlen(R), *q = e;
    while (*q && is_space(*q))
        q++;
    const char *post_end = NULL;
    if (*q == '<' || *q == '[') {
        const char *c = strchr(q, *q == '<' ? '>' : ']');
        if (c) {
            post_end = c + 1;
            while (*post_end && is_space(*post_end))
                post_end++;
        }
    }
    if (post_end) { /* llama.cpp: both, or the end alone (a reasoning that starts open) */
        *end = strndup(e, (size_t)(post_end - e));
        *start = pre ? strndup(pre, (size_t)(at - pre)) : strdup("");
    }
    free(out);
}

char *chat_prompt_render_prefill(const chat_prompt_src *s, const chat_message *msgs, size_t n, char *warn,
                                 size_t warnlen, size_t *out_len, size_t *cont_at, char *err, size_t errlen)
{
    size_t last = n; /* the last plain message: the assistant's, continued */
    while (last > 0 && pseudo(&msgs[last - 1]))
        last--;
    const chat_message *a = &msgs[last - 1];
    /* its reasoning: the pseudo message right before it */
    const bool has_rsn = last >= 2 && !strcmp(msgs[last - 2].role, CHAT_ROLE_REASONING);
    const chat_message *rsn = has_rsn ? &msgs[last - 2] : NULL;
    /* the conversation without it (template variables kept) */
    chat_message *rest = malloc((n ? n : 1) * sizeof *rest);
    if (!rest) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (&msgs[i] != a && &msgs[i] != rsn)
            rest[k++] = msgs[i];
    size_t l0 = 0, l1 = 0;
    char *no_gen = chat_prompt_render_n(s, rest, k, false, warn, warnlen, &l0, err, errlen);
    char *gen = no_gen ? chat_prompt_render_n(s, rest, k, true, NULL, 0, &l1, err, errlen) : NULL;
    free(rest);
    if (!gen) {
        free(no_gen);
        return NULL;
    }
    /* the generation prompt: what add_generation_prompt adds (llama.cpp's
     * common_chat_template_generation_prompt: past the common prefix) */
    size_t c = 0;
    while (c < l0 && c < l1 && no_gen[c] == gen[c])
        c++;
    char *start_m, *end_m;
    reasoning_markers(s, &start_m, &end_m);
    const char *start = start_m ? start_m : "", *end = end_m ? end_m : "";
    const size_t cl = chat_content_len(a), rl = rsn ? chat_content_len(rsn) : 0;
    /* llama.cpp's "auto": the reasoning is continued when it is all the message holds */
    const bool in_reasoning = cl == 0 && rl > 0;
    const char *g = gen + c;
    size_t gl = l1 - c;
    bool ok = true;
    char *out = no_gen;
    size_t len = l0;
    /* the formats llama.cpp continues in code of their own (chat.cpp,
     * common_chat_params_init_gpt_oss / _gemma4): fixed headers, the
     * reasoning block always written */
    const enum chat_reasoning_style st =
        !strcmp(chat_prompt_format(s), "model") ? chat_reasoning_detect(s->model_template) : CHAT_REASONING_NONE;
    if (st == CHAT_REASONING_HARMONY || st == CHAT_REASONING_GEMMA4) {
        const bool harmony = st == CHAT_REASONING_HARMONY;
        if (!harmony && len >= 8 && !memcmp(out + len - 8, "<turn|>\n", 8))
            ok = text_add(&out, &len, "<|turn>model\n", 13);
        if (cont_at)
            *cont_at = len;
        const char *open = harmony ? "<|start|>assistant<|channel|>analysis<|message|>" : "<|channel>thought\n";
        const char *close = harmony ? "<|end|><|start|>assistant<|channel|>final<|message|>" : "<channel|>";
        ok = ok && text_add(&out, &len, open, strlen(open)) && (!rl || text_add(&out, &len, rsn->content, rl)) &&
             (in_reasoning || text_add(&out, &len, close, strlen(close)));
    } else if (*start) { /* the generation prompt up to its own reasoning start, then the message's */
        const char *at = memmem(g, gl, start, strlen(start));
        ok = text_add(&out, &len, g, at ? (size_t)(at - g) : gl);
        if (cont_at)
            *cont_at = len;
        ok = ok && text_add(&out, &len, start, strlen(start)) && (!rl || text_add(&out, &len, rsn->content, rl)) &&
             (in_reasoning || text_add(&out, &len, end, strlen(end)));
    } else {
        ok = text_add(&out, &len, g, gl);
        if (cont_at)
            *cont_at = len;
    }
    if (ok && !in_reasoning && cl)
        ok = text_add(&out, &len, a->content, cl);
    free(gen);
    free(start_m);
    free(end_m);
    if (!ok) {
        free(out);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    if (out_len)
        *out_len = len;
    return out;
}

bool chat_prompt_continues(const chat_prompt_src *s, const chat_message *msgs, size_t n)
{
    size_t last = n;
    while (last > 0 && pseudo(&msgs[last - 1]))
        last--;
    const char *fmt = chat_prompt_format(s);
    return last > 0 && msgs[last - 1].role && !strcmp(msgs[last - 1].role, "assistant") && strcmp(fmt, "raw") != 0 &&
           strcmp(fmt, CHAT_PROMPT_IDS) != 0;
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
    char rerr[512] = "";
    char *text = chat_prompt_continues(s, msgs, n)
                     ? chat_prompt_render_prefill(s, msgs, n, warn, warnlen, len, NULL, rerr, sizeof rerr)
                     : chat_prompt_render_n(s, msgs, n, true, warn, warnlen, len, rerr, sizeof rerr);
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

/* CHAT_PROMPT_IDS: the ids the plain messages' contents list (decimal,
 * separated by blanks or commas), malloc'd (out NULL: counted only); -1
 * with err set when one is not a number or outside the vocabulary. */
static int32_t prompt_ids(const chat_prompt_src *s, const chat_message *msgs, size_t n, int32_t **out, char *err,
                          size_t errlen)
{
    int32_t k = 0, cap = 0, *ids = NULL;
    const int32_t n_vocab = tokenizer_n_vocab(s->tok);
    for (size_t i = 0; i < n; i++) {
        if (pseudo(&msgs[i]) || !msgs[i].content)
            continue;
        const char *p = msgs[i].content, *end = p + chat_content_len(&msgs[i]);
        while (p < end) {
            if (*p == ' ' || *p == ',' || *p == '\n') {
                p++;
                continue;
            }
            char *e;
            const long v = strtol(p, &e, 10);
            if (e == p || e > end || v < 0 || v >= n_vocab) {
                free(ids);
                snprintf(err, errlen, "a prompt token is not an id of the vocabulary (0..%d)", (int)n_vocab - 1);
                return -1;
            }
            if (out && k == cap) {
                cap = cap ? 2 * cap : 64;
                int32_t *g = realloc(ids, (size_t)cap * sizeof *g);
                if (!g) {
                    free(ids);
                    snprintf(err, errlen, "out of memory");
                    return -1;
                }
                ids = g;
            }
            if (out)
                ids[k] = (int32_t)v;
            k++;
            p = e;
        }
    }
    if (out)
        *out = ids;
    return k;
}

int32_t *chat_prompt_tokenize(const chat_prompt_src *s, const chat_message *msgs, size_t n, int32_t *np, char *warn,
                              size_t warnlen, char *err, size_t errlen)
{
    if (!strcmp(chat_prompt_format(s), CHAT_PROMPT_IDS)) {
        int32_t *ids = NULL;
        const int32_t k = s->tok ? prompt_ids(s, msgs, n, &ids, err, errlen) : -1;
        if (!s->tok)
            snprintf(err, errlen, "the model has no usable tokenizer");
        if (k < 0)
            return NULL;
        if (!ids && !(ids = malloc(sizeof *ids))) {
            snprintf(err, errlen, "out of memory");
            return NULL;
        }
        *np = k;
        if (warn && warnlen)
            warn[0] = 0;
        return ids;
    }
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
    if (!strcmp(chat_prompt_format(s), CHAT_PROMPT_IDS)) {
        if (!s->tok) {
            snprintf(err, errlen, "the model has no usable tokenizer");
            return -1;
        }
        return prompt_ids(s, msgs, n, NULL, err, errlen);
    }
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
