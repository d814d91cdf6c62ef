/* The remote backend's thread: commands in, HTTP out through libcurl, the
 * streamed reply back as events (remote.h). Requests run on a curl multi
 * handle polled in 50 ms slices, so a STOP, QUIT or new SUBMIT that arrives
 * mid-stream is seen at once and closes the stream. */
#include "remote/remote.h"

#include <curl/curl.h>
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine_internal.h"
#include "remote/sse.h"

#include <cjson/cJSON.h>

struct remote {
    char *url;   /* base URL without a trailing "/" or "/v1" */
    char *key;   /* API key (bearer), NULL = none */
    char *model; /* model id asked for ("" until known) */
    int32_t timeout_s;
    bool probs_post; /* llama-server: ask for post-sampler probabilities (post_sampling_probs) */
    enum remote_kind kind;
    int32_t n_ctx;
    bool connected;
    /* token ids: an intern table of token texts (id = index) */
    char **texts;
    int32_t n_texts, cap_texts;
    int32_t *slots; /* open addressing: id + 1, 0 = free */
    size_t n_slots;
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- token ids ---- */

static uint64_t hash_str(const char *s)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static int32_t intern(struct remote *r, const char *s)
{
    if ((size_t)(r->n_texts + 1) * 2 > r->n_slots) {
        size_t ns = r->n_slots ? r->n_slots * 2 : 1024;
        int32_t *sl = calloc(ns, sizeof *sl);
        if (!sl)
            return -1;
        for (int32_t i = 0; i < r->n_texts; i++) {
            size_t h = hash_str(r->texts[i]) & (ns - 1);
            while (sl[h])
                h = (h + 1) & (ns - 1);
            sl[h] = i + 1;
        }
        free(r->slots);
        r->slots = sl;
        r->n_slots = ns;
    }
    size_t h = hash_str(s) & (r->n_slots - 1);
    while (r->slots[h]) {
        if (!strcmp(r->texts[r->slots[h] - 1], s))
            return r->slots[h] - 1;
        h = (h + 1) & (r->n_slots - 1);
    }
    if (r->n_texts == r->cap_texts) {
        int32_t nc = r->cap_texts ? r->cap_texts * 2 : 1024;
        char **t = realloc(r->texts, (size_t)nc * sizeof *t);
        if (!t)
            return -1;
        r->texts = t;
        r->cap_texts = nc;
    }
    char *d = strdup(s);
    if (!d)
        return -1;
    r->texts[r->n_texts] = d;
    r->slots[h] = r->n_texts + 1;
    return r->n_texts++;
}

static const char *id_text(const struct remote *r, int32_t id)
{
    return id >= 0 && id < r->n_texts ? r->texts[id] : "";
}

/* ---- HTTP ---- */

typedef struct buf {
    char *p;
    size_t n, cap;
} buf;

static bool buf_add(buf *b, const char *s, size_t n, size_t limit)
{
    if (b->n + n + 1 > limit)
        n = b->n + 1 < limit ? limit - b->n - 1 : 0;
    if (b->n + n + 1 > b->cap) {
        size_t c = b->cap ? b->cap : 1024;
        while (c < b->n + n + 1)
            c *= 2;
        char *q = realloc(b->p, c);
        if (!q)
            return false;
        b->p = q;
        b->cap = c;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
    return true;
}

static struct curl_slist *headers(const struct remote *r, bool json)
{
    struct curl_slist *h = NULL;
    if (json)
        h = curl_slist_append(h, "Content-Type: application/json");
    h = curl_slist_append(h, "Accept: application/json, text/event-stream");
    if (r->key && *r->key) {
        size_t n = strlen(r->key) + 32;
        char *a = malloc(n);
        if (a) {
            snprintf(a, n, "Authorization: Bearer %s", r->key);
            h = curl_slist_append(h, a);
            memset(a, 0, n); /* the key lives in one place only */
            free(a);
        }
    }
    return h;
}

static CURL *handle(const struct remote *r, const char *path, struct curl_slist *h)
{
    CURL *c = curl_easy_init();
    if (!c)
        return NULL;
    size_t n = strlen(r->url) + strlen(path) + 1;
    char *u = malloc(n);
    if (!u) {
        curl_easy_cleanup(c);
        return NULL;
    }
    snprintf(u, n, "%s%s", r->url, path);
    curl_easy_setopt(c, CURLOPT_URL, u);
    free(u);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, (long)(r->timeout_s < 10 ? r->timeout_s : 10));
    /* a stream that sends nothing for timeout_s seconds is dead */
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, (long)r->timeout_s);
    curl_easy_setopt(c, CURLOPT_USERAGENT, "tokscope");
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    return c;
}

/* One line for a failed transfer. */
static void curl_message(CURLcode rc, const struct remote *r, char *out, size_t cap)
{
    switch (rc) {
    case CURLE_COULDNT_CONNECT:
        snprintf(out, cap, "cannot connect to %s (connection refused or unreachable)", r->url);
        break;
    case CURLE_COULDNT_RESOLVE_HOST:
        snprintf(out, cap, "cannot resolve the host of %s (DNS)", r->url);
        break;
    case CURLE_OPERATION_TIMEDOUT:
        snprintf(out, cap, "timeout: %s sent nothing for %d s", r->url, r->timeout_s);
        break;
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_CERTPROBLEM:
        snprintf(out, cap, "TLS: %s (%s)", curl_easy_strerror(rc), r->url);
        break;
    case CURLE_GOT_NOTHING:
    case CURLE_RECV_ERROR:
    case CURLE_PARTIAL_FILE:
    case CURLE_SEND_ERROR:
        snprintf(out, cap, "connection lost");
        break;
    default:
        snprintf(out, cap, "%s: %s", r->url, curl_easy_strerror(rc));
        break;
    }
}

static void http_message(long status, const char *body, const struct remote *r, char *out, size_t cap)
{
    char m[ENGINE_MSG_MAX];
    remote_error_message(body, m, sizeof m);
    const char *what = status == 401 || status == 403
                           ? "unauthorized (check TOKSCOPE_API_KEY or [remote] api_key_file)"
                       : status == 404 ? "not found (model or endpoint)"
                       : status == 429 ? "rate limited, retry later"
                       : status >= 500 ? "server error"
                                       : "request refused";
    snprintf(out, cap, "HTTP %ld %s%s%.160s", status, what, m[0] ? ": " : "", m);
    (void)r;
}

static size_t collect(char *p, size_t size, size_t n, void *user)
{
    return buf_add(user, p, size * n, 1u << 22) ? size * n : 0;
}

/* A short GET (the handshake): the body (status 200), or NULL with err. */
static char *http_get(const struct remote *r, const char *path, long *status, char *err, size_t errlen)
{
    struct curl_slist *h = headers(r, false);
    CURL *c = handle(r, path, h);
    buf b = {0};
    *status = 0;
    if (!c) {
        snprintf(err, errlen, "out of memory");
        curl_slist_free_all(h);
        return NULL;
    }
    curl_easy_setopt(c, CURLOPT_TIMEOUT, (long)(r->timeout_s < 15 ? r->timeout_s : 15));
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, collect);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
    CURLcode rc = curl_easy_perform(c);
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, status);
    curl_easy_cleanup(c);
    curl_slist_free_all(h);
    if (rc != CURLE_OK) {
        curl_message(rc, r, err, errlen);
        free(b.p);
        return NULL;
    }
    if (*status != 200) {
        http_message(*status, b.p, r, err, errlen);
        free(b.p);
        return NULL;
    }
    return b.p ? b.p : strdup("");
}

/* ---- the handshake: what the server is, which model ---- */

static void post_loaded(engine *e, const char *models_json)
{
    struct remote *r = e->remote;
    engine_event ev;
    memset(&ev, 0, sizeof ev);
    ev.type = ENGINE_EV_LOADED;
    engine_model_info *in = &ev.info;
    snprintf(in->name, sizeof in->name, "%s", r->model[0] ? r->model : "(no model)");
    snprintf(in->arch, sizeof in->arch, "remote");
    snprintf(in->file_type, sizeof in->file_type, "%s", remote_kind_name(r->kind));
    snprintf(in->template_name, sizeof in->template_name, "server");
    snprintf(in->remote_kind, sizeof in->remote_kind, "%s", remote_kind_name(r->kind));
    snprintf(in->remote_ignored, sizeof in->remote_ignored, "%s", remote_ignored_params(r->kind));
    in->remote_max_top = remote_max_top(r->kind);
    in->n_ctx = (uint32_t)(r->n_ctx > 0 ? r->n_ctx : 0);
    in->n_ctx_train = in->n_ctx;
    cJSON *root = models_json ? cJSON_Parse(models_json) : NULL;
    const cJSON *m;
    size_t used = 0;
    cJSON_ArrayForEach(m, cJSON_GetObjectItemCaseSensitive(root, "data"))
    {
        const char *id = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(m, "id"));
        if (id && used + strlen(id) + 2 < sizeof in->remote_models)
            used += (size_t)snprintf(in->remote_models + used, sizeof in->remote_models - used, "%s%s",
                                     used ? " " : "", id);
    }
    cJSON_Delete(root);
    ev.n_ctx = r->n_ctx;
    engine_post(e, &ev);
}

static int32_t json_int(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(v) ? (int32_t)v->valuedouble : 0;
}

/* GET /v1/models (the ids, the kind where owned_by tells it, vLLM's
 * max_model_len), then /props (llama-server) or /api/version (ollama).
 * Posts LOADED whatever happens, so that the UI is usable and a later
 * submit retries; a failure is an ERROR event after it. quiet (the retry
 * before a turn): a failure posts nothing, the turn's DONE tells it. */
static void connect_server(engine *e, bool quiet)
{
    struct remote *r = e->remote;
    char err[ENGINE_MSG_MAX] = "";
    long st;
    r->connected = false;
    char *models = http_get(r, "/v1/models", &st, err, sizeof err);
    if (!models) {
        if (quiet)
            return;
        post_loaded(e, NULL);
        engine_post_error(e, "remote: %s", err);
        return;
    }
    r->connected = true;
    r->kind = remote_kind_from_models(models);
    cJSON *root = cJSON_Parse(models);
    const cJSON *data = cJSON_GetObjectItemCaseSensitive(root, "data"), *m, *chosen = NULL;
    cJSON_ArrayForEach(m, data)
    {
        const char *id = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(m, "id"));
        if (id && (!r->model[0] || !strcmp(id, r->model))) {
            chosen = m;
            break;
        }
    }
    char warn[ENGINE_MSG_MAX] = "";
    if (!chosen && r->model[0])
        snprintf(warn, sizeof warn, "remote: the server does not list model '%.100s' (/model shows its list)",
                 r->model);
    if (chosen && !r->model[0]) {
        free(r->model);
        r->model = strdup(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(chosen, "id")));
        if (!r->model)
            r->model = calloc(1, 1);
    }
    r->n_ctx = json_int(chosen, "max_model_len"); /* vLLM */
    if (!r->n_ctx)
        r->n_ctx = json_int(cJSON_GetObjectItemCaseSensitive(chosen, "meta"), "n_ctx"); /* tokscope serve */
    if (!r->n_ctx)
        r->n_ctx =
            json_int(cJSON_GetObjectItemCaseSensitive(chosen, "meta"), "n_ctx_train"); /* llama-server */
    if (r->kind == REMOTE_UNKNOWN || r->kind == REMOTE_LLAMA) {
        char e2[64];
        char *props = http_get(r, "/props", &st, e2, sizeof e2);
        cJSON *p = props ? cJSON_Parse(props) : NULL;
        const cJSON *dgs = cJSON_GetObjectItemCaseSensitive(p, "default_generation_settings");
        if (dgs) {
            r->kind = REMOTE_LLAMA;
            int32_t nc = json_int(dgs, "n_ctx");
            if (nc > 0)
                r->n_ctx = nc;
        }
        cJSON_Delete(p);
        free(props);
    }
    if (r->kind == REMOTE_UNKNOWN) {
        char e2[64];
        char *ver = http_get(r, "/api/version", &st, e2, sizeof e2);
        cJSON *v = ver ? cJSON_Parse(ver) : NULL;
        if (cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(v, "version")))
            r->kind = REMOTE_OLLAMA;
        cJSON_Delete(v);
        free(ver);
    }
    cJSON_Delete(root);
    post_loaded(e, models);
    free(models);
    if (warn[0])
        engine_post_error(e, "%s", warn);
}

/* ---- a turn ---- */

typedef struct turn {
    engine *e;
    struct remote *r;
    const engine_cmd *c;
    sse_reader sse;
    CURL *h;
    long status; /* HTTP status, read at the first body byte */
    buf errbody; /* the body of a non-200 answer */
    bool in_reasoning;
    /* a branch's prefix that llama-server streams back at the start of its
     * first content delta (seen on a real one): dropped, it is shown already */
    const char *echo;
    size_t n_echo, echo_at;
    bool got_done;              /* data: [DONE] */
    char finish[32];            /* finish_reason */
    char error[ENGINE_MSG_MAX]; /* an error the stream reported */
    bool bad_json;
    int32_t n_gen, pos, n_prompt;
    double t_start, t_first, t_last, prompt_tps;
} turn;

/* A logprob as the event's logit: log(0) stays finite (the float's lowest,
 * as llama-server sent it) so that a saved session holds a number, not the
 * null cJSON writes for -inf; the inspector shows it as -inf */
static float finite_lp(float x) { return x >= -FLT_MAX ? x : -FLT_MAX; }

static void token_event(turn *t, const char *text, size_t len, const remote_piece *p)
{
    engine_event *ev = calloc(1, sizeof *ev);
    if (!ev)
        return;
    ev->type = ENGINE_EV_TOKEN;
    ev->conv_id = t->c->conv_id;
    ev->req_id = t->c->req_id;
    memcpy(ev->text, text, len);
    ev->text[len] = 0;
    ev->text_len = (int32_t)len;
    ev->token = intern(t->r, ev->text);
    ev->pos = t->pos++;
    ev->n_past = t->pos;
    ev->n_ctx = t->r->n_ctx;
    ev->p_raw = ev->p_post = 1.0f;
    if (p && p->has_prob) {
        /* the server's numbers, one kind per request: logprobs of its raw
         * distribution (llama-server, vLLM and OpenAI by default) fill the
         * raw column, llama-server's post_sampling_probs answer the post
         * column; the other is -1, "not given" (the inspector shows "-").
         * The entropy is over the candidates it sent, the rest as one lump. */
        const bool post = p->post;
        int32_t k = p->n_top < SAMPLER_MAX_TOP ? p->n_top : SAMPLER_MAX_TOP;
        const float pc = post ? p->prob : expf(p->logprob);
        ev->logit = post ? 0.0f : finite_lp(p->logprob);
        ev->p_raw = post ? -1.0f : pc;
        ev->p_post = post ? pc : -1.0f;
        double h = 0, mass = 0;
        for (int32_t i = 0; i < k; i++) {
            engine_token_candidate *cd = &ev->top[i];
            snprintf(cd->text, sizeof cd->text, "%s", p->top[i].text);
            cd->id = intern(t->r, cd->text);
            const float q = post ? p->top[i].prob : expf(p->top[i].logprob);
            cd->logit = post ? 0.0f : finite_lp(p->top[i].logprob);
            cd->p_raw = post ? -1.0f : q;
            cd->p_post = post ? q : -1.0f;
            if (q > 0) {
                h -= (double)q * log((double)q);
                mass += q;
            }
        }
        if (mass < 1 && mass > 0)
            h -= (1 - mass) * log(1 - mass);
        ev->n_top = k;
        ev->entropy_raw = post ? -1.0f : (float)h;
        ev->entropy_post = post ? (float)h : -1.0f;
        if (p->has_ext) { /* tokscope serve: the engine's own numbers, raw and post */
            ev->logit = p->logit;
            ev->p_raw = p->p_raw;
            ev->p_post = p->p_post;
            ev->entropy_raw = p->entropy_raw >= 0 ? p->entropy_raw : (float)h;
            ev->entropy_post = p->entropy_post >= 0 ? p->entropy_post : (float)h;
            for (int32_t i = 0; i < k; i++) {
                ev->top[i].logit = p->top[i].logit;
                ev->top[i].p_raw = p->top[i].p_raw;
                ev->top[i].p_post = p->top[i].p_post;
            }
        }
    }
    engine_post(t->e, ev);
    free(ev);
}

/* Text into TOKEN events of at most ENGINE_TEXT_MAX - 1 bytes, cut at UTF-8
 * boundaries; the first carries the piece's numbers. */
static void emit_text(turn *t, const char *s, size_t n, const remote_piece *p)
{
    bool first = true;
    while (n) {
        size_t k = n < ENGINE_TEXT_MAX - 1 ? n : ENGINE_TEXT_MAX - 1;
        while (k < n && k > 1 && ((unsigned char)s[k] & 0xC0) == 0x80)
            k--;
        token_event(t, s, k, first ? p : NULL);
        first = false;
        s += k;
        n -= k;
    }
}

static void on_piece(void *user, const remote_piece *p, bool reasoning)
{
    turn *t = user;
    const char *text = p->text;
    size_t len = p->len;
    if (!reasoning && t->echo_at < t->n_echo) {
        size_t k = t->n_echo - t->echo_at < len ? t->n_echo - t->echo_at : len;
        if (memcmp(text, t->echo + t->echo_at, k) != 0) {
            t->echo_at = t->n_echo; /* not an echo: this reply does not repeat the prefix */
        } else {
            t->echo_at += k;
            text += k;
            len -= k;
            if (!len)
                return;
        }
    }
    if (!t->n_gen)
        t->t_first = now_s();
    t->t_last = now_s();
    /* reasoning streamed apart is shown as local reasoning is: between
     * <think> and </think>, which the UI's splitter folds */
    if (reasoning && !t->in_reasoning) {
        emit_text(t, "<think>\n", 8, NULL);
        t->in_reasoning = true;
    } else if (!reasoning && t->in_reasoning) {
        emit_text(t, "\n</think>\n\n", 11, NULL);
        t->in_reasoning = false;
    }
    emit_text(t, text, len, p);
    t->n_gen++;
}

static void on_finish(void *user, const char *reason)
{
    turn *t = user;
    snprintf(t->finish, sizeof t->finish, "%s", reason);
}

static void on_usage(void *user, int32_t n_prompt, int32_t n_gen, double prompt_tps)
{
    turn *t = user;
    (void)n_gen;
    if (n_prompt >= 0)
        t->n_prompt = n_prompt;
    if (prompt_tps > 0)
        t->prompt_tps = prompt_tps;
}

static void on_error(void *user, const char *message)
{
    turn *t = user;
    snprintf(t->error, sizeof t->error, "%s", message);
}

static bool on_event(void *user, const char *event, const char *data, size_t n)
{
    turn *t = user;
    if (!strcmp(data, "[DONE]")) {
        t->got_done = true;
        return true;
    }
    remote_chunk_cb cb = {t, on_piece, on_finish, on_usage, on_error};
    if (!strcmp(event, "error")) {
        char m[ENGINE_MSG_MAX];
        remote_error_message(data, m, sizeof m);
        on_error(t, m[0] ? m : "the server reported an error");
        return false;
    }
    if (!remote_parse_chunk(data, n, &cb))
        t->bad_json = true;
    return !t->error[0];
}

static size_t on_body(char *p, size_t size, size_t n, void *user)
{
    turn *t = user;
    if (!t->status)
        curl_easy_getinfo(t->h, CURLINFO_RESPONSE_CODE, &t->status);
    if (t->status != 200)
        return buf_add(&t->errbody, p, size * n, 1u << 16) ? size * n : 0;
    sse_feed(&t->sse, p, size * n, on_event, t);
    return size * n; /* an error event ends the turn after the transfer: it is read whole */
}

/* The text of a branch's forced tokens (the assistant prefix), malloc'd. */
static char *prefix_text(const struct remote *r, const int32_t *toks, int32_t n)
{
    buf b = {0};
    buf_add(&b, "", 0, SIZE_MAX);
    for (int32_t i = 0; i < n; i++) {
        const char *s = id_text(r, toks[i]);
        buf_add(&b, s, strlen(s), SIZE_MAX);
    }
    return b.p;
}

/* Commands that arrive while a reply streams (as engine.c's, for the
 * commands a remote turn can take). True: end the turn. */
static bool drain(engine *e)
{
    engine_cmd c;
    bool end = false;
    while (queue_pop(e->cmds, &c)) {
        switch (c.type) {
        case ENGINE_CMD_STOP:
            e->stop = end = true;
            break;
        case ENGINE_CMD_SET_PARAMS:
            e->sp = c.sampling;
            break;
        case ENGINE_CMD_SET_REMOTE_PROBS: /* from the next request on */
            e->remote->probs_post = c.flag;
            break;
        case ENGINE_CMD_QUIT:
            e->quit = e->stop = end = true;
            break;
        case ENGINE_CMD_SUBMIT:
        case ENGINE_CMD_LOAD:
        case ENGINE_CMD_RESET:
            e->stop = end = true;
            if (queue_push(e->deferred, &c))
                continue; /* ownership moved */
            break;
        default:
            break;
        }
        engine_cmd_free(&c);
    }
    return end;
}

static void run_submit(engine *e, const engine_cmd *c)
{
    struct remote *r = e->remote;
    turn t;
    memset(&t, 0, sizeof t);
    t.e = e;
    t.r = r;
    t.c = c;
    t.n_prompt = -1;
    t.t_start = now_s();
    sse_init(&t.sse);
    if (!r->connected)
        connect_server(e, true); /* the server was down at start: try again */
    e->conv_id = c->conv_id;
    e->req_id = c->req_id;
    sampler_params sp = c->own_sampling ? c->sampling : e->sp;
    char *prefix = NULL;
    if (c->n_tokens > 0 && !remote_continues(r->kind)) {
        engine_event ev;
        memset(&ev, 0, sizeof ev);
        ev.type = ENGINE_EV_DONE;
        ev.conv_id = c->conv_id;
        ev.req_id = c->req_id;
        ev.reason = ENGINE_DONE_ERROR;
        snprintf(ev.message, sizeof ev.message,
                 "remote: %s does not continue an assistant message: branching needs llama-server, vLLM or ollama",
                 remote_kind_name(r->kind));
        engine_post(e, &ev);
        sse_free(&t.sse);
        return;
    }
    if (c->n_tokens > 0) {
        prefix = prefix_text(r, c->tokens, c->n_tokens);
        /* the last forced token is the branch's new one: shown as a token */
        const char *last = id_text(r, c->tokens[c->n_tokens - 1]);
        t.pos = c->n_tokens - 1;
        emit_text(&t, last, strlen(last), NULL);
    }
    char *body = remote_body(r->kind, r->model, c->messages, c->n_messages, prefix, &sp, r->probs_post);
    if (prefix && r->kind == REMOTE_LLAMA) {
        t.echo = prefix;
        t.n_echo = strlen(prefix);
    }
    struct curl_slist *hd = headers(r, true);
    t.h = handle(r, "/v1/chat/completions", hd);
    CURLM *multi = curl_multi_init();
    CURLcode rc = CURLE_OUT_OF_MEMORY;
    if (body && t.h && multi) {
        curl_easy_setopt(t.h, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(t.h, CURLOPT_WRITEFUNCTION, on_body);
        curl_easy_setopt(t.h, CURLOPT_WRITEDATA, &t);
        curl_multi_add_handle(multi, t.h);
        int running = 1;
        rc = CURLE_OK;
        while (running) {
            if (curl_multi_perform(multi, &running) != CURLM_OK)
                break;
            if (!running)
                break;
            if (drain(e) || t.error[0])
                break; /* stop: closing the stream ends the server's generation */
            curl_multi_poll(multi, NULL, 0, 50, NULL);
        }
        int left;
        CURLMsg *msg;
        while ((msg = curl_multi_info_read(multi, &left)))
            if (msg->msg == CURLMSG_DONE)
                rc = msg->data.result;
        if (running)
            rc = CURLE_OK; /* we ended it */
        if (!t.status)
            curl_easy_getinfo(t.h, CURLINFO_RESPONSE_CODE, &t.status);
        curl_multi_remove_handle(multi, t.h);
    }
    curl_multi_cleanup(multi);
    if (t.h)
        curl_easy_cleanup(t.h);
    curl_slist_free_all(hd);
    free(body);
    free(prefix);

    engine_event *ev = calloc(1, sizeof *ev);
    if (!ev) {
        sse_free(&t.sse);
        free(t.errbody.p);
        return;
    }
    ev->type = ENGINE_EV_DONE;
    ev->conv_id = c->conv_id;
    ev->req_id = c->req_id;
    char why[ENGINE_MSG_MAX] = "";
    if (e->stop)
        ev->reason = ENGINE_DONE_STOPPED;
    else if (rc != CURLE_OK)
        curl_message(rc, r, why, sizeof why);
    else if (t.status != 200)
        http_message(t.status, t.errbody.p, r, why, sizeof why);
    else if (t.error[0])
        snprintf(why, sizeof why, "server: %.200s", t.error);
    else if (t.sse.failed)
        snprintf(why, sizeof why, "the stream sent an event over %u bytes", SSE_MAX_EVENT);
    else if (!t.got_done && !t.finish[0])
        snprintf(why, sizeof why, "connection lost (the stream ended mid-reply)");
    else if (!strcmp(t.finish, "length"))
        ev->reason = ENGINE_DONE_LENGTH;
    else
        ev->reason = ENGINE_DONE_EOG;
    if (why[0]) {
        /* nothing lost: what came stays, marked as cut; a retry is /regen */
        ev->reason = t.n_gen ? ENGINE_DONE_CUT : ENGINE_DONE_ERROR;
        snprintf(ev->message, sizeof ev->message, "remote: %s%s", why,
                 t.n_gen ? "; partial reply kept, /regen retries" : "");
        if (t.status == 401 || t.status == 403 || t.status == 404 || rc == CURLE_COULDNT_CONNECT ||
            rc == CURLE_COULDNT_RESOLVE_HOST)
            r->connected = false; /* ask the server again before the next turn */
    }
    if (t.in_reasoning && t.n_gen) { /* close the reasoning the reply stopped in */
        snprintf(ev->text, sizeof ev->text, "\n</think>\n\n");
        ev->text_len = (int32_t)strlen(ev->text);
    }
    ev->n_gen = t.n_gen;
    ev->n_prompt = t.n_prompt > 0 ? t.n_prompt : 0;
    ev->prompt_tps = t.prompt_tps;
    if (t.n_gen > 1 && t.t_last > t.t_first)
        ev->gen_tps = (t.n_gen - 1) / (t.t_last - t.t_first);
    ev->n_past = (t.n_prompt > 0 ? t.n_prompt : 0) + t.pos;
    ev->n_ctx = r->n_ctx;
    engine_post(e, ev);
    free(ev);
    sse_free(&t.sse);
    free(t.errbody.p);
}

/* ---- the thread ---- */

static void refuse(engine *e, const engine_cmd *c, const char *what)
{
    e->conv_id = c->conv_id;
    e->req_id = c->req_id;
    engine_post_error(e, "%s needs the local engine (the remote backend has the server's tokens only)", what);
}

void *remote_main(void *arg)
{
    engine *e = arg;
    curl_global_init(CURL_GLOBAL_DEFAULT); /* thread-safe in the libcurl Debian ships */
    connect_server(e, false);
    while (!e->quit) {
        engine_cmd c;
        if (!queue_pop(e->deferred, &c) && !queue_pop_wait(e->cmds, &c, -1))
            continue;
        e->stop = false;
        switch (c.type) {
        case ENGINE_CMD_LOAD: /* a model id of the server's */
            free(e->remote->model);
            e->remote->model = strdup(c.path ? c.path : "");
            if (!e->remote->model)
                e->remote->model = calloc(1, 1);
            connect_server(e, false);
            break;
        case ENGINE_CMD_SUBMIT:
            run_submit(e, &c);
            break;
        case ENGINE_CMD_SET_PARAMS:
            e->sp = c.sampling;
            break;
        case ENGINE_CMD_SET_REMOTE_PROBS:
            e->remote->probs_post = c.flag;
            break;
        case ENGINE_CMD_SET_TEMPLATE:
            if (c.name && *c.name && strcmp(c.name, "model") != 0)
                engine_post_error(e, "the server applies its own chat template (remote backend)");
            break;
        case ENGINE_CMD_SET_STEP:
            if (c.flag)
                refuse(e, &c, "step mode");
            break;
        case ENGINE_CMD_LENS:
            refuse(e, &c, "the logit lens");
            break;
        case ENGINE_CMD_SET_SPEC:
            engine_post_error(e, "speculative decoding runs on a local model, not through the remote backend");
            break;
        case ENGINE_CMD_UNDO:
            refuse(e, &c, "undo by one token");
            break;
        case ENGINE_CMD_QUIT:
            e->quit = true;
            break;
        default: /* STOP, STEP with nothing running; RESET: the server keeps no state of ours */
            break;
        }
        engine_cmd_free(&c);
    }
    engine_event ev;
    memset(&ev, 0, sizeof ev);
    ev.type = ENGINE_EV_QUIT;
    engine_post(e, &ev);
    return NULL;
}

bool remote_init(engine *e, const engine_params *p, char *err, size_t errlen)
{
    struct remote *r = calloc(1, sizeof *r);
    if (!r) {
        snprintf(err, errlen, "out of memory");
        return false;
    }
    const char *u = p->remote_url;
    if (strncmp(u, "http://", 7) != 0 && strncmp(u, "https://", 8) != 0) {
        snprintf(err, errlen, "--remote: '%.200s' is not an http:// or https:// URL", u);
        free(r);
        return false;
    }
    r->url = strdup(u);
    r->key = p->remote_api_key ? strdup(p->remote_api_key) : NULL;
    r->model = strdup(p->remote_model ? p->remote_model : "");
    r->timeout_s = p->remote_timeout_s > 0 ? p->remote_timeout_s : 60;
    r->probs_post = p->remote_probs_post;
    if (!r->url || !r->model || (p->remote_api_key && !r->key)) {
        snprintf(err, errlen, "out of memory");
        e->remote = r;
        remote_free(e);
        return false;
    }
    /* "http://h:8080/", "http://h:8080/v1" and "http://h:8080/v1/" all name the server */
    size_t n = strlen(r->url);
    while (n && r->url[n - 1] == '/')
        r->url[--n] = 0;
    if (n >= 3 && !strcmp(r->url + n - 3, "/v1"))
        r->url[n - 3] = 0;
    e->remote = r;
    return true;
}

void remote_free(engine *e)
{
    struct remote *r = e ? e->remote : NULL;
    if (!r)
        return;
    free(r->url);
    if (r->key) {
        memset(r->key, 0, strlen(r->key));
        free(r->key);
    }
    free(r->model);
    for (int32_t i = 0; i < r->n_texts; i++)
        free(r->texts[i]);
    free(r->texts);
    free(r->slots);
    free(r);
    e->remote = NULL;
}
