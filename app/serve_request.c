/* A request body -> serve_request. OpenAI's fields and llama-server's
 * sampler extras; fields we do not know are ignored (clients send many),
 * fields we know with the wrong type or range are refused, naming them. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "serve.h"

typedef struct pctx {
    char *err;
    size_t errlen;
    char *param;
    size_t paramlen;
} pctx;

__attribute__((format(printf, 3, 4))) static int bad(pctx *c, const char *field, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->err, c->errlen, fmt, ap);
    va_end(ap);
    snprintf(c->param, c->paramlen, "%s", field);
    return 400;
}

/* The field, or NULL when absent or JSON null (clients send null for "unset"). */
static const cJSON *field(const cJSON *o, const char *name)
{
    const cJSON *f = cJSON_GetObjectItemCaseSensitive(o, name);
    return f && !cJSON_IsNull(f) ? f : NULL;
}

/* A number field in [lo, hi]: 0 ok (set *out when present), else 400. */
static int get_num(pctx *c, const cJSON *o, const char *name, double lo, double hi, float *out)
{
    const cJSON *f = field(o, name);
    if (!f)
        return 0;
    if (!cJSON_IsNumber(f) || !isfinite(f->valuedouble))
        return bad(c, name, "'%s' must be a number", name);
    if (f->valuedouble < lo || f->valuedouble > hi)
        return bad(c, name, "'%s' must be between %g and %g", name, lo, hi);
    *out = (float)f->valuedouble;
    return 0;
}

static int get_int(pctx *c, const cJSON *o, const char *name, double lo, double hi, long long *out, bool *set)
{
    const cJSON *f = field(o, name);
    if (!f)
        return 0;
    const double v = cJSON_IsNumber(f) ? f->valuedouble : NAN;
    if (!isfinite(v) || v != floor(v))
        return bad(c, name, "'%s' must be an integer", name);
    if (v < lo || v > hi)
        return bad(c, name, "'%s' must be between %.0f and %.0f", name, lo, hi);
    *out = (long long)v;
    if (set)
        *set = true;
    return 0;
}

static int get_bool(pctx *c, const cJSON *o, const char *name, bool *out)
{
    const cJSON *f = field(o, name);
    if (!f)
        return 0;
    if (!cJSON_IsBool(f))
        return bad(c, name, "'%s' must be a boolean", name);
    *out = cJSON_IsTrue(f);
    return 0;
}

static int get_i32(pctx *c, const cJSON *o, const char *name, double lo, double hi, int32_t *out)
{
    long long v = 0;
    bool set = false;
    int rc = get_int(c, o, name, lo, hi, &v, &set);
    if (!rc && set)
        *out = (int32_t)v;
    return rc;
}

static int parse_stop(pctx *c, const cJSON *o, sampler_params *sp)
{
    const cJSON *f = field(o, "stop");
    if (!f)
        return 0;
    const cJSON *one[1] = {f};
    int n = cJSON_IsString(f) ? 1 : cJSON_IsArray(f) ? cJSON_GetArraySize(f) : -1;
    if (n < 0)
        return bad(c, "stop", "'stop' must be a string or an array of strings");
    if (n > SAMPLER_MAX_STOP)
        return bad(c, "stop", "'stop' takes at most %d strings", SAMPLER_MAX_STOP);
    sp->n_stop = 0;
    const cJSON *s = cJSON_IsString(f) ? one[0] : f->child;
    for (int i = 0; i < n; i++, s = cJSON_IsString(f) ? s : s->next) {
        if (!cJSON_IsString(s))
            return bad(c, "stop", "'stop' must be a string or an array of strings");
        chat_bytes_unescape(s->valuestring); /* a NUL ends a stop string */
        size_t l = strlen(s->valuestring);
        if (l == 0)
            continue;
        if (l >= SAMPLER_STOP_LEN)
            return bad(c, "stop", "a stop string is longer than %d bytes", SAMPLER_STOP_LEN - 1);
        memcpy(sp->stop[sp->n_stop++], s->valuestring, l + 1);
    }
    return 0;
}

/* llama-server's DRY fields: a dry_base below 1 is its default 1.75;
 * dry_sequence_breakers replaces the default breakers and must be a
 * non-empty array of strings (llama-server's error too); more than
 * SAMPLER_MAX_DRY_BRK is refused. */
static int parse_dry(pctx *c, const cJSON *o, sampler_params *sp)
{
    int rc;
    float base = sp->dry_base;
    if ((rc = get_num(c, o, "dry_multiplier", -1e9, 1e9, &sp->dry_multiplier)) ||
        (rc = get_num(c, o, "dry_base", -1e9, 1e9, &base)) ||
        (rc = get_i32(c, o, "dry_allowed_length", 0, 2147483647.0, &sp->dry_allowed_length)) ||
        (rc = get_i32(c, o, "dry_penalty_last_n", 0, 2147483647.0, &sp->dry_penalty_last_n)))
        return rc;
    sp->dry_base = base < 1.0f ? sampler_default_params().dry_base : base;
    const cJSON *f = field(o, "dry_sequence_breakers");
    if (!f)
        return 0;
    if (!cJSON_IsArray(f) || !f->child)
        return bad(c, "dry_sequence_breakers", "dry_sequence_breakers must be a non-empty array of strings");
    sp->n_dry_breakers = 0;
    for (const cJSON *b = f->child; b; b = b->next) {
        if (!cJSON_IsString(b))
            return bad(c, "dry_sequence_breakers", "dry_sequence_breakers must be a non-empty array of strings");
        if (!sampler_params_add_dry_breaker(sp, b->valuestring))
            return bad(c, "dry_sequence_breakers", "more than %d DRY sequence breakers", SAMPLER_MAX_DRY_BRK);
    }
    return 0;
}

static int parse_sampling(pctx *c, const cJSON *o, serve_request *r)
{
    sampler_params *sp = &r->sp;
    int rc = 0;
    long long v = 0;
    bool set = false;
    if ((rc = get_num(c, o, "temperature", 0, 1e6, &sp->temp)) || (rc = get_num(c, o, "top_p", 0, 1, &sp->top_p)) ||
        (rc = get_i32(c, o, "top_k", 0, 1e9, &sp->top_k)) || (rc = get_num(c, o, "min_p", 0, 1, &sp->min_p)) ||
        (rc = get_num(c, o, "typical_p", 0, 1, &sp->typical_p)) ||
        (rc = get_num(c, o, "repeat_penalty", 0, 1e6, &sp->repeat_penalty)) ||
        (rc = get_i32(c, o, "repeat_last_n", -1, 1e9, &sp->repeat_last_n)) ||
        (rc = get_num(c, o, "presence_penalty", -2, 2, &sp->presence_penalty)) ||
        (rc = get_num(c, o, "frequency_penalty", -2, 2, &sp->frequency_penalty)))
        return rc;
    /* llama-server's further samplers, which the engine runs as llama.cpp does
     * (they were once ignored here: `mirostat: 2` gave the plain chain's reply) */
    if ((rc = get_num(c, o, "top_n_sigma", -1e6, 1e6, &sp->top_n_sigma)) ||
        (rc = get_num(c, o, "xtc_probability", 0, 1, &sp->xtc_probability)) ||
        (rc = get_num(c, o, "xtc_threshold", 0, 1, &sp->xtc_threshold)) ||
        (rc = get_i32(c, o, "mirostat", 0, 2, &sp->mirostat)) ||
        (rc = get_num(c, o, "mirostat_tau", 0, 1e6, &sp->mirostat_tau)) ||
        (rc = get_num(c, o, "mirostat_eta", 0, 1e6, &sp->mirostat_eta)))
        return rc;
    if (sp->mirostat == 1)
        return bad(c, "mirostat", "mirostat 1 is not supported (0: off, 2: mirostat v2)");
    if ((rc = parse_dry(c, o, sp)))
        return rc;
    if ((rc = get_int(c, o, "seed", -1, 9007199254740992.0, &v, &set)))
        return rc;
    if (set) {
        sp->seed_set = v >= 0;
        sp->seed = v >= 0 ? (uint64_t)v : 0;
    }
    /* max_tokens, OpenAI's newer max_completion_tokens and llama-server's n_predict, on both
     * endpoints as llama-server's aliases; the later ones here win, as its first found does */
    sp->n_predict = -1;
    if ((rc = get_i32(c, o, "max_tokens", 0, 1e9, &sp->n_predict)) ||
        (rc = get_i32(c, o, "max_completion_tokens", 0, 1e9, &sp->n_predict)) ||
        (rc = get_i32(c, o, "n_predict", -1, 1e9, &sp->n_predict)))
        return rc;
    /* 0: one token, as llama-server 34af94cd gives (its docs say none; its
     * limit check, `n_gen > 0 && !has_budget()`, runs after the first token
     * is drawn and counted, so 0 ends the reply after one, "length") */
    if (sp->n_predict == 0)
        sp->n_predict = 1;
    /* llama-server's: the end-of-generation tokens are never drawn (fixed-length replies) */
    if ((rc = get_bool(c, o, "ignore_eos", &sp->ignore_eos)))
        return rc;
    int32_t n = 1;
    if ((rc = get_i32(c, o, "n", 1, 1e9, &n)))
        return rc;
    if (n != 1)
        return bad(c, "n", "only n = 1 is supported (one engine, one reply per request)");
    return parse_stop(c, o, sp);
}

static int bias_add(pctx *c, serve_request *r, const cJSON *key, const char *skey, const cJSON *val)
{
    float b;
    if (cJSON_IsNumber(val) && isfinite(val->valuedouble))
        b = (float)val->valuedouble; /* nlohmann's get<float>: the double rounded */
    else if (cJSON_IsFalse(val))
        b = -INFINITY;
    else
        return bad(c, "logit_bias", "a logit_bias value is a number or false");
    serve_bias_in in = {-1, NULL, b};
    if (key) { /* an array's [token, bias] */
        if (cJSON_IsNumber(key) && key->valuedouble == floor(key->valuedouble) && fabs(key->valuedouble) < 1e15)
            in.id = (int64_t)key->valuedouble;
        else if (cJSON_IsString(key))
            skey = key->valuestring;
        else
            return bad(c, "logit_bias", "a logit_bias token is an id or a text");
    }
    if (skey) {
        char *end;
        long long id = strtoll(skey, &end, 10);
        if (!*end && !key)
            in.id = id; /* an object's key that is all digits: an id, as llama-server's strtol */
        else if (!(in.text = strdup(skey)))
            return bad(c, "logit_bias", "out of memory");
    }
    serve_bias_in *g = realloc(r->bias_in, (r->n_bias_in + 1) * sizeof *g);
    if (!g) {
        free(in.text);
        return bad(c, "logit_bias", "out of memory");
    }
    r->bias_in = g;
    r->bias_in[r->n_bias_in++] = in;
    return 0;
}

/* llama-server's logit_bias: [[token, bias], ...] or {"token": bias}, in
 * order (its JSON keeps an object's keys in order; a key given twice keeps
 * its first place and its last value); a token is an id or a text, a bias a
 * number or false (banned). */
static int parse_bias(pctx *c, const cJSON *o, serve_request *r)
{
    const cJSON *lb = field(o, "logit_bias");
    int rc;
    if (!lb || cJSON_IsNull(lb))
        return 0;
    if (cJSON_GetArraySize(lb) > SAMPLER_MAX_BIAS)
        return bad(c, "logit_bias", "logit_bias holds more than %d entries", SAMPLER_MAX_BIAS);
    const cJSON *el;
    if (cJSON_IsArray(lb)) {
        cJSON_ArrayForEach(el, lb)
        {
            if (!cJSON_IsArray(el) || cJSON_GetArraySize(el) != 2)
                return bad(c, "logit_bias", "logit_bias as an array holds [token, bias] pairs");
            if ((rc = bias_add(c, r, cJSON_GetArrayItem(el, 0), NULL, cJSON_GetArrayItem(el, 1))))
                return rc;
        }
        return 0;
    }
    if (!cJSON_IsObject(lb))
        return bad(c, "logit_bias", "logit_bias is an object of token: bias or an array of [token, bias]");
    cJSON_ArrayForEach(el, lb)
    {
        bool seen = false;
        for (const cJSON *p = lb->child; p != el && !seen; p = p->next)
            seen = !strcmp(p->string, el->string);
        if (seen)
            continue;
        const cJSON *last = el;
        for (const cJSON *q = el->next; q; q = q->next)
            if (!strcmp(q->string, el->string))
                last = q;
        if ((rc = bias_add(c, r, NULL, el->string, last)))
            return rc;
    }
    return 0;
}

static int parse_logprobs(pctx *c, const cJSON *o, serve_request *r)
{
    int rc;
    const cJSON *lp = field(o, "logprobs");
    if (r->chat) {
        if ((rc = get_bool(c, o, "logprobs", &r->logprobs)) ||
            (rc = get_i32(c, o, "top_logprobs", 0, SERVE_MAX_TOP, &r->top_logprobs)))
            return rc;
        if (field(o, "top_logprobs") && !r->logprobs)
            return bad(c, "top_logprobs", "'top_logprobs' needs 'logprobs' set to true");
    } else if (lp) { /* the legacy shape: logprobs is the number of alternatives */
        if ((rc = get_i32(c, o, "logprobs", 0, SERVE_MAX_TOP, &r->top_logprobs)))
            return rc;
        r->logprobs = true;
    }
    /* llama-server's n_probs: alternatives per token, logprobs implied */
    int32_t n_probs = -1;
    if ((rc = get_i32(c, o, "n_probs", 0, SERVE_MAX_TOP, &n_probs)) ||
        (rc = get_bool(c, o, "post_sampling_probs", &r->post_sampling)))
        return rc;
    /* llama-server's cache_prompt (default true): false evaluates the whole
     * prompt again, so a reply's bits do not depend on what came before it
     * (a reused prefix is evaluated in another batch, which rounds otherwise) */
    bool cache = true;
    if ((rc = get_bool(c, o, "cache_prompt", &cache)))
        return rc;
    r->no_reuse = !cache;
    if (n_probs > 0) {
        r->logprobs = true;
        if (n_probs > r->top_logprobs)
            r->top_logprobs = n_probs;
    }
    r->sp.n_top = r->top_logprobs;
    return 0;
}

/* A number field's value (dflt when absent); 400 naming it when it is not a number. */
static int num_or(pctx *c, const cJSON *o, const char *name, double dflt, double *out)
{
    const cJSON *f = field(o, name);
    *out = dflt;
    if (!f)
        return 0;
    if (!cJSON_IsNumber(f) || !isfinite(f->valuedouble))
        return bad(c, name, "'%s' must be a number", name);
    *out = f->valuedouble;
    return 0;
}

/* A string, array or object that holds something (an empty one is "none"). */
static bool has_content(const cJSON *f)
{
    if (!f)
        return false;
    if (cJSON_IsString(f))
        return f->valuestring[0] != 0;
    if (cJSON_IsArray(f) || cJSON_IsObject(f))
        return f->child != NULL;
    return !cJSON_IsFalse(f);
}

/* llama-server's sampler and output fields that tokscope does not run, and
 * OpenAI's tool and audio fields: any of them at a value that changes
 * llama-server's reply is refused naming it; the values llama-server treats
 * as "off" (its defaults) pass, so a client that sends every field does not
 * break. Each entry: the field and the largest value that is still off. */
static int refuse_llama_extras(pctx *c, const cJSON *o)
{
    static const struct {
        const char *name;
        double dflt, off_max; /* off when value <= off_max */
        const char *what;
    } nums[] = {
        {"dynatemp_range", 0, 0, "dynamic temperature"},
        {"min_keep", 0, 1, "min_keep"},
        {"n_indent", 0, 0, "n_indent"},
        {"t_max_predict_ms", 0, 0, "a time limit"},
        {"n_cmpl", 1, 1, "more than one completion"},
        {"reasoning_budget_tokens", -1, -1, "a reasoning budget"},
    };
    double v;
    int rc;
    for (size_t i = 0; i < sizeof nums / sizeof nums[0]; i++) {
        if ((rc = num_or(c, o, nums[i].name, nums[i].dflt, &v)))
            return rc;
        if (v > nums[i].off_max)
            return bad(c, nums[i].name, "%s ('%s') is not supported by tokscope serve", nums[i].what, nums[i].name);
    }
    /* json_schema at all: llama-server turns even {} into a grammar (any JSON value) */
    if (field(o, "json_schema"))
        return bad(c, "json_schema", "'json_schema' is not supported by tokscope serve");
    static const char *const things[] = {"grammar", "samplers", "lora", "functions", "audio", NULL};
    for (int i = 0; things[i]; i++)
        if (has_content(field(o, things[i])))
            return bad(c, things[i], "'%s' is not supported by tokscope serve", things[i]);
    if (field(o, "web_search_options"))
        return bad(c, "web_search_options", "'web_search_options' is not supported by tokscope serve");
    static const char *const flags[] = {"return_tokens", "continue_final_message", NULL};
    for (int i = 0; flags[i]; i++) {
        bool on = false;
        if ((rc = get_bool(c, o, flags[i], &on)))
            return rc;
        if (on)
            return bad(c, flags[i], "'%s' is not supported by tokscope serve", flags[i]);
    }
    /* without tools (refused above) only "none" and "auto" mean something */
    static const char *const choices[] = {"tool_choice", "function_call", NULL};
    for (int i = 0; choices[i]; i++) {
        const cJSON *f = field(o, choices[i]);
        if (f && (!cJSON_IsString(f) || (strcmp(f->valuestring, "none") != 0 && strcmp(f->valuestring, "auto") != 0)))
            return bad(c, choices[i], "'%s' other than \"none\" or \"auto\" is not supported (no tools)", choices[i]);
    }
    /* the reply's reasoning goes to reasoning_content, the markers in neither: llama-server's
     * "deepseek" (its default) and "auto"; "none" and "deepseek-legacy" would keep it in content */
    const cJSON *rf = field(o, "reasoning_format");
    if (rf && (!cJSON_IsString(rf) || (strcmp(rf->valuestring, "deepseek") != 0 && strcmp(rf->valuestring, "auto") != 0)))
        return bad(c, "reasoning_format", "only reasoning_format \"deepseek\" or \"auto\" is supported (the reasoning in "
                                          "reasoning_content)");
    const cJSON *m = field(o, "modalities");
    if (m) {
        const cJSON *x;
        bool ok = cJSON_IsArray(m);
        cJSON_ArrayForEach(x, m) ok = ok && cJSON_IsString(x) && strcmp(x->valuestring, "text") == 0;
        if (!ok)
            return bad(c, "modalities", "only the \"text\" modality is supported");
    }
    return 0;
}

/* Unsupported features that would change the reply: refused rather than ignored. */
static int refuse_unsupported(pctx *c, const cJSON *o, bool chat)
{
    const cJSON *f;
    int rc0 = refuse_llama_extras(c, o);
    if (rc0)
        return rc0;
    if ((f = field(o, "tools")) && (!cJSON_IsArray(f) || cJSON_GetArraySize(f) > 0))
        return bad(c, "tools", "tools are not supported by tokscope serve");
    if ((f = field(o, "response_format"))) {
        const cJSON *t = cJSON_IsObject(f) ? cJSON_GetObjectItemCaseSensitive(f, "type") : NULL;
        if (!t || !cJSON_IsString(t))
            return bad(c, "response_format", "'response_format' must be an object with a string 'type'");
        if (strcmp(t->valuestring, "text") != 0)
            return bad(c, "response_format", "response_format '%s' is not supported (only 'text')", t->valuestring);
    }
    if (!chat) {
        bool echo = false;
        int rc = get_bool(c, o, "echo", &echo);
        if (rc)
            return rc;
        if (echo)
            return bad(c, "echo", "'echo' is not supported");
        if (field(o, "suffix"))
            return bad(c, "suffix", "'suffix' is not supported");
        int32_t best_of = 1;
        if ((rc = get_i32(c, o, "best_of", 1, 1e9, &best_of)))
            return rc;
        if (best_of != 1)
            return bad(c, "best_of", "only best_of = 1 is supported");
    }
    return 0;
}

/* A message's content: a string, null, or an array of text parts. */
static int content_text(pctx *c, const cJSON *m, int i, char **out)
{
    const cJSON *f = field(m, "content");
    char name[48];
    snprintf(name, sizeof name, "messages[%d].content", i);
    if (!f) {
        *out = strdup("");
        return 0;
    }
    if (cJSON_IsString(f)) {
        *out = strdup(f->valuestring);
        return 0;
    }
    if (!cJSON_IsArray(f))
        return bad(c, name, "'%s' must be a string or an array of text parts", name);
    size_t len = 0;
    const cJSON *p;
    cJSON_ArrayForEach(p, f)
    {
        const cJSON *type = cJSON_IsObject(p) ? cJSON_GetObjectItemCaseSensitive(p, "type") : NULL;
        const cJSON *text = cJSON_IsObject(p) ? cJSON_GetObjectItemCaseSensitive(p, "text") : NULL;
        if (!type || !cJSON_IsString(type) || strcmp(type->valuestring, "text") != 0)
            return bad(c, name, "only text parts are supported in '%s'", name);
        if (!text || !cJSON_IsString(text))
            return bad(c, name, "a text part of '%s' has no string 'text'", name);
        len += strlen(text->valuestring);
    }
    char *s = malloc(len + 1), *w = s;
    if (!s)
        return bad(c, name, "out of memory");
    cJSON_ArrayForEach(p, f) w = stpcpy(w, cJSON_GetObjectItemCaseSensitive(p, "text")->valuestring);
    *w = 0;
    *out = s;
    return 0;
}

static bool push_msg(serve_request *r, size_t cap, const char *role, char *content)
{
    if (r->n_msgs >= cap || !content) {
        free(content);
        return false;
    }
    r->msgs[r->n_msgs].role = strdup(role);
    r->msgs[r->n_msgs].content = content;
    if (!r->msgs[r->n_msgs].role) {
        free(content);
        return false;
    }
    r->n_msgs++;
    return true;
}

/* The template variables: chat_template_kwargs (llama-server's, e.g.
 * enable_thinking) and OpenAI's reasoning_effort, as one pseudo message. */
static int parse_vars(pctx *c, const cJSON *o, serve_request *r, size_t cap)
{
    const cJSON *kw = field(o, "chat_template_kwargs");
    const cJSON *effort = field(o, "reasoning_effort");
    if (kw && !cJSON_IsObject(kw))
        return bad(c, "chat_template_kwargs", "'chat_template_kwargs' must be an object");
    if (effort && !cJSON_IsString(effort))
        return bad(c, "reasoning_effort", "'reasoning_effort' must be a string");
    if (!kw && !effort)
        return 0;
    cJSON *vars = kw ? cJSON_Duplicate(kw, true) : cJSON_CreateObject();
    if (vars && effort) {
        cJSON_DeleteItemFromObjectCaseSensitive(vars, "reasoning_effort");
        cJSON_AddStringToObject(vars, "reasoning_effort", effort->valuestring);
    }
    char *s = vars ? cJSON_PrintUnformatted(vars) : NULL;
    cJSON_Delete(vars);
    if (!push_msg(r, cap, CHAT_ROLE_VARS, s))
        return bad(c, "chat_template_kwargs", "out of memory");
    return 0;
}

static int parse_messages(pctx *c, const cJSON *o, serve_request *r)
{
    const cJSON *ms = field(o, "messages");
    if (!ms)
        return bad(c, "messages", "'messages' is required");
    if (!cJSON_IsArray(ms))
        return bad(c, "messages", "'messages' must be an array");
    const int n = cJSON_GetArraySize(ms);
    if (n == 0)
        return bad(c, "messages", "'messages' must not be empty");
    const size_t cap = 2 * (size_t)n + 1; /* each may bring its reasoning; one vars message */
    r->msgs = calloc(cap, sizeof *r->msgs);
    if (!r->msgs)
        return bad(c, "messages", "out of memory");
    int rc = parse_vars(c, o, r, cap);
    if (rc)
        return rc;
    static const char *const roles[] = {"system", "developer", "user", "assistant", "tool", NULL};
    /* walked as the list it is: a lookup by index from the head is quadratic */
    int i = -1;
    const cJSON *m;
    cJSON_ArrayForEach(m, ms)
    {
        i++;
        char name[48];
        snprintf(name, sizeof name, "messages[%d]", i);
        if (!cJSON_IsObject(m))
            return bad(c, name, "'%s' must be an object", name);
        const cJSON *role = cJSON_GetObjectItemCaseSensitive(m, "role");
        snprintf(name, sizeof name, "messages[%d].role", i);
        if (!cJSON_IsString(role))
            return bad(c, name, "'%s' must be a string", name);
        bool known = false;
        for (int k = 0; roles[k]; k++)
            known |= !strcmp(role->valuestring, roles[k]);
        if (!known)
            return bad(c, name, "unknown role '%.32s' (system, developer, user, assistant, tool)",
                       role->valuestring);
        const cJSON *rc_ = field(m, "reasoning_content");
        if (rc_) {
            snprintf(name, sizeof name, "messages[%d].reasoning_content", i);
            if (!cJSON_IsString(rc_))
                return bad(c, name, "'%s' must be a string", name);
            if (!push_msg(r, cap, CHAT_ROLE_REASONING, strdup(rc_->valuestring)))
                return bad(c, name, "out of memory");
        }
        char *text = NULL;
        if ((rc = content_text(c, m, i, &text)))
            return rc;
        if (!push_msg(r, cap, role->valuestring, text))
            return bad(c, "messages", "out of memory");
    }
    /* a trailing assistant message is continued (llama-server's prefill);
     * two of them are refused, as llama-server refuses them */
    int last = -1, prev = -1;
    for (size_t k = 0; k < r->n_msgs; k++)
        if (strcmp(r->msgs[k].role, CHAT_ROLE_VARS) != 0 && strcmp(r->msgs[k].role, CHAT_ROLE_REASONING) != 0) {
            prev = last;
            last = (int)k;
        }
    if (prev >= 0 && !strcmp(r->msgs[last].role, "assistant") && !strcmp(r->msgs[prev].role, "assistant"))
        return bad(c, "messages", "Cannot have 2 or more assistant messages at the end of the list.");
    return 0;
}

/* One sequence's elements, llama-server's tokenize_mixed: a string, or an
 * array of token ids (integers) and strings (a string first: the BOS rule of
 * a string prompt; ids: as they are). */
static int prompt_parts(pctx *c, const cJSON *p, serve_request *r)
{
    const int n = cJSON_IsArray(p) ? cJSON_GetArraySize(p) : 1;
    if (n == 0)
        return bad(c, "prompt", "'prompt' must not be empty");
    r->parts = calloc((size_t)n, sizeof *r->parts);
    if (!r->parts)
        return bad(c, "prompt", "out of memory");
    const cJSON *e = cJSON_IsArray(p) ? p->child : p;
    for (; e; e = cJSON_IsArray(p) ? e->next : NULL) {
        serve_prompt_part *pp = &r->parts[r->n_parts];
        pp->id = -1;
        if (cJSON_IsString(e)) {
            if (!(pp->text = strdup(e->valuestring)))
                return bad(c, "prompt", "out of memory");
        } else if (cJSON_IsNumber(e) && e->valuedouble == floor(e->valuedouble) && e->valuedouble >= 0 &&
                   e->valuedouble < 2147483648.0) {
            pp->id = (int64_t)e->valuedouble;
        } else {
            return bad(c, "prompt", "a 'prompt' array holds token ids (integers) and strings");
        }
        r->n_parts++;
    }
    return 0;
}

/* llama-server's prompt shapes that make one sequence: a string; an array
 * of token ids, mixed with strings or not ([12, 34, "text", 56]); an array
 * holding one string or one such array. Several prompts (llama-server
 * answers each with a choice) are refused: one request, one reply. */
static int parse_prompt(pctx *c, const cJSON *o, serve_request *r)
{
    const cJSON *p = field(o, "prompt");
    if (!p)
        return bad(c, "prompt", "'prompt' is required");
    bool has_number = false;
    const cJSON *e;
    if (cJSON_IsArray(p))
        cJSON_ArrayForEach(e, p) has_number |= cJSON_IsNumber(e);
    if (cJSON_IsArray(p) && !has_number) { /* a list of prompts (llama-server's tokenize_input_prompts) */
        const int n = cJSON_GetArraySize(p);
        if (n == 0)
            return bad(c, "prompt", "'prompt' must not be empty");
        if (n != 1)
            return bad(c, "prompt", "'prompt' holds %d prompts: tokscope serve answers one per request", n);
        p = p->child;
        if (!cJSON_IsString(p) && !cJSON_IsArray(p))
            return bad(c, "prompt", "a 'prompt' is a string, or an array of token ids and strings");
    }
    if (cJSON_IsString(p)) {
        r->prompt = strdup(p->valuestring);
        return r->prompt ? 0 : bad(c, "prompt", "out of memory");
    }
    if (!cJSON_IsArray(p))
        return bad(c, "prompt", "'prompt' must be a string, or an array of token ids and strings");
    return prompt_parts(c, p, r);
}

/* The contents back to bytes with their lengths (template variables stay
 * JSON text: they are parsed again). */
static void unescape_contents(serve_request *r)
{
    for (size_t i = 0; i < r->n_msgs; i++)
        if (r->msgs[i].content && strcmp(r->msgs[i].role, CHAT_ROLE_VARS) != 0)
            r->msgs[i].content_len = chat_bytes_unescape((char *)r->msgs[i].content);
    if (r->prompt)
        r->prompt_len = chat_bytes_unescape(r->prompt);
    for (size_t i = 0; i < r->n_parts; i++)
        if (r->parts[i].text)
            r->parts[i].len = chat_bytes_unescape(r->parts[i].text);
}

int serve_request_parse(serve_request *req, bool chat, const char *body, size_t len, const sampler_params *defaults,
                        char *err, size_t errlen, char *param, size_t paramlen)
{
    pctx c = {err, errlen, param, paramlen};
    memset(req, 0, sizeof *req);
    req->chat = chat;
    req->sp = defaults ? *defaults : sampler_default_params();
    req->sp.n_stop = 0;
    if (param && paramlen)
        param[0] = 0;
    size_t elen = 0;
    char *ebody = chat_bytes_json_in(body, len, &elen); /* contents unescaped below, with lengths */
    if (!ebody)
        return bad(&c, "", "out of memory");
    cJSON *o = cJSON_ParseWithLength(ebody, elen);
    free(ebody);
    if (!o)
        return bad(&c, "", "the body is not valid JSON");
    int rc = 0;
    const cJSON *f;
    if (!cJSON_IsObject(o)) {
        rc = bad(&c, "", "the body must be a JSON object");
        goto out;
    }
    if ((f = field(o, "model"))) {
        if (!cJSON_IsString(f)) {
            rc = bad(&c, "model", "'model' must be a string");
            goto out;
        }
        /* echoed in every reply: invalid UTF-8 there would make the reply invalid */
        req->model = serve_utf8_clean(f->valuestring, chat_bytes_unescape(f->valuestring));
    }
    if ((rc = get_bool(&c, o, "stream", &req->stream)))
        goto out;
    if ((f = field(o, "stream_options"))) {
        if (!cJSON_IsObject(f)) {
            rc = bad(&c, "stream_options", "'stream_options' must be an object");
            goto out;
        }
        if ((rc = get_bool(&c, f, "include_usage", &req->include_usage)))
            goto out;
    }
    if ((rc = refuse_unsupported(&c, o, chat)) || (rc = parse_sampling(&c, o, req)) || (rc = parse_bias(&c, o, req)) ||
        (rc = parse_logprobs(&c, o, req)) || (rc = chat ? parse_messages(&c, o, req) : parse_prompt(&c, o, req)))
        goto out;
    unescape_contents(req);
out:
    cJSON_Delete(o);
    return rc;
}

void serve_request_free(serve_request *req)
{
    for (size_t i = 0; i < req->n_msgs; i++) {
        free((char *)req->msgs[i].role);
        free((char *)req->msgs[i].content);
    }
    free(req->msgs);
    free(req->prompt);
    for (size_t i = 0; i < req->n_parts; i++)
        free(req->parts[i].text);
    free(req->parts);
    free(req->model);
    for (size_t i = 0; i < req->n_bias_in; i++)
        free(req->bias_in[i].text);
    free(req->bias_in);
    memset(req, 0, sizeof *req);
}
