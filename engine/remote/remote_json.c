/* The remote backend's JSON: what each server kind takes, the request body,
 * the streamed chunks and error bodies (remote.h). cJSON does the parsing. */
#include "remote/remote.h"

#include <cjson/cJSON.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *remote_kind_name(enum remote_kind k)
{
    switch (k) {
    case REMOTE_LLAMA:
        return "llama-server";
    case REMOTE_VLLM:
        return "vllm";
    case REMOTE_OLLAMA:
        return "ollama";
    case REMOTE_TOKSCOPE:
        return "tokscope";
    default:
        return "openai";
    }
}

enum remote_kind remote_kind_from_models(const char *json)
{
    enum remote_kind k = REMOTE_UNKNOWN;
    cJSON *root = json ? cJSON_Parse(json) : NULL;
    const cJSON *m = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(root, "data"), 0);
    const char *by = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(m, "owned_by"));
    if (by && !strcmp(by, "vllm"))
        k = REMOTE_VLLM;
    else if (by && !strcmp(by, "llamacpp"))
        k = REMOTE_LLAMA;
    else if (by && !strcmp(by, "tokscope"))
        k = REMOTE_TOKSCOPE;
    else if (by && (!strcmp(by, "library") || !strcmp(by, "ollama")))
        k = REMOTE_OLLAMA;
    cJSON_Delete(root);
    return k;
}

/* By the servers' documentation of their OpenAI-compatible endpoint:
 * llama-server takes llama.cpp's whole sampler set; vLLM takes top_k, min_p
 * and repetition_penalty but no typical_p or penalty window; ollama's /v1
 * and OpenAI itself take only OpenAI's fields (the others are not sent). */
#define FURTHER_MDX "top_n_sigma xtc_probability xtc_threshold mirostat mirostat_tau mirostat_eta"
#define FURTHER_DRY "dry_multiplier dry_base dry_allowed_length dry_penalty_last_n"
const char *remote_ignored_params(enum remote_kind k)
{
    /* after the panel's: llama.cpp's further samplers (/set), which llama-server
     * runs, tokscope serve too but DRY, the others not at all */
    switch (k) {
    case REMOTE_LLAMA:
        return "";
    case REMOTE_TOKSCOPE:
        return FURTHER_DRY;
    case REMOTE_VLLM:
        return "typical_p repeat_last_n " FURTHER_MDX " " FURTHER_DRY;
    default:
        return "top_k min_p typical_p repeat_penalty repeat_last_n " FURTHER_MDX " " FURTHER_DRY;
    }
}

/* llama-server prefills a last assistant message, vLLM with
 * continue_final_message, ollama continues it; OpenAI's API does not, and
 * tokscope serve renders it as a finished turn */
bool remote_continues(enum remote_kind k) { return k == REMOTE_LLAMA || k == REMOTE_VLLM || k == REMOTE_OLLAMA; }

int32_t remote_max_top(enum remote_kind k)
{
    (void)k; /* OpenAI's limit, which vLLM, ollama and tokscope serve keep; llama-server clamps n_probs itself */
    return 20;
}

static bool takes(enum remote_kind k, const char *name)
{
    const char *ign = remote_ignored_params(k);
    size_t n = strlen(name);
    for (const char *p = strstr(ign, name); p; p = strstr(p + 1, name))
        if ((p == ign || p[-1] == ' ') && (p[n] == ' ' || p[n] == 0))
            return false;
    return true;
}

/* floats as the panel shows them (0.95, not 0.949999988) */
static void add_float(cJSON *o, const char *key, float v)
{
    cJSON_AddNumberToObject(o, key, round((double)v * 1e6) / 1e6);
}

/* s[0..n) as the string key, escaped (chat_bytes_escape): a NUL of a reply
 * goes out as "\u0000" (chat_bytes_json_out), the bytes after it too. */
static void add_bytes_str(cJSON *o, const char *key, const char *s, size_t n)
{
    char *e = chat_bytes_escape(s, n);
    cJSON_AddStringToObject(o, key, e ? e : "");
    free(e);
}

static void add_str(cJSON *o, const char *key, const char *s) { add_bytes_str(o, key, s, strlen(s)); }

char *remote_body(enum remote_kind k, const char *model, const chat_message *msgs, size_t n,
                  const char *prefix, const sampler_params *sp, bool post_probs)
{
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    if (model && *model)
        add_str(o, "model", model);
    cJSON *arr = cJSON_AddArrayToObject(o, "messages");
    for (size_t i = 0; arr && i < n; i++) {
        const char *role = msgs[i].role ? msgs[i].role : "user";
        if (!strcmp(role, CHAT_ROLE_REASONING))
            continue; /* earlier turns' reasoning: the servers drop it from the history too */
        if (!strcmp(role, CHAT_ROLE_VARS)) {
            /* the template variables: enable_thinking goes as chat_template_kwargs
             * (llama-server, vLLM), reasoning_effort as OpenAI's field */
            cJSON *v = cJSON_Parse(msgs[i].content ? msgs[i].content : "");
            cJSON *think = cJSON_DetachItemFromObjectCaseSensitive(v, "enable_thinking");
            cJSON *effort = cJSON_DetachItemFromObjectCaseSensitive(v, "reasoning_effort");
            if (think)
                cJSON_AddItemToObject(cJSON_AddObjectToObject(o, "chat_template_kwargs"), "enable_thinking",
                                      think);
            if (effort)
                cJSON_AddItemToObject(o, "reasoning_effort", effort);
            cJSON_Delete(v);
            continue;
        }
        cJSON *m = cJSON_CreateObject();
        add_str(m, "role", role);
        add_bytes_str(m, "content", msgs[i].content ? msgs[i].content : "", chat_content_len(&msgs[i]));
        cJSON_AddItemToArray(arr, m);
    }
    if (prefix && arr) { /* a branch: the server continues this assistant message */
        cJSON *m = cJSON_CreateObject();
        cJSON_AddStringToObject(m, "role", "assistant");
        add_str(m, "content", prefix);
        cJSON_AddItemToArray(arr, m);
        if (k == REMOTE_VLLM) {
            cJSON_AddBoolToObject(o, "continue_final_message", true);
            cJSON_AddBoolToObject(o, "add_generation_prompt", false);
        }
    }
    cJSON_AddBoolToObject(o, "stream", true);
    cJSON *so = cJSON_AddObjectToObject(o, "stream_options");
    cJSON_AddBoolToObject(so, "include_usage", true);
    cJSON_AddBoolToObject(o, "logprobs", true);
    int32_t top = sp->n_top < 0 ? 0 : sp->n_top;
    if (top > remote_max_top(k))
        top = remote_max_top(k);
    cJSON_AddNumberToObject(o, "top_logprobs", top);
    /* llama-server copies the body's other fields into its task parameters
     * (oaicompat_chat_params_parse, tools/server/server-common.cpp), so its
     * native post_sampling_probs works here too; the others do not know it */
    if (post_probs && k == REMOTE_LLAMA)
        cJSON_AddBoolToObject(o, "post_sampling_probs", true);
    add_float(o, "temperature", sp->temp);
    add_float(o, "top_p", sp->top_p);
    add_float(o, "presence_penalty", sp->presence_penalty);
    add_float(o, "frequency_penalty", sp->frequency_penalty);
    if (sp->seed_set)
        cJSON_AddNumberToObject(o, "seed", (double)sp->seed);
    if (sp->n_predict >= 0)
        cJSON_AddNumberToObject(o, "max_tokens", sp->n_predict);
    if (takes(k, "top_k")) /* vLLM's "off" is -1 */
        cJSON_AddNumberToObject(o, "top_k", sp->top_k > 0 ? sp->top_k : k == REMOTE_VLLM ? -1 : 0);
    if (takes(k, "min_p"))
        add_float(o, "min_p", sp->min_p);
    if (takes(k, "typical_p"))
        add_float(o, "typical_p", sp->typical_p);
    if (takes(k, "repeat_penalty"))
        add_float(o, k == REMOTE_VLLM ? "repetition_penalty" : "repeat_penalty", sp->repeat_penalty);
    if (takes(k, "repeat_last_n"))
        cJSON_AddNumberToObject(o, "repeat_last_n", sp->repeat_last_n);
    /* the samplers outside the panel, when set (they were never sent) */
    const sampler_params d = sampler_default_params();
    if (takes(k, "top_n_sigma") && sp->top_n_sigma != d.top_n_sigma)
        add_float(o, "top_n_sigma", sp->top_n_sigma);
    if (takes(k, "xtc_probability") && sp->xtc_probability != d.xtc_probability) {
        add_float(o, "xtc_probability", sp->xtc_probability);
        add_float(o, "xtc_threshold", sp->xtc_threshold);
    }
    if (takes(k, "mirostat") && sp->mirostat != d.mirostat) {
        cJSON_AddNumberToObject(o, "mirostat", sp->mirostat);
        add_float(o, "mirostat_tau", sp->mirostat_tau);
        add_float(o, "mirostat_eta", sp->mirostat_eta);
    }
    if (takes(k, "dry_multiplier") && sp->dry_multiplier != d.dry_multiplier) {
        add_float(o, "dry_multiplier", sp->dry_multiplier);
        add_float(o, "dry_base", sp->dry_base);
        cJSON_AddNumberToObject(o, "dry_allowed_length", sp->dry_allowed_length);
        cJSON_AddNumberToObject(o, "dry_penalty_last_n", sp->dry_penalty_last_n);
    }
    if (sp->n_stop > 0) {
        cJSON *st = cJSON_AddArrayToObject(o, "stop");
        for (int32_t i = 0; i < sp->n_stop && i < SAMPLER_MAX_STOP; i++) {
            char *e = chat_bytes_escape(sp->stop[i], strlen(sp->stop[i]));
            cJSON_AddItemToArray(st, cJSON_CreateString(e ? e : ""));
            free(e);
        }
    }
    char *s = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return chat_bytes_json_out(s);
}

/* A logprobs entry's exact bytes ("bytes": [..], else "token"), at most cap - 1. */
static size_t entry_bytes(const cJSON *e, char *out, size_t cap)
{
    const cJSON *b = cJSON_GetObjectItemCaseSensitive(e, "bytes");
    size_t n = 0;
    if (cJSON_IsArray(b) && cJSON_GetArraySize(b) > 0) {
        const cJSON *x;
        cJSON_ArrayForEach(x, b)
        {
            if (n + 1 < cap && cJSON_IsNumber(x))
                out[n++] = (char)(unsigned char)x->valueint;
        }
    } else {
        const char *t = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "token"));
        if (t)
            for (; *t && n + 1 < cap; t++)
                out[n++] = *t;
        out[n] = 0;
        return chat_bytes_unescape(out); /* the chunk was parsed escaped (remote_parse_chunk) */
    }
    out[n] = 0;
    return n;
}

static float entry_logprob(const cJSON *e)
{
    const cJSON *lp = cJSON_GetObjectItemCaseSensitive(e, "logprob");
    /* llama-server sends log(0) as the float's lowest value (its JSON
     * library would print -inf as null): that is -inf, p = 0 */
    return cJSON_IsNumber(lp) && lp->valuedouble > -(double)FLT_MAX ? (float)lp->valuedouble : -INFINITY;
}

static bool get_float(const cJSON *o, const char *key, float *out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!cJSON_IsNumber(v))
        return false;
    *out = (float)v->valuedouble;
    return true;
}

static void fill_piece(remote_piece *p, const cJSON *e)
{
    p->has_prob = true;
    p->logprob = entry_logprob(e);
    /* llama-server with post_sampling_probs: "prob" and "top_probs" instead
     * of "logprob" and "top_logprobs" (completion_token_output::to_json,
     * tools/server/server-task.cpp) */
    p->post = !cJSON_GetObjectItemCaseSensitive(e, "logprob") && get_float(e, "prob", &p->prob);
    if (p->post) {
        p->n_top = 0;
        const cJSON *tops = cJSON_GetObjectItemCaseSensitive(e, "top_probs"), *t;
        cJSON_ArrayForEach(t, tops)
        {
            if (p->n_top >= SAMPLER_MAX_TOP)
                break;
            entry_bytes(t, p->top[p->n_top].text, sizeof p->top[p->n_top].text);
            p->top[p->n_top].logprob = -INFINITY;
            if (!get_float(t, "prob", &p->top[p->n_top].prob))
                p->top[p->n_top].prob = 0;
            p->n_top++;
        }
        p->has_ext = false;
        return;
    }
    p->has_ext = get_float(e, "p_raw", &p->p_raw) && get_float(e, "p_post", &p->p_post);
    if (p->has_ext) {
        p->logit = p->logprob;
        get_float(e, "logit", &p->logit);
        p->entropy_raw = p->entropy_post = -1;
        get_float(e, "entropy_raw", &p->entropy_raw);
        get_float(e, "entropy_post", &p->entropy_post);
    }
    p->n_top = 0;
    const cJSON *tops = cJSON_GetObjectItemCaseSensitive(e, "top_logprobs"), *t;
    cJSON_ArrayForEach(t, tops)
    {
        if (p->n_top >= SAMPLER_MAX_TOP)
            break;
        entry_bytes(t, p->top[p->n_top].text, sizeof p->top[p->n_top].text);
        p->top[p->n_top].logprob = entry_logprob(t);
        if (p->has_ext) {
            float *x = &p->top[p->n_top].p_raw, *y = &p->top[p->n_top].p_post, *z = &p->top[p->n_top].logit;
            *x = *y = expf(p->top[p->n_top].logprob);
            *z = p->top[p->n_top].logprob;
            get_float(t, "p_raw", x);
            get_float(t, "p_post", y);
            get_float(t, "logit", z);
        }
        p->n_top++;
    }
}

/* Text (reasoning or content) with the logprobs entries that came with it:
 * one piece per entry when their bytes spell the text, else the text as one
 * piece (with the entry's numbers when there is exactly one). */
static void report_text(const remote_chunk_cb *cb, const char *text, size_t len, const cJSON *lp, bool reasoning)
{
    if (!len)
        return;
    remote_piece *p = calloc(1, sizeof *p);
    if (!p)
        return;
    int n_lp = cJSON_IsArray(lp) ? cJSON_GetArraySize(lp) : 0;
    bool spelled = n_lp > 0;
    size_t off = 0;
    char buf[4096];
    for (int i = 0; spelled && i < n_lp; i++) {
        size_t bl = entry_bytes(cJSON_GetArrayItem(lp, i), buf, sizeof buf);
        if (off + bl > len || memcmp(text + off, buf, bl) != 0)
            spelled = false;
        off += bl;
    }
    if (spelled && off == len) {
        off = 0;
        for (int i = 0; i < n_lp; i++) {
            const cJSON *e = cJSON_GetArrayItem(lp, i);
            size_t bl = entry_bytes(e, buf, sizeof buf);
            fill_piece(p, e);
            p->text = text + off;
            p->len = bl;
            off += bl;
            if (bl)
                cb->piece(cb->user, p, reasoning);
        }
    } else {
        if (n_lp == 1)
            fill_piece(p, cJSON_GetArrayItem(lp, 0));
        p->text = text;
        p->len = len;
        cb->piece(cb->user, p, reasoning);
    }
    free(p);
}

void remote_error_message(const char *body, char *out, size_t cap)
{
    cJSON *root = body ? cJSON_Parse(body) : NULL;
    const cJSON *err = cJSON_GetObjectItemCaseSensitive(root, "error");
    const char *msg = cJSON_GetStringValue(err);
    if (!msg)
        msg = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(err, "message"));
    if (!msg)
        msg = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(root, "message"));
    if (!msg)
        msg = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(root, "detail"));
    if (!msg && !root)
        msg = body;
    snprintf(out, cap, "%s", msg ? msg : "");
    for (char *c = out; *c; c++) /* one line */
        if (*c == '\n' || *c == '\r' || *c == '\t')
            *c = ' ';
    cJSON_Delete(root);
}

bool remote_parse_chunk(const char *data, size_t n, const remote_chunk_cb *cb)
{
    size_t en = 0; /* a "\u0000" in a delta is a NUL of the reply: its texts are unescaped with lengths */
    char *ed = chat_bytes_json_in(data, n, &en);
    cJSON *root = ed ? cJSON_ParseWithLength(ed, en) : NULL;
    free(ed);
    if (!root)
        return false;
    const cJSON *err = cJSON_GetObjectItemCaseSensitive(root, "error");
    const char *obj = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(root, "object"));
    if (err || (obj && !strcmp(obj, "error"))) {
        char *s = cJSON_PrintUnformatted(root);
        char msg[ENGINE_MSG_MAX];
        remote_error_message(s, msg, sizeof msg);
        free(s);
        cb->error(cb->user, msg[0] ? msg : "the server reported an error");
        cJSON_Delete(root);
        return true;
    }
    const cJSON *ch = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(root, "choices"), 0);
    const cJSON *delta = cJSON_GetObjectItemCaseSensitive(ch, "delta");
    const cJSON *lp =
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(ch, "logprobs"), "content");
    char *reasoning = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(delta, "reasoning_content"));
    if (!reasoning)
        reasoning = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(delta, "reasoning"));
    char *content = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(delta, "content"));
    const size_t rl = reasoning ? chat_bytes_unescape(reasoning) : 0;
    const size_t cl = content ? chat_bytes_unescape(content) : 0;
    const bool has_content = cl > 0;
    if (rl)
        report_text(cb, reasoning, rl, has_content ? NULL : lp, true);
    if (has_content)
        report_text(cb, content, cl, lp, false);
    const char *fin = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(ch, "finish_reason"));
    if (fin && cb->finish)
        cb->finish(cb->user, fin);
    const cJSON *usage = cJSON_GetObjectItemCaseSensitive(root, "usage");
    const cJSON *timings = cJSON_GetObjectItemCaseSensitive(root, "timings"); /* llama-server */
    if ((cJSON_IsObject(usage) || cJSON_IsObject(timings)) && cb->usage) {
        const cJSON *pt = cJSON_GetObjectItemCaseSensitive(usage, "prompt_tokens");
        const cJSON *ct = cJSON_GetObjectItemCaseSensitive(usage, "completion_tokens");
        const cJSON *pps = cJSON_GetObjectItemCaseSensitive(timings, "prompt_per_second");
        const cJSON *pn = cJSON_GetObjectItemCaseSensitive(timings, "prompt_n");
        cb->usage(cb->user,
                  cJSON_IsNumber(pt)   ? pt->valueint
                  : cJSON_IsNumber(pn) ? pn->valueint
                                       : -1,
                  cJSON_IsNumber(ct) ? ct->valueint : -1, cJSON_IsNumber(pps) ? pps->valuedouble : 0);
    }
    cJSON_Delete(root);
    return true;
}
